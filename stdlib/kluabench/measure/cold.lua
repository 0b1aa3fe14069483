--- The cold protocol: one call per sample, the L2 flushed before each (outside the timed region),
-- launch overhead kept out by a hold on the stream; docs/MEASUREMENT.md.
local measure = require 'kluabench.measure'
local session = require 'kluabench.measure.session'

local M = { name = 'cold' }

local floor = math.floor
local opt = measure.option

-- cold: flush, hold, start, fn, end; one call per session.
function M.setup(self, fn)
  local ctx = self.ctx
  local flush = ctx.flush_l2
  local l2 = self.opts.l2_bytes or measure.l2_bytes(ctx)
  local bytes = floor(opt(self.opts, 'flush_factor') * l2)
  local e0, e1 = ctx.event(), ctx.event()
  local flushed = flush(bytes)
  local tr = session.tracer(self)
  self.used.flush_bytes = type(flushed) == 'number' and flushed or bytes
  self.used.l2_bytes = l2
  local function once()
    flush(bytes)
    return session.timed_once(ctx, e0, e1, fn)
  end
  self.warmup_fn = function()
    local _, enq = session.warm(self, once)
    session.set_hold(self, enq, 1)
    local pairs_n = opt(self.opts, 'event_pairs')
    if pairs_n > 0 then
      self.used.event_pair_ms = session.event_pair_ms(self, e0, e1, pairs_n)
      self.used.event_pairs = pairs_n
    end
  end
  -- traced, an error in fn must not leave the tracer on for whoever comes next
  local body = tr and function()
    local ok, err = pcall(fn)
    if not ok then tr.stop(); error(err, 0) end
  end or fn
  self.take = function()
    flush(bytes)
    if tr then tr.start() end
    local ms, enq, overrun = session.held_sample(self, e0, e1, body, 1)
    if tr then self.trace.last = tr.stop() end
    return ms, enq, overrun
  end
end

-- What the record says the mode measured and kept out.
M.what = {
  title = 'kluabench cold protocol',
  method = 'kluabench.measure.cold',
  l2Flush = 'before every sample, outside the timed region: flushFactor x L2 bytes of one '
    .. 'buffer allocated once',
  launchOverhead = 'kept out: a spin kernel holds the stream while the start event, the call '
    .. 'and the end event are enqueued (hold sized from the host enqueue time, doubled and the '
    .. 'sample retaken when the host was slower than the hold)',
  sample = 'device time of one call, between two CUDA events (which add a constant, measured '
    .. 'at warm-up as eventPairMs and reported apart: the median minus it estimates the '
    .. 'kernel-only time)',
  hides = 'host launch overhead (reported apart as host enqueue time); warm-cache effects',
}

--- This protocol as a value (measure.protocol("cold", params) makes it).
function M.make(params) return session.protocol(M, params) end

--- One measurement of fn by this protocol (measure.run("cold", fn, opts, ctx)).
function M.measure(fn, opts, ctx) return session.measure(M, fn, opts, ctx) end

return M
