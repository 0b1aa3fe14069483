-- Seconds a call of kb.compare_elements, kb.rel_l2 and kb.max_abs_diff take on two tensors of the
-- selected backend (the check's and the audits' comparisons), and of the two other host reads of a
-- tensor, t:to('cpu') and t:digest(), to set one build beside another.
--
--   build/kluabench bench/compare_speed.lua [elements] [dtype] [calls]
--
-- Defaults: 134217728 bf16 elements (rope's q at hidden 8192, seq 16384), 5 calls. Prints one line
-- per function: the median seconds of its calls, and all of them.
local kb = require 'kluabench'

local n = math.tointeger(tonumber(arg[1] or '')) or 134217728
local dtype = arg[2] or 'bf16'
local calls = math.tointeger(tonumber(arg[3] or '')) or 5
if n < 1 or calls < 1 then
  io.stderr:write('usage: kluabench bench/compare_speed.lua [elements >= 1] [dtype] [calls >= 1]\n')
  os.exit(2)
end
local a, b = kb.randn({ n }, dtype, 1), kb.randn({ n }, dtype, 2)
kb.synchronize()
local fns = {
  { 'compare_elements', function() return kb.compare_elements(a, b, 0.5, 0.01) end },
  { 'rel_l2', function() return kb.rel_l2(a, b) end },
  { 'max_abs_diff', function() return kb.max_abs_diff(a, b) end },
  { "to('cpu')", function() a:to('cpu'):free() end },
  { 'digest', function() return a:digest() end },
}
print(string.format('%d %s elements a tensor on %s, %d calls each', n, dtype, kb.backend(), calls))
for _, f in ipairs(fns) do
  local t = {}
  for i = 1, calls do
    local t0 = kb.clock_ns()
    f[2]()
    t[i] = (kb.clock_ns() - t0) / 1e9
  end
  local s = {}
  for i, v in ipairs(t) do s[i] = v end
  table.sort(s)
  local parts = {}
  for i, v in ipairs(t) do parts[i] = string.format('%.3f', v) end
  print(string.format('%-16s median %.3f s  (%s)', f[1], s[(#s + 1) // 2], table.concat(parts, ' ')))
end
