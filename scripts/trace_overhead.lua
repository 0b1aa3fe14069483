-- Whether kernel tracing (kb.trace: CUPTI on cuda) changes what it traces: event and kernel times with tracing off and on.
--
-- The cold-mode loop (flush, spin hold, start event, the call, end event) run three ways on the same
-- inputs: tracing off; switched on and off around every sample (what measure's kernel_trace
-- does); on for the whole run with a collect after each sample. Prints the median event time
-- and the median sum of kernel durations of each.
-- Usage: kluabench scripts/trace_overhead.lua [samples] [hidden] [seq] [hold_us]
-- The hold (default 1000 us) must outlast the host enqueue, which tracing slows: with 50 us
-- the host was still launching when the spin ended and the event times grew by 10-15 us.
local kb = require 'kluabench'
local measure = require 'kluabench.measure'
local session = require 'kluabench.measure.session'
if kb.backend() ~= 'cuda' then -- meaningless on the cpu backend: refuse, as a usage error
  io.stderr:write('trace_overhead.lua: needs a GPU (the cuda backend; this is ', kb.backend(), '): it compares CUPTI kernel traces with CUDA events; '
    .. 'run it on a GPU machine\n')
  os.exit(2)
end
local n = math.tointeger(tonumber(arg[1])) or 40
local hidden = math.tointeger(tonumber(arg[2])) or 8192
local seq = math.tointeger(tonumber(arg[3])) or 16384
local hold_ns = (math.tointeger(tonumber(arg[4])) or 1000) * 1000
local d = hidden // 32
local q = kb.randn({ 1, seq, 32, d }, 'bf16', 1)
local k = kb.randn({ 1, seq, 8, d }, 'bf16', 2)
local f = kb.rope.freqs(seq, d)
local e0, e1 = kb.event(), kb.event()

local function loop(impl, how)
  local opts = { impl = impl, inplace = true }
  local ev, sums = {}, {}
  if how == 'session' then kb.trace.start() end
  for i = 1, n + 3 do
    kb.flush_l2()
    if how == 'toggle' then kb.trace.start() end
    kb.spin(hold_ns)
    e0:record()
    kb.rope.llama4_fwd(q, k, f, opts)
    e1:record()
    kb.synchronize()
    local recs = how == 'toggle' and kb.trace.stop() or how == 'session' and kb.trace.collect() or nil
    if i > 3 then -- warm-up left out
      ev[#ev + 1] = kb.elapsed_ms(e0, e1) * 1e3
      if recs then
        local _, sum = session.trace_totals(recs)
        sums[#sums + 1] = sum * 1e3
      end
    end
  end
  if how == 'session' then kb.trace.stop() end
  return kb.stats.median(ev), #sums > 0 and kb.stats.median(sums) or nil
end

print(string.format('%s, hidden %d, seq %d, bf16, %d samples per line', kb.device_info().name, hidden, seq, n))
print('impl       tracing   event median us   kernel sum median us')
for _, impl in ipairs { 'fused', 'reference' } do
  for _, how in ipairs { 'off', 'toggle', 'session', 'off' } do
    local ev, sum = loop(impl, how)
    print(string.format('%-10s %-8s %16.2f %22s', impl, how, ev, sum and string.format('%.2f', sum) or '-'))
  end
end
