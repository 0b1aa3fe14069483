--- Results over time: the history database (SQLite by default, PostgreSQL
-- for a team), what `kluabench history` and `kluabench report` ask of it,
-- and the function the harness calls to write into it (history.add_bundles).
-- docs/HISTORY.md describes the schema and the detection method.
local db = require 'kluabench.history.db'
local schema = require 'kluabench.history.schema'
local store = require 'kluabench.history.store'
local detect = require 'kluabench.history.detect'
local point = require 'kluabench.history.point'
local stats = require 'kluabench.stats'
local args = require 'kluabench.util.args'
local command = require 'kluabench.util.command'
local files = require 'kluabench.util.files'
local compare = require 'kluabench.compare'

local M = {}

--- The default database when none is given: results/history.db (beside the results the scripts
-- write; $KLUABENCH_RESULTS names another folder than results/, as it does for the scripts).
--
-- @signature history.default_db() -> path
-- @example
--   print(history.default_db())
function M.default_db()
  return files.results_dir() .. '/history.db'
end

--- The provider whose runs are the sentinel of machine drift: the copy kernel, measured in the same
-- session (the RoPE benchmarks have it).
M.SENTINEL = 'copy'

--- Opens a history database and brings it to the current schema.
--
-- spec: a SQLite path (":memory:" too) or a postgresql:// URI. opts.create: make the SQLite file
-- when absent (only `history add` and the harness do); without it an absent file, or a database
-- with no history in it, is an error naming it. opts.readonly: open for reading only (a database of
-- an older schema is refused, naming it); opts.query: for reading, as readonly, except that a
-- database of an older schema is brought up to date first (what the query commands do: a database
-- this process may not write is still read). A corrupt or foreign file, a newer schema and a server
-- that does not answer are errors naming the database. Returns a handle (see kluabench.history.db)
-- or nil, message.
--
-- @signature history.open(spec [, opts]) -> handle | nil, message
-- @example
--   local h = assert(history.open(":memory:", {create = true}))
--   print(h.kind)
--   h:close()
function M.open(spec, opts)
  opts = opts or {}
  if opts.query then
    local h, err = M.open(spec, { readonly = true })
    if h or not tostring(err):find("older than this kluabench's", 1, true) then return h, err end
    h, err = M.open(spec, {}) -- brought up to date once, then read
    return h, err
  end
  local h, err = db.open(spec, opts)
  if not h then return nil, err end
  local ok, e = pcall(function()
    local v = schema.version(h)
    if v == 0 and not opts.create then
      error(string.format("%s: no history in it yet (no kluabench tables; 'kluabench history add' "
        .. 'creates them)', h.name), 0)
    end
    if opts.readonly then schema.check(h) else schema.migrate(h) end
  end)
  if not ok then
    h:close()
    return nil, e
  end
  return h
end

-- Runs git with the arguments given (an argument vector: no shell sees them) in the work tree dir;
-- its output, or nil when it fails or cannot run.
local function git(dir, ...)
  local r = command.capture({ 'git', '-C', dir or '.', ... })
  if not r or r.how ~= 'exit' or r.code ~= 0 then return nil end
  return r.out
end

