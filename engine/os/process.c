/* kb.process: child processes for commands that spread a sweep over several
 * processes (kluabench run-all). Primitives only: start a program, poll or
 * wait for children, send a signal, sleep. Which children to start and what
 * to do when one fails is policy, in stdlib/kluabench/cli/commands/.
 *
 * Soft failures (a program that cannot be started, a file that cannot be
 * opened, a signal to a process that is gone) return nil, "message", "ENAME"
 * (luv style); argument misuse raises. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../core/kb.h"

extern char **environ;

/* ------------------------------------------------------------------ */
/* Signal names                                                         */

static const struct {
  const char *name;
  int sig;
} SIGNALS[] = {{"SIGINT", SIGINT},   {"SIGTERM", SIGTERM}, {"SIGKILL", SIGKILL},
               {"SIGHUP", SIGHUP},   {"SIGQUIT", SIGQUIT}, {"SIGUSR1", SIGUSR1},
               {"SIGUSR2", SIGUSR2}, {"SIGABRT", SIGABRT}, {"SIGSEGV", SIGSEGV},
               {"SIGBUS", SIGBUS},   {"SIGFPE", SIGFPE},   {"SIGILL", SIGILL},
               {"SIGPIPE", SIGPIPE}, {"SIGALRM", SIGALRM}, {"SIGCONT", SIGCONT},
               {"SIGSTOP", SIGSTOP}, {NULL, 0}};

static const char *signal_name(int sig) {
  for (int i = 0; SIGNALS[i].name; i++)
    if (SIGNALS[i].sig == sig) return SIGNALS[i].name;
  return NULL;
}

/* A signal name at arg: "SIGTERM" or "TERM". Names only: a number is
 * refused, so that a stray integer can never become a signal that kills. */
static int check_signal(lua_State *L, int arg) {
  const char *s = kb_check_cstring(L, arg, "kill", "signal name");
  const char *bare = strncmp(s, "SIG", 3) == 0 ? s + 3 : s;
  for (int i = 0; SIGNALS[i].name; i++)
    if (strcmp(SIGNALS[i].name + 3, bare) == 0) return SIGNALS[i].sig;
  return luaL_argerror(L, arg, lua_pushfstring(L, "unknown signal '%s' (expected SIGINT, SIGTERM, SIGKILL, ...)", s));
}

/* nil, "what: strerror", "ENAME" (the names a caller may act on; others "E<n>"). */
static int push_errno(lua_State *L, int e, const char *what) {
  static const struct {
    int e;
    const char *name;
  } NAMES[] = {{ENOENT, "ENOENT"}, {EACCES, "EACCES"}, {ESRCH, "ESRCH"}, {ECHILD, "ECHILD"},
               {EINTR, "EINTR"},   {EPERM, "EPERM"},   {ENOTDIR, "ENOTDIR"}, {EAGAIN, "EAGAIN"},
               {ENOMEM, "ENOMEM"}, {0, NULL}};
  luaL_pushfail(L);
  lua_pushfstring(L, "%s: %s", what, strerror(e));
  int i = 0;
  while (NAMES[i].name && NAMES[i].e != e) i++;
  if (NAMES[i].name) lua_pushstring(L, NAMES[i].name);
  else lua_pushfstring(L, "E%d", e);
  return 3;
}

/* ------------------------------------------------------------------ */
/* spawn                                                                */

/* What the child needs, all prepared before fork so that the child only
 * makes async-signal-safe calls (the parent may have threads: CUDA's). */
typedef struct {
  const char **argv;    /* NULL-terminated */
  char **envp;          /* NULL-terminated */
  const char *path[3];  /* stdin, stdout, stderr redirections, or NULL */
  int append;           /* open stdout/stderr with O_APPEND instead of O_TRUNC */
  const char *cwd;
  int new_group;        /* setpgid(0, 0): the terminal's Ctrl-C reaches only the parent */
} spawn_plan;

/* Reported by a child that failed before exec, through a close-on-exec pipe. */
typedef struct {
  int stage; /* index into STAGES */
  int err;
} child_failure;

static const char *const STAGES[] = {"open stdin", "open stdout", "open stderr",
                                     "redirect",   "chdir",       "setpgid", "exec"};

static void child_fail(int fd, int stage, int err) {
  child_failure f = {stage, err};
  ssize_t w = write(fd, &f, sizeof f);
  (void)w; /* nothing else the child can do about a failed write */
  _exit(127);
}

