-- Exploring a kernel's bandwidth: bytes moved per second by RoPE, next to a plain copy of the same bytes.
--
--   kluabench examples/bandwidth.lua [SEQ...]        a table for each SEQ
--   kluabench -i examples/bandwidth.lua 4096         then, at the prompt:
--       > bandwidth(16384)                           one more size
--       > bandwidth(8192, {impl = "reference"})      the unfused provider
--
-- RoPE in place reads and writes q and k once and reads the freqs table,
-- so its floor is the time a copy of that many bytes takes; "% of copy"
-- says how close the kernel comes. Times are cold (L2 flushed before each
-- sample), from kluabench.measure.
local kb = require 'kluabench'
local measure = require 'kluabench.measure'
local stopping = require 'kluabench.measure.stopping'

local SAMPLES = 10

local function median_ms(fn)
  return measure.run('cold', fn, { stop = stopping.count(SAMPLES) }).summary.median
end

-- A global on purpose: with `kluabench -i` it stays callable at the prompt.
function bandwidth(seq, opts)
  opts = opts or {}
  local heads, kv_heads, dim = opts.q_heads or 32, opts.kv_heads or 8, opts.head_dim or 128
  local q = kb.randn({ 1, seq, heads, dim }, 'bf16', 1)
  local k = kb.randn({ 1, seq, kv_heads, dim }, 'bf16', 2)
  local freqs = kb.rope.freqs(seq, dim)
  local bytes = 2 * (q:nbytes() + k:nbytes()) + freqs:nbytes()
  local rope_ms = median_ms(function()
    kb.rope.llama4_fwd(q, k, freqs, { impl = opts.impl or 'fused', inplace = true })
  end)
  -- a copy that reads and writes the same number of bytes (two f32 buffers of bytes / 2)
  local src = kb.empty({ bytes // 8 }, 'f32')
  local dst = kb.empty({ bytes // 8 }, 'f32')
  local copy_ms = median_ms(function() dst:copy_(src) end)
  local rope_gbps, copy_gbps = bytes / (rope_ms * 1e6), bytes / (copy_ms * 1e6)
  print(string.format('seq %6d  %7.1f MB  rope %9.4f ms %8.1f GB/s   copy %9.4f ms %8.1f GB/s   %5.1f %% of copy',
    seq, bytes / 1e6, rope_ms, rope_gbps, copy_ms, copy_gbps, 100 * rope_gbps / copy_gbps))
  for _, t in ipairs { q, k, freqs, src, dst } do t:free() end
  return rope_gbps, copy_gbps
end

print(string.format('backend %s, device %s', kb.backend(), kb.device_info().name))
local sizes = {}
for i = 1, #arg do sizes[i] = tonumber(arg[i]) end
if #sizes == 0 then sizes = { 1024, 4096, 16384 } end
for _, seq in ipairs(sizes) do bandwidth(seq) end
