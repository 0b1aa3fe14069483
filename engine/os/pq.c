/* kb.pq: PostgreSQL through libpq, for a history database that a team
 * shares (stdlib/kluabench/history/). libpq (PostgreSQL licence) is opened
 * with dlopen on first use, as NVRTC is (nvrtc.c), and never linked: the
 * static binary runs where PostgreSQL is not installed, and says so only
 * when a postgresql:// database is asked for.
 *
 * Primitives only: connect, run SQL with parameters ($1, $2, ...), the
 * transaction status. Every message starts with the label the caller gave
 * (the database's URI without its password), so an error always names the
 * database. Failures a caller expects (the server is down, SQL it refuses)
 * return nil, message, SQLSTATE (or "CONNECTION"); misuse raises. A
 * connection (kluabench.PQ) is made closed first and opened after; close
 * is idempotent; using a closed one is an error. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/kb.h"

#define PQ_MT "kluabench.PQ"

/* ---- libpq, declared by hand (libpq-fe.h) -------------------------------- */

typedef struct pg_conn PGconn;
typedef struct pg_result PGresult;
typedef unsigned int Oid;
typedef void (*PQnoticeProcessor)(void *arg, const char *message);
enum { CONNECTION_OK = 0 };
enum { PGRES_EMPTY_QUERY = 0, PGRES_COMMAND_OK = 1, PGRES_TUPLES_OK = 2 };
enum { PQTRANS_IDLE = 0 };
#define PG_DIAG_SQLSTATE 'C'

static struct {
  int state; /* 0 not tried, 1 usable, -1 failed */
  char why[768];
  char path[256];
  void *lib;
  PGconn *(*connectdb)(const char *);
  int (*status)(const PGconn *);
  char *(*error_message)(const PGconn *);
  void (*finish)(PGconn *);
  PGresult *(*exec)(PGconn *, const char *);
  PGresult *(*exec_params)(PGconn *, const char *, int, const Oid *, const char *const *, const int *,
                           const int *, int);
  int (*result_status)(const PGresult *);
  char *(*result_error_message)(const PGresult *);
  char *(*result_error_field)(const PGresult *, int);
  int (*ntuples)(const PGresult *);
  int (*nfields)(const PGresult *);
  char *(*fname)(const PGresult *, int);
  Oid (*ftype)(const PGresult *, int);
  char *(*getvalue)(const PGresult *, int, int);
  int (*getlength)(const PGresult *, int, int);
  int (*getisnull)(const PGresult *, int, int);
  char *(*cmd_tuples)(PGresult *);
  void (*clear)(PGresult *);
  PQnoticeProcessor (*set_notice_processor)(PGconn *, PQnoticeProcessor, void *);
  int (*lib_version)(void);
  int (*transaction_status)(const PGconn *);
} pq;

static const char *const PQ_NAMES[] = {"libpq.so.5", "libpq.so", NULL};

static const char *pq_load(void) {
  if (pq.state) return pq.state > 0 ? NULL : pq.why;
  pq.state = -1;
  const char *env = getenv("KLUABENCH_LIBPQ");
  if (env && *env) {
    pq.lib = dlopen(env, RTLD_NOW | RTLD_LOCAL);
    snprintf(pq.path, sizeof pq.path, "%s", env);
  }
  for (int i = 0; !pq.lib && !(env && *env) && PQ_NAMES[i]; i++) {
    pq.lib = dlopen(PQ_NAMES[i], RTLD_NOW | RTLD_LOCAL);
    snprintf(pq.path, sizeof pq.path, "%s", PQ_NAMES[i]);
  }
  if (!pq.lib) {
    snprintf(pq.why, sizeof pq.why,
             "libpq (the PostgreSQL client library) is not installed or not found (%s%s; tried libpq.so.5 "
             "and libpq.so on the library path): install it (Debian: libpq5) or set KLUABENCH_LIBPQ",
             env && *env ? "KLUABENCH_LIBPQ=" : "no KLUABENCH_LIBPQ", env && *env ? env : "");
    return pq.why;
  }
  static const struct {
    void **fn;
    const char *name;
  } syms[] = {
      {(void **)&pq.connectdb, "PQconnectdb"},
      {(void **)&pq.status, "PQstatus"},
      {(void **)&pq.error_message, "PQerrorMessage"},
      {(void **)&pq.finish, "PQfinish"},
      {(void **)&pq.exec, "PQexec"},
      {(void **)&pq.exec_params, "PQexecParams"},
      {(void **)&pq.result_status, "PQresultStatus"},
      {(void **)&pq.result_error_message, "PQresultErrorMessage"},
      {(void **)&pq.result_error_field, "PQresultErrorField"},
      {(void **)&pq.ntuples, "PQntuples"},
      {(void **)&pq.nfields, "PQnfields"},
      {(void **)&pq.fname, "PQfname"},
      {(void **)&pq.ftype, "PQftype"},
      {(void **)&pq.getvalue, "PQgetvalue"},
      {(void **)&pq.getlength, "PQgetlength"},
      {(void **)&pq.getisnull, "PQgetisnull"},
      {(void **)&pq.cmd_tuples, "PQcmdTuples"},
      {(void **)&pq.clear, "PQclear"},
      {(void **)&pq.set_notice_processor, "PQsetNoticeProcessor"},
      {(void **)&pq.lib_version, "PQlibVersion"},
      {(void **)&pq.transaction_status, "PQtransactionStatus"},
  };
  for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++) {
    *syms[i].fn = dlsym(pq.lib, syms[i].name);
    if (!*syms[i].fn) {
      snprintf(pq.why, sizeof pq.why, "%s has no symbol %s (libpq too old?)", pq.path, syms[i].name);
      dlclose(pq.lib);
      pq.lib = NULL;
      return pq.why;
    }
  }
  pq.state = 1;
  return NULL;
}

