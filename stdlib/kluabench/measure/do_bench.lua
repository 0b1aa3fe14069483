--- kb.do_bench: triton.testing.do_bench's algorithm, do_bench as one of measure's modes
-- (do_bench.measure) and as a protocol value (do_bench_protocol). The protocol base that it and
-- the other modes are built on (protocol values, the engine's device table, option checks) is
-- measure/protocol_base.lua; this module re-exports it under its old names (do_bench.protocol,
-- do_bench.device, do_bench.check_options, ...), which docs/API.md documents.
local base = require 'kluabench.measure.protocol_base'

local M = {}
local args = require 'kluabench.util.args'
local stats = require 'kluabench.stats'

local floor, max = math.floor, math.max

-- the protocol base, under this module's names
M.device, M.protocol, M.is_protocol, M.check_options = base.device, base.protocol, base.is_protocol, base.check_options
M.MAX_MS, M.MAX_SAMPLES = base.MAX_MS, base.MAX_SAMPLES
local check_ctx, copy = base.check_ctx, base.copy

---------------------------------------------------------------------------
-- do_bench: triton.testing.do_bench's algorithm
---------------------------------------------------------------------------
--- triton.testing.do_bench flushes the L2 by zeroing a buffer of this size.
M.TRITON_FLUSH_BYTES = 256000000

--- The options of do_bench and their rules (check_options).
M.DO_BENCH_OPTIONS = {
  warmup_ms = { kind = 'number', min = 0, max = M.MAX_MS },
  rep_ms = { kind = 'number', min = 0, above = true, max = M.MAX_MS },
  quantiles = { kind = 'table' },
  return_mode = { kind = 'string' },
  before_each = { kind = 'function' },
  device = { kind = 'table' },
  flush_bytes = { kind = 'number', min = 0, max = 2 ^ 40, integer = true },
}

--- The quantiles the harness reports, in this order: median, p20, p80, as Liger-Kernel's
-- benchmarks ask triton.testing.do_bench for them (the y_value_50/20/80 columns of its CSV).
M.QUANTILES = { 0.5, 0.2, 0.8 }

--- Defaults of do_bench (triton's).
M.DO_BENCH_DEFAULTS = { warmup_ms = 25, rep_ms = 100, return_mode = 'mean' }

--- What the harness (kluabench.suite) asks of do_bench unless a script or --rep-ms /
-- --warmup-ms says otherwise: Liger-Kernel's benchmarks' call, do_bench(fn, rep=400,
-- quantiles=QUANTILES), with triton's warm-up.
M.HARNESS_DEFAULTS = { warmup_ms = M.DO_BENCH_DEFAULTS.warmup_ms, rep_ms = 400, quantiles = M.QUANTILES }

--- The fewest repetitions do_bench takes on the cpu backend. Triton takes
-- max(1, rep_ms / estimate), and on a CPU a slow call (or the flush inside
-- the 5-call estimate) can make the estimate exceed rep_ms: one sample, no
-- median worth the name, nothing a comparison can use. This is where the
-- cpu backend departs from triton's algorithm (its records say so); the
-- cuda backend keeps triton's minimum of 1.
M.CPU_MIN_REPEAT = 5

local RETURN_MODES = { min = true, max = true, mean = true, median = true, all = true }

--- Times fn with the algorithm of triton.testing.do_bench.
--
-- The steps: 1. fn() once, one flush (the engine allocates its flush buffer on the first one, as
-- triton allocates its buffer at this point), synchronize; 2. a 5-call estimate, the L2 flushed
-- before each call inside the timed region (as triton has it); 3. n_warmup = max(1,
-- floor(warmup_ms / estimate_ms)) calls; 4. n_repeat = max(min_repeat, floor(rep_ms / estimate_ms))
-- repetitions, each: opts.before_each(), flush the L2, start event, fn(), end event; 5. one
-- synchronize. min_repeat is triton's 1, except on the cpu backend (do_bench.CPU_MIN_REPEAT, 5).
--
-- The flush writes opts.flush_bytes: by default triton's 256 MB on a GPU
-- (bench.TRITON_FLUSH_BYTES), and on the cpu backend kb.flush_l2's default, twice the last-level
-- cache (256 MB there would add tens of milliseconds to every repetition of a CPU run).
--
-- opts: warmup_ms (25), rep_ms (100), quantiles, return_mode ("mean"; min, max, median, all),
-- before_each, device (a ctx table like bench.device()), flush_bytes; an unknown option or a value
-- out of range (rep_ms and warmup_ms at most bench.MAX_MS, an hour) is an error naming it, and a
-- run that would keep more than bench.MAX_SAMPLES samples is refused. value is what triton returns
-- (the quantiles when given); result has samples (ms), summary, quantiles and used (every number
-- the run derived: estimate_ms, n_warmup, n_repeat, flush_bytes, min_repeat, and n_repeat_triton
-- when the cpu minimum took more repetitions than triton would have).
--
-- @signature do_bench.do_bench(fn [, opts]) -> value, result
-- @example
--   local q = kb.randn({1, 2048, 32, 16}, "bf16", 1)
--   local k = kb.randn({1, 2048, 8, 16}, "bf16", 2)
--   local f = kb.rope.freqs(2048, 16)
--   local ms = do_bench.do_bench(function() kb.rope.llama4_fwd(q, k, f) end,
--     {rep_ms = 400, quantiles = {0.5, 0.2, 0.8}})
--   print(ms[1], ms[2], ms[3])
function M.do_bench(fn, opts)
  if type(fn) ~= 'function' and not (getmetatable(fn) and getmetatable(fn).__call) then
    error("bad argument #1 to 'do_bench' (function expected, got " .. type(fn) .. ')', 2)
  end
  opts = opts or {}
  if type(opts) ~= 'table' then
    error("bad argument #2 to 'do_bench' (table of options expected, got " .. type(opts) .. ')', 2)
  end
  M.check_options('do_bench', 2, opts, M.DO_BENCH_OPTIONS)
  local warmup_ms = opts.warmup_ms or M.DO_BENCH_DEFAULTS.warmup_ms
  local rep_ms = opts.rep_ms or M.DO_BENCH_DEFAULTS.rep_ms
  local return_mode = opts.return_mode or M.DO_BENCH_DEFAULTS.return_mode
  local quantiles = opts.quantiles
  if type(warmup_ms) ~= 'number' or warmup_ms < 0 then
    error("bad argument #2 to 'do_bench' (warmup_ms must be a number >= 0)", 2)
  end
  if type(rep_ms) ~= 'number' or rep_ms <= 0 then
    error("bad argument #2 to 'do_bench' (rep_ms must be a number > 0)", 2)
  end
  if not RETURN_MODES[return_mode] then
    error("bad argument #2 to 'do_bench' (return_mode must be min, max, mean, median or all, got "
      .. tostring(return_mode) .. ')', 2)
  end
  if quantiles ~= nil then
    if type(quantiles) ~= 'table' or #quantiles == 0 then
      error("bad argument #2 to 'do_bench' (quantiles must be a non-empty list)", 2)
    end
    for _, q in ipairs(quantiles) do
      if type(q) ~= 'number' or not (q >= 0 and q <= 1) then
        error("bad argument #2 to 'do_bench' (quantiles must lie in [0, 1], got " .. tostring(q) .. ')', 2)
      end
    end
  end
  local before_each = opts.before_each
  local dev = check_ctx('do_bench', opts.device or M.device())
  -- nil: kb.flush_l2's default, twice the last-level cache (the cpu backend)
  local flush_req = opts.flush_bytes
  if flush_req == nil and dev.backend ~= 'cpu' then flush_req = M.TRITON_FLUSH_BYTES end
  local function flush() return dev.flush_l2(flush_req) end

  fn()
  -- triton allocates its flush buffer here, before the estimate; the engine
  -- allocates (and first touches) its own on the first flush, so that first
  -- flush happens here too and stays out of the estimate
  local flush_bytes = flush()
  if type(flush_bytes) ~= 'number' then flush_bytes = nil end
  dev.synchronize()

  -- Estimate, with the flush inside the measured region as triton has it.
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
  if n_repeat > M.MAX_SAMPLES then
    error(string.format('do_bench: rep_ms = %g ms at %.3g ms per call would take %.3g samples, more '
      .. 'than the %d one measurement keeps (bench.MAX_SAMPLES): lower rep_ms', rep_ms, estimate_ms,
      rep_ms / estimate_ms, M.MAX_SAMPLES), 2)
  end

  local starts, ends = {}, {}
  for i = 1, n_repeat do starts[i], ends[i] = dev.event(), dev.event() end
  -- the harness's audits (kluabench.trust.audit): extra repetitions, synchronised, not kept
  local audit = dev.audit
  local plan = audit and audit:plan(n_repeat)
  local function audited()
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
    if plan and plan[i] then
      audit:run(audited)
      -- warmed up again: the audit left the device idle while the host compared (sample.rewarm)
      for _ = 1, n_warmup do fn() end
    end
    if before_each then before_each() end
    flush()
    starts[i]:record()
    fn()
    ends[i]:record()
  end
  dev.synchronize()
  if audit then audit:run(audited) end

  local samples = {}
  for i = 1, n_repeat do samples[i] = dev.elapsed_ms(starts[i], ends[i]) end

  local result = {
    samples = samples,
    summary = stats.describe(samples, quantiles or M.QUANTILES),
    timer = dev.timer,
    backend = dev.backend,
    used = {
      estimate_ms = estimate_ms,
      estimate_calls = 5,
      n_warmup = n_warmup,
      n_repeat = n_repeat,
      warmup_ms = warmup_ms,
      rep_ms = rep_ms,
      quantiles = quantiles and copy(quantiles) or nil,
      return_mode = return_mode,
      flush_bytes = flush_bytes,
      min_repeat = min_repeat,
      n_repeat_triton = n_repeat_triton < n_repeat and n_repeat_triton or nil,
    },
  }
  local value
  result.used.median_ci_ms = M.median_ci_of(result.summary)
  if quantiles then
    result.quantiles = result.summary.quantiles
    value = #quantiles == 1 and result.quantiles[1] or copy(result.quantiles)
  elseif return_mode == 'all' then
    value = copy(samples)
  elseif return_mode == 'mean' then
    value = result.summary.mean
  else
    value = result.summary[return_mode]
  end
  return value, result
end

--- do_bench as one of measure's modes: its result with what every mode's result has.
--
-- The one way do_bench is run as a mode: measure.run("do_bench", ...) and the protocol of
-- do_bench_protocol and measure.protocol("do_bench") call it. opts: do_bench's (warmup_ms, rep_ms,
-- quantiles, return_mode, before_each, flush_bytes); others are ignored. The result is
-- do_bench's with mode = "do_bench", warnings (none) and stop (the rule do_bench followed:
-- n_repeat repetitions, never a convergence), also in used.
--
-- @signature do_bench.measure(fn [, opts [, ctx]]) -> result
-- @example
--   local x = kb.randn({1 << 16}, "f32", 1)
--   local r = do_bench.measure(function() x:add_(1) end, {rep_ms = 20})
--   print(r.stop.reason, r.summary.median)
function M.measure(fn, opts, ctx)
  opts = opts or {}
  local _, r = M.do_bench(fn, {
    warmup_ms = opts.warmup_ms, rep_ms = opts.rep_ms, quantiles = opts.quantiles,
    return_mode = opts.return_mode, before_each = opts.before_each, flush_bytes = opts.flush_bytes,
    device = ctx or M.device(),
  })
  local n = #r.samples
  r.used.mode = 'do_bench'
  r.used.stop = { rule = 'do_bench', converged = false, samples = n,
    -- min_repeat is 1 as in triton, CPU_MIN_REPEAT on the cpu backend
    reason = string.format('n_repeat = max(%d, floor(rep_ms / estimate_ms)) = %d', r.used.min_repeat or 1, n) }
  r.stop = r.used.stop
  r.mode = 'do_bench'
  r.warnings = {}
  return r
