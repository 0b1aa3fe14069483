/* The kluabench executable: a drop-in for the lua 5.4 standalone interpreter
 * (same options, `arg` table, LUA_INIT, error reports and REPL) plus the
 * kluabench options (--backend, --device, --quiet, --help) and the built-in
 * commands, which are Lua (stdlib/kluabench/cli.lua).
 *
 * Order of events: options are parsed in C; the backend is selected; then
 * everything else runs inside pmain under lua_pcall: libraries, preloads,
 * `arg`, LUA_INIT, package paths, -e/-l/-W in order, the script or command,
 * and the REPL. Exit status: 0 ok, 1 error (or what a command returns),
 * 2 usage error. */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>

#include "backend.h"
#include "kb.h"
#include "repl.h"
#include "signals.h"

/* lua-cjson's static library; registered as package.preload["cjson"]. */
int luaopen_cjson(lua_State *L);

#define PROGNAME "kluabench"
#define LUA_INIT_VAR "LUA_INIT"
#define LUA_INIT_VERSIONED LUA_INIT_VAR "_" LUA_VERSION_MAJOR "_" LUA_VERSION_MINOR
#ifndef KB_GIT_COMMIT
#define KB_GIT_COMMIT "unknown"
#endif

/* The built-in commands; any other first non-option argument is a script. */
static const char *const commands[] = {"run", "verify", "compare", "import-liger",
                                       "plot", "env", "list", "help", NULL};

/* What the command line asked for. Indices are into argv. */
typedef struct {
  int argc;
  char **argv;
  int script;         /* index of the script or command; 0 when none */
  int command;        /* argv[script] is a built-in command */
  int after_dashdash; /* the script came after "--" (so "-" is a file) */
  int has_e, has_i, has_v, has_E;
  int help;           /* --help / -h */
  int quiet;
  const char *backend, *device; /* option values, NULL when absent */
  char usage[256];    /* non-empty: a usage error, already worded */
  int status;         /* the exit status pmain decided */
} options;

/* ------------------------------------------------------------------ */
/* Messages                                                             */

static void l_message(const char *msg) {
  fprintf(stderr, "%s: %s\n", PROGNAME, msg);
  fflush(stderr);
}

/* "kluabench 0.1.0 (Lua 5.4.x)" */
static void print_version(void) {
  printf("%s %s (%s)\n", PROGNAME, KB_VERSION, LUA_RELEASE);
  fflush(stdout);
}

