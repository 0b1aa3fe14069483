--- kb.do_bench: triton.testing.do_bench's algorithm as a function and as a protocol (the harness's default).
local args = require 'kluabench.util.args'
local measure = require 'kluabench.measure'
local stats = require 'kluabench.stats'

local M = {}

local floor, max = math.floor, math.max

--- triton.testing.do_bench flushes the L2 by zeroing a buffer of this size.
M.TRITON_FLUSH_BYTES = 256000000
--- The quantiles the harness reports, as Liger asks do_bench for them (its CSV's y_value_50/20/80).
M.QUANTILES = measure.QUANTILES
--- Defaults of do_bench (triton's).
M.DO_BENCH_DEFAULTS = { warmup_ms = 25, rep_ms = 100, return_mode = 'mean' }
--- The harness's do_bench: Liger's repetition time (rep 400 ms) and quantiles.
M.HARNESS_DEFAULTS = { warmup_ms = M.DO_BENCH_DEFAULTS.warmup_ms, rep_ms = 400, quantiles = M.QUANTILES }
--- The fewest repetitions on the cpu backend: triton's max(1, rep/estimate) can be 1 there.
M.CPU_MIN_REPEAT = 5

local RETURN_MODES = { min = true, max = true, mean = true, median = true, all = true }

local function copy(t)
  local c = {}
  for k, v in pairs(t or {}) do c[k] = v end
  return c
end

--- triton.testing.do_bench (docs/MEASUREMENT.md); opts: warmup_ms, rep_ms, quantiles, return_mode, before_each,
-- device, flush_bytes. What triton returns, and the result (samples, summary, quantiles, used: what it derived).
-- @signature do_bench.do_bench(fn [, opts]) -> value, result
-- @example
--   local x = kb.randn({4096}, "f32", 1)
--   local ms = do_bench.do_bench(function() x:add_(1) end, {rep_ms = 100, quantiles = {0.5, 0.2, 0.8}})
--   print(ms[1], ms[2], ms[3])
function M.do_bench(fn, opts)
  if type(fn) ~= 'function' and not (getmetatable(fn) and getmetatable(fn).__call) then
    error("bad argument #1 to 'do_bench' (function expected, got " .. type(fn) .. ')', 2)
  end
  opts = opts or {}
  args.check('do_bench', 2, opts, 'table', 'table of options')
  measure.check_options('do_bench', 2, opts, measure.DO_BENCH_OPTIONS)
  local warmup_ms = opts.warmup_ms or M.DO_BENCH_DEFAULTS.warmup_ms
  local rep_ms = opts.rep_ms or M.DO_BENCH_DEFAULTS.rep_ms
  local return_mode = opts.return_mode or M.DO_BENCH_DEFAULTS.return_mode
  local quantiles = opts.quantiles
  if not RETURN_MODES[return_mode] then
    error("bad argument #2 to 'do_bench' (return_mode must be min, max, mean, median or all, got "
      .. tostring(return_mode) .. ')', 2)
  end
  if quantiles ~= nil then
    if #quantiles == 0 then error("bad argument #2 to 'do_bench' (quantiles must be a non-empty list)", 2) end
    for _, q in ipairs(quantiles) do
      if type(q) ~= 'number' or not (q >= 0 and q <= 1) then
        error("bad argument #2 to 'do_bench' (quantiles must lie in [0, 1], got " .. tostring(q) .. ')', 2)
      end
    end
  end
  local before_each = opts.before_each
  local dev = measure.check_ctx('do_bench', opts.device or measure.device())
  local flush_req = opts.flush_bytes
  if flush_req == nil and dev.backend ~= 'cpu' then flush_req = M.TRITON_FLUSH_BYTES end
  local function flush() return dev.flush_l2(flush_req) end
  fn()
  -- the first flush allocates the buffer (triton's is allocated here too): out of the estimate
  local flush_bytes = flush()
  if type(flush_bytes) ~= 'number' then flush_bytes = nil end
  dev.synchronize()
  local s0, e0 = dev.event(), dev.event()
  s0:record()
  for _ = 1, 5 do
    local b = flush()
    if type(b) == 'number' then flush_bytes = b end
    fn()
  end
  e0:record()
  dev.synchronize()
  local estimate_ms = dev.elapsed_ms(s0, e0) / 5
  if not (estimate_ms > 0) then
    error(string.format('do_bench: estimated time per call is %s ms; the timer cannot resolve fn '
      .. '(give it more work)', tostring(estimate_ms)), 2)
  end
  local n_warmup = max(1, floor(warmup_ms / estimate_ms))
  local n_repeat_triton = max(1, floor(rep_ms / estimate_ms))
  local min_repeat = dev.backend == 'cpu' and M.CPU_MIN_REPEAT or 1
  local n_repeat = max(min_repeat, n_repeat_triton)
  if n_repeat > measure.MAX_SAMPLES then
    error(string.format('do_bench: rep_ms = %g ms at %.3g ms per call would take %.3g samples, more '
      .. 'than the %d one measurement keeps (measure.MAX_SAMPLES): lower rep_ms', rep_ms, estimate_ms,
      rep_ms / estimate_ms, measure.MAX_SAMPLES), 2)
  end
  local starts, ends = {}, {}
  for i = 1, n_repeat do starts[i], ends[i] = dev.event(), dev.event() end
  -- the between-samples hook takes samples of its own, synchronized
  local between = dev.between
  local function extra()
    if before_each then before_each() end
    flush()
    local s, e = dev.event(), dev.event()
    s:record()
    fn()
    e:record()
    dev.synchronize()
    return dev.elapsed_ms(s, e)
  end
  for _ = 1, n_warmup do fn() end
  for i = 1, n_repeat do
    if between and between(i, n_repeat, extra) then
      for _ = 1, n_warmup do fn() end
    end
    if before_each then before_each() end
    flush()
    starts[i]:record()
    fn()
    ends[i]:record()
  end
  dev.synchronize()
  if between then between(nil, n_repeat, extra) end
  local samples = {}
  for i = 1, n_repeat do samples[i] = dev.elapsed_ms(starts[i], ends[i]) end
  local summary = stats.describe(samples, quantiles or M.QUANTILES)
  local result = {
    samples = samples, summary = summary, timer = dev.timer, backend = dev.backend,
    used = {
      estimate_ms = estimate_ms, estimate_calls = 5, n_warmup = n_warmup, n_repeat = n_repeat,
      warmup_ms = warmup_ms, rep_ms = rep_ms, quantiles = quantiles and copy(quantiles) or nil,
      return_mode = return_mode, flush_bytes = flush_bytes, min_repeat = min_repeat,
      n_repeat_triton = n_repeat_triton < n_repeat and n_repeat_triton or nil,
      median_ci_ms = M.median_ci_of(summary),
    },
  }
  local value
  if quantiles then
    result.quantiles = summary.quantiles
    value = #quantiles == 1 and result.quantiles[1] or copy(result.quantiles)
  elseif return_mode == 'all' then
    value = copy(samples)
  else
    value = summary[return_mode]
  end
  return value, result
end

--- do_bench as a protocol's measurement: do_bench.do_bench's result, with the stop it made.
-- @signature do_bench.measure(fn [, opts [, ctx]]) -> result
-- @example
--   local x = kb.randn({4096}, "f32", 1)
--   print(do_bench.measure(function() x:add_(1) end, {rep_ms = 5}).used.n_repeat)
function M.measure(fn, opts, ctx)
  opts = opts or {}
  local _, r = M.do_bench(fn, {
    warmup_ms = opts.warmup_ms, rep_ms = opts.rep_ms, quantiles = opts.quantiles,
    return_mode = opts.return_mode, before_each = opts.before_each, flush_bytes = opts.flush_bytes,
    device = ctx or measure.device(),
  })
  local n = #r.samples
  r.used.mode = 'do_bench'
  r.used.stop = { rule = 'do_bench', converged = false, samples = n,
    reason = string.format('n_repeat = max(%d, floor(rep_ms / estimate_ms)) = %d', r.used.min_repeat or 1, n) }
  r.stop, r.mode, r.warnings = r.used.stop, 'do_bench', {}
  return r
end

--- The interval of the median a summary holds, as the evidence records it; nil for n < 2.
-- @signature do_bench.median_ci_of(summary) -> {lo, hi, confidence, method, flags} | nil
-- @example print(do_bench.median_ci_of(kb.stats.describe({1, 2, 3, 4, 5})).lo)
function M.median_ci_of(summary)
  args.check('do_bench.median_ci_of', 1, summary, 'table', 'summary (stats.describe)')
  if not summary.ci95 then return nil end
  return { lo = summary.ci95[1], hi = summary.ci95[2], confidence = 0.95, method = 'order statistics',
    flags = summary.ci_flag or '' }
end

local function quantile_text(qs)
  local parts = {}
  for i, q in ipairs(qs) do parts[i] = string.format('%g', q) end
  return table.concat(parts, '/')
end

local function spread_text(qs)
  local others, has_median = {}, false
  for _, q in ipairs(qs) do
    if q == 0.5 then has_median = true else others[#others + 1] = 'p' .. string.format('%g', q * 100) end
  end
  local s = has_median and 'median' or 'quantiles'
  if #others > 0 then s = s .. (has_median and ' with ' or ' ') .. table.concat(others, '/') .. ' spread' end
  return s
end

--- do_bench as a protocol value: warmup_ms, rep_ms, quantiles and return_mode (triton's defaults).
-- @signature do_bench.do_bench_protocol([params]) -> protocol
-- @example
--   local x = kb.randn({4096}, "f32", 1)
--   print(do_bench.do_bench_protocol{rep_ms = 5}:run(function() x:add_(1) end).summary.median)
function M.do_bench_protocol(params)
  args.check('do_bench_protocol', 1, params, 'table|nil', 'table of parameters')
  measure.check_options('do_bench_protocol', 1, params or {}, measure.DO_BENCH_OPTIONS)
  params = copy(params)
  params.warmup_ms = params.warmup_ms or M.DO_BENCH_DEFAULTS.warmup_ms
  params.rep_ms = params.rep_ms or M.DO_BENCH_DEFAULTS.rep_ms
  params.quantiles = params.quantiles or M.QUANTILES
  params.return_mode = params.return_mode or M.DO_BENCH_DEFAULTS.return_mode
  return measure.protocol {
    name = 'do_bench', title = 'do_bench', params = params,
    run = function(self, fn, ctx) return M.measure(fn, self.params, ctx) end,
    spec = function(self, info)
      local p = self.params
      local timer = info.timer or ((info.backend or 'cpu') == 'cuda' and 'cuda_events' or 'host_monotonic')
      local notes = string.format('Timed: %s, via kluabench bench.do_bench (the algorithm of triton.testing.'
        .. 'do_bench: 5-call estimate, warm-up %g ms, repetitions %g ms, L2 flushed before every repetition outside '
        .. 'the timed region) with quantiles %s (%s).', info.timed or 'the benchmarked function', p.warmup_ms,
        p.rep_ms, quantile_text(p.quantiles), spread_text(p.quantiles))
      local cpu = (info.backend or 'cpu') == 'cpu'
      if timer == 'host_monotonic' then
        notes = notes .. ' Run on the cpu backend: samples are host monotonic-clock times of CPU kernels, not GPU times.'
      end
      if cpu then
        notes = notes .. string.format(' Unlike triton, at least %d repetitions are taken on the cpu '
          .. '(triton takes max(1, rep/estimate), which the flush inside the estimate can make 1), and '
          .. 'the flush writes twice the last-level cache instead of 256 MB.', M.CPU_MIN_REPEAT)
      end
      notes = notes .. ' Comparable only within one kernel, workload, timed pass, and device.'
      return {
        harness = { name = 'kluabench' },
        measurement = {
          timer = timer, primaryStatistic = 'median', method = 'triton.testing.do_bench',
          warmupMs = p.warmup_ms, repMs = p.rep_ms, quantiles = copy(p.quantiles), estimateCalls = 5,
          minRepeat = cpu and M.CPU_MIN_REPEAT or nil,
          l2Flush = 'before every repetition, outside the timed region (inside the 5-call estimate, as in triton)',
        },
        comparability = { notes = notes, family = 'triton_do_bench' },
      }
    end,
  }
end

--- The registry's constructor (measure.protocol("do_bench", params)): a protocol of do_bench's own params.
-- @signature do_bench.make([params]) -> protocol
-- @example print(do_bench.make{rep_ms = 5, warmup_ms = 1}.params.rep_ms) --> 5
function M.make(params)
  args.check('do_bench.make', 1, params, 'table|nil', 'table of parameters')
  local d = {}
  for k, v in pairs(params or {}) do if measure.DO_BENCH_OPTIONS[k] then d[k] = v end end
  return M.do_bench_protocol(d)
end

return M
