--- kluabench.suite: the benchmark harness. A script declares its benchmark
-- and calls suite.main(decl); the harness owns everything else: the command
-- line (with --help made from the declaration), the points, the check before
-- timing, the protocol, repeated sessions, shards, progress, Ctrl-C/SIGTERM,
-- every output format and the records. The declaration (see docs/SUITE.md):
--
--   name       the kernel's name in records and result file names
--   summary    what the benchmark times, for --help
--   axes       list of {name, default, help, max}: numeric workload
--              parameters; each is an option taking a comma list
--              (--seq 1024,4096), and the points are their product
--   sweeps     list of {name, axis, values, fixed}: --sweep NAME varies
--              `axis` over `values` with the other axes at `fixed` (or
--              their defaults); --sweep all runs every sweep
--   dtypes, dtype          the dtypes offered and the default
--   providers, provider    the implementations and the default (all in a sweep)
--   modes, mode            the operations and the default (all in a sweep)
--   validate(point)        a message when the point cannot be run
--   shared(point)          per-point state every provider uses (optional)
--   setup(point, provider) -> inputs, a table of tensors made fresh for
--                          each session (and for each rotated graph set)
--   run(point, provider, mode, inputs) -> fn: the timed function; it is
--                          called as fn() on `inputs`, or as fn(set) on a
--                          rotated input set in graph mode
--   check(point, provider, inputs, modes) -> the check record; raises when
--                          the provider's result is wrong (nothing is timed)
--   cost(point, mode)      -> bytes, flops (default: the kernel's cost model)
--   record(point, provider, mode) -> {timed, execution, annotations} for
--                          the record (its evidence entry)
--   implementation(point, provider) -> what the provider runs: a user
--                          kernel's info() table (k:info(), pk:info(),
--                          tk:info()), a list of them, an
--                          ImplementationRevision document, or 'builtin'
--                          (the kernel registry's built-in code of this
--                          kernel and provider); default: the script
--   operation              the OperationSpec's description
--                          (kluabench.record.operation); default: kernelindex's
--                          own for Liger's kernels, else the tensors setup makes
--   reference(point, provider, mode, inputs) -> {name = tensor}: what each
--                          named tensor of inputs holds after one call of the
--                          timed function, computed from inputs (a snapshot
--                          the harness took before the call; the hook may
--                          change it). The audits (docs/TRUST.md) compare the
--                          timed call's outputs with it, and check that every
--                          other tensor of inputs is unchanged
--   precision              the norm-wise error the audits allow, in units of
--                          the dtype's unit roundoff (default 8), or false
--   tolerance              {atol, rtol}: the audits' element-wise tolerance
--                          (default by dtype, kluabench.check.TOLERANCES)
--
-- What each hook returns is checked where it is called; a wrong value is an
-- error naming the hook, its script line, the provider, mode and point.
--
-- A check that finds a wrong result raises suite.wrong_result(message): the
-- provider is not timed, its bundles say incorrect_numerical (any other
-- error in a hook says runtime_error, and a session or check past --timeout
-- says timeout), the other points still run, and the exit status is 1.
--
-- Every session is audited (kluabench.trust, docs/TRUST.md): kb.randn's
-- seeds are keyed by a key drawn for the run, and at random samples and
-- after the last one the harness takes extra samples on fresh inputs that it
-- checks (outputs, inputs, guard bytes, threads, streams, persisting L2, the
-- timing functions). A finding gives the bundle the status
-- policy_violation, suspected_reward_hack or incorrect_numerical with the
-- reason, and the exit status is 1.
--
-- A point is a table with one field per axis, `dtype`, `params` (the axis
-- values by name, as records spell them), `x` (the swept axis), `id` (the
-- workload slug) and `shared` (what shared(point) returned).
local M = {}
local args = require 'kluabench.util.args'

local core = require 'kluabench.core'
local measure = require 'kluabench.measure'
local bench = require 'kluabench.measure.do_bench'
local record = require 'kluabench.record'
local policy = require 'kluabench.suite.policy'
local HARNESS_DO_BENCH = bench.HARNESS_DEFAULTS

---------------------------------------------------------------------------
-- Failing
---------------------------------------------------------------------------

