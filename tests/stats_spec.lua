-- Statistics of samples against values computed by hand.
local stats = require 'kluabench.stats'

-- sorted: 1 1 2 3 4 5 6 9 (n = 8)
local X = { 3, 1, 4, 1, 5, 9, 2, 6 }

local function close(want, got, tol)
  assert.is_true(math.abs(want - got) <= (tol or 1e-12),
    string.format('expected %.17g, got %.17g', want, got))
end

describe('stats.quantile (linear interpolation, numpy default / torch.quantile)', function()
  it('interpolates between closest ranks: h = q (n - 1)', function()
    -- h = 1.4: a[1] = 1, a[2] = 2 -> 1.4
    close(1.4, stats.quantile(X, 0.2))
    -- h = 1.75 -> 1.75; h = 3.5 -> 3.5; h = 5.25 -> 5.25; h = 5.6 -> 5.6
    close(1.75, stats.quantile(X, 0.25))
    close(3.5, stats.quantile(X, 0.5))
    close(5.25, stats.quantile(X, 0.75))
    close(5.6, stats.quantile(X, 0.8))
  end)

  it('gives the extremes at 0 and 1 and exact ranks without interpolation', function()
    assert.are.equal(1, stats.quantile(X, 0))
    assert.are.equal(9, stats.quantile(X, 1))
    assert.are.equal(30, stats.quantile({ 50, 10, 40, 20, 30 }, 0.5))
  end)

  it("evaluates triton's expression (1 - t) * a[lo] + t * a[hi] bit for bit", function()
    local xs = { 0.13574400544166565, 0.13760000467300415, 0.14009599387645721, 0.1351, 0.139 }
    local s = { table.unpack(xs) }
    table.sort(s)
    for _, q in ipairs { 0.2, 0.5, 0.8, 0.33 } do
      local h = q * (#s - 1)
      local lo, hi = math.floor(h), math.ceil(h)
      local t = h - lo
      assert.are.equal((1 - t) * s[lo + 1] + t * s[hi + 1], stats.quantile(xs, q))
    end
  end)

  it('quantiles returns them in the order asked (Liger asks 0.5, 0.2, 0.8)', function()
    local q = stats.quantiles({ 10, 20, 30, 40, 50 }, { 0.5, 0.2, 0.8 })
    close(30, q[1])
    close(18, q[2]) -- h = 0.8: 10 * 0.2 + 20 * 0.8
    close(42, q[3]) -- h = 3.2: 40 * 0.8 + 50 * 0.2
  end)

  it('rejects quantiles outside [0, 1] and empty or non-numeric samples', function()
    assert.has_error(function() stats.quantile(X, 1.5) end,
      "bad argument #2 to 'quantile' (quantile in [0, 1] expected, got 1.5)")
    assert.has_error(function() stats.quantile({}, 0.5) end,
      "bad argument #1 to 'quantile' (empty list of samples)")
    assert.has_error(function() stats.median({ 1, 'x' }) end,
      "bad argument #1 to 'median' (element 2 is string, number expected)")
    assert.has_error(function() stats.mean({ 1, 0 / 0 }) end,
      "bad argument #1 to 'mean' (element 2 is NaN, number expected)")
    assert.has_error(function() stats.quantiles(X, 0.5) end)
  end)
end)

describe('stats: median, mean, stdev, min, max, iqr', function()
  it('median of even and odd counts', function()
    close(3.5, stats.median(X))
    assert.are.equal(3, stats.median({ 5, 1, 3 }))
    assert.are.equal(7, stats.median({ 7 }))
  end)

  it('mean = 31 / 8', function()
    close(3.875, stats.mean(X))
  end)

  it('sample variance and stdev divide by n - 1 (sum of squares 52.875)', function()
    close(52.875 / 7, stats.variance(X))
    close(math.sqrt(52.875 / 7), stats.stdev(X))
    close(1.0, stats.stdev({ 1, 2, 3 })) -- deviations -1 0 1: 2 / 2
  end)

  it('stdev of one sample is a soft failure', function()
    local v, msg = stats.stdev({ 4 })
    assert.is_nil(v)
    assert.matches('at least 2 samples', msg)
  end)

  it('min, max and iqr', function()
    assert.are.equal(1, stats.min(X))
    assert.are.equal(9, stats.max(X))
    close(3.5, stats.iqr(X)) -- 5.25 - 1.75
  end)

  it('mean stays exact for many equal samples', function()
    local xs = {}
    for i = 1, 100000 do xs[i] = 0.1 end
    close(0.1, stats.mean(xs), 1e-17)
  end)
end)

describe('stats.summary', function()
  it('collects everything', function()
    local s = stats.summary(X)
    assert.are.equal(8, s.n)
    assert.are.equal(1, s.min)
    assert.are.equal(9, s.max)
    close(3.875, s.mean)
    close(3.5, s.median)
    close(1.4, s.p20)
    close(5.6, s.p80)
    close(1.75, s.q25)
    close(5.25, s.q75)
    close(3.5, s.iqr)
    close(math.sqrt(52.875 / 7), s.stdev)
    close(math.sqrt(52.875 / 7) / 3.875, s.rsd)
  end)

  it('leaves stdev out for a single sample', function()
    local s = stats.summary({ 2.5 })
    assert.are.equal(2.5, s.median)
    assert.is_nil(s.stdev)
    assert.is_nil(s.rsd)
  end)
end)

describe('stats functions', function()
  it('never modify their input', function()
    local xs = { 3, 1, 4, 1, 5, 9, 2, 6 }
    stats.median(xs)
    stats.quantiles(xs, { 0.2, 0.8 })
    stats.summary(xs)
    stats.sorted(xs)
    stats.iqr(xs)
    assert.are.same({ 3, 1, 4, 1, 5, 9, 2, 6 }, xs)
  end)

  it('sorted returns a sorted copy', function()
    local xs = { 3, 1, 2 }
    local s = stats.sorted(xs)
    assert.are.same({ 1, 2, 3 }, s)
    assert.are_not.equal(xs, s)
  end)
end)

describe('stats.describe (the statistics of a session, computed once)', function()
  local inference = require 'kluabench.stats.inference'
  local prng = require 'kluabench.stats.prng'

  -- The interval and its flags as the results table computed them before describe existed
  -- (table.lua until 2026-12-04): rse_median's interval, then the same without the
  -- sample farthest from the median.
  local function old_ci(values)
    local n = #values
    local sorted = stats.sorted(values)
    local _, med, lo, hi = stats.rse_median(sorted, { confidence = 0.95, sorted = true })
    local l, u = stats.median_ci_ranks(n, 0.95)
    local flags = {}
    if l <= 1 or u >= n then flags[#flags + 1] = 'ci=range' end
    if n >= 3 then
      local rest = {}
      local drop = (med - sorted[1] > sorted[n] - med) and 1 or n
      for i = 1, n do if i ~= drop then rest[#rest + 1] = sorted[i] end end
      local _, _, lo2, hi2 = stats.rse_median(rest, { confidence = 0.95, sorted = true })
      if (hi2 - lo2) < 0.5 * (hi - lo) then flags[#flags + 1] = 'ci~1' end
    end
    return lo, hi, #flags > 0 and table.concat(flags, ' ') or nil
  end

  it('gives stats.summary, the quantiles asked for and the interval of the median with its flags', function()
    local g = prng.new(os.time())
    for trial = 1, 300 do
      local n = 1 + (trial % 40) + (trial > 250 and 500 or 0)
      local xs = {}
      for i = 1, n do
        -- lognormal-ish times with an outlier now and then
        xs[i] = 0.01 * math.exp(0.3 * (g:uniform() - 0.5)) * (g:uniform() < 0.05 and 5 or 1)
      end
      local qs = { 0.5, 0.2, 0.8, g:uniform() }
      local d = stats.describe(xs, qs)
      local s = stats.summary(xs)
      for k, v in pairs(s) do assert.equal(v, d[k], k) end
      local want = stats.quantiles(xs, qs)
      for i, q in ipairs(qs) do
        assert.equal(want[i], d.quantiles[i])
        assert.equal(want[i], d.at[q])
      end
      if n >= 2 then
        local lo, hi, flag = old_ci(xs)
        assert.same({ lo, hi }, d.ci95)
        assert.equal(flag, d.ci_flag)
      else
        assert.is_nil(d.ci95)
        assert.is_nil(d.ci_flag)
      end
    end
  end)

  it('says what is wrong with its arguments', function()
    assert.has_error(function() stats.describe({}) end)
    assert.has_error(function() stats.describe({ 1, 0 / 0 }) end)
    assert.has_error(function() stats.describe({ 1, 2 }, 0.5) end,
      "bad argument #2 to 'describe' (list of quantiles expected, got number)")
    assert.has_error(function() stats.describe({ 1, 2 }, { 1.5 }) end,
      "bad argument #2 to 'describe' (quantile in [0, 1] expected, got 1.5)")
  end)
end)
