/* What the host (main.c) and the REPL (repl.c) share (host.c): protected
 * calls and error reports, as lua.c makes them. */
#ifndef KB_HOST_H
#define KB_HOST_H

#include <lua.h>

#define PROGNAME "kluabench"

/* "kluabench: <msg>" on stderr. */
void kb_host_message(const char *msg);
/* Calls the function below its `narg` arguments under a message handler
 * that adds a traceback, with SIGINT armed (signals.h). Same results as
 * lua_pcall. */
int kb_host_docall(lua_State *L, int narg, int nres);
/* When status is not LUA_OK, prints "kluabench: <message>" from the top of
 * the stack to stderr and pops it. Returns status. */
int kb_host_report(lua_State *L, int status);

#endif
