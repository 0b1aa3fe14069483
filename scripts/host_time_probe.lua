-- Where a benchmark script's wall time goes, by function (a profiler of the host side of any script).
--
-- A call/return hook sums each function's inclusive wall time (its outermost calls; nested
-- calls count in their callers too), then the functions that took the most.
--
--   build/kluabench scripts/host_time_probe.lua [--top N] SCRIPT [SCRIPT'S ARGUMENTS...]
--
-- e.g. build/kluabench scripts/host_time_probe.lua scripts/rope.lua --hidden 8192 --seq 8192
--        --mode forward --provider fused --format jsonl --out /tmp/x.jsonl
-- Prints, after the script returns, one line per function: inclusive seconds, calls, and the
-- function (its name where Lua knows one, its source and line; C functions by name). The hook
-- costs a little on every call, so Lua-heavy code reads slower than it runs; what the probe is
-- for is the calls that take milliseconds (copies, comparisons, synchronisations). A script that
-- ends with os.exit prints nothing here.
local kb = require 'kluabench'

local USAGE = 'usage: kluabench scripts/host_time_probe.lua [--top N] SCRIPT [ARGS...]\n'
local argv = { ... }
local top = 30
if argv[1] == '--help' or argv[1] == '-h' then
  io.stdout:write(USAGE)
  os.exit(0)
end
if argv[1] == '--top' then
  top = math.tointeger(tonumber(argv[2] or ''))
  if not top or top < 1 then
    io.stderr:write("host_time_probe.lua: --top must be an integer >= 1, got '", tostring(argv[2]), "'\n", USAGE)
    os.exit(2)
  end
  table.remove(argv, 1)
  table.remove(argv, 1)
end
local script = table.remove(argv, 1)
if not script then
  io.stderr:write(USAGE)
  os.exit(2)
end
local chunk, err = loadfile(script)
if not chunk then
  io.stderr:write('host_time_probe.lua: ', err, '\n')
  os.exit(2)
end

local clock = kb.clock_ns
-- active[key]: the function's open calls; only the outermost one adds its time (a function that
-- calls itself, or pcall inside pcall, is not counted twice)
local total, calls, label, active = {}, {}, {}, {}
-- the open calls: {key, start ns, tail}; a tail call has no return of its own
local stack, depth = {}, 0
local getinfo = debug.getinfo

local function hook(event)
  local now = clock()
  if event == 'call' or event == 'tail call' then
    local info = getinfo(2, 'Sn')
    local key = info.what == 'C' and ('[C] ' .. tostring(info.name or '?'))
      or string.format('%s:%d', info.short_src, info.linedefined)
    if not label[key] then
      label[key] = info.what == 'C' and key or string.format('%s (%s)', key, tostring(info.name or '?'))
    end
    active[key] = (active[key] or 0) + 1
    depth = depth + 1
    local s = stack[depth]
    if not s then s = {}; stack[depth] = s end
    s[1], s[2], s[3] = key, now, event == 'tail call'
  else -- return: closes the tail calls that led to it, then the call
    while depth > 0 do
      local s = stack[depth]
      depth = depth - 1
      local key = s[1]
      active[key] = active[key] - 1
      if active[key] == 0 then total[key] = (total[key] or 0) + (now - s[2]) end
      calls[key] = (calls[key] or 0) + 1
      if not s[3] then break end
    end
  end
end

_G.arg = { [0] = script, table.unpack(argv) }
local t0 = clock()
debug.sethook(hook, 'cr')
local ok, e = pcall(chunk, table.unpack(argv))
debug.sethook()
local wall = (clock() - t0) / 1e9
if not ok then io.stderr:write('host_time_probe.lua: the script failed: ', tostring(e), '\n') end

local keys = {}
for k in pairs(total) do keys[#keys + 1] = k end
table.sort(keys, function(a, b) return total[a] > total[b] end)
print(string.format('wall %.3f s; inclusive seconds per function (the top %d of %d)', wall, math.min(top, #keys), #keys))
for i = 1, math.min(top, #keys) do
  local k = keys[i]
  print(string.format('%9.3f s %8d calls  %s', total[k] / 1e9, calls[k], label[k]))
end
os.exit(ok and 0 or 1)
