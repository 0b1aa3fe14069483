--- kluabench.kernels.check: how far an output may be from its reference: element-wise tolerances by dtype, the
-- comparison, NaN poison, and the norm-wise precision bound that grows with the reduction length (docs/TRUST.md).
local core = require 'kluabench.core'
local args = require 'kluabench.util.args'

local M = {}

--- Tolerances by output dtype: |got - want| <= atol + rtol * |want| (bf16, f16: about one rounding).
M.TOLERANCES = {
  bf16 = { atol = 1e-2, rtol = 1.6e-2 }, f16 = { atol = 1e-3, rtol = 1e-3 },
  f32 = { atol = 1e-5, rtol = 1e-5 }, f64 = { atol = 1e-10, rtol = 1e-10 },
}

--- Whole-output tolerances (max_abs, rel_l2) by dtype for a kernel that promises its reference's result bit for bit
-- (RoPE): one rounding step, so that a changed evaluation order passes.
M.ROUNDING_TOLERANCES = {
  bf16 = { max_abs = 2 ^ -4, rel_l2 = 1e-2 }, f16 = { max_abs = 2 ^ -7, rel_l2 = 2e-3 },
  f32 = { max_abs = 1e-5, rel_l2 = 1e-6 }, f64 = { max_abs = 1e-12, rel_l2 = 1e-14 },
}

-- bound before the user's script (trust.integrity)
local compare_elements, rel_l2 = core.compare_elements, core.rel_l2

--- v as a message shows it: NaN and infinities by name, a string in quotes.
-- @signature check.shown(v) -> text
-- @example print(check.shown(0 / 0)) --> NaN
function M.shown(v)
  if type(v) == 'string' then return "string '" .. v:sub(1, 40) .. "'" end
  if type(v) ~= 'number' then return type(v) end
  if v ~= v then return 'NaN' end
  if v == math.huge then return 'inf' end
  if v == -math.huge then return '-inf' end
  return tostring(v)
end

local function finite(v) return type(v) == 'number' and v == v and v > -math.huge and v < math.huge end

--- Raises, as argument argn of fn, unless opts.atol and opts.rtol are absent or finite numbers >= 0 (NaN would pass
-- every element, a negative fail all); level as error's.
-- @signature check.check_tolerances(opts, fn, argn, level)
-- @example print(pcall(check.check_tolerances, {atol = 0 / 0}, "compare", 3, 1))
function M.check_tolerances(opts, fn, argn, level)
  args.check('check.check_tolerances', 1, opts, 'table', 'table of options')
  for _, name in ipairs { 'atol', 'rtol' } do
    local v = opts[name]
    if v ~= nil and not (finite(v) and v >= 0) then
      error(string.format("bad argument #%d to '%s' (%s must be a finite number >= 0, got %s)", argn, fn, name,
        M.shown(v)), level + 1)
    end
  end
end

--- The tolerance of a dtype (opts.atol, opts.rtol override; each a finite number >= 0).
-- @signature check.tolerance(dtype [, opts]) -> atol, rtol
-- @example print(check.tolerance("bf16"))
function M.tolerance(dtype, opts)
  local t = M.TOLERANCES[dtype]
  if not t then error("bad argument #1 to 'tolerance' (unknown dtype " .. tostring(dtype) .. ')', 2) end
  opts = opts or {}
  M.check_tolerances(opts, 'tolerance', 2, 2)
  return opts.atol or t.atol, opts.rtol or t.rtol
end

--- Fills a tensor with NaN, so that elements a kernel does not write read as NaN. Returns t.
-- @signature check.poison(t) -> t
-- @example print(check.poison(kb.empty({4}, "f32"))) -- NaN in every element until a kernel writes them
function M.poison(t)
  args.check('check.poison', 1, t, 'userdata', 'tensor')
  t:fill_(0 / 0)
  return t
end

