-- Charts: reading results (Liger CSV, record bundles as JSON and JSON
-- Lines), tick arithmetic, grouping and slicing, the SVG itself (which
-- rsvg-convert must render), and the `kluabench plot` command's exit codes.
local kb = require 'kluabench'
local plot = require 'kluabench.report.plot'
local liger = require 'kluabench.record.liger'
local output = require 'kluabench.report'
local util = require 'helpers.util'

local ROOT = package.searchpath('kluabench.report.plot', package.path):match('^(.-)/?stdlib/kluabench/report/plot%.lua$')
if ROOT == '' then ROOT = '.' end
local CSV = ROOT .. '/tests/data/plot/llama4_rope_liger.csv'

local slurp = util.slurp

local spit = util.spit

local function quote(s) return "'" .. tostring(s):gsub("'", "'\\''") .. "'" end

-- `kluabench plot ARGS...`: exit code, stdout, stderr.
local function kluabench(args)
  local out, err = os.tmpname(), os.tmpname()
  local words = { quote(kb.executable()) }
  for _, a in ipairs(args) do words[#words + 1] = quote(a) end
  local ok, _, code = os.execute(table.concat(words, ' ') .. ' >' .. out .. ' 2>' .. err)
  local o, e = slurp(out), slurp(err)
  os.remove(out)
  os.remove(err)
  return ok and 0 or code, o, e
end

local function count(s, pattern) return select(2, s:gsub(pattern, '')) end

-- Bundles of every row of the CSV, as import-liger makes them.
local function bundles_of_csv()
  local rows = assert(liger.read(CSV))
  local out = {}
  for _, row in ipairs(rows) do out[#out + 1] = assert(liger.row_to_bundle(row)) end
  return out
end

describe('plot ticks', function()
  it('steps by 1, 2 or 5 times a power of ten and covers the range', function()
    assert.same({ 0, 0.2, 0.4, 0.6, 0.8, 1 }, (plot.nice_ticks(0, 0.93)))
    assert.same({ 0, 1, 2, 3, 4, 5, 6 }, (plot.nice_ticks(0, 5.2)))
    assert.same({ 0, 5000, 10000, 15000, 20000 }, (plot.nice_ticks(1024, 16384)))
    assert.same({ -2, 0, 2, 4, 6, 8 }, (plot.nice_ticks(-2, 7)))
    local t = plot.nice_ticks(3, 3) -- a single value still gets an axis
    assert.is_true(t[1] < 3 and t[#t] > 3)
  end)

  it('puts log ticks on decades, adding 2 and 5 over short ranges', function()
    assert.same({ 1, 10, 100, 1000, 10000, 100000, 1000000 }, plot.log_ticks(1, 1e6))
    assert.same({ 0.05, 0.1, 0.2, 0.5, 1, 2 }, plot.log_ticks(0.03, 2))
    assert.same({ 0.12, 0.14, 0.16, 0.18 }, plot.log_ticks(0.11, 0.19))
  end)

  it('labels ticks briefly', function()
    assert.equal('0.25', plot.format_tick(0.25))
    assert.equal('2048', plot.format_tick(2048))
    assert.equal('100k', plot.format_tick(100000))
    assert.equal('1.5M', plot.format_tick(1.5e6))
    assert.equal('-0.5', plot.format_tick(-0.5))
    assert.equal('0.0000001', plot.format_tick(1e-7))
  end)
end)

describe('plot data', function()
  it('reads Liger CSV into points with our names', function()
    local pts = assert(plot.read(CSV))
    assert.equal(38, #pts)
    local p = pts[1]
    assert.equal('llama4_rope', p.kernel)
    assert.equal('liger', p.provider)
    assert.equal('forward', p.mode)
    assert.equal('speed', p.metric)
    assert.equal('ms', p.unit)
    assert.equal('bf16', p.dtype)
    assert.equal('NVIDIA H100 80GB HBM3', p.gpu)
    assert.same({ hidden = 512, seq = 2048, q_heads = 32, kv_heads = 8 }, p.params)
    assert.equal(0.05, p.y50)
    assert.equal(0.0485, p.y20)
    assert.equal(0.052, p.y80)
    assert.equal('hidden size', p.x_labels.hidden)
  end)

  it('reads the same points from record bundles, as JSON Lines and as a JSON array', function()
    local from_csv = assert(plot.read(CSV))
    local bundles = bundles_of_csv()
    local jsonl, json = os.tmpname(), os.tmpname()
    local lines = {}
    for i, b in ipairs(bundles) do lines[i] = assert(output.encode_line(b)) end
    spit(jsonl, table.concat(lines, '\n') .. '\n')
    spit(json, output.encode_pretty(bundles))
    for _, path in ipairs { jsonl, json } do
      local pts = assert(plot.read(path))
      assert.equal(#from_csv, #pts)
      for i, p in ipairs(pts) do
        for _, f in ipairs { 'kernel', 'mode', 'provider', 'metric', 'unit', 'dtype', 'gpu', 'y50', 'y20', 'y80' } do
          assert.equal(from_csv[i][f], p[f], string.format('point %d field %s', i, f))
        end
        assert.same(from_csv[i].params, p.params)
      end
    end
    os.remove(jsonl)
    os.remove(json)
  end)

  it('reads a single bundle, falling back to the externalId for what the workload lacks', function()
    local b = bundles_of_csv()[1]
    b.workload, b.implementation = nil, nil
    local p = assert(plot.point_from_bundle(b))
    assert.equal('llama4_rope', p.kernel)
    assert.equal('forward', p.mode)
    assert.equal('liger', p.provider)
    assert.equal('bf16', p.dtype)
    assert.same({ hidden = 512, kv_heads = 8, q_heads = 32, seq = 2048 }, p.params)
  end)

  it('reports unreadable and malformed files with their place', function()
    local pts, err = plot.read('/nonexistent/results.jsonl')
    assert.is_nil(pts)
    assert.truthy(err:find('/nonexistent/results.jsonl', 1, true))
    local bad = os.tmpname()
    spit(bad, '{"run": {"spec": {}}}\n{"run": \n')
    pts, err = plot.read(bad)
    assert.is_nil(pts)
    assert.truthy(err:find(bad .. ':', 1, true), err)
    spit(bad, '{"kind": "nothing"}\n')
    pts, err = plot.read(bad)
    assert.is_nil(pts)
    assert.truthy(err:find('not a record bundle', 1, true), err)
    os.remove(bad)
  end)

  it('filters by fields and parameters, under our names or Liger\'s', function()
    local pts = assert(plot.read(CSV))
    -- the seq sweep's 1024 and 2048, and the hidden sweep (all at seq 2048), for both providers
    assert.equal(10, #plot.filter(pts, { plot.parse_filter('mode=forward'), plot.parse_filter('T=1024,2048') }))
    assert.equal(4, #plot.filter(pts, { plot.parse_filter('provider=liger'), plot.parse_filter('metric=speed'),
      plot.parse_filter('mode=backward'), plot.parse_filter('seq_len=2048') }))
    assert.is_nil((plot.parse_filter('mode')))
  end)

  it('keeps the slice where x varies most, and splits lines by names that differ', function()
    local pts = plot.filter(assert(plot.read(CSV)), { plot.parse_filter('metric=speed') })
    local kept, notes = plot.slice(pts, 'seq', 'provider')
    for _, p in ipairs(kept) do assert.equal(8192, p.params.hidden) end
    assert.truthy(notes[1]:find('kept hidden=8192', 1, true))
    local g = plot.group(kept, { x = 'seq', by = 'provider' })
    assert.same({ 'mode' }, g.split)
    assert.same({ 1024, 2048, 4096, 8192, 16384 }, g.xs)
    assert.equal(4, #g.series)
    assert.equal('liger · mode=forward', g.series[1].name)
    for _, s in ipairs(g.series) do
      assert.equal(5, #s.points)
      for i = 2, #s.points do assert.is_true(s.points[i].params.seq > s.points[i - 1].params.seq) end
    end
    -- hidden 8192 at seq 2048 is in both of Liger's sweeps: the repeat is counted, the last kept
    assert.equal(4, g.duplicates)
  end)

  it('guesses x when one parameter varies, and asks when several do', function()
    local pts = plot.filter(assert(plot.read(CSV)), { plot.parse_filter('metric=speed'),
      plot.parse_filter('seq=2048') , plot.parse_filter('mode=forward') })
    local hidden_sweep = plot.filter(pts, { plot.parse_filter('hidden=512,2048') })
    assert.equal('hidden', plot.guess_x(hidden_sweep))
    local all = plot.filter(assert(plot.read(CSV)), { plot.parse_filter('metric=speed') })
    local x, err = plot.guess_x(all)
    assert.is_nil(x)
    assert.equal('several parameters vary (hidden, seq): choose one with --x', err)
  end)
end)

describe('plot SVG', function()
  local function series()
    return {
      { name = 'fused', points = { { x = 1024, y = 0.1, lo = 0.09, hi = 0.12 }, { x = 4096, y = 0.3, lo = 0.28, hi = 0.33 } } },
      { name = 'ref & <eager>', points = { { x = 1024, y = 0.25 }, { x = 4096, y = 0.9, lo = 0.85, hi = 0.95 } } },
    }
  end

  it('draws one line per series with error bars, axes, title and legend', function()
    local svg = assert(plot.line_chart { series = series(), title = 'RoPE "fwd"', xlabel = 'seq', ylabel = 'ms' })
    assert.truthy(svg:match('^<svg xmlns="http://www.w3.org/2000/svg" width="800" height="480"'))
    assert.truthy(svg:match('</svg>\n$'))
    assert.equal(2, count(svg, '<polyline '))
    assert.equal(4, count(svg, '<circle ') - 2) -- 4 points + 2 legend markers
    assert.truthy(svg:find('>RoPE &quot;fwd&quot;</text>', 1, true))
    assert.truthy(svg:find('>ref &amp; &lt;eager&gt;</text>', 1, true))
    assert.truthy(svg:find('>seq</text>', 1, true))
    -- error bars: 3 lines each (bar and two caps) for the 3 points that have lo and hi
    local bars = 0
    for g in svg:gmatch('<g class="series".-</g>') do bars = bars + count(g, '<line ') end
    assert.equal(9, bars)
  end)

  it('refuses log axes over values that are not positive', function()
    local s = series()
    s[1].points[1].x = 0
    local svg, err = plot.line_chart { series = s, logx = true }
    assert.is_nil(svg)
    assert.truthy(err:find('log x axis needs positive values', 1, true))
  end)

  it('draws bars for a single x value, labelled with the series names', function()
    local pts = plot.filter(assert(plot.read(CSV)), { plot.parse_filter('mode=backward'),
      plot.parse_filter('hidden=512'), plot.parse_filter('metric=speed') })
    local svg, info = plot.chart(pts, {})
    assert.truthy(svg, info)
    assert.equal('bar', info.kind)
    assert.equal(2, count(svg, '<rect [^>]*fill%-opacity="0.85"'))
    assert.truthy(svg:find('>liger</text>', 1, true))
    assert.truthy(svg:find('>huggingface</text>', 1, true))
    assert.truthy(svg:find('hidden 512', 1, true)) -- the one x value is in the subtitle
  end)

  it('renders with rsvg-convert', function()
    if not os.execute('command -v rsvg-convert >/dev/null 2>&1') then
      return pending('rsvg-convert is not installed (Debian: librsvg2-bin)')
    end
    local pts = assert(plot.read(CSV))
    for _, opts in ipairs {
      { x = 'seq', logx = true, logy = true },
      { x = 'hidden', bar = true },
      { x = 'mode', title = 'modes & <providers>' },
    } do
      local svg = assert(plot.chart(plot.filter(pts, { plot.parse_filter('metric=speed') }), opts))
      local path, png = os.tmpname(), os.tmpname()
      spit(path, svg)
      assert.is_true(os.execute(string.format('rsvg-convert %s -o %s', quote(path), quote(png))))
      assert.equal('\137PNG', (slurp(png) or ''):sub(1, 4))
      os.remove(path)
      os.remove(png)
    end
  end)
end)

describe('kluabench plot', function()
  local svg = os.tmpname()
  after_each(function() os.remove(svg) end)

  it('writes the chart and says so on stderr', function()
    local code, out, err = kluabench { 'plot', CSV, '--x', 'seq', '--by', 'provider', '--logx', '-o', svg }
    assert.equal(0, code, err)
    assert.equal('', out)
    assert.truthy(err:find('wrote ' .. svg .. ' (line chart, 4 lines, 20 points)', 1, true), err)
    assert.truthy(err:find('note: lines split by mode', 1, true), err)
    assert.truthy((slurp(svg) or ''):match('^<svg'))
  end)

  it('writes to stdout with -o -', function()
    local code, out = kluabench { 'plot', CSV, '--filter', 'mode=forward', '--filter', 'hidden=512', '--filter',
      'metric=speed', '-o', '-' }
    assert.equal(0, code)
    assert.truthy(out:match('^<svg'))
  end)

  it('exits 2 on usage errors', function()
    for _, args in ipairs {
      { 'plot', CSV },                                   -- no -o
      { 'plot', '-o', svg },                             -- no results
      { 'plot', CSV, '--bogus', '-o', svg },             -- unknown option
      { 'plot', CSV, '--y', 'parsecs', '-o', svg },      -- unknown unit
      { 'plot', CSV, '--x', 'nonesuch', '-o', svg },     -- unknown field
      { 'plot', CSV, '--filter', 'mode', '-o', svg },    -- filter without =
      { 'plot', CSV, '--width', '12', '-o', svg },       -- too small
      { 'plot', CSV, '--filter', 'metric=speed', '-o', svg }, -- x cannot be guessed
    } do
      local code, _, err = kluabench(args)
      assert.equal(2, code, table.concat(args, ' ') .. '\n' .. err)
      assert.truthy(err:find('^kluabench plot: '), err)
    end
  end)

  it('exits 1 on data it cannot plot', function()
    local bad = os.tmpname()
    spit(bad, 'this is not json\n')
    for _, args in ipairs {
      { 'plot', '/nonexistent.jsonl', '-o', svg },
      { 'plot', bad, '-o', svg },
      { 'plot', CSV, '--filter', 'mode=sideways', '-o', svg },
    } do
      local code, _, err = kluabench(args)
      assert.equal(1, code, table.concat(args, ' ') .. '\n' .. err)
    end
    os.remove(bad)
  end)

  it('explains itself with --help', function()
    local code, out = kluabench { 'plot', '--help' }
    assert.equal(0, code)
    assert.truthy(out:find('--filter KEY=V[,V]', 1, true))
  end)
end)
