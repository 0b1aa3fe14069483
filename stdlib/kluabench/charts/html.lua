--- A static HTML report: one self-contained file (inline CSS, inline SVG
-- charts drawn by kluabench.charts.plot, a few lines of inline script that
-- only measure what was drawn) that opens from disk with no network.
--
-- The report is built from plain tables that the caller gathers (the
-- `kluabench report` command: the measured points of result files or of a
-- history query, as kluabench.result makes them, trends and check results
-- from kluabench.history), so this file reads no record and no database. It
-- shows one summary row per point (its aggregate: the mean of its session
-- medians, as the table and compare show it) with its sessions folded under
-- it, the charts with a legend and a tooltip on every mark, and every
-- session's record under an anchor (#run-N) with its four digests.
local plot = require 'kluabench.charts.plot'
local args = require 'kluabench.util.args'
local table_view = require 'kluabench.table'
local result = require 'kluabench.result'

local M = {}

local function esc(s)
  s = plot.xml_text(s == nil and '' or s)
  return (s:gsub('&', '&amp;'):gsub('<', '&lt;'):gsub('>', '&gt;'):gsub('"', '&quot;'))
end
--- Text escaped for HTML (and made valid UTF-8, as plot.xml_text does).
--
-- @signature html.escape(s) -> text
-- @example
--   print(html.escape('<a href="x">')) --> &lt;a href=&quot;x&quot;&gt;
M.escape = esc

--- A point whose ci95 is wider than this (± percent of its median) is flagged `noisy`: the results table's
-- threshold (kluabench.table.NOISY_CI_PCT), the one source of it.
M.NOISY_CI_PCT = table_view.NOISY_CI_PCT

--- What each flag of the report's flags column means: the results table's (kluabench.table.FLAGS).
M.FLAGS = {}
for k, v in pairs(table_view.FLAGS) do M.FLAGS[k] = v end

local function us(ms) return ms and string.format('%.2f', ms * 1000) or '' end
local function us_ns(ns) return type(ns) == 'number' and string.format('%.2f', ns / 1000) or '' end
local function pct(r) return r and string.format('%+.1f%%', (r - 1) * 100) or '' end
local function fixed(v, places) return type(v) == 'number' and string.format('%.' .. places .. 'f', v) or '' end

