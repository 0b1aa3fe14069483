--- The rotary position embedding family (kernels/rope.h, engine/rope.c as
-- kb.rope): its record title, sources and cost model.
local DTYPE_BYTES = { bf16 = 2, f16 = 2, f32 = 4, f64 = 8 }

return {
  binding = 'rope',
  kernels = {
    llama4_rope = {
      title = 'Llama 4 rotary position embedding',
      sources = { 'kernels/rope.h', 'kernels/rope.cu', 'kernels/rope_cpu.c', 'kernels/rope_freqs_cpu.c',
        'kernels/dtype.h' },
      -- q [B, S, Hq, D] and k [B, S, Hk, D] read and written once, the f32
      -- (cos, sin) table [S, D/2, 2] read once; 6 flops per complex product.
      cost = function(p, dtype, op)
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
      end,
    },
    rope = { title = 'Rotary position embedding' },
  },
}
