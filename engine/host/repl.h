/* The interactive read-eval-print loop (repl.c); main.c starts it. */
#ifndef KB_REPL_H
#define KB_REPL_H

#include <lua.h>

/* Runs the loop on L until end of input (Ctrl-D). Loads `kb` as a global
 * first, and a `help` function when the stdlib has one. */
void kb_repl(lua_State *L);

#endif
