-- kernel_trace (cold mode): the device's own start and end of every kernel
-- a sample ran, from kb.trace (CUPTI on cuda).
local options = require 'kluabench.measure.options'

local M = {}
local args = require 'kluabench.util.args'

local max, min = math.max, math.min
local opt = options.get

--- The kernels of kb.trace records, internal ones left out: count, summed durations, first start to
-- last end.
--
-- The internal kernels are the engine's own (the spin that holds the stream); names come in launch
-- order.
--
-- @signature measure.trace_totals(records) -> n, sum_ms, span_ms, names
-- @example
--   local x = kb.randn({1 << 20}, "f32", 1)
--   kb.trace.start()
--   x:add_(1)
--   kb.synchronize()
--   print(measure.trace_totals(kb.trace.stop()))
function M.trace_totals(records)
  args.check('measure.trace_totals', 1, records, 'table', 'list of trace records')
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

-- kb.trace for a session with kernel_trace = true (nil without), checked to
-- be usable. The cold mode switches it on around one sample only (so that
-- other sessions' samples, interleaved with this one's, are neither traced
-- nor slowed by it); the cost of switching is outside the held region.
function M.tracer(self)
  if not opt(self.opts, 'kernel_trace') then return nil end
  local tr = self.ctx.tracer
  if type(tr) ~= 'table' then error('cold mode: kernel_trace needs ctx.tracer (kb.trace)', 4) end
  local ok, why = tr.available()
  if not ok then error('cold mode: kernel_trace = true, but ' .. tostring(why), 4) end
  if tr.active() then
    error('cold mode: kernel_trace = true, but kb.trace is already on (stop it first)', 4)
  end
  self.trace = { sum_ms = {}, span_ms = {}, kernels = {}, names = nil }
  return tr
end

return M
