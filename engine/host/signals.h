/* SIGINT and SIGTERM. Three situations:
 *  - Lua code is running (between kb_signals_arm and kb_signals_disarm):
 *    SIGINT sets a debug hook that raises "interrupted!" in the running code,
 *    as the lua interpreter does; a second SIGINT before the hook fires kills
 *    the process (default action).
 *  - Lua code asked for cooperative interrupts with kb.defer_interrupts(true):
 *    the first SIGINT or SIGTERM only sets a flag that kb.interrupted()
 *    reports, so a sweep can stop between samples and keep its results; the
 *    second one stops hard as above.
 *  - The REPL waits for a line (kb_signals_at_prompt): SIGINT sets a flag that
 *    the REPL takes with kb_signals_take_prompt_interrupt() to drop the line.
 * The handlers only write sig_atomic_t flags and call lua_sethook and
 * sigaction, which are async-signal-safe. */
#ifndef KB_SIGNALS_H
#define KB_SIGNALS_H

#include <lua.h>

/* Adds defer_interrupts and interrupted to the module table on top of L. */
void kb_open_signals(lua_State *L);

/* Around a protected call of Lua code on L's main thread. */
void kb_signals_arm(lua_State *L);
void kb_signals_disarm(void);
/* on: kb_signals_arm also takes SIGTERM for a hard stop (the built-in
 * commands, which clean up and exit 143; scripts keep SIGTERM's default). */
void kb_signals_want_sigterm(int on);
/* The signal (SIGINT, SIGTERM) that raised "interrupted!" since the last
 * kb_signals_arm, else 0. */
int kb_signals_stopped(void);

/* Around a blocking read of a REPL line; SIGINT interrupts the read. */
void kb_signals_at_prompt(void);
/* 1 when a SIGINT arrived since kb_signals_at_prompt, else 0. */
int kb_signals_prompt_interrupted(void);
/* The same, and clears it. */
int kb_signals_take_prompt_interrupt(void);

#endif
