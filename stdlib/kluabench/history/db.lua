--- One interface to the history's two databases: SQLite (kb.sqlite, a file;
-- the default) and PostgreSQL (kb.pq, a server a team shares). SQL is
-- written once, with `?` placeholders, in the types both know (TEXT,
-- BIGINT, DOUBLE PRECISION) and `INSERT ... ON CONFLICT DO NOTHING`; this
-- file turns `?` into `$1, $2, ...` for PostgreSQL, runs transactions the
-- way each needs (BEGIN IMMEDIATE on SQLite, so that two writers queue
-- instead of failing half way; a retry on PostgreSQL's deadlock and
-- serialization errors) and makes every error name the database.
--
-- Errors raise "NAME: why" (NAME is the file's path, or the URI without
-- its password); the commands catch them and exit 1.
local core = require 'kluabench.core'

local M = {}
local args = require 'kluabench.util.args'

--- The SQLite busy timeout (ms): how long a writer waits for another process's transaction.
M.BUSY_TIMEOUT_MS = 60000

--- The page size of a new SQLite file (bytes): a run document (about 2 KiB) fills a 4 KiB page
-- alone, seven fill 16 KiB. A file keeps the size it was made with.
M.PAGE_SIZE = 16384

--- SQLite's application_id of a kluabench history file ("klhb"), so that another program's
-- database is told apart from ours.
M.APPLICATION_ID = 0x6b6c6862

