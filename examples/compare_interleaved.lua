-- Comparing two providers with interleaved samples: fused vs reference RoPE, and the speedup with its 95 % interval.
--
--   kluabench examples/compare_interleaved.lua [SEQ [SAMPLES]]
--
-- Samples of the two are taken in a shuffled order (seed recorded), so that
-- slow drift of clocks or temperature spreads over both instead of biasing
-- whichever ran second. The interval is a bootstrap of the ratio of medians.
local kb = require 'kluabench'
local measure = require 'kluabench.measure'
local stopping = require 'kluabench.measure.stopping'
local interleave = require 'kluabench.measure.interleave'
local inference = require 'kluabench.stats.inference'
local session = require 'kluabench.measure.session'

local seq = tonumber(arg[1]) or 4096
local samples = tonumber(arg[2]) or 30
local q = kb.randn({ 1, seq, 32, 16 }, 'bf16', 1)
local k = kb.randn({ 1, seq, 8, 16 }, 'bf16', 2)
local freqs = kb.rope.freqs(seq, 16)

local function provider(impl)
  return function() kb.rope.llama4_fwd(q, k, freqs, { impl = impl, inplace = true }) end
end

local out = interleave.run({
  { name = 'fused', session = session.new('cold', provider('fused'), { stop = stopping.count(samples) }) },
  { name = 'reference', session = session.new('cold', provider('reference'), { stop = stopping.count(samples) }) },
}, { order = 'shuffle', seed = 7 })

local fused, reference = out.results.fused, out.results.reference
for _, name in ipairs { 'fused', 'reference' } do
  local s = out.results[name].summary
  print(string.format('%-10s median %.4f ms  p20 %.4f  p80 %.4f  (%d samples)', name, s.median, s.p20,
    s.p80, s.n))
end
-- ratio = median(reference) / median(fused): how many times faster fused is
local r = inference.bootstrap_ratio(fused.samples, reference.samples, { seed = out.seed })
print(string.format('fused is %.2fx faster than reference (95%% interval %.2f to %.2f; order %s, seed %d)',
  r.ratio, r.lo, r.hi, out.order, out.seed))
