/* What the host (main.c) and the REPL (repl.c) share: protected calls
 * under a message handler and the error reports of lua.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include "host.h"
#include "signals.h"

void kb_host_message(const char *msg) {
  fprintf(stderr, "%s: %s\n", PROGNAME, msg);
  fflush(stderr);
}

int kb_host_report(lua_State *L, int status) {
  if (status != LUA_OK) {
    const char *msg = lua_tostring(L, -1);
    if (msg == NULL) msg = "(error object is not a string)";
    kb_host_message(msg);
    lua_pop(L, 1);
  }
  return status;
}

/* Whether the error is one the stdlib raised on purpose: `error(message, 0)`
 * called from a kluabench module (a wrong result, a path that cannot be
 * written, a failed command), whose message already says what was wrong and
 * where. Its traceback would only show the harness's insides, so it is left
 * out unless KLUABENCH_TRACEBACK=1. Everything else keeps it: an error of a
 * user's script (its file:line is in the traceback), an error raised by C
 * (an argument error names no line; the traceback does), error() with a
 * position (a stdlib bug), an interrupt. */
static int raised_on_purpose(lua_State *L, const char *msg) {
  const char *force = getenv("KLUABENCH_TRACEBACK");
  if (force != NULL && strcmp(force, "1") == 0) return 0;
  lua_Debug ar;
  if (!lua_getstack(L, 1, &ar) || !lua_getinfo(L, "Sn", &ar)) return 0;
  if (strcmp(ar.what, "C") != 0 || ar.name == NULL || strcmp(ar.name, "error") != 0) return 0;
  if (!lua_getstack(L, 2, &ar) || !lua_getinfo(L, "S", &ar)) return 0;
  /* a stdlib module: ".../stdlib/kluabench/...". A script of one's own in
   * a folder named kluabench (a clone of this repository, ~/kluabench/x.lua)
   * keeps its traceback: with error(message, 0) it is the only place that
   * says which line raised. */
  if (ar.source[0] != '@' || strstr(ar.source, "stdlib/kluabench/") == NULL) return 0;
  size_t n = strlen(ar.short_src);
  return !(strncmp(msg, ar.short_src, n) == 0 && msg[n] == ':');
}

/* Message handler: the error as a string (through __tostring when it has
 * one) followed by a traceback, unless the stdlib raised it on purpose. */
static int msghandler(lua_State *L) {
  const char *msg = lua_tostring(L, 1);
  if (msg == NULL) {
    if (luaL_callmeta(L, 1, "__tostring") && lua_type(L, -1) == LUA_TSTRING)
      msg = lua_tostring(L, -1);
    else
      msg = lua_pushfstring(L, "(error object is a %s value)", luaL_typename(L, 1));
  }
  if (raised_on_purpose(L, msg)) {
    lua_pushstring(L, msg);
    return 1;
  }
  luaL_traceback(L, L, msg, 1);
  return 1;
}

int kb_host_docall(lua_State *L, int narg, int nres) {
  int base = lua_gettop(L) - narg;
  lua_pushcfunction(L, msghandler);
  lua_insert(L, base);
  kb_signals_arm(L);
  int status = lua_pcall(L, narg, nres, base);
  kb_signals_disarm();
  lua_remove(L, base);
  return status;
}
