/* What the host (main.c) and the REPL (repl.c) share: protected calls
 * under a message handler and the error reports of lua.c. */
#include <stdio.h>

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

/* Message handler: the error as a string (through __tostring when it has
 * one) followed by a traceback. */
static int msghandler(lua_State *L) {
  const char *msg = lua_tostring(L, 1);
  if (msg == NULL) {
    if (luaL_callmeta(L, 1, "__tostring") && lua_type(L, -1) == LUA_TSTRING)
      msg = lua_tostring(L, -1);
    else
      msg = lua_pushfstring(L, "(error object is a %s value)", luaL_typename(L, 1));
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