int kb_host_report(lua_State *L, int status) {
  if (status != LUA_OK) {
    const char *msg = lua_tostring(L, -1);
    if (msg == NULL) msg = "(error object is not a string)";
    l_message(msg);
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

/* ------------------------------------------------------------------ */
/* Command line                                                         */

static int is_command(const char *s) {
  for (int i = 0; commands[i]; i++)
    if (strcmp(s, commands[i]) == 0) return 1;
  return 0;
}

/* s for a message: control bytes, DEL and bytes >= 0x80 as \xNN (an
 * argument may hold anything), cut to fit out. */
static const char *printable(const char *s, char *out, size_t n) {
  size_t k = 0;
  for (; s && *s && k + 5 < n; s++) {
    unsigned char c = (unsigned char)*s;
    if (c < 0x20 || c >= 0x7f)
      k += (size_t)snprintf(out + k, n - k, "\\x%02X", c);
    else
      out[k++] = (char)c;
  }
  out[k] = '\0';
  return out;
}

static int usage_error(options *o, const char *fmt, const char *a, const char *b) {
  char pa[96], pb[96];
  snprintf(o->usage, sizeof o->usage, fmt, printable(a, pa, sizeof pa), printable(b, pb, sizeof pb));
  return 0;
}

/* A value for --backend / --device: "--opt=V" or the next argument.
 * Returns the value or NULL (usage error recorded). */
static const char *long_value(options *o, int *i, const char *name) {
  const char *a = o->argv[*i];
  size_t n = strlen(name);
  if (a[n] == '=') return a + n + 1;
  if (*i + 1 >= o->argc) {
    usage_error(o, "'%s' needs argument", name, NULL);
    return NULL;
  }
  return o->argv[++*i];
}

/* Long options; returns 0 on a usage error. */
static int parse_long(options *o, int *i) {
  const char *a = o->argv[*i];
  if (strcmp(a, "--help") == 0) {
    o->help = 1;
  } else if (strcmp(a, "--quiet") == 0) {
    o->quiet = 1;
  } else if (strncmp(a, "--backend", 9) == 0 && (a[9] == '\0' || a[9] == '=')) {
    if (!(o->backend = long_value(o, i, "--backend"))) return 0;
  } else if (strncmp(a, "--device", 8) == 0 && (a[8] == '\0' || a[8] == '=')) {
    if (!(o->device = long_value(o, i, "--device"))) return 0;
  } else {
    return usage_error(o, "unrecognized option '%s'", a, NULL);
  }
  return 1;
}

/* Short options as lua.c takes them: -e and -l take the rest of the word or
 * the next argument (which must not look like an option). */
static int parse_short(options *o, int *i) {
  const char *a = o->argv[*i];
  switch (a[1]) {
  case 'e':
  case 'l':
    if (a[1] == 'e') o->has_e = 1;
    if (a[2] == '\0') {
      ++*i;
      if (*i >= o->argc || o->argv[*i][0] == '-') return usage_error(o, "'%s' needs argument", a, NULL);
    }
    return 1;
  case 'i':
  case 'v':
  case 'E':
  case 'W':
  case 'h':
    if (a[2] != '\0') break;
    if (a[1] == 'i') o->has_i = o->has_v = 1;
    if (a[1] == 'v') o->has_v = 1;
    if (a[1] == 'E') o->has_E = 1;
    if (a[1] == 'h') o->help = 1;
    return 1;
  }
  return usage_error(o, "unrecognized option '%s'", a, NULL);
}

/* Fills o from argv. Options stop at the first non-option (the script or
 * command), at "-" (stdin is the script) or after "--". */
static void parse_args(options *o, int argc, char **argv) {
  memset(o, 0, sizeof *o);
  o->argc = argc;
  o->argv = argv;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (a[0] != '-' || a[1] == '\0') { /* script, command or "-" */
      o->script = i;
      o->command = is_command(a);
      return;
    }
    if (strcmp(a, "--") == 0) {
      if (i + 1 < argc) o->script = i + 1, o->after_dashdash = 1;
      return;
    }
    int ok = a[1] == '-' ? parse_long(o, &i) : parse_short(o, &i);
    if (!ok) return;
  }
}

/* An option's value, else the environment variable's (empty = unset; all
 * ignored under -E); *src names where it came from, for messages. */
static const char *option_or_env(const options *o, const char *value, const char *option,
                                 const char *var, const char **src) {
  *src = option;
  if (value || o->has_E) return value;
  *src = var;
  value = getenv(var);
  return value && *value ? value : NULL;
}

/* The backend options, or the environment when an option is absent;
 * *device_src names where an explicit device came from (NULL: none). */
static int check_backend(options *o, const char **name, int *ordinal, const char **device_src) {
  const char *bsrc, *dsrc;
  const char *b = option_or_env(o, o->backend, "--backend", "KLUABENCH_BACKEND", &bsrc);
  const char *d = option_or_env(o, o->device, "--device", "KLUABENCH_DEVICE", &dsrc);
  if (b && strcmp(b, "cpu") && strcmp(b, "cuda") && strcmp(b, "auto"))
    return usage_error(o, "invalid value '%s' for %s (expected cpu, cuda or auto)", b, bsrc);
  *name = (b && strcmp(b, "auto")) ? b : NULL;
  *ordinal = 0;
  *device_src = d ? dsrc : NULL;
  if (d) {
    char *end;
    errno = 0;
    long v = strtol(d, &end, 10);
    if (d[0] < '0' || d[0] > '9' || *end || errno || v > 1024)
      return usage_error(o, "invalid value '%s' for %s (expected a device number: 0, 1, ...)", d,
                         dsrc);
    *ordinal = (int)v;
  }
  return 1;
}

/* ------------------------------------------------------------------ */
/* Where the binary is, and package.path / package.cpath               */

static char exe_path[PATH_MAX], exe_dir[PATH_MAX], root_dir[PATH_MAX];

/* exe_dir: the directory of the running binary (symbolic links resolved);
 * root_dir: its parent, where stdlib/ and scripts/ live in a checkout. */
static void find_exe(void) {
  if (!realpath("/proc/self/exe", exe_path)) return;
  strcpy(exe_dir, exe_path);
  char *slash = strrchr(exe_dir, '/');
  if (slash) *(slash == exe_dir ? slash + 1 : slash) = '\0';
  strcpy(root_dir, exe_dir);
  slash = strrchr(root_dir, '/');
  if (slash) *(slash == root_dir ? slash + 1 : slash) = '\0';
}

/* Adds KLUABENCH_PATH's entries: a template with '?' as is, a directory as
 * dir/?.lua;dir/?/init.lua. */
static void add_user_path(luaL_Buffer *b, const char *spec) {
  while (*spec) {
    const char *end = strchr(spec, ';');
    size_t n = end ? (size_t)(end - spec) : strlen(spec);
    if (n > 0) {
      if (memchr(spec, '?', n)) {
        luaL_addlstring(b, spec, n);
        luaL_addchar(b, ';');
      } else {
        for (int k = 0; k < 2; k++) {
          luaL_addlstring(b, spec, n);
          luaL_addstring(b, k == 0 ? "/?.lua;" : "/?/init.lua;");
        }
      }
    }
    spec += n + (end != NULL);
  }
}

/* Our directories go in front of what package already has (its default,
 * or LUA_PATH unless -E). KLUABENCH_PATH, unless -E, goes first. */
static void set_paths(lua_State *L, int noenv) {
  luaL_Buffer b;
  lua_getglobal(L, "package");
  luaL_buffinit(L, &b);
  const char *user = noenv ? NULL : getenv("KLUABENCH_PATH");
  if (user) add_user_path(&b, user);
  if (*exe_dir) {
    lua_pushfstring(L, "%s/stdlib/?.lua;%s/stdlib/?/init.lua;%s/lua/?.lua;%s/lua/?/init.lua;",
                    root_dir, root_dir, exe_dir, exe_dir);
    luaL_addvalue(&b);
  }
  lua_getfield(L, -2, "path");
  luaL_addvalue(&b);
  luaL_pushresult(&b);
  lua_setfield(L, -2, "path");
  if (*exe_dir) {
    lua_getfield(L, -1, "cpath");
    lua_pushfstring(L, "%s/lib/?.so;%s", exe_dir, lua_tostring(L, -1));
    lua_setfield(L, -3, "cpath");
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
}

/* ------------------------------------------------------------------ */
/* The kluabench.host table: what the Lua side needs to know about the  */
/* binary (where it is, its options) and two small system queries.     */

/* host.listdir(path) -> array of entry names (unsorted, without . and ..)
 * or nil, message */
static int host_listdir(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  DIR *d = opendir(path);
  if (!d) {
    luaL_pushfail(L);
    lua_pushfstring(L, "%s: %s", path, strerror(errno));
    return 2;
  }
  lua_newtable(L);
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
    lua_pushstring(L, e->d_name);
    lua_rawseti(L, -2, ++n);
  }
  closedir(d);
  return 1;
}

/* host.isatty(fd) -> boolean; fd 0, 1 or 2 */
static int host_isatty(lua_State *L) {
  lua_pushboolean(L, isatty((int)luaL_checkinteger(L, 1)));
  return 1;
}

static void set_string(lua_State *L, const char *key, const char *value) {
  if (!value || !*value) return;
  lua_pushstring(L, value);
  lua_setfield(L, -2, key);
}

static void open_host(lua_State *L, const options *o) {
  luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
  lua_newtable(L);
  set_string(L, "exe", exe_path);
  set_string(L, "exe_dir", exe_dir);
  set_string(L, "root", root_dir);
  set_string(L, "version", KB_VERSION);
  set_string(L, "lua", LUA_RELEASE);
  set_string(L, "commit", KB_GIT_COMMIT);
  set_string(L, "backend_option", o->backend);
  set_string(L, "device_option", o->device);
  lua_pushboolean(L, o->quiet);
  lua_setfield(L, -2, "quiet");
  lua_pushcfunction(L, host_listdir);
  lua_setfield(L, -2, "listdir");
  lua_pushcfunction(L, host_isatty);
  lua_setfield(L, -2, "isatty");
  lua_setfield(L, -2, "kluabench.host");
  lua_pop(L, 1);
}

static void open_preloads(lua_State *L) {
  luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_PRELOAD_TABLE);
  lua_pushcfunction(L, luaopen_kluabench);
  lua_setfield(L, -2, "kluabench.core");
  lua_pushcfunction(L, luaopen_cjson);
  lua_setfield(L, -2, "cjson");
  lua_pop(L, 1);
}

