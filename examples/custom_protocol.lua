-- A custom protocol in 20 lines: "best of N" on warm caches, measured and written as a record.
--
--   kluabench examples/custom_protocol.lua [SEQ [N]]
--
-- A protocol is a value: a name, parameters and a run function that gets
-- the device primitives in ctx. record.from_result turns what it measured
-- into a kernelindex bundle, with the protocol's name and parameters in it.
local kb = require 'kluabench'
local do_bench, record = kb.do_bench, kb.record
local results = require 'kluabench.table'
local measure = require 'kluabench.measure'

local best_of = measure.protocol {
  name = 'best-of-n',
  title = 'best of N calls, warm caches',
  params = { n = tonumber(arg[2]) or 50 },
  run = function(self, fn, ctx)
    fn()                                   -- one call to warm up
    ctx.synchronize()
    local samples = {}
    for i = 1, self.params.n do
      local start, stop = ctx.event(), ctx.event()
      start:record()
      fn()
      stop:record()
      stop:synchronize()
      samples[i] = ctx.elapsed_ms(start, stop)
    end
    return { samples = samples }
  end,
}

local seq = tonumber(arg[1]) or 4096
local q = kb.randn({ 1, seq, 32, 16 }, 'bf16', 1)
local k = kb.randn({ 1, seq, 8, 16 }, 'bf16', 2)
local freqs = kb.rope.freqs(seq, 16)

local result = best_of:run(function() kb.rope.llama4_fwd(q, k, freqs, { inplace = true }) end)
print(string.format('best of %d: %.4f ms (median %.4f ms)', #result.samples, result.summary.min,
  result.summary.median))

local bundle = record.from_result {
  kernel = 'llama4_rope', mode = 'forward', provider = 'fused', dtype = 'bf16',
  parameters = { hidden = 512, seq = seq, q_heads = 32, kv_heads = 8 },
  result = result,
}
io.write(results.results_table { bundle })
print('protocol digest: ' .. bundle.run.spec.protocolDigest)
