--- The hot protocol: a batch of back-to-back calls per sample, caches warm, launch overhead kept
-- out by a hold on the stream; docs/MEASUREMENT.md.
local measure = require 'kluabench.measure'
local session = require 'kluabench.measure.session'

local M = { name = 'hot' }

local ceil, max, min = math.ceil, math.max, math.min
local opt = measure.option

-- hot: hold, start, batch x fn, end; no flush.
function M.setup(self, fn)
  local ctx = self.ctx
  local e0, e1 = ctx.event(), ctx.event()
  local batch = 1
  local function body() for _ = 1, batch do fn() end end
  local function once() return session.timed_once(ctx, e0, e1, fn) end
  self.warmup_fn = function()
    local est_ms, enq = session.warm(self, once)
    local b = self.opts.batch or measure.DEFAULTS.batch
    if b == 'auto' then
      b = (est_ms and est_ms > 0) and ceil(opt(self.opts, 'batch_ms') / est_ms) or 1
      b = max(1, min(b, opt(self.opts, 'batch_max')))
    elseif math.type(b) ~= 'integer' or b < 1 then
      error("measure: batch must be 'auto' or an integer >= 1, got " .. tostring(b), 3)
    end
    batch = b
    self.used.batch = b
    session.set_hold(self, enq, b)
  end
  self.take = function() return session.held_sample(self, e0, e1, body, batch) end
  -- an audit's sample is one held call: a batch would apply an in-place kernel `batch` times
  self.audit_take = function() return session.held_sample(self, e0, e1, fn, 1) end
end

-- What the record says the mode measured and kept out.
M.what = {
  title = 'kluabench hot protocol',
  method = 'kluabench.measure.hot',
  l2Flush = 'none: caches stay warm between calls',
  launchOverhead = 'kept out: a spin kernel holds the stream while the batch is enqueued',
  sample = 'device time of a batch of back-to-back calls divided by the batch size',
  hides = 'cold-cache costs (inputs resident in L2 when they fit); per-call launch gaps '
    .. 'overlap with the previous call',
}

--- This protocol as a value (measure.protocol("hot", params) makes it).
function M.make(params) return session.protocol(M, params) end

--- One measurement of fn by this protocol (measure.run("hot", fn, opts, ctx)).
function M.measure(fn, opts, ctx) return session.measure(M, fn, opts, ctx) end

return M
