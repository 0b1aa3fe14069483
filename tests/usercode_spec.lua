-- User kernels on any machine: NVRTC compiles (and reports errors with its
-- log) without a GPU, the compile cache, signature parsing, module formats,
-- Triton metadata, and clear errors where a GPU is needed but absent.
local kb = require 'kluabench'
local util = require 'helpers.util'

local BUILD = kb.executable():match('^(.*)/[^/]*$')
local NVRTC, NVRTC_WHY = kb.cuda.nvrtc_version()

local SRC = require('helpers.user_kernels').SCALE

-- NVRTC is part of the CUDA toolkit; CI has it. Where it is absent the
-- compile specs are pending with the reason, and the error is checked.
local function needs_nvrtc(name, fn)
  if NVRTC then it(name, fn) else pending(name .. ' (NVRTC not found: ' .. tostring(NVRTC_WHY) .. ')') end
end

describe('kb.cuda.compile', function()
  local cache
  before_each(function() cache = util.tmpdir() end)
  after_each(function() os.execute('rm -rf ' .. util.q(cache)) end)

  it('reports NVRTC\'s version, or why there is none', function()
    if NVRTC then
      assert.truthy(NVRTC:match('^%d+%.%d+$'))
    else
      assert.truthy(NVRTC_WHY:find('NVRTC', 1, true))
      local ok, err = pcall(kb.cuda.compile, SRC)
      assert.is_false(ok)
      assert.truthy(err:find('KLUABENCH_NVRTC', 1, true))
    end
  end)

  needs_nvrtc('compiles to a cubin for sm_90 by default on cpu, with PTX, without a GPU', function()
    local m = kb.cuda.compile(SRC, { cache_dir = cache })
    local info = m:info()
    assert.equal('cubin', info.format)
    assert.equal('sm_90', info.arch)
    assert.same({ '-arch=sm_90' }, info.options)
    assert.equal(NVRTC, info.nvrtc_version)
    assert.truthy(info.sha256:match('^sha256:%x+$'))
    assert.equal('sha256:' .. kb.sha256(SRC), info.source_sha256)
    assert.truthy(m:ptx():find('.entry scale', 1, true))
    assert.equal('\127ELF', m:cubin():sub(1, 4))
    assert.truthy(tostring(m):match('^kluabench.Module%(cubin'))
  end)

  needs_nvrtc('gives PTX only for a virtual arch', function()
    local m = kb.cuda.compile(SRC, { arch = 'compute_90', cache = false })
    assert.equal('ptx', m:info().format)
    local c, why = m:cubin()
    assert.is_nil(c)
    assert.truthy(why:find('not a cubin', 1, true))
  end)

  needs_nvrtc('passes defines, include paths, -lineinfo and other options, in a stable order', function()
    local dir = util.tmpdir()
    util.spit(dir .. '/inc.cuh', '#define FACTOR 3\n')
    local src = '#include "inc.cuh"\nextern "C" __global__ void k(int *p) { *p = FACTOR * N + M; }\n'
    local m = kb.cuda.compile(src, { defines = { N = 2, M = '1' }, include = { dir }, lineinfo = true,
      options = { '--use_fast_math' }, arch = '80', cache_dir = cache })
    os.execute('rm -rf ' .. util.q(dir))
    assert.same({ '-arch=sm_80', '-lineinfo', '-DM=1', '-DN=2', '-I' .. dir, '--use_fast_math' }, m:info().options)
    assert.truthy(m:ptx():find('.target sm_80', 1, true))
  end)

  needs_nvrtc('lowers name expressions of templates', function()
    local m = kb.cuda.compile(SRC, { names = { 'twice<float>' }, cache = false })
    assert.truthy(m:info().names['twice<float>']:match('^_Z'))
  end)

  needs_nvrtc('takes headers as strings', function()
    local m = kb.cuda.compile('#include "v.h"\nextern "C" __global__ void k(int *p) { *p = V; }',
      { headers = { ['v.h'] = '#define V 7\n' }, cache = false })
    assert.equal('cubin', m:info().format)
  end)

  needs_nvrtc('raises a compile error carrying NVRTC\'s log with line numbers', function()
    local ok, err = pcall(kb.cuda.compile, 'extern "C" __global__ void k() {\n  undefined_thing = 1;\n}\n',
      { name = 'broken.cu', cache_dir = cache })
    assert.is_false(ok)
    assert.truthy(err:find('compile: broken.cu failed to compile', 1, true), err)
    assert.truthy(err:find('NVRTC_ERROR_COMPILATION', 1, true), err)
    assert.truthy(err:find('broken.cu(2): error: identifier "undefined_thing" is undefined', 1, true), err)
    -- and compiling keeps working
    assert.equal('cubin', kb.cuda.compile(SRC, { cache = false }):info().format)
  end)

  needs_nvrtc('rejects bad options by name', function()
    local ok, err = pcall(kb.cuda.compile, SRC, { defnes = {} })
    assert.truthy(err:find("unknown option 'defnes'", 1, true), err)
    ok, err = pcall(kb.cuda.compile, SRC, { include = 3 })
    assert.is_false(ok)
    assert.truthy(err:find('opts.include must be a string or a list of strings', 1, true), err)
    ok, err = pcall(kb.cuda.compile, SRC, { options = { '--no-such-flag' }, cache = false })
    assert.is_false(ok)
    assert.truthy(err:find('NVRTC_ERROR_INVALID_OPTION', 1, true), err)
  end)

  needs_nvrtc('caches by source, options, arch and NVRTC version', function()
    local a = kb.cuda.compile(SRC, { cache_dir = cache })
    assert.equal('miss', a:info().cache)
    local b = kb.cuda.compile(SRC, { cache_dir = cache })
    assert.equal('hit', b:info().cache)
    assert.equal(a:info().sha256, b:info().sha256)
    assert.equal(a:ptx(), b:ptx())
    assert.equal(a:info().cache_key, b:info().cache_key)
    assert.truthy(util.slurp(cache .. '/nvrtc/' .. a:info().cache_key .. '.ptx'))
    local c = kb.cuda.compile(SRC, { cache_dir = cache, defines = { X = 1 } })
    assert.equal('miss', c:info().cache)
    local d = kb.cuda.compile(SRC .. '\n', { cache_dir = cache })
    assert.equal('miss', d:info().cache)
    local e = kb.cuda.compile(SRC, { cache_dir = cache, arch = 'sm_80' })
    assert.equal('miss', e:info().cache)
    local n = kb.cuda.compile(SRC, { cache_dir = cache, names = { 'twice<float>' } })
    assert.equal('miss', n:info().cache)
    local n2 = kb.cuda.compile(SRC, { cache_dir = cache, names = { 'twice<float>' } })
    assert.equal('hit', n2:info().cache)
    assert.same(n:info().names, n2:info().names)
    assert.equal('off', kb.cuda.compile(SRC, { cache = false }):info().cache)
  end)

  needs_nvrtc('compiles again when a header read from an include directory changes (issue 37)', function()
    local dir = util.tmpdir()
    finally(function() os.execute('rm -rf ' .. util.q(dir)) end)
    assert(kb.mkdir(dir .. '/sub'))
    util.spit(dir .. '/value.cuh', '#define VALUE 123457\n')
    util.spit(dir .. '/sub/more.cuh', '#define MORE 2222221\n')
    local src = '#include "value.cuh"\n#include "sub/more.cuh"\n'
      .. 'extern "C" __global__ void k(int *p) { p[0] = VALUE; p[1] = MORE; }\n'
    for _, opts in ipairs { { include = { dir } }, { options = { '-I' .. dir } }, { options = { '--include-path=' .. dir } } } do
      os.execute('rm -rf ' .. util.q(cache .. '/nvrtc'))
      opts.cache_dir = cache
      util.spit(dir .. '/value.cuh', '#define VALUE 123457\n')
      util.spit(dir .. '/sub/more.cuh', '#define MORE 2222221\n')
      local a = kb.cuda.compile(src, opts)
      assert.equal('miss', a:info().cache)
      assert.truthy(a:ptx():find('123457', 1, true))
      assert.equal('hit', kb.cuda.compile(src, opts):info().cache) -- nothing changed
      -- the header is edited: the next compile runs the new code, not the cached old one
      util.spit(dir .. '/value.cuh', '#define VALUE 765431\n')
      local b = kb.cuda.compile(src, opts)
      assert.equal('miss', b:info().cache)
      assert.truthy(b:ptx():find('765431', 1, true))
      assert.falsy(b:ptx():find('123457', 1, true))
      assert.are_not.equal(a:info().cache_key, b:info().cache_key)
      -- and one in a subdirectory
      util.spit(dir .. '/sub/more.cuh', '#define MORE 3333331\n')
      local c = kb.cuda.compile(src, opts)
      assert.equal('miss', c:info().cache)
      assert.truthy(c:ptx():find('3333331', 1, true))
      assert.equal('hit', kb.cuda.compile(src, opts):info().cache)
    end
  end)

  needs_nvrtc('does not cache a compile whose include directories are too large to hash', function()
    local dir = util.tmpdir()
    finally(function() os.execute('rm -rf ' .. util.q(dir)) end)
    util.spit(dir .. '/value.cuh', '#define VALUE 7\n')
    for i = 1, 4096 do util.spit(dir .. '/f' .. i .. '.h', '') end
    local m = kb.cuda.compile('#include "value.cuh"\nextern "C" __global__ void k(int *p) { *p = VALUE; }\n',
      { include = { dir }, cache_dir = cache })
    assert.equal('off', m:info().cache)
    assert.truthy(m:info().cache_problem:find('the include directories hold more than 4096 files', 1, true))
    assert.is_nil(io.open(cache .. '/nvrtc', 'r'))
  end)

  needs_nvrtc('writes cache entries through exclusive temporaries, never through a planted link (issue 37)', function()
    local outside = util.tmpdir()
    finally(function() os.execute('rm -rf ' .. util.q(outside)) end)
    local victim = outside .. '/victim'
    util.spit(victim, 'precious')
    local key = kb.cuda.compile(SRC, { cache_dir = cache }):info().cache_key
    local nv = cache .. '/nvrtc/'
    os.execute('rm -f ' .. util.q(nv) .. '*')
    local pid = kb.process.getpid()
    for _, ext in ipairs { 'ptx', 'cubin', 'names', 'log', 'sha256' } do
      local final = nv .. key .. '.' .. ext
      -- the old temporary name (PATH.<pid>.tmp) and guesses at the new one
      for _, n in ipairs { final .. '.' .. pid .. '.tmp', final .. '.tmp-' .. pid, final .. '.tmp-000000000000' } do
        assert(os.execute('ln -s ' .. util.q(victim) .. ' ' .. util.q(n)))
      end
    end
    -- a link at an entry's own name is replaced, not written through
    assert(os.execute('ln -s ' .. util.q(victim) .. ' ' .. util.q(nv .. key .. '.log')))
    local m = kb.cuda.compile(SRC, { cache_dir = cache })
    assert.equal('miss', m:info().cache)
    assert.is_nil(m:info().cache_error)
    assert.equal('precious', util.slurp(victim))
    assert.equal('file', kb.stat(nv .. key .. '.log').type)
    assert.equal('hit', kb.cuda.compile(SRC, { cache_dir = cache }):info().cache)
  end)

  needs_nvrtc('uses $KLUABENCH_CACHE/nvrtc by default', function()
    local out = util.run(string.format('KLUABENCH_CACHE=%s %s -e %s', util.q(cache), util.q(util.bin()),
      util.q('local kb = require "kluabench"; print(kb.cuda.compile("extern \\"C\\" __global__ void k() {}"):info().cache)')))
    assert.truthy(out:find('miss', 1, true), out)
    local files = util.run('ls ' .. util.q(cache .. '/nvrtc'))
    assert.truthy(files:find('%.ptx'), files)
  end)

  needs_nvrtc('says where a kernel needs a CUDA device', function()
    if kb.backend() == 'cuda' then return end
    local m = kb.cuda.compile(SRC, { cache = false })
    local ok, err = pcall(m.kernel, m, 'scale', 'ptr, ptr, f32, i32')
    assert.is_false(ok)
    assert.truthy(err:find('user kernels run on a CUDA device, and the backend is cpu', 1, true), err)
  end)
end)

