-- Throughput ceilings (ceilings.lua): the arithmetic, the per-device cache
-- file, and on cuda the copy bandwidth itself.
local ceilings = require 'kluabench.record.ceilings'

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
    assert.is_true(ceilings.store(gpu, { copy_gbps = 4100.5 }, path))
    assert.is_true(ceilings.store(other, { copy_gbps = 3000 }, path))
    assert.equal(4100.5, ceilings.lookup(gpu, path).copy_gbps)
    assert.equal(3000, ceilings.lookup(other, path).copy_gbps)
    local ok, kb = pcall(require, 'kluabench.core')
    if ok and type(kb) == 'table' and kb.device_info then
      local t = ceilings.cached_throughput(1e6, nil, 0.001, { path = path })
      assert.equal(1000, t.gbps)
      assert.matches('no cached copy ceiling', t.note)
      assert.is_true(ceilings.store(kb.device_info(), { copy_gbps = 2000 }, path))
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

describe('ceilings on cuda #gpu', function()
  it('measures a copy bandwidth in the range of HBM', function()
    local e = ceilings.measure_copy { bytes = 512 << 20 }
    assert.is_true(e.copy_gbps > 500 and e.copy_gbps < 10000, e.copy_gbps)
    assert.equal(2 * (512 << 20), e.bytes_per_copy)
  end)
end)
