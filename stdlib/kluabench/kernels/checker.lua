--- kluabench.kernels.checker: is a kernel's output right, checked against the ways such checks are gamed: fresh random
-- inputs for seeds drawn at run time, outputs poisoned with NaN before each run, the reference computed after the run
-- from a snapshot of the inputs, inputs that must stay unchanged, guard bytes, the norm-wise precision bound, and a
-- recheck after timing (docs/TRUST.md). checker.new's example shows the use; kluabench.kernels.check the tolerances.
local core = require 'kluabench.core'
local args = require 'kluabench.util.args'
local seeds_of = require 'kluabench.trust.seeds'
local check = require 'kluabench.kernels.check'

local M = {}

--- How many seeds verify() draws at run time when the spec gives none (kluabench.trust.seeds).
M.SEED_COUNT = 3

-- bound before the user's script (trust.integrity)
local arm, guard_check, compare_elements = core.trust.arm, core.trust.guard_check, core.compare_elements

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
      .. 'got ' .. check.shown(p) .. ')', 3)
  end
  local n = spec.reduction
  if n ~= nil and not (math.type(n) == 'integer' and n >= 1) then
    error("bad argument #1 to 'new' (reduction must be an integer >= 1 (the terms each output element sums), got "
      .. check.shown(n) .. ')', 3)
  end
  check.check_tolerances(spec, 'new', 1, 3)
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
    local good, r = check.compare(outs[i], refs[i], o)
    -- outputs are poisoned with NaN: an unwritten element would match a NaN reference
    if (r.want_nan or 0) > 0 and opts.seed_label then
      error(string.format('verify: reference(state) for seed %s, output %d holds %d NaN of %d elements: the outputs '
        .. 'are poisoned with NaN, so an element the kernel never writes would match there; give a reference '
        .. 'without NaN', opts.seed_label, i, r.want_nan, r.n), 0)
    end
    if good and opts.precision ~= false and check.UNIT_ROUNDOFF[outs[i].dtype] then
      local fine, rel, limit, msg = check.normwise(outs[i], refs[i], outs[i].dtype,
        { factor = opts.precision, name = o.name, reduction = opts.reduction or check.reduction_length(outs[i], opts.inputs) })
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
-- @signature checker.new{inputs, run, outputs, reference [, seeds, atol, rtol, poison, precision, reduction]} -> checker
-- @example
--   local c = checker.new{inputs = function(seed) return {x = kb.randn({8}, "f32", seed, "cpu"), y = kb.empty({8}, "f32", "cpu")} end,
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
    if self.poison ~= false then for _, t in ipairs(outs) do check.poison(t) end end
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

--- checker.new(spec):verify(): ok, report, checker.
-- @signature checker.run(spec) -> ok, report, checker
-- @example
--   local ok, report = checker.run{inputs = function(seed) return {x = kb.randn({8}, "f32", seed, "cpu")} end,
--     run = function() end, outputs = function(s) return {s.x} end, reference = function(s) return {s.x:clone()} end}
function M.run(spec)
  args.check('checker.run', 1, spec, 'table', 'check table {inputs, run, outputs, reference, ...}')
  local c = M.new(spec)
  local ok, report = c:verify()
  return ok, report, c
end

return M
