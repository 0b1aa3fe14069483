-- What a pair of CUDA events adds to a measured interval, with nothing and with an empty kernel between them.
--
-- The median time between a start and an end event with nothing between them, and with an empty kernel between them, each
-- queued behind a spin kernel (as the cold mode does), so that host enqueue time stays out.
-- Usage: kluabench scripts/event_overhead.lua [samples]
local kb = require 'kluabench'
if kb.backend() ~= 'cuda' then -- meaningless on the cpu backend: refuse, as a usage error
  io.stderr:write('event_overhead.lua: needs a GPU (the cuda backend; this is ', kb.backend(), '): it times CUDA events; '
    .. 'run it on a GPU machine\n')
  os.exit(2)
end
local n = math.tointeger(tonumber(arg and arg[1])) or 1000
local e0, e1 = kb.event(), kb.event()
local function median_us(between)
  local xs = {}
  for i = 1, n do
    kb.spin(30000)
    e0:record()
    between()
    e1:record()
    e1:synchronize()
    xs[i] = kb.elapsed_ms(e0, e1) * 1e3
  end
  local s = kb.stats.summary(xs)
  return s.median, kb.stats.quantile(xs, 0.2), kb.stats.quantile(xs, 0.8)
end
print(string.format('device %s, %d samples per line, held behind a 30 us spin', kb.device_info().name, n))
for _, c in ipairs {
  { 'nothing between the events', function() end },
  { 'an empty kernel (kb.spin(0))', function() kb.spin(0) end },
  { 'two empty kernels', function() kb.spin(0); kb.spin(0) end },
} do
  local m, lo, hi = median_us(c[2])
  print(string.format('%-32s median %6.2f us  (p20 %.2f, p80 %.2f)', c[1], m, lo, hi))
end
