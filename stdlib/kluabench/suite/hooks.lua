--- The declaration's hooks as the harness calls them: what each returns is checked, and a wrong
-- value is an error naming the hook, where the script defines it, and the provider, mode and point
-- it was called for. Also the tensors the harness frees, and the wrong result a check raises.
local args = require 'kluabench.util.args'
local kernels = require 'kluabench.kernels'

local M = {}
---------------------------------------------------------------------------
-- Tensors the harness frees
---------------------------------------------------------------------------

function M.is_tensor(v)
  local mt = getmetatable(v)
  return type(mt) == 'table' and mt.__name == 'kluabench.Tensor'
end

-- Frees every tensor among the values of t that is not in keep.
function M.free_tensors(t, keep)
  if type(t) ~= 'table' then return end
  for _, v in pairs(t) do
    if M.is_tensor(v) and not keep[v] then v:free() end
  end
end

function M.tensor_set(t)
  local set = {}
  if M.is_tensor(t) then set[t] = true end
  if type(t) == 'table' then
    for _, v in pairs(t) do if M.is_tensor(v) then set[v] = true end end
  end
  return set
end

---------------------------------------------------------------------------
-- Calling the hooks: what each returns is checked, and a wrong value is an
-- error naming the hook, where the script defines it, and the provider, mode
-- and point it was called for
---------------------------------------------------------------------------

-- " (scale.lua:9)": where a hook function is defined, or ''.
function M.defined_at(fn)
  local info = type(fn) == 'function' and debug.getinfo(fn, 'S') or nil
  if not info or info.what == 'C' or (info.linedefined or 0) <= 0 then return '' end
  -- the script's path as it was given (short_src cuts a long one to 60 bytes)
  local src = info.source:sub(1, 1) == '@' and info.source:sub(2) or info.short_src
  return string.format(' (%s:%d)', args.printable(src, 300), info.linedefined)
end

local function finite(v) return type(v) == 'number' and v == v and v > -math.huge and v < math.huge end

-- A value as a message shows it: nil, NaN, the number -1, the string 'x', a table.
local function shown(v)
  if v == nil then return 'nil' end
  if type(v) == 'number' then
    if v ~= v then return 'NaN' end
    return 'the number ' .. (finite(v) and string.format('%.17g', v) or (v > 0 and 'inf' or '-inf'))
  end
  if type(v) == 'string' then return "the string '" .. args.printable(v, 60) .. "'" end
  if type(v) == 'boolean' then return tostring(v) end
  if M.is_tensor(v) then return 'a tensor' end
  return 'a ' .. type(v)
end

