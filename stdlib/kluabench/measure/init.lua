--- Timing modes: named protocols that each measure a function a different
-- way, keep every raw sample, and say in the record what they measured and
-- what they kept out. docs/MEASUREMENT.md explains each one.
--
--   cold      L2 flushed before every sample (outside the timed region); the
--             stream held behind a spin kernel while the start event, fn and
--             the end event are enqueued, so host launch overhead is not in
--             the device time. One sample = one call of fn.
--   hot       no flush; a batch of back-to-back calls between two events,
--             the stream held the same way. One sample = batch time / batch.
--             Caches are warm: this is throughput on resident data.
--   graph     fn captured `launches` times into a CUDA graph that cycles
--             through `rotate` input sets; refuses to run when the sets do
--             not cover the L2 (measure.rotation_check). One sample = one
--             replay / launches.
--   do_bench  bench.do_bench (triton's algorithm), for comparability with
--             Liger's numbers.
--
-- The cold mode also measures, during its warm-up, what an event pair with
-- nothing between costs on this device (event_pairs intervals held the same
-- way: 1.3 us on an H200), and reports the median minus it as an estimate
-- of the kernel-only time; the samples stay raw. With kernel_trace = true it
-- also records, per sample, the device's own start and end of every kernel
-- and copy fn ran (kb.trace: CUPTI on cuda), so each sample has a sum of
-- kernel durations (what Nsight Compute's gpu__time_duration adds up) and a
-- span (first start to last end: device time without the events).
--
-- Each sample also records the host time spent enqueueing fn (ns, the host
-- clock read around the call), so host overhead and device time are
-- reported apart. Between the start and the end event only fn runs (and, in
-- cold/graph/hot, two reads of the host clock, C functions of ~30 ns; the
-- held stream makes them invisible to the device anyway).
--
--   local measure = require 'kluabench.measure'
--   local r = measure.run('cold', function() kb.rope.llama4_fwd(q, k, f) end)
--   print(r.summary.median, r.used.stop.reason)
--   local p = measure.protocol('cold', { stop = stopping.rse_median { target = 0.01 } })
--   local r2 = p:run(fn)        -- a bench protocol value: records for free
local bench = require 'kluabench.measure.do_bench'
local stats = require 'kluabench.stats'
local stopping = require 'kluabench.measure.stopping'
local clocks = require 'kluabench.measure.clocks'
local inference = require 'kluabench.stats.inference'

local M = {}

local floor, ceil, max, min = math.floor, math.ceil, math.max, math.min

M.MODES = { 'cold', 'hot', 'graph', 'do_bench' }
local IS_MODE = { cold = true, hot = true, graph = true, do_bench = true }

--- Defaults of the modes (do_bench has bench.DO_BENCH_DEFAULTS instead).
M.DEFAULTS = {
  warmup_ms = 10,        -- host time spent warming up, at least warmup_min calls
  warmup_min = 3,
  hold = 'auto',         -- spin before each sample: 'auto', false, or ns
  hold_min_ns = 20000,   -- auto hold: 4 x enqueue time + 20 us, within [min, max]
  hold_max_ns = 20000000,
  flush_factor = 2,      -- cold: flush this many times the L2
  batch = 'auto',        -- hot: calls per sample; auto: enough for batch_ms of device time
  batch_ms = 0.2,
  batch_max = 1000,
  rotate = 'auto',       -- graph: input sets; auto: enough to cover margin x L2
  margin = 2,            -- graph: bytes touched between two uses of a set >= margin x L2
  launches = 'auto',     -- graph: launches per graph; auto: a multiple of rotate >= 20
  max_sets = 4096,
  quantiles = { 0.5, 0.2, 0.8 },
  clocks = true,         -- NVML monitor (inert where there is no NVML)
  event_pairs = 64,      -- cold: empty event intervals timed to calibrate (0: none)
  kernel_trace = false,  -- cold: trace fn's kernels per sample (kb.trace)
}

--- The options of measure.run, measure.session and measure.protocol, and
-- their rules (bench.check_options): the modes' (DEFAULTS) and those of
-- do_bench, so that one table of options serves every mode; an unknown
-- name or a value out of range is an error naming it.
local NS_MAX = 1e10 -- 10 s: any hold or spin beyond is a typo
local count = function(lo, hi, auto)
  return { kind = 'number', min = lo, max = hi, integer = true, one_of = auto and { 'auto' } or nil }
end
M.OPTIONS = {
  warmup_ms = { kind = 'number', min = 0, max = bench.MAX_MS },
  warmup_min = count(1, 1e6),
  hold = { kind = 'number', min = 0, max = NS_MAX, one_of = { 'auto', false } },
  hold_min_ns = { kind = 'number', min = 0, max = NS_MAX },
  hold_max_ns = { kind = 'number', min = 0, max = NS_MAX },
  flush_factor = { kind = 'number', min = 0, max = 1000 },
  batch = count(1, 1e7, true),
  batch_ms = { kind = 'number', min = 0, above = true, max = bench.MAX_MS },
  batch_max = count(1, 1e7),
  rotate = count(1, 1e6, true),
  margin = { kind = 'number', min = 1, max = 1000 },
  launches = count(1, 1e6, true),
  max_sets = count(1, 1e6),
  quantiles = { kind = 'table' },
  clocks = { kind = 'boolean' },
  event_pairs = count(0, 1e6),
  kernel_trace = { kind = 'boolean' },
  stop = { kind = 'any' }, -- stopping.from checks it
  l2_bytes = { kind = 'number', min = 0, above = true, max = 2 ^ 40 },
  sets = { kind = 'table' },
  make_set = { kind = 'function' },
  set_bytes = { kind = 'number', min = 0, above = true, max = 2 ^ 50 },
  allow_warm = { kind = 'boolean' },
  name = { kind = 'string' },
  nvml_device = { kind = 'any' }, -- an index or a UUID: clocks.lua checks it
  recovery_ms = { kind = 'number', min = 0, max = bench.MAX_MS },
  max_drops = count(0, 1e6),
  drop_throttled = { kind = 'boolean' },
  keep_graph = { kind = 'boolean' },
}
for k, rule in pairs(bench.DO_BENCH_OPTIONS) do
  if k ~= 'device' and M.OPTIONS[k] == nil then M.OPTIONS[k] = rule end
end

local function opt(opts, k)
  local v = opts[k]
  if v == nil then return M.DEFAULTS[k] end
  return v
end

---------------------------------------------------------------------------
-- The device: bench.device() plus what the modes need beyond do_bench
---------------------------------------------------------------------------

-- A stand-in for kb.graph on the cpu backend, where no capture exists: the
-- "graph" calls the captured function again on every replay. Results on cpu
-- are host times anyway; this keeps the graph mode runnable (and testable)
-- there, and the record says it was emulated.
local function emulated_graph(fn)
  return {
    emulated = true,
    replay = function(self, n)
      for _ = 1, n or 1 do fn() end
      return self
    end,
    free = function() end,
  }
end

--- bench.device() plus spin, graph, device_info, interrupted and nvml.
--
-- The engine's primitives as a ctx table: bench.device() plus spin, graph, device_info,
-- interrupted, nvml.
--
-- @signature measure.device() -> ctx
-- @example
--   local ctx = measure.device()
--   print(ctx.backend)
function M.device()
  local kb = require 'kluabench.core'
  local ctx = bench.device()
  ctx.spin = kb.spin
  ctx.device_info = kb.device_info
  ctx.interrupted = kb.interrupted
  ctx.nvml = kb.nvml
  ctx.tracer = kb.trace
  if ctx.backend == 'cuda' then
    ctx.graph = kb.graph
  else
    ctx.graph = emulated_graph
    ctx.graph_emulated = true
  end
  return ctx
end

--- ctx with what the modes need: the engine's ctx becomes measure.device(); a test's fake stays as
-- it is.
--
-- @signature measure.complete(ctx) -> ctx
-- @example
--   local ctx = measure.complete(bench.device())
function M.complete(ctx)
  if ctx == nil then return M.device() end
  local ok, kb = pcall(require, 'kluabench.core')
  if ok and type(kb) == 'table' and ctx.event == kb.event and ctx.device_info == nil then
    return M.device()
  end
  return ctx
end

local function l2_bytes_of(ctx)
  local ok, info = pcall(ctx.device_info or function() return {} end)
  local l2 = ok and type(info) == 'table' and info.l2_bytes or nil
  if not (type(l2) == 'number' and l2 > 0) then
    error('measure: the device reports no L2 size (device_info().l2_bytes); pass l2_bytes', 3)
  end
  return l2
end

---------------------------------------------------------------------------
-- Graph input rotation: the warm-cache check (pure functions)
---------------------------------------------------------------------------

--- Whether rotating input sets keeps the caches cold: min over sets of (total - own) >= margin x L2.
--
-- private_bytes lists, per set, the bytes only that set touches; margin defaults to 2. One set
-- never passes. The graph mode refuses to run when this fails.
--
-- private_bytes is a list with, for each set, the bytes that belong to it alone. The rule: min over
-- i of (total - private_bytes[i]) >= margin x l2_bytes with margin 2 by default (replacement is not
-- perfect LRU; writes allocate lines too). Returns ok, info = {sets, total_bytes, between_bytes,
-- required_bytes, l2_bytes, margin}.
--
-- @signature measure.rotation_check(private_bytes, l2_bytes [, margin]) -> ok, info
-- @example
--   local ok, info = measure.rotation_check({64e6, 64e6, 64e6}, 50e6)
--   print(ok, info.required_bytes)
function M.rotation_check(private_bytes, l2_bytes, margin)
  margin = margin or M.DEFAULTS.margin
  if type(private_bytes) ~= 'table' then
    error("bad argument #1 to 'rotation_check' (list of bytes per set expected)", 2)
  end
  if type(l2_bytes) ~= 'number' or l2_bytes <= 0 then
    error("bad argument #2 to 'rotation_check' (L2 size in bytes > 0 expected)", 2)
  end
  if type(margin) ~= 'number' or margin < 1 then
    error("bad argument #3 to 'rotation_check' (margin >= 1 expected)", 2)
  end
  local n, total = #private_bytes, 0
  for i = 1, n do total = total + private_bytes[i] end
  local between = n >= 2 and math.huge or 0
  for i = 1, n do between = min(between, total - private_bytes[i]) end
  local info = { sets = n, total_bytes = total, between_bytes = between,
    required_bytes = margin * l2_bytes, l2_bytes = l2_bytes, margin = margin }
  return between >= margin * l2_bytes, info
end

--- The number of sets of set_bytes each that passes rotation_check.
--
-- @signature measure.rotate_for(set_bytes, l2_bytes [, margin]) -> n
-- @example
--   print(measure.rotate_for(16e6, 50e6)) -- sets needed on a 50 MB L2
function M.rotate_for(set_bytes, l2_bytes, margin)
  if type(set_bytes) ~= 'number' or set_bytes <= 0 then
    error("bad argument #1 to 'rotate_for' (bytes per set > 0 expected)", 2)
  end
  margin = margin or M.DEFAULTS.margin
  return ceil(margin * l2_bytes / set_bytes) + 1
end

local function mib(b) return string.format('%.1f MiB', b / 1048576) end

--- The refusal message for a rotation that fails rotation_check.
--
-- @signature measure.rotation_message(info, set_bytes) -> text
-- @example
--   local ok, info = measure.rotation_check({1e6}, 50e6)
--   if not ok then print(measure.rotation_message(info, 1e6)) end
function M.rotation_message(info, set_bytes)
  local need = set_bytes and set_bytes > 0
    and string.format('; use rotate >= %d (or rotate = "auto")',
      M.rotate_for(set_bytes, info.l2_bytes, info.margin))
    or ''
  return string.format('graph mode refused: the rotation of %d input set(s) touches %s between '
    .. 'two uses of one set, under %g x L2 = %s, so caches would be warm%s, or pass allow_warm = '
    .. 'true to measure warm caches on purpose', info.sets, mib(info.between_bytes), info.margin,
    mib(info.required_bytes), need)
end

-- The tensors in a set (a tensor, or a table holding tensors up to three
-- levels down): anything with an nbytes method.
local function tensor_bytes(v)
  local ok, f = pcall(function() return v.nbytes end)
  if ok and type(f) == 'function' then
    local ok2, b = pcall(f, v)
    if ok2 and type(b) == 'number' then return b end
  end
  return nil
end

local function collect_tensors(v, out, depth)
  local t = type(v)
  if t ~= 'table' and t ~= 'userdata' then return end
  local b = tensor_bytes(v)
  if b then
    out[v] = b
    return
  end
  if t == 'table' and depth < 3 then
    for _, x in pairs(v) do collect_tensors(x, out, depth + 1) end
  end
end

--- The bytes private to each input set, found by tensor identity (a shared tensor counts for none).
--
-- Returns private (list), shared_bytes.
--
-- @signature measure.rotation_bytes(sets) -> private, shared_bytes
-- @example
--   local private, shared = measure.rotation_bytes({{q = q, f = f}, {q = q:clone(), f = f}})
function M.rotation_bytes(sets)
  local owners, bytes = {}, {}
  for i, s in ipairs(sets) do
    local ts = {}
    collect_tensors(s, ts, 0)
    for t, b in pairs(ts) do
      bytes[t] = b
      owners[t] = owners[t] and (owners[t] == i and i or 0) or i
    end
  end
  local private, shared = {}, 0
  for i = 1, #sets do private[i] = 0 end
  for t, o in pairs(owners) do
    if o == 0 then shared = shared + bytes[t] else private[o] = private[o] + bytes[t] end
  end
  return private, shared
end

---------------------------------------------------------------------------
-- Sessions: one measurement, taken one sample at a time
---------------------------------------------------------------------------

local Session = {}
Session.__index = Session
Session.__name = 'kluabench.MeasureSession'

local function median_of(xs)
  if #xs == 0 then return nil end
  return stats.median(xs)
end

local function auto_hold(enqueue_ns, calls, opts)
  -- the recent half of the warm-up (the first calls pay for module loads)
  local recent = {}
  for i = floor(#enqueue_ns / 2) + 1, #enqueue_ns do recent[#recent + 1] = enqueue_ns[i] end
  local e = median_of(recent) or 0
  return floor(min(max(4 * e * calls + 20000, opt(opts, 'hold_min_ns')), opt(opts, 'hold_max_ns')))
end

-- Warm-up shared by all modes: call `once` (which returns device ms and
-- enqueue ns of one unheld call) until warmup_min calls and warmup_ms.
local function warm(self, once)
  local o, clock = self.opts, self.ctx.clock_ns
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

local function set_hold(self, enq, calls)
  local h = self.opts.hold
  if h == nil then h = M.DEFAULTS.hold end
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
local function timed_once(ctx, e0, e1, fn)
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
local function held_sample(self, e0, e1, body, per)
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
local function event_pair_ms(self, e0, e1, n)
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

-- The kernels of one sample from kb.trace records: the engine's own
-- (the stream-holding spin) left out. Returns count, sum of durations and
-- span (first start to last end) in ms, and the names in launch order.
--- The kernels of kb.trace records, internal ones left out: count, summed durations, first start to
-- last end.
--
-- @signature measure.trace_totals(records) -> n, sum_ms, span_ms, names
-- @example
--   kb.trace.start()
--   fn()
--   kb.synchronize()
--   print(measure.trace_totals(kb.trace.stop()))
function M.trace_totals(records)
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

-- kernel_trace: switch kb.trace on around one sample only (so that other
-- sessions' samples, interleaved with this one's, are neither traced nor
-- slowed by it); the cost of switching is outside the held region.
local function tracer(self)
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

-- cold: flush, hold, start, fn, end; one call per sample.
local function setup_cold(self, fn)
  local ctx = self.ctx
  local flush = ctx.flush_l2
  local l2 = self.opts.l2_bytes or l2_bytes_of(ctx)
  local bytes = floor(opt(self.opts, 'flush_factor') * l2)
  local e0, e1 = ctx.event(), ctx.event()
  local flushed = flush(bytes)
  local tr = tracer(self)
  self.used.flush_bytes = type(flushed) == 'number' and flushed or bytes
  self.used.l2_bytes = l2
  local function once()
    flush(bytes)
    return timed_once(ctx, e0, e1, fn)
  end
  self.warmup_fn = function()
    local _, enq = warm(self, once)
    set_hold(self, enq, 1)
    local pairs_n = opt(self.opts, 'event_pairs')
    if pairs_n > 0 then
      self.used.event_pair_ms = event_pair_ms(self, e0, e1, pairs_n)
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
    local ms, enq, overrun = held_sample(self, e0, e1, body, 1)
    if tr then self.trace.last = tr.stop() end
    return ms, enq, overrun
  end
end

-- hot: hold, start, batch x fn, end; no flush.
local function setup_hot(self, fn)
  local ctx = self.ctx
  local e0, e1 = ctx.event(), ctx.event()
  local batch = 1
  local function body() for _ = 1, batch do fn() end end
  local function once() return timed_once(ctx, e0, e1, fn) end
  self.warmup_fn = function()
    local est_ms, enq = warm(self, once)
    local b = self.opts.batch or M.DEFAULTS.batch
    if b == 'auto' then
      b = (est_ms and est_ms > 0) and ceil(opt(self.opts, 'batch_ms') / est_ms) or 1
      b = max(1, min(b, opt(self.opts, 'batch_max')))
    elseif math.type(b) ~= 'integer' or b < 1 then
      error("measure: batch must be 'auto' or an integer >= 1, got " .. tostring(b), 3)
    end
    batch = b
    self.used.batch = b
    set_hold(self, enq, b)
  end
  self.take = function() return held_sample(self, e0, e1, body, batch) end
end

-- The input sets of the graph mode, checked against the L2.
local function graph_sets(self)
  local o = self.opts
  local l2 = o.l2_bytes or l2_bytes_of(self.ctx)
  local margin = opt(o, 'margin')
  local sets = o.sets
  if sets == nil and o.make_set then
    local rotate = opt(o, 'rotate')
    sets = { o.make_set(1) }
    if rotate == 'auto' then
      local private = M.rotation_bytes(sets)
      local b = o.set_bytes or private[1]
      if not (b and b > 0) then
        error('graph mode: make_set(1) returned no tensors; give set_bytes or sets', 3)
      end
      rotate = min(M.rotate_for(b, l2, margin), opt(o, 'max_sets'))
    elseif math.type(rotate) ~= 'integer' or rotate < 1 then
      error("graph mode: rotate must be 'auto' or an integer >= 1, got " .. tostring(rotate), 3)
    end
    for i = 2, rotate do sets[i] = o.make_set(i) end
  end
  if sets == nil then
    if not o.allow_warm then
      error('graph mode refused: no input sets to rotate (give sets or make_set), so every launch '
        .. 'would read the same, cached data; pass allow_warm = true to measure warm caches on '
        .. 'purpose', 3)
    end
    sets = { false }
  end
  local private, shared = M.rotation_bytes(sets)
  if o.set_bytes then
    for i = 1, #sets do private[i] = o.set_bytes end
  end
  local ok, info = M.rotation_check(private, l2, margin)
  info.shared_bytes = shared
  if not ok and not o.allow_warm then error(M.rotation_message(info, private[1]), 3) end
  self.used.rotation = { sets = info.sets, totalBytes = info.total_bytes,
    betweenBytes = info.between_bytes ~= math.huge and info.between_bytes or nil,
    requiredBytes = info.required_bytes, sharedBytes = shared, l2Bytes = l2, margin = margin,
    cold = ok }
  self.used.l2_bytes = l2
  return sets
end

-- graph: hold, start, replay (launches calls of fn over the rotated sets), end.
local function setup_graph(self, fn)
  local ctx = self.ctx
  if not ctx.graph then error('graph mode: ctx has no graph function', 3) end
  local sets = graph_sets(self)
  local n = #sets
  local launches = opt(self.opts, 'launches')
  if launches == 'auto' then
    launches = n * ceil(20 / n)
  elseif math.type(launches) ~= 'integer' or launches < 1 then
    error("graph mode: launches must be 'auto' or an integer >= 1, got " .. tostring(launches), 3)
  end
  local g = ctx.graph(function()
    for i = 1, launches do
      local k = (i - 1) % n + 1
      fn(sets[k] or nil, k)
    end
  end)
  self.graph = g
  self.sets = sets
  self.used.launches = launches
  self.used.graph = g.emulated and 'emulated (cpu backend: fn called on every replay)' or 'cuda graph'
  local e0, e1 = ctx.event(), ctx.event()
  local function body() g:replay(1) end
  local function once()
    local ms, enq = timed_once(ctx, e0, e1, body)
    return ms / launches, enq
  end
  self.warmup_fn = function()
    local _, enq = warm(self, once)
    set_hold(self, enq, 1)
  end
  self.take = function() return held_sample(self, e0, e1, body, launches) end
end

local SETUP = { cold = setup_cold, hot = setup_hot, graph = setup_graph }

local function check_fn(fname, fn)
  if type(fn) ~= 'function' and not (getmetatable(fn) and getmetatable(fn).__call) then
    error(string.format("bad argument #2 to '%s' (function expected, got %s)", fname, type(fn)), 3)
  end
end

--- A measurement advanced one sample at a time (what interleave drives).
--
-- A measurement of fn in `mode` (cold, hot or graph) that is advanced one sample at a time:
-- s:warmup(), then s:step() until it returns true, then s:result(). interleave.lua drives several
-- sessions this way. opts: the fields of measure.DEFAULTS, stop (a stopping criterion or what
-- stopping.from accepts; default stopping.rse_median()), l2_bytes (instead of the device's), sets /
-- make_set / set_bytes / allow_warm (graph), name, and for the clock monitor: nvml_device,
-- recovery_ms, max_drops, drop_throttled (clocks.DEFAULTS). ctx defaults to measure.device().
--
-- @signature measure.session(mode, fn [, opts [, ctx]]) -> Session
-- @example
--   local s = measure.session("cold", fn, {stop = stopping.count(10)})
--   s:warmup()
--   while not s:step() do end
--   print(s:result().summary.median)
--   s:close()
function M.session(mode, fn, opts, ctx)
  if not IS_MODE[mode] or mode == 'do_bench' then
    error(string.format("bad argument #1 to 'session' (mode cold, hot or graph expected, got %s)",
      tostring(mode)), 2)
  end
  check_fn('session', fn)
  opts = opts or {}
  if type(opts) ~= 'table' then
    error("bad argument #3 to 'session' (table of options expected, got " .. type(opts) .. ')', 2)
  end
  bench.check_options('session', 3, opts, M.OPTIONS)
  ctx = ctx or M.device()
  local rule = opts.stop ~= nil and stopping.from(opts.stop) or stopping.rse_median()
  local self = setmetatable({
    mode = mode, opts = opts, ctx = ctx, rule = rule, name = opts.name,
    st = stopping.state(ctx.clock_ns), enqueue_ns = {}, hold_ns = 0,
    overruns = 0, overruns_kept = 0, dropped = 0, done = false, warmed = false,
    used = { mode = mode },
  }, Session)
  if opt(opts, 'clocks') and ctx.backend ~= 'cpu' then
    self.monitor = clocks.monitor { nvml = ctx.nvml, backend = ctx.backend, device = opts.nvml_device,
      clock_ns = ctx.clock_ns, sleep_ms = ctx.sleep_ms, recovery_ms = opts.recovery_ms,
      max_drops = opts.max_drops, drop_throttled = opts.drop_throttled }
  end
  SETUP[mode](self, fn)
  return self
end

--- Warms up (once) and reads the clocks before the point.
--
-- @signature session:warmup()
-- @section measure
-- @example
--   s:warmup()
function Session:warmup()
  if self.warmed then return self end
  self.warmed = true
  self.warmup_fn()
  if self.monitor then self.monitor:before() end
  self.st:start()
  return self
end

--- Takes one sample; true when the stopping rule says done.
--
-- A sample is retaken when the hold was too short (launch overhead could be inside it) and dropped
-- when the GPU was throttled.
--
-- @signature session:step() -> done
-- @section measure
-- @example
--   while not s:step() do end
function Session:step()
  if self.done then return true end
  if not self.warmed then self:warmup() end
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
  if keep and self.monitor then
    local ok = self.monitor:check()
    if not ok then
      keep = false
      self.dropped = self.dropped + 1
      self.monitor:recover()
    end
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
  if not done and self.st.n >= bench.MAX_SAMPLES then
    -- a criterion that never ends (stopping.count(1e12)) must not fill the memory
    done, reason, converged = true, string.format('the sample limit (%d, bench.MAX_SAMPLES) reached',
      bench.MAX_SAMPLES), false
  end
  local interrupted = false
  if not done and self.st.n > 0 and self.ctx.interrupted and self.ctx.interrupted() then
    done, reason, converged = true, 'interrupted: stopped early with the samples taken so far', false
    interrupted = true
  end
  if done then
    self.done = true
    self.stop = stopping.outcome(self.rule, self.st, reason, converged)
    if interrupted then self.stop.rule = 'interrupted' end
    if self.monitor then self.monitor:after() end
  end
  return self.done
end

local function spread(xs)
  if #xs == 0 then return nil end
  local q = stats.quantiles(xs, { 0.5, 0.2, 0.8 })
  return { median = q[1], p20 = q[2], p80 = q[3], min = stats.min(xs), max = stats.max(xs) }
end

--- samples (ms), enqueue_ns, summary, timer, backend, stop, clocks, warnings, used.
--
-- The result: {samples (ms, in the order taken), enqueue_ns (per call of fn, same order), summary,
-- timer, backend, stop, clocks, warnings, used}. `used` holds what this run derived (hold, flush
-- bytes, batch, rotation, the stopping outcome, the clock summary, host enqueue quantiles, the 95 %
-- interval of the median): records put it in run.spec.execution.
--
-- @signature session:result() -> result
-- @section measure
-- @example
--   s:warmup()
--   while not s:step() do end
--   local r = s:result()
--   print(r.summary.median)
function Session:result()
  if not self.done then error('measure: result() before the stopping rule said done', 2) end
  local u = self.used
  local samples = self.st.samples
  u.hold_ns = self.hold_ns
  u.hold_overruns = self.overruns
  if self.overruns_kept > 0 then u.hold_overruns_kept = self.overruns_kept end
  u.samples_dropped = self.dropped
  u.stop = self.stop
  u.host_enqueue_ns = spread(self.enqueue_ns)
  if u.event_pair_ms and #samples > 0 then
    u.median_minus_event_pair_ms = stats.median(samples) - u.event_pair_ms
  end
  local tr = self.trace
  if tr then
    -- camelCase inside, like used.rotation: records copy it as it is
    u.kernel_trace = { kernelsPerCall = median_of(tr.kernels), names = tr.names,
      sumMs = spread(tr.sum_ms), spanMs = spread(tr.span_ms) }
  end
  if #samples >= 2 then
    local lo, hi = inference.median_ci(self.st.sorted, 0.95, { sorted = true })
    u.median_ci_ms = { lo = lo, hi = hi, confidence = 0.95, method = 'order statistics' }
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
      .. 'although the host was still enqueueing: launch overhead may be in them',
      self.overruns_kept, self.hold_ns)
  end
  u.warnings = #warnings > 0 and warnings or nil
  return {
    samples = samples,
    enqueue_ns = self.enqueue_ns,
    kernel_sum_ms = tr and tr.sum_ms or nil,
    kernel_span_ms = tr and tr.span_ms or nil,
    summary = stats.summary(samples),
    timer = self.ctx.timer,
    backend = self.ctx.backend,
    mode = self.mode,
    name = self.name,
    stop = self.stop,
    clocks = u.clocks,
    warnings = warnings,
    used = u,
  }
end

--- Frees what the session holds on the device (its graph).
--
-- @signature session:close()
-- @section measure
-- @example
--   s:close()
function Session:close()
  if self.graph and self.graph.free then self.graph:free() end
  self.graph = nil
end

---------------------------------------------------------------------------
-- Running a mode
---------------------------------------------------------------------------

local function run_do_bench(fn, opts, ctx)
  local _, r = bench.do_bench(fn, {
    warmup_ms = opts.warmup_ms, rep_ms = opts.rep_ms, quantiles = opts.quantiles,
    return_mode = opts.return_mode, before_each = opts.before_each, device = ctx,
  })
  local n = #r.samples
  r.used.mode = 'do_bench'
  r.used.stop = { rule = 'do_bench', converged = false, samples = n,
    reason = string.format('n_repeat = max(1, floor(rep_ms / estimate_ms)) = %d', n) }
  r.stop = r.used.stop
  r.mode = 'do_bench'
  r.warnings = {}
  return r
end

--- Measures fn in mode "cold", "hot", "graph" or "do_bench"; every raw sample is kept.
--
-- opts: the fields of measure.DEFAULTS (warmup_ms, hold, flush_factor, event_pairs, kernel_trace,
-- batch, rotate, margin, launches, quantiles, clocks, ...) and stop (a stopping criterion or what
-- stopping.from accepts; default stopping.rse_median()). result: samples (ms), enqueue_ns (host
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
--   local r = measure.run("cold", function() kb.rope.llama4_fwd(q, k, f, {inplace = true}) end,
--     {stop = stopping.count(20)})
--   print(r.summary.median, r.stop.reason)
function M.run(mode, fn, opts, ctx)
  if not IS_MODE[mode] then
    error(string.format("bad argument #1 to 'run' (mode cold, hot, graph or do_bench expected, "
      .. 'got %s)', tostring(mode)), 2)
  end
  check_fn('run', fn)
  opts = opts or {}
  if type(opts) ~= 'table' then
    error("bad argument #3 to 'run' (table of options expected, got " .. type(opts) .. ')', 2)
  end
  bench.check_options('run', 3, opts, M.OPTIONS)
  ctx = ctx or M.device()
  if mode == 'do_bench' then return run_do_bench(fn, opts, ctx) end
  local s = M.session(mode, fn, opts, ctx)
  s:warmup()
  while not s:step() do end
  local r = s:result()
  if not opts.keep_graph then s:close() end
  return r
end

---------------------------------------------------------------------------
-- Protocol values (for records)
---------------------------------------------------------------------------

local WHAT = {
  cold = {
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
  },
  hot = {
    title = 'kluabench hot protocol',
    method = 'kluabench.measure.hot',
    l2Flush = 'none: caches stay warm between calls',
    launchOverhead = 'kept out: a spin kernel holds the stream while the batch is enqueued',
    sample = 'device time of a batch of back-to-back calls divided by the batch size',
    hides = 'cold-cache costs (inputs resident in L2 when they fit); per-call launch gaps '
      .. 'overlap with the previous call',
  },
  graph = {
    title = 'kluabench graph protocol',
    method = 'kluabench.measure.graph',
    l2Flush = 'none inside the graph: the launches cycle through input sets whose private bytes '
      .. 'touched between two uses of one set are at least margin x L2 (refused otherwise)',
    launchOverhead = 'kept out: one graph launch per sample, queued behind a spin kernel; '
      .. 'inter-kernel gaps of the graph stay in',
    sample = 'device time of one graph replay divided by the launches in the graph',
    hides = 'host launch overhead per call (one graph launch for all)',
  },
}

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
--   local p = measure.protocol("cold", {stop = stopping.rse_median{target = 0.01}})
--   local r = p:run(fn)
function M.protocol(mode, params)
  if not IS_MODE[mode] then
    error(string.format("bad argument #1 to 'protocol' (mode cold, hot, graph or do_bench expected, "
      .. 'got %s)', tostring(mode)), 2)
  end
  params = params or {}
  if type(params) ~= 'table' then
    error("bad argument #2 to 'protocol' (table of parameters expected, got " .. type(params) .. ')', 2)
  end
  bench.check_options('protocol', 2, params, M.OPTIONS)
  if mode == 'do_bench' then
    -- the options of the other modes are allowed (one table for every mode), not passed on
    local d = {}
    for k, v in pairs(params) do if bench.DO_BENCH_OPTIONS[k] then d[k] = v end end
    return bench.do_bench_protocol(d)
  end
  local p = {}
  for k, v in pairs(params) do p[k] = v end
  p.quantiles = p.quantiles or M.DEFAULTS.quantiles
  p.stop = stopping.from(p.stop ~= nil and p.stop or stopping.rse_median())
  local what = WHAT[mode]
  return bench.protocol {
    name = mode,
    title = what.title,
    params = p,
    run = function(self, fn, ctx) return M.run(mode, fn, self.params, M.complete(ctx)) end,
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
        if v == nil then v = M.DEFAULTS[k] end
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
        harness = { name = 'kluabench', repository = bench.REPOSITORY },
        measurement = m,
        comparability = { notes = notes, family = 'kluabench_' .. mode },
      }
    end,
  }
end

return M
