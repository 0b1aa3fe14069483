-- Rotate-half RoPE (Llama, Qwen) timed the way Liger-Kernel's rope benchmark times it, written as kernelindex records.
--
-- Liger's benchmark_rope.py: the same axes, sweeps, defaults and modes as
-- llama4_rope (hidden {512, 2048, 8192} at seq 2048, seq {1024..16384} at
-- hidden 8192, 32 query and 8 key/value heads, bf16), on Hugging Face's
-- apply_rotary_pos_emb; here on kb.rope.neox_fwd / neox_bwd, reading cos and
-- sin in the point's dtype as HF's LlamaRotaryEmbedding hands them
-- (kb.rope.cos_sin). Records name the kernel `rope`, as `kluabench
-- import-liger` names Liger's rows, so both line up by workload in `kluabench
-- compare` and `plot`.
local rope = require 'kluabench.benchmarks.rope'

require('kluabench.suite').main(rope.declaration('rope', { summary = [[
Times rotate-half rotary position embedding (kb.rope.neox_fwd / neox_bwd) the
way Liger-Kernel's rope benchmark does (bench.do_bench = the algorithm of
triton.testing.do_bench) and writes one kernelindex bundle per point.
With no options: hidden 512, seq 2048, backward, fused; prints the table and
appends the bundle to results/rope-<UTC time>.jsonl.]] }))
