-- Loading a kernel module from a file (a cubin nvcc built, or one NVRTC made) and launching it, with its attributes and occupancy.
--
--   kluabench examples/user_cubin.lua [PATH.cubin|.ptx|.fatbin]
--
-- Default: build/usercode/test_kernels.cubin (make builds it with CUDA=1);
-- without it, the example compiles the same kernel with NVRTC and writes
-- the cubin to a temporary file first. On the cpu backend the module is read
-- and described, not launched.
local kb = require 'kluabench'

local SOURCE = [[
extern "C" __global__ void fill_index(float *out, float scale, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = scale * (float)i;
}
]]

local function exists(p)
  local f = io.open(p, 'rb')
  if f then f:close() end
  return f ~= nil
end

local path = arg and arg[1] or (kb.executable():match('^(.*)/[^/]*$') .. '/usercode/test_kernels.cubin')
local tmp
if not exists(path) then
  tmp = os.tmpname()
  local f = assert(io.open(tmp, 'wb'))
  f:write(assert(kb.cuda.compile(SOURCE, { name = 'fill_index.cu' }):cubin()))
  f:close()
  print('no ' .. path .. ': compiled the kernel with NVRTC into ' .. tmp)
  path = tmp
end

local module = kb.cuda.load(path)
local info = module:info()
print(string.format('%s: %s, %d bytes, %s', path, info.format, info.bytes, info.sha256))
if tmp then os.remove(tmp) end

if kb.backend() ~= 'cuda' then
  print('cpu backend: module read, not launched; run with --backend cuda on a GPU to launch fill_index')
  return
end

local k = module:kernel('fill_index', 'ptr, f32, i32')
local out = kb.empty({ 1000 }, 'f32')
k:launch { grid = 4, block = 256, args = { out, 0.5, 1000 } }
local v = out:totable()
print(string.format('fill_index: out[0] = %g, out[999] = %g', v[1], v[1000]))
local a = k:attributes()
print(string.format('registers %d, static shared %d B, local %d B, max threads/block %d, binary sm_%d, ptx %d',
  a.registers, a.shared_bytes, a.local_bytes, a.max_threads_per_block, a.binary_version, a.ptx_version))
for _, block in ipairs { 128, 256, 1024 } do
  local o = k:occupancy(block)
  print(string.format('block %4d: %2d blocks per SM, occupancy %.0f %%', block, o.blocks_per_sm, 100 * o.occupancy))
end