/* ------------------------------------------------------------------ */
/* Running chunks                                                       */

/* arg: argv[script] at 0, what precedes it at negative indices, its
 * arguments at 1..n. Without a script, the interpreter is arg[0]. */
static void create_arg_table(lua_State *L, const options *o) {
  int script = o->script;
  lua_createtable(L, o->argc - script - 1, script + 1);
  for (int i = 0; i < o->argc; i++) {
    lua_pushstring(L, o->argv[i]);
    lua_rawseti(L, -2, i - script);
  }
  lua_setglobal(L, "arg");
}

static int dochunk(lua_State *L, int status) {
  if (status == LUA_OK) status = kb_host_docall(L, 0, 0);
  return kb_host_report(L, status);
}

static int dofile(lua_State *L, const char *name) {
  return dochunk(L, luaL_loadfile(L, name));
}

static int dostring(lua_State *L, const char *s, const char *name) {
  return dochunk(L, luaL_loadbuffer(L, s, strlen(s), name));
}

static int handle_luainit(lua_State *L) {
  const char *name = "=" LUA_INIT_VERSIONED;
  const char *init = getenv(name + 1);
  if (init == NULL) {
    name = "=" LUA_INIT_VAR;
    init = getenv(name + 1);
  }
  if (init == NULL) return LUA_OK;
  if (init[0] == '@') return dofile(L, init + 1);
  return dostring(L, init, name);
}

