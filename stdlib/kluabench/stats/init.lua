--- Descriptive statistics of benchmark samples; no function modifies its list. Quantiles are numpy's default,
-- (1 - t) a[floor h] + t a[ceil h], h = q (n - 1): the very expression triton evaluates, so ours agree to the bit.
local M = {}

local args = require 'kluabench.util.args'

local floor, ceil, sqrt, exp, log, abs = math.floor, math.ceil, math.sqrt, math.exp, math.log, math.abs

local function sorted_copy(xs, n)
  local s = table.move(xs, 1, n, 1, {})
  table.sort(s)
  return s
end

-- Raises unless xs is a non-empty list of numbers (not NaN: it makes every order statistic void); the interval
-- functions (interval = true) word the errors as they always have.
local function check_samples(fname, xs, argn, interval)
  argn = argn or 1
  if type(xs) ~= 'table' then
    error(string.format("bad argument #%d to '%s' (list of numbers expected, got %s)", argn, fname, type(xs)), 3)
  end
  local n = #xs
  if n == 0 then
    error(string.format("bad argument #%d to '%s' (%s)", argn, fname,
      interval and 'at least 1 samples needed, got 0' or 'empty list of samples'), 3)
  end
  for i = 1, n do
    local x = xs[i]
    if type(x) ~= 'number' or x ~= x then
      error(string.format("bad argument #%d to '%s' (element %d %s)", argn, fname, i,
        interval and 'is not a number' or ('is ' .. (x ~= x and 'NaN' or type(x)) .. ', number expected')), 3)
    end
  end
  return n
end

local function check_q(fname, q, argn)
  if type(q) ~= 'number' or not (q >= 0 and q <= 1) then
    error(string.format("bad argument #%d to '%s' (quantile in [0, 1] expected, got %s)", argn,
      fname, tostring(q)), 3)
  end
end

--- A sorted copy of xs.
-- @signature stats.sorted(xs) -> {numbers}
-- @example print(table.concat(stats.sorted({0.12, 0.1, 0.11}), " ")) --> 0.1 0.11 0.12
function M.sorted(xs) return sorted_copy(xs, check_samples('sorted', xs)) end

local function sorted_quantile(s, n, q)
  local h = q * (n - 1)
  local lo, hi = floor(h), ceil(h)
  local t = h - lo
  return (1 - t) * s[lo + 1] + t * s[hi + 1]
end

