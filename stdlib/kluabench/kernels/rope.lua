--- The RoPE family (kernels/rope.h, kb.rope): its API section and what records say of it: title, sources, cost model,
-- each provider's code, and kernelindex's OperationSpec of Liger's benchmark.
local DTYPE_BYTES = { bf16 = 2, f16 = 2, f32 = 4, f64 = 8 }

-- The files hashed into the implementation document of every RoPE record.
local SOURCES = { 'kernels/rope.h', 'kernels/rope.cu', 'kernels/rope_cpu.c', 'kernels/rope_freqs_cpu.c',
  'kernels/dtype.h' }

local DTYPES = { 'bf16', 'f16', 'f32', 'f64' }

-- What each provider runs, per backend: the entry point and its file (copy: the engine's copy).
local IMPLEMENTATIONS = {
  fused = { cuda = { symbol = 'kb_rope_fused_cuda', path = 'kernels/rope.cu', modes = { full = 'kb_rope_full_cuda' } },
    cpu = { symbol = 'kb_rope_fused_cpu', path = 'kernels/rope_cpu.c', modes = { full = 'kb_rope_full_cpu' } } },
  reference = { cuda = { symbol = 'kb_rope_reference_cuda', path = 'kernels/rope.cu' },
    cpu = { symbol = 'kb_rope_reference_cpu', path = 'kernels/rope_cpu.c' } },
  floor = { cuda = { symbol = 'kb_rope_floor_cuda', path = 'kernels/rope.cu' },
    cpu = { symbol = 'kb_rope_floor_cpu', path = 'kernels/rope_cpu.c' } },
  copy = { cuda = { symbol = 'cudaMemcpyAsync', path = 'engine/backend/backend_cuda.c',
    sources = { 'engine/backend/backend_cuda.c' } },
    cpu = { symbol = 'memcpy', path = 'engine/backend/backend_cpu.c', sources = { 'engine/backend/backend_cpu.c' } } },
}

-- q [B, S, Hq, D] and k [B, S, Hk, D] read and written once, and the table bytes the kernel reads once: `table_bytes(elt)`
-- bytes per position and head_dim element; 6 flops per complex product. No cost unless each parameter is a positive
-- integer.
local function cost_model(table_bytes)
  return function(p, dtype, op)
    local elt = DTYPE_BYTES[dtype]
    local function count(v) return type(v) == 'number' and v > 0 and math.tointeger(v) or nil end
    local hidden, seq, hq, hk = count(p.hidden), count(p.seq), count(p.q_heads), count(p.kv_heads)
    local batch = p.batch == nil and 1 or count(p.batch)
    if not (elt and hidden and seq and hq and hk and batch) or hidden % hq ~= 0 then return nil end
    local d = hidden // hq
    local n = batch * seq * (hq + hk) * d
    local passes = ({ forward = 1, backward = 1, full = 2 })[op]
    if not passes then return nil end
    return passes * (2 * n * elt + seq * d * table_bytes(elt)), passes * 3 * n
  end
end

-- llama4: the f32 (cos, sin) pairs [S, D/2, 2], 4 bytes per position and element. rope (neox): the first half of each
-- row of cos and of sin [1, S, D] in the model's dtype (the second half is its copy), elt bytes per position and
-- element.
local llama4_cost = cost_model(function() return 4 end)
local neox_cost = cost_model(function(elt) return elt end)

-- The layouts the kernels read, named in their implementation documents (support.layouts).
local QK = 'q, k [batch, seq, heads, head_dim]'
local LAYOUTS = {
  llama4_rope = { QK, 'freqs [seq, head_dim/2, (cos, sin)] f32' },
  rope = { QK, "cos, sin [1|batch, seq, head_dim] in q's dtype" },
}

-- Liger-Kernel's benchmark, as kernelindex's importer describes it (the commit it read).
local LIGER = 'https://github.com/linkedin/Liger-Kernel'
local LIGER_COMMIT = '2120862ba532c9449e72d603ba6324310ae756e7'
local TOKENS = { bf16 = 'bf16', f16 = 'fp16', fp16 = 'fp16', f32 = 'fp32', fp32 = 'fp32', f64 = 'fp64', fp64 = 'fp64' }
local AXES = { hidden = true, seq = true, q_heads = true, kv_heads = true }

-- The workload's binding of a point: positive integer axes at batch 1, hidden a multiple of q_heads, a float dtype;
-- else nil.
local function bind(params, dtype)
  for name, v in pairs(params) do
    if not AXES[name] and not (name == 'batch' and v == 1) then return nil end
  end
  local function int(v) return type(v) == 'number' and v > 0 and v == math.floor(v) and math.tointeger(v) or nil end
  local seq, hidden, hq, hk = int(params.seq), int(params.hidden), int(params.q_heads), int(params.kv_heads)
  local token = TOKENS[dtype]
  if not (seq and hidden and hq and hk and token) or hidden % hq ~= 0 then return nil end
  return { axes = { seq = seq, hidden = hidden, q_heads = hq, kv_heads = hk }, dtype = token }
end

-- The x axes of Liger's CSV rows: x_name and x_label by our axis.
local LIGER_X = { hidden = { 'H', 'hidden size' }, seq = { 'T', 'sequence length' } }

local function kernelindex(csv_name, slug, title, description, shape_q, shape_k)
  return {
    liger_name = csv_name,
    liger_x = LIGER_X,
    bind = bind,
    operation = {
      name = slug, family = 'rope', title = title, description = description,
      inputs = { { name = 'q', shape = shape_q, dtype = 'cfg' }, { name = 'k', shape = shape_k, dtype = 'cfg' } },
      outputs = { { name = 'q_out', shape = shape_q, dtype = 'cfg' }, { name = 'k_out', shape = shape_k, dtype = 'cfg' } },
      derived = { head_dim = 'hidden // q_heads' }, axis_order = { 'seq', 'hidden', 'q_heads', 'kv_heads' },
      source_url = string.format('%s/blob/%s/benchmark/scripts/benchmark_%s.py', LIGER, LIGER_COMMIT, csv_name),
    },
  }
end

return {
  binding = 'rope',
  doc = {
    section = { id = 'rope', title = 'Rotary position embedding (kb.rope)',
      intro = 'The RoPE kernels, each on both backends (CUDA and the CPU reference). q is '
        .. '`[B, S, Hq, D]`, k is `[B, S, Hk, D]` (Hq and Hk may differ). Each style takes its table as its '
        .. 'model hands it: Llama 4 (`llama4_*`) the f32 `[S, D/2, 2]` (cos, sin) pairs of `kb.rope.freqs` '
        .. '(its complex64 `freqs_cis`); rotate-half (`neox_*`) `cos` and `sin`, each `[1, S, D]` in the '
        .. "model's dtype, from `kb.rope.cos_sin` (what Hugging Face's `LlamaRotaryEmbedding` returns). "
        .. 'The math is done in f32 (f64 for f64) and rounded once back to the input dtype.' },
  },
  kernels = {
    llama4_rope = {
      title = 'Llama 4 rotary position embedding', sources = SOURCES, cost = llama4_cost, dtypes = DTYPES,
      implementations = IMPLEMENTATIONS, layouts = LAYOUTS.llama4_rope,
      kernelindex = kernelindex('llama4_rope', 'liger-llama4-rope', 'Llama 4 rotary position embedding',
        'Llama-4-style rotary embedding applied to query and key tensors in batch×seq×heads×head_dim layout '
          .. '(batch 1, complex-frequency formulation).',
        { 1, 'seq', 'q_heads', 'head_dim' }, { 1, 'seq', 'kv_heads', 'head_dim' }),
    },
    rope = {
      title = 'Rotary position embedding', sources = SOURCES, cost = neox_cost, dtypes = DTYPES,
      implementations = IMPLEMENTATIONS, layouts = LAYOUTS.rope,
      kernelindex = kernelindex('rope', 'liger-rope', 'Rotary position embedding',
        'Rotary position embedding applied to query and key tensors (batch 1, Llama-style head layout).',
        { 1, 'q_heads', 'seq', 'head_dim' }, { 1, 'kv_heads', 'seq', 'head_dim' }),
    },
  },
}
