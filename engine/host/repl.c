/* The interactive loop, as the lua interpreter's (a line is first tried as
 * `return <line>`, results are printed with print, a line whose syntax error
 * ends in <eof> continues on the next), with libedit for line editing,
 * history and tab completion, `kb` preloaded, and `?name` for help("name").
 *
 * Without a terminal on stdin (`kluabench -i < file`) lines are read with
 * getline and the prompts are still written, as lua does. */
#include <errno.h>
#include <langinfo.h>
#include <locale.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>
#include <sys/file.h>
#include <sys/stat.h>

#include <editline/readline.h>

#include <lauxlib.h>
#include <lua.h>

#include "host.h"
#include "repl.h"
#include "signals.h"

#define CHUNKNAME "=stdin"
#define EOFMARK "<eof>"
#define MAX_HISTORY 1000
/* Completion follows at most this many __index tables. */
#define MAX_INDEX_DEPTH 8

static lua_State *g_L; /* the state completion looks into */
static int g_tty;      /* stdin is a terminal: use libedit */

/* ------------------------------------------------------------------ */
/* Reading lines                                                        */

/* _PROMPT / _PROMPT2 when set (as lua does), copied: a number converted by
 * lua_tostring would not outlive the pop. */
static const char *get_prompt(lua_State *L, int first) {
  static char buf[256];
  lua_getglobal(L, first ? "_PROMPT" : "_PROMPT2");
  const char *p = lua_tostring(L, -1);
  snprintf(buf, sizeof buf, "%s", p ? p : first ? "> " : ">> ");
  lua_pop(L, 1);
  return buf;
}

/* One byte of the terminal, or -1 at end of input, on an error, or once a
 * SIGINT has arrived. The wait is a poll with a short timeout, so that a
 * SIGINT landing between the check and the wait is still seen promptly. */
static int read_byte(int fd) {
  for (;;) {
    if (kb_signals_prompt_interrupted()) return -1;
    struct pollfd p = {.fd = fd, .events = POLLIN};
    int r = poll(&p, 1, 100);
    if (r < 0 && errno != EINTR) return -1;
    if (r <= 0) continue;
    unsigned char c;
    ssize_t n = read(fd, &c, 1);
    if (n == 1) return c;
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    return -1;
  }
}

/* libedit's rl_getc_function: one character, a code point decoded from
 * UTF-8, or -1. Returning -1 on SIGINT ends readline() at once with NULL
 * (libedit's own reader retries an interrupted read, so a Ctrl-C would
 * otherwise drop the line typed after it). */
static int read_char(FILE *in) {
  int fd = in ? fileno(in) : STDIN_FILENO;
  int c = read_byte(fd);
  if (c < 0x80) return c;
  int extra = c >= 0xF8 ? -1 : c >= 0xF0 ? 3 : c >= 0xE0 ? 2 : c >= 0xC0 ? 1 : -1;
  if (extra < 0) return 0xFFFD;
  int code = c & (0x3F >> extra);
  for (int i = 0; i < extra; i++) {
    int b = read_byte(fd);
    if (b < 0) return -1;
    if ((b & 0xC0) != 0x80) return 0xFFFD;
    code = (code << 6) | (b & 0x3F);
  }
  return code;
}

enum { LINE_OK, LINE_EOF, LINE_INTERRUPTED };

/* *line gets a malloc'd line without its newline when LINE_OK. */
static int read_line(const char *prompt, char **line) {
  *line = NULL;
  if (g_tty) {
    kb_signals_at_prompt();
    *line = readline(prompt);
    if (kb_signals_take_prompt_interrupt()) {
      free(*line);
      *line = NULL;
      return LINE_INTERRUPTED;
    }
    return *line ? LINE_OK : LINE_EOF;
  }
  fputs(prompt, stdout);
  fflush(stdout);
  size_t cap = 0;
  ssize_t n = getline(line, &cap, stdin);
  if (n < 0) {
    free(*line);
    *line = NULL;
    return LINE_EOF;
  }
  if (n > 0 && (*line)[n - 1] == '\n') (*line)[n - 1] = '\0';
  return LINE_OK;
}