--- The q-quantile (0 <= q <= 1) by linear interpolation between closest ranks (numpy's default).
-- @signature stats.quantile(xs, q) -> number
-- @example print(stats.quantile({4, 1, 3, 2}, 0.2)) --> 1.6
function M.quantile(xs, q)
  local n = check_samples('quantile', xs)
  check_q('quantile', q, 2)
  return sorted_quantile(sorted_copy(xs, n), n, q)
end

--- Several quantiles at once (one sort), in the order of qs.
-- @signature stats.quantiles(xs, qs) -> {numbers}
-- @example local med, p20, p80 = table.unpack(stats.quantiles({0.11, 0.1, 0.13, 0.12, 0.1}, {0.5, 0.2, 0.8}))
function M.quantiles(xs, qs)
  local n = check_samples('quantiles', xs)
  args.check('quantiles', 2, qs, 'table', 'list of quantiles')
  for i = 1, #qs do check_q('quantiles', qs[i], 2) end
  local s, out = sorted_copy(xs, n), {}
  for i = 1, #qs do out[i] = sorted_quantile(s, n, qs[i]) end
  return out
end

--- The median (the mean of the two middle samples when n is even).
-- @signature stats.median(xs) -> number
-- @example print(stats.median({3, 1, 2, 10})) --> 2.5
function M.median(xs)
  local n = check_samples('median', xs)
  return sorted_quantile(sorted_copy(xs, n), n, 0.5)
end

--- The smallest sample.
-- @signature stats.min(xs) -> number
-- @example print(stats.min({3, 1, 2}))
function M.min(xs)
  local n, m = check_samples('min', xs), xs[1]
  for i = 2, n do if xs[i] < m then m = xs[i] end end
  return m
end

--- The largest sample.
-- @signature stats.max(xs) -> number
-- @example print(stats.max({3, 1, 2}))
function M.max(xs)
  local n, m = check_samples('max', xs), xs[1]
  for i = 2, n do if xs[i] > m then m = xs[i] end end
  return m
end

-- Neumaier-compensated sum: the mean of many nearly equal timings does not drift with n.
local function fsum(xs, n)
  local s, c = 0.0, 0.0
  for i = 1, n do
    local x = xs[i]
    local t = s + x
    if math.abs(s) >= math.abs(x) then c = c + ((s - t) + x) else c = c + ((x - t) + s) end
    s = t
  end
  return s + c
end

--- The arithmetic mean (compensated summation).
-- @signature stats.mean(xs) -> number
-- @example print(stats.mean({1, 2, 3})) --> 2.0
function M.mean(xs)
  local n = check_samples('mean', xs)
  return fsum(xs, n) / n
end

--- The sample variance (divisor n - 1); nil and a message for fewer than 2 samples.
-- @signature stats.variance(xs) -> number | nil, message
-- @example print(stats.variance({1, 2, 3, 4}))
function M.variance(xs)
  local n = check_samples('variance', xs)
  if n < 2 then return nil, 'variance needs at least 2 samples' end
  local m, d = fsum(xs, n) / n, {}
  for i = 1, n do d[i] = (xs[i] - m) ^ 2 end
  return fsum(d, n) / (n - 1)
end

--- The sample standard deviation (divisor n - 1, as numpy ddof=1 and torch.std); nil and a message for n < 2.
-- @signature stats.stdev(xs) -> number | nil, message
-- @example print(stats.stdev({1, 2, 3, 4}))
function M.stdev(xs)
  local n = check_samples('stdev', xs)
  if n < 2 then return nil, 'stdev needs at least 2 samples' end
  return sqrt((M.variance(xs)))
end

--- The interquartile range quantile(0.75) - quantile(0.25).
-- @signature stats.iqr(xs) -> number
-- @example print(stats.iqr({1, 2, 3, 4, 5}))
function M.iqr(xs)
  check_samples('iqr', xs)
  local q = M.quantiles(xs, { 0.25, 0.75 })
  return q[2] - q[1]
end

--- n, min, max, mean, stdev, median, p20, p80, q25, q75, iqr and rsd of the samples (stdev and rsd nil for n < 2).
-- @signature stats.summary(xs) -> table
-- @example
--   local s = stats.summary({0.11, 0.1, 0.13, 0.12, 0.1}) -- a result's samples, in ms
--   print(s.median, s.p20, s.p80, s.rsd)
function M.summary(xs)
  local n = check_samples('summary', xs)
  local q = M.quantiles(xs, { 0.5, 0.2, 0.8, 0.25, 0.75 })
  local mean, sd = fsum(xs, n) / n, n >= 2 and M.stdev(xs) or nil
  return {
    n = n, min = M.min(xs), max = M.max(xs), mean = mean, stdev = sd, median = q[1], p20 = q[2], p80 = q[3],
    q25 = q[4], q75 = q[5], iqr = q[5] - q[4], rsd = (sd and mean ~= 0) and sd / math.abs(mean) or nil,
  }
end

--- stats.quantile on sorted s of length n (no checks, no copy), for loops that sort once (stats.inference).
-- @signature stats.sorted_quantile(s, n, q) -> number
-- @example print(stats.sorted_quantile({1, 2, 3, 4}, 4, 0.5)) --> 2.5
M.sorted_quantile = sorted_quantile

--- The complementary error function (Numerical Recipes 6.2's Chebyshev fit: fractional error below 1.2e-7).
-- @signature stats.erfc(x) -> value
-- @example print(stats.erfc(0)) --> 1.0
function M.erfc(x)
  args.check('stats.erfc', 1, x, 'number', 'number')
  local z = abs(x)
  local t = 1 / (1 + 0.5 * z)
  local r = t * exp(-z * z - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418
    + t * (-0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587
    + t * (-0.82215223 + t * 0.17087277)))))))))
  return x >= 0 and r or 2 - r
end

--- The standard normal distribution function Phi(x) (absolute error < 1e-7).
-- @signature stats.normal_cdf(x) -> p
-- @example print(stats.normal_cdf(1.96)) --> 0.975
function M.normal_cdf(x)
  args.check('stats.normal_cdf', 1, x, 'number', 'number')
  return 0.5 * M.erfc(-x / sqrt(2))
end

