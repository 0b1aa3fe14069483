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
local check = require 'kluabench.check'

if kb.backend() ~= 'cuda' then
  io.stderr:write('user_copy.lua: needs the cuda backend\n')
  os.exit(1)
end

local mib = math.tointeger(tonumber(arg[1] or '')) or 1024
local n = mib * (1 << 20) // 4 -- f32 elements
local SRC = [[
extern "C" __global__ void user_copy(float4 *__restrict__ dst, const float4 *__restrict__ src, long long n4) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n4; i += (long long)gridDim.x * blockDim.x)
    dst[i] = src[i];
}
]]
local k = kb.cuda.compile(SRC, { name = 'user_copy.cu' }):kernel('user_copy', 'ptr, ptr, i64')
local sms = kb.device_info().sm_count
local blocks = sms * k:occupancy(256).blocks_per_sm
local src, dst = kb.empty({ n }, 'f32'), kb.empty({ n }, 'f32')
src:fill_(1.5)
local opts = { grid = blocks, block = 256, args = { dst, src, n // 4 } }
local function user() k:launch(opts) end
local function builtin() dst:copy_(src) end

check.poison(dst)
user()
local ok, r = check.compare(dst, src)
assert(ok, r.message)

local bytes = 2 * n * 4
local function timed(fn)
  local res = measure.run('cold', fn, { stop = stopping.rse_median { target = 0.005, min_samples = 30, timeout_ms = 20000 } })
  return res.summary.median, #res.samples
end
local rows = {}
for _, c in ipairs { { 'tensor copy_ (cudaMemcpyAsync)', builtin }, { 'user_copy (NVRTC, float4)', user },
  { 'tensor copy_ again', builtin } } do
  local ms, samples = timed(c[2])
  rows[#rows + 1] = { c[1], ms, samples }
end
local copy_ms = (rows[1][2] + rows[3][2]) / 2
print(string.format('| %d MiB, %s | median ms | GB/s | samples | vs copy_ |', mib, kb.device_info().name))
print('|---|---:|---:|---:|---:|')
for _, row in ipairs(rows) do
  print(string.format('| %s | %.4f | %.1f | %d | %.1f %% |', row[1], row[2], bytes / (row[2] * 1e6), row[3],
    100 * copy_ms / row[2]))
end
local gap = math.abs(rows[2][2] - copy_ms) / copy_ms
print(string.format('\nuser kernel within %.1f %% of copy_ (target 5 %%): %s', 100 * gap, gap <= 0.05 and 'met' or 'NOT met'))