static int g_new_lines; /* lines this session added to the history */

static void remember(const char *line) {
  if (g_tty && line[0] != '\0') {
    add_history(line);
    g_new_lines++;
  }
}

/* ------------------------------------------------------------------ */
/* Compiling a line                                                     */

static int incomplete(lua_State *L, int status) {
  if (status != LUA_ERRSYNTAX) return 0;
  size_t n;
  const char *msg = lua_tolstring(L, -1, &n);
  size_t m = sizeof(EOFMARK) - 1;
  return n >= m && strcmp(msg + n - m, EOFMARK) == 0;
}

/* "?name" -> help("name"), the name quoted as a Lua string. */
static int load_help(lua_State *L, const char *line) {
  const char *name = line + 1;
  while (*name == ' ' || *name == '\t') name++;
  size_t n = strlen(name);
  while (n > 0 && (name[n - 1] == ' ' || name[n - 1] == '\t')) n--;
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  luaL_addstring(&b, n ? "return help(\"" : "return help(");
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)name[i];
    if (c == '"' || c == '\\') {
      luaL_addchar(&b, '\\');
      luaL_addchar(&b, (char)c);
    } else if (c < 32 || c == 127) {
      char esc[8];
      snprintf(esc, sizeof esc, "\\%03d", c);
      luaL_addstring(&b, esc);
    } else {
      luaL_addchar(&b, (char)c);
    }
  }
  luaL_addstring(&b, n ? "\")" : ")");
  luaL_pushresult(&b);
  size_t len;
  const char *code = lua_tolstring(L, -1, &len);
  int status = luaL_loadbuffer(L, code, len, CHUNKNAME);
  lua_remove(L, -2);
  return status;
}

static int try_return(lua_State *L, const char *line) {
  const char *code = lua_pushfstring(L, "return %s;", line);
  int status = luaL_loadbuffer(L, code, strlen(code), CHUNKNAME);
  lua_remove(L, -2);
  if (status != LUA_OK) lua_pop(L, 1);
  return status;
}

/* Reads and compiles one statement (one or more lines). Leaves on the stack
 * the function (LUA_OK) or an error message (other status); pushes nothing
 * for LINE_EOF (returns -1) or an interrupted line (returns -2). */
static int load_statement(lua_State *L) {
  char *line;
  int r = read_line(get_prompt(L, 1), &line);
  if (r != LINE_OK) return r == LINE_EOF ? -1 : -2;
  int status;
  if (line[0] == '?') {
    status = load_help(L, line);
    remember(line);
    free(line);
    return status;
  }
  if ((status = try_return(L, line)) == LUA_OK) {
    remember(line);
    free(line);
    return status;
  }
  lua_pushstring(L, line); /* the statement so far, under the chunk */
  free(line);
  for (;;) {
    size_t len;
    const char *code = lua_tolstring(L, -1, &len);
    status = luaL_loadbuffer(L, code, len, CHUNKNAME);
    if (!incomplete(L, status)) break;
    r = read_line(get_prompt(L, 0), &line);
    if (r == LINE_INTERRUPTED) {
      lua_pop(L, 2);
      return -2;
    }
    if (r == LINE_EOF) break; /* report the incomplete statement */
    lua_pop(L, 1);
    lua_pushfstring(L, "\n%s", line);
    free(line);
    lua_concat(L, 2);
  }
  remember(lua_tostring(L, -2));
  lua_remove(L, -2);
  return status;
}

/* ------------------------------------------------------------------ */
/* Printing results                                                     */

#define PRINTER_KEY "kluabench.repl.printer"

/* Loads the results printer (upvalue-free function at stack top):
 * require("kluabench.repl.show").print. */
static int load_printer(lua_State *L) {
  lua_getglobal(L, "require");
  lua_pushliteral(L, "kluabench.repl.show");
  lua_call(L, 1, 1);
  lua_getfield(L, -1, "print");
  luaL_checktype(L, -1, LUA_TFUNCTION);
  return 1;
}

/* Pushes the function that prints results: kluabench.repl.show's print
 * (tables nested and bounded, timing results as a Measurement), required
 * on the first result and kept in the registry; the global print where the
 * stdlib does not have it. */
