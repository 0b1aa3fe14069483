-- Sessions: one measurement in the cold, hot or graph mode, taken one
-- sample at a time (measure.run drives one to its end; interleave.lua
-- drives several in turn). The mode's file (cold.lua, hot.lua, graph.lua)
-- sets up what a sample is: self.warmup_fn and self.take; the session
-- keeps the samples, retakes those whose hold was too short, drops those
-- taken while the GPU was throttled, and asks the stopping rule when to end.
local bench = require 'kluabench.measure.do_bench'
local stats = require 'kluabench.stats'
local inference = require 'kluabench.stats.inference'
local stopping = require 'kluabench.measure.stopping'
local clocks = require 'kluabench.measure.clocks'
local options = require 'kluabench.measure.options'
local device = require 'kluabench.measure.device'
local sample = require 'kluabench.measure.sample'
local trace = require 'kluabench.measure.trace'

local M = {}

local min = math.min
local opt = options.get
local median_of = sample.median_of

-- The modes a session runs, each a file with setup(self, fn) (measure/modes.lua lists them).
local modes = require 'kluabench.measure.modes'
local SESSION_MODES = modes.SESSION

-- The session modes as "a, b or c", in the harness's order, for messages.
local function session_modes_listed()
  local names = {}
  for _, name in ipairs(modes.NAMES) do
    if SESSION_MODES[name] then names[#names + 1] = name end
  end
  return table.concat(names, ', ', 1, #names - 1) .. ' or ' .. names[#names]
end

local Session = {}
Session.__index = Session
Session.__name = 'kluabench.MeasureSession'

-- fn is callable, else an error naming the argument of fname.
function M.check_fn(fname, fn)
  if type(fn) ~= 'function' and not (getmetatable(fn) and getmetatable(fn).__call) then
    error(string.format("bad argument #2 to '%s' (function expected, got %s)", fname, type(fn)), 3)
  end
end

--- A measurement advanced one sample at a time (what interleave drives).
--
-- A measurement of fn in `mode` (cold, hot or graph) that is advanced one sample at a time:
-- s:warmup(), then s:step() until it returns true, then s:result(). interleave.lua drives several
-- sessions this way. opts: the fields of measure.DEFAULTS, stop (a stopping criterion or what
-- stopping.from accepts; default stopping.default_for(the backend): rse_median, at most 2 s on
-- cpu), l2_bytes (instead of the device's), sets / make_set / set_bytes / allow_warm (graph), name,
-- and for the clock monitor: nvml_device, recovery_ms, max_drops, drop_throttled
-- (clocks.DEFAULTS). ctx defaults to measure.device().
--
-- @signature measure.session(mode, fn [, opts [, ctx]]) -> Session
-- @example
--   local x = kb.randn({1 << 16}, "f32", 1)
--   local s = measure.session("cold", function() x:add_(1) end, {stop = stopping.count(10)})
--   s:warmup()
--   while not s:step() do end
--   print(s:result().summary.median)
--   s:close()
function M.session(mode, fn, opts, ctx)
  if not SESSION_MODES[mode] then
    error(string.format("bad argument #1 to 'session' (mode %s expected, got %s)", session_modes_listed(),
      tostring(mode)), 2)
  end
  M.check_fn('session', fn)
  opts = opts or {}
  if type(opts) ~= 'table' then
    error("bad argument #3 to 'session' (table of options expected, got " .. type(opts) .. ')', 2)
  end
  bench.check_options('session', 3, opts, options.OPTIONS)
  ctx = ctx or device.device()
  local rule = opts.stop ~= nil and stopping.from(opts.stop) or stopping.default_for(ctx.backend)
  local self = setmetatable({
    mode = mode, opts = opts, ctx = ctx, rule = rule, name = opts.name,
    st = stopping.state(ctx.clock_ns), enqueue_ns = {}, hold_ns = 0,
    overruns = 0, overruns_kept = 0, dropped = 0, done = false, warmed = false,
    used = { mode = mode },
  }, Session)
  if opt(opts, 'clocks') and ctx.backend ~= 'cpu' then
    self.monitor = clocks.monitor { nvml = ctx.nvml, backend = ctx.backend, device = opts.nvml_device,
      clock_ns = ctx.clock_ns, sleep_ms = ctx.sleep_ms, recovery_ms = opts.recovery_ms,
      max_drops = opts.max_drops, drop_throttled = opts.drop_throttled }
  end
  SESSION_MODES[mode].setup(self, fn)
  return self
end

--- Warms up (once) and reads the clocks before the point.
--
-- @signature session:warmup()
-- @section measure
-- @example
--   local x = kb.randn({1 << 16}, "f32", 1)
--   local s = measure.session("hot", function() x:add_(1) end, {stop = stopping.count(10)})
--   s:warmup()
function Session:warmup()
  if self.warmed then return self end
  self.warmed = true
  self.warmup_fn()
  if self.monitor then self.monitor:before() end
  self.st:start()
  return self
end

--- Takes one sample; true when the stopping rule says done.
--
-- A sample is retaken when the hold was too short (launch overhead could be inside it) and dropped
-- when the GPU was throttled.
--
-- @signature session:step() -> done
-- @section measure
-- @example
--   local x = kb.randn({1 << 16}, "f32", 1)
--   local s = measure.session("hot", function() x:add_(1) end, {stop = stopping.count(10)})
--   s:warmup()
--   while not s:step() do end
function Session:step()
  if self.done then return true end
  if not self.warmed then self:warmup() end
  -- the harness's audits (kluabench.suite.audit): extra samples outside the kept ones
  local audit = self.ctx.audit
  if audit and audit:due(self.st.n + 1) then
    -- the audit's time is not the session's: the stopping rule's time budget starts again after it
    -- (at large sizes an audit takes seconds, which left a 10 s session with 5 samples; H200,
    -- `git show 7f5c7f0:evidence/2026-12-03-final-h200/`), and the session warms up again after it (sample.rewarm)
    local t = self.st.clock_ns()
    audit:run(self.audit_take or self.take, self.audit_calls, self.sets, self.audit_per)
    sample.rewarm(self)
    local spent = self.st.clock_ns() - t
    if self.st.t0 then self.st.t0 = self.st.t0 + spent end
    self.audit_ns = (self.audit_ns or 0) + spent
  end
  local ms, enq, overrun = self.take()
  local keep = true
  if overrun then
    local hmax = opt(self.opts, 'hold_max_ns')
    if self.hold_ns < hmax then
      self.overruns = self.overruns + 1
      self.hold_ns = min(self.hold_ns * 2, hmax)
      keep = false
    else
      self.overruns_kept = self.overruns_kept + 1
    end
  end
  if keep and self.monitor then
    local ok = self.monitor:check()
    if not ok then
      keep = false
      self.dropped = self.dropped + 1
      self.monitor:recover()
    end
  end
  if keep then
    self.st:add(ms)
    self.enqueue_ns[#self.enqueue_ns + 1] = enq
    local tr = self.trace
    if tr then
      local n, sum, span, names = trace.trace_totals(tr.last)
      local i = #tr.sum_ms + 1
      tr.sum_ms[i], tr.span_ms[i], tr.kernels[i] = sum, span, n
      tr.names = tr.names or names
    end
  else
    self.st:tick()
  end
  local done, reason, converged = self.rule:check(self.st)
  if not done and self.st.n >= bench.MAX_SAMPLES then
    -- a criterion that never ends (stopping.count(1e12)) must not fill the memory
    done, reason, converged = true, string.format('the sample limit (%d, bench.MAX_SAMPLES) reached',
      bench.MAX_SAMPLES), false
  end
  local cut -- 'interrupted' or 'timeout': why sampling stopped before the rule said so
  if not done and self.st.n > 0 and self.ctx.interrupted and self.ctx.interrupted() then
    done, reason, converged = true, 'interrupted: stopped early with the samples taken so far', false
    cut = 'interrupted'
  end
  -- a deadline the caller set (the harness's --timeout), checked between samples
  if not done and self.st.n > 0 and self.ctx.deadline_ns and self.ctx.clock_ns() >= self.ctx.deadline_ns then
    done, reason, converged = true, 'timeout: the deadline passed, stopped with the samples taken so far', false
    cut = 'timeout'
  end
  if done then
    if audit then audit:run(self.audit_take or self.take, self.audit_calls, self.sets, self.audit_per) end
    self.done = true
    self.stop = stopping.outcome(self.rule, self.st, reason, converged)
    if cut then self.stop.rule = cut end
    if self.monitor then self.monitor:after() end
  end
  return self.done
end

local function spread(xs)
  if #xs == 0 then return nil end
  local q = stats.quantiles(xs, bench.QUANTILES)
  return { median = q[1], p20 = q[2], p80 = q[3], min = stats.min(xs), max = stats.max(xs) }
end

--- samples (ms), enqueue_ns, summary, timer, backend, stop, clocks, warnings, used.
--
-- The result: {samples (ms, in the order taken), enqueue_ns (per call of fn, same order), summary,
-- timer, backend, stop, clocks, warnings, used}. `used` holds what this run derived (hold, flush
-- bytes, batch, rotation, the stopping outcome, the clock summary, host enqueue quantiles, the 95 %
-- interval of the median): records put it in their evidence entry's execution.
--
-- @signature session:result() -> result
-- @section measure
-- @example
--   local x = kb.randn({1 << 16}, "f32", 1)
--   local s = measure.session("hot", function() x:add_(1) end, {stop = stopping.count(10)})
--   s:warmup()
--   while not s:step() do end
--   local r = s:result()
--   print(r.summary.median)
function Session:result()
  if not self.done then error('measure: result() before the stopping rule said done', 2) end
  local u = self.used
  local samples = self.st.samples
  u.hold_ns = self.hold_ns
  u.hold_overruns = self.overruns
  if self.overruns_kept > 0 then u.hold_overruns_kept = self.overruns_kept end
  u.samples_dropped = self.dropped
  -- the host time the harness's audits took between samples, outside the stopping rule's budget
  if self.audit_ns then u.audit_ms = self.audit_ns / 1e6 end
  u.stop = self.stop
  u.host_enqueue_ns = spread(self.enqueue_ns)
  -- the samples' statistics, once: records and tables read them from here (compare reads the
  -- records' samples)
  local summary = inference.describe(samples, self.opts.quantiles or options.DEFAULTS.quantiles)
  if u.event_pair_ms then u.median_minus_event_pair_ms = summary.median - u.event_pair_ms end
  local tr = self.trace
  if tr then
    -- camelCase inside, like used.rotation: records copy it as it is
    u.kernel_trace = { kernelsPerCall = median_of(tr.kernels), names = tr.names,
      sumMs = spread(tr.sum_ms), spanMs = spread(tr.span_ms) }
  end
  u.median_ci_ms = bench.median_ci_of(summary)
  local warnings = {}
  if self.monitor then
    u.clocks = self.monitor:summary()
    for _, w in ipairs(u.clocks.warnings or {}) do warnings[#warnings + 1] = w end
  end
  if not self.stop.converged and self.rule.name == 'rse_median' then
    warnings[#warnings + 1] = 'did not converge: ' .. self.stop.reason
  end
  if self.overruns_kept > 0 then
    warnings[#warnings + 1] = string.format('%d sample(s) kept with the hold at its maximum (%d ns) '
      .. 'although the host was still enqueueing: launch overhead may be in them',
      self.overruns_kept, self.hold_ns)
  end
  u.warnings = #warnings > 0 and warnings or nil
  return {
    samples = samples,
    enqueue_ns = self.enqueue_ns,
    kernel_sum_ms = tr and tr.sum_ms or nil,
    kernel_span_ms = tr and tr.span_ms or nil,
    summary = summary,
    timer = self.ctx.timer,
    backend = self.ctx.backend,
    mode = self.mode,
    name = self.name,
    stop = self.stop,
    clocks = u.clocks,
    warnings = warnings,
    used = u,
  }
end

--- Frees what the session holds on the device (its graph).
--
-- @signature session:close()
-- @section measure
-- @example
--   local x = kb.randn({1 << 16}, "f32", 1)
--   local s = measure.session("hot", function() x:add_(1) end, {stop = stopping.count(10)})
--   s:close()
function Session:close()
  if self.graph and self.graph.free then self.graph:free() end
  self.graph = nil
end

return M
