--- Writing bundles into the history database and reading series back:
-- the SQL of `kluabench history`. Bundles are read only through the result
-- model (kluabench.result) and the history's adapter for what the database
-- stores besides (kluabench.history.point).
local core = require 'kluabench.core'
local point = require 'kluabench.history.point'
local json = require 'kluabench.util.json'
local args = require 'kluabench.util.args'
local stats = require 'kluabench.stats'
local result = require 'kluabench.result'
local verify = require 'kluabench.record.verify'

local M = {}

--- Bundles written per transaction by add_bundles: an interrupted add leaves whole batches, each
-- of whole bundles.
M.BATCH = 500

local function now() return os.date('!%Y-%m-%dT%H:%M:%SZ') end

local function sha(s) return core.sha256(s) end

-- The identity of a run: its four digests, its time and its session.
local function run_key(k)
  return 'sha256:' .. sha(table.concat({ k.protocol, k.workload, k.environment, k.implementation,
    k.observed_at, tostring(k.session_index), tostring(k.session_count) }, '\n'))
end

--- The series a run belongs to: "workload digest|mode|provider|device" (kernelindex's workload
-- holds no mode: the timed pass is the protocol's).
--
-- @signature history_store.series_key(workload_digest, mode, provider, device) -> text
-- @example
--   print(history_store.series_key("sha256:ab", "forward", "fused", "NVIDIA H200"))
function M.series_key(workload, mode, provider, device)
  args.check('history_store.series_key', 1, workload, 'string', 'workload digest')
  args.check('history_store.series_key', 2, mode, 'string', 'mode')
  args.check('history_store.series_key', 3, provider, 'string', 'provider')
  args.check('history_store.series_key', 4, device, 'string', 'device name')
  return workload .. '|' .. tostring(mode or '?') .. '|' .. provider .. '|' .. device
end

-- Days from 1970-01-01 to a date of the proleptic Gregorian calendar (Howard Hinnant's
-- days_from_civil): no os.time, which reads the local time zone.
local function days_from_civil(y, m, d)
  y = m <= 2 and y - 1 or y
  local era = (y >= 0 and y or y - 399) // 400
  local yoe = y - era * 400
  local doy = (153 * (m + (m > 2 and -3 or 9)) + 2) // 5 + d - 1
  local doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
  return era * 146097 + doe - 719468
end

local function days_in_month(y, m)
  if m == 2 then return (y % 4 == 0 and (y % 100 ~= 0 or y % 400 == 0)) and 29 or 28 end
  return (m == 4 or m == 6 or m == 9 or m == 11) and 30 or 31
end

--- A commit time (ISO 8601 / RFC 3339: "2026-11-01T05:00:00-07:00", "2026-11-01T12:00:00Z", a
-- fraction of a second allowed; without a zone it is UTC) as the instant in UTC,
-- "2026-11-01T12:00:00Z", and its seconds since 1970; nil and why for text that is not such a time
-- (not a date of the calendar, a time of day beyond 23:59:59, an offset beyond 23:59). git's %cI
-- carries the committer's own offset: times are compared as instants, never as text.
--
-- @signature history_store.utc_time(text) -> utc, seconds | nil, message
-- @example
--   print(history_store.utc_time("2026-11-01T05:00:00-07:00")) --> 2026-11-01T12:00:00Z	1793534400
function M.utc_time(text)
  args.check('history_store.utc_time', 1, text, 'string', 'time')
  local y, mo, d, h, mi, se, frac, zone = text:match(
    '^(%d%d%d%d)%-(%d%d)%-(%d%d)[Tt ](%d%d):(%d%d):(%d%d)(%.?%d*)(.*)$')
  local bad = string.format("'%s' is not a time of the form 2026-11-01T12:00:00Z (or +HH:MM)",
    args.printable(text, 60))
  if not y then return nil, bad end
  if frac == '.' then return nil, bad end
  y, mo, d, h, mi, se = tonumber(y), tonumber(mo), tonumber(d), tonumber(h), tonumber(mi), tonumber(se)
  local offset = 0
  if zone ~= '' and zone ~= 'Z' and zone ~= 'z' then
    local sign, oh, om = zone:match('^([+-])(%d%d):?(%d%d)$')
    if not sign then return nil, bad end
    oh, om = tonumber(oh), tonumber(om)
    if oh > 23 or om > 59 then
      return nil, string.format("'%s': the UTC offset is out of range", args.printable(text, 60))
    end
    offset = (sign == '-' and -1 or 1) * (oh * 3600 + om * 60)
  end
  if mo < 1 or mo > 12 or d < 1 or d > days_in_month(y, mo) or h > 23 or mi > 59 or se > 59 then
    return nil, string.format("'%s' is not a date of the calendar or a time of day up to 23:59:59",
      args.printable(text, 60))
  end
  local secs = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + se - offset
  local t = os.date('!*t', secs)
  local f = frac ~= '' and frac:sub(1, 10) or ''
  return string.format('%04d-%02d-%02dT%02d:%02d:%02d%sZ', t.year, t.month, t.day, t.hour, t.min, t.sec, f),
    secs + (f ~= '' and tonumber('0' .. f) or 0)
end

-- Checks the commit metadata of an add: commit (required), branch,
-- parents (a list or space-separated text), committed_at (brought to UTC), subject, source, batch.
local function check_meta(meta)
  if type(meta) ~= 'table' or type(meta.commit) ~= 'string' or meta.commit == '' then
    error("bad argument #3 to 'add_bundles' (meta.commit expected: the commit of the code under test)", 3)
  end
  local parents = meta.parents
  if type(parents) == 'table' then parents = table.concat(parents, ' ') end
  local committed_at = meta.committed_at
  if committed_at ~= nil then
    local utc, why = type(committed_at) == 'string' and M.utc_time(committed_at)
    if not utc then
      error("bad argument #3 to 'add_bundles' (meta.committed_at: " .. (why or 'a time text expected') .. ')', 3)
    end
    committed_at = utc
  end
  return {
    commit = meta.commit, branch = meta.branch, parents = parents or '', committed_at = committed_at,
    subject = meta.subject, source = meta.source, batch = meta.batch,
  }
end

-- Inserts a document; returns its id (a number the database assigns).
-- A run's own document is a row of its own (it belongs to that run only);
-- the others (protocol, environment, workload, implementation, operation)
-- are stored once and shared, found by the SHA-256 of their text.
-- seen.tables[doc] caches the id of a table already stored in this call
-- (the bundles of one sweep share their documents' tables), seen.shared[sha]
-- the id of a shared text; both hold this transaction attempt's ids over
-- those of the call's committed batches (add_bundles).
local function put_document(h, doc, role, kind, digest, seen)
  local shared = role ~= 'run'
  local id = shared and seen.tables[doc]
  if id then return id end
  local body = core.jcs.encode(doc)
  local key = 'sha256:' .. sha(body)
  id = shared and seen.shared[key]
  if not id then
    local rows = h:query('INSERT INTO documents (sha, role, kind, digest, body) VALUES (?, ?, ?, ?, ?) '
      .. "ON CONFLICT (sha) WHERE role <> 'run' DO NOTHING RETURNING id", { key, role, kind, digest, body })
    id = rows[1] and rows[1][1]
      or h:query("SELECT id FROM documents WHERE sha = ? AND role <> 'run'", { key })[1][1]
    if shared then seen.shared[key] = id end
  end
  if shared then seen.tables[doc] = id end
  return id
end

local ROLE_DIGEST = { protocol = 'protocol', environment = 'environment', workload = 'workload',
  implementation = 'implementation' }

local INSERT_RUN = [[INSERT INTO runs (run_key, protocol_digest, workload_digest, environment_digest,
    implementation_digest, observed_at, session_index, session_count, commit_sha, series, session_group,
    kernel, point, provider, device, host, backend, median_ms, lo_ms, hi_ms, n_samples, noise_sd, copy_gbps,
    run_doc, protocol_doc, environment_doc, workload_doc, implementation_doc, operation_doc, samples_unit,
    samples, source, added_at)
    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
    ON CONFLICT DO NOTHING]]

-- The raw samples as JSON: integers (ns, as recorded) joined as they are.
local function samples_json(values)
  for _, v in ipairs(values) do
    if math.type(v) ~= 'integer' then return core.jcs.encode(core.jcs.array(values)) end
  end
  return '[' .. table.concat(values, ',') .. ']'
end

-- What the history stores of one bundle, or nil and why it cannot: the run's identity (key), its
-- session (result.session), its documents and raw samples (kluabench.history.point).
local function entry_of(b)
  -- what `kluabench verify` refuses (a digest that does not match, a document of another kind or
  -- apiVersion, raw samples that are not the run's) is refused here too: a forgery that took a
  -- run's identity would make the genuine bundle "already there" later
  local bad = verify.describe(verify.problems(b))
  if bad then return nil, 'refused as kluabench verify refuses it: ' .. bad end
  local ok, s = pcall(result.session, b)
  if not ok then return nil, 'not a record bundle: ' .. tostring(s) end
  local key, why = point.key(s)
  if not key then return nil, why end
  if not s.samples_ms then return nil, s.samples_why or 'no raw samples in the record' end
  if type(s.mode) ~= 'string' or s.mode == '' then
    return nil, 'the run names no mode (run.spec.sourceNative.benchmark is KERNEL/MODE): a series needs one'
  end
  local label, provider = result.label_of(b, s)
  -- what the database is given must be storable: every document as canonical JSON (a key or a
  -- string that is not UTF-8 in an undigested document passes verify, and would raise mid-batch),
  -- every text column valid UTF-8 (PostgreSQL refuses anything else)
  local documents = point.documents(b)
  for _, role in ipairs(point.ROLES) do
    if documents[role] ~= nil then
      local okj, jerr = pcall(core.jcs.encode, documents[role])
      if not okj then return nil, string.format('its %s document cannot be stored: %s', role, tostring(jerr)) end
    end
  end
  for _, f in ipairs { { 'label', label }, { 'provider', provider }, { 'kernel', s.kernel }, { 'mode', s.mode },
    { 'device', s.device }, { 'host', s.host }, { 'backend', s.backend } } do
    if type(f[2]) == 'string' and not utf8.len(f[2]) then
      return nil, string.format('its %s is not valid UTF-8 text', f[1])
    end
  end
  local noise = s.noise_sd
  return {
    key = key, documents = documents, samples = s.samples_ms, raw = point.raw(s), label = label,
    provider = provider, kernel = s.kernel or label:match('^(%S+)'), mode = s.mode,
    device = s.device or 'unknown device', host = s.host or 'unknown host', backend = s.backend,
    noise_sd = type(noise) == 'number' and noise >= 0 and noise < 1 and noise or nil, copy_gbps = s.copy_gbps,
  }
end

-- Adds one bundle's entry (entry_of) in the open transaction; true when new.
local function add_point(h, p, m, seen, added_at)
  local k = p.key
  local key = run_key(k)
  if #h:query('SELECT 1 FROM runs WHERE observed_at = ? AND run_key = ?', { k.observed_at, key }) > 0 then
    return false
  end
  local ids = {}
  for _, role in ipairs(point.ROLES) do
    local doc = p.documents[role]
    if doc then
      local kind = type(doc.kind) == 'string' and doc.kind or role
      ids[role] = put_document(h, doc, role, kind, ROLE_DIGEST[role] and k[ROLE_DIGEST[role]] or nil, seen)
    end
  end
  -- the median and its 95 % interval (order statistics) from one sort
  local n = #p.samples
  local sorted = table.move(p.samples, 1, n, 1, {})
  table.sort(sorted)
  local _, median, lo, hi = stats.rse_median(sorted, { sorted = true })
  if n < 2 then lo, hi = nil, nil end
  local text = table.concat({ m.commit, k.environment, p.host, m.batch or '', tostring(k.session_index) }, '\n')
  local group = seen.groups[text]
  if not group then
    group = 'sha256:' .. sha(text)
    seen.groups[text] = group
  end
  local added = h:run(INSERT_RUN, {
    n = 33, key, k.protocol, k.workload, k.environment, k.implementation, k.observed_at,
    k.session_index, k.session_count, m.commit, M.series_key(k.workload, p.mode, p.provider, p.device),
    group, p.kernel, p.label, p.provider, p.device, p.host, p.backend, median, lo, hi, n, p.noise_sd,
    p.copy_gbps, ids.run, ids.protocol, ids.environment, ids.workload, ids.implementation, ids.operation,
    p.raw.unit, samples_json(p.raw.values), m.source, added_at })
  if added == 0 then
    -- another process added the same run meanwhile (PostgreSQL): its own document goes again
    h:run('DELETE FROM documents WHERE id = ?', { ids.run })
    return false
  end
  return true
end

local function put_commit(h, m)
  h:run('INSERT INTO commits (sha, branch, parents, committed_at, subject) VALUES (?, ?, ?, ?, ?) '
    .. 'ON CONFLICT DO NOTHING', { n = 5, m.commit, m.branch, m.parents, m.committed_at, m.subject })
end

--- Adds record bundles to an open history database (at the current schema): the harness's
-- `--history DB` calls it (history.add_bundles opens the database first).
--
-- meta: commit (required: the commit of the code under test), branch, parents (list or text),
-- committed_at (ISO 8601), subject, source (the file), batch (what one measurement session shares:
-- bundles of one sweep session with the same batch form one session group, whose copy provider is
-- the sentinel of the others). A bundle already in the database (the same four digests, time and
-- session) is left as it is; one that cannot be stored (no digests, no time, no raw samples) is
-- refused. Bundles go in transactions of store.BATCH, each whole or not at all.
-- Returns {added, present, refused = {{index, why}}}.
--
-- @signature history_store.add_bundles(h, bundles, meta) -> summary
-- @example
--   local h = assert(require("kluabench.history").open(":memory:", {create = true}))
--   local s = history_store.add_bundles(h, {}, {commit = "abc123"})
--   print(s.added, s.present)
function M.add_bundles(h, bundles, meta)
  args.check('history_store.add_bundles', 1, h, 'table', 'history database handle (history.open)')
  args.check('history_store.add_bundles', 2, bundles, 'table', 'list of bundles')
  args.check('history_store.add_bundles', 3, meta, 'table', 'table {commit, ...}')
  local m = check_meta(meta)
  if not m.batch then
    -- one call is one batch unless told otherwise
    m.batch = 'call:' .. os.time() .. ':' .. tostring(core.clock_ns())
  end
  local summary = { added = 0, present = 0, refused = {} }
  local points = {}
  for i, b in ipairs(bundles) do
    local p, why = entry_of(b)
    if p then points[#points + 1] = p else summary.refused[#summary.refused + 1] = { index = i, why = why } end
  end
  -- the document ids of committed batches; an attempt caches its own ids
  -- apart and they join these only once its transaction has committed: a
  -- retried transaction (PostgreSQL, h:transaction) rolled the first
  -- attempt's documents back, so their ids must not be used again
  local committed, added_at = { tables = setmetatable({}, { __mode = 'k' }), shared = {} }, now()
  local groups = {} -- session group names: a hash of their text, no database id, kept across attempts
  for first = 1, #points, M.BATCH do
    args.stop_if_interrupted()
    local seen
    local added, present = h:transaction(function()
      seen = { tables = setmetatable({}, { __mode = 'k', __index = committed.tables }),
        shared = setmetatable({}, { __index = committed.shared }), groups = groups }
      local a, p = 0, 0
      for i = first, math.min(first + M.BATCH - 1, #points) do
        -- the commit is recorded with its first new run (runs refer to it)
        if a == 0 then put_commit(h, m) end
        if add_point(h, points[i], m, seen, added_at) then a = a + 1 else p = p + 1 end
      end
      if a == 0 then h:run('DELETE FROM commits WHERE sha = ? AND NOT EXISTS '
        .. '(SELECT 1 FROM runs WHERE commit_sha = ?)', { m.commit, m.commit }) end
      return a, p
    end)
    for doc, id in pairs(seen.tables) do committed.tables[doc] = id end
    for key, id in pairs(seen.shared) do committed.shared[key] = id end
    summary.added, summary.present = summary.added + added, summary.present + present
  end
  return summary
end

--- Every series with its counts: {series, kernel, point, provider, device, runs, commits, first,
-- last}, ordered by point, provider and device.
--
-- @signature history_store.series(h) -> list
-- @example
--   local h = assert(require("kluabench.history").open(":memory:", {create = true}))
--   print(#history_store.series(h))
function M.series(h)
  args.check('history_store.series', 1, h, 'table', 'history database handle (history.open)')
  local rows = h:query([[SELECT series, kernel, point, provider, device, COUNT(*), COUNT(DISTINCT commit_sha),
    MIN(observed_at), MAX(observed_at) FROM runs GROUP BY series, kernel, point, provider, device
    ORDER BY point, provider, device]])
  local out = {}
  for i, r in ipairs(rows) do
    out[i] = { series = r[1], kernel = r[2], point = r[3], provider = r[4], device = r[5], runs = r[6],
      commits = r[7], first = r[8], last = r[9] }
  end
  return out
end

--- Every commit with its runs: {sha, branch, parents (list), committed_at, subject, runs}, newest
-- first.
--
-- @signature history_store.commits(h) -> list
-- @example
--   local h = assert(require("kluabench.history").open(":memory:", {create = true}))
--   print(#history_store.commits(h))
function M.commits(h)
  args.check('history_store.commits', 1, h, 'table', 'history database handle (history.open)')
  local rows = h:query([[SELECT c.sha, c.branch, c.parents, c.committed_at, c.subject, COUNT(r.run_key),
    MAX(r.observed_at) FROM commits c LEFT JOIN runs r ON r.commit_sha = c.sha
    GROUP BY c.sha, c.branch, c.parents, c.committed_at, c.subject
    ORDER BY c.committed_at DESC, c.sha]])
  local out = {}
  for i, r in ipairs(rows) do
    local parents = {}
    for p in (r[3] or ''):gmatch('%S+') do parents[#parents + 1] = p end
    out[i] = { sha = r[1], branch = r[2], parents = parents, committed_at = r[4], subject = r[5], runs = r[6],
      last_observed = r[7] }
  end
  return out
end

--- The full sha of a commit given in full or as a unique prefix, or nil and why.
--
-- @signature history_store.resolve_commit(h, rev) -> sha | nil, message
-- @example
--   local h = assert(require("kluabench.history").open(":memory:", {create = true}))
--   print(history_store.resolve_commit(h, "abc"))
function M.resolve_commit(h, rev)
  args.check('history_store.resolve_commit', 1, h, 'table', 'history database handle (history.open)')
  args.check('history_store.resolve_commit', 2, rev, 'string', 'revision')
  local rows = h:query('SELECT sha FROM commits WHERE sha = ?', { rev })
  if #rows == 1 then return rows[1][1] end
  rows = h:query('SELECT sha FROM commits WHERE sha LIKE ? ORDER BY sha', { rev:gsub('[%%_]', '') .. '%' })
  if #rows == 1 then return rows[1][1] end
  if #rows == 0 then return nil, string.format("%s: no commit '%s' in the history", h.name, rev) end
  return nil, string.format("%s: commit '%s' is ambiguous (%d commits start with it)", h.name, rev, #rows)
end

--- Commits in ancestry order, oldest first, ending at head: its first-parent chain among the
-- commits the history knows; where a parent is not known (a commit without runs), the chain goes on
-- with the known commits older than it, by commit time (then by the time of their runs).
--
-- commits: history_store.commits(h) (or a subset); head: a sha (default: the newest tip, a commit
-- that is no known commit's parent). Returns the list of commit tables.
--
-- @signature history_store.lineage(commits [, head]) -> list
-- @example
--   local list = history_store.lineage({{sha = "b", parents = {"a"}, committed_at = "2"}, {sha = "a", parents = {}, committed_at = "1"}})
--   print(list[1].sha, list[2].sha) --> a b
function M.lineage(commits, head)
  args.check('history_store.lineage', 1, commits, 'table', 'list of commits')
  args.check('history_store.lineage', 2, head, 'string|nil', 'commit')
  local by, parent_of = {}, {}
  for _, c in ipairs(commits) do by[c.sha] = c end
  for _, c in ipairs(commits) do
    for _, p in ipairs(c.parents or {}) do parent_of[p] = true end
  end
  -- newest first: by commit time (the instant: a time with another UTC offset is no earlier or
  -- later for its text), then (commits of one second) by the time their runs were observed
  local sorted, instant = {}, {}
  for _, c in ipairs(commits) do
    sorted[#sorted + 1] = c
    local _, secs = type(c.committed_at) == 'string' and M.utc_time(c.committed_at)
    instant[c] = secs or nil
  end
  table.sort(sorted, function(a, b)
    local ia, ib = instant[a], instant[b]
    if ia and ib then
      if ia ~= ib then return ia > ib end
    elseif (a.committed_at or '') ~= (b.committed_at or '') then
      return (a.committed_at or '') > (b.committed_at or '')
    end
    if (a.last_observed or '') ~= (b.last_observed or '') then return (a.last_observed or '') > (b.last_observed or '') end
    return a.sha > b.sha
  end)
  local cur = head and by[head]
  if not cur then
    -- the newest tip: a commit that no known commit has as its parent
    for _, c in ipairs(sorted) do
      if not parent_of[c.sha] then
        cur = c
        break
      end
    end
    cur = cur or sorted[1]
  end
  local chain, used = {}, {}
  while cur and not used[cur.sha] do
    chain[#chain + 1] = cur
    used[cur.sha] = true
    local nxt = cur.parents and cur.parents[1] and by[cur.parents[1]]
    if not nxt then
      -- the parent has no runs: the next older known commit
      local past = false
      for _, c in ipairs(sorted) do
        if c == cur then past = true
        elseif past and not used[c.sha] then
          nxt = c
          break
        end
      end
    end
    cur = nxt
  end
  local out = {}
  for i = #chain, 1, -1 do out[#out + 1] = chain[i] end
  return out
end

--- The runs of one series: {run_key, commit, median_ms, lo_ms, hi_ms, n_samples, noise_sd, protocol,
-- session_group, observed_at, copy_gbps}.
--
-- @signature history_store.runs(h, series) -> list
-- @example
--   local h = assert(require("kluabench.history").open(":memory:", {create = true}))
--   print(#history_store.runs(h, "sha256:ab|fused|NVIDIA H200"))
function M.runs(h, series)
  args.check('history_store.runs', 1, h, 'table', 'history database handle (history.open)')
  args.check('history_store.runs', 2, series, 'string|table', 'series key or table')
  local rows = h:query([[SELECT run_key, commit_sha, median_ms, lo_ms, hi_ms, n_samples, noise_sd,
    protocol_digest, session_group, observed_at, copy_gbps, workload_digest FROM runs WHERE series = ?
    ORDER BY observed_at]], { series })
  local out = {}
  for i, r in ipairs(rows) do
    out[i] = { run_key = r[1], commit = r[2], median_ms = r[3], lo_ms = r[4], hi_ms = r[5], n_samples = r[6],
      noise_sd = r[7], protocol = r[8], session_group = r[9], observed_at = r[10], copy_gbps = r[11],
      workload = r[12] }
  end
  return out
end

--- The runs of a provider on a device (the sentinel's): {commit, workload, median_ms,
-- session_group}.
--
-- @signature history_store.provider_runs(h, provider, device) -> list
-- @example
--   local h = assert(require("kluabench.history").open(":memory:", {create = true}))
--   print(#history_store.provider_runs(h, "copy", "NVIDIA H200"))
function M.provider_runs(h, provider, device)
  args.check('history_store.provider_runs', 1, h, 'table', 'history database handle (history.open)')
  args.check('history_store.provider_runs', 2, provider, 'string', 'provider')
  args.check('history_store.provider_runs', 3, device, 'string', 'device name')
  local rows = h:query([[SELECT commit_sha, workload_digest, median_ms, session_group FROM runs
    WHERE provider = ? AND device = ?]], { provider, device })
  local out = {}
  for i, r in ipairs(rows) do
    out[i] = { commit = r[1], workload = r[2], median_ms = r[3], session_group = r[4] }
  end
  return out
end

--- The bundles of a commit (every run, or those of series), rebuilt from the stored documents and
-- samples (point.bundle), for kluabench.compare.
--
-- @signature history_store.bundles(h, commit [, series]) -> bundles
-- @example
--   local h = assert(require("kluabench.history").open(":memory:", {create = true}))
--   print(#history_store.bundles(h, "abc123"))
function M.bundles(h, commit, series)
  args.check('history_store.bundles', 1, h, 'table', 'history database handle (history.open)')
  args.check('history_store.bundles', 2, commit, 'string', 'commit')
  local sql = [[SELECT r.run_key, d.body, p.body, e.body, w.body, i.body, o.body, r.samples, r.samples_unit
    FROM runs r JOIN documents d ON d.id = r.run_doc
    LEFT JOIN documents p ON p.id = r.protocol_doc LEFT JOIN documents e ON e.id = r.environment_doc
    LEFT JOIN documents w ON w.id = r.workload_doc LEFT JOIN documents i ON i.id = r.implementation_doc
    LEFT JOIN documents o ON o.id = r.operation_doc
    WHERE r.commit_sha = ?]] .. (series and ' AND r.series = ?' or '') .. ' ORDER BY r.observed_at, r.id'
  local rows = h:query(sql, series and { commit, series } or { commit })
  local out = {}
  for i, r in ipairs(rows) do
    local docs = {}
    for j, role in ipairs(point.ROLES) do
      if r[j + 1] then docs[role] = json.decode(r[j + 1]) end
    end
    out[i] = point.bundle(docs, json.decode(r[8]), r[9])
  end
  return out
end

--- Marks a known step (a driver update, a new GPU): from commit on, the baseline of history check
-- restarts there. device and series: "*" (default) for all.
--
-- @signature history_store.mark(h, commit, reason [, device [, series]]) -> true
-- @example
--   local h = assert(require("kluabench.history").open(":memory:", {create = true}))
--   history_store.mark(h, "abc123", "driver 580 -> 590")
function M.mark(h, commit, reason, device, series)
  args.check('history_store.mark', 1, h, 'table', 'history database handle (history.open)')
  args.check('history_store.mark', 2, commit, 'string', 'commit')
  args.check('history_store.mark', 3, reason, 'string', 'reason')
  h:transaction(function()
    h:run('INSERT INTO marks (commit_sha, device, series, reason, created_at) VALUES (?, ?, ?, ?, ?) '
      .. 'ON CONFLICT DO NOTHING', { commit, device or '*', series or '*', reason, now() })
  end)
  return true
end

--- The marks that apply to a series on a device: {commit, reason}.
--
-- @signature history_store.marks(h, device, series) -> list
-- @example
--   local h = assert(require("kluabench.history").open(":memory:", {create = true}))
--   print(#history_store.marks(h, "NVIDIA H200", "sha256:ab|fused|NVIDIA H200"))
function M.marks(h, device, series)
  args.check('history_store.marks', 1, h, 'table', 'history database handle (history.open)')
  local rows = h:query([[SELECT commit_sha, reason FROM marks WHERE (device = '*' OR device = ?)
    AND (series = '*' OR series = ?) ORDER BY created_at]], { device, series })
  local out = {}
  for i, r in ipairs(rows) do out[i] = { commit = r[1], reason = r[2] } end
  return out
end

--- How many runs, documents, commits and marks the database holds, and how many runs have their
-- raw samples (samples: every run has, in its row).
--
-- @signature history_store.counts(h) -> {runs, documents, samples, commits, marks}
-- @example
--   local h = assert(require("kluabench.history").open(":memory:", {create = true}))
--   print(history_store.counts(h).runs)
function M.counts(h)
  args.check('history_store.counts', 1, h, 'table', 'history database handle (history.open)')
  local out = {}
  for _, t in ipairs { 'runs', 'documents', 'commits', 'marks' } do
    out[t] = h:query('SELECT COUNT(*) FROM ' .. t)[1][1]
  end
  out.samples = h:query("SELECT COUNT(*) FROM runs WHERE samples <> '[]'")[1][1]
  return out
end

return M