describe('kernel signatures', function()
  it('parse C, Triton and canonical spellings', function()
    assert.same({ 'ptr', 'ptr', 'i32', 'u64', 'f16', 'bf16', 'f32', 'f64', 'u8' },
      kb.cuda.parse_signature('const float* __restrict__ , *fp32, int, unsigned long long, half, bf16, float, double, bool'))
    assert.same({}, kb.cuda.parse_signature(''))
    assert.same({ 'i8', 'u8', 'i16', 'u16', 'u32', 'i64' }, kb.cuda.parse_signature('i8,u8,i16,u16,u32,int64_t'))
  end)

  it('name the parameter that is wrong', function()
    local ok, err = pcall(kb.cuda.parse_signature, 'ptr, float3, i32')
    assert.is_false(ok)
    assert.truthy(err:find("unknown type 'float3' at parameter 2", 1, true), err)
    ok, err = pcall(kb.cuda.parse_signature, 'ptr, , i32')
    assert.truthy(err:find('at parameter 2', 1, true), err)
    ok, err = pcall(kb.cuda.parse_signature, 'tensor')
    assert.truthy(err:find("unsupported type 'tensor'", 1, true), err)
    ok, err = pcall(kb.cuda.parse_signature, string.rep('i32, ', 200) .. 'i32')
    assert.truthy(err:find('more than 128 parameters', 1, true), err)
  end)
end)

