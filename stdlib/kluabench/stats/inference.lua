--- Inference on benchmark samples: how sure we are of a median, and whether
-- two sets of samples differ. stats.lua describes one set of samples; this
-- module draws conclusions from them. Used by the stopping rules
-- (stopping.lua) and by `kluabench compare` (compare.lua).
--
-- No distributional assumption is made about timings (they are skewed and
-- have outliers): the confidence interval of a median comes from order
-- statistics, the comparison of two medians from a bootstrap, and the rank
-- test is Mann-Whitney's. The normal distribution appears only as the
-- large-sample limit of those (binomial ranks, the U statistic).
local prng = require 'kluabench.stats.prng'

local M = {}

local sqrt, exp, log, abs, floor, ceil = math.sqrt, math.exp, math.log, math.abs, math.floor,
  math.ceil

local function check_list(fname, xs, argn, min_n)
  if type(xs) ~= 'table' then
    error(string.format("bad argument #%d to '%s' (list of numbers expected, got %s)", argn, fname,
      type(xs)), 3)
  end
  local n = #xs
  if n < (min_n or 1) then
    error(string.format("bad argument #%d to '%s' (at least %d samples needed, got %d)", argn, fname,
      min_n or 1, n), 3)
  end
  for i = 1, n do
    local x = xs[i]
    if type(x) ~= 'number' or x ~= x then
      error(string.format("bad argument #%d to '%s' (element %d is not a number)", argn, fname, i), 3)
    end
  end
  return n
end

local function sorted_copy(xs, n)
  local s = table.move(xs, 1, n, 1, {})
  table.sort(s)
  return s
end

---------------------------------------------------------------------------
-- The normal distribution
---------------------------------------------------------------------------

-- erfc by the Chebyshev fit of Numerical Recipes (section 6.2), fractional
-- error below 1.2e-7 everywhere.
local function erfc(x)
  local z = abs(x)
  local t = 1 / (1 + 0.5 * z)
  local r = t * exp(-z * z - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418
    + t * (-0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587
    + t * (-0.82215223 + t * 0.17087277)))))))))
  return x >= 0 and r or 2 - r
end

--- Phi(x), the standard normal cumulative distribution (absolute error < 1e-7).
function M.normal_cdf(x)
  return 0.5 * erfc(-x / sqrt(2))
end

-- Acklam's rational approximation of the normal quantile (relative error
-- below 1.2e-9 on (0, 1)).
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

--- The p-quantile of the standard normal distribution, 0 < p < 1
-- (normal_quantile(0.975) = 1.959964).
function M.normal_quantile(p)
  if type(p) ~= 'number' or not (p > 0 and p < 1) then
    error("bad argument #1 to 'normal_quantile' (probability in (0, 1) expected, got "
      .. tostring(p) .. ')', 2)
  end
  local plow = 0.02425
  if p < plow then return tail(sqrt(-2 * log(p))) end
  if p > 1 - plow then return -tail(sqrt(-2 * log(1 - p))) end
  local q = p - 0.5
  local r = q * q
  return (((((A[1] * r + A[2]) * r + A[3]) * r + A[4]) * r + A[5]) * r + A[6]) * q
    / (((((B[1] * r + B[2]) * r + B[3]) * r + B[4]) * r + B[5]) * r + 1)
end

local function z_of(confidence, fname)
  if type(confidence) ~= 'number' or not (confidence > 0 and confidence < 1) then
    error(string.format("bad argument to '%s' (confidence in (0, 1) expected, got %s)", fname,
      tostring(confidence)), 3)
  end
  return M.normal_quantile(0.5 + confidence / 2)
end

---------------------------------------------------------------------------
-- The median and its uncertainty
---------------------------------------------------------------------------

-- The median of sorted s (length n) with stats.lua's definition (linear
-- interpolation: the mean of the two middle values when n is even).
local function sorted_median(s, n)
  local h = (n - 1) * 0.5
  local lo = floor(h)
  local t = h - lo
  if t == 0 then return s[lo + 1] end
  return (1 - t) * s[lo + 1] + t * s[lo + 2]
end

--- The ranks (1-based) of the order statistics that bracket the median of n
-- samples with the given confidence, distribution-free: the number of
-- samples below the true median is Binomial(n, 1/2), so with
-- h = z * sqrt(n) / 2 the ranks floor(n/2 - h) and ceil(1 + n/2 + h) hold the
-- median between them with probability ~confidence (normal approximation of
-- the binomial). Ranks are clamped to [1, n], which only widens the interval.
function M.median_ci_ranks(n, confidence)
  local z = z_of(confidence or 0.95, 'median_ci_ranks')
  local h = z * sqrt(n) / 2
  local l = floor(n / 2 - h)
  local u = ceil(1 + n / 2 + h)
  if l < 1 then l = 1 end
  if u > n then u = n end
  return l, u
end

--- The confidence interval of the median of xs: lo, hi (sample values).
-- opts.sorted = true when xs is already sorted (skips the copy and sort).
function M.median_ci(xs, confidence, opts)
  local n = check_list('median_ci', xs, 1)
  local s = (opts and opts.sorted) and xs or sorted_copy(xs, n)
  local l, u = M.median_ci_ranks(n, confidence or 0.95)
  return s[l], s[u]
end

--- The relative standard error of the median of xs: the half-width of its
-- distribution-free confidence interval (above) divided by z, over the
-- median. This is the quantity the `rse_median` stopping rule drives below
-- its target. Returns rse, median, lo, hi; rse is math.huge for n < 2 and
-- for a zero median. opts.sorted as in median_ci; opts.confidence (0.95).
function M.rse_median(xs, opts)
  local n = check_list('rse_median', xs, 1)
  local confidence = opts and opts.confidence or 0.95
  local s = (opts and opts.sorted) and xs or sorted_copy(xs, n)
  local med = sorted_median(s, n)
  if n < 2 then return math.huge, med, s[1], s[1] end
  local z = z_of(confidence, 'rse_median')
  local l, u = M.median_ci_ranks(n, confidence)
  local se = (s[u] - s[l]) / (2 * z)
  if med == 0 then return (se == 0) and 0 or math.huge, med, s[l], s[u] end
  return se / abs(med), med, s[l], s[u]