--- Compares got with the reference want (one shape, any devices) at got's dtype's tolerance (opts: atol, rtol,
-- name). Report: n, mismatches, unwritten, nan_mismatch, inf_mismatch, want_nan, max_abs, worst, atol, rtol, message.
-- opts.reduction (terms each element sums; default the last dimension) widens atol by 8 x sqrt(n) x u_acc x rms(want).
-- @signature check.compare(got, want [, opts]) -> ok, report
-- @example
--   local ref = kb.randn({256}, "f32", 1)
--   local ok, r = check.compare(ref:to("bf16"), ref) -- rounded to bf16: within bf16's tolerance
--   print(ok, r.message)
function M.compare(got, want, opts)
  args.check('check.compare', 1, got, 'userdata', 'tensor')
  args.check('check.compare', 2, want, 'userdata', 'tensor')
  args.check('check.compare', 3, opts, 'table|nil', 'table of options')
  opts = opts or {}
  M.check_tolerances(opts, 'compare', 3, 2)
  local name = opts.name or 'output'
  local gs, ws = got.shape, want.shape
  local same = #gs == #ws
  for i = 1, #gs do same = same and gs[i] == ws[i] end
  if not same then
    return false, { message = string.format('%s has shape {%s}, the reference {%s}', name,
      table.concat(gs, ', '), table.concat(ws, ', ')) }
  end
  local atol, rtol = M.tolerance(got.dtype, opts)
  local n = opts.reduction or math.max(1, gs[#gs] or 1) -- as reduction_length reads it without the inputs
  if not (math.type(n) == 'integer' and n >= 1) then
    error("bad argument #3 to 'compare' (reduction must be an integer >= 1, got " .. M.shown(n) .. ')', 2)
  end
  if n > 1 then
    -- a sum of n terms errs by about sqrt(n) roundoffs of the accumulation times the terms' scale, whatever the
    -- element's own size (an element of a matmul can be near zero): that much more absolute slack, scaled by the
    -- reference's rms (docs/TRUST.md, "The precision bound")
    local w = want:cast('f64')
    local sq = w:mul(w)
    local ms = sq:mean():item()
    w:free()
    sq:free()
    local u = math.min(M.UNIT_ROUNDOFF[got.dtype] or M.UNIT_ROUNDOFF.f32, M.UNIT_ROUNDOFF.f32)
    local extra = M.DEFAULT_FACTOR * math.sqrt(n) * u * math.sqrt(ms)
    if extra == extra and extra < math.huge then atol = atol + extra end
  end
  local r = compare_elements(got, want, atol, rtol)
  r.atol, r.rtol = atol, rtol
  local parts = {}
  if r.mismatches > 0 then
    parts[#parts + 1] = string.format('%d of %d elements differ from the reference (worst: element %d is %.6g, '
      .. 'want %.6g; atol %g, rtol %g)', r.mismatches, r.n, r.worst.index, r.worst.got, r.worst.want, atol, rtol)
  end
  if r.unwritten > 0 then
    parts[#parts + 1] = string.format('%d of %d elements are NaN where the reference is a number (never '
      .. 'written: the output was filled with NaN before the run, or computed as NaN)', r.unwritten, r.n)
  end
  if r.nan_mismatch > 0 then
    parts[#parts + 1] = string.format('%d elements are numbers where the reference is NaN', r.nan_mismatch)
  end
  if r.inf_mismatch > 0 then
    parts[#parts + 1] = string.format('%d elements differ from the reference in an infinity', r.inf_mismatch)
  end
  local ok = #parts == 0
  r.message = ok and string.format('%s matches (%d elements, max abs diff %.3g)', name, r.n, r.max_abs)
    or (name .. ': ' .. table.concat(parts, '; '))
  return ok, r
end

--- The unit roundoff of each dtype: half the distance from 1 to the next number.
M.UNIT_ROUNDOFF = { bf16 = 2 ^ -8, f16 = 2 ^ -11, f32 = 2 ^ -24, f64 = 2 ^ -53 }
--- Units of the unit roundoff an honest result may be off by, norm-wise, per source of error (docs/TRUST.md, "The
-- precision bound"): bf16 computed where f32 is declared is some 30,000 units off.
M.DEFAULT_FACTOR = 8

--- The length of the reduction behind an output as the shapes tell it: the larger of the output's last dimension
-- and, over the inputs, their elements per output element (rounded up).
-- @signature check.reduction_length(out [, inputs]) -> integer
-- @example
--   local x = kb.randn({4, 1024}, "f32", 1, "cpu")
--   print(check.reduction_length(kb.empty({4}, "f32", "cpu"), {x})) --> 1024
function M.reduction_length(out, inputs)
  args.check('check.reduction_length', 1, out, 'userdata', 'tensor')
  args.check('check.reduction_length', 2, inputs, 'table|nil', 'list of tensors')
  local shape, numel = out.shape, out:numel()
  local n = math.max(1, shape[#shape] or 1)
  if numel > 0 then
    for _, t in ipairs(inputs or {}) do n = math.max(n, (t:numel() + numel - 1) // numel) end
  end
  return n
end

--- The norm-wise relative error of got against want and whether it is within factor x max(u, sqrt(n) x u_acc) (u:
-- dtype's or got's roundoff, u_acc: min(u, f32's)); opts: reduction (n, default 1), factor, name.
-- @signature check.normwise(got, want, dtype [, opts]) -> ok, rel, limit, message
-- @example
--   local x = kb.randn({64}, "f32", 1, "cpu")
--   print(check.normwise(x:cast("bf16"):cast("f32"), x, "f32"))
function M.normwise(got, want, dtype, opts)
  args.check('M.normwise', 1, got, 'userdata', 'tensor')
  args.check('M.normwise', 2, want, 'userdata', 'tensor')
  opts = opts or {}
  local u = M.UNIT_ROUNDOFF[dtype]
  if not u then error("bad argument #3 to 'normwise' (unknown dtype " .. tostring(dtype) .. ')', 2) end
  local factor = opts.factor or M.DEFAULT_FACTOR
  if type(factor) ~= 'number' or factor ~= factor or factor <= 0 or factor == math.huge then
    error("bad argument #4 to 'normwise' (factor must be a finite number > 0, got " .. tostring(factor) .. ')', 2)
  end
  local n = opts.reduction or 1
  if math.type(n) ~= 'integer' or n < 1 then
    error("bad argument #4 to 'normwise' (reduction must be an integer >= 1, got " .. tostring(n) .. ')', 2)
  end
  u = math.max(u, M.UNIT_ROUNDOFF[got.dtype] or u)
  local rel = rel_l2(got, want)
  local limit = factor * math.max(u, math.sqrt(n) * math.min(u, M.UNIT_ROUNDOFF.f32))
  local ok = rel <= limit -- NaN: not ok
  local name = opts.name or 'output'
  local allowed = n > 1 and string.format('%.3g x (a reduction of %d terms)', limit / u, n)
    or string.format('%g x', factor)
  local message
  if ok then
    message = string.format('%s: norm-wise relative error %.3g, within %s the unit roundoff of %s', name, rel,
      allowed, dtype)
  else
    message = string.format('%s: norm-wise relative error %.3g is %.3g x the unit roundoff of %s (%.3g), more than '
      .. 'the %s allowed: computed in a lower precision than %s?', name, rel, rel / u, dtype, u, allowed, dtype)
  end
  return ok, rel, limit, message
end

return M
