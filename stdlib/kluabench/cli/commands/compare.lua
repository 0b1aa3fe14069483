--- `kluabench compare BASE NEW`: per-point verdicts between two result
-- files, and exit status 1 on a regression (for CI). The statistics are in
-- kluabench.report.compare.
local compare = require 'kluabench.report.compare'

local M = {}

M.help = [[
Matches the points of two result files (record bundles, JSON or JSON Lines)
by workload digest and implementation provider, and compares the raw samples
of each point. Every bundle of a point is one measurement session (a sweep
run with --runs N has N); a side's time is the mean of its sessions' medians.
The ratio NEW / BASE gets a confidence interval from a hierarchical bootstrap
(sessions resampled, then the samples within them), so that the shift from
one run to the next counts, not only the spread inside one run. A side with
a single session shows no such shift: its interval is widened by the
device's between-session noise figure (--between, else the sessionNoise the
records carry, else this device's cache, filled by kluabench
scripts/run_noise.lua); with none, the point is UNSURE. The Mann-Whitney U
test's p-value on the pooled samples is shown beside it. Verdicts:
  SAME    the whole interval lies within the noise band (+-1 % by default)
  FASTER  the whole interval lies below the band (hi < 1 - noise)
  SLOWER  the whole interval lies above the band (lo > 1 + noise)
  UNSURE  the interval reaches past the band but starts or ends inside it,
          fewer than 5 samples on a side, or no between-session figure; a
          hint says why (too few samples, unstable clocks, a run that did
          not converge)
Each run counts once: a bundle found again (the same run name, externalId
or evidence digest, with the same data) is a duplicate, dropped and counted
in a note, so a file concatenated with itself changes nothing. A run whose
status is not passed (a wrong result, an error, a timeout) is never compared
as a time: it is left out and the note says so. A side that contradicts
itself gives UNSURE and no interval ("not compared: ..."): one run with
different data, a session index past its count, one index in two runs, or
runs that count their sessions differently; likewise a side with no passed
run. Files are refused, naming the file, line and point, when a bundle has no
workload digest, a workload digest that is not that of its workload document
(recomputed, since points are matched on it), or a sample that is not a
finite positive number.

  --threshold T   a SLOWER point whose change exceeds T is a regression
                  (default 0.05 = 5 %); exit status 1 when there is one
  --noise N       the band of changes too small to matter (default 0.01)
  --confidence C  of the interval (default 0.95)
  --resamples N   bootstrap resamples (default 2000)
  --seed N        bootstrap seed (default 1: the same files give the same report)
  --per-point     each interval at the confidence C, not family-wise (by
                  default, with m points in common, each is at 1 - (1 - C) / m,
                  so that a whole comparison reads a change that is not there
                  no more often than 1 - C)
  --between SD    the between-session noise to assume for a single-session
                  side: the sd of log(session median), e.g. 0.01 (overrides
                  the records and the cache)
  --format F      table (default), markdown or json

Exit status: 0 no regression, 1 a regression beyond the threshold, 2 usage
error, unreadable files or no point in common.]]

M.USAGE = 'kluabench compare BASE NEW [--threshold T] [--noise N] [--between SD] [--per-point] [--format table|markdown|json]'

local function usage_error(fmt, ...) return require('kluabench.cli.helpers').usage_error('compare', fmt, ...) end

local SPEC = { threshold = 'value', noise = 'value', confidence = 'value', resamples = 'value',
  seed = 'value', between = 'value', format = 'value', ['per-point'] = 'flag', help = 'flag', aliases = { h = 'help' } }

-- The options of args, or nil, message.
local function parse(args) return require('kluabench.cli.helpers').parse_args(args, SPEC) end

local function number_opt(opts, name, lo, hi, integer)
  local v = opts[name]
  if v == nil then return nil end
  local x = tonumber(v)
  if integer then x = math.tointeger(x) end
  if x == nil or x < lo or x > hi then
    return nil, string.format("--%s must be %s in [%g, %g], got '%s'", name,
      integer and 'an integer' or 'a number', lo, hi, v)
  end
  return x
end

-- The between-session noise figure of this device's cache, as a function
-- of ms for compare.compare, when every bundle was measured on a device of
-- this one's name; else nil.
local function device_between(...)
  local env = require 'kluabench.record.env'
  local ceilings = require 'kluabench.measure.ceilings'
  local here = env.local_device_name()
  if not here then return nil end
  for i = 1, select('#', ...) do
    for _, b in ipairs(select(i, ...)) do
      local okn, name = pcall(env.device_name, type(b.environment) == 'table' and b.environment or nil)
      if not okn or name ~= here then return nil end
    end
  end
  local fig = ceilings.usable_noise(ceilings.lookup(require('kluabench.core').device_info()))
  if not fig then return nil end
  return function(ms) return ceilings.noise_at(fig, ms), 'this device\'s cache' end
end

--- Runs the command; args are the words after 'compare'. Returns the exit status.
function M.run(args)
  local opts, rest = parse(args or {})
  if not opts then return usage_error('%s', rest) end
  if opts.help then return require('kluabench.cli.helpers').help('compare') end
  if #rest ~= 2 then return usage_error('expected BASE and NEW files, got %d argument(s)', #rest) end
  local o = {}
  local checks = {
    { 'threshold', 0, 10 }, { 'noise', 0, 1 }, { 'confidence', 0.5, 0.999 },
    { 'resamples', 100, 1000000, true }, { 'seed', -2 ^ 53, 2 ^ 53, true }, { 'between', 0, 0.5 },
  }
  for _, c in ipairs(checks) do
    local v, err = number_opt(opts, c[1], c[2], c[3], c[4])
    if err then return usage_error('%s', err) end
    o[c[1]] = v
  end
  local fmt = opts.format or 'table'
  if fmt ~= 'table' and fmt ~= 'markdown' and fmt ~= 'json' then
    return usage_error("--format must be table, markdown or json, got '%s'", fmt)
  end
  local base, err = compare.read(rest[1])
  if not base then
    io.stderr:write('kluabench compare: ', err, '\n')
    return 2
  end
  local new, err2 = compare.read(rest[2])
  if not new then
    io.stderr:write('kluabench compare: ', err2, '\n')
    return 2
  end
  o.device_between = device_between(base, new)
  if opts['per-point'] then o.familywise = false end
  local result = compare.compare(base, new, o)
  if #result.points == 0 then
    io.stderr:write(string.format('kluabench compare: no point of %s is in %s (points match by '
      .. 'workload digest and provider)\n', rest[1], rest[2]))
    return 2
  end
  local written, werr = require('kluabench.io.files').write_stdout(compare.format(result, fmt))
  if not written then
    io.stderr:write('kluabench compare: cannot write to ', werr, '\n')
    return 2
  end
  return result.regressions > 0 and 1 or 0
end

M.main = M.run

return M
