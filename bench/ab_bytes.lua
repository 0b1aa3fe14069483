-- The A/B of issue 26's pre-registered evidence: a user copy kernel (NVRTC, float4, grid-stride); with --more PCT it copies PCT % more bytes, the workload and provider unchanged, so compare matches the arms.
--
--   kluabench bench/ab_bytes.lua [--more PCT] [harness options: --mib 64,256,512,1024 --protocol cold
--       --runs 3 --out FILE ...]
--
-- The point is a buffer of --mib MiB (f32); the kernel reads and writes
-- mib x (1 + PCT/100) MiB (rounded down to whole float4s) of buffers of
-- mib x 1.1 MiB, the same in every arm (the tensors' shapes are part of the
-- workload, which the arms share). The workload's declared cost stays 2 x mib
-- MiB in every arm: it is the same point, and the change compare reports is
-- the time the extra bytes cost. The check compares the copied range with the
-- source. On the cpu backend (no NVRTC launch) the "kernel" is
-- dst:copy_(src) of the whole buffers, whatever PCT: the script can be tried
-- where there is no GPU, and the arms do not differ there.
local kb = require 'kluabench'

local MAX_MORE = 10 -- percent: the buffers hold the point's bytes and this much more
local USAGE = 'bench/ab_bytes.lua: --more needs a percentage from 0 to ' .. MAX_MORE
-- --more PCT is this script's; the rest goes to the harness
local more, args = 0, {}
do
  local i = 1
  while i <= #arg do
    local a = arg[i]
    local v = a:match('^%-%-more=(.*)$')
    if a == '--more' then
      i = i + 1
      v = arg[i]
    end
    if v ~= nil or a == '--more' then
      more = tonumber(v or '')
      if not more or more ~= more or more < 0 or more > MAX_MORE then
        io.stderr:write(USAGE, ", got '", tostring(v), "'\n")
        os.exit(2)
      end
    else
      args[#args + 1] = a
    end
    i = i + 1
  end
end

local SRC = [[
extern "C" __global__ void copy_stride(float4 *__restrict__ dst, const float4 *__restrict__ src, long long n4) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n4; i += (long long)gridDim.x * blockDim.x)
    dst[i] = src[i];
}
]]
local cuda = kb.backend() == 'cuda'
local kernel, grid
if cuda then
  kernel = kb.cuda.compile(SRC, { name = 'ab_bytes.cu' }):kernel('copy_stride', 'ptr, ptr, i64')
  grid = kb.device_info().sm_count * kernel:occupancy(256).blocks_per_sm
end

-- f32 elements of a point's buffers, and those the arm copies: whole float4s
local function elements(p, pct) return math.floor(p.mib * (1 << 20) // 4 * (1 + pct / 100) / 4) * 4 end

kb.suite.main({
  name = 'ab_bytes',
  summary = 'A user copy kernel (NVRTC, float4 grid-stride) over a buffer of MIB MiB, copying --more PCT % more '
    .. 'bytes than the point declares (the A/B of issue 26).',
  axes = { { name = 'mib', default = 256, max = 1 << 14, help = 'buffer size in MiB (the bytes the point declares)' } },
  dtypes = { 'f32' },
  modes = { 'forward' },
  providers = { 'user_copy' },
  setup = function(p)
    local size = elements(p, MAX_MORE)
    return { src = kb.randn({ size }, 'f32', 1), dst = kb.zeros({ size }, 'f32'), n = elements(p, more) }
  end,
  run = function(p, provider, mode, t)
    if not cuda then return function() t.dst:copy_(t.src) end end
    local opts = { grid = grid, block = 256, args = { t.dst, t.src, t.n // 4 } }
    return function() kernel:launch(opts) end
  end,
  -- the kernel is the same at every size: checked at 1 MiB, every element
  check = function()
    local q = { mib = 1 }
    local size, n = elements(q, MAX_MORE), elements(q, more)
    local src, dst = kb.randn({ size }, 'f32', 7), kb.zeros({ size }, 'f32')
    if cuda then kernel:launch { grid = grid, block = 256, args = { dst, src, n // 4 } } else dst:copy_(src); n = size end
    local got, want = dst:totable(), src:totable()
    src:free()
    dst:free()
    for i = 1, size do
      local expect = i <= n and want[i] or 0
      if got[i] ~= expect then
        kb.suite.wrong_result(string.format('ab_bytes: element %d of %d is %g, expected %g (%d copied)', i, size, got[i],
          expect, n))
      end
    end
    return { reference = 'the source tensor, zeros past the copied range', passed = true, maxAbsDiff = 0 }
  end,
  cost = function(p) return 2 * p.mib * (1 << 20), 0 end,
  -- the arm is said in the evidence only: the protocol (and its digest) is the same in every arm
  record = function() return { annotations = { ab_bytes_more_percent = more } } end,
  implementation = function() return cuda and kernel:info() or nil end,
}, args)
