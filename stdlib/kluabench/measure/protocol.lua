-- The timing modes as protocol values (kluabench.measure.protocol_base),
-- so that records come for free: the spec says what the mode measures and
-- keeps out (each mode's file holds its description), with the
-- configuration that every run shares.
local bench = require 'kluabench.measure.do_bench'
local base = require 'kluabench.measure.protocol_base'
local stopping = require 'kluabench.measure.stopping'
local options = require 'kluabench.measure.options'
local device = require 'kluabench.measure.device'

local M = {}

local modes = require 'kluabench.measure.modes'

local function camel(k) return (k:gsub('_(%w)', string.upper)) end

-- A copy of t with snake_case keys camel-cased, recursively (record style).
local function camel_keys(t)
  if type(t) ~= 'table' then return t end
  local c = {}
  for k, v in pairs(t) do c[type(k) == 'string' and camel(k) or k] = camel_keys(v) end
  return c
end

--- A mode as a bench protocol value, so records come for free.
--
-- Its spec lists the configuration (the same for every run, so runs share a protocolDigest); what a
-- run derived goes into result.used.
--
-- A bench protocol value for mode (cold, hot, graph; do_bench gives
-- bench.do_bench_protocol(params)).
--
-- @signature measure.protocol(mode [, params]) -> Protocol
-- @example
--   local x = kb.randn({1 << 16}, "f32", 1)
--   local p = measure.protocol("cold", {stop = stopping.rse_median{target = 0.01}})
--   local r = p:run(function() x:add_(1) end)
function M.protocol(mode, params)
  if not modes.IS[mode] then
    error(string.format("bad argument #1 to 'protocol' (mode %s expected, got %s)", modes.listed(),
      tostring(mode)), 2)
  end
  params = params or {}
  if type(params) ~= 'table' then
    error("bad argument #2 to 'protocol' (table of parameters expected, got " .. type(params) .. ')', 2)
  end
  bench.check_options('protocol', 2, params, options.OPTIONS)
  if mode == 'do_bench' then
    -- the options of the other modes are allowed (one table for every mode), not passed on
    local d = {}
    for k, v in pairs(params) do if bench.DO_BENCH_OPTIONS[k] then d[k] = v end end
    return bench.do_bench_protocol(d)
  end
  local p = {}
  for k, v in pairs(params) do p[k] = v end
  p.quantiles = p.quantiles or options.DEFAULTS.quantiles
  p.stop = stopping.from(p.stop ~= nil and p.stop or stopping.default_for(device.device().backend))
  local what = modes.SESSION[mode].what
  return base.protocol {
    name = mode,
    title = what.title,
    params = p,
    run = function(self, fn, ctx)
      return require('kluabench.measure.run').run(mode, fn, self.params, device.complete(ctx))
    end,
    spec = function(self, info)
      local q = self.params
      local timer = info.timer or ((info.backend or 'cpu') == 'cuda' and 'cuda_events' or 'host_monotonic')
      local m = {
        timer = timer,
        primaryStatistic = 'median',
        method = what.method,
        sample = what.sample,
        l2Flush = what.l2Flush,
        launchOverhead = what.launchOverhead,
        hides = what.hides,
        quantiles = q.quantiles,
        stopping = camel_keys(q.stop:spec()),
        throttle = q.clocks == false and 'not monitored'
          or 'samples taken while NVML reports a power or thermal slowdown are dropped, with a pause',
      }
      for _, k in ipairs { 'warmup_ms', 'warmup_min', 'hold', 'flush_factor', 'event_pairs',
        'kernel_trace', 'batch', 'batch_ms', 'rotate', 'margin', 'launches' } do
        local v = q[k]
        if v == nil then v = options.DEFAULTS[k] end
        local cold_only = k == 'flush_factor' or k == 'event_pairs' or k == 'kernel_trace'
        if (mode == 'cold' or not cold_only) and (mode == 'hot' or not k:match('^batch'))
            and (mode == 'graph' or (k ~= 'rotate' and k ~= 'margin' and k ~= 'launches')) then
          m[camel(k)] = v
        end
      end
      local notes = string.format('Timed: %s, via kluabench measure.%s (%s).', info.timed
        or 'the benchmarked function', mode, what.sample)
      if timer == 'host_monotonic' then
        notes = notes .. ' Run on the cpu backend: samples are host monotonic-clock times of CPU '
          .. 'kernels, not GPU times.'
      end
      return {
        harness = { name = 'kluabench', repository = base.REPOSITORY },
        measurement = m,
        comparability = { notes = notes, family = 'kluabench_' .. mode },
      }
    end,
  }
end

return M
