-- Honest user kernels of every route (a C plugin, NVRTC source, a Triton cubin) as one harness benchmark, so that each runs through every protocol audited and must never be flagged (docs/TRUST.md).
--
--   build/kluabench bench/trust_honest.lua --provider all --protocol cold
--   TRITON_DIR=build/triton_rope build/kluabench bench/trust_honest.lua --provider triton_rope
--
-- Providers: plugin_scale_add (examples/plugin/scale_add.c, .cu: out = 1.5 x
-- + y, f32), nvrtc_copy (bench/user_copy.lua's grid-stride float4 copy, f32),
-- nvrtc_rope (examples/user_kernel_rope.lua's Llama 4 RoPE kernel, bf16,
-- compiled from that file's source) and triton_rope (the cubin that
-- bench/triton_rope.py dumps into $TRITON_DIR, bf16). The NVRTC and Triton
-- ones need the cuda backend; the plugin runs its CPU twin on cpu. Each
-- provider uses its own dtype; --dtype names the declared one for records.
local kb = require 'kluabench'
local suite = require 'kluabench.suite'
local check = require 'kluabench.kernels.check'

local HERE = (debug.getinfo(1, 'S').source:match('^@(.*)/[^/]*$')) or 'bench'
local ROOT = HERE .. '/..'
local BUILD = kb.executable():match('^(.*)/[^/]*$')
local DIM, Q_HEADS, KV_HEADS = 128, 32, 8

local COPY_SOURCE = [[
extern "C" __global__ void copy_stride(float4 *__restrict__ dst, const float4 *__restrict__ src, long long n4) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n4; i += (long long)gridDim.x * blockDim.x)
    dst[i] = src[i];
}
]]

local function slurp(path)
  local f = assert(io.open(path, 'rb'))
  local s = f:read('a')
  f:close()
  return s
end

local function needs_cuda(provider)
  if kb.backend() ~= 'cuda' then error("provider '" .. provider .. "' needs the cuda backend", 0) end
end

local cache = {}
local function once(name, make)
  if cache[name] == nil then cache[name] = make() end
  return cache[name]
end

-- The rope kernels: the NVRTC one of examples/user_kernel_rope.lua, and Triton's.
local function nvrtc_rope()
  return once('nvrtc_rope', function()
    local src = slurp(ROOT .. '/examples/user_kernel_rope.lua'):match('local SOURCE = %[%[\n(.-)%]%]')
    local m = kb.cuda.compile(assert(src, 'no SOURCE in examples/user_kernel_rope.lua'), { name = 'user_llama4_rope.cu' })
    return m:kernel('user_llama4_rope', 'ptr, ptr, ptr, i64, i32, i32, i32')
  end)
end

local function triton_rope()
  return once('triton_rope', function()
    local dir = os.getenv('TRITON_DIR')
    if not dir or dir == '' then error('triton_rope: set TRITON_DIR to the folder bench/triton_rope.py wrote', 0) end
    local py = kb.jcs.decode(slurp(dir .. '/python.json'))
    local ok, tk = pcall(kb.triton.load, dir .. '/' .. py.kernel .. '.json', 'ptr, ptr, ptr, i32, i32, i32')
    if not ok then tk = kb.triton.load(dir .. '/' .. py.kernel .. '.json') end
    return { tk = tk, block_rows = py.block_rows, theta = 500000 }
  end)
end

local ROPE = { nvrtc_rope = true, triton_rope = true }