local CSS = [[
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:24px auto;max-width:1280px;color:#1b1f24;padding:0 16px}
h1{font-size:1.6em;margin-bottom:4px}h2{margin-top:32px;border-bottom:1px solid #d0d7de;padding-bottom:4px}
table{border-collapse:collapse;margin:8px 0 16px;font-size:13px}
th,td{border:1px solid #d0d7de;padding:3px 8px;text-align:left;vertical-align:top;overflow-wrap:break-word}
th{background:#f6f8fa}td.num{text-align:right;font-variant-numeric:tabular-nums}
td.num,td.nw{white-space:nowrap}td.digests{word-break:break-all;font-size:12px}
.scroll{overflow-x:auto}
tr.point td{border-bottom:none}tr.fold>td{border-top:none;padding:0 8px 2px 24px}
tr.fold table{margin:2px 0 8px}tr.fold summary{cursor:pointer;color:#57606a;font-size:12px}
tr.regression td{background:#ffebe9}tr.drift td{background:#fff8c5}tr.improvement td{background:#dafbe1}
tr.point.failed td{background:#ffebe9}tr.point.noisy td.ci{background:#fff8c5}
.muted{color:#57606a;font-size:12px}code{font-size:12px}.chart{margin:12px 0}
.chart svg{max-width:100%;height:auto;border:1px solid #eaeef2}
dl.flags{font-size:12px;color:#57606a}dl.flags dt{font-family:monospace;float:left;clear:left;width:6em}
dl.flags dd{margin-left:7em}
]]

-- Measures every chart and table as drawn and writes what it found into the page (data-rendered-*,
-- data-*), so that a headless browser's DOM dump shows that they are there and not blank, that
-- every chart has a legend, and that no number wraps in its cell. It changes nothing a reader sees;
-- opened as report.html#open-all it unfolds the sessions first, so that their cells are measured
-- too.
local SCRIPT = [[
(function () {
  if (location.hash === '#open-all') document.querySelectorAll('details').forEach(function (d) { d.open = true; });
  var charts = document.querySelectorAll('.chart svg'), drawn = 0, legends = 0;
  charts.forEach(function (svg) {
    var box = svg.getBBox(), marks = svg.querySelectorAll('circle, rect, polyline, path, line').length;
    svg.setAttribute('data-rendered-size', Math.round(box.width) + 'x' + Math.round(box.height));
    svg.setAttribute('data-rendered-marks', String(marks));
    if (box.width > 0 && box.height > 0 && marks > 0) drawn++;
    var legend = svg.querySelector('g.legend'), entries = legend ? legend.querySelectorAll('text').length : 0;
    var lbox = legend ? legend.getBBox() : { width: 0, height: 0 };
    svg.setAttribute('data-rendered-legend', String(entries));
    if (entries > 0 && lbox.width > 0 && lbox.height > 0) legends++;
  });
  var tables = Array.prototype.filter.call(document.querySelectorAll('table'), function (t) {
    return !t.closest('details') || t.closest('details').open;
  }), filled = 0;
  tables.forEach(function (t) {
    var rows = t.querySelectorAll(':scope > tbody > tr:not(.fold)').length;
    t.setAttribute('data-rendered-rows', String(rows));
    t.setAttribute('data-rendered-height', String(Math.round(t.getBoundingClientRect().height)));
    if (rows > 0 && t.getBoundingClientRect().height > 0) filled++;
  });
  // a cell wraps when its text's line boxes span more than one line's height
  var cells = 0, wrapped = [];
  tables.forEach(function (t) {
    t.querySelectorAll(':scope > tbody > tr > td.num, :scope > tbody > tr > td.nw').forEach(function (td) {
      var range = document.createRange(), top = Infinity, bottom = -Infinity, line = 0;
      var walk = document.createTreeWalker(td, NodeFilter.SHOW_TEXT), node;
      while ((node = walk.nextNode())) {
        if (!node.data.trim()) continue;
        range.selectNodeContents(node);
        Array.prototype.forEach.call(range.getClientRects(), function (r) {
          if (r.width < 1 || r.height < 1) return;
          top = Math.min(top, r.top); bottom = Math.max(bottom, r.bottom); line = Math.max(line, r.height);
        });
      }
      if (line === 0) return;
      cells++;
      if (bottom - top > 1.5 * line) wrapped.push(td.textContent.trim());
    });
  });
  var b = document.body;
  b.setAttribute('data-viewport-width', String(window.innerWidth));
  b.setAttribute('data-charts-drawn', drawn + '/' + charts.length);
  b.setAttribute('data-charts-with-legend', legends + '/' + charts.length);
  b.setAttribute('data-tables-filled', filled + '/' + tables.length);
  b.setAttribute('data-cells-wrapped', wrapped.length + '/' + cells);
  b.setAttribute('data-wrapped-examples', wrapped.slice(0, 5).join(' | '));
})();
]]

-- A table: columns {key, title, num (a number: right-aligned, never wraps), nw (never wraps), raw
-- (the value is HTML), class, optional (left out when no row has a value)}; rows of values by key,
-- with _id, _class and _after (HTML of a row folded under it, spanning every column).
local function table_html(columns, rows, opts)
  local shown = {}
  for _, c in ipairs(columns) do
    local keep = not c.optional
    for _, r in ipairs(rows) do
      if keep then break end
      keep = r[c.key] ~= nil and r[c.key] ~= ''
    end
    if keep then shown[#shown + 1] = c end
  end
  local out = { '<table' .. (opts and opts.id and (' id="' .. esc(opts.id) .. '"') or '')
    .. (opts and opts.class and (' class="' .. esc(opts.class) .. '"') or '') .. '><thead><tr>' }
  for _, c in ipairs(shown) do out[#out + 1] = '<th>' .. esc(c.title) .. '</th>' end
  out[#out + 1] = '</tr></thead><tbody>'
  for _, r in ipairs(rows) do
    out[#out + 1] = '<tr' .. (r._id and (' id="' .. esc(r._id) .. '"') or '')
      .. (r._class and (' class="' .. esc(r._class) .. '"') or '') .. '>'
    for _, c in ipairs(shown) do
      local v = r[c.key]
      local cell = c.raw and (v or '') or esc(v)
      local classes = {}
      if c.num then classes[#classes + 1] = 'num' end
      if c.nw then classes[#classes + 1] = 'nw' end
      if c.class then classes[#classes + 1] = c.class end
      out[#out + 1] = '<td' .. (#classes > 0 and (' class="' .. table.concat(classes, ' ') .. '"') or '') .. '>'
        .. cell .. '</td>'
    end
    out[#out + 1] = '</tr>'
    if r._after then
      out[#out + 1] = '<tr class="fold"><td colspan="' .. #shown .. '">' .. r._after .. '</td></tr>'
    end
  end
  out[#out + 1] = '</tbody></table>'
  return '<div class="scroll">' .. table.concat(out) .. '</div>'
end

local POINT_COLUMNS = {
  { key = 'point', title = 'point', raw = true }, { key = 'source', title = 'file', optional = true },
  { key = 'provider', title = 'provider' }, { key = 'protocol', title = 'protocol', nw = true },
  { key = 'device', title = 'device' },
  { key = 'median', title = 'median (us)', num = true }, { key = 'p20', title = 'p20 (us)', num = true },
  { key = 'p80', title = 'p80 (us)', num = true },
  { key = 'memory', title = 'peak memory', num = true, optional = true },
  { key = 'sessions', title = 'sessions', num = true }, { key = 'samples', title = 'samples', num = true },
  { key = 'ci', title = 'ci95 ±%', num = true, class = 'ci' },
  { key = 'gbps', title = 'GB/s', num = true, optional = true },
  { key = 'copy', title = 'copy ceiling (GB/s)', num = true, optional = true },
  { key = 'status', title = 'status', nw = true }, { key = 'flags', title = 'flags', nw = true },
}

local SESSION_COLUMNS = {
  { key = 'session', title = 'session', num = true }, { key = 'observed', title = 'observed at', nw = true },
  { key = 'status', title = 'status', nw = true }, { key = 'median', title = 'median (us)', num = true },
  { key = 'p20', title = 'p20 (us)', num = true }, { key = 'p80', title = 'p80 (us)', num = true },
  { key = 'memory', title = 'peak memory', num = true, optional = true },
  { key = 'samples', title = 'samples', num = true }, { key = 'ci', title = 'ci95 ±%', num = true },
  { key = 'gbps', title = 'GB/s', num = true, optional = true },
  { key = 'noise', title = 'between-session noise (sd)', num = true, optional = true },
  { key = 'record', title = 'record', raw = true, nw = true },
}

local CHECK_COLUMNS = {
  { key = 'point', title = 'point', raw = true }, { key = 'provider', title = 'provider' },
  { key = 'device', title = 'device' }, { key = 'status', title = 'status', nw = true },
  { key = 'step', title = 'stepped at', nw = true },
  { key = 'change', title = 'change', num = true }, { key = 'interval', title = 'interval', num = true },
  { key = 'z', title = 'z', num = true }, { key = 'window', title = 'base/post commits', num = true },
  { key = 'note', title = 'note' },
}

local TREND_COLUMNS = {
  { key = 'commit', title = 'commit', nw = true }, { key = 'time', title = 'commit time', nw = true },
  { key = 'sessions', title = 'sessions', num = true }, { key = 'samples', title = 'samples', num = true },
  { key = 'median', title = 'median (us)', num = true }, { key = 'interval', title = '95% interval (us)', num = true },
  { key = 'mark', title = '', nw = true },
}

-- "kernel mode workload-id", as result.label_of says a point.
local function label(p) return table.concat({ p.kernel or '?', p.mode, p.id }, ' ') end

-- A ci95 cell: ± percent of the median, * when the interval says little (its flag).
local function ci_text(ci_pct, flag)
  if type(ci_pct) ~= 'number' then return '' end
  return string.format('%.2f', ci_pct) .. (flag and '*' or '')
end

-- True when a session's stopping rule aimed at a noise target (rse_median) or was interrupted, and
-- did not converge (the results table's !conv).
local function not_converged(s)
  local ex = type(s.evidence) == 'table' and type(s.evidence.execution) == 'table' and s.evidence.execution or {}
  local stop, rule = ex.stop, ex.stopping
  if type(stop) ~= 'table' or stop.converged ~= false then return false end
  if stop.rule == 'rse_median' or stop.rule == 'interrupted' then return true end
  if type(rule) ~= 'table' then return false end
  if rule.rule == 'rse_median' then return true end
  for _, r in ipairs(type(rule.rules) == 'table' and rule.rules or {}) do
    if type(r) == 'table' and r.rule == 'rse_median' then return true end
  end
  return false
end

--- The flags of a measured point (result.points' point), as the results table names them (n<5,
-- !conv, <floor, ci=range, ci~1) and `noisy` (its ci95 wider than ±html.NOISY_CI_PCT %); a list.
--
-- @signature html.flags(point) -> list
-- @example
--   print(table.concat(html.flags({n = 3, ci_pct = 12.5, sessions = {}}), " ")) --> n<5 noisy
function M.flags(p)
  args.check('html.flags', 1, p, 'table', 'point (result.points)')
  local f = {}
  if p.metric ~= 'memory' and type(p.n) == 'number' and p.n < table_view.MIN_SAMPLES then
    f[#f + 1] = 'n<' .. table_view.MIN_SAMPLES
  end
  for _, s in ipairs(p.passed or p.sessions or {}) do
    if not_converged(s) then f[#f + 1] = '!conv' break end
  end
  if p.implausible or (type(p.pct_floor) == 'number' and p.pct_floor > 100 * (1 + table_view.CEILING_SPREAD)) then
    f[#f + 1] = '<floor'
  end
  if p.ci_flag then f[#f + 1] = p.ci_flag end
  if type(p.ci_pct) == 'number' and p.ci_pct > M.NOISY_CI_PCT then f[#f + 1] = 'noisy' end
  return f
end

local function memory_text(v, unit)
  if type(v) ~= 'number' then return nil end
  return string.format('%.1f %s', v, unit == 'mb' and 'MB' or tostring(unit or ''))
end

-- The summary row of a point (its aggregate) and, folded under it, the rows of its sessions;
-- records: the record number of each session, by session.
local function point_rows(i, p, records, several_sources)
  local flags = M.flags(p)
  local srows = {}
  for j, s in ipairs(p.sessions) do
    local ci, cflag = nil, nil
    if s.metric ~= 'memory' then ci, cflag = result.ci_percent(s) end
    local n = records[s]
    srows[j] = { session = string.format('%d/%d', s.session.index, s.session.count), observed = s.observed_at,
      status = s.status or 'no status', median = us_ns(s.median_ns), p20 = us_ns(s.p20_ns), p80 = us_ns(s.p80_ns),
      memory = memory_text(s.memory_median, s.memory_unit), samples = s.n, ci = ci_text(ci, cflag),
      gbps = fixed(s.gbps, 1), noise = s.noise_sd and string.format('%.2f%%', s.noise_sd * 100) or nil,
      record = n and string.format('<a href="#run-%d">#%d</a>', n, n) or '' }
  end
  local count = #p.sessions
  local folded = string.format('<details><summary>%d session%s</summary>%s</details>', count,
    count == 1 and '' or 's', table_html(SESSION_COLUMNS, srows, { class = 'sessions' }))
  local classes = { 'point' }
  if #p.passed == 0 then classes[#classes + 1] = 'failed' end
  for _, f in ipairs(flags) do if f == 'noisy' then classes[#classes + 1] = 'noisy' end end
  return {
    _id = 'point-' .. i, _class = table.concat(classes, ' '), _after = folded,
    point = '<a href="#point-' .. i .. '">' .. esc(label(p)) .. '</a>',
    source = several_sources and p.source or nil, provider = p.provider, protocol = p.protocol, device = p.device,
    median = us_ns(p.median_ns), p20 = us_ns(p.p20_ns), p80 = us_ns(p.p80_ns),
    memory = memory_text(p.memory_median, p.memory_unit),
    sessions = #p.passed == count and tostring(count) or string.format('%d of %d', #p.passed, count),
    samples = p.n, ci = ci_text(p.ci_pct, p.ci_flag),
    gbps = fixed(p.gbps, 1), copy = fixed(p.copy_gbps, 0), status = p.status,
    flags = table.concat(flags, ' '),
  }
end

-- The charts `kluabench plot` would draw: one per kernel and mode, x the
-- parameter that varies (a bar chart where none does), a line per provider
-- (and per protocol and file where they differ).
local function charts(points)
  local groups, order = {}, {}
  for _, p in ipairs(points) do
    local key = tostring(p.kernel) .. ' ' .. tostring(p.mode)
    if not groups[key] then
      groups[key] = {}
      order[#order + 1] = key
    end
    table.insert(groups[key], p)
  end
  local out = {}
  for _, key in ipairs(order) do
    local pts = groups[key]
    local svg, info = plot.chart(pts, { by = 'provider', y = 'us' })
    local drawn = {}
    if svg then
      drawn[1] = { title = key, svg = svg }
    else
      -- several shape parameters vary: a chart along each (plot keeps the
      -- slice of the others where it varies most), as plot --x would
      for _, f in ipairs(plot.varying(pts)) do
        local first = pts[1].params and pts[1].params[f] ~= nil
        if first then
          local s2 = plot.chart(pts, { x = f, by = 'provider', y = 'us' })
          if s2 then drawn[#drawn + 1] = { title = key .. ' over ' .. f, svg = s2 } end
        end
      end
      if #drawn == 0 then
        svg, info = plot.chart(pts, { by = 'provider', bar = true, y = 'us' })
        if svg then drawn[1] = { title = key, svg = svg } end
      end
    end
    if #drawn == 0 then out[#out + 1] = { title = key, note = tostring(info) } end
    for _, d in ipairs(drawn) do
      d.svg = d.svg:gsub('^<%?xml[^>]*>%s*', '')
      out[#out + 1] = d
    end
  end
  return out
end

--- The trend chart of one series: the median per commit with its interval, and the commits where
-- the series stepped marked as their own series ("stepped here").
--
-- trend: history.trend's list; steps: {sha = status} of the commits where it stepped (or nil);
-- title. Returns the SVG.
--
-- @signature html.trend_chart(trend, steps, title) -> svg | nil, message
-- @example
--   local svg = html.trend_chart({{commit = {sha = "aaaaaaa"}, median_ms = 0.1, lo_ms = 0.09, hi_ms = 0.11},
--     {commit = {sha = "bbbbbbb"}, median_ms = 0.12}}, {bbbbbbb = "regression"}, "demo")
function M.trend_chart(trend, steps, title)
  args.check('html.trend_chart', 1, trend, 'table', 'trend (history.trend)')
  args.check('html.trend_chart', 2, steps, 'table|nil', 'table of steps')
  args.check('html.trend_chart', 3, title, 'string|nil', 'title')
  local cats, pts, marked = {}, {}, {}
  for i, t in ipairs(trend) do
    cats[i] = t.commit.sha:sub(1, 7)
    local tip = string.format('commit %s\nmedian %s us%s', t.commit.sha:sub(1, 12), us(t.median_ms),
      t.lo_ms and string.format(' · 95%% interval %s..%s us', us(t.lo_ms), us(t.hi_ms)) or '')
    if t.sessions or t.samples then
      tip = tip .. string.format('\n%s sessions · %s samples', tostring(t.sessions or '?'), tostring(t.samples or '?'))
    end
    pts[i] = { x = i, y = t.median_ms * 1000, lo = t.lo_ms and t.lo_ms * 1000, hi = t.hi_ms and t.hi_ms * 1000,
      tip = tip }
    if steps and steps[t.commit.sha] then
      marked[#marked + 1] = { x = i, y = t.median_ms * 1000,
        tip = tip .. '\nstepped here (' .. steps[t.commit.sha] .. ')' }
    end
  end
  local series = { { name = 'median', points = pts, color = 1 } }
  if #marked > 0 then series[2] = { name = 'stepped here', points = marked, color = 4 } end
  return plot.line_chart { title = title, xlabel = 'commit (oldest first)', ylabel = 'median (us)',
    categories = cats, series = series, width = 900, height = 360 }
end

-- The fields of a table flattened to "a.b.c" = text, sorted (the environment and protocol tables).
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

--- The whole report as HTML text.
--
-- report: title, sources (list of text), generated (time text), points (result.points' points, each
-- with source: the file it came from), plot_points (plot.point_of of each, run = its source),
-- documents ({environment = {{title, spec}}, protocol = {{title, spec}}}: the distinct documents,
-- shown field by field), checks (history.check's result or nil), method, trend_anchor, trends
-- ({{title, anchor, steps = {sha = status}, trend}}). One summary row per point, its sessions folded
-- under it; every session's record under an anchor (#run-N) with its digests.
--
-- @signature html.render(report) -> text
-- @example
--   local text = html.render({title = "empty", sources = {}, points = {}, plot_points = {}})
--   print(#text > 0)
function M.render(r)
  args.check('html.render', 1, r, 'table', 'report table')
  local out = {}
  local function add(s) out[#out + 1] = s end
  local points = r.points or {}
  add('<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">')
  add('<meta name="viewport" content="width=device-width, initial-scale=1">')
  add('<title>' .. esc(r.title) .. '</title><style>' .. CSS .. '</style></head><body>')
  add('<h1>' .. esc(r.title) .. '</h1>')
  add('<p class="muted">' .. esc('generated ' .. (r.generated or '') .. ' by kluabench report from '
    .. table.concat(r.sources or {}, ', ')) .. '</p>')
  add('<nav><a href="#results">results</a> · <a href="#charts">charts</a>'
    .. (r.checks and ' · <a href="#check">regressions</a> · <a href="#trends">trends</a>' or '')
    .. ' · <a href="#environment">environment</a> · <a href="#protocol">protocol</a>'
    .. ' · <a href="#records">records</a></nav>')

  -- the record number of every session, in the order the points list them
  local records, record_list = {}, {}
  for _, p in ipairs(points) do
    for _, s in ipairs(p.sessions) do
      record_list[#record_list + 1] = { session = s, point = p }
      records[s] = #record_list
    end
  end

  -- results
  add('<h2 id="results">Results</h2>')
  add('<p class="muted">One row per point: its aggregate over the sessions that passed (the median is the mean '
    .. 'of their medians, as the results table and compare take it; p20 and p80 of their pooled samples; times in '
    .. 'microseconds, us), how many sessions and samples it has, the 95 % interval of its median (± % of it: of the '
    .. 'samples for one session, over the session medians for several), its status and flags. Its sessions are '
    .. 'folded under it, each linked to its record.</p>')
  local several = #(r.sources or {}) > 1
  local rows, seen_flags = {}, {}
  for i, p in ipairs(points) do
    rows[i] = point_rows(i, p, records, several)
    for f in rows[i].flags:gmatch('%S+') do seen_flags[f] = true end
  end
  add(table_html(POINT_COLUMNS, rows, { id = 'results-table' }))
  local legend = {}
  for f in pairs(seen_flags) do legend[#legend + 1] = f end
  table.sort(legend)
  if #legend > 0 then
    add('<dl class="flags">')
    for _, f in ipairs(legend) do
      add('<dt>' .. esc(f) .. '</dt><dd>' .. esc(M.FLAGS[f] or f) .. '</dd>')
    end
    add('</dl>')
  end

  -- charts
  add('<h2 id="charts">Charts</h2>')
  add('<p class="muted">Each mark is a point\'s median (the mean of its session medians), its bars p20 to p80; '
    .. 'hover a mark for its point, sessions and samples. Protocols and files that differ are lines of their own '
    .. '(dashed after the first).</p>')
  local cs = charts(r.plot_points or {})
  if #cs == 0 then add('<p class="muted">no points to chart</p>') end
  for _, c in ipairs(cs) do
    if c.svg then
      add('<div class="chart"><h3>' .. esc(c.title) .. '</h3>' .. c.svg .. '</div>')
    else
      add('<p class="muted">' .. esc(c.title .. ': ' .. c.note) .. '</p>')
    end
  end

  -- regressions and trends
  if r.checks then
    add('<h2 id="check">Regression check at ' .. esc((r.checks.head or ''):sub(1, 12)) .. '</h2>')
    add('<p class="muted">' .. esc(r.method or '') .. '</p>')
    local crow = {}
    for i, c in ipairs(r.checks.results) do
      local anchor = r.trend_anchor and r.trend_anchor[c.series]
      crow[i] = { _class = c.status, point = anchor and ('<a href="#' .. anchor .. '">' .. esc(c.point) .. '</a>') or esc(c.point),
        provider = c.provider, device = c.device, status = c.status == 'regression' and 'REGRESSION' or c.status,
        step = (c.status ~= 'ok' and c.status ~= 'short' and c.step) and c.step:sub(1, 12) or '',
        change = pct(c.ratio), interval = c.lo and (pct(c.lo) .. '..' .. pct(c.hi)) or '',
        z = c.z and string.format('%.1f', c.z) or '', window = c.base_n and c.base_n > 0 and (c.base_n .. '/' .. c.post_n) or '',
        note = c.note or '' }
    end
    add(table_html(CHECK_COLUMNS, crow, { id = 'check-table' }))
    add('<p><strong>' .. esc(string.format('%d series checked, %d regression(s).', #r.checks.results,
      r.checks.regressions)) .. '</strong></p>')
    add('<h2 id="trends">Trends over commits</h2>')
    for _, t in ipairs(r.trends or {}) do
      add('<section id="' .. esc(t.anchor) .. '"><h3>' .. esc(t.title) .. '</h3>')
      local svg, err = M.trend_chart(t.trend, t.steps, t.title)
      if svg then add('<div class="chart">' .. svg:gsub('^<%?xml[^>]*>%s*', '') .. '</div>')
      else add('<p class="muted">' .. esc(err) .. '</p>') end
      local trows = {}
      for i, e in ipairs(t.trend) do
        local st = t.steps and t.steps[e.commit.sha]
        trows[i] = { _class = st, commit = e.commit.sha:sub(1, 12),
          time = e.commit.committed_at or '', sessions = e.sessions, samples = e.samples, median = us(e.median_ms),
          interval = e.lo_ms and (us(e.lo_ms) .. '..' .. us(e.hi_ms)) or '',
          mark = st and ('stepped here (' .. st .. ')') or '' }
      end
      add(table_html(TREND_COLUMNS, trows))
      add('</section>')
    end
  end

  -- environment and protocol: the distinct documents' fields
  local docs = r.documents or {}
  for _, section in ipairs { { 'environment', 'Environment' }, { 'protocol', 'Protocol' } } do
    add('<h2 id="' .. section[1] .. '">' .. section[2] .. '</h2>')
    for _, d in ipairs(docs[section[1]] or {}) do
      local frows = {}
      for i, f in ipairs(flatten(d.spec, nil, nil, 0)) do frows[i] = { name = f[1], value = f[2] } end
      add('<h3>' .. esc(d.title) .. '</h3>')
      add(table_html({ { key = 'name', title = 'field' }, { key = 'value', title = 'value' } }, frows))
    end
  end

  -- records
  add('<h2 id="records">Records</h2>')
  add('<p class="muted">Each record: its point, when it was observed, its session, and the four digests '
    .. 'the run names its documents by (recompute them with kluabench verify).</p>')
  local rec = {}
  for i, e in ipairs(record_list) do
    local s, d = e.session, e.session.digests or {}
    rec[i] = { _id = 'run-' .. i, n = i, point = esc(label(s)), provider = s.provider, observed = s.observed_at,
      session = string.format('%d/%d', s.session.index, s.session.count), status = s.status or 'no status',
      digests = table.concat({ 'protocol ' .. esc(d.protocol), 'workload ' .. esc(d.workload),
        'environment ' .. esc(d.environment), 'implementation ' .. esc(d.implementation) }, '<br>') }
  end
  add(table_html({ { key = 'n', title = '#', num = true }, { key = 'point', title = 'point', raw = true },
    { key = 'provider', title = 'provider' }, { key = 'observed', title = 'observed at', nw = true },
    { key = 'session', title = 'session', num = true }, { key = 'status', title = 'status', nw = true },
    { key = 'digests', title = 'digests', raw = true, class = 'digests' } }, rec, { id = 'records-table' }))
  add('<script>' .. SCRIPT .. '</script></body></html>\n')
  return table.concat(out, '\n')
end

return M
