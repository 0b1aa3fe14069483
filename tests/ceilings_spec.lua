-- Throughput ceilings (ceilings.lua): the arithmetic, the per-device cache
-- file, and on cuda the copy bandwidth itself.
local ceilings = require 'kluabench.measure.ceilings'
local json = require 'kluabench.util.json'
local calibrate = require 'kluabench.measure.calibrate'

describe('ceilings arithmetic', function()
  it('converts bytes and ms to GB/s and percentages', function()
    assert.equal(1000, ceilings.gbps(1e9, 1)) -- 1 GB in 1 ms = 1000 GB/s
    assert.equal(2, ceilings.gbps(2e6, 1))
    assert.is_nil(ceilings.gbps(1, 0))
    assert.equal(50, ceilings.percent(2000, 4000))
    assert.is_nil(ceilings.percent(1, nil))
  end)

  it('gives the roofline floor and what bounds it', function()
    local ceil = { copy_gbps = 4000, tflops = 500 }
    -- 4 GB at 4000 GB/s = 1 ms; 100 GFLOP at 500 TFLOP/s = 0.2 ms
    local f, bound = ceilings.floor_ms(4e9, 1e11, ceil)
    assert.near(1, f, 1e-12)
    assert.equal('memory', bound)
    f, bound = ceilings.floor_ms(4e6, 1e12, ceil)
    assert.near(2, f, 1e-12)
    assert.equal('compute', bound)
    f, bound = ceilings.floor_ms(4e9, 1e12, { copy_gbps = 4000 })
    assert.equal('memory', bound)
    assert.is_nil(ceilings.floor_ms(1, 1, {}))
    local t = ceilings.throughput(4e9, nil, 2, { copy_gbps = 4000 })
    assert.equal(2000, t.gbps)
    assert.equal(50, t.percentOfCopy)
    assert.equal(50, t.percentOfFloor)
  end)
end)

describe('ceilings cache', function()
  it('stores and finds an entry per device, atomically, creating the directory', function()
    local dir = os.tmpname()
    os.remove(dir)
    local path = dir .. '/sub/ceilings.json'
    local gpu = { backend = 'cuda', name = 'NVIDIA H200', memory_bytes = 1, l2_bytes = 62914560 }
    local other = { backend = 'cuda', name = 'NVIDIA H100', memory_bytes = 1, l2_bytes = 52428800 }
    assert.is_nil(ceilings.lookup(gpu, path))
    assert.is_true(calibrate.store(gpu, { copy_gbps = 4100.5 }, path))
    assert.is_true(calibrate.store(other, { copy_gbps = 3000 }, path))
    assert.equal(4100.5, ceilings.lookup(gpu, path).copy_gbps)
    assert.equal(3000, ceilings.lookup(other, path).copy_gbps)
    local ok, kb = pcall(require, 'kluabench.core')
    if ok and type(kb) == 'table' and kb.device_info then
      local t = ceilings.cached_throughput(1e6, nil, 0.001, { path = path })
      assert.equal(1000, t.gbps)
      assert.matches('no cached copy ceiling', t.note)
      assert.is_true(calibrate.store(kb.device_info(), { copy_gbps = 2000 }, path))
      t = ceilings.cached_throughput(1e6, nil, 0.001, { path = path })
      assert.equal(50, t.percentOfCopy)
      assert.equal(2000, t.copyCeilingGbps)
      assert.equal('memory', t.boundBy)
    end
    local f = assert(io.open(path, 'w'))
    f:write('{not json')
    f:close()
    local c, err = ceilings.load_cache(path)
    assert.is_nil(c)
    assert.matches('ceilings.json', err)
    os.execute('rm -rf ' .. dir)
  end)
end)

