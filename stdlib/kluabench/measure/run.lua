--- measure.run: one measurement of a function in any mode, start to end.
-- Its own file so that measure/protocol.lua (a mode as a record protocol,
-- whose run is this) and measure/init.lua (which gathers the API as
-- `measure`) both require it and neither requires the other.
local bench = require 'kluabench.measure.do_bench'
local options = require 'kluabench.measure.options'
local device = require 'kluabench.measure.device'
local session = require 'kluabench.measure.session'

local M = {}

local modes = require 'kluabench.measure.modes'

--- Measures fn in mode "cold", "hot", "graph" or "do_bench"; every raw sample is kept.
--
-- opts: the fields of measure.DEFAULTS (warmup_ms, hold, flush_factor, event_pairs, kernel_trace,
-- batch, rotate, margin, launches, quantiles, clocks, ...) and stop (a stopping criterion or what
-- stopping.from accepts; default stopping.default_for(the backend): rse_median, at most 2 s a session on
-- cpu). result: samples (ms), enqueue_ns (host
-- time per call), summary, timer, backend, stop, clocks, warnings and used (what the run derived,
-- for the record). The cold mode also gives used.event_pair_ms (an empty event interval, timed at
-- warm-up) and used.median_minus_event_pair_ms; with kernel_trace = true, kernel_sum_ms and
-- kernel_span_ms (per kept sample, from kb.trace) and used.kernel_trace.
--
-- Measures fn in `mode` and returns the result (see Session:result; for do_bench, bench.do_bench's
-- result with used.stop added and no enqueue times: triton's algorithm does not take them).
--
-- @signature measure.run(mode, fn [, opts [, ctx]]) -> result
-- @example
--   local q = kb.randn({1, 128, 32, 16}, "bf16", 1)
--   local k = kb.randn({1, 128, 8, 16}, "bf16", 2)
--   local f = kb.rope.freqs(128, 16)
--   local r = measure.run("cold", function() kb.rope.llama4_fwd(q, k, f, {inplace = true}) end,
--     {stop = stopping.count(20)})
--   print(r.summary.median, r.stop.reason)
function M.run(mode, fn, opts, ctx)
  if not modes.IS[mode] then
    error(string.format("bad argument #1 to 'run' (mode %s expected, got %s)", modes.listed(),
      tostring(mode)), 2)
  end
  session.check_fn('run', fn)
  opts = opts or {}
  if type(opts) ~= 'table' then
    error("bad argument #3 to 'run' (table of options expected, got " .. type(opts) .. ')', 2)
  end
  bench.check_options('run', 3, opts, options.OPTIONS)
  ctx = ctx or device.device()
  if mode == 'do_bench' then return bench.measure(fn, opts, ctx) end
  local s = session.session(mode, fn, opts, ctx)
  s:warmup()
  while not s:step() do end
  local r = s:result()
  if not opts.keep_graph then s:close() end
  return r
end

return M
