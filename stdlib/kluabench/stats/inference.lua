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
local args = require 'kluabench.util.args'

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

--- The standard normal distribution function.
--
-- Phi(x), the standard normal cumulative distribution (absolute error < 1e-7).
--
-- @signature inference.normal_cdf(x) -> p
-- @example
--   print(inference.normal_cdf(1.96)) --> 0.975
function M.normal_cdf(x)
  args.check('inference.normal_cdf', 1, x, 'number', 'number')
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

--- The p-quantile of the standard normal distribution.
--
-- @signature inference.normal_quantile(p) -> x
-- @example
--   print(inference.normal_quantile(0.975)) --> 1.959964
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

--- Student's t distribution function for integer degrees of freedom (Abramowitz and Stegun
-- 26.7.3-4).
--
-- @signature inference.t_cdf(t, df) -> p
-- @example
--   print(inference.t_cdf(-2, 5)) --> 0.05097
function M.t_cdf(t, df)
  args.check('inference.t_cdf', 1, t, 'number', 'number')
  if math.type(df) ~= 'integer' or df < 1 then
    error("bad argument #2 to 't_cdf' (positive integer degrees of freedom expected, got "
      .. tostring(df) .. ')', 2)
  end
  local th = math.atan(abs(t) / sqrt(df))
  local c2, sn, cs = math.cos(th) ^ 2, math.sin(th), math.cos(th)
  local a
  if df % 2 == 1 then
    local sum, term = 0, 1
    if df > 1 then
      sum = 1
      for k = 3, df - 2, 2 do
        term = term * (k - 1) / k * c2
        sum = sum + term
      end
      sum = sn * cs * sum
    end
    a = 2 / math.pi * (th + sum)
  else
    local sum, term = 1, 1
    for k = 2, df - 2, 2 do
      term = term * (k - 1) / k * c2
      sum = sum + term
    end
    a = sn * sum
  end
  if a > 1 then a = 1 end
  return t >= 0 and 0.5 + a / 2 or 0.5 - a / 2
end

--- The p-quantile (p >= 0.5) of Student's t with df degrees of freedom.
--
-- @signature inference.t_quantile(p, df) -> t
-- @example
--   print(inference.t_quantile(0.975, 2)) --> 4.3027
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

--- The ranks of the order statistics that bracket the median of n samples.
--
-- The ranks (1-based) of the order statistics that bracket the median of n samples with the given
-- confidence, distribution-free: the number of samples below the true median is Binomial(n, 1/2),
-- so with h = z * sqrt(n) / 2 the ranks floor(n/2 - h) and ceil(1 + n/2 + h) hold the median
-- between them with probability ~confidence (normal approximation of the binomial). Ranks are
-- clamped to [1, n], which only widens the interval.
--
-- @signature inference.median_ci_ranks(n [, confidence]) -> lo_rank, hi_rank
-- @example
--   print(inference.median_ci_ranks(100))
function M.median_ci_ranks(n, confidence)
  args.check('inference.median_ci_ranks', 1, n, 'integer', 'sample count')
  args.check('inference.median_ci_ranks', 2, confidence, 'number|nil', 'confidence')
  local z = z_of(confidence or 0.95, 'median_ci_ranks')
  local h = z * sqrt(n) / 2
  local l = floor(n / 2 - h)
  local u = ceil(1 + n / 2 + h)
  if l < 1 then l = 1 end
  if u > n then u = n end
  return l, u
end

--- The distribution-free confidence interval of the median (order statistics).
--
-- opts.sorted = true when xs is already sorted (skips the copy and sort).
--
-- @signature inference.median_ci(xs [, confidence [, opts]]) -> lo, hi
-- @example
--   print(inference.median_ci({5, 1, 4, 2, 3, 6, 7, 8, 9, 10}, 0.95))
function M.median_ci(xs, confidence, opts)
  local n = check_list('median_ci', xs, 1)
  local s = (opts and opts.sorted) and xs or sorted_copy(xs, n)
  local l, u = M.median_ci_ranks(n, confidence or 0.95)
  return s[l], s[u]
