-- User kernels on the GPU: NVRTC-compiled and nvcc-built (cubin, PTX,
-- fatbin) kernels launched on the engine's stream, checked against the CPU,
-- timed by every measure mode and captured into CUDA graphs (their tensors
-- pinned); plugins' CUDA entries; and bad launches that leave the engine
-- working. On the GPU machine: build/kluabench tests/run.lua --tags=gpu tests/usercode_gpu_spec.lua
local kb = require 'kluabench'
local measure = require 'kluabench.measure'
local util = require 'helpers.util'

local BUILD = kb.executable():match('^(.*)/[^/]*$')

local SRC = require('helpers.user_kernels').SCALE .. [[
extern "C" __global__ void big_shared(float *y, int n) {
  extern __shared__ float buf[];
  int i = threadIdx.x;
  buf[i] = (float)i;
  __syncthreads();
  if (i < n) y[i] = buf[n - 1 - i];
}
extern "C" __global__ void all_types(double *out, signed char a, unsigned char b, short c, unsigned short d,
                                     int e, unsigned f, long long g, unsigned long long h, float i, double j) {
  out[0] = a; out[1] = b; out[2] = c; out[3] = d; out[4] = e; out[5] = f; out[6] = (double)g;
  out[7] = (double)h; out[8] = i; out[9] = j;
}
extern "C" __global__ void triton_like(float *y, int n, void *global_scratch, void *profile_scratch) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = (global_scratch == 0 && profile_scratch == 0) ? 1.0f : -1.0f;
}
]]

