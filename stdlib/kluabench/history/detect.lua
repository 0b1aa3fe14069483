--- Regression detection along commits: did the newest commits of a series
-- step away from their ancestors, and at which commit?
--
-- A series is one point (workload x provider x device) over commits in
-- ancestry order, oldest first; each commit has one value per measurement
-- session (the median of that session's raw samples, in ms). The method is
-- conbench's lookback z-score made to find a step rather than a lone
-- outlier, with asv's question "where did it step?" answered by trying
-- each of the last few commits as the step (docs/HISTORY.md):
--
--   x_c  = mean of log(session medians) of commit c
--   for each candidate step t among the last `lag` commits (t >= 2):
--     base = up to `window` commits before t, none before the latest mark
--     post = commits t .. newest
--     s    = max(sd of x over base, noise): the spread of the baseline,
--            never below the between-session noise in force (a baseline
--            that happened to land close together is not taken as quieter
--            than the device is)
--     d    = mean(x post) - mean(x base);   z = d / (s * sqrt(1/#base + 1/#post))
--   a step at t: #base >= min_window, z >= z_threshold, exp(d) - 1 >=
--   threshold, and every commit of post on its own at least z_threshold / 2
--   spreads beyond mean(x base) (a step persists; one outlier among them is
--   not a step)
--   the commit reported is the candidate with the largest z.
--   a step that counts but is older than the last `lag` commits (within
--   reach of their window) restarts the baseline there, as a mark does:
--   the commits after a step are judged against the series' new level, not
--   against a baseline that holds the step's first commits.
--
-- A sentinel series (the copy ceiling measured in the same sessions) is
-- tested over the same base and post: when it stepped the same way by at
-- least half as much, the machine changed, not the code, and the step is
-- reported as drift (not a regression).
local M = {}
local args = require 'kluabench.util.args'

--- The defaults of history_detect.check (docs/HISTORY.md says how they were chosen).
M.DEFAULTS = { window = 20, min_window = 5, lag = 3, z = 4, threshold = 0.02, noise = 0.0 }

local function mean(xs, i, j)
  local s = 0
  for k = i, j do s = s + xs[k] end
  return s / (j - i + 1)
end

local function sd(xs, i, j, m)
  local n = j - i + 1
  if n < 2 then return 0 end
  local ss = 0
  for k = i, j do ss = ss + (xs[k] - m) ^ 2 end
  return math.sqrt(ss / (n - 1))
end

--- The value of one commit from its session medians (ms): the mean of their logs.
--
-- @signature history_detect.value(session_medians) -> x
-- @example
--   print(math.exp(history_detect.value({1.0, 1.02, 0.98})))
function M.value(medians)
  args.check('history_detect.value', 1, medians, 'table', 'list of session medians')
  local s = 0
  for _, m in ipairs(medians) do s = s + math.log(m) end
  return s / #medians
end

-- The step statistics of xs with post starting at t, base from b0. persists:
-- every commit after the step is, on its own, at least half the z
-- threshold away in the step's direction (one outlier is not a step).
local function step_at(xs, t, b0, noise, zmin)
  local n = #xs
  local mb = mean(xs, b0, t - 1)
  local sb = sd(xs, b0, t - 1, mb)
  local s = math.max(sb, noise)
  local mp = mean(xs, t, n)
  local d = mp - mb
  local nb, np = t - b0, n - t + 1
  local se = s * math.sqrt(1 / nb + 1 / np)
  local one = s * math.sqrt(1 + 1 / nb)
  local persists = true
  for k = t, n do
    local zk = one > 0 and (xs[k] - mb) / one or 0
    if (d >= 0 and zk < zmin / 2) or (d < 0 and zk > -zmin / 2) then persists = false end
  end
  return { t = t, d = d, z = se > 0 and d / se or (d == 0 and 0 or math.huge * d), base_n = nb, post_n = np,
    base_mean = mb, base_sd = sb, sd = s, se = se, persists = persists }
end

-- Whether a candidate step counts (the rule of M.check).
local function counts(s, o)
  return math.abs(s.z) >= o.z and math.exp(math.abs(s.d)) - 1 >= o.threshold and s.persists
end

-- Where the baseline of the newest commits starts: at start, or at a step
-- older than the last `lag` commits within reach of their window (the
-- strongest that counts, then again after it). A step the checks of its own
-- commits have judged is the series' level from then on, as a mark is:
-- without this, a baseline that holds the step's first commits makes the
-- commits after it look like a second step, and blames one of them.
local function restart(xs, start, o)
  local n = #xs
  local at
  while true do
    local best
    for t = math.max(start + o.min_window, n - o.lag - o.window + 1), n - o.lag do
      local s = step_at(xs, t, math.max(start, t - o.window), o.noise, o.z)
      if counts(s, o) and (not best or math.abs(s.z) > math.abs(best.z)) then best = s end
    end
    if not best then return start, at end
    start, at = best.t, best.t
  end
end

--- Looks for a step in the newest commits of a series.
--
-- xs: the commits' values (detect.value), oldest first. opts: window (20), min_window (5), lag (3:
-- the step may be at any of the last 3 commits), z (4), threshold (0.02: the smallest change that
-- counts), noise (the between-session sd of log median in force; the spread is never taken below
-- it), start (the first index the baseline may use: a marked step). A step that counts but is older
-- than the last lag commits (the checks of its own commits judged it) restarts the baseline there,
-- as a mark does. Returns {status = "regression" | "improvement" | "ok" | "short", step = index of
-- the first commit after the step, ratio = exp(d), lo, hi (the interval of the ratio at the z
-- threshold), z, base_n, post_n, sd, earlier = index of such an older step, or nil}. "short": fewer
-- than min_window commits before every candidate.
--
-- @signature history_detect.check(xs [, opts]) -> result
-- @example
--   local xs = {}
--   for i = 1, 12 do xs[i] = math.log(i <= 10 and 1.0 + 0.001 * (i % 3) or 1.08) end
--   local r = history_detect.check(xs, {noise = 0.01})
--   print(r.status, r.step, r.ratio)
function M.check(xs, opts)
  args.check('history_detect.check', 1, xs, 'table', 'list of values')
  args.check('history_detect.check', 2, opts, 'table|nil', 'table of options')
  opts = opts or {}
  local o = {}
  for k, v in pairs(M.DEFAULTS) do o[k] = opts[k] == nil and v or opts[k] end
  local n = #xs
  local start, earlier = restart(xs, math.max(1, opts.start or 1), o)
  local flagged, top, any = nil, nil, false
  for t = math.max(start + 1, n - o.lag + 1), n do
    local b0 = math.max(start, t - o.window)
    if t - b0 >= o.min_window then
      any = true
      local s = step_at(xs, t, b0, o.noise, o.z)
      s.flag = counts(s, o)
      if s.flag and (not flagged or math.abs(s.z) > math.abs(flagged.z)) then flagged = s end
      if not top or math.abs(s.z) > math.abs(top.z) then top = s end
    end
  end
  if not any then return { status = 'short', post_n = 0, base_n = 0, earlier = earlier } end
  local best = flagged or top
  local r = { step = best.t, ratio = math.exp(best.d), z = best.z, base_n = best.base_n, post_n = best.post_n,
    sd = best.sd, base_mean = best.base_mean, earlier = earlier }
  r.lo, r.hi = math.exp(best.d - o.z * best.se), math.exp(best.d + o.z * best.se)
  if best.flag then
    r.status = best.d > 0 and 'regression' or 'improvement'
  else
    r.status = 'ok'
  end
  return r
end

--- The same step tested on a sentinel series (the copy ceiling of the same sessions): "drift" when
-- it stepped the same way by at least half as much as the series did.
--
-- result: what history_detect.check gave the series; sxs: the sentinel's values for the same commits
-- (nil where a commit has none); opts as for check. Returns "drift", "steady" (the sentinel did not
-- step) or "none" (no sentinel values on both sides of the step), and the sentinel's ratio.
--
-- @signature history_detect.sentinel(result, sxs [, opts]) -> verdict, ratio
-- @example
--   local r = {status = "regression", step = 11, ratio = 1.08, base_n = 10}
--   local s = {}
--   for i = 1, 12 do s[i] = math.log(i <= 10 and 1.0 or 1.07) end
--   print(history_detect.sentinel(r, s, {noise = 0.01})) --> drift
function M.sentinel(result, sxs, opts)
  args.check('history_detect.sentinel', 1, result, 'table', 'check result')
  args.check('history_detect.sentinel', 2, sxs, 'table', 'list of sentinel values')
  args.check('history_detect.sentinel', 3, opts, 'table|nil', 'table of options')
  opts = opts or {}
  if not result.step then return 'none' end
  local base, post = {}, {}
  local b0 = result.step - result.base_n
  for k = b0, result.step - 1 do if sxs[k] then base[#base + 1] = sxs[k] end end
  for k = result.step, #sxs do if sxs[k] then post[#post + 1] = sxs[k] end end
  if #base < 2 or #post < 1 then return 'none' end
  local mb = mean(base, 1, #base)
  local d = mean(post, 1, #post) - mb
  local s = math.max(sd(base, 1, #base, mb), opts.noise or M.DEFAULTS.noise)
  local z = d / (s * math.sqrt(1 / #base + 1 / #post))
  local dseries = math.log(result.ratio)
  -- the same direction, at least half the size, and beyond the sentinel's own noise
  if d * dseries > 0 and math.abs(d) >= math.abs(dseries) / 2 and math.abs(z) >= 2 then
    return 'drift', math.exp(d)
  end
  return 'steady', math.exp(d)
end

return M
