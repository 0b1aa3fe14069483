-- Timing modes (measure/): what each mode queues and in which order, the
-- hold that keeps launch overhead out, the graph rotation's warm-cache
-- refusal, throttled samples, and what goes into the record. The CPU-side
-- specs use a fake device whose clock the test moves; the #gpu ones time
-- real kernels.
local measure = require 'kluabench.measure'
local stopping = require 'kluabench.measure.stopping'
local verify = require 'kluabench.record.verify'
local graph = require 'kluabench.measure.graph'
local session = require 'kluabench.measure.session'

-- A fake device: events record a clock that only fn moves, every device
-- call is logged in `trace`. backend 'cuda' so that the hold logic runs.
local function fake_ctx(o)
  o = o or {}
  local now = 0
  local trace = {}
  local ctx = { backend = o.backend or 'cuda', timer = 'fake', capturing = false }
  ctx.trace = trace
  function ctx.clock_ns() return now end
  function ctx.advance(ns) now = now + ns end
  function ctx.event()
    return { record = function(self) self.t = now; trace[#trace + 1] = 'record' end }
  end
  function ctx.elapsed_ms(a, b) return (b.t - a.t) / 1e6 end
  function ctx.synchronize() trace[#trace + 1] = 'sync' end
  function ctx.flush_l2(bytes) trace[#trace + 1] = 'flush'; ctx.flushed = bytes; return bytes end
  function ctx.spin(ns) trace[#trace + 1] = 'spin'; ctx.spun = ns end
  function ctx.device_info() return { l2_bytes = o.l2 or (1 << 20) } end
  function ctx.sleep_ms(ms) ctx.slept = (ctx.slept or 0) + ms; now = now + ms * 1e6 end
  function ctx.graph(fn)
    trace[#trace + 1] = 'capture'
    ctx.capturing = true
    fn()
    ctx.capturing = false
    return {
      replay = function(self, n)
        trace[#trace + 1] = 'replay'
        for _ = 1, n or 1 do fn() end
      end,
      free = function() trace[#trace + 1] = 'free' end,
    }
  end
  ctx.nvml = o.nvml
  return ctx
end

-- fn that takes durations[i] ns on its i-th call (the last one repeats).
local function timed_fn(ctx, durations)
  local i = 0
  return function()
    if ctx.capturing then return end
    i = i + 1
    ctx.trace[#ctx.trace + 1] = 'fn'
    ctx.advance(durations[math.min(i, #durations)])
  end
end

local function tail(t, n)
  return table.move(t, #t - n + 1, #t, 1, {})
end

-- A fake tensor of b bytes.
local function tensor(b) return { nbytes = function() return b end } end

local QUICK = { warmup_ms = 0, warmup_min = 3, clocks = false }
local function with(t, extra)
  local c = {}
  for k, v in pairs(t) do c[k] = v end
  for k, v in pairs(extra or {}) do c[k] = v end
  return c
end

describe('measure: cold', function()
  it('flushes, holds the stream, then records start, calls fn, records end', function()
    local ctx = fake_ctx()
    local r = measure.run('cold', timed_fn(ctx, { 5000 }), with(QUICK, { stop = 4 }), ctx)
    -- the last sample, exactly: nothing but fn between the two events
    assert.same({ 'flush', 'spin', 'record', 'fn', 'record', 'sync' }, tail(ctx.trace, 6))
    assert.same({ 0.005, 0.005, 0.005, 0.005 }, r.samples)
    assert.same({ 5000, 5000, 5000, 5000 }, r.enqueue_ns)
    assert.equal(2 * (1 << 20), ctx.flushed) -- 2 x L2
    assert.equal(2 * (1 << 20), r.used.flush_bytes)
    -- auto hold: 4 x enqueue + 20 us
    assert.equal(40000, r.used.hold_ns)
    assert.equal(40000, ctx.spun)
    assert.equal(3, r.used.warmup_calls)
    assert.equal('count', r.stop.rule)
    assert.is_false(r.stop.converged)
    assert.equal(4, r.summary.n)
  end)

  it('retakes a sample and doubles the hold when the host outran it', function()
    local ctx = fake_ctx()
    -- 3 warm-up calls of 5 us (hold 40 us), then one call of 100 us
    local r = measure.run('cold', timed_fn(ctx, { 5000, 5000, 5000, 100000, 5000 }),
      with(QUICK, { stop = 2 }), ctx)
    assert.same({ 0.005, 0.005 }, r.samples)
    assert.equal(1, r.used.hold_overruns)
    assert.equal(80000, r.used.hold_ns)
  end)

  it('keeps the sample (and warns) once the hold is at its maximum', function()
    local ctx = fake_ctx()
    local r = measure.run('cold', timed_fn(ctx, { 5000, 5000, 5000, 100000 }),
      with(QUICK, { stop = 1, hold_max_ns = 40000 }), ctx)
    assert.same({ 0.1 }, r.samples)
    assert.equal(1, r.used.hold_overruns_kept)
    assert.matches('launch overhead may be in them', r.warnings[1], 1, true)
  end)

  it('holds nothing on cpu and when told not to', function()
    local ctx = fake_ctx { backend = 'cpu' }
    local r = measure.run('cold', timed_fn(ctx, { 5000 }), with(QUICK, { stop = 2 }), ctx)
    assert.equal(0, r.used.hold_ns)
    assert.same({ 'flush', 'record', 'fn', 'record', 'sync' }, tail(ctx.trace, 5))
    ctx = fake_ctx()
    r = measure.run('cold', timed_fn(ctx, { 5000 }), with(QUICK, { stop = 2, hold = false }), ctx)
    assert.equal('off', r.used.hold)
  end)

  it('stops by its rule and says so: converged on quiet samples', function()
    local ctx = fake_ctx()
    local r = measure.run('cold', timed_fn(ctx, { 5000 }), with(QUICK, {
      stop = stopping.rse_median { target = 0.01, min_samples = 20, min_time_ms = 0.05 } }), ctx)
    assert.equal(20, #r.samples)
    assert.equal('rse_median', r.stop.rule)
    assert.is_true(r.stop.converged)
    assert.same({ lo = 0.005, hi = 0.005, confidence = 0.95, method = 'order statistics', flags = '' },
      r.used.median_ci_ms)
  end)
end)

describe('measure: the between-samples hook in a session', function()
  -- A hook (as the trust audit's) that takes audit_ns of the host clock each time it acts: before
  -- the samples in `at` and after the last (i = nil).
  local function fake_hook(ctx, audit_ns, at)
    local h = { runs = 0 }
    h.fn = function(i)
      if i ~= nil and not at[i] then return false end
      h.runs = h.runs + 1
      if h.on_run then h.on_run() end
      ctx.advance(audit_ns)
      return true
    end
    return h
  end

  it('leaves the audits\' time out of the stopping rule\'s budget and says how long they took', function()
    -- 1 ms calls under a 50 ms budget; audits of no time against two of 40 ms each
    local function samples_with(audit_ns)
      local ctx = fake_ctx()
      local hook = fake_hook(ctx, audit_ns, { [2] = true, [5] = true })
      ctx.between = hook.fn
      local r = measure.run('cold', timed_fn(ctx, { 1e6 }),
        { stop = stopping.rse_median { target = 1e-9, timeout_ms = 50, min_samples = 2 } }, ctx)
      return #r.samples, r.used.audit_ms, hook.runs, r.used.rewarm_calls
    end
    local n_quick, ms_quick, runs, rewarm = samples_with(1)
    local n_slow, ms_slow = samples_with(40e6) -- two audits of 40 ms: 80 ms, more than the budget
    assert.equal(3, runs) -- two due during sampling, one after the last sample
    assert.is_true(n_quick >= 5, n_quick)
    assert.equal(n_quick, n_slow) -- when the audits' time counted, the slow audits left 5 of 10 samples
    -- the warm-up after each of the two audits (10 ms of 1 ms calls each) is the audits' time too
    assert.equal(20, rewarm)
    assert.near(80 + 20, ms_slow, 1e-6)
    assert.near(20, ms_quick, 1e-3)
  end)

  it('warms up again after an audit, before the next sample', function()
    local ctx = fake_ctx()
    local hook = fake_hook(ctx, 1, { [3] = true })
    ctx.between = hook.fn
    local calls = 0
    local inner = timed_fn(ctx, { 1e6 })
    local at_audit
    hook.on_run = function() at_audit = at_audit or calls end
    local r = measure.run('cold', function() calls = calls + 1; inner() end,
      { stop = stopping.count(5), warmup_ms = 4, warmup_min = 3 }, ctx)
    assert.equal(5, #r.samples)
    assert.equal(4, r.used.rewarm_calls) -- 4 ms of 1 ms calls after the audit before sample 3
    -- the warm-up's calls, two samples, then the audit; after it 4 warm-up calls and three samples
    assert.equal(r.used.warmup_calls + 2, at_audit)
    assert.equal(at_audit + 4 + 3, calls)
  end)
end)

describe('measure: hot', function()
  it('times a batch of back-to-back calls behind a hold and divides', function()
    local ctx = fake_ctx()
    local r = measure.run('hot', timed_fn(ctx, { 5000 }), with(QUICK, { stop = 2 }), ctx)
    -- batch = ceil(0.2 ms / 0.005 ms) = 40 calls per sample
    assert.equal(40, r.used.batch)
    assert.same({ 0.005, 0.005 }, r.samples)
    assert.same({ 5000, 5000 }, r.enqueue_ns)
    assert.equal(4 * 5000 * 40 + 20000, r.used.hold_ns)
    local t = tail(ctx.trace, 44)
    assert.same({ 'spin', 'record', 'fn' }, { t[1], t[2], t[3] })
    assert.same({ 'fn', 'record', 'sync' }, { t[42], t[43], t[44] })
    for _, e in ipairs(ctx.trace) do assert.are_not.equal('flush', e) end
  end)

  it('takes a fixed batch', function()
    local ctx = fake_ctx()
    local r = measure.run('hot', timed_fn(ctx, { 3000 }), with(QUICK, { stop = 1, batch = 7 }), ctx)
    assert.equal(7, r.used.batch)
    assert.same({ 0.003 }, r.samples)
    assert.has_error(function() measure.run('hot', timed_fn(ctx, { 1 }), with(QUICK, { batch = 0 }), ctx) end)
  end)
end)

describe('measure: graph rotation check', function()
  it('is a pure function of the bytes per set and the L2 size', function()
    -- between two uses of one set the others touch total - own >= 2 x L2
    local ok, info = graph.rotation_check({ 100, 100, 100 }, 100)
    assert.is_true(ok)
    assert.equal(200, info.between_bytes)
    assert.equal(200, info.required_bytes)
    assert.is_false((graph.rotation_check({ 100, 100 }, 100)))
    assert.is_false((graph.rotation_check({ 1e12 }, 100))) -- one set is always warm
    assert.is_true((graph.rotation_check({ 100, 100 }, 100, 1)))
    assert.equal(3, graph.rotate_for(100, 100))
    assert.equal(8, graph.rotate_for(300 * 1024, 1 << 20))
  end)

  it('counts a tensor shared by several sets for none of them', function()
    local f = tensor(1000)
    local private, shared = graph.rotation_bytes { { tensor(10), f }, { tensor(20), f }, { q = tensor(30) } }
    assert.same({ 10, 20, 30 }, private)
    assert.equal(1000, shared)
  end)

  it('refuses a rotation that stays in the L2, with the fix in the message', function()
    local ctx = fake_ctx()
    local sets = { { tensor(300 * 1024) }, { tensor(300 * 1024) } }
    local ok, err = pcall(measure.run, 'graph', function() end, with(QUICK, { sets = sets, stop = 1 }), ctx)
    assert.is_false(ok)
    assert.matches('graph mode refused: the rotation of 2 input set(s) touches 0.3 MiB between two '
      .. 'uses of one set, under 2 x L2 = 2.0 MiB, so caches would be warm; use rotate >= 8',
      err, 1, true)
    for _, e in ipairs(ctx.trace) do assert.are_not.equal('capture', e) end
    ok, err = pcall(measure.run, 'graph', function() end, with(QUICK, { stop = 1 }), ctx)
    assert.is_false(ok)
    assert.matches('no input sets to rotate', err, 1, true)
  end)

  it('runs warm on purpose with allow_warm, and says so', function()
    local ctx = fake_ctx()
    local r = measure.run('graph', timed_fn(ctx, { 1000 }),
      with(QUICK, { sets = { { tensor(10) } }, allow_warm = true, stop = 1 }), ctx)
    assert.is_false(r.used.rotation.cold)
  end)
end)

describe('measure: graph', function()
  it('captures launches over rotated sets and reports per-launch time', function()
    local ctx = fake_ctx()
    local seen = {}
    local made = 0
    local fn = function(set, k)
      if ctx.capturing then seen[#seen + 1] = k; assert.equal(k, set.id); return end
      ctx.advance(1000)
    end
    local r = measure.run('graph', fn, with(QUICK, {
      make_set = function(i) made = made + 1; return { id = i, x = tensor(300 * 1024) } end,
      stop = 3 }), ctx)
    -- rotate auto: (N - 1) x 300 KiB >= 2 MiB -> N = 8; launches = 8 x ceil(20 / 8) = 24
    assert.equal(8, made)
    assert.equal(8, r.used.rotation.sets)
    assert.is_true(r.used.rotation.cold)
    assert.equal(24, r.used.launches)
    assert.same({ 1, 2, 3, 4, 5, 6, 7, 8, 1, 2, 3, 4, 5, 6, 7, 8, 1, 2, 3, 4, 5, 6, 7, 8 }, seen)
    assert.same({ 0.001, 0.001, 0.001 }, r.samples)
    assert.same({ 'spin', 'record', 'replay', 'record', 'sync', 'free' }, tail(ctx.trace, 6))
  end)
end)

describe('measure: throttling', function()
  -- NVML that reports a thermal slowdown on the readings listed in `hot`.
  local function fake_nvml(hot)
    local n = 0
    return {
      available = function() return true end,
      info = function() return { app_sm_mhz = 1980, default_app_sm_mhz = 1980 } end,
      sample = function(_, kind)
        if kind == 'quick' then n = n + 1 end
        local throttled = kind == 'quick' and hot[n]
        return { sm_mhz = throttled and 1400 or 1980, mem_mhz = 3201, temp_c = 50, power_w = 300,
          throttle = throttled and { 'sw_thermal_slowdown' } or { 'gpu_idle' }, t_ns = 0 }
      end,
    }
  end

  it('drops samples taken while throttled and pauses to recover', function()
    local ctx = fake_ctx { nvml = fake_nvml { [2] = true, [3] = true } }
    local r = measure.run('cold', timed_fn(ctx, { 5000 }), with(QUICK, { clocks = true, stop = 3,
      recovery_ms = 50 }), ctx)
    assert.equal(3, #r.samples)
    assert.equal(2, r.used.samples_dropped)
    assert.equal(100, ctx.slept)
    assert.equal(2, r.clocks.droppedSamples)
    assert.same({ 'gpu_idle', 'sw_thermal_slowdown' }, r.clocks.throttleReasonsSeen)
    assert.is_false(r.clocks.stable)
    assert.is_false(r.clocks.locked)
  end)

  it('never ends with 0 samples: after max_drops, throttled samples are kept', function()
    local always = setmetatable({}, { __index = function() return true end })
    local ctx = fake_ctx { nvml = fake_nvml(always) }
    local r = measure.run('cold', timed_fn(ctx, { 5000 }), with(QUICK, { clocks = true, stop = 2,
      max_drops = 3 }), ctx)
    assert.equal(2, #r.samples)
    assert.equal(3, r.used.samples_dropped)
    assert.equal(2, r.clocks.throttledSamplesKept)
  end)
end)

describe('measure: do_bench and errors', function()
  it('wraps bench.do_bench and says how it stopped', function()
    local ctx = fake_ctx()
    local r = measure.run('do_bench', timed_fn(ctx, { 1e6 }), { warmup_ms = 2, rep_ms = 10 }, ctx)
    assert.equal(10, #r.samples) -- rep 10 ms / 1 ms
    assert.equal('do_bench', r.stop.rule)
    assert.equal('do_bench', r.used.mode)
  end)

  it("flushes triton's 256 MB on a GPU and the device's default (twice the cache) on the cpu", function()
    local ctx = fake_ctx()
    measure.run('do_bench', timed_fn(ctx, { 1e6 }), { warmup_ms = 2, rep_ms = 10 }, ctx)
    assert.equal(256000000, ctx.flushed)
    ctx = fake_ctx { backend = 'cpu' }
    local r = measure.run('do_bench', timed_fn(ctx, { 1e6 }), { warmup_ms = 2, rep_ms = 10 }, ctx)
    assert.is_nil(ctx.flushed) -- kb.flush_l2() with no size: twice the last-level cache
    ctx = fake_ctx { backend = 'cpu' }
    measure.run('do_bench', timed_fn(ctx, { 1e6 }), { warmup_ms = 2, rep_ms = 10, flush_bytes = 4096 }, ctx)
    assert.equal(4096, ctx.flushed)
    -- and the protocol document says so on the cpu
    local notes = require('kluabench.measure.do_bench').do_bench_protocol():spec { backend = 'cpu' }.comparability.notes
    assert.matches('twice the last-level cache instead of 256 MB', notes, 1, true)
    -- a 4 ms call: triton would take one repetition of rep_ms 10; the cpu takes CPU_MIN_REPEAT
    ctx = fake_ctx { backend = 'cpu' }
    r = measure.run('do_bench', timed_fn(ctx, { 4e6 }), { warmup_ms = 2, rep_ms = 10 }, ctx)
    assert.equal(5, #r.samples)
    assert.equal(2, r.used.n_repeat_triton)
    assert.equal('n_repeat = max(5, floor(rep_ms / estimate_ms)) = 5', r.stop.reason)
    ctx = fake_ctx()
    r = measure.run('do_bench', timed_fn(ctx, { 4e6 }), { warmup_ms = 2, rep_ms = 10 }, ctx)
    assert.equal('n_repeat = max(1, floor(rep_ms / estimate_ms)) = 2', r.stop.reason)
  end)

  it('stops a session after 2 s by default on the cpu backend, after 10 s on a GPU', function()
    assert.equal(2000, stopping.default_for('cpu').params.timeout_ms)
    assert.equal(10000, stopping.default_for('cuda').params.timeout_ms)
    assert.equal(0.005, stopping.default_for('cpu').params.target)
    assert.equal(2000, session.new('cold', function() end, {}, fake_ctx { backend = 'cpu' }).rule.params.timeout_ms)
    assert.equal(10000, session.new('cold', function() end, {}, fake_ctx()).rule.params.timeout_ms)
    assert.equal(500, session.new('cold', function() end, { stop = stopping.rse_median { timeout_ms = 500 } },
      fake_ctx { backend = 'cpu' }).rule.params.timeout_ms)
    assert.has_error(function() stopping.default_for(42) end,
      "bad argument #1 to 'default_for' (backend name expected, got number)")
  end)

  it('rejects unknown modes and non-functions', function()
    assert.has_error(function() measure.run('lukewarm', function() end) end,
      "bad argument #1 to 'run' (protocol do_bench, cold, hot or graph expected, got lukewarm)")
    -- a session runs sample by sample: every mode but do_bench, named from measure/modes.lua
    assert.has_error(function() session.new('do_bench', function() end, {}, fake_ctx()) end,
      "bad argument #1 to 'session.new' (a sampling protocol (cold, hot or graph) expected, got do_bench)")
    assert.has_error(function() measure.run('cold', 42, {}, fake_ctx()) end,
      "bad argument #2 to 'run' (function expected, got number)")
  end)
end)

describe('measure: protocol spec', function()
  it('names the mode and its configuration, not what one run derived', function()
    local p = measure.protocol('cold', { stop = stopping.rse_median { target = 0.01 } })
    local spec = p:spec { backend = 'cuda', timed = 'the forward pass' }
    local m = spec.measurement
    assert.equal('kluabench.measure.cold', m.method)
    assert.equal('cuda_events', m.timer)
    assert.equal('median', m.primaryStatistic)
    assert.equal(2, m.flushFactor)
    assert.equal('auto', m.hold)
    assert.equal('rse_median', m.stopping.rule)
    assert.equal(0.01, m.stopping.target)
    assert.equal(20, m.stopping.minSamples)
    assert.is_nil(m.batch)
    assert.equal('kluabench_cold', spec.comparability.family)
    local g = measure.protocol('graph'):spec {}
    assert.equal(2, g.measurement.margin)
    assert.is_nil(g.measurement.flushFactor)
  end)

  it('runs as a bench protocol on a fake device', function()
    local ctx = fake_ctx()
    local p = measure.protocol('hot', with(QUICK, { stop = 3 }))
    local r = p:run(timed_fn(ctx, { 2000 }), ctx)
    assert.equal(p, r.protocol)
    assert.equal(3, r.summary.n)
    assert.equal(0.002, r.summary.median)
  end)
end)

describe('measure: records', function()
  local ok_engine = pcall(require, 'kluabench.core')
  local engine_it = ok_engine and it or pending

  engine_it('carries the samples, the stopping outcome and the host enqueue times', function()
    local kb = require 'kluabench'
    local record = require 'kluabench.record'
    local x = kb.randn({ 4096 }, 'f32', 1, 'cpu')
    local y = kb.empty({ 4096 }, 'f32', 'cpu')
    local p = measure.protocol('cold', { stop = 12, warmup_ms = 0, l2_bytes = 1 << 16 })
    local r = p:run(function() y:copy_(x) end)
    local b = record.from_result { kernel = 'copy', mode = 'forward', provider = 'kb', result = r,
      parameters = { n = 4096 }, dtype = 'f32' }
    local ev = kb.evidence.of(b)
    assert.equal(12, #ev.samples)
    assert.equal(12, b.run.spec.timing.samples)
    assert.equal('ns', ev.unit)
    local e = ev.execution
    assert.equal('cold', e.mode)
    assert.equal('count', e.stop.rule)
    assert.is_false(e.stop.converged)
    assert.equal(12, e.stop.samples)
    assert.equal(1 << 17, e.flushBytes)
    if kb.backend() == 'cpu' then assert.equal(0, e.holdNs) else assert.is_true(e.holdNs >= 20000) end
    assert.is_number(e.hostEnqueueNs.median)
    assert.is_number(e.medianCiMs.lo)
    assert.equal('kluabench_cold', b.protocol.spec.comparability.family)
    assert.matches('"method":"kluabench.measure.cold"', b.protocol.spec.comparability.notes, 1, true)
    assert.same({}, verify.check(b))
  end)
end)

describe('measure on cuda #gpu', function()
  local kb
  setup(function() kb = require 'kluabench' end)

  it('cold: the device time of a 100 us spin kernel, launch overhead kept out #timing', function()
    local r = measure.run('cold', function() kb.spin(100000) end, { stop = 'rse:0.005' })
    assert.is_true(math.abs(r.summary.median - 0.1) < 0.005, r.summary.median)
    assert.is_true(r.used.hold_ns >= 20000)
    assert.is_true(r.used.host_enqueue_ns.median < 50000)
  end)

  it('cold: the hold takes launch latency out of a tiny kernel #timing', function()
    local fn = function() kb.spin(1000) end
    local held = measure.run('cold', fn, { stop = 200 })
    local unheld = measure.run('cold', fn, { stop = 200, hold = false })
    assert.is_true(held.summary.median <= unheld.summary.median,
      string.format('held %g ms, unheld %g ms', held.summary.median, unheld.summary.median))
  end)

  it('hot and graph agree with cold on a spin kernel #timing', function()
    local fn = function() kb.spin(50000) end
    local hot = measure.run('hot', fn, { stop = 50 })
    local graph = measure.run('graph', fn, { stop = 50, allow_warm = true })
    assert.is_true(math.abs(hot.summary.median - 0.05) < 0.005, hot.summary.median)
    assert.is_true(math.abs(graph.summary.median - 0.05) < 0.005, graph.summary.median)
  end)

  it('graph: refuses rotated sets that fit in the L2', function()
    local l2 = kb.device_info().l2_bytes
    local small = math.floor(l2 / 16)
    local sets = { { kb.empty({ small // 4 }, 'f32') }, { kb.empty({ small // 4 }, 'f32') } }
    assert.has_error(function() measure.run('graph', function(s) s[1]:fill_(1) end, { sets = sets }) end)
  end)

  it('graph: a rotation larger than the L2 runs cold', function()
    local l2 = kb.device_info().l2_bytes
    local n = math.floor(l2 / 4 / 4) -- a quarter of the L2 per set, in f32
    local r = measure.run('graph', function(s) s.y:copy_(s.x) end, { stop = 20,
      make_set = function() return { x = kb.randn({ n }, 'f32', 1), y = kb.empty({ n }, 'f32') } end })
    assert.is_true(r.used.rotation.cold)
    assert.is_true(r.used.rotation.sets >= 5)
  end)

  it('reads the clocks around the point when NVML is there', function()
    if not kb.nvml.available() then return end
    local r = measure.run('cold', function() kb.spin(20000) end, { stop = 30 })
    assert.is_true(r.clocks.available)
    assert.is_number(r.clocks.smMhz.median)
  end)
end)
