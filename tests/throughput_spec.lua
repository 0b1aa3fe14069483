-- Throughput in records (issue 5): the throughput measurements and the
-- evidence's throughput of the bundles scripts/llama4_rope.lua writes,
-- recomputed here from the bundle's own median and bytes against a ceiling
-- cache the test writes; what a bundle without a ceiling says; the GB/s and
-- % of copy columns.
local kb = require 'kluabench'
local record = kb.record
local results = require 'kluabench.table'
local sub = require 'helpers.subprocess'
local verify = require 'kluabench.record.verify'
local calibrate = require 'kluabench.measure.calibrate'

local ROOT = sub.root()
local COPY_GBPS = 12.5 -- the ceiling the test caches for the cpu device

-- One tiny point on the cpu backend: head_dim 128 / 32 = 4, 64 positions.
local POINT = { '--hidden', '128', '--seq', '64', '--rep-ms', '5', '--warmup-ms', '1', '--provider', 'fused' }

-- Runs llama4_rope.lua for POINT and `mode` with KLUABENCH_CACHE = cache;
-- returns the bundle and the table it printed.
local function rope_point(dir, cache, mode)
  local out = dir .. '/' .. mode .. '.jsonl'
  local args = { '--backend', 'cpu', ROOT .. '/scripts/llama4_rope.lua', '--mode', mode, '--out', out }
  for _, a in ipairs(POINT) do args[#args + 1] = a end
  local r = sub.run(args, { env = { KLUABENCH_CACHE = cache } })
  assert.equal(0, r.code, r.err)
  local b = assert(kb.reader.read(out))[1]
  assert.same({}, verify.check(b)) -- the throughput leaves the digests alone
  return b, r.out
end

-- Stores COPY_GBPS for the cpu device in cache/ceilings.json through the
-- binary on the cpu backend, so the key is the one the script looks up.
local function cache_ceiling(cache)
  local r = sub.run({ '--backend', 'cpu', '-e', string.format(
    'local kb = require "kluabench"; assert(require("kluabench.measure.calibrate").store(kb.device_info(), { copy_gbps = %.17g }))',
    COPY_GBPS) }, { env = { KLUABENCH_CACHE = cache } })
  assert.equal(0, r.code, r.err)
end

-- The throughput a bundle must carry, recomputed from its own fields.
local function expected(b, copy_gbps)
  local ms = b.run.spec.sourceNative.metrics.ms_50
  local ws = kb.result.session(b)
  local gbps = ws.bytes / (ms * 1e6)
  local t = { gbps = gbps, tflops = ws.flops / (ms * 1e9) }
  if copy_gbps then
    t.copyCeilingGbps = copy_gbps
    t.percentOfCopy = 100 * gbps / copy_gbps
    t.floorMs = ws.bytes / (copy_gbps * 1e6)
    t.boundBy = 'memory'
    t.percentOfFloor = 100 * t.floorMs / ms
  end
  return t
end

local function assert_throughput(want, got)
  for k, v in pairs(want) do
    if type(v) == 'number' then
      assert.is_number(got[k], k)
      assert.near(v, got[k], math.abs(v) * 1e-12, k)
    else
      assert.equal(v, got[k], k)
    end
  end
end

describe('llama4_rope records carry their throughput', function()
  local dir
  before_each(function() dir = sub.tmpdir() end)
  after_each(function() os.execute('rm -rf ' .. sub.q(dir)) end)

  it('GB/s, % of the cached copy ceiling and the floor, from the median and the workload bytes', function()
    cache_ceiling(dir .. '/cache')
    for _, mode in ipairs { 'backward', 'full' } do
      local b, table_text = rope_point(dir, dir .. '/cache', mode)
      -- the workload's minimal bytes: q [1,64,32,4] and k [1,64,8,4] bf16
      -- read and written (2 x 10240 x 2 bytes) plus the f32 table [64,2,2]
      -- (1024 bytes) per pass; full is two passes
      local passes = mode == 'full' and 2 or 1
      local p = kb.result.session(b)
      assert.equal(passes * 41984, p.bytes)
      assert.equal(passes * 3 * 10240, p.flops)
      local t = p.evidence.throughput
      assert.is_table(t)
      assert_throughput(expected(b, COPY_GBPS), t)
      -- the measurements say the same
      assert.near(t.gbps, p.gbps, 1e-12 * t.gbps)
      assert.near(t.percentOfCopy, p.pct_copy, 1e-12 * t.percentOfCopy)
      assert.equal(COPY_GBPS, p.copy_gbps)
      assert.is_nil(t.note)
      assert.matches('GB/s  % of copy', table_text, 1, true)
      assert.matches(string.format('%.1f', t.percentOfCopy), table_text, 1, true)
    end
  end)

  it('without a cached ceiling: GB/s, no percentage, a note that says how to get one', function()
    local b, table_text = rope_point(dir, dir .. '/empty', 'forward')
    local t = kb.result.session(b).evidence.throughput
    assert_throughput(expected(b, nil), t)
    for _, k in ipairs { 'percentOfCopy', 'copyCeilingGbps', 'floorMs', 'boundBy', 'percentOfFloor' } do
      assert.is_nil(t[k], k)
    end
    assert.matches('no cached copy ceiling', t.note, 1, true)
    assert.matches('scripts/ceilings.lua', t.note, 1, true)
    assert.matches('GB/s', table_text, 1, true)
    assert.not_matches('% of copy', table_text, 1, true)
  end)
end)

describe('policy.throughput and record.from_result', function()
  local ok_engine = pcall(require, 'kluabench.core')
  local engine_it = ok_engine and it or pending

  local function bundle(o)
    local b = {
      kernel = 'llama4_rope', mode = 'forward', provider = 'fused',
      parameters = { hidden = 2048, seq = 2048, q_heads = 32, kv_heads = 8 }, dtype = 'bf16',
      result = { samples = { 0.01, 0.02, 0.03 } }, protocol = kb.do_bench.do_bench_protocol {},
      -- a device that is not this process's: the cache holds this machine's ceilings
      environment = kb.env.capture { info = { name = 'NVIDIA H200', arch = 'sm_90' }, backend = 'cuda',
        kb = kb, os = { kernel = 'Linux' }, driver_release = false },
    }
    for k, v in pairs(o or {}) do b[k] = v end
    return record.from_result(b)
  end

  engine_it('of another device: the rates without a ceiling, and why', function()
    local environment = kb.env.capture { info = { name = 'NVIDIA H200', arch = 'sm_90' }, backend = 'cuda',
      kb = kb, os = { kernel = 'Linux' }, driver_release = false }
    local bytes = kb.kernels.kernel('llama4_rope').cost({ hidden = 2048, seq = 2048, q_heads = 32, kv_heads = 8 },
      'bf16', 'forward')
    local b = bundle { throughput = kb.policy.throughput(bytes, nil, 0.02, environment) }
    local p = kb.result.session(b)
    local t = p.evidence.throughput
    assert.near(p.bytes / 0.02e6, t.gbps, 1e-9)
    assert.near(t.gbps, p.gbps, 1e-9)
    assert.is_nil(t.percentOfCopy)
    assert.is_nil(t.copyCeilingGbps)
    assert.is_nil(p.pct_copy)
    assert.matches('measured on NVIDIA H200, not on this process', t.note, 1, true)
  end)

  engine_it('takes bytes and flops from the caller, and a throughput given in execution', function()
    local b = bundle { bytes = 4e6, flops = 0 }
    assert.equal(4e6, kb.result.session(b).bytes)
    assert.near(200, kb.result.session(b).gbps, 1e-9) -- 4 MB in 0.02 ms
    b = bundle { throughput = { gbps = 1 } }
    assert.same({ gbps = 1 }, kb.result.session(b).evidence.throughput)
    assert.equal(1, kb.result.session(b).gbps)
    b = bundle { kernel = 'no_cost_model' }
    assert.is_nil(kb.result.session(b).evidence.throughput)
    assert.is_nil(kb.result.session(b).gbps)
    assert.has_error(function() bundle { bytes = 'many' } end,
      "bad argument #1 to 'from_result' (field 'bytes' must be a finite number >= 0, got many)")
  end)
end)

describe('results table throughput columns', function()
  local made = 0
  local function fake(median_ns, bytes, fields)
    made = made + 1
    local f = { bytes = bytes }
    for k, v in pairs(fields or {}) do f[k] = v end
    return {
      run = { spec = { status = 'passed', timing = { latencyNs = { median = median_ns } }, measurements = kb.record.measurement_list(f),
        sourceNative = { source = 'kluabench', benchmark = 'k/forward', externalId = 'k/forward/p/cpu/n' .. made .. '-fp32/t' } } },
    }
  end

  it("shows the run's GB/s and % of copy, n/a where a row has none", function()
    local rows = results.results_rows { fake(1000, 2000, { gbps = 2.5, pct_copy = 40 }), fake(1000, 3000) }
    assert.equal(2.5, rows[1].gbps) -- the record's own, not bytes / rounded median
    assert.equal(40, rows[1].pct_copy)
    assert.equal(3, rows[2].gbps) -- 3000 bytes in 1000 ns
    assert.is_nil(rows[2].pct_copy)
    local text = results.results_table { fake(1000, 2000, { gbps = 2.5, pct_copy = 40 }), fake(1000, 3000) }
    local lines = {}
    for line in text:gmatch('[^\n]+') do lines[#lines + 1] = line end
    table.remove(lines, 1) -- what every row shares (kernel, device, ...)
    assert.matches('GB/s  % of copy', lines[1], 1, true)
    assert.matches('2.5       40.0', lines[3], 1, true)
    assert.matches('3.0        n/a', lines[4], 1, true)
    assert.matches('| % of copy |', results.results_markdown { fake(1000, 2000, { pct_copy = 40 }) }, 1, true)
  end)

  it('leaves the % of copy column out when no row has one', function()
    local text = results.results_table { fake(1000, 3000), fake(2000, 3000, { gbps = 1.5 }) }
    assert.not_matches('% of copy', text, 1, true)
    assert.matches('GB/s', text, 1, true)
    assert.not_matches('n/a', text, 1, true)
  end)
end)

describe('plausibility without a cache, at the level of the memory hierarchy a working set fits in', function()
  local dir
  before_each(function() dir = sub.tmpdir() end)
  after_each(function() os.execute('rm -rf ' .. sub.q(dir)) end)

  local function bundles_of(path)
    local out = {}
    for _, b in ipairs(assert(kb.reader.read(path))) do out[#out + 1] = kb.result.session(b) end
    return out
  end

  it('flags a kernel that declares 1 TB per call and does nothing, with no cache at all; the command exits 1', function()
    local script = dir .. '/liar.lua'
    local f = assert(io.open(script, 'w'))
    f:write([[
local kb = require 'kluabench'
kb.suite.main { name = 'liar', axes = { { name = 'n', default = 8 } }, dtypes = { 'f32' }, modes = { 'forward' },
  providers = { 'nothing' }, setup = function(p) return { x = kb.zeros({ p.n }, 'f32') } end,
  run = function() return function() end end, cost = function() return 1e12, 0 end }
]])
    f:close()
    local out = dir .. '/liar.jsonl'
    local r = sub.run({ '--backend', 'cpu', script, '--rep-ms', '5', '--format', 'jsonl', '--out', out },
      { env = { KLUABENCH_CACHE = dir .. '/no-cache' } })
    assert.equal(1, r.code, r.err)
    assert.matches('1 of 1 runs not passed (1 suspected_reward_hack', r.err, 1, true)
    local s = bundles_of(out)[1]
    assert.equal('suspected_reward_hack', s.status)
    local pl = s.evidence.throughput.plausibility
    assert.is_true(pl.judged)
    assert.equal('device memory', pl.level)
    assert.truthy(pl.boundGbps > 0 and pl.boundGbps < 1e5, pl.boundGbps)
    assert.matches('physically implausible', s.evidence.reasons[1], 1, true)
    assert.truthy(s.implausible)
  end)

  it('judges a copy whose 5 MB fit in the last-level cache by that level, not by memory\'s copy ceiling', function()
    -- a copy ceiling of memory far below what a cache-resident copy reaches, and the LLC's own copy bandwidth
    local cache = dir .. '/cache'
    local info = kb.device_info()
    local levels = require('kluabench.measure.ceilings').levels(info)
    local llc = levels[#levels - 1]
    assert(calibrate.store(info, { copy_gbps = 1, levels = { { name = llc.name, copy_gbps = 100, threads = 1 } } },
      cache .. '/ceilings.json'))
    local out = dir .. '/copy.jsonl'
    local r = sub.run({ '--backend', 'cpu', ROOT .. '/scripts/rope.lua', '--hidden', '512', '--seq', '4096',
      '--provider', 'copy', '--mode', 'forward', '--rep-ms', '20', '--format', 'jsonl', '--out', out },
      { env = { KLUABENCH_CACHE = cache } })
    assert.equal(0, r.code, r.err)
    local s = bundles_of(out)[1]
    assert.equal('passed', s.status)
    assert.truthy(s.pct_copy > 100, 'the copy beats memory\'s ceiling: ' .. tostring(s.pct_copy))
    local pl = s.evidence.throughput.plausibility
    assert.equal(llc.name, pl.level)
    assert.equal('its measured copy bandwidth', pl.source)
  end)

  it('scripts/ceilings.lua measures the cpu: a converged copy ceiling and each cache level', function()
    local cache = dir .. '/c.json'
    local r = sub.run({ '--backend', 'cpu', ROOT .. '/scripts/ceilings.lua', '--mib', '32', '--cache', cache, '--json' })
    assert.equal(0, r.code, r.err)
    local e = assert(require('kluabench.util.json').decode(r.out))
    assert.is_true(e.converged)
    assert.truthy(e.copy_gbps > 0)
    assert.truthy(#e.levels >= 1)
    for _, l in ipairs(e.levels) do assert.truthy(l.copy_gbps > 0, l.name) end
  end)
end)