describe('user kernels on cuda #gpu', function()
  local m, scale
  setup(function()
    m = kb.cuda.compile(SRC, { names = { 'twice<float>' }, cache = false })
    scale = m:kernel('scale', 'ptr, ptr, f32, i32')
  end)

  local function launch_scale(y, x, a, n)
    scale:launch { grid = (n + 255) // 256, block = 256, args = { y, x, a, n } }
  end

  it('compiles for the device\'s arch and launches on the engine\'s stream', function()
    assert.equal(kb.device_info().arch, m:info().arch)
    local n = 1000
    local x, y = kb.randn({ n }, 'f32', 7), kb.empty({ n }, 'f32')
    launch_scale(y, x, 3, n)
    local want = kb.randn({ n }, 'f32', 7, 'cpu')
    local w = want:totable()
    for i = 1, n do w[i] = 3 * w[i] end
    assert.is_true(kb.max_abs_diff(y:to('cpu'), kb.from_table(w, nil, 'f32', 'cpu')) < 1e-5)
    assert.is_number(m:info().driver_version)
  end)

  it('launches a template through its name expression', function()
    local k = m:kernel('twice<float>', 'ptr, i32')
    local y = kb.from_table({ 1, 2, 3 }, nil, 'f32')
    k:launch { grid = 1, block = 32, args = { y, 3 } }
    assert.same({ 2, 4, 6 }, y:totable())
    assert.truthy(k:info().symbol:match('^_Z'))
  end)

  it('packs every scalar type', function()
    local k = m:kernel('all_types', 'ptr, i8, u8, i16, u16, i32, u32, i64, u64, f32, f64')
    local out = kb.zeros({ 10 }, 'f64')
    k:launch { grid = 1, block = 1, args = { out, -5, 200, -30000, 60000, -2e9, 4e9, -(1 << 40), 1 << 50, 1.5, 0.1 } }
    assert.same({ -5, 200, -30000, 60000, -2e9, 4e9, -(1 << 40), 1 << 50, 1.5, 0.1 }, out:totable())
  end)

  it('uses more than 48 KiB of dynamic shared memory when asked', function()
    local k = m:kernel('big_shared', 'ptr, i32')
    local y = kb.empty({ 256 }, 'f32')
    k:launch { grid = 1, block = 256, shared = 100 * 1024, args = { y, 256 } }
    local v = y:totable()
    assert.equal(255, v[1])
    assert.equal(0, v[256])
  end)

  it('reports attributes and occupancy', function()
    local a = scale:attributes()
    assert.is_true(a.registers > 0)
    assert.equal(1024, a.max_threads_per_block)
    assert.is_number(a.local_bytes)
    assert.is_true(a.binary_version >= 90)
    local o = scale:occupancy(256)
    assert.is_true(o.blocks_per_sm >= 1)
    assert.is_true(o.occupancy > 0 and o.occupancy <= 1)
  end)

  it('refuses bad launches by parameter, and keeps working', function()
    local n = 16
    local x, y = kb.randn({ n }, 'f32', 1), kb.empty({ n }, 'f32')
    local function err_of(opts) local ok, e = pcall(scale.launch, scale, opts) assert.is_false(ok) return e end
    assert.truthy(err_of { grid = 1, block = 32, args = { y, x, 2 } }:find('args has 3 values, the kernel takes 4: ptr, ptr, f32, i32', 1, true))
    assert.truthy(err_of { grid = 1, block = 32, args = { y, x, 'a', n } }:find('args[3] (f32): expected a number, got string', 1, true))
    assert.truthy(err_of { grid = 1, block = 32, args = { y, x, 2, 1.5 } }:find('args[4] (i32): expected an integer', 1, true))
    assert.truthy(err_of { grid = 1, block = 32, args = { y, x, 2, 1 << 40 } }:find('args[4] (i32): 1099511627776 is out of range', 1, true))
    assert.truthy(err_of { grid = 1, block = 32, args = { y, kb.randn({ n }, 'f32', 1, 'cpu'), 2, n } }:find('args[2] (ptr): tensor is on cpu, the kernel runs on cuda', 1, true))
    local freed = kb.empty({ n }, 'f32')
    freed:free()
    assert.truthy(err_of { grid = 1, block = 32, args = { freed, x, 2, n } }:find('args[1] (ptr): tensor has been freed', 1, true))
    assert.truthy(err_of { grid = 0, block = 32, args = { y, x, 2, n } }:find('grid must be a positive integer', 1, true))
    assert.truthy(err_of { grid = 1, block = { 1, 1, 1, 1 }, args = { y, x, 2, n } }:find('block must have 1 to 3 dimensions', 1, true))
    -- a launch the driver refuses: its CUDA error name, not a poisoned context
    assert.truthy(err_of { grid = 1, block = 4096, args = { y, x, 2, n } }:find('cuLaunchKernel: CUDA_ERROR_', 1, true))
    launch_scale(y, x, 2, n)
    assert.is_true(kb.max_abs_diff(y, x) > 0)
  end)

  it('names a missing kernel', function()
    local ok, err = pcall(m.kernel, m, 'no_such_kernel', '')
    assert.is_false(ok)
    assert.truthy(err:find("no kernel 'no_such_kernel' in the module", 1, true), err)
    assert.truthy(err:find('CUDA_ERROR_NOT_FOUND', 1, true), err)
  end)

  it('is timed by do_bench and every measure mode', function()
    local n = 1 << 20
    local x, y = kb.randn({ n }, 'f32', 1), kb.empty({ n }, 'f32')
    local fn = function() launch_scale(y, x, 2, n) end
    local ms = kb.do_bench.do_bench(fn, { warmup_ms = 5, rep_ms = 20 })
    assert.is_true(ms > 0 and ms < 1, ms)
    for _, mode in ipairs { 'cold', 'hot', 'graph' } do
      local r = measure.run(mode, fn, { stop = 20, allow_warm = true })
      assert.is_true(r.summary.median > 0 and r.summary.median < 1, mode)
    end
  end)

  it('is captured into a CUDA graph that pins its tensors and keeps its module', function()
    local n = 256
    local x, y = kb.from_table({ 1, 2 }, nil, 'f32'), nil
    x = kb.randn({ n }, 'f32', 3)
    y = kb.zeros({ n }, 'f32')
    local k = kb.cuda.compile(SRC, { cache = false }):kernel('scale', 'ptr, ptr, f32, i32')
    local g = kb.graph(function() k:launch { grid = 1, block = 256, args = { y, x, 4, n } } end)
    k = nil
    collectgarbage()
    collectgarbage() -- the module stays loaded: the graph holds it
    assert.has_error(function() x:free() end, 'free: tensor is used by a CUDA graph; free the graph first')
    assert.has_error(function() y:free() end, 'free: tensor is used by a CUDA graph; free the graph first')
    y:fill_(0)
    g:replay(2)
    kb.synchronize()
    assert.equal(4 * x:totable()[5], y:totable()[5])
    g:free()
    x:free()
    y:free()
  end)

  it('loads the cubin, PTX and fatbin nvcc built, and launches each', function()
    for _, ext in ipairs { 'cubin', 'ptx', 'fatbin' } do
      local mod = kb.cuda.load(BUILD .. '/usercode/test_kernels.' .. ext)
      local k = mod:kernel('fill_index', 'ptr, f32, i32')
      local y = kb.empty({ 100 }, 'f32')
      k:launch { grid = 1, block = 128, args = { y, 0.5, 100 } }
      local v = y:totable()
      assert.equal(49.5, v[100], ext)
      mod:kernel('empty_kernel', ''):launch { grid = 1, block = 1 }
    end
    -- the bytes work as well as the path
    local bytes = util.slurp(BUILD .. '/usercode/test_kernels.cubin')
    assert.equal('cubin', kb.cuda.load(bytes):info().format)
  end)

  it('refuses a corrupt cubin with the loader\'s error and keeps working', function()
    -- an ELF header with nothing behind it (no sections, no code)
    local bad = kb.cuda.load('\127ELF\2\1\1' .. string.rep('\0', 500))
    local ok, err = pcall(bad.kernel, bad, 'fill_index', 'ptr, f32, i32')
    assert.is_false(ok)
    assert.truthy(err:find('cannot load the module: cuModuleLoadDataEx(cubin', 1, true), err)
    assert.truthy(err:find('CUDA_ERROR_', 1, true), err)
    local y = kb.zeros({ 4 }, 'f32')
    y:fill_(2)
    assert.same({ 2, 2, 2, 2 }, y:totable())
  end)

  it('launches a Triton-style kernel with its hidden scratch parameters', function()
    local dir = util.tmpdir()
    local tm = kb.cuda.compile(SRC, { cache = false })
    util.spit(dir .. '/triton_like.cubin', tm:cubin())
    util.spit(dir .. '/triton_like.json', '{"name": "triton_like", "num_warps": 4, "num_ctas": 1, "shared": 0, '
      .. '"global_scratch_size": 0, "global_scratch_align": 1, "profile_scratch_size": 0}')
    local tk = kb.triton.load(dir .. '/triton_like.json', 'ptr, i32')
    os.execute('rm -rf ' .. util.q(dir))
    assert.equal(128, tk.block)
    local y = kb.zeros({ 300 }, 'f32')
    tk:launch(3, { y, 300 })
    local v = y:totable()
    assert.equal(1, v[1])
    assert.equal(1, v[300])
    assert.same({ 'global_scratch', 'profile_scratch' }, tk:info().triton.hidden)
  end)

  it('runs a plugin\'s CUDA entry on cuda tensors, in graphs too', function()
    local p = kb.plugin.load(BUILD .. '/plugins/libscale_add.so')
    local k = p:kernel('scale_add')
    local x, y, out = kb.randn({ 1000 }, 'f32', 1), kb.randn({ 1000 }, 'f32', 2), kb.empty({ 1000 }, 'f32')
    k(out, x, y, 2)
    local cpu_out = kb.empty({ 1000 }, 'f32', 'cpu')
    k(cpu_out, x:to('cpu'), y:to('cpu'), 2)
    assert.is_true(kb.max_abs_diff(out:to('cpu'), cpu_out) < 1e-6)
    out:fill_(0)
    local g = kb.graph(function() k(out, x, y, 2) end)
    assert.has_error(function() out:free() end, 'free: tensor is used by a CUDA graph; free the graph first')
    g:replay()
    kb.synchronize()
    assert.is_true(kb.max_abs_diff(out:to('cpu'), cpu_out) < 1e-6)
    g:free()
    local ok, err = pcall(k, out, x:to('cpu'), y, 2)
    assert.truthy(err:find('tensor is on cpu, argument #1 on cuda', 1, true), err)
  end)

  it('checks a user kernel with kb.check and records it with its own digest', function()
    local checker = require 'kluabench.kernels.checker'
    local record = require 'kluabench.record'
    local n = 4096
    local c = checker.new {
      inputs = function(seed) return { x = kb.randn({ n }, 'f32', seed), y = kb.empty({ n }, 'f32') } end,
      run = function(s) launch_scale(s.y, s.x, 2, n) end,
      outputs = function(s) return { s.y } end,
      reference = function(s)
        local out = kb.empty({ n }, 'f32', 'cpu')
        kb.plugin.load(BUILD .. '/plugins/libscale_add.so'):kernel('scale_add')(out, s.x:to('cpu'), kb.zeros({ n }, 'f32', 'cpu'), 2)
        return { out }
      end,
    }
    assert(c:verify())
    assert(c:recheck())
    local OP = 'sha256:' .. string.rep('0', 64)
    local a = record.user_implementation { provider = 'user', kernel = 'scale', info = scale:info(), operation_digest = OP }
    local b = record.user_implementation { provider = 'user', kernel = 'scale',
      info = m:kernel('twice<float>', 'ptr, i32'):info(), operation_digest = OP }
    assert.equal('kluabench_nvrtc', a.spec.callable.interface)
    assert.equal(m:info().source_sha256, a.spec.source.contentDigest)
    assert.same({}, kb.schema.check(a))
    assert.are_not.equal(record.digest(a), record.digest(kb.record.user_implementation {
      provider = 'user', kernel = 'scale', operation_digest = OP,
      info = kb.cuda.compile(SRC .. ' ', { cache = false }):kernel('scale', 'ptr, ptr, f32, i32'):info() }))
    assert.are_not.equal(record.digest(a), record.digest(b))
  end)

  it('poisons the engine when a user kernel faults, in a child process', function()
    local sub = require 'helpers.subprocess'
    local dir = util.tmpdir()
    util.spit(dir .. '/fault.lua', [==[
      local kb = require 'kluabench'
      local m = kb.cuda.compile('extern "C" __global__ void bad(float *p) { p[threadIdx.x] = 1.0f; }', { cache = false })
      local k = m:kernel('bad', 'ptr')
      local t = kb.zeros({ 4 }, 'f32')
      k:launch { grid = 1, block = 32, args = { 8 } } -- writes near address 0
      print('sync', pcall(kb.synchronize))
      print('launch', pcall(k.launch, k, { grid = 1, block = 1, args = { t } }))
      print('plugin', pcall(kb.plugin.load(kb.executable():match('^(.*)/[^/]*$') .. '/plugins/libscale_add.so'):kernel('scale_add'), t, t, t, 1))
    ]==])
    local r = sub.run({ dir .. '/fault.lua' })
    os.execute('rm -rf ' .. util.q(dir))
    for _, what in ipairs { 'sync', 'launch', 'plugin' } do
      local line = r.out:match(what .. '\tfalse\t([^\n]*)')
      assert.is_string(line, what .. ' did not fail: ' .. r.out .. r.err)
      assert.truthy(line:find('kluabench cannot continue', 1, true), line)
    end
    assert.truthy(r.out:find('cudaErrorIllegalAddress', 1, true) or r.out:find('CUDA_ERROR_ILLEGAL_ADDRESS', 1, true), r.out)
  end)
end)
