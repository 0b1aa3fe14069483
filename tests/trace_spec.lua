-- kb.trace (the kernels a device ran, with their own start and end times)
-- and the cold mode's use of it: kernel sums and spans per sample, and the
-- event-pair calibration. CPU-side specs use the cpu backend's tracer (host
-- clock around each cpu kernel); the #gpu ones read CUPTI's records.
local kb = require 'kluabench'
local measure = require 'kluabench.measure'
local session = require 'kluabench.measure.session'

local function llama4_inputs(device, dtype)
  local q = kb.randn({ 1, 64, 4, 16 }, dtype or 'f32', 11, device)
  local k = kb.randn({ 1, 64, 2, 16 }, dtype or 'f32', 12, device)
  local f = kb.rope.freqs(64, 16, { device = device })
  return q, k, f
end

local function names_of(records)
  local out = {}
  for i, r in ipairs(records) do out[i] = r.name end
  return out
end

describe('kb.trace on the cpu backend', function()
  after_each(function() kb.trace.stop() end)

  it('records each kernel with its host start, end and duration, in launch order', function()
    assert.is_true(kb.trace.available('cpu'))
    local q, k, f = llama4_inputs('cpu')
    kb.trace.start('cpu')
    assert.equal('cpu', kb.trace.active())
    local t0 = kb.clock_ns()
    kb.rope.llama4_fwd(q, k, f)
    kb.rope.llama4_fwd(q, k, f, { impl = 'reference' })
    local t1 = kb.clock_ns()
    local recs, dropped = kb.trace.collect()
    assert.equal(0, dropped)
    assert.same({ 'kb_rope_fused_cpu', 'kb_rope_reference_cpu' }, names_of(recs))
    for _, r in ipairs(recs) do
      assert.equal('kernel', r.kind)
      assert.is_false(r.internal)
      assert.equal(r.end_ns - r.start_ns, r.ns)
      assert.is_true(r.ns > 0)
      -- the cpu tracer's clock is the host monotonic clock kb.clock_ns reads
      assert.is_true(r.start_ns >= t0 and r.end_ns <= t1, string.format('%d..%d not in %d..%d',
        r.start_ns, r.end_ns, t0, t1))
    end
    assert.is_true(recs[1].end_ns <= recs[2].start_ns)
  end)

  it('collect empties the buffer; copies are memcpy records with their bytes', function()
    local q = kb.randn({ 1000 }, 'f32', 1, 'cpu')
    local c = kb.empty({ 1000 }, 'f32', 'cpu')
    kb.trace.start('cpu')
    c:copy_(q)
    local recs = kb.trace.collect()
    assert.equal(1, #recs)
    assert.equal('memcpy', recs[1].kind)
    assert.equal(4000, recs[1].bytes)
    assert.same({}, (kb.trace.collect()))
    c:fill_(2)
    local rest = kb.trace.stop()
    assert.same({ 'kb_fill_cpu' }, names_of(rest))
    assert.is_nil(kb.trace.active())
    -- off: nothing is recorded
    c:fill_(3)
    kb.trace.start('cpu')
    assert.same({}, (kb.trace.stop()))
  end)

  it("records a plugin's CPU entry as it records the built-in kernels (one launch path)", function()
    local p = kb.plugin.load(kb.executable():match('^(.*)/') .. '/plugins/libscale_add.so')
    local scale_add = p:kernel('scale_add')
    local x, y, out = kb.randn({ 4096 }, 'f32', 1, 'cpu'), kb.randn({ 4096 }, 'f32', 2, 'cpu'), kb.empty({ 4096 }, 'f32', 'cpu')
    local q, k, f = llama4_inputs('cpu')
    kb.trace.start('cpu')
    local t0 = kb.clock_ns()
    scale_add(out, x, y, 2.0)
    kb.rope.llama4_fwd(q, k, f)
    local t1 = kb.clock_ns()
    local recs = kb.trace.stop()
    assert.same({ 'scale_add.scale_add (CPU entry)', 'kb_rope_fused_cpu' }, names_of(recs))
    assert.equal('kernel', recs[1].kind)
    assert.is_true(recs[1].ns > 0 and recs[1].start_ns >= t0 and recs[1].end_ns <= recs[2].start_ns
      and recs[2].end_ns <= t1)
    -- the entry ran: out = 2 x + y
    local xs, ys, os = x:totable(), y:totable(), out:totable()
    for i = 1, 4096, 511 do assert.near(2 * xs[i] + ys[i], os[i], 1e-5) end
  end)

  it('says what is wrong when used out of order or with a bad device', function()
    assert.has_error(function() kb.trace.collect() end,
      'kb.trace.collect: tracing is off (call kb.trace.start() first)')
    assert.same({}, (kb.trace.stop()))
    kb.trace.start('cpu')
    assert.has_error(function() kb.trace.start('cpu') end,
      'kb.trace.start: tracing is already on (on cpu); call kb.trace.stop() first')
    assert.has_error(function() kb.trace.start('tpu') end)
    assert.has_error(function() kb.trace.available(42) end)
  end)
end)

describe('session.trace_totals', function()
  it('sums durations and spans the first start to the last end, internal records left out', function()
    local n, sum, span, names = session.trace_totals {
      { name = 'kb_hold_spin', start_ns = 0, end_ns = 20000, ns = 20000, internal = true },
      { name = 'a', start_ns = 21000, end_ns = 23000, ns = 2000, internal = false },
      { name = 'b', start_ns = 23500, end_ns = 24500, ns = 1000, internal = false },
    }
    assert.equal(2, n)
    assert.near(0.003, sum, 1e-12)
    assert.near(0.0035, span, 1e-12)
    assert.same({ 'a', 'b' }, names)
    local n0, s0, p0 = session.trace_totals {}
    assert.same({ 0, 0, 0 }, { n0, s0, p0 })
  end)
end)

describe('the cold mode with kernel_trace (cpu backend)', function()
  after_each(function() kb.trace.stop() end)

  it('gives every kept sample a kernel sum and span, and the event-pair calibration', function()
    local q, k, f = llama4_inputs('cpu')
    local r = measure.run('cold', function() kb.rope.llama4_fwd(q, k, f) end,
      { stop = 25, kernel_trace = true, event_pairs = 16 })
    assert.equal(#r.samples, #r.kernel_sum_ms)
    assert.equal(#r.samples, #r.kernel_span_ms)
    for i, ms in ipairs(r.samples) do
      local sum = r.kernel_sum_ms[i]
      assert.is_true(sum > 0 and sum <= ms, string.format('sample %d: kernels %g ms, sample %g ms', i, sum, ms))
      assert.equal(sum, r.kernel_span_ms[i]) -- one kernel: sum = span
    end
    local kt = r.used.kernel_trace
    assert.equal(1, kt.kernelsPerCall)
    assert.same({ 'kb_rope_fused_cpu' }, kt.names)
    assert.is_true(kt.sumMs.median <= r.summary.median)
    assert.equal(16, r.used.event_pairs)
    assert.is_true(r.used.event_pair_ms >= 0 and r.used.event_pair_ms < 1)
    assert.near(r.summary.median - r.used.event_pair_ms, r.used.median_minus_event_pair_ms, 1e-12)
    assert.is_nil(kb.trace.active()) -- on only around each sample
  end)

  it('puts the calibration and the kernel summary into the record', function()
    local record = require 'kluabench.record'
    local q, k, f = llama4_inputs('cpu')
    local p = measure.protocol('cold', { stop = 8, kernel_trace = true })
    local r = p:run(function() kb.rope.llama4_fwd(q, k, f) end)
    local bundle = record.from_result { kernel = 'llama4_rope', mode = 'forward', provider = 'fused',
      parameters = { hidden = 64, seq = 64 }, dtype = 'f32', result = r, protocol = p }
    local e = kb.evidence.of(bundle).execution
    assert.equal(r.used.event_pair_ms, e.eventPairMs)
    assert.equal(r.used.median_minus_event_pair_ms, e.medianMinusEventPairMs)
    assert.equal(1, e.kernelTrace.kernelsPerCall)
    assert.same({ 'kb_rope_fused_cpu' }, e.kernelTrace.names)
    assert.is_number(e.kernelTrace.sumMs.median)
    assert.matches('"kernelTrace":true', bundle.protocol.spec.comparability.notes, 1, true)
  end)

  it('a reference call is several kernels: sum <= span', function()
    local q, k, f = llama4_inputs('cpu')
    local fn = function()
      kb.rope.llama4_fwd(q, k, f)
      kb.rope.llama4_fwd(q, k, f, { impl = 'reference' })
    end
    local r = measure.run('cold', fn, { stop = 10, kernel_trace = true })
    assert.equal(2, r.used.kernel_trace.kernelsPerCall)
    for i = 1, #r.samples do assert.is_true(r.kernel_sum_ms[i] <= r.kernel_span_ms[i]) end
  end)

  it('turns the tracer off when fn fails, and refuses to run over a trace already on', function()
    local calls = 0
    local ok, err = pcall(measure.run, 'cold', function()
      calls = calls + 1
      if calls > 4 then error('boom in fn') end
    end, { stop = 10, kernel_trace = true, warmup_min = 3, warmup_ms = 0 })
    assert.is_false(ok)
    assert.matches('boom in fn', err)
    assert.is_nil(kb.trace.active())
    kb.trace.start('cpu')
    assert.has_error(function()
      measure.run('cold', function() end, { stop = 3, kernel_trace = true })
    end, 'cold mode: kernel_trace = true, but kb.trace is already on (stop it first)')
  end)

  it('without kernel_trace nothing is traced and the protocol spec says so', function()
    local r = measure.run('cold', function() end, { stop = 5, event_pairs = 0 })
    assert.is_nil(r.kernel_sum_ms)
    assert.is_nil(r.used.kernel_trace)
    assert.is_nil(r.used.event_pair_ms)
    local spec = measure.protocol('cold', { kernel_trace = true }):spec { backend = 'cpu' }
    assert.is_true(spec.measurement.kernelTrace)
    assert.equal(64, spec.measurement.eventPairs)
    local hot = measure.protocol('hot'):spec { backend = 'cpu' }
    assert.is_nil(hot.measurement.kernelTrace)
  end)
end)

-- #cupti: compute-sanitizer holds CUPTI itself, so its runs leave these out.
describe('kb.trace on cuda (CUPTI) #gpu #cupti', function()
  after_each(function() kb.trace.stop() end)

  it('is available, or says why', function()
    local ok, why = kb.trace.available()
    assert.is_true(ok, why)
  end)

  it('records the fused kernel once and the reference as its six kernels, on device time', function()
    local q, k, f = llama4_inputs(nil, 'bf16')
    kb.synchronize()
    kb.trace.start()
    kb.spin(10000)
    kb.synchronize()
    local spin = kb.trace.collect()
    assert.equal(1, #spin)
    assert.is_true(spin[1].internal)
    assert.matches('kb_hold_spin', spin[1].name)
    assert.is_true(spin[1].ns >= 10000)
    -- Alone, not queued behind the spin: on the H200 CUPTI's concurrent mode
    -- (kb.trace used it at first) dated the start of a kernel queued right
    -- behind another before that one's end.
    kb.rope.llama4_fwd(q, k, f)
    kb.synchronize()
    local fused = kb.trace.collect()
    assert.equal(1, #fused)
    assert.is_false(fused[1].internal)
    -- a bf16 call of this size runs the flat kernel (kernels/rope.cu, docs/perf-notes.md)
    assert.matches('rope_flat_kernel', fused[1].name)
    assert.is_true(fused[1].ns > 0 and fused[1].ns < 10000, fused[1].ns)
    -- the launch configuration: every dimension at least 1, a block of at
    -- most 1024 threads (this tiny input may get a small block)
    local g, b = fused[1].grid, fused[1].block
    local dims = string.format('grid %d %d %d, block %d %d %d', g[1], g[2], g[3], b[1], b[2], b[3])
    assert.is_true(math.min(g[1], g[2], g[3], b[1], b[2], b[3]) >= 1, dims)
    assert.is_true(b[1] * b[2] * b[3] <= 1024, dims)
    kb.rope.llama4_fwd(q, k, f, { impl = 'reference' })
    kb.synchronize()
    local ref = kb.trace.collect()
    local n = session.trace_totals(ref)
    assert.equal(6, n, table.concat(names_of(ref), ', '))
    local c = kb.empty(q.shape, 'bf16')
    c:copy_(q)
    kb.synchronize()
    local copy = kb.trace.stop()
    assert.equal(1, #copy)
    assert.equal('memcpy', copy[1].kind)
    assert.equal(q:nbytes(), copy[1].bytes)
  end)

  it('cold with kernel_trace: the kernel time is inside the event time, the calibration is small', function()
    local q = kb.randn({ 1, 2048, 32, 128 }, 'bf16', 1)
    local k = kb.randn({ 1, 2048, 8, 128 }, 'bf16', 2)
    local f = kb.rope.freqs(2048, 128)
    local r = measure.run('cold', function() kb.rope.llama4_fwd(q, k, f) end,
      { stop = 50, kernel_trace = true })
    assert.equal(1, r.used.kernel_trace.kernelsPerCall)
    for i, ms in ipairs(r.samples) do assert.is_true(r.kernel_sum_ms[i] < ms) end
    assert.is_true(r.used.event_pair_ms > 0 and r.used.event_pair_ms < 0.005, r.used.event_pair_ms)
    -- what the events add beyond the kernel is about one event pair
    local extra = r.summary.median - r.used.kernel_trace.sumMs.median
    assert.is_true(math.abs(extra - r.used.event_pair_ms) < 0.002,
      string.format('events add %g ms, the calibration says %g ms', extra, r.used.event_pair_ms))
  end)
end)