/* In the child, after fork: only async-signal-safe calls. */
static void child_exec(const spawn_plan *p, int errfd) {
  if (p->new_group && setpgid(0, 0) != 0) child_fail(errfd, 5, errno);
  /* If kluabench dies (even by SIGKILL), the children get SIGTERM. */
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  struct sigaction dfl;
  memset(&dfl, 0, sizeof dfl);
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  sigaction(SIGINT, &dfl, NULL);
  sigaction(SIGTERM, &dfl, NULL);
  sigaction(SIGPIPE, &dfl, NULL);
  sigaction(SIGXFSZ, &dfl, NULL); /* ignored by kluabench itself (main.c) */
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, NULL);
  for (int fd = 0; fd < 3; fd++) {
    if (!p->path[fd]) continue;
    int flags = fd == 0 ? O_RDONLY : O_WRONLY | O_CREAT | (p->append ? O_APPEND : O_TRUNC);
    int nfd = open(p->path[fd], flags | O_CLOEXEC, 0644);
    if (nfd < 0) child_fail(errfd, fd, errno);
    if (nfd == fd) { /* fd was closed: keep the new one open across exec */
      if (fcntl(fd, F_SETFD, 0) != 0) child_fail(errfd, 3, errno);
      continue;
    }
    if (dup2(nfd, fd) < 0) child_fail(errfd, 3, errno);
    close(nfd);
  }
  if (p->cwd && chdir(p->cwd) != 0) child_fail(errfd, 4, errno);
  execvpe(p->argv[0], (char *const *)p->argv, p->envp);
  child_fail(errfd, 6, errno);
}

/* argv at arg 1: a non-empty list of strings, pushed as a userdata array. */
static const char **check_argv(lua_State *L, int arg) {
  luaL_checktype(L, arg, LUA_TTABLE);
  lua_Integer n = luaL_len(L, arg);
  if (n < 1) luaL_argerror(L, arg, "non-empty list of strings expected (the program and its arguments)");
  const char **argv = lua_newuserdatauv(L, sizeof(char *) * (size_t)(n + 1), 0);
  for (lua_Integer i = 1; i <= n; i++) {
    if (lua_geti(L, arg, i) != LUA_TSTRING)
      luaL_argerror(L, arg, lua_pushfstring(L, "element %d is %s, string expected", (int)i, luaL_typename(L, -1)));
    kb_refuse_nul(L, -1, "spawn", arg, "argv[%d]", (int)i);
    argv[i - 1] = lua_tostring(L, -1);
    lua_pop(L, 1); /* the string stays alive in the table */
  }
  argv[n] = NULL;
  return argv;
}

/* The environment of the child: ours with opts.env applied (NAME = value
 * sets, NAME = false removes). Built in a Lua table of "NAME=value" strings
 * and a userdata array, both left on the stack (they own the memory). */
static char **build_env(lua_State *L, int opts) {
  lua_newtable(L); /* NAME -> "NAME=value" */
  int t = lua_gettop(L);
  for (char **e = environ; *e; e++) {
    const char *eq = strchr(*e, '=');
    if (!eq) continue;
    lua_pushlstring(L, *e, (size_t)(eq - *e));
    lua_pushstring(L, *e);
    lua_rawset(L, t);
  }
  if (opts) lua_getfield(L, opts, "env");
  else lua_pushnil(L);
  if (!lua_isnil(L, -1)) {
    if (!lua_istable(L, -1)) luaL_argerror(L, 2, "opts.env must be a table of NAME = string | false");
    lua_pushnil(L);
    while (lua_next(L, -2)) {
      if (lua_type(L, -2) != LUA_TSTRING || strchr(lua_tostring(L, -2), '=') || !lua_tostring(L, -2)[0])
        luaL_argerror(L, 2, "opts.env: names must be non-empty strings without '='");
      kb_refuse_nul(L, -2, "spawn", 2, "a name in opts.env");
      const char *name = lua_tostring(L, -2);
      if (lua_type(L, -1) == LUA_TSTRING) {
        kb_refuse_nul(L, -1, "spawn", 2, "opts.env.%s", name);
        lua_pushvalue(L, -2);
        lua_pushfstring(L, "%s=%s", name, lua_tostring(L, -2));
      } else if (lua_type(L, -1) == LUA_TBOOLEAN && !lua_toboolean(L, -1)) {
        lua_pushvalue(L, -2);
        lua_pushnil(L);
      } else {
        luaL_argerror(L, 2, lua_pushfstring(L, "opts.env.%s must be a string or false", name));
      }
      lua_rawset(L, t);
      lua_pop(L, 1);
    }
  }
  lua_pop(L, 1);
  size_t n = 0;
  lua_pushnil(L);
  while (lua_next(L, t)) n++, lua_pop(L, 1);
  char **envp = lua_newuserdatauv(L, sizeof(char *) * (n + 1), 0);
  size_t i = 0;
  lua_pushnil(L);
  while (lua_next(L, t)) {
    envp[i++] = (char *)lua_tostring(L, -1);
    lua_pop(L, 1);
  }
  envp[i] = NULL;
  return envp;
}