end

--- The relative standard error of the median: the CI half-width over z, over the median.
--
-- This is the quantity the `rse_median` stopping rule drives below its target. Returns rse, median,
-- lo, hi; rse is math.huge for n < 2 and for a zero median. opts.sorted as in median_ci;
-- opts.confidence (0.95).
--
-- @signature inference.rse_median(xs [, opts]) -> rse, median, lo, hi
-- @example
--   print(inference.rse_median({1, 1.1, 0.9, 1.05, 0.95}))
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

-- log C(n, k), summed (O(k); once per session).
local function log_choose(n, k)
  local s = 0
  for i = 1, k do s = s + log((n - k + i) / i) end
  return s
end

-- P(X >= k) for X ~ Binomial(n, p), 0 < p < 1, 1 <= k <= n; logc = log C(n, k).
-- Summed from k away from the mode (the terms only shrink that way), up to
-- the first term below 1e-17 of the sum: O(sqrt(n)) terms near the middle,
-- one far from it.
local function binomial_upper(n, k, p, logc)
  local q = 1 - p
  local lp, lq = log(p), log(q)
  if p * n <= k then -- the mode is at or below k
    local t = exp(logc + k * lp + (n - k) * lq)
    local sum, x, step = t, k, p / q
    while x < n and t > sum * 1e-17 do
      t = t * (n - x) / (x + 1) * step
      sum = sum + t
      x = x + 1
    end
    return sum
  end
  local x = k - 1 -- 1 - P(X <= k - 1); the mode is above k - 1
  local t = exp(logc + log(k / (n - k + 1)) + x * lp + (n - x) * lq)
  local sum, step = t, q / p
  while x > 0 and t > sum * 1e-17 do
    t = t * x / (n - x + 1) * step
    sum = sum + t
    x = x - 1
  end
  return 1 - sum
end

--- The law of the k-th smallest of a bootstrap resample of n sorted samples: F[j] = P(Binomial(n,
-- j/n) >= k).
--
-- A resample's k-th order statistic is s[j] for the first j with F[j] above a uniform draw, so a
-- bootstrap of a median costs a binary search per resample instead of n draws.
--
-- @signature inference.order_statistic_cdf(n, k) -> F
-- @example
--   local F = inference.order_statistic_cdf(5, 3)
--   print(F[1], F[3], F[5])
function M.order_statistic_cdf(n, k)
  args.check('inference.order_statistic_cdf', 1, n, 'integer', 'sample count')
  args.check('inference.order_statistic_cdf', 2, k, 'integer', 'rank')
  if math.type(n) ~= 'integer' or n < 1 or math.type(k) ~= 'integer' or k < 1 or k > n then
    error(string.format("bad arguments to 'order_statistic_cdf' (integers 1 <= k <= n expected, "
      .. 'got n = %s, k = %s)', tostring(n), tostring(k)), 2)
  end
  local F, logc = {}, log_choose(n, k)
  for j = 1, n - 1 do F[j] = binomial_upper(n, k, j / n, logc) end
  F[n] = 1
  return F
end

-- The first j with F[j] > u (binary search; F ascending, F[n] = 1 > u).
local function draw_rank(F, n, u)
  local lo, hi = 1, n
  while lo < hi do
    local mid = (lo + hi) // 2
    if F[mid] > u then hi = mid else lo = mid + 1 end
  end
  return lo
end

-- One session prepared for resampling: sorted samples, its median, the
-- laws of the resample's middle order statistics.
local function prepare_session(xs, fname, argn)
  local n = check_list(fname, xs, argn)
  local s = sorted_copy(xs, n)
  local h = (n - 1) * 0.5
  local r1, r2 = floor(h) + 1, ceil(h) + 1
  local F1 = M.order_statistic_cdf(n, r1)
  return { s = s, n = n, median = sorted_median(s, n), F1 = F1,
    F2 = r2 ~= r1 and M.order_statistic_cdf(n, r2) or nil }
end

