/* kb.sqlite: the SQLite C library (linked statically; public domain), for
 * the history database (stdlib/kluabench/history/). Primitives only:
 * open a file, run SQL, prepared statements with bound parameters, the
 * busy timeout. Which tables exist, transactions and migrations are policy,
 * in stdlib/kluabench/history/db.lua and schema.lua.
 *
 * Every message starts with the database's path ("h.db: file is not a
 * database"), so that an error always names the database. Failures a
 * caller expects (a file that is not a database, a busy lock, a constraint)
 * return nil, message, code name ("SQLITE_NOTADB"); misuse raises.
 *
 * A handle (kluabench.SQLite) and a statement (kluabench.SQLiteStatement)
 * are made closed first and opened after, as liolib does, so an error half
 * way leaves nothing to leak; closing twice is fine; using a closed one is
 * an error. A statement keeps its database alive (a reference in its user
 * value), and the database finalizes its open statements when it closes. */
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>

#include "../core/kb.h"

#define DB_MT "kluabench.SQLite"
#define STMT_MT "kluabench.SQLiteStatement"

typedef struct {
  sqlite3 *db; /* NULL once closed */
  char path[512];
} kb_sqlite;

typedef struct {
  sqlite3_stmt *stmt; /* NULL once finalized */
  kb_sqlite *owner;
} kb_stmt;

static kb_sqlite *check_db(lua_State *L, int arg) {
  kb_sqlite *d = luaL_checkudata(L, arg, DB_MT);
  if (!d->db) luaL_error(L, "attempt to use a closed database (%s)", d->path);
  return d;
}

static kb_stmt *check_stmt(lua_State *L, int arg) {
  kb_stmt *s = luaL_checkudata(L, arg, STMT_MT);
  if (!s->stmt || !s->owner->db) luaL_error(L, "attempt to use a finalized statement");
  return s;
}

/* nil, "path: message", "SQLITE_X": the soft failure of a call. */
static int push_failure(lua_State *L, kb_sqlite *d, int rc) {
  luaL_pushfail(L);
  const char *msg = d->db ? sqlite3_errmsg(d->db) : sqlite3_errstr(rc);
  lua_pushfstring(L, "%s: %s", d->path, msg);
  switch (rc & 0xff) {
  case SQLITE_ERROR: lua_pushliteral(L, "SQLITE_ERROR"); break;
  case SQLITE_BUSY: lua_pushliteral(L, "SQLITE_BUSY"); break;
  case SQLITE_LOCKED: lua_pushliteral(L, "SQLITE_LOCKED"); break;
  case SQLITE_NOTADB: lua_pushliteral(L, "SQLITE_NOTADB"); break;
  case SQLITE_CORRUPT: lua_pushliteral(L, "SQLITE_CORRUPT"); break;
  case SQLITE_CANTOPEN: lua_pushliteral(L, "SQLITE_CANTOPEN"); break;
  case SQLITE_CONSTRAINT: lua_pushliteral(L, "SQLITE_CONSTRAINT"); break;
  case SQLITE_READONLY: lua_pushliteral(L, "SQLITE_READONLY"); break;
  case SQLITE_FULL: lua_pushliteral(L, "SQLITE_FULL"); break;
  case SQLITE_IOERR: lua_pushliteral(L, "SQLITE_IOERR"); break;
  case SQLITE_INTERRUPT: lua_pushliteral(L, "SQLITE_INTERRUPT"); break;
  default: lua_pushfstring(L, "SQLITE_%d", rc & 0xff); break;
  }
  return 3;
}

/* ---- kb.sqlite.open ------------------------------------------------------ */

