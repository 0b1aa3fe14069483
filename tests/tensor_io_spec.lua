-- Tensors in .npy and safetensors files (engine/core/tensor_io.c): round trips
-- bit for bit on fresh random tensors, the committed files that NumPy and
-- safetensors wrote (tests/fixtures/tensor_io/README.md says how), files that
-- lie about their sizes or are no files at all, and, where Python has numpy
-- and safetensors, both directions against the real libraries.
local kb = require 'kluabench'
local util = require 'helpers.util'

local q, spit, slurp = util.q, util.spit, util.slurp
local ROOT = package.searchpath('kluabench.init', package.path):match('^(.-)/?stdlib/kluabench/init%.lua$')
if ROOT == '' then ROOT = '.' end
local DATA = ROOT .. '/tests/fixtures/tensor_io/'

local function seed() return math.random(1, 2 ^ 31) end

-- arange(n) * 0.25 - 1.5, what every committed file holds
local function ramp(n)
  local t = {}
  for i = 1, n do t[i] = (i - 1) * 0.25 - 1.5 end
  return t
end

local function fails_with(needle, ok, err)
  assert(ok == nil, 'expected nil and a message, got ' .. tostring(ok))
  assert(type(err) == 'string' and err:find(needle, 1, true), ('%q does not contain %q'):format(tostring(err), needle))
end

local dir
before_each(function() dir = util.tmpdir() end)
after_each(function() os.execute('rm -rf ' .. q(dir)) end)

