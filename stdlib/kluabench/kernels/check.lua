--- kluabench.kernels.check: is a kernel's output right? Against the ways such checks are gamed: fresh random inputs
-- for seeds drawn at run time, outputs poisoned with NaN before each run, the reference computed after the run from a
-- snapshot of the inputs, inputs that must stay unchanged, guard bytes, a norm-wise precision bound by dtype, and a
-- recheck after timing (docs/TRUST.md). check.new's example shows the use.
local M = {}
local args = require 'kluabench.util.args'

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

--- How many seeds verify() draws at run time when the spec gives none (kluabench.trust.seeds).
M.SEED_COUNT = 3

local seeds_of = require 'kluabench.trust.seeds'
local core = require 'kluabench.core'
-- bound before the user's script (trust.integrity)
local arm, guard_check, compare_elements = core.trust.arm, core.trust.guard_check, core.compare_elements

-- v as a message shows it: NaN and infinities by name, a string in quotes.
local function shown(v)
  if type(v) == 'string' then return "string '" .. v:sub(1, 40) .. "'" end
  if type(v) ~= 'number' then return type(v) end
  if v ~= v then return 'NaN' end
  if v == math.huge then return 'inf' end
  if v == -math.huge then return '-inf' end
  return tostring(v)
end

local function finite(v) return type(v) == 'number' and v == v and v > -math.huge and v < math.huge end

-- A given tolerance must be a finite number >= 0: NaN would pass every element, a negative fail all.
local function check_tolerances(opts, fn, argn, level)
  for _, name in ipairs { 'atol', 'rtol' } do
    local v = opts[name]
    if v ~= nil and not (finite(v) and v >= 0) then
      error(string.format("bad argument #%d to '%s' (%s must be a finite number >= 0, got %s)", argn, fn, name,
        shown(v)), level + 1)
    end
  end
end

--- The tolerance of a dtype (opts.atol, opts.rtol override; each a finite number >= 0).
-- @signature check.tolerance(dtype [, opts]) -> atol, rtol
-- @example
--   print(check.tolerance("bf16"))
function M.tolerance(dtype, opts)
  local t = M.TOLERANCES[dtype]
  if not t then error("bad argument #1 to 'tolerance' (unknown dtype " .. tostring(dtype) .. ')', 2) end
  opts = opts or {}
  check_tolerances(opts, 'tolerance', 2, 2)
  return opts.atol or t.atol, opts.rtol or t.rtol
end

--- Fills a tensor with NaN, so that elements a kernel does not write read as NaN. Returns t.
-- @signature check.poison(t) -> t
-- @example
--   local out = check.poison(kb.empty({4}, "f32"))
--   print(out) -- NaN in every element until a kernel writes them
function M.poison(t)
  args.check('check.poison', 1, t, 'userdata', 'tensor')
  t:fill_(0 / 0)
  return t
end

--- Compares got with the reference want (one shape, any devices) at got's dtype's tolerance (opts: atol, rtol, name).
-- Report: n, mismatches, unwritten (NaN where want is not), nan_mismatch, inf_mismatch, want_nan, max_abs, worst
-- {index, got, want}, atol, rtol, message.
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
  check_tolerances(opts, 'compare', 3, 2)
  local name = opts.name or 'output'
  local gs, ws = got.shape, want.shape
  local same = #gs == #ws
  for i = 1, #gs do same = same and gs[i] == ws[i] end
  if not same then
    return false, { message = string.format('%s has shape {%s}, the reference {%s}', name,
      table.concat(gs, ', '), table.concat(ws, ', ')) }
  end
  local atol, rtol = M.tolerance(got.dtype, opts)
  local r = require('kluabench.core').compare_elements(got, want, atol, rtol)
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

