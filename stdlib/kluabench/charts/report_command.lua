--- `kluabench report RESULTS... -o report.html` and `kluabench report --db DB
-- -o report.html`: one self-contained HTML file (kluabench.charts.html) of
-- result files or of a history query.
local cli = require 'kluabench.commands.helpers'

local M = {}

M.USAGE = 'kluabench report [RESULTS...] [--db DB [--head REV] [--point TEXT] [--provider P] [--device D]] -o report.html'

M.help = [[
Writes one HTML file that opens from disk in any browser, with no network:
  - the results: a table per run with units (median, p20, p80 in us), its
    samples, session, the between-session noise and copy ceiling in force,
    GB/s, device and protocol, each linked to its record;
  - the charts 'kluabench plot' draws (inline SVG), one per kernel and mode;
  - with --db: the regression check of 'kluabench history check' at the
    newest commit (or --head REV), and each series' trend over commits, the
    commit where it stepped marked;
  - the environment and the protocol of the runs, field by field;
  - the records, each with its four digests (anchors #run-N).

RESULTS are record files (JSON or JSON Lines). With --db and no RESULTS the
tables and charts show the runs of the head commit.

  -o, --output FILE   the HTML file (required; '-': stdout); written whole or
                      not at all. One of RESULTS (or a samples file beside
                      one), the --db file or another SQLite database is
                      refused: never written over
  --db DB             a history database (SQLite path or postgresql:// URI)
  --head REV          the commit to report (default: the newest)
  --point TEXT, --provider P, --device D
                      the series to show trends of (default: every series
                      at the head, at most --max-trends)
  --max-trends N      at most N trend charts (default 24), regressions first
  --title TEXT        the page title

Exit status: 0 written, 1 input that is not results or a database error, 2
usage error (a RESULTS file that does not exist, is no regular file or cannot
be opened too).]]

local SPEC = { output = 'value', db = 'value', head = 'value', point = 'value', provider = 'value', device = 'value',
  ['max-trends'] = 'value', title = 'value', help = 'flag', aliases = { o = 'output', h = 'help' } }

local function usage_error(fmt, ...) return cli.usage_error('report', fmt, ...) end

local function fail(fmt, ...)
  io.stderr:write('kluabench report: ', cli.printable(string.format(fmt, ...), 600), '\n')
  return 1
end

-- The fields of a table flattened to "a.b.c" = text, sorted (for the report's environment and
-- protocol tables).
local function flatten(t, prefix, out, depth)
  out = out or {}
  if type(t) ~= 'table' or depth > 6 then return out end
  for k, v in pairs(t) do
    local name = prefix and (prefix .. '.' .. tostring(k)) or tostring(k)
    if type(v) == 'table' then
      if #v > 0 and type(v[1]) ~= 'table' then
        local parts = {}
        for i = 1, math.min(#v, 16) do parts[i] = tostring(v[i]) end
        out[#out + 1] = { name, table.concat(parts, ', ') .. (#v > 16 and ', ...' or '') }
      else
        flatten(v, name, out, depth + 1)
      end
    elseif type(v) ~= 'function' and type(v) ~= 'userdata' then
      out[#out + 1] = { name, tostring(v) }
    end
  end
  if depth == 0 then table.sort(out, function(a, b) return a[1] < b[1] end) end
  return out
end

-- What the report shows of one bundle (its session, kluabench.result), or nil and why.
local function summary(b)
  local result = require 'kluabench.result'
  local stats = require 'kluabench.stats'
  local ok, s = pcall(result.session, b)
  if not ok then return nil, 'not a record bundle: ' .. tostring(s) end
  if not s.samples_ms then return nil, s.samples_why or 'no raw samples in the record' end
  local label, provider = result.label_of(b, s)
  local xs = s.samples_ms
  return {
    label = label, kernel = s.kernel, mode = s.mode, provider = provider, device = s.device or 'unknown device',
    host = s.host or 'unknown host', backend = s.backend, median_ms = stats.median(xs),
    p20_ms = s.p20_ns and s.p20_ns / 1e6 or stats.quantile(xs, 0.2),
    p80_ms = s.p80_ns and s.p80_ns / 1e6 or stats.quantile(xs, 0.8),
    samples = #xs, raw = xs, session = s.session, noise_sd = s.noise_sd, copy_gbps = s.copy_gbps, gbps = s.gbps,
    protocol = type(b.protocol) == 'table' and type(b.protocol.metadata) == 'table' and b.protocol.metadata.name
      or s.protocol, digests = s.digests, observed_at = s.observed_at,
    environment = flatten(type(b.environment) == 'table' and b.environment.spec, nil, nil, 0),
    protocol_fields = flatten(type(b.protocol) == 'table' and b.protocol.spec, nil, nil, 0),
  }
end

-- The rows and chart points of bundles.
local function add_bundles(report, bundles, label)
  local plot = require 'kluabench.charts.plot'
  for i, b in ipairs(bundles) do
    local s, why = summary(b)
    if not s then return nil, string.format('%s: bundle %d: %s', label, i, why) end
    report.rows[#report.rows + 1] = s
    local p = plot.point_from_bundle(b)
    if p then report.plot_points[#report.plot_points + 1] = p end
  end
  return true
end

local function from_history(report, opts, max_trends)
  local history = require 'kluabench.history'
  local h, err = history.open(opts.db, { readonly = true })
  if not h then return nil, err end
  local ok, res = pcall(function()
    local head = opts.head and assert(history.store.resolve_commit(h, opts.head)) or nil
    local o = { head = head }
    if opts.point or opts.provider or opts.device then
      o.series = {}
      for _, s in ipairs(history.find_series(h, opts)) do o.series[#o.series + 1] = s.series end
    end
    local checks = history.check(h, o)
    report.checks = checks
    report.method = string.format('Method (docs/HISTORY.md): each series at the head commit against up to %d of its '
      .. 'ancestors; a step at one of the last %d commits counts when its z-score reaches %g and the change %g%%; '
      .. 'a step the sentinel (copy) shows too is machine drift.', history.detect.DEFAULTS.window,
      history.detect.DEFAULTS.lag, history.detect.DEFAULTS.z, history.detect.DEFAULTS.threshold * 100)
    report.sources[#report.sources + 1] = h.name .. ' at ' .. tostring(checks.head or 'no commit'):sub(1, 12)
    local order = {}
    for _, c in ipairs(checks.results) do
      -- a series that stepped earlier in its history ranks with the regressions
      if (c.status == 'ok' or c.status == 'short') and #history.steps(h, c.series, { head = checks.head }) > 0 then
        c.stepped_before = true
      end
      c.note = history.note(c)
      order[#order + 1] = c
    end
    local rank = { regression = 1, drift = 2, improvement = 3, ok = 4, short = 5 }
    table.sort(order, function(a, b)
      local ra, rb = a.stepped_before and 1.5 or rank[a.status], b.stepped_before and 1.5 or rank[b.status]
      if ra ~= rb then return ra < rb end
      return a.point .. a.provider < b.point .. b.provider
    end)
    report.trend_anchor = {}
    for i = 1, math.min(#order, max_trends) do
      local c = order[i]
      local anchor = 'trend-' .. i
      report.trend_anchor[c.series] = anchor
      -- every step along the series, as the check after each commit found it
      local steps = {}
      for _, st in ipairs(history.steps(h, c.series, { head = checks.head })) do steps[st.step] = st.status end
      if c.step and c.status ~= 'ok' and c.status ~= 'short' then steps[c.step] = c.status end
      report.trends[#report.trends + 1] = { anchor = anchor, steps = steps,
        title = string.format('%s (%s, %s)', c.point, c.provider, c.device),
        trend = history.trend(h, c.series, { head = checks.head }) }
    end
    if #report.rows == 0 and checks.head then
      local ok2, e2 = add_bundles(report, history.bundles(h, checks.head), h.name)
      if not ok2 then error(e2, 0) end
    end
    return true
  end)
  h:close()
  if not ok then return nil, res end
  return true
end

--- Runs the command; returns the exit status.
function M.run(args)
  local opts, files = cli.parse_args(args or {}, SPEC)
  if not opts then return usage_error('%s', files) end
  if opts.help then return cli.help('report') end
  if not opts.output then return usage_error('no output file: give -o report.html (or -o - for stdout)') end
  if #files == 0 and not opts.db then return usage_error('give RESULTS files, or --db DB') end
  local unreadable = cli.check_inputs('report', files)
  if unreadable then return unreadable end
  if (opts.head or opts.point or opts.provider or opts.device) and not opts.db then
    return usage_error('--head, --point, --provider and --device query a history: give --db DB')
  end
  local max_trends = 24
  if opts['max-trends'] then
    max_trends = math.tointeger(tonumber(opts['max-trends']))
    if not max_trends or max_trends < 0 or max_trends > 10000 then
      return usage_error("--max-trends must be a whole number from 0 to 10000, got '%s'", opts['max-trends'])
    end
  end
  local shards = require 'kluabench.dist.shards'
  local inputs = shards.file_inputs(files)
  if opts.db and not require('kluabench.history.db').is_postgres(opts.db) then
    inputs[#inputs + 1] = { opts.db, 'the history database (--db)' }
  end
  local fresh, why_not = shards.check_output('-o', opts.output, inputs, nil, true)
  if not fresh then return usage_error('%s', why_not) end
  local files_mod = require 'kluabench.util.files'
  if opts.output ~= '-' then
    local ok, err = files_mod.check_writable(opts.output)
    if not ok then return fail('%s', err) end
  end
  local report = { title = opts.title or 'kluabench report', sources = {}, rows = {}, plot_points = {}, trends = {},
    generated = os.date('!%Y-%m-%dT%H:%M:%SZ') }
  local point = require 'kluabench.history.point'
  for _, path in ipairs(files) do
    cli.stop_if_interrupted()
    local bundles, err = point.read(path)
    if not bundles then return fail('%s', err) end
    local ok, e = add_bundles(report, bundles, path)
    if not ok then return fail('%s', e) end
    report.sources[#report.sources + 1] = path
  end
  if opts.db then
    local ok, err = from_history(report, opts, max_trends)
    if not ok then return fail('%s', err) end
  end
  local text = require('kluabench.charts.html').render(report)
  local ok, err = files_mod.write_atomic(opts.output, text)
  if not ok then return fail('cannot write %s', err) end
  if opts.output ~= '-' then
    io.stderr:write(string.format('kluabench report: wrote %s (%d run(s), %d trend(s)%s)\n', opts.output, #report.rows,
      #report.trends, report.checks and string.format(', %d regression(s)', report.checks.regressions) or ''))
  end
  return 0
end

M.main = M.run

return M
