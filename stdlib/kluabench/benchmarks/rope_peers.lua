--- The Python peers of the RoPE benchmarks (docs/KERNELS.md, Python providers): Hugging Face's eager function,
-- Liger-Kernel's and torch.compile of Hugging Face's, as Liger's benchmarks call them (rope_providers.py beside this
-- file), run by kb.python on the engine's stream; benchmarks/rope.lua loads it for a peer provider only.
local kb = require 'kluabench.core'

local M = {}

-- The callables of rope_providers.py (opts: kb.python's), made once.
local module, fns = nil, {}
function M.fn(name, opts)
  local key = name .. (opts and opts.returns or '')
  if not fns[key] then
    if not module then
      local here = assert(package.searchpath('kluabench.benchmarks.rope_peers', package.path))
      module = kb.python.load((here:gsub('rope_peers%.lua$', 'rope_providers.py')))
    end
    fns[key] = module:fn(name, opts)
  end
  return fns[key]
end

-- nil where the peer can run here, else why not.
function M.available(variant, provider)
  if kb.backend() ~= 'cuda' then
    return 'a Python peer times torch on a CUDA device; the ' .. kb.backend() .. ' backend is selected'
  end
  local ok, why = kb.python.available()
  if not ok then return why end
  local loaded, unavailable = pcall(function() return M.fn('unavailable')(variant, provider) end)
  if not loaded then return tostring(unavailable) end
  return unavailable
end

-- The implementation of a peer: rope_providers.py's info with the versions of the packages it imports.
function M.implementation(variant, provider)
  local info = M.fn('make', { returns = 'object' }):info({ M.fn('packages')(provider) })
  info.symbol = M.fn('describe')(variant, provider)
  return info
end

-- A Python peer against the cpu reference on the same inputs: its forward outputs and gradients, computed on
-- copies of the inputs, for every pass the modes time. e: the benchmark's helpers and constants.
function M.check(e, p, provider, t, modes)
  local tol = e.tol
  local got = { M.fn('outputs')(e.variant, provider, t.q, t.k, t.dq, t.dk, e.theta) }
  local cf = e.on_cpu(p.shared)
  local worst_abs, worst_rel = 0, 0
  local need = {}
  for _, m in ipairs(modes) do need[m] = true end
  local function pass(fn, a, b, first, names)
    local ca, cb = e.on_cpu(a), e.on_cpu(b)
    local want = { fn(ca, cb, cf) }
    for i = 1, 2 do
      local mad, rel = e.compare(e.variant, names[i], got[first + i - 1], want[i], tol, provider, p)
      worst_abs, worst_rel = math.max(worst_abs, mad), math.max(worst_rel, rel)
    end
    e.free(want[1], want[2], ca ~= a and ca or nil, cb ~= b and cb or nil)
  end
  if need.forward or need.full then pass(e.fwd, t.q, t.k, 1, { 'forward q_out', 'forward k_out' }) end
  if need.backward or need.full then pass(e.bwd, t.dq, t.dk, 3, { 'backward dq', 'backward dk' }) end
  e.free(got[1], got[2], got[3], got[4], cf ~= p.shared and cf or nil)
  return {
    reference = e.reference .. ' impl=fused on the cpu backend, same inputs (the peer\'s on copies of them, its '
      .. 'gradients by torch.autograd.grad)',
    passed = true, maxAbsDiff = worst_abs, relL2 = worst_rel,
    tolerance = { maxAbsDiff = tol.max_abs, relL2 = tol.rel_l2 },
  }
end

return M