static void push_printer(lua_State *L) {
  if (lua_getfield(L, LUA_REGISTRYINDEX, PRINTER_KEY) == LUA_TFUNCTION) return;
  lua_pop(L, 1);
  lua_pushcfunction(L, load_printer);
  if (lua_pcall(L, 0, 1, 0) != LUA_OK || !lua_isfunction(L, -1)) {
    lua_pop(L, 1);
    lua_getglobal(L, "print");
    return; /* not kept: a later result tries the module again */
  }
  lua_pushvalue(L, -1);
  lua_setfield(L, LUA_REGISTRYINDEX, PRINTER_KEY);
}

static void print_results(lua_State *L, int base) {
  int n = lua_gettop(L) - base;
  if (n <= 0) return;
  luaL_checkstack(L, LUA_MINSTACK, "too many results to print");
  push_printer(L);
  lua_insert(L, base + 1);
  int status = kb_host_docall(L, n, 0);
  if (status != LUA_OK) {
    lua_pushfstring(L, "error printing the results (%s)", lua_tostring(L, -1));
    lua_remove(L, -2);
    kb_host_report(L, status);
  }
}

/* ------------------------------------------------------------------ */
/* Tab completion. Raw reads of tables and metatables, except the fields a
 * metatable lists in `fields`, read through __index (kb's lazily loaded
 * modules, a tensor's properties); no other metamethod and no finalizer
 * runs (the collector is held while completing). */

static const char *const keywords[] = {
    "and", "break", "do", "else", "elseif", "end", "false", "for", "function", "goto", "if",
    "in", "local", "nil", "not", "or", "repeat", "return", "then", "true", "until", "while",
    NULL};

static int is_keyword(const char *s, size_t n) {
  for (int i = 0; keywords[i]; i++)
    if (strlen(keywords[i]) == n && memcmp(keywords[i], s, n) == 0) return 1;
  return 0;
}

