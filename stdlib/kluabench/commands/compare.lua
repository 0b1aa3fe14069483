--- `kluabench compare BASE NEW`: per-point verdicts between two result
-- files, and exit status 1 on a regression (for CI). The statistics are in
-- kluabench.compare.
local compare = require 'kluabench.compare'
local util_args = require 'kluabench.util.args'
local helpers = require 'kluabench.commands.helpers'
local util_files = require 'kluabench.util.files'

local M = {}

M.help = [[
Matches the points of two result files (record bundles, JSON or JSON Lines)
by workload digest and implementation provider, pairs them by device (the
runs of a device in BASE with those of the same device in NEW), and compares
the raw samples of each point. Every bundle of a point is one measurement
session (a sweep run with --runs N has N); a side's time is the mean of its
sessions' medians, as every view of the result model shows it.
The ratio NEW / BASE gets a confidence interval from a hierarchical bootstrap
(sessions resampled, then the samples within them), so that the shift from
one run to the next counts, not only the spread inside one run. With 3 or
more sessions on both sides (--runs 3), the spread those sessions show is the
run-to-run noise, with Student's t for its few degrees of freedom, and
nothing stored overrides it. A side of fewer sessions cannot show it: its
interval is widened by a between-session figure at the point's time scale:
--between, else the figure this machine's cache holds for the records' device
(per kernel where measured; kluabench scripts/run_noise.lua measures it; its
90 % upper bound is used, so a figure from few sessions errs wide), else the
conservative default of the records' device and backend (record/noise.lua):
on an NVIDIA H200 the largest spread measured on our H200s at that time scale
(6 % at 7 us, 2.2 % at 50 us, 0.7 % from 100 us); on the cpu backend the
largest measured on a shared 2-core CPU (tens of percent: a 1-session side of
a CPU run can call only a large change); on a GPU never measured the largest
figure of any GPU (6 %) at every time scale. The figure a record was made
under is shown in it, never reused. The Mann-Whitney U test's p-value on the
pooled samples is shown beside it.
Verdicts:
  SAME    the whole interval lies within the noise band (+-1 % by default)
  FASTER  the interval lies below the band  SLOWER  the interval lies above it
  UNSURE  no evidence either way: the interval reaches past the band, or
          fewer than 5 samples on a side; a hint says why
Every row shows the smallest change its interval could have called
("detects >= x%"): with one session a side and the H200's default figure
about 19 % at 7 us, 7 % at 50 us and 3 % from 100 us.
A point measured on one device in BASE and on another in NEW is not compared
(a ratio of two devices is no change of the code): its row says which
devices, and the exit status is 2 when no point was compared for that
reason. --across-devices compares them anyway, and every such row's note
names the pairing ("across devices: BASE on ..., NEW on ...").
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
  --between SD    the between-session noise to assume for a side of fewer
                  than 3 sessions: the sd of log(session median), e.g. 0.01
                  (instead of the cache's figure or the default)
  --across-devices  compare points measured on different devices in BASE
                  and NEW (each row notes the pairing)
  --match A=B,... match BASE's provider A with NEW's provider B (e.g.
                  liger=fused,huggingface=reference to line Liger's rows, from
                  import-liger, up with ours)
  --format F      table (default), markdown or json

Memory runs (Liger's memory rows, or the harness's --metric memory) are
matched among themselves and compared in a table of their own: the peak MB
of each side (the mean over its runs), the change, and SAME within the noise
band, else LARGER or SMALLER (a counted peak has no interval, and is never a
regression).

Exit status: 0 no regression, 1 a regression beyond the threshold, 2 usage
error, unreadable files, no point in common, or points in common only on
different devices (without --across-devices).]]

M.USAGE = 'kluabench compare BASE NEW [--threshold T] [--noise N] [--between SD] [--per-point] [--across-devices] '
  .. '[--match A=B,...] [--format table|markdown|json]'

-- Text for stderr with control characters as \xNN (file names and messages carry what records say).
local function printable(s) return util_args.printable(s, 1000) end

local function usage_error(fmt, ...) return helpers.usage_error('compare', fmt, ...) end

local SPEC = { threshold = 'value', noise = 'value', confidence = 'value', resamples = 'value',
  seed = 'value', between = 'value', format = 'value', ['per-point'] = 'flag', ['across-devices'] = 'flag',
  match = 'value', help = 'flag',
  aliases = { h = 'help' } }

-- The options of args, or nil, message.
local function parse(args) return helpers.parse_args(args, SPEC) end

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
  if opts.help then return helpers.help('compare') end
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
    io.stderr:write('kluabench compare: ', printable(err), '\n')
    return 2
  end
  local new, err2 = compare.read(rest[2])
  if not new then
    io.stderr:write('kluabench compare: ', printable(err2), '\n')
    return 2
  end
  if opts['per-point'] then o.familywise = false end
  if opts['across-devices'] then o.across_devices = true end
  if opts.match then
    o.match = {}
    for pair in (opts.match .. ','):gmatch('([^,]*),') do
      local a, b = pair:match('^([^=]+)=([^=]+)$')
      if not a then
        return usage_error("--match takes BASE=NEW provider pairs separated by commas (liger=fused), got '%s'", pair)
      end
      o.match[a] = b
    end
  end
  local result = compare.compare(base, new, o)
  if #result.points == 0 and #result.memory == 0 then
    io.stderr:write(string.format('kluabench compare: no point of %s is in %s (points match by '
      .. 'workload digest and provider)\n', printable(rest[1]), printable(rest[2])))
    return 2
  end
  local written, werr = util_files.write_stdout(compare.format(result, fmt))
  if not written then
    io.stderr:write('kluabench compare: cannot write to ', printable(werr), '\n')
    return 2
  end
  if result.device_refused > 0 and result.device_refused == #result.points + #result.memory then
    io.stderr:write(string.format('kluabench compare: the points of %s and %s were measured on different devices: '
      .. 'not compared (--across-devices compares them)\n', printable(rest[1]), printable(rest[2])))
    return 2
  end
  return result.regressions > 0 and 1 or 0
end

M.main = M.run

return M
