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
--                          the record
--
-- A point is a table with one field per axis, `dtype`, `params` (the axis
-- values by name, as records spell them), `x` (the swept axis), `id` (the
-- workload slug) and `shared` (what shared(point) returned).
local M = {}

local core = require 'kluabench.core'

---------------------------------------------------------------------------
-- Failing
---------------------------------------------------------------------------

-- A usage error: the message on stderr (the option's bytes escaped, as
-- every command's are), exit status 2.
local function usage_error(name, fmt, ...)
  io.stderr:write(name, ': ', require('kluabench.cli').printable(string.format(fmt, ...), 400), ' (see --help)\n')
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
local OPTIONAL_HOOKS = { 'validate', 'shared', 'check', 'cost', 'record' }
local PROTOCOLS = { 'do_bench', 'cold', 'hot', 'graph' }
local FORMATS = { 'table', 'markdown', 'jsonl', 'kernelindex', 'liger-csv' }

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
  for i, s in ipairs(d.sweeps or {}) do
    if type(s.name) ~= 'string' or not known[s.axis] or type(s.values) ~= 'table' or #s.values == 0 then
      bad('sweeps[%d] needs a name, an axis of axes and a list of values', i)
    end
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
                      interleaved with the other points); records say which session
  --shard I/N         run only the I-th of N shares of the points (1 <= I <= N),
                      balanced by estimated bytes; providers and modes stay together
  --list-points       print the points (id, estimated bytes, description) and exit
Output:
  --format F          table (default): the table on stdout, the bundles appended
                        as JSON Lines to --out (default results/%s-<time>.jsonl);
                      markdown: the same with the table in markdown (for pull requests);
                      jsonl: bundles as JSON Lines to --out or stdout;
                      kernelindex: pretty JSON (one bundle, or an array) to --out or stdout;
                      liger-csv: Liger's CSV to --out or stdout.
                      With the last three the table goes to stderr.
  --out PATH          where the bundles go (see --format)
  --help              this text

Every provider's result is checked before it is timed; a wrong result stops
the run. Ctrl-C (SIGINT) or SIGTERM: the point being measured is finished and
written, the table of the finished points is printed, and the exit status is
130 (SIGINT) or 143 (SIGTERM); a second signal stops at once.]], d.rep_ms or 400, d.warmup_ms or 25, d.name)
  if d.notes then add('\n%s', d.notes) end
  return table.concat(out, '\n')
end

-- A positive integer (the whole string), or nil.
local function positive_int(s)
  local n = math.tointeger(tonumber(s))
  if n and n > 0 and tostring(s):match('^%s*%d+%s*$') then return n end
  return nil
end

