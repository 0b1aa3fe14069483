-- The honest corpus as one benchmark: kernels a new user brings, which every protocol must pass with no finding.
--
--   kluabench tests/honest/bench.lua --provider softmax,layernorm --dtype bf16 --protocol cold
--
-- The honest half of the exploit corpus (tests/exploits/, docs/TRUST.md).
-- Each provider is one operation on rows x cols inputs (row-major), written
-- as real kernels are: loaded in the dtype, accumulated in f32, stored
-- rounded to the dtype. softmax, layernorm, rmsnorm, sum, matmul and scan
-- run the plugin honest_ops (build/honest/libhonest_ops.so, from
-- tests/honest/honest.cu): its CPU twin on the cpu backend, its CUDA entry
-- (tests/honest/ops.cuh built by nvcc) on cuda. softmax_nvrtc ... scan_nvrtc
-- run the same ops.cuh kernels compiled by NVRTC at run time (cuda only).
-- The reference is the plugin's float64 one (<op>_ref); the check compares
-- with the dtype's default tolerances, and nothing here declares a precision
-- or a reduction length: the harness's defaults must hold.
local kb = require 'kluabench'
local suite = require 'kluabench.suite'
local check = require 'kluabench.kernels.check'

local HERE = (debug.getinfo(1, 'S').source:match('^@(.*)/[^/]*$')) or 'tests/honest'
local BUILD = kb.executable():match('^(.*)/[^/]*$')