/*** Opens a SQLite database file (":memory:": one in memory); mode "rw" (default: the file must
 * exist), "rwc" (create it), "ro".
 *
 * A file that is not a database opens but fails at its first statement with "path: file is not a
 * database", "SQLITE_NOTADB". Codes: SQLITE_CANTOPEN, SQLITE_BUSY, SQLITE_CONSTRAINT, ...
 *
 * @signature kb.sqlite.open(path [, mode]) -> db | nil, message, code
 * @section database
 * @example
 *   local db = assert(kb.sqlite.open(":memory:"))
 *   assert(db:exec("CREATE TABLE t (x INTEGER)"))
 *   db:close()
 */
/* kb.sqlite.open(path [, mode]) -> db | nil, message, code. mode: "rw"
 * (default: the file must exist), "rwc" (create it when absent), "ro". */
static int l_open(lua_State *L) {
  const char *path = kb_check_cstring(L, 1, "open", "path");
  const char *mode = kb_opt_cstring(L, 2, "open", "mode", "rw");
  size_t n = strlen(path);
  int flags;
  if (strcmp(mode, "rw") == 0) flags = SQLITE_OPEN_READWRITE;
  else if (strcmp(mode, "rwc") == 0) flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
  else if (strcmp(mode, "ro") == 0) flags = SQLITE_OPEN_READONLY;
  else return luaL_argerror(L, 2, lua_pushfstring(L, "mode must be 'rw', 'rwc' or 'ro', got '%s'", mode));
  if (n == 0 || n >= sizeof(((kb_sqlite *)0)->path)) return luaL_argerror(L, 1, "a path of 1 to 511 bytes expected");
  kb_sqlite *d = lua_newuserdatauv(L, sizeof *d, 0);
  d->db = NULL;
  snprintf(d->path, sizeof d->path, "%s", path);
  luaL_setmetatable(L, DB_MT);
  sqlite3 *db = NULL;
  int rc = sqlite3_open_v2(path, &db, flags | SQLITE_OPEN_NOMUTEX, NULL);
  if (rc != SQLITE_OK) {
    luaL_pushfail(L);
    lua_pushfstring(L, "%s: %s", path, db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
    sqlite3_close(db);
    lua_pushliteral(L, "SQLITE_CANTOPEN");
    return 3;
  }
  d->db = db;
  sqlite3_extended_result_codes(db, 0);
  return 1;
}

/*** The version of the SQLite library linked in ("3.40.1").
 *
 * @signature kb.sqlite.version() -> text
 * @section database
 * @example
 *   print(kb.sqlite.version())
 */
/* kb.sqlite.version() -> "3.40.1" */
static int l_version(lua_State *L) {
  lua_pushstring(L, sqlite3_libversion());
  return 1;
}

/* ---- database methods ---------------------------------------------------- */

/*** Runs one or more SQL statements without parameters.
 *
 * @signature db:exec(sql) -> true | nil, message, code
 * @name sqlite:exec
 * @section database
 * @example
 *   local db = assert(kb.sqlite.open(":memory:"))
 *   print(db:exec("CREATE TABLE a (x); CREATE TABLE b (y)"))
 */
/* db:exec(sql) -> true | nil, message, code: one or more statements, no
 * parameters (schema steps, BEGIN and COMMIT). */
static int db_exec(lua_State *L) {
  kb_sqlite *d = check_db(L, 1);
  const char *sql = luaL_checkstring(L, 2);
  kb_refuse_nul(L, 2, "exec", 1, "SQL text"); /* SQLite would run only what precedes it */
  int rc = sqlite3_exec(d->db, sql, NULL, NULL, NULL);
  if (rc != SQLITE_OK) return push_failure(L, d, rc);
  lua_pushboolean(L, 1);
  return 1;
}

/*** Compiles one SQL statement with ? parameters into a statement to execute many times.
 *
 * @signature db:prepare(sql) -> stmt | nil, message, code
 * @name sqlite:prepare
 * @section database
 * @example
 *   local db = assert(kb.sqlite.open(":memory:"))
 *   local st = assert(db:prepare("SELECT ? + 1"))
 *   print(st:execute({41})[1][1]) --> 42
 */
/* db:prepare(sql) -> statement | nil, message, code */
static int db_prepare(lua_State *L) {
  kb_sqlite *d = check_db(L, 1);
  size_t n;
  const char *sql = luaL_checklstring(L, 2, &n);
  kb_refuse_nul(L, 2, "prepare", 1, "SQL text"); /* SQLite would stop reading there */
  kb_stmt *s = lua_newuserdatauv(L, sizeof *s, 1);
  s->stmt = NULL;
  s->owner = d;
  luaL_setmetatable(L, STMT_MT);
  lua_pushvalue(L, 1);
  lua_setiuservalue(L, -2, 1); /* the statement keeps its database alive */
  const char *tail = NULL;
  int rc = sqlite3_prepare_v2(d->db, sql, (int)n, &s->stmt, &tail);
  if (rc != SQLITE_OK) return push_failure(L, d, rc);
  if (!s->stmt) return luaL_argerror(L, 2, "no SQL statement in the text");
  while (tail && *tail && (*tail == ' ' || *tail == '\n' || *tail == '\t' || *tail == ';')) tail++;
  if (tail && *tail) {
    sqlite3_finalize(s->stmt);
    s->stmt = NULL;
    return luaL_argerror(L, 2, "one statement expected (use db:exec for several)");
  }
  return 1;
}

/*** How long a statement waits for another process's lock before failing with SQLITE_BUSY.
 *
 * @signature db:busy_timeout(ms)
 * @name sqlite:busy_timeout
 * @section database
 * @example
 *   local db = assert(kb.sqlite.open(":memory:"))
 *   db:busy_timeout(5000)
 */
/* db:busy_timeout(ms): how long a statement waits for another process's
 * lock before it fails with SQLITE_BUSY. */
static int db_busy_timeout(lua_State *L) {
  kb_sqlite *d = check_db(L, 1);
  lua_Integer ms = luaL_checkinteger(L, 2);
  luaL_argcheck(L, ms >= 0 && ms <= 3600000, 2, "milliseconds from 0 to 3600000 expected");
  sqlite3_busy_timeout(d->db, (int)ms);
  return 0;
}

/*** The rows the last INSERT, UPDATE or DELETE changed.
 *
 * @signature db:changes() -> integer
 * @name sqlite:changes
 * @section database
 * @example
 *   local db = assert(kb.sqlite.open(":memory:"))
 *   db:exec("CREATE TABLE t (x); INSERT INTO t VALUES (1), (2)")
 *   print(db:changes()) --> 2
 */
/* db:changes() -> rows changed by the last INSERT, UPDATE or DELETE */
static int db_changes(lua_State *L) {
  kb_sqlite *d = check_db(L, 1);
  lua_pushinteger(L, sqlite3_changes(d->db));
  return 1;
}

/*** True outside a transaction.
 *
 * @signature db:autocommit() -> boolean
 * @name sqlite:autocommit
 * @section database
 * @example
 *   local db = assert(kb.sqlite.open(":memory:"))
 *   print(db:autocommit()) --> true
 */
/* db:autocommit() -> true outside a transaction */
static int db_autocommit(lua_State *L) {
  kb_sqlite *d = check_db(L, 1);
  lua_pushboolean(L, sqlite3_get_autocommit(d->db));
  return 1;
}

/*** The path the database was opened with.
 *
 * @signature db:path() -> text
 * @name sqlite:path
 * @section database
 * @example
 *   print(assert(kb.sqlite.open(":memory:")):path())
 */
/* db:path() -> the path it was opened with */
static int db_path(lua_State *L) {
  kb_sqlite *d = luaL_checkudata(L, 1, DB_MT);
  lua_pushstring(L, d->path);
  return 1;
}

/*** Closes the database and finalizes its statements; closing twice is fine, using a closed one is
 * an error.
 *
 * @signature db:close()
 * @name sqlite:close
 * @section database
 * @example
 *   local db = assert(kb.sqlite.open(":memory:"))
 *   db:close()
 *   db:close()
 */
/* db:close() (and __gc, __close): idempotent; finalizes open statements. */
static int db_close(lua_State *L) {
  kb_sqlite *d = luaL_checkudata(L, 1, DB_MT);
  if (d->db) {
    sqlite3_stmt *st;
    while ((st = sqlite3_next_stmt(d->db, NULL)) != NULL) sqlite3_finalize(st);
    sqlite3_close(d->db);
    d->db = NULL;
  }
  return 0;
}

static int db_tostring(lua_State *L) {
  kb_sqlite *d = luaL_checkudata(L, 1, DB_MT);
  lua_pushfstring(L, "kluabench.SQLite(%s%s)", d->path, d->db ? "" : ", closed");
  return 1;
}

/* ---- statements ---------------------------------------------------------- */

/* Binds params[1..n] (n = params.n or #params; nil is NULL). */
static void bind_params(lua_State *L, kb_stmt *s, int idx) {
  sqlite3_reset(s->stmt);
  sqlite3_clear_bindings(s->stmt);
  if (lua_isnoneornil(L, idx)) return;
  luaL_checktype(L, idx, LUA_TTABLE);
  lua_Integer n = luaL_len(L, idx);
  if (lua_getfield(L, idx, "n") == LUA_TNUMBER) n = lua_tointeger(L, -1);
  lua_pop(L, 1);
  int want = sqlite3_bind_parameter_count(s->stmt);
  if (n > want)
    luaL_argerror(L, idx, lua_pushfstring(L, "%d parameters given, the statement has %d", (int)n, want));
  for (int i = 1; i <= n; i++) {
    int t = lua_geti(L, idx, i);
    int rc = SQLITE_OK;
    if (t == LUA_TNIL) rc = sqlite3_bind_null(s->stmt, i);
    else if (t == LUA_TBOOLEAN) rc = sqlite3_bind_int(s->stmt, i, lua_toboolean(L, -1));
    else if (t == LUA_TNUMBER && lua_isinteger(L, -1)) rc = sqlite3_bind_int64(s->stmt, i, lua_tointeger(L, -1));
    else if (t == LUA_TNUMBER) rc = sqlite3_bind_double(s->stmt, i, lua_tonumber(L, -1));
    else if (t == LUA_TSTRING) {
      size_t len;
      const char *p = lua_tolstring(L, -1, &len);
      rc = sqlite3_bind_text64(s->stmt, i, p, len, SQLITE_TRANSIENT, SQLITE_UTF8);
    } else {
      luaL_argerror(L, idx, lua_pushfstring(L, "parameter %d: nil, boolean, number or string expected, got %s",
                                            i, luaL_typename(L, -1)));
    }
    lua_pop(L, 1);
    if (rc != SQLITE_OK) luaL_error(L, "%s: binding parameter %d: %s", s->owner->path, i, sqlite3_errstr(rc));
  }
}

static void push_column(lua_State *L, sqlite3_stmt *st, int c) {
  switch (sqlite3_column_type(st, c)) {
  case SQLITE_INTEGER: lua_pushinteger(L, sqlite3_column_int64(st, c)); break;
  case SQLITE_FLOAT: lua_pushnumber(L, sqlite3_column_double(st, c)); break;
  case SQLITE_NULL: lua_pushnil(L); break;
  default: { /* text and blobs: the bytes */
    const void *p = sqlite3_column_blob(st, c);
    lua_pushlstring(L, p ? p : "", (size_t)sqlite3_column_bytes(st, c));
  }
  }
}

/*** Binds params (nil, booleans, numbers, strings; params.n for trailing nils), runs the statement
 * to its end and returns its rows as lists of column values.
 *
 * @signature stmt:execute([params]) -> rows | nil, message, code
 * @section database
 * @example
 *   local db = assert(kb.sqlite.open(":memory:"))
 *   db:exec("CREATE TABLE t (a, b)")
 *   local ins = assert(db:prepare("INSERT INTO t VALUES (?, ?)"))
 *   ins:execute({1, "x"})
 *   print(assert(db:prepare("SELECT b FROM t")):execute()[1][1]) --> x
 */
/* stmt:execute([params]) -> rows | nil, message, code. Binds the
 * parameters, steps to the end and returns every row as a list of column
 * values (1-based; NULL is a hole); the statement is reset for the next
 * call. */
static int stmt_execute(lua_State *L) {
  kb_stmt *s = check_stmt(L, 1);
  bind_params(L, s, 2);
  lua_newtable(L);
  int ncol = sqlite3_column_count(s->stmt), nrow = 0, rc;
  while ((rc = sqlite3_step(s->stmt)) == SQLITE_ROW) {
    lua_createtable(L, ncol, 0);
    for (int c = 0; c < ncol; c++) {
      push_column(L, s->stmt, c);
      lua_rawseti(L, -2, c + 1);
    }
    lua_rawseti(L, -2, ++nrow);
  }
  if (rc != SQLITE_DONE) {
    int n = push_failure(L, s->owner, rc);
    sqlite3_reset(s->stmt);
    return n;
  }
  sqlite3_reset(s->stmt);
  return 1;
}

/*** The names of the result columns.
 *
 * @signature stmt:columns() -> {names}
 * @section database
 * @example
 *   local db = assert(kb.sqlite.open(":memory:"))
 *   print(assert(db:prepare("SELECT 1 AS one")):columns()[1]) --> one
 */
/* stmt:columns() -> {"name", ...} */
static int stmt_columns(lua_State *L) {
  kb_stmt *s = check_stmt(L, 1);
  int n = sqlite3_column_count(s->stmt);
  lua_createtable(L, n, 0);
  for (int c = 0; c < n; c++) {
    lua_pushstring(L, sqlite3_column_name(s->stmt, c));
    lua_rawseti(L, -2, c + 1);
  }
  return 1;
}

/*** Frees the statement (idempotent).
 *
 * @signature stmt:finalize()
 * @section database
 * @example
 *   local db = assert(kb.sqlite.open(":memory:"))
 *   local st = assert(db:prepare("SELECT 1"))
 *   st:finalize()
 */
/* stmt:finalize() (and __gc, __close): idempotent. A statement whose
 * database closed first was finalized by it. */
static int stmt_finalize(lua_State *L) {
  kb_stmt *s = luaL_checkudata(L, 1, STMT_MT);
  if (s->stmt && s->owner->db) sqlite3_finalize(s->stmt);
  s->stmt = NULL;
  return 0;
}

static int stmt_tostring(lua_State *L) {
  kb_stmt *s = luaL_checkudata(L, 1, STMT_MT);
  lua_pushfstring(L, "kluabench.SQLiteStatement(%s)",
                  s->stmt && s->owner->db ? sqlite3_sql(s->stmt) : "finalized");
  return 1;
}

void kb_open_sqlite(lua_State *L) {
  static const luaL_Reg db_methods[] = {{"exec", db_exec},
                                        {"prepare", db_prepare},
                                        {"busy_timeout", db_busy_timeout},
                                        {"changes", db_changes},
                                        {"autocommit", db_autocommit},
                                        {"path", db_path},
                                        {"close", db_close},
                                        {NULL, NULL}};
  static const luaL_Reg stmt_methods[] = {
      {"execute", stmt_execute}, {"columns", stmt_columns}, {"finalize", stmt_finalize}, {NULL, NULL}};
  kb_new_class(L, DB_MT, db_methods, db_close, db_tostring);
  kb_new_class(L, STMT_MT, stmt_methods, stmt_finalize, stmt_tostring);
  static const luaL_Reg fns[] = {{"open", l_open}, {"version", l_version}, {NULL, NULL}};
  luaL_newlib(L, fns);
  lua_setfield(L, -2, "sqlite");
}
