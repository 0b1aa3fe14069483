-- Writing a record format of your own: one canonical-JSON line per point, with a digest anyone can recompute.
--
--   kluabench examples/custom_record.lua [SEQ] >> my_results.jsonl
--
-- kluabench's own records are Lua too (stdlib/kluabench/record/init.lua); this
-- is the few lines a format of your own needs: pick the fields, encode them
-- canonically (RFC 8785, so equal content gives equal bytes everywhere),
-- and digest that text.
local kb = require 'kluabench'
local bench = require 'kluabench.measure.do_bench'

local seq = tonumber(arg[1]) or 4096
local q = kb.randn({ 1, seq, 32, 16 }, 'bf16', 1)
local k = kb.randn({ 1, seq, 8, 16 }, 'bf16', 2)
local freqs = kb.rope.freqs(seq, 16)

local _, r = bench.do_bench(function() kb.rope.llama4_fwd(q, k, freqs, { inplace = true }) end,
  { warmup_ms = 5, rep_ms = 20, quantiles = { 0.5, 0.2, 0.8 } })

local device = kb.device_info()
local rec = {
  format = 'my-lab/rope-point/v1',
  kernel = 'llama4_fwd',
  shape = { q = q.shape, k = k.shape, dtype = q.dtype },
  device = { name = device.name, arch = device.arch, backend = kb.backend() },
  latency_us = { p20 = r.quantiles[2] * 1e3, median = r.quantiles[1] * 1e3, p80 = r.quantiles[3] * 1e3 },
  samples = #r.samples,
  engine = { kluabench = kb.version, commit = kb.git_commit },
}
-- The digest covers everything above; a reader recomputes it the same way.
rec.digest = kb.digest(rec)
print(kb.jcs.encode(rec))
