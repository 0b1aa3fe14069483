-- Issue 4, target 5: the CPU backend's fused llama4 forward at hidden 2048, seq 2048, f32
-- against a memcpy of the same traffic (q and k read and written), both timed the same way:
-- do_bench (L2 flushed before every sample) and the hot mode (back to back, warm caches).
-- Usage: kluabench --backend cpu bench/target5_cpu.lua [rep_ms]
local kb = require 'kluabench'
local rep_ms = tonumber(arg and arg[1]) or 1000
local q = kb.randn({ 1, 2048, 32, 64 }, 'f32', 1, 'cpu')
local k = kb.randn({ 1, 2048, 8, 64 }, 'f32', 2, 'cpu')
local f = kb.rope.freqs(2048, 64, { device = 'cpu' })
local src = kb.randn({ q:numel() + k:numel() }, 'f32', 3, 'cpu')
local dst = kb.empty({ q:numel() + k:numel() }, 'f32', 'cpu')
local o = { inplace = true }
local cases = {
  { 'fused llama4_fwd', function() kb.rope.llama4_fwd(q, k, f, o) end },
  { 'memcpy of q+k bytes', function() dst:copy_(src) end },
}
local info = kb.device_info('cpu')
print(string.format('%s, %d cores; q+k = %.1f MB, traffic %.1f MB', info.name, info.cores,
  (q:nbytes() + k:nbytes()) / 1e6, 2 * (q:nbytes() + k:nbytes()) / 1e6))
local res = {}
for _, c in ipairs(cases) do
  local cold = kb.do_bench.do_bench(c[2], { rep_ms = rep_ms, quantiles = { 0.5 } })
  local hot = kb.measure.run('hot', c[2], { stop = 50 }).summary.median
  res[#res + 1] = { c[1], cold, hot }
  print(string.format('%-22s do_bench median %8.3f ms   hot median %8.3f ms', c[1], cold, hot))
end
print(string.format('fused / memcpy: %.2f (do_bench), %.2f (hot); target <= 2', res[1][2] / res[2][2],
  res[1][3] / res[2][3]))
