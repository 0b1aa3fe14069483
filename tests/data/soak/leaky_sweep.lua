-- A stand-in for scripts/llama4_rope.lua in tests/soak_spec.lua: takes
-- --format jsonl --out FILE, writes one point, and keeps 8 MiB of tensors
-- alive per run in a global (a leak), or nothing with --no-leak; --busy S
-- makes a run take S seconds.
local kb = require 'kluabench'
local out, leak = nil, true
for i, a in ipairs(arg) do
  if a == '--out' then out = arg[i + 1] end
  if a == '--no-leak' then leak = false end
  if a == '--busy' then -- seconds of work (not os.execute: system() ignores SIGINT)
    local t_end = kb.clock_ns() + tonumber(arg[i + 1]) * 1e9
    repeat until kb.clock_ns() >= t_end
  end
end
if leak then
  LEAKED = LEAKED or {}
  LEAKED[#LEAKED + 1] = kb.zeros({ 2 * 2 ^ 20 }, 'f32', 'cpu')
end
local f = assert(io.open(out, 'a'))
f:write('{"run":{"spec":{"timing":{"latencyNs":{"median":1000}}}},"workload":{"spec":{"operation":"forward"}}}\n')
f:close()
