-- kb.rope's one-launch entry points: llama4_fwd_bwd / neox_fwd_bwd (the forward of q, k and the
-- backward of dq, dk together) against the separate passes, bit for bit; floor / floor_fwd_bwd
-- (the fused call's bytes moved without arithmetic) against the inputs they copy; their
-- argument errors; and (#gpu) both on cuda against the cpu path, at shapes that take every
-- launch plan of the CUDA kernels (one unit per thread up to the bandwidth-bound eight).
local kb = require 'kluabench'

local DTYPES = { 'bf16', 'f16', 'f32', 'f64' }

local function seed() return math.random(1, 2 ^ 31) end

local function same_bits(a, b, where)
  local d = kb.max_abs_diff(a, b)
  assert(d == 0, ('%s: differs by %s'):format(where, tostring(d)))
end

local function fails_with(needle, fn)
  local ok, err = pcall(fn)
  assert(not ok, 'expected an error containing: ' .. needle)
  assert(tostring(err):find(needle, 1, true), ('error %q does not contain %q'):format(tostring(err), needle))
end

-- q, k, dq, dk of case c on device, fresh seeds, and freqs with spare positions
local function inputs(c, dtype, device)
  local s = { seed(), seed(), seed(), seed() }
  local t = {
    q = kb.randn({ c.b, c.s, c.hq, c.d }, dtype, s[1], device),
    k = kb.randn({ c.b, c.s, c.hk, c.d }, dtype, s[2], device),
    dq = kb.randn({ c.b, c.s, c.hq, c.d }, dtype, s[3], device),
    dk = kb.randn({ c.b, c.s, c.hk, c.d }, dtype, s[4], device),
    f = kb.rope.freqs(c.s + math.random(0, 3), c.d, { device = device }),
  }
  t.where = ('%s B=%d S=%d Hq=%d Hk=%d D=%d seeds %d %d %d %d'):format(dtype, c.b, c.s, c.hq, c.hk, c.d,
    s[1], s[2], s[3], s[4])
  return t
end

local function random_case()
  local hq = math.random(2, 6)
  return { b = math.random(1, 3), s = ({ 1, 7, 33, 130 })[math.random(4)], hq = hq,
    hk = math.random(1, hq - 1), d = ({ 2, 6, 8, 16, 24, 64 })[math.random(6)] }
end

describe('kb.rope full and floor on the cpu', function()
  for _, dtype in ipairs(DTYPES) do
    for _, style in ipairs { 'llama4', 'neox' } do
      it(('%s %s: full equals the forward then the backward, fused and reference'):format(style, dtype), function()
        for _ = 1, 4 do
          local t = inputs(random_case(), dtype, 'cpu')
          local fq, fk = kb.rope[style .. '_fwd'](t.q, t.k, t.f)
          local bq, bk = kb.rope[style .. '_bwd'](t.dq, t.dk, t.f)
          for _, impl in ipairs { 'fused', 'reference' } do
            local q, k, dq, dk = kb.rope[style .. '_fwd_bwd'](t.q, t.k, t.dq, t.dk, t.f, { impl = impl })
            same_bits(q, fq, t.where .. ' ' .. impl .. ' q')
            same_bits(k, fk, t.where .. ' ' .. impl .. ' k')
            same_bits(dq, bq, t.where .. ' ' .. impl .. ' dq')
            same_bits(dk, bk, t.where .. ' ' .. impl .. ' dk')
          end
          local q2, k2, dq2, dk2 = t.q:clone(), t.k:clone(), t.dq:clone(), t.dk:clone()
          local r = { kb.rope[style .. '_fwd_bwd'](q2, k2, dq2, dk2, t.f, { inplace = true }) }
          assert.equal(q2, r[1])
          assert.equal(dk2, r[4])
          same_bits(q2, fq, t.where .. ' in place q')
          same_bits(dk2, bk, t.where .. ' in place dk')
        end
      end)
    end

    it(dtype .. ': floor and floor_fwd_bwd copy their inputs and leave them alone', function()
      for _ = 1, 4 do
        local t = inputs(random_case(), dtype, 'cpu')
        local q0, k0, f0 = t.q:clone(), t.k:clone(), t.f:clone()
        local q, k = kb.rope.floor(t.q, t.k, t.f)
        assert.are_not.equal(t.q, q)
        same_bits(q, q0, t.where .. ' floor q')
        same_bits(k, k0, t.where .. ' floor k')
        local r = { kb.rope.floor_fwd_bwd(t.q, t.k, t.dq, t.dk, t.f) }
        for i, src in ipairs { t.q, t.k, t.dq, t.dk } do same_bits(r[i], src, t.where .. ' floor_fwd_bwd ' .. i) end
        local r2 = { kb.rope.floor_fwd_bwd(t.q, t.k, t.dq, t.dk, t.f, { inplace = true }) }
        assert.equal(t.dq, r2[3])
        same_bits(t.q, q0, t.where .. ' floor in place q')
        same_bits(t.f, f0, t.where .. ' the table')
      end
    end)
  end

  it('moves its bytes in place on the cpu: the floor is no faster than a copy of them (GB/s within 1.25 x)', function()
    local sub, util = require 'helpers.subprocess', require 'helpers.util'
    local result = require 'kluabench.result'
    local out = util.tmpdir() .. '/r.jsonl'
    local r = sub.run({ sub.root() .. '/scripts/rope.lua', '--hidden', '512', '--seq', '1024,4096', '--mode', 'forward',
      '--provider', 'floor,copy', '--format', 'jsonl', '--out', out, '--audits', '0' }, { env = { KLUABENCH_BACKEND = 'cpu' } })
    assert.equal(0, r.code, r.err)
    local gbps = {}
    for _, pt in ipairs(result.points(assert(require('kluabench.record.reader').read(out)))) do
      gbps[pt.provider .. ' ' .. pt.params.seq] = pt.gbps
    end
    for _, seq in ipairs { 1024, 4096 } do
      local floor, copy = gbps['floor ' .. seq], gbps['copy ' .. seq]
      assert.is_true(floor <= 1.25 * copy, string.format('seq %d: floor %.1f GB/s, copy %.1f GB/s', seq, floor, copy))
    end
  end)

  it('names the argument that is wrong', function()
    local q, k = kb.randn({ 1, 4, 3, 8 }, 'f32', 1), kb.randn({ 1, 4, 2, 8 }, 'f32', 2)
    local f = kb.rope.freqs(4, 8)
    fails_with("bad argument #3 to 'llama4_fwd_bwd' (dq has shape [1, 4, 2, 8], q has shape [1, 4, 3, 8]: they must match)",
      function() kb.rope.llama4_fwd_bwd(q, k, k, k, f) end)
    fails_with("bad argument #4 to 'neox_fwd_bwd' (dk is bf16, k is f32)",
      function() kb.rope.neox_fwd_bwd(q, k, q, kb.randn({ 1, 4, 2, 8 }, 'bf16', 3), f) end)
    fails_with("bad argument #5 to 'neox_fwd_bwd' (freqs must be a kluabench.Tensor, got nil)",
      function() kb.rope.neox_fwd_bwd(q, k, q:clone(), k:clone()) end)
    fails_with("bad argument #3 to 'floor_fwd_bwd' (dq is the same tensor as q: in place needs four tensors)",
      function() kb.rope.floor_fwd_bwd(q, k, q, k:clone(), f, { inplace = true }) end)
    fails_with("bad argument #4 to 'floor' (unknown option 'impl')",
      function() kb.rope.floor(q, k, f, { impl = 'fused' }) end)
    fails_with("bad argument #3 to 'floor' (freqs has 4 positions, q has seq 5)",
      function() kb.rope.floor(kb.randn({ 1, 5, 3, 8 }, 'f32', 1), kb.randn({ 1, 5, 2, 8 }, 'f32', 2), f) end)
    fails_with("bad argument #7 to 'llama4_fwd_bwd' (expected at most 6 arguments)",
      function() kb.rope.llama4_fwd_bwd(q, k, q:clone(), k:clone(), f, nil, 1) end)
    fails_with("bad argument #6 to 'llama4_fwd_bwd' (opts.impl must be 'fused' or 'reference', got 'x')",
      function() kb.rope.llama4_fwd_bwd(q, k, q:clone(), k:clone(), f, { impl = 'x' }) end)
  end)
end)

describe('kb.rope full and floor on cuda against the cpu path #gpu', function()
  if kb.backend() ~= 'cuda' then
    pending('needs the cuda backend')
    return
  end

  -- tiny and ragged shapes (one unit per thread), the sweep's launch-bound points (one or two
  -- units), and hidden-8192 layouts that take the bandwidth-bound plan (eight vectors, or four
  -- pairs, per thread). bf16 takes the flat plan at head_dim 16, 64 and at seq 1024 (16-byte
  -- vectors), so here the small plans run for f32 and for bf16's narrower vectors (head_dim 2, 12)
  local SHAPES = {
    { b = 2, s = 37, hq = 3, hk = 2, d = 2 }, { b = 3, s = 37, hq = 5, hk = 2, d = 12 },
    { b = 1, s = 2048, hq = 32, hk = 8, d = 16 }, { b = 1, s = 2048, hq = 32, hk = 8, d = 64 },
    { b = 1, s = 1024, hq = 32, hk = 8, d = 256 }, { b = 1, s = 4099, hq = 32, hk = 8, d = 256 },
  }

  local function poison(shape, dtype)
    local p = kb.empty(shape, dtype, 'cuda'):fill_(0 / 0)
    p:free()
  end

  -- full, forward and backward of t on cuda against the cpu path, bit for bit; poisoned: the
  -- memory q's and k's shapes take is filled with NaN and freed first, so that outputs allocated
  -- there start poisoned. Returns the cpu results (q, k, dq, dk after full).
  local function same_as_cpu(style, t, poisoned)
    local cq, ck, cdq, cdk, cf = t.q:to('cpu'), t.k:to('cpu'), t.dq:to('cpu'), t.dk:to('cpu'), t.f:to('cpu')
    local want = { kb.rope[style .. '_fwd_bwd'](cq, ck, cdq, cdk, cf) }
    if poisoned then
      for _, x in ipairs { t.q, t.k } do poison(x.shape, x.dtype) end
    end
    local got = { kb.rope[style .. '_fwd_bwd'](t.q, t.k, t.dq, t.dk, t.f) }
    for i = 1, 4 do same_bits(got[i]:to('cpu'), want[i], t.where .. ' full ' .. i) end
    local fq, fk = kb.rope[style .. '_fwd'](t.q, t.k, t.f)
    same_bits(fq:to('cpu'), want[1], t.where .. ' fwd q')
    same_bits(fk:to('cpu'), want[2], t.where .. ' fwd k')
    local bq, bk = kb.rope[style .. '_bwd'](t.dq, t.dk, t.f)
    same_bits(bq:to('cpu'), want[3], t.where .. ' bwd dq')
    same_bits(bk:to('cpu'), want[4], t.where .. ' bwd dk')
    return want
  end

  -- the flat plan (kernels/rope.cu): medium shapes, where bf16 and f16 take it and the 4- and
  -- 8-byte dtypes the fused plans; the bits equal the cpu path's either way, batched or not
  local FLAT = {
    { b = 1, s = 2048, hq = 32, hk = 8, d = 64 }, { b = 2, s = 512, hq = 32, hk = 8, d = 64 },
    { b = 1, s = 1024, hq = 32, hk = 8, d = 256 }, { b = 3, s = 300, hq = 12, hk = 4, d = 32 },
  }
  for _, style in ipairs { 'llama4', 'neox' } do
    it(style .. ': the flat plan equals the cpu path in every dtype, batched or not', function()
      for _, dtype in ipairs(DTYPES) do
        for _, c in ipairs(FLAT) do
          same_as_cpu(style, inputs(c, dtype, 'cuda'))
        end
      end
    end)
  end

  -- which kernel a forward call runs (kb.trace names it): the flat plan up to 32 x 640 units per SM
  -- on the H200's 132 SMs (llama4 counts a 16-byte vector a unit, neox a pair of them), the fused
  -- plans above
  it('takes the flat plan short of the bandwidth-bound sizes, in bf16 (kb.trace names the kernel)', function()
    if not kb.trace.available() then
      pending('kb.trace (CUPTI) is not available')
      return
    end
    local cases = {
      { shape = { b = 1, s = 2048, hq = 32, hk = 8, d = 16 }, llama4 = 'rope_flat', neox = 'rope_flat' },
      { shape = { b = 1, s = 2048, hq = 32, hk = 8, d = 64 }, llama4 = 'rope_flat', neox = 'rope_flat' },
      { shape = { b = 1, s = 2048, hq = 32, hk = 8, d = 256 }, llama4 = 'rope_flat', neox = 'rope_flat' },
      { shape = { b = 1, s = 4096, hq = 32, hk = 8, d = 256 }, llama4 = 'rope_fused', neox = 'rope_flat' },
      { shape = { b = 1, s = 8192, hq = 32, hk = 8, d = 256 }, llama4 = 'rope_fused', neox = 'rope_fused' },
    }
    local sms = kb.device_info().sm_count
    for _, c in ipairs(cases) do
      local t = inputs(c.shape, 'bf16', 'cuda')
      for _, style in ipairs { 'llama4', 'neox' } do
        kb.trace.start()
        kb.rope[style .. '_fwd'](t.q, t.k, t.f)
        kb.synchronize()
        local names = {}
        for _, r in ipairs((kb.trace.stop())) do
          if r.kind == 'kernel' then names[#names + 1] = r.name end
        end
        assert.equal(1, #names, table.concat(names, ', '))
        -- the boundary moves with the SM count; hidden 512 and 2048 are flat on any card of 16 SMs or more
        if sms == 132 or c.shape.d <= 64 then
          local want = c[style]
          assert.truthy(names[1]:find(want, 1, true), ('%s S=%d D=%d: %s'):format(style, c.shape.s, c.shape.d, names[1]))
        end
      end
      for _, n in ipairs { 'q', 'k', 'dq', 'dk', 'f' } do t[n]:free() end
    end
  end)

  for _, dtype in ipairs { 'bf16', 'f32' } do
    for _, style in ipairs { 'llama4', 'neox' } do
      it(('%s %s: full, forward and backward equal the cpu path at every plan'):format(style, dtype), function()
        for _, c in ipairs(SHAPES) do
          local t = inputs(c, dtype, 'cuda')
          local want = same_as_cpu(style, t, true)
          kb.rope[style .. '_fwd_bwd'](t.q, t.k, t.dq, t.dk, t.f, { inplace = true })
          same_bits(t.q:to('cpu'), want[1], t.where .. ' full in place q')
          same_bits(t.dk:to('cpu'), want[4], t.where .. ' full in place dk')
        end
      end)
    end

    it(dtype .. ': floor and floor_fwd_bwd copy every byte', function()
      for _, c in ipairs(SHAPES) do
        local t = inputs(c, dtype, 'cuda')
        for _, x in ipairs { t.q, t.k } do poison(x.shape, dtype) end
        local q, k = kb.rope.floor(t.q, t.k, t.f)
        same_bits(q, t.q, t.where .. ' floor q')
        same_bits(k, t.k, t.where .. ' floor k')
        local r = { kb.rope.floor_fwd_bwd(t.q, t.k, t.dq, t.dk, t.f) }
        for i, src in ipairs { t.q, t.k, t.dq, t.dk } do same_bits(r[i], src, t.where .. ' floor_fwd_bwd ' .. i) end
        local q0 = t.q:to('cpu')
        kb.rope.floor_fwd_bwd(t.q, t.k, t.dq, t.dk, t.f, { inplace = true })
        same_bits(t.q:to('cpu'), q0, t.where .. ' floor in place')
      end
    end)
  end
end)
