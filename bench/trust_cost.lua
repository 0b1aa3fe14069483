-- What the defences cost (issue 21): the median of each point before and after them, from two JSON Lines files of one interleaved run.
--
--   build/kluabench bench/trust_cost.lua BEFORE.jsonl AFTER.jsonl
--
-- Per (kernel, mode, provider, protocol, workload): the median over sessions
-- of each session's median, before and after, the difference in us and in %,
-- and the target: at most 2 % slower at hidden 8192, seq 4096, at most 1 us
-- slower at the launch-bound point (hidden 512, seq 2048). Exit status 1 when
-- a point misses its target or no point with a target was measured, 2 on a
-- usage error.
local point = require 'kluabench.record.point'
local stats = require 'kluabench.stats'
local cjson = require 'cjson'

if #arg ~= 2 then
  io.stderr:write('usage: kluabench bench/trust_cost.lua BEFORE.jsonl AFTER.jsonl\n')
  os.exit(2)
end

-- key -> list of session medians (ns) of the passed runs of a file.
local function medians(path)
  local f = io.open(path, 'r')
  if not f then
    io.stderr:write('trust_cost.lua: cannot read ', path, '\n')
    os.exit(2)
  end
  local out, order = {}, {}
  for line in f:lines() do
    local ok, b = pcall(cjson.decode, line)
    if ok and type(b) == 'table' and b.run then
      local p = point.of(b)
      if p.status == 'passed' and p.median_ns then
        local key = table.concat({ p.kernel, p.mode, p.provider, tostring(p.protocol), p.id }, ' ')
        if not out[key] then out[key], order[#order + 1] = {}, key end
        table.insert(out[key], p.median_ns)
      end
    end
  end
  f:close()
  return out, order
end

-- The target of a point: ('pct', 2) or ('us', 1), or nil.
local function target(key)
  if key:find('hidden8192', 1, true) and key:find('seq4096', 1, true) then return 'pct', 2 end
  if key:find('hidden512', 1, true) and key:find('seq2048', 1, true) then return 'us', 1 end
  return nil
end

local before, order = medians(arg[1])
local after = medians(arg[2])
local missed, judged = 0, 0
print('| point | sessions | before us | after us | after - before | target | verdict |')
print('|---|---:|---:|---:|---:|---|---|')
for _, key in ipairs(order) do
  local b, a = before[key], after[key]
  if a then
    local mb, ma = stats.median(b) / 1e3, stats.median(a) / 1e3
    local kind, limit = target(key)
    local verdict, goal = 'n/a', 'none'
    if kind == 'pct' then
      goal = string.format('<= +%g %%', limit)
      verdict = (ma - mb) / mb * 100 <= limit and 'MET' or 'MISSED'
    elseif kind == 'us' then
      goal = string.format('<= +%g us', limit)
      verdict = ma - mb <= limit and 'MET' or 'MISSED'
    end
    if verdict == 'MISSED' then missed = missed + 1 end
    if kind then judged = judged + 1 end
    print(string.format('| %s | %d / %d | %.3f | %.3f | %+.3f us (%+.2f %%) | %s | %s |', key, #b, #a, mb, ma, ma - mb,
      (ma - mb) / mb * 100, goal, verdict))
  else
    print(string.format('| %s | %d / 0 | | | | | no after |', key, #b))
    missed = missed + 1
  end
end
if judged == 0 then print('\nno point with a target (hidden 8192 at seq 4096, or hidden 512 at seq 2048) was measured') end
os.exit((missed == 0 and judged > 0) and 0 or 1)
