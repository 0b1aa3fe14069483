-- do_bench's iteration arithmetic with a fake device clock, and protocols as values.
local bench = require 'kluabench.measure.do_bench'
local measure = require 'kluabench.measure'
local stats = require 'kluabench.stats'

-- A device whose clock (ms) moves only when fn or flush_l2 says so, and
-- which logs every primitive it is asked for.
local function fake_device(flush_ms, flush_bytes)
  local dev = { now = 0, log = {}, timer = 'fake_clock', backend = 'fake', flushes = 0, syncs = 0 }
  function dev.event()
    local e = {}
    function e.record(self)
      self.t = dev.now
      dev.log[#dev.log + 1] = 'record'
    end
    return e
  end
  function dev.elapsed_ms(a, b) return b.t - a.t end
  function dev.synchronize()
    dev.syncs = dev.syncs + 1
    dev.log[#dev.log + 1] = 'sync'
  end
  function dev.flush_l2()
    dev.flushes = dev.flushes + 1
    dev.now = dev.now + flush_ms
    dev.log[#dev.log + 1] = 'flush'
    return flush_bytes
  end
  function dev.clock_ns() return math.floor(dev.now * 1e6) end
  return dev
end

-- fn taking `ms` (a number or a function of the call number) on dev's clock.
local function fake_fn(dev, ms)
  local f = { calls = 0 }
  setmetatable(f, {
    __call = function(self)
      self.calls = self.calls + 1
      dev.now = dev.now + (type(ms) == 'function' and ms(self.calls) or ms)
      dev.log[#dev.log + 1] = 'fn'
    end,
  })
  return f
end

describe('bench.do_bench (triton.testing.do_bench)', function()
  it('warms up again after an audit that fell among the repetitions', function()
    -- fn 0.25 ms + flush 0.25 ms: n_warmup 50, n_repeat 200; one audit planned before repetition 3
    local dev = fake_device(0.25, 4096)
    local fn = fake_fn(dev, 0.25)
    local runs = 0
    -- the between-samples hook: a sample of its own before repetition 3, and one after the last
    dev.between = function(i, _, extra)
      if i == 3 or i == nil then
        runs = runs + 1
        extra()
        return true
      end
      return false
    end
    local _, r = bench.do_bench(fn, { device = dev })
    assert.are.equal(2, runs) -- the planned one, and one after the last repetition
    -- calls: 1 first + 5 estimate + 50 warm-up + 200 timed + 2 audited + 50 warm-up after the planned audit
    assert.are.equal(256 + 2 + 50, fn.calls)
    assert.are.equal(200, #r.samples)
  end)

  it('derives n_warmup and n_repeat from the 5-call estimate, flush included', function()
    -- fn 0.25 ms + flush 0.25 ms: estimate 0.5 ms, warmup 25 / 0.5 = 50, rep 100 / 0.5 = 200
    local dev = fake_device(0.25, 4096)
    local fn = fake_fn(dev, 0.25)
    local value, r = bench.do_bench(fn, { device = dev })
    assert.are.equal(0.5, r.used.estimate_ms)
    assert.are.equal(50, r.used.n_warmup)
    assert.are.equal(200, r.used.n_repeat)
    assert.are.equal(5, r.used.estimate_calls)
    assert.are.equal(4096, r.used.flush_bytes)
    assert.are.equal(25, r.used.warmup_ms)
    assert.are.equal(100, r.used.rep_ms)
    -- calls: 1 first + 5 estimate + 50 warm-up + 200 timed
    assert.are.equal(256, fn.calls)
    -- flushes: 1 before the estimate (allocates the buffer), 5 in the
    -- estimate, 1 per repetition; none in the warm-up
    assert.are.equal(206, dev.flushes)
    -- one synchronize after the first call, one after the estimate, one at the end
    assert.are.equal(3, dev.syncs)
    assert.are.equal(200, #r.samples)
    -- the flush is outside the timed region: every sample is fn alone
    for _, s in ipairs(r.samples) do assert.are.equal(0.25, s) end
    -- default return_mode is mean (triton's)
    assert.are.equal(0.25, value)
  end)

  it('follows the order of operations of triton', function()
    local dev = fake_device(0.25)
    local fn = fake_fn(dev, 0.25)
    bench.do_bench(fn, { device = dev, warmup_ms = 1, rep_ms = 1 }) -- n_warmup 2, n_repeat 2
    assert.are.same({
      'fn', 'flush', 'sync',                          -- first call, flush buffer ready
      'record', 'flush', 'fn', 'flush', 'fn', 'flush', 'fn', 'flush', 'fn', 'flush', 'fn', 'record',
      'sync',                                         -- estimate
      'fn', 'fn',                                     -- warm-up
      'flush', 'record', 'fn', 'record',              -- repetition 1
      'flush', 'record', 'fn', 'record',              -- repetition 2
      'sync',
    }, dev.log)
  end)

  it('truncates the divisions (int() in Python) and never goes below 1', function()
    -- estimate 0.25 + 0.125 = 0.375: 25 / 0.375 = 66.7 -> 66, 100 / 0.375 = 266.7 -> 266
    local dev = fake_device(0.125)
    local _, r = bench.do_bench(fake_fn(dev, 0.25), { device = dev })
    assert.are.equal(0.375, r.used.estimate_ms)
    assert.are.equal(66, r.used.n_warmup)
    assert.are.equal(266, r.used.n_repeat)
    -- a function slower than warmup and rep: 1 and 1
    dev = fake_device(0)
    _, r = bench.do_bench(fake_fn(dev, 256), { device = dev })
    assert.are.equal(1, r.used.n_warmup)
    assert.are.equal(1, r.used.n_repeat)
    assert.are.equal(1, #r.samples)
  end)

  it('uses the given warmup_ms and rep_ms (Liger: rep 400)', function()
    local dev = fake_device(0.5)
    local _, r = bench.do_bench(fake_fn(dev, 0.5), { device = dev, warmup_ms = 25, rep_ms = 400 })
    assert.are.equal(1.0, r.used.estimate_ms)
    assert.are.equal(25, r.used.n_warmup)
    assert.are.equal(400, r.used.n_repeat)
  end)

  it('returns the requested quantiles of all samples', function()
    local dev = fake_device(0.25)
    -- calls 1..6 (first call and estimate) take 0.25 ms; later calls cycle 0.25..1.25
    local fn = fake_fn(dev, function(i) return i <= 6 and 0.25 or 0.25 * (1 + (i % 5)) end)
    local q, r = bench.do_bench(fn, { device = dev, quantiles = { 0.5, 0.2, 0.8 } })
    assert.are.equal(200, #r.samples)
    local want = stats.quantiles(r.samples, { 0.5, 0.2, 0.8 })
    assert.are.same(want, q)
    assert.are.same(want, r.quantiles)
    assert.are.same({ 0.5, 0.2, 0.8 }, r.used.quantiles)
    -- every sample is one of the fake durations
    for _, s in ipairs(r.samples) do
      assert.is_true(s == 0.25 or s == 0.5 or s == 0.75 or s == 1.0 or s == 1.25)
    end
  end)

  it("has triton's return_mode semantics", function()
    local function run(o)
      local dev = fake_device(0.25)
      o.device = dev
      return bench.do_bench(fake_fn(dev, function(i) return i <= 6 and 0.25 or 0.125 * (i % 4 + 1) end), o)
    end
    local one = run { quantiles = { 0.5 } }
    assert.are.equal('number', type(one)) -- a single quantile is a number, as in triton
    local _, r = run {}
    assert.are.equal(stats.min(r.samples), (run { return_mode = 'min' }))
    assert.are.equal(stats.max(r.samples), (run { return_mode = 'max' }))
    assert.are.equal(stats.median(r.samples), (run { return_mode = 'median' }))
    assert.are.equal(stats.mean(r.samples), (run { return_mode = 'mean' }))
    assert.are.same(r.samples, (run { return_mode = 'all' }))
    assert.has_error(function() run { return_mode = 'p99' } end)
  end)

  it('runs before_each outside the timed region, once per repetition', function()
    local dev = fake_device(0.25)
    local n = 0
    local _, r = bench.do_bench(fake_fn(dev, 0.25), { device = dev, before_each = function()
      n = n + 1
      dev.now = dev.now + 7 -- must not show in any sample
    end })
    assert.are.equal(r.used.n_repeat, n)
    for _, s in ipairs(r.samples) do assert.are.equal(0.25, s) end
  end)

  it('refuses an estimate of 0 ms instead of dividing by it', function()
    local dev = fake_device(0)
    assert.has_error(function() bench.do_bench(fake_fn(dev, 0), { device = dev }) end)
  end)

  it('checks its arguments', function()
    local dev = fake_device(0.25)
    assert.has_error(function() bench.do_bench(42) end,
      "bad argument #1 to 'do_bench' (function expected, got number)")
    assert.has_error(function() bench.do_bench(function() end, { device = dev, rep_ms = 0 }) end)
    assert.has_error(function() bench.do_bench(function() end, { device = dev, quantiles = { 2 } }) end)
    assert.has_error(function() bench.do_bench(function() end, { device = { event = 1 } }) end)
  end)
end)

describe('bench.do_bench_protocol', function()
  it('is a protocol value that records every parameter it used', function()
    local p = bench.do_bench_protocol { rep_ms = 400 }
    assert.is_true(measure.is_protocol(p))
    assert.are.equal('do_bench', p.name)
    assert.are.same({ 0.5, 0.2, 0.8 }, p.params.quantiles)
    assert.are.equal(25, p.params.warmup_ms)
    local dev = fake_device(0.5, 123)
    local r = p:run(fake_fn(dev, 0.5), dev)
    assert.are.equal(p, r.protocol)
    assert.are.equal(r, p.last)
    assert.are.equal(1.0, r.used.estimate_ms)
    assert.are.equal(25, r.used.n_warmup)
    assert.are.equal(400, r.used.n_repeat)
    assert.are.equal(123, r.used.flush_bytes)
    assert.are.same({ 0.5, 0.2, 0.8 }, r.used.quantiles)
    assert.are.same({ 0.5, 0.5, 0.5 }, r.quantiles)
    assert.are.equal(0.5, r.summary.median)
    assert.are.equal('fake_clock', r.timer)
  end)

  it('has a spec with the configuration and not the per-run values', function()
    local p = bench.do_bench_protocol { rep_ms = 400 }
    local spec = p:spec { timed = 'the backward pass', backend = 'cuda' }
    assert.are.equal('cuda_events', spec.measurement.timer)
    assert.are.equal('median', spec.measurement.primaryStatistic)
    assert.are.equal(400, spec.measurement.repMs)
    assert.are.equal(25, spec.measurement.warmupMs)
    assert.are.same({ 0.5, 0.2, 0.8 }, spec.measurement.quantiles)
    assert.are.equal('triton_do_bench', spec.comparability.family)
    assert.matches('Timed: the backward pass', spec.comparability.notes, 1, true)
    assert.matches('median with p20/p80 spread', spec.comparability.notes, 1, true)
    assert.is_nil(spec.measurement.nRepeat)
    local cpu = p:spec { timed = 'x', backend = 'cpu' }
    assert.are.equal('host_monotonic', cpu.measurement.timer)
    assert.matches('cpu backend', cpu.comparability.notes, 1, true)
  end)
end)

describe('do_bench on the cpu backend (issue 13)', function()
  it('takes at least 5 repetitions where triton would take 1, and says so', function()
    local dev = fake_device(0)
    dev.backend = 'cpu'
    local _, r = bench.do_bench(fake_fn(dev, 256), { device = dev })
    assert.are.equal(5, r.used.n_repeat)
    assert.are.equal(5, #r.samples)
    assert.are.equal(1, r.used.n_repeat_triton)
    assert.are.equal(5, r.used.min_repeat)
    -- cuda keeps triton's minimum of 1
    dev = fake_device(0)
    dev.backend = 'cuda'
    _, r = bench.do_bench(fake_fn(dev, 256), { device = dev })
    assert.are.equal(1, r.used.n_repeat)
    assert.is_nil(r.used.n_repeat_triton)
    local p = bench.do_bench_protocol {}
    assert.are.equal(5, p:spec({ backend = 'cpu' }).measurement.minRepeat)
    assert.matches('at least 5 repetitions', p:spec({ backend = 'cpu' }).comparability.notes, 1, true)
    assert.is_nil(p:spec({ backend = 'cuda' }).measurement.minRepeat)
    assert.has_error(function() bench.do_bench(fake_fn(dev, 1), { device = dev, min_repeat = 0 }) end)
  end)

  it('gives a real cpu run with rep_ms far below one flushed call at least 5 samples', function()
    local ok, kb = pcall(require, 'kluabench.core')
    if not (ok and kb.backend and kb.backend() == 'cpu') then return end
    local _, r = bench.do_bench(function() end, { rep_ms = 0.000001, warmup_ms = 0.000001 })
    assert.is_true(#r.samples >= 5, #r.samples .. ' samples')
  end)

  it('reads the last-level cache size from sysfs, as cold mode must flush it', function()
    local ok, kb = pcall(require, 'kluabench.core')
    if not (ok and kb.backend and kb.backend() == 'cpu') then return end
    local best, level = nil, 0
    for i = 0, 15 do
      local d = '/sys/devices/system/cpu/cpu0/cache/index' .. i .. '/'
      local fl, ft, fs = io.open(d .. 'level'), io.open(d .. 'type'), io.open(d .. 'size')
      if fl and fs then
        local lv, ty, sz = tonumber(fl:read('l')), ft and ft:read('l'), fs:read('l')
        local n, u = sz:match('^(%d+)([KMG]?)')
        n = tonumber(n) * (({ K = 1024, M = 1024 ^ 2, G = 1024 ^ 3 })[u] or 1)
        if ty ~= 'Instruction' and lv >= level then best, level = n, lv end
      end
      for _, f in ipairs { fl, ft, fs } do if f then f:close() end end
    end
    if not best then return end -- no sysfs here: sysconf's answer is all there is
    assert.are.equal(math.tointeger(best), kb.device_info().l2_bytes)
  end)
end)

describe('measure.protocol', function()
  it('makes a new protocol in a few lines', function()
    local p = measure.protocol {
      name = 'three-shots',
      params = { n = 3 },
      run = function(self, fn, ctx)
        local samples = {}
        for i = 1, self.params.n do
          local s, e = ctx.event(), ctx.event()
          s:record()
          fn()
          e:record()
          ctx.synchronize()
          samples[i] = ctx.elapsed_ms(s, e)
        end
        return { samples = samples, used = { n = self.params.n } }
      end,
    }
    local dev = fake_device(0)
    local r = p:run(fake_fn(dev, 2), dev)
    assert.are.same({ 2, 2, 2 }, r.samples)
    assert.are.equal(2, r.summary.median)
    assert.are.equal(3, r.used.n)
    local spec = p:spec { backend = 'cpu' }
    assert.are.equal('three-shots', spec.measurement.method)
    assert.are.same({ n = 3 }, spec.measurement.parameters)
  end)

  it('accepts a plain list of samples from run', function()
    local p = measure.protocol { name = 'list', run = function() return { 1, 2, 3 } end }
    local r = p:run(function() end, fake_device(0))
    assert.are.same({ 1, 2, 3 }, r.samples)
  end)

  it('rejects bad definitions and runs without samples', function()
    assert.has_error(function() measure.protocol { run = function() end } end,
      "bad argument #1 to 'protocol' (field 'name' must be a non-empty string)")
    assert.has_error(function() measure.protocol { name = 'x' } end,
      "bad argument #1 to 'protocol' (field 'run' must be a function)")
    local p = measure.protocol { name = 'empty', run = function() return { samples = {} } end }
    assert.has_error(function() p:run(function() end, fake_device(0)) end,
      "protocol 'empty': run produced no samples")
  end)
end)
