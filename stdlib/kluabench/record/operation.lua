-- OperationSpec and WorkloadCase documents, built as kernelindex's Liger importer builds them, so that a
-- shared workload lands on its digest. An operation description (a declaration's `operation`): name, family,
-- title, description, source_url, inputs and outputs ({name, shape = {1, "seq", ...}, dtype = "cfg" (the
-- workload's) or a token}, or {name, scalar = dtype}), derived ({head_dim = "hidden // q_heads"}), axis_order,
-- mutation, determinism, correctness. A binding: {axes, dtype (a kernelindex token) [, tensors]}.
local args = require 'kluabench.util.args'
local json = require 'kluabench.util.json'
local names = require 'kluabench.record.names'

local M = {}

M.API_VERSION = 'kernelindex.dev/v1alpha1'

-- kluabench dtype names -> kernelindex's tokens, and back (names': workload slugs use them too).
M.DTYPE_TOKEN, M.DTYPE_NAME = names.DTYPE_TOKEN, names.DTYPE_NAME

-- The kernelindex dtype token of a dtype (kluabench's, torch's or already a token).
function M.dtype_token(dtype)
  args.check('dtype_token', 1, dtype, 'string', 'dtype string')
  local ours = names.dtype_name(dtype)
  return M.DTYPE_TOKEN[ours] or ours
end

-- Evaluates a derived-axis expression (integers, axis names, + - * % //, parentheses) with the axes bound.
function M.evaluate(expression, bindings)
  args.check('evaluate', 1, expression, 'string', 'expression string')
  local tokens, pos, i = {}, 1, 1
  while i <= #expression do
    local c = expression:sub(i, i)
    if c:match('%s') then
      i = i + 1
    elseif expression:sub(i, i + 1) == '//' then
      tokens[#tokens + 1], i = '//', i + 2
    elseif c:match('[%+%-%*%%%(%)]') then
      tokens[#tokens + 1], i = c, i + 1
    elseif c:match('%d') then
      local num = expression:match('^%d+', i)
      tokens[#tokens + 1], i = num, i + #num
    elseif c:match('[a-z_]') then
      local id = expression:match('^[a-z_][a-z0-9_]*', i)
      tokens[#tokens + 1], i = id, i + #id
    else
      error(string.format("evaluate: unexpected character %q in '%s'", c, expression), 2)
    end
  end
  local function peek() return tokens[pos] end
  local function nxt() pos = pos + 1; return tokens[pos - 1] end
  local sum
  local function factor()
    local t = nxt()
    if t == nil then error("evaluate: unexpected end of '" .. expression .. "'", 0) end
    if t == '(' then
      local v = sum()
      if nxt() ~= ')' then error("evaluate: missing ')' in '" .. expression .. "'", 0) end
      return v
    end
    if t:match('^%d+$') then return math.tointeger(tonumber(t)) end
    local v = bindings[t]
    if v == nil then error("evaluate: unbound axis '" .. t .. "' in '" .. expression .. "'", 0) end
    return v
  end
  local function product()
    local v = factor()
    while peek() == '*' or peek() == '//' or peek() == '%' do
      local op, rhs = nxt(), factor()
      if op == '*' then v = v * rhs elseif op == '%' then v = math.fmod(v, rhs) else v = v // rhs end
    end
    return v
  end
  sum = function()
    local v = product()
    while peek() == '+' or peek() == '-' do
      local op, rhs = nxt(), product()
      v = op == '+' and v + rhs or v - rhs
    end
    return v
  end
  local v = sum()
  if pos <= #tokens then error("evaluate: trailing tokens in '" .. expression .. "'", 0) end
  return v
end

-- The case key: name..value of the axes sorted by name (binding.order's first), joined by "-", dtype last.
function M.case_key(binding)
  if type(binding) ~= 'table' or type(binding.axes) ~= 'table' then
    error("bad argument #1 to 'case_key' (binding {axes, dtype [, order]} expected, got " .. type(binding) .. ')', 2)
  end
  if type(binding.dtype) ~= 'string' then
    error("bad argument #1 to 'case_key' (field 'dtype' must be a string, got " .. type(binding.dtype) .. ')', 2)
  end
  local parts = {}
  for i, k in ipairs(names.axis_order(binding.axes, binding.order)) do parts[i] = k .. names.format_value(binding.axes[k]) end
  parts[#parts + 1] = binding.dtype
  return table.concat(parts, '-')
end

-- The symbolic axes of the signature, inputs then outputs, derived ones left out.
local function signature_axes(op)
  local seen, out = {}, {}
  for _, side in ipairs { op.inputs, op.outputs } do
    for _, arg in ipairs(side) do
      for _, dim in ipairs(arg.shape or {}) do
        if type(dim) == 'string' and not (op.derived or {})[dim] and not seen[dim] then
          seen[dim], out[#out + 1] = true, dim
        end
      end
    end
  end
  return out
end

local function argument(entry)
  if entry.scalar then return { name = entry.name, scalar = { dtype = entry.scalar } } end
  return { name = entry.name, tensor = { shape = json.array(entry.shape),
    dtype = entry.dtype == 'cfg' and 'float' or entry.dtype } }
end

local function check_description(op, fname)
  if type(op) ~= 'table' then
    error(string.format("bad argument #1 to '%s' (operation description table expected, got %s)", fname, type(op)), 3)
  end
  for _, f in ipairs { 'name', 'family' } do
    if type(op[f]) ~= 'string' or op[f] == '' then
      error(string.format("bad argument #1 to '%s' (field '%s' must be a non-empty string)", fname, f), 3)
    end
  end
  for _, f in ipairs { 'inputs', 'outputs' } do
    if type(op[f]) ~= 'table' or #op[f] == 0 then
      error(string.format("bad argument #1 to '%s' (field '%s' must be a non-empty list)", fname, f), 3)
    end
  end
end

-- The OperationSpec document of an operation description.
function M.document(op)
  check_description(op, 'operation.document')
  local axes = {}
  for _, name in ipairs(signature_axes(op)) do axes[name] = { role = 'variable', type = 'integer' } end
  for name, expr in pairs(op.derived or {}) do axes[name] = { role = 'derived', type = 'integer', expression = expr } end
  local inputs, outputs = {}, {}
  for i, e in ipairs(op.inputs) do inputs[i] = argument(e) end
  for i, e in ipairs(op.outputs) do outputs[i] = argument(e) end
  local spec = {
    family = op.family, axes = json.object(axes), inputs = inputs, outputs = outputs,
    semantics = { mutation = op.mutation or 'none', determinism = op.determinism or 'unspecified',
      expression = op.expression },
  }
  local meta = { name = op.name, title = op.title, description = op.description,
    sourceRefs = op.source_url and { { url = op.source_url } } or nil }
  return { apiVersion = M.API_VERSION, kind = 'OperationSpec', metadata = meta, spec = spec }
end

-- Every axis value bound: the binding's axes and the derived ones.
local function bound_axes(op, binding)
  local b = {}
  for k, v in pairs(binding.axes) do b[k] = v end
  for name, expr in pairs(op.derived or {}) do b[name] = M.evaluate(expr, b) end
  return b
end

-- The WorkloadCase document of one binding of an operation whose OperationSpec has operation_digest.
function M.workload(op, operation_digest, binding)
  check_description(op, 'operation.workload')
  if type(operation_digest) ~= 'string' or not operation_digest:match('^sha256:%x+$') then
    error("bad argument #2 to 'operation.workload' (operation digest \"sha256:...\" expected)", 2)
  end
  if type(binding) ~= 'table' or type(binding.axes) ~= 'table' or type(binding.dtype) ~= 'string' then
    error("bad argument #3 to 'operation.workload' (binding {axes, dtype} expected)", 2)
  end
  local b, tensors = bound_axes(op, binding), {}
  for _, e in ipairs(op.inputs) do
    local given = binding.tensors and binding.tensors[e.name]
    if given then
      tensors[e.name] = { shape = json.array(given.shape), dtype = given.dtype }
    elseif not e.scalar then
      local shape = {}
      for i, dim in ipairs(e.shape) do
        local v = type(dim) == 'number' and dim or b[dim]
        if v == nil then error(string.format("operation.workload: unbound axis '%s' in %s", dim, op.name), 2) end
        shape[i] = v
      end
      tensors[e.name] = { shape = shape, dtype = e.dtype == 'cfg' and binding.dtype or e.dtype }
    end
  end
  local listed, title_axes = {}, {}
  for _, k in ipairs(op.axis_order or {}) do
    if binding.axes[k] ~= nil then listed[k], title_axes[#title_axes + 1] = true, k .. '=' .. binding.axes[k] end
  end
  local rest = {}
  for k in pairs(binding.axes) do if not listed[k] then rest[#rest + 1] = k end end
  table.sort(rest)
  for _, k in ipairs(rest) do title_axes[#title_axes + 1] = k .. '=' .. names.format_value(binding.axes[k]) end
  local spec = { operationSpecDigest = operation_digest, axes = json.object(binding.axes),
    tensors = json.object(tensors), scalars = binding.scalars,
    correctness = op.correctness or { comparator = 'not_asserted' } }
  return {
    apiVersion = M.API_VERSION, kind = 'WorkloadCase', spec = spec,
    metadata = { name = names.kebab(op.name .. '-' .. M.case_key(binding)),
      title = (op.title or op.name) .. ' · ' .. table.concat(title_axes, ', ') .. ' · ' .. binding.dtype },
  }
end

return M
