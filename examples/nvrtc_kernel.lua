-- Your CUDA kernel in the harness: compiled by NVRTC, checked against a reference, timed and written as records.
local kb = require 'kluabench'
local SOURCE = [[extern "C" __global__ void saxpy(float *y, const float *x, float a, long long n) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; if (i < n) y[i] = a * x[i] + y[i]; }]]
local gpu = kb.backend() == 'cuda'
local module = kb.cuda.compile(SOURCE, { name = 'saxpy.cu' }) -- NVRTC compiles anywhere; only a GPU runs the kernel
local k = gpu and module:kernel('saxpy', 'ptr, ptr, f32, i64')
if not gpu then io.stderr:write('saxpy: cpu backend: the kernel is compiled, not run; the reference is timed\n') end
local function saxpy(p, s) -- y = 2x + y in place: the kernel, or on the cpu the reference's tensor ops
  if gpu then k:launch { grid = p.n // 256 + 1, block = 256, args = { s.y, s.x, 2.0, p.n } } else s.y:add_(s.x * 2) end
end
kb.suite.main { -- the options it makes: kluabench examples/nvrtc_kernel.lua --help
  name = 'saxpy', dtypes = { 'f32' }, modes = { 'forward' }, providers = { gpu and 'nvrtc' or 'tensor_ops' },
  axes = { { name = 'n', default = 1 << 24, help = 'elements' } },
  setup = function(p) return { x = kb.randn({ p.n }, 'f32', 1), y = kb.randn({ p.n }, 'f32', 2) } end,
  run = function(p, provider, mode, t) return function(s) saxpy(p, s or t) end end,
  reference = function(p, provider, mode, t) return { y = t.x * 2 + t.y } end, -- what one call leaves in y
  check = function(p, provider, t) -- before timing, on fresh inputs: a wrong result is not timed
    local want = t.x * 2 + t.y
    saxpy(p, t)
    local ok, r = require('kluabench.kernels.check').compare(t.y, want)
    if not ok then kb.suite.wrong_result('saxpy: ' .. r.message) end
  end,
  cost = function(p) return 12 * p.n, 2 * p.n end, -- bytes (x and y read, y written) and flops
}