static int is_alpha(char c) {
  return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static int is_name(const char *s, size_t n) {
  if (n == 0 || !is_alpha(s[0])) return 0;
  for (size_t i = 1; i < n; i++)
    if (!is_alpha(s[i]) && !(s[i] >= '0' && s[i] <= '9')) return 0;
  return !is_keyword(s, n);
}

/* Replaces the value on top with the next table to search for a field: its
 * metatable's __index when that is a table, else the metatable's `methods`
 * table (the convention for types whose __index is a function, such as
 * kluabench.Tensor); else pops it and returns 0. */
static int next_index_table(lua_State *L) {
  if (!lua_getmetatable(L, -1)) {
    lua_pop(L, 1);
    return 0;
  }
  lua_pushliteral(L, "__index");
  if (lua_rawget(L, -2) != LUA_TTABLE) {
    lua_pop(L, 1);
    lua_pushliteral(L, "methods");
    lua_rawget(L, -2);
  }
  lua_remove(L, -2); /* metatable */
  lua_remove(L, -2); /* the value */
  if (lua_istable(L, -1)) return 1;
  lua_pop(L, 1);
  return 0;
}

/* Whether the metatable of the value on top lists `key` in its `fields`
 * table (fields that its __index computes or loads). */
static int computed_field(lua_State *L, const char *key, size_t n) {
  if (!lua_getmetatable(L, -1)) return 0;
  int listed = 0;
  lua_pushliteral(L, "fields");
  if (lua_rawget(L, -2) == LUA_TTABLE) {
    lua_pushlstring(L, key, n);
    listed = lua_rawget(L, -2) != LUA_TNIL;
    lua_pop(L, 1);
  }
  lua_pop(L, 2);
  return listed;
}

/* Replaces the value on top by its field `key` (raw, through __index
 * tables); returns 0 (nothing pushed) when there is none. A field that the
 * metatable lists in `fields` and that is not there raw is read through
 * __index (completion runs under lua_pcall): that is how `kb.measure.`
 * completes before kb.measure was first used (kluabench's __index loads
 * the module). */
static int raw_field(lua_State *L, const char *key, size_t n) {
  if (computed_field(L, key, n)) {
    lua_pushlstring(L, key, n);
    lua_gettable(L, -2);
    lua_remove(L, -2);
    if (!lua_isnil(L, -1)) return 1;
    lua_pop(L, 1);
    return 0;
  }
  for (int depth = 0; depth < MAX_INDEX_DEPTH; depth++) {
    if (lua_istable(L, -1)) {
      lua_pushlstring(L, key, n);
      if (lua_rawget(L, -2) != LUA_TNIL) {
        lua_remove(L, -2);
        return 1;
      }
      lua_pop(L, 1);
    }
    if (!next_index_table(L)) return 0;
  }
  lua_pop(L, 1);
  return 0;
}

static void add_keys(lua_State *L, int set, const char *part, int methods) {
  size_t plen = strlen(part);
  lua_pushnil(L);
  while (lua_next(L, -2)) {
    size_t n;
    if (lua_type(L, -2) == LUA_TSTRING && (!methods || lua_isfunction(L, -1))) {
      const char *k = lua_tolstring(L, -2, &n);
      if (n >= plen && memcmp(k, part, plen) == 0 && is_name(k, n)) {
        lua_pushvalue(L, -2);
        lua_pushboolean(L, 1);
        lua_rawset(L, set);
      }
    }
    lua_pop(L, 1);
  }
}

/* The metatable's `fields` table names the fields that its __index
 * function computes (t.shape); adds them unless completing methods. */
static void add_computed_fields(lua_State *L, int set, const char *part, int methods) {
  if (methods || !lua_getmetatable(L, -1)) return;
  lua_pushliteral(L, "fields");
  if (lua_rawget(L, -2) == LUA_TTABLE) {
    size_t plen = strlen(part);
    lua_pushnil(L);
    while (lua_next(L, -2)) {
      lua_pop(L, 1);
      size_t n;
      const char *k = lua_type(L, -1) == LUA_TSTRING ? lua_tolstring(L, -1, &n) : NULL;
      if (k && n >= plen && memcmp(k, part, plen) == 0 && is_name(k, n)) {
        lua_pushvalue(L, -1);
        lua_pushboolean(L, 1);
        lua_rawset(L, set);
      }
    }
  }
  lua_pop(L, 2);
}

/* Adds to the set at `set` every name key of the value on top (and of the
 * tables next_index_table finds after it) that starts with `part`; only
 * functions when `methods`. Pops the value. */
static void add_fields(lua_State *L, int set, const char *part, int methods) {
  for (int depth = 0; depth < MAX_INDEX_DEPTH; depth++) {
    if (lua_istable(L, -1)) add_keys(L, set, part, methods);
    add_computed_fields(L, set, part, methods);
    if (!next_index_table(L)) return;
  }
  lua_pop(L, 1);
}

/* completions(text) -> set of completed words. A word is a dotted path
 * (a.b.c), possibly ending in ":" and a partial method name. */
static int completions(lua_State *L) {
  const char *text = lua_tostring(L, 1);
  lua_newtable(L);
  int set = lua_gettop(L);
  const char *dot = strrchr(text, '.'), *colon = strrchr(text, ':');
  const char *sep = dot > colon ? dot : colon;
  if (sep == NULL) { /* a global or a keyword */
    for (int i = 0; keywords[i]; i++)
      if (strncmp(keywords[i], text, strlen(text)) == 0) {
        lua_pushboolean(L, 1);
        lua_setfield(L, set, keywords[i]);
      }
    lua_pushglobaltable(L);
    add_fields(L, set, text, 0);
    return 1;
  }
  if (sep == text || (colon && colon != sep)) return 1; /* ".x" and "a:b.c" are not paths */
  lua_pushglobaltable(L);
  for (const char *p = text; p < sep;) {
    const char *end = memchr(p, '.', (size_t)(sep - p));
    if (!end) end = sep;
    if (!is_name(p, (size_t)(end - p)) || !raw_field(L, p, (size_t)(end - p))) return 1;
    p = end + 1;
  }
  add_fields(L, set, sep + 1, *sep == ':');
  return 1;
}

static char **g_matches;
static size_t g_nmatches, g_next;

static void free_matches(void) {
  for (size_t i = 0; i < g_nmatches; i++) free(g_matches[i]);
  free(g_matches);
  g_matches = NULL;
  g_nmatches = g_next = 0;
}

static int compare_strings(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Fills g_matches with text's completions, each prefixed by the path. */
static void compute_matches(const char *text) {
  lua_State *L = g_L;
  free_matches();
  int top = lua_gettop(L);
  int gc_running = lua_gc(L, LUA_GCISRUNNING);
  lua_gc(L, LUA_GCSTOP);
  lua_pushcfunction(L, completions);
  lua_pushstring(L, text);
  if (lua_pcall(L, 1, 1, 0) == LUA_OK) {
    const char *dot = strrchr(text, '.'), *colon = strrchr(text, ':');
    const char *sep = dot > colon ? dot : colon;
    size_t plen = sep ? (size_t)(sep - text + 1) : 0;
    size_t cap = 0;
    lua_pushnil(L);
    while (lua_next(L, -2)) {
      lua_pop(L, 1);
      size_t n;
      const char *k = lua_tolstring(L, -1, &n);
      if (g_nmatches == cap) {
        cap = cap ? 2 * cap : 32;
        char **grown = realloc(g_matches, cap * sizeof *grown);
        if (!grown) break;
        g_matches = grown;
      }
      char *m = malloc(plen + n + 1);
      if (!m) break;
      memcpy(m, text, plen);
      memcpy(m + plen, k, n + 1);
      g_matches[g_nmatches++] = m;
    }
    qsort(g_matches, g_nmatches, sizeof *g_matches, compare_strings);
  }
  lua_settop(L, top);
  if (gc_running) lua_gc(L, LUA_GCRESTART);
}

static char *next_match(const char *text, int state) {
  if (state == 0) compute_matches(text);
  return g_next < g_nmatches ? strdup(g_matches[g_next++]) : NULL;
}

static char **attempt_completion(const char *text, int start, int end) {
  (void)start;
  (void)end;
  rl_attempted_completion_over = 1; /* never fall back to file names */
  return rl_completion_matches(text, next_match);
}

/* ------------------------------------------------------------------ */
/* Set-up                                                               */

static char *history_path(void) {
  const char *p = getenv("KLUABENCH_HISTORY");
  if (p && *p) return strdup(p);
  const char *home = getenv("HOME");
  if (!home || !*home) return NULL;
  size_t n = strlen(home) + sizeof "/.kluabench_history";
  char *s = malloc(n);
  if (s) snprintf(s, n, "%s/.kluabench_history", home);
  return s;
}

/* The history file is read whole, appended to and trimmed (libedit's
 * append_history also chmods it): only a regular file of sane size, or none
 * yet, may be used. A device (/dev/null), a FIFO or an endless file would be read
 * forever or turned into a plain file. Frees path and returns NULL, with
 * a note, when it is not usable. */
#define MAX_HISTORY_BYTES (16 * 1024 * 1024)
static char *usable_history(char *path) {
  struct stat st;
  const char *why;
  if (!path) return NULL;
  if (stat(path, &st) != 0)
    why = errno == ENOENT ? NULL : strerror(errno); /* missing: created on exit */
  else if (!S_ISREG(st.st_mode))
    why = "not a regular file";
  else if (st.st_size > MAX_HISTORY_BYTES)
    why = "larger than 16 MiB";
  else
    why = NULL;
  if (!why) return path;
  fprintf(stderr, "kluabench: history file %s: %s; history is not kept\n", path, why);
  free(path);
  return NULL;
}

/* Several REPLs share one history file, each started and ended at its own
 * time: a REPL that wrote back the whole history it read at start (as
 * write_history does) would drop the lines that the others added
 * meanwhile. So each one reads the file at start, appends only its own new
 * lines at exit (append_history), and trims the file to MAX_HISTORY
 * entries, all under an flock on the file: shared to read, exclusive to
 * append and trim. */
static int lock_history(const char *path, int flags, int how) {
  int fd = open(path, flags | O_CLOEXEC | O_NONBLOCK, 0600);
  if (fd < 0) return -1;
  while (flock(fd, how) != 0) {
    if (errno != EINTR) {
      close(fd);
      return -1;
    }
  }
  return fd;
}

static void load_history(const char *path) {
  int fd = lock_history(path, O_RDONLY, LOCK_SH);
  if (fd < 0) return; /* none yet */
  read_history(path);
  close(fd); /* and the lock with it */
}

/* Keeps libedit's first line (its format cookie) and the last `keep`
 * entries of the file open on fd (one entry a line: libedit encodes
 * newlines inside an entry). A file it cannot read or that has no more is
 * left as it is. */
static void trim_history(int fd, int keep) {
  struct stat st;
  if (fstat(fd, &st) != 0 || st.st_size <= 0 || st.st_size > 2 * MAX_HISTORY_BYTES) return;
  size_t n = (size_t)st.st_size;
  char *buf = malloc(n);
  if (!buf) return;
  ssize_t got = pread(fd, buf, n, 0);
  if (got != (ssize_t)n) {
    free(buf);
    return;
  }
  size_t lines = 0;
  for (size_t i = 0; i < n; i++) lines += buf[i] == '\n';
  if (lines > (size_t)keep + 1) {
    size_t cookie = (size_t)((char *)memchr(buf, '\n', n) - buf) + 1, from = cookie, drop = lines - 1 - (size_t)keep;
    for (size_t i = cookie; i < n && drop > 0; i++)
      if (buf[i] == '\n' && --drop == 0) from = i + 1;
    memmove(buf + cookie, buf + from, n - from);
    size_t len = cookie + (n - from);
    if (pwrite(fd, buf, len, 0) == (ssize_t)len) (void)!ftruncate(fd, (off_t)len);
  }
  free(buf);
}

/* The whole file at path (at most limit bytes) in a malloc'd buffer. */
static char *slurp_file(const char *path, size_t limit, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  char *buf = malloc(limit + 1);
  size_t n = buf ? fread(buf, 1, limit + 1, f) : 0;
  fclose(f);
  if (!buf || n > limit) {
    free(buf);
    return NULL;
  }
  *len = n;
  return buf;
}

static int write_all(int fd, const char *p, size_t n) {
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return -1;
    p += w, n -= (size_t)w;
  }
  return 0;
}

/* Appends this session's lines, in libedit's encoding: the whole history
 * is written to a temporary file by write_history (libedit's
 * append_history would do, but the one linked here writes one entry more
 * than asked for), and its last lines, one entry each, are appended. */
static void save_history(const char *path) {
  int n = g_new_lines < history_length ? g_new_lines : history_length;
  if (n <= 0) return;
  const char *dir = getenv("TMPDIR");
  char tmp[512];
  snprintf(tmp, sizeof tmp, "%s/kluabench-history-XXXXXX", dir && *dir ? dir : "/tmp");
  int tfd = mkstemp(tmp);
  if (tfd < 0) return;
  close(tfd);
  size_t len = 0;
  char *all = write_history(tmp) == 0 ? slurp_file(tmp, 2 * MAX_HISTORY_BYTES, &len) : NULL;
  unlink(tmp);
  if (!all || len == 0 || all[len - 1] != '\n') {
    free(all);
    return;
  }
  size_t cookie = (size_t)((char *)memchr(all, '\n', len) - all) + 1, from = len;
  for (int k = 0; from > cookie && k <= n;) /* back over n newlines, to the start of the nth-last line */
    if (all[--from - 1] == '\n' && ++k == n) break;
  if (from < cookie) from = cookie;
  /* not O_APPEND: Linux's pwrite appends on such a descriptor, and
   * trim_history rewrites from offset 0; the lock keeps the end still */
  int fd = lock_history(path, O_RDWR | O_CREAT, LOCK_EX);
  if (fd >= 0) {
    off_t end = lseek(fd, 0, SEEK_END);
    if (end >= 0 && (end > 0 || write_all(fd, all, cookie) == 0) && write_all(fd, all + from, len - from) == 0)
      trim_history(fd, MAX_HISTORY);
    close(fd);
  }
  free(all);
}

/* libedit converts between characters and bytes with the C library's
 * LC_CTYPE: the user's, or C.UTF-8 when that one is not UTF-8 (a terminal
 * today is). Only LC_CTYPE changes; Lua's number formatting stays in C. */
static void utf8_ctype(void) {
  if (setlocale(LC_CTYPE, "") && strcmp(nl_langinfo(CODESET), "UTF-8") == 0) return;
  if (!setlocale(LC_CTYPE, "C.UTF-8")) setlocale(LC_CTYPE, "C");
}

static void init_editline(void) {
  utf8_ctype();
  rl_readline_name = "kluabench";
  rl_getc_function = read_char; /* must be set before rl_initialize */
  rl_initialize();
  using_history();
  stifle_history(MAX_HISTORY);
  /* '.' and ':' are not breaks, so "kb.rope.ll" and "t:nu" are one word */
  rl_basic_word_break_characters = " \t\n\"\\'`@$><=;|&{}()[],+-*/%^~#";
  rl_completer_word_break_characters = (char *)rl_basic_word_break_characters;
  rl_completion_append_character = '\0';
  rl_attempted_completion_function = attempt_completion;
}

static int no_help(lua_State *L) {
  (void)L;
  fputs("help is not available in this build (module kluabench.apidoc.help not found)\n", stdout);
  fflush(stdout);
  return 0;
}

/* kb, and help from kluabench.apidoc.help when the stdlib has it (the module may
 * return the function, a table with .help, or set the global itself). */
static const char preload_code[] =
    "kb = require 'kluabench'\n"
    "if help == nil and (package.preload['kluabench.apidoc.help']\n"
    "    or package.searchpath('kluabench.apidoc.help', package.path)) then\n"
    "  local m = require 'kluabench.apidoc.help'\n"
    "  local mt = type(m) == 'table' and getmetatable(m)\n"
    "  if help == nil then\n"
    "    if type(m) == 'function' or (mt and mt.__call) then help = m\n"
    "    elseif type(m) == 'table' and type(m.help) == 'function' then help = m.help end\n"
    "  end\n"
    "end\n";

static const char banner_code[] =
    "local b = type(kb) == 'table' and type(kb.backend) == 'function' and kb.backend()\n"
    "io.write('kb = require \"kluabench\" is loaded', b and (' (backend ' .. tostring(b) .. ')') "
    "or '',\n"
    "  '; help(x) or ?name shows documentation, Ctrl-D exits\\n')\n";

static void run_code(lua_State *L, const char *code, const char *name) {
  int status = luaL_loadbuffer(L, code, strlen(code), name);
  if (status == LUA_OK) status = kb_host_docall(L, 0, 0);
  kb_host_report(L, status);
}

static void preload(lua_State *L) {
  run_code(L, preload_code, "=(repl)");
  lua_getglobal(L, "help");
  int has_help = !lua_isnil(L, -1);
  lua_pop(L, 1);
  if (!has_help) {
    lua_pushcfunction(L, no_help);
    lua_setglobal(L, "help");
  }
  if (g_tty) run_code(L, banner_code, "=(repl)");
}

/* ------------------------------------------------------------------ */
/* The loop                                                             */

void kb_repl(lua_State *L) {
  int base = lua_gettop(L);
  g_L = L;
  g_tty = isatty(0);
  char *hist = NULL;
  if (g_tty) {
    init_editline();
    hist = usable_history(history_path());
    if (hist) load_history(hist);
  }
  preload(L);
  int status;
  while ((status = load_statement(L)) != -1) {
    if (status == -2) { /* Ctrl-C: drop the line */
      fputc('\n', stdout);
      fflush(stdout);
      continue;
    }
    if (status == LUA_OK) status = kb_host_docall(L, 0, LUA_MULTRET);
    if (status == LUA_OK)
      print_results(L, base);
    else
      kb_host_report(L, status);
    lua_settop(L, base);
  }
  lua_settop(L, base);
  fputc('\n', stdout);
  fflush(stdout);
  kb_signals_disarm();
  if (hist) {
    save_history(hist);
    free(hist);
  }
  free_matches();
}