-- The timed function of a provider on inputs t (fn(set) on a rotated set in graph mode).
local function timed(p, provider, t)
  if provider == 'plugin_scale_add' then
    local k = once('plugin', function() return kb.plugin.load(BUILD .. '/plugins/libscale_add.so'):kernel('scale_add') end)
    return function(s) s = s or t; k(s.out, s.x, s.y, 1.5) end
  end
  needs_cuda(provider)
  if provider == 'nvrtc_copy' then
    local k = once('copy', function()
      return kb.cuda.compile(COPY_SOURCE, { name = 'copy.cu' }):kernel('copy_stride', 'ptr, ptr, i64')
    end)
    return function(s)
      s = s or t
      local n4 = s.src:numel() // 4
      k:launch { grid = math.min((n4 + 255) // 256, 65535 * 8), block = 256, args = { s.dst, s.src, n4 } }
    end
  end
  if provider == 'nvrtc_rope' then
    local k, f = nvrtc_rope(), p.shared.f
    local function one(x, out)
      local rows, half = x:numel() // DIM, DIM // 2
      k:launch { grid = (rows * half + 255) // 256, block = 256, args = { out, x, f, rows, p.seq, x.shape[3], half } }
    end
    return function(s) s = s or t; one(s.q, s.qo); one(s.k, s.ko) end
  end
  local tr, f = triton_rope(), p.shared.f_triton
  local function one(x, out, heads)
    local rows = x:numel() // DIM
    tr.tk:launch((rows + tr.block_rows - 1) // tr.block_rows, { x, out, f, rows, p.seq, heads })
  end
  return function(s) s = s or t; one(s.q, s.qo, Q_HEADS); one(s.k, s.ko, KV_HEADS) end
end

-- What one call leaves in the tensors it writes, computed from inputs t.
local function reference(p, provider, t)
  if ROPE[provider] then
    local qo, ko = kb.rope.llama4_fwd(t.q, t.k, provider == 'triton_rope' and p.shared.f_triton or p.shared.f)
    return { qo = qo, ko = ko }
  end
  if provider == 'nvrtc_copy' then return { dst = t.src:clone() } end
  return { out = t.x:cast('f64') * 1.5 + t.y:cast('f64') }
end

suite.main {
  name = 'trust_honest',
  summary = 'Honest user kernels of every route, timed and audited: none may be flagged.',
  axes = { { name = 'seq', default = 2048, max = 1 << 20, help = 'rows of 8192 elements (rope: the sequence)' } },
  dtypes = { 'bf16', 'f32' },
  modes = { 'forward' },
  providers = { 'plugin_scale_add', 'nvrtc_copy', 'nvrtc_rope', 'triton_rope' },
  provider = 'plugin_scale_add',
  setup = function(p, provider)
    if ROPE[provider] then
      local q = kb.randn({ 1, p.seq, Q_HEADS, DIM }, 'bf16', 1)
      local k = kb.randn({ 1, p.seq, KV_HEADS, DIM }, 'bf16', 2)
      return { q = q, k = k, qo = kb.empty(q.shape, 'bf16'), ko = kb.empty(k.shape, 'bf16') }
    end
    local n = p.seq * 8192
    if provider == 'nvrtc_copy' then return { src = kb.randn({ n }, 'f32', 1), dst = kb.empty({ n }, 'f32') } end
    return { x = kb.randn({ n }, 'f32', 1), y = kb.randn({ n }, 'f32', 2), out = kb.empty({ n }, 'f32') }
  end,
  shared = function(p)
    return { f = kb.rope.freqs(p.seq, DIM), f_triton = kb.rope.freqs(p.seq, DIM, { theta = 500000 }) }
  end,
  run = function(p, provider, mode, t) return timed(p, provider, t) end,
  reference = function(p, provider, mode, t) return reference(p, provider, t) end,
  -- the reference from a snapshot, then the kernel, compared with the tolerances of the output's dtype
  check = function(p, provider, t)
    local snap = {}
    for k, v in pairs(t) do snap[k] = v:clone() end
    local want = reference(p, provider, snap)
    timed(p, provider, t)()
    local worst = 0
    for name, w in pairs(want) do
      local ok, r = check.compare(t[name], w, { name = name })
      if not ok then suite.wrong_result('trust_honest: ' .. provider .. ': ' .. r.message) end
      worst = math.max(worst, r.max_abs)
    end
    for _, v in pairs(snap) do v:free() end
    for _, v in pairs(want) do v:free() end
    return { reference = 'kb.rope.llama4_fwd, a copy, or tensor arithmetic in f64', passed = true, maxAbsDiff = worst }
  end,
}
