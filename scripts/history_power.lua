-- The false-alarm rate and detection power of `kluabench history check`, simulated on the noise of real GPU sessions.
--
--   kluabench scripts/history_power.lua [--trials N] [--seed N] [--z Z] FILE...
--
-- FILE: records files of one sweep measured several times on one device,
-- each file one session (A/A pairs, noise sessions), read with the current
-- reader (kluabench.history.point.read) and the result model; the method judged is
-- kluabench.history.detect itself. docs/HISTORY.md reports a run on nine
-- H200 sessions.
--
-- A simulated commit is one real session, drawn at random, its raw samples
-- resampled with replacement (a fresh draw of that session's median): so
-- the series carries the device's real between-session spread and each
-- session's real within-session noise. The sentinel (the copy provider of
-- the same workload) comes from the same real session, as it would on the
-- GPU. Three questions, per point of the sweep (fused and reference):
--   A/A:   20 commits of history, then 100 checks, one per new commit, of a
--          series with no change: how many checks raise a regression?
--   power: a +5 % step at commit 21 (the point slowed, the sentinel not):
--          is it found at commit 21, 22 or 23, and at which commit? And
--          the checks of the 9 commits after those (24 to 32), which
--          changed nothing: does any of them raise a regression (blaming
--          a commit after the step)?
--   drift: the same +5 % step in the point and in its sentinel (the machine
--          changed), checked at commits 21 to 32: how often is it blamed on
--          the code?
-- The report goes to stdout. Exit status 2 on a usage error.
local point = require 'kluabench.history.point'
local result = require 'kluabench.result'
local detect = require 'kluabench.history.detect'
local prng = require 'kluabench.stats.prng'
local stats = require 'kluabench.stats'
local cli = require 'kluabench.util.args'

local USAGE = 'usage: kluabench scripts/history_power.lua [--trials N] [--seed N] [--z Z] FILE...\n'
local opts, FILES = cli.parse_args(arg, { trials = 'value', seed = 'value', z = 'value', help = 'flag',
  aliases = { h = 'help' } })
local function usage_error(msg)
  io.stderr:write('history_power.lua: ', msg, '\n', USAGE)
  os.exit(2)
end
if not opts then usage_error(FILES) end
if opts.help then io.stdout:write(USAGE) os.exit(0) end
if #FILES == 0 then usage_error('no FILE given (records files of one sweep, one session each)') end
local TRIALS = math.tointeger(tonumber(opts.trials or 50)) or 50
local SEED = math.tointeger(tonumber(opts.seed or 1)) or 1
local Z = tonumber(opts.z or detect.DEFAULTS.z)

