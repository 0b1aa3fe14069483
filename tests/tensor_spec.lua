-- Tensors: constructors, properties, methods, lifetime, errors, and the
-- determinism of kb.randn (known answers computed independently in Python
-- from the Philox4x32-10 definition and Box-Muller, see kernels/philox.h).
local kb = require 'kluabench'

local function seed() return math.random(1, 2 ^ 31) end

describe('tensor', function()
  it('reports shape, dtype, device, numel and nbytes', function()
    for _, case in ipairs { { 'bf16', 2 }, { 'f16', 2 }, { 'f32', 4 }, { 'f64', 8 } } do
      local t = kb.empty({ 2, 3, 5 }, case[1], 'cpu')
      assert.same({ 2, 3, 5 }, t.shape)
      assert.equal(case[1], t.dtype)
      assert.equal('cpu', t.device)
      assert.equal(3, t.ndim)
      assert.equal(30, t:numel())
      assert.equal(30, #t)
      assert.equal(30 * case[2], t:nbytes())
    end
  end)

  it('defaults to f32 on the default backend', function()
    local t = kb.zeros { 4 }
    assert.equal('f32', t.dtype)
    assert.equal(kb.backend(), t.device:match('^(%a+)'))
  end)

  it('zeros, fill_ and from_table/totable round trip', function()
    assert.same({ 0, 0, 0 }, kb.zeros({ 3 }, 'f64', 'cpu'):totable())
    assert.same({ 2.5, 2.5 }, kb.empty({ 2 }, 'bf16', 'cpu'):fill_(2.5):totable())
    local v = { 1, -2, 0.5, 3.25, -0.125, 1e-3 }
    assert.same(v, kb.from_table(v, { 2, 3 }, 'f64', 'cpu'):totable())
    assert.same({ 2, 3 }, kb.from_table(v, { 2, 3 }, 'f64', 'cpu').shape)
    assert.same({ 6 }, kb.from_table(v).shape)
  end)

  it('rounds to nearest even when narrowing', function()
    -- 1 + 2^-8 is halfway between bf16 neighbours 1 and 1 + 2^-7: ties to even (1)
    assert.same({ 1 }, kb.from_table({ 1 + 2 ^ -8 }, nil, 'bf16', 'cpu'):totable())
    -- 1 + 3 * 2^-8 is halfway between 1 + 2^-7 and 1 + 2^-6: ties to even (1 + 2^-6)
    assert.same({ 1 + 2 ^ -6 }, kb.from_table({ 1 + 3 * 2 ^ -8 }, nil, 'bf16', 'cpu'):totable())
    assert.same({ 1 + 2 ^ -10 }, kb.from_table({ 1 + 2 ^ -10 }, nil, 'f16', 'cpu'):totable())
    assert.same({ 65504 }, kb.from_table({ 65504 }, nil, 'f16', 'cpu'):totable())
    assert.same({ math.huge }, kb.from_table({ 65520 }, nil, 'f16', 'cpu'):totable())
    assert.same({ 2 ^ -24 }, kb.from_table({ 2 ^ -24 }, nil, 'f16', 'cpu'):totable())
    assert.same({ 0 }, kb.from_table({ 2 ^ -26 }, nil, 'f16', 'cpu'):totable())
  end)

  it('clone, copy_ and to() convert between dtypes', function()
    local a = kb.randn({ 4, 5 }, 'f32', seed(), 'cpu')
    local b = a:clone()
    assert.same(a:totable(), b:totable())
    local h = a:to('f64')
    assert.equal('f64', h.dtype)
    assert.same(a:totable(), h:totable())
    local c = kb.empty({ 4, 5 }, 'f64', 'cpu'):copy_(a)
    assert.same(a:totable(), c:totable())
    local d = a:to('bf16')
    assert.is_true(kb.max_abs_diff(d, a) <= 2 ^ -8 * 4)
    assert.is_true(kb.max_abs_diff(d, a) > 0)
  end)

  it('randn is deterministic per seed and matches the Philox known answers', function()
    local t = kb.randn({ 5 }, 'f32', 42, 'cpu'):totable()
    local want = { 0.8864974975585938, 0.4393560588359833, -0.15660962462425232,
      -0.013718678615987301, -0.49410051107406616 }
    for i = 1, 5 do assert.equal(want[i], t[i]) end
    local s = seed()
    assert.same(kb.randn({ 7, 3 }, 'f32', s, 'cpu'):totable(), kb.randn({ 7, 3 }, 'f32', s, 'cpu'):totable())
    assert.are_not.same(kb.randn({ 8 }, 'f32', s, 'cpu'):totable(), kb.randn({ 8 }, 'f32', s + 1, 'cpu'):totable())
    -- a prefix of a longer stream is the shorter stream
    local long = kb.randn({ 9 }, 'f64', s, 'cpu'):totable()
    local short = kb.randn({ 4 }, 'f64', s, 'cpu'):totable()
    for i = 1, 4 do assert.equal(short[i], long[i]) end
  end)

  it('randn and dtype conversion split over the cores give the one-thread values (a large, odd length)', function()
    -- 2^19 + 3 elements: several threads wherever there are several cores (kernels/parallel_cpu.h,
    -- one per 2^18 elements); 262150 elements: one thread. Every element is a function of (seed,
    -- index) only, so the long stream begins with the short one, across the split between the
    -- first two threads' ranges (at element 262144 with two), and a conversion is element-wise
    local s, n = seed(), (1 << 19) + 3
    local long = kb.randn({ n }, 'f64', s, 'cpu'):totable()
    local short = kb.randn({ 262150 }, 'f64', s, 'cpu'):totable()
    for i = 1, #short do
      if short[i] ~= long[i] then assert.equal(short[i], long[i], 'element ' .. i) end
    end
    for _, i in ipairs { n - 2, n - 1, n } do assert.is_true(long[i] == long[i] and long[i] ~= 0, tostring(i)) end
    local big = kb.randn({ n }, 'f32', s, 'cpu')
    local as_bf16 = big:to('bf16'):totable()
    local direct = kb.randn({ n }, 'bf16', s, 'cpu'):totable()
    for _, i in ipairs { 1, 2, n // 2, n - 1, n } do assert.equal(direct[i], as_bf16[i], tostring(i)) end
    assert.equal(kb.randn({ n }, 'bf16', s, 'cpu'):digest(), big:to('bf16'):digest())
  end)

  it('randn looks standard normal', function()
    local v = kb.randn({ 20000 }, 'f32', seed(), 'cpu'):totable()
    local sum, sq = 0, 0
    for _, x in ipairs(v) do sum, sq = sum + x, sq + x * x end
    local mean = sum / #v
    local var = sq / #v - mean * mean
    assert.is_true(math.abs(mean) < 0.05, 'mean ' .. mean)
    assert.is_true(math.abs(var - 1) < 0.05, 'variance ' .. var)
  end)

  it('randn in bf16 is the f32 stream rounded', function()
    local s = seed()
    local f = kb.randn({ 64 }, 'f32', s, 'cpu')
    assert.same(f:to('bf16'):totable(), kb.randn({ 64 }, 'bf16', s, 'cpu'):totable())
  end)

  it('digests its little-endian bytes', function()
    local t = kb.from_table({ 1, 2 }, nil, 'f32', 'cpu')
    -- 1.0f = 00 00 80 3f, 2.0f = 00 00 00 40
    assert.equal('sha256:' .. kb.sha256('\0\0\128\63\0\0\0\64'), t:digest())
    assert.matches('^sha256:%x+$', t:digest())
  end)

  it('max_abs_diff and rel_l2', function()
    local a = kb.from_table({ 1, 2, 3 }, nil, 'f64', 'cpu')
    local b = kb.from_table({ 1, 2.5, 2 }, nil, 'f64', 'cpu')
    assert.equal(1, kb.max_abs_diff(a, b))
    assert.near(math.sqrt(1.25 / 11.25), kb.rel_l2(a, b), 1e-15)
    assert.equal(0, kb.rel_l2(a, a))
    local n = kb.from_table({ 0 / 0, 1, 1 }, nil, 'f64', 'cpu')
    assert.is_true(kb.max_abs_diff(n, b) ~= kb.max_abs_diff(n, b)) -- NaN
  end)

  it('prints shape, dtype, device and a summary of values', function()
    local s = tostring(kb.from_table({ 1, 2, 3, 4, 5, 6, 7, 8 }, nil, 'f32', 'cpu'))
    assert.equal('kluabench.Tensor([8], f32, cpu) [1, 2, 3, ..., 6, 7, 8]', s)
    assert.equal('kluabench.Tensor([2], f64, cpu) [0.5, -1]', tostring(kb.from_table({ 0.5, -1 }, nil, 'f64', 'cpu')))
  end)

  it('free is idempotent and use after free is a Lua error', function()
    local t = kb.zeros({ 3 }, 'f32', 'cpu')
    t:free()
    t:free()
    assert.has_error(function() t:numel() end, "calling 'numel' on bad self (tensor has been freed)")
    assert.has_error(function() return t.shape end)
    assert.has_error(function() kb.max_abs_diff(t, t) end)
    assert.equal('kluabench.Tensor(freed)', tostring(t))
    do
      local c <close> = kb.zeros({ 2 }, 'f32', 'cpu')
      t = c
    end
    assert.has_error(function() t:totable() end)
  end)

  it('<close> releases through the checked path of free(), not the collector\'s', function()
    local mt = getmetatable(kb.zeros({ 1 }, 'f32', 'cpu'))
    assert.are_not.equal(mt.__gc, mt.__close)
    local t
    do
      local c <close> = kb.zeros({ 2 }, 'f32', 'cpu')
      t = c
    end
    assert.equal('kluabench.Tensor(freed)', tostring(t))
    mt.__close(t) -- closing a freed tensor again is a no-op
    assert.has_error(function() mt.__close(nil) end)
  end)

  it('allows zero-sized tensors', function()
    local t = kb.zeros({ 0, 4 }, 'bf16', 'cpu')
    assert.equal(0, t:numel())
    assert.same({}, t:totable())
    assert.matches('^sha256:', t:digest())
  end)

  it('takes the records\' dtype spelling (fp32) as the API\'s (f32)', function()
    assert.equal('f32', kb.empty({ 2 }, 'fp32').dtype)
    assert.equal('f16', kb.randn({ 2 }, 'fp16', 1).dtype)
    assert.equal(kb.randn({ 4 }, 'f64', 3):digest(), kb.randn({ 4 }, 'fp64', 3):digest())
    assert.equal('f64', kb.zeros({ 2 }):to('fp64').dtype)
  end)

  describe('errors', function()
    it('names the argument and what was expected', function()
      assert.has_error(function() kb.empty('x') end, "bad argument #1 to 'empty' (table expected, got string)")
      assert.has_error(function() kb.empty({ 2 }, 'f8') end,
        "bad argument #2 to 'empty' (unknown dtype 'f8' (expected bf16, f16, f32 or f64; fp16, fp32 and fp64 name "
        .. 'the same))')
      assert.has_error(function() kb.empty({ 2, -1 }) end,
        "bad argument #1 to 'empty' (shape[2] must be a non-negative integer, got -1)")
      assert.has_error(function() kb.empty({ 2.5 }) end)
      assert.has_error(function() kb.empty({ 1, 1, 1, 1, 1, 1, 1, 1, 1 }) end)
      assert.has_error(function() kb.empty({ 2 }, 'f32', 'tpu') end,
        "bad argument #3 to 'empty' (unknown device 'tpu' (expected 'cpu', 'cuda' or 'cuda:N'))")
      assert.has_error(function() kb.from_table({ 1, 2, 3 }, { 2, 2 }) end,
        "bad argument #1 to 'from_table' (has 3 values, shape needs 4)")
      assert.has_error(function() kb.from_table({ 1, 'x' }) end)
    end)

    it('rejects huge shapes and mismatched copies', function()
      assert.has_error(function() kb.empty({ 2 ^ 40, 2 ^ 30 }, 'f32', 'cpu') end)
      local ok, err = pcall(kb.empty, { 2 ^ 52 }, 'f64', 'cpu')
      assert.is_false(ok)
      assert.matches('bytes', err)
      assert.equal(3, kb.zeros({ 3 }, 'f32', 'cpu'):numel()) -- still works afterwards
      assert.has_error(function() kb.zeros({ 3 }):copy_(kb.zeros { 4 }) end,
        "bad argument #1 to 'copy_' (shape [4] does not match [3])")
      assert.has_error(function() kb.max_abs_diff(kb.zeros { 3 }, 'x') end)
    end)
  end)
end)

describe('tensor on cuda #gpu', function()
  it('randn gives the CPU values within 1 ulp of f32', function()
    for _, dt in ipairs { 'f32', 'f64', 'bf16', 'f16' } do
      local s = seed()
      local g = kb.randn({ 1001, 17 }, dt, s, 'cuda')
      local c = kb.randn({ 1001, 17 }, dt, s, 'cpu')
      assert.equal(kb.device_info().device, g.device)
      local tol = (dt == 'f32' or dt == 'f64') and 2.4e-7 * 8 or 2 ^ -7 * 8
      assert.is_true(kb.max_abs_diff(g, c) <= tol, dt .. ' ' .. kb.max_abs_diff(g, c))
    end
  end)

  it('copies a tensor larger than a staging slice between devices, bit for bit, with and without a dtype change', function()
    -- a cuda tensor reaches the host through the backend's 64 MB pinned buffer (engine/core/tensor.c):
    -- 40M f32 elements are three slices and a tail
    local n = 40 * (1 << 20) + 333
    local c = kb.randn({ n }, 'f32', seed(), 'cpu')
    local g = c:to('cuda')
    local want = c:digest()
    assert.equal(want, g:digest())
    assert.equal(want, g:to('cpu'):digest())
    local half = c:to('bf16'):digest()
    assert.equal(half, kb.empty({ n }, 'bf16', 'cpu'):copy_(g):digest())
    assert.equal(half, kb.empty({ n }, 'bf16', 'cuda'):copy_(c):digest())
    g:free()
  end)

  it('copies between devices and converts on the device', function()
    local c = kb.randn({ 333 }, 'f32', seed(), 'cpu')
    local g = c:to('cuda')
    assert.same(c:totable(), g:totable())
    assert.same(c:to('bf16'):totable(), g:to('bf16'):totable())
    assert.same(c:totable(), g:to('cpu'):totable())
    local z = kb.zeros({ 333 }, 'f64', 'cuda'):copy_(c)
    assert.same(c:totable(), z:totable())
    assert.equal(c:digest(), g:digest())
  end)

  it('reports an allocation larger than the device as an error and keeps working', function()
    local ok, err = pcall(kb.empty, { 2 ^ 46 }, 'f32', 'cuda')
    assert.is_false(ok)
    assert.matches('cudaMalloc', err)
    assert.matches('cudaErrorMemoryAllocation', err)
    assert.same({ 1, 1 }, kb.zeros({ 2 }, 'f32', 'cuda'):fill_(1):totable())
  end)
end)
