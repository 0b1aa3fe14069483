/* kb.loaded_code: the user code loaded in this process. A record of a
 * benchmark script that declares no implementation names the script
 * (record/implementation.lua, implementation.script), and the script's file
 * alone does not say which kernel it ran; the code it compiled or loaded
 * does. module.c (kb.cuda.compile and kb.cuda.load) and plugin.c
 * (kb.plugin.load) note what they make here; usercode.c adds the accessor. */
#include <stdlib.h>
#include <string.h>
#include "usercode.h"

/* ---- the code loaded in this process --------------------------------------
 * A table in the Lua registry, created on first use: key "<sha256>\t<image
 * sha256 or empty>\t<kind>" -> entry {kind, sha256, image_sha256, name,
 * path}. The key is what identifies the code, so the same code loaded twice
 * is one entry, and sorting the keys sorts the entries by digest. Entries are
 * never removed: a module may be collected, but what it measured stays in
 * the process's records. */
#define LOADED_CODE_KEY "kluabench.loaded_code"

static void push_loaded_code(lua_State *L) {
  if (lua_getfield(L, LUA_REGISTRYINDEX, LOADED_CODE_KEY) == LUA_TTABLE) return;
  lua_pop(L, 1);
  lua_newtable(L);
  lua_pushvalue(L, -1);
  lua_setfield(L, LUA_REGISTRYINDEX, LOADED_CODE_KEY);
}

static void set_string(lua_State *L, int t, const char *field, const char *v) {
  if (!v) return;
  lua_pushstring(L, v);
  lua_setfield(L, t, field);
}

void kb_note_code(lua_State *L, const char *kind, const char *sha256, const char *image_sha256,
                  const char *name, const char *path) {
  if (!sha256) return;
  push_loaded_code(L);
  int reg = lua_gettop(L);
  lua_pushfstring(L, "%s\t%s\t%s", sha256, image_sha256 ? image_sha256 : "", kind);
  if (lua_rawget(L, reg) != LUA_TNIL) { /* the first load names it */
    lua_pop(L, 2);
    return;
  }
  lua_pop(L, 1);
  lua_pushfstring(L, "%s\t%s\t%s", sha256, image_sha256 ? image_sha256 : "", kind);
  lua_createtable(L, 0, 5);
  int e = lua_gettop(L);
  set_string(L, e, "kind", kind);
  set_string(L, e, "sha256", sha256);
  set_string(L, e, "image_sha256", image_sha256);
  set_string(L, e, "name", name);
  set_string(L, e, "path", path);
  lua_rawset(L, reg);
  lua_pop(L, 1);
}

static int cmp_keys(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/*** The user code loaded in this process: every module `kb.cuda.compile` and `kb.cuda.load` made
 * (Triton's kernels included) and every plugin `kb.plugin.load` opened, once each, sorted by sha256.
 *
 * An entry is {kind, sha256, image_sha256, name, path}: kind is "nvrtc", "cubin", "ptx", "fatbin" or
 * "plugin"; sha256 is the digest `:info()` reports (of the source for nvrtc, else of the binary);
 * image_sha256 (nvrtc only) is the compiled PTX or cubin's, which the options, defines and headers
 * decide as much as the source; name and path are those of its first load, where known. The same
 * code loaded again is not listed twice. A record of a benchmark script without an implementation
 * hook covers all of it (`implementation.script`). The list is a fresh copy: changing it changes
 * nothing.
 *
 * @signature kb.loaded_code() -> {entries}
 * @section usercode
 * @example
 *   kb.cuda.load(".version 8.0\n.target sm_90\n.address_size 64\n")
 *   for _, c in ipairs(kb.loaded_code()) do print(c.kind, c.sha256, c.name or c.path) end
 */
static int l_loaded_code(lua_State *L) {
  lua_settop(L, 0);
  push_loaded_code(L);
  size_t n = 0;
  lua_pushnil(L);
  while (lua_next(L, 1)) lua_pop(L, 1), n++;
  /* a userdata, not malloc: an error while copying frees it with the stack */
  const char **keys = (const char **)lua_newuserdatauv(L, (n ? n : 1) * sizeof *keys, 0);
  size_t i = 0;
  lua_pushnil(L);
  while (lua_next(L, 1)) lua_pop(L, 1), keys[i++] = lua_tostring(L, -1); /* the table keeps them */
  qsort(keys, n, sizeof *keys, cmp_keys);
  lua_createtable(L, (int)n, 0);
  for (i = 0; i < n; i++) {
    lua_getfield(L, 1, keys[i]);
    kb_push_table_copy(L, -1);
    lua_remove(L, -2);
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  return 1;
}

/* Adds loaded_code to the kb table on top of the stack. */
void kb_open_loaded_code(lua_State *L) {
  lua_pushcfunction(L, l_loaded_code);
  lua_setfield(L, -2, "loaded_code");
}