describe('kb.cuda.load', function()
  it('tells the formats apart and refuses what is none of them', function()
    local ok, err = pcall(kb.cuda.load, '/no/such/file.cubin')
    assert.truthy(err:find("cannot read '/no/such/file.cubin'", 1, true), err)
    local tmp = os.tmpname()
    util.spit(tmp, 'not a module')
    ok, err = pcall(kb.cuda.load, tmp)
    os.remove(tmp)
    assert.truthy(err:find('is neither a cubin (ELF), a fatbin nor PTX text', 1, true), err)
    ok, err = pcall(kb.cuda.load, string.rep('\0', 5000))
    assert.truthy(err:find('5000 bytes that are neither', 1, true), err)
    assert.equal('cubin', kb.cuda.load('\127ELF' .. string.rep('\0', 60)):info().format)
    assert.equal('fatbin', kb.cuda.load('\x50\xed\x55\xba' .. string.rep('\0', 60)):info().format)
    local ptx = kb.cuda.load('.version 8.0\n.target sm_90\n.address_size 64\n')
    assert.equal('ptx', ptx:info().format)
    assert.truthy(ptx:ptx():find('.target sm_90', 1, true))
  end)

  it('reads files built by nvcc, with their digest', function()
    local path = BUILD .. '/usercode/test_kernels.cubin'
    if not util.slurp(path) then
      pending('no ' .. path .. ' (a CUDA=1 build makes it)')
      return
    end
    local m = kb.cuda.load(path)
    local info = m:info()
    assert.equal('cubin', info.format)
    assert.equal(path, info.path)
    assert.equal('sha256:' .. kb.sha256_file(path), info.sha256)
    assert.equal('fatbin', kb.cuda.load(BUILD .. '/usercode/test_kernels.fatbin'):info().format)
    assert.equal('ptx', kb.cuda.load(BUILD .. '/usercode/test_kernels.ptx'):info().format)
  end)

  it('refuses a corrupt cubin with the loader\'s error and keeps working (cuda) or says why not (cpu)', function()
    local m = kb.cuda.load('\127ELF\2\1\1' .. string.rep('\0', 500))
    local ok, err = pcall(m.kernel, m, 'k', '')
    assert.is_false(ok)
    if kb.backend() == 'cuda' then
      assert.truthy(err:find('cannot load the module', 1, true), err)
      assert.truthy(err:find('CUDA_ERROR_', 1, true), err)
    else
      assert.truthy(err:find('need --backend cuda', 1, true), err)
    end
    assert.equal(3, kb.from_table({ 1, 2, 3 }):numel())
  end)
end)

