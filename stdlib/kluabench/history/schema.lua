--- The history database's schema: ordered migration steps and the
-- schema_version table that says which have run. Opening a database runs
-- the steps it lacks, in order, each in its own transaction (so a step is
-- applied whole or not at all, and two processes opening a new database
-- at once apply each step once). A database whose version is newer than
-- the newest step known here is refused, naming it: an older kluabench
-- must not write into a schema it does not know.
--
-- The SQL is the subset SQLite and PostgreSQL share (TEXT, BIGINT, DOUBLE
-- PRECISION, ON CONFLICT DO NOTHING); docs/HISTORY.md describes the tables.
local M = {}
local args = require 'kluabench.io.argcheck'

--- The migration steps, oldest first: {version, description, sql}. Append a step to change the
-- schema; never edit one that has shipped.
M.STEPS = {
  { version = 1, description = 'documents, commits, runs, samples, marks', sql = [[
CREATE TABLE documents (
  id TEXT PRIMARY KEY,            -- "sha256:" .. hex(SHA-256(body))
  kind TEXT NOT NULL,             -- the document's kind (BenchmarkRun, ...)
  digest TEXT,                    -- the digest the run names it by (not for the run)
  body TEXT NOT NULL              -- the whole document as JSON (RFC 8785 canonical form)
);
CREATE TABLE commits (
  sha TEXT PRIMARY KEY,
  branch TEXT,
  parents TEXT NOT NULL DEFAULT '',  -- parent commits, space-separated
  committed_at TEXT,                 -- ISO 8601, the commit's own time
  subject TEXT
);
CREATE TABLE runs (
  run_key TEXT PRIMARY KEY,          -- sha256 of the four digests, observedAt and session
  protocol_digest TEXT NOT NULL,
  workload_digest TEXT NOT NULL,
  environment_digest TEXT NOT NULL,
  implementation_digest TEXT NOT NULL,
  observed_at TEXT NOT NULL,
  session_index BIGINT NOT NULL,
  session_count BIGINT NOT NULL,
  commit_sha TEXT NOT NULL REFERENCES commits (sha),
  series TEXT NOT NULL,              -- workload digest | mode | provider | device
  session_group TEXT NOT NULL,       -- the measurement session: runs of one sweep session share it
  kernel TEXT,
  point TEXT NOT NULL,               -- the point's label (kernel, operation, shape, dtype)
  provider TEXT NOT NULL,
  device TEXT NOT NULL,
  host TEXT NOT NULL,
  backend TEXT,
  median_ms DOUBLE PRECISION NOT NULL,  -- of the raw samples
  lo_ms DOUBLE PRECISION,               -- 95 % interval of that median (order statistics)
  hi_ms DOUBLE PRECISION,
  n_samples BIGINT NOT NULL,
  noise_sd DOUBLE PRECISION,            -- between-session noise in force (sd of log median)
  copy_gbps DOUBLE PRECISION,           -- copy ceiling in force
  run_doc TEXT NOT NULL REFERENCES documents (id),
  protocol_doc TEXT REFERENCES documents (id),
  environment_doc TEXT REFERENCES documents (id),
  workload_doc TEXT REFERENCES documents (id),
  implementation_doc TEXT REFERENCES documents (id),
  operation_doc TEXT REFERENCES documents (id),
  source TEXT,                          -- the file it was added from
  added_at TEXT NOT NULL
);
CREATE TABLE samples (
  run_key TEXT PRIMARY KEY REFERENCES runs (run_key),
  unit TEXT NOT NULL,
  n BIGINT NOT NULL,
  vals TEXT NOT NULL                    -- JSON array of the raw samples
);
CREATE TABLE marks (
  commit_sha TEXT NOT NULL,
  device TEXT NOT NULL,                 -- '*': every device
  series TEXT NOT NULL,                 -- '*': every series
  reason TEXT NOT NULL,
  created_at TEXT NOT NULL,
  PRIMARY KEY (commit_sha, device, series)
);
CREATE INDEX runs_series ON runs (series, commit_sha);
CREATE INDEX runs_commit ON runs (commit_sha);
CREATE INDEX runs_kernel ON runs (kernel, point);
CREATE INDEX runs_provider ON runs (provider);
CREATE INDEX runs_device ON runs (device);
CREATE INDEX runs_observed ON runs (observed_at);
CREATE INDEX runs_session ON runs (session_group);
CREATE INDEX commits_time ON commits (committed_at);
]] },
}