/* -l mod: global mod = require "mod"; -l g=mod: global g = require "mod". */
static int dolibrary(lua_State *L, const char *spec) {
  const char *eq = strchr(spec, '=');
  const char *mod = eq ? eq + 1 : spec;
  lua_getglobal(L, "require");
  lua_pushstring(L, mod);
  int status = kb_host_docall(L, 1, 1);
  if (status == LUA_OK) {
    if (eq)
      lua_pushlstring(L, spec, (size_t)(eq - spec));
    else
      lua_pushstring(L, spec);
    lua_insert(L, -2);
    lua_setglobal(L, lua_tostring(L, -2));
    lua_pop(L, 1);
  }
  return kb_host_report(L, status);
}

/* -e, -l and -W in command-line order; 0 when one failed. */
static int run_options(lua_State *L, const options *o) {
  int last = o->script ? o->script : o->argc;
  for (int i = 1; i < last; i++) {
    const char *a = o->argv[i];
    if (a[0] != '-' || a[1] == '-') continue;
    char opt = a[1];
    if (opt == 'W') lua_warning(L, "@on", 0);
    if (opt != 'e' && opt != 'l') continue;
    const char *value = a[2] ? a + 2 : o->argv[++i];
    int status = opt == 'e' ? dostring(L, value, "=(command line)") : dolibrary(L, value);
    if (status != LUA_OK) return 0;
  }
  return 1;
}