/* ---- connections ---------------------------------------------------------- */

typedef struct {
  PGconn *conn; /* NULL once closed */
  char label[400];
} kb_pq;

static kb_pq *check_conn(lua_State *L, int arg) {
  kb_pq *c = luaL_checkudata(L, arg, PQ_MT);
  if (!c->conn) luaL_error(L, "attempt to use a closed database connection (%s)", c->label);
  return c;
}

/* libpq's messages end with a newline (and may hold several lines). */
static void push_message(lua_State *L, const char *label, const char *msg) {
  size_t n = msg ? strlen(msg) : 0;
  while (n > 0 && (msg[n - 1] == '\n' || msg[n - 1] == ' ')) n--;
  lua_pushfstring(L, "%s: ", label);
  lua_pushlstring(L, n ? msg : "unknown error", n ? n : 13);
  lua_concat(L, 2);
}

/* NOTICE and WARNING messages (CREATE ... IF NOT EXISTS) are not errors:
 * they are dropped rather than printed on stderr by libpq's default. */
static void quiet_notices(void *arg, const char *message) {
  (void)arg;
  (void)message;
}

/*** Whether libpq (the PostgreSQL client library) could be opened, and from where.
 *
 * @signature kb.pq.available() -> true, path | false, why
 * @section database
 * @example
 *   print(kb.pq.available())
 */
/* kb.pq.available() -> true, path | false, why */
static int l_available(lua_State *L) {
  const char *why = pq_load();
  if (why) {
    lua_pushboolean(L, 0);
    lua_pushstring(L, why);
  } else {
    lua_pushboolean(L, 1);
    lua_pushstring(L, pq.path);
  }
  return 2;
}

/*** Connects to a PostgreSQL server (a postgresql:// URI or key=value words); label names the
 * database in every message (give it without a password).
 *
 * A server that does not answer gives nil, "label: connection to server ... failed: ...",
 * "CONNECTION"; without libpq, code "NOLIBPQ".
 *
 * @signature kb.pq.connect(conninfo [, label]) -> conn | nil, message, code
 * @section database
 * @example
 *   local conn, err = kb.pq.connect("host=/nonexistent port=5432 dbname=bench", "bench")
 *   print(conn, err)
 */
/* kb.pq.connect(conninfo [, label]) -> conn | nil, message, "CONNECTION"
 * (a URI or key=value words, as libpq takes them; label names the database
 * in every message and should hold no password). */
static int l_connect(lua_State *L) {
  const char *info = kb_check_cstring(L, 1, "connect", "conninfo");
  const char *label = kb_opt_cstring(L, 2, "connect", "label", "postgresql");
  kb_pq *c = lua_newuserdatauv(L, sizeof *c, 0);
  c->conn = NULL;
  snprintf(c->label, sizeof c->label, "%s", label);
  luaL_setmetatable(L, PQ_MT);
  const char *why = pq_load();
  if (why) {
    luaL_pushfail(L);
    lua_pushfstring(L, "%s: %s", c->label, why);
    lua_pushliteral(L, "NOLIBPQ");
    return 3;
  }
  PGconn *conn = pq.connectdb(info);
  if (!conn || pq.status(conn) != CONNECTION_OK) {
    luaL_pushfail(L);
    push_message(L, c->label, conn ? pq.error_message(conn) : "out of memory");
    if (conn) pq.finish(conn);
    lua_pushliteral(L, "CONNECTION");
    return 3;
  }
  pq.set_notice_processor(conn, quiet_notices, NULL);
  c->conn = conn;
  return 1;
}