static const char *opt_string(lua_State *L, int opts, const char *field) {
  if (!opts) return NULL;
  int t = lua_getfield(L, opts, field);
  const char *s = NULL;
  if (t == LUA_TSTRING) {
    kb_refuse_nul(L, -1, "spawn", 2, "opts.%s", field);
    s = lua_tostring(L, -1);
  } else if (t != LUA_TNIL) {
    luaL_argerror(L, 2, lua_pushfstring(L, "opts.%s must be a string (a path)", field));
  }
  lua_pop(L, 1); /* the string stays alive in opts */
  return s;
}

static int opt_bool(lua_State *L, int opts, const char *field, int def) {
  if (!opts) return def;
  int t = lua_getfield(L, opts, field);
  int v = t == LUA_TNIL ? def : lua_toboolean(L, -1);
  if (t != LUA_TNIL && t != LUA_TBOOLEAN)
    luaL_argerror(L, 2, lua_pushfstring(L, "opts.%s must be a boolean", field));
  lua_pop(L, 1);
  return v;
}

static void check_opts_keys(lua_State *L, int opts) {
  static const char *const known[] = {"env", "stdin", "stdout", "stderr", "append", "cwd", "group", NULL};
  lua_pushnil(L);
  while (lua_next(L, opts)) {
    int ok = 0;
    if (lua_type(L, -2) == LUA_TSTRING)
      for (int i = 0; known[i]; i++) ok |= strcmp(known[i], lua_tostring(L, -2)) == 0;
    if (!ok)
      luaL_argerror(L, 2, lua_pushfstring(L, "unknown option '%s' (expected env, stdin, stdout, stderr, append, cwd, group)",
                                          lua_type(L, -2) == LUA_TSTRING ? lua_tostring(L, -2) : luaL_typename(L, -2)));
    lua_pop(L, 1);
  }
}

/*** Starts a program (argv[1], searched on PATH) with arguments argv[2..]; does not wait.
 *
 * opts: env ({NAME = value} to set, {NAME = false} to remove, the rest inherited), stdin, stdout,
 * stderr (file paths; stdout and stderr are truncated unless append = true), cwd, group (default
 * true: the child gets its own process group, so a Ctrl-C on the terminal reaches only kluabench,
 * which passes it on). A child gets SIGTERM when kluabench dies. A program that cannot be started
 * or a file that cannot be opened gives nil, "exec prog: No such file or directory", "ENOENT".
 *
 * @signature kb.process.spawn(argv [, opts]) -> pid | nil, message, code
 * @section process
 * @example
 *   local pid = assert(kb.process.spawn({"sh", "-c", "echo $X"}, {env = {X = "1"}, stdout = "/dev/null"}))
 *   print(kb.process.wait(pid)) --> pid  exit  0
 */
/* spawn(argv [, opts]) -> pid | nil, message, code. */
static int l_spawn(lua_State *L) {
  spawn_plan p;
  memset(&p, 0, sizeof p);
  int opts = 0;
  if (!lua_isnoneornil(L, 2)) {
    luaL_checktype(L, 2, LUA_TTABLE);
    opts = 2;
    check_opts_keys(L, opts);
  }
  lua_settop(L, 2);
  p.argv = check_argv(L, 1);
  p.envp = build_env(L, opts);
  p.path[0] = opt_string(L, opts, "stdin");
  p.path[1] = opt_string(L, opts, "stdout");
  p.path[2] = opt_string(L, opts, "stderr");
  p.cwd = opt_string(L, opts, "cwd");
  p.append = opt_bool(L, opts, "append", 0);
  p.new_group = opt_bool(L, opts, "group", 1);

  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return push_errno(L, errno, "pipe2");
  pid_t pid = fork();
  if (pid < 0) {
    int e = errno;
    close(fds[0]);
    close(fds[1]);
    return push_errno(L, e, "fork");
  }
  if (pid == 0) {
    close(fds[0]);
    child_exec(&p, fds[1]);
  }
  close(fds[1]);
  child_failure f;
  ssize_t got;
  do got = read(fds[0], &f, sizeof f);
  while (got < 0 && errno == EINTR);
  close(fds[0]);
  if (got == (ssize_t)sizeof f) { /* the child failed before exec and exits 127 */
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {}
    const char *what = f.stage == 6 ? p.argv[0] : f.stage <= 2 ? p.path[f.stage] : f.stage == 4 ? p.cwd : NULL;
    return push_errno(L, f.err, what ? lua_pushfstring(L, "%s %s", STAGES[f.stage], what) : STAGES[f.stage]);
  }
  lua_pushinteger(L, pid);
  return 1;
}