-- "provider 'good', mode 'forward', point n16-fp32" (the parts given).
local function call_site(p, provider, mode)
  local parts = {}
  if provider then parts[#parts + 1] = "provider '" .. provider .. "'" end
  if mode then parts[#parts + 1] = "mode '" .. mode .. "'" end
  if p then parts[#parts + 1] = 'point ' .. tostring(p.id) end
  return table.concat(parts, ', ')
end

-- Raises: the hook returned `got` (as field `what`, if given) where `expected` belongs.
function M.bad_return(d, hook, what, got, expected, p, provider, mode)
  if not expected:find(' expected', 1, true) then expected = expected .. ' expected' end
  error(string.format('the %s hook%s returned %s%s for %s (%s)', hook, M.defined_at(d[hook]), what and
    (what .. ' = ') or '', shown(got), call_site(p, provider, mode), expected), 0)
end

-- validate(point): nil or false when the point can run, else the message.
function M.call_validate(d, p)
  if not d.validate then return nil end
  local why = d.validate(p)
  if why == nil or why == false then return nil end
  if type(why) ~= 'string' then M.bad_return(d, 'validate', nil, why, 'nil, or a message saying why the point cannot run', p) end
  return why
end

-- shared(point): nil, a tensor or a table (what the harness frees after the point).
function M.call_shared(d, p)
  if not d.shared then return nil end
  local v = d.shared(p)
  if v ~= nil and type(v) ~= 'table' and not M.is_tensor(v) then
    M.bad_return(d, 'shared', nil, v, 'nil, a tensor or a table of per-point state', p)
  end
  return v
end

-- setup(point, provider): the table of inputs.
function M.call_setup(d, p, provider)
  local v = d.setup(p, provider)
  if type(v) ~= 'table' then M.bad_return(d, 'setup', nil, v, 'a table of inputs', p, provider) end
  return v
end

local function callable(v)
  if type(v) == 'function' then return true end
  local mt = getmetatable(v)
  return type(mt) == 'table' and type(mt.__call) == 'function'
end

-- run(point, provider, mode, inputs): the function to time.
function M.call_run(d, p, provider, mode, inputs)
  local fn = d.run(p, provider, mode, inputs)
  if not callable(fn) then M.bad_return(d, 'run', nil, fn, 'the function to time', p, provider, mode) end
  return fn
end

-- reference(point, provider, mode, snapshot): a table of tensors by name.
function M.call_reference(d, p, provider, mode, snapshot)
  local v = d.reference(p, provider, mode, snapshot)
  if type(v) ~= 'table' then
    M.bad_return(d, 'reference', nil, v, 'a table of tensors by the names of the inputs they are the result for', p,
      provider, mode)
  end
  for k, t in pairs(v) do
    if not M.is_tensor(t) then M.bad_return(d, 'reference', tostring(k), t, 'a tensor', p, provider, mode) end
  end
  return v
end

-- The check record's figures that records carry: finite and >= 0.
local CHECK_FIGURES = { 'maxAbsDiff', 'maxRelDiff', 'relL2', 'matchedRatio' }

-- The check record a check hook returned, checked: true (nothing to record)
-- or the table; raises for a wrong type or a figure that is not a finite
-- number >= 0 (the schema holds no NaN; a NaN difference measured nothing),
-- and says wrong for passed = false.
function M.checked_record(d, v, p, provider)
  if v == nil or v == true then return true end
  if type(v) ~= 'table' then
    M.bad_return(d, 'check', nil, v, 'nothing or a check record table expected; a wrong result raises kb.suite.wrong_result',
      p, provider)
  end
  for _, f in ipairs(CHECK_FIGURES) do
    local x = v[f]
    if x ~= nil and not (finite(x) and x >= 0 and (f ~= 'matchedRatio' or x <= 1)) then
      M.bad_return(d, 'check', f, x, f == 'matchedRatio' and 'a number from 0 to 1' or 'a finite number >= 0', p, provider)
    end
  end
  if v.passed ~= nil and type(v.passed) ~= 'boolean' then
    M.bad_return(d, 'check', 'passed', v.passed, 'true or false', p, provider)
  end
  if v.passed == false then
    M.wrong_result(string.format('the check hook%s returned passed = false for %s', M.defined_at(d.check),
      call_site(p, provider)))
  end
  return v
end

-- cost(point, mode): bytes and flops, each nil or a finite number >= 0
-- (provider: the one whose record needs them, for the message).
function M.call_cost(d, p, mode, provider)
  local bytes, flops = d.cost(p, mode)
  for _, f in ipairs { { 'bytes', bytes }, { 'flops', flops } } do
    if f[2] ~= nil and not (finite(f[2]) and f[2] >= 0) then
      M.bad_return(d, 'cost', f[1], f[2], 'nil or a finite number >= 0', p, provider, mode)
    end
  end
  return bytes, flops
end

-- record(point, provider, mode): nil or {timed = text, execution = table, annotations = table}.
function M.call_record(d, p, provider, mode)
  local v = d.record(p, provider, mode)
  if v == nil then return {} end
  if type(v) ~= 'table' then
    M.bad_return(d, 'record', nil, v, 'nil or a table {timed, execution, annotations}', p, provider, mode)
  end
  if v.timed ~= nil and type(v.timed) ~= 'string' then
    M.bad_return(d, 'record', 'timed', v.timed, 'words saying what the function does', p, provider, mode)
  end
  for _, f in ipairs { 'execution', 'annotations' } do
    if v[f] ~= nil and type(v[f]) ~= 'table' then M.bad_return(d, 'record', f, v[f], 'a table', p, provider, mode) end
  end
  return v
end

-- The workload's bytes and flops of one mode at a point: the declaration's
-- cost, else the kernel registry's cost model.
function M.cost_of(d, p, mode)
  if d.cost then return M.call_cost(d, p, mode) end
  local k = kernels.kernel(d.name)
  if k and k.cost then return k.cost(p.params, p.dtype, mode) end
  return nil
end

-- The estimated bytes of a whole point: every provider times every mode.
function M.point_cost(d, p, o)
  local bytes = 0
  for _, mode in ipairs(o.modes) do bytes = bytes + (M.cost_of(d, p, mode) or 0) end
  return bytes * #o.providers
end

---------------------------------------------------------------------------
-- The estimate a long sweep shows before it starts
---------------------------------------------------------------------------

local WRONG = {}
WRONG.__index = WRONG
WRONG.__tostring = function(e) return e.message end
local WRONG_STATUSES = { incorrect_numerical = true, incorrect_shape = true, incorrect_dtype = true }

--- Raised by a benchmark's check when the provider's result is wrong: the provider is not timed and
-- its bundles get status (default "incorrect_numerical"; "incorrect_shape" or "incorrect_dtype"
-- where that is what is wrong; any other status is an error) with the message as the reason.
--
-- @signature suite.wrong_result(message [, status])
-- @example
--   local ok, e = pcall(suite.wrong_result, "q_out differs from the reference")
--   print(tostring(e))
function M.wrong_result(message, status)
  args.check('suite.wrong_result', 1, message, 'string', 'message')
  args.check('suite.wrong_result', 2, status, 'string|nil', 'run status')
  if status ~= nil and not WRONG_STATUSES[status] then
    error(string.format("bad argument #2 to 'wrong_result' (\"incorrect_numerical\", \"incorrect_shape\" or "
      .. '"incorrect_dtype" expected, got %s)', type(status) == 'string' and string.format('%q', status) or type(status)), 2)
  end
  error(setmetatable({ message = tostring(message), status = status or 'incorrect_numerical' }, WRONG), 0)
end

-- The status and message of an error a hook raised.
function M.failure_of(err)
  if getmetatable(err) == WRONG then return err.status, err.message end
  return 'runtime_error', tostring(err)
end

return M