local function check_spec(spec)
  if type(spec) ~= 'table' then error("bad argument #1 to 'new' (table expected, got " .. type(spec) .. ')', 3) end
  for _, f in ipairs { 'inputs', 'run', 'outputs', 'reference' } do
    if type(spec[f]) ~= 'function' then
      error("bad argument #1 to 'new' (field '" .. f .. "' must be a function)", 3)
    end
  end
  if spec.seeds ~= nil and (type(spec.seeds) ~= 'table' or #spec.seeds == 0) then
    error("bad argument #1 to 'new' (seeds must be a non-empty list)", 3)
  end
  local p = spec.precision
  if p ~= nil and p ~= false and not (type(p) == 'number' and p > 0 and p < math.huge) then
    error("bad argument #1 to 'new' (precision must be a number > 0 (units of the dtype's unit roundoff) or false, "
      .. 'got ' .. shown(p) .. ')', 3)
  end
  local n = spec.reduction
  if n ~= nil and not (math.type(n) == 'integer' and n >= 1) then
    error("bad argument #1 to 'new' (reduction must be an integer >= 1 (the terms each output element sums), got "
      .. shown(n) .. ')', 3)
  end
  check_tolerances(spec, 'new', 1, 3)
end

-- What outputs(state) or reference(state) returned, checked: a non-empty list of tensors with elements (else every
-- check would pass having compared nothing).
local function tensors(list, hook, when)
  local where = hook .. '(state) ' .. when
  if type(list) ~= 'table' then error(string.format('verify: %s returned a %s, not a list of tensors', where,
    type(list)), 0) end
  if #list == 0 then
    error(string.format('verify: %s returned no tensors: a check needs at least one output and its reference', where), 0)
  end
  for i, t in ipairs(list) do
    local mt = getmetatable(t)
    if type(mt) ~= 'table' or mt.__name ~= 'kluabench.Tensor' then
      error(string.format('verify: %s: element %d is a %s, not a kluabench.Tensor', where, i, type(t)), 0)
    end
    if t:numel() == 0 then
      error(string.format('verify: %s: output %d has no elements (shape {%s}): a check that compares nothing '
        .. 'cannot pass; give outputs and references of at least one element', where, i, table.concat(t.shape, ', ')), 0)
    end
  end
  return list
end

-- Compares each output with its reference; ok, list of reports.
local function compare_all(outs, refs, opts)
  if #outs ~= #refs then return false, { { message = string.format('%d outputs, %d references', #outs, #refs) } } end
  local ok, reports = true, {}
  for i = 1, #outs do
    local o = { atol = opts.atol, rtol = opts.rtol, name = 'output ' .. i }
    local good, r = M.compare(outs[i], refs[i], o)
    -- outputs are poisoned with NaN: an unwritten element would match a NaN reference
    if (r.want_nan or 0) > 0 and opts.seed_label then
      error(string.format('verify: reference(state) for seed %s, output %d holds %d NaN of %d elements: the outputs '
        .. 'are poisoned with NaN, so an element the kernel never writes would match there; give a reference '
        .. 'without NaN', opts.seed_label, i, r.want_nan, r.n), 0)
    end
    if good and opts.precision ~= false and M.UNIT_ROUNDOFF[outs[i].dtype] then
      local fine, rel, limit, msg = M.normwise(outs[i], refs[i], outs[i].dtype,
        { factor = opts.precision, name = o.name, reduction = opts.reduction or M.reduction_length(outs[i], opts.inputs) })
      r.rel_l2, r.normwise_limit = rel, limit
      if not fine then
        good = false
        r.precision_message = msg
      end
    end
    ok = ok and good
    reports[i] = r
  end
  return ok, reports
end

local function summary(reports)
  local bad = {}
  for _, r in ipairs(reports) do
    if r.mismatches ~= 0 or r.unwritten ~= 0 or r.nan_mismatch ~= 0 or r.inf_mismatch ~= 0 or not r.n then
      bad[#bad + 1] = r.message
    elseif r.precision_message then
      bad[#bad + 1] = r.precision_message
    end
  end
  return bad
end

local Checker = {}
Checker.__index = Checker

--- A checker: verify() runs the kernel per seed on fresh, poisoned outputs; recheck() checks the last outputs again
-- after timing; checker.state is what to time. spec: inputs(seed) -> state, run(state), outputs(state) -> {tensors},
-- reference(snapshot) -> {tensors} (anything trusted), seeds, atol, rtol, poison (true), precision (the norm-wise
-- bound's factor, default 8; false: off), reduction (terms per output element; default: read from the shapes).
-- @signature check.new{inputs, run, outputs, reference [, seeds, atol, rtol, poison, precision, reduction]} -> checker
-- @example
--   local c = check.new{inputs = function(seed) return {x = kb.randn({8}, "f32", seed, "cpu"), y = kb.empty({8}, "f32", "cpu")} end,
--     run = function(s) s.y:copy_(s.x) end, outputs = function(s) return {s.y} end,
--     reference = function(s) return {s.x} end}
--   assert(c:verify())
--   assert(c:recheck())
function M.new(spec)
  check_spec(spec)
  local c = setmetatable({}, Checker)
  for k, v in pairs(spec) do c[k] = v end
  c.seeds = spec.seeds or seeds_of.list(M.SEED_COUNT, (seeds_of.draw()))
  return c
end

local function is_tensor(v)
  local mt = getmetatable(v)
  return type(mt) == 'table' and mt.__name == 'kluabench.Tensor'
end

-- A copy of state whose tensors are clones: what the reference is computed from.
local function snapshot(state)
  local s = {}
  for k, v in pairs(state) do s[k] = is_tensor(v) and v:clone() or v end
  return s
end

-- The tensors of state that are no output: what the reduction length is read from.
local function inputs_of(state, outs)
  local is_out, list = {}, {}
  for _, t in ipairs(outs) do is_out[t] = true end
  for _, v in pairs(state) do if is_tensor(v) and not is_out[v] then list[#list + 1] = v end end
  return list
end

-- What a run did besides its outputs: inputs changed, bytes around outputs written.
local function side_effects(state, snap, outs)
  local problems, is_out = {}, {}
  for _, t in ipairs(outs) do is_out[t] = true end
  local keys = {}
  for k, v in pairs(state) do if is_tensor(v) and not is_out[v] then keys[#keys + 1] = k end end
  table.sort(keys, function(a, b) return tostring(a) < tostring(b) end)
  for _, k in ipairs(keys) do
    local r = compare_elements(state[k], snap[k], 0, 0)
    local differ = r.mismatches + r.unwritten + r.nan_mismatch + r.inf_mismatch
    if differ > 0 then
      problems[#problems + 1] = string.format("the run changed input '%s' (%d of %d elements), which is no output",
        tostring(k), differ, r.n)
    end
  end
  for i, t in ipairs(outs) do
    local fine, why = guard_check(t)
    if not fine then problems[#problems + 1] = string.format('output %d: %s (written outside the tensor)', i, why) end
  end
  return problems
end

--- Runs the kernel per seed on fresh inputs, outputs poisoned, against the reference, inputs unchanged, guard bytes
-- intact: ok, {ok, seeds = {{seed, ok, outputs}}, message}. Keeps the last state and reference for recheck().
function Checker:verify()
  local report = { seeds = {} }
  local failures = {}
  for i, seed in ipairs(self.seeds) do
    local state = self.inputs(seed)
    local when = 'for seed ' .. tostring(seed)
    local outs = tensors(self.outputs(state), 'outputs', when)
    local snap = snapshot(state)
    if self.poison ~= false then for _, t in ipairs(outs) do M.poison(t) end end
    for _, t in ipairs(outs) do arm(t) end
    self.run(state)
    -- after the run, from the snapshot: a reference the kernel could copy does not exist yet
    local refs = tensors(self.reference(snap), 'reference', when)
    outs = tensors(self.outputs(state), 'outputs', when)
    local ok, reports = compare_all(outs, refs, { atol = self.atol, rtol = self.rtol, precision = self.precision,
      reduction = self.reduction, inputs = inputs_of(state, outs), seed_label = tostring(seed) })
    local bad = summary(reports)
    for _, problem in ipairs(side_effects(state, snap, outs)) do
      ok = false
      bad[#bad + 1] = problem
    end
    -- the snapshot's tensors go, but those the reference returned as they are (kept for recheck)
    local kept = {}
    for _, t in ipairs(refs) do kept[t] = true end
    for _, v in pairs(snap) do if is_tensor(v) and not kept[v] then v:free() end end
    report.seeds[i] = { seed = seed, ok = ok, outputs = reports }
    if not ok then failures[#failures + 1] = 'seed ' .. tostring(seed) .. ': ' .. table.concat(bad, '; ') end
    self.state, self.refs = state, refs
  end
  report.ok = #failures == 0
  report.message = report.ok and string.format('correct on %d seeds', #self.seeds) or table.concat(failures, '\n')
  return report.ok, report
end

--- Compares the last verified outputs with their reference again, after timing: ok, {ok, outputs, message}.
function Checker:recheck()
  if not self.state then error("recheck: call verify() first", 2) end
  local outs = tensors(self.outputs(self.state), 'outputs', 'after timing')
  local ok, reports = compare_all(outs, self.refs, { atol = self.atol, rtol = self.rtol, precision = self.precision,
    reduction = self.reduction, inputs = inputs_of(self.state, outs) })
  return ok, { ok = ok, outputs = reports,
    message = ok and 'still correct after timing' or ('after timing: ' .. table.concat(summary(reports), '; ')) }
end

--- check.new(spec):verify(): ok, report, checker.
-- @signature check.run(spec) -> ok, report, checker
-- @example
--   local ok, report = check.run{inputs = function(seed) return {x = kb.randn({8}, "f32", seed, "cpu")} end,
--     run = function() end, outputs = function(s) return {s.x} end, reference = function(s) return {s.x:clone()} end}
function M.run(spec)
  args.check('check.run', 1, spec, 'table', 'check table {inputs, run, outputs, reference, ...}')
  local c = M.new(spec)
  local ok, report = c:verify()
  return ok, report, c
end

-- Precision: bf16 computed where f32 is declared passes loose element-wise tolerances, but its relative L2 error is
-- some 30,000 units of f32's roundoff, where an honest kernel stays within a few.

local rel_l2 = core.rel_l2 -- bound before the user's script (trust.integrity)

--- The unit roundoff of each dtype: half the distance from 1 to the next number.
M.UNIT_ROUNDOFF = { bf16 = 2 ^ -8, f16 = 2 ^ -11, f32 = 2 ^ -24, f64 = 2 ^ -53 }

--- Units of the unit roundoff an honest result may be off by, norm-wise, per source of error:
-- the output's rounding, and a reduction's accumulation grown by the square root of its length
-- (docs/TRUST.md, "The precision bound", derives it).
M.DEFAULT_FACTOR = 8

--- The length of the reduction behind an output as the shapes tell it: the larger of the
-- output's last dimension and, over the inputs, their elements per output element (rounded up).
-- A softmax, norm or scan of rows of n columns reads n; a row sum reads n from its input; an
-- element-wise kernel reads its last dimension, which errs on the loose side.
--
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

--- The norm-wise relative error of got against want and whether it is within factor x max(u, sqrt(n) x u_acc):
-- u the larger of dtype's and got's roundoff, u_acc = min(u, f32's), n = opts.reduction (default 1), factor =
-- opts.factor (default DEFAULT_FACTOR); opts.name for the message.
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
  local own = M.UNIT_ROUNDOFF[got.dtype] or u
  if own > u then u = own end
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
