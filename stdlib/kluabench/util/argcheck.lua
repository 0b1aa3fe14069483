-- Argument checks for the stdlib's exported functions (kluabench.util.argcheck), worded as the C
-- functions' (luaL_argerror): `bad argument #1 to 'record.seal' (bundle
-- expected, got nil)`. The error points at the line that made the bad call.
--
--   local args = require 'kluabench.util.argcheck'
--   function M.seal(bundle)
--     args.check('record.seal', 1, bundle, 'table', 'bundle')
--
-- kinds: a Lua type name, "integer", "callable" (a function or a value with
-- __call), or several joined by "|" ("string|nil" for an optional string).
local M = {}

local function is(v, kind)
  if kind == 'integer' then return math.type(v) == 'integer' end
  if kind == 'callable' then
    if type(v) == 'function' then return true end
    local mt = getmetatable(v)
    return type(mt) == 'table' and type(mt.__call) == 'function'
  end
  return type(v) == kind
end

-- Raises "bad argument #n to 'fname' (what expected, got <type>)" at the
-- caller of the checked function unless v is of one of the kinds; returns v.
function M.check(fname, n, v, kinds, what)
  for kind in kinds:gmatch('[^|]+') do
    if is(v, kind) then return v end
  end
  error(string.format("bad argument #%d to '%s' (%s expected, got %s)", n, fname,
    what or (kinds:gsub('|', ' or ')), math.type(v) == 'float' and 'number' or type(v)), 3)
end

return M
