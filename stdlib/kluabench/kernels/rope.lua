--- The rotary position embedding family (kernels/rope.h, engine/core/rope.c as
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
  copy = { cuda = { symbol = 'cudaMemcpyAsync', path = 'engine/backend/backend_cuda.c', sources = { 'engine/backend/backend_cuda.c' } },
    cpu = { symbol = 'memcpy', path = 'engine/backend/backend_cpu.c', sources = { 'engine/backend/backend_cpu.c' } } },
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
  -- The section of kb.rope in the API reference (help() and docs/API.md); its
  -- entries are the /*** comments beside the functions in engine/core/rope.c.
  doc = {
    section = { id = 'rope', title = 'Rotary position embedding (kb.rope)',
      intro = 'The RoPE kernels, each on both backends (CUDA and the CPU reference). q is '
        .. '`[B, S, Hq, D]`, k is `[B, S, Hk, D]` (Hq and Hk may differ), freqs is the f32 '
        .. '`[S, D/2, 2]` table of (cos, sin) from `kb.rope.freqs`. The math is done in f32 and '
        .. 'rounded back to the input dtype.' },
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
