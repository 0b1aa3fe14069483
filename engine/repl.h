/* The interactive read-eval-print loop (repl.c) and the two services of the
 * host (main.c) that it shares: protected calls and error reports. */
#ifndef KB_REPL_H
#define KB_REPL_H

#include <lua.h>

/* main.c: calls the function below its `narg` arguments under a message
 * handler that adds a traceback, with SIGINT armed (signals.h). Same
 * results as lua_pcall. */
int kb_host_docall(lua_State *L, int narg, int nres);
/* main.c: when status is not LUA_OK, prints "kluabench: <message>" from the
 * top of the stack to stderr and pops it. Returns status. */
int kb_host_report(lua_State *L, int status);

/* repl.c: runs the loop on L until end of input (Ctrl-D). Loads `kb` as a
 * global first, and a `help` function when the stdlib has one. */
void kb_repl(lua_State *L);

#endif
