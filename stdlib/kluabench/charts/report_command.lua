--- `kluabench report RESULTS... -o report.html` and `kluabench report --db DB
-- -o report.html`: one self-contained HTML file (kluabench.charts.html) of
-- result files or of a history query. Bundles are read through the one
-- result model (kluabench.result.points): a point's sessions make one
-- summary row and one chart mark, its aggregate.
local writer = require 'kluabench.record.writer'
local cli = require 'kluabench.commands.helpers'
local reader = require 'kluabench.record.reader'
local result = require 'kluabench.result'
local verify = require 'kluabench.record.verify'
local plot = require 'kluabench.charts.plot'
local html = require 'kluabench.charts.html'
local files_mod = require 'kluabench.util.files'
local history = require 'kluabench.history'
local history_db = require 'kluabench.history.db'

local M = {}

M.USAGE = 'kluabench report [RESULTS...] [--db DB [--head REV] [--point TEXT] [--provider P] [--device D]] -o report.html'

M.help = [[
Writes one HTML file that opens from disk in any browser, with no network:
  - the results: one row per point with its aggregate (the median is the
    mean of its session medians, as the results table and compare show it;
    p20, p80 in us), its sessions and samples, the 95% interval of its
    median (ci95), GB/s, copy ceiling, status and flags (noisy: ci95 wider
    than 10%); its sessions folded under it, each linked to its record;
  - the charts 'kluabench plot' draws (inline SVG), one per kernel and mode,
    each with a legend, protocols that differ drawn as lines of their own,
    and every mark's point, median, sessions and samples in its tooltip;
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

local function text(v) return type(v) == 'string' and v ~= '' and v or nil end

-- The document of a role a bundle holds, under the digest its run names it by: the report shows
-- the distinct environment and protocol documents field by field.
local function add_document(report, role, digest, doc, title_of)
  if type(doc) ~= 'table' or not digest or report.seen_documents[digest] then return end
  report.seen_documents[digest] = true
  local list = report.documents[role]
  list[#list + 1] = { title = title_of(doc) .. ' (' .. tostring(digest):sub(1, 19) .. ')', spec = doc.spec }
end

-- The points (result.points), chart points and documents of the bundles of one source (a file,
-- or a commit of the history); run: its name in the charts (plot.run_names), default label.
local function add_bundles(report, bundles, label, run)
  for i, b in ipairs(bundles) do
    local ok, why = pcall(result.session, b)
    if not ok then return nil, string.format('%s: bundle %d: %s', label, i, tostring(why)) end
  end
  for _, p in ipairs(result.points(bundles)) do
    p.source = label
    report.points[#report.points + 1] = p
    local cp = plot.point_of(p)
    if cp then
      cp.run = run or label
      report.plot_points[#report.plot_points + 1] = cp
    end
  end
  for _, b in ipairs(bundles) do
    local s = result.session(b)
    add_document(report, 'environment', s.digests.environment, b.environment, function(doc)
      local meta = type(doc.metadata) == 'table' and doc.metadata or {}
      local labels = type(meta.labels) == 'table' and meta.labels or {}
      return tostring(s.device or 'unknown device') .. ' on ' .. (text(labels.host_name) or 'unknown host')
    end)
    add_document(report, 'protocol', s.digests.protocol, b.protocol, function(doc)
      return text(type(doc.metadata) == 'table' and doc.metadata.name) or tostring(s.protocol)
    end)
  end
  return true
end

local function from_history(report, opts, max_trends)
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
    if #report.points == 0 and checks.head then
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
  local inputs = writer.file_inputs(files)
  if opts.db and not history_db.is_postgres(opts.db) then
    inputs[#inputs + 1] = { opts.db, 'the history database (--db)' }
  end
  local fresh, why_not = writer.check_output('-o', opts.output, inputs, true)
  if not fresh then return usage_error('%s', why_not) end
  if opts.output ~= '-' then
    local ok, err = files_mod.check_writable(opts.output)
    if not ok then return fail('%s', err) end
  end
  local report = { title = opts.title or 'kluabench report', sources = {}, points = {}, plot_points = {}, trends = {},
    documents = { environment = {}, protocol = {} }, seen_documents = {},
    generated = os.date('!%Y-%m-%dT%H:%M:%SZ') }
  local runs = plot.run_names(files)
  for i, path in ipairs(files) do
    cli.stop_if_interrupted()
    local bundles, lines = reader.read(path)
    if not bundles then return fail('%s', lines) end
    -- what `kluabench verify` refuses (a digest that does not hold, raw samples not the run's, a run
    -- that claims another provider, mode or session than its documents) is never rendered
    for j, b in ipairs(bundles) do
      local bad = verify.describe(verify.problems(b, path))
      if bad then return fail('%s:%d: refused as kluabench verify refuses it: %s', path, lines[j], bad) end
    end
    local ok, e = add_bundles(report, bundles, path, runs[i])
    if not ok then return fail('%s', e) end
    report.sources[#report.sources + 1] = path
  end
  if opts.db then
    local ok, err = from_history(report, opts, max_trends)
    if not ok then return fail('%s', err) end
  end
  local text_out = html.render(report)
  local ok, err = files_mod.write_atomic(opts.output, text_out)
  if not ok then return fail('cannot write %s', err) end
  if opts.output ~= '-' then
    local sessions = 0
    for _, p in ipairs(report.points) do sessions = sessions + #p.sessions end
    io.stderr:write(string.format('kluabench report: wrote %s (%d point(s), %d run(s), %d trend(s)%s)\n', opts.output,
      #report.points, sessions, #report.trends,
      report.checks and string.format(', %d regression(s)', report.checks.regressions) or ''))
  end
  return 0
end

M.main = M.run

return M
