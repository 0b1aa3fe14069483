--- Sessions: one measurement by a sampling protocol (cold, hot, graph), taken one sample at a time
-- (measure.run drives one to its end; interleave.lua drives several in turn). The protocol's file
-- sets up what a sample is (setup(self, fn): self.warmup_fn and self.take); the session keeps the
-- samples, retakes those whose hold was too short, drops those taken while the GPU was throttled,
-- calls the between-samples hook, and asks the stopping rule when to end.
local measure = require 'kluabench.measure'
local stats = require 'kluabench.stats'
local stopping = require 'kluabench.measure.stopping'
local clocks = require 'kluabench.measure.clocks'

local M = {}

local floor, max, min = math.floor, math.max, math.min
local opt = measure.option

local function median_of(xs) return #xs > 0 and stats.median(xs) or nil end

---------------------------------------------------------------------------
-- The parts of a sample the protocols share
---------------------------------------------------------------------------

-- The hold that keeps launch overhead out: 4 x the host's enqueue time of one call x calls + 20 us,
-- within [hold_min_ns, hold_max_ns], from the warm-up's last half.
local function auto_hold(enqueue_ns, calls, opts)
  local recent = {}
  for i = floor(#enqueue_ns / 2) + 1, #enqueue_ns do recent[#recent + 1] = enqueue_ns[i] end
  local e = median_of(recent) or 0
  return floor(min(max(4 * e * calls + 20000, opt(opts, 'hold_min_ns')), opt(opts, 'hold_max_ns')))
end

--- Warms up by calling once() until warmup_min calls and warmup_ms of host time have passed:
-- the median device time of the last half of the calls, and every call's enqueue time.
function M.warm(self, once)
  local o, clock = self.opts, self.ctx.clock_ns
  self.warm_once = once
  local t_start = clock()
  local dev_ms, enq = {}, {}
  repeat
    local ms, e = once()
    dev_ms[#dev_ms + 1], enq[#enq + 1] = ms, e
  until #enq >= opt(o, 'warmup_min') and (clock() - t_start) >= opt(o, 'warmup_ms') * 1e6
  self.used.warmup_calls = #enq
  local recent = {}
  for i = floor(#dev_ms / 2) + 1, #dev_ms do recent[#recent + 1] = dev_ms[i] end
  return median_of(recent), enq
end

-- Warms up again after the between-samples hook took samples of its own.
local function rewarm(self)
  local once = self.warm_once
  if not once then return end
  local o, clock = self.opts, self.ctx.clock_ns
  local t_start, n = clock(), 0
  repeat
    once()
    n = n + 1
  until n >= opt(o, 'warmup_min') and (clock() - t_start) >= opt(o, 'warmup_ms') * 1e6
  self.used.rewarm_calls = (self.used.rewarm_calls or 0) + n
end

--- Sets self.hold_ns from the option hold ('auto', false or ns) and the warm-up's enqueue times.
function M.set_hold(self, enq, calls)
  local h = self.opts.hold
  if h == nil then h = measure.DEFAULTS.hold end
  if h == false or not self.ctx.spin or self.ctx.backend == 'cpu' then
    self.hold_ns = 0
    self.used.hold = (h == false) and 'off' or 'none (cpu backend: nothing to hold)'
    if h ~= false and not self.ctx.spin then self.used.hold = 'none (ctx has no spin)' end
  elseif h == 'auto' then
    self.hold_ns = auto_hold(enq, calls, self.opts)
    self.used.hold = 'auto'
  elseif math.type(h) == 'integer' and h >= 0 then
    self.hold_ns = h
    self.used.hold = 'fixed'
  else
    error("measure: hold must be 'auto', false or an integer number of ns, got " .. tostring(h), 3)
  end
end

--- One synchronized call between two events: device ms and host enqueue ns.
function M.timed_once(ctx, e0, e1, fn)
  e0:record()
  local t0 = ctx.clock_ns()
  fn()
  local t1 = ctx.clock_ns()
  e1:record()
  ctx.synchronize()
  return ctx.elapsed_ms(e0, e1), t1 - t0
end

--- One sample behind the hold: device ms / per, enqueue ns / per, and whether the host was still
-- enqueueing when the hold ran out (the sample may hold launch overhead).
function M.held_sample(self, e0, e1, body, per)
  local ctx = self.ctx
  local clock, hold = ctx.clock_ns, self.hold_ns
  local th = clock()
  if hold > 0 then ctx.spin(hold) end
  e0:record()
  local t0 = clock()
  body()
  local t1 = clock()
  e1:record()
  local te = clock()
  ctx.synchronize()
  return ctx.elapsed_ms(e0, e1) / per, (t1 - t0) / per, hold > 0 and te - th >= hold
end

--- The median of n empty event intervals (what two events add to a sample).
function M.event_pair_ms(self, e0, e1, n)
  local ctx = self.ctx
  local xs = {}
  for i = 1, n do
    if self.hold_ns > 0 then ctx.spin(self.hold_ns) end
    e0:record()
    e1:record()
    ctx.synchronize()
    xs[i] = ctx.elapsed_ms(e0, e1)
  end
  return stats.median(xs)
end

--- The kernels of kb.trace records, internal ones left out: count, summed ms, first start to last
-- end in ms, names.
function M.trace_totals(records)
  if type(records) ~= 'table' then
    error("bad argument #1 to 'trace_totals' (list of trace records expected, got " .. type(records) .. ')', 2)
  end
  local n, sum, first, last, names = 0, 0, nil, nil, {}
  for _, r in ipairs(records) do
    if not r.internal then
      n = n + 1
      sum = sum + r.ns
      first = first and min(first, r.start_ns) or r.start_ns
      last = last and max(last, r.end_ns) or r.end_ns
      names[n] = r.name
    end
  end
  return n, sum / 1e6, n > 0 and (last - first) / 1e6 or 0, names
end

--- The kernel tracer when the option kernel_trace asks for one (cold), else nil.
function M.tracer(self)
  if not opt(self.opts, 'kernel_trace') then return nil end
  local tr = self.ctx.tracer
  if type(tr) ~= 'table' then error('cold mode: kernel_trace needs ctx.tracer (kb.trace)', 4) end
  local ok, why = tr.available()
  if not ok then error('cold mode: kernel_trace = true, but ' .. tostring(why), 4) end
  if tr.active() then error('cold mode: kernel_trace = true, but kb.trace is already on (stop it first)', 4) end
  self.trace = { sum_ms = {}, span_ms = {}, kernels = {}, names = nil }
  return tr
end

---------------------------------------------------------------------------
-- The session
---------------------------------------------------------------------------

local Session = {}
Session.__index = Session
Session.__name = 'kluabench.MeasureSession'

--- A measurement of fn by a sampling protocol (cold, hot or graph; or its module), advanced one
-- sample at a time: s:warmup(), then s:step() until true, then s:result(). opts: the fields of
-- measure.DEFAULTS, stop (a stopping criterion; default stopping.default_for(the backend)),
-- l2_bytes, sets / make_set / set_bytes / allow_warm (graph), name, and for the clock monitor:
-- nvml_device, recovery_ms, max_drops, drop_throttled. ctx defaults to measure.device().
--
-- @signature session.new(protocol, fn [, opts [, ctx]]) -> Session
-- @example
--   local session = require "kluabench.measure.session"
--   local x = kb.randn({1 << 16}, "f32", 1)
--   local s = session.new("cold", function() x:add_(1) end, {stop = kb.stopping.count(10)})
--   s:warmup()
--   while not s:step() do end
--   print(s:result().summary.median)
--   s:close()
function M.new(mode, fn, opts, ctx)
  local proto = type(mode) == 'table' and mode or nil
  if not proto then
    local ok, m = pcall(require, 'kluabench.measure.' .. tostring(mode))
    proto = ok and type(m) == 'table' and m.setup and m or nil
  end
  if not proto then
    error(string.format("bad argument #1 to 'session.new' (a sampling protocol (cold, hot or graph) expected, got %s)",
      tostring(mode)), 2)
  end
  if type(fn) ~= 'function' and not (getmetatable(fn) and getmetatable(fn).__call) then
    error(string.format("bad argument #2 to 'session.new' (function expected, got %s)", type(fn)), 2)
  end
  opts = opts or {}
  if type(opts) ~= 'table' then error("bad argument #3 to 'session.new' (table of options expected, got " .. type(opts) .. ')', 2) end
  measure.check_options('session.new', 3, opts, measure.OPTIONS)
  ctx = ctx or measure.device()
  local rule = opts.stop ~= nil and stopping.from(opts.stop) or stopping.default_for(ctx.backend)
  local self = setmetatable({
    mode = proto.name, opts = opts, ctx = ctx, rule = rule, name = opts.name,
    st = stopping.state(ctx.clock_ns), enqueue_ns = {}, hold_ns = 0,
    overruns = 0, overruns_kept = 0, dropped = 0, done = false, warmed = false,
    used = { mode = proto.name },
  }, Session)
  if opt(opts, 'clocks') and ctx.backend ~= 'cpu' then
    self.monitor = clocks.monitor { nvml = ctx.nvml, backend = ctx.backend, device = opts.nvml_device,
      clock_ns = ctx.clock_ns, sleep_ms = ctx.sleep_ms, recovery_ms = opts.recovery_ms,
      max_drops = opts.max_drops, drop_throttled = opts.drop_throttled }
  end
  proto.setup(self, fn)
  return self
end

--- Warms up (once) and reads the clocks before the point.
--
-- @signature session:warmup()
-- @example
--   local session = require "kluabench.measure.session"
--   local x = kb.randn({1 << 16}, "f32", 1)
--   local s = session.new("hot", function() x:add_(1) end, {stop = kb.stopping.count(10)})
--   s:warmup()
function Session:warmup()
  if self.warmed then return self end
  self.warmed = true
  self.warmup_fn()
  if self.monitor then self.monitor:before() end
  self.st:start()
  return self
end

-- The between-samples hook (measure's comment), with what the protocol's take needs; the time it
-- takes stays out of the stopping rule's clock.
local function between(self, i)
  local hook = self.ctx.between
  if not hook then return end
  local t = self.st.clock_ns()
  if hook(i, nil, self.audit_take or self.take, self.audit_calls, self.sets, self.audit_per) then
    rewarm(self)
    local spent = self.st.clock_ns() - t
    if self.st.t0 then self.st.t0 = self.st.t0 + spent end
    self.between_ns = (self.between_ns or 0) + spent
  end
end

--- Takes one sample; true when the stopping rule says done. A sample is retaken when the hold was
-- too short (launch overhead could be inside it) and dropped when the GPU was throttled.
--
-- @signature session:step() -> done
-- @example
--   local session = require "kluabench.measure.session"
--   local x = kb.randn({1 << 16}, "f32", 1)
--   local s = session.new("hot", function() x:add_(1) end, {stop = kb.stopping.count(10)})
--   s:warmup()
--   while not s:step() do end
function Session:step()
  if self.done then return true end
  if not self.warmed then self:warmup() end
  between(self, self.st.n + 1)
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
  if keep and self.monitor and not self.monitor:check() then
    keep = false
    self.dropped = self.dropped + 1
    self.monitor:recover()
  end
  if keep then
    self.st:add(ms)
    self.enqueue_ns[#self.enqueue_ns + 1] = enq
    local tr = self.trace
    if tr then
      local n, sum, span, names = M.trace_totals(tr.last)
      local i = #tr.sum_ms + 1
      tr.sum_ms[i], tr.span_ms[i], tr.kernels[i] = sum, span, n
      tr.names = tr.names or names
    end
  else
    self.st:tick()
  end
  local done, reason, converged = self.rule:check(self.st)
  if not done and self.st.n >= measure.MAX_SAMPLES then
    done, reason, converged = true, string.format('the sample limit (%d, measure.MAX_SAMPLES) reached',
      measure.MAX_SAMPLES), false
  end
  local cut -- 'interrupted' or 'timeout': why sampling stopped before the rule said so
  if not done and self.st.n > 0 and self.ctx.interrupted and self.ctx.interrupted() then
    done, reason, converged, cut = true, 'interrupted: stopped early with the samples taken so far', false, 'interrupted'
  end
  if not done and self.st.n > 0 and self.ctx.deadline_ns and self.ctx.clock_ns() >= self.ctx.deadline_ns then
    done, reason, converged = true, 'timeout: the deadline passed, stopped with the samples taken so far', false
    cut = 'timeout'
  end
  if done then
    if self.ctx.between then
      self.ctx.between(nil, nil, self.audit_take or self.take, self.audit_calls, self.sets, self.audit_per)
    end
    self.done = true
    self.stop = stopping.outcome(self.rule, self.st, reason, converged)
    if cut then self.stop.rule = cut end
    if self.monitor then self.monitor:after() end
  end
  return self.done
end

local function spread(xs)
  if #xs == 0 then return nil end
  local q = stats.quantiles(xs, measure.QUANTILES)
  return { median = q[1], p20 = q[2], p80 = q[3], min = stats.min(xs), max = stats.max(xs) }
end

--- The result: samples (ms, in the order taken), enqueue_ns, summary, timer, backend, stop, clocks,
-- warnings and used (what this run derived: hold, flush bytes, batch, rotation, the stopping
-- outcome, the clock summary, host enqueue quantiles, the interval of the median).
--
-- @signature session:result() -> result
-- @example
--   local session = require "kluabench.measure.session"
--   local x = kb.randn({1 << 16}, "f32", 1)
--   local s = session.new("hot", function() x:add_(1) end, {stop = kb.stopping.count(10)})
--   s:warmup()
--   while not s:step() do end
--   print(s:result().summary.median)
function Session:result()
  if not self.done then error('measure: result() before the stopping rule said done', 2) end
  local u = self.used
  local samples = self.st.samples
  u.hold_ns = self.hold_ns
  u.hold_overruns = self.overruns
  if self.overruns_kept > 0 then u.hold_overruns_kept = self.overruns_kept end
  u.samples_dropped = self.dropped
  if self.between_ns then u.audit_ms = self.between_ns / 1e6 end
  u.stop = self.stop
  u.host_enqueue_ns = spread(self.enqueue_ns)
  local summary = stats.describe(samples, self.opts.quantiles or measure.QUANTILES)
  if u.event_pair_ms then u.median_minus_event_pair_ms = summary.median - u.event_pair_ms end
  local tr = self.trace
  if tr then
    u.kernel_trace = { kernelsPerCall = median_of(tr.kernels), names = tr.names,
      sumMs = spread(tr.sum_ms), spanMs = spread(tr.span_ms) }
  end
  if summary.ci95 then
    u.median_ci_ms = { lo = summary.ci95[1], hi = summary.ci95[2], confidence = 0.95, method = 'order statistics',
      flags = summary.ci_flag or '' }
  end
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
      .. 'although the host was still enqueueing: launch overhead may be in them', self.overruns_kept, self.hold_ns)
  end
  u.warnings = #warnings > 0 and warnings or nil
  return {
    samples = samples, enqueue_ns = self.enqueue_ns, kernel_sum_ms = tr and tr.sum_ms or nil,
    kernel_span_ms = tr and tr.span_ms or nil, summary = summary, timer = self.ctx.timer, backend = self.ctx.backend,
    mode = self.mode, name = self.name, stop = self.stop, clocks = u.clocks, warnings = warnings, used = u,
  }
end

--- Frees what the session holds (graph mode's graph).
--
-- @signature session:close()
-- @example
--   local session = require "kluabench.measure.session"
--   local x = kb.randn({1 << 16}, "f32", 1)
--   session.new("hot", function() x:add_(1) end, {stop = kb.stopping.count(10)}):close()
function Session:close()
  if self.graph and self.graph.free then self.graph:free() end
  self.graph = nil
end

---------------------------------------------------------------------------
-- A sampling protocol's measurement and protocol value (what its file's measure and make are)
---------------------------------------------------------------------------

--- One measurement of fn by the protocol module proto, start to end.
function M.measure(proto, fn, opts, ctx)
  local s = M.new(proto, fn, opts, ctx)
  s:warmup()
  while not s:step() do end
  local r = s:result()
  if not opts.keep_graph then s:close() end
  return r
end

local function camel(k) return (k:gsub('_(%w)', string.upper)) end

local function camel_keys(t)
  if type(t) ~= 'table' then return t end
  local c = {}
  for k, v in pairs(t) do c[type(k) == 'string' and camel(k) or k] = camel_keys(v) end
  return c
end

--- The protocol value of a sampling protocol module with params (its stopping rule resolved).
function M.protocol(proto, params)
  local p = {}
  for k, v in pairs(params) do p[k] = v end
  p.quantiles = p.quantiles or measure.DEFAULTS.quantiles
  p.stop = stopping.from(p.stop ~= nil and p.stop or stopping.default_for(measure.device().backend))
  local mode, what = proto.name, proto.what
  return measure.protocol {
    name = mode, title = what.title, params = p,
    run = function(self, fn, ctx) return M.measure(proto, fn, self.params, measure.complete(ctx)) end,
    spec = function(self, info)
      local q = self.params
      local timer = info.timer or ((info.backend or 'cpu') == 'cuda' and 'cuda_events' or 'host_monotonic')
      local m = {
        timer = timer, primaryStatistic = 'median', method = what.method, sample = what.sample,
        l2Flush = what.l2Flush, launchOverhead = what.launchOverhead, hides = what.hides,
        quantiles = q.quantiles, stopping = camel_keys(q.stop:spec()),
        throttle = q.clocks == false and 'not monitored'
          or 'samples taken while NVML reports a power or thermal slowdown are dropped, with a pause',
      }
      for _, k in ipairs { 'warmup_ms', 'warmup_min', 'hold', 'flush_factor', 'event_pairs', 'kernel_trace', 'batch',
        'batch_ms', 'rotate', 'margin', 'launches' } do
        local v = q[k]
        if v == nil then v = measure.DEFAULTS[k] end
        local cold_only = k == 'flush_factor' or k == 'event_pairs' or k == 'kernel_trace'
        if (mode == 'cold' or not cold_only) and (mode == 'hot' or not k:match('^batch'))
            and (mode == 'graph' or (k ~= 'rotate' and k ~= 'margin' and k ~= 'launches')) then
          m[camel(k)] = v
        end
      end
      local notes = string.format('Timed: %s, via kluabench measure.%s (%s).', info.timed
        or 'the benchmarked function', mode, what.sample)
      if timer == 'host_monotonic' then
        notes = notes .. ' Run on the cpu backend: samples are host monotonic-clock times of CPU kernels, not GPU times.'
      end
      return {
        harness = { name = 'kluabench' },
        measurement = m,
        comparability = { notes = notes, family = 'kluabench_' .. mode },
      }
    end,
  }
end

return M
