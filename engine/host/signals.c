/* SIGINT / SIGTERM handling: the lua.c-style hard stop, the cooperative mode
 * that sweeps use to stop between samples, and the REPL prompt. See
 * signals.h for the three situations. */
#include <signal.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include "signals.h"

/* Everything a handler reads or writes. g_main is set before a handler that
 * uses it is installed, and never changes while one is installed. */
static lua_State *volatile g_main;
static volatile sig_atomic_t g_defer;        /* cooperative mode is on */
static volatile sig_atomic_t g_pending;      /* deferred signal number, 0 if none */
static volatile sig_atomic_t g_prompt_hit;   /* SIGINT while reading a REPL line */
static volatile sig_atomic_t g_stopped;      /* the signal of the hard stop, 0 if none */
static int g_want_term;                      /* arm SIGTERM too (built-in commands) */

static struct sigaction g_term_saved;        /* SIGTERM's action before defer mode */
static int g_term_taken;                     /* we replaced SIGTERM's action */

/* No SA_RESTART: a blocking read (the REPL's) returns EINTR. */
static void set_handler(int sig, void (*fn)(int)) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = fn;
  sigemptyset(&sa.sa_mask);
  sigaction(sig, &sa, NULL);
}

/* ------------------------------------------------------------------ */
/* Hard stop: raise an error at the next Lua instruction.              */

static void stop_hook(lua_State *L, lua_Debug *ar) {
  (void)ar;
  lua_sethook(L, NULL, 0, 0);
  luaL_error(L, "interrupted!");
}

static void on_run_signal(int sig) {
  if (g_defer && g_pending == 0) {
    g_pending = sig;
    return;
  }
  if (g_stopped == 0) g_stopped = sig;
  /* If Lua never comes back (a long C call), the next one kills. */
  set_handler(sig, SIG_DFL);
  lua_sethook(g_main, stop_hook, LUA_MASKCALL | LUA_MASKRET | LUA_MASKLINE | LUA_MASKCOUNT, 1);
}

static void take_sigterm(void) {
  if (g_term_taken) return;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_run_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, &g_term_saved);
  g_term_taken = 1;
}

static void give_back_sigterm(void) {
  if (!g_term_taken) return;
  sigaction(SIGTERM, &g_term_saved, NULL);
  g_term_taken = 0;
}

static lua_State *main_thread(lua_State *L) {
  lua_rawgeti(L, LUA_REGISTRYINDEX, LUA_RIDX_MAINTHREAD);
  lua_State *m = lua_tothread(L, -1);
  lua_pop(L, 1);
  return m;
}

void kb_signals_arm(lua_State *L) {
  g_main = main_thread(L);
  g_pending = 0;
  g_stopped = 0;
  set_handler(SIGINT, on_run_signal);
  if (g_want_term) take_sigterm();
}

void kb_signals_want_sigterm(int on) { g_want_term = on; }

int kb_signals_stopped(void) { return g_stopped; }

/* Cooperative mode lasts until defer_interrupts(false) or the end of the
 * top-level chunk that turned it on; a stop hook that has not fired yet is
 * dropped so that it cannot strike outside a protected call. */
void kb_signals_disarm(void) {
  set_handler(SIGINT, SIG_DFL);
  g_defer = 0;
  g_pending = 0;
  give_back_sigterm();
  if (g_main && lua_gethook(g_main) == stop_hook) lua_sethook(g_main, NULL, 0, 0);
}

/* ------------------------------------------------------------------ */
/* REPL prompt                                                          */

static void on_prompt_signal(int sig) {
  (void)sig;
  g_prompt_hit = 1;
}

void kb_signals_at_prompt(void) {
  g_prompt_hit = 0;
  set_handler(SIGINT, on_prompt_signal);
}

int kb_signals_prompt_interrupted(void) {
  return g_prompt_hit != 0;
}

int kb_signals_take_prompt_interrupt(void) {
  int hit = g_prompt_hit != 0;
  g_prompt_hit = 0;
  return hit;
}

/* ------------------------------------------------------------------ */
/* Lua functions                                                        */

static const char *signal_name(int sig) {
  return sig == SIGTERM ? "SIGTERM" : sig == SIGINT ? "SIGINT" : "signal";
}

/*** With on = true, Ctrl-C and SIGTERM are remembered instead of stopping the script.
 *
 * Poll kb.interrupted() between samples or points and stop cleanly. The mode ends with
 * defer_interrupts(false) or at the end of the top-level chunk; a second Ctrl-C while one is
 * pending stops at once. Switching the mode forgets a pending signal; asking for the mode already
 * in force keeps it (a sweep inside a loop that defers too).
 *
 * @signature kb.defer_interrupts(on) -> previous
 * @section signals
 * @example
 *   kb.defer_interrupts(true)
 *   for _, n in ipairs({1024, 2048, 4096}) do
 *     if kb.interrupted() then break end -- Ctrl-C: stop after the point in progress
 *     print(n, kb.randn({n}, "f32", 1):sum():item())
 *   end
 *   kb.defer_interrupts(false)
 */
/* kb.defer_interrupts(on) -> previous setting. Turning it on or off forgets
 * a deferred signal that was not acted upon; asking for the setting already
 * in force keeps it (a sweep run inside a soak loop must not swallow the
 * Ctrl-C that arrived between two sweeps). */
static int l_defer_interrupts(lua_State *L) {
  luaL_checktype(L, 1, LUA_TBOOLEAN);
  int on = lua_toboolean(L, 1);
  lua_pushboolean(L, g_defer != 0);
  g_main = main_thread(L);
  if (on != (g_defer != 0)) g_pending = 0;
  if (on) {
    g_defer = 1;
    set_handler(SIGINT, on_run_signal);
    take_sigterm();
  } else {
    g_defer = 0;
    give_back_sigterm();
  }
  return 1;
}

/*** Whether a deferred interrupt is pending, and which signal it was.
 *
 * @signature kb.interrupted() -> false | true, "SIGINT" | "SIGTERM"
 * @section signals
 * @example
 *   local stop, sig = kb.interrupted()
 */
/* kb.interrupted() -> false | true, "SIGINT" | "SIGTERM": a deferred
 * signal, or a hard stop that some pcall caught (so that a loop can still
 * see it and stop). */
static int l_interrupted(lua_State *L) {
  int sig = g_pending ? g_pending : g_stopped;
  if (sig == 0) {
    lua_pushboolean(L, 0);
    return 1;
  }
  lua_pushboolean(L, 1);
  lua_pushstring(L, signal_name(sig));
  return 2;
}

static const luaL_Reg signal_funcs[] = {
    {"defer_interrupts", l_defer_interrupts},
    {"interrupted", l_interrupted},
    {NULL, NULL},
};

void kb_open_signals(lua_State *L) {
  luaL_setfuncs(L, signal_funcs, 0);
}