-- Acklam's rational approximation of the normal quantile (relative error below 1.2e-9).
local A = { -3.969683028665376e+01, 2.209460984245205e+02, -2.759285104469687e+02,
  1.383577518672690e+02, -3.066479806614716e+01, 2.506628277459239e+00 }
local B = { -5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02,
  6.680131188771972e+01, -1.328068155288572e+01 }
local C = { -7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00,
  -2.549732539343734e+00, 4.374664141464968e+00, 2.938163982698783e+00 }
local D = { 7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00,
  3.754408661907416e+00 }

local function tail(q)
  return (((((C[1] * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5]) * q + C[6])
    / ((((D[1] * q + D[2]) * q + D[3]) * q + D[4]) * q + 1)
end

--- The p-quantile of the standard normal distribution.
-- @signature stats.normal_quantile(p) -> x
-- @example print(stats.normal_quantile(0.975)) --> 1.959964
function M.normal_quantile(p)
  if type(p) ~= 'number' or not (p > 0 and p < 1) then
    error("bad argument #1 to 'normal_quantile' (probability in (0, 1) expected, got " .. tostring(p) .. ')', 2)
  end
  local plow = 0.02425
  if p < plow then return tail(sqrt(-2 * log(p))) end
  if p > 1 - plow then return -tail(sqrt(-2 * log(1 - p))) end
  local q = p - 0.5
  local r = q * q
  return (((((A[1] * r + A[2]) * r + A[3]) * r + A[4]) * r + A[5]) * r + A[6]) * q
    / (((((B[1] * r + B[2]) * r + B[3]) * r + B[4]) * r + B[5]) * r + 1)
end

--- Student's t distribution function for integer degrees of freedom (Abramowitz and Stegun 26.7.3-4).
-- @signature stats.t_cdf(t, df) -> p
-- @example print(stats.t_cdf(-2, 5)) --> 0.05097
function M.t_cdf(t, df)
  args.check('stats.t_cdf', 1, t, 'number', 'number')
  if math.type(df) ~= 'integer' or df < 1 then
    error("bad argument #2 to 't_cdf' (positive integer degrees of freedom expected, got " .. tostring(df) .. ')', 2)
  end
  local th = math.atan(abs(t) / sqrt(df))
  local c2, sn, cs = math.cos(th) ^ 2, math.sin(th), math.cos(th)
  local a
  if df % 2 == 1 then
    local sum, term = 0, 1
    if df > 1 then
      sum = 1
      for k = 3, df - 2, 2 do term = term * (k - 1) / k * c2; sum = sum + term end
      sum = sn * cs * sum
    end
    a = 2 / math.pi * (th + sum)
  else
    local sum, term = 1, 1
    for k = 2, df - 2, 2 do term = term * (k - 1) / k * c2; sum = sum + term end
    a = sn * sum
  end
  if a > 1 then a = 1 end
  return t >= 0 and 0.5 + a / 2 or 0.5 - a / 2
end

--- The p-quantile (p >= 0.5) of Student's t with df degrees of freedom.
-- @signature stats.t_quantile(p, df) -> t
-- @example print(stats.t_quantile(0.975, 2)) --> 4.3027
function M.t_quantile(p, df)
  if type(p) ~= 'number' or not (p >= 0.5 and p < 1) then
    error("bad argument #1 to 't_quantile' (probability in [0.5, 1) expected, got " .. tostring(p) .. ')', 2)
  end
  local lo, hi = 0, 1
  while M.t_cdf(hi, df) < p do hi = hi * 2 end
  for _ = 1, 200 do
    local mid = 0.5 * (lo + hi)
    if M.t_cdf(mid, df) < p then lo = mid else hi = mid end
    if hi - lo < 1e-12 * hi then break end
  end
  return 0.5 * (lo + hi)
end

local function z_of(confidence, fname)
  if type(confidence) ~= 'number' or not (confidence > 0 and confidence < 1) then
    error(string.format("bad argument to '%s' (confidence in (0, 1) expected, got %s)", fname,
      tostring(confidence)), 3)
  end
  return M.normal_quantile(0.5 + confidence / 2)
end

--- The ranks bracketing the median of n samples with the confidence, distribution-free: floor(n/2 - h) and
-- ceil(1 + n/2 + h), h = z sqrt(n) / 2 (Binomial(n, 1/2) approximated as normal), clamped to [1, n].
-- @signature stats.median_ci_ranks(n [, confidence]) -> lo_rank, hi_rank
-- @example print(stats.median_ci_ranks(100))
function M.median_ci_ranks(n, confidence)
  args.check('stats.median_ci_ranks', 1, n, 'integer', 'sample count')
  args.check('stats.median_ci_ranks', 2, confidence, 'number|nil', 'confidence')
  local h = z_of(confidence or 0.95, 'median_ci_ranks') * sqrt(n) / 2
  local l, u = floor(n / 2 - h), ceil(1 + n / 2 + h)
  if l < 1 then l = 1 end
  if u > n then u = n end
  return l, u
end

--- The distribution-free confidence interval of the median (order statistics); opts.sorted: xs is sorted already.
-- @signature stats.median_ci(xs [, confidence [, opts]]) -> lo, hi
-- @example print(stats.median_ci({5, 1, 4, 2, 3, 6, 7, 8, 9, 10}, 0.95))
function M.median_ci(xs, confidence, opts)
  local n = check_samples('median_ci', xs, 1, true)
  local s = (opts and opts.sorted) and xs or sorted_copy(xs, n)
  local l, u = M.median_ci_ranks(n, confidence or 0.95)
  return s[l], s[u]
end

--- The relative standard error of the median (the CI half-width over z, over the median), what the rse_median
-- stopping rule drives down; math.huge for n < 2 or a zero median. opts: sorted, confidence.
-- @signature stats.rse_median(xs [, opts]) -> rse, median, lo, hi
-- @example print(stats.rse_median({1, 1.1, 0.9, 1.05, 0.95}))
function M.rse_median(xs, opts)
  local n = check_samples('rse_median', xs, 1, true)
  local confidence = opts and opts.confidence or 0.95
  local s = (opts and opts.sorted) and xs or sorted_copy(xs, n)
  local med = sorted_quantile(s, n, 0.5)
  if n < 2 then return math.huge, med, s[1], s[1] end
  local z = z_of(confidence, 'rse_median')
  local l, u = M.median_ci_ranks(n, confidence)
  local se = (s[u] - s[l]) / (2 * z)
  if med == 0 then return (se == 0) and 0 or math.huge, med, s[l], s[u] end
  return se / abs(med), med, s[l], s[u]
end

--- Every statistic the harness reports of a session's samples (a result's `summary`): stats.summary's, quantiles and
-- at (q -> value) of qs (default {0.5, 0.2, 0.8}), ci95 = {lo, hi} (n >= 2), ci_flag ("ci=range", "ci~1" or both).
-- @signature stats.describe(xs [, qs]) -> table
-- @example
--   local d = stats.describe({0.11, 0.1, 0.13, 0.12, 0.1, 0.5})
--   print(d.median, d.ci95[1], d.ci95[2], d.ci_flag) --> 0.115 0.1 0.5 ci=range ci~1
function M.describe(xs, qs)
  check_samples('describe', xs, 1, true)
  local d = M.summary(xs) -- its check also refuses NaN
  local n = d.n
  qs = qs or { 0.5, 0.2, 0.8 }
  args.check('describe', 2, qs, 'table', 'list of quantiles')
  for _, q in ipairs(qs) do check_q('describe', q, 2) end
  local s = sorted_copy(xs, n)
  d.quantiles, d.at = {}, {}
  for i, q in ipairs(qs) do d.quantiles[i] = sorted_quantile(s, n, q); d.at[q] = d.quantiles[i] end
  if n >= 2 then
    local l, u = M.median_ci_ranks(n, 0.95)
    local lo, hi = s[l], s[u]
    d.ci95 = { lo, hi }
    local flags = {}
    if l <= 1 or u >= n then flags[#flags + 1] = 'ci=range' end
    if n >= 3 then
      -- the interval without the sample farthest from the median (an end of the sorted list)
      local first = (d.median - s[1] > s[n] - d.median) and 2 or 1
      local l2, u2 = M.median_ci_ranks(n - 1, 0.95)
      if (s[first + u2 - 1] - s[first + l2 - 1]) < 0.5 * (hi - lo) then flags[#flags + 1] = 'ci~1' end
    end
    d.ci_flag = #flags > 0 and table.concat(flags, ' ') or nil
  end
  return d
end

return M