end

---------------------------------------------------------------------------
-- Two samples: bootstrap of the ratio of medians
---------------------------------------------------------------------------

-- The median of one bootstrap resample of sorted s (length n), without
-- sorting: draw n ranks with replacement into counts[1..n], then walk the
-- counts to the middle rank(s). The resample's sorted order is s's order, so
-- its k-th smallest value is s[j] for the first j whose cumulative count
-- reaches k. O(n) per resample.
local function resample_median(s, n, g, counts)
  for i = 1, n do counts[i] = 0 end
  for _ = 1, n do
    local k = g:int(n)
    counts[k] = counts[k] + 1
  end
  local h = (n - 1) * 0.5
  local r1 = floor(h) + 1        -- the lower middle rank
  local r2 = ceil(h) + 1         -- the upper middle rank (= r1 when n is odd)
  local cum, j = 0, 0
  local v1
  while cum < r1 do j = j + 1; cum = cum + counts[j] end
  v1 = s[j]
  if r2 == r1 then return v1 end
  while cum < r2 do j = j + 1; cum = cum + counts[j] end
  return 0.5 * v1 + 0.5 * s[j]
end

local sorted_quantile = require('kluabench.stats').sorted_quantile

--- Bootstrap confidence interval of median(new) / median(base): both sets
-- are resampled independently with replacement `resamples` times (default
-- 2000) from a SplitMix64 stream seeded with `seed` (default 1), and the
-- interval is the percentile interval of the resampled ratios at the given
-- confidence (default 0.95). A ratio > 1 means new is slower (larger times).
-- Returns {ratio (of the observed medians), lo, hi, base_median,
-- new_median, resamples, confidence, seed, method = "bootstrap-percentile"}.
function M.bootstrap_ratio(base, new, opts)
  opts = opts or {}
  local nb = check_list('bootstrap_ratio', base, 1)
  local nn = check_list('bootstrap_ratio', new, 2)
  local resamples = opts.resamples or 2000
  local confidence = opts.confidence or 0.95
  local seed = opts.seed or 1
  z_of(confidence, 'bootstrap_ratio')
  if math.type(resamples) ~= 'integer' or resamples < 10 then
    error("bad argument #3 to 'bootstrap_ratio' (resamples must be an integer >= 10)", 2)
  end
  local sb, sn = sorted_copy(base, nb), sorted_copy(new, nn)
  local mb, mn = sorted_median(sb, nb), sorted_median(sn, nn)
  if not (mb > 0 and sb[1] > 0) then
    error("bad argument #1 to 'bootstrap_ratio' (base samples must be > 0 for a ratio)", 2)
  end
  local g = prng.new(seed)
  local cb, cn = {}, {}
  local ratios = {}
  for r = 1, resamples do
    ratios[r] = resample_median(sn, nn, g, cn) / resample_median(sb, nb, g, cb)
  end
  table.sort(ratios)
  local a = (1 - confidence) / 2
  return {
    ratio = mn / mb,
    lo = sorted_quantile(ratios, resamples, a),
    hi = sorted_quantile(ratios, resamples, 1 - a),
    base_median = mb,
    new_median = mn,
    resamples = resamples,
    confidence = confidence,
    seed = seed,
    method = 'bootstrap-percentile',
  }
end

---------------------------------------------------------------------------
-- Two samples: Mann-Whitney U
---------------------------------------------------------------------------

--- The Mann-Whitney U test of a against b (two-sided), with average ranks
-- for ties, the tie-corrected variance and a continuity correction in the
-- normal approximation (good from about 8 samples each; for fewer, the
-- p-value is approximate). Returns {u (U of a: the number of pairs with
-- a > b, ties counting 1/2), z, p, p_superiority = u / (na * nb)}.
-- p_superiority > 0.5 means a tends to be larger (slower, for timings).
function M.mann_whitney(a, b)
  local na = check_list('mann_whitney', a, 1)
  local nb = check_list('mann_whitney', b, 2)
  local all = {}
  for i = 1, na do all[i] = { a[i], 1 } end
  for i = 1, nb do all[na + i] = { b[i], 2 } end
  table.sort(all, function(x, y) return x[1] < y[1] end)
  local N = na + nb
  local ra, ties = 0, 0
  local i = 1
  while i <= N do
    local j = i
    while j < N and all[j + 1][1] == all[i][1] do j = j + 1 end
    local rank = (i + j) / 2
    local t = j - i + 1
    if t > 1 then ties = ties + (t * t * t - t) end
    for k = i, j do
      if all[k][2] == 1 then ra = ra + rank end
    end
    i = j + 1
  end
  local u = ra - na * (na + 1) / 2
  local mu = na * nb / 2
  local var = na * nb / 12 * ((N + 1) - ties / (N * (N - 1)))
  local z, p
  if var <= 0 then
    z, p = 0, 1 -- every value equal: no evidence of a difference
  else
    local d = abs(u - mu) - 0.5
    if d < 0 then d = 0 end
    z = d / sqrt(var)
    if u < mu then z = -z end
    p = erfc(abs(z) / sqrt(2)) -- = 2 * (1 - Phi(|z|)), accurate far into the tail
    if p > 1 then p = 1 end
  end
  return { u = u, z = z, p = p, p_superiority = u / (na * nb) }
end

return M
