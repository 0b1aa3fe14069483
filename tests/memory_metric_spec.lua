-- Liger's memory metric (issue 26): the allocator's counts (kb.memory_stats,
-- engine/core/memstats.c), the probe (measure/memory.lua), the harness's --metric
-- memory and its records, import-liger keeping Liger's memory rows, and
-- compare and plot lining the two up.
local kb = require 'kluabench'
local sub = require 'helpers.subprocess'
local util = require 'helpers.util'
local memory = require 'kluabench.measure.memory'

local ROOT = sub.root()
local MB = 1 << 20

describe('kb.memory_stats: the bytes our allocator holds, now and at the peak', function()
  it('counts a tensor while it lives and keeps the peak until reset', function()
    collectgarbage('collect')
    local before = kb.memory_stats()
    assert.equal('cpu', before.device)
    local x = kb.empty({ 1 << 18 }, 'f32') -- 1 MiB
    local s = kb.memory_stats()
    assert.equal(before.allocated_bytes + MB, s.allocated_bytes)
    assert.equal(before.allocations + 1, s.allocations)
    assert.is_true(s.peak_bytes >= s.allocated_bytes)
    x:free()
    local after = kb.memory_stats()
    assert.equal(before.allocated_bytes, after.allocated_bytes)
    assert.is_true(after.peak_bytes >= before.allocated_bytes + MB)
    assert.equal(after.allocated_bytes, kb.reset_peak_memory())
    assert.equal(after.allocated_bytes, kb.memory_stats().peak_bytes)
    assert.is_true(kb.memory_stats().total_allocations > before.total_allocations)
  end)

  it('counts a tensor the collector frees, and refuses a device that does not exist', function()
    collectgarbage('collect')
    local base = kb.memory_stats().allocated_bytes
    do local _ = kb.empty({ 1 << 16 }, 'f32') end
    collectgarbage('collect')
    assert.equal(base, kb.memory_stats().allocated_bytes)
    assert.has_error(function() kb.memory_stats('tpu') end)
  end)

  it('collects dead tensors before their storage outgrows the live ones (the Lua heap does not see it)', function()
    -- 40 temporaries of 64 MiB, each dead once the next is made: without the collection the
    -- engine triggers, all 2.5 GiB stayed allocated (the Lua heap grew by 40 small userdata only)
    collectgarbage('collect')
    kb.reset_peak_memory()
    local base = kb.memory_stats().allocated_bytes
    for _ = 1, 40 do
      local t = kb.empty({ 16 << 20 }, 'f32', 'cpu')
      t:fill_(1)
    end
    local peak = kb.memory_stats().peak_bytes - base
    assert.is_true(peak <= math.max(512 << 20, 2 * base + (320 << 20)), ('peak %.0f MiB above what was held'):format(peak / 2 ^ 20))
  end)
end)

describe('memory.peak: Liger\'s probe', function()
  -- a fake allocator: each call of fn allocates `extra` on top of `base`
  local function fake(base, extra)
    local k = { current = base, peak = base, dropped = 0 }
    return {
      synchronize = function() end,
      drop_scratch = function() k.dropped = k.dropped + 1 end,
      reset_peak_memory = function() k.peak = k.current; return k.current end,
      memory_stats = function() return { peak_bytes = k.peak, device = 'fake' } end,
      alloc = function(n) k.peak = math.max(k.peak, k.current + n) end,
    }, k
  end

  it('takes the peak around each of 10 calls, inputs included, in MB, with Liger\'s quantiles', function()
    local f, k = fake(4 * MB, 0)
    local i = 0
    local m = memory.peak(function() i = i + 1; f.alloc(i * MB) end, { kb = f })
    assert.equal(10, m.iterations)
    assert.equal(10, k.dropped)
    assert.same({ 5, 6, 7, 8, 9, 10, 11, 12, 13, 14 }, m.values)
    assert.equal(4, m.before_mb)
    assert.near(9.5, m.median, 1e-12)
    assert.near(5 + 0.2 * 9, m.p20, 1e-9)
    assert.near(5 + 0.8 * 9, m.p80, 1e-9)
    assert.has_error(function() memory.peak(42) end, "bad argument #1 to 'peak' (function expected, got number)")
    assert.has_error(function() memory.peak(function() end, { iterations = 0 }) end)
  end)

  it('on the engine: a call that allocates 2 MiB and frees it peaks 2 MiB above what is held', function()
    local keep = kb.empty({ 1 << 18 }, 'f32')
    local m = memory.peak(function()
      local t = kb.empty({ 1 << 19 }, 'f32')
      t:free()
    end)
    assert.near(m.before_mb + 2, m.median, 1e-9)
    assert.equal(m.median, m.p20)
    keep:free()
  end)
end)

