--- The rotary position embedding family (kernels/rope.h, engine/rope.c as
-- kb.rope): its API reference, and its record title, sources and cost model.
local DTYPE_BYTES = { bf16 = 2, f16 = 2, f32 = 4, f64 = 8 }

-- The files hashed into the implementation document of every RoPE record.
local SOURCES = { 'kernels/rope.h', 'kernels/rope.cu', 'kernels/rope_cpu.c', 'kernels/rope_freqs_cpu.c',
  'kernels/dtype.h' }

-- The dtypes the kernels take.
local DTYPES = { 'bf16', 'f16', 'f32', 'f64' }

-- What each provider of the RoPE benchmarks runs, per backend: the entry
-- point (the operations table's function, the name kb.trace shows on the
-- cpu) and its file, for the provider's ImplementationRevision. copy is the
-- engine's device-to-device copy (t:copy_), no RoPE code.
local IMPLEMENTATIONS = {
  -- full runs forward and backward in one launch: its own entry point
  fused = { cuda = { symbol = 'kb_rope_fused_cuda', path = 'kernels/rope.cu', modes = { full = 'kb_rope_full_cuda' } },
    cpu = { symbol = 'kb_rope_fused_cpu', path = 'kernels/rope_cpu.c', modes = { full = 'kb_rope_full_cpu' } } },
  reference = { cuda = { symbol = 'kb_rope_reference_cuda', path = 'kernels/rope.cu' },
    cpu = { symbol = 'kb_rope_reference_cpu', path = 'kernels/rope_cpu.c' } },
  floor = { cuda = { symbol = 'kb_rope_floor_cuda', path = 'kernels/rope.cu' },
    cpu = { symbol = 'kb_rope_floor_cpu', path = 'kernels/rope_cpu.c' } },
  copy = { cuda = { symbol = 'cudaMemcpyAsync', path = 'engine/backend_cuda.c', sources = { 'engine/backend_cuda.c' } },
    cpu = { symbol = 'memcpy', path = 'engine/backend_cpu.c', sources = { 'engine/backend_cpu.c' } } },
}

-- The cost of RoPE over q [B, S, Hq, D] and k [B, S, Hk, D]: both read and
-- written once, the f32 (cos, sin) table [S, D/2, 2] read once; 6 flops
-- per complex product (Llama 4's pairs and rotate-half's alike).
local function cost(p, dtype, op)
  local elt = DTYPE_BYTES[dtype]
  -- parameters come from files too (a Liger CSV): no cost unless each
  -- is a positive whole number
  local function count(v) return type(v) == 'number' and v > 0 and math.tointeger(v) or nil end
  local hidden, seq, hq, hk = count(p.hidden), count(p.seq), count(p.q_heads), count(p.kv_heads)
  local batch = p.batch == nil and 1 or count(p.batch)
  if not (elt and hidden and seq and hq and hk and batch) or hidden % hq ~= 0 then return nil end
  local d = hidden // hq
  local n = batch * seq * (hq + hk) * d
  local passes = ({ forward = 1, backward = 1, full = 2 })[op]
  if not passes then return nil end
  return passes * (2 * n * elt + seq * d * 4), passes * 3 * n
end

