--- kluabench.trust.precision: the norm-wise check that catches a precision
-- downgrade whatever element-wise tolerances a script chose. An output
-- computed in bf16 where f32 is declared is off by about 2^-9 relative on
-- every element: loose element-wise tolerances (atol = rtol = 1e-2) pass it,
-- but its relative L2 error ||got - want|| / ||want|| is some 30,000 units of
-- f32's rounding, where an honest f32 kernel stays within a few. The limit
-- is `factor` units of the declared dtype's unit roundoff (default 8).
local args = require 'kluabench.util.args'
local M = {}

local core = require 'kluabench.core'
local rel_l2 = core.rel_l2 -- bound before the user's script (trust.integrity)

--- The unit roundoff of each dtype: half the distance from 1 to the next number.
M.UNIT_ROUNDOFF = { bf16 = 2 ^ -8, f16 = 2 ^ -11, f32 = 2 ^ -24, f64 = 2 ^ -53 }

--- Units of the unit roundoff an honest result may be off by, norm-wise. Eight covers an
-- element-wise kernel against a reference in its own or a higher precision and short sums; a
-- kernel that reduces over many terms may need more (give factor).
M.DEFAULT_FACTOR = 8

--- The norm-wise relative error of got against want and whether it fits the precision of dtype.
--
-- The unit roundoff is the larger of dtype's and got's own (a check is never stricter than the
-- output can hold). opts.factor: the allowed units (default DEFAULT_FACTOR; a finite number > 0);
-- opts.name: the output's name for the message. Returns ok, rel, limit, message. A want that is
-- all zero with a got that is not reads as rel = inf (not ok).
--
-- @signature precision.normwise(got, want, dtype [, opts]) -> ok, rel, limit, message
-- @example
--   local p = require("kluabench.trust.precision")
--   local x = kb.randn({64}, "f32", 1, "cpu")
--   print(p.normwise(x:cast("bf16"):cast("f32"), x, "f32"))
function M.normwise(got, want, dtype, opts)
  args.check('precision.normwise', 1, got, 'userdata', 'tensor')
  args.check('precision.normwise', 2, want, 'userdata', 'tensor')
  opts = opts or {}
  local u = M.UNIT_ROUNDOFF[dtype]
  if not u then error("bad argument #3 to 'normwise' (unknown dtype " .. tostring(dtype) .. ')', 2) end
  local factor = opts.factor or M.DEFAULT_FACTOR
  if type(factor) ~= 'number' or factor ~= factor or factor <= 0 or factor == math.huge then
    error("bad argument #4 to 'normwise' (factor must be a finite number > 0, got " .. tostring(factor) .. ')', 2)
  end
  local own = M.UNIT_ROUNDOFF[got.dtype] or u
  if own > u then u = own end
  local rel = rel_l2(got, want)
  local limit = factor * u
  local ok = rel <= limit -- NaN: not ok
  local name = opts.name or 'output'
  local message
  if ok then
    message = string.format('%s: norm-wise relative error %.3g, within %g x the unit roundoff of %s', name, rel, factor,
      dtype)
  else
    message = string.format('%s: norm-wise relative error %.3g is %.3g x the unit roundoff of %s (%.3g), more than '
      .. 'the %g x allowed: computed in a lower precision than %s?', name, rel, rel / u, dtype, u, factor, dtype)
  end
  return ok, rel, limit, message
end

return M
