--- `kluabench compare BASE NEW`: per-point verdicts between two result
-- files, and exit status 1 on a regression (for CI). The statistics are in
-- kluabench.report.compare.
local compare = require 'kluabench.report.compare'

local M = {}

M.help = [[
Matches the points of two result files (record bundles, JSON or JSON Lines)
by workload digest and implementation provider, and compares the raw samples
of each point: the ratio of medians NEW / BASE with its bootstrap confidence
interval, and the Mann-Whitney U test's p-value. Each point gets a verdict:
  SAME    the whole interval lies within the noise band (+-1 % by default)
  FASTER  the interval lies below 1        SLOWER  the interval lies above 1
  UNSURE  the interval holds 1 and reaches past the band; a hint says why
          (too few samples, unstable clocks, a run that did not converge)
Repeated runs of one point in a file are pooled.

  --threshold T   a SLOWER point whose change exceeds T is a regression
                  (default 0.05 = 5 %); exit status 1 when there is one
  --noise N       the band of changes too small to matter (default 0.01)
  --confidence C  of the interval (default 0.95)
  --resamples N   bootstrap resamples (default 2000)
  --seed N        bootstrap seed (default 1: the same files give the same report)
  --format F      table (default), markdown or json

Exit status: 0 no regression, 1 a regression beyond the threshold, 2 usage
error, unreadable files or no point in common.]]

local USAGE = 'kluabench compare BASE NEW [--threshold T] [--noise N] [--format table|markdown|json]'

local function usage_error(fmt, ...) return require('kluabench.cli').usage_error('compare', fmt, ...) end

local SPEC = { threshold = 'value', noise = 'value', confidence = 'value', resamples = 'value',
  seed = 'value', format = 'value', help = 'flag', aliases = { h = 'help' } }

-- The options of args, or nil, message.
local function parse(args) return require('kluabench.cli').parse_args(args, SPEC) end

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

--- Runs the command; args are the words after 'compare'. Returns the exit status.
function M.run(args)
  local opts, rest = parse(args or {})
  if not opts then return usage_error('%s', rest) end
  if opts.help then
    io.stdout:write('usage: ', USAGE, '\n\n', M.help, '\n')
    return 0
  end
  if #rest ~= 2 then return usage_error('expected BASE and NEW files, got %d argument(s)', #rest) end
  local o = {}
  local checks = {
    { 'threshold', 0, 10 }, { 'noise', 0, 1 }, { 'confidence', 0.5, 0.999 },
    { 'resamples', 100, 1000000, true }, { 'seed', -2 ^ 53, 2 ^ 53, true },
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
  local result = compare.compare(base, new, o)
  if #result.points == 0 then
    io.stderr:write(string.format('kluabench compare: no point of %s is in %s (points match by '
      .. 'workload digest and provider)\n', rest[1], rest[2]))
    return 2
  end
  local written, werr = require('kluabench.report.files').write_stdout(compare.format(result, fmt))
  if not written then
    io.stderr:write('kluabench compare: cannot write to ', werr, '\n')
    return 2
  end
  return result.regressions > 0 and 1 or 0
end

M.main = M.run

return M
