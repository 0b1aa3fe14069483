-- Measures the host cost of calling a kernel from Lua: ns per call, from an empty Lua call to a RoPE launch.
--
--   kluabench scripts/launch_overhead.lua [--calls N] [--reps R]
--
-- Each line times N back-to-back calls with the host clock (R repetitions,
-- synchronizing between them; median and p20/p80 of the per-call cost).
-- The GPU work of these calls is tiny, so what is measured is the host side:
-- the Lua call, the binding's argument checks, and the CUDA launch. On the
-- cpu backend the kernels would run inside the call, so it refuses one (exit 2).
-- docs/MEASUREMENT.md records the numbers.
local kb = require 'kluabench'
local stats = kb.stats

local calls, reps = 200, 51
local i = 1
while i <= #arg do
  if arg[i] == '--calls' then calls = math.tointeger(tonumber(arg[i + 1])) or calls; i = i + 2
  elseif arg[i] == '--reps' then reps = math.tointeger(tonumber(arg[i + 1])) or reps; i = i + 2
  else io.stderr:write('usage: kluabench scripts/launch_overhead.lua [--calls N] [--reps R]\n'); os.exit(2) end
end
if kb.backend() ~= 'cuda' then -- meaningless on the cpu backend: refuse, as a usage error
  io.stderr:write('launch_overhead.lua: needs a GPU (the cuda backend; this is ', kb.backend(), '): it times CUDA launches from Lua; '
    .. 'run it on a GPU machine\n')
  os.exit(2)
end

local clock = kb.clock_ns

local function time(fn)
  local per = {}
  for r = 1, reps do
    kb.synchronize()
    local t0 = clock()
    for _ = 1, calls do fn() end
    local t1 = clock()
    per[r] = (t1 - t0) / calls
  end
  kb.synchronize()
  local q = stats.quantiles(per, { 0.5, 0.2, 0.8 })
  return q[1], q[2], q[3]
end

local q = kb.randn({ 1, 1, 1, 2 }, 'bf16', 1)
local k = kb.randn({ 1, 1, 1, 2 }, 'bf16', 2)
local freqs = kb.rope.freqs(1, 2)
local fused = { impl = 'fused', inplace = true }
local reference = { impl = 'reference', inplace = true }
local rope = kb.rope.llama4_fwd
local empty = function() end
local wrapped = function() rope(q, k, freqs, fused) end

local cases = {
  { 'empty Lua function', empty },
  { 'kb.clock_ns() (a C function, no work)', clock },
  { 'kb.spin(0) (binding + one launch)', function() kb.spin(0) end },
  { 'kb.rope.llama4_fwd fused, in place, 1 launch', function() rope(q, k, freqs, fused) end },
  { 'the same through a Lua closure (as a benchmark fn)', function() wrapped() end },
  { 'kb.rope.llama4_fwd reference, in place', function() rope(q, k, freqs, reference) end },
}

for _, c in ipairs(cases) do c[2]() end -- load modules, create the scratch buffer

local rows = {}
for n, c in ipairs(cases) do
  local med, p20, p80 = time(c[2])
  rows[n] = { what = c[1], median = med, p20 = p20, p80 = p80 }
end

local info = kb.device_info()
io.stdout:write(string.format('host cost per call on %s (%s backend), %d calls x %d repetitions\n\n',
  info.name, kb.backend(), calls, reps))
io.stdout:write(require('kluabench.table').format_table({
  { key = 'what', title = 'call' },
  { key = 'median', title = 'median ns', align = 'right', format = '%.0f' },
  { key = 'p20', title = 'p20 ns', align = 'right', format = '%.0f' },
  { key = 'p80', title = 'p80 ns', align = 'right', format = '%.0f' },
}, rows))
