--- Liger-Kernel's RoPE benchmarks as harness declarations (docs/SUITE.md#the-rope-benchmarks): `llama4_rope`
-- (kb.rope.llama4_*) and `rope` (kb.rope.neox_*), the workloads, sweeps and modes of benchmark_llama4_rope.py and
-- benchmark_rope.py; scripts/llama4_rope.lua and scripts/rope.lua.
local M = {}
local args = require 'kluabench.util.args'

local kb = require 'kluabench.core'
local kernels = require 'kluabench.kernels'
local suite = require 'kluabench.suite'
local env = require 'kluabench.record.env'

local SEEDS = { q = 1, k = 2, dq = 3, dk = 4 }
local THETA = 10000.0

-- Against the cpu reference: one rounding step of the dtype (the kernels promise its bits).
local TOLERANCE = require('kluabench.kernels.check').ROUNDING_TOLERANCES

local TIMED = {
  forward = 'the forward pass (%s of q and k, in place)',
  backward = 'the backward pass given random upstream gradients for q and k (%s, in place)',
  full = 'the forward pass followed by the backward pass (%s then %s, or %s in one launch, in place)',
}

-- The variants: the kernel functions, the table they read as its model hands it (the point's shared state: llama4's
-- f32 freqs_cis pairs; rope's cos and sin in the model's dtype, as Hugging Face's LlamaRotaryEmbedding returns them)
-- and what records call them.
local VARIANTS = {
  llama4_rope = { fwd = 'llama4_fwd', bwd = 'llama4_bwd', full = 'llama4_fwd_bwd', floor = 'floor',
    floor_full = 'floor_fwd_bwd', reference = 'kb.rope llama4', table = 'freqs [seq, head_dim/2, 2] f32 (kb.rope.freqs)',
    shared = function(p) return kb.rope.freqs(p.seq, p.hidden // p.q_heads, { theta = THETA }) end },
  rope = { fwd = 'neox_fwd', bwd = 'neox_bwd', full = 'neox_fwd_bwd', floor = 'neox_floor',
    floor_full = 'neox_floor_fwd_bwd', reference = 'kb.rope neox',
    table = "cos, sin [1, seq, head_dim] in the model's dtype (kb.rope.cos_sin)", cos_sin = true,
    shared = function(p)
      local cos, sin = kb.rope.cos_sin(p.seq, p.hidden // p.q_heads, p.dtype, { theta = THETA })
      return { cos = cos, sin = sin }
    end },
}

-- The neox functions with the point's table {cos, sin} where the llama4 ones take freqs: fn(x, y, t, opts) ->
-- kb.rope.neox_*(x, y, t.cos, t.sin, opts), and with two pairs of tensors.
local function spread2(fn) return function(a, b, t, o) return fn(a, b, t.cos, t.sin, o) end end
local function spread4(fn) return function(a, b, c, d, t, o) return fn(a, b, c, d, t.cos, t.sin, o) end end

-- The Python peers (docs/KERNELS.md, Python providers): Hugging Face's eager function, Liger-Kernel's and
-- torch.compile of Hugging Face's, as Liger's benchmarks call them (rope_providers.py beside this file), run by
-- kb.python on the engine's stream. GPU only: they time torch on the CUDA device.
local PEERS = { huggingface = true, liger = true, torch_compile = true }

-- The peers' module, loaded for a peer provider only (layers.LAZY): the seed run times the built-in kernels.
local function peers() return require 'kluabench.benchmarks.rope_peers' end

-- copy moves q's and k's bytes, not the table the workload counts: GB/s about 2.5 % high in bf16 (llama4_rope's f32
-- table; 1.2 % for rope's).
local function setup(p, provider)
  local d = p.hidden // p.q_heads
  if provider == 'copy' then
    local n = p.seq * (p.q_heads + p.kv_heads) * d
    return { src = kb.randn({ n }, p.dtype, SEEDS.q), dst = kb.empty({ n }, p.dtype) }
  end
  return {
    q = kb.randn({ 1, p.seq, p.q_heads, d }, p.dtype, SEEDS.q),
    k = kb.randn({ 1, p.seq, p.kv_heads, d }, p.dtype, SEEDS.k),
    dq = kb.randn({ 1, p.seq, p.q_heads, d }, p.dtype, SEEDS.dq),
    dk = kb.randn({ 1, p.seq, p.kv_heads, d }, p.dtype, SEEDS.dk),
  }
end

-- t itself when it is on the cpu, else a cpu copy (free it when it is not t).
local function on_cpu(t) return t.device == 'cpu' and t or t:to('cpu') end

-- A point's table (a tensor, or {cos, sin}) on the cpu, and the function that frees what that copied.
local function table_on_cpu(f)
  if type(f) ~= 'table' then
    local cf = on_cpu(f)
    return cf, function() if cf ~= f then cf:free() end end
  end
  local cf = { cos = on_cpu(f.cos), sin = on_cpu(f.sin) }
  return cf, function()
    for _, n in ipairs { 'cos', 'sin' } do if cf[n] ~= f[n] then cf[n]:free() end end
  end
end

-- got (any device) against want (cpu): max |diff| and rel_l2, or a wrong result.
local function compare(name, what, got, want, tol, provider, p)
  local got_cpu = on_cpu(got)
  local mad, rel = kb.max_abs_diff(got_cpu, want), kb.rel_l2(got_cpu, want)
  if got_cpu ~= got then got_cpu:free() end
  if not (mad <= tol.max_abs and rel <= tol.rel_l2) then
    suite.wrong_result(string.format('%s: WRONG RESULT: provider %s, %s of %s differs from '
      .. 'the cpu reference: max |diff| %.6g (allowed %.3g), rel_l2 %.6g (allowed %.3g); not timed',
      name, provider, what, p.id, mad, tol.max_abs, rel, tol.rel_l2))
  end
  return mad, rel
end

local function free(...)
  for i = 1, select('#', ...) do
    local t = select(i, ...)
    if t then t:free() end
  end
end

--- Liger-Kernel's RoPE benchmarks as harness declarations (kluabench.benchmarks.rope): "llama4_rope"
-- (kb.rope.llama4_*) or "rope" (kb.rope.neox_*); opts.summary replaces the --help summary.
-- @signature rope_benchmarks.declaration(variant [, opts]) -> decl
-- @section suite
-- @example
--   local decl = require("kluabench.benchmarks.rope").declaration("rope")
--   print(decl.name, #decl.axes)
function M.declaration(variant, o)
  args.check('rope_benchmarks.declaration', 1, variant, 'string', 'RoPE variant name ("llama4_rope" or "rope")')
  args.check('rope_benchmarks.declaration', 2, o, 'table|nil', 'table of options')
  local v = assert(VARIANTS[variant], 'unknown RoPE variant')
  local fwd, bwd, full = kb.rope[v.fwd], kb.rope[v.bwd], kb.rope[v.full]
  local floor, floor_full = kb.rope[v.floor], kb.rope[v.floor_full]
  if v.cos_sin then
    fwd, bwd, full, floor, floor_full = spread2(fwd), spread2(bwd), spread4(full), spread2(floor), spread4(floor_full)
  end
  local api = { fwd = 'kb.rope.' .. v.fwd, bwd = 'kb.rope.' .. v.bwd, full = 'kb.rope.' .. v.full }
  o = o or {}
  local device
  local function gpu_name()
    if not device then
      device = env.device_name(env.capture()) or kb.device_info().name
    end
    return device
  end

  -- The provider against the cpu reference on the same inputs for every pass the modes time.
  local function check(p, provider, t, modes)
    if PEERS[provider] then
      return peers().check({ variant = variant, tol = TOLERANCE[p.dtype], on_cpu = on_cpu, compare = compare, free = free,
        fwd = fwd, bwd = bwd, reference = v.reference, theta = THETA }, p, provider, t, modes)
    end
    if provider == 'copy' then
      t.dst:copy_(t.src)
      local mad = kb.max_abs_diff(t.dst, t.src)
      if mad ~= 0 then suite.wrong_result(variant .. ': WRONG RESULT: the copy of ' .. p.id .. ' differs by ' .. mad) end
      return { reference = 'the source buffer', passed = true, maxAbsDiff = 0, relL2 = 0,
        tolerance = { maxAbsDiff = 0, relL2 = 0 } }
    end
    if provider == 'floor' then
      -- the floor's outputs are copies of its inputs, bit for bit
      local got = { floor_full(t.q, t.k, t.dq, t.dk, p.shared) }
      for i, src in ipairs { t.q, t.k, t.dq, t.dk } do
        local mad = kb.max_abs_diff(got[i], src)
        if mad ~= 0 then suite.wrong_result(variant .. ': WRONG RESULT: the floor of ' .. p.id .. ' differs by ' .. mad) end
      end
      free(got[1], got[2], got[3], got[4])
      return { reference = 'the input tensors', passed = true, maxAbsDiff = 0, relL2 = 0,
        tolerance = { maxAbsDiff = 0, relL2 = 0 } }
    end
    local tol = TOLERANCE[p.dtype]
    local f = p.shared
    local cf, free_cf = table_on_cpu(f)
    local worst_abs, worst_rel = 0, 0
    local function pass(fn, a, b, names)
      -- on the cpu backend the inputs themselves (no copy: a copy of 268 MB took a second)
      local ca, cb = on_cpu(a), on_cpu(b)
      -- the cpu twin's fused path: bit for bit its reference path, and many times faster
      local got, want = { fn(a, b, f, { impl = provider }) }, { fn(ca, cb, cf) }
      for i = 1, 2 do
        local mad, rel = compare(variant, names[i], got[i], want[i], tol, provider, p)
        worst_abs, worst_rel = math.max(worst_abs, mad), math.max(worst_rel, rel)
      end
      free(got[1], got[2], want[1], want[2], ca ~= a and ca or nil, cb ~= b and cb or nil)
    end
    local need = {}
    for _, m in ipairs(modes) do need[m] = true end
    if need.forward or need.full then pass(fwd, t.q, t.k, { 'forward q_out', 'forward k_out' }) end
    if need.backward or need.full then pass(bwd, t.dq, t.dk, { 'backward dq', 'backward dk' }) end
    if need.full and provider == 'fused' then
      -- the one-launch full writes the bits of the fused forward and backward, checked above
      local got = { full(t.q, t.k, t.dq, t.dk, f) }
      local want = { fwd(t.q, t.k, f) }
      want[3], want[4] = bwd(t.dq, t.dk, f)
      for i, name in ipairs { 'full q_out', 'full k_out', 'full dq', 'full dk' } do
        local mad = kb.max_abs_diff(got[i], want[i])
        if mad ~= 0 then
          error(string.format('%s: WRONG RESULT: provider fused, %s of %s differs from the fused '
            .. 'forward and backward by %.6g; not timed', variant, name, p.id, mad), 0)
        end
      end
      free(got[1], got[2], got[3], got[4], want[1], want[2], want[3], want[4])
    end
    free_cf()
    return {
      reference = v.reference .. ' impl=fused on the cpu backend (bit for bit its impl=reference), same inputs',
      passed = true, maxAbsDiff = worst_abs, relL2 = worst_rel,
      tolerance = { maxAbsDiff = tol.max_abs, relL2 = tol.rel_l2 },
    }
  end

  -- The timed function: fn() works on t, fn(set) on a rotated input set.
  local function run(p, provider, mode, t)
    if PEERS[provider] then -- the peer's own copies of the set's inputs, in its state; its results stay in Python
      local step = peers().fn('run_' .. mode)
      return function(set) set = set or t; step(set.state) end
    end
    if provider == 'copy' then
      local twice = mode == 'full'
      return function(set)
        set = set or t
        set.dst:copy_(set.src)
        if twice then set.src:copy_(set.dst) end
      end
    end
    local f = p.shared
    if provider == 'floor' then
      local floor_fwd_bwd, opts = floor_full, { inplace = true }
      if mode == 'forward' then
        return function(set) set = set or t; floor(set.q, set.k, f, opts) end
      elseif mode == 'backward' then
        return function(set) set = set or t; floor(set.dq, set.dk, f, opts) end
      end
      return function(set) set = set or t; floor_fwd_bwd(set.q, set.k, set.dq, set.dk, f, opts) end
    end
    local opts = { impl = provider, inplace = true }
    if mode == 'forward' then
      return function(set) set = set or t; fwd(set.q, set.k, f, opts) end
    elseif mode == 'backward' then
      return function(set) set = set or t; bwd(set.dq, set.dk, f, opts) end
    elseif provider == 'fused' then
      return function(set) set = set or t; full(set.q, set.k, set.dq, set.dk, f, opts) end
    end
    return function(set)
      set = set or t
      fwd(set.q, set.k, f, opts)
      bwd(set.dq, set.dk, f, opts)
    end
  end

  -- What one timed call leaves in the inputs, for the audits: fused and reference are each other's (bit for bit the
  -- same), out of place from the snapshot t; floor and copy move bytes unchanged.
  local OTHER = { fused = 'reference', reference = 'fused' }
  local function reference(p, provider, mode, t)
    -- a peer writes no tensor of the inputs: it works on its state's copies, and its results come back from
    -- Python (the check compares them); every input must be as it was
    if PEERS[provider] then return {} end
    if provider == 'copy' then
      return mode == 'full' and { dst = t.src:clone(), src = t.src:clone() } or { dst = t.src:clone() }
    end
    if provider == 'floor' then
      local out = { q = t.q:clone(), k = t.k:clone() }
      if mode == 'backward' then out = { dq = t.dq:clone(), dk = t.dk:clone() } end
      if mode == 'full' then out.dq, out.dk = t.dq:clone(), t.dk:clone() end
      return out
    end
    local f, opts = p.shared, { impl = OTHER[provider] }
    local out = {}
    if mode == 'forward' or mode == 'full' then out.q, out.k = fwd(t.q, t.k, f, opts) end
    if mode == 'backward' or mode == 'full' then out.dq, out.dk = bwd(t.dq, t.dk, f, opts) end
    return out
  end

  return {
    name = variant,
    summary = o.summary,
    axes = {
      { name = 'hidden', default = 512, max = 1 << 20, help = 'hidden size; head_dim = hidden / q-heads' },
      { name = 'seq', default = 2048, max = 1 << 24, help = 'sequence length' },
      { name = 'q_heads', default = 32, max = 4096, help = 'query heads' },
      { name = 'kv_heads', default = 8, max = 4096, help = 'key/value heads' },
    },
    sweeps = {
      { name = 'hidden', axis = 'hidden', values = { 512, 2048, 8192 }, fixed = { seq = 2048 } },
      { name = 'seq', axis = 'seq', values = { 1024, 2048, 4096, 8192, 16384 }, fixed = { hidden = 8192 } },
    },
    dtypes = { 'bf16', 'f16', 'f32', 'f64' },
    modes = { 'forward', 'backward', 'full' }, mode = 'backward',
    providers = { 'fused', 'reference', 'floor', 'copy', 'huggingface', 'liger', 'torch_compile' },
    provider = 'fused',
    provider_help = '                      fused: one kernel for q and k (full: one launch of the forward\n'
      .. '                      and the backward); reference: PyTorch eager\'s op sequence;\n'
      .. '                      floor: one launch that moves the fused call\'s bytes (q and k\n'
      .. '                      copied, the (cos, sin) table read) and computes nothing, the\n'
      .. '                      yardstick of fused; copy: a device-to-device copy of q\'s and\n'
      .. '                      k\'s bytes (twice for full), without the table;\n'
      .. '                      huggingface, liger, torch_compile: the Python peers, run by\n'
      .. '                      kb.python on the engine\'s stream as Liger\'s benchmark calls\n'
      .. '                      them: Hugging Face\'s eager function, Liger-Kernel\'s, and\n'
      .. '                      torch.compile of Hugging Face\'s (GPU only; a peer whose\n'
      .. '                      Python, torch, transformers or liger_kernel is missing is\n'
      .. '                      skipped with a line saying so; KLUABENCH_PYTHON names the\n'
      .. '                      interpreter, python3 on PATH by default)',
    notes = 'Timed functions run in place (inplace = true), so no allocation falls inside the\n'
      .. 'timed region; the traffic is the same as out of place. On the cpu backend the\n'
      .. 'times are CPU times and the records say so (timer host_monotonic). The table\n'
      .. 'and every record carry GB/s (the workload\'s minimal bytes over the median) and,\n'
      .. 'once scripts/ceilings.lua has cached this device\'s copy ceiling, % of it.',
    validate = function(p)
      if p.hidden % p.q_heads ~= 0 or (p.hidden // p.q_heads) % 2 ~= 0 then
        return string.format('hidden %d is not a multiple of 2 x q-heads (%d): head_dim must be an even integer',
          p.hidden, p.q_heads)
      end
      -- the largest tensor must be addressable with room to spare
      if p.seq * p.q_heads * (p.hidden // p.q_heads) > (1 << 40) then
        return string.format('seq %d x hidden %d is too large to allocate', p.seq, p.hidden)
      end
    end,
    -- the table every provider and mode reads (VARIANTS); no part of the graph mode's rotation
    shared = v.shared,
    -- a peer's state (kb.python: copies of the inputs, the table, the forward's graph) rides with its inputs;
    -- the harness frees it with them
    setup = function(p, provider)
      local t = setup(p, provider)
      if PEERS[provider] then
        t.state = peers().fn('make', { returns = 'object' })(variant, provider, t.q, t.k, t.dq, t.dk, THETA)
      end
      return t
    end,
    check = check,
    run = run,
    -- a peer where its Python and libraries are (nil), else why not
    available = function(provider) return PEERS[provider] and peers().available(variant, provider) or nil end,
    -- kluabench's own providers run its kernels (kernels/rope.lua); a peer is the library function it calls, with
    -- rope_providers.py's digest and the versions of Python, torch, transformers (liger_kernel, triton)
    implementation = function(p, provider)
      return PEERS[provider] and peers().implementation(variant, provider) or 'builtin'
    end,
    reference = reference,
    -- bytes and flops: the kernel's cost model (kernels/rope.lua), whatever the provider does
    record = function(p, provider, mode)
      local x = kernels.kernel(variant).kernelindex.liger_x[p.x] or { p.x, p.x }
      return {
        -- the same words for every provider: the protocol says what is timed, not whose code
        timed = string.format(TIMED[mode], mode == 'backward' and api.bwd or api.fwd, api.bwd, api.full),
        execution = { seeds = SEEDS, ropeTheta = THETA, batch = 1, headDim = p.hidden // p.q_heads,
          inplace = not PEERS[provider], ropeTable = v.table },
        annotations = { liger_x_name = x[1], liger_x_label = x[2],
          liger_gpu_name = gpu_name() },
      }
    end,
  }
end

return M