describe('kluabench.kernels.triton', function()
  local triton = require 'kluabench.kernels.triton'
  local PTX = [[
.visible .entry rope_kernel(
	.param .u64 .ptr .global .align 1 rope_kernel_param_0,
	.param .u32 rope_kernel_param_1,
	.param .f32 rope_kernel_param_2,
	.param .u64 .ptr .global .align 1 rope_kernel_param_3,
	.param .u64 .ptr .global .align 1 rope_kernel_param_4
)
]]

  it('reads a signature from PTX', function()
    assert.equal('ptr, i32, f32, ptr, ptr', (triton.ptx_signature(PTX, 'rope_kernel')))
    local s, err = triton.ptx_signature(PTX, 'other')
    assert.is_nil(s)
    assert.truthy(err:find('no .entry other', 1, true))
  end)

  it('reads metadata and refuses what is not Triton\'s', function()
    local dir = util.tmpdir()
    util.spit(dir .. '/k.json', '{"name": "rope_kernel", "num_warps": 4, "shared": 0, "global_scratch_size": 0, '
      .. '"profile_scratch_size": 0, "num_ctas": 1}')
    util.spit(dir .. '/k.ptx', PTX)
    local meta, cubin, ptx = triton.read_metadata(dir .. '/k.cubin')
    assert.equal('rope_kernel', meta.name)
    assert.equal(dir .. '/k.cubin', cubin)
    assert.equal(dir .. '/k.ptx', ptx)
    util.spit(dir .. '/bad.json', '{"x": 1}')
    local ok, err = pcall(triton.read_metadata, dir .. '/bad.json')
    assert.truthy(err:find("has no 'name': not Triton metadata", 1, true), err)
    -- the visible signature plus the two hidden scratch pointers must match the PTX
    ok, err = pcall(triton.load, dir .. '/k.json', 'ptr, i32')
    assert.is_false(ok)
    assert.truthy(err:find('the signature has 4 parameters with the 2 hidden ones, the PTX entry rope_kernel has 5', 1, true), err)
    os.execute('rm -rf ' .. util.q(dir))
  end)
end)