-- A usage error: the message on stderr (the option's bytes escaped, as
-- every command's are), exit status 2.
local function usage_error(name, fmt, ...)
  io.stderr:write(name, ': ', require('kluabench.util.args').printable(string.format(fmt, ...), 400), ' (see --help)\n')
  os.exit(2)
end

-- Errors raised with this marker are printed without a traceback.
local function fail(name, fmt, ...)
  error(name .. ': ' .. string.format(fmt, ...), 0)
end

---------------------------------------------------------------------------
-- The declaration
---------------------------------------------------------------------------

local HOOKS = { 'setup', 'run' }
local OPTIONAL_HOOKS = { 'validate', 'shared', 'check', 'cost', 'record', 'implementation', 'reference' }
local PROTOCOLS = measure.MODES
local formats = require 'kluabench.suite.formats'
local FORMATS = formats.NAMES
-- what is measured (Liger's metric_name), and what may be measured beside the time
local METRICS = { 'speed', 'memory' }
local EXTRA_METRICS = { 'energy' }

local function option_name(axis) return (axis:gsub('_', '-')) end

local function is_list_of_strings(t)
  if type(t) ~= 'table' or #t == 0 then return false end
  for _, v in ipairs(t) do if type(v) ~= 'string' then return false end end
  return true
end

-- Raises (at the script's line) when the declaration is malformed.
local function check_decl(d)
  local function bad(fmt, ...) error("bad argument #1 to 'suite.main' (" .. string.format(fmt, ...) .. ')', 4) end
  if type(d) ~= 'table' then bad('declaration table expected, got %s', type(d)) end
  if type(d.name) ~= 'string' or not d.name:match('^[%w_]+$') then bad("field 'name' must be a word") end
  for _, h in ipairs(HOOKS) do
    if type(d[h]) ~= 'function' then bad("field '%s' must be a function", h) end
  end
  for _, h in ipairs(OPTIONAL_HOOKS) do
    if d[h] ~= nil and type(d[h]) ~= 'function' then bad("field '%s' must be a function", h) end
  end
  for _, f in ipairs { 'providers', 'modes', 'dtypes' } do
    if not is_list_of_strings(d[f]) then bad("field '%s' must be a list of strings", f) end
  end
  if type(d.axes) ~= 'table' then bad("field 'axes' must be a list") end
  local known = {}
  for i, a in ipairs(d.axes) do
    if type(a) ~= 'table' or type(a.name) ~= 'string' or not a.name:match('^[%a][%w_]*$') then
      bad('axes[%d] needs a name (a word)', i)
    end
    if math.type(a.default) ~= 'integer' or a.default <= 0 then
      bad("axes[%d] ('%s') needs a positive integer default", i, a.name)
    end
    known[a.name] = a
  end
  local sweep_names, declared_axes = {}, {}
  for i, a in ipairs(d.axes) do declared_axes[i] = a.name end
  if d.sweeps ~= nil and type(d.sweeps) ~= 'table' then bad("field 'sweeps' must be a list") end
  for i, s in ipairs(d.sweeps or {}) do
    if type(s) ~= 'table' or type(s.name) ~= 'string' or not s.name:match('^[%w_]+$') then
      bad('sweeps[%d] needs a name (a word)', i)
    end
    if not known[s.axis] then
      bad("sweeps[%d] ('%s') sweeps axis '%s', which is not one of axes%s (axes: %s)", i, s.name, tostring(s.axis),
        type(s.axis) == 'string' and require('kluabench.util.args').hint(s.axis, declared_axes) or '',
        table.concat(declared_axes, ', '))
    end
    if type(s.values) ~= 'table' or #s.values == 0 then
      bad("sweeps[%d] ('%s') needs a non-empty list of values", i, s.name)
    end
    -- a point's id names its sweep when two share a workload: names and values once each
    if sweep_names[s.name] then bad("sweeps[%d] has the name '%s' of sweeps[%d]", i, s.name, sweep_names[s.name]) end
    sweep_names[s.name] = i
    local seen = {}
    for j, v in ipairs(s.values) do
      if math.type(v) ~= 'integer' or v <= 0 then
        bad("sweeps[%d] ('%s') value %d must be a positive integer, got %s", i, s.name, j, tostring(v))
      end
      if seen[v] then bad("sweeps[%d] ('%s') lists %d twice", i, s.name, v) end
      seen[v] = true
    end
  end
  if d.precision ~= nil and d.precision ~= false and not (type(d.precision) == 'number' and d.precision > 0
      and d.precision < math.huge) then
    bad("field 'precision' must be a number > 0 (units of the dtype's unit roundoff) or false")
  end
  if d.tolerance ~= nil then
    local t = d.tolerance
    local function ok(v) return v == nil or (type(v) == 'number' and v >= 0 and v < math.huge) end
    if type(t) ~= 'table' or not ok(t.atol) or not ok(t.rtol) then
      bad("field 'tolerance' must be a table {atol, rtol} of finite numbers >= 0")
    end
  end
  if d.operation ~= nil then
    if type(d.operation) ~= 'table' then bad("field 'operation' must be an operation description table") end
    local ok, err = pcall(require('kluabench.record.operation').document, d.operation)
    if not ok then bad("field 'operation': %s", tostring(err):gsub('^.-%(', '('):gsub('^%((.*)%)$', '%1')) end
  end
  return known
end

---------------------------------------------------------------------------
-- The command line
---------------------------------------------------------------------------

local function choices(list) return table.concat(list, ', ') end

-- The --help text, made from the declaration.
--- The --help text that suite.main prints for a declaration.
--
-- @signature suite.usage(decl) -> string
-- @example
--   print(suite.usage(require("kluabench.benchmarks.rope").declaration("rope")))
function M.usage(d)
  args.check('suite.usage', 1, d, 'table', 'declaration table')
  local out = {}
  local function add(fmt, ...) out[#out + 1] = string.format(fmt, ...) end
  add('usage: kluabench %s [options]\n', arg and arg[0] or ('scripts/' .. d.name .. '.lua'))
  if d.summary then add('%s\n', d.summary) end
  add('Workload axes (each takes a comma list; the points are their product):')
  for _, a in ipairs(d.axes) do
    add('  --%-17s %s (default %s)', option_name(a.name) .. ' N,...', a.help or a.name, a.default)
  end
  if d.sweeps and #d.sweeps > 0 then
    add('  --%-17s one of the sweeps below, or all (every one); an axis given', 'sweep S')
    add('  %-19s explicitly replaces the sweep\'s values for it', '')
    for _, s in ipairs(d.sweeps) do
      local fixed = {}
      for k, v in pairs(s.fixed or {}) do fixed[#fixed + 1] = option_name(k) .. ' ' .. v end
      table.sort(fixed)
      add('  %-19s %s: %s {%s}%s', '', s.name, option_name(s.axis), table.concat(s.values, ', '),
        #fixed > 0 and (' at ' .. table.concat(fixed, ', ')) or '')
    end
  end
  add('  --%-17s %s (default %s)', 'dtype D', choices(d.dtypes), d.dtype or d.dtypes[1])
  add('  --%-17s %s or all, or a comma list (default %s; all in a sweep)', 'mode M,...', choices(d.modes),
    d.mode or d.modes[1])
  add('  --%-17s %s or all, or a comma list (default %s; all in a sweep)', 'provider P,...',
    choices(d.providers), d.provider or d.providers[1])
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
  --out PATH          where the bundles go (see --format); never the script or a
                      file of its hooks (a usage error)
  --samples PATH      where the raw samples go (the evidence file the records name);
                      default: beside --out (x.jsonl -> x.samples.jsonl), or
                      results/%s-<time>.samples.jsonl when the bundles go to stdout;
                      a regular file or a new one (a FIFO, device or directory there
                      is a usage error)
  --history DB        also add the bundles to a history database (a SQLite file, made
                      when missing, or postgresql://...; docs/HISTORY.md) under the git
                      commit of the current directory; both are checked before timing
  --help              this text

Every provider's result is checked before it is timed; a wrong result is not
timed: its bundles say incorrect_numerical, the other points still run, and
the exit status is 1. Ctrl-C (SIGINT) or SIGTERM: the point being measured is finished and
written, the table of the finished points is printed, and the exit status is
130 (SIGINT) or 143 (SIGTERM); a second signal stops at once.]], d.rep_ms or HARNESS_DO_BENCH.rep_ms,
    d.warmup_ms or HARNESS_DO_BENCH.warmup_ms, d.name, d.name)
  if d.notes then add('\n%s', d.notes) end
  return table.concat(out, '\n')
end

-- A positive integer (the whole string), or nil.
local function positive_int(s)
  local n = math.tointeger(tonumber(s))
  if n and n > 0 and tostring(s):match('^%s*%d+%s*$') then return n end
  return nil
end

-- A value given twice in a list option (--seq 16,16, --provider a,a) is
-- measured once: a note says so on stderr, once per option.
local function note_repeats(name, opt, repeats)
  if #repeats == 0 then return end
  io.stderr:write(name, ': ', require('kluabench.util.args').printable(string.format("option '--%s' lists %s more than once: "
    .. 'each is measured once', opt, table.concat(repeats, ', ')), 400), '\n')
end

-- The values of a comma list option, each a positive integer <= max, each
-- once, in the order given.
local function int_list(name, opt, s, max)
  local out, seen, repeats = {}, {}, {}
  for item in (s .. ','):gmatch('([^,]*),') do
    local n = positive_int(item)
    if not n then usage_error(name, "option '--%s' needs a positive integer, got '%s'", opt, item) end
    if max and n > max then
      usage_error(name, "option '--%s': %d is larger than the largest allowed, %d", opt, n, max)
    end
    if seen[n] then
      if seen[n] == 1 then repeats[#repeats + 1] = tostring(n) end
      seen[n] = seen[n] + 1
    else
      out[#out + 1], seen[n] = n, 1
    end
  end
  note_repeats(name, opt, repeats)
  return out
end

-- A choice option: {value} or the whole list for 'all'.
-- One of list (as a one-element list), or all of it where `all` is offered
-- (modes and providers: a sweep runs each; a dtype, a protocol and a format are
-- one per run, so there `all` is no choice and is refused like any word).
local function choice(name, opt, value, list, offers_all)
  if value == 'all' and offers_all then return list end
  for _, v in ipairs(list) do if v == value then return { v } end end
  usage_error(name, "option '--%s' must be %s%s%s, got '%s'%s", opt, offers_all and '' or 'one of ', choices(list),
    offers_all and ' or all' or '', value, require('kluabench.util.args').hint(value, list))
end

-- A comma list of choices (--mode forward,backward), in the order given,
-- each once; or all.
local function choice_list(name, opt, value, list)
  if value == 'all' then return list end
  local out, seen, repeats = {}, {}, {}
  for item in (value .. ','):gmatch('([^,]*),') do
    if item == 'all' then usage_error(name, "option '--%s': all cannot be part of a list, got '%s'", opt, value) end
    local v = choice(name, opt, item, list, true)[1]
    if not seen[v] then
      out[#out + 1], seen[v] = v, 1
    else
      if seen[v] == 1 then repeats[#repeats + 1] = v end
      seen[v] = seen[v] + 1
    end
  end
  note_repeats(name, opt, repeats)
  return out
end

local function positive_number(name, opt, s, max)
  local n = tonumber(s)
  if not n or n ~= n or n <= 0 or n == math.huge then
    usage_error(name, "option '--%s' needs a positive number, got '%s'", opt, s)
  end
  if max and n > max then usage_error(name, "option '--%s' must be at most %s, got '%s'", opt, max, s) end
  return n
end

-- The options of a declaration: opts table (values converted and checked).
local function parse(d, args)
  local spec = { help = 'flag', ['list-points'] = 'flag', sweep = 'value', dtype = 'value', mode = 'value',
    provider = 'value', protocol = 'value', format = 'value', out = 'value', samples = 'value', ['rep-ms'] = 'value',
    ['warmup-ms'] = 'value', runs = 'value', shard = 'value', timeout = 'value', history = 'value',
    sessions = 'flag', metric = 'value', metrics = 'value', audits = 'value', aliases = { h = 'help' } }
  for _, a in ipairs(d.axes) do spec[option_name(a.name)] = 'value' end
  local raw, rest = require('kluabench.util.args').parse_args(args, spec)
  if not raw then usage_error(d.name, '%s', rest) end
  if #rest > 0 then usage_error(d.name, "unexpected argument '%s'", rest[1]) end
  if raw.help then return { help = true } end
  for _, opt in ipairs { 'out', 'samples', 'history' } do
    -- an empty path names no file: say so before anything is measured
    if raw[opt] == '' then usage_error(d.name, "option '--%s' needs a path, got an empty string", opt) end
  end
  local o = { list_points = raw['list-points'], out = raw.out, samples = raw.samples, history = raw.history, axes = {},
    sessions = raw.sessions }
  for _, a in ipairs(d.axes) do
    local v = raw[option_name(a.name)]
    if v then o.axes[a.name] = int_list(d.name, option_name(a.name), v, a.max) end
  end
  if raw.sweep then
    local found = raw.sweep == 'all'
    for _, s in ipairs(d.sweeps or {}) do found = found or s.name == raw.sweep end
    if not found then
      local names = {}
      for _, s in ipairs(d.sweeps or {}) do names[#names + 1] = s.name end
      usage_error(d.name, "option '--sweep' must be %s or all, got '%s'%s", choices(names), raw.sweep,
        require('kluabench.util.args').hint(raw.sweep, names))
    end
  end
  o.sweep = raw.sweep
  o.dtype = raw.dtype or d.dtype or d.dtypes[1]
  choice(d.name, 'dtype', o.dtype, d.dtypes)
  o.modes = choice_list(d.name, 'mode', raw.mode or (o.sweep and 'all' or d.mode or d.modes[1]), d.modes)
  o.providers = choice_list(d.name, 'provider', raw.provider or (o.sweep and 'all' or d.provider or d.providers[1]),
    d.providers)
  o.protocol = choice(d.name, 'protocol', raw.protocol or 'do_bench', PROTOCOLS)[1]
  o.format = choice(d.name, 'format', raw.format or FORMATS[1], FORMATS)[1]
  o.metric = choice(d.name, 'metric', raw.metric or 'speed', METRICS)[1]
  o.metrics = {}
  if raw.metrics then
    for _, m in ipairs(choice_list(d.name, 'metrics', raw.metrics, EXTRA_METRICS)) do o.metrics[m] = true end
    if o.metric == 'memory' then
      usage_error(d.name, "option '--metrics %s' goes with the time (--metric speed), not with --metric memory",
        raw.metrics)
    end
  end
  -- a day of repetition per point is more than anyone means; the bound keeps
  -- a typo from growing the sample buffer until the machine runs out
  o.rep_ms = raw['rep-ms'] and positive_number(d.name, 'rep-ms', raw['rep-ms'], 86400e3) or d.rep_ms or HARNESS_DO_BENCH.rep_ms
  o.warmup_ms = raw['warmup-ms'] and positive_number(d.name, 'warmup-ms', raw['warmup-ms'], 86400e3)
    or d.warmup_ms or HARNESS_DO_BENCH.warmup_ms
  -- a week of one session is more than anyone means
  o.timeout = raw.timeout and positive_number(d.name, 'timeout', raw.timeout, 7 * 86400) or nil
  o.audits = require('kluabench.trust.audit').DEFAULTS.during
  if raw.audits then
    o.audits = math.tointeger(tonumber(raw.audits))
    if not o.audits or o.audits < 0 or o.audits > 100 or not raw.audits:match('^%s*%d+%s*$') then
      usage_error(d.name, "option '--audits' needs a whole number from 0 to 100, got '%s'", raw.audits)
    end
  end
  o.runs = 1
  if raw.runs then
    o.runs = positive_int(raw.runs)
    if not o.runs or o.runs > 1000 then
      usage_error(d.name, "option '--runs' needs a whole number from 1 to 1000, got '%s'", raw.runs)
    end
  end
  if raw.shard then
    local i, n = require('kluabench.suite.shard').parse(raw.shard)
    if not i then usage_error(d.name, "option '--shard': %s", n) end
    o.shard = { i, n }
  end
  return o
end

---------------------------------------------------------------------------
-- Points
---------------------------------------------------------------------------

-- What a point has besides its axes; sweep and shared may be nil.
local POINT_FIELDS = { 'params', 'dtype', 'x', 'id', 'sweep', 'shared' }

-- Points read a field they do not have as an error naming those they have: a
-- typo in a hook (p.row for p.rows) would otherwise be a silent nil.
local function point_meta(d)
  local known, names = {}, {}
  for _, a in ipairs(d.axes) do known[a.name] = true; names[#names + 1] = a.name end
  for _, f in ipairs(POINT_FIELDS) do known[f] = true; names[#names + 1] = f end
  return {
    __index = function(_, k)
      if known[k] or type(k) ~= 'string' then return nil end
      error(string.format("%s: a point has no field '%s'%s (its fields: %s)", d.name, k,
        require('kluabench.util.args').hint(k, names), table.concat(names, ', ')), 2)
    end,
  }
end

-- The axes' names as the declaration lists them.
local function axis_names(d)
  local out = {}
  for i, a in ipairs(d.axes) do out[i] = a.name end
  return out
end

-- The order of a point's id words: the declaration's, except for kernelindex's own workloads
-- (llama4_rope, rope), whose caseKey sorts the axes by name (record.case_order).
local function id_order(d, params, dtype)
  return require('kluabench.record').case_order { kernel = d.name, parameters = params, dtype = dtype,
    operation = d.operation, axis_order = axis_names(d) }
end

-- The cartesian product of the axes' value lists, in declaration order
-- (the first axis varies slowest). x: the swept axis.
local function product(d, values, x, dtype, out)
  local meta = point_meta(d)
  local function rec(i, acc)
    if i > #d.axes then
      local p = setmetatable({ params = {}, dtype = dtype, x = x }, meta)
      for _, a in ipairs(d.axes) do p[a.name], p.params[a.name] = acc[a.name], acc[a.name] end
      p.id = require('kluabench.record.names').workload_slug(p.params, dtype, id_order(d, p.params, dtype))
      out[#out + 1] = p
      return
    end
    local a = d.axes[i]
    for _, v in ipairs(values[a.name]) do
      acc[a.name] = v
      rec(i + 1, acc)
    end
  end
  rec(1, {})
end

--- The points of a declaration for parsed options (opts.axes: lists by axis name; opts.sweep;
-- opts.dtype).
--
-- With a sweep: its axis over its values (or the option's), the other axes at the sweep's fixed
-- values or their defaults; without: the product of every axis's values, the first axis varying
-- slowest. A workload that two sweeps share is measured in each; its ids are slug@axis.
--
-- @signature suite.points(decl, opts) -> list of points
-- @example
--   local d = require("kluabench.benchmarks.rope").declaration("llama4_rope")
--   for _, p in ipairs(suite.points(d, {axes = {seq = {1024, 4096}}, dtype = "bf16"})) do print(p.id) end
function M.points(d, o)
  args.check('suite.points', 1, d, 'table', 'declaration table')
  args.check('suite.points', 2, o, 'table', 'parsed options')
  local out = {}
  local first_multi
  for _, a in ipairs(d.axes) do
    if not first_multi and o.axes[a.name] and #o.axes[a.name] > 1 then first_multi = a.name end
  end
  if o.sweep then
    for _, s in ipairs(d.sweeps) do
      if o.sweep == 'all' or o.sweep == s.name then
        local values = {}
        for _, a in ipairs(d.axes) do
          values[a.name] = o.axes[a.name] or { (s.fixed or {})[a.name] or a.default }
        end
        values[s.axis] = o.axes[s.axis] or s.values
        local first = #out + 1
        product(d, values, s.axis, o.dtype, out)
        for i = first, #out do out[i].sweep = s.name end
      end
    end
  else
    local values = {}
    for _, a in ipairs(d.axes) do values[a.name] = o.axes[a.name] or { a.default } end
    product(d, values, first_multi or d.x or d.axes[1].name, o.dtype, out)
  end
  -- A workload two sweeps share (hidden 8192 at seq 2048 is in both of
  -- RoPE's) is measured in each, as Liger does, so that every sweep is whole;
  -- its ids then say which sweep each is: slug@axis.
  local count = {}
  for _, p in ipairs(out) do count[p.id] = (count[p.id] or 0) + 1 end
  for _, p in ipairs(out) do
    if count[p.id] > 1 then p.id = p.id .. '@' .. p.x end
  end
  -- two sweeps of one axis that share a workload: slug@sweep (ids are unique:
  -- shards, merge and compare count points by them)
  count = {}
  for _, p in ipairs(out) do count[p.id] = (count[p.id] or 0) + 1 end
  for _, p in ipairs(out) do
    if count[p.id] > 1 and p.sweep then p.id = p.id:gsub('@[^@]*$', '') .. '@' .. p.sweep end
  end
  return out
end

---------------------------------------------------------------------------
-- Tensors the harness frees
---------------------------------------------------------------------------

local function is_tensor(v)
  local mt = getmetatable(v)
  return type(mt) == 'table' and mt.__name == 'kluabench.Tensor'
end

-- Frees every tensor among the values of t that is not in keep.
local function free_tensors(t, keep)
  if type(t) ~= 'table' then return end
  for _, v in pairs(t) do
    if is_tensor(v) and not keep[v] then v:free() end
  end
end

local function tensor_set(t)
  local set = {}
  if is_tensor(t) then set[t] = true end
  if type(t) == 'table' then
    for _, v in pairs(t) do if is_tensor(v) then set[v] = true end end
  end
  return set
end

---------------------------------------------------------------------------
-- Calling the hooks: what each returns is checked, and a wrong value is an
-- error naming the hook, where the script defines it, and the provider, mode
-- and point it was called for
---------------------------------------------------------------------------

-- " (scale.lua:9)": where a hook function is defined, or ''.
local function defined_at(fn)
  local info = type(fn) == 'function' and debug.getinfo(fn, 'S') or nil
  if not info or info.what == 'C' or (info.linedefined or 0) <= 0 then return '' end
  -- the script's path as it was given (short_src cuts a long one to 60 bytes)
  local src = info.source:sub(1, 1) == '@' and info.source:sub(2) or info.short_src
  return string.format(' (%s:%d)', require('kluabench.util.args').printable(src, 300), info.linedefined)
end

local function finite(v) return type(v) == 'number' and v == v and v > -math.huge and v < math.huge end

-- A value as a message shows it: nil, NaN, the number -1, the string 'x', a table.
local function shown(v)
  if v == nil then return 'nil' end
  if type(v) == 'number' then
    if v ~= v then return 'NaN' end
    return 'the number ' .. (finite(v) and string.format('%.17g', v) or (v > 0 and 'inf' or '-inf'))
  end
  if type(v) == 'string' then return "the string '" .. require('kluabench.util.args').printable(v, 60) .. "'" end
  if type(v) == 'boolean' then return tostring(v) end
  if is_tensor(v) then return 'a tensor' end
  return 'a ' .. type(v)
end

-- "provider 'good', mode 'forward', point n16-fp32" (the parts given).
local function call_site(p, provider, mode)
  local parts = {}
  if provider then parts[#parts + 1] = "provider '" .. provider .. "'" end
  if mode then parts[#parts + 1] = "mode '" .. mode .. "'" end
  if p then parts[#parts + 1] = 'point ' .. tostring(p.id) end
  return table.concat(parts, ', ')
end

-- Raises: the hook returned `got` (as field `what`, if given) where `expected` belongs.
local function bad_return(d, hook, what, got, expected, p, provider, mode)
  if not expected:find(' expected', 1, true) then expected = expected .. ' expected' end
  error(string.format('the %s hook%s returned %s%s for %s (%s)', hook, defined_at(d[hook]), what and
    (what .. ' = ') or '', shown(got), call_site(p, provider, mode), expected), 0)
end

-- validate(point): nil or false when the point can run, else the message.
local function call_validate(d, p)
  if not d.validate then return nil end
  local why = d.validate(p)
  if why == nil or why == false then return nil end
  if type(why) ~= 'string' then bad_return(d, 'validate', nil, why, 'nil, or a message saying why the point cannot run', p) end
  return why
end

-- shared(point): nil, a tensor or a table (what the harness frees after the point).
local function call_shared(d, p)
  if not d.shared then return nil end
  local v = d.shared(p)
  if v ~= nil and type(v) ~= 'table' and not is_tensor(v) then
    bad_return(d, 'shared', nil, v, 'nil, a tensor or a table of per-point state', p)
  end
  return v
end

-- setup(point, provider): the table of inputs.
local function call_setup(d, p, provider)
  local v = d.setup(p, provider)
  if type(v) ~= 'table' then bad_return(d, 'setup', nil, v, 'a table of inputs', p, provider) end
  return v
end

local function callable(v)
  if type(v) == 'function' then return true end
  local mt = getmetatable(v)
  return type(mt) == 'table' and type(mt.__call) == 'function'
end

-- run(point, provider, mode, inputs): the function to time.
local function call_run(d, p, provider, mode, inputs)
  local fn = d.run(p, provider, mode, inputs)
  if not callable(fn) then bad_return(d, 'run', nil, fn, 'the function to time', p, provider, mode) end
  return fn
end

-- reference(point, provider, mode, snapshot): a table of tensors by name.
local function call_reference(d, p, provider, mode, snapshot)
  local v = d.reference(p, provider, mode, snapshot)
  if type(v) ~= 'table' then
    bad_return(d, 'reference', nil, v, 'a table of tensors by the names of the inputs they are the result for', p,
      provider, mode)
  end
  for k, t in pairs(v) do
    if not is_tensor(t) then bad_return(d, 'reference', tostring(k), t, 'a tensor', p, provider, mode) end
  end
  return v
end

-- The check record's figures that records carry: finite and >= 0.
local CHECK_FIGURES = { 'maxAbsDiff', 'maxRelDiff', 'relL2', 'matchedRatio' }

-- The check record a check hook returned, checked: true (nothing to record)
-- or the table; raises for a wrong type or a figure that is not a finite
-- number >= 0 (the schema holds no NaN; a NaN difference measured nothing),
-- and says wrong for passed = false.
local function checked_record(d, v, p, provider)
  if v == nil or v == true then return true end
  if type(v) ~= 'table' then
    bad_return(d, 'check', nil, v, 'nothing or a check record table expected; a wrong result raises kb.suite.wrong_result',
      p, provider)
  end
  for _, f in ipairs(CHECK_FIGURES) do
    local x = v[f]
    if x ~= nil and not (finite(x) and x >= 0 and (f ~= 'matchedRatio' or x <= 1)) then
      bad_return(d, 'check', f, x, f == 'matchedRatio' and 'a number from 0 to 1' or 'a finite number >= 0', p, provider)
    end
  end
  if v.passed ~= nil and type(v.passed) ~= 'boolean' then
    bad_return(d, 'check', 'passed', v.passed, 'true or false', p, provider)
  end
  if v.passed == false then
    M.wrong_result(string.format('the check hook%s returned passed = false for %s', defined_at(d.check),
      call_site(p, provider)))
  end
  return v
end

-- cost(point, mode): bytes and flops, each nil or a finite number >= 0
-- (provider: the one whose record needs them, for the message).
local function call_cost(d, p, mode, provider)
  local bytes, flops = d.cost(p, mode)
  for _, f in ipairs { { 'bytes', bytes }, { 'flops', flops } } do
    if f[2] ~= nil and not (finite(f[2]) and f[2] >= 0) then
      bad_return(d, 'cost', f[1], f[2], 'nil or a finite number >= 0', p, provider, mode)
    end
  end
  return bytes, flops
end

-- record(point, provider, mode): nil or {timed = text, execution = table, annotations = table}.
local function call_record(d, p, provider, mode)
  local v = d.record(p, provider, mode)
  if v == nil then return {} end
  if type(v) ~= 'table' then
    bad_return(d, 'record', nil, v, 'nil or a table {timed, execution, annotations}', p, provider, mode)
  end
  if v.timed ~= nil and type(v.timed) ~= 'string' then
    bad_return(d, 'record', 'timed', v.timed, 'words saying what the function does', p, provider, mode)
  end
  for _, f in ipairs { 'execution', 'annotations' } do
    if v[f] ~= nil and type(v[f]) ~= 'table' then bad_return(d, 'record', f, v[f], 'a table', p, provider, mode) end
  end
  return v
end

-- The workload's bytes and flops of one mode at a point: the declaration's
-- cost, else the kernel registry's cost model.
local function cost_of(d, p, mode)
  if d.cost then return call_cost(d, p, mode) end
  local k = require('kluabench.kernels').kernel(d.name)
  if k and k.cost then return k.cost(p.params, p.dtype, mode) end
  return nil
end

-- The estimated bytes of a whole point: every provider times every mode.
local function point_cost(d, p, o)
  local bytes = 0
  for _, mode in ipairs(o.modes) do bytes = bytes + (cost_of(d, p, mode) or 0) end
  return bytes * #o.providers
end

---------------------------------------------------------------------------
-- The estimate a long sweep shows before it starts
---------------------------------------------------------------------------

--- A sweep estimated to take at least this many seconds says so before it starts.
M.ESTIMATE_FROM_S = 30

-- Seconds one session of the protocol takes when one call takes call_s: do_bench's first call,
-- 5-call estimate, warm-up and repetitions (at least CPU_MIN_REPEAT on the cpu); a stopping rule's
-- warm-up and samples: n for a count, else its timeout (a CPU seldom converges sooner; a GPU often
-- does, so there the figure is an upper bound); --timeout caps it.
local function session_seconds(protocol, o, call_s, backend)
  local p = protocol.params or {}
  local s
  if protocol.name == 'do_bench' then
    local warmup = (p.warmup_ms or bench.DO_BENCH_DEFAULTS.warmup_ms) / 1e3
    local rep = (p.rep_ms or bench.DO_BENCH_DEFAULTS.rep_ms) / 1e3
    s = 6 * call_s + math.max(call_s, warmup) + math.max((backend == 'cpu' and bench.CPU_MIN_REPEAT or 1) * call_s, rep)
  else
    local defaults = measure.DEFAULTS
    local rule = type(p.stop) == 'table' and p.stop or {}
    local q = type(rule.params) == 'table' and rule.params or {}
    local sampling
    if rule.name == 'count' and math.type(q.n) == 'integer' then sampling = q.n * call_s
    elseif type(q.timeout_ms) == 'number' then sampling = q.timeout_ms / 1e3
    else sampling = 20 * call_s end
    s = math.max((p.warmup_ms or defaults.warmup_ms) / 1e3, (p.warmup_min or defaults.warmup_min) * call_s) + sampling
  end
  if o.timeout then s = math.min(s, o.timeout) end
  return s
end

-- Times what a session of each provider and mode costs at the sweep's smallest point: its setup,
-- and one call of the timed function after a first one. Returns the point, {provider -> setup s}
-- and {provider -> {mode -> call s}}; nil when a hook fails (the sweep will say why).
local function probe(d, o, points)
  local p0, c0
  for _, p in ipairs(points) do
    local c = point_cost(d, p, o)
    if not c0 or c < c0 then p0, c0 = p, c end
  end
  local dev = measure.device()
  local setup_s, call_s = {}, {}
  local shared, inputs
  local ok = pcall(function()
    shared = call_shared(d, p0)
    p0.shared = shared
    for _, provider in ipairs(o.providers) do
      local t0 = core.clock_ns()
      inputs = call_setup(d, p0, provider)
      dev.synchronize()
      setup_s[provider] = (core.clock_ns() - t0) / 1e9
      call_s[provider] = {}
      for _, mode in ipairs(o.modes) do
        local fn = call_run(d, p0, provider, mode, inputs)
        fn()
        local e0, e1 = dev.event(), dev.event()
        e0:record()
        fn()
        e1:record()
        dev.synchronize()
        call_s[provider][mode] = dev.elapsed_ms(e0, e1) / 1e3
      end
      free_tensors(inputs, tensor_set(shared))
      inputs = nil
    end
  end)
  if inputs then free_tensors(inputs, tensor_set(shared)) end
  p0.shared = nil
  if shared then
    free_tensors(shared, {})
    if is_tensor(shared) then shared:free() end
  end
  if not ok then return nil end
  return p0, setup_s, call_s
end

-- The sweep's estimated seconds: each session (its setup and protocol) and each check (a setup and
-- a few calls) at every point, from the probe of the smallest point scaled by each point's bytes.
local function estimate_seconds(d, ctx, points)
  local o = ctx.o
  local p0, setup_s, call_s = probe(d, o, points)
  if not p0 then return nil end
  local backend = core.backend and core.backend() or 'cpu'
  local function ratio(a, b) return (a and b and a > 0 and b > 0) and a / b or 1 end
  local total = 0
  for _, p in ipairs(points) do
    local r_point = ratio(point_cost(d, p, o), point_cost(d, p0, o))
    for _, provider in ipairs(o.providers) do
      local setup = setup_s[provider] * r_point
      total = total + setup -- the check's setup, once a point and provider
      for _, mode in ipairs(o.modes) do
        local call = call_s[provider][mode] * ratio(cost_of(d, p, mode), cost_of(d, p0, mode))
        total = total + (d.check and 2 * call or 0) -- the check's calls (the reference is the check's own)
          + o.runs * (setup + session_seconds(ctx.protocol, o, call, backend))
      end
    end
  end
  return total
end

---------------------------------------------------------------------------
-- Output
---------------------------------------------------------------------------

-- A new file in the results folder ($KLUABENCH_RESULTS, default results/):
-- NAME-<UTC time>SUFFIX.
local function results_file(d, suffix)
  local dir = require('kluabench.util.files').results_dir()
  local ok, err = require('kluabench.util.files').mkdir_p(dir)
  if not ok then fail(d.name, '%s', err) end
  return dir .. '/' .. d.name .. '-' .. require('kluabench.record.names').time_id(require('kluabench.record').now())
    .. suffix
end

-- Where the bundles go as they are made: the JSON Lines path or nil.
local function jsonl_path(d, o)
  local records = formats.FORMATS[o.format].records
  if records == 'results' then
    return o.out or results_file(d, '.jsonl')
  elseif records == 'stdout' then
    return o.out or '-'
  end
  return nil
end

-- The files a sweep reads that --out and --samples must not overwrite: the
-- script run (arg[0]), every file that defines one of the declaration's hooks
-- (a benchmark module the script requires) and the kluabench binary.
local function sweep_inputs(d)
  local inputs, seen = {}, {}
  local function add(path, what)
    if type(path) == 'string' and path ~= '' and not seen[path] then
      seen[path] = true
      inputs[#inputs + 1] = { path, what }
    end
  end
  local script = rawget(_G, 'arg') and _G.arg[0]
  add(script, 'the benchmark script')
  for _, list in ipairs { HOOKS, OPTIONAL_HOOKS } do
    for _, h in ipairs(list) do
      local info = type(d[h]) == 'function' and debug.getinfo(d[h], 'S')
      if info and info.source:sub(1, 1) == '@' then add(info.source:sub(2), 'the file of the ' .. h .. ' hook') end
    end
  end
  add(core.executable(), 'the kluabench binary')
  return inputs
end

-- A usage error when --out (or the samples file beside it) or --samples is a
-- file the sweep reads, or --samples is the records file: appending there
-- would overwrite or corrupt an input. target: where the bundles go.
local function check_not_inputs(d, o, target)
  local outputs = require 'kluabench.suite.outputs'
  local inputs = sweep_inputs(d)
  local beside = o.samples == nil and formats.FORMATS[o.format].samples ~= false
  local ok, why = outputs.check_output("option '--out'", target, inputs, not beside)
  if not ok then usage_error(d.name, '%s', why) end
  if o.samples then
    if target and target ~= '-' then inputs[#inputs + 1] = { target, 'the records file' } end
    ok, why = outputs.check_output("option '--samples'", o.samples, inputs, true)
    if not ok then usage_error(d.name, '%s', why) end
  end
end

-- A usage error, before anything is measured, when the samples file (--samples, or the one beside
-- --out) exists and is not a regular file: it is read before it is written (its lines are counted),
-- and opening a FIFO there waited for a writer forever, after the measuring for the whole-file
-- formats. Found by stat, never by opening it.
local function check_samples_file(d, o, target)
  local beside = target and target ~= '-' and formats.FORMATS[o.format].samples ~= false
  local samples = o.samples or (beside and require('kluabench.record.evidence').samples_path(target))
  if not samples or samples == '-' then return end
  local why = require('kluabench.util.files').not_regular(samples)
  if not why then return end
  if o.samples then usage_error(d.name, "option '--samples' %s %s", samples, why) end
  usage_error(d.name, "option '--out' %s: its samples file %s %s", target, samples, why)
end

-- Where the raw samples go when the bundles go to stdout (else beside them,
-- unless --samples says otherwise).
local function samples_path(d, o, records)
  if o.samples then return o.samples end
  if records and records ~= '-' then return nil end
  if formats.FORMATS[o.format].samples == false then return nil end -- e.g. Liger's CSV
  local path = results_file(d, '.samples.jsonl')
  io.stderr:write(d.name, ': the raw samples of the bundles on stdout go to ', path, ' (--samples)\n')
  return path
end

-- The table of the finished points and, for the whole-file formats, the file
-- (claim: what the file held when the sweep started, writer.claim: another
-- process's file written since is not overwritten).
local function write_results(d, o, bundles, path, samples, claim)
  local f = formats.FORMATS[o.format]
  local table_text = formats.view(o.format, bundles, { sessions = o.sessions, metrics = o.metrics })
  if f.records == 'results' then -- the table is the output; the bundles went to the results file
    local ok, err = require('kluabench.util.files').write_stdout(table_text)
    if not ok then fail(d.name, 'cannot write %s', err) end
    io.stderr:write(string.format('%s: %d bundle%s appended to %s (backend %s)\n', d.name, #bundles,
      #bundles == 1 and '' or 's', path, core.backend()))
    return
  end
  io.stderr:write(table_text)
  if #bundles == 0 or not f.write then return end
  local out, notes = f.write(bundles, o.out or '-', samples, claim)
  if not out then fail(d.name, '%s', notes) end
  for _, note in ipairs(notes) do io.stderr:write(d.name, ': ', note, '\n') end
  if out ~= '-' then io.stderr:write(d.name, ': wrote ', out, '\n') end
end

-- --history DB: the commit of the code under test (git, in the current
-- directory) and the database, both checked before anything is timed, so that
-- a sweep does not end in an error it could have had at its start.
local function open_history(d, o)
  local history = require 'kluabench.history'
  local meta = history.git_meta()
  if not meta then
    fail(d.name, '--history %s: no git commit in the current directory to file the runs under (run in the work '
      .. 'tree of the code under test, or write the results and add them with kluabench history add FILE --commit '
      .. 'SHA)', o.history)
  end
  local h, err = history.open(o.history, { create = true })
  if not h then fail(d.name, '--history %s: %s', o.history, tostring(err)) end
  h:close()
  return meta
end

-- Adds the finished points to the --history database (also after an error or
-- a signal: they are in the results file too).
local function add_to_history(d, o, bundles, meta, source)
  local m = {}
  for k, v in pairs(meta) do m[k] = v end
  m.source = source ~= '-' and source or nil
  m.batch = (source or 'stdout') .. '@' .. require('kluabench.record.names').time_id(require('kluabench.record').now())
  local s, err = require('kluabench.history').add_bundles(o.history, bundles, m)
  if not s then
    io.stderr:write(string.format('%s: --history %s: %s (the bundles are in the results file; history add '
      .. 'takes them later)\n', d.name, o.history, tostring(err)))
    return
  end
  io.stderr:write(string.format('%s: history %s: %d run%s added, %d already there, %d refused (commit %s)\n', d.name,
    o.history, s.added, s.added == 1 and '' or 's', s.present, #s.refused, tostring(m.commit):sub(1, 12)))
end

---------------------------------------------------------------------------
-- The loop
---------------------------------------------------------------------------

local function make_protocol(o)
  if o.metric == 'memory' then return require('kluabench.measure.memory').protocol() end
  -- every mode through measure.protocol; do_bench's warm-up and repetitions are its own options
  local params = { quantiles = HARNESS_DO_BENCH.quantiles }
  if o.protocol == 'do_bench' then params.warmup_ms, params.rep_ms = o.warmup_ms, o.rep_ms end
  return require('kluabench.measure').protocol(o.protocol, params)
end

local WRONG = {}
WRONG.__index = WRONG
WRONG.__tostring = function(e) return e.message end
local WRONG_STATUSES = { incorrect_numerical = true, incorrect_shape = true, incorrect_dtype = true }

--- Raised by a benchmark's check when the provider's result is wrong: the provider is not timed and
-- its bundles get status (default "incorrect_numerical"; "incorrect_shape" or "incorrect_dtype"
-- where that is what is wrong; any other status is an error) with the message as the reason.
--
-- @signature suite.wrong_result(message [, status])
-- @example
--   local ok, e = pcall(suite.wrong_result, "q_out differs from the reference")
--   print(tostring(e))
function M.wrong_result(message, status)
  args.check('suite.wrong_result', 1, message, 'string', 'message')
  args.check('suite.wrong_result', 2, status, 'string|nil', 'run status')
  if status ~= nil and not WRONG_STATUSES[status] then
    error(string.format("bad argument #2 to 'wrong_result' (\"incorrect_numerical\", \"incorrect_shape\" or "
      .. '"incorrect_dtype" expected, got %s)', type(status) == 'string' and string.format('%q', status) or type(status)), 2)
  end
  error(setmetatable({ message = tostring(message), status = status or 'incorrect_numerical' }, WRONG), 0)
end

-- The status and message of an error a hook raised.
local function failure_of(err)
  if getmetatable(err) == WRONG then return err.status, err.message end
  return 'runtime_error', tostring(err)
end

-- What a bundle of (point, provider) says about the workload and the code,
-- the same for every mode and session: operation, tensors and implementation.
--
-- bare: for the bundle of a failure that a hook caused, without calling the
-- setup and implementation hooks again (what was described before is used).
local function describe(d, ctx, p, provider, bare)
  local key = p.id .. '\0' .. provider
  local cached = ctx.described[key]
  if cached then return cached end
  local out = { operation = d.operation }
  if not d.operation and not record.is_shared(d.name, p.params, p.dtype) then
    local t = ctx.tensors[p.id]
    if not t and not bare then
      -- the default provider's inputs describe the point, whatever providers run
      local default = d.provider or d.providers[1]
      local inputs = call_setup(d, p, default)
      t = {}
      for name, v in pairs(inputs) do
        if is_tensor(v) then t[name] = { shape = v.shape, dtype = v.dtype } end
      end
      free_tensors(inputs, tensor_set(p.shared))
      ctx.tensors[p.id] = t
    end
    out.tensors = t
  end
  local workload, op = record.workload { kernel = d.name, parameters = p.params, dtype = p.dtype,
    operation = out.operation, tensors = out.tensors, axis_order = axis_names(d) }
  out.workload, out.operation_document = workload, op
  local od = record.digest(op)
  local declared = not bare and d.implementation and d.implementation(p, provider) or nil
  if declared == 'builtin' then
    -- the kernel registry's built-in code, only where the declaration says so: a provider of a
    -- script of the user's that bears a built-in kernel's and provider's names is not that code
    if not record.builtin_implementation { kernel = d.name, provider = provider, backend = core.backend(),
        operation_digest = od } then
      bad_return(d, 'implementation', nil, declared, string.format("nil, an info() table, a list of them or an "
        .. "ImplementationRevision document expected: 'builtin' names a provider of the kernel registry "
        .. '(kluabench.kernels), which has no provider %s of a kernel %s on the %s backend',
        provider, d.name, core.backend()), p, provider)
    end
    out.builtin = true
  elseif type(declared) == 'table' and declared.kind == 'ImplementationRevision' then
    out.implementation = declared
  elseif type(declared) == 'table' then
    local hw = ctx.environment.spec.hardware or {}
    out.implementation = record.user_implementation { provider = provider, kernel = d.name, info = declared,
      operation_digest = od, arch = hw.architecture, dtypes = { p.dtype } }
  elseif declared ~= nil then
    bad_return(d, 'implementation', nil, declared, "nil, 'builtin', an info() table, a list of them or an "
      .. 'ImplementationRevision document', p, provider)
  end
  if not bare then ctx.described[key] = out end
  return out
end

-- A bundle of (point, provider, mode): what was measured (result), or
-- nothing (status and reason say why).
-- o.bare: without calling the record, cost, setup and implementation hooks
-- (the bundle of a failure one of them caused).
local function bundle_of(d, ctx, p, provider, mode, run_index, o)
  local extra = (d.record and not o.bare) and call_record(d, p, provider, mode) or {}
  local execution = {}
  for key, v in pairs(extra.execution or {}) do execution[key] = v end
  execution.point = p.id
  execution.trust = o.trust
  local bytes, flops
  if not o.bare then
    if d.cost then bytes, flops = call_cost(d, p, mode, provider) else bytes, flops = cost_of(d, p, mode) end
  end
  local desc = describe(d, ctx, p, provider, o.bare)
  local result = o.result or { samples = {}, used = {}, protocol = ctx.protocol }
  -- what the harness decides of the session: throughput and plausibility, the noise figure, status
  local median_ms = #result.samples > 0 and result.summary and result.summary.median or nil
  local throughput = median_ms and policy.throughput(bytes, flops, median_ms, ctx.environment) or nil
  local status, reasons = o.status, o.reasons
  if throughput and throughput.implausible then
    if status == nil or status == 'passed' then status = 'suspected_reward_hack' end
    reasons = reasons or {}
    reasons[#reasons + 1] = throughput.implausibleReason
  end
  return record.from_result {
    kernel = d.name, mode = mode, provider = provider, parameters = p.params, dtype = p.dtype,
    result = result, protocol = ctx.protocol,
    environment = ctx.environment, timed = extra.timed, check = o.check, execution = execution,
    annotations = extra.annotations, bytes = bytes, flops = flops, throughput = throughput,
    noise = median_ms and policy.noise(median_ms, ctx.environment, d.name) or nil,
    workload = desc.workload, operation_document = desc.operation_document, implementation = desc.implementation,
    builtin = desc.builtin == true,
    session = { index = run_index, count = ctx.o.runs }, status = status, reasons = reasons,
    axis_order = axis_names(d),
  }
end

-- The bundle of a (point, provider, mode) that failed (status, message): the
-- record and cost hooks still describe it, unless one of them is what fails,
-- then it is made without them and says so.
local function failure_bundle(d, ctx, p, provider, mode, run_index, status, message)
  local ok, b = pcall(bundle_of, d, ctx, p, provider, mode, run_index, { status = status, reasons = { message } })
  if ok then return b end
  if core.interrupted() then error(b, 0) end
  local again = tostring(b)
  return bundle_of(d, ctx, p, provider, mode, run_index, { status = status, bare = true,
    reasons = { message, 'its record was made without the record, cost and implementation hooks'
      .. (again == message and ' (one of them raised that error)' or (', which raised: ' .. again)) } })
end

-- The session's auditor (kluabench.trust.audit), or nil with --audits 0.
local function auditor(d, ctx, p, provider, mode, inputs, keep)
  if ctx.o.audits == 0 then return nil end
  local seeds = require 'kluabench.trust.seeds'
  return require('kluabench.trust.audit').new {
    inputs = inputs, keep = keep, key = seeds.derive(ctx.trust.key, p.id, provider, mode, ctx.sessions),
    refresh = function(key) return seeds.with_key(key, call_setup, d, p, provider) end,
    reference = d.reference and function(snap) return call_reference(d, p, provider, mode, snap) end,
    dtype = p.dtype, factor = d.precision, atol = d.tolerance and d.tolerance.atol,
    rtol = d.tolerance and d.tolerance.rtol, during = ctx.o.audits, checked = d.check ~= nil,
    -- one call per sample: a fresh sample and a timed one measure the same thing
    fresh_timing = ctx.o.protocol == 'cold' or ctx.o.protocol == 'do_bench', backend = core.backend(),
  }
end

-- One measured session of (point, provider, mode): the sealed bundle.
local function session(d, ctx, p, provider, mode, run_index, checked)
  local keep = tensor_set(p.shared)
  local inputs = call_setup(d, p, provider)
  local sets = {}
  ctx.sessions = (ctx.sessions or 0) + 1
  if ctx.o.protocol == 'graph' then
    -- rotated input sets (set 1 is inputs): the rotation must exceed the L2;
    -- each set's values of its own (a key per set), so no two sets are alike
    local seeds = require 'kluabench.trust.seeds'
    ctx.protocol.params.make_set = function(i)
      if i == 1 then return inputs end
      sets[#sets + 1] = seeds.with_key(seeds.derive(ctx.trust.key, 'set', i), call_setup, d, p, provider)
      return sets[#sets]
    end
  end
  local t0 = core.clock_ns()
  local limit_ns = ctx.o.timeout and ctx.o.timeout * 1e9
  local audit
  local ok, result = pcall(function()
    local fn = call_run(d, p, provider, mode, inputs)
    local run_ctx = measure.device()
    -- the deadline is checked between samples (a call that never returns is not stopped)
    if ctx.o.metric == 'memory' then
      -- Liger's memory metric: the peak allocated around one call (measure/memory.lua), no time
      return { samples = {}, used = {}, protocol = ctx.protocol,
        memory = require('kluabench.measure.memory').peak(fn) }
    end
    if limit_ns then run_ctx.deadline_ns = t0 + limit_ns end
    audit = auditor(d, ctx, p, provider, mode, inputs, keep)
    run_ctx.between = audit:hook()
    local r = ctx.protocol:run(fn, run_ctx)
    if ctx.o.metrics.energy then
      -- joules per call over NVML's windows, after the time (measure/energy.lua)
      r.energy = require('kluabench.measure.energy').measure(fn, { call_ms = r.summary and r.summary.median })
    end
    return r
  end)
  free_tensors(inputs, keep)
  for _, s in ipairs(sets) do free_tensors(s, keep) end
  if not ok then error(result, 0) end
  local o = { result = result, check = checked }
  if audit then
    local status, reasons, evidence = audit:verdict(result)
    -- the run's key (what KLUABENCH_SEED_KEY takes to replay it); the session's are derived from it
    evidence.seedKey = require('kluabench.trust.seeds').hex(ctx.trust.key)
    o.trust = evidence
    if status then
      o.status, o.reasons = status, reasons
      io.stderr:write(string.format('%s: %s: %s %s at %s: %s\n', d.name, status, mode, provider, p.id,
        table.concat(reasons, '; ')))
      ctx.failures = ctx.failures + 1
    end
  else
    o.trust = { audits = 0, seedKey = require('kluabench.trust.seeds').hex(ctx.trust.key),
      notChecked = { all = 'no audits (--audits 0)' } }
  end
  local elapsed = (core.clock_ns() - t0) / 1e9
  local stop = type(result) == 'table' and type(result.used) == 'table' and result.used.stop or nil
  if limit_ns and (elapsed > ctx.o.timeout or (type(stop) == 'table' and stop.rule == 'timeout'))
      and not o.status then
    o.status = 'timeout'
    o.reasons = { string.format('the session took %.3f s, past --timeout %g s%s', elapsed, ctx.o.timeout,
      type(stop) == 'table' and stop.rule == 'timeout' and ': sampling stopped at the deadline' or '') }
    io.stderr:write(string.format('%s: timeout: %s %s at %s: %s\n', d.name, mode, provider, p.id, o.reasons[1]))
    ctx.failures = ctx.failures + 1
  end
  return bundle_of(d, ctx, p, provider, mode, run_index, o)
end

-- Checks provider at p on fresh inputs before anything is timed: the check
-- record, or nil and the failure's status and message.
local function check_provider(d, p, provider, modes, timeout)
  if not d.check then return true end
  local t0 = core.clock_ns()
  local inputs
  local ok, checked = pcall(function()
    inputs = call_setup(d, p, provider)
    return checked_record(d, d.check(p, provider, inputs, modes), p, provider)
  end)
  free_tensors(inputs, tensor_set(p.shared))
  if not ok then
    if core.interrupted() then error(checked, 0) end
    return nil, failure_of(checked)
  end
  local elapsed = (core.clock_ns() - t0) / 1e9
  if timeout and elapsed > timeout then
    return nil, 'timeout', string.format('the check took %.3f s, past --timeout %g s', elapsed, timeout)
  end
  return checked
end

-- Runs every (session, point, provider, mode); stops between sessions once
-- a signal has come. Returns the signal's name, if any.
local function sweep(d, ctx, points, emit)
  local o, progress = ctx.o, ctx.progress
  local stopped_by
  local function interrupted()
    local hit, sig = core.interrupted()
    if hit then stopped_by = sig or 'SIGINT' end
    return hit
  end
  local checks = {}
  for run_index = 1, o.runs do
    for _, p in ipairs(points) do
      if interrupted() then return stopped_by end
      -- a shared hook that fails fails the point (every provider and mode of
      -- it, this session), not the sweep
      local shared_failure
      local ok_shared, shared_v = pcall(call_shared, d, p)
      if ok_shared then
        p.shared = shared_v
      else
        if core.interrupted() then error(shared_v, 0) end
        p.shared = nil
        local status, message = failure_of(shared_v)
        shared_failure = { status = status, message = message }
        io.stderr:write(string.format('%s: %s: point %s is not timed: %s\n', d.name, status, p.id, message))
        ctx.failures = ctx.failures + 1
      end
      for _, provider in ipairs(o.providers) do
        local key = p.id .. '\0' .. provider
        if checks[key] == nil and not shared_failure then
          local c, status, message = check_provider(d, p, provider, o.modes, o.timeout)
          -- {record = the check record} or {status, message} of a failed check
          checks[key] = c and { record = c ~= true and c or nil } or { status = status, message = message }
          if not c then
            io.stderr:write(string.format('%s: %s: provider %s at %s is not timed: %s\n', d.name, status, provider,
              p.id, message))
            ctx.failures = ctx.failures + 1
          end
        end
        local c = shared_failure or checks[key]
        for _, mode in ipairs(o.modes) do
          if interrupted() then break end
          local what = string.format('%s %s %s', mode, provider, p.id)
          if o.runs > 1 then what = what .. string.format(' (run %d/%d)', run_index, o.runs) end
          if progress then progress:start(what) end
          local bundle
          if c.status then
            bundle = failure_bundle(d, ctx, p, provider, mode, run_index, c.status, c.message)
          else
            local ok, b = pcall(session, d, ctx, p, provider, mode, run_index, c.record)
            if not ok then
              if core.interrupted() then error(b, 0) end
              local status, message = failure_of(b)
              io.stderr:write(string.format('%s: %s: %s %s at %s: %s\n', d.name, status, mode, provider, p.id, message))
              ctx.failures = ctx.failures + 1
              b = failure_bundle(d, ctx, p, provider, mode, run_index, status, message)
            end
            bundle = b
          end
          emit(bundle)
          if progress then
            local median = bundle.run.spec.timing and bundle.run.spec.timing.latencyNs.median
            progress:finish(what, median and string.format('median %.2f us', median / 1000) or bundle.run.spec.status)
          end
        end
      end
      local shared = p.shared
      p.shared = nil
      if shared then
        free_tensors(shared, {})
        if is_tensor(shared) then shared:free() end
      end
      if stopped_by then return stopped_by end
    end
  end
  interrupted() -- a signal during the last point counts too
  return stopped_by
end

--- Runs a declared benchmark with the script's command line and returns its bundles.
--
-- decl: name, summary, axes {name, default, help, max}, sweeps {name, axis, values, fixed},
-- dtypes/dtype, providers/provider, modes/mode, and the hooks validate(point), shared(point),
-- setup(point, provider) -> inputs, run(point, provider, mode, inputs) -> fn, check(point,
-- provider, inputs, modes) -> check record, cost(point, mode) -> bytes, flops, record(point,
-- provider, mode) -> {timed, execution, annotations}. A point has one field per axis, dtype,
-- params, x (the swept axis), id and shared. Optional: operation (an operation description) and
-- implementation(point, provider) (what the provider runs: k:info() tables, an
-- ImplementationRevision or 'builtin'; without it, the script). Exits itself for --help and --list-points (0), on a usage error (2),
-- after a wrong result or a failed session (1: the other points still run, and their bundles and
-- the failed ones are written) and after SIGINT/SIGTERM (130/143). Every bundle's evidence
-- carries the session {index, count} and the point's id.
--
-- @signature suite.main(decl [, args]) -> bundles
-- @example
--   local out = os.tmpname() -- a script runs it with its own command line: kb.suite.main{...}
--   kb.suite.main({
--     name = "tensor_copy", axes = {{name = "mib", default = 64}},
--     dtypes = {"f32"}, modes = {"forward"}, providers = {"copy_"},
--     setup = function(p) local n = p.mib * 262144
--       return {src = kb.randn({n}, "f32", 1), dst = kb.empty({n}, "f32")} end,
--     run = function(p, provider, mode, t) return function(s) s = s or t; s.dst:copy_(s.src) end end,
--     cost = function(p) return 2 * p.mib * 2^20, 0 end,
--   }, {"--mib", "1", "--rep-ms", "5", "--format", "jsonl", "--out", out .. ".jsonl"})
--   os.remove(out); os.remove(out .. ".jsonl"); os.remove(out .. ".samples.jsonl")
function M.main(d, args)
  check_decl(d)
  local o = parse(d, args or arg or {})
  if o.help then
    io.stdout:write(M.usage(d), '\n')
    os.exit(0)
  end
  local points = M.points(d, o)
  for _, p in ipairs(points) do
    local why = call_validate(d, p)
    if why then usage_error(d.name, '%s', why) end
  end
  if o.shard then
    local list = {}
    for i, p in ipairs(points) do list[i] = { id = p.id, cost = point_cost(d, p, o), point = p } end
    local selected = require('kluabench.suite.shard').select(list, o.shard[1], o.shard[2])
    points = {}
    for i, s in ipairs(selected) do points[i] = s.point end
  end
  if o.list_points then
    -- ID, COST, DESCRIPTION, then the bundles the point will have (every provider x mode x session),
    -- which the launchers write into their manifest for merge to expect
    local providers, modes = table.concat(o.providers, ','), table.concat(o.modes, ',')
    for _, p in ipairs(points) do
      io.stdout:write(string.format('%s\t%.0f\t%s x {%s} x {%s}, %s sweep\tproviders=%s\tmodes=%s\tsessions=%d\n',
        p.id, point_cost(d, p, o), d.name, providers, modes, p.x, providers, modes, o.runs))
    end
    os.exit(0)
  end

  local path = jsonl_path(d, o)
  local target = path or o.out
  if o.history and not require('kluabench.history.db').is_postgres(o.history) then
    -- results appended to the database file would damage it
    local outputs = require 'kluabench.suite.outputs'
    for _, out in ipairs { { '--out', target }, { '--samples', o.samples } } do
      local ok, err = outputs.check_output(out[1], out[2], { { o.history, 'the --history database' } })
      if not ok then usage_error(d.name, '%s', err) end
    end
  end
  check_not_inputs(d, o, target)
  check_samples_file(d, o, target)
  -- a path given as --out or --samples that cannot be written is a usage
  -- error (exit 2, as issue 23 asks of every command); a file of the results
  -- folder that cannot be written is not the command line's fault (exit 1)
  local function check_writable(file, option)
    local ok, err = require('kluabench.util.files').check_writable(file)
    if ok then return end
    if file == o[option] then usage_error(d.name, 'cannot write --%s %s', option, err) end
    fail(d.name, 'cannot write %s (the results folder: KLUABENCH_RESULTS, default results/)', err)
  end
  if target then check_writable(target, 'out') end

  local samples = samples_path(d, o, path or o.out)
  if samples then check_writable(samples, 'samples') end
  -- the whole-file formats replace --out at the end: what it holds now is
  -- claimed, so that another process's file written meanwhile is kept
  local claim
  local f = formats.FORMATS[o.format]
  if f.write and o.out and o.out ~= '-' then
    claim = require('kluabench.record.writer').claim(o.out, f.samples ~= false and samples or false)
  end
  local history_meta = o.history and open_history(d, o)
  -- the run's seed key: kb.randn's values cannot be known before the run (records carry the key)
  local key = require('kluabench.trust.seeds').draw()
  local ctx = { o = o, protocol = make_protocol(o), environment = require('kluabench.record.env').capture(),
    described = {}, tensors = {}, failures = 0, trust = { key = key } }
  local bundles = {}
  local writer = require 'kluabench.record.writer'
  local function emit(bundle)
    bundles[#bundles + 1] = bundle
    if path then
      local ok, err = writer.append(path, bundle, samples)
      if not ok then fail(d.name, '%s', tostring(err)) end
    end
  end

  local total = #points * #o.providers * #o.modes * o.runs
  local okp, progress_mod = pcall(require, 'kluabench.progress')
  -- to-be-closed: an error or a hard stop clears the progress line before
  -- the message is printed
  local progress <close> = okp and progress_mod.new { total = total } or nil
  ctx.progress = progress

  -- Ctrl-C and SIGTERM are deferred while the sweep runs: the point being
  -- measured is finished and written (a do_bench point cannot be stopped
  -- half-way; the cold, hot and graph protocols stop sampling early and
  -- their record says so), then the sweep stops, prints the summary of the
  -- finished points and exits with 130 (SIGINT) or 143 (SIGTERM). A second
  -- signal stops at once.
  core.defer_interrupts(true)
  local key_before = core.trust.seed_key(key)
  if total > 1 and not require('kluabench.progress').quiet_from_env() then
    local seconds = estimate_seconds(d, ctx, points)
    if seconds and seconds >= M.ESTIMATE_FROM_S and not core.interrupted() then
      io.stderr:write(string.format('%s: %d sessions, estimated %s (one call of each provider and mode timed at the '
        .. 'smallest point, scaled by bytes); fewer values, --provider or --mode make it shorter\n', d.name, total,
        require('kluabench.progress').format_duration(seconds)))
    end
  end
  local swept, stopped_by = pcall(sweep, d, ctx, points, emit)
  core.trust.seed_key(key_before)
  if progress then progress:close() end
  -- the points finished before an error are written in every format too
  write_results(d, o, bundles, path, samples, claim)
  if history_meta and #bundles > 0 then add_to_history(d, o, bundles, history_meta, path or o.out) end
  if not swept then error(stopped_by, 0) end
  if ctx.failures > 0 then
    io.stdout:flush()
    io.stderr:write(string.format('%s: %d provider%s or session%s failed (their bundles say why); exit status 1\n',
      d.name, ctx.failures, ctx.failures == 1 and '' or 's', ctx.failures == 1 and '' or 's'))
    if not stopped_by then os.exit(1) end
  end
  if stopped_by then
    io.stdout:flush() -- os.exit below skips the host's check of stdout: the writes above were checked
    io.stderr:write(string.format('%s: interrupted by %s after %d of %d points\n', d.name, stopped_by,
      #bundles, total))
    os.exit(stopped_by == 'SIGTERM' and 143 or 130)
  end
  return bundles
end

return M
