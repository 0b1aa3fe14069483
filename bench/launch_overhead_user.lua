-- The host cost of kernel:launch against a C loop of cuLaunchKernel of the same empty kernel (target: at most 1.2x).
--
--   make && build/kluabench bench/launch_overhead_user.lua [BATCHES [PER_BATCH]]
--
-- An empty kernel (float *, int, float) is compiled with NVRTC; its cubin is
-- written to a temporary file that build/bench/launch_overhead_c (built by
-- make with CUDA=1) loads and launches in C. Both sides time batches of
-- launches on the host clock, synchronise between batches (not timed) and
-- report the median per launch. kernel:launch is measured twice: with one
-- options table reused (the lean path a harness uses) and with a new table
-- per call (what a script writes inline).
local kb = require 'kluabench'

local batches = math.tointeger(tonumber(arg[1] or '')) or 200
local per = math.tointeger(tonumber(arg[2] or '')) or 256
if kb.backend() ~= 'cuda' then
  io.stderr:write('launch_overhead_user.lua: needs the cuda backend\n')
  os.exit(1)
end

local SRC = 'extern "C" __global__ void empty(float *p, int n, float a) {}'
local module = kb.cuda.compile(SRC, { name = 'empty.cu' })
local k = module:kernel('empty', 'ptr, i32, f32')

local dir = kb.executable():match('^(.*)/[^/]*$')
local cubin = os.tmpname()
local f = assert(io.open(cubin, 'wb'))
f:write(assert(module:cubin()))
f:close()
local cmd = string.format('%s/bench/launch_overhead_c %s empty %d %d', dir, cubin, batches, per)
local p = assert(io.popen(cmd))
local out = p:read('a')
p:close()
os.remove(cubin)
local c_ns = tonumber(out:match('ns_per_launch%s+([%d%.]+)'))
if not c_ns then
  io.stderr:write('launch_overhead_user.lua: ' .. cmd .. ' printed: ' .. out .. '\n')
  os.exit(1)
end

local buf = kb.empty({ 256 }, 'f32')
local function median_per_launch(launch_batch)
  local t = {}
  for b = -10, batches do
    local t0 = kb.clock_ns()
    launch_batch()
    local t1 = kb.clock_ns()
    kb.synchronize()
    if b > 0 then t[#t + 1] = (t1 - t0) / per end
  end
  table.sort(t)
  return t[(#t + 1) // 2]
end

local opts = { grid = 1, block = 32, args = { buf, 256, 2.0 } }
local reused = median_per_launch(function() for _ = 1, per do k:launch(opts) end end)
local inline = median_per_launch(function()
  for _ = 1, per do k:launch { grid = 1, block = 32, args = { buf, 256, 2.0 } } end
end)

print(string.format('| launch path (%s) | ns per launch | vs C |', kb.device_info().name))
print('|---|---:|---:|')
print(string.format('| C loop of cuLaunchKernel | %.0f | 1.00 |', c_ns))
print(string.format('| kernel:launch(opts), one table reused | %.0f | %.2f |', reused, reused / c_ns))
print(string.format('| kernel:launch{...}, new table per call | %.0f | %.2f |', inline, inline / c_ns))
print(string.format('\ntarget: at most 1.20x; %s', reused / c_ns <= 1.2 and 'met' or 'NOT met'))
