-- Charts: reading results (Liger CSV, record bundles as JSON and JSON
-- Lines), tick arithmetic, grouping and slicing, the SVG itself (which
-- rsvg-convert must render), and the `kluabench plot` command's exit codes.
local kb = require 'kluabench'
local plot = require 'kluabench.charts.plot'
local liger = require 'kluabench.liger'
local json = require 'kluabench.util.json'
local util = require 'helpers.util'
local bundles = require 'helpers.bundles'
local writer = require 'kluabench.record.writer'
local result = require 'kluabench.result'
local cold = require 'kluabench.measure.cold'

local ROOT = package.searchpath('kluabench.charts.plot', package.path):match('^(.-)/?stdlib/kluabench/charts/plot%.lua$')
if ROOT == '' then ROOT = '.' end
local CSV = ROOT .. '/tests/fixtures/plot/llama4_rope_liger.csv'

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
  for _, row in ipairs(rows) do out[#out + 1] = assert(liger.row_to_bundle(row, { keep = true })) end
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
    -- a bundle file's point is a measured point: the rows of one workload (hidden 8192 at seq 2048 is
    -- in both of Liger's sweeps) are its sessions, its median their mean; every other point is its row
    local from_csv = assert(plot.read(CSV))
    local rows_of, order = {}, {}
    for _, p in ipairs(from_csv) do
      local key = table.concat({ p.kernel, p.mode, p.provider, p.metric, p.id }, '|')
      if not rows_of[key] then rows_of[key] = {}; order[#order + 1] = key end
      table.insert(rows_of[key], p)
    end
    assert.equal(34, #order)
    local bundles = bundles_of_csv()
    local jsonl, pretty = os.tmpname(), os.tmpname()
    local lines = {}
    for i, b in ipairs(bundles) do lines[i] = assert(json.encode_line(b)) end
    spit(jsonl, table.concat(lines, '\n') .. '\n')
    spit(pretty, json.encode_pretty(bundles))
    for _, path in ipairs { jsonl, pretty } do
      local pts = assert(plot.read(path))
      assert.equal(#order, #pts)
      for i, p in ipairs(pts) do
        local rows = rows_of[order[i]]
        local what = string.format('point %d (%s)', i, order[i])
        assert.is_table(rows, what)
        for _, f in ipairs { 'kernel', 'mode', 'provider', 'protocol', 'metric', 'unit', 'dtype', 'gpu', 'id' } do
          assert.equal(rows[1][f], p[f], what .. ' field ' .. f)
        end
        assert.same(rows[1].params, p.params)
        assert.equal(#rows, p.sessions, what)
        -- records keep times in whole ns: half a ns (in ms) apart at most
        local tol = p.metric == 'speed' and 0.5e-6 or 1e-12
        local mean = 0
        for _, r in ipairs(rows) do mean = mean + r.y50 / #rows end
        assert.near(mean, p.y50, tol, what)
        if #rows == 1 or p.metric ~= 'speed' then
          local m20, m80 = 0, 0
          for _, r in ipairs(rows) do m20, m80 = m20 + r.y20 / #rows, m80 + r.y80 / #rows end
          assert.near(m20, p.y20, tol, what)
          assert.near(m80, p.y80, tol, what)
        else
          -- two sessions without raw samples: no pooled p20/p80 to draw
          assert.is_nil(p.y20, what)
        end
      end
    end
    os.remove(jsonl)
    os.remove(pretty)
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

  it('draws bars for a single x value, labelled with the series names, and a legend', function()
    local pts = plot.filter(assert(plot.read(CSV)), { plot.parse_filter('mode=backward'),
      plot.parse_filter('hidden=512'), plot.parse_filter('metric=speed') })
    local svg, info = plot.chart(pts, {})
    assert.truthy(svg, info)
    assert.equal('bar', info.kind)
    local bars = 0
    for g in svg:gmatch('<g class="series".-</g>') do bars = bars + count(g, '<rect [^>]*fill%-opacity="0.85"') end
    assert.equal(2, bars)
    local legend = assert(svg:match('<g class="legend">(.-)</g>'))
    assert.equal(2, count(legend, '<rect '))
    assert.truthy(legend:find('>liger</text>', 1, true))
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
      { 'plot', '/nonexistent.jsonl', '-o', svg },       -- a RESULTS file that does not exist
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

-- A record bundle (tests/helpers/bundles.lua) for the overlay and throughput tests: one point of
-- provider `provider` at seq `seq`, every sample `ms` (p20/p80 at 0.9/1.2 x with extra.spread), on
-- an H100; extra: gbps (the record's own throughput), bytes, kernel.
local function tiny_bundle(provider, seq, ms, extra)
  extra = extra or {}
  local samples = { ms, ms, ms }
  if extra.spread then -- 11 samples: the 20th and 80th percentiles fall on ranks 2 and 8 exactly
    samples = { ms * 0.9, ms * 0.9, ms * 0.9, ms, ms, ms, ms, ms, ms * 1.2, ms * 1.2, ms * 1.2 }
  end
  return bundles.make { kernel = extra.kernel, provider = provider, seq = seq, samples = samples,
    device = 'NVIDIA H100', bytes = extra.bytes, throughput = extra.gbps and { gbps = extra.gbps } or false }
end

local function write_bundles(path, list)
  os.remove(path)
  for _, b in ipairs(list) do assert(writer.append(path, b)) end
end

describe('plot overlays, throughput and safe text', function()
  local dir
  before_each(function() dir = util.tmpdir() end)
  after_each(function() os.execute('rm -rf ' .. quote(dir)) end)

  it('names each file as a run, telling apart files of the same name by their path', function()
    assert.same({ 'a.jsonl', 'b.jsonl' }, plot.run_names { '/x/a.jsonl', 'y/b.jsonl' })
    assert.same({ '/x/a.jsonl', '/y/a.jsonl', 'c.csv' }, plot.run_names { '/x/a.jsonl', '/y/a.jsonl', 'c.csv' })
    write_bundles(dir .. '/base.jsonl', { tiny_bundle('fused', 1024, 0.1) })
    local pts = assert(plot.read(dir .. '/base.jsonl'))
    assert.equal('base.jsonl', pts[1].run)
    assert.equal('base.jsonl', plot.field(pts[1], 'run'))
    assert.equal('mine', assert(plot.read(dir .. '/base.jsonl', 'mine'))[1].run)
  end)

  it('overlays runs with --by provider,run: one colour per provider, one dash pattern per run', function()
    local base, new = {}, {}
    for _, seq in ipairs { 1024, 2048, 4096 } do
      base[#base + 1] = tiny_bundle('fused', seq, seq / 1e4)
      base[#base + 1] = tiny_bundle('reference', seq, seq / 2e3)
      new[#new + 1] = tiny_bundle('fused', seq, seq / 2e4)
      new[#new + 1] = tiny_bundle('reference', seq, seq / 2e3)
    end
    write_bundles(dir .. '/base.jsonl', base)
    write_bundles(dir .. '/new.jsonl', new)
    local pts = assert(plot.read(dir .. '/base.jsonl'))
    for _, p in ipairs(assert(plot.read(dir .. '/new.jsonl'))) do pts[#pts + 1] = p end
    local svg, info = plot.chart(pts, { x = 'seq', by = { 'provider', 'run' } })
    assert.truthy(svg, info)
    assert.equal(4, info.series)
    local by_name = {}
    for _, s in ipairs(info.data) do by_name[s.name] = s end
    for _, name in ipairs { 'fused · base.jsonl', 'fused · new.jsonl', 'reference · base.jsonl', 'reference · new.jsonl' } do
      assert.is_table(by_name[name], name)
    end
    assert.equal(by_name['fused · base.jsonl'].color, by_name['fused · new.jsonl'].color)
    assert.not_equal(by_name['fused · base.jsonl'].color, by_name['reference · base.jsonl'].color)
    assert.not_equal(by_name['fused · base.jsonl'].dash, by_name['fused · new.jsonl'].dash)
    assert.equal(2, count(svg, '<polyline [^>]*stroke%-dasharray')) -- the two lines of the second run
    assert.near(0.1024 / 2, by_name['fused · new.jsonl'].points[1].y, 1e-12)
    -- through the command: several files, the run in --by
    local out = dir .. '/ab.svg'
    local code, _, err = kluabench { 'plot', dir .. '/base.jsonl', dir .. '/new.jsonl', '--x', 'seq',
      '--by', 'provider,run', '-o', out }
    assert.equal(0, code, err)
    assert.truthy(err:find('(line chart, 4 lines, 12 points)', 1, true), err)
    assert.truthy((slurp(out) or ''):find('>fused · new.jsonl</text>', 1, true))
  end)

  it('splits lines by run on its own only where two runs would share a line and an x', function()
    write_bundles(dir .. '/ours.jsonl', { tiny_bundle('fused', 1024, 0.1), tiny_bundle('fused', 2048, 0.2) })
    write_bundles(dir .. '/peers.jsonl', { tiny_bundle('liger', 1024, 0.3), tiny_bundle('liger', 2048, 0.5) })
    write_bundles(dir .. '/again.jsonl', { tiny_bundle('fused', 1024, 0.11), tiny_bundle('fused', 2048, 0.21) })
    local function read_all(names)
      local pts = {}
      for _, n in ipairs(names) do
        for _, p in ipairs(assert(plot.read(dir .. '/' .. n))) do pts[#pts + 1] = p end
      end
      return pts
    end
    local _, info = plot.chart(read_all { 'ours.jsonl', 'peers.jsonl' }, { x = 'seq' })
    assert.same({ 'fused', 'liger' }, { info.data[1].name, info.data[2].name })
    assert.same({}, info.split)
    _, info = plot.chart(read_all { 'ours.jsonl', 'again.jsonl' }, { x = 'seq' })
    assert.same({ 'run' }, info.split)
    assert.equal(0, info.duplicates)
    assert.equal('fused · run=ours.jsonl', info.data[1].name)
  end)

  it('draws throughput: the record\'s own at the median, else bytes over the median, bars at p80 and p20', function()
    -- kernel k has no cost model: the bytes are the bundle's, and no flops
    local own = tiny_bundle('fused', 1024, 0.002, { gbps = 123, kernel = 'k' })
    local from_bytes = tiny_bundle('fused', 2048, 0.004, { bytes = 8e6, kernel = 'k', spread = true })
    local pts = { assert(plot.point_from_bundle(own)), assert(plot.point_from_bundle(from_bytes)) }
    local svg, info = plot.chart(pts, { x = 'seq', y = 'gbps' })
    assert.truthy(svg, info)
    local p1, p2 = info.data[1].points[1], info.data[1].points[2]
    assert.equal(123, p1.y)
    assert.near(8e6 / (0.004 * 1e6), p2.y, 1e-9)  -- 2000 GB/s
    assert.near(0.004 * 1.2, pts[2].y80, 1e-12)
    assert.near(p2.y * pts[2].y50 / pts[2].y80, p2.lo, 1e-9) -- at the p80 time
    assert.near(p2.y * pts[2].y50 / pts[2].y20, p2.hi, 1e-9) -- at the p20 time
    -- the tooltip names what was drawn: the throughput and the median it is of
    assert.truthy(p2.tip:find('2000 GB/s at the median', 1, true), p2.tip)
    assert.truthy(p2.tip:find('median 0.004 ms', 1, true), p2.tip)
    assert.truthy(info.ylabel:find('GB/s', 1, true))
    assert.truthy(svg:find('throughput (GB/s)', 1, true))
    _, info = plot.chart(pts, { x = 'seq', y = 'tflops' })
    assert.is_nil(_)
    assert.truthy(info:find('no point has the flops', 1, true), info)
    -- Liger CSV rows get the kernel's cost model
    local csv = plot.filter(assert(plot.read(CSV)), { plot.parse_filter('metric=speed'),
      plot.parse_filter('mode=forward'), plot.parse_filter('hidden=8192') })
    svg, info = plot.chart(csv, { x = 'seq', y = 'tflops' })
    assert.truthy(svg, info)
    assert.is_true(info.data[1].points[1].y > 0)
  end)

  it('rejects an unknown --by field, listing the known ones', function()
    local pts = assert(plot.read(CSV))
    local svg, err, why = plot.chart(pts, { x = 'seq', by = { 'provider', 'nonesuch' } })
    assert.is_nil(svg)
    assert.equal('usage', why)
    assert.truthy(err:find("no point has the --by field 'nonesuch' (fields: ", 1, true), err)
    assert.truthy(err:find('provider', 1, true))
    assert.truthy(err:find('run', 1, true))
    local code, _, stderr = kluabench { 'plot', CSV, '--x', 'seq', '--by', 'provider,nonesuch', '-o', dir .. '/x.svg' }
    assert.equal(2, code)
    assert.truthy(stderr:find("no point has the --by field 'nonesuch'", 1, true), stderr)
    code = kluabench { 'plot', CSV, '--x', 'seq', '--y', 'furlongs', '-o', dir .. '/x.svg' }
    assert.equal(2, code)
  end)

  it('writes valid XML whatever bytes the titles and labels hold', function()
    assert.equal('a\239\191\189b\239\191\189c', plot.xml_text('a\1b\255c'))
    assert.equal('tab\tok é ✓', plot.xml_text('tab\tok é ✓'))
    assert.equal('\239\191\189', plot.xml_text('\239\191\190')) -- U+FFFE
    assert.equal(string.rep('\239\191\189', 3), plot.xml_text('\237\160\128')) -- an encoded surrogate: 3 bad bytes
    local nasty = 'bad\0 \27[31m \255\254 \192\175 & <x> "q" ü'
    local series = { { name = nasty, points = { { x = 1, y = 1 }, { x = 2, y = 2 } } } }
    for _, svg in ipairs {
      assert(plot.line_chart { series = series, title = nasty, subtitle = nasty, xlabel = nasty, ylabel = nasty }),
      assert(plot.bar_chart { series = { { name = nasty, points = { { x = 1, y = 1 } } } }, categories = { nasty },
        title = nasty }),
    } do
      assert.is_number(utf8.len(svg), 'not UTF-8')
      assert.is_nil(svg:find('[%z\1-\8\11\12\14-\31]'), 'a control character XML forbids')
      assert.is_nil(svg:find('\239\191[\190\191]'), 'U+FFFE or U+FFFF')
      assert.truthy(svg:find('&amp; &lt;x&gt; &quot;q&quot; ü', 1, true))
      if os.execute('command -v rsvg-convert >/dev/null 2>&1') then
        local path, png = dir .. '/nasty.svg', dir .. '/nasty.png'
        spit(path, svg)
        assert.is_true(os.execute(string.format('rsvg-convert %s -o %s 2>/dev/null', quote(path), quote(png))))
      end
    end
  end)
end)

-- Sessions of different speeds (a sweep with --runs 3): session i of each seq takes speeds[i] x
-- seq/1024 ms, five samples around it; cold: a point of the cold protocol beside each.
local function runs3_bundles(speeds, opts)
  opts = opts or {}
  local out = {}
  for _, seq in ipairs { 1024, 2048 } do
    local list = bundles.sessions(#speeds, function(i)
      local m = speeds[i] * seq / 1024
      return { m * 0.98, m * 0.99, m, m * 1.01, m * 1.02 }
    end, { seq = seq, provider = opts.provider })
    table.move(list, 1, #list, #out + 1, out)
    if opts.cold then
      out[#out + 1] = bundles.make { seq = seq, provider = opts.provider, protocol = cold.make {},
        samples = { 9, 9.1, 9.2, 8.9, 9 } }
    end
  end
  return out
end

-- The <title> of every mark (circle or rect) inside the series groups of an SVG, in order (a mark
-- without one leaves a hole), and the number of marks.
local function mark_titles(svg)
  local titles, marks = {}, 0
  for g in svg:gmatch('<g class="series".-\n</g>') do
    local at = 1
    while true do
      local s, e, tag = g:find('<(%a+) [^>]->', at)
      if not s then break end
      at = e + 1
      if tag == 'circle' or tag == 'rect' then
        marks = marks + 1
        if g:sub(e - 1, e) ~= '/>' then
          local close = assert(g:find('</' .. tag .. '>', e, true))
          titles[marks] = g:sub(e + 1, close - 1):match('^<title>(.-)</title>$')
          at = close
        end
      end
    end
  end
  return titles, marks
end

describe('plot of measured points (kluabench.result)', function()
  local dir
  before_each(function() dir = util.tmpdir() end)
  after_each(function() os.execute('rm -rf ' .. quote(dir)) end)

  it('draws one mark per point of a --runs 3 file: the mean of its session medians, not the last session', function()
    local list = runs3_bundles { 1, 2, 6 }
    write_bundles(dir .. '/runs3.jsonl', list)
    local expected = result.points(list)
    assert.equal(2, #expected)
    local out = dir .. '/runs3.svg'
    local code, _, err = kluabench { 'plot', dir .. '/runs3.jsonl', '-o', out }
    assert.equal(0, code, err)
    assert.truthy(err:find('(line chart, 1 line, 2 points)', 1, true), err)
    assert.is_nil(err:find('repeat a line', 1, true), err)
    local svg = assert(slurp(out))
    local titles, marks = mark_titles(svg)
    assert.equal(2, marks)
    assert.equal(2, #titles)
    for i, rp in ipairs(expected) do
      local t = titles[i]
      assert.near(3 * rp.params.seq / 1024 * 1e6, rp.median_ns, 1e-3) -- (1 + 2 + 6) / 3, not 6
      assert.truthy(t:find(string.format('median %s ms (the mean of 3 session medians)', string.format('%.7g',
        rp.median_ns / 1e6)), 1, true), t)
      assert.truthy(t:find(string.format('p20 %s ms · p80 %s ms', string.format('%.7g', rp.p20_ns / 1e6),
        string.format('%.7g', rp.p80_ns / 1e6)), 1, true), t)
      assert.truthy(t:find('3 sessions · 15 samples', 1, true), t)
      assert.truthy(t:find('llama4_rope forward ' .. rp.id, 1, true), t)
      assert.truthy(t:find('provider fused · protocol do_bench', 1, true), t)
    end
    -- the drawn y is the aggregate too
    local pts = assert(plot.read(dir .. '/runs3.jsonl'))
    local _, info = plot.chart(pts, { x = 'seq' })
    assert.near(3, info.data[1].points[1].y, 1e-9)
    assert.near(6, info.data[1].points[2].y, 1e-9)
    assert.equal(3, info.data[1].points[1].sessions)
    assert.equal(0, info.duplicates)
  end)

  it('tells protocols apart: a line per protocol, dashed after the first, named in the legend and tooltips', function()
    local list = runs3_bundles({ 1, 1.1, 0.9 }, { cold = true })
    write_bundles(dir .. '/mixed.jsonl', list)
    local pts = assert(plot.read(dir .. '/mixed.jsonl'))
    assert.same({ 'do_bench', 'cold' }, plot.distinct(pts, 'protocol'))
    local svg, info = plot.chart(pts, { x = 'seq' })
    assert.truthy(svg, info)
    assert.same({ 'protocol' }, info.split)
    assert.same({ 'fused · protocol=do_bench', 'fused · protocol=cold' }, { info.data[1].name, info.data[2].name })
    assert.equal(info.data[1].color, info.data[2].color)
    assert.not_equal(info.data[1].dash, info.data[2].dash)
    local legend = assert(svg:match('<g class="legend">(.-)</g>'))
    assert.truthy(legend:find('>fused · protocol=cold</text>', 1, true))
    assert.equal(1, count(legend, 'stroke%-dasharray'))
    local titles = mark_titles(svg)
    assert.equal(4, #titles)
    assert.truthy(titles[3]:find('protocol cold', 1, true), titles[3])
    assert.truthy(titles[3]:find('1 session · 5 samples', 1, true), titles[3])
    -- --filter and --by know the field
    assert.equal(2, #plot.filter(pts, { plot.parse_filter('protocol=cold') }))
    local _, by = plot.chart(pts, { x = 'seq', by = { 'provider', 'protocol' } })
    assert.same({}, by.split)
    assert.equal('fused · cold', by.data[2].name)
    -- one protocol: the subtitle names it
    svg = assert(plot.chart(plot.filter(pts, { plot.parse_filter('protocol=cold') }), { x = 'seq' }))
    assert.truthy(svg:find('protocol cold', 1, true))
  end)

  it('leaves out, with a note, a point no session of which passed; draws the passed sessions of the others', function()
    local list = runs3_bundles { 1, 2, 3 }
    list[#list + 1] = bundles.make { seq = 4096, samples = { 1, 1, 1 }, status = 'failed',
      reasons = { 'check failed' } }
    list[3] = bundles.make { seq = 1024, samples = { 50, 50, 50 }, session = { 3, 3 }, status = 'failed',
      reasons = { 'check failed' } }
    write_bundles(dir .. '/some_failed.jsonl', list)
    local pts, notes = assert(plot.read(dir .. '/some_failed.jsonl'))
    assert.equal(2, #pts)
    assert.equal(1, #notes)
    assert.truthy(notes[1]:find('1 point left out: no session passed', 1, true), notes[1])
    assert.truthy(notes[1]:find('seq4096', 1, true), notes[1])
    assert.near(1.5, pts[1].y50, 1e-9) -- sessions 1 and 2; the failed third is not averaged
    local _, info = plot.chart(pts, { x = 'seq' })
    assert.truthy(info.data[1].points[1].tip:find('3 sessions (1 failed) · 10 samples', 1, true),
      info.data[1].points[1].tip)
    local out = dir .. '/f.svg'
    local code, _, err = kluabench { 'plot', dir .. '/some_failed.jsonl', '-o', out }
    assert.equal(0, code, err)
    assert.truthy(err:find('note: ' .. dir .. '/some_failed.jsonl: 1 point left out', 1, true), err)
  end)

  it('gives every mark of a Liger CSV chart its row in a tooltip', function()
    local pts = plot.filter(assert(plot.read(CSV)), { plot.parse_filter('metric=speed'),
      plot.parse_filter('mode=forward'), plot.parse_filter('hidden=8192') })
    local svg, info = plot.chart(pts, { x = 'seq' })
    assert.truthy(svg, info)
    local titles, marks = mark_titles(svg)
    assert.equal(info.points, marks)
    assert.equal(marks, #titles)
    assert.truthy(titles[1]:find('llama4_rope forward hidden8192-', 1, true), titles[1])
    assert.truthy(titles[1]:find('provider liger · protocol do_bench · NVIDIA H100 80GB HBM3', 1, true), titles[1])
    assert.truthy(titles[1]:find('one row of a Liger CSV: no session or sample count', 1, true), titles[1])
    assert.truthy(titles[1]:find('median ' .. string.format('%.7g', info.data[1].points[1].y) .. ' ms', 1, true),
      titles[1])
  end)
end)
