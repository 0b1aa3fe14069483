--- The declaration of a benchmark (docs/SUITE.md) as the harness reads it: its fields checked, the options it makes
-- (--help), the points, and its hooks called with what each returns checked.
local args = require 'kluabench.util.args'
local implementation = require 'kluabench.record.implementation'
local measure = require 'kluabench.measure'
local bench = require 'kluabench.measure.do_bench'
local kernels = require 'kluabench.kernels'
local trust = require 'kluabench.trust'
local record = require 'kluabench.record'
local names = require 'kluabench.record.names'
local operation = require 'kluabench.record.operation'

local M = {}

local HARNESS_DO_BENCH = bench.HARNESS_DEFAULTS
-- what is measured (Liger's metric_name), and what may be measured beside the time
local METRICS, EXTRA_METRICS = { 'speed', 'memory' }, { 'energy' }

-- A usage error: the message on stderr (its bytes escaped), exit status 2.
function M.usage_error(name, fmt, ...)
  io.stderr:write(name, ': ', args.printable(string.format(fmt, ...), 400), ' (see --help)\n')
  os.exit(2)
end

-- An error printed without a traceback.
function M.fail(name, fmt, ...) error(name .. ': ' .. string.format(fmt, ...), 0) end

-- The hooks a declaration must have, and those it may have.
M.HOOKS = { 'setup', 'run' }
M.OPTIONAL_HOOKS = { 'validate', 'shared', 'check', 'cost', 'record', 'implementation', 'reference', 'available' }
-- The output formats --format takes (suite.FORMATS says what each writes).
M.FORMATS = { 'table', 'markdown', 'jsonl', 'kernelindex', 'liger-csv' }

function M.option_name(axis) return (axis:gsub('_', '-')) end

local function is_list_of_strings(t)
  if type(t) ~= 'table' or #t == 0 then return false end
  for _, v in ipairs(t) do if type(v) ~= 'string' then return false end end
  return true
end

-- The harness options an optional subsystem offers: option -> the module loaded when it is given (history:
-- open(db) before the sweep, add(...) after it; shard: parse("I/N"), select(points, i, n)). The core never
-- names one in a require.
M.EXTENSIONS = { history = 'kluabench.history.harness', shard = 'kluabench.dist.split' }

function M.extension(d, option)
  local modname = M.EXTENSIONS[option]
  if not package.searchpath(modname, package.path) then
    M.fail(d.name, '--%s: the subsystem that offers it (%s) is not in this installation', option, modname)
  end
  return require(modname)
end

-- Raises (at the script's line) when the declaration is malformed.
function M.check_decl(d)
  local function bad(fmt, ...) error("bad argument #1 to 'suite.main' (" .. string.format(fmt, ...) .. ')', 4) end
  if type(d) ~= 'table' then bad('declaration table expected, got %s', type(d)) end
  if type(d.name) ~= 'string' or not d.name:match('^[%w_]+$') then bad("field 'name' must be a word") end
  for _, h in ipairs(M.HOOKS) do if type(d[h]) ~= 'function' then bad("field '%s' must be a function", h) end end
  for _, h in ipairs(M.OPTIONAL_HOOKS) do
    if d[h] ~= nil and type(d[h]) ~= 'function' then bad("field '%s' must be a function", h) end
  end
  for _, f in ipairs { 'providers', 'modes', 'dtypes' } do
    if not is_list_of_strings(d[f]) then bad("field '%s' must be a list of strings", f) end
  end
  if type(d.axes) ~= 'table' then bad("field 'axes' must be a list") end
  local known, declared_axes = {}, {}
  for i, a in ipairs(d.axes) do
    if type(a) ~= 'table' or type(a.name) ~= 'string' or not a.name:match('^[%a][%w_]*$') then
      bad('axes[%d] needs a name (a word)', i)
    end
    if math.type(a.default) ~= 'integer' or a.default <= 0 then
      bad("axes[%d] ('%s') needs a positive integer default", i, a.name)
    end
    known[a.name], declared_axes[i] = a, a.name
  end
  local sweep_names = {}
  if d.sweeps ~= nil and type(d.sweeps) ~= 'table' then bad("field 'sweeps' must be a list") end
  for i, s in ipairs(d.sweeps or {}) do
    if type(s) ~= 'table' or type(s.name) ~= 'string' or not s.name:match('^[%w_]+$') then
      bad('sweeps[%d] needs a name (a word)', i)
    end
    if not known[s.axis] then
      bad("sweeps[%d] ('%s') sweeps axis '%s', which is not one of axes%s (axes: %s)", i, s.name, tostring(s.axis),
        type(s.axis) == 'string' and args.hint(s.axis, declared_axes) or '', table.concat(declared_axes, ', '))
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
  if d.reduction ~= nil and type(d.reduction) ~= 'function' and not (math.type(d.reduction) == 'integer'
      and d.reduction >= 1) then
    bad("field 'reduction' must be an integer >= 1 or a function(point) returning one (the terms each output "
      .. 'element sums)')
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
    local ok, err = pcall(operation.document, d.operation)
    if not ok then bad("field 'operation': %s", tostring(err):gsub('^.-%(', '('):gsub('^%((.*)%)$', '%1')) end
  end
  return known
end

function M.choices(list) return table.concat(list, ', ') end

-- The spelling records print (fp32, fp16, bf16: names.DTYPE_TOKEN) of each dtype of a list, spelled any way (f32).
function M.dtype_tokens(list)
  local out = {}
  for i, v in ipairs(list) do out[i] = names.DTYPE_TOKEN[names.DTYPE_ALIASES[v] or v] or v end
  return out
end

-- The declaration's own spelling of the dtype typed (fp32 or f32 alike); a usage error with a hint when none.
function M.dtype_choice(d, typed)
  local tokens, want = M.dtype_tokens(d.dtypes), M.dtype_tokens({ typed })[1]
  for i, v in ipairs(d.dtypes) do if v == typed or tokens[i] == want then return v end end
  M.usage_error(d.name, "option '--dtype' must be one of %s, got '%s'%s", M.choices(tokens), typed,
    args.hint(typed, tokens))
end

-- A positive integer (the whole string), or nil.
local function positive_int(s)
  local n = math.tointeger(tonumber(s))
  if n and n > 0 and tostring(s):match('^%s*%d+%s*$') then return n end
  return nil
end

-- Adds v to out once; a value given twice is measured once, and noted once in repeats.
local function add_once(v, out, seen, repeats)
  if seen[v] == 1 then repeats[#repeats + 1] = tostring(v) end
  if not seen[v] then out[#out + 1] = v end
  seen[v] = (seen[v] or 0) + 1
end

local function note_repeats(name, opt, repeats)
  if #repeats == 0 then return end
  io.stderr:write(name, ': ', args.printable(string.format("option '--%s' lists %s more than once: "
    .. 'each is measured once', opt, table.concat(repeats, ', ')), 400), '\n')
end

-- The values of a comma list option: positive integers <= max, each once, in the order given.
local function int_list(name, opt, s, max)
  local out, seen, repeats = {}, {}, {}
  for item in (s .. ','):gmatch('([^,]*),') do
    local n = positive_int(item)
    if not n then M.usage_error(name, "option '--%s' needs a positive integer, got '%s'", opt, item) end
    if max and n > max then
      M.usage_error(name, "option '--%s': %d is larger than the largest allowed, %d", opt, n, max)
    end
    add_once(n, out, seen, repeats)
  end
  note_repeats(name, opt, repeats)
  return out
end

-- {value} for one of list, or the whole list for 'all' where offers_all (modes and providers).
local function choice(name, opt, value, list, offers_all)
  if value == 'all' and offers_all then return list end
  for _, v in ipairs(list) do if v == value then return { v } end end
  M.usage_error(name, "option '--%s' must be %s%s%s, got '%s'%s", opt, offers_all and '' or 'one of ', M.choices(list),
    offers_all and ' or all' or '', value, args.hint(value, list))
end

-- A comma list of choices, in the order given, each once; or all.
local function choice_list(name, opt, value, list)
  if value == 'all' then return list end
  local out, seen, repeats = {}, {}, {}
  for item in (value .. ','):gmatch('([^,]*),') do
    if item == 'all' then M.usage_error(name, "option '--%s': all cannot be part of a list, got '%s'", opt, value) end
    add_once(choice(name, opt, item, list, true)[1], out, seen, repeats)
  end
  note_repeats(name, opt, repeats)
  return out
end

local function positive_number(name, opt, s, max)
  local n = tonumber(s)
  if not n or n ~= n or n <= 0 or n == math.huge then
    M.usage_error(name, "option '--%s' needs a positive number, got '%s'", opt, s)
  end
  if max and n > max then M.usage_error(name, "option '--%s' must be at most %s, got '%s'", opt, max, s) end
  return n
end

-- The providers of the list that can run here: the available hook (nil, or why a provider cannot run here, such as
-- a library that is not installed) drops the others, each with a line on stderr; none left is an error.
local function runnable(d, providers)
  if not d.available then return providers end
  local out = {}
  for _, provider in ipairs(providers) do
    local why = d.available(provider)
    if why == nil or why == false then
      out[#out + 1] = provider
    elseif type(why) ~= 'string' then
      M.bad_return(d, 'available', nil, why, 'nil, or a message saying why the provider cannot run here', nil, provider)
    else
      io.stderr:write(d.name, ': provider ', provider, ' skipped: ', args.printable(why, 600), '\n')
    end
  end
  if #out == 0 then M.fail(d.name, 'no provider of %s can run here (each says why above)', table.concat(providers, ', ')) end
  return out
end

-- The options of a declaration, converted and checked.
function M.parse(d, argv)
  local spec = { help = 'flag', ['list-points'] = 'flag', sweep = 'value', dtype = 'value', mode = 'value',
    provider = 'value', protocol = 'value', format = 'value', out = 'value', samples = 'value', ['rep-ms'] = 'value',
    ['warmup-ms'] = 'value', runs = 'value', shard = 'value', timeout = 'value', history = 'value',
    source = 'value', sessions = 'flag', metric = 'value', metrics = 'value', audits = 'value', quiet = 'flag',
    aliases = { h = 'help', o = 'out', q = 'quiet' } }
  for _, a in ipairs(d.axes) do spec[M.option_name(a.name)] = 'value' end
  local raw, rest = args.parse_args(argv, spec)
  if not raw then -- --backend and --device are the host's: it chose the device before the script ran
    local host = rest:match("^unrecognized option '(%-%-%a+)")
    M.usage_error(d.name, '%s%s', rest, (host == '--backend' or host == '--device') and
      string.format(" (a host option: give it before the script, 'kluabench %s X SCRIPT ...')", host) or '')
  end
  if #rest > 0 then M.usage_error(d.name, "unexpected argument '%s'", rest[1]) end
  if raw.help then return { help = true } end
  for _, opt in ipairs { 'out', 'samples', 'history' } do
    if raw[opt] == '' then M.usage_error(d.name, "option '--%s' needs a path, got an empty string", opt) end
  end
  local o = { list_points = raw['list-points'], out = raw.out, samples = raw.samples, history = raw.history, axes = {},
    sessions = raw.sessions, source = raw.source, quiet = raw.quiet }
  if o.source and not implementation.repository_url(o.source) then
    M.usage_error(d.name, "option '--source' needs the code's repository as an https, ssh or git URL, got '%s'",
      args.printable(o.source, 200))
  end
  for _, a in ipairs(d.axes) do
    local v = raw[M.option_name(a.name)]
    if v then o.axes[a.name] = int_list(d.name, M.option_name(a.name), v, a.max) end
  end
  if raw.sweep then
    local found = raw.sweep == 'all'
    for _, s in ipairs(d.sweeps or {}) do found = found or s.name == raw.sweep end
    if not found then
      local names = {}
      for _, s in ipairs(d.sweeps or {}) do names[#names + 1] = s.name end
      M.usage_error(d.name, "option '--sweep' must be %s or all, got '%s'%s", M.choices(names), raw.sweep,
        args.hint(raw.sweep, names))
    end
  end
  o.sweep, o.dtype = raw.sweep, M.dtype_choice(d, raw.dtype or d.dtype or d.dtypes[1])
  o.modes = choice_list(d.name, 'mode', raw.mode or (o.sweep and 'all' or d.mode or d.modes[1]), d.modes)
  o.providers = runnable(d, choice_list(d.name, 'provider', raw.provider or (o.sweep and 'all' or d.provider
    or d.providers[1]), d.providers))
  o.protocol = choice(d.name, 'protocol', raw.protocol or 'do_bench', measure.MODES)[1]
  o.format = choice(d.name, 'format', raw.format or M.FORMATS[1], M.FORMATS)[1]
  o.metric = choice(d.name, 'metric', raw.metric or 'speed', METRICS)[1]
  o.metrics = {}
  if raw.metrics then
    for _, m in ipairs(choice_list(d.name, 'metrics', raw.metrics, EXTRA_METRICS)) do o.metrics[m] = true end
    if o.metric == 'memory' then
      M.usage_error(d.name, "option '--metrics %s' goes with the time (--metric speed), not with --metric memory",
        raw.metrics)
    end
  end
  -- bounds (a day, a week) keep a typo from growing the sample buffer without end
  o.rep_ms = raw['rep-ms'] and positive_number(d.name, 'rep-ms', raw['rep-ms'], 86400e3) or d.rep_ms or HARNESS_DO_BENCH.rep_ms
  o.warmup_ms = raw['warmup-ms'] and positive_number(d.name, 'warmup-ms', raw['warmup-ms'], 86400e3)
    or d.warmup_ms or HARNESS_DO_BENCH.warmup_ms
  o.timeout = raw.timeout and positive_number(d.name, 'timeout', raw.timeout, 7 * 86400) or nil
  o.audits = trust.DEFAULTS.during
  if raw.audits then
    o.audits = math.tointeger(tonumber(raw.audits))
    if not o.audits or o.audits < 0 or o.audits > 100 or not raw.audits:match('^%s*%d+%s*$') then
      M.usage_error(d.name, "option '--audits' needs a whole number from 0 to 100, got '%s'", raw.audits)
    end
  end
  o.runs = 1
  if raw.runs then
    o.runs = positive_int(raw.runs)
    if not o.runs or o.runs > 1000 then
      M.usage_error(d.name, "option '--runs' needs a whole number from 1 to 1000, got '%s'", raw.runs)
    end
  end
  if raw.shard then
    local i, n = M.extension(d, 'shard').parse(raw.shard)
    if not i then M.usage_error(d.name, "option '--shard': %s", n) end
    o.shard = { i, n }
  end
  return o
end

-- What a point has besides its axes; sweep and shared may be nil.
local POINT_FIELDS = { 'params', 'dtype', 'x', 'id', 'sweep', 'shared' }

-- A field a point does not have is an error naming those it has, not a silent nil.
local function point_meta(d)
  local known, names = {}, {}
  for _, a in ipairs(d.axes) do known[a.name] = true; names[#names + 1] = a.name end
  for _, f in ipairs(POINT_FIELDS) do known[f] = true; names[#names + 1] = f end
  return {
    __index = function(_, k)
      if known[k] or type(k) ~= 'string' then return nil end
      error(string.format("%s: a point has no field '%s'%s (its fields: %s)", d.name, k,
        args.hint(k, names), table.concat(names, ', ')), 2)
    end,
  }
end

function M.axis_names(d)
  local out = {}
  for i, a in ipairs(d.axes) do out[i] = a.name end
  return out
end

-- The order of a point's id words: the declaration's, except for kernelindex's own workloads (record.case_order).
local function id_order(d, params, dtype)
  return record.case_order { kernel = d.name, parameters = params, dtype = dtype,
    operation = d.operation, axis_order = M.axis_names(d) }
end

-- The product of the axes' value lists, the first axis slowest. x: the swept axis.
local function product(d, values, x, dtype, out)
  local meta = point_meta(d)
  local function rec(i, acc)
    if i > #d.axes then
      local p = setmetatable({ params = {}, dtype = dtype, x = x }, meta)
      for _, a in ipairs(d.axes) do p[a.name], p.params[a.name] = acc[a.name], acc[a.name] end
      p.id = names.workload_slug(p.params, dtype, id_order(d, p.params, dtype))
      out[#out + 1] = p
      return
    end
    local a = d.axes[i]
    for _, v in ipairs(values[a.name]) do acc[a.name] = v; rec(i + 1, acc) end
  end
  rec(1, {})
end

-- suite.points (opts.axes: lists by axis name; opts.sweep; opts.dtype).
function M.points(d, o)
  args.check('suite.points', 1, d, 'table', 'declaration table')
  args.check('suite.points', 2, o, 'table', 'parsed options')
  local out, first_multi = {}, nil
  for _, a in ipairs(d.axes) do
    if not first_multi and o.axes[a.name] and #o.axes[a.name] > 1 then first_multi = a.name end
  end
  if o.sweep then
    for _, s in ipairs(d.sweeps) do
      if o.sweep == 'all' or o.sweep == s.name then
        local values = {}
        for _, a in ipairs(d.axes) do values[a.name] = o.axes[a.name] or { (s.fixed or {})[a.name] or a.default } end
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
  -- a workload several sweeps share is measured once, in the first; p.sweeps names every sweep it is in
  local seen, once = {}, {}
  for _, p in ipairs(out) do
    local first = seen[p.id]
    if first then
      first.sweeps[#first.sweeps + 1] = p.sweep
    else
      p.sweeps = { p.sweep }
      seen[p.id], once[#once + 1] = p, p
    end
  end
  return once
end

function M.is_tensor(v)
  local mt = getmetatable(v)
  return type(mt) == 'table' and mt.__name == 'kluabench.Tensor'
end

-- A Python object kb.python holds (a provider's state in Python): the harness frees it with the inputs, as a tensor.
local function is_python_object(v)
  local mt = getmetatable(v)
  return type(mt) == 'table' and mt.__name == 'kluabench.PyObject'
end

-- Frees every tensor (and Python object) among the values of t that is not in keep.
function M.free_tensors(t, keep)
  if type(t) ~= 'table' then return end
  for _, v in pairs(t) do
    if (M.is_tensor(v) or is_python_object(v)) and not keep[v] then v:free() end
  end
end

function M.tensor_set(t)
  local set = {}
  if M.is_tensor(t) or is_python_object(t) then set[t] = true end
  if type(t) == 'table' then
    for _, v in pairs(t) do if M.is_tensor(v) or is_python_object(v) then set[v] = true end end
  end
  return set
end

-- The hooks: a wrong value is an error naming the hook, where it is defined, the provider, mode and point.

-- " (scale.lua:9)": where a hook function is defined, or ''.
function M.defined_at(fn)
  local info = type(fn) == 'function' and debug.getinfo(fn, 'S') or nil
  if not info or info.what == 'C' or (info.linedefined or 0) <= 0 then return '' end
  -- the path as given (short_src cuts a long one to 60 bytes)
  local src = info.source:sub(1, 1) == '@' and info.source:sub(2) or info.short_src
  return string.format(' (%s:%d)', args.printable(src, 300), info.linedefined)
end

local function finite(v) return type(v) == 'number' and v == v and v > -math.huge and v < math.huge end

-- A value as a message shows it: nil, NaN, the number -1, the string 'x', a table.
local function shown(v)
  if v == nil then return 'nil' end
  if type(v) == 'number' then
    if v ~= v then return 'NaN' end
    return 'the number ' .. (finite(v) and string.format('%.17g', v) or (v > 0 and 'inf' or '-inf'))
  end
  if type(v) == 'string' then return "the string '" .. args.printable(v, 60) .. "'" end
  if type(v) == 'boolean' then return tostring(v) end
  if M.is_tensor(v) then return 'a tensor' end
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
function M.bad_return(d, hook, what, got, expected, p, provider, mode)
  if not expected:find(' expected', 1, true) then expected = expected .. ' expected' end
  error(string.format('the %s hook%s returned %s%s for %s (%s)', hook, M.defined_at(d[hook]), what and
    (what .. ' = ') or '', shown(got), call_site(p, provider, mode), expected), 0)
end

-- validate(point): nil or false when the point can run, else the message.
function M.call_validate(d, p)
  if not d.validate then return nil end
  local why = d.validate(p)
  if why == nil or why == false then return nil end
  if type(why) ~= 'string' then M.bad_return(d, 'validate', nil, why, 'nil, or a message saying why the point cannot run', p) end
  return why
end

-- shared(point): nil, a tensor or a table (what the harness frees after the point).
function M.call_shared(d, p)
  if not d.shared then return nil end
  local v = d.shared(p)
  if v ~= nil and type(v) ~= 'table' and not M.is_tensor(v) then
    M.bad_return(d, 'shared', nil, v, 'nil, a tensor or a table of per-point state', p)
  end
  return v
end

-- setup(point, provider): the table of inputs.
function M.call_setup(d, p, provider)
  local v = d.setup(p, provider)
  if type(v) ~= 'table' then M.bad_return(d, 'setup', nil, v, 'a table of inputs', p, provider) end
  return v
end

local function callable(v)
  if type(v) == 'function' then return true end
  local mt = getmetatable(v)
  return type(mt) == 'table' and type(mt.__call) == 'function'
end

-- run(point, provider, mode, inputs): the function to time.
function M.call_run(d, p, provider, mode, inputs)
  local fn = d.run(p, provider, mode, inputs)
  if not callable(fn) then M.bad_return(d, 'run', nil, fn, 'the function to time', p, provider, mode) end
  return fn
end

-- The reduction length the declaration states for a point (nil: the audit reads it from the shapes).
function M.reduction(d, p)
  local n = d.reduction
  if type(n) == 'function' then
    n = n(p)
    if not (math.type(n) == 'integer' and n >= 1) then
      M.bad_return(d, 'reduction', nil, n, 'an integer >= 1 (the terms each output element sums)', p)
    end
  end
  return n
end

-- reference(point, provider, mode, snapshot): a table of tensors by name.
function M.call_reference(d, p, provider, mode, snapshot)
  local v = d.reference(p, provider, mode, snapshot)
  if type(v) ~= 'table' then
    M.bad_return(d, 'reference', nil, v, 'a table of tensors by the names of the inputs they are the result for', p,
      provider, mode)
  end
  for k, t in pairs(v) do
    if not M.is_tensor(t) then M.bad_return(d, 'reference', tostring(k), t, 'a tensor', p, provider, mode) end
  end
  return v
end

-- The check record's figures that records carry: finite and >= 0.
local CHECK_FIGURES = { 'maxAbsDiff', 'maxRelDiff', 'relL2', 'matchedRatio' }

-- The check hook's record, checked: true (nothing to record) or the table; a figure must be a finite number >= 0 (a
-- NaN difference measured nothing); passed = false is a wrong result.
function M.checked_record(d, v, p, provider)
  if v == nil or v == true then return true end
  if type(v) ~= 'table' then
    M.bad_return(d, 'check', nil, v, 'nothing or a check record table expected; a wrong result raises kb.suite.wrong_result',
      p, provider)
  end
  for _, f in ipairs(CHECK_FIGURES) do
    local x = v[f]
    if x ~= nil and not (finite(x) and x >= 0 and (f ~= 'matchedRatio' or x <= 1)) then
      M.bad_return(d, 'check', f, x, f == 'matchedRatio' and 'a number from 0 to 1' or 'a finite number >= 0', p, provider)
    end
  end
  if v.passed ~= nil and type(v.passed) ~= 'boolean' then
    M.bad_return(d, 'check', 'passed', v.passed, 'true or false', p, provider)
  end
  if v.passed == false then
    M.wrong_result(string.format('the check hook%s returned passed = false for %s', M.defined_at(d.check),
      call_site(p, provider)))
  end
  return v
end

-- cost(point, mode): bytes and flops, each nil or a finite number >= 0 (provider: for the message).
function M.call_cost(d, p, mode, provider)
  local bytes, flops = d.cost(p, mode)
  for _, f in ipairs { { 'bytes', bytes }, { 'flops', flops } } do
    if f[2] ~= nil and not (finite(f[2]) and f[2] >= 0) then
      M.bad_return(d, 'cost', f[1], f[2], 'nil or a finite number >= 0', p, provider, mode)
    end
  end
  return bytes, flops
end

-- record(point, provider, mode): nil or {timed = text, execution = table, annotations = table}.
function M.call_record(d, p, provider, mode)
  local v = d.record(p, provider, mode)
  if v == nil then return {} end
  if type(v) ~= 'table' then
    M.bad_return(d, 'record', nil, v, 'nil or a table {timed, execution, annotations}', p, provider, mode)
  end
  if v.timed ~= nil and type(v.timed) ~= 'string' then
    M.bad_return(d, 'record', 'timed', v.timed, 'words saying what the function does', p, provider, mode)
  end
  for _, f in ipairs { 'execution', 'annotations' } do
    if v[f] ~= nil and type(v[f]) ~= 'table' then M.bad_return(d, 'record', f, v[f], 'a table', p, provider, mode) end
  end
  return v
end

-- The bytes and flops of one mode at a point: the declaration's cost, else the registry's model.
function M.cost_of(d, p, mode)
  if d.cost then return M.call_cost(d, p, mode) end
  local k = kernels.kernel(d.name)
  if k and k.cost then return k.cost(p.params, p.dtype, mode) end
  return nil
end

-- The estimated bytes of a whole point: every provider times every mode.
function M.point_cost(d, p, o)
  local bytes = 0
  for _, mode in ipairs(o.modes) do bytes = bytes + (M.cost_of(d, p, mode) or 0) end
  return bytes * #o.providers
end

local WRONG = {}
WRONG.__index = WRONG
WRONG.__tostring = function(e) return e.message end
local WRONG_STATUSES = { incorrect_numerical = true, incorrect_shape = true, incorrect_dtype = true }

-- suite.wrong_result: raised by a check when the provider's result is wrong.
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
function M.failure_of(err)
  if getmetatable(err) == WRONG then return err.status, err.message end
  return 'runtime_error', tostring(err)
end

return M