--- The commit metadata of the code under test from git: {commit, branch, parents, committed_at,
-- subject}, or nil and why.
--
-- rev: the commit (default HEAD); dir: the work tree (default the current directory).
--
-- @signature history.git_meta([rev [, dir]]) -> meta | nil, message
-- @example
--   local meta = history.git_meta()
--   print(meta and meta.commit)
function M.git_meta(rev, dir)
  args.check('history.git_meta', 1, rev, 'string|nil', 'revision')
  args.check('history.git_meta', 2, dir, 'string|nil', 'directory')
  rev = rev or 'HEAD'
  -- a revision is an argument of its own (no shell), never an option
  if rev == '' or rev:match('^%-') or rev:find('%c') then
    return nil, string.format("not a revision: '%s'", args.printable(rev, 100))
  end
  local out = git(dir, 'log', '-1', '--format=%H%n%P%n%cI%n%s', rev, '--')
  if not out or out == '' then
    return nil, string.format("no git commit '%s' in %s (give --commit SHA with --parents and --commit-time, "
      .. 'or run in the work tree of the code under test)', args.printable(rev, 100),
      args.printable(dir or 'the current directory', 300))
  end
  local sha, parents, time, subject = out:match('^(%x+)\n([^\n]*)\n([^\n]*)\n([^\n]*)')
  if not sha then return nil, "git log gave no commit for '" .. args.printable(rev, 100) .. "'" end
  local branch = git(dir, 'rev-parse', '--abbrev-ref', 'HEAD')
  branch = branch and branch:match('^(%S+)')
  local list = {}
  for p in parents:gmatch('%x+') do list[#list + 1] = p end
  -- git's %cI carries the committer's own UTC offset: the instant in UTC, so that commits compare
  return { commit = sha, parents = list, committed_at = time ~= '' and store.utc_time(time) or nil,
    subject = subject, branch = branch ~= 'HEAD' and branch or nil }
end

--- Adds bundles to a history database: what the harness's `--history DB` calls after a sweep.
--
-- target: an open handle, or a path / URI (opened with create and closed after). meta: commit
-- (required), branch, parents, committed_at, subject, source, batch (store.add_bundles); with
-- meta.git = true (or no meta.commit) the commit comes from git in the current directory. Returns
-- {added, present, refused} or nil, message.
--
-- @signature history.add_bundles(target, bundles, meta) -> summary | nil, message
-- @example
--   local h = assert(history.open(":memory:", {create = true}))
--   local s = assert(history.add_bundles(h, {}, {commit = "0123abcd"}))
--   print(s.added)
function M.add_bundles(target, bundles, meta)
  args.check('history.add_bundles', 1, target, 'string|table', 'database path, URI or handle')
  args.check('history.add_bundles', 2, bundles, 'table', 'list of bundles')
  args.check('history.add_bundles', 3, meta, 'table', 'table {commit, ...}')
  meta = meta or {}
  if not meta.commit then
    local g, err = M.git_meta()
    if not g then return nil, err end
    for k, v in pairs(g) do if meta[k] == nil then meta[k] = v end end
  end
  local h, err = target, nil
  if type(target) == 'string' then
    h, err = M.open(target, { create = true })
    if not h then return nil, err end
  end
  local ok, res = pcall(store.add_bundles, h, bundles, meta)
  if type(target) == 'string' then h:close() end
  if not ok then
    if type(res) == 'string' and res:match('^interrupted') then error(res, 0) end
    return nil, res
  end
  return res
end

--- Series matching filters: point (the label, or a part of it, or a workload digest prefix),
-- provider, device, kernel (each exact but point). Returns the list of store.series entries.
--
-- @signature history.find_series(h [, filters]) -> list
-- @example
--   local h = assert(history.open(":memory:", {create = true}))
--   print(#history.find_series(h, {provider = "fused"}))
function M.find_series(h, f)
  args.check('history.find_series', 1, h, 'table', 'history database handle (history.open)')
  args.check('history.find_series', 2, f, 'table|nil', 'table of filters')
  f = f or {}
  local out = {}
  for _, s in ipairs(store.series(h)) do
    local wd = s.series:match('^([^|]+)')
    local ok = (not f.provider or s.provider == f.provider) and (not f.device or s.device == f.device)
      and (not f.kernel or s.kernel == f.kernel)
    if ok and f.point then
      ok = s.point == f.point or s.point:find(f.point, 1, true) ~= nil or wd:sub(1, #f.point) == f.point
        or wd:sub(8, 7 + #f.point) == f.point
    end
    if ok then out[#out + 1] = s end
  end
  return out
end

-- Runs per commit of a series, in ancestry order ending at head. chain: the
-- lineage to head when the caller has it (one per check, not per series).
local function commits_of(h, series, head, chain)
  local runs = store.runs(h, series)
  local by = {}
  for _, r in ipairs(runs) do
    by[r.commit] = by[r.commit] or {}
    table.insert(by[r.commit], r)
  end
  chain = chain or store.lineage(store.commits(h), head)
  local out = {}
  for _, c in ipairs(chain) do
    if by[c.sha] then out[#out + 1] = { commit = c, runs = by[c.sha] } end
  end
  return out, chain
end

local function summarize(runs)
  local ms, logs = {}, {}
  for i, r in ipairs(runs) do
    ms[i] = r.median_ms
    logs[i] = math.log(r.median_ms)
  end
  local t = { sessions = #runs, median_ms = stats.median(ms) }
  if #runs >= 2 then
    local m, sd = stats.mean(logs), stats.stdev(logs)
    local q = stats.t_quantile(0.975, #runs - 1) * sd / math.sqrt(#runs)
    t.lo_ms, t.hi_ms, t.interval = math.exp(m - q), math.exp(m + q), 'sessions (t, 95 %)'
  else
    t.lo_ms, t.hi_ms, t.interval = runs[1].lo_ms, runs[1].hi_ms, 'samples (order statistics, 95 %)'
  end
  local n = 0
  for _, r in ipairs(runs) do n = n + r.n_samples end
  t.samples = n
  return t
end

--- One series over commits: per commit (ancestry order, oldest first) the median of its sessions'
-- medians with a 95 % interval (across sessions when there are several, else the order-statistics
-- interval of the one session's samples).
--
-- opts.head: the newest commit (default: the newest the history knows). Returns {{commit = {sha,
-- branch, committed_at, subject}, sessions, median_ms, lo_ms, hi_ms, samples, interval}}.
--
-- @signature history.trend(h, series [, opts]) -> list
-- @example
--   local h = assert(history.open(":memory:", {create = true}))
--   print(#history.trend(h, "sha256:ab|fused|NVIDIA H200"))
function M.trend(h, series, opts)
  args.check('history.trend', 1, h, 'table', 'history database handle (history.open)')
  args.check('history.trend', 2, series, 'string|table', 'series key or table')
  args.check('history.trend', 3, opts, 'table|nil', 'table of options')
  local list = commits_of(h, series, opts and opts.head)
  local out = {}
  for i, e in ipairs(list) do
    local t = summarize(e.runs)
    t.commit = e.commit
    out[i] = t
  end
  return out
end

-- The sentinel's value per commit of list: the geometric mean over its runs
-- there (in the series' session groups when any match) of each run's median
-- over its workload's median.
local function sentinel_values(h, device, list, provider)
  local runs = store.provider_runs(h, provider, device)
  if #runs == 0 then return nil end
  local per_workload = {}
  for _, r in ipairs(runs) do
    per_workload[r.workload] = per_workload[r.workload] or {}
    table.insert(per_workload[r.workload], r.median_ms)
  end
  local ref = {}
  for w, ms in pairs(per_workload) do ref[w] = stats.median(ms) end
  local at = {}
  for _, r in ipairs(runs) do
    at[r.commit] = at[r.commit] or {}
    table.insert(at[r.commit], r)
  end
  local out, any = {}, false
  for i, e in ipairs(list) do
    local groups = {}
    for _, r in ipairs(e.runs) do groups[r.session_group] = true end
    local same, all = {}, {}
    for _, r in ipairs(at[e.commit.sha] or {}) do
      local v = math.log(r.median_ms / ref[r.workload])
      all[#all + 1] = v
      if groups[r.session_group] then same[#same + 1] = v end
    end
    local use = #same > 0 and same or all
    if #use > 0 then
      out[i] = stats.mean(use)
      any = true
    end
  end
  return any and out or nil
end

-- What judging a series needs: its commits up to head (with the protocol of
-- the head's runs only), their values, the noise in force, the position of
-- each commit on the lineage (for marks) and the marks.
local function prepare(h, s, head, opts, lineage)
  local list, chain = commits_of(h, s.series, head, lineage)
  local last = list[#list]
  if not last then return nil end
  local proto = last.runs[1].protocol
  local kept = {}
  for _, e in ipairs(list) do
    local rs = {}
    for _, r in ipairs(e.runs) do if r.protocol == proto then rs[#rs + 1] = r end end
    if #rs > 0 then kept[#kept + 1] = { commit = e.commit, runs = rs } end
  end
  local xs, noises = {}, {}
  for i, e in ipairs(kept) do
    local ms = {}
    for j, r in ipairs(e.runs) do
      ms[j] = r.median_ms
      if r.noise_sd then noises[#noises + 1] = r.noise_sd end
    end
    xs[i] = detect.value(ms)
  end
  local pos = {}
  for i, c in ipairs(chain) do pos[c.sha] = i end
  return { list = kept, xs = xs, pos = pos, marks = store.marks(h, s.device, s.series),
    noise = opts.noise or (#noises > 0 and stats.median(noises) or 0) }
end

-- The verdict on the first k commits of a prepared series (k: the newest).
local function judge(h, s, ctx, k, opts, sentinel, cache)
  local list = ctx.list
  local xs = table.move(ctx.xs, 1, k, 1, {})
  -- the baseline restarts at the newest mark at or before commit k
  local start, mark = 1, nil
  for _, m in ipairs(ctx.marks) do
    local at = ctx.pos[m.commit]
    if at and at <= ctx.pos[list[k].commit.sha] and (not mark or at > ctx.pos[mark.commit]) then mark = m end
  end
  if mark then
    start = k + 1
    for i = 1, k do
      if ctx.pos[list[i].commit.sha] >= ctx.pos[mark.commit] then
        start = i
        break
      end
    end
  end
  local o = { start = start, noise = ctx.noise }
  for _, key in ipairs { 'window', 'min_window', 'lag', 'z', 'threshold' } do o[key] = opts[key] end
  local r = detect.check(xs, o)
  local res = { series = s.series, point = s.point, provider = s.provider, device = s.device,
    status = r.status, ratio = r.ratio, lo = r.lo, hi = r.hi, z = r.z, base_n = r.base_n,
    post_n = r.post_n, commits = k, mark = mark, noise = ctx.noise, head = list[k].commit.sha,
    step = r.step and list[r.step].commit.sha or nil, earlier = r.earlier and list[r.earlier].commit.sha or nil }
  if (r.status == 'regression' or r.status == 'improvement') and sentinel then
    res.sentinel_provider = sentinel
    if s.provider == sentinel then
      res.sentinel, res.status = 'self', 'drift'
    else
      cache.values = cache.values or { sentinel_values(h, s.device, list, sentinel) }
      local sxs = cache.values[1]
      if sxs then
        res.sentinel, res.sentinel_ratio = detect.sentinel(r, table.move(sxs, 1, k, 1, {}), { noise = ctx.noise })
        if res.sentinel == 'drift' then res.status = 'drift' end
      else
        res.sentinel = 'none'
      end
    end
  end
  return res
end

local function head_of(h, opts)
  if opts.head then return opts.head end
  local with_runs = {}
  for _, c in ipairs(store.commits(h)) do if c.runs > 0 then with_runs[#with_runs + 1] = c end end
  local lineage = store.lineage(with_runs)
  return lineage[#lineage] and lineage[#lineage].sha
end

--- Regression detection for CI: each series that has runs at the head commit, judged against a
-- lookback window of its ancestors (kluabench.history.detect, docs/HISTORY.md).
--
-- opts: head (default the newest commit), series (a list of series keys; default every series with
-- runs at head), window, min_window, lag, z, threshold (detect.DEFAULTS), noise (default: the
-- median between-session noise the series' records carry), sentinel (provider, default "copy";
-- false: none). Marks restart the baseline at their commit. Returns {head, results = {{series,
-- point, provider, device, status = regression | improvement | drift | ok | short, step (the
-- commit sha where it stepped), ratio, lo, hi, z, base_n, post_n, sentinel (for a step: "drift",
-- "steady" (the sentinel did not step), "none" (no sentinel runs around the step) or "self"),
-- sentinel_ratio, sentinel_provider, mark, earlier (the sha of an older step the baseline restarts
-- at: the checks of its own commits judged it), commits}}, regressions}.
--
-- @signature history.check(h [, opts]) -> result
-- @example
--   local h = assert(history.open(":memory:", {create = true}))
--   print(history.check(h).regressions)
function M.check(h, opts)
  args.check('history.check', 1, h, 'table', 'history database handle (history.open)')
  args.check('history.check', 2, opts, 'table|nil', 'table of options')
  opts = opts or {}
  local head = head_of(h, opts)
  local out = { head = head, results = {}, regressions = 0 }
  if not head then return out end
  local wanted
  if opts.series then
    wanted = {}
    for _, s in ipairs(opts.series) do wanted[s] = true end
  end
  local sentinel = opts.sentinel == nil and M.SENTINEL or opts.sentinel
  local lineage = store.lineage(store.commits(h), head)
  for _, s in ipairs(store.series(h)) do
    if not wanted or wanted[s.series] then
      local ctx = prepare(h, s, head, opts, lineage)
      if ctx and ctx.list[#ctx.list].commit.sha == head then
        local res = judge(h, s, ctx, #ctx.list, opts, sentinel, {})
        if res.status == 'regression' then out.regressions = out.regressions + 1 end
        out.results[#out.results + 1] = res
      end
    end
  end
  return out
end

local function pct(r) return string.format('%+.1f%%', (r - 1) * 100) end

--- What one result of history.check says beyond its figures, for people: the sentinel's part in a
-- step (drift, steady, no sentinel runs), where its baseline starts (an earlier step, a mark) and
-- why it is short; "" when nothing. `history check` and `kluabench report` print it.
--
-- @signature history.note(result) -> text
-- @example
--   print(history.note({status = "short", commits = 3})) --> 3 commit(s): too few for a baseline
function M.note(r)
  args.check('history.note', 1, r, 'table', 'check result')
  local note = {}
  if r.status == 'drift' then
    note[#note + 1] = r.sentinel == 'self' and 'the sentinel itself: the machine changed'
      or string.format('the sentinel stepped too (%s): machine drift, not the code', pct(r.sentinel_ratio))
  end
  if r.status == 'regression' and r.sentinel == 'steady' then
    note[#note + 1] = string.format('the sentinel (%s) did not step (%s)', r.sentinel_provider, pct(r.sentinel_ratio))
  elseif r.status == 'regression' and r.sentinel == 'none' then
    note[#note + 1] = string.format('no sentinel (%s) runs around the step: machine drift not ruled out',
      r.sentinel_provider)
  end
  if r.earlier then
    note[#note + 1] = string.format('baseline from the step at %s (%s)', r.earlier:sub(1, 12),
      r.status == 'short' and 'too few commits since it to judge' or 'judged by the checks of its commits')
  elseif r.status == 'short' then
    note[#note + 1] = string.format('%d commit(s): too few for a baseline', r.commits)
  end
  if r.mark then
    note[#note + 1] = 'baseline from mark at ' .. r.mark.commit:sub(1, 12) .. ' (' .. r.mark.reason .. ')'
  end
  return table.concat(note, '; ')
end

--- Every step of one series over its history, as `history check` after each commit would have
-- found them: {{step (sha), found_at (the first commit whose check saw it), status, ratio, z}},
-- oldest first (what the report marks on a trend).
--
-- opts as for history.check (head, window, ..., sentinel).
--
-- @signature history.steps(h, series [, opts]) -> list
-- @example
--   local h = assert(history.open(":memory:", {create = true}))
--   print(#history.steps(h, "sha256:ab|fused|NVIDIA H200"))
function M.steps(h, series, opts)
  args.check('history.steps', 1, h, 'table', 'history database handle (history.open)')
  args.check('history.steps', 2, series, 'string|table', 'series key or table')
  args.check('history.steps', 3, opts, 'table|nil', 'table of options')
  opts = opts or {}
  local s
  for _, x in ipairs(store.series(h)) do if x.series == series then s = x end end
  if not s then return {} end
  local ctx = prepare(h, s, head_of(h, opts), opts)
  if not ctx then return {} end
  local sentinel = opts.sentinel == nil and M.SENTINEL or opts.sentinel
  local cache, out, seen = {}, {}, {}
  for k = 1, #ctx.list do
    local res = judge(h, s, ctx, k, opts, sentinel, cache)
    if res.step and res.status ~= 'ok' and res.status ~= 'short' and not seen[res.step] then
      seen[res.step] = true
      out[#out + 1] = { step = res.step, found_at = res.head, status = res.status, ratio = res.ratio, z = res.z }
    end
  end
  return out
end

--- Compares the runs of two commits with `kluabench compare`'s statistics (kluabench.compare
-- on the bundles rebuilt from the database).
--
-- opts as for compare.compare, plus series (a list of series keys to keep). Returns compare's result.
--
-- @signature history.compare(h, rev1, rev2 [, opts]) -> result
-- @example
--   local h = assert(history.open(":memory:", {create = true}))
--   print(#history.compare(h, "a", "b").points)
function M.compare(h, base_sha, new_sha, opts)
  args.check('history.compare', 1, h, 'table', 'history database handle (history.open)')
  args.check('history.compare', 2, base_sha, 'string', 'revision')
  args.check('history.compare', 3, new_sha, 'string', 'revision')
  args.check('history.compare', 4, opts, 'table|nil', 'table of options')
  local base, new = store.bundles(h, base_sha), store.bundles(h, new_sha)
  -- a commit's runs may come from several batches: their sessions are pooled
  local o = { across_sweeps = true }
  for k, v in pairs(opts or {}) do o[k] = v end
  return compare.compare(base, new, o)
end

--- The bundles of one commit, rebuilt from the database (for `kluabench report --db`).
--
-- @signature history.bundles(h, commit) -> bundles
-- @example
--   local h = assert(history.open(":memory:", {create = true}))
--   print(#history.bundles(h, "abc"))
function M.bundles(h, commit)
  args.check('history.bundles', 1, h, 'table', 'history database handle (history.open)')
  args.check('history.bundles', 2, commit, 'string', 'commit')
  return store.bundles(h, commit)
end

M.point = point
M.store = store
M.detect = detect

return M
