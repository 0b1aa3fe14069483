/* What the two fuzz targets share: one Lua state for the whole run with the
 * engine's C module (package.preload["kluabench.core"]), the stdlib and
 * tests/fuzz/oracle.lua on package.path, and a function that hands one
 * input to an oracle function and aborts (a crash for libFuzzer) when the
 * oracle raises. The oracle holds every check, so the replay spec
 * (tests/fuzz_spec.lua) checks the same things without this file.
 *
 * The source root is compiled in (KB_SOURCE_ROOT, from the Makefile);
 * KLUABENCH_ROOT overrides it for a binary run elsewhere. */
#ifndef KB_FUZZ_LUA_H
#define KB_FUZZ_LUA_H

#include <stdio.h>
#include <stdlib.h>

#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>

#ifndef KB_SOURCE_ROOT
#define KB_SOURCE_ROOT "."
#endif

int luaopen_kluabench(lua_State *L);

static lua_State *fuzz_L;
static int fuzz_oracle_ref = LUA_NOREF;

static int fuzz_traceback(lua_State *L) {
  luaL_traceback(L, L, lua_tostring(L, 1), 1);
  return 1;
}

/* Loads oracle.lua and keeps oracle[name]; exits on any failure (a broken
 * setup must not look like a clean fuzzing run). */
static void fuzz_setup(const char *name) {
  const char *root = getenv("KLUABENCH_ROOT");
  if (!root || !*root) root = KB_SOURCE_ROOT;
  lua_State *L = luaL_newstate();
  if (!L) abort();
  luaL_openlibs(L);
  luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_PRELOAD_TABLE);
  lua_pushcfunction(L, luaopen_kluabench);
  lua_setfield(L, -2, "kluabench.core");
  lua_pop(L, 1);
  lua_getglobal(L, "package");
  lua_pushfstring(L, "%s/stdlib/?.lua;%s/stdlib/?/init.lua;%s/tests/fuzz/?.lua", root, root, root);
  lua_setfield(L, -2, "path");
  lua_pop(L, 1);
  lua_pushcfunction(L, fuzz_traceback);
  lua_getglobal(L, "require");
  lua_pushliteral(L, "oracle");
  if (lua_pcall(L, 1, 1, -3) != LUA_OK) {
    fprintf(stderr, "fuzz setup: %s\n(set KLUABENCH_ROOT to the source tree)\n", lua_tostring(L, -1));
    exit(2);
  }
  if (lua_getfield(L, -1, name) != LUA_TFUNCTION) {
    fprintf(stderr, "fuzz setup: oracle.%s is not a function\n", name);
    exit(2);
  }
  fuzz_oracle_ref = luaL_ref(L, LUA_REGISTRYINDEX);
  lua_settop(L, 0);
  fuzz_L = L;
}

/* Runs the oracle on the bytes; an error from it is a finding. */
static void fuzz_check(const unsigned char *data, size_t size) {
  lua_State *L = fuzz_L;
  lua_pushcfunction(L, fuzz_traceback);
  lua_rawgeti(L, LUA_REGISTRYINDEX, fuzz_oracle_ref);
  lua_pushlstring(L, (const char *)data, size);
  if (lua_pcall(L, 1, 0, -3) != LUA_OK) {
    fprintf(stderr, "\n%s\n", lua_tostring(L, -1));
    abort();
  }
  lua_settop(L, 0);
}

#endif