-- The values of a comma list option, each a positive integer <= max.
local function int_list(name, opt, s, max)
  local out = {}
  for item in (s .. ','):gmatch('([^,]*),') do
    local n = positive_int(item)
    if not n then usage_error(name, "option '--%s' needs a positive integer, got '%s'", opt, item) end
    if max and n > max then
      usage_error(name, "option '--%s': %d is larger than the largest allowed, %d", opt, n, max)
    end
    out[#out + 1] = n
  end
  return out
end

-- A choice option: {value} or the whole list for 'all'.
local function choice(name, opt, value, list)
  if value == 'all' then return list end
  for _, v in ipairs(list) do if v == value then return { v } end end
  usage_error(name, "option '--%s' must be %s or all, got '%s'", opt, choices(list), value)
end

-- A comma list of choices (--mode forward,backward), in the order given,
-- each once; or all.
local function choice_list(name, opt, value, list)
  if value == 'all' then return list end
  local out, seen = {}, {}
  for item in (value .. ','):gmatch('([^,]*),') do
    if item == 'all' then usage_error(name, "option '--%s': all cannot be part of a list, got '%s'", opt, value) end
    local v = choice(name, opt, item, list)[1]
    if not seen[v] then out[#out + 1], seen[v] = v, true end
  end
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
    provider = 'value', protocol = 'value', format = 'value', out = 'value', ['rep-ms'] = 'value',
    ['warmup-ms'] = 'value', runs = 'value', shard = 'value', aliases = { h = 'help' } }
  for _, a in ipairs(d.axes) do spec[option_name(a.name)] = 'value' end
  local raw, rest = require('kluabench.cli').parse_args(args, spec)
  if not raw then usage_error(d.name, '%s', rest) end
  if #rest > 0 then usage_error(d.name, "unexpected argument '%s'", rest[1]) end
  if raw.help then return { help = true } end
  local o = { list_points = raw['list-points'], out = raw.out, axes = {} }
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
      usage_error(d.name, "option '--sweep' must be %s or all, got '%s'", choices(names), raw.sweep)
    end
  end
  o.sweep = raw.sweep
  o.dtype = raw.dtype or d.dtype or d.dtypes[1]
  choice(d.name, 'dtype', o.dtype == 'all' and '?' or o.dtype, d.dtypes)
  o.modes = choice_list(d.name, 'mode', raw.mode or (o.sweep and 'all' or d.mode or d.modes[1]), d.modes)
  o.providers = choice_list(d.name, 'provider', raw.provider or (o.sweep and 'all' or d.provider or d.providers[1]),
    d.providers)
  o.protocol = choice(d.name, 'protocol', raw.protocol or 'do_bench', PROTOCOLS)[1]
  o.format = choice(d.name, 'format', raw.format or 'table', FORMATS)[1]
  -- a day of repetition per point is more than anyone means; the bound keeps
  -- a typo from growing the sample buffer until the machine runs out
  o.rep_ms = raw['rep-ms'] and positive_number(d.name, 'rep-ms', raw['rep-ms'], 86400e3) or d.rep_ms or 400
  o.warmup_ms = raw['warmup-ms'] and positive_number(d.name, 'warmup-ms', raw['warmup-ms'], 86400e3)
    or d.warmup_ms or 25
  o.runs = 1
  if raw.runs then
    o.runs = positive_int(raw.runs)
    if not o.runs or o.runs > 1000 then
      usage_error(d.name, "option '--runs' needs a whole number from 1 to 1000, got '%s'", raw.runs)
    end
  end
  if raw.shard then
    local i, n = require('kluabench.shard').parse(raw.shard)
    if not i then usage_error(d.name, "option '--shard': %s", n) end
    o.shard = { i, n }
  end
  return o
end

---------------------------------------------------------------------------
-- Points
---------------------------------------------------------------------------

-- The cartesian product of the axes' value lists, in declaration order
-- (the first axis varies slowest). x: the swept axis.
local function product(d, values, x, dtype, out)
  local function rec(i, acc)
    if i > #d.axes then
      local p = { params = {}, dtype = dtype, x = x }
      for _, a in ipairs(d.axes) do p[a.name], p.params[a.name] = acc[a.name], acc[a.name] end
      p.id = require('kluabench.record.names').workload_slug(p.params, dtype)
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
        product(d, values, s.axis, o.dtype, out)
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
  return out
end

-- The workload's bytes and flops of one mode at a point.
local function cost_of(d, p, mode)
  if d.cost then return d.cost(p, mode) end
  local spec = require('kluabench.record').workload { kernel = d.name, operation = mode, parameters = p.params,
    dtype = p.dtype }.spec
  return spec.bytes, spec.flops
end

-- The estimated bytes of a whole point: every provider times every mode.
local function point_cost(d, p, o)
  local bytes = 0
  for _, mode in ipairs(o.modes) do bytes = bytes + (cost_of(d, p, mode) or 0) end
  return bytes * #o.providers
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
-- Output
---------------------------------------------------------------------------

-- Where the bundles go as they are made: the JSON Lines path or nil.
local function jsonl_path(d, o)
  local output = require 'kluabench.report'
  if o.format == 'table' or o.format == 'markdown' then
    if o.out then return o.out end
    local ok, err = output.mkdir_p('results')
    if not ok then fail(d.name, '%s', err) end
    return 'results/' .. d.name .. '-' .. require('kluabench.record.names').time_id(require('kluabench.record').now())
      .. '.jsonl'
  elseif o.format == 'jsonl' then
    return o.out or '-'
  end
  return nil
end

-- The table of the finished points and, for the whole-file formats, the file.
local function write_results(d, o, bundles, path)
  local output = require 'kluabench.report'
  local table_text = o.format == 'markdown' and output.results_markdown(bundles) or output.results_table(bundles)
  if o.format == 'table' or o.format == 'markdown' then
    local ok, err = require('kluabench.report.files').write_stdout(table_text)
    if not ok then fail(d.name, 'cannot write %s', err) end
    io.stderr:write(string.format('%s: %d bundle%s appended to %s (backend %s)\n', d.name, #bundles,
      #bundles == 1 and '' or 's', path, core.backend()))
    return
  end
  io.stderr:write(table_text)
  if #bundles == 0 or o.format == 'jsonl' then return end
  local text, err
  if o.format == 'kernelindex' then
    text, err = output.encode_pretty(#bundles == 1 and bundles[1] or bundles)
  else
    text, err = output.liger_csv(bundles)
  end
  if not text then fail(d.name, '%s', err) end
  if o.out and o.out ~= '-' then
    local ok, werr = output.write_atomic(o.out, text)
    if not ok then fail(d.name, 'cannot write %s', tostring(werr)) end
    io.stderr:write(d.name, ': wrote ', o.out, '\n')
  else
    local ok, werr = require('kluabench.report.files').write_stdout(text)
    if not ok then fail(d.name, 'cannot write %s', werr) end
  end
end

---------------------------------------------------------------------------
-- The loop
---------------------------------------------------------------------------

local function make_protocol(o)
  if o.protocol == 'do_bench' then
    return require('kluabench.measure.do_bench').do_bench_protocol { warmup_ms = o.warmup_ms, rep_ms = o.rep_ms, quantiles = { 0.5, 0.2, 0.8 } }
  end
  return require('kluabench.measure').protocol(o.protocol, { quantiles = { 0.5, 0.2, 0.8 } })
end

-- One measured session of (point, provider, mode): the sealed bundle.
local function session(d, ctx, p, provider, mode, run_index, checked)
  local keep = tensor_set(p.shared)
  local inputs = d.setup(p, provider)
  local sets = {}
  if ctx.o.protocol == 'graph' then
    -- rotated input sets (set 1 is inputs): the rotation must exceed the L2
    ctx.protocol.params.make_set = function(i)
      if i == 1 then return inputs end
      sets[#sets + 1] = d.setup(p, provider)
      return sets[#sets]
    end
  end
  local ok, result = pcall(ctx.protocol.run, ctx.protocol, d.run(p, provider, mode, inputs))
  free_tensors(inputs, keep)
  for _, s in ipairs(sets) do free_tensors(s, keep) end
  if not ok then error(result, 0) end
  local extra = d.record and d.record(p, provider, mode) or {}
  local execution = {}
  for key, v in pairs(extra.execution or {}) do execution[key] = v end
  execution.session = { index = run_index, count = ctx.o.runs }
  execution.point = p.id
  local bytes, flops
  if d.cost then bytes, flops = d.cost(p, mode) end
  return require('kluabench.record').from_result {
    kernel = d.name, mode = mode, provider = provider, parameters = p.params, dtype = p.dtype,
    result = result, protocol = ctx.protocol, environment = ctx.environment, timed = extra.timed,
    check = checked, execution = execution, annotations = extra.annotations, bytes = bytes, flops = flops,
  }
end

-- Checks provider at p on fresh inputs before anything is timed.
local function check_provider(d, p, provider, modes)
  if not d.check then return nil end
  local inputs = d.setup(p, provider)
  local ok, checked = pcall(d.check, p, provider, inputs, modes)
  free_tensors(inputs, tensor_set(p.shared))
  if not ok then error(checked, 0) end
  return checked
end

-- Runs every (session, point, provider, mode); stops between sessions once
-- a signal has come. Returns the bundles and the signal's name, if any.
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
      p.shared = d.shared and d.shared(p) or nil
      for _, provider in ipairs(o.providers) do
        local key = p.id .. '\0' .. provider
        if checks[key] == nil then checks[key] = check_provider(d, p, provider, o.modes) or false end
        for _, mode in ipairs(o.modes) do
          if interrupted() then break end
          local what = string.format('%s %s %s', mode, provider, p.id)
          if o.runs > 1 then what = what .. string.format(' (run %d/%d)', run_index, o.runs) end
          if progress then progress:start(what) end
          local bundle = session(d, ctx, p, provider, mode, run_index, checks[key] or nil)
          emit(bundle)
          if progress then
            local median = bundle.run.spec.timing and bundle.run.spec.timing.latencyNs.median
            progress:finish(what, median and string.format('median %.2f us', median / 1000) or 'done')
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
-- params, x (the swept axis), id and shared. Exits itself for --help and --list-points (0), on a
-- usage error (2) and after SIGINT/SIGTERM (130/143); a wrong result is an error. Every bundle's
-- run.spec.execution carries session {index, count} and point (the id).
--
-- @signature suite.main(decl [, args]) -> bundles
-- @example
--   kb.suite.main {
--     name = "tensor_copy", axes = {{name = "mib", default = 64}},
--     dtypes = {"f32"}, modes = {"forward"}, providers = {"copy_"},
--     setup = function(p) local n = p.mib * 262144
--       return {src = kb.randn({n}, "f32", 1), dst = kb.empty({n}, "f32")} end,
--     run = function(p, provider, mode, t) return function(s) s = s or t; s.dst:copy_(s.src) end end,
--     cost = function(p) return 2 * p.mib * 2^20, 0 end,
--   }
function M.main(d, args)
  check_decl(d)
  local o = parse(d, args or arg or {})
  if o.help then
    io.stdout:write(M.usage(d), '\n')
    os.exit(0)
  end
  local points = M.points(d, o)
  for _, p in ipairs(points) do
    local why = d.validate and d.validate(p)
    if why then usage_error(d.name, '%s', why) end
  end
  if o.shard then
    local list = {}
    for i, p in ipairs(points) do list[i] = { id = p.id, cost = point_cost(d, p, o), point = p } end
    local selected = require('kluabench.shard').select(list, o.shard[1], o.shard[2])
    points = {}
    for i, s in ipairs(selected) do points[i] = s.point end
  end
  if o.list_points then
    for _, p in ipairs(points) do
      io.stdout:write(string.format('%s\t%.0f\t%s x {%s} x {%s}, %s sweep\n', p.id, point_cost(d, p, o), d.name,
        table.concat(o.providers, ','), table.concat(o.modes, ','), p.x))
    end
    os.exit(0)
  end

  local path = jsonl_path(d, o)
  local target = path or o.out
  if target then
    local ok, err = require('kluabench.report.files').check_writable(target)
    if not ok then fail(d.name, 'cannot write --out %s', err) end
  end

  local ctx = { o = o, protocol = make_protocol(o), environment = require('kluabench.record.env').capture() }
  local bundles = {}
  local output = require 'kluabench.report'
  local function emit(bundle)
    bundles[#bundles + 1] = bundle
    if path then
      local ok, err = output.append_jsonl(path, bundle)
      if not ok then fail(d.name, 'cannot write %s', tostring(err)) end
    end
  end

  local total = #points * #o.providers * #o.modes * o.runs
  local okp, progress_mod = pcall(require, 'kluabench.report.progress')
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
  local stopped_by = sweep(d, ctx, points, emit)
  if progress then progress:close() end
  write_results(d, o, bundles, path)
  if stopped_by then
    io.stdout:flush() -- os.exit below skips the host's check of stdout: the writes above were checked
    io.stderr:write(string.format('%s: interrupted by %s after %d of %d points\n', d.name, stopped_by,
      #bundles, total))
    os.exit(stopped_by == 'SIGTERM' and 143 or 130)
  end
  return bundles
end

return M
