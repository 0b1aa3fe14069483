-- The cold mode: the L2 flushed before every sample (outside the timed
-- region), the stream held behind a spin while the start event, fn and the
-- end event are enqueued; one call per sample. Its warm-up also times an
-- empty event pair (what the events add to a sample), and with
-- kernel_trace = true each sample's kernels are traced.
local sample = require 'kluabench.measure.sample'
local options = require 'kluabench.measure.options'
local device = require 'kluabench.measure.device'
local trace = require 'kluabench.measure.trace'

local M = {}

local floor = math.floor
local opt = options.get

-- cold: flush, hold, start, fn, end; one call per sample.
function M.setup(self, fn)
  local ctx = self.ctx
  local flush = ctx.flush_l2
  local l2 = self.opts.l2_bytes or device.l2_bytes(ctx)
  local bytes = floor(opt(self.opts, 'flush_factor') * l2)
  local e0, e1 = ctx.event(), ctx.event()
  local flushed = flush(bytes)
  local tr = trace.tracer(self)
  self.used.flush_bytes = type(flushed) == 'number' and flushed or bytes
  self.used.l2_bytes = l2
  local function once()
    flush(bytes)
    return sample.timed_once(ctx, e0, e1, fn)
  end
  self.warmup_fn = function()
    local _, enq = sample.warm(self, once)
    sample.set_hold(self, enq, 1)
    local pairs_n = opt(self.opts, 'event_pairs')
    if pairs_n > 0 then
      self.used.event_pair_ms = sample.event_pair_ms(self, e0, e1, pairs_n)
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
    local ms, enq, overrun = sample.held_sample(self, e0, e1, body, 1)
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

return M
