-- A copy and the same copy moving 2, 5 or 10 % more bytes: real regressions planted for the detector (docs/HISTORY.md).
--
--   kluabench scripts/planted_copy.lua [--mib 4,64] [--provider all] [--runs 3] [--protocol cold]
--
-- Providers: `user` copies n floats (n = MiB x 2^18) with a grid-stride kernel compiled by NVRTC; `user_2pct`,
-- `user_5pct` and `user_10pct` run the same kernel over n x 1.02, 1.05 and 1.10 floats while the declared cost stays
-- n's (the code under test got slower; the workload did not change); `copy` is the engine's copy of n floats, the
-- sentinel history check reads. On the cpu backend the user providers are the engine's copy of their length.
-- scripts/detector_sequence.sh runs it once per "commit"; scripts/history_real.lua judges the sequences.
local kb = require 'kluabench'
local suite = require 'kluabench.suite'
local check = require 'kluabench.kernels.check'

local EXTRA = { copy = 0, user = 0, user_2pct = 0.02, user_5pct = 0.05, user_10pct = 0.10 }
local SRC = [[
extern "C" __global__ void planted_copy(float *__restrict__ dst, const float *__restrict__ src, long long n) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
    dst[i] = src[i];
}
]]

local kernel -- compiled once, on first use
local function user_copy(dst, src)
  if kb.backend() ~= 'cuda' then return dst:copy_(src) end
  if not kernel then kernel = kb.cuda.compile(SRC, { name = 'planted_copy.cu' }):kernel('planted_copy', 'ptr, ptr, i64') end
  local n = dst:numel()
  kernel:launch { grid = math.min(132 * 16, (n + 255) // 256), block = 256, args = { dst, src, n } }
end

local function floats(p, provider)
  local n = p.mib * (1 << 18)
  return n, n + math.floor(n * EXTRA[provider])
end

suite.main {
  name = 'planted_copy',
  summary = 'a copy of MiB floats, and the same kernel moving 2, 5 or 10 % more bytes (planted regressions)',
  axes = { { name = 'mib', default = 64, max = 1 << 14, help = 'MiB of floats the copy moves (read and written)' } },
  dtypes = { 'f32' },
  modes = { 'forward' },
  providers = { 'copy', 'user', 'user_2pct', 'user_5pct', 'user_10pct' },
  provider = 'user',
  setup = function(p, provider)
    local _, len = floats(p, provider)
    return { src = kb.randn({ len }, 'f32', 1), dst = kb.empty({ len }, 'f32') }
  end,
  run = function(p, provider, mode, t)
    if provider == 'copy' then return function(set) set = set or t; set.dst:copy_(set.src) end end
    return function(set) set = set or t; user_copy(set.dst, set.src) end
  end,
  check = function(p, provider, t)
    user_copy(t.dst, t.src)
    local ok, r = check.compare(t.dst, t.src, { atol = 0, rtol = 0, name = 'dst' })
    if not ok then suite.wrong_result('planted_copy: ' .. provider .. ': ' .. r.message) end
    return { reference = 'the source tensor', passed = true, maxAbsDiff = r.max_abs }
  end,
  reference = function(p, provider, mode, t) return { dst = t.src:clone() } end,
  cost = function(p)
    local n = floats(p, 'user')
    return 8 * n, 0
  end,
}