--- True when spec names a PostgreSQL database (a postgresql:// or postgres:// URI).
--
-- @signature history_db.is_postgres(spec) -> boolean
-- @example
--   print(history_db.is_postgres("postgresql://ci@db.example/bench"), history_db.is_postgres("results/history.db"))
function M.is_postgres(spec)
  args.check('history_db.is_postgres', 1, spec, 'string', 'database path or URI')
  return type(spec) == 'string' and (spec:match('^postgresql://') or spec:match('^postgres://')) ~= nil
end

--- A URI without its password, for messages ("postgresql://ci@host/db").
--
-- @signature history_db.redact(uri) -> text
-- @example
--   print(history_db.redact("postgresql://ci:secret@db.example:5432/bench")) --> postgresql://ci@db.example:5432/bench
function M.redact(uri)
  args.check('history_db.redact', 1, uri, 'string', 'database path or URI')
  local s = uri:gsub('^(%a+://)([^@/:]*):[^@/]*@', '%1%2@')
  s = s:gsub('([?&])password=[^&]*&?', '%1'):gsub('[?&]$', '')
  return s
end

local Handle = {}
Handle.__index = Handle

-- libpq's messages span lines ("...failed: ...\n\tIs the server running..."):
-- one line, so that a message stays one line on a terminal.
local function one_line(msg) return (tostring(msg):gsub('%s*\n%s*', '; '):gsub(';%s*$', '')) end

local function fail(h, msg) error(one_line(msg), 0) end

-- ? -> $1, $2, ... (the SQL of this module holds no ? in a literal)
local function numbered(sql)
  local n = 0
  return (sql:gsub('%?', function()
    n = n + 1
    return '$' .. n
  end))
end

-- A prepared SQLite statement per SQL text, made once.
local function statement(h, sql)
  local st = h.cache[sql]
  if st then return st end
  local err
  st, err = h.conn:prepare(sql)
  if not st then fail(h, err) end
  h.cache[sql] = st
  return st
end

--- Rows of a query: a list of lists of column values (1-based; NULL is a hole).
--
-- Raises "NAME: why" on failure.
--
-- @signature h:query(sql [, params]) -> rows
-- @example
--   local h = assert(history_db.open(":memory:", {create = true}))
--   print(h:query("SELECT 1 + ?", {41})[1][1]) --> 42
function Handle:query(sql, params)
  if self.kind == 'sqlite' then
    local rows, err = statement(self, sql):execute(params)
    if not rows then fail(self, err) end
    return rows
  end
  local rows, err = self.conn:exec(self.sql_cache[sql] or numbered(sql), params or {})
  if not rows then fail(self, err) end
  return rows
end

--- Runs one statement; returns the number of rows it changed.
--
-- @signature h:run(sql [, params]) -> changes
-- @example
--   local h = assert(history_db.open(":memory:", {create = true}))
--   h:exec("CREATE TABLE t (x BIGINT PRIMARY KEY)")
--   print(h:run("INSERT INTO t VALUES (?) ON CONFLICT DO NOTHING", {1})) --> 1
function Handle:run(sql, params)
  if self.kind == 'sqlite' then
    local rows, err = statement(self, sql):execute(params)
    if not rows then fail(self, err) end
    return self.conn:changes()
  end
  local rows, changes = self.conn:exec(self.sql_cache[sql] or numbered(sql), params or {})
  if not rows then fail(self, changes) end
  return changes
end

--- Runs SQL text of one or more statements without parameters (schema steps).
--
-- @signature h:exec(sql)
-- @example
--   local h = assert(history_db.open(":memory:", {create = true}))
--   h:exec("CREATE TABLE a (x TEXT); CREATE TABLE b (y TEXT)")
function Handle:exec(sql)
  local ok, err = self.conn:exec(sql)
  if not ok then fail(self, err) end
end

-- PostgreSQL's "try again" errors: a deadlock between two writers, a
-- serialization failure.
local RETRY = { ['40P01'] = true, ['40001'] = true }

--- Runs fn(h) in one transaction: committed when fn returns, rolled back when it raises (the error
-- goes on). A PostgreSQL deadlock or serialization failure is retried up to 5 times.
--
-- On SQLite the transaction takes the write lock at once (BEGIN IMMEDIATE): a second writer waits
-- (db.BUSY_TIMEOUT_MS) instead of failing after it has read.
--
-- @signature h:transaction(fn) -> results of fn
-- @example
--   local h = assert(history_db.open(":memory:", {create = true}))
--   h:exec("CREATE TABLE t (x BIGINT)")
--   h:transaction(function() h:run("INSERT INTO t VALUES (?)", {1}) end)
function Handle:transaction(fn)
  for attempt = 1, 6 do
    local ok, err, code = self.conn:exec(self.kind == 'sqlite' and 'BEGIN IMMEDIATE' or 'BEGIN')
    if not ok then fail(self, err) end
    local res = table.pack(pcall(fn, self))
    if res[1] then
      ok, err, code = self.conn:exec('COMMIT')
      if ok then return table.unpack(res, 2, res.n) end
    else
      err = res[2]
      -- a query inside fn raised: its error text is all there is (the SQLSTATE stays in the driver)
      if self.kind == 'postgresql' and type(err) == 'string' then
        code = err:match('deadlock detected') and '40P01' or err:match('could not serialize access') and '40001' or nil
      end
    end
    self.conn:exec('ROLLBACK')
    if not (self.kind == 'postgresql' and RETRY[code] and attempt < 6) then error(err, 0) end
    core.process.sleep(20 * attempt)
  end
end

--- The names of the tables in the database.
--
-- @signature h:tables() -> {names}
-- @example
--   local h = assert(history_db.open(":memory:", {create = true}))
--   print(#h:tables()) --> 0
function Handle:tables()
  local rows = self.kind == 'sqlite'
    and self:query("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
    or self:query('SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() '
      .. 'ORDER BY table_name')
  local out = {}
  for i, r in ipairs(rows) do out[i] = r[1] end
  return out
end

--- Closes the connection (idempotent).
--
-- @signature h:close()
-- @example
--   local h = assert(history_db.open(":memory:", {create = true}))
--   h:close()
function Handle:close()
  if self.cache then
    for _, st in pairs(self.cache) do st:finalize() end
    self.cache = {}
  end
  self.conn:close()
end
Handle.__close = Handle.close

-- The SQLite file at path: refused when it is not a regular file (a
-- directory, a device, a FIFO), and when it is absent unless creating.
local function check_file(path, create)
  if path == ':memory:' then return true end
  local st, err = core.stat(path, true)
  if st then
    if st.type ~= 'file' then
      return nil, string.format('%s: not a regular file (a %s): a history database is a SQLite file', path, st.type)
    end
    return true
  end
  if not create then
    return nil, string.format("%s: no such history database (%s; 'kluabench history add' creates one)",
      path, (err or ''):gsub('^.-: ', ''))
  end
  return true
end

-- Switches the file to WAL (readers and one writer at once). SQLite answers
-- SQLITE_BUSY at once, without its busy handler, when another process holds a
-- lock while the mode changes (two processes opening a new database: tested in
-- history_spec), so this waits and tries again, up to the busy timeout.
local function set_wal(h, timeout_ms)
  local deadline = core.clock_ns() + timeout_ms * 1e6
  local pause = 5
  while true do
    local ok, err, code = h.conn:exec('PRAGMA journal_mode = WAL')
    if ok then return end
    if code ~= 'SQLITE_BUSY' or core.clock_ns() > deadline then fail(h, err) end
    core.process.sleep(pause)
    pause = math.min(pause * 2, 100)
  end
end

-- The URI of a SQLite file read as it is, without the shared-memory file a database in WAL mode is
-- read through (immutable=1): what a reader that may not write beside the file can open.
local function immutable_uri(path)
  local abs = core.realpath(path) or path
  return 'file:' .. abs:gsub('[%%?#]', function(c) return string.format('%%%02X', c:byte()) end) .. '?immutable=1'
end

local function open_sqlite(path, opts, immutable)
  local ok, err = check_file(path, opts.create)
  if not ok then return nil, err end
  local conn, msg = core.sqlite.open(immutable and immutable_uri(path) or path,
    opts.readonly and 'ro' or (opts.create and 'rwc' or 'rw'))
  if not conn then return nil, msg end
  conn:busy_timeout(opts.busy_timeout_ms or M.BUSY_TIMEOUT_MS)
  local h = setmetatable({ kind = 'sqlite', name = path, conn = conn, cache = {} }, Handle)
  -- the first read tells a database from another file ("file is not a database")
  local rok, rerr = pcall(function()
    h:query('PRAGMA foreign_keys = ON')
    if not opts.readonly then h:query('PRAGMA page_size = ' .. M.PAGE_SIZE) end -- a new file only
    if path ~= ':memory:' and not opts.readonly then set_wal(h, opts.busy_timeout_ms or M.BUSY_TIMEOUT_MS) end
    local id = h:query('PRAGMA application_id')[1][1]
    if id ~= 0 and id ~= M.APPLICATION_ID then
      error(string.format('%s: not a kluabench history database (a SQLite file of another program: '
        .. 'application_id %d)', path, id), 0)
    end
  end)
  if not rok then
    h:close()
    if opts.readonly and not immutable and tostring(rerr):find('readonly database', 1, true) then
      -- a database in WAL mode is read through a shared-memory file beside it (-shm), which a reader
      -- that may not write there (a read-only directory or file system) cannot make: read the file
      -- as it is
      return open_sqlite(path, opts, true)
    end
    return nil, rerr
  end
  return h
end

local function open_postgres(uri, opts)
  local label = M.redact(uri)
  local conn, msg = core.pq.connect(uri, label)
  if not conn then return nil, one_line(msg) end
  local h = setmetatable({ kind = 'postgresql', name = label, conn = conn, sql_cache = {} }, Handle)
  -- ? -> $n once per SQL text
  setmetatable(h.sql_cache, { __index = function(t, sql)
    local s = numbered(sql)
    rawset(t, sql, s)
    return s
  end })
  local ok, err = pcall(h.exec, h, "SET client_min_messages = warning; SET TIME ZONE 'UTC'")
  if not ok then
    conn:close()
    return nil, err
  end
  return h
end

--- Opens a history database: a SQLite file (PATH, or ":memory:") or a PostgreSQL server
-- (postgresql://...).
--
-- opts.create: make the SQLite file when it is absent (`history add` does; the queries do not).
-- opts.readonly: open for reading only (nothing is written, so a file or folder this process may
-- not write is read all the same; a WAL database that cannot be read through its shared-memory
-- file is read as it is). A path that is not a regular file, a file that is not a SQLite database and
-- another program's SQLite database are refused, naming the file; a server that does not answer is
-- an error naming the URI without its password. Returns a handle (h:query, h:run, h:exec,
-- h:transaction, h:tables, h:close; h.kind "sqlite" or "postgresql", h.name) or nil, message.
--
-- @signature history_db.open(spec [, opts]) -> handle | nil, message
-- @example
--   local h = assert(history_db.open(":memory:", {create = true}))
--   print(h.kind, h.name)
--   h:close()
function M.open(spec, opts)
  opts = opts or {}
  if type(spec) ~= 'string' or spec == '' then
    error("bad argument #1 to 'open' (a database path or postgresql:// URI expected, got "
      .. (spec == '' and 'an empty string' or type(spec)) .. ')', 2)
  end
  if M.is_postgres(spec) then return open_postgres(spec, opts) end
  return open_sqlite(spec, opts)
end

return M