/* Pushes arg[1..n] for the main chunk's `...`. */
static int push_script_args(lua_State *L) {
  if (lua_getglobal(L, "arg") != LUA_TTABLE) luaL_error(L, "'arg' is not a table");
  int n = (int)luaL_len(L, -1);
  luaL_checkstack(L, n + 3, "too many arguments to script");
  for (int i = 1; i <= n; i++) lua_rawgeti(L, -i, i);
  lua_remove(L, -n - 1);
  return n;
}

static int handle_script(lua_State *L, const options *o) {
  const char *fname = o->argv[o->script];
  if (strcmp(fname, "-") == 0 && !o->after_dashdash) fname = NULL; /* stdin */
  int status = luaL_loadfile(L, fname);
  if (status == LUA_OK) {
    int n = push_script_args(L);
    status = kb_host_docall(L, n, 0);
  }
  return kb_host_report(L, status);
}

/* Runs require("kluabench.cli").main(cmd, {args}) and leaves its result. */
static int call_cli(lua_State *L) {
  lua_getglobal(L, "require");
  lua_pushliteral(L, "kluabench.cli");
  lua_call(L, 1, 1);
  lua_getfield(L, -1, "main");
  lua_pushvalue(L, 1);
  lua_pushvalue(L, 2);
  lua_call(L, 2, 1);
  return 1;
}

/* The exit status of a built-in command: its integer result, 0 for
 * nothing or true, 1 for false or an error. */
static int handle_command(lua_State *L, const char *cmd, char **args, int nargs) {
  lua_pushcfunction(L, call_cli);
  lua_pushstring(L, cmd);
  lua_createtable(L, nargs, 0);
  for (int i = 0; i < nargs; i++) {
    lua_pushstring(L, args[i]);
    lua_rawseti(L, -2, i + 1);
  }
  kb_signals_want_sigterm(1);
  int status = kb_host_docall(L, 2, 1);
  kb_signals_want_sigterm(0);
  int sig = kb_signals_stopped();
  if (sig) { /* the command's files are cleaned up (files.lua); no traceback */
    if (status != LUA_OK) lua_pop(L, 1);
    fprintf(stderr, "%s %s: interrupted by %s\n", PROGNAME, cmd, sig == SIGTERM ? "SIGTERM" : "SIGINT");
    fflush(stderr);
    return 128 + sig;
  }
  if (status != LUA_OK) {
    kb_host_report(L, status);
    return 1;
  }
  int code = 0;
  if (lua_isinteger(L, -1))
    code = (int)lua_tointeger(L, -1);
  else if (lua_isboolean(L, -1))
    code = !lua_toboolean(L, -1);
  lua_pop(L, 1);
  return code;
}

/* Usage errors: the message, then the usage text that cli.lua owns (or a
 * short one when the stdlib cannot be found). */
static void print_usage(lua_State *L, const char *msg) {
  l_message(msg);
  lua_getglobal(L, "require");
  lua_pushliteral(L, "kluabench.cli");
  if (lua_pcall(L, 1, 1, 0) == LUA_OK && lua_getfield(L, -1, "usage") == LUA_TFUNCTION &&
      lua_pcall(L, 0, 1, 0) == LUA_OK && lua_isstring(L, -1)) {
    fputs(lua_tostring(L, -1), stderr);
  } else {
    fprintf(stderr, "usage: %s [options] [script [args]]\n"
                    "       %s COMMAND [args]\n"
                    "(run '%s --help' for the options and commands)\n",
            PROGNAME, PROGNAME, PROGNAME);
  }
  fflush(stderr);
}