describe('--metric memory in the harness', function()
  local dir
  setup(function() dir = util.tmpdir() end)
  teardown(function() os.execute('rm -rf ' .. util.q(dir)) end)

  it('gives one memory run per provider and mode, as Liger\'s memory rows are, with no time', function()
    local out = dir .. '/mem.jsonl'
    local r = sub.run { '--backend', 'cpu', ROOT .. '/scripts/llama4_rope.lua', '--metric', 'memory', '--mode',
      'forward,full', '--provider', 'all', '--hidden', '512', '--seq', '256', '--out', out }
    assert.equal(0, r.code, r.err)
    assert.matches('peak MB', r.out, 1, true)
    assert.not_matches('median us', r.out, 1, true)
    local bundles = assert(kb.reader.read(out))
    assert.equal(8, #bundles)
    local by = {}
    for _, b in ipairs(bundles) do
      local p = kb.result.session(b)
      assert.equal('memory', p.metric)
      assert.equal('mb', p.memory_unit)
      assert.is_nil(b.run.spec.timing)
      assert.matches('/memory$', b.run.spec.sourceNative.benchmark)
      assert.equal('memory', p.protocol)
      assert.equal(10, #kb.evidence.of(b).execution.memory.values)
      by[p.mode .. ' ' .. p.provider] = p.memory_median
    end
    -- q (256 x 32 x 16 bf16: 256 KiB) and k (64 KiB) at least, whatever the provider
    for key, mb in pairs(by) do assert.is_true(mb >= 0.3125, key .. ' ' .. mb) end
    -- the reference path's temporaries count while it runs, not after: it peaks above the fused kernel
    assert.is_true(by['forward reference'] > by['forward fused'])
    -- whatever ran before: the fused kernel's figure is the same after the reference ran
    assert.equal(by['full fused'], by['forward fused'])
  end)

  it('refuses --metrics energy with it, and a metric it does not know', function()
    local r = sub.run { '--backend', 'cpu', ROOT .. '/scripts/llama4_rope.lua', '--metric', 'memory', '--metrics',
      'energy' }
    assert.equal(2, r.code)
    assert.matches("'--metrics energy' goes with the time", r.err, 1, true)
    r = sub.run { '--backend', 'cpu', ROOT .. '/scripts/llama4_rope.lua', '--metric', 'speeed' }
    assert.equal(2, r.code)
    assert.matches("option '--metric' must be one of speed, memory, got 'speeed'", r.err, 1, true)
  end)
end)

describe('Liger\'s memory rows and ours, lined up', function()
  local HEADER = 'kernel_name,kernel_provider,kernel_operation_mode,metric_name,metric_unit,x_name,x_label,'
    .. 'x_value,y_value_50,y_value_20,y_value_80,extra_benchmark_config_str,gpu_name,timestamp,liger_version\n'
  local CONFIG = '"{""dtype"": ""torch.bfloat16"", ""seq_len"": 256, ""num_q_heads"": 32, ""num_kv_heads"": 8}"'
  local function row(provider, metric, y)
    return string.format('llama4_rope,%s,full,%s,%s,H,hidden size,512,%s,%s,%s,%s,NVIDIA H100 80GB HBM3,'
      .. '2025-08-07 21:42:05,0.6.1\n', provider, metric, metric == 'memory' and 'MB' or 'ms', y, y, y, CONFIG)
  end
  local dir
  setup(function()
    dir = util.tmpdir()
    util.spit(dir .. '/liger.csv', HEADER .. row('liger', 'speed', '0.1376') .. row('liger', 'memory', '12.5')
      .. row('huggingface', 'memory', '20.5'))
  end)
  teardown(function() os.execute('rm -rf ' .. util.q(dir)) end)

  it('import-liger keeps the memory rows as runs of our own, and the speed row is the importer\'s', function()
    local r = sub.run { 'import-liger', dir .. '/liger.csv', '--jsonl', dir .. '/liger.jsonl' }
    assert.equal(0, r.code, r.err)
    local bundles = assert(kb.reader.read(dir .. '/liger.jsonl'))
    assert.equal(3, #bundles)
    local liger = require 'kluabench.liger'
    local rows = assert(liger.read(dir .. '/liger.csv'))
    -- the speed run is byte for byte what the row gives without keeping memory rows
    local speed = assert(liger.row_to_bundle(rows[1]))
    assert.equal(kb.jcs.encode(speed.run), kb.jcs.encode(bundles[1].run))
    local m = kb.result.session(bundles[2])
    assert.equal('memory', m.metric)
    assert.equal(12.5, m.memory_median)
    assert.is_string(bundles[2].run.metadata.labels.not_reproduced)
    -- --speed-only skips them as kernelindex's importer does
    r = sub.run { 'import-liger', dir .. '/liger.csv', '--speed-only', '--jsonl', dir .. '/speed.jsonl' }
    assert.equal(0, r.code, r.err)
    assert.matches('skipped 2 rows: memory rows', r.err, 1, true)
    assert.equal(1, #assert(kb.reader.read(dir .. '/speed.jsonl')))
  end)

  it('compare matches our memory runs with Liger\'s (--match liger=fused) in a table of their own', function()
    assert.equal(0, sub.run { 'import-liger', dir .. '/liger.csv', '--jsonl', dir .. '/l.jsonl' }.code)
    local r = sub.run { '--backend', 'cpu', ROOT .. '/scripts/llama4_rope.lua', '--metric', 'memory', '--mode', 'full',
      '--provider', 'fused,reference', '--hidden', '512', '--seq', '256', '--out', dir .. '/ours.jsonl' }
    assert.equal(0, r.code, r.err)
    -- Liger's rows were measured on Liger's GPU, ours here: a comparison across devices, said so
    r = sub.run { 'compare', dir .. '/l.jsonl', dir .. '/ours.jsonl', '--match', 'liger=fused,huggingface=reference' }
    assert.equal(2, r.code, r.out)
    assert.matches('measured on different devices', r.out, 1, true)
    r = sub.run { 'compare', dir .. '/l.jsonl', dir .. '/ours.jsonl', '--match', 'liger=fused,huggingface=reference',
      '--across-devices' }
    assert.equal(0, r.code, r.err)
    assert.matches('peak memory (MB', r.out, 1, true)
    assert.matches('fused %(liger%) +.- %-> .- +1/1 +12%.5 +[%d.]+ +%-[%d.]+%% +SMALLER +across devices: BASE on ', r.out)
    assert.matches('reference %(huggingface%) +.- %-> .- +1/1 +20%.5 ', r.out)
    assert.matches('2 memory point%(s%)', r.out)
    local compare = require 'kluabench.compare'
    local res = compare.compare(assert(compare.read(dir .. '/l.jsonl')), assert(compare.read(dir .. '/ours.jsonl')),
      { match = { liger = 'fused' }, across_devices = true })
    assert.equal(1, #res.memory)
    assert.equal(12.5, res.memory[1].base_mb)
    assert.is_false(res.memory[1].regression)
    r = sub.run { 'compare', dir .. '/l.jsonl', dir .. '/ours.jsonl', '--match', 'liger' }
    assert.equal(2, r.code)
    assert.matches('--match takes BASE=NEW provider pairs', r.err, 1, true)
  end)

  it('plot draws both on one memory chart', function()
    local r = sub.run { 'plot', dir .. '/liger.csv', dir .. '/ours.jsonl', '--filter', 'metric=memory', '--y', 'MB',
      '--bar', '-o', dir .. '/m.svg' }
    assert.equal(0, r.code, r.err)
    local svg = util.slurp(dir .. '/m.svg')
    assert.matches('memory (MB)', svg, 1, true)
    assert.matches('>liger', svg)
    assert.matches('>fused', svg)
  end)
end)

describe('the memory metric on the GPU #gpu', function()
  it('counts cuda tensors, and the reference RoPE path peaks above the fused kernel by its temporaries', function()
    collectgarbage('collect')
    local base = kb.memory_stats('cuda').allocated_bytes
    local x = kb.empty({ 1 << 18 }, 'f32', 'cuda')
    assert.equal(base + MB, kb.memory_stats('cuda').allocated_bytes)
    x:free()
    local q, k = kb.randn({ 1, 2048, 32, 64 }, 'bf16', 1), kb.randn({ 1, 2048, 8, 64 }, 'bf16', 2)
    local f = kb.rope.freqs(2048, 64)
    local fused = memory.peak(function() kb.rope.llama4_fwd(q, k, f, { inplace = true }) end)
    local ref = memory.peak(function() kb.rope.llama4_fwd(q, k, f, { inplace = true, impl = 'reference' }) end)
    assert.matches('^cuda:%d+$', fused.device) -- the engine's device name, with its index
    assert.equal(fused.before_mb, fused.median) -- in place: nothing allocated
    assert.is_true(ref.median > fused.median, ref.median .. ' vs ' .. fused.median)
  end)
end)
