-- Issue 4, target 1: fused llama4 and neox RoPE, forward and backward, at hidden 8192 with
-- head_dim 64/128/256 (q heads 8192/D, 8 kv heads) against the copy bandwidth measured in
-- the same run, timed with do_bench (triton's algorithm: L2 flushed before every sample).
-- Usage: kluabench bench/target1.lua [--seqs 4096,16384] [--dtypes bf16,f32] [--rep-ms 200]
local kb = require 'kluabench'

local opts = { seqs = '4096,16384', dtypes = 'bf16,f32', ['rep-ms'] = '200' }
local i = 1
while arg and arg[i] do
  local k = arg[i]:match('^%-%-(.+)$')
  if not k or opts[k] == nil or not arg[i + 1] then
    io.stderr:write('usage: kluabench bench/target1.lua [--seqs LIST] [--dtypes LIST] [--rep-ms MS]\n')
    os.exit(2)
  end
  opts[k], i = arg[i + 1], i + 2
end
local function list(s, num)
  local t = {}
  for v in s:gmatch('[^,]+') do t[#t + 1] = num and math.tointeger(tonumber(v)) or v end
  return t
end
local rep_ms = tonumber(opts['rep-ms'])

local ceiling = kb.ceilings.measure_copy()
local gbps = ceiling.copy_gbps
print(string.format('device %s, copy ceiling %.0f GB/s (%s, %d samples)', kb.device_info().name, gbps,
  ceiling.method, ceiling.samples))

local function median_ms(fn)
  local q = kb.do_bench.do_bench(fn, { rep_ms = rep_ms, quantiles = { 0.5 } })
  return q
end

local rows = { { 'dtype', 'D', 'seq', 'kernel', 'median us', 'floor us', 'ratio', 'copy us', 'vs copy', 'target' } }
local worst = 0
for _, dtype in ipairs(list(opts.dtypes)) do
  for _, d in ipairs { 64, 128, 256 } do
    for _, seq in ipairs(list(opts.seqs, true)) do
      local hq, hk = 8192 // d, 8
      local q = kb.randn({ 1, seq, hq, d }, dtype, 1)
      local k = kb.randn({ 1, seq, hk, d }, dtype, 2)
      local f = kb.rope.freqs(seq, d)
      local qk_bytes = q:nbytes() + k:nbytes()
      local ideal = 2 * qk_bytes + f:nbytes()
      local floor_ms = ideal / (gbps * 1e9) * 1e3
      local src = kb.randn({ q:numel() + k:numel() }, dtype, 3)
      local dst = kb.empty({ q:numel() + k:numel() }, dtype)
      local copy_ms = median_ms(function() dst:copy_(src) end)
      local o = { inplace = true }
      for _, name in ipairs { 'llama4_fwd', 'llama4_bwd', 'neox_fwd', 'neox_bwd' } do
        local fn = kb.rope[name]
        local ms = median_ms(function() fn(q, k, f, o) end)
        local ratio = ms / floor_ms
        worst = math.max(worst, ratio)
        rows[#rows + 1] = { dtype, tostring(d), tostring(seq), name, string.format('%.1f', ms * 1e3),
          string.format('%.1f', floor_ms * 1e3), string.format('%.3f', ratio), string.format('%.1f', copy_ms * 1e3),
          string.format('%.3f', ms / copy_ms), ratio <= 1.11 and 'pass' or 'MISS' }
      end
      q:free(); k:free(); f:free(); src:free(); dst:free()
    end
  end
end
for r, row in ipairs(rows) do
  print('| ' .. table.concat(row, ' | ') .. ' |')
  if r == 1 then print(string.rep('|---', #row) .. '|') end
end
print(string.format('\nworst ratio to the floor: %.3f (target <= 1.11); floor = (q+k read and written + freqs read) / %.0f GB/s; copy = dst:copy_(src) of q+k bytes under the same protocol',
  worst, gbps))
