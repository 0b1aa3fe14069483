-- kluabench report in a real browser: headless Chromium (Debian's chromium)
-- loads the report from disk at 1400 px, and the test fails on any console
-- message (shown to be caught by a control page that logs an error and one
-- that throws) and checks from the rendered DOM (--dump-dom) that the tables
-- and charts are there and not blank, that every chart has a legend and that
-- no cell wraps a number: the report's inline script writes what it measured
-- after layout (getBBox of each chart and its legend, the height of each
-- table, the line boxes of each numeric cell) into the page; a control page
-- whose cells are forced narrow shows that the wrap check sees a wrap. A
-- screenshot at 1400 px is taken too (KLUABENCH_REPORT_SCREENSHOT=FILE keeps
-- it). Pending, with the reason, where chromium is not installed (make deps
-- installs it).
local sub = require 'helpers.subprocess'
local data = require 'helpers.history_data'
local report_data = require 'helpers.report_data'
local util = require 'helpers.util'

local run, q = sub.run, sub.q

-- The width the report is checked at.
local WIDTH = 1400

local function chromium()
  for _, name in ipairs { 'chromium', 'chromium-browser', 'google-chrome' } do
    local path = util.run('command -v ' .. name .. ' 2>/dev/null'):match('^(%S+)')
    if path then return path end
  end
  return nil
end

local function chromium_command(browser, dir, height)
  return string.format('HOME=%s timeout 120 %s --headless --no-sandbox --disable-gpu --no-first-run --hide-scrollbars '
    .. '--user-data-dir=%s --window-size=%d,%d', q(dir), q(browser), q(dir .. '/profile'), WIDTH, height or 900)
end

-- The rendered DOM of file (at 1400 px; fragment: "#open-all" unfolds the sessions) and what the
-- browser logged: with --enable-logging=stderr --v=0, Chromium (156) writes every console message,
-- of any level, and every uncaught exception as an INFO:CONSOLE line.
local function render(browser, file, dir, fragment)
  local log = dir .. '/chromium.log'
  local cmd = chromium_command(browser, dir) .. string.format(' --enable-logging=stderr --v=0 '
    .. '--virtual-time-budget=5000 --dump-dom %s 2> %s', q('file://' .. file .. (fragment or '')), q(log))
  local dom = util.run(cmd)
  return dom, sub.slurp(log) or ''
end

-- A screenshot of file at 1400 px wide; its PNG's width and height.
local function screenshot(browser, file, dir, png)
  local cmd = chromium_command(browser, dir, 2400) .. string.format(' --screenshot=%s %s >/dev/null 2>&1', q(png),
    q('file://' .. file))
  util.run(cmd)
  local bytes = sub.slurp(png) or ''
  if bytes:sub(1, 8) ~= '\137PNG\r\n\26\n' then return nil end
  return string.unpack('>I4', bytes, 17), string.unpack('>I4', bytes, 21)
end

local function console_lines(log)
  local out = {}
  for line in log:gmatch('[^\n]+') do
    if line:find('CONSOLE', 1, true) then out[#out + 1] = line end
  end
  return out
end

describe('kluabench report in headless Chromium', function()
  local browser = chromium()
  local dir
  before_each(function() dir = sub.tmpdir() end)
  after_each(function() run({ '-e', 'os.execute("rm -rf ' .. dir .. '")' }) end)

  it('the console check catches what it is there for: a console.error and an uncaught throw', function()
    if not browser then return pending('chromium is not installed (make deps installs it)') end
    -- the controls go through render and console_lines as the reports do: if Chromium stopped
    -- logging console messages to stderr, the reports' empty lists would prove nothing
    local pages = {
      ['error.html'] = { "console.error('control: console error')", '"control: console error"' },
      ['throw.html'] = { "throw new Error('control: uncaught')", '"Uncaught Error: control: uncaught"' },
    }
    for name, page in pairs(pages) do
      local file = dir .. '/' .. name
      sub.spit(file, '<!doctype html><html><body><p>control</p><script>' .. page[1] .. '</script></body></html>\n')
      local dom, log = render(browser, file, dir)
      assert.matches('<p>control</p>', dom, 1, true) -- the page was loaded and rendered
      local lines = console_lines(log)
      assert.equal(1, #lines, name .. ': ' .. log)
      assert.matches(page[2], lines[1], 1, true)
    end
  end)

  it('a results file: tables with units, the charts plot draws, records with digests; no console message', function()
    if not browser then return pending('chromium is not installed (make deps installs it)') end
    local f = data.SESSION
    local out = dir .. '/report.html'
    local r = run({ 'report', f, '-o', out })
    assert.equal(0, r.code, r.err)
    local html = assert(sub.slurp(out))
    -- self-contained: nothing is fetched
    assert.is_nil(html:find('src="http', 1, true))
    assert.is_nil(html:find('<link', 1, true))
    local dom, log = render(browser, out, dir)
    assert.same({}, console_lines(log))
    local drawn, total = dom:match('data%-charts%-drawn="(%d+)/(%d+)"')
    assert.is_truthy(drawn, 'the inline script did not run')
    assert.is_true(tonumber(total) >= 1)
    assert.equal(total, drawn)
    local filled, tables = dom:match('data%-tables%-filled="(%d+)/(%d+)"')
    assert.equal(tables, filled)
    -- the results table: 3 rows (fused, reference, copy), drawn with a height
    local rows, height = dom:match('<table id="results%-table" data%-rendered%-rows="(%d+)" '
      .. 'data%-rendered%-height="(%d+)"')
    assert.equal('3', rows)
    assert.is_true(tonumber(height) > 100)
    assert.matches('median (us)', dom, 1, true)
    assert.matches('id="run-3"', dom, 1, true)
    -- an H200 point on kernelindex's own workload
    assert.matches('sha256:98c5e76b9fa318ddeea51b56d90bc6fb39d72e404e2d01dbb467e67f57ff63e8', dom, 1, true)
    for size, marks in dom:gmatch('data%-rendered%-size="(%d+x%d+)" data%-rendered%-marks="(%d+)"') do
      local w, h = size:match('(%d+)x(%d+)')
      assert.is_true(tonumber(w) > 200 and tonumber(h) > 100, size)
      assert.is_true(tonumber(marks) > 10, marks)
    end
  end)

  it('a --runs 3 file at 1400 px: no cell wraps a number, every chart has a legend; a screenshot', function()
    if not browser then return pending('chromium is not installed (make deps installs it)') end
    local f = dir .. '/runs3.jsonl'
    report_data.write(f)
    local out = dir .. '/runs3.html'
    local r = run({ 'report', f, '-o', out })
    assert.equal(0, r.code, r.err)
    -- the sessions unfolded, so that their cells are measured too
    local dom, log = render(browser, out, dir, '#open-all')
    assert.same({}, console_lines(log))
    assert.equal(tostring(WIDTH), dom:match('data%-viewport%-width="(%d+)"'))
    local wrapped, cells = dom:match('data%-cells%-wrapped="(%d+)/(%d+)"')
    assert.is_truthy(wrapped, 'the inline script did not run')
    -- every point's summary row and its sessions' rows: 12 points, 28 sessions
    assert.is_true(tonumber(cells) > 12 * 7 + 28 * 8, cells)
    assert.equal('0', wrapped, dom:match('data%-wrapped%-examples="([^"]*)"'))
    local legends, charts = dom:match('data%-charts%-with%-legend="(%d+)/(%d+)"')
    assert.equal('2', charts)
    assert.equal(charts, legends)
    local drawn, total = dom:match('data%-charts%-drawn="(%d+)/(%d+)"')
    assert.equal(total, drawn)
    local filled, tables = dom:match('data%-tables%-filled="(%d+)/(%d+)"')
    assert.equal(tables, filled)
    -- one summary row per point in the results table
    assert.equal('12', dom:match('<table id="results%-table" data%-rendered%-rows="(%d+)"'))
    local png = os.getenv('KLUABENCH_REPORT_SCREENSHOT') or (dir .. '/runs3.png')
    local w, h = screenshot(browser, out, dir, png)
    assert.equal(WIDTH, w, 'no screenshot at ' .. WIDTH .. ' px')
    assert.is_true(h >= 900)
  end)

  it('the wrap and legend checks catch what they are there for: a forced wrap, a chart without a legend', function()
    if not browser then return pending('chromium is not installed (make deps installs it)') end
    local f = dir .. '/runs3.jsonl'
    report_data.write(f)
    local out = dir .. '/control.html'
    local r = run({ 'report', f, '-o', out })
    assert.equal(0, r.code, r.err)
    local html = assert(sub.slurp(out))
    -- the old report's cells: breakable anywhere, in a table too narrow for its numbers
    html = html:gsub('</style>', '#results-table{table-layout:fixed;width:400px}'
      .. 'td.num,td.nw{white-space:normal!important;word-break:break-all}</style>', 1)
    local n
    html, n = html:gsub('<g class="legend">', '<g class="no-legend">', 1)
    assert.equal(1, n)
    sub.spit(out, html)
    local dom = render(browser, out, dir)
    local wrapped = tonumber(dom:match('data%-cells%-wrapped="(%d+)/%d+"'))
    assert.is_true(wrapped > 0, 'a forced wrap was not seen')
    assert.equal('1/2', dom:match('data%-charts%-with%-legend="([^"]+)"'))
  end)

  it('a history: the regression check and the trend with the step marked', function()
    if not browser then return pending('chromium is not installed (make deps installs it)') end
    local db = dir .. '/h.db'
    for i = 1, 12 do
      local f = string.format('%s/c%02d.jsonl', dir, i)
      local noise = 1 + 0.004 * math.sin(i * 2.1)
      data.write(f, data.session(i, { fused = 6200 * noise * (i >= 10 and 1.08 or 1), copy = 5000 * noise }, { seed = i }))
      local r = run({ 'history', 'add', f, '--db', db, '--commit', string.format('%02x%038x', i, 7),
        '--parents', i > 1 and string.format('%02x%038x', i - 1, 7) or '',
        '--commit-time', string.format('2026-11-%02dT12:00:00Z', i) })
      assert.equal(0, r.code, r.err)
    end
    local out = dir .. '/history.html'
    local r = run({ 'report', '--db', db, '-o', out })
    assert.equal(0, r.code, r.err)
    assert.matches('1 regression(s)', r.err, 1, true)
    local dom, log = render(browser, out, dir)
    assert.same({}, console_lines(log))
    local drawn, total = dom:match('data%-charts%-drawn="(%d+)/(%d+)"')
    assert.equal(total, drawn)
    assert.is_true(tonumber(total) >= 3) -- the chart of the head's runs and two trends
    assert.matches('<tr class="regression">', dom, 1, true)
    assert.matches('REGRESSION', dom, 1, true)
    assert.matches('stepped here (regression)', dom, 1, true)
    -- the check's note, as history check prints it
    assert.matches('the sentinel (copy) did not step (', dom, 1, true)
    assert.matches(string.format('%02x%038x', 10, 7):sub(1, 12), dom, 1, true)
    -- the trend chart draws the marked commit as its own series
    assert.matches('data-name="stepped here"', dom, 1, true)
  end)
end)
