-- The false-alarm rate and detection power of `kluabench history check` on real sequences: one records file per
-- "commit", measured in its own process (scripts/detector_sequence.sh), judged as CI would judge them.
--
--   kluabench scripts/history_real.lua [--z Z] FILE...        (FILEs in commit order)
--
-- Each FILE holds scripts/planted_copy.lua's providers at one or more sizes, --runs 3 sessions each. Per size:
--   A/A:   the series of `user` (the same code at every commit), checked after every commit from the sixth on: a
--          regression raised is a false alarm.
--   power: a step planted at commit s: `user` before s, `user_2pct`, `user_5pct` or `user_10pct` from s on (each
--          commit's own real measurement of the slower code, from the same process as the sentinel), checked at
--          s, s + 1 and s + 2; every s from the sixth commit to the third from the end. `later`: the checks of the
--          commits after those (up to s + 11), which changed nothing.
-- The sentinel is the `copy` provider of the same commit. The method is kluabench.history.detect with its defaults
-- (docs/HISTORY.md); the noise floor is the median between-session figure the records carry (measured on their
-- device), else 0. Exit status 2 on a usage error.
local point = require 'kluabench.history.point'
local result = require 'kluabench.result'
local detect = require 'kluabench.history.detect'
local stats = require 'kluabench.stats'
local cli = require 'kluabench.util.args'

local USAGE = 'usage: kluabench scripts/history_real.lua [--z Z] FILE...\n'
local opts, FILES = cli.parse_args(arg, { z = 'value', help = 'flag', aliases = { h = 'help' } })
local function usage_error(msg)
  io.stderr:write('history_real.lua: ', msg, '\n', USAGE)
  os.exit(2)
end
if not opts then usage_error(FILES) end
if opts.help then io.stdout:write(USAGE) os.exit(0) end
if #FILES < 8 then usage_error('give at least 8 FILEs (commits), in commit order') end
local Z = tonumber(opts.z or detect.DEFAULTS.z)
if not Z or Z <= 0 then usage_error('--z needs a number > 0') end

-- x[id][provider][c]: the value of commit c (history.detect.value of its session medians)
local x, ids, noise = {}, {}, {}
for c, name in ipairs(FILES) do
  local bundles, why = point.read(name)
  if not bundles then usage_error(why) end
  local medians = {}
  for _, b in ipairs(bundles) do
    local s = result.session(b)
    if s.status ~= 'passed' then usage_error(string.format('%s: %s (%s) is %s', name, s.id, s.provider, s.status)) end
    medians[s.id] = medians[s.id] or {}
    medians[s.id][s.provider] = medians[s.id][s.provider] or {}
    table.insert(medians[s.id][s.provider], s.median_ns / 1e6)
    if s.noise_sd then noise[#noise + 1] = s.noise_sd end
  end
  for id, by in pairs(medians) do
    if not x[id] then x[id] = {}; ids[#ids + 1] = id end
    for provider, ms in pairs(by) do
      x[id][provider] = x[id][provider] or {}
      x[id][provider][c] = detect.value(ms)
    end
  end
end
table.sort(ids)
local NOISE = #noise > 0 and stats.median(noise) or 0
local N = #FILES
local START = detect.DEFAULTS.min_window + 1

local function check(xs, sxs)
  local r = detect.check(xs, { noise = NOISE, z = Z })
  if r.status == 'regression' and detect.sentinel(r, sxs, { noise = NOISE }) == 'drift' then r.status = 'drift' end
  return r
end

local function series(id, provider, step, upto)
  local xs, sxs = {}, {}
  for c = 1, upto do
    local p = (step and c >= step) and provider or 'user'
    xs[c], sxs[c] = x[id][p][c], x[id].copy[c]
    if not xs[c] or not sxs[c] then usage_error(string.format('%s: commit %d has no %s or copy', id, c, p)) end
  end
  return xs, sxs
end

local out = {}
local function say(fmt, ...) out[#out + 1] = string.format(fmt, ...) end
say('history check on real sequences: %d commits (files), %d points', N, #ids)
say('method: kluabench.history.detect; noise floor %.4f; z %.2f, threshold %.0f%%, window %d, min window %d, lag %d',
  NOISE, Z, detect.DEFAULTS.threshold * 100, detect.DEFAULTS.window, detect.DEFAULTS.min_window, detect.DEFAULTS.lag)
say('')
say('%-12s %9s %11s %-10s %6s %6s %6s %7s %7s %10s', 'point', 'sd(x)', 'A/A', 'step', 'at +0', 'at +1', 'at +2',
  'missed', 'found', 'later')
local total = { checks = 0, alarms = 0 }
local by_step = {}
for _, id in ipairs(ids) do
  local xs = series(id, 'user', nil, N)
  local spread = stats.stdev(xs)
  local alarms, checks = 0, 0
  for c = START, N do
    local a, b = series(id, 'user', nil, c)
    checks = checks + 1
    if check(a, b).status == 'regression' then alarms = alarms + 1 end
  end
  total.checks, total.alarms = total.checks + checks, total.alarms + alarms
  for _, step in ipairs { 'user_2pct', 'user_5pct', 'user_10pct' } do
    local found, missed, later, later_checks = { 0, 0, 0 }, 0, 0, 0
    for s = START, N - 2 do
      local hit
      for c = s, s + 2 do
        local r = check(series(id, step, s, c))
        if r.status == 'regression' then hit = { at = c - s + 1, step = r.step } break end
      end
      if hit and hit.step == s then found[hit.at] = found[hit.at] + 1 else missed = missed + 1 end
      for c = s + 3, math.min(N, s + 11) do
        later_checks = later_checks + 1
        if check(series(id, step, s, c)).status == 'regression' then later = later + 1 end
      end
    end
    local steps = N - 2 - START + 1
    local t = by_step[step] or { steps = 0, found = 0, later = 0, later_checks = 0 }
    t.steps, t.found = t.steps + steps, t.found + found[1] + found[2] + found[3]
    t.later, t.later_checks = t.later + later, t.later_checks + later_checks
    by_step[step] = t
    say('%-12s %9.4f %4d/%-6d %-10s %6d %6d %6d %7d %6.1f%% %4d/%-5d', id:gsub('%-fp32$', ''), spread, alarms, checks,
      step, found[1], found[2], found[3], missed, 100 * (found[1] + found[2] + found[3]) / steps, later, later_checks)
  end
end
say('')
say('A/A: %d false alarms in %d checks (%.2f%%)', total.alarms, total.checks, 100 * total.alarms / total.checks)
for _, step in ipairs { 'user_2pct', 'user_5pct', 'user_10pct' } do
  local t = by_step[step]
  say('%s: found at its commit within 3 commits in %d of %d planted steps (%.1f%%); %d of %d later checks raised a '
    .. 'regression', step, t.found, t.steps, 100 * t.found / t.steps, t.later, t.later_checks)
end
io.write(table.concat(out, '\n'), '\n')
