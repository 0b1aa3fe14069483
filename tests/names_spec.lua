-- Names, slugs and timestamps, checked against the example record.
local names = require 'kluabench.record.names'
local liger = require 'kluabench.liger'

describe('names.gpu_slug', function()
  it('lowercases and turns runs of non-alphanumerics into "-"', function()
    assert.are.equal('nvidia-h100-80gb-hbm3', names.gpu_slug('NVIDIA H100 80GB HBM3'))
    assert.are.equal('nvidia-a100-sxm4-80gb', names.gpu_slug('NVIDIA A100-SXM4-80GB'))
    assert.are.equal('nvidia-h200', names.gpu_slug('NVIDIA H200'))
    assert.are.equal('intel-r-xeon-r-platinum-8480', names.gpu_slug('Intel(R) Xeon(R) Platinum 8480+'))
    assert.are.equal('a-b', names.gpu_slug('  a  __ b  '))
  end)

  it('checks its argument', function()
    assert.has_error(function() names.gpu_slug(nil) end,
      "bad argument #1 to 'gpu_slug' (string expected, got nil)")
  end)
end)

describe('names.workload_slug', function()
  it("reproduces the example's slug: names sorted, dtype last", function()
    local params = { hidden = 512, seq = 2048, q_heads = 32, kv_heads = 8 }
    assert.are.equal('hidden512-kv_heads8-q_heads32-seq2048-bf16', names.workload_slug(params, 'bf16'))
  end)

  it("maps Liger's names and dtypes to ours", function()
    assert.are.equal('hidden', liger.param_name('hidden_size'))
    assert.are.equal('hidden', liger.param_name('H'))
    assert.are.equal('seq', liger.param_name('seq_len'))
    assert.are.equal('seq', liger.param_name('T'))
    assert.are.equal('q_heads', liger.param_name('num_q_heads'))
    assert.are.equal('kv_heads', liger.param_name('num_kv_heads'))
    assert.are.equal('V', liger.param_name('V'))
    assert.are.equal('bf16', names.dtype_name('torch.bfloat16'))
    assert.are.equal('f32', names.dtype_name('torch.float32'))
    assert.are.equal('bf16', names.workload_slug({}, 'torch.bfloat16'))
  end)

  it('writes integral numbers without a fraction and leaves tables out', function()
    assert.are.equal('a1.5-b512-c7', names.workload_slug({ a = 1.5, b = 512.0, c = 7, d = { 1 } }))
    assert.are.equal('', names.workload_slug({}))
  end)
end)

describe('names.dns_name', function()
  it("reproduces the example's metadata.name, cut at 100 characters", function()
    local slug = names.workload_slug({ hidden = 512, seq = 2048, q_heads = 32, kv_heads = 8 }, 'bf16')
    local name = names.dns_name('liger', 'llama4_rope', 'backward', 'huggingface',
      names.gpu_slug('NVIDIA H100 80GB HBM3'), slug)
    assert.are.equal(
      'liger-llama4-rope-backward-huggingface-nvidia-h100-80gb-hbm3-hidden512-kv-heads8-q-heads32-seq2048-b',
      name)
    assert.are.equal(100, #name)
  end)

  it('never ends in "-" after the cut and keeps only [a-z0-9-]', function()
    local name = names.dns_name(string.rep('a', 99) .. '_b')
    assert.are.equal(string.rep('a', 99), name)
    assert.are.equal('x-y-1-2', names.dns_name('X_Y', nil, '', 1, '2'))
    assert.is_nil(names.dns_name('A!!b C'):find('[^a-z0-9-]'))
  end)
end)

describe('names.external_id', function()
  local t = assert(names.parse_time('2025-08-07 21:42:05'))

  it("reproduces the example's externalId", function()
    assert.are.equal(
      'llama4_rope/backward/huggingface/nvidia-h100-80gb-hbm3/hidden512-kv_heads8-q_heads32-seq2048-bf16/2025-08-07-21-42-05',
      names.external_id { kernel = 'llama4_rope', mode = 'backward', provider = 'huggingface',
        gpu = 'NVIDIA H100 80GB HBM3', workload = 'hidden512-kv_heads8-q_heads32-seq2048-bf16', time = t })
  end)

  it('adds a last segment for metrics other than speed', function()
    local id = names.external_id { kernel = 'k', mode = 'full', provider = 'p', gpu = 'G', workload = 'w',
      time = t, metric = 'memory' }
    assert.are.equal('k/full/p/g/w/2025-08-07-21-42-05/memory', id)
  end)

  it('checks its fields', function()
    assert.has_error(function() names.external_id { kernel = 'k' } end,
      "bad argument #1 to 'external_id' (field 'mode' must be a string, got nil)")
  end)
end)

describe('names: times', function()
  it("reads Liger's timestamp as UTC and writes ISO-8601 with milliseconds", function()
    local t = assert(names.parse_time('2025-08-07 21:42:05'))
    assert.are.equal('2025-08-07T21:42:05.000Z', names.iso8601(t))
    assert.are.equal('2025-08-07-21-42-05', names.time_id(t))
    assert.are.equal('2025-08-07 21:42:05', names.liger_time(t))
  end)

  it('reads ISO-8601 back, milliseconds included', function()
    local t = assert(names.parse_time('2026-01-02T03:04:05.678Z'))
    assert.are.equal(678, t.ms)
    assert.are.equal('2026-01-02T03:04:05.678Z', names.iso8601(t))
  end)

  it('turns epoch seconds into UTC fields', function()
    local t = names.utc(1754602925.25) -- 2025-08-07 21:42:05.250 UTC
    assert.are.equal('2025-08-07T21:42:05.250Z', names.iso8601(t))
  end)

  it('rejects what it cannot read', function()
    local t, msg = names.parse_time('yesterday')
    assert.is_nil(t)
    assert.matches('unrecognised timestamp', msg)
    assert.is_nil((names.parse_time('2025-13-07 21:42:05')))
    -- days the month does not have, and leap seconds: the schemas' date-time refuses them
    for _, bad in ipairs { '2025-02-29 00:00:00', '1900-02-29 00:00:00', '2025-04-31 12:00:00',
      '2025-08-07 21:42:60', '2025-08-07 24:00:00', '2025-00-07 21:42:05', '2025-08-00 21:42:05' } do
      local no, why = names.parse_time(bad)
      assert.is_nil(no, bad)
      assert.matches('out of range', why)
    end
    for _, good in ipairs { '2024-02-29 00:00:00', '2000-02-29 23:59:59', '2025-12-31 23:59:59',
      '2025-04-30 00:00:00' } do
      assert.equal(good:gsub(' ', 'T') .. '.000Z', names.iso8601(assert(names.parse_time(good))))
    end
  end)
end)
