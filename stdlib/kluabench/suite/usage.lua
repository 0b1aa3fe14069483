--- The harness's --help text, made from a declaration; loaded for --help only (layers.LAZY): the seed run prints none.
local args = require 'kluabench.util.args'
local declaration = require 'kluabench.suite.declaration'
local bench = require 'kluabench.measure.do_bench'

local M = {}

--- The --help text of a declaration: what suite.main prints for --help.
function M.text(d)
  args.check('suite.usage', 1, d, 'table', 'declaration table')
  local out = {}
  local function add(fmt, ...) out[#out + 1] = string.format(fmt, ...) end
  add('usage: kluabench %s [options]\n', arg and arg[0] or ('scripts/' .. d.name .. '.lua'))
  if d.summary then add('%s\n', d.summary) end
  add('Workload axes (each takes a comma list; the points are their product):')
  for _, a in ipairs(d.axes) do
    add('  --%-17s %s (default %s)', declaration.option_name(a.name) .. ' N,...', a.help or a.name, a.default)
  end
  if d.sweeps and #d.sweeps > 0 then
    add('  --%-17s one of the sweeps below, or all (every one); an axis given', 'sweep S')
    add('  %-19s explicitly replaces the sweep\'s values for it', '')
    for _, s in ipairs(d.sweeps) do
      local fixed = {}
      for k, v in pairs(s.fixed or {}) do fixed[#fixed + 1] = declaration.option_name(k) .. ' ' .. v end
      table.sort(fixed)
      add('  %-19s %s: %s {%s}%s', '', s.name, declaration.option_name(s.axis), table.concat(s.values, ', '),
        #fixed > 0 and (' at ' .. table.concat(fixed, ', ')) or '')
    end
  end
  add('  --%-17s %s (default %s; f32 for fp32 and the like too)', 'dtype D',
    declaration.choices(declaration.dtype_tokens(d.dtypes)), declaration.dtype_tokens({ d.dtype or d.dtypes[1] })[1])
  add('  --%-17s %s or all, or a comma list (default %s; all in a sweep)', 'mode M,...', declaration.choices(d.modes),
    d.mode or d.modes[1])
  add('  --%-17s %s or all, or a comma list (default %s; all in a sweep)', 'provider P,...',
    declaration.choices(d.providers), d.provider or d.providers[1])
  if d.provider_help then add('%s', d.provider_help) end
  add([[
Measurement:
  --protocol P        do_bench (default: triton's algorithm, as Liger times), or one of
                      kluabench's modes (docs/MEASUREMENT.md): cold (L2 flushed, launch
                      overhead kept out), hot (back-to-back, warm caches), graph (CUDA
                      graph replay over rotated input sets that exceed the L2)
  --rep-ms MS         do_bench repetition time (default %s)
  --warmup-ms MS      do_bench warm-up time (default %s)
  --runs N            measure every point in N independent sessions (fresh inputs,
                      interleaved with the other points); records say which session;
                      the table shows one row per point (the mean of the session
                      medians, the session count, ci95 over the sessions)
  --sessions          the table shows each session of a point on a row of its own
  --metric M          speed (default: the time) or memory (Liger's memory metric:
                      the peak device memory allocated around one call, MB, 10
                      calls, median/p20/p80; a run of its own, no time)
  --metrics energy    also the energy per call (NVML's counter over windows of
                      1 s, 3 of them), the power and the SM clock, in the records
                      and the table (GPU only: on cpu the records say why not)
  --timeout S         the most seconds one session (point, provider, mode) may take:
                      cold, hot and graph stop sampling at it, and a session (or a
                      check) that ran past it is recorded with status timeout
  --audits N          audited samples per session at random points while timing, one
                      more after the last (default 2; 0: no audits, which the records
                      say): fresh inputs, outputs, threads, streams (docs/TRUST.md)
  --shard I/N         run only the I-th of N shares of the points (1 <= I <= N),
                      balanced by estimated bytes; providers and modes stay together
  --list-points       print the points (id, estimated bytes, description) and exit
Output:
  --format F          table (default): the table on stdout, the bundles appended
                        as JSON Lines to --out (default results/%s-<time>.jsonl;
                        $KLUABENCH_RESULTS names another folder than results/);
                      markdown: the same with the table in markdown (for pull requests);
                      jsonl: bundles as JSON Lines to --out or stdout;
                      kernelindex: pretty JSON (one bundle, or an array) to --out or stdout;
                      liger-csv: Liger's CSV (the runs that passed) to --out or stdout.
                      With the last three the table goes to stderr.
  -o, --out PATH      where the bundles go (see --format); never the script or a
                      file of its hooks (a usage error)
  --samples PATH      where the raw samples go (the evidence file the records name);
                      default: beside --out (x.jsonl -> x.samples.jsonl), or
                      results/%s-<time>.samples.jsonl when the bundles go to stdout;
                      a regular file or a new one (a FIFO, device or directory there
                      is a usage error)
  --history DB        also add the bundles to a history database (a SQLite file, made
                      when missing, or postgresql://...; docs/HISTORY.md) under the git
                      commit of the current directory; both are checked before timing
  --source URL        the repository of the code under test, for the records where git
                      does not name it (docs/RECORDS.md: what makes a record reproducible)
  -q, --quiet         no progress lines and no estimate on stderr (as the host's
                      --quiet before the script name)
  -h, --help          this text
Options may come in any order; the host's --backend and --device go before the
script name (kluabench --backend cpu SCRIPT ...).

Every provider's result is checked before it is timed; a wrong result is not
timed: its bundles say incorrect_numerical, the other points still run, and
the exit status is 1. Ctrl-C (SIGINT) or SIGTERM: the point being measured is finished and
written, the table of the finished points is printed, and the exit status is
130 (SIGINT) or 143 (SIGTERM); a second signal stops at once.]], d.rep_ms or bench.HARNESS_DEFAULTS.rep_ms,
    d.warmup_ms or bench.HARNESS_DEFAULTS.warmup_ms, d.name, d.name)
  if d.notes then add('\n%s', d.notes) end
  return table.concat(out, '\n')
end

return M
