-- scripts/validate_ncu.lua report: the agreement rule of docs/MEASUREMENT.md
-- on synthetic inputs with known answers (the measure and ncu halves need
-- the GPU machine: scripts/validate_ncu.sh runs them).
local sub = require 'helpers.subprocess'

local HEADER = '"ID","Kernel Name","Metric Name","Metric Unit","Metric Value"\n'

-- ncu's CSV for `calls` calls of one kernel of `ns` each, tagged as the
-- shell script tags it.
local function ncu_csv(tag, calls, ns)
  local t = { '# ' .. tag .. '\n', '==PROF== Connected to process 1\n', HEADER }
  for i = 1, calls do
    t[#t + 1] = string.format('"%d","void k<1>(int)","gpu__time_duration.sum","ns","%s"\n', i - 1,
      ns >= 1000 and string.format('%d,%03d', ns // 1000, ns % 1000) or tostring(ns))
  end
  return table.concat(t)
end

local function rows(o)
  local enc = function(t)
    local parts = {}
    for k, v in pairs(t) do
      parts[#parts + 1] = string.format('%q:%s', k, type(v) == 'string' and string.format('%q', v) or tostring(v))
    end
    return '{' .. table.concat(parts, ',') .. '}'
  end
  local base = { size = 'small', impl = 'fused' }
  local function with(extra)
    local t = {}
    for k, v in pairs(base) do t[k] = v end
    for k, v in pairs(extra) do t[k] = v end
    return enc(t)
  end
  return table.concat({
    with { mode = 'cold', rep = 1, median_ms = o.cold, ci_lo_ms = o.cold - 0.0001, ci_hi_ms = o.cold + 0.0001,
      event_pair_ms = not o.no_pair and o.pair or nil, minus_pair_ms = not o.no_pair and o.cold - o.pair or nil,
      sm_mhz = 1980 },
    with { mode = 'cold', rep = 2, median_ms = o.cold, event_pair_ms = o.pair, minus_pair_ms = o.cold - o.pair },
    with { mode = 'cold_traced', median_ms = o.cold, kernels = 1, kernel_sum_ms = o.sum, kernel_span_ms = o.span },
    with { mode = 'graph', median_ms = o.graph or o.sum, launches = o.launches or 20 },
  }, '\n') .. '\n'
end

local function report(o)
  local dir = sub.tmpdir()
  sub.spit(dir .. '/kb.jsonl', rows(o))
  local csv = ncu_csv('small fused', 3, o.ncu_ns)
  if o.ncu_graph_ns then
    -- a kernel before the graph replays (the inputs' randn), then the replays
    csv = '# small fused graph\n' .. ncu_csv('x y', 1, 900):gsub('# x y\n', '')
      .. ncu_csv('z w', o.ncu_graph_rows or 4, o.ncu_graph_ns):gsub('# z w\n', '') .. csv
  end
  sub.spit(dir .. '/ncu.csv', csv)
  local r = sub.run({ sub.root() .. '/scripts/validate_ncu.lua', 'report', '--kb', dir .. '/kb.jsonl',
    '--ncu', dir .. '/ncu.csv', '--calls', '3', '--graph-calls', '4' })
  os.execute('rm -rf ' .. sub.q(dir))
  return r
end

describe('validate_ncu report', function()
  it('passes when the cold median minus the event pair is within 1 us of ncu', function()
    -- ncu 4.8 us; cold 6.35 us, pair 1.31 us -> 5.04 us (+5.0 %, 0.24 us)
    local r = report { ncu_ns = 4800, sum = 0.0035, span = 0.0035, cold = 0.00635, pair = 0.00131 }
    assert.equal(0, r.code, r.out .. r.err)
    assert.matches('| small | fused | 1 | 4.80 | 6.35 | 1.31 | 5.04 | +5.0% | +32.3% | 3.50 | 3.50 | -27.1% |',
      r.out, 1, true)
    assert.matches('PASS (tol 1.00 us)', r.out, 1, true)
    assert.matches('0 of the points failed', r.out)
  end)

  it('fails beyond max(5 %, 1 us), and says by how much it may differ', function()
    local r = report { ncu_ns = 4800, sum = 0.0048, span = 0.0048, cold = 0.00751, pair = 0.00131 }
    assert.equal(1, r.code)
    assert.matches('FAIL: cold - pair vs ncu > 1.00 us', r.out, 1, true)
    assert.matches('1 of the points failed', r.out)
    -- 5 % of 40 us is 2 us: 41.9 us passes, 42.1 us does not
    assert.equal(0, report { ncu_ns = 40000, sum = 0.04, span = 0.04, cold = 0.0432, pair = 0.0013 }.code)
    local far = report { ncu_ns = 40000, sum = 0.04, span = 0.04, cold = 0.0434, pair = 0.0013 }
    assert.equal(1, far.code)
    assert.matches('FAIL: cold - pair vs ncu > 2.00 us', far.out, 1, true)
  end)

  it('shows the graph mode beside ncu\'s time of the whole graph, per launch, without judging it', function()
    -- 49 launches, ncu 166.6 us a replay = 3.40 us a launch; graph mode 3.45 us
    local base = { ncu_ns = 4800, sum = 0.0048, span = 0.0048, cold = 0.00611, pair = 0.00131,
      launches = 49, ncu_graph_ns = 166600 }
    base.graph = 0.00345
    local r = report(base)
    assert.equal(0, r.code, r.out)
    assert.matches('| 3.45 | 3.40 | +1.5% |', r.out, 1, true)
    base.graph = 0.00445
    r = report(base)
    assert.equal(0, r.code, r.out)
    assert.matches('| 4.45 | 3.40 | +30.9% |', r.out, 1, true)
    -- ncu that profiled every kernel instead of the graph gives no number
    base.graph, base.launches, base.ncu_graph_ns, base.ncu_graph_rows = 0.00345, 2, 3400, 8
    r = report(base)
    assert.matches('| 3.45 | n/a | n/a |', r.out, 1, true)
  end)

  it('fails a point without the event-pair calibration', function()
    local r = report { ncu_ns = 4800, sum = 0.0048, span = 0.0048, cold = 0.00635, pair = 0.00131, no_pair = true }
    assert.equal(1, r.code)
    assert.matches('no event-pair calibration', r.out, 1, true)
  end)
end)
