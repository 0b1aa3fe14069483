-- Stopping rules (stopping.lua) and the inference they rest on
-- (inference.lua), with a fake clock and samples whose answers are known.
local stopping = require 'kluabench.measure.stopping'
local inference = require 'kluabench.stats.inference'
local stats = require 'kluabench.stats'

-- A state on a clock the test moves by hand (ns).
local function fake_state()
  local now = 0
  local st = stopping.state(function() return now end):start()
  return st, function(ms) now = now + math.floor(ms * 1e6) end
end

local function feed(st, adv, xs, ms_each)
  for _, x in ipairs(xs) do
    adv(ms_each or x)
    st:add(x)
  end
end

describe('inference', function()
  it('has the normal quantile and distribution', function()
    assert.near(1.959964, stats.normal_quantile(0.975), 1e-6)
    assert.near(-1.644854, stats.normal_quantile(0.05), 1e-6)
    assert.near(2.326348, stats.normal_quantile(0.99), 1e-6)
    assert.near(0.975, stats.normal_cdf(1.959964), 1e-6)
    assert.near(0.5, stats.normal_cdf(0), 1e-7)
    assert.has_error(function() stats.normal_quantile(1) end)
  end)

  it('brackets the median of n = 100 by the order statistics 40 and 61', function()
    -- h = 1.96 * sqrt(100) / 2 = 9.8: ranks floor(50 - 9.8) = 40, ceil(51 + 9.8) = 61
    local l, u = stats.median_ci_ranks(100, 0.95)
    assert.equal(40, l)
    assert.equal(61, u)
    local xs = {}
    for i = 1, 100 do xs[i] = 101 - i end -- unsorted on purpose
    local lo, hi = stats.median_ci(xs)
    assert.equal(40, lo)
    assert.equal(61, hi)
  end)

  it('computes the relative standard error of the median by hand', function()
    local xs = {}
    for i = 1, 100 do xs[i] = i end
    -- se = (61 - 40) / (2 * 1.959964) = 5.35724; median 50.5
    local rse, med = stats.rse_median(xs)
    assert.equal(50.5, med)
    assert.near(5.357241 / 50.5, rse, 1e-6)
    assert.equal(math.huge, (stats.rse_median { 3 }))
    assert.equal(0, (stats.rse_median { 2, 2, 2, 2 }))
  end)

  it('clamps the ranks for few samples (the interval widens to the range)', function()
    local l, u = stats.median_ci_ranks(5, 0.95)
    assert.equal(1, l)
    assert.equal(5, u)
  end)
end)

describe('stopping state', function()
  it('keeps samples in order taken and a sorted copy', function()
    local st, adv = fake_state()
    feed(st, adv, { 5, 1, 4, 2, 3, 3 })
    assert.same({ 5, 1, 4, 2, 3, 3 }, st.samples)
    assert.same({ 1, 2, 3, 3, 4, 5 }, st.sorted)
    assert.equal(6, st.n)
    assert.equal(18, st.sum_ms)
    assert.equal(3, st:median())
    assert.equal(18, st.elapsed_ms)
  end)
end)

