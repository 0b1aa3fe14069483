--- `kluabench history SUBCOMMAND`: results over commits in a database
-- (SQLite file or PostgreSQL server): add, list, trend, compare, check,
-- mark. The work is kluabench.history's; this is the command line.
local cli = require 'kluabench.commands.helpers'
local results = require 'kluabench.table'
local util_files = require 'kluabench.util.files'
local util_json = require 'kluabench.util.json'
local history = require 'kluabench.history'
local point = require 'kluabench.history.point'
local core = require 'kluabench.core'
local compare = require 'kluabench.compare'
local history_store = require 'kluabench.history.store'
local history_db = require 'kluabench.history.db'

local M = {}

M.USAGE = 'kluabench history add|list|trend|compare|check|mark [--db DB] [options] [args]'

M.help = [[
Keeps benchmark results over commits in a database and answers: how did a
point change over commits, and did the newest commit make it slower? The
database is a SQLite file (--db PATH, default results/history.db) or a
PostgreSQL server a team shares (--db postgresql://user@host/db; libpq is
loaded at run time). Every bundle is stored whole (its documents as JSON),
keyed by the run's four digests, its time and its session, with its raw
samples, the commit of the code under test, the host and the device, and
the copy ceiling and between-session noise it was measured with.

  history add FILE...       add the bundles of result files (JSON or JSON
                            Lines); a bundle already there is left alone
      --commit REV          the commit of the code under test (default: git
                            HEAD of --git-dir); with git, its parents and time
                            come from git
      --git-dir DIR         the work tree to ask git (default: here)
      --branch B, --parents "P1 P2", --commit-time ISO, --subject TEXT
                            what git would say, where there is no git
                            (--commit-time: 2026-11-01T12:00:00Z or with
                            a UTC offset, +02:00; stored and compared in UTC)
  history list              the series (point x provider x device), with
      [--commits]           their runs and commits; --commits: the commits
  history trend             one series over commits: per commit the median
      --point TEXT          of its sessions with a 95 % interval
      [--provider P] [--device D] [--head REV]
  history compare REV1 REV2 the runs of two commits with the statistics of
                            'kluabench compare' (its options: --threshold,
                            --noise, --between, --per-point, --resamples,
                            --seed, --confidence); exit 1 on a regression
  history check             regression detection for CI: the newest commit
      [--head REV]          (or REV) against a lookback window of its
      [--window N]          ancestors (20); at least --min-window N (5) of
      [--min-window N]      them before the step; the step may be at any of
      [--lag N]             the last --lag N (3) commits; a step counts when
      [--z Z]               its z-score reaches Z (4) and the change
      [--threshold T]       --threshold T (0.02 = 2 %); the spread is never
      [--noise SD]          taken below the between-session noise (--noise,
      [--sentinel P|none]   else the records'). A step that the sentinel
      [--point TEXT] [--provider P] [--device D]
                            (provider copy: the copy ceiling measured in the
                            same sessions) shows too is machine drift, not a
                            regression. Prints the commit where each series
                            stepped; exit 1 on a regression
  history mark REV --reason TEXT [--device D]
                            a known step (a driver update, a new GPU): the
                            baseline of check restarts at REV
  --format table|json       (list, trend, compare: also markdown; check)

docs/HISTORY.md describes the schema, the method and its measured false-alarm
rate and power, and CI recipes.

Exit status: 0 done (no regression), 1 a regression, a refused bundle or a
database error (the message names the database), 2 usage error.]]

local SPEC = {
  db = 'value', commit = 'value', ['git-dir'] = 'value', branch = 'value', parents = 'value',
  ['commit-time'] = 'value', subject = 'value', commits = 'flag', point = 'value', provider = 'value',
  device = 'value', kernel = 'value', head = 'value', window = 'value', ['min-window'] = 'value',
  lag = 'value', z = 'value', threshold = 'value', noise = 'value', sentinel = 'value', format = 'value',
  reason = 'value', between = 'value', ['per-point'] = 'flag', resamples = 'value', seed = 'value',
  confidence = 'value', help = 'flag', aliases = { h = 'help' },
}

-- Which options each subcommand takes.
local TAKES = {
  add = { 'db', 'commit', 'git-dir', 'branch', 'parents', 'commit-time', 'subject' },
  list = { 'db', 'commits', 'format' },
  trend = { 'db', 'point', 'provider', 'device', 'kernel', 'head', 'format' },
  compare = { 'db', 'threshold', 'noise', 'between', 'per-point', 'resamples', 'seed', 'confidence',
    'format', 'point', 'provider', 'device' },
  check = { 'db', 'head', 'window', 'min-window', 'lag', 'z', 'threshold', 'noise', 'sentinel', 'point',
    'provider', 'device', 'kernel', 'format' },
  mark = { 'db', 'reason', 'device' },
}

local NUMERIC

local function usage_error(fmt, ...) return cli.usage_error('history', fmt, ...) end

local function fail(fmt, ...)
  io.stderr:write('kluabench history: ', cli.printable(string.format(fmt, ...), 600), '\n')
  return 1
end

-- fail's message, then a list, one item a line (each made safe on its own: a line break in one stays escaped).
local function fail_list(message, items)
  local lines = {}
  for i, item in ipairs(items) do lines[i] = '  ' .. cli.printable(item, 600) .. '\n' end
  fail('%s', message)
  io.stderr:write(table.concat(lines))
  return 1
end

local function write(text)
  local ok, err = util_files.write_stdout(text)
  if not ok then return fail('cannot write to %s', err) end
  return 0
end

local function number_opt(opts, name, lo, hi, integer)
  local v = opts[name]
  if v == nil then return nil end
  local x = tonumber(v)
  if integer then x = math.tointeger(x) end
  if x == nil or x ~= x or x < lo or x > hi then
    return nil, string.format("--%s must be %s in [%g, %g], got '%s'", name,
      integer and 'an integer' or 'a number', lo, hi, v)
  end
  return x
end

local function short(sha) return sha and sha:sub(1, 12) or '' end
local function pct(r) return r and string.format('%+.1f%%', (r - 1) * 100) or '' end
local function us(ms) return ms and string.format('%.2f', ms * 1000) or '' end

local function json(v) return util_json.encode_pretty(v) .. '\n' end

-- Text from the database made safe for a terminal or a markdown viewer: control characters (an
-- escape sequence a forged record carries) as \xNN, as the plain table and stderr write them.
local function safe(v)
  if type(v) ~= 'string' then return v end
  return cli.printable(v, #v)
end

-- The rows of a table with every text made safe.
local function safe_rows(rows)
  for _, row in ipairs(rows) do
    for k, v in pairs(row) do row[k] = safe(v) end
  end
  return rows
end

---------------------------------------------------------------------------
-- add
---------------------------------------------------------------------------

local function commit_meta(opts)
  local meta
  if opts.commit and not opts['git-dir'] then
    meta = history.git_meta(opts.commit) -- a revision git knows here, else taken as given
  else
    local err
    meta, err = history.git_meta(opts.commit, opts['git-dir'])
    if not meta then return nil, err end
  end
  meta = meta or { commit = opts.commit }
  if opts.branch then meta.branch = opts.branch end
  if opts.parents then
    meta.parents = {}
    for p in opts.parents:gmatch('[^%s,]+') do meta.parents[#meta.parents + 1] = p end
  end
  if opts['commit-time'] then meta.committed_at = opts['commit-time'] end
  if opts.subject then meta.subject = opts.subject end
  return meta
end

local function run_add(h, opts, files)
  if #files == 0 then return usage_error('history add: no FILE given') end
  local meta, err = commit_meta(opts)
  if not meta then return fail('%s', err) end
  local status, total = 0, { added = 0, present = 0, refused = 0 }
  for _, path in ipairs(files) do
    cli.stop_if_interrupted()
    local bundles, rerr = point.read(path)
    if not bundles then
      status = fail('%s', rerr)
    else
      local m = {}
      for k, v in pairs(meta) do m[k] = v end
      m.source = path
      -- one file is one batch: its sessions' copy runs are the sentinel of its other runs
      local text = util_files.read_file(path)
      m.batch = 'file:sha256:' .. core.sha256(text or path)
      local s = assert(history.store.add_bundles(h, bundles, m))
      for _, r in ipairs(s.refused) do
        status = fail('%s: bundle %d: %s', path, r.index, r.why)
      end
      total.added, total.present = total.added + s.added, total.present + s.present
      total.refused = total.refused + #s.refused
    end
  end
  io.stderr:write(string.format('kluabench history: %d bundle(s) added, %d already there, %d refused '
    .. '(commit %s, %s)\n', total.added, total.present, total.refused, safe(short(meta.commit)), safe(h.name)))
  return status
end

---------------------------------------------------------------------------
-- list, trend
---------------------------------------------------------------------------

local function run_list(h, opts, fmt)
  local store = history.store
  if opts.commits then
    local list = store.commits(h)
    if fmt == 'json' then return write(json(list)) end
    local rows = {}
    for i, c in ipairs(list) do
      rows[i] = { sha = short(c.sha), branch = c.branch or '', time = c.committed_at or '',
        parents = table.concat(c.parents, ' '):gsub('(%x%x%x%x%x%x%x%x%x%x%x%x)%x+', '%1'),
        runs = c.runs, subject = c.subject or '' }
    end
    local cols = { { key = 'sha', title = 'commit' }, { key = 'branch' }, { key = 'time' },
      { key = 'parents' }, { key = 'runs', align = 'right' }, { key = 'subject' } }
    return write((fmt == 'markdown' and results.format_markdown or results.format_table)(cols, safe_rows(rows))
      .. string.format('%d commit(s) in %s\n', #list, safe(h.name)))
  end
  local list = store.series(h)
  if fmt == 'json' then return write(json(list)) end
  local rows = {}
  for i, s in ipairs(list) do
    rows[i] = { point = s.point, provider = s.provider, device = s.device, runs = s.runs, commits = s.commits,
      last = s.last }
  end
  local cols = { { key = 'point' }, { key = 'provider' }, { key = 'device' }, { key = 'runs', align = 'right' },
    { key = 'commits', align = 'right' }, { key = 'last', title = 'last run' } }
  local c = store.counts(h)
  return write((fmt == 'markdown' and results.format_markdown or results.format_table)(cols, safe_rows(rows))
    .. string.format('%d series, %d run(s), %d commit(s), %d document(s) in %s\n', #list, c.runs, c.commits,
      c.documents, safe(h.name)))
end

-- The one series the filters name, or nil and a message.
local function one_series(h, opts)
  local found = history.find_series(h, opts)
  if #found == 1 then return found[1] end
  if #found == 0 then return nil, string.format('no series in %s matches (kluabench history list shows them)', h.name) end
  local names = {}
  for i = 1, math.min(#found, 8) do
    names[i] = string.format('%s (%s, %s)', found[i].point, found[i].provider, found[i].device)
  end
  if #found > 8 then names[#names + 1] = '...' end
  return nil, string.format('%d series match; narrow with --point, --provider, --device:', #found), names
end

local function resolve(h, rev)
  if not rev then return nil end
  local store = history.store
  local sha, err = store.resolve_commit(h, rev)
  if not sha then error(err, 0) end
  return sha
end

local function run_trend(h, opts, fmt)
  if not opts.point and not opts.provider and not opts.device then
    return usage_error('history trend: give --point (and --provider, --device) to name one series')
  end
  local s, err, names = one_series(h, opts)
  if not s then return names and fail_list(err, names) or fail('%s', err) end
  local list = history.trend(h, s.series, { head = resolve(h, opts.head) })
  if fmt == 'json' then return write(json({ series = s, commits = list })) end
  local rows = {}
  for i, t in ipairs(list) do
    rows[i] = { sha = short(t.commit.sha), time = t.commit.committed_at or '', sessions = t.sessions,
      samples = t.samples, median = us(t.median_ms), interval = t.lo_ms and (us(t.lo_ms) .. '..' .. us(t.hi_ms)) or '',
      change = i > 1 and pct(t.median_ms / list[1].median_ms) or '' }
  end
  local cols = { { key = 'sha', title = 'commit' }, { key = 'time' }, { key = 'sessions', align = 'right' },
    { key = 'samples', align = 'right' }, { key = 'median', title = 'median us', align = 'right' },
    { key = 'interval', title = '95% interval us', align = 'right' },
    { key = 'change', title = 'vs first', align = 'right' } }
  return write(string.format('%s (%s, %s), %d commit(s), oldest first\n', safe(s.point), safe(s.provider),
    safe(s.device), #list) .. (fmt == 'markdown' and results.format_markdown or results.format_table)(cols,
    safe_rows(rows)))
end

---------------------------------------------------------------------------
-- compare, check, mark
---------------------------------------------------------------------------

local function run_compare(h, opts, args, fmt)
  if #args ~= 2 then return usage_error('history compare: expected REV1 and REV2, got %d argument(s)', #args) end
  local o = {}
  for _, c in ipairs { { 'threshold', 0, 10 }, { 'noise', 0, 1 }, { 'confidence', 0.5, 0.999 },
    { 'resamples', 100, 1000000, true }, { 'seed', -2 ^ 53, 2 ^ 53, true }, { 'between', 0, 0.5 } } do
    local v, err = number_opt(opts, c[1], c[2], c[3], c[4])
    if err then return usage_error('%s', err) end
    o[c[1]] = v
  end
  if opts['per-point'] then o.familywise = false end
  local a, b = resolve(h, args[1]), resolve(h, args[2])
  -- history.compare: a commit's runs from several adds (sweeps) are its sessions, pooled
  local result = history.compare(h, a, b, o)
  if #result.points == 0 then
    return fail('no point of %s is in %s (points match by workload digest and provider)', short(a), short(b))
  end
  if fmt ~= 'json' then
    -- what the stored records say, made safe before compare's table is made of it
    for _, p in ipairs(result.points) do
      for k, v in pairs(p) do p[k] = safe(v) end
    end
  end
  local st = write(compare.format(result, fmt))
  if st ~= 0 then return st end
  return result.regressions > 0 and 1 or 0
end

local CHECK_COLUMNS = {
  { key = 'point' }, { key = 'provider' }, { key = 'device' }, { key = 'status' },
  { key = 'step', title = 'stepped at' }, { key = 'change', align = 'right' },
  { key = 'interval', align = 'right' }, { key = 'z', align = 'right' },
  { key = 'window', title = 'base/post', align = 'right' }, { key = 'note' },
}

-- The report of history.check as "table", "markdown" or "json", ending with
-- a line per regression (the commit where it stepped) and a summary line.
local function format_check(result, fmt)
  if fmt == 'json' then return json(result) end
  local rows = {}
  for i, r in ipairs(result.results) do
    local stepped = r.status == 'regression' or r.status == 'improvement' or r.status == 'drift'
    rows[i] = { point = r.point, provider = r.provider, device = r.device,
      status = r.status == 'regression' and 'REGRESSION' or r.status,
      step = stepped and short(r.step) or '', change = r.ratio and pct(r.ratio) or '',
      interval = r.lo and (pct(r.lo) .. '..' .. pct(r.hi)) or '',
      z = r.z and string.format('%.1f', r.z) or '',
      window = r.base_n and r.base_n > 0 and string.format('%d/%d', r.base_n, r.post_n) or '',
      note = history.note(r) }
  end
  local text = (fmt == 'markdown' and results.format_markdown or results.format_table)(CHECK_COLUMNS, safe_rows(rows))
  local lines = { (text:gsub('\n$', '')) }
  for _, r in ipairs(result.results) do
    if r.status == 'regression' then
      lines[#lines + 1] = string.format('REGRESSION: %s (%s, %s) stepped at commit %s: %s (z %.1f, %d commit(s) '
        .. 'after the step, %d before)', safe(r.point), safe(r.provider), safe(r.device), safe(r.step), pct(r.ratio), r.z,
        r.post_n, r.base_n)
    end
  end
  lines[#lines + 1] = string.format('%d series checked at %s: %d regression(s).', #result.results,
    safe(short(result.head)), result.regressions)
  return table.concat(lines, '\n') .. '\n'
end

local function run_check(h, opts, fmt)
  local o = {}
  for _, c in ipairs { { 'window', 2, 100000, true, 'window' }, { 'min-window', 1, 100000, true, 'min_window' },
    { 'lag', 1, 1000, true, 'lag' }, { 'z', 0.5, 100, false, 'z' }, { 'threshold', 0, 10, false, 'threshold' },
    { 'noise', 0, 0.5, false, 'noise' } } do
    local v, err = number_opt(opts, c[1], c[2], c[3], c[4])
    if err then return usage_error('%s', err) end
    o[c[5]] = v
  end
  if opts.sentinel == 'none' then o.sentinel = false else o.sentinel = opts.sentinel end
  o.head = resolve(h, opts.head)
  if opts.point or opts.provider or opts.device or opts.kernel then
    o.series = {}
    for _, s in ipairs(history.find_series(h, opts)) do o.series[#o.series + 1] = s.series end
    if #o.series == 0 then return fail('no series in %s matches', h.name) end
  end
  local result = history.check(h, o)
  if not result.head then return fail('%s holds no commit yet', h.name) end
  local st = write(format_check(result, fmt))
  if st ~= 0 then return st end
  return result.regressions > 0 and 1 or 0
end

local function run_mark(h, opts, args)
  if #args ~= 1 then return usage_error('history mark: expected one REV, got %d argument(s)', #args) end
  if not opts.reason or opts.reason == '' then return usage_error('history mark: --reason TEXT is required') end
  local sha = resolve(h, args[1])
  history.store.mark(h, sha, opts.reason, opts.device)
  io.stderr:write(string.format('kluabench history: marked %s (%s): the baseline of check restarts there%s\n',
    safe(short(sha)), safe(opts.reason), opts.device and (' on ' .. safe(opts.device)) or ''))
  return 0
end

---------------------------------------------------------------------------

-- The numeric options and their ranges (checked before the database opens).
NUMERIC = {
  window = { 2, 100000, true }, ['min-window'] = { 1, 100000, true }, lag = { 1, 1000, true }, z = { 0.5, 100 },
  threshold = { 0, 10 }, noise = { 0, 1 }, confidence = { 0.5, 0.999 }, resamples = { 100, 1000000, true },
  seed = { -2 ^ 53, 2 ^ 53, true }, between = { 0, 0.5 },
}

local RUN = { add = run_add, list = run_list, trend = run_trend, compare = run_compare, check = run_check,
  mark = run_mark }

--- Runs the command; args are the words after 'history'. Returns the exit status.
function M.run(args)
  args = args or {}
  local opts, rest = cli.parse_args(args, SPEC)
  if not opts then return usage_error('%s', rest) end
  if opts.help then return cli.help('history') end
  local sub = table.remove(rest, 1)
  if not sub then return usage_error('no subcommand (add, list, trend, compare, check or mark)') end
  if not RUN[sub] then return usage_error("unknown subcommand '%s' (add, list, trend, compare, check or mark)", sub) end
  local allowed = {}
  for _, k in ipairs(TAKES[sub]) do allowed[k] = true end
  for k in pairs(opts) do
    if not allowed[k] then return usage_error("history %s takes no option '--%s'", sub, k) end
  end
  if (sub == 'list' or sub == 'trend' or sub == 'check') and #rest > 0 then
    return usage_error("history %s: unexpected argument '%s'", sub, rest[1])
  end
  local fmt = opts.format or 'table'
  if fmt ~= 'table' and fmt ~= 'markdown' and fmt ~= 'json' then
    return usage_error("--format must be table, markdown or json, got '%s'", fmt)
  end
  if sub == 'compare' and #rest ~= 2 then
    return usage_error('history compare: expected REV1 and REV2, got %d argument(s)', #rest)
  end
  if sub == 'mark' and #rest ~= 1 then return usage_error('history mark: expected one REV, got %d argument(s)', #rest) end
  if sub == 'mark' and (not opts.reason or opts.reason == '') then
    return usage_error('history mark: --reason TEXT is required')
  end
  if sub == 'trend' and not (opts.point or opts.provider or opts.device) then
    return usage_error('history trend: give --point (and --provider, --device) to name one series')
  end
  if sub == 'add' and #rest == 0 then return usage_error('history add: no FILE given') end
  for name, r in pairs(NUMERIC) do
    local _, err = number_opt(opts, name, r[1], r[2], r[3])
    if err then return usage_error('%s', err) end
  end
  if sub == 'add' then
    for _, f in ipairs(rest) do
      if f == '' then return usage_error('history add: an empty FILE name') end
    end
    -- what is stored as the commit's identity: text without control characters (a revision goes to
    -- git as an argument of its own, never through a shell)
    for _, k in ipairs { 'commit', 'branch', 'parents' } do
      local v = opts[k]
      if v and (v == '' and k == 'commit' or v:find('%c')) then
        return usage_error("history add: --%s '%s': empty or has control characters", k, v)
      end
    end
    if opts['commit-time'] then
      local utc, why = history_store.utc_time(opts['commit-time'])
      if not utc then return usage_error('history add: --commit-time %s', why) end
    end
  end
  local spec = opts.db or history.default_db()
  if sub == 'add' and not history_db.is_postgres(spec) and spec:match('/') then
    -- the folder of a new database file (results/ of a fresh checkout)
    local dir = spec:match('^(.*)/[^/]*$')
    if dir ~= '' and not core.stat(dir, true) then
      local ok, merr = util_files.mkdir_p(dir)
      if not ok then return fail('%s', merr) end
    end
  end
  -- the queries only read: a database this process may not write is read all the same
  local query = sub == 'list' or sub == 'trend' or sub == 'compare' or sub == 'check'
  local h, err = history.open(spec, { create = sub == 'add', query = query })
  if not h then return fail('%s', err) end
  local ok, res = pcall(function()
    if sub == 'add' or sub == 'compare' or sub == 'mark' then return RUN[sub](h, opts, rest, fmt) end
    return RUN[sub](h, opts, fmt)
  end)
  h:close()
  if not ok then
    if type(res) == 'string' and res:match('^interrupted') then error(res, 0) end
    return fail('%s', tostring(res))
  end
  return res
end

M.main = M.run

return M