/* ------------------------------------------------------------------ */
/* wait, kill, sleep                                                    */

/*** Waits for child pid (nil: any child); with block = false returns nil at once when none has
 * ended.
 *
 * A child killed by a signal gives pid, "signal", "SIGTERM". Errors: nil, message, "ECHILD" (no
 * such child) or "EINTR" (a signal arrived while blocking: call again).
 *
 * @signature kb.process.wait([pid [, block]]) -> pid, "exit", code | pid, "signal", name | nil
 * @section process
 * @example
 *   local pid = kb.process.spawn({"true"})
 *   local got
 *   repeat got = kb.process.wait(nil, false) until got or not kb.process.sleep(10)
 *   print(got == pid)
 */
/* wait([pid [, block]]) -> pid, "exit", code | pid, "signal", name
 *                        | nil (nothing finished, when not blocking)
 *                        | nil, message, code */
static int l_wait(lua_State *L) {
  pid_t want = -1;
  if (!lua_isnoneornil(L, 1)) {
    lua_Integer p = luaL_checkinteger(L, 1);
    if (p <= 0) luaL_argerror(L, 1, "process id > 0 expected (nil waits for any child)");
    want = (pid_t)p;
  }
  int block = 1;
  if (!lua_isnoneornil(L, 2)) {
    luaL_checktype(L, 2, LUA_TBOOLEAN);
    block = lua_toboolean(L, 2);
  }
  int status;
  pid_t got = waitpid(want, &status, block ? 0 : WNOHANG);
  if (got < 0) return push_errno(L, errno, "waitpid");
  if (got == 0) {
    luaL_pushfail(L);
    return 1;
  }
  lua_pushinteger(L, got);
  if (WIFEXITED(status)) {
    lua_pushliteral(L, "exit");
    lua_pushinteger(L, WEXITSTATUS(status));
  } else {
    int sig = WTERMSIG(status);
    const char *name = signal_name(sig);
    lua_pushliteral(L, "signal");
    if (name) lua_pushstring(L, name);
    else lua_pushfstring(L, "signal %d", sig);
  }
  return 3;
}

/*** Sends a signal by name ("SIGINT", "TERM", "SIGKILL", ...; no numbers) to process pid (> 0
 * only).
 *
 * @signature kb.process.kill(pid, signal) -> true | nil, message, code
 * @section process
 * @example
 *   local pid = kb.process.spawn({"sleep", "10"})
 *   kb.process.kill(pid, "SIGTERM")
 *   print(kb.process.wait(pid)) --> pid  signal  SIGTERM
 */
/* kill(pid, signal) -> true | nil, message, code. pid must be > 0: no
 * process groups, no "every process" (-1). */
static int l_kill(lua_State *L) {
  lua_Integer pid = luaL_checkinteger(L, 1);
  if (pid <= 0) luaL_argerror(L, 1, "process id > 0 expected");
  int sig = check_signal(L, 2);
  if (kill((pid_t)pid, sig) != 0) return push_errno(L, errno, lua_pushfstring(L, "kill %d", (int)pid));
  lua_pushboolean(L, 1);
  return 1;
}

/*** Sleeps ms milliseconds (0 to 86400000); false when a signal cut the sleep short.
 *
 * @signature kb.process.sleep(ms) -> true | false
 * @section process
 * @example
 *   kb.process.sleep(10)
 */
/* sleep(ms) -> true | false when a signal cut it short. Milliseconds, as
 * everywhere in the stdlib. */
static int l_sleep(lua_State *L) {
  lua_Number ms = luaL_checknumber(L, 1);
  if (!(ms >= 0 && ms <= 86400e3)) luaL_argerror(L, 1, "milliseconds between 0 and 86400000 expected");
  lua_Number s = ms / 1e3;
  struct timespec ts = {(time_t)s, (long)((s - (lua_Number)(time_t)s) * 1e9)};
  lua_pushboolean(L, nanosleep(&ts, NULL) == 0);
  return 1;
}

/*** The id of this process.
 *
 * @signature kb.process.getpid() -> integer
 * @section process
 * @example
 *   print(kb.process.getpid())
 */
/* getpid() -> this process's id. */
static int l_getpid(lua_State *L) {
  lua_pushinteger(L, getpid());
  return 1;
}

static const luaL_Reg functions[] = {{"spawn", l_spawn}, {"wait", l_wait},     {"kill", l_kill},
                                     {"sleep", l_sleep}, {"getpid", l_getpid}, {NULL, NULL}};

void kb_open_process(lua_State *L) {
  lua_newtable(L);
  luaL_setfuncs(L, functions, 0);
  lua_setfield(L, -2, "process");
}