describe('record.user_implementation', function()
  local record = require 'kluabench.record'

  needs_nvrtc('carries the source digest, options and NVRTC version, so different kernels never share a digest', function()
    local a = kb.cuda.compile(SRC, { cache = false })
    local b = kb.cuda.compile(SRC, { cache = false, defines = { X = 1 } })
    local c = kb.cuda.compile(SRC .. '\n// changed\n', { cache = false })
    local OP = 'sha256:' .. string.rep('0', 64)
    local da = record.user_implementation { provider = 'mine', kernel = 'scale', info = a:info(), operation_digest = OP }
    local s = da.spec
    assert.equal('kluabench_nvrtc', s.callable.interface)
    assert.equal(a:info().source_sha256, s.source.contentDigest)
    assert.equal('nvrtc -arch=sm_90', s.buildVariants[1].install.command)
    assert.equal(NVRTC, s.buildVariants[1].requirements.nvrtc)
    assert.same({ 'sm_90' }, s.support.hardwareArchitectures)
    assert.equal(OP, s.operation.specDigest)
    assert.same({}, require('helpers.schema').check(da))
    local digests = {}
    for _, m in ipairs { a, b, c } do
      digests[record.digest(record.user_implementation { provider = 'mine', kernel = 'scale', info = m:info(),
        operation_digest = OP })] = true
    end
    local n = 0
    for _ in pairs(digests) do n = n + 1 end
    assert.equal(3, n)
    assert.equal(record.digest(da), record.digest(record.user_implementation {
      provider = 'mine', kernel = 'scale', info = kb.cuda.compile(SRC, { cache = false }):info(), operation_digest = OP }))
    assert.has_error(function() record.user_implementation { provider = 'mine', kernel = 'scale', info = a:info() } end)
  end)

  it('describes a plugin kernel by its library digest and versions', function()
    local plugins = kb.executable():match('^(.*)/[^/]*$') .. '/plugins/'
    local info = kb.plugin.load(plugins .. 'libscale_add.so'):kernel('scale_add'):info()
    local d = record.user_implementation { provider = 'plugin', kernel = 'llama4_rope', info = info }
    local s = d.spec
    assert.equal('kluabench_plugin', s.callable.interface)
    assert.equal('scale_add', s.callable.symbol)
    assert.equal(info.plugin.sha256, s.source.contentDigest)
    assert.equal('libscale_add.so', s.source.fileName)
    assert.equal('1', s.buildVariants[1].requirements.abi_version)
    -- a kernel of a reproduced Liger benchmark names kernelindex's OperationSpec by default
    assert.equal(record.digest(kb.liger.operation_document('llama4_rope')), s.operation.specDigest)
    assert.same({}, require('helpers.schema').check(d))
  end)
end)