describe('ceilings cache is validated (issue 13)', function()
  it('uses a copy ceiling only when finite, positive and converged', function()
    assert.equal(3000, ceilings.usable_copy { copy_gbps = 3000, converged = true })
    assert.equal(3000, ceilings.usable_copy { copy_gbps = 3000 }) -- older entries say nothing
    for _, bad in ipairs { { copy_gbps = 'fast' }, { copy_gbps = -1 }, { copy_gbps = 0 }, { copy_gbps = 1e300 },
        { copy_gbps = 0 / 0 }, { copy_gbps = 3000, converged = false }, {} } do
      local g, why = ceilings.usable_copy(bad)
      assert.is_nil(g)
      assert.is_string(why)
    end
    assert.matches('did not converge', select(2, ceilings.usable_copy { copy_gbps = 3000, converged = false }))
  end)

  it('a cache with an absurd or non-number ceiling gives rates, no percentage, and a note', function()
    local ok, kb = pcall(require, 'kluabench.core')
    if not (ok and type(kb) == 'table' and kb.device_info) then return end
    local path = os.tmpname()
    local json = require 'kluabench.util.json'
    for _, entry in ipairs { { copy_gbps = 'NaN' }, { copy_gbps = -5 }, { copy_gbps = 2000, converged = false } } do
      local f = assert(io.open(path, 'w'))
      f:write(json.encode_pretty { version = 1, devices = { [ceilings.device_key(kb.device_info())] = entry } })
      f:close()
      local t = ceilings.cached_throughput(1e6, nil, 0.001, { path = path })
      assert.equal(1000, t.gbps)
      assert.is_nil(t.percentOfCopy)
      assert.matches('not used', t.note, 1, true)
    end
    -- an entry that is not even a table, and a file that is not an object
    local f = assert(io.open(path, 'w'))
    f:write('{"version": 1, "devices": {"' .. ceilings.device_key(kb.device_info()) .. '": 7}}')
    f:close()
    assert.is_nil(ceilings.cached_throughput(1e6, nil, 0.001, { path = path }).percentOfCopy)
    f = assert(io.open(path, 'w'))
    f:write('[1, 2]')
    f:close()
    assert.equal(1000, ceilings.cached_throughput(1e6, nil, 0.001, { path = path }).gbps)
    local stored, why = calibrate.store(kb.device_info(), { copy_gbps = 2000 }, path)
    assert.is_nil(stored)
    assert.matches('not a JSON object', why, 1, true)
    os.remove(path)
    -- a good one says which ceiling it used
    assert.is_true(calibrate.store(kb.device_info(), { copy_gbps = 2000, converged = true,
      measured_at = '2026-12-02T00:00:00Z' }, path))
    local t = ceilings.cached_throughput(1e6, nil, 0.001, { path = path })
    assert.same({ gbps = 2000, converged = true, measuredAt = '2026-12-02T00:00:00Z' }, t.copyCeiling)
    -- and its own spread, which the plausibility check allows beyond it (issue 26)
    assert.is_true(calibrate.store(kb.device_info(), { copy_gbps = 2000, converged = true, spread = 0.03 }, path))
    assert.equal(0.03, ceilings.cached_throughput(1e6, nil, 0.001, { path = path }).copyCeiling.spread)
    os.remove(path)
  end)

  it('measures the copy ceiling with its spread (cpu)', function()
    local e = calibrate.measure_copy { bytes = 1 << 20, stop = require('kluabench.measure.stopping').count(20) }
    assert.is_true(e.copy_gbps > 0)
    assert.is_true(type(e.spread) == 'number' and e.spread >= 0 and e.spread < 1, tostring(e.spread))
  end)

  it('keeps a noise figure beside the ceiling, validates it and interpolates it by time scale', function()
    local path = os.tmpname()
    os.remove(path)
    local gpu = { backend = 'cuda', name = 'NVIDIA H200', memory_bytes = 1, l2_bytes = 62914560 }
    local fig = { measuredAt = '2026-12-02T00:00:00Z', sessions = 5,
      scales = { { ms = 0.01, sd = 0.02 }, { ms = 1, sd = 0.004 } } }
    assert.is_true(calibrate.store(gpu, { copy_gbps = 4000 }, path))
    assert.is_true(calibrate.store_noise(gpu, fig, path))
    assert.is_true(calibrate.store(gpu, { copy_gbps = 4100 }, path)) -- a new ceiling keeps the figure
    local e = ceilings.lookup(gpu, path)
    assert.equal(4100, e.copy_gbps)
    local n = assert(ceilings.usable_noise(e))
    assert.equal(0.02, ceilings.noise_at(n, 0.001))
    assert.equal(0.004, ceilings.noise_at(n, 50))
    assert.near(0.012, ceilings.noise_at(n, 0.1), 1e-12) -- halfway in log(ms)
    assert.is_nil(ceilings.usable_noise { sessionNoise = { scales = { { ms = 1, sd = 'x' } } } })
    assert.is_nil(ceilings.usable_noise { sessionNoise = { scales = { { ms = -1, sd = 0.1 } } } })
    assert.is_nil(ceilings.usable_noise { sessionNoise = { scales = { { ms = 1, sd = 2 } } } })
    assert.is_nil(ceilings.usable_noise {})
    os.remove(path)
  end)
end)