/* Everything that runs Lua. Sets o->status. */
static int pmain(lua_State *L) {
  options *o = (options *)lua_touserdata(L, 1);
  luaL_checkversion(L);
  if (o->has_E) { /* tells luaopen_package to ignore LUA_PATH / LUA_CPATH */
    lua_pushboolean(L, 1);
    lua_setfield(L, LUA_REGISTRYINDEX, "LUA_NOENV");
  }
  luaL_openlibs(L);
  open_preloads(L);
  open_host(L, o);
  if (o->usage[0]) {
    set_paths(L, o->has_E);
    print_usage(L, o->usage);
    o->status = 2;
    return 0;
  }
  if (o->has_v) print_version();
  create_arg_table(L, o);
  lua_gc(L, LUA_GCRESTART);
  lua_gc(L, LUA_GCGEN, 0, 0);
  o->status = 1;
  if (!o->has_E && handle_luainit(L) != LUA_OK) return 0;
  set_paths(L, o->has_E);
  if (o->help) { /* --help [COMMAND] */
    int first = o->script ? o->script : o->argc;
    o->status = handle_command(L, "help", o->argv + first, o->argc - first);
    return 0;
  }
  if (!run_options(L, o)) return 0;
  o->status = 0;
  if (o->script && o->command) {
    o->status = handle_command(L, o->argv[o->script], o->argv + o->script + 1,
                               o->argc - o->script - 1);
  } else if (o->script && handle_script(L, o) != LUA_OK) {
    o->status = 1;
    return 0;
  }
  if (o->has_i) {
    kb_repl(L);
  } else if (!o->script && !o->has_e && !o->has_v) {
    if (isatty(0)) {
      print_version();
      kb_repl(L);
    } else if (dofile(L, NULL) != LUA_OK) {
      o->status = 1;
    }
  }
  return 0;
}

/* Selects the backend before any Lua runs; a usage error is left for pmain
 * to report with the usage text. Returns 0 when it failed (reported). */
static int select_backend(options *o) {
  const char *name = NULL, *device_src = NULL;
  int ordinal = 0;
  if (!check_backend(o, &name, &ordinal, &device_src)) return 1;
  /* auto falls back to cpu silently, but not past a device the user named:
   * --device 99 that does not exist is an error whatever the backend */
  const char *err = kb_select_backend(name ? name : device_src ? "cuda" : NULL, ordinal);
  if (err) {
    if (!name && device_src) {
      char msg[640];
      snprintf(msg, sizeof msg, "%s %d: no such usable device (%s)", device_src, ordinal, err);
      l_message(msg);
    } else {
      l_message(err);
    }
    return 0;
  }
  return 1;
}

/* Whatever went wrong writing stdout (a full disk, a closed pipe, a closed
 * descriptor) is an error of the run, as in coreutils' close_stdout: 0, the
 * errno, or -1 for an earlier failed write. A stdout that was closed and
 * never written to is fine. */
static int close_stdout(void) {
  int err = 0;
  if (fflush(stdout) != 0) err = errno ? errno : EIO;
  else if (ferror(stdout)) err = -1; /* an earlier write failed; its errno is gone */
  if (fclose(stdout) != 0 && !err && errno != EBADF) err = errno;
  return err;
}

int main(int argc, char **argv) {
  options o;
  /* a reader that goes away is a write error (EPIPE), reported and exit 1,
   * not a silent death by SIGPIPE */
  signal(SIGPIPE, SIG_IGN);
  parse_args(&o, argc, argv);
  find_exe();
  if (o.quiet) setenv("KLUABENCH_QUIET", "1", 1);
  int wants_backend = !o.usage[0] && !o.help && !(o.command && strcmp(argv[o.script], "help") == 0);
  if (wants_backend && !select_backend(&o)) return EXIT_FAILURE;
  lua_State *L = luaL_newstate();
  if (L == NULL) {
    l_message("cannot create state: not enough memory");
    return EXIT_FAILURE;
  }
  lua_gc(L, LUA_GCSTOP); /* no collections while the libraries open */
  lua_pushcfunction(L, pmain);
  lua_pushlightuserdata(L, &o);
  int status = lua_pcall(L, 1, 0, 0);
  if (status != LUA_OK) { /* only a memory error or a bug gets here */
    kb_host_report(L, status);
    o.status = 1;
  }
  lua_close(L);
  int werr = close_stdout();
  if (werr) {
    fprintf(stderr, "%s: cannot write to stdout: %s\n", PROGNAME,
            werr > 0 ? strerror(werr) : "a write failed (no space, or the reader went away?)");
    if (o.status == 0) o.status = 1;
  }
  return o.status;
}
