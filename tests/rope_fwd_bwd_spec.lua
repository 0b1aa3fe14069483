-- kb.rope's one-launch entry points: llama4_fwd_bwd / neox_fwd_bwd (the forward of q, k and the
-- backward of dq, dk together) against the separate passes, bit for bit; floor / floor_fwd_bwd
-- and neox_floor / neox_floor_fwd_bwd (the fused call's bytes moved without arithmetic, each
-- style's table read as its kernels read it) against the inputs they copy; their argument
-- errors; and (#gpu) both on cuda against the cpu path, at shapes that take every launch plan
-- of the CUDA kernels (one unit per thread up to the bandwidth-bound eight).
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

-- q, k, dq, dk of case c on device, fresh seeds, and both tables with spare positions: f
-- (llama4's freqs), cos and sin (neox's, in dtype)
local function inputs(c, dtype, device)
  local s = { seed(), seed(), seed(), seed() }
  local rows = c.s + math.random(0, 3)
  local t = {
    q = kb.randn({ c.b, c.s, c.hq, c.d }, dtype, s[1], device),
    k = kb.randn({ c.b, c.s, c.hk, c.d }, dtype, s[2], device),
    dq = kb.randn({ c.b, c.s, c.hq, c.d }, dtype, s[3], device),
    dk = kb.randn({ c.b, c.s, c.hk, c.d }, dtype, s[4], device),
    f = kb.rope.freqs(rows, c.d, { device = device }),
  }
  t.cos, t.sin = kb.rope.cos_sin(rows, c.d, dtype, { device = device })
  t.where = ('%s B=%d S=%d Hq=%d Hk=%d D=%d seeds %d %d %d %d'):format(dtype, c.b, c.s, c.hq, c.hk, c.d,
    s[1], s[2], s[3], s[4])
  return t
end

-- kb.rope.<style>_<kind>(x..., <the style's table of t>, opts): kind fwd, bwd, fwd_bwd, floor or
-- floor_fwd_bwd (llama4's floors are kb.rope.floor and floor_fwd_bwd)
local function call(style, kind, t, ...)
  local n = select('#', ...)
  local x = { ... }
  local opts = x[n]
  local name = (style == 'llama4' and kind:match('^floor')) and kind or (style .. '_' .. kind)
  local fn = kb.rope[name]
  if type(opts) == 'table' then n = n - 1 else opts = nil end
  if style == 'llama4' then x[n + 1], x[n + 2] = t.f, opts
  else x[n + 1], x[n + 2], x[n + 3] = t.cos, t.sin, opts end
  return fn(table.unpack(x, 1, n + (style == 'llama4' and 2 or 3)))
end

local function to_cpu(t)
  local c = { where = t.where }
  for _, n in ipairs { 'q', 'k', 'dq', 'dk', 'f', 'cos', 'sin' } do c[n] = t[n]:to('cpu') end
  return c
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
          local fq, fk = call(style, 'fwd', t, t.q, t.k)
          local bq, bk = call(style, 'bwd', t, t.dq, t.dk)
          for _, impl in ipairs { 'fused', 'reference' } do
            local q, k, dq, dk = call(style, 'fwd_bwd', t, t.q, t.k, t.dq, t.dk, { impl = impl })
            same_bits(q, fq, t.where .. ' ' .. impl .. ' q')
            same_bits(k, fk, t.where .. ' ' .. impl .. ' k')
            same_bits(dq, bq, t.where .. ' ' .. impl .. ' dq')
            same_bits(dk, bk, t.where .. ' ' .. impl .. ' dk')
          end
          local q2, k2, dq2, dk2 = t.q:clone(), t.k:clone(), t.dq:clone(), t.dk:clone()
          local r = { call(style, 'fwd_bwd', t, q2, k2, dq2, dk2, { inplace = true }) }
          assert.equal(q2, r[1])
          assert.equal(dk2, r[4])
          same_bits(q2, fq, t.where .. ' in place q')
          same_bits(dk2, bk, t.where .. ' in place dk')
        end
      end)
    end

    for _, style in ipairs { 'llama4', 'neox' } do
      it(('%s %s: the floors copy their inputs and leave them and the table alone'):format(style, dtype), function()
        for _ = 1, 4 do
          local t = inputs(random_case(), dtype, 'cpu')
          local q0, k0, f0, c0, s0 = t.q:clone(), t.k:clone(), t.f:clone(), t.cos:clone(), t.sin:clone()
          local q, k = call(style, 'floor', t, t.q, t.k)
          assert.are_not.equal(t.q, q)
          same_bits(q, q0, t.where .. ' floor q')
          same_bits(k, k0, t.where .. ' floor k')
          local r = { call(style, 'floor_fwd_bwd', t, t.q, t.k, t.dq, t.dk) }
          for i, src in ipairs { t.q, t.k, t.dq, t.dk } do same_bits(r[i], src, t.where .. ' floor_fwd_bwd ' .. i) end
          local r2 = { call(style, 'floor_fwd_bwd', t, t.q, t.k, t.dq, t.dk, { inplace = true }) }
          assert.equal(t.dq, r2[3])
          same_bits(t.q, q0, t.where .. ' floor in place q')
          same_bits(t.f, f0, t.where .. ' the table')
          same_bits(t.cos, c0, t.where .. ' cos')
          same_bits(t.sin, s0, t.where .. ' sin')
        end
      end)
    end
  end

  it('neox_floor takes a table per token ([batch, seq, head_dim]) as neox_fwd does', function()
    local t = inputs({ b = 3, s = 33, hq = 4, hk = 2, d = 24 }, 'bf16', 'cpu')
    local cos, sin = kb.rope.cos_sin(33, 24, 'bf16', { positions = kb.zeros({ 3, 33 }, 'f32', 'cpu'), device = 'cpu' })
    local r = { kb.rope.neox_floor_fwd_bwd(t.q, t.k, t.dq, t.dk, cos, sin) }
    for i, src in ipairs { t.q, t.k, t.dq, t.dk } do same_bits(r[i], src, t.where .. ' per token ' .. i) end
    local q, k = kb.rope.neox_floor(t.q, t.k, cos, sin, { inplace = true })
    assert.equal(t.q, q)
    assert.equal(t.k, k)
  end)

  -- a timing claim about optimised code: a sanitizer build (-O1, every loop of the copy instrumented, the
  -- floor's memcpy not) times something else
  local sanitized = (kb.build_info().cflags or ''):find('sanitize', 1, true) ~= nil
  local timed_it = sanitized and pending or it
  timed_it('moves its bytes in place on the cpu: the floor is no faster than a copy of them (GB/s within 1.25 x)', function()
    local sub, util = require 'helpers.subprocess', require 'helpers.util'
    local result = require 'kluabench.result'
    local out = util.tmpdir() .. '/r.jsonl'
    local r = sub.run({ sub.root() .. '/scripts/rope.lua', '--hidden', '512', '--seq', '1024,4096', '--mode', 'forward',
      '--provider', 'floor,copy', '--format', 'jsonl', '--out', out, '--audits', '0',
      -- three sessions a point, interleaved with the other points: a burst of load on a shared machine lands in
      -- one session of one provider, not in a whole point's figure (the aggregate is the sessions' mean)
      '--runs', '3' }, { env = { KLUABENCH_BACKEND = 'cpu' } })
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
    local c, sn = kb.rope.cos_sin(4, 8, 'f32')
    fails_with("bad argument #3 to 'llama4_fwd_bwd' (dq has shape [1, 4, 2, 8], q has shape [1, 4, 3, 8]: they must match)",
      function() kb.rope.llama4_fwd_bwd(q, k, k, k, f) end)
    fails_with("bad argument #4 to 'neox_fwd_bwd' (dk is bf16, k is f32)",
      function() kb.rope.neox_fwd_bwd(q, k, q, kb.randn({ 1, 4, 2, 8 }, 'bf16', 3), c, sn) end)
    fails_with("bad argument #5 to 'neox_fwd_bwd' (cos must be a kluabench.Tensor, got nil)",
      function() kb.rope.neox_fwd_bwd(q, k, q:clone(), k:clone()) end)
    fails_with("bad argument #6 to 'neox_fwd_bwd' (sin must be a kluabench.Tensor, got nil)",
      function() kb.rope.neox_fwd_bwd(q, k, q:clone(), k:clone(), c) end)
    fails_with("bad argument #5 to 'neox_fwd_bwd' (cos is bf16, q is f32",
      function() kb.rope.neox_fwd_bwd(q, k, q:clone(), k:clone(), kb.rope.cos_sin(4, 8, 'bf16')) end)
    fails_with("bad argument #8 to 'neox_fwd_bwd' (expected at most 7 arguments)",
      function() kb.rope.neox_fwd_bwd(q, k, q:clone(), k:clone(), c, sn, nil, 1) end)
    fails_with("bad argument #3 to 'neox_floor' (cos has 4 positions, q has seq 5)",
      function() kb.rope.neox_floor(kb.randn({ 1, 5, 3, 8 }, 'f32', 1), kb.randn({ 1, 5, 2, 8 }, 'f32', 2), c, sn) end)
    fails_with("bad argument #5 to 'neox_floor' (unknown option 'impl')",
      function() kb.rope.neox_floor(q, k, c, sn, { impl = 'fused' }) end)
    -- llama4's table where neox's goes
    fails_with("bad argument #5 to 'neox_floor_fwd_bwd' (cos has head_dim 2, q has head_dim 8)",
      function() kb.rope.neox_floor_fwd_bwd(q, k, q:clone(), k:clone(), f, c) end)
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
    local c = to_cpu(t)
    local want = { call(style, 'fwd_bwd', c, c.q, c.k, c.dq, c.dk) }
    if poisoned then
      for _, x in ipairs { t.q, t.k } do poison(x.shape, x.dtype) end
    end
    local got = { call(style, 'fwd_bwd', t, t.q, t.k, t.dq, t.dk) }
    for i = 1, 4 do same_bits(got[i]:to('cpu'), want[i], t.where .. ' full ' .. i) end
    local fq, fk = call(style, 'fwd', t, t.q, t.k)
    same_bits(fq:to('cpu'), want[1], t.where .. ' fwd q')
    same_bits(fk:to('cpu'), want[2], t.where .. ' fwd k')
    local bq, bk = call(style, 'bwd', t, t.dq, t.dk)
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
        call(style, 'fwd', t, t.q, t.k)
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
      for _, n in ipairs { 'q', 'k', 'dq', 'dk', 'f', 'cos', 'sin' } do t[n]:free() end
    end
  end)

  for _, dtype in ipairs { 'bf16', 'f32' } do
    for _, style in ipairs { 'llama4', 'neox' } do
      it(('%s %s: full, forward and backward equal the cpu path at every plan'):format(style, dtype), function()
        for _, c in ipairs(SHAPES) do
          local t = inputs(c, dtype, 'cuda')
          local want = same_as_cpu(style, t, true)
          call(style, 'fwd_bwd', t, t.q, t.k, t.dq, t.dk, { inplace = true })
          same_bits(t.q:to('cpu'), want[1], t.where .. ' full in place q')
          same_bits(t.dk:to('cpu'), want[4], t.where .. ' full in place dk')
        end
      end)
    end

    -- neox's floor reads the first half of every table row (a strided segment): every head_dim
    -- of SHAPES, down to 2, and a table per token
    it(dtype .. ': the floors of both styles copy every byte', function()
      for _, c in ipairs(SHAPES) do
        for _, style in ipairs { 'llama4', 'neox' } do
          local t = inputs(c, dtype, 'cuda')
          local where = t.where .. ' ' .. style
          for _, x in ipairs { t.q, t.k } do poison(x.shape, dtype) end
          local q, k = call(style, 'floor', t, t.q, t.k)
          same_bits(q, t.q, where .. ' floor q')
          same_bits(k, t.k, where .. ' floor k')
          local r = { call(style, 'floor_fwd_bwd', t, t.q, t.k, t.dq, t.dk) }
          for i, src in ipairs { t.q, t.k, t.dq, t.dk } do same_bits(r[i], src, where .. ' floor_fwd_bwd ' .. i) end
          local q0 = t.q:to('cpu')
          call(style, 'floor_fwd_bwd', t, t.q, t.k, t.dq, t.dk, { inplace = true })
          same_bits(t.q:to('cpu'), q0, where .. ' floor in place')
        end
        local t = inputs(c, dtype, 'cuda')
        local pos = kb.zeros({ c.b, c.s }, 'f32', 'cpu')
        local cos, sin = kb.rope.cos_sin(c.s, c.d, dtype, { positions = pos, device = 'cuda' })
        local r = { kb.rope.neox_floor_fwd_bwd(t.q, t.k, t.dq, t.dk, cos, sin) }
        for i, src in ipairs { t.q, t.k, t.dq, t.dk } do same_bits(r[i], src, t.where .. ' per token ' .. i) end
      end
    end)
  end
end)