describe('calibrate.measure_copy', function()
  it('stamps the measurement as records stamp times (names.iso8601 of record.now)', function()
    local names, record = require 'kluabench.record.names', require 'kluabench.record'
    local stopping = require 'kluabench.measure.stopping'
    local before = names.iso8601(record.now())
    local e = calibrate.measure_copy { bytes = 1 << 20, stop = stopping.count(3) }
    local after = names.iso8601(record.now())
    assert.matches('^%d%d%d%d%-%d%d%-%d%dT%d%d:%d%d:%d%d%.%d%d%dZ$', e.measured_at)
    assert.is_true(before <= e.measured_at and e.measured_at <= after, before .. ' ' .. e.measured_at .. ' ' .. after)
    assert.equal(3, e.samples)
  end)
end)

describe('ceilings on cuda #gpu', function()
  it('measures a copy bandwidth in the range of HBM', function()
    local e = calibrate.measure_copy { bytes = 512 << 20 }
    assert.is_true(e.copy_gbps > 500 and e.copy_gbps < 10000, e.copy_gbps)
    assert.equal(2 * (512 << 20), e.bytes_per_copy)
  end)
end)

describe('records carry the session noise and the ceiling they used (issue 13)', function()
  local ok, kb = pcall(require, 'kluabench')
  local engine_it = (ok and pcall(require, 'kluabench.core')) and it or pending

  engine_it('from the cache of this device, and nothing for a bundle of another device', function()
    local dir = require('helpers.util').tmpdir()
    local path = dir .. '/ceilings.json'
    local info = kb.device_info()
    assert.is_true(calibrate.store(info, { copy_gbps = 2000, converged = true, measured_at = '2026-12-02T00:00:00Z' }, path))
    assert.is_true(calibrate.store_noise(info, { measuredAt = '2026-12-02T01:00:00Z', sessions = 4,
      scales = { { ms = 0.01, sd = 0.02, sdUpper = 0.03 } } }, path))
    -- the records read the cache at ceilings.cache_path(), which asks cache_dir
    local cache_dir = ceilings.cache_dir
    ceilings.cache_dir = function() return dir end
    finally(function() ceilings.cache_dir = cache_dir end)
    local record = require 'kluabench.record'
    local policy = require 'kluabench.suite.policy'
    -- what the harness decides (policy) and records (record.from_result)
    local function make(environment)
      local params = { hidden = 512, seq = 256, q_heads = 32, kv_heads = 8 }
      local bytes = kb.kernels.kernel('llama4_rope').cost(params, 'bf16', 'forward')
      return record.from_result {
        kernel = 'llama4_rope', mode = 'forward', provider = 'fused', parameters = params, dtype = 'bf16',
        result = { samples = { 0.01, 0.011, 0.012 } }, protocol = kb.do_bench.do_bench_protocol {},
        environment = environment, throughput = policy.throughput(bytes, nil, 0.011, environment),
        noise = policy.noise(0.011, environment, 'llama4_rope'),
      }
    end
    local here = make(kb.env.capture())
    local other = make(kb.env.capture { info = { name = 'NVIDIA H200', arch = 'sm_90' }, backend = 'cuda',
      kb = kb, os = { kernel = 'Linux' }, driver_release = false })
    local e = kb.evidence.of(here)
    assert.same({ sd = 0.03, measuredAt = '2026-12-02T01:00:00Z', sessions = 4, scope = 'device' }, e.sessionNoise)
    assert.same({ gbps = 2000, converged = true, measuredAt = '2026-12-02T00:00:00Z' }, e.throughput.copyCeiling)
    -- the figures in force are measurements too
    assert.equal(0.03, kb.result.session(here).noise_sd)
    assert.equal(2000, kb.result.session(here).copy_gbps)
    assert.is_nil(kb.evidence.of(other).sessionNoise)
    assert.is_nil(kb.result.session(other).noise_sd)
    os.execute('rm -rf ' .. dir)
  end)
end)
