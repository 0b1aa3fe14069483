-- Your Triton kernel in the harness, from the cubin Triton compiled (no Python): checked, timed and written as records.
--
--   kluabench examples/triton_kernel.lua --kernel ~/.triton/cache/HASH/add_kernel.json [--n N --protocol cold ...]
--
-- Triton keeps each compiled kernel in its cache as a .cubin, a .ptx and a .json of metadata (name, num_warps,
-- shared memory, scratch sizes); kluabench.kernels.triton loads the cubin and launches it as Triton's own launcher
-- does. The kernel is Triton's tutorial add_kernel (out = x + y, BLOCK_SIZE = 1024): for one of your own, change
-- SIGNATURE, the launch and the reference. Without --kernel the example makes a stand-in laid out as Triton's cache
-- holds a kernel (a CUDA add_kernel compiled by NVRTC). On the cpu backend the kernel is read, not run, and the
-- reference is timed in its place; the other options are the harness's (--help).
local kb = require 'kluabench'
local triton = require 'kluabench.kernels.triton'
local check = require 'kluabench.kernels.check'

local SIGNATURE, BLOCK = 'ptr, ptr, ptr, i32', 1024 -- add_kernel(x_ptr, y_ptr, output_ptr, n_elements), BLOCK_SIZE
local STAND_IN = [[
extern "C" __global__ void add_kernel(const float *x, const float *y, float *out, int n) {
  for (int i = blockIdx.x * 1024 + threadIdx.x; i < (blockIdx.x + 1) * 1024 && i < n; i += blockDim.x)
    out[i] = x[i] + y[i];
}]]

-- --kernel PATH is this script's own option; the rest of the line goes to the harness
local path, argv, i = nil, {}, 1
while arg and i <= #arg do
  if arg[i] == '--kernel' then path, i = arg[i + 1], i + 2 else argv[#argv + 1], i = arg[i], i + 1 end
end

local dir -- the stand-in's folder, removed once the cubin is loaded
if not path then
  dir = os.tmpname()
  os.remove(dir)
  assert(kb.mkdir(dir))
  local function write(name, bytes)
    local f = assert(io.open(dir .. '/' .. name, 'wb'))
    assert(f:write(bytes))
    f:close()
  end
  write('add_kernel.cubin', kb.cuda.compile(STAND_IN, { name = 'add_kernel.cu' }):cubin())
  write('add_kernel.json', '{"name": "add_kernel", "num_warps": 4, "num_stages": 3, "shared": 0}')
  path = dir .. '/add_kernel.json'
  io.stderr:write('add_kernel: no --kernel: a stand-in compiled by NVRTC, laid out as Triton\'s cache holds one\n')
end
local meta = triton.read_metadata(path)
io.stderr:write(string.format('add_kernel: %s, num_warps %d (%d threads a program), shared %d B\n', meta.name,
  meta.num_warps, 32 * meta.num_warps, meta.shared or 0))
local gpu = kb.backend() == 'cuda'
local tk = gpu and triton.load(path, SIGNATURE)
if dir then kb.remove_tree(dir) end
if not gpu then io.stderr:write('add_kernel: cpu backend: the kernel is read, not run; the reference is timed\n') end

local function add(p, s) -- out = x + y: the Triton kernel, or on the cpu the reference's tensor ops
  if gpu then tk:launch((p.n + BLOCK - 1) // BLOCK, { s.x, s.y, s.out, p.n }) else s.out:copy_(s.x + s.y) end
end

kb.suite.main({
  name = 'triton_add', dtypes = { 'f32' }, modes = { 'forward' }, providers = { gpu and 'triton' or 'tensor_ops' },
  summary = 'out = x + y by a Triton kernel from its cubin (--kernel PATH.json: yours; default: a stand-in)',
  axes = { { name = 'n', default = 1 << 24, max = (1 << 31) - 1, help = 'elements' } },
  setup = function(p)
    return { x = kb.randn({ p.n }, 'f32', 1), y = kb.randn({ p.n }, 'f32', 2), out = kb.empty({ p.n }, 'f32') }
  end,
  run = function(p, provider, mode, t) return function(s) add(p, s or t) end end,
  reference = function(p, provider, mode, t) return { out = t.x + t.y } end, -- what one call leaves in out
  check = function(p, provider, t) -- before timing, on fresh inputs: a wrong result is not timed
    check.poison(t.out) -- an element the kernel does not write reads NaN
    add(p, t)
    local ok, r = check.compare(t.out, t.x + t.y)
    if not ok then kb.suite.wrong_result('triton_add: ' .. r.message) end
  end,
  cost = function(p) return 12 * p.n, p.n end, -- bytes (x and y read, out written) and flops
  -- the records name the cubin, its digest and Triton's metadata (on the cpu: this script)
  implementation = function() return tk and tk:info() or nil end,
}, argv)
