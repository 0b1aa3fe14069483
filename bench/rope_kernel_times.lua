-- Kernel times of our RoPE providers at the launch-bound points, beside their event times.
--
--   build/kluabench bench/rope_kernel_times.lua [trace|ncu] [samples] [only]
--
-- only: a cell filter, kernel/point/mode, each part a name or * (e.g. rope/H2048_T2048/forward),
-- for an ncu run whose every launch belongs to one cell.
--
-- trace (default): for each kernel (llama4_rope, rope), point (hidden 512 and 2048 at seq 2048,
-- hidden 8192 at seq 1024; bf16, 32 q heads, 8 kv heads), mode (forward, backward, full) and
-- provider (fused, floor), the cold mode (L2 flushed before each sample, launch overhead kept out)
-- with kernel_trace = true: per sample the CUDA-event time and the sum of the kernel durations
-- CUPTI reports (kb.trace, serial kernel records). Prints one CSV line each:
--   kernel,point,mode,provider,event_median_us,event_minus_pair_us,kernel_median_us,kernels_per_call
-- ncu: the same calls, one warm-up and `samples` of each after an L2 flush, untimed, for
--   ncu --clock-control none --cache-control none --metrics gpu__time_duration.sum ...
-- (the flush is a memset, which ncu's kernel filter leaves out).
local kb = require 'kluabench'

local what = arg[1] or 'trace'
local samples = tonumber(arg[2] or '') or (what == 'ncu' and 5 or 200)
local only = arg[3] and { arg[3]:match('^([^/]+)/([^/]+)/([^/]+)$') } or { '*', '*', '*' }
if (what ~= 'trace' and what ~= 'ncu') or (arg[2] and not tonumber(arg[2])) or #only ~= 3 then
  io.stderr:write('usage: rope_kernel_times.lua [trace|ncu] [samples] [kernel/point/mode]\n')
  os.exit(2)
end
local function wanted(i, name) return only[i] == '*' or only[i] == name end

local POINTS = { { 512, 2048 }, { 2048, 2048 }, { 8192, 1024 } }
local STYLES = { { 'llama4_rope', 'llama4' }, { 'rope', 'neox' } }

local function fn_of(style, provider, mode, t, f)
  local o = { inplace = true }
  if provider == 'floor' then
    if mode == 'forward' then return function() kb.rope.floor(t.q, t.k, f, o) end end
    if mode == 'backward' then return function() kb.rope.floor(t.dq, t.dk, f, o) end end
    return function() kb.rope.floor_fwd_bwd(t.q, t.k, t.dq, t.dk, f, o) end
  end
  local fwd, bwd, full = kb.rope[style .. '_fwd'], kb.rope[style .. '_bwd'], kb.rope[style .. '_fwd_bwd']
  if mode == 'forward' then return function() fwd(t.q, t.k, f, o) end end
  if mode == 'backward' then return function() bwd(t.dq, t.dk, f, o) end end
  return function() full(t.q, t.k, t.dq, t.dk, f, o) end
end

local flush = kb.empty({ 2 * kb.device_info().l2_bytes // 4 }, 'f32')
if what == 'trace' then
  print('kernel,point,mode,provider,event_median_us,event_minus_pair_us,kernel_median_us,kernels_per_call')
end
for _, ks in ipairs(STYLES) do
  for _, pt in ipairs(POINTS) do
    local hidden, seq = pt[1], pt[2]
    if not (wanted(1, ks[1]) and wanted(2, string.format('H%d_T%d', hidden, seq))) then goto next_point end
    local d = hidden // 32
    local t = {
      q = kb.randn({ 1, seq, 32, d }, 'bf16', 1), k = kb.randn({ 1, seq, 8, d }, 'bf16', 2),
      dq = kb.randn({ 1, seq, 32, d }, 'bf16', 3), dk = kb.randn({ 1, seq, 8, d }, 'bf16', 4),
    }
    local f = kb.rope.freqs(seq, d)
    for _, mode in ipairs { 'forward', 'backward', 'full' } do
      if not wanted(3, mode) then goto next_mode end
      for _, provider in ipairs { 'fused', 'floor' } do
        local fn = fn_of(ks[2], provider, mode, t, f)
        if what == 'ncu' then
          fn() -- warm-up, dropped by bench/rope_small_table.py
          for i = 1, samples do
            flush:fill_(i)
            fn()
          end
          kb.synchronize()
        else
          local r = kb.measure.run('cold', fn, { kernel_trace = true, stop = kb.stopping.count(samples) })
          local ks_ms = {}
          for _, v in ipairs(r.kernel_sum_ms or {}) do ks_ms[#ks_ms + 1] = v end
          table.sort(ks_ms)
          local kmed = ks_ms[(#ks_ms + 1) // 2]
          print(string.format('%s,H%d_T%d,%s,%s,%.3f,%.3f,%.3f,%s', ks[1], hidden, seq, mode, provider,
            r.summary.median * 1e3, (r.used.median_minus_event_pair_ms or 0) * 1e3, (kmed or 0) * 1e3,
            tostring(r.used.kernel_trace and r.used.kernel_trace.kernelsPerCall or '?')))
          io.stdout:flush()
        end
      end
      ::next_mode::
    end
    for _, x in pairs(t) do x:free() end
    f:free()
    ::next_point::
  end
end
