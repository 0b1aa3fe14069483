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
local stats = require 'kluabench.stats'

local M = {}
local args = require 'kluabench.util.args'

local sqrt, exp, log, abs, floor, ceil = math.sqrt, math.exp, math.log, math.abs, math.floor,
  math.ceil

local function z_of(confidence, fname)
  if type(confidence) ~= 'number' or not (confidence > 0 and confidence < 1) then
    error(string.format("bad argument to '%s' (confidence in (0, 1) expected, got %s)", fname,
      tostring(confidence)), 3)
  end
  return stats.normal_quantile(0.5 + confidence / 2)
end

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
  return { s = s, n = n, median = stats.sorted_quantile(s, n, 0.5), F1 = F1,
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

local sorted_quantile = stats.sorted_quantile

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
    p = stats.erfc(abs(z) / sqrt(2)) -- = 2 * (1 - Phi(|z|)), accurate far into the tail
    if p > 1 then p = 1 end
  end
  return { u = u, z = z, p = p, p_superiority = u / (na * nb) }
end


return M