describe('stopping rules', function()
  it('never ends a run with 0 samples', function()
    local st = fake_state()
    for _, rule in ipairs { stopping.count(1), stopping.time_budget(1e-9),
      stopping.rse_median { timeout_ms = 1e-9 } } do
      local done, reason = rule:check(st)
      assert.is_false(done, rule.name)
      assert.equal('no samples yet', reason)
    end
  end)

  it('count: exactly n samples, not converged', function()
    local st, adv = fake_state()
    local rule = stopping.count(3)
    feed(st, adv, { 1, 1 })
    assert.is_false((rule:check(st)))
    feed(st, adv, { 1 })
    local done, reason, converged = rule:check(st)
    assert.is_true(done)
    assert.is_false(converged)
    assert.equal('fixed count: 3 samples taken', reason)
    assert.same({ rule = 'count', n = 3 }, rule:spec())
  end)

  it('time budget: ends once the host clock passes it', function()
    local st, adv = fake_state()
    local rule = stopping.time_budget(10)
    feed(st, adv, { 1, 1 }, 4) -- 8 ms
    assert.is_false((rule:check(st)))
    feed(st, adv, { 1 }, 4) -- 12 ms
    local done, reason, converged = rule:check(st)
    assert.is_true(done)
    assert.is_false(converged)
    assert.matches('time budget of 10 ms spent: 3 samples', reason, 1, true)
  end)

  it('rse_median: converges on quiet samples once min samples and min time are met', function()
    local st, adv = fake_state()
    local rule = stopping.rse_median { target = 0.01, min_samples = 20, min_time_ms = 5 }
    local xs = {}
    for i = 1, 19 do xs[i] = 1 + (i % 3) * 1e-4 end
    feed(st, adv, xs)
    assert.is_false((rule:check(st))) -- 19 < min_samples
    feed(st, adv, { 1 })
    local done, reason, converged = rule:check(st)
    assert.is_true(done)
    assert.is_true(converged)
    assert.matches('^converged: rse of the median', reason)
    local out = stopping.outcome(rule, st, reason, converged)
    assert.equal('rse_median', out.rule)
    assert.is_true(out.converged)
    assert.equal(20, out.samples)
    assert.is_true(out.rseMedian < 0.01)
  end)

  it('rse_median: waits for min_time_ms of measured time', function()
    local st, adv = fake_state()
    local rule = stopping.rse_median { target = 0.5, min_samples = 2, min_time_ms = 10 }
    feed(st, adv, { 2, 2, 2 })
    assert.is_false((rule:check(st)))
    feed(st, adv, { 4 })
    assert.is_true((rule:check(st)))
  end)

  it('rse_median: times out without converging on noisy samples', function()
    local st, adv = fake_state()
    local rule = stopping.rse_median { target = 0.001, min_samples = 2, timeout_ms = 50 }
    feed(st, adv, { 1, 3, 1, 3, 1, 3 }, 5) -- 30 ms
    assert.is_false((rule:check(st)))
    feed(st, adv, { 1, 3, 1, 3, 1 }, 5) -- 55 ms
    local done, reason, converged = rule:check(st)
    assert.is_true(done)
    assert.is_false(converged)
    assert.matches('^timeout after 50 ms', reason)
  end)

  it('rse_median: a timeout names the condition that was not met, not the rse that was', function()
    local st, adv = fake_state()
    -- identical samples: rse 0 meets any target; 1 ms of 100 ms measured
    local rule = stopping.rse_median { target = 0.01, min_samples = 2, min_time_ms = 100, timeout_ms = 50 }
    feed(st, adv, { 0.25, 0.25, 0.25, 0.25 }, 20) -- 80 ms of host time
    local done, reason, converged = rule:check(st)
    assert.is_true(done)
    assert.is_false(converged)
    assert.equal('timeout after 50 ms: 1 ms measured < min_time_ms 100 (4 samples)', reason)
    assert.is_nil(reason:find('rse', 1, true))
    -- and the rse when it is the one missing, with the sample minimum
    st, adv = fake_state()
    rule = stopping.rse_median { target = 0.001, min_samples = 50, timeout_ms = 50 }
    feed(st, adv, { 1, 3, 1, 3 }, 20)
    _, reason = rule:check(st)
    assert.matches('^timeout after 50 ms: rse of the median [%d.]+%% > 0.1%%; 4 samples < min_samples 50', reason)
  end)

  it('rse_median: stops at max_samples, not converged', function()
    local st, adv = fake_state()
    local rule = stopping.rse_median { target = 1e-6, min_samples = 2, max_samples = 4 }
    feed(st, adv, { 1, 2, 3, 4 })
    local done, reason, converged = rule:check(st)
    assert.is_true(done)
    assert.is_false(converged)
    assert.matches('max_samples %(4%) reached', reason)
  end)

  it('any: the first rule that is done ends the run and is named', function()
    local st, adv = fake_state()
    local rule = stopping.any { stopping.rse_median { target = 1e-9, min_samples = 2 },
      stopping.count(5) }
    feed(st, adv, { 1, 2, 3, 4 })
    assert.is_false((rule:check(st)))
    feed(st, adv, { 5 })
    local done, reason = rule:check(st)
    assert.is_true(done)
    assert.equal('count: fixed count: 5 samples taken', reason)
    assert.equal('count', stopping.outcome(rule, st, reason, false).rule)
  end)

  it('parses short descriptions and rejects bad ones', function()
    assert.equal('count', stopping.from(7).name)
    assert.equal(7, stopping.from(7).params.n)
    assert.equal(250, stopping.from('time:250').params.budget_ms)
    assert.equal(0.02, stopping.from('rse:0.02').params.target)
    assert.equal(0.03, stopping.from { rule = 'rse_median', target = 0.03 }.params.target)
    assert.has_error(function() stopping.from('forever') end,
      "bad stopping rule 'forever' (expected count:N, time:MS or rse:TARGET)")
    assert.has_error(function() stopping.count(0) end)
    assert.has_error(function() stopping.rse_median { min_samples = 1 } end)
  end)

  it('lets a script define its own rule', function()
    local st, adv = fake_state()
    local rule = stopping.criterion {
      name = 'p20_below', params = { ms = 2 },
      check = function(self, s)
        if s.n >= 3 and s:quantile(0.2) < self.params.ms then return true, 'fast enough', true end
        return false
      end,
    }
    feed(st, adv, { 1, 5, 1 })
    local done, reason, converged = rule:check(st)
    assert.is_true(done and converged)
    assert.equal('fast enough', reason)
  end)
end)