/* One column value of a result, as Lua: integers, floats and numerics as
 * numbers, booleans as booleans, NULL as nil, the rest as text. */
static void push_value(lua_State *L, PGresult *r, int row, int col) {
  if (pq.getisnull(r, row, col)) {
    lua_pushnil(L);
    return;
  }
  const char *v = pq.getvalue(r, row, col);
  size_t n = (size_t)pq.getlength(r, row, col);
  switch (pq.ftype(r, col)) {
  case 16: lua_pushboolean(L, v[0] == 't'); return;          /* bool */
  case 20: case 21: case 23: case 26: case 700: case 701: case 1700: /* int8 int2 int4 oid float numeric */
    if (lua_stringtonumber(L, v) != 0) return;
    break;
  default: break;
  }
  lua_pushlstring(L, v, n);
}

/*** Runs SQL: without params one or more statements; with params ($1, $2, ...) one. Numbers,
 * booleans and NULL come back typed.
 *
 * @signature conn:exec(sql [, params]) -> rows, changes, columns | nil, message, sqlstate
 * @section database
 * @example
 *   local conn = kb.pq.connect("host=/nonexistent port=5432")
 *   if conn then print(conn:exec("SELECT $1::int + 1", {41})[1][1]) end
 */
/* conn:exec(sql [, params]) -> rows, changes, columns | nil, message,
 * SQLSTATE. Without params the text may hold several statements; with
 * params ($1..$n: nil is NULL, booleans, numbers, strings) one. rows is a
 * list of lists of column values; changes the rows an INSERT, UPDATE or
 * DELETE touched. */
static int conn_exec(lua_State *L) {
  kb_pq *c = check_conn(L, 1);
  const char *sql = luaL_checkstring(L, 2);
  kb_refuse_nul(L, 2, "exec", 1, "SQL text"); /* libpq reads C text: it would run only what precedes it */
  PGresult *r;
  if (lua_isnoneornil(L, 3)) {
    r = pq.exec(c->conn, sql);
  } else {
    luaL_checktype(L, 3, LUA_TTABLE);
    lua_Integer n = luaL_len(L, 3);
    if (lua_getfield(L, 3, "n") == LUA_TNUMBER) n = lua_tointeger(L, -1);
    lua_pop(L, 1);
    luaL_argcheck(L, n >= 0 && n <= 65535, 3, "at most 65535 parameters");
    luaL_checkstack(L, (int)n * 2 + 8, "too many parameters");
    const char **values = lua_newuserdatauv(L, sizeof(char *) * (size_t)(n ? n : 1), 0);
    int base = lua_gettop(L);
    for (int i = 1; i <= n; i++) {
      int t = lua_geti(L, 3, i);
      if (t == LUA_TNIL) {
        values[i - 1] = NULL;
      } else if (t == LUA_TBOOLEAN) {
        values[i - 1] = lua_toboolean(L, -1) ? "true" : "false";
      } else if (t == LUA_TNUMBER && lua_isinteger(L, -1)) {
        values[i - 1] = lua_pushfstring(L, "%I", lua_tointeger(L, -1));
      } else if (t == LUA_TNUMBER) {
        char buf[40];
        snprintf(buf, sizeof buf, "%.17g", (double)lua_tonumber(L, -1));
        values[i - 1] = lua_pushstring(L, buf);
      } else if (t == LUA_TSTRING) {
        /* libpq takes text parameters as C strings: "GPU\0A" would be "GPU" */
        kb_refuse_nul(L, -1, "exec", 2, "parameter %d", i);
        values[i - 1] = lua_tostring(L, -1);
      } else {
        return luaL_argerror(L, 3, lua_pushfstring(L, "parameter %d: nil, boolean, number or string expected, got %s",
                                                   i, luaL_typename(L, -1)));
      }
      /* the strings stay on the stack (referenced) until the call returns */
    }
    r = pq.exec_params(c->conn, sql, (int)n, NULL, values, NULL, NULL, 0);
    lua_settop(L, base - 1);
  }
  if (!r) {
    luaL_pushfail(L);
    push_message(L, c->label, pq.error_message(c->conn));
    lua_pushliteral(L, "CONNECTION");
    return 3;
  }
  int st = pq.result_status(r);
  if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK && st != PGRES_EMPTY_QUERY) {
    luaL_pushfail(L);
    push_message(L, c->label, pq.result_error_message(r));
    const char *state = pq.result_error_field(r, PG_DIAG_SQLSTATE);
    lua_pushstring(L, state ? state : "CONNECTION");
    pq.clear(r);
    return 3;
  }
  int nrow = pq.ntuples(r), ncol = pq.nfields(r);
  lua_createtable(L, nrow, 0);
  for (int i = 0; i < nrow; i++) {
    lua_createtable(L, ncol, 0);
    for (int j = 0; j < ncol; j++) {
      push_value(L, r, i, j);
      lua_rawseti(L, -2, j + 1);
    }
    lua_rawseti(L, -2, i + 1);
  }
  const char *changed = pq.cmd_tuples(r);
  lua_pushinteger(L, changed && *changed ? strtoll(changed, NULL, 10) : 0);
  lua_createtable(L, ncol, 0);
  for (int j = 0; j < ncol; j++) {
    lua_pushstring(L, pq.fname(r, j));
    lua_rawseti(L, -2, j + 1);
  }
  pq.clear(r);
  return 3;
}

