-- The pieces of a sample that the cold, hot and graph modes share: the
-- warm-up, the hold (a spin kernel that keeps the stream behind the host
-- while it enqueues), one unheld call and one held sample between two
-- events, and the cost of an empty event pair. `self` is a measure session
-- (session.lua): its opts, ctx, used and hold_ns.
local stats = require 'kluabench.stats'
local options = require 'kluabench.measure.options'

local M = {}

local floor, max, min = math.floor, math.max, math.min
local opt = options.get

-- The median of xs, nil for none.
function M.median_of(xs)
  if #xs == 0 then return nil end
  return stats.median(xs)
end

local function auto_hold(enqueue_ns, calls, opts)
  -- the recent half of the warm-up (the first calls pay for module loads)
  local recent = {}
  for i = floor(#enqueue_ns / 2) + 1, #enqueue_ns do recent[#recent + 1] = enqueue_ns[i] end
  local e = M.median_of(recent) or 0
  return floor(min(max(4 * e * calls + 20000, opt(opts, 'hold_min_ns')), opt(opts, 'hold_max_ns')))
end

-- Warm-up shared by all modes: call `once` (which returns device ms and
-- enqueue ns of one unheld call) until warmup_min calls and warmup_ms.
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
  return M.median_of(recent), enq
end

-- Warms up again after the harness's audit (kluabench.suite.audit) paused the session: the same
-- calls as the warm-up (warmup_min calls and warmup_ms), not kept, and the hold left as it is. An
-- audit at a large size leaves the device idle for seconds while the host compares outputs, and
-- the samples taken right after one read 10 % slower at hidden 8192 / seq 16384 on the H200
-- (`git show 7f5c7f0:evidence/2026-12-03-final-h200/`): the device should be back where the warm-up left it.
function M.rewarm(self)
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

function M.set_hold(self, enq, calls)
  local h = self.opts.hold
  if h == nil then h = options.DEFAULTS.hold end
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

-- One unheld call between two events, synchronised: device ms and host
-- enqueue ns (what the modes' warm-ups use to size the hold and the batch).
function M.timed_once(ctx, e0, e1, fn)
  e0:record()
  local t0 = ctx.clock_ns()
  fn()
  local t1 = ctx.clock_ns()
  e1:record()
  ctx.synchronize()
  return ctx.elapsed_ms(e0, e1), t1 - t0
end

-- One held sample, the shape the cold, hot and graph modes share: the
-- stream held behind a spin, start event, body(), end event, synchronise.
-- Returns device ms and host enqueue ns (each divided by `per`, the calls
-- in body) and whether the host was slower than the hold.
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

-- The median time between a start and an end event with nothing between
-- them, held the way the samples are: what the events add to a sample.
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

return M