-- sessions[point label][provider] = {{samples...} per real session, in file order}
local sessions, order, noise = {}, {}, {}
for _, name in ipairs(FILES) do
  local bundles, why = point.read(name)
  if not bundles then usage_error(why) end
  local seen = {}
  for _, b in ipairs(bundles) do
    local s = result.session(b)
    local label, provider = result.label_of(b, s)
    if not s.samples_ms then usage_error(name .. ': ' .. label .. ' (' .. provider .. '): ' .. tostring(s.samples_why)) end
    -- a point measured twice in one file (hidden8192 seq2048) is two sessions
    local key = label .. '#' .. (seen[label .. provider] or 0)
    seen[label .. provider] = (seen[label .. provider] or 0) + 1
    if not sessions[key] then
      sessions[key] = {}
      order[#order + 1] = key
    end
    sessions[key][provider] = sessions[key][provider] or {}
    table.insert(sessions[key][provider], s.samples_ms)
    if s.noise_sd then noise[#noise + 1] = s.noise_sd end
  end
end
local NOISE = stats.median(noise) -- the between-session noise the records carry
local rng = prng.new(SEED)

local function resampled_median(samples)
  local out = {}
  for i = 1, #samples do out[i] = samples[rng:int(#samples)] end
  return stats.median(out)
end

-- One simulated commit of a point: a real session drawn at random.
local function commit(key, provider, factor, sentinel_factor)
  local list = sessions[key][provider]
  local i = rng:int(#list)
  local copy = sessions[key].copy and sessions[key].copy[math.min(i, #sessions[key].copy)]
  return math.log(resampled_median(list[i]) * factor),
    copy and math.log(resampled_median(copy) * sentinel_factor) or nil
end

local function run_check(xs, sxs)
  local r = detect.check(xs, { noise = NOISE, z = Z })
  if r.status == 'regression' then
    local verdict = detect.sentinel(r, sxs, { noise = NOISE })
    if verdict == 'drift' then r.status = 'drift' end
  end
  return r
end

local HISTORY, CHECKS, AFTER = 20, 100, 12
local out = {}
local function say(fmt, ...) out[#out + 1] = string.format(fmt, ...) end

say('history check on simulated series with the noise of real sessions (%d files, %d points)',
  #FILES, #order)
say('method: %s; noise floor %.4f (median sessionNoise.sd of the records); z %.2f, threshold %.0f%%, '
  .. 'window %d, min window %d, lag %d; %d trials per point, seed %d', 'kluabench.history.detect',
  NOISE, Z, detect.DEFAULTS.threshold * 100, detect.DEFAULTS.window, detect.DEFAULTS.min_window,
  detect.DEFAULTS.lag, TRIALS, SEED)
say('')
say('%-72s %-9s %8s %9s %7s %7s %7s %7s %8s %9s %7s', 'point', 'provider', 'sd(x)', 'A/A', 'rate',
  'at +0', 'at +1', 'at +2', 'missed', 'later', 'drift')

local totals = { checks = 0, alarms = 0, steps = 0, found = { 0, 0, 0 }, missed = 0, wrong = 0,
  drift = 0, drift_blamed = 0, later = 0, later_checks = 0 }
for _, key in ipairs(order) do
  for _, provider in ipairs { 'fused', 'reference' } do
    if sessions[key][provider] then
      -- the real between-session spread of this point
      local ms = {}
      for i, s in ipairs(sessions[key][provider]) do ms[i] = math.log(stats.median(s)) end
      local spread = stats.stdev(ms)
      local alarms, checks = 0, 0
      local found, missed, wrong, blamed, later = { 0, 0, 0 }, 0, 0, 0, 0
      for _ = 1, TRIALS do
        -- A/A: 100 checks along one long series
        local xs, sxs = {}, {}
        for c = 1, HISTORY + CHECKS do
          xs[c], sxs[c] = commit(key, provider, 1, 1)
          if c > HISTORY then
            checks = checks + 1
            if run_check(xs, sxs).status == 'regression' then alarms = alarms + 1 end
          end
        end
        -- power: +5 % from commit HISTORY + 1, the sentinel steady
        xs, sxs = {}, {}
        local hit = nil
        for c = 1, HISTORY + AFTER do
          xs[c], sxs[c] = commit(key, provider, c > HISTORY and 1.05 or 1, 1)
          if c > HISTORY + 3 then
            -- the step is older than the checks' lag: a regression now blames a commit that changed nothing
            if run_check(xs, sxs).status == 'regression' then later = later + 1 end
          elseif c > HISTORY and not hit then
            local r = run_check(xs, sxs)
            if r.status == 'regression' then hit = { at = c - HISTORY, step = r.step } end
          end
        end
        if hit and hit.step == HISTORY + 1 then found[hit.at] = found[hit.at] + 1
        elseif hit then wrong = wrong + 1 else missed = missed + 1 end
        -- drift: the point and its sentinel both +5 %
        xs, sxs = {}, {}
        local said = false
        for c = 1, HISTORY + AFTER do
          xs[c], sxs[c] = commit(key, provider, c > HISTORY and 1.05 or 1, c > HISTORY and 1.05 or 1)
          if c > HISTORY and run_check(xs, sxs).status == 'regression' then said = true end
        end
        if said then blamed = blamed + 1 end
      end
      say('%-72s %-9s %8.4f %4d/%-4d %6.2f%% %7d %7d %7d %8d %4d/%-4d %7d', key:gsub('#0$', ''), provider, spread,
        alarms, checks, 100 * alarms / checks, found[1], found[2], found[3], missed + wrong, later,
        TRIALS * (AFTER - 3), blamed)
      totals.later, totals.later_checks = totals.later + later, totals.later_checks + TRIALS * (AFTER - 3)
      totals.checks, totals.alarms = totals.checks + checks, totals.alarms + alarms
      totals.steps = totals.steps + TRIALS
      for i = 1, 3 do totals.found[i] = totals.found[i] + found[i] end
      totals.missed, totals.wrong = totals.missed + missed, totals.wrong + wrong
      totals.drift, totals.drift_blamed = totals.drift + TRIALS, totals.drift_blamed + blamed
    end
  end
end
local f = totals.found
say('')
say('A/A: %d false alarms in %d checks (%.3f%%; the goal: at most 1 in 100)', totals.alarms, totals.checks,
  100 * totals.alarms / totals.checks)
say('+5%% step: found at its commit by the check of that commit %d, of the next %d, of the one after %d: '
  .. '%d of %d (%.1f%%) within 3 commits; %d found at another commit, %d missed', f[1], f[2], f[3],
  f[1] + f[2] + f[3], totals.steps, 100 * (f[1] + f[2] + f[3]) / totals.steps, totals.wrong, totals.missed)
say('after the step: %d of the %d checks of commits +3 to +%d (which changed nothing) raised a regression (%.2f%%)',
  totals.later, totals.later_checks, AFTER - 1, 100 * totals.later / totals.later_checks)
say('machine drift (+5%% in the point and in its sentinel, checked at commits +0 to +%d): blamed on the code in '
  .. '%d of %d series (%.1f%%)', AFTER - 1,
  totals.drift_blamed, totals.drift, 100 * totals.drift_blamed / totals.drift)
io.write(table.concat(out, '\n'), '\n')
