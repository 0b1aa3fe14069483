--- Descriptive statistics of benchmark samples.
-- Every function takes a list of numbers and never modifies it. Quantiles use
-- linear interpolation between closest ranks (the definition of numpy's
-- default method, torch.quantile and triton.testing's `_quantile`):
-- with the sorted samples a[0..n-1] and h = q * (n - 1),
-- quantile(q) = (1 - t) * a[floor(h)] + t * a[ceil(h)], t = h - floor(h).
-- That exact expression is the one triton evaluates, so our numbers agree
-- with triton's to the last bit for the same samples.
local M = {}

local floor, ceil, sqrt = math.floor, math.ceil, math.sqrt

-- Raises unless xs is a non-empty list of numbers (NaN is rejected too: a
-- NaN sample makes every order statistic meaningless).
local function check_samples(fname, xs, argn)
  argn = argn or 1
  if type(xs) ~= 'table' then
    error(string.format("bad argument #%d to '%s' (list of numbers expected, got %s)", argn,
      fname, type(xs)), 3)
  end
  local n = #xs
  if n == 0 then
    error(string.format("bad argument #%d to '%s' (empty list of samples)", argn, fname), 3)
  end
  for i = 1, n do
    local x = xs[i]
    if type(x) ~= 'number' or x ~= x then
      error(string.format("bad argument #%d to '%s' (element %d is %s, number expected)", argn,
        fname, i, x ~= x and 'NaN' or type(x)), 3)
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
--
-- @signature stats.sorted(xs) -> {numbers}
-- @example
--   print(table.concat(stats.sorted({0.12, 0.1, 0.11}), " ")) --> 0.1 0.11 0.12
function M.sorted(xs)
  local n = check_samples('sorted', xs)
  local s = table.move(xs, 1, n, 1, {})
  table.sort(s)
  return s
end

--- Quantile q of an already sorted list s of length n (no checks: for
-- callers that sort once and ask for many quantiles).
local function sorted_quantile(s, n, q)
  local h = q * (n - 1)
  local lo, hi = floor(h), ceil(h)
  local t = h - lo
  return (1 - t) * s[lo + 1] + t * s[hi + 1]
end

--- The q-quantile (0 <= q <= 1) by linear interpolation between closest ranks.
--
-- The definition of numpy's default, torch.quantile and triton.testing: with sorted a[0..n-1] and h
-- = q (n - 1), (1 - t) a[floor h] + t a[ceil h], t = h - floor h.
--
-- @signature stats.quantile(xs, q) -> number
-- @example
--   print(stats.quantile({4, 1, 3, 2}, 0.2)) --> 1.6
function M.quantile(xs, q)
  local n = check_samples('quantile', xs)
  check_q('quantile', q, 2)
  local s = table.move(xs, 1, n, 1, {})
  table.sort(s)
  return sorted_quantile(s, n, q)
end

--- Several quantiles at once (one sort), in the order of qs.
--
-- @signature stats.quantiles(xs, qs) -> {numbers}
-- @example
--   local med, p20, p80 = table.unpack(stats.quantiles({0.11, 0.1, 0.13, 0.12, 0.1}, {0.5, 0.2, 0.8}))
function M.quantiles(xs, qs)
  local n = check_samples('quantiles', xs)
  if type(qs) ~= 'table' then
    error("bad argument #2 to 'quantiles' (list of quantiles expected, got " .. type(qs) .. ')', 2)
  end
  for i = 1, #qs do check_q('quantiles', qs[i], 2) end
  local s = table.move(xs, 1, n, 1, {})
  table.sort(s)
  local out = {}
  for i = 1, #qs do out[i] = sorted_quantile(s, n, qs[i]) end
  return out
end

--- The median (the mean of the two middle samples when n is even).
--
-- @signature stats.median(xs) -> number
-- @example
--   print(stats.median({3, 1, 2, 10})) --> 2.5
function M.median(xs)
  local n = check_samples('median', xs)
  local s = table.move(xs, 1, n, 1, {})
  table.sort(s)
  return sorted_quantile(s, n, 0.5)
end

--- The smallest sample.
--
-- @signature stats.min(xs) -> number
-- @example
--   print(stats.min({3, 1, 2}))
function M.min(xs)
  local n = check_samples('min', xs)
  local m = xs[1]
  for i = 2, n do if xs[i] < m then m = xs[i] end end
  return m
end

--- The largest sample.
--
-- @signature stats.max(xs) -> number
-- @example
--   print(stats.max({3, 1, 2}))
function M.max(xs)
  local n = check_samples('max', xs)
  local m = xs[1]
  for i = 2, n do if xs[i] > m then m = xs[i] end end
  return m
end

-- Neumaier-compensated sum: the mean of many nearly equal timings stays
-- accurate to the last bits instead of drifting with n.
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
--
-- @signature stats.mean(xs) -> number
-- @example
--   print(stats.mean({1, 2, 3})) --> 2.0
function M.mean(xs)
  local n = check_samples('mean', xs)
  return fsum(xs, n) / n
end

--- The sample variance (divisor n - 1); nil and a message for fewer than 2 samples.
--
-- @signature stats.variance(xs) -> number | nil, message
-- @example
--   print(stats.variance({1, 2, 3, 4}))
function M.variance(xs)
  local n = check_samples('variance', xs)
  if n < 2 then return nil, 'variance needs at least 2 samples' end
  local m = fsum(xs, n) / n
  local d = {}
  for i = 1, n do d[i] = (xs[i] - m) ^ 2 end
  return fsum(d, n) / (n - 1)
end

--- The sample standard deviation (divisor n - 1, as numpy ddof=1 and torch.std).
--
-- Returns nil, message for fewer than 2 samples.
--
-- @signature stats.stdev(xs) -> number | nil, message
-- @example
--   print(stats.stdev({1, 2, 3, 4}))
function M.stdev(xs)
  local n = check_samples('stdev', xs)
  if n < 2 then return nil, 'stdev needs at least 2 samples' end
  local v = M.variance(xs)
  return sqrt(v)
end

--- The interquartile range quantile(0.75) - quantile(0.25).
--
-- @signature stats.iqr(xs) -> number
-- @example
--   print(stats.iqr({1, 2, 3, 4, 5}))
function M.iqr(xs)
  check_samples('iqr', xs)
  local q = M.quantiles(xs, { 0.25, 0.75 })
  return q[2] - q[1]
end

--- n, min, max, mean, stdev, median, p20, p80, q25, q75, iqr and rsd of the samples.
--
-- stdev and rsd (stdev / mean) are nil when they are undefined (n < 2).
--
-- @signature stats.summary(xs) -> table
-- @example
--   local s = stats.summary({0.11, 0.1, 0.13, 0.12, 0.1}) -- a result's samples, in ms
--   print(s.median, s.p20, s.p80, s.rsd)
function M.summary(xs)
  local n = check_samples('summary', xs)
  local q = M.quantiles(xs, { 0.5, 0.2, 0.8, 0.25, 0.75 })
  local mean = fsum(xs, n) / n
  local sd = n >= 2 and M.stdev(xs) or nil
  return {
    n = n,
    min = M.min(xs),
    max = M.max(xs),
    mean = mean,
    stdev = sd,
    median = q[1],
    p20 = q[2],
    p80 = q[3],
    q25 = q[4],
    q75 = q[5],
    iqr = q[5] - q[4],
    rsd = (sd and mean ~= 0) and sd / math.abs(mean) or nil,
  }
end

--- stats.quantile on a list s of n samples that is already sorted (no checks, no copy).
--
-- For loops that sort once and ask for many quantiles (the bootstrap in kluabench.stats.inference).
--
-- @signature stats.sorted_quantile(s, n, q) -> number
-- @example
--   print(stats.sorted_quantile({1, 2, 3, 4}, 4, 0.5)) --> 2.5
M.sorted_quantile = sorted_quantile

return M
