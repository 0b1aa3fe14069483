-- Tensor arithmetic (engine/core/tensor_math.c, kernels/tensor_math*): every
-- operation on the cpu backend against a float64 reference computed here in
-- Lua from the rounded inputs, with the dtype's tolerance, on fresh random
-- inputs; broadcasting, in place, operators, shapes of every edge; every
-- argument error; and (#gpu) the CUDA twins against the CPU twins on the
-- same inputs: bit for bit where both are IEEE operations, within the
-- documented bounds for exp, the f64-accumulated reductions and cuBLAS.
local kb = require 'kluabench'

local DTYPES = { 'bf16', 'f16', 'f32', 'f64' }
-- one ulp of the dtype, relative (one rounding, and the f32 step before
-- it, stay within it), and the spacing of its subnormals (where relative
-- errors are meaningless)
local EPS = { bf16 = 2 ^ -7, f16 = 2 ^ -10, f32 = 2 ^ -23, f64 = 2 ^ -52 }
local TINY = { bf16 = 2 ^ -133, f16 = 2 ^ -24, f32 = 2 ^ -149, f64 = 2 ^ -1074 }
-- the compute type's unit roundoff: f32 for the 2-byte types
local UNIT = { bf16 = 2 ^ -24, f16 = 2 ^ -24, f32 = 2 ^ -24, f64 = 2 ^ -53 }

local function seed() return math.random(1, 2 ^ 31) end

-- n uniform values in [lo, hi) (away from zero by `gap` when given)
local function uniform(n, lo, hi, gap)
  local t = {}
  for i = 1, n do
    local x = lo + (hi - lo) * math.random()
    if gap and math.abs(x) < gap then x = x < 0 and -gap or gap end
    t[i] = x
  end
  return t
end

local function numel(shape)
  local n = 1
  for _, d in ipairs(shape) do n = n * d end
  return n
end

-- A random tensor and its values as the dtype rounded them.
local function rand(shape, dtype, lo, hi, gap)
  local t = kb.from_table(uniform(numel(shape), lo or -3, hi or 3, gap), shape, dtype, 'cpu')
  return t, t:totable()
end

local function where(...) return table.concat({ ... }, ' ') end

-- got (a tensor) equals ref (a list) within tol(i) per element; NaN only
-- where the reference is NaN.
local function check_close(got, ref, tol, what)
  local g = got:totable()
  local tiny = TINY[got.dtype]
  assert.equal(#ref, #g, what .. ': element count')
  for i = 1, #g do
    if ref[i] ~= ref[i] then
      assert(g[i] ~= g[i], ('%s: element %d is %.17g, expected NaN'):format(what, i, g[i]))
    else
      local t = (type(tol) == 'function' and tol(i) or tol * math.abs(ref[i])) + tiny
      assert(math.abs(g[i] - ref[i]) <= t or g[i] == ref[i],
        ('%s: element %d is %.17g, expected %.17g (tolerance %.3g)'):format(what, i, g[i], ref[i], t))
    end
  end
end

local function fails_with(needle, fn, ...)
  local ok, err = pcall(fn, ...)
  assert(not ok, 'expected an error containing: ' .. needle)
  assert(tostring(err):find(needle, 1, true), ('error %q does not contain %q'):format(tostring(err), needle))
end

-- NumPy broadcasting, in Lua: the output shape and, per output index, the
-- 1-based indices into a and b.
local function broadcast(sa, sb)
  local nd = math.max(#sa, #sb)
  local out = {}
  for i = 1, nd do
    local da, db = sa[#sa - nd + i] or 1, sb[#sb - nd + i] or 1
    assert(da == db or da == 1 or db == 1)
    out[i] = da == 1 and db or da
  end
  local function index_in(shape, coord)
    local idx, off = 0, nd - #shape
    for d = 1, #shape do
      idx = idx * shape[d] + (shape[d] == 1 and 0 or coord[d + off])
    end
    return idx + 1
  end
  local map = {}
  local coord = {}
  for d = 1, nd do coord[d] = 0 end
  for i = 1, numel(out) do
    map[i] = { index_in(sa, coord), index_in(sb, coord) }
    for d = nd, 1, -1 do
      coord[d] = coord[d] + 1
      if coord[d] < out[d] then break end
      coord[d] = 0
    end
  end
  return out, map
end

local BINARY = {
  add = function(x, y) return x + y end, sub = function(x, y) return x - y end,
  mul = function(x, y) return x * y end, div = function(x, y) return x / y end,
}
local UNARY = {
  neg = { function(x) return -x end, -3, 3 }, exp = { math.exp, -4, 4 },
  sqrt = { math.sqrt, 0.01, 9 }, rsqrt = { function(x) return 1 / math.sqrt(x) end, 0.01, 9 },
}

-- Shape pairs that broadcast: equal, scalar-like, trailing, both sides.
local PAIRS = {
  { { 7 }, { 7 } }, { { 3, 5 }, { 3, 5 } }, { { 3, 5 }, { 5 } }, { { 3, 5 }, { 1 } }, { { 4, 1 }, { 1, 6 } },
  { { 2, 3, 4 }, { 3, 1 } }, { { 5 }, { 2, 1, 5 } }, { { 2, 1, 3, 1 }, { 4, 1, 2 } }, { {}, { 3, 2 } },
  { { 0, 3 }, { 3 } },
}

describe('tensor arithmetic on cpu against a float64 reference', function()
  for _, dt in ipairs(DTYPES) do
    for name, f in pairs(BINARY) do
      it(('%s %s with broadcasting, in place and with numbers'):format(dt, name), function()
        for _, pair in ipairs(PAIRS) do
          local a, va = rand(pair[1], dt)
          local b, vb = rand(pair[2], dt, -3, 3, name == 'div' and 0.25 or nil)
          local shape, map = broadcast(pair[1], pair[2])
          local ref = {}
          for i, m in ipairs(map) do ref[i] = f(va[m[1]], vb[m[2]]) end
          local w = where(dt, name, '[' .. table.concat(pair[1], ',') .. ']', '[' .. table.concat(pair[2], ',') .. ']')
          local got = a[name](a, b)
          assert.same(shape, got.shape)
          assert.equal(dt, got.dtype)
          check_close(got, ref, EPS[dt], w)
          -- operators are the same functions
          local op = ({ add = a + b, sub = a - b, mul = a * b, div = a / b })[name]
          assert.equal(got:digest(), op:digest())
          -- in place, where b broadcasts to a's shape
          if numel(shape) == numel(pair[1]) and #shape == #pair[1] then
            local c = a:clone()
            assert.equal(c, c[name .. '_'](c, b))
            assert.equal(got:digest(), c:digest())
          end
        end
        -- numbers on either side
        local a, va = rand({ 4, 3 }, dt, 0.5, 3)
        local s = 0.1 + math.random() * 2
        local sf = dt == 'f64' and s or string.unpack('f', string.pack('f', s)) -- rounded to the compute type
        local r1, r2 = {}, {}
        for i, x in ipairs(va) do r1[i], r2[i] = f(x, sf), f(sf, x) end
        check_close(a[name](a, s), r1, EPS[dt], where(dt, name, 'tensor, number'))
        local rev = ({ add = s + a, sub = s - a, mul = s * a, div = s / a })[name]
        check_close(rev, r2, EPS[dt], where(dt, name, 'number, tensor'))
      end)
    end

    for name, u in pairs(UNARY) do
      it(('%s %s, and in place'):format(dt, name), function()
        local shape = { math.random(1, 4), math.random(1, 40) }
        local t, v = rand(shape, dt, u[2], u[3])
        local ref = {}
        for i, x in ipairs(v) do ref[i] = u[1](x) end
        local tol = EPS[dt] + (name == 'exp' and 4 * UNIT[dt] or 0)
        local got = t[name](t)
        check_close(got, ref, tol, where(dt, name))
        local c = t:clone()
        assert.equal(c, c[name .. '_'](c))
        assert.equal(got:digest(), c:digest())
        if name == 'neg' then assert.equal(got:digest(), (-t):digest()) end
      end)
    end

    it(dt .. ' sum, mean and max over every dim, keepdim, and over everything', function()
      local shape = { math.random(1, 4), math.random(1, 50), math.random(1, 5) }
      local t, v = rand(shape, dt)
      local function ref_reduce(op, dim)
        local outer, n, inner = 1, shape[dim], 1
        for i = 1, dim - 1 do outer = outer * shape[i] end
        for i = dim + 1, #shape do inner = inner * shape[i] end
        local out, bound = {}, {}
        for o = 0, outer - 1 do
          for i = 0, inner - 1 do
            local acc, abs = op == 'max' and -math.huge or 0, 0
            for k = 0, n - 1 do
              local x = v[(o * n + k) * inner + i + 1]
              if op == 'max' then acc = math.max(acc, x) else acc = acc + x end
              abs = abs + math.abs(x)
            end
            if op == 'mean' then acc, abs = acc / n, abs / n end
            out[#out + 1], bound[#bound + 1] = acc, abs
          end
        end
        return out, bound
      end
      for _, op in ipairs { 'sum', 'mean', 'max' } do
        for dim = 1, 3 do
          local ref, bound = ref_reduce(op, dim)
          local tol = function(i) return EPS[dt] * math.abs(ref[i]) + shape[dim] * 2 ^ -52 * bound[i] end
          for _, d in ipairs { dim, dim - 4 } do -- 1-based and from the end
            local got = t[op](t, d)
            local want_shape = {}
            for i = 1, 3 do if i ~= dim then want_shape[#want_shape + 1] = shape[i] end end
            assert.same(want_shape, got.shape)
            if op == 'max' then assert.same(ref, got:totable()) else check_close(got, ref, tol, where(dt, op, d)) end
            local kept = t[op](t, d, true)
            local ks = { table.unpack(shape) }
            ks[dim] = 1
            assert.same(ks, kept.shape)
            assert.equal(got:digest(), kept:digest())
          end
        end
        local all = t[op](t)
        assert.same({}, all.shape)
        assert.same({ 1, 1, 1 }, t[op](t, nil, true).shape)
        local acc, abs = op == 'max' and -math.huge or 0, 0
        for _, x in ipairs(v) do
          if op == 'max' then acc = math.max(acc, x) else acc = acc + x end
          abs = abs + math.abs(x)
        end
        if op == 'mean' then acc, abs = acc / #v, abs / #v end
        if op == 'max' then assert.equal(acc, all:item())
        else check_close(all, { acc }, function() return EPS[dt] * math.abs(acc) + #v * 2 ^ -52 * abs end, where(dt, op, 'all')) end
      end
    end)

    it(dt .. ' matmul, 2-D and batched, against f64 products', function()
      local m, k, n, batch = math.random(1, 9), math.random(1, 40), math.random(1, 9), math.random(2, 3)
      local a, va = rand({ batch, m, k }, dt)
      local b, vb = rand({ k, n }, dt)
      local b3, vb3 = rand({ batch, k, n }, dt)
      local function ref(A, B, a_stride, b_stride)
        local out, bound = {}, {}
        for bi = 0, batch - 1 do
          for i = 0, m - 1 do
            for j = 0, n - 1 do
              local acc, abs = 0, 0
              for p = 0, k - 1 do
                local x, y = A[bi * a_stride + i * k + p + 1], B[bi * b_stride + p * n + j + 1]
                acc, abs = acc + x * y, abs + math.abs(x * y)
              end
              out[#out + 1], bound[#bound + 1] = acc, abs
            end
          end
        end
        return out, bound
      end
      for _, c in ipairs {
        { a, b, va, vb, m * k, 0, { batch, m, n } },       -- b shared by the batch
        { a, b3, va, vb3, m * k, k * n, { batch, m, n } }, -- one b per matrix
      } do
        local want, bound = ref(c[3], c[4], c[5], c[6])
        local got = c[1]:matmul(c[2])
        assert.same(c[7], got.shape)
        check_close(got, want, function(i) return EPS[dt] * math.abs(want[i]) + k * 2 ^ -52 * bound[i] end,
          where(dt, 'matmul', m, k, n))
      end
      -- 2-D is batch 1; a shared 2-D a against a batched b
      local a2 = a:sum(1)
      local want = ref(a2:totable(), vb, 0, 0)
      check_close(a2:matmul(b), { table.unpack(want, 1, m * n) }, function(i)
        return EPS[dt] * math.abs(want[i]) + k * 2 ^ -50 * 100 end, where(dt, 'matmul 2-D'))
      assert.same({ batch, m, n }, a2:matmul(b3).shape)
    end)

    it(dt .. ' cast to every dtype rounds once, as t:to does', function()
      local t, v = rand({ 3, 11 }, dt, -100, 100)
      for _, to in ipairs(DTYPES) do
        local c = t:cast(to)
        assert.equal(to, c.dtype)
        assert.equal(t:to(to):digest(), c:digest())
        check_close(c, v, EPS[to], where(dt, 'cast', to))
      end
    end)
  end

  it('follows IEEE: NaN, infinities, signed zeros, and max with NaN and -0', function()
    local x = kb.from_table({ -1, 0, -0.0, 1 / 0 }, nil, 'f32', 'cpu')
    local s = x:sqrt():totable()
    assert(s[1] ~= s[1], 'sqrt(-1) is NaN')
    assert.same({ 0, -0.0, 1 / 0 }, { s[2], s[3], s[4] })
    assert.equal(1 / 0, x:rsqrt():totable()[2])
    assert.equal(-1 / 0, x:rsqrt():totable()[3])
    local m = kb.from_table({ -0.0, 0, -0.0 }, nil, 'f64', 'cpu'):max():item()
    assert.equal(0, m)
    assert.equal(1 / 0, 1 / m) -- +0 beats -0, whatever the order
    local nan = kb.from_table({ 1, 0 / 0, 3 }, nil, 'f32', 'cpu')
    local mx = nan:max():item()
    assert(mx ~= mx, 'max with a NaN is NaN')
    local mean0 = kb.zeros({ 0 }, 'f32', 'cpu'):mean():item()
    assert(mean0 ~= mean0, 'the mean of nothing is NaN')
    assert.equal(0, kb.zeros({ 0 }, 'f32', 'cpu'):sum():item())
  end)

  it('handles empty tensors and k = 0 matrix products', function()
    local e = kb.zeros({ 0, 4 }, 'f32', 'cpu')
    assert.same({ 0, 4 }, (e + 1).shape)
    assert.same({ 4 }, e:sum(1).shape)
    assert.same({ 0, 0, 0, 0 }, e:sum(1):totable())
    assert.same({ 0 }, e:sum(2).shape)
    local z = kb.randn({ 3, 0 }, 'f32', 1, 'cpu'):matmul(kb.randn({ 0, 2 }, 'f32', 2, 'cpu'))
    assert.same({ 3, 2 }, z.shape)
    assert.same({ 0, 0, 0, 0, 0, 0 }, z:totable())
    assert.same({ 0, 5 }, kb.zeros({ 0, 3 }, 'f32', 'cpu'):matmul(kb.zeros({ 3, 5 }, 'f32', 'cpu')).shape)
  end)

  it('reshape copies into another shape (one -1 inferred); item reads one element', function()
    local t = kb.from_table({ 1, 2, 3, 4, 5, 6 }, { 2, 3 }, 'f32', 'cpu')
    local r = t:reshape { 3, -1 }
    assert.same({ 3, 2 }, r.shape)
    assert.same(t:totable(), r:totable())
    r:fill_(0)
    assert.same({ 1, 2, 3, 4, 5, 6 }, t:totable()) -- a copy, not a view
    assert.same({}, t:reshape({ 6 }):sum():reshape({}).shape)
    assert.equal(21, t:sum():item())
    assert.equal(4, kb.from_table({ 4 }, { 1, 1 }, 'bf16', 'cpu'):item())
  end)

  it('rejects bad arguments with messages that name them', function()
    local a = kb.zeros({ 2, 3 }, 'f32', 'cpu')
    fails_with("shapes [2, 3] and [4] do not broadcast (dimension 1 from the end: 3 vs 4; sizes must be equal or 1)",
      function() return a + kb.zeros({ 4 }, 'f32', 'cpu') end)
    fails_with("bad argument #1 to 'add' (kluabench.Tensor or number expected, got string)", function() return a:add('1') end)
    fails_with("kluabench.Tensor or number expected, got table", function() return a * {} end)
    fails_with("kluabench.Tensor or number expected, got boolean", function() return true - a end)
    fails_with("tensor is f64, the other operand f32 (convert one with :cast)",
      function() return a:mul(kb.zeros({ 3 }, 'f64', 'cpu')) end)
    fails_with("shape [2, 3] does not broadcast to [3] (in place keeps the shape)",
      function() return kb.zeros({ 3 }, 'f32', 'cpu'):add_(a) end)
    fails_with("dim 3 is out of range for a 2-D tensor (1 to 2, or -2 to -1, counted as t.shape is)",
      function() return a:sum(3) end)
    fails_with("dim 0 is out of range", function() return a:mean(0) end)
    fails_with("dim -3 is out of range", function() return a:max(-3) end)
    fails_with("integer dim expected, got number", function() return a:sum(1.5) end)
    fails_with("boolean keepdim expected, got number", function() return a:sum(1, 1) end)
    fails_with("a tensor of shape [] has no dimension", function() return kb.zeros({}, 'f32', 'cpu'):sum(1) end)
    fails_with("max of an empty tensor", function() return kb.zeros({ 0 }, 'f32', 'cpu'):max() end)
    fails_with("max over dimension 1 of size 0", function() return kb.zeros({ 0, 2 }, 'f32', 'cpu'):max(1) end)
    fails_with("shapes [2, 3] and [2, 3] cannot be multiplied (3 columns, 2 rows)", function() return a:matmul(a) end)
    fails_with("matmul needs 2-D or batched operands, got [2, 3] and [3] (a vector is t:reshape{1, n}",
      function() return a:matmul(kb.zeros({ 3 }, 'f32', 'cpu')) end)
    fails_with("batch dimensions of [2, 2, 3] and [3, 3, 1] differ",
      function() return kb.zeros({ 2, 2, 3 }, 'f32', 'cpu'):matmul(kb.zeros({ 3, 3, 1 }, 'f32', 'cpu')) end)
    fails_with("unknown dtype 'f8'", function() return a:cast('f8') end)
    fails_with("shape does not hold the 6 elements of [2, 3]", function() return a:reshape { 4 } end)
    fails_with("shape[1] must be a non-negative integer (or one -1), got -2", function() return a:reshape { -2, -3 } end)
    fails_with("item() needs one element, [2, 3] has 6", function() return a:item() end)
    local freed = kb.zeros({ 2 }, 'f32', 'cpu')
    freed:free()
    fails_with('tensor has been freed', function() return freed + 1 end)
    fails_with('tensor has been freed', function() return a:sum():add(freed) end)
  end)
end)

describe('shapes whose zeros hide a product past 2^62 (issue 37)', function()
  local sub = require 'helpers.subprocess'
  local HUGE = { { 2 ^ 62 // 1, 4, 0 }, { 0, 2 ^ 40 // 1, 2 ^ 40 // 1 }, { 2 ^ 31 // 1, 0, 2 ^ 31 // 1, 2 ^ 31 // 1 } }

  it('t:reshape refuses them as kb.empty does', function()
    local e = kb.empty({ 0 }, 'f32', 'cpu')
    for _, shape in ipairs(HUGE) do
      local ok, err = pcall(function() return e:reshape(shape) end)
      assert.is_false(ok)
      assert.matches("bad argument #1 to 'reshape' (shape is too large (its size exceeds 2^62 bytes))", err, 1, true)
      assert.is_false((pcall(kb.empty, shape, 'f32', 'cpu')))
    end
    assert.same({ 3, 0, 5 }, e:reshape({ 3, 0, 5 }).shape) -- a zero with a product that fits is fine
  end)

  it('an operation whose result would have such a shape raises instead of making it', function()
    local a, b = kb.empty({ 2 ^ 40 // 1, 1, 0 }, 'f32', 'cpu'), kb.empty({ 1, 2 ^ 40 // 1, 0 }, 'f32', 'cpu')
    local ok, err = pcall(function() return a + b end)
    assert.is_false(ok)
    assert.matches('cannot make a f32 tensor of shape [1099511627776, 1099511627776, 0]: shape is too large', err, 1, true)
    local x, y = kb.empty({ 2 ^ 40 // 1, 0 }, 'f32', 'cpu'), kb.empty({ 0, 2 ^ 40 // 1 }, 'f32', 'cpu')
    ok, err = pcall(x.matmul, x, y)
    assert.is_false(ok)
    assert.matches('shape is too large', err, 1, true)
  end)

  it('the matmul of what reshape made of an empty tensor does not crash', function()
    -- used to segfault: reshape accepted {2^62, 4, 0} and matmul walked it
    local r = sub.run({ '--backend', 'cpu', '-e', [[
      local kb = require 'kluabench'
      local ok, t = pcall(function() return kb.empty({ 0 }):reshape({ 2 ^ 62 // 1, 4, 0 }) end)
      print(ok, ok and tostring(t:matmul(kb.empty({ 0, 4 }))) or t)]] }, { timeout = 60 })
    assert.equal(0, r.code, r.err)
    assert.matches('^false\t.-shape is too large', r.out)
  end)

  it('a reduction over an empty tensor returns at once, whatever its other dimensions', function()
    -- used to walk 2^40 empty rows
    local r = sub.run({ '--backend', 'cpu', '-e', [[
      local kb = require 'kluabench'
      local t = kb.empty({ 2 ^ 40 // 1, 4, 0 })
      local s, m, x = t:sum(2), t:mean(2, true), t:max(2)
      print(s.shape[1], s.shape[2], m.shape[2], x:numel(), t:sum(1):numel(), t:sum():item())]] }, { timeout = 60 })
    assert.equal(0, r.code, r.err)
    assert.equal('1099511627776\t0\t1\t0\t0\t0.0\n', r.out)
  end)
end)

describe('tensor arithmetic on cuda against the cpu twins #gpu', function()
  if kb.backend() ~= 'cuda' then
    pending('needs the cuda backend')
    return
  end

  -- The same inputs on both devices, from fresh seeds.
  local function pair(shape, dtype, positive)
    local c = kb.randn(shape, dtype, seed(), 'cpu')
    if positive then c = (c * c + 0.01):cast(dtype) end
    return c:to('cuda'), c
  end

  local function same_bits(gpu, cpu, what)
    assert.same(cpu.shape, gpu.shape, what)
    assert(gpu:to('cpu'):digest() == cpu:digest(),
      ('%s: cuda and cpu differ (max |diff| %s)'):format(what, tostring(kb.max_abs_diff(gpu:to('cpu'), cpu))))
  end

  -- |gpu - cpu| <= rel * |cpu| + abs(i), element by element; NaN where
  -- the other is NaN (their bits may differ: x86 and CUDA make different
  -- NaNs)
  local function close(gpu, cpu, rel, abs, what)
    local g, c = gpu:to('cpu'):totable(), cpu:totable()
    assert.equal(#c, #g, what)
    for i = 1, #c do
      local t = rel * math.abs(c[i]) + (type(abs) == 'function' and abs(i) or abs or 0) + TINY[cpu.dtype]
      assert(math.abs(g[i] - c[i]) <= t or g[i] == c[i] or (g[i] ~= g[i] and c[i] ~= c[i]),
        ('%s: element %d: cuda %.17g, cpu %.17g (tolerance %.3g)'):format(what, i, g[i], c[i], t))
    end
  end

  local SHAPES = {
    { { 1000003 }, { 1000003 } }, { { 257, 129 }, { 129 } }, { { 64, 1, 33 }, { 1, 17, 1 } },
    { { 3, 5, 7, 2 }, { 5, 1, 2 } }, { {}, { 9 } }, { { 0, 5 }, { 5 } },
    { { 16777259 }, { 1 } }, -- more than 65535 blocks of 256: the grid-stride loops go round
  }

  for _, dt in ipairs(DTYPES) do
    it(dt .. ': add, sub, mul, div (broadcast, in place, numbers) equal the cpu twin bit for bit', function()
      for _, s in ipairs(SHAPES) do
        local ga, ca = pair(s[1], dt)
        local gb, cb = pair(s[2], dt, true) -- positive: no division by zero
        -- (the long vector only exercises the grid-stride loop, the same for every op)
        for _, op in ipairs(numel(s[1]) > 1e7 and { 'add' } or { 'add', 'sub', 'mul', 'div' }) do
          local w = where(dt, op, '[' .. table.concat(s[1], ',') .. ']', '[' .. table.concat(s[2], ',') .. ']')
          same_bits(ga[op](ga, gb), ca[op](ca, cb), w)
          local x = 0.3 + math.random()
          same_bits(ga[op](ga, x), ca[op](ca, x), w .. ' number')
          local rg = ({ add = x + ga, sub = x - ga, mul = x * ga, div = x / gb })[op]
          local rc = ({ add = x + ca, sub = x - ca, mul = x * ca, div = x / cb })[op]
          same_bits(rg, rc, w .. ' number first')
          if #s[1] >= #s[2] and s[1][1] ~= 64 then
            local gi, ci = ga:clone(), ca:clone()
            gi[op .. '_'](gi, gb)
            ci[op .. '_'](ci, cb)
            same_bits(gi, ci, w .. ' in place')
          end
        end
      end
    end)

    it(dt .. ': neg, sqrt, rsqrt bit for bit; exp within 2 ulp of f32 and one of the dtype', function()
      for _, shape in ipairs { { 100003 }, { 33, 65 }, { 0 } } do
        local g, c = pair(shape, dt)
        same_bits(g:neg(), c:neg(), dt .. ' neg')
        same_bits(-g, -c, dt .. ' unary minus')
        local gp, cp = pair(shape, dt, true)
        same_bits(gp:sqrt(), cp:sqrt(), dt .. ' sqrt')
        same_bits(gp:rsqrt(), cp:rsqrt(), dt .. ' rsqrt')
        local ge, ce = g:clone(), c:clone()
        ge:sqrt_()
        ce:sqrt_()
        close(ge, ce, 0, 0, dt .. ' sqrt_ (NaN for the negatives)')
        close(g:exp(), c:exp(), ({ bf16 = 2 ^ -7, f16 = 2 ^ -10, f32 = 2 ^ -21, f64 = 2 ^ -50 })[dt], 0, dt .. ' exp')
      end
    end)

    it(dt .. ': sum and mean within f64 rounding of the cpu twin, max bit for bit', function()
      -- short rows (one thread each, cpu order) and long ones (a block each)
      for _, shape in ipairs { { 300, 7, 3 }, { 5, 4097, 2 }, { 1, 300007 }, { 2, 0, 3 } } do
        local g, c = pair(shape, dt)
        for d = 1, #shape do
          for _, keep in ipairs { false, true } do
            local w = where(dt, 'dim', d, tostring(keep), '[' .. table.concat(shape, ',') .. ']')
            local n = shape[d]
            if n > 0 then same_bits(g:max(d, keep), c:max(d, keep), w .. ' max') end
            local bound = c:cast('f64')
            bound = (bound * bound):sqrt():sum(d, keep) -- sum of |x|
            local bt = bound:totable()
            local abs = function(i) return n * 2 ^ -52 * bt[i] end
            close(g:sum(d, keep), c:sum(d, keep), EPS[dt], abs, w .. ' sum')
            close(g:mean(d, keep), c:mean(d, keep), EPS[dt], function(i) return abs(i) / math.max(n, 1) end, w .. ' mean')
          end
        end
        close(g:sum(), c:sum(), EPS[dt], 1e-6 * numel(shape), dt .. ' sum of all')
      end
    end)

    it(dt .. ': matmul through cuBLAS within f32 (f64) accumulation of the cpu reference', function()
      local acc = dt == 'f64' and 2 ^ -52 or 2 ^ -23
      for _, c in ipairs {
        { { 64, 128 }, { 128, 96 } }, { { 3, 37, 300 }, { 300, 5 } }, { { 4, 33, 17 }, { 4, 17, 65 } },
        { { 17, 513 }, { 2, 513, 9 } }, { { 1, 1 }, { 1, 1 } },
      } do
        local ga, ca = pair(c[1], dt)
        local gb, cb = pair(c[2], dt)
        local k = c[1][#c[1]]
        local cpu = ca:matmul(cb)
        local absa, absb = ca:cast('f64'), cb:cast('f64')
        local bound = (absa * absa):sqrt():matmul((absb * absb):sqrt()):totable()
        close(ga:matmul(gb), cpu, EPS[dt], function(i) return 2 * k * acc * bound[i] end,
          where(dt, 'matmul', '[' .. table.concat(c[1], ',') .. ']', '[' .. table.concat(c[2], ',') .. ']'))
      end
    end)

    it(dt .. ': cast equals the cpu twin bit for bit', function()
      local g, c = pair({ 1001 }, dt)
      for _, to in ipairs(DTYPES) do same_bits(g:cast(to), c:cast(to), dt .. ' cast ' .. to) end
    end)
  end

  it('NaN and signed zeros reduce as on cpu', function()
    local c = kb.from_table({ -0.0, 0, -0.0, 1, 0 / 0, 2 }, { 2, 3 }, 'f32', 'cpu')
    local g = c:to('cuda')
    local mg, mc = g:max(2):to('cpu'):totable(), c:max(2):totable()
    assert.equal(0, mg[1])
    assert.equal(1 / 0, 1 / mg[1])
    assert(mg[2] ~= mg[2] and mc[2] ~= mc[2])
  end)

  it('says what is missing when cuBLAS cannot be opened, and the rest still works', function()
    local util = require 'helpers.util'
    local code = 'local a = kb.randn({2, 2}, "f32", 1, "cuda"); print((a + 1):sum():item()); '
      .. 'print(pcall(a.matmul, a, a))'
    local out, status = util.run(string.format('KLUABENCH_CUBLAS=/nonexistent/libcublas.so %s --backend cuda -e %s 2>&1',
      util.q(util.bin()), util.q(code)))
    assert.equal(0, status, out)
    assert.matches('false\t[^\n]*matmul on cuda needs cuBLAS: KLUABENCH_CUBLAS=/nonexistent/libcublas.so cannot be opened', out)
  end)

  it('works inside a CUDA graph (in-place ops and a cuBLAS matmul replayed)', function()
    local x = kb.randn({ 1024 }, 'f32', seed(), 'cuda')
    local x0 = x:to('cpu')
    local a, b = kb.randn({ 32, 64 }, 'f32', seed(), 'cuda'), kb.randn({ 64, 16 }, 'f32', seed(), 'cuda')
    local out = kb.zeros({ 32, 16 }, 'f32', 'cuda')
    a:matmul(b) -- cuBLAS loaded and its handle made before the capture
    local g = kb.graph(function()
      x:mul_(2)
      out:copy_(a:matmul(b))
    end)
    g:replay(3)
    kb.synchronize()
    same_bits(x, x0 * 8, 'x after 3 replays')
    same_bits(out, a:matmul(b), 'matmul in the graph')
    g:free()
  end)
end)
