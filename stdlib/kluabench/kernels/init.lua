--- The kernel registry: what records and `kluabench list` know of each kernel, from the descriptor of each family the
-- engine names (kluabench.kernels.<family>: {binding, doc, kernels}; docs/ADDING_A_KERNEL.md).
local M = {}
local args = require 'kluabench.util.args'

--- Record kernel name -> {title, sources, cost, family} (record.KERNELS is this table).
M.KERNELS = {}
--- The registered families in order: {family, binding, kernels, doc}.
M.FAMILIES = {}

local function core() return require 'kluabench.core' end

--- Adds a family's descriptor (its kernels to records, kb[binding]'s functions to `kluabench list`); its entry.
-- @signature kernels.register(family, {binding = name | false, kernels = {...}})
-- @example kernels.register("mine", {binding = false, kernels = {my_op = {title = "My op"}}})
function M.register(family, d)
  if type(family) ~= 'string' or family == '' then
    error("bad argument #1 to 'register' (family name expected, got " .. type(family) .. ')', 2)
  end
  args.check('register', 2, d, 'table', 'descriptor table')
  local binding = d.binding
  if binding == nil then binding = family end
  local entry = { family = family, binding = binding or nil, kernels = d.kernels or {}, doc = d.doc }
  for name, k in pairs(entry.kernels) do
    k.family, M.KERNELS[name] = family, k
  end
  M.FAMILIES[#M.FAMILIES + 1] = entry
  return entry
end

--- What records know about a kernel: title, sources, cost(parameters, dtype, operation) -> bytes, flops of one call.
-- @signature kernels.kernel(name) -> {title, sources, cost, family} | nil
-- @example
--   print(kernels.kernel("llama4_rope").cost({hidden = 4096, seq = 2048, q_heads = 32, kv_heads = 8}, "bf16", "forward"))
function M.kernel(name)
  args.check('kernels.kernel', 1, name, 'string', 'kernel name')
  return M.KERNELS[name]
end

--- A kernel's title for people; the name when none is known.
-- @signature kernels.title(name) -> text
-- @example print(kernels.title("llama4_rope"))
function M.title(name)
  args.check('kernels.title', 1, name, 'string', 'kernel name')
  local k = M.KERNELS[name]
  return k and k.title or name
end

--- The Lua functions of every registered family with a binding, sorted by name.
-- @signature kernels.functions(kb) -> {{name, family}, ...}
-- @example for _, f in ipairs(kernels.functions(kb)) do print(f.name) end
function M.functions(kb)
  args.check('kernels.functions', 1, kb, 'table', 'the kluabench module')
  local out = {}
  for _, f in ipairs(M.FAMILIES) do
    local t = f.binding and kb[f.binding]
    for name, fn in pairs(type(t) == 'table' and t or {}) do
      if type(fn) == 'function' and type(name) == 'string' then
        out[#out + 1] = { name = 'kb.' .. f.binding .. '.' .. name, family = f.family }
      end
    end
  end
  table.sort(out, function(a, b) return a.name < b.name end)
  return out
end

-- The engine's families (one without a descriptor file still lists its functions).
local ok, k = pcall(core)
local families = ok and type(k) == 'table' and type(k.builtin_kernels) == 'function' and k.builtin_kernels() or {}
for _, family in ipairs(families) do
  local modname = 'kluabench.kernels.' .. family
  M.register(family, package.searchpath(modname, package.path) and require(modname) or {})
end

return M
