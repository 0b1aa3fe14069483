-- kb.rope: both tables (llama4's f32 freqs, neox's cos and sin in the model's
-- dtype) against values computed here step by step as Hugging Face computes
-- them, both RoPE conventions against a float64 reference computed in Lua from
-- t:totable() and the same table, the identities that tie the entry points
-- together (bwd after fwd, in place, fused and reference), every argument
-- error, and (#gpu) the CUDA kernels against the CPU path on the same inputs,
-- bit for bit.
local kb = require 'kluabench'

local DTYPES = { 'bf16', 'f16', 'f32', 'f64' }
-- relative L2 error against the f64 reference, and per element relative to
-- the magnitude of the rotated pair
local TOL = { bf16 = 8e-3, f16 = 1e-3, f32 = 1e-6, f64 = 1e-12 }
local ELEM_TOL = { bf16 = 2 ^ -7, f16 = 2 ^ -10, f32 = 2 ^ -22, f64 = 1e-14 }
-- how far from unitary a (cos, sin) pair of the table may be: f32 for llama4
-- (and for neox in f32 and f64, whose table holds f32 values), the dtype's
-- rounding for neox in bf16 and f16
local UNITARY = { bf16 = 2 ^ -7, f16 = 2 ^ -10, f32 = 2 ^ -22, f64 = 2 ^ -22 }

local function seed() return math.random(1, 2 ^ 31) end
local function f32(x) return (string.unpack('f', string.pack('f', x))) end

-- x rounded to nearest even with `bits` fraction bits and `emin` the least
-- normal exponent: the f32 -> bf16 (7, -126) and f32 -> f16 (10, -14) casts
-- of values far from overflow.
local function round_float(x, bits, emin)
  if x == 0 then return x end
  local a = math.abs(x)
  local e = math.floor(math.log(a, 2))
  if 2.0 ^ e > a then e = e - 1 elseif 2.0 ^ (e + 1) <= a then e = e + 1 end
  local q = 2.0 ^ (math.max(e, emin) - bits)
  local r = x / q
  local n = math.floor(r)
  if r - n > 0.5 or (r - n == 0.5 and n % 2 == 1) then n = n + 1 end
  return n * q
end
-- an f32 value cast to dtype, as .to(dtype) does
local CAST = {
  bf16 = function(x) return round_float(x, 7, -126) end,
  f16 = function(x) return round_float(x, 10, -14) end,
  f32 = function(x) return x end, f64 = function(x) return x end,
}

local function fn_of(style, bwd) return kb.rope[style .. (bwd and '_bwd' or '_fwd')] end

-- The table of a style, as an argument list: {freqs} (llama4, f32) or {cos,
-- sin} (neox, in dtype), with `rows` positions.
local function table_of(style, rows, d, dtype, device)
  if style == 'llama4' then return { kb.rope.freqs(rows, d, { device = device }) } end
  return { kb.rope.cos_sin(rows, d, dtype, { device = device }) }
end

-- kb.rope.<style>_<fwd|bwd>(q, k, <table>, opts)
local function rot(style, bwd, q, k, tab, opts)
  if #tab == 1 then return fn_of(style, bwd)(q, k, tab[1], opts) end
  return fn_of(style, bwd)(q, k, tab[1], tab[2], opts)
end

local function to_cpu(tab)
  local out = {}
  for i, t in ipairs(tab) do out[i] = t:to('cpu') end
  return out
end

-- A random case: B in 1..3, S from a list of sizes that are no multiple of
-- any block size, Hq ~= Hk (Hq at most maxh, default 5), D from `dims`.
local function random_case(dims, seqs, maxh)
  local hq = math.random(2, maxh or 5)
  return {
    b = math.random(1, 3), s = seqs[math.random(#seqs)],
    hq = hq, hk = math.random(1, hq - 1), d = dims[math.random(#dims)],
  }
end

-- q, k and the style's table (spare positions) of case c; style defaults to llama4
local function inputs(c, dtype, device, style)
  local sq, sk = seed(), seed()
  local q = kb.randn({ c.b, c.s, c.hq, c.d }, dtype, sq, device)
  local k = kb.randn({ c.b, c.s, c.hk, c.d }, dtype, sk, device)
  local tab = table_of(style or 'llama4', c.s + math.random(0, 3), c.d, dtype, device)
  local where = ('%s B=%d S=%d Hq=%d Hk=%d D=%d seeds %d %d'):format(dtype, c.b, c.s, c.hq, c.hk, c.d, sq, sk)
  return q, k, tab, where
end

-- The (cos, sin) of token (b, s) and frequency i (0-based) from a table given
-- as an argument list: llama4's freqs [S_f, D/2, 2]; neox's cos and sin [1,
-- S_f, D] (row s) or [B, S, D] (row b * S + s), first half of the row (the
-- second must equal it).
local function table_reader(tab, S, D)
  if #tab == 1 then
    local f = tab[1]:totable()
    return function(_, s, i) return f[s * D + 2 * i + 1], f[s * D + 2 * i + 2] end
  end
  local c, sn, per_token = tab[1]:totable(), tab[2]:totable(), tab[1].shape[1] > 1
  return function(b, s, i)
    local at = ((per_token and b * S or 0) + s) * D + i + 1
    assert(c[at] == c[at + D // 2] and sn[at] == sn[at + D // 2], 'the halves of a table row differ')
    return c[at], sn[at]
  end
end

-- The float64 rotation of x (flat, 1-based, [B, S, H, D]) by the table (an
-- argument list, table_reader): what both kernels must compute, before
-- rounding.
local function rope_ref(style, bwd, x, shape, tab)
  local B, S, H, D = shape[1], shape[2], shape[3], shape[4]
  local half, sign, out, mag = D // 2, bwd and -1 or 1, {}, {}
  local at = table_reader(tab, S, D)
  for b = 0, B - 1 do
    for s = 0, S - 1 do
      for h = 0, H - 1 do
        local base = ((b * S + s) * H + h) * D
        for i = 0, half - 1 do
          local c, sn = at(b, s, i)
          sn = sign * sn
          local lo, hi
          if style == 'llama4' then lo, hi = base + 2 * i + 1, base + 2 * i + 2
          else lo, hi = base + i + 1, base + i + half + 1 end
          local re, im = x[lo], x[hi]
          out[lo], out[hi] = re * c - im * sn, re * sn + im * c
          mag[lo] = math.abs(re) + math.abs(im)
          mag[hi] = mag[lo]
        end
      end
    end
  end
  return out, mag
end

-- Asserts that tensor `got` matches the reference within the dtype's
-- tolerances; returns the relative L2 error.
local function check_close(got, ref, mag, dtype, where)
  local g = got:totable()
  assert.equal(#ref, #g, where)
  local num, den = 0, 0
  for i = 1, #g do
    local e = g[i] - ref[i]
    assert(e == e, where .. ': NaN at element ' .. i)
    assert(math.abs(e) <= ELEM_TOL[dtype] * mag[i] + 1e-300,
      ('%s: element %d is %.17g, expected %.17g'):format(where, i, g[i], ref[i]))
    num, den = num + e * e, den + ref[i] * ref[i]
  end
  assert(den > 0, where .. ': reference is all zeros')
  local rel = math.sqrt(num / den)
  assert(rel <= TOL[dtype], ('%s: relative error %.3g > %.3g'):format(where, rel, TOL[dtype]))
  return rel
end

local function same_bits(a, b, where)
  local d = kb.max_abs_diff(a, b)
  assert(d == 0, ('%s: differs by %s'):format(where, tostring(d)))
end

-- pcall(fn) must fail with a message containing `needle`.
local function fails_with(needle, fn)
  local ok, err = pcall(fn)
  assert(not ok, 'expected an error containing: ' .. needle)
  assert(tostring(err):find(needle, 1, true), ('error %q does not contain %q'):format(tostring(err), needle))
end

describe('kb.rope.freqs', function()
  it('matches values computed by hand for positions 0, 1, 2 and head_dim 4', function()
    -- inv_freq = {1, 1 / 10000^(2/4)} = {1, f32(0.01)}; angle = f32(pos * inv_freq)
    local f = kb.rope.freqs(3, 4, { device = 'cpu' })
    assert.same({ 3, 2, 2 }, f.shape)
    assert.equal('f32', f.dtype)
    local inv1 = f32(1 / f32(100))
    local want = {}
    for p = 0, 2 do
      for _, a in ipairs { f32(p * 1), f32(p * inv1) } do
        want[#want + 1] = f32(math.cos(a))
        want[#want + 1] = f32(math.sin(a))
      end
    end
    assert.same(want, f:totable())
    local t = f:totable()
    assert.same({ 1, 0, 1, 0 }, { t[1], t[2], t[3], t[4] })
    assert.near(0.5403023, t[5], 1e-7)  -- cos 1
    assert.near(0.8414710, t[6], 1e-7)  -- sin 1
    assert.near(0.9999500, t[7], 1e-7)  -- cos 0.01
    assert.near(0.0099998, t[8], 1e-7)  -- sin 0.01
    assert.near(-0.4161468, t[9], 1e-7) -- cos 2
  end)

  it('follows theta, step by step in f32', function()
    local d, theta = 8, 500000
    local t = kb.rope.freqs(2, d, { theta = theta, device = 'cpu' }):totable()
    for i = 0, d // 2 - 1 do
      local inv = f32(1 / f32(f32(theta) ^ f32(f32(2 * i) / d)))
      assert.equal(f32(math.cos(inv)), t[d + 2 * i + 1])
      assert.equal(f32(math.sin(inv)), t[d + 2 * i + 2])
    end
  end)

  it('takes positions as a list or as a tensor of any dtype', function()
    local all = kb.rope.freqs(8, 16, { device = 'cpu' }):totable()
    local pos = { 5, 0, 7, 2 }
    local row = 16
    local want = {}
    for _, p in ipairs(pos) do
      for j = 1, row do want[#want + 1] = all[p * row + j] end
    end
    assert.same(want, kb.rope.freqs(4, 16, { positions = pos, device = 'cpu' }):totable())
    for _, dt in ipairs(DTYPES) do
      local pt = kb.from_table(pos, { 1, 4 }, dt, 'cpu')
      assert.same(want, kb.rope.freqs(4, 16, { positions = pt, device = 'cpu' }):totable())
    end
  end)

  it('applies llama3 scaling to inv_freq as Hugging Face does', function()
    local d, theta = 128, 500000
    local sc = { factor = 8, low_freq_factor = 1, high_freq_factor = 4, original_max_position_embeddings = 8192 }
    local t = kb.rope.freqs(2, d, { theta = theta, scaling = sc, device = 'cpu' }):totable()
    local plain = kb.rope.freqs(2, d, { theta = theta, device = 'cpu' }):totable()
    local low_wl = f32(sc.original_max_position_embeddings / sc.low_freq_factor)
    local high_wl = f32(sc.original_max_position_embeddings / sc.high_freq_factor)
    local bands = { kept = 0, divided = 0, smoothed = 0 }
    for i = 0, d // 2 - 1 do
      local inv = f32(1 / f32(f32(theta) ^ f32(f32(2 * i) / d)))
      local wl = f32(f32(2 * math.pi) / inv)
      local s = inv
      if wl > low_wl then s, bands.divided = f32(inv / sc.factor), bands.divided + 1 end
      if not (wl < high_wl) and not (wl > low_wl) then
        local smooth = f32(f32(f32(sc.original_max_position_embeddings / wl) - sc.low_freq_factor)
          / (sc.high_freq_factor - sc.low_freq_factor))
        s = f32(f32(f32(f32(1 - smooth) * s) / sc.factor) + f32(smooth * s))
        bands.smoothed = bands.smoothed + 1
      elseif wl < high_wl then
        bands.kept = bands.kept + 1
      end
      assert.equal(f32(math.cos(s)), t[d + 2 * i + 1], 'cos at i = ' .. i)
      assert.equal(f32(math.sin(s)), t[d + 2 * i + 2], 'sin at i = ' .. i)
      if wl < high_wl then assert.equal(plain[d + 2 * i + 1], t[d + 2 * i + 1]) end
    end
    -- the case covers all three bands of the formula
    assert.is_true(bands.kept > 0 and bands.divided > 0 and bands.smoothed > 0)
  end)

  it('rejects bad arguments', function()
    fails_with("bad argument #1 to 'freqs' (seq_len must be a non-negative integer, got -1)",
      function() kb.rope.freqs(-1, 4) end)
    fails_with("seq_len must be a non-negative integer, got 2.5", function() kb.rope.freqs(2.5, 4) end)
    fails_with("bad argument #2 to 'freqs' (head_dim must be a positive even integer, got 7)",
      function() kb.rope.freqs(4, 7) end)
    fails_with("head_dim must be a positive even integer, got no value", function() kb.rope.freqs(4) end)
    fails_with("bad argument #3 to 'freqs' (opts must be a table, got string)",
      function() kb.rope.freqs(4, 8, 'x') end)
    fails_with("unknown option 'thetta'", function() kb.rope.freqs(4, 8, { thetta = 1 }) end)
    fails_with("opts.theta must be a positive number, got -5", function() kb.rope.freqs(4, 8, { theta = -5 }) end)
    fails_with("opts.positions has 3 entries, seq_len is 4",
      function() kb.rope.freqs(4, 8, { positions = { 1, 2, 3 } }) end)
    fails_with("opts.positions[2] must be a number, got string",
      function() kb.rope.freqs(2, 8, { positions = { 1, 'x' } }) end)
    fails_with("opts.positions has 5 elements, seq_len is 4",
      function() kb.rope.freqs(4, 8, { positions = kb.zeros({ 5 }, 'f32', 'cpu') }) end)
    local freed = kb.zeros({ 4 }, 'f32', 'cpu')
    freed:free()
    fails_with("opts.positions has been freed", function() kb.rope.freqs(4, 8, { positions = freed }) end)
    fails_with("opts.scaling.factor must be a positive number, got nil",
      function() kb.rope.freqs(4, 8, { scaling = { low_freq_factor = 1, high_freq_factor = 4,
        original_max_position_embeddings = 8192 } }) end)
    fails_with("opts.scaling.high_freq_factor (1) must exceed low_freq_factor (4)",
      function() kb.rope.freqs(4, 8, { scaling = { factor = 8, low_freq_factor = 4, high_freq_factor = 1,
        original_max_position_embeddings = 8192 } }) end)
    fails_with("unknown option 'scaling.facter'", function() kb.rope.freqs(4, 8, { scaling = { facter = 8 } }) end)
    fails_with("bad argument #3 to 'freqs' (opts.device: unknown device 'tpu'",
      function() kb.rope.freqs(4, 8, { device = 'tpu' }) end)
  end)
end)

describe('kb.rope.cos_sin', function()
  -- inv_freq, the angles and cos/sin in f32 as HF's LlamaRotaryEmbedding computes them (every
  -- step rounded to f32, cos and sin correctly rounded), then .to(dtype): the expected table,
  -- flat [rows, D]
  local function hf_cos_sin(positions, d, theta, dtype)
    local c, sn = {}, {}
    for r, pos in ipairs(positions) do
      for i = 0, d // 2 - 1 do
        local inv = f32(1 / f32(f32(theta) ^ f32(f32(2 * i) / d)))
        local angle = f32(f32(pos) * inv)
        local cv, sv = CAST[dtype](f32(math.cos(angle))), CAST[dtype](f32(math.sin(angle)))
        local lo, hi = (r - 1) * d + i + 1, (r - 1) * d + i + d // 2 + 1
        c[lo], c[hi], sn[lo], sn[hi] = cv, cv, sv, sv
      end
    end
    return c, sn
  end

  it("equals HF's LlamaRotaryEmbedding in every dtype: cat(angles, angles), cos and sin in f32, cast to the dtype", function()
    local positions = {}
    for p = 0, 299 do positions[#positions + 1] = p end
    for _, dtype in ipairs(DTYPES) do
      for _, case in ipairs { { d = 128, theta = 500000 }, { d = 16, theta = 10000 } } do
        local c, sn = kb.rope.cos_sin(300, case.d, dtype, { theta = case.theta, device = 'cpu' })
        assert.same({ 1, 300, case.d }, c.shape)
        assert.same({ 1, 300, case.d }, sn.shape)
        assert.equal(dtype, c.dtype)
        assert.equal(dtype, sn.dtype)
        local wc, ws = hf_cos_sin(positions, case.d, case.theta, dtype)
        local gc, gs = c:totable(), sn:totable()
        for j = 1, #wc do
          if gc[j] ~= wc[j] or gs[j] ~= ws[j] then
            error(('%s D=%d element %d: cos %.17g sin %.17g, expected %.17g %.17g'):format(dtype, case.d, j,
              gc[j], gs[j], wc[j], ws[j]))
          end
        end
      end
    end
    -- the rounding was exercised: bf16 values differ from the f32 table's
    local b16, f = kb.rope.cos_sin(300, 128, 'bf16', { device = 'cpu' }), kb.rope.cos_sin(300, 128, 'f32', { device = 'cpu' })
    assert.is_true(kb.max_abs_diff(b16:to('f32'), f) > 0)
  end)

  it('holds the f32 values of kb.rope.freqs, each twice in a row', function()
    local c, sn = kb.rope.cos_sin(37, 24, 'f32', { theta = 500000, device = 'cpu' })
    local f = kb.rope.freqs(37, 24, { theta = 500000, device = 'cpu' }):totable()
    local ct, st = c:totable(), sn:totable()
    for s = 0, 36 do
      for i = 0, 11 do
        for _, at in ipairs { s * 24 + i + 1, s * 24 + i + 13 } do
          assert.equal(f[s * 24 + 2 * i + 1], ct[at])
          assert.equal(f[s * 24 + 2 * i + 2], st[at])
        end
      end
    end
  end)

  it('takes positions as a list, a tensor, or a tensor [batch, seq_len] for a row per token', function()
    local pos = { 5, 0, 7, 2 }
    local want_c, want_s = hf_cos_sin(pos, 16, 10000, 'bf16')
    local c, sn = kb.rope.cos_sin(4, 16, 'bf16', { positions = pos, device = 'cpu' })
    assert.same(want_c, c:totable())
    assert.same(want_s, sn:totable())
    local c2 = kb.rope.cos_sin(4, 16, 'bf16', { positions = kb.from_table(pos, { 4 }, 'f32', 'cpu'), device = 'cpu' })
    assert.same(want_c, c2:totable())
    local two = { 5, 0, 7, 2, 1, 2, 3, 4 }
    local cb, sb = kb.rope.cos_sin(4, 16, 'f16', { positions = kb.from_table(two, { 2, 4 }, 'f64', 'cpu'), device = 'cpu' })
    assert.same({ 2, 4, 16 }, cb.shape)
    local wc, ws = hf_cos_sin(two, 16, 10000, 'f16')
    assert.same(wc, cb:totable())
    assert.same(ws, sb:totable())
  end)

  it('rejects bad arguments', function()
    fails_with("bad argument #3 to 'cos_sin' (dtype must be 'bf16', 'f16', 'f32' or 'f64', got 'fp8')",
      function() kb.rope.cos_sin(4, 8, 'fp8') end)
    fails_with("bad argument #3 to 'cos_sin' (dtype must be 'bf16', 'f16', 'f32' or 'f64', got no value)",
      function() kb.rope.cos_sin(4, 8) end)
    fails_with("bad argument #2 to 'cos_sin' (head_dim must be a positive even integer, got 7)",
      function() kb.rope.cos_sin(4, 7, 'bf16') end)
    fails_with("bad argument #1 to 'cos_sin' (seq_len must be a non-negative integer, got -1)",
      function() kb.rope.cos_sin(-1, 8, 'bf16') end)
    fails_with("bad argument #4 to 'cos_sin' (unknown option 'thetta')",
      function() kb.rope.cos_sin(4, 8, 'bf16', { thetta = 1 }) end)
    fails_with("bad argument #5 to 'cos_sin' (expected at most 4 arguments)",
      function() kb.rope.cos_sin(4, 8, 'bf16', {}, 1) end)
    fails_with("opts.positions has 6 elements, seq_len is 4 (or [batch, seq_len])",
      function() kb.rope.cos_sin(4, 8, 'bf16', { positions = kb.zeros({ 2, 3 }, 'f32', 'cpu') }) end)
  end)
end)

describe('kb.rope on cpu', function()
  local cases = {}
  for _, dtype in ipairs(DTYPES) do
    for _, style in ipairs { 'llama4', 'neox' } do
      for _, bwd in ipairs { false, true } do cases[#cases + 1] = { dtype, style, bwd } end
    end
  end

  for ci, cs in ipairs(cases) do
    local dtype, style, bwd = cs[1], cs[2], cs[3]
    local name = ('%s_%s %s matches the float64 formula'):format(style, bwd and 'bwd' or 'fwd', dtype)
    it(name, function()
      -- two of the three shape kinds per case, rotating, so that every
      -- dtype and style meets every head_dim over the 16 cases
      local kinds = { function() return random_case({ 16 }, { 257 }, 3) end,
        function() return random_case({ 64 }, { 129 }, 3) end,
        function() return random_case({ 128, 256 }, { 37 }, 3) end }
      for j = 0, 1 do
        local c = kinds[(ci + j) % 3 + 1]()
        local q, k, tab, where = inputs(c, dtype, 'cpu', style)
        local qo, ko = rot(style, bwd, q, k, tab)
        for _, p in ipairs { { q, qo, 'q' }, { k, ko, 'k' } } do
          local ref, mag = rope_ref(style, bwd, p[1]:totable(), p[1].shape, tab)
          check_close(p[2], ref, mag, dtype, where .. ' ' .. name .. ' ' .. p[3])
          assert.same(p[1].shape, p[2].shape)
          assert.equal(dtype, p[2].dtype)
        end
      end
    end)
  end

  it('backward after forward gives the input back', function()
    for _, dtype in ipairs(DTYPES) do
      for _, style in ipairs { 'llama4', 'neox' } do
        local c = random_case({ 16, 64, 128, 256 }, { 37, 129 })
        local q, k, tab, where = inputs(c, dtype, 'cpu', style)
        local qf, kf = rot(style, false, q, k, tab)
        local qb, kb_ = rot(style, true, qf, kf, tab)
        for _, p in ipairs { { q, qb }, { k, kb_ } } do
          -- the (cos, sin) pairs are unitary only to the table's precision: f32 for llama4, the
          -- dtype's for neox
          local unitary = style == 'llama4' and 2 ^ -22 or UNITARY[dtype]
          local rel = kb.rel_l2(p[2], p[1])
          assert(rel <= 2 * TOL[dtype] + unitary, ('%s %s: bwd(fwd(x)) off by %.3g'):format(where, style, rel))
        end
      end
    end
  end)

  it('in place equals out of place and returns its arguments', function()
    for _, dtype in ipairs(DTYPES) do
      for _, style in ipairs { 'llama4', 'neox' } do
        for _, bwd in ipairs { false, true } do
          for _, impl in ipairs { 'fused', 'reference' } do
            local q, k, tab, where = inputs(random_case({ 16, 64, 128 }, { 37 }), dtype, 'cpu', style)
            local qo, ko = rot(style, bwd, q, k, tab, { impl = impl })
            local q2, k2 = q:clone(), k:clone()
            local r1, r2 = rot(style, bwd, q2, k2, tab, { impl = impl, inplace = true })
            assert.is_true(rawequal(r1, q2) and rawequal(r2, k2))
            same_bits(q2, qo, where .. ' in place q')
            same_bits(k2, ko, where .. ' in place k')
          end
        end
      end
    end
  end)

  it('fused equals reference bit for bit', function()
    for _, dtype in ipairs(DTYPES) do
      for _, style in ipairs { 'llama4', 'neox' } do
        for _, bwd in ipairs { false, true } do
          local q, k, tab, where = inputs(random_case({ 2, 6, 16, 64, 256 }, { 37, 129 }), dtype, 'cpu', style)
          local qa, ka = rot(style, bwd, q, k, tab)
          local qb, kb_ = rot(style, bwd, q, k, tab, { impl = 'reference' })
          same_bits(qa, qb, where .. ' fused/reference q')
          same_bits(ka, kb_, where .. ' fused/reference k')
        end
      end
    end
  end)

  it('llama4 and neox are different rotations', function()
    local q, k, tab = inputs({ b = 1, s = 37, hq = 3, hk = 2, d = 64 }, 'f32', 'cpu')
    local ql = kb.rope.llama4_fwd(q, k, tab[1])
    local qn = kb.rope.neox_fwd(q, k, kb.rope.cos_sin(37, 64, 'f32', { device = 'cpu' }))
    assert.is_true(kb.max_abs_diff(ql, qn) > 0.1)
    -- position 0 is the identity for both
    local x, a, b = q:totable(), ql:totable(), qn:totable()
    for i = 1, 3 * 64 do
      assert.equal(x[i], a[i])
      assert.equal(x[i], b[i])
    end
  end)

  it('handles head_dim 2, empty batches and a longer table', function()
    for _, style in ipairs { 'llama4', 'neox' } do
      local q, k, tab, where = inputs({ b = 2, s = 5, hq = 3, hk = 1, d = 2 }, 'f64', 'cpu', style)
      local qo = rot(style, false, q, k, tab)
      local ref, mag = rope_ref(style, false, q:totable(), q.shape, tab)
      check_close(qo, ref, mag, 'f64', where .. ' ' .. style)
    end
    local e = kb.empty({ 0, 4, 2, 8 }, 'bf16', 'cpu')
    local qo, ko = kb.rope.llama4_fwd(e, e, kb.rope.freqs(4, 8, { device = 'cpu' }))
    assert.same({ 0, 4, 2, 8 }, qo.shape)
    assert.equal(0, ko:numel())
    local qn, kn = kb.rope.neox_fwd(e, e, kb.rope.cos_sin(4, 8, 'bf16', { device = 'cpu' }))
    assert.same({ 0, 4, 2, 8 }, qn.shape)
    assert.equal(0, kn:numel())
  end)

  it('neox: a table per token ([batch, seq, head_dim]) rotates each batch by its own rows', function()
    for _, dtype in ipairs(DTYPES) do
      local c = { b = 3, s = 37, hq = 3, hk = 2, d = 16 }
      local q, k, _, where = inputs(c, dtype, 'cpu', 'neox')
      -- batch b at positions 5b .. 5b + 36: each batch equals its own call with a shared table
      local pos = {}
      for b = 0, 2 do for s = 0, 36 do pos[#pos + 1] = 5 * b + s end end
      local cos, sin = kb.rope.cos_sin(37, 16, dtype, { device = 'cpu',
        positions = kb.from_table(pos, { 3, 37 }, 'f64', 'cpu') })
      for _, bwd in ipairs { false, true } do
        for _, impl in ipairs { 'fused', 'reference' } do
          local qo, ko = rot('neox', bwd, q, k, { cos, sin }, { impl = impl })
          local ref, mag = rope_ref('neox', bwd, q:totable(), q.shape, { cos, sin })
          check_close(qo, ref, mag, dtype, where .. ' per token ' .. impl)
          ref, mag = rope_ref('neox', bwd, k:totable(), k.shape, { cos, sin })
          check_close(ko, ref, mag, dtype, where .. ' per token ' .. impl .. ' k')
          local qs = qo:totable()
          for b = 0, 2 do
            local one = {}
            for s = 0, 36 do one[#one + 1] = 5 * b + s end
            local cb, sb = kb.rope.cos_sin(37, 16, dtype, { device = 'cpu', positions = one })
            local qb = kb.from_table({ table.unpack(q:totable(), b * 37 * 48 + 1, (b + 1) * 37 * 48) }, { 1, 37, 3, 16 }, dtype, 'cpu')
            local kb1 = kb.zeros({ 1, 37, 2, 16 }, dtype, 'cpu')
            local want = rot('neox', bwd, qb, kb1, { cb, sb }, { impl = impl }):totable()
            for j = 1, #want do
              assert(want[j] == qs[b * 37 * 48 + j], ('%s batch %d element %d'):format(where, b, j))
            end
          end
        end
      end
    end
  end)

  it('neox: the fused paths read the first half of each table row; reference reads whole rows', function()
    local q, k, tab = inputs({ b = 1, s = 9, hq = 2, hk = 1, d = 8 }, 'f32', 'cpu', 'neox')
    local good = { rot('neox', false, q, k, tab) }
    -- the second halves of cos and sin replaced by zeros: a table HF would never hand
    local halves = {}
    for i, t in ipairs(tab) do
      local v = t:totable()
      for s = 0, t.shape[2] - 1 do for j = 5, 8 do v[s * 8 + j] = 0 end end
      halves[i] = kb.from_table(v, t.shape, 'f32', 'cpu')
    end
    local fused = { rot('neox', false, q, k, halves) }
    same_bits(fused[1], good[1], 'fused q')
    same_bits(fused[2], good[2], 'fused k')
    same_bits(kb.rope.neox_fwd_bwd(q, k, q, k, halves[1], halves[2]), good[1], 'full q')
    local ref = rot('neox', false, q, k, halves, { impl = 'reference' })
    assert.is_true(kb.max_abs_diff(ref, good[1]) > 0)
  end)

  describe('argument errors', function()
    local q = kb.randn({ 1, 8, 4, 16 }, 'bf16', 1, 'cpu')
    local k = kb.randn({ 1, 8, 2, 16 }, 'bf16', 2, 'cpu')
    local f = kb.rope.freqs(8, 16, { device = 'cpu' })
    local c, sn = kb.rope.cos_sin(8, 16, 'bf16', { device = 'cpu' })

    it('names the function and the argument', function()
      fails_with("bad argument #3 to 'llama4_fwd' (freqs must be a kluabench.Tensor, got nil)",
        function() kb.rope.llama4_fwd(q, k) end)
      fails_with("bad argument #1 to 'neox_fwd' (q must be a kluabench.Tensor, got number)",
        function() kb.rope.neox_fwd(1, k, c, sn) end)
      fails_with("bad argument #2 to 'llama4_bwd' (k must be a kluabench.Tensor, got table)",
        function() kb.rope.llama4_bwd(q, {}, f) end)
      fails_with("bad argument #6 to 'neox_bwd' (expected at most 5 arguments)",
        function() kb.rope.neox_bwd(q, k, c, sn, {}, 1) end)
      fails_with("bad argument #5 to 'llama4_bwd' (expected at most 4 arguments)",
        function() kb.rope.llama4_bwd(q, k, f, {}, 1) end)
      fails_with("bad argument #4 to 'neox_fwd' (sin must be a kluabench.Tensor, got nil)",
        function() kb.rope.neox_fwd(q, k, c) end)
      -- the name does not depend on how the function was reached
      local alias = kb.rope.llama4_fwd
      fails_with("bad argument #3 to 'llama4_fwd'", function() alias(q, k, 'x') end)
      local ok, err = pcall(alias, q, k)
      assert.is_false(ok)
      assert.truthy(err:find("bad argument #3 to 'llama4_fwd' (freqs must be a kluabench.Tensor, got nil)", 1, true))
    end)

    it('checks shapes', function()
      fails_with("bad argument #1 to 'llama4_fwd' (q must be 4-D [batch, seq, heads, head_dim], got shape [8, 4, 16])",
        function() kb.rope.llama4_fwd(kb.empty({ 8, 4, 16 }, 'bf16', 'cpu'), k, f) end)
      fails_with("bad argument #2 to 'llama4_fwd' (k must be 4-D",
        function() kb.rope.llama4_fwd(q, kb.empty({ 8, 2, 16 }, 'bf16', 'cpu'), f) end)
      fails_with("bad argument #2 to 'llama4_fwd' (k has shape [2, 8, 2, 16], q has shape [1, 8, 4, 16]: batch and seq must match)",
        function() kb.rope.llama4_fwd(q, kb.empty({ 2, 8, 2, 16 }, 'bf16', 'cpu'), f) end)
      fails_with("k has shape [1, 7, 2, 16], q has shape [1, 8, 4, 16]",
        function() kb.rope.neox_fwd(q, kb.empty({ 1, 7, 2, 16 }, 'bf16', 'cpu'), c, sn) end)
      fails_with("bad argument #1 to 'llama4_fwd' (q has head_dim 15, RoPE needs a positive even head_dim)",
        function() kb.rope.llama4_fwd(kb.empty({ 1, 8, 4, 15 }, 'bf16', 'cpu'),
          kb.empty({ 1, 8, 2, 15 }, 'bf16', 'cpu'), f) end)
      fails_with("bad argument #2 to 'neox_fwd' (k has head_dim 32, q has head_dim 16)",
        function() kb.rope.neox_fwd(q, kb.empty({ 1, 8, 2, 32 }, 'bf16', 'cpu'), c, sn) end)
    end)

    it('checks freqs', function()
      fails_with("bad argument #3 to 'llama4_fwd' (freqs has 4 positions, q has seq 8)",
        function() kb.rope.llama4_fwd(q, k, kb.rope.freqs(4, 16, { device = 'cpu' })) end)
      fails_with("bad argument #3 to 'llama4_fwd' (freqs must be f32, got bf16)",
        function() kb.rope.llama4_fwd(q, k, f:to('bf16')) end)
      fails_with("bad argument #3 to 'llama4_bwd' (freqs must be [seq, 8, 2] for head_dim 16, got shape [8, 16, 2])",
        function() kb.rope.llama4_bwd(q, k, kb.rope.freqs(8, 32, { device = 'cpu' })) end)
      fails_with("freqs must be [seq, 8, 2] for head_dim 16, got shape [8, 16]",
        function() kb.rope.llama4_bwd(q, k, kb.empty({ 8, 16 }, 'f32', 'cpu')) end)
    end)

    it('checks cos and sin', function()
      local function cs(seq, d, dtype, o)
        o = o or {}
        o.device = 'cpu'
        return kb.rope.cos_sin(seq, d, dtype or 'bf16', o)
      end
      fails_with("bad argument #3 to 'neox_fwd' (cos must be a kluabench.Tensor, got nil)",
        function() kb.rope.neox_fwd(q, k) end)
      fails_with("bad argument #3 to 'neox_fwd' (cos is f32, q is bf16: the table comes in q's dtype "
        .. "(kb.rope.cos_sin(seq, head_dim, 'bf16')))", function() kb.rope.neox_fwd(q, k, cs(8, 16, 'f32')) end)
      fails_with("bad argument #3 to 'neox_bwd' (cos must be [1 or batch, seq, head_dim], got shape [8, 16])",
        function() kb.rope.neox_bwd(q, k, kb.empty({ 8, 16 }, 'bf16', 'cpu'), kb.empty({ 8, 16 }, 'bf16', 'cpu')) end)
      fails_with("bad argument #3 to 'neox_fwd' (cos has head_dim 32, q has head_dim 16)",
        function() kb.rope.neox_fwd(q, k, cs(8, 32)) end)
      fails_with("bad argument #3 to 'neox_fwd' (cos has 4 positions, q has seq 8)",
        function() kb.rope.neox_fwd(q, k, cs(4, 16)) end)
      local two = kb.from_table({ 0, 1, 2, 3, 4, 5, 6, 7, 8, 0, 1, 2, 3, 4, 5, 6, 7, 8 }, { 2, 9 }, 'f32', 'cpu')
      fails_with("bad argument #3 to 'neox_fwd' (cos has batch 2, q has batch 1: cos must have batch 1 or q's)",
        function() kb.rope.neox_fwd(q, k, cs(9, 16, 'bf16', { positions = two })) end)
      local q2, k2 = kb.randn({ 2, 8, 4, 16 }, 'bf16', 1, 'cpu'), kb.randn({ 2, 8, 2, 16 }, 'bf16', 2, 'cpu')
      fails_with("bad argument #3 to 'neox_fwd' (cos has batch 2 and 9 positions: a table per batch must have q's seq (8))",
        function() kb.rope.neox_fwd(q2, k2, cs(9, 16, 'bf16', { positions = two })) end)
      fails_with("bad argument #4 to 'neox_fwd' (sin is bf16 [1, 9, 16], cos is bf16 [1, 8, 16]: they must match)",
        function() kb.rope.neox_fwd(q, k, c, select(2, cs(9, 16))) end)
      fails_with("bad argument #4 to 'neox_fwd' (sin is f16 [1, 8, 16], cos is bf16 [1, 8, 16]: they must match)",
        function() kb.rope.neox_fwd(q, k, c, select(2, cs(8, 16, 'f16'))) end)
      fails_with("bad argument #4 to 'neox_fwd' (sin must be", function() kb.rope.neox_fwd(q, k, c, 'x') end)
    end)

    it('checks dtypes, devices and freed tensors', function()
      fails_with("bad argument #2 to 'llama4_fwd' (k is f16, q is bf16)",
        function() kb.rope.llama4_fwd(q, k:to('f16'), f) end)
      local dead = k:clone()
      dead:free()
      fails_with("bad argument #2 to 'llama4_fwd' (k has been freed)", function() kb.rope.llama4_fwd(q, dead, f) end)
      local deadf = f:clone()
      deadf:free()
      fails_with("bad argument #3 to 'llama4_fwd' (freqs has been freed)", function() kb.rope.llama4_fwd(q, k, deadf) end)
      local deadc = c:clone()
      deadc:free()
      fails_with("bad argument #3 to 'neox_fwd' (cos has been freed)", function() kb.rope.neox_fwd(q, k, deadc, sn) end)
      if kb.backend() == 'cuda' then
        fails_with("bad argument #2 to 'llama4_fwd' (k is on cuda:0, q is on cpu)",
          function() kb.rope.llama4_fwd(q, k:to('cuda'), f) end)
        fails_with("bad argument #3 to 'llama4_fwd' (freqs is on cuda:0, q is on cpu)",
          function() kb.rope.llama4_fwd(q, k, f:to('cuda')) end)
        fails_with("bad argument #3 to 'neox_fwd' (cos is on cuda:0, q is on cpu)",
          function() kb.rope.neox_fwd(q, k, c:to('cuda'), sn) end)
        fails_with("bad argument #4 to 'neox_fwd' (sin is on cuda:0, q is on cpu)",
          function() kb.rope.neox_fwd(q, k, c, sn:to('cuda')) end)
      end
    end)

    it('checks opts', function()
      fails_with("bad argument #4 to 'llama4_fwd' (opts.impl must be 'fused' or 'reference', got 'triton')",
        function() kb.rope.llama4_fwd(q, k, f, { impl = 'triton' }) end)
      fails_with("opts.impl must be 'fused' or 'reference', got number",
        function() kb.rope.llama4_fwd(q, k, f, { impl = 1 }) end)
      fails_with("bad argument #5 to 'neox_fwd' (opts.inplace must be a boolean, got string)",
        function() kb.rope.neox_fwd(q, k, c, sn, { inplace = 'yes' }) end)
      fails_with("bad argument #5 to 'neox_fwd' (unknown option 'in_place')",
        function() kb.rope.neox_fwd(q, k, c, sn, { in_place = true }) end)
      fails_with("bad argument #5 to 'neox_fwd' (opts must be a table, got string)",
        function() kb.rope.neox_fwd(q, k, c, sn, 'fused') end)
      fails_with("bad argument #4 to 'llama4_fwd' (opts must be a table, got string)",
        function() kb.rope.llama4_fwd(q, k, f, 'fused') end)
      fails_with("bad argument #2 to 'llama4_fwd' (k is the same tensor as q: in place needs two tensors)",
        function() kb.rope.llama4_fwd(q, q, f, { inplace = true }) end)
    end)
  end)
end)

describe('kb.rope on cuda against the cpu path #gpu', function()
  if kb.backend() ~= 'cuda' then
    pending('needs the cuda backend')
    return
  end

  -- shapes: ragged ones (every vector width, D down to 2), the llama4_rope
  -- sweep's hidden 512 point, and hidden-8192 head layouts with a ragged seq
  local SHAPES = {
    { b = 2, s = 37, hq = 3, hk = 2, d = 2 }, { b = 2, s = 37, hq = 3, hk = 2, d = 6 },
    { b = 3, s = 37, hq = 5, hk = 2, d = 12 }, { b = 1, s = 129, hq = 4, hk = 3, d = 24 },
    { b = 1, s = 2048, hq = 32, hk = 8, d = 16 }, { b = 2, s = 33, hq = 128, hk = 8, d = 64 },
    { b = 1, s = 65, hq = 64, hk = 8, d = 128 }, { b = 1, s = 257, hq = 32, hk = 8, d = 256 },
    { b = 2, s = 17, hq = 5, hk = 3, d = 512 },
  }

  -- A fresh output allocation on the GPU is likely to reuse memory that was
  -- just filled with NaN: an element the kernel skips shows up as NaN.
  local function poison(shape, dtype)
    local p = kb.empty(shape, dtype, 'cuda'):fill_(0 / 0)
    p:free()
  end

  it('freqs and cos_sin equal the cpu tables', function()
    for _, d in ipairs { 2, 16, 128 } do
      same_bits(kb.rope.freqs(300, d, { device = 'cuda', theta = 500000 }):to('cpu'),
        kb.rope.freqs(300, d, { device = 'cpu', theta = 500000 }), 'freqs d=' .. d)
      for _, dtype in ipairs(DTYPES) do
        local c, sn = kb.rope.cos_sin(300, d, dtype, { device = 'cuda', theta = 500000 })
        local cc, sc = kb.rope.cos_sin(300, d, dtype, { device = 'cpu', theta = 500000 })
        same_bits(c:to('cpu'), cc, 'cos d=' .. d .. ' ' .. dtype)
        same_bits(sn:to('cpu'), sc, 'sin d=' .. d .. ' ' .. dtype)
      end
    end
  end)

  for _, dtype in ipairs(DTYPES) do
    for _, style in ipairs { 'llama4', 'neox' } do
      it(('%s %s: fused, reference and in place equal the cpu path'):format(style, dtype), function()
        for _, c in ipairs(SHAPES) do
          for _, bwd in ipairs { false, true } do
            local q, k, tab, where = inputs(c, dtype, 'cuda', style)
            where = where .. ' ' .. style .. (bwd and ' bwd' or ' fwd')
            local qc, kc = q:to('cpu'), k:to('cpu')
            local qw, kw = rot(style, bwd, qc, kc, to_cpu(tab))
            for _, impl in ipairs { 'fused', 'reference' } do
              poison(q.shape, dtype)
              poison(k.shape, dtype)
              local qo, ko = rot(style, bwd, q, k, tab, { impl = impl })
              same_bits(qo:to('cpu'), qw, where .. ' ' .. impl .. ' q')
              same_bits(ko:to('cpu'), kw, where .. ' ' .. impl .. ' k')
              local q2, k2 = q:clone(), k:clone()
              rot(style, bwd, q2, k2, tab, { impl = impl, inplace = true })
              same_bits(q2:to('cpu'), qw, where .. ' ' .. impl .. ' in place q')
              same_bits(k2:to('cpu'), kw, where .. ' ' .. impl .. ' in place k')
            end
          end
        end
      end)
    end
  end

  it('handles a hidden-8192 sweep shape (seq 4096) in bf16', function()
    local c = { b = 1, s = 4096, hq = 32, hk = 8, d = 256 }
    for _, style in ipairs { 'llama4', 'neox' } do
      local q, k, tab, where = inputs(c, 'bf16', 'cuda', style)
      poison(q.shape, 'bf16')
      local qo, ko = rot(style, true, q, k, tab)
      local qw, kw = rot(style, true, q:to('cpu'), k:to('cpu'), to_cpu(tab))
      same_bits(qo:to('cpu'), qw, where .. ' ' .. style .. ' q')
      same_bits(ko:to('cpu'), kw, where .. ' ' .. style .. ' k')
    end
  end)

  -- neox with a row per token (cos, sin [batch, seq, D]): every plan, batched, against the cpu
  it('neox with a table per token equals the cpu path in every dtype', function()
    for _, dtype in ipairs(DTYPES) do
      for _, c in ipairs { { b = 3, s = 37, hq = 5, hk = 2, d = 12 }, { b = 2, s = 33, hq = 128, hk = 8, d = 64 },
        { b = 2, s = 1024, hq = 32, hk = 8, d = 64 }, { b = 2, s = 257, hq = 32, hk = 8, d = 256 } } do
        local pos = {}
        for i = 1, c.b * c.s do pos[i] = (i * 7) % 5000 end
        local cos, sin = kb.rope.cos_sin(c.s, c.d, dtype, { device = 'cuda',
          positions = kb.from_table(pos, { c.b, c.s }, 'f64', 'cpu') })
        local q, k, _, where = inputs(c, dtype, 'cuda', 'neox')
        local cc, sc = cos:to('cpu'), sin:to('cpu')
        for _, bwd in ipairs { false, true } do
          local qw, kw = rot('neox', bwd, q:to('cpu'), k:to('cpu'), { cc, sc })
          for _, impl in ipairs { 'fused', 'reference' } do
            local qo, ko = rot('neox', bwd, q, k, { cos, sin }, { impl = impl })
            same_bits(qo:to('cpu'), qw, where .. ' per token ' .. impl .. ' q')
            same_bits(ko:to('cpu'), kw, where .. ' per token ' .. impl .. ' k')
          end
        end
      end
    end
  end)
end)
