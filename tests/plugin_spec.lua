-- C plugins (include/kluabench_plugin.h): the example plugin's CPU twin runs
-- on cpu tensors, arguments are checked against the signature, and broken
-- plugins (wrong ABI version, bad signature, no entry point, failing entry)
-- give clear errors while the engine keeps working.
local kb = require 'kluabench'

local PLUGINS = kb.executable():match('^(.*)/[^/]*$') .. '/plugins/'

local function tensor(values, dtype) return kb.from_table(values, nil, dtype or 'f32', 'cpu') end

describe('kb.plugin', function()
  local p = kb.plugin.load(PLUGINS .. 'libscale_add.so')

  it('loads a plugin and lists its kernels, with its version and digest', function()
    local info = p:info()
    assert.equal('scale_add', info.name)
    assert.equal('1.0.0', info.version)
    assert.equal(1, info.abi_version)
    assert.equal('sha256:' .. kb.sha256_file(PLUGINS .. 'libscale_add.so'), info.sha256)
    assert.same({ 'scale_add' }, p:kernels())
    assert.equal('kluabench.Plugin(scale_add)', tostring(p))
  end)

  it('runs the CPU twin on cpu tensors, called or with :call', function()
    local k = p:kernel('scale_add')
    local out = kb.empty({ 4 }, 'f32', 'cpu')
    k(out, tensor { 1, 2, 3, 4 }, tensor { 10, 20, 30, 40 }, 0.5)
    assert.same({ 10.5, 21, 31.5, 42 }, out:totable())
    assert.equal(k, k:call(out, tensor { 0, 0, 0, 0 }, tensor { 1, 1, 1, 1 }, 3))
    assert.same({ 1, 1, 1, 1 }, out:totable())
    local info = k:info()
    assert.equal('tensor, tensor, tensor, f64', info.signature)
    assert.is_true(info.cpu)
    assert.equal(kb.build_info().cuda, info.cuda)
    assert.equal('scale_add', info.plugin.name)
  end)

  it('names the argument that does not fit the signature', function()
    local k = p:kernel('scale_add')
    local out = kb.empty({ 2 }, 'f32', 'cpu')
    local ok, err = pcall(k, out, tensor { 1, 2 }, tensor { 1, 2 })
    assert.truthy(err:find("bad argument #4 to 'scale_add' (3 arguments given, the kernel takes 4", 1, true), err)
    ok, err = pcall(k, out, tensor { 1, 2 }, 7, 1)
    assert.truthy(err:find('parameter 3 is a tensor, got number', 1, true), err)
    ok, err = pcall(k, out, tensor { 1, 2 }, tensor { 1, 2 }, 'x')
    assert.truthy(err:find('parameter 4 is a number (f64), got string', 1, true), err)
    local freed = tensor { 1, 2 }
    freed:free()
    ok, err = pcall(k, out, freed, tensor { 1, 2 }, 1)
    assert.truthy(err:find('tensor has been freed', 1, true), err)
    -- the plugin's own check, reported with the plugin and kernel name
    ok, err = pcall(k, out, tensor({ 1, 2 }, 'bf16'), tensor { 1, 2 }, 1)
    assert.is_false(ok)
    assert.truthy(err:find('scale_add.scale_add (CPU entry) failed: scale_add: argument 2 must be an f32 tensor', 1, true), err)
    ok, err = pcall(p.kernel, p, 'nope')
    assert.truthy(err:find("plugin 'scale_add' has no kernel 'nope'", 1, true), err)
  end)

  it('refuses a plugin built for another ABI version', function()
    local ok, err = pcall(kb.plugin.load, PLUGINS .. 'libbroken1.so')
    assert.is_false(ok)
    assert.truthy(err:find('was built for plugin ABI version 2, this kluabench speaks version 1', 1, true), err)
  end)

  it('refuses a kernel with a bad signature, a library that is no plugin, a missing file', function()
    local ok, err = pcall(kb.plugin.load, PLUGINS .. 'libbroken2.so')
    assert.truthy(err:find("kernel 'bad' has a bad signature: unknown type 'float3' at parameter 2", 1, true), err)
    ok, err = pcall(kb.plugin.load, PLUGINS .. 'libbroken3.so')
    assert.truthy(err:find('is not a kluabench plugin (it exports no function kluabench_plugin)', 1, true), err)
    ok, err = pcall(kb.plugin.load, PLUGINS .. 'missing.so')
    assert.truthy(err:find("cannot open plugin '" .. PLUGINS .. "missing.so'", 1, true), err)
  end)

  it('reports a failing entry and keeps working', function()
    local b = kb.plugin.load(PLUGINS .. 'libbroken4.so')
    local ok, err = pcall(b:kernel('fails'), tensor { 1 }, 2)
    assert.is_false(ok)
    assert.truthy(err:find('broken.fails (CPU entry) failed: this entry always fails', 1, true), err)
    local out = kb.empty({ 1 }, 'f32', 'cpu')
    p:kernel('scale_add')(out, tensor { 2 }, tensor { 1 }, 2)
    assert.same({ 5 }, out:totable())
  end)

  it('has no CUDA entry to call on cpu tensors only when built without CUDA', function()
    if kb.build_info().cuda then return end
    assert.is_false(p:kernel('scale_add'):info().cuda)
  end)
end)
