-- A user copy kernel compiled through NVRTC, at 1 GiB, timed beside the engine's copy_ in the same run (target: within 5 %).
--
--   build/kluabench bench/user_copy.lua [MiB]
--
-- Both are timed as scripts/ceilings.lua times the copy ceiling: the cold
-- mode of kluabench.measure (L2 flushed before each sample), until the
-- relative standard error of the median is 0.5 %; bytes are read + written.
local kb = require 'kluabench'
local measure = require 'kluabench.measure'
local stopping = require 'kluabench.measure.stopping'
local check = require 'kluabench.kernels.check'

if kb.backend() ~= 'cuda' then
  io.stderr:write('user_copy.lua: needs the cuda backend\n')
  os.exit(1)
end

local mib = math.tointeger(tonumber(arg[1] or '')) or 1024
local n = mib * (1 << 20) // 4 -- f32 elements
-- Three ways to write the copy: a grid-stride loop of one float4 per
-- thread; the same with four independent float4 loads in flight before the
-- stores (more bytes outstanding per thread); one float4 per thread over a
-- grid that covers the array once (no loop).
local SRC = [[
extern "C" __global__ void copy_stride(float4 *__restrict__ dst, const float4 *__restrict__ src, long long n4) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n4; i += (long long)gridDim.x * blockDim.x)
    dst[i] = src[i];
}
extern "C" __global__ void copy_unroll4(float4 *__restrict__ dst, const float4 *__restrict__ src, long long n4) {
  long long stride = (long long)gridDim.x * blockDim.x;
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  for (; i + 3 * stride < n4; i += 4 * stride) {
    float4 a = __ldg(src + i), b = __ldg(src + i + stride), c = __ldg(src + i + 2 * stride), d = __ldg(src + i + 3 * stride);
    dst[i] = a; dst[i + stride] = b; dst[i + 2 * stride] = c; dst[i + 3 * stride] = d;
  }
  for (; i < n4; i += stride) dst[i] = src[i];
}
extern "C" __global__ void copy_flat(float4 *__restrict__ dst, const float4 *__restrict__ src, long long n4) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n4) dst[i] = src[i];
}
]]
local module = kb.cuda.compile(SRC, { name = 'user_copy.cu' })
local sms = kb.device_info().sm_count
local src, dst = kb.empty({ n }, 'f32'), kb.empty({ n }, 'f32')
src:fill_(1.5)
local function variant(name, grid)
  local k = module:kernel(name, 'ptr, ptr, i64')
  local opts = { grid = grid(k), block = 256, args = { dst, src, n // 4 } }
  return function() k:launch(opts) end
end
local resident = function(k) return sms * k:occupancy(256).blocks_per_sm end
local variants = {
  { 'copy_stride (NVRTC, float4, grid-stride)', variant('copy_stride', resident) },
  { 'copy_unroll4 (NVRTC, 4 x float4 in flight)', variant('copy_unroll4', resident) },
  { 'copy_flat (NVRTC, float4, one pass)', variant('copy_flat', function() return (n // 4 + 255) // 256 end) },
}
local function builtin() dst:copy_(src) end

for _, v in ipairs(variants) do
  check.poison(dst)
  v[2]()
  local ok, r = check.compare(dst, src)
  assert(ok, v[1] .. ': ' .. tostring(r.message))
end

local bytes = 2 * n * 4
local function timed(fn)
  local res = measure.run('cold', fn, { stop = stopping.rse_median { target = 0.005, min_samples = 30, timeout_ms = 20000 } })
  return res.summary.median, #res.samples
end
local rows = {}
local cases = { { 'tensor copy_ (cudaMemcpyAsync)', builtin } }
for _, v in ipairs(variants) do cases[#cases + 1] = v end
cases[#cases + 1] = { 'tensor copy_ again', builtin }
for _, c in ipairs(cases) do
  local ms, samples = timed(c[2])
  rows[#rows + 1] = { c[1], ms, samples }
end
local copy_ms = (rows[1][2] + rows[#rows][2]) / 2
print(string.format('| %d MiB, %s | median ms | GB/s | samples | vs copy_ |', mib, kb.device_info().name))
print('|---|---:|---:|---:|---:|')
for _, row in ipairs(rows) do
  print(string.format('| %s | %.4f | %.1f | %d | %.1f %% |', row[1], row[2], bytes / (row[2] * 1e6), row[3],
    100 * copy_ms / row[2]))
end
local best
for i = 2, #rows - 1 do if not best or rows[i][2] < best[2] then best = rows[i] end end
local gap = (best[2] - copy_ms) / copy_ms
print(string.format('\nbest user kernel (%s) within %.1f %% of copy_ (target 5 %%): %s', best[1], 100 * gap,
  gap <= 0.05 and 'met' or 'NOT met'))
