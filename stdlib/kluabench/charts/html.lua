--- A static HTML report: one self-contained file (inline CSS, inline SVG
-- charts drawn by kluabench.charts.plot, a few lines of inline script that
-- only measure what was drawn) that opens from disk with no network.
--
-- The report is built from plain tables that the caller gathers (the
-- `kluabench report` command: rows from result files or a history query,
-- trends and check results from kluabench.history), so this file reads no
-- record and no database. Every record has an anchor (#run-N) that the
-- tables link to, with its four digests beside it.
local plot = require 'kluabench.charts.plot'

local M = {}
local args = require 'kluabench.util.args'

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

local function us(ms) return ms and string.format('%.2f', ms * 1000) or '' end
local function pct(r) return r and string.format('%+.1f%%', (r - 1) * 100) or '' end

local CSS = [[
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:24px auto;max-width:1280px;color:#1b1f24;padding:0 16px}
h1{font-size:1.6em;margin-bottom:4px}h2{margin-top:32px;border-bottom:1px solid #d0d7de;padding-bottom:4px}
table{border-collapse:collapse;margin:8px 0 16px;font-size:13px}
th,td{border:1px solid #d0d7de;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#f6f8fa}td.num{text-align:right;font-variant-numeric:tabular-nums}
tr.regression td{background:#ffebe9}tr.drift td{background:#fff8c5}tr.improvement td{background:#dafbe1}
.muted{color:#57606a;font-size:12px}code{font-size:12px}.chart{margin:12px 0}
.chart svg{max-width:100%;height:auto;border:1px solid #eaeef2}
td code,td{word-break:break-word}
]]

-- Measures every chart and table as drawn and writes the sizes into the
-- page (data-rendered-*), so that a headless browser's DOM dump shows that
-- they are there and not blank. It changes nothing a reader sees.
local SCRIPT = [[
(function () {
  var charts = document.querySelectorAll('.chart svg'), drawn = 0;
  charts.forEach(function (svg) {
    var box = svg.getBBox(), marks = svg.querySelectorAll('circle, rect, polyline, path, line').length;
    svg.setAttribute('data-rendered-size', Math.round(box.width) + 'x' + Math.round(box.height));
    svg.setAttribute('data-rendered-marks', String(marks));
    if (box.width > 0 && box.height > 0 && marks > 0) drawn++;
  });
  var tables = document.querySelectorAll('table'), filled = 0;
  tables.forEach(function (t) {
    var rows = t.querySelectorAll('tbody tr').length;
    t.setAttribute('data-rendered-rows', String(rows));
    t.setAttribute('data-rendered-height', String(Math.round(t.getBoundingClientRect().height)));
    if (rows > 0 && t.getBoundingClientRect().height > 0) filled++;
  });
  document.body.setAttribute('data-charts-drawn', drawn + '/' + charts.length);
  document.body.setAttribute('data-tables-filled', filled + '/' + tables.length);
})();
]]

local function table_html(columns, rows, opts)
  local out = { '<table' .. (opts and opts.id and (' id="' .. esc(opts.id) .. '"') or '') .. '><thead><tr>' }
  for _, c in ipairs(columns) do out[#out + 1] = '<th>' .. esc(c.title) .. '</th>' end
  out[#out + 1] = '</tr></thead><tbody>'
  for _, r in ipairs(rows) do
    out[#out + 1] = '<tr' .. (r._id and (' id="' .. esc(r._id) .. '"') or '')
      .. (r._class and (' class="' .. esc(r._class) .. '"') or '') .. '>'
    for _, c in ipairs(columns) do
      local v = r[c.key]
      local cell = c.raw and (v or '') or esc(v)
      out[#out + 1] = '<td' .. (c.num and ' class="num"' or '') .. '>' .. cell .. '</td>'
    end
    out[#out + 1] = '</tr>'
  end
  out[#out + 1] = '</tbody></table>'
  return table.concat(out)
end

local RESULT_COLUMNS = {
  { key = 'point', title = 'point', raw = true }, { key = 'provider', title = 'provider' },
  { key = 'median', title = 'median (us)', num = true }, { key = 'p20', title = 'p20 (us)', num = true },
  { key = 'p80', title = 'p80 (us)', num = true }, { key = 'samples', title = 'samples', num = true },
  { key = 'session', title = 'session', num = true }, { key = 'noise', title = 'between-session noise (sd)', num = true },
  { key = 'gbps', title = 'GB/s', num = true }, { key = 'copy', title = 'copy ceiling (GB/s)', num = true },
  { key = 'device', title = 'device' }, { key = 'protocol', title = 'protocol' },
}

local CHECK_COLUMNS = {
  { key = 'point', title = 'point', raw = true }, { key = 'provider', title = 'provider' }, { key = 'device', title = 'device' },
  { key = 'status', title = 'status' }, { key = 'step', title = 'stepped at' }, { key = 'change', title = 'change', num = true },
  { key = 'interval', title = 'interval', num = true }, { key = 'z', title = 'z', num = true },
  { key = 'window', title = 'base/post commits', num = true }, { key = 'note', title = 'note' },
}

local TREND_COLUMNS = {
  { key = 'commit', title = 'commit' }, { key = 'time', title = 'commit time' },
  { key = 'sessions', title = 'sessions', num = true }, { key = 'samples', title = 'samples', num = true },
  { key = 'median', title = 'median (us)', num = true }, { key = 'interval', title = '95% interval (us)', num = true },
  { key = 'mark', title = '' },
}

-- The charts `kluabench plot` would draw: one per kernel and mode, x the
-- parameter that varies (a bar chart where none does), a line per provider.
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
    pts[i] = { x = i, y = t.median_ms * 1000, lo = t.lo_ms and t.lo_ms * 1000, hi = t.hi_ms and t.hi_ms * 1000 }
    if steps and steps[t.commit.sha] then marked[#marked + 1] = { x = i, y = t.median_ms * 1000 } end
  end
  local series = { { name = 'median', points = pts, color = 1 } }
  if #marked > 0 then series[2] = { name = 'stepped here', points = marked, color = 4 } end
  return plot.line_chart { title = title, xlabel = 'commit (oldest first)', ylabel = 'median (us)',
    categories = cats, series = series, width = 900, height = 360 }
end

--- The whole report as HTML text.
--
-- report: title, sources (list of text), generated (time text), rows (point.summary of each
-- bundle), plot_points (plot.point_from_bundle of each), checks (history.check's result or nil),
-- trends ({{title, anchor, steps = {sha = status}, trend}}). Every record row links to its anchor with its
-- digests.
--
-- @signature html.render(report) -> text
-- @example
--   local text = html.render({title = "empty", sources = {}, rows = {}, plot_points = {}})
--   print(#text > 0)
function M.render(r)
  args.check('html.render', 1, r, 'table', 'report table')
  local out = {}
  local function add(s) out[#out + 1] = s end
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

  -- results
  add('<h2 id="results">Results</h2>')
  add('<p class="muted">Times in microseconds (us): the median of the raw samples, and their 20th and 80th '
    .. 'percentiles; samples: raw samples of the session; noise: the between-session noise in force (the sd '
    .. 'of log session median, as a percentage); GB/s: the workload\'s minimal traffic over the median.</p>')
  local rows = {}
  for i, s in ipairs(r.rows or {}) do
    rows[i] = { point = '<a href="#run-' .. i .. '">' .. esc(s.label) .. '</a>', provider = s.provider,
      median = us(s.median_ms), p20 = us(s.p20_ms), p80 = us(s.p80_ms), samples = s.samples,
      session = string.format('%d/%d', s.session.index, s.session.count),
      noise = s.noise_sd and string.format('%.2f%%', s.noise_sd * 100) or '',
      gbps = s.gbps and string.format('%.1f', s.gbps) or '', copy = s.copy_gbps and string.format('%.0f', s.copy_gbps) or '',
      device = s.device, protocol = s.protocol }
  end
  add(table_html(RESULT_COLUMNS, rows, { id = 'results-table' }))

  -- charts
  add('<h2 id="charts">Charts</h2>')
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
  local function docs_section(id, title, field, name_of)
    add('<h2 id="' .. id .. '">' .. title .. '</h2>')
    local seen = {}
    for _, s in ipairs(r.rows or {}) do
      local key = name_of(s)
      if not seen[key] then
        seen[key] = true
        local frows = {}
        for i, f in ipairs(s[field]) do frows[i] = { name = f[1], value = f[2] } end
        add('<h3>' .. esc(key) .. '</h3>')
        add(table_html({ { key = 'name', title = 'field' }, { key = 'value', title = 'value' } }, frows))
      end
    end
  end
  docs_section('environment', 'Environment', 'environment', function(s)
    return s.device .. ' on ' .. s.host .. ' (' .. s.digests.environment:sub(1, 19) .. ')'
  end)
  docs_section('protocol', 'Protocol', 'protocol_fields', function(s)
    return s.protocol .. ' (' .. s.digests.protocol:sub(1, 19) .. ')'
  end)

  -- records
  add('<h2 id="records">Records</h2>')
  add('<p class="muted">Each record: its point, when it was observed, its session, and the four digests '
    .. 'the run names its documents by (recompute them with kluabench verify).</p>')
  local rec = {}
  for i, s in ipairs(r.rows or {}) do
    rec[i] = { _id = 'run-' .. i, n = i, point = esc(s.label), provider = s.provider, observed = s.observed_at,
      session = string.format('%d/%d', s.session.index, s.session.count),
      digests = table.concat({ 'protocol ' .. esc(s.digests.protocol), 'workload ' .. esc(s.digests.workload),
        'environment ' .. esc(s.digests.environment), 'implementation ' .. esc(s.digests.implementation) },
        '<br>') }
  end
  add(table_html({ { key = 'n', title = '#', num = true }, { key = 'point', title = 'point', raw = true },
    { key = 'provider', title = 'provider' }, { key = 'observed', title = 'observed at' },
    { key = 'session', title = 'session', num = true }, { key = 'digests', title = 'digests', raw = true } },
    rec, { id = 'records-table' }))
  add('<script>' .. SCRIPT .. '</script></body></html>\n')
  return table.concat(out, '\n')
end

return M