describe('kb.save_npy and kb.load_npy', function()
  it('round-trip f16, f32 and f64 tensors of every rank bit for bit', function()
    local shapes = { {}, { 0 }, { 1 }, { 7 }, { 3, 5 }, { 2, 0, 3 }, { 2, 3, 1, 4 }, { 1, 2, 1, 2, 1, 2, 1, 2 } }
    for _, dt in ipairs { 'f16', 'f32', 'f64' } do
      for _, shape in ipairs(shapes) do
        local t = kb.randn(shape, dt, seed(), 'cpu')
        local path = dir .. '/t.npy'
        assert.is_true(kb.save_npy(path, t))
        local back = assert(kb.load_npy(path, 'cpu'))
        assert.same(shape, back.shape)
        assert.equal(dt, back.dtype)
        assert.equal(t:digest(), back:digest())
      end
    end
  end)

  it('writes what numpy.save writes: version 1.0, a 64-byte aligned header', function()
    local path = dir .. '/a.npy'
    assert(kb.save_npy(path, kb.from_table(ramp(6), { 2, 3 }, 'f32', 'cpu')))
    local bytes = slurp(path)
    assert.equal('\x93NUMPY\x01\x00', bytes:sub(1, 8))
    local hlen = string.unpack('<I2', bytes, 9)
    assert.equal(0, (10 + hlen) % 64)
    assert.equal("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }",
      bytes:sub(11, 10 + hlen):match('^(.-)%s*$'))
    assert.equal('\n', bytes:sub(10 + hlen, 10 + hlen))
    assert.equal(10 + hlen + 24, #bytes)
    assert(kb.save_npy(path, kb.zeros({ 4 }, 'f64', 'cpu')))
    assert.truthy(slurp(path):find("'shape': (4,), }", 1, true))
  end)

  it('reads the files numpy.save wrote (tests/fixtures/tensor_io)', function()
    local t = assert(kb.load_npy(DATA .. 'numpy_f32_2x3x2.npy'))
    assert.same({ 2, 3, 2 }, t.shape)
    assert.equal('f32', t.dtype)
    assert.same(ramp(12), t:totable())
    t = assert(kb.load_npy(DATA .. 'numpy_f16_12.npy'))
    assert.same({ 12 }, t.shape)
    assert.equal('f16', t.dtype)
    assert.same(ramp(12), t:totable())
    t = assert(kb.load_npy(DATA .. 'numpy_f64_be_3x4.npy')) -- big-endian, swapped on reading
    assert.same({ 3, 4 }, t.shape)
    assert.equal('f64', t.dtype)
    assert.same(ramp(12), t:totable())
    t = assert(kb.load_npy(DATA .. 'numpy_scalar_f64.npy'))
    assert.same({}, t.shape)
    assert.equal(2.5, t:item())
  end)

  it('refuses bf16, with what to do instead', function()
    local ok, err = pcall(kb.save_npy, dir .. '/b.npy', kb.zeros({ 2 }, 'bf16', 'cpu'))
    assert.is_false(ok)
    assert.matches("bad argument #2 to '.-save_npy' %(.npy has no bfloat16: save t:cast%('f32'%)", err)
    -- ml_dtypes' bfloat16 is saved as raw 2-byte void data
    local path = dir .. '/ml.npy'
    local header = "{'descr': '<V2', 'fortran_order': False, 'shape': (2,), }"
    header = header .. string.rep(' ', 63 - (10 + #header) % 64) .. '\n'
    spit(path, '\x93NUMPY\x01\x00' .. string.pack('<I2', #header) .. header .. '\0\0\0\0')
    fails_with("dtype '<V2' is not supported (kluabench reads <f2, <f4 and <f8; .npy has no bfloat16",
      kb.load_npy(path))
  end)

  local function npy(header, data, version)
    local h = header .. string.rep(' ', 63 - (10 + #header) % 64) .. '\n'
    return '\x93NUMPY' .. (version or '\x01\x00') .. string.pack('<I2', #h) .. h .. data
  end

  it('refuses files that are not .npy files or lie about their size, naming the file', function()
    local path = dir .. '/x.npy'
    local good = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }"
    local cases = {
      { 'not an .npy file (no \\x93NUMPY magic)', string.rep('x', 64) },
      { 'too short for the header', '\x93NUM' },
      { 'too short for a version 2 header', '\x93NUMPY\x02\x00\x00\x00' },
      { 'has 20 bytes of data, shape [2, 3] <f4 needs 24 (truncated', npy(good, string.rep('\0', 20)) },
      { 'has 28 bytes of data, shape [2, 3] <f4 needs 24', npy(good, string.rep('\0', 28)) },
      { 'runs past the end of the file', '\x93NUMPY\x01\x00\xff\x7f{' },
      { '.npy format version 9.0 is not supported', npy(good, string.rep('\0', 24), '\x09\x00') },
      { "dtype '<i8' is not supported", npy("{'descr': '<i8', 'fortran_order': False, 'shape': (3,), }", string.rep('\0', 24)) },
      { 'Fortran-order arrays are not supported', npy("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }", string.rep('\0', 24)) },
      { "unknown header key 'extra'", npy("{'descr': '<f4', 'extra': 1, 'shape': (2,), }", string.rep('\0', 8)) },
      { "the header lacks 'shape'", npy("{'descr': '<f4', 'fortran_order': False, }", '') },
      { 'more than 8 dimensions', npy("{'descr': '<f4', 'fortran_order': False, 'shape': (1,1,1,1,1,1,1,1,1), }", '\0\0\0\0') },
      { 'shape [4611686018427387904, 4] is too large',
        npy("{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387904, 4), }", '') },
      { "bad .npy header: expected '{'", npy("['descr']", '') },
    }
    for _, c in ipairs(cases) do
      spit(path, c[2])
      local ok, err = kb.load_npy(path)
      fails_with(c[1], ok, err)
      assert.equal(path .. ': ', err:sub(1, #path + 2))
    end
    -- a header larger than the reader accepts is refused before it is read
    spit(path, '\x93NUMPY\x02\x00' .. string.pack('<I4', 1 << 30) .. '{')
    fails_with('header of 1073741824 bytes is larger than the 1048576 this reader accepts', kb.load_npy(path))
  end)

  it('refuses a directory, a FIFO (without waiting for a writer) and a missing file', function()
    fails_with(dir .. ': a directory, not a regular file', kb.load_npy(dir))
    local fifo = dir .. '/fifo'
    assert(os.execute('mkfifo ' .. q(fifo)))
    fails_with(fifo .. ': a FIFO, not a regular file', kb.load_npy(fifo))
    fails_with(dir .. '/missing.npy: No such file or directory', kb.load_npy(dir .. '/missing.npy'))
    -- and never replaces one when saving
    fails_with(fifo .. ': a FIFO, not a regular file (refusing to replace it)',
      kb.save_npy(fifo, kb.zeros({ 1 }, 'f32', 'cpu')))
    fails_with(dir .. '/no/such/dir/t.npy: No such file or directory',
      kb.save_npy(dir .. '/no/such/dir/t.npy', kb.zeros({ 1 }, 'f32', 'cpu')))
  end)

  it('replaces a file whole, leaving no temporary file beside it', function()
    local path = dir .. '/t.npy'
    spit(path, 'old')
    assert(kb.save_npy(path, kb.zeros({ 3 }, 'f32', 'cpu')))
    assert.equal(3, #assert(kb.load_npy(path)))
    local listing = util.run('ls -A ' .. q(dir))
    assert.equal('t.npy\n', listing)
  end)
end)

describe('kb.save_safetensors and kb.load_safetensors', function()
  it('round-trip named tensors of all four dtypes and the metadata bit for bit', function()
    local tensors = {}
    for i, dt in ipairs { 'bf16', 'f16', 'f32', 'f64' } do
      tensors['layer.' .. i .. '.weight'] = kb.randn({ i, 3 }, dt, seed(), 'cpu')
      tensors[dt .. ' empty'] = kb.zeros({ 0, i }, dt, 'cpu')
    end
    tensors['ünïcode "quoted"\n'] = kb.randn({}, 'f32', seed(), 'cpu')
    local path = dir .. '/m.safetensors'
    assert.is_true(kb.save_safetensors(path, tensors, { format = 'pt', ['a "key"'] = 'v\\1' }))
    local back, meta = assert(kb.load_safetensors(path, 'cpu'))
    local n = 0
    for name, t in pairs(tensors) do
      n = n + 1
      assert(back[name], name)
      assert.same(t.shape, back[name].shape)
      assert.equal(t.dtype, back[name].dtype)
      assert.equal(t:digest(), back[name]:digest(), name)
    end
    for _ in pairs(back) do n = n - 1 end
    assert.equal(0, n)
    assert.same({ format = 'pt', ['a "key"'] = 'v\\1' }, meta)
  end)

  it('writes the format: 8-byte length, JSON padded to 8 bytes, data tiled in name order', function()
    local path = dir .. '/m.safetensors'
    assert(kb.save_safetensors(path, { b = kb.zeros({ 2 }, 'f32', 'cpu'), a = kb.zeros({ 3 }, 'f16', 'cpu') }))
    local bytes = slurp(path)
    local hlen = string.unpack('<I8', bytes)
    assert.equal(0, hlen % 8)
    local header = bytes:sub(9, 8 + hlen)
    assert.equal('{"a":{"dtype":"F16","shape":[3],"data_offsets":[0,6]},'
      .. '"b":{"dtype":"F32","shape":[2],"data_offsets":[6,14]}}', header:match('^(.-) *$'))
    assert.equal(8 + hlen + 14, #bytes)
    local _, meta = assert(kb.load_safetensors(path))
    assert.same({}, meta)
    -- an empty file of tensors is valid too
    assert(kb.save_safetensors(path, {}))
    assert.same({}, (assert(kb.load_safetensors(path))))
  end)

  it('reads the file safetensors wrote (tests/fixtures/tensor_io)', function()
    local t, meta = assert(kb.load_safetensors(DATA .. 'safetensors_4_dtypes.safetensors'))
    assert.same({ made_by = 'safetensors 0.8.0 (numpy)' }, meta)
    assert.same({ 3, 4 }, t.w.shape)
    assert.equal('f32', t.w.dtype)
    assert.same(ramp(12), t.w:totable())
    assert.equal('f16', t.h.dtype)
    assert.same(ramp(6), t.h:totable())
    assert.equal('bf16', t.b.dtype)
    assert.same({ 2, 2 }, t.b.shape)
    assert.same(ramp(4), t.b:totable())
    assert.equal('f64', t.d.dtype)
    assert.same(ramp(3), t.d:totable())
  end)

  local function st(header, data)
    local h = header .. string.rep(' ', (8 - #header % 8) % 8)
    return string.pack('<I8', #h) .. h .. (data or '')
  end

  it('refuses headers that lie, naming the file and the tensor', function()
    local path = dir .. '/x.safetensors'
    local f = '"dtype":"F32","shape":[2]'
    local cases = {
      { 'too short', 'abc' },
      { 'larger than the 100000000 bytes safetensors allows', string.pack('<I8', 200000000) .. '{}' },
      { 'header of 64 bytes runs past the end of the file', string.pack('<I8', 64) .. '{}' },
      { 'safetensors header is not valid JSON (Expected', st('{"a":', '') },
      { 'safetensors header is not a JSON object', st('[1,2]') },
      { 'safetensors header is not a JSON object', st('[]') },
      { 'safetensors header is not a JSON object', st('"text"') },
      { "tensor 'a' has dtype I64 (kluabench reads BF16, F16, F32 and F64)",
        st('{"a":{"dtype":"I64","shape":[1],"data_offsets":[0,8]}}', string.rep('\0', 8)) },
      { "tensor 'a': data_offsets [0, 4] hold 4 bytes, shape [2] F32 needs 8",
        st('{"a":{' .. f .. ',"data_offsets":[0,4]}}', string.rep('\0', 4)) },
      { "tensor 'a': data_offsets must be integers 0 <= begin <= end <= 8",
        st('{"a":{' .. f .. ',"data_offsets":[0,16]}}', string.rep('\0', 8)) },
      { "tensor 'b' starts at data byte 4, expected 8 (a gap or an overlap)",
        st('{"a":{' .. f .. ',"data_offsets":[0,8]},"b":{' .. f .. ',"data_offsets":[4,12]}}', string.rep('\0', 12)) },
      { 'the tensors cover 8 of the 12 data bytes after the header',
        st('{"a":{' .. f .. ',"data_offsets":[0,8]}}', string.rep('\0', 12)) },
      { "tensor 'a' has an unknown field 'offsets'", st('{"a":{' .. f .. ',"offsets":[0,8]}}', string.rep('\0', 8)) },
      { "tensor 'a' has no shape list", st('{"a":{"dtype":"F32","data_offsets":[0,8]}}', string.rep('\0', 8)) },
      { "tensor 'a': shape[1] is not a non-negative integer",
        st('{"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}}', string.rep('\0', 8)) },
      { '__metadata__ must map strings to strings', st('{"__metadata__":{"n":1}}') },
      { "tensor 'a' is not a JSON object", st('{"a":[1]}') },
    }
    for _, c in ipairs(cases) do
      spit(path, c[2])
      local ok, err = kb.load_safetensors(path)
      fails_with(c[1], ok, err)
      assert.equal(path .. ': ', err:sub(1, #path + 2))
    end
    fails_with(dir .. ': a directory, not a regular file', kb.load_safetensors(dir))
    local fifo = dir .. '/fifo'
    assert(os.execute('mkfifo ' .. q(fifo)))
    fails_with(fifo .. ': a FIFO, not a regular file', kb.load_safetensors(fifo))
  end)

  it('checks its arguments', function()
    local t = kb.zeros({ 1 }, 'f32', 'cpu')
    local function argerr(pattern, ...)
      local ok, err = pcall(...)
      assert.is_false(ok)
      assert.matches(pattern, err)
    end
    argerr("bad argument #2 .-%(table expected, got no value%)", kb.save_safetensors, dir .. '/x')
    argerr("tensor names must be strings, got a number key", kb.save_safetensors, dir .. '/x', { t })
    argerr("tensors%['w'%] is a string, not a kluabench.Tensor", kb.save_safetensors, dir .. '/x', { w = 'x' })
    argerr("'__metadata__' is not a tensor name", kb.save_safetensors, dir .. '/x', { __metadata__ = t })
    argerr('metadata must map strings to strings', kb.save_safetensors, dir .. '/x', { w = t }, { n = 1 })
    local freed = kb.zeros({ 1 }, 'f32', 'cpu')
    freed:free()
    argerr("tensors%['w'%] has been freed", kb.save_safetensors, dir .. '/x', { w = freed })
    argerr('not valid UTF%-8', kb.save_safetensors, dir .. '/x', { ['\xff'] = t })
  end)
end)

-- The real libraries, both ways, where Python has them (`pip install numpy
-- safetensors`); skipped with the reason otherwise.
describe('writing through a temporary file (issue 37)', function()
  -- save_npy and save_safetensors used to write through PATH.tmp-<pid>, opened with O_CREAT|O_TRUNC:
  -- a link planted at that name sent the bytes into whatever it pointed to. The temporary is now
  -- created exclusively (O_EXCL, O_NOFOLLOW) under a random name.
  local function plant(target, victim)
    local pid = kb.process.getpid()
    local names = { target .. '.tmp-' .. pid, target .. '.' .. pid .. '.tmp', target .. '.tmp', target .. '.tmp-0',
      target .. '.tmp-000000000000', target .. '.tmp-ffffffffffff' }
    for _, n in ipairs(names) do assert(os.execute('ln -s ' .. q(victim) .. ' ' .. q(n))) end
    return names
  end

  for _, case in ipairs {
    { 'save_npy', 'x.npy', function(p, t) return kb.save_npy(p, t) end, function(p) return kb.load_npy(p) end },
    { 'save_safetensors', 'x.safetensors', function(p, t) return kb.save_safetensors(p, { t = t }) end,
      function(p) return (kb.load_safetensors(p) or {}).t end },
  } do
    local fn, name, save, load = case[1], case[2], case[3], case[4]
    it(fn .. ' never writes through a link planted at its old or a guessed temporary name', function()
      local outside = util.tmpdir()
      finally(function() os.execute('rm -rf ' .. q(outside)) end)
      local victim, absent = outside .. '/victim', outside .. '/absent'
      spit(victim, 'precious')
      local target = dir .. '/' .. name
      local links = plant(target, victim)
      -- and dangling ones: following them would create the file they name
      assert(os.execute('ln -s ' .. q(absent) .. ' ' .. q(target .. '.tmp-' .. kb.process.getpid() .. '0')))
      for _ = 1, 2 do -- a new file, then one replaced
        local t = kb.randn({ 3, 4 }, 'f32', seed(), 'cpu')
        assert(save(target, t))
        assert.same(t:totable(), assert(load(target)):totable())
      end
      assert.equal('precious', slurp(victim))
      assert.is_nil(kb.stat(absent))
      for _, l in ipairs(links) do assert.equal('link', kb.stat(l).type) end
      -- nothing else was left beside the target
      local listing = util.run('ls -A ' .. q(dir) .. ' | grep -v "^' .. name .. '" | wc -l')
      assert.equal('0', listing:match('%d+'))
      assert.equal(#links + 2, tonumber(util.run('ls -A ' .. q(dir) .. ' | wc -l'):match('%d+')))
    end)
  end
end)

describe('files exchanged with numpy and safetensors', function()
  local function python_has(modules)
    local _, code = util.run('python3 -c ' .. q('import ' .. modules) .. ' 2>/dev/null')
    return code == 0
  end
  local HAS = python_has('numpy, safetensors.numpy')

  local function python(script)
    local file = dir .. '/script.py'
    spit(file, script)
    local out, code = util.run('cd ' .. q(dir) .. ' && python3 ' .. q(file) .. ' 2>&1')
    assert(code == 0, 'python3 failed:\n' .. out)
    return out
  end

  it('reads random arrays numpy and safetensors wrote, and they read what kluabench wrote', function()
    if not HAS then
      return pending('python3 with numpy and safetensors is not installed (pip install numpy safetensors)')
    end
    local s = seed()
    python(([[
import numpy as np
from safetensors.numpy import save_file
rng = np.random.default_rng(%d)
a = rng.standard_normal((3, 5, 2))
np.save('f32.npy', a.astype(np.float32)); np.save('f16.npy', a.astype(np.float16)); np.save('f64.npy', a)
save_file({'x32': a.astype(np.float32), 'x16': a[0].astype(np.float16), 'x64': a[:, 0]}, 'm.safetensors',
          metadata={'seed': '%d'})
with open('values.txt', 'w') as f:
    f.write('\n'.join(repr(float(v)) for v in a.ravel()))
]]):format(s, s))
    local values = {}
    for line in io.lines(dir .. '/values.txt') do values[#values + 1] = tonumber(line) end
    local f64 = assert(kb.load_npy(dir .. '/f64.npy'))
    assert.same(values, f64:totable())
    -- numpy rounds to nearest even as kluabench does: the f64 values cast here
    assert.equal(f64:cast('f32'):digest(), assert(kb.load_npy(dir .. '/f32.npy')):digest())
    assert.equal(f64:cast('f16'):digest(), assert(kb.load_npy(dir .. '/f16.npy')):digest())
    local m, meta = assert(kb.load_safetensors(dir .. '/m.safetensors'))
    assert.equal(tostring(s), meta.seed)
    assert.equal(f64:cast('f32'):digest(), m.x32:digest())
    assert.same({ 5, 2 }, m.x16.shape)
    assert.same({ 3, 2 }, m.x64.shape)

    -- the other way: kluabench writes, numpy and safetensors read
    local t = kb.randn({ 4, 3 }, 'f64', s, 'cpu')
    assert(kb.save_npy(dir .. '/k64.npy', t))
    assert(kb.save_npy(dir .. '/k16.npy', t:cast('f16')))
    assert(kb.save_safetensors(dir .. '/k.safetensors',
      { a = t, b = t:cast('bf16'), c = t:cast('f16'), d = t:cast('f32') }, { who = 'kluabench' }))
    local out = python([[
import numpy as np
from safetensors import safe_open
a = np.load('k64.npy'); h = np.load('k16.npy')
assert a.shape == (4, 3) and a.dtype == np.float64 and h.dtype == np.float16
assert np.array_equal(h, a.astype(np.float16))
with safe_open('k.safetensors', framework='numpy') as f:
    assert f.metadata() == {'who': 'kluabench'}
    assert sorted(f.keys()) == ['a', 'b', 'c', 'd']
    assert np.array_equal(f.get_tensor('a'), a)
    assert np.array_equal(f.get_tensor('c'), a.astype(np.float16))
    assert np.array_equal(f.get_tensor('d'), a.astype(np.float32))
print(' '.join(repr(float(v)) for v in a.ravel()))
]])
    local i = 0
    local want = t:totable()
    for v in out:gmatch('%S+') do
      i = i + 1
      assert.equal(want[i], tonumber(v))
    end
    assert.equal(12, i)
  end)

  it('reads bf16 that ml_dtypes made, through safetensors', function()
    if not (HAS and python_has('ml_dtypes')) then
      return pending('python3 with numpy, safetensors and ml_dtypes is not installed')
    end
    python([[
import numpy as np, ml_dtypes
from safetensors.numpy import save_file
a = np.array([1.0, -2.5, 3.140625, 1e-3, 65504.0, 1e30], dtype=np.float32)
save_file({'b': a.astype(ml_dtypes.bfloat16)}, 'bf.safetensors')
]])
    local t = assert(kb.load_safetensors(dir .. '/bf.safetensors')).b
    assert.equal('bf16', t.dtype)
    assert.equal(kb.from_table({ 1.0, -2.5, 3.140625, 1e-3, 65504.0, 1e30 }, nil, 'bf16', 'cpu'):digest(), t:digest())
  end)
end)

describe('tensor files on the cuda device #gpu', function()
  if kb.backend() ~= 'cuda' then
    pending('needs the cuda backend')
    return
  end

  it('loads into device memory and saves from it', function()
    for _, dt in ipairs { 'bf16', 'f16', 'f32', 'f64' } do
      local t = kb.randn({ 33, 7 }, dt, seed(), 'cuda')
      assert(kb.save_safetensors(dir .. '/g.safetensors', { t = t }))
      local back = assert(kb.load_safetensors(dir .. '/g.safetensors', 'cuda')).t
      assert.truthy(back.device:match('^cuda:%d+$'), back.device)
      assert.equal(t:digest(), back:digest())
      if dt ~= 'bf16' then
        assert(kb.save_npy(dir .. '/g.npy', t))
        local n = assert(kb.load_npy(dir .. '/g.npy', 'cuda'))
        assert.truthy(n.device:match('^cuda'))
        assert.equal(t:digest(), n:digest())
      end
    end
  end)
end)