end

--- The 95 % interval of the median as results keep it (used.median_ci_ms, in records' evidence
-- execution.medianCiMs): lo, hi, confidence, method, and flags (stats.describe's ci_flag, '' for
-- none); nil with fewer than 2 samples.
--
-- @signature do_bench.median_ci_of(summary) -> table | nil
-- @example
--   local d = stats.describe({0.11, 0.1, 0.13, 0.12, 0.1})
--   print(do_bench.median_ci_of(d).flags) --> ci=range
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

--- What a list of quantiles reports, in words: "median with p20/p80 spread".
local function spread_text(qs)
  local others = {}
  local has_median = false
  for _, q in ipairs(qs) do
    if q == 0.5 then has_median = true else others[#others + 1] = 'p' .. string.format('%g', q * 100) end
  end
  local s = has_median and 'median' or 'quantiles'
  if #others > 0 then s = s .. (has_median and ' with ' or ' ') .. table.concat(others, '/') .. ' spread' end
  return s
end

--- do_bench.do_bench as a protocol value (quantiles 0.5/0.2/0.8 by default, as Liger).
--
-- params: warmup_ms, rep_ms, quantiles, return_mode, before_each. Its spec states the
-- configuration; the values derived per run (estimate, repetitions) go into the run record.
--
-- Its spec carries the configuration (not the values derived per run: those are in result.used, and
-- records put them in the run, so that every run of one protocol has one protocolDigest).
--
-- @signature do_bench.do_bench_protocol([params]) -> Protocol
-- @example
--   local x = kb.randn({1 << 20}, "f32", 1)
--   local p = do_bench.do_bench_protocol{rep_ms = 50}
--   local r = p:run(function() x:add_(1) end)
--   print(r.summary.median)
function M.do_bench_protocol(params)
  if params ~= nil and type(params) ~= 'table' then
    error("bad argument #1 to 'do_bench_protocol' (table of parameters expected, got " .. type(params) .. ')', 2)
  end
  M.check_options('do_bench_protocol', 1, params or {}, M.DO_BENCH_OPTIONS)
  params = copy(params)
  params.warmup_ms = params.warmup_ms or M.DO_BENCH_DEFAULTS.warmup_ms
  params.rep_ms = params.rep_ms or M.DO_BENCH_DEFAULTS.rep_ms
  params.quantiles = params.quantiles or M.QUANTILES
  params.return_mode = params.return_mode or M.DO_BENCH_DEFAULTS.return_mode
  return M.protocol {
    name = 'do_bench',
    title = 'do_bench',
    params = params,
    run = function(self, fn, ctx) return M.measure(fn, self.params, ctx) end,
    spec = function(self, info)
      local p = self.params
      local timer = info.timer or ((info.backend or 'cpu') == 'cuda' and 'cuda_events' or 'host_monotonic')
      local timed = info.timed or 'the benchmarked function'
      local notes = string.format('Timed: %s, via kluabench bench.do_bench (the algorithm of '
        .. 'triton.testing.do_bench: 5-call estimate, warm-up %g ms, repetitions %g ms, L2 flushed '
        .. 'before every repetition outside the timed region) with quantiles %s (%s).', timed,
        p.warmup_ms, p.rep_ms, quantile_text(p.quantiles), spread_text(p.quantiles))
      local cpu = (info.backend or 'cpu') == 'cpu'
      if timer == 'host_monotonic' then
        notes = notes .. ' Run on the cpu backend: samples are host monotonic-clock times of CPU '
          .. 'kernels, not GPU times.'
      end
      if cpu then
        notes = notes .. string.format(' Unlike triton, at least %d repetitions are taken on the cpu '
          .. '(triton takes max(1, rep/estimate), which the flush inside the estimate can make 1), and '
          .. 'the flush writes twice the last-level cache instead of 256 MB.', M.CPU_MIN_REPEAT)
      end
      notes = notes .. ' Comparable only within one kernel, workload, timed pass, and device.'
      return {
        harness = { name = 'kluabench', repository = base.REPOSITORY },
        measurement = {
          timer = timer,
          primaryStatistic = 'median',
          method = 'triton.testing.do_bench',
          warmupMs = p.warmup_ms,
          repMs = p.rep_ms,
          quantiles = copy(p.quantiles),
          estimateCalls = 5,
          minRepeat = cpu and M.CPU_MIN_REPEAT or nil,
          l2Flush = 'before every repetition, outside the timed region (inside the 5-call estimate, '
            .. 'as in triton)',
        },
        comparability = { notes = notes, family = 'triton_do_bench' },
      }
    end,
  }
end

return M
