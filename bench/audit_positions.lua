-- Are the samples right after an audit slower than the others? From samples files (.samples.jsonl).
--
--   build/kluabench bench/audit_positions.lua FILE.samples.jsonl...
--
-- Each session's evidence lists the kept samples an audit ran just before
-- (execution.trust.before). Per file: over its sessions, each sample's time
-- relative to its session's median, grouped by its distance after the last
-- audit (0: the first sample after one, ... 9, and "later"; samples before
-- the first audit are "none yet"), and the median of each group. A session
-- without audits (--audits 0) has only "none yet". Exit status 2 on a usage
-- error.
local cjson = require 'cjson'
local stats = require 'kluabench.stats'

if #arg == 0 then
  io.stderr:write('usage: kluabench bench/audit_positions.lua FILE.samples.jsonl...\n')
  os.exit(2)
end

local NEAR = 10 -- distances 0..NEAR-1 get a group of their own
for _, path in ipairs(arg) do
  local f = io.open(path, 'r')
  if not f then
    io.stderr:write('audit_positions.lua: cannot read ', path, '\n')
    os.exit(2)
  end
  local groups, sessions = {}, 0
  local function add(g, v)
    groups[g] = groups[g] or {}
    table.insert(groups[g], v)
  end
  for line in f:lines() do
    local e = cjson.decode(line)
    local xs = e.samples
    if type(xs) == 'table' and #xs > 0 then
      sessions = sessions + 1
      local med = stats.median(xs)
      local trust = e.execution and e.execution.trust
      local before = {}
      for _, i in ipairs(trust and trust.before ~= cjson.null and trust.before or {}) do before[i] = true end
      local last
      for i, x in ipairs(xs) do
        if before[i] then last = i end
        local g = not last and 'none yet' or (i - last < NEAR and tostring(i - last) or 'later')
        add(g, x / med)
      end
    end
  end
  f:close()
  print(string.format('%s: %d sessions; sample / its session median, by samples since the last audit', path,
    sessions))
  print('| since the last audit | samples | median ratio | p80 ratio |')
  print('|---|---:|---:|---:|')
  local order = { 'none yet' }
  for d = 0, NEAR - 1 do order[#order + 1] = tostring(d) end
  order[#order + 1] = 'later'
  for _, g in ipairs(order) do
    local v = groups[g]
    if v then
      local q = stats.quantiles(v, { 0.5, 0.8 })
      print(string.format('| %s | %d | %.4f | %.4f |', g, #v, q[1], q[2]))
    end
  end
  print('')
end
