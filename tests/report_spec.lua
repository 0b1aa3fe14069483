-- kluabench report's HTML, read as text: one summary row per point (its aggregate, as
-- kluabench.result makes it: the mean of its session medians) with its sessions folded under it,
-- numbers in cells that never wrap, charts with a legend, protocols told apart and every mark's
-- point in a tooltip. tests/report_browser_spec.lua renders it in Chromium.
local sub = require 'helpers.subprocess'
local data = require 'helpers.report_data'
local result = require 'kluabench.result'
local results_table = require 'kluabench.table'
local plot = require 'kluabench.charts.plot'

local run = sub.run

local function count(s, pattern) return select(2, s:gsub(pattern, '')) end

-- The summary row of point i and what is folded under it (the HTML up to the next point's row).
local function point_html(html, i)
  local from = assert(html:find('<tr id="point-' .. i .. '"', 1, true), 'no row of point ' .. i)
  local to = html:find('<tr id="point-' .. (i + 1) .. '"', from, true)
    or html:find('</tbody></table></div>\n', from, true)
  local block = html:sub(from, to - 1)
  local row = block:match('^(<tr .-</tr>)')
  return row, block
end

-- The cells of a row, as text (tags stripped).
local function cells(row)
  local out = {}
  for td in row:gmatch('<td[^>]*>(.-)</td>') do out[#out + 1] = (td:gsub('<[^>]+>', '')) end
  return out
end

local function us(ns) return string.format('%.2f', ns / 1000) end

describe('kluabench report (HTML)', function()
  local dir, file, list, html
  setup(function()
    dir = sub.tmpdir()
    file = dir .. '/runs3.jsonl'
    list = data.write(file)
    local r = run({ 'report', file, '-o', dir .. '/report.html' })
    assert.equal(0, r.code, r.err)
    assert.matches('(12 point(s), 28 run(s), 0 trend(s))', r.err, 1, true)
    html = assert(sub.slurp(dir .. '/report.html'))
  end)
  teardown(function() os.execute('rm -rf ' .. sub.q(dir)) end)

  it('has one summary row per point with its aggregate: the mean of its session medians', function()
    local points = result.points(list)
    assert.equal(12, #points)
    assert.equal(#points, count(html, '<tr id="point%-%d+" class="point'))
    for i, p in ipairs(points) do
      local row, block = point_html(html, i)
      local c = cells(row)
      assert.truthy(c[1]:find(table.concat({ p.kernel, p.mode, p.id }, ' '), 1, true), c[1])
      assert.equal(p.provider, c[2])
      assert.equal(p.protocol, c[3])
      assert.equal(p.device, c[4])
      if #p.passed > 0 then
        assert.equal(us(p.median_ns), c[5], 'point ' .. i)
        assert.equal(us(p.p20_ns), c[6])
        assert.equal(us(p.p80_ns), c[7])
        assert.equal(tostring(p.n), c[9])
        assert.equal(string.format('%.2f', p.ci_pct) .. (p.ci_flag and '*' or ''), c[10])
      else
        assert.equal('', c[5])
      end
      -- its sessions folded under it, each with its own median and a link to its record
      local sessions = count(block, '<tr><td class="num">%d+/%d+</td>')
      assert.equal(#p.sessions, sessions, 'point ' .. i)
      assert.matches(string.format('<details><summary>%d session%s</summary>', #p.sessions,
        #p.sessions == 1 and '' or 's'), block, 1, true)
      for _, s in ipairs(p.sessions) do assert.matches('>' .. us(s.median_ns) .. '<', block, 1, true) end
      if #p.passed == 3 then
        -- three sessions of different speeds: the aggregate is none of theirs, not the last one's
        assert.equal('3', c[8])
        for _, s in ipairs(p.sessions) do assert.not_equal(us(s.median_ns), c[5]) end
        local s = p.sessions
        assert.near((s[1].median_ns + s[2].median_ns + s[3].median_ns) / 3, p.median_ns, 1e-6)
      end
    end
  end)

  it('shows sessions that failed, points without a passed session, and flags noise past 10 %', function()
    local rows = {}
    for i = 1, 12 do rows[i] = cells((point_html(html, i))) end
    local function find(mode, seq, provider, protocol)
      for _, c in ipairs(rows) do
        if c[1]:find(mode .. ' ', 1, true) and c[1]:find('seq' .. seq .. '-', 1, true) and c[2] == provider
          and c[3] == protocol then return c end
      end
      error('no row ' .. mode .. ' ' .. seq .. ' ' .. provider)
    end
    local some_failed = find('backward', 2048, 'fused', 'do_bench')
    assert.equal('2 of 3', some_failed[8])
    assert.equal('incorrect_numerical', some_failed[#some_failed - 1]) -- the failed session's status
    assert.equal('8000.00', some_failed[5]) -- sessions 1 and 2: 7.5 and 8.5 ms
    local none = find('backward', 2048, 'reference', 'do_bench')
    assert.equal('0 of 1', none[8])
    local noisy = find('backward', 4096, 'fused', 'do_bench')
    assert.equal('noisy', noisy[#noisy])
    assert.matches('<tr id="point%-%d+" class="point noisy">', html)
    assert.matches('<dt>noisy</dt><dd>the ci95 is wider than ±10 %', html, 1, true)
    local steady = find('forward', 1024, 'fused', 'do_bench')
    assert.equal('', steady[#steady])
    assert.equal('ci=range', find('forward', 1024, 'fused', 'cold')[#steady])
  end)

  it('keeps numbers and status words on one line: nowrap cells', function()
    assert.matches('td.num,td.nw{white-space:nowrap}', html, 1, true)
    local row = point_html(html, 1)
    assert.equal(7, count(row, '<td class="num[^"]*">')) -- median, p20, p80, sessions, samples, ci95, GB/s
    assert.equal(3, count(row, '<td class="nw">')) -- protocol, status, flags
  end)

  it('draws every chart with a legend, protocols told apart, every mark\'s point in its tooltip', function()
    local charts = 0
    for svg in html:gmatch('<div class="chart"><h3>.-</svg>') do
      charts = charts + 1
      assert.matches('<g class="legend">', svg, 1, true)
    end
    assert.equal(2, charts) -- forward and backward
    assert.matches('>fused · protocol=cold</text>', html, 1, true)
    assert.matches('<polyline [^>]*stroke%-dasharray', html)
    for _, p in ipairs(result.points(list)) do
      if #p.passed > 0 then
        local tip = string.format('<title>llama4_rope %s %s\nprovider %s · protocol %s · %s · file runs3.jsonl\n'
          .. 'median %s us', p.mode, p.id, p.provider, p.protocol, p.device, string.format('%.7g', p.median_ns / 1e3))
        assert.matches(tip, html, 1, true)
        assert.matches(string.format('%d session%s%s · %d samples</title>', #p.sessions,
          #p.sessions == 1 and '' or 's', #p.failed > 0 and string.format(' (%d failed)', #p.failed) or '', p.n),
          html, 1, true)
      end
    end
  end)

  it('shows the aggregate the results table and the plot tooltip show for the same --runs 3 file', function()
    local rows = results_table.results_rows(list)
    local pts = plot.points_from_bundles(list)
    local checked = 0
    for i, p in ipairs(result.points(list)) do
      if #p.passed == 3 then
        local c = cells((point_html(html, i)))
        for _, row in ipairs(rows) do
          if row.workload == p.id and row.provider == p.provider and row.mode == p.mode and row.protocol == p.protocol then
            assert.equal(3, row.sessions)
            assert.equal(us(row.median_ns), c[5])
            checked = checked + 1
          end
        end
        for _, cp in ipairs(pts) do
          if cp.id == p.id and cp.provider == p.provider and cp.mode == p.mode and cp.protocol == p.protocol then
            assert.matches('median ' .. string.format('%.7g', p.median_ns / 1e6) .. ' ms', plot.tooltip(cp), 1, true)
            assert.equal(string.format('%.2f', cp.y50 * 1000), c[5])
          end
        end
      end
    end
    assert.equal(7, checked) -- 6 forward points and the noisy backward one
  end)

  it('lists every session\'s record under an anchor with its digests, and the documents', function()
    assert.equal(28, count(html, '<tr id="run%-%d+">'))
    for _, b in ipairs(list) do
      assert.matches(b.run.spec.workloadDigest, html, 1, true)
    end
    assert.matches('<h3>NVIDIA H200 on ', html, 1, true)
    assert.matches('<h3>kluabench-cold-forward (sha256:', html, 1, true)
  end)

  it('keeps the points of several files apart, naming the file', function()
    local other = dir .. '/again.jsonl'
    data.write(other)
    local out = dir .. '/two.html'
    local r = run({ 'report', file, other, '-o', out })
    assert.equal(0, r.code, r.err)
    assert.matches('(24 point(s), 56 run(s)', r.err, 1, true)
    local two = assert(sub.slurp(out))
    assert.matches('<th>file</th>', two, 1, true)
    assert.matches('>' .. other .. '</td>', two, 1, true)
    assert.matches('fused · run=again.jsonl', two, 1, true)
  end)
end)