local OPS = { 'softmax', 'layernorm', 'rmsnorm', 'sum', 'matmul', 'scan' }
local PROVIDERS = {}
for i, op in ipairs(OPS) do PROVIDERS[i], PROVIDERS[#OPS + i] = op, op .. '_nvrtc' end
local SIZE = { f32 = 4, bf16 = 2, f16 = 2 }

local function op_of(provider) return (provider:gsub('_nvrtc$', '')) end

local lib
local function plugin()
  lib = lib or kb.plugin.load(BUILD .. '/honest/libhonest_ops.so')
  return lib
end

local function read(path)
  local f = assert(io.open(path, 'rb'))
  local s = f:read('a')
  f:close()
  return s
end

-- ops.cuh compiled by NVRTC, once, with its launch shapes read from its text.
local nvrtc
local function module()
  if nvrtc then return nvrtc end
  local src = read(HERE .. '/ops.cuh')
  local function define(name) return assert(math.tointeger(tonumber(src:match('#define ' .. name .. ' (%d+)'))), name) end
  nvrtc = { m = kb.cuda.compile(src, { name = 'ops.cuh' }), block = define('HONEST_BLOCK'),
    tile = define('HONEST_TILE'), kernels = {} }
  return nvrtc
end

-- The NVRTC kernel of op and dtype, and the call that launches it on t.
local SIGNATURES = {
  softmax = 'ptr, ptr, i64, i64', sum = 'ptr, ptr, i64, i64', scan = 'ptr, ptr, i64, i64',
  rmsnorm = 'ptr, ptr, ptr, i64, i64', layernorm = 'ptr, ptr, ptr, ptr, i64, i64',
  matmul = 'ptr, ptr, ptr, i64, i64, i64',
}
local function nvrtc_call(provider, dtype)
  if kb.backend() ~= 'cuda' then
    error(string.format("provider '%s' is ops.cuh compiled by NVRTC: it needs the cuda backend", provider), 0)
  end
  local op, n = op_of(provider), module()
  local k = n.m:kernel(op .. '_' .. dtype, SIGNATURES[op])
  if op == 'matmul' then
    return function(t)
      local m, kk, cols = t.a.shape[1], t.a.shape[2], t.b.shape[2]
      k:launch { grid = { (cols + n.tile - 1) // n.tile, math.min((m + n.tile - 1) // n.tile, 65535) },
        block = { n.tile, n.tile }, args = { t.out, t.a, t.b, m, kk, cols } }
    end, k
  end
  return function(t)
    local rows, cols = t.x.shape[1], t.x.shape[2]
    local args
    if op == 'layernorm' then args = { t.out, t.x, t.w, t.b, rows, cols }
    elseif op == 'rmsnorm' then args = { t.out, t.x, t.w, rows, cols }
    else args = { t.out, t.x, rows, cols } end
    k:launch { grid = math.min(rows, 1 << 20), block = n.block, args = args }
  end, k
end

-- The plugin's kernel of op, called on t.
local function plugin_call(op)
  local k = plugin():kernel(op)
  if op == 'layernorm' then return function(t) k(t.out, t.x, t.w, t.b) end, k end
  if op == 'rmsnorm' then return function(t) k(t.out, t.x, t.w) end, k end
  if op == 'matmul' then return function(t) k(t.out, t.a, t.b) end, k end
  return function(t) k(t.out, t.x) end, k
end

-- fn(t) of each provider and dtype, made once; and the kernel it runs.
local calls, kernels = {}, {}
local function call(provider, dtype)
  local key = provider .. ':' .. dtype
  if not calls[key] then
    if provider:match('_nvrtc$') then
      calls[key], kernels[key] = nvrtc_call(provider, dtype)
    else
      calls[key], kernels[key] = plugin_call(provider)
    end
  end
  return calls[key]
end

-- The float64 reference of op on t's inputs, on out's device.
local function reference(op, t)
  local want = kb.empty(t.out.shape, 'f64', t.out.device)
  local ref = plugin():kernel(op .. '_ref')
  if op == 'layernorm' then ref(want, t.x, t.w, t.b)
  elseif op == 'rmsnorm' then ref(want, t.x, t.w)
  elseif op == 'matmul' then ref(want, t.a, t.b)
  else ref(want, t.x) end
  return want
end

-- A tensor of the dtype near `centre`: centre + scale * randn.
local function near(shape, dtype, seed, centre, scale)
  local f = kb.randn(shape, 'f32', seed):mul_(scale):add_(centre)
  local t = f:cast(dtype)
  f:free()
  return t
end

suite.main {
  name = 'honest_ops',
  summary = 'Honest softmax, layernorm, RMSNorm, row sum, matmul and scan (tests/honest/): every protocol must pass them.',
  axes = {
    { name = 'rows', default = 256, max = 1 << 20, help = 'rows of x (and of out)' },
    { name = 'cols', default = 1024, max = 1 << 20, help = 'columns of x: the reduction length (k of the matmul)' },
  },
  dtypes = { 'f32', 'bf16', 'f16' },
  modes = { 'forward' },
  providers = PROVIDERS,
  provider = 'softmax',
  setup = function(p, provider)
    local op, r, c, d = op_of(provider), p.rows, p.cols, p.dtype
    if op == 'matmul' then
      return { a = kb.randn({ r, c }, d, 1), b = kb.randn({ c, c }, d, 2), out = kb.empty({ r, c }, d) }
    end
    local t = { x = kb.randn({ r, c }, d, 1), out = kb.empty(op == 'sum' and { r } or { r, c }, d) }
    if op == 'layernorm' or op == 'rmsnorm' then t.w = near({ c }, d, 2, 1, 0.1) end
    if op == 'layernorm' then t.b = near({ c }, d, 3, 0, 0.1) end
    return t
  end,
  run = function(p, provider, mode, t)
    local fn = call(provider, p.dtype)
    return function(set) fn(set or t) end
  end,
  -- a new user's check: the kernel, then the float64 reference, the dtype's default tolerances
  check = function(p, provider, t)
    local op = op_of(provider)
    call(provider, p.dtype)(t)
    local want = reference(op, t)
    local ok, r = check.compare(t.out, want, { name = 'out' })
    want:free()
    if not ok then suite.wrong_result('honest_ops: ' .. provider .. ': ' .. r.message) end
    return { reference = 'the plugin\'s float64 ' .. op .. '_ref', passed = true, maxAbsDiff = r.max_abs }
  end,
  reference = function(p, provider, mode, t) return { out = reference(op_of(provider), t) } end,
  implementation = function(p, provider)
    if provider:match('_nvrtc$') and kb.backend() ~= 'cuda' then return nil end
    call(provider, p.dtype)
    return kernels[provider .. ':' .. p.dtype]:info()
  end,
  -- The harness asks a point's cost without the provider (cost(point, mode)), and the providers
  -- here are different operations: so the least any of them moves and computes, x read once and
  -- `rows` elements written (the row sum), one add per element of x. Every provider moves at
  -- least this, so a rate judged from it is never overstated (and never implausible by our count).
  cost = function(p)
    local s, r, c = SIZE[p.dtype], p.rows, p.cols
    return s * (r * c + r), r * c
  end,
}
