-- kernel:launch's packing of arguments (issue 26): kb.cuda.args packs exactly
-- as a launch does, with every check, on any backend, so that the packing is
-- tested (and its host cost measured) without a GPU; kernel:launch_repeat,
-- the C loop of cuLaunchKernel the overhead is measured against, on the GPU.
local kb = require 'kluabench'

describe('kb.cuda.args: a launch\'s parameter buffer without a launch', function()
  it('packs pointers, integers and floats at their offsets, little-endian', function()
    local x = kb.empty({ 4 }, 'f32')
    local p = kb.cuda.args('ptr, i32, f32, i64, u8, f16')
    assert.equal('kluabench.ArgPack(ptr, i32, f32, i64, u8, f16)', tostring(p))
    assert.equal(p, p:pack { grid = 1, block = 32, args = { 4096, -2, 1.5, 1 << 40, 255, 2.0 } })
    local b = p:bytes()
    -- ptr at 0 (8), i32 at 8, f32 at 12, i64 at 16, u8 at 24, f16 at 26
    assert.equal(28, #b)
    assert.equal(4096, string.unpack('<i8', b, 1))
    assert.equal(-2, string.unpack('<i4', b, 9))
    assert.equal(1.5, string.unpack('<f', b, 13))
    assert.equal(1 << 40, string.unpack('<i8', b, 17))
    assert.equal(255, string.unpack('<B', b, 25))
    assert.equal(0x4000, string.unpack('<I2', b, 27)) -- 2.0 in half precision
    -- a tensor packs as its device address, and the same table packs again the same way
    p = kb.cuda.args('ptr')
    local opts = { grid = { 2, 1 }, block = { 32, 4 }, args = { x } }
    local first = p:pack(opts):bytes()
    assert.equal(first, p:pack(opts):bytes())
    assert.is_true(string.unpack('<i8', first) ~= 0)
  end)

  it('keeps every check of kernel:launch', function()
    local p = kb.cuda.args('ptr, i32')
    local x = kb.empty({ 4 }, 'f32')
    local function err(opts)
      local ok, e = pcall(p.pack, p, opts)
      assert.is_false(ok)
      return e
    end
    assert.matches('args has 1 values, the kernel takes 2: ptr, i32', err { grid = 1, block = 1, args = { x } }, 1, true)
    assert.matches('args[2] (i32): expected an integer, got a fraction', err { grid = 1, block = 1, args = { x, 1.5 } },
      1, true)
    assert.matches('args[2] (i32): 4294967296 is out of range', err { grid = 1, block = 1, args = { x, 1 << 32 } }, 1,
      true)
    assert.matches('args[1] (ptr): expected a tensor or an integer address, got string',
      err { grid = 1, block = 1, args = { 'x', 1 } }, 1, true)
    assert.matches('grid must be a positive integer', err { grid = 0, block = 1, args = { x, 1 } }, 1, true)
    assert.matches('block must have 1 to 3 dimensions, has 4', err { grid = 1, block = { 1, 1, 1, 1 }, args = { x, 1 } },
      1, true)
    assert.matches('shared must be a number of bytes >= 0', err { grid = 1, block = 1, shared = -1, args = { x, 1 } }, 1,
      true)
    x:free()
    assert.matches('args[1] (ptr): tensor has been freed', err { grid = 1, block = 1, args = { x, 1 } }, 1, true)
    assert.matches("bad argument #1 to 'args' (signature expected", select(2, pcall(kb.cuda.args, 42)), 1, true)
    assert.matches('unknown type', select(2, pcall(kb.cuda.args, 'ptr, int7')), 1, true)
  end)
end)

describe('kernel:launch_repeat on the GPU #gpu', function()
  it('launches n times from C and returns the host time, with launch\'s checks', function()
    local m = kb.cuda.compile('extern "C" __global__ void add1(float *p) { atomicAdd(p, 1.0f); }', { name = 'add1.cu' })
    local k = m:kernel('add1', 'ptr')
    local x = kb.zeros({ 1 }, 'f32')
    local ns = k:launch_repeat({ grid = 1, block = 1, args = { x } }, 1000)
    kb.synchronize()
    assert.equal(1000, x:item())
    assert.is_true(math.type(ns) == 'integer' and ns > 0)
    assert.has_error(function() k:launch_repeat({ grid = 1, block = 1, args = {} }, 10) end)
    assert.has_error(function() k:launch_repeat({ grid = 1, block = 1, args = { x } }, 0) end)
  end)
end)