-- The median of one bootstrap resample of a prepared session. For an odd
-- n it has exactly the resample median's law; for an even n the two middle
-- order statistics, each with its exact law, are drawn from one uniform
-- (their joint law is approximated by the comonotone one).
local function resample_median(sess, g)
  local u = g:uniform()
  local v1 = sess.s[draw_rank(sess.F1, sess.n, u)]
  if not sess.F2 then return v1 end
  return 0.5 * v1 + 0.5 * sess.s[draw_rank(sess.F2, sess.n, u)]
end

-- One side: its sessions prepared, the mean of their medians (the side's
-- estimate), and the spread of the sessions' log medians (nil for one).
local function prepare_side(sessions, fname, argn)
  if type(sessions) ~= 'table' or #sessions == 0 then
    error(string.format("bad argument #%d to '%s' (non-empty list of sessions expected)", argn, fname), 3)
  end
  local side = { sessions = {}, R = #sessions }
  local sum = 0
  for i, xs in ipairs(sessions) do
    local sess = prepare_session(xs, fname, argn)
    if not (sess.s[1] > 0) then
      error(string.format("bad argument #%d to '%s' (samples must be > 0 for a ratio)", argn, fname), 3)
    end
    side.sessions[i] = sess
    sum = sum + sess.median
  end
  side.mean = sum / side.R
  if side.R > 1 then
    local lm, ss = 0, 0
    for _, sess in ipairs(side.sessions) do lm = lm + log(sess.median) end
    lm = lm / side.R
    for _, sess in ipairs(side.sessions) do ss = ss + (log(sess.median) - lm) ^ 2 end
    side.between_sd = sqrt(ss / (side.R - 1))
  end
  -- the bootstrap variance of a mean of R values is (R - 1) / R times the
  -- unbiased one: sessions are drawn spread about the mean by sqrt(R / (R - 1))
  side.expand = side.R > 1 and sqrt(side.R / (side.R - 1)) or 1
  return side
end

-- One hierarchical resample of a side: R sessions drawn with replacement,
-- each one's median resampled within the session; their mean.
local function resample_side(side, g)
  local R = side.R
  if R == 1 then return resample_median(side.sessions[1], g) end
  local sum, mean, c = 0, side.mean, side.expand
  for _ = 1, R do
    local sess = side.sessions[g:int(R)]
    sum = sum + mean + c * (sess.median - mean) + (resample_median(sess, g) - sess.median)
  end
  return sum / R
end

local sorted_quantile = require('kluabench.stats').sorted_quantile

local function check_resampling(opts, fname)
  local resamples = opts.resamples or 2000
  local confidence = opts.confidence or 0.95
  z_of(confidence, fname)
  if math.type(resamples) ~= 'integer' or resamples < 10 then
    error("bad argument #3 to '" .. fname .. "' (resamples must be an integer >= 10)", 3)
  end
  return resamples, confidence, opts.seed or 1
end

--- Hierarchical bootstrap of new / base over sessions (lists of samples): sessions resampled, then
-- samples within them.
--
-- A side's estimate is the mean of its sessions' medians; drawn sessions are spread about their
-- mean by sqrt(R / (R - 1)). opts: resamples (2000), confidence (0.95), seed (1). Returns {ratio,
-- lo, hi, base_median, new_median, base_sessions, new_sessions, base_between, new_between (sd of
-- the sessions' log medians), resamples, confidence, seed, method}.
--
-- 2010; Davison and Hinkley 1997, section 3.8). With one session a side it is the plain bootstrap
-- of the ratio of medians, which sees no between-session variation at all.
--
-- @signature inference.hierarchical_ratio(base_sessions, new_sessions [, opts]) -> table
-- @example
--   local r = inference.hierarchical_ratio({{1, 1.1, 0.9}, {1.05, 1.0, 1.1}}, {{2, 2.1, 1.9}, {2.2, 2.0, 2.1}})
--   print(r.ratio, r.lo, r.hi)
function M.hierarchical_ratio(base, new, opts)
  opts = opts or {}
  local resamples, confidence, seed = check_resampling(opts, 'hierarchical_ratio')
  local b = prepare_side(base, 'hierarchical_ratio', 1)
  local n = prepare_side(new, 'hierarchical_ratio', 2)
  local g = prng.new(seed)
  local ratios = {}
  for r = 1, resamples do ratios[r] = resample_side(n, g) / resample_side(b, g) end
  table.sort(ratios)
  local a = (1 - confidence) / 2
  return {
    ratio = n.mean / b.mean,
    lo = sorted_quantile(ratios, resamples, a),
    hi = sorted_quantile(ratios, resamples, 1 - a),
    base_median = b.mean, new_median = n.mean,
    base_sessions = b.R, new_sessions = n.R,
    base_between = b.between_sd, new_between = n.between_sd,
    resamples = resamples, confidence = confidence, seed = seed,
    method = (b.R > 1 or n.R > 1) and 'hierarchical-bootstrap-percentile' or 'bootstrap-percentile',
  }
end

--- The bootstrap interval of median(new) / median(base); > 1 means new is slower.
--
-- opts: resamples (2000), seed (1), confidence (0.95). Returns {ratio, lo, hi, base_median,
-- new_median, resamples, confidence, seed, method}.
--
-- Bootstrap confidence interval of median(new) / median(base): both sets are resampled
-- independently with replacement `resamples` times (default 2000) from a SplitMix64 stream seeded
-- with `seed` (default 1), and the interval is the percentile interval of the resampled ratios at
-- the given confidence (default 0.95). A resample's median is drawn from its exact law
-- (order_statistic_cdf), so a resample costs O(log n), not O(n).
--
-- @signature inference.bootstrap_ratio(base, new [, opts]) -> table
-- @example
--   local r = inference.bootstrap_ratio({1.0, 1.1, 0.9, 1.0}, {2.0, 2.1, 1.9, 2.2})
--   print(r.ratio, r.lo, r.hi)
function M.bootstrap_ratio(base, new, opts)
  check_list('bootstrap_ratio', base, 1)
  check_list('bootstrap_ratio', new, 2)
  local r = M.hierarchical_ratio({ base }, { new }, opts)
  return { ratio = r.ratio, lo = r.lo, hi = r.hi, base_median = r.base_median,
    new_median = r.new_median, resamples = r.resamples, confidence = r.confidence, seed = r.seed,
    method = r.method }
end

--- Widens an interval around ratio by a further relative sd: each log half-width h becomes sqrt(h^2
-- + (z sd)^2).
--
-- Returns lo, hi.
--
-- @signature inference.widen(ratio, lo, hi, sd [, confidence]) -> lo, hi
-- @example
--   print(inference.widen(1.0, 0.99, 1.01, 0.02))
function M.widen(ratio, lo, hi, sd, confidence)
  args.check('inference.widen', 1, ratio, 'number', 'ratio')
  args.check('inference.widen', 2, lo, 'number', 'lower bound')
  args.check('inference.widen', 3, hi, 'number', 'upper bound')
  args.check('inference.widen', 4, sd, 'number|nil', 'noise standard deviation')
  if not sd or sd <= 0 then return lo, hi end
  local z = z_of(confidence or 0.95, 'widen')
  local e = (z * sd) ^ 2
  local hl = log(ratio / lo)
  local hh = log(hi / ratio)
  if hl < 0 then hl = 0 end
  if hh < 0 then hh = 0 end
  return ratio * exp(-sqrt(hl * hl + e)), ratio * exp(sqrt(hh * hh + e))
end

---------------------------------------------------------------------------
-- Two samples: Mann-Whitney U
---------------------------------------------------------------------------

--- The two-sided Mann-Whitney U test of a against b (p_superiority > 0.5: a tends to be larger).
--
-- The Mann-Whitney U test of a against b (two-sided), with average ranks for ties, the
-- tie-corrected variance and a continuity correction in the normal approximation (good from about 8
-- samples each; for fewer, the p-value is approximate). Returns {u (U of a: the number of pairs
-- with a > b, ties counting 1/2), z, p, p_superiority = u / (na * nb)}.
--
-- @signature inference.mann_whitney(a, b) -> {u, z, p, p_superiority}
-- @example
--   print(inference.mann_whitney({1, 2, 3, 4}, {5, 6, 7, 8}).p)
function M.mann_whitney(a, b)
  local na = check_list('mann_whitney', a, 1)
  local nb = check_list('mann_whitney', b, 2)
  -- both sorted on their own (plain numbers sort fast), then merged: a run
  -- of equal values across both lists is one tie group of average rank
  local sa, sb = sorted_copy(a, na), sorted_copy(b, nb)
  local N = na + nb
  local ra, ties = 0, 0
  local i, j, placed = 1, 1, 0
  while i <= na or j <= nb do
    local v
    if j > nb or (i <= na and sa[i] <= sb[j]) then v = sa[i] else v = sb[j] end
    local ca, cb = 0, 0
    while i <= na and sa[i] == v do ca = ca + 1; i = i + 1 end
    while j <= nb and sb[j] == v do cb = cb + 1; j = j + 1 end
    local t = ca + cb
    local rank = placed + (t + 1) / 2
    placed = placed + t
    if t > 1 then ties = ties + (t * t * t - t) end
    ra = ra + ca * rank
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

--- Every statistic the harness reports of one session's samples, computed once.
--
-- stats.summary's fields (n, min, max, mean, stdev, rsd, median, p20, p80, q25, q75, iqr), and:
-- quantiles (the values of qs, in their order; qs defaults to {0.5, 0.2, 0.8}), at (q -> value),
-- ci95 = {lo, hi} (the distribution-free 95 % interval of the median, inference.median_ci; nil
-- for n < 2) and ci_flag: "ci=range" when that interval is the samples' whole [min, max] (too
-- few samples for its ranks), "ci~1" when one outlier sets it (without the sample farthest from
-- the median it is less than half as wide), both, or nil. stats.summary is the same without the
-- quantiles asked for and the interval. The measuring modes put it in their
-- result as `summary`; records and tables read it from there, or from what records keep of it,
-- and do not compute it again.
--
-- @signature inference.describe(xs [, qs]) -> table
-- @example
--   local d = inference.describe({0.11, 0.1, 0.13, 0.12, 0.1, 0.5})
--   print(d.median, d.ci95[1], d.ci95[2], d.ci_flag) --> 0.115 0.1 0.5 ci=range ci~1
function M.describe(xs, qs)
  check_list('describe', xs, 1)
  local d = require('kluabench.stats').summary(xs) -- its check also refuses NaN
  local n = d.n
  qs = qs or { 0.5, 0.2, 0.8 }
  if type(qs) ~= 'table' then
    error("bad argument #2 to 'describe' (list of quantiles expected, got " .. type(qs) .. ')', 2)
  end
  for _, q in ipairs(qs) do
    if type(q) ~= 'number' or not (q >= 0 and q <= 1) then
      error(string.format("bad argument #2 to 'describe' (quantile in [0, 1] expected, got %s)", tostring(q)), 2)
    end
  end
  local s = sorted_copy(xs, n)
  d.quantiles, d.at = {}, {}
  for i, q in ipairs(qs) do
    d.quantiles[i] = sorted_quantile(s, n, q)
    d.at[q] = d.quantiles[i]
  end
  if n >= 2 then
    local l, u = M.median_ci_ranks(n, 0.95)
    local lo, hi = s[l], s[u]
    d.ci95 = { lo, hi }
    local flags = {}
    if l <= 1 or u >= n then flags[#flags + 1] = 'ci=range' end
    if n >= 3 then
      -- the interval without the one sample farthest from the median (an end of the sorted list)
      local first = (d.median - s[1] > s[n] - d.median) and 2 or 1
      local l2, u2 = M.median_ci_ranks(n - 1, 0.95)
      if (s[first + u2 - 1] - s[first + l2 - 1]) < 0.5 * (hi - lo) then flags[#flags + 1] = 'ci~1' end
    end
    d.ci_flag = #flags > 0 and table.concat(flags, ' ') or nil
  end
  return d
end

return M