return {
  binding = 'rope',
  -- The API reference of kb.rope (stdlib/kluabench/cli/apidoc.lua adds it to
  -- help() and docs/API.md).
  doc = {
    section = { id = 'rope', title = 'Rotary position embedding (kb.rope)',
      intro = 'The RoPE kernels, each on both backends (CUDA and the CPU reference). q is '
        .. '`[B, S, Hq, D]`, k is `[B, S, Hk, D]` (Hq and Hk may differ), freqs is the f32 '
        .. '`[S, D/2, 2]` table of (cos, sin) from `kb.rope.freqs`. The math is done in f32 and '
        .. 'rounded back to the input dtype.' },
    entries = {
      { name = 'kb.rope.freqs', signature = 'kb.rope.freqs(seq_len, head_dim [, opts]) -> Tensor',
        summary = 'The f32 [seq_len, head_dim/2, 2] table of (cos, sin) that RoPE multiplies by.',
        details = 'Equal to `view_as_real` of the `freqs_cis` of Hugging Face\'s '
          .. '`Llama4TextRotaryEmbedding` (default rope type). opts: `theta` (default 10000.0); '
          .. '`positions` (a list or tensor of seq_len positions instead of 0..seq_len-1); '
          .. '`scaling` (llama3 style: factor, low_freq_factor, high_freq_factor, '
          .. 'original_max_position_embeddings); `device` (default: the selected backend). A table '
          .. 'longer than seq serves any shorter q and k.',
        example = 'local f = kb.rope.freqs(2048, 128, {theta = 500000})' },
      { name = 'kb.rope.llama4_fwd', signature = 'kb.rope.llama4_fwd(q, k, freqs [, opts]) -> q_out, k_out',
        summary = 'Llama 4 RoPE: pairs (2i, 2i+1) of q and k multiplied by freqs[s, i] as complex numbers.',
        details = 'opts.impl: "fused" (default; one kernel for q and k) or "reference" (the unfused '
          .. 'op sequence PyTorch eager runs: upcast, complex multiply, downcast, with temporaries). '
          .. 'opts.inplace = true writes into q and k (and returns them). q and k share batch, seq, '
          .. 'head_dim, dtype and device; freqs is f32 [>= seq, head_dim/2, 2] on the same device. '
          .. 'A mismatch is an error naming the argument: "bad argument #3 to \'llama4_fwd\' (freqs '
          .. 'has 1024 positions, q has seq 2048)".',
        example = 'local q = kb.randn({1, 2048, 32, 16}, "bf16", 1)\n'
          .. 'local k = kb.randn({1, 2048, 8, 16}, "bf16", 2)\n'
          .. 'local f = kb.rope.freqs(2048, 16)\n'
          .. 'local qo, ko = kb.rope.llama4_fwd(q, k, f)' },
      { name = 'kb.rope.llama4_bwd', signature = 'kb.rope.llama4_bwd(dq, dk, freqs [, opts]) -> dq_in, dk_in',
        summary = 'Backward of llama4_fwd: the gradients multiplied by the conjugate of freqs.',
        details = 'Same options as llama4_fwd; bwd(fwd(x)) equals x up to rounding.',
        example = 'local dq, dk = kb.rope.llama4_bwd(gq, gk, f, {impl = "reference"})' },
      { name = 'kb.rope.neox_fwd', signature = 'kb.rope.neox_fwd(q, k, freqs [, opts]) -> q_out, k_out',
        summary = 'Rotate-half RoPE (pairs (i, i + D/2)), as Hugging Face\'s Llama/Qwen apply_rotary_pos_emb.',
        details = 'Same arguments and options as llama4_fwd.',
        example = 'local qo, ko = kb.rope.neox_fwd(q, k, f, {inplace = true})' },
      { name = 'kb.rope.neox_bwd', signature = 'kb.rope.neox_bwd(dq, dk, freqs [, opts]) -> dq_in, dk_in',
        summary = 'Backward of neox_fwd.',
        example = 'local dq, dk = kb.rope.neox_bwd(gq, gk, f)' },
      { name = 'kb.rope.llama4_fwd_bwd',
        signature = 'kb.rope.llama4_fwd_bwd(q, k, dq, dk, freqs [, opts]) -> q_out, k_out, dq_in, dk_in',
        summary = 'llama4_fwd of q and k and llama4_bwd of dq and dk in one pass (one kernel launch on CUDA).',
        details = 'The full mode of the benchmarks (a forward, then the backward of upstream gradients) '
          .. 'as one launch, bit for bit what the two calls write. dq and dk have the shapes, dtype and '
          .. 'device of q and k. opts.impl: "fused" (default) or "reference" (the reference forward, '
          .. 'then the reference backward); opts.inplace = true writes into all four tensors, which '
          .. 'must then be distinct.',
        example = 'local q = kb.randn({1, 2048, 32, 16}, "bf16", 1)\n'
          .. 'local k = kb.randn({1, 2048, 8, 16}, "bf16", 2)\n'
          .. 'local f = kb.rope.freqs(2048, 16)\n'
          .. 'local qo, ko, dq, dk = kb.rope.llama4_fwd_bwd(q, k, q:clone(), k:clone(), f)' },
      { name = 'kb.rope.neox_fwd_bwd',
        signature = 'kb.rope.neox_fwd_bwd(q, k, dq, dk, freqs [, opts]) -> q_out, k_out, dq_in, dk_in',
        summary = 'neox_fwd of q and k and neox_bwd of dq and dk in one pass (one kernel launch on CUDA).',
        details = 'Same arguments and options as llama4_fwd_bwd.',
        example = 'local qo, ko, dq, dk = kb.rope.neox_fwd_bwd(q, k, q:clone(), k:clone(), f, {impl = "reference"})' },
      { name = 'kb.rope.floor', signature = 'kb.rope.floor(q, k, freqs [, opts]) -> q_out, k_out',
        summary = 'The floor of a fused RoPE call: its bytes moved in one launch, without arithmetic.',
        details = 'Reads q, k and rows [0, seq) of freqs once, writes q_out = q and k_out = k: the yardstick '
          .. 'of the fused kernels, their bytes in one launch with no arithmetic (the benchmarks\' floor '
          .. 'provider). Takes the arguments of llama4_fwd; opts.inplace = true rewrites q and k with '
          .. 'their own bytes.',
        example = 'local q2, k2 = kb.rope.floor(q, k, f)' },
      { name = 'kb.rope.floor_fwd_bwd',
        signature = 'kb.rope.floor_fwd_bwd(q, k, dq, dk, freqs [, opts]) -> q_out, k_out, dq_out, dk_out',
        summary = 'The floor of llama4_fwd_bwd and neox_fwd_bwd: both passes\' bytes in one launch.',
        details = 'Copies q, k, dq and dk and reads the table once per pass. Same arguments as llama4_fwd_bwd; '
          .. 'opts.inplace only.',
        example = 'local a, b, c, d = kb.rope.floor_fwd_bwd(q, k, q:clone(), k:clone(), f, {inplace = true})' },
    },
  },
  kernels = {
    llama4_rope = {
      title = 'Llama 4 rotary position embedding',
      sources = SOURCES,
      cost = cost,
      dtypes = DTYPES,
      implementations = IMPLEMENTATIONS,
    },
    rope = {
      title = 'Rotary position embedding',
      sources = SOURCES,
      -- the same traffic as llama4_rope: rotate-half pairs (i, i + D/2)
      -- instead of adjacent ones, the same (cos, sin) table
      cost = cost,
      dtypes = DTYPES,
      implementations = IMPLEMENTATIONS,
    },
  },
}