--- The newest schema version this kluabench knows.
--
-- @signature history_schema.latest() -> integer
-- @example
--   print(history_schema.latest())
function M.latest() return M.STEPS[#M.STEPS].version end

local VERSION_TABLE = [[
CREATE TABLE IF NOT EXISTS schema_version (
  version BIGINT PRIMARY KEY,
  description TEXT NOT NULL,
  applied_at TEXT NOT NULL
)]]

local function has(list, name)
  for _, n in ipairs(list) do if n == name then return true end end
  return false
end

--- The schema version of an open database (0: no kluabench table yet), or an error naming it when
-- it holds tables of another program.
--
-- @signature history_schema.version(h) -> integer
-- @example
--   local h = assert(require("kluabench.history.db").open(":memory:", {create = true}))
--   print(history_schema.version(h)) --> 0
function M.version(h)
  args.check('history_schema.version', 1, h, 'table', 'history database handle (history.open)')
  local tables = h:tables()
  if not has(tables, 'schema_version') then
    if #tables > 0 then
      error(string.format('%s: not a kluabench history database (it has tables %s and no schema_version)',
        h.name, table.concat(tables, ', ', 1, math.min(#tables, 5))), 0)
    end
    return 0
  end
  local v = h:query('SELECT MAX(version) FROM schema_version')[1][1]
  return math.tointeger(v) or 0
end

local function now() return os.date('!%Y-%m-%dT%H:%M:%SZ') end

--- Brings an open database to the newest schema: runs the steps it lacks, each in one transaction;
-- refuses a database of a newer schema, naming it. Returns the version before and after.
--
-- @signature history_schema.migrate(h) -> old_version, new_version
-- @example
--   local h = assert(require("kluabench.history.db").open(":memory:", {create = true}))
--   print(history_schema.migrate(h)) --> 0 1
function M.migrate(h)
  args.check('history_schema.migrate', 1, h, 'table', 'history database handle (history.open)')
  local before = M.version(h)
  local latest = M.latest()
  if before > latest then
    error(string.format('%s: the history database has schema version %d, newer than this kluabench '
      .. 'knows (%d): use a newer kluabench', h.name, before, latest), 0)
  end
  if before == latest then return before, latest end
  for _, step in ipairs(M.STEPS) do
    if step.version > before then
      h:transaction(function()
        if h.kind == 'postgresql' then
          -- one migrating process at a time (released at COMMIT)
          h:query('SELECT pg_advisory_xact_lock(?)', { 0x6b6c6862 })
        end
        h:exec(VERSION_TABLE)
        local v = math.tointeger(h:query('SELECT MAX(version) FROM schema_version')[1][1]) or 0
        if v >= step.version then return end -- another process applied it meanwhile
        h:exec(step.sql)
        h:run('INSERT INTO schema_version (version, description, applied_at) VALUES (?, ?, ?)',
          { step.version, step.description, now() })
      end)
    end
  end
  if h.kind == 'sqlite' then
    h:exec(string.format('PRAGMA application_id = %d', require('kluabench.history.db').APPLICATION_ID))
  end
  return before, latest
end

--- Checks, without changing anything, that a database is at the schema this kluabench knows;
-- raises naming it otherwise (a query on an empty or older database says to run `history add`).
--
-- @signature history_schema.check(h) -> version
-- @example
--   local h = assert(require("kluabench.history.db").open(":memory:", {create = true}))
--   history_schema.migrate(h)
--   print(history_schema.check(h)) --> 1
function M.check(h)
  args.check('history_schema.check', 1, h, 'table', 'history database handle (history.open)')
  local v = M.version(h)
  local latest = M.latest()
  if v > latest then
    error(string.format('%s: the history database has schema version %d, newer than this kluabench '
      .. 'knows (%d): use a newer kluabench', h.name, v, latest), 0)
  end
  return v
end

return M