/*** True between BEGIN and COMMIT (or after a failed statement inside one).
 *
 * @signature conn:in_transaction() -> boolean
 * @section database
 * @example
 *   local conn = kb.pq.connect("host=/nonexistent port=5432")
 *   if conn then print(conn:in_transaction()) end
 */
/* conn:in_transaction() -> true between BEGIN and COMMIT (or a failed
 * statement inside one) */
static int conn_in_transaction(lua_State *L) {
  kb_pq *c = check_conn(L, 1);
  lua_pushboolean(L, pq.transaction_status(c->conn) != PQTRANS_IDLE);
  return 1;
}

/*** The name messages use for this database.
 *
 * @signature conn:label() -> text
 * @section database
 * @example
 *   local conn = kb.pq.connect("host=/nonexistent port=5432", "team db")
 *   if conn then print(conn:label()) end
 */
/* conn:label() -> the name used in messages */
static int conn_label(lua_State *L) {
  kb_pq *c = luaL_checkudata(L, 1, PQ_MT);
  lua_pushstring(L, c->label);
  return 1;
}

/*** Closes the connection (idempotent).
 *
 * @signature conn:close()
 * @section database
 * @example
 *   local conn = kb.pq.connect("host=/nonexistent port=5432")
 *   if conn then conn:close() end
 */
/* conn:close() (and __gc, __close): idempotent. */
static int conn_close(lua_State *L) {
  kb_pq *c = luaL_checkudata(L, 1, PQ_MT);
  if (c->conn) pq.finish(c->conn);
  c->conn = NULL;
  return 0;
}

static int conn_tostring(lua_State *L) {
  kb_pq *c = luaL_checkudata(L, 1, PQ_MT);
  lua_pushfstring(L, "kluabench.PQ(%s%s)", c->label, c->conn ? "" : ", closed");
  return 1;
}

/*** libpq's version number (150018 for 15.18).
 *
 * @signature kb.pq.version() -> integer | nil, why
 * @section database
 * @example
 *   print(kb.pq.version())
 */
/* kb.pq.version() -> libpq's version number (150018 for 15.18) | nil, why */
static int l_version(lua_State *L) {
  const char *why = pq_load();
  if (why) {
    luaL_pushfail(L);
    lua_pushstring(L, why);
    return 2;
  }
  lua_pushinteger(L, pq.lib_version());
  return 1;
}

void kb_open_pq(lua_State *L) {
  static const luaL_Reg methods[] = {{"exec", conn_exec},
                                     {"in_transaction", conn_in_transaction},
                                     {"label", conn_label},
                                     {"close", conn_close},
                                     {NULL, NULL}};
  kb_new_class(L, PQ_MT, methods, conn_close, conn_tostring);
  static const luaL_Reg fns[] = {
      {"available", l_available}, {"connect", l_connect}, {"version", l_version}, {NULL, NULL}};
  luaL_newlib(L, fns);
  lua_setfield(L, -2, "pq");
}
