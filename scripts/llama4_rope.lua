-- Llama 4 RoPE timed the way Liger-Kernel's llama4_rope benchmark times it, written as kernelindex records.
--
-- The benchmark is a declaration for the harness (kluabench.suite, which
-- owns the options, the loop, the checks, the outputs and the records):
-- stdlib/kluabench/benchmarks/rope.lua declares the workload, the providers
-- and what each mode times; `--help` lists the options.
local rope = require 'kluabench.benchmarks.rope'

require('kluabench.suite').main(rope.declaration('llama4_rope', { summary = [[
Times Llama 4 rotary position embedding (kb.rope.llama4_fwd / llama4_bwd) the
way Liger-Kernel's llama4_rope benchmark does (bench.do_bench = the algorithm
of triton.testing.do_bench) and writes one kernelindex bundle per point.
With no options: hidden 512, seq 2048, backward, fused (the point of
tests/fixtures/kernelindex-record-example.json); prints the table and appends the
bundle to results/llama4_rope-<UTC time>.jsonl.]] }))
