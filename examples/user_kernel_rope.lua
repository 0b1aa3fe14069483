-- A user Llama 4 RoPE kernel from CUDA source, compiled by NVRTC, checked against kb.rope.llama4_fwd and timed beside it.
--
--   kluabench examples/user_kernel_rope.lua [SEQ]
--
-- The kernel below rotates interleaved pairs (x[2i], x[2i+1]) of q and k
-- (bf16, [1, SEQ, H, 128]) by the (cos, sin) table kb.rope.freqs makes, as
-- the built-in fused kernel does, one thread per pair. kb.checker runs it on
-- three fresh seeds with its outputs poisoned first, then both are timed by
-- kb.do_bench.do_bench and the user kernel is checked again. On the cpu backend
-- the kernel is compiled only (NVRTC needs no GPU), and the example says so.
local kb = require 'kluabench'
local checker = require 'kluabench.kernels.checker'
local record = require 'kluabench.record'

local SOURCE = [[
#include <cuda_bf16.h>
// x and out: [rows, 2 * half] bf16 with rows = B * S * H; freqs: f32 [S, half, 2].
// No fused multiply-add, as kluabench's own twins, so the results agree bit for bit.
extern "C" __global__ void user_llama4_rope(__nv_bfloat162 *out, const __nv_bfloat162 *x, const float2 *freqs,
                                            long long rows, int seq, int heads, int half) {
  long long pair = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (pair >= rows * half) return;
  long long row = pair / half;
  int i = (int)(pair % half);
  int s = (int)((row / heads) % seq);
  float2 cs = freqs[(long long)s * half + i];
  float2 v = __bfloat1622float2(x[pair]);
  float re = __fsub_rn(__fmul_rn(v.x, cs.x), __fmul_rn(v.y, cs.y));
  float im = __fadd_rn(__fmul_rn(v.x, cs.y), __fmul_rn(v.y, cs.x));
  out[pair] = __floats2bfloat162_rn(re, im);
}
]]

local seq = math.tointeger(tonumber(arg and arg[1] or '')) or 2048
local Q_HEADS, KV_HEADS, DIM = 32, 8, 128

local module = kb.cuda.compile(SOURCE, { name = 'user_llama4_rope.cu' })
local info = module:info()
print(string.format('compiled %s with NVRTC %s for %s: %s, %d bytes (cache %s)', info.name, info.nvrtc_version,
  info.arch, info.format, info.bytes, info.cache))

if kb.backend() ~= 'cuda' then
  print('cpu backend: compiled only; run with --backend cuda on a GPU to check and time the kernel')
  return
end

local rope = module:kernel('user_llama4_rope', 'ptr, ptr, ptr, i64, i32, i32, i32')
local freqs = kb.rope.freqs(seq, DIM)

local function user_rope(x, out)
  local rows, half = x:numel() // DIM, DIM // 2
  rope:launch { grid = (rows * half + 255) // 256, block = 256,
    args = { out, x, freqs, rows, seq, x.shape[3], half } }
end

local c = checker.new {
  inputs = function(seed)
    local q = kb.randn({ 1, seq, Q_HEADS, DIM }, 'bf16', seed)
    local k = kb.randn({ 1, seq, KV_HEADS, DIM }, 'bf16', seed + 1000)
    return { q = q, k = k, q_out = kb.empty(q.shape, 'bf16'), k_out = kb.empty(k.shape, 'bf16') }
  end,
  run = function(s) user_rope(s.q, s.q_out); user_rope(s.k, s.k_out) end,
  outputs = function(s) return { s.q_out, s.k_out } end,
  reference = function(s) return { kb.rope.llama4_fwd(s.q, s.k, freqs) } end,
}
local ok, report = c:verify()
print('check: ' .. report.message)
if not ok then os.exit(1) end

local s = c.state
local bytes = 2 * (s.q:nbytes() + s.k:nbytes()) + freqs:nbytes()
local opts = { return_mode = 'median' }
local user_ms = kb.do_bench.do_bench(function() c.run(s) end, opts)
local builtin_ms = kb.do_bench.do_bench(function() kb.rope.llama4_fwd(s.q, s.k, freqs) end, opts)
local after_ok, after = c:recheck()
print('recheck: ' .. after.message)

local ceiling = require('kluabench.measure.ceilings').lookup(kb.device_info())
print(string.format('\n| kernel | median ms | GB/s | plausible |\n|---|---:|---:|---|'))
for _, row in ipairs { { 'user (NVRTC)', user_ms }, { 'kb.rope.llama4_fwd', builtin_ms } } do
  local plausible, why = check.plausible(row[2], bytes, ceiling)
  print(string.format('| %s | %.4f | %.1f | %s |', row[1], row[2], bytes / (row[2] * 1e6),
    plausible and 'yes' or ('NO: ' .. why)))
end
local impl = record.user_implementation { provider = 'user', kernel = 'llama4_rope', info = rope:info() }
print('\nimplementation digest of the user kernel: ' .. record.digest(impl))
if not after_ok then os.exit(1) end
