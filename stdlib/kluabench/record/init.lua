--- kernelindex.dev/v1alpha1 record bundles, one per measured session, built only from the facts given (the harness
-- decides status, throughput and noise). docs/RECORDS.md describes every field and the digest recipe.
local core = require 'kluabench.core'
local args = require 'kluabench.util.args'
local json = require 'kluabench.util.json'
local kernels = require 'kluabench.kernels'
local names = require 'kluabench.record.names'
local operation = require 'kluabench.record.operation'
local implementation = require 'kluabench.record.implementation'
local evidence = require 'kluabench.record.evidence'
local env = require 'kluabench.record.env'
local stats = require 'kluabench.stats'
local do_bench = require 'kluabench.measure.do_bench'

local M = {}

M.API_VERSION = 'kernelindex.dev/v1alpha1'

--- The statuses a run may have (the BenchmarkRun schema's enum): readers trust a status only from this list.
M.STATUSES = { 'passed', 'incorrect_shape', 'incorrect_dtype', 'incorrect_numerical', 'compile_error', 'runtime_error',
  'timeout', 'resource_exceeded', 'invalid_reference', 'policy_violation', 'suspected_reward_hack',
  'incomplete_evidence', 'revoked' }

--- The documents of a bundle and their kinds, in the order they are written.
M.MEMBERS = {
  { doc = 'run', kind = 'BenchmarkRun' }, { doc = 'protocol', kind = 'BenchmarkProtocol' },
  { doc = 'environment', kind = 'ExecutionEnvironment' }, { doc = 'workload', kind = 'WorkloadCase' },
  { doc = 'implementation', kind = 'ImplementationRevision' }, { doc = 'operation', kind = 'OperationSpec' },
  { doc = 'project', kind = 'SoftwareProject', optional = true },
}

--- The four digested documents, in the order the run lists their digests.
M.DIGESTS = {
  { doc = 'protocol', field = 'protocolDigest' }, { doc = 'workload', field = 'workloadDigest' },
  { doc = 'environment', field = 'environmentDigest' }, { doc = 'implementation', field = 'implementationDigest' },
}

--- The links to the operation: the workload's and the implementation's digest of it.
M.OPERATION_LINKS = {
  { doc = 'workload', path = { 'operationSpecDigest' }, field = 'workload.spec.operationSpecDigest' },
  { doc = 'implementation', path = { 'operation', 'specDigest' }, field = 'implementation.spec.operation.specDigest' },
}

--- What a mode times, in words (for protocol notes and titles).
M.MODE_TEXT = { forward = 'the forward pass', backward = 'the backward pass',
  full = 'the forward pass followed by the backward pass' }

--- What records know about kernels, by kernel name (the kernel registry, kluabench.kernels).
M.KERNELS = kernels.KERNELS

local function finite(v) return type(v) == 'number' and v == v and v > -math.huge and v < math.huge end

--- A document {apiVersion = "kernelindex.dev/v1alpha1", kind, metadata, spec}.
-- @signature record.document(kind, spec [, metadata]) -> document
-- @example local doc = record.document("SoftwareProject", {name = "mine"}, {name = "mine"})
function M.document(kind, spec, metadata)
  args.check('record.document', 1, kind, 'string', 'kind string')
  args.check('record.document', 2, spec, 'table', 'spec table')
  return { kind = kind, spec = spec, metadata = metadata or json.object(), apiVersion = M.API_VERSION }
end

--- The digest of a document: "sha256:" .. hex(SHA-256(JCS({apiVersion, kind, spec}))).
-- @signature record.digest(doc) -> "sha256:<hex>"
-- @example print(record.digest(record.document("SoftwareProject", {name = "mine"}, {name = "mine"})))
function M.digest(doc)
  if type(doc) ~= 'table' or type(doc.spec) ~= 'table' then
    error("bad argument #1 to 'digest' (document with a spec table expected)", 2)
  end
  return 'sha256:' .. core.sha256(core.jcs.encode { apiVersion = doc.apiVersion, kind = doc.kind, spec = doc.spec })
end

--- Computes the four digests of a bundle into run.spec.
-- @signature record.seal(bundle) -> bundle
-- @example
--   local b = {run = record.document("BenchmarkRun", {}), protocol = record.document("BenchmarkProtocol", {}),
--     environment = record.document("ExecutionEnvironment", {}), workload = record.document("WorkloadCase", {}),
--     implementation = record.document("ImplementationRevision", {})}
--   print(record.seal(b).run.spec.protocolDigest)
function M.seal(bundle)
  args.check('record.seal', 1, bundle, 'table', 'bundle')
  for _, d in ipairs(M.DIGESTS) do
    local doc = bundle[d.doc]
    if type(doc) ~= 'table' then error("bad argument #1 to 'seal' (bundle has no " .. d.doc .. ' document)', 2) end
    bundle.run.spec[d.field] = M.digest(doc)
  end
  return bundle
end

--- The current UTC time as fields, with milliseconds.
-- @signature record.now() -> time fields
-- @example print(record.now().year)
function M.now() return names.utc(core.time_ns() / 1e9) end

--- Rounds to the nearest integer, halves away from zero.
-- @signature record.round(x) -> integer
-- @example print(record.round(2.5)) --> 3
function M.round(x)
  args.check('record.round', 1, x, 'number', 'number')
  local r = x >= 0 and math.floor(x + 0.5) or -math.floor(-x + 0.5)
  return math.tointeger(r) or r
end

--- The statistic name of a quantile: 0.2 -> "p20", 0.999 -> "p99_9".
-- @signature record.quantile_name(q) -> text
-- @example print(record.quantile_name(0.2)) --> p20
function M.quantile_name(q)
  args.check('record.quantile_name', 1, q, 'number', 'quantile')
  return (('p' .. string.format('%g', q * 100)):gsub('%.', '_'))
end

--- The sourceNative metric name of a quantile: 0.2 -> "ms_20".
-- @signature record.metric_name(q [, unit]) -> text
-- @example print(record.metric_name(0.5)) --> ms_50
function M.metric_name(q, unit)
  args.check('record.metric_name', 1, q, 'number', 'quantile')
  args.check('record.metric_name', 2, unit, 'string|nil', 'unit')
  return (((unit or 'ms') .. '_' .. string.format('%g', q * 100)):gsub('%.', '_'))
end

--- A copy of a value with only what JSON carries (no functions, userdata, non-finite numbers, odd keys).
-- @signature record.json_safe(v) -> copy | nil
-- @example print(kb.jcs.encode(record.json_safe({a = 1, f = print, x = 0 / 0})))
function M.json_safe(v, depth)
  depth = depth or 0
  local t = type(v)
  if t == 'string' or t == 'boolean' then return v end
  if t == 'number' then return finite(v) and v or nil end
  if t ~= 'table' or depth >= 16 then return nil end
  local mt = getmetatable(v)
  if mt then return (type(mt.__name) == 'string' and mt.__name:match('^kluabench%.jcs')) and v or nil end
  local c = {}
  for k, x in pairs(v) do
    if type(k) == 'string' or math.type(k) == 'integer' then c[k] = M.json_safe(x, depth + 1) end
  end
  return pcall(json.table_kind, c) and c or nil
end

-- The checkout this stdlib belongs to, for kernel sources not built into the binary.
local ROOT = debug.getinfo(1, 'S').source:match('^@(.*)/stdlib/kluabench/record/[^/]*$') or '.'

--- SHA-256 of a kernel's source files: the binary's (kb.kernel_sources), else the checkout's; nil if none.
-- @signature record.kernel_sources(kernel [, files]) -> {path = "sha256:<hex>"} | nil
-- @example for path, d in pairs(record.kernel_sources("llama4_rope") or {}) do print(path, d) end
function M.kernel_sources(kernel, files)
  args.check('record.kernel_sources', 1, kernel, 'string', 'kernel name')
  args.check('record.kernel_sources', 2, files, 'table|nil', 'list of files')
  files = files or (M.KERNELS[kernel] and M.KERNELS[kernel].sources)
  if not files then return nil end
  local built, out = core.kernel_sources(), {}
  for _, path in ipairs(files) do
    local hex = built[path]
    if hex then
      out[path] = hex:match('^sha256:') and hex or ('sha256:' .. hex)
    else
      local ok, h = pcall(core.sha256_file, ROOT .. '/' .. path)
      if ok and type(h) == 'string' then out[path] = 'sha256:' .. h end
    end
  end
  return next(out) and out or nil
end

--- A kernel's title for people; the name when none is known.
-- @signature record.kernel_title(kernel) -> text
-- @example print(record.kernel_title("llama4_rope"))
function M.kernel_title(kernel)
  args.check('record.kernel_title', 1, kernel, 'string', 'kernel name')
  return kernels.title(kernel)
end

--- field -> {metric, unit, statistic, integer}: what each figure of a run is called in the record.
M.MEASUREMENTS = {
  stdev_ns = { metric = 'latency', unit = 'ns', statistic = 'stdev', integer = true },
  gbps = { metric = 'throughput', unit = 'gb_per_s', statistic = 'median' },
  tflops = { metric = 'compute', unit = 'tflop_per_s', statistic = 'median' },
  copy_gbps = { metric = 'copy_ceiling', unit = 'gb_per_s', statistic = 'median' },
  pct_copy = { metric = 'copy_ceiling_share', unit = 'percent', statistic = 'median' },
  floor_ns = { metric = 'roofline_floor', unit = 'ns', statistic = 'model', integer = true },
  pct_floor = { metric = 'roofline_share', unit = 'percent', statistic = 'median' },
  bytes = { metric = 'traffic', unit = 'byte', statistic = 'model', integer = true },
  flops = { metric = 'work', unit = 'flop', statistic = 'model', integer = true },
  session = { metric = 'session', unit = 'index', statistic = 'value', integer = true },
  sessions = { metric = 'sessions', unit = 'count', statistic = 'value', integer = true },
  noise_sd = { metric = 'session_noise', unit = 'log_sd', statistic = 'value' },
  implausible = { metric = 'implausible', unit = 'flag', statistic = 'value', integer = true },
  rel_l2 = { metric = 'rel_l2_error', unit = 'ratio', statistic = 'maximum' },
  sm_mhz = { metric = 'sm_clock', unit = 'mhz', statistic = 'median' },
  energy_j = { metric = 'energy', unit = 'j', statistic = 'median' },
  energy_j_min = { metric = 'energy', unit = 'j', statistic = 'minimum' },
  energy_j_max = { metric = 'energy', unit = 'j', statistic = 'maximum' },
  power_w = { metric = 'power', unit = 'w', statistic = 'median' },
}
local ORDER = { 'stdev_ns', 'gbps', 'tflops', 'copy_gbps', 'pct_copy', 'floor_ns', 'pct_floor',
  'bytes', 'flops', 'session', 'sessions', 'noise_sd', 'implausible', 'rel_l2', 'sm_mhz', 'energy_j', 'energy_j_min',
  'energy_j_max', 'power_w' }
local FIELD_OF = {}
for field, m in pairs(M.MEASUREMENTS) do FIELD_OF[m.metric .. '|' .. m.unit .. '|' .. m.statistic] = field end

--- The quantile a figure's field name holds ("p20_ns" -> 0.2, "p99_9_ns" -> 0.999), or nil: every quantile a
-- protocol records (measure.QUANTILES) is a latency measurement of its own, a field of sessions and points.
-- @signature record.quantile_of(field) -> q | nil
-- @example print(record.quantile_of("p99_ns")) --> 0.99
function M.quantile_of(field)
  local int, frac = tostring(field):match('^p(%d%d?)_?(%d*)_ns$')
  return int and tonumber('0.' .. string.format('%02d', tonumber(int)) .. frac) or nil
end

--- The measurements[] list of a table of figures (field -> number; true counts as 1), then extra.
-- @signature record.measurement_list(fields [, extra]) -> list
-- @example print(#record.measurement_list({gbps = 812.5, bytes = 2^20}))
function M.measurement_list(fields, extra)
  args.check('record.measurement_list', 1, fields, 'table', 'table of fields')
  args.check('record.measurement_list', 2, extra, 'table|nil', 'list of measurements')
  local out, qs = {}, {}
  for f, v in pairs(fields) do if M.quantile_of(f) and finite(v) then qs[#qs + 1] = f end end
  table.sort(qs, function(a, b) return M.quantile_of(a) < M.quantile_of(b) end)
  for _, f in ipairs(qs) do
    out[#out + 1] = { metric = 'latency', unit = 'ns', statistic = f:sub(1, -4), value = M.round(fields[f]) }
  end
  for _, f in ipairs(ORDER) do
    local v = fields[f]
    if v == true then v = 1 end
    if finite(v) then
      local m = M.MEASUREMENTS[f]
      if m.integer then v = M.round(v) end
      out[#out + 1] = { metric = m.metric, unit = m.unit, statistic = m.statistic, value = v }
    end
  end
  for _, m in ipairs(extra or {}) do out[#out + 1] = m end
  return out
end

--- The figures of a measurements[] list by field name, and the entries no field names.
-- @signature record.measurement_fields(list) -> fields, others
-- @example
--   print(record.measurement_fields({{metric = "throughput", unit = "gb_per_s", statistic = "median", value = 9}}).gbps)
function M.measurement_fields(list)
  local out, others = {}, {}
  for _, m in ipairs(type(list) == 'table' and list or {}) do
    if type(m) == 'table' then
      local f = FIELD_OF[tostring(m.metric) .. '|' .. tostring(m.unit) .. '|' .. tostring(m.statistic)]
      if not f and m.metric == 'latency' and m.unit == 'ns' and M.quantile_of(tostring(m.statistic) .. '_ns') then
        f = m.statistic .. '_ns'
      end
      if f and finite(m.value) then out[f] = m.value else others[#others + 1] = m end
    end
  end
  return out, others
end

-- A name kernelindex accepts as a token: lowercase, [a-z0-9_], a letter first.
local function token(s)
  local t = tostring(s):lower():gsub('[^a-z0-9_]', '_')
  if not t:match('^[a-z]') then t = 't_' .. t end
  return t
end

--- The operation of a benchmark that declares none: its tensors, in place (else one opaque input).
-- @signature record.describe_operation(kernel, dtype [, tensors]) -> description
-- @example print(record.describe_operation("copy", "f32", {src = kb.zeros({4}, "f32", "cpu")}).inputs[1].shape[1])
function M.describe_operation(kernel, dtype, tensors)
  args.check('describe_operation', 1, kernel, 'string', 'kernel name')
  local family = names.kebab(kernel)
  if family == '' then family = 'kernel' end
  local tok = dtype and operation.dtype_token(dtype) or 'opaque'
  local inputs, shapes, keys = {}, {}, {}
  for name, t in pairs(tensors or {}) do
    if type(name) == 'string' and type(t) ~= 'function' then keys[#keys + 1] = name end
  end
  table.sort(keys)
  for _, name in ipairs(keys) do
    local t, n = tensors[name], token(name)
    local shape = {}
    for i = 1, #t.shape do shape[i] = n .. '_d' .. (i - 1) end
    local td = operation.dtype_token(t.dtype)
    inputs[#inputs + 1] = { name = n, shape = shape, dtype = td == tok and 'cfg' or td }
    shapes[n] = { shape = json.array(t.shape), dtype = td }
  end
  local described = #inputs > 0
  if not described then inputs = { { name = 'inputs', scalar = tok } } end
  return {
    name = 'kluabench-' .. family, family = family:sub(1, 100), title = M.kernel_title(kernel),
    description = described and ('The tensors the benchmark\'s setup makes, worked on in place by '
      .. 'the timed function (the benchmark declares no operation of its own).')
      or 'An operation the benchmark does not describe (it declares no operation and no tensors).',
    inputs = inputs, outputs = described and inputs or { { name = 'outputs', scalar = tok } },
    mutation = described and 'in_place' or 'none', tensors = described and shapes or nil,
  }
end

-- kernelindex's own workload (kernels' `kernelindex` entry) when the point is one it shares.
local function shared(kernel, params, dtype)
  local k = M.KERNELS[kernel]
  local binding = k and k.kernelindex and k.kernelindex.bind(params or {}, dtype)
  return binding and k.kernelindex, binding
end

--- The order of a case key's words: nil (sorted, kernelindex's) for a shared workload, else o.axis_order.
-- @signature record.case_order{kernel, parameters, dtype [, operation, axis_order]} -> list | nil
-- @example
--   print(record.case_order{kernel = "llama4_rope", dtype = "bf16", axis_order = {"seq", "hidden"},
--     parameters = {hidden = 512, seq = 2048, q_heads = 32, kv_heads = 8}}) --> nil
function M.case_order(o)
  if type(o) ~= 'table' or type(o.kernel) ~= 'string' then
    error("bad argument #1 to 'case_order' (table with a kernel string expected, got " .. type(o) .. ')', 2)
  end
  if o.axis_order ~= nil and type(o.axis_order) ~= 'table' then
    error("bad argument #1 to 'case_order' (field 'axis_order' must be a list of axis names, got "
      .. type(o.axis_order) .. ')', 2)
  end
  if o.operation == nil and shared(o.kernel, o.parameters, o.dtype) then return nil end
  return o.axis_order
end

--- Whether a point lands on a workload kernelindex shares with another tool (its own operation).
-- @signature record.is_shared(kernel, parameters, dtype) -> boolean
-- @example print(record.is_shared("rope", {hidden = 512, seq = 2048, q_heads = 32, kv_heads = 8}, "bf16")) --> true
function M.is_shared(kernel, parameters, dtype) return shared(kernel, parameters, dtype) ~= nil end

-- The case_order of o as tokens, or nil.
local function case_tokens(o)
  local order
  for i, k in ipairs(M.case_order(o) or {}) do order = order or {}; order[i] = token(k) end
  return order
end

--- The WorkloadCase and OperationSpec of a point (default: kernelindex's own, else describe_operation).
-- @signature record.workload{kernel, parameters, dtype [, operation, tensors, axis_order]} -> workload, operation
-- @example
--   local w, op = record.workload{kernel = "llama4_rope", dtype = "bf16",
--     parameters = {hidden = 512, seq = 2048, q_heads = 32, kv_heads = 8}}
--   print(w.metadata.name, op.metadata.name)
function M.workload(o)
  if type(o) ~= 'table' or type(o.kernel) ~= 'string' then
    error("bad argument #1 to 'workload' (table with a kernel string expected)", 2)
  end
  local params, axes = o.parameters or {}, {}
  for k, v in pairs(params) do
    if math.type(v) == 'integer' or (type(v) == 'number' and v == math.floor(v) and math.abs(v) < 2 ^ 53) then
      axes[token(k)] = math.tointeger(v)
    else
      error(string.format("bad argument #1 to 'workload' (parameter '%s' must be an integer, got %s: kernelindex's "
        .. 'workload axes are integers)', tostring(k), tostring(v)), 2)
    end
  end
  if o.operation == nil then
    local ki, binding = shared(o.kernel, params, o.dtype)
    if ki then
      local op = operation.document(ki.operation)
      return operation.workload(ki.operation, M.digest(op), binding), op
    end
  end
  local desc = o.operation or M.describe_operation(o.kernel, o.dtype, o.tensors)
  local op = operation.document(desc)
  local binding = { axes = axes, dtype = o.dtype and operation.dtype_token(o.dtype) or 'opaque', tensors = desc.tensors,
    order = case_tokens(o) }
  return operation.workload(desc, M.digest(op), binding), op
end

--- The ImplementationRevision of a built-in provider of the kernel registry, or nil when it has none.
-- @signature record.builtin_implementation{kernel, provider, backend, operation_digest [, mode]} -> document | nil
-- @example
--   local w, op = record.workload{kernel = "rope", dtype = "bf16", parameters = {hidden = 512, seq = 64, q_heads = 8, kv_heads = 8}}
--   print(record.builtin_implementation{kernel = "rope", provider = "fused", backend = "cpu",
--     operation_digest = record.digest(op)}.metadata.name)
function M.builtin_implementation(o)
  local k = M.KERNELS[o.kernel]
  local entry = k and k.implementations and k.implementations[o.provider]
  entry = entry and entry[o.backend]
  if not entry then return nil end
  local symbol = o.mode and entry.modes and entry.modes[o.mode] or entry.symbol
  return implementation.builtin { operation_digest = o.operation_digest, provider = o.provider, kernel = o.kernel,
    backend = o.backend, symbol = symbol, path = entry.path, language = entry.language,
    sources = M.kernel_sources(o.kernel, entry.sources or k.sources),
    dtypes = o.dtypes or entry.dtypes or k.dtypes, layouts = entry.layouts or k.layouts, build = o.build,
    arch = o.arch, source = o.source }
end

--- implementation.user, operation_digest computed from o.operation (or the shared one) when not given.
-- @signature record.user_implementation{provider, kernel, info, operation_digest | operation, ...} -> document
-- @example
--   local k = kb.cuda.compile("extern \"C\" __global__ void scale(float *x) {}", {name = "scale", cache = false})
--   print(record.user_implementation{provider = "mine", kernel = "llama4_rope", info = k:info()}.kind)
function M.user_implementation(o)
  args.check('user_implementation', 1, o, 'table', 'table')
  if o.operation_digest == nil then
    local op, k = o.operation, M.KERNELS[o.kernel]
    if op == nil and k and k.kernelindex then op = operation.document(k.kernelindex.operation) end
    if type(op) ~= 'table' then
      error("bad argument #1 to 'user_implementation' (field 'operation_digest' or 'operation' needed: the "
        .. 'OperationSpec the kernel implements)', 2)
    end
    local copy = {}
    for key, v in pairs(o) do copy[key] = v end
    copy.operation_digest = M.digest(op)
    o = copy
  end
  return implementation.user(o)
end

local function correctness_of(c)
  if type(c) ~= 'table' then return nil end
  local out = { comparator = type(c.comparator) == 'string' and c.comparator or 'max_abs_rel_l2' }
  if finite(c.maxAbsDiff) and c.maxAbsDiff >= 0 then out.maximumAbsoluteError = c.maxAbsDiff end
  if finite(c.maxRelDiff) and c.maxRelDiff >= 0 then out.maximumRelativeError = c.maxRelDiff end
  if finite(c.matchedRatio) and c.matchedRatio >= 0 and c.matchedRatio <= 1 then out.matchedRatio = c.matchedRatio end
  return out
end

--- A run's metadata.name from its parts: a slug of at most 200 characters, cut with a digest suffix.
-- @signature record.run_name(...) -> name
-- @example print(record.run_name("kluabench", "rope", "forward", "fused"))
function M.run_name(...)
  local parts = {}
  for i = 1, select('#', ...) do
    local p = select(i, ...)
    if p ~= nil and p ~= '' then parts[#parts + 1] = tostring(p) end
  end
  local full = names.slug(table.concat(parts, '-'))
  if #full <= 200 then return full end
  return (full:sub(1, 186):gsub('%-+$', '')) .. '-' .. core.sha256(full):sub(1, 12)
end

--- The BenchmarkRun document without digests (record.seal adds them); optional: status, median_ns,
-- fields, latency, samples, metrics, correctness, session, labels, harness, metric, extra_measurements.
-- @signature record.run_document{kernel, mode, provider, gpu, case, time, ...} -> document
-- @example
--   print(record.run_document{kernel = "k", mode = "forward", provider = "p", gpu = "cpu", case = "n8-fp32",
--     time = record.now(), median_ns = 1000}.spec.timing.latencyNs.median)
function M.run_document(o)
  for _, f in ipairs { 'kernel', 'mode', 'provider', 'gpu', 'case' } do
    if type(o[f]) ~= 'string' then
      error(string.format("bad argument #1 to 'run_document' (field '%s' must be a string, got %s)", f, type(o[f])), 2)
    end
  end
  local session = o.session or {}
  local stamp = names.time_id(o.time) .. string.format('-%03d', o.time.ms or 0)
  local external = table.concat({ o.kernel, o.mode, o.provider, names.kebab(o.gpu), o.case, stamp }, '/')
  if (session.count or 1) > 1 then external = external .. string.format('/session-%d-of-%d', session.index, session.count) end
  local memory = o.metric == 'memory'
  if memory then external = external .. '/memory' end
  local spec = {
    status = o.status or 'passed', observedAt = names.iso8601(o.time),
    measurements = M.measurement_list(o.fields or {}, o.extra_measurements),
    sourceNative = { source = 'kluabench', benchmark = o.kernel .. '/' .. o.mode .. (memory and '/memory' or ''),
      externalId = external, metrics = o.metrics and next(o.metrics) and o.metrics or nil },
    correctness = correctness_of(o.correctness),
  }
  if o.median_ns then
    local l = { median = o.median_ns }
    for k, v in pairs(o.latency or {}) do l[k] = v end
    spec.timing = { primaryStatistic = 'median', latencyNs = l, samples = o.samples }
  end
  if #spec.measurements == 0 then spec.measurements = nil end
  if o.harness then spec.evidence = { harness = o.harness } end
  local labels = {}
  for k, v in pairs(o.labels or {}) do labels[k] = tostring(v):sub(1, 200) end
  return M.document('BenchmarkRun', spec, {
    name = M.run_name('kluabench', o.kernel, o.mode, o.provider, names.kebab(o.gpu), o.case, stamp,
      (session.count or 1) > 1 and string.format('s%d-of-%d', session.index, session.count) or nil,
      memory and 'memory' or nil),
    title = (M.kernel_title(o.kernel) .. ' · ' .. o.provider .. ' · ' .. o.mode .. (memory and ' · memory' or ''))
      :sub(1, 200),
    labels = next(labels) and labels or nil,
  })
end

local MEASUREMENT_FIELDS = { timer = true, synchronization = true, compileIncluded = true, setupIncluded = true,
  warmupIterations = true, warmupDuration = true, measuredIterations = true, samples = true,
  inputRegeneration = true, outlierPolicy = true, primaryStatistic = true }
local SPEC_FIELDS = { harness = true, measurement = true, correctness = true, devicePolicy = true, comparability = true }
local NOTES_MAX = 1000

-- Notes of at most NOTES_MAX characters (the schema's limit); a cut ends with the full text's digest.
local function fit_notes(notes)
  if utf8.len(notes) and utf8.len(notes) <= NOTES_MAX then return notes end
  local tail = ' [sha256 of the full notes: ' .. core.sha256(notes):sub(1, 16) .. ']'
  local cut = notes:sub(1, NOTES_MAX - #tail)
  while not utf8.len(cut) do cut = cut:sub(1, -2) end
  return cut .. tail
end

--- A BenchmarkProtocol spec of a protocol's spec(): the schema's fields stay, warmupMs becomes
-- warmupDuration (ns), every other parameter goes into the digested notes ("Parameters: {...}").
-- @signature record.protocol_spec(spec) -> spec
-- @example print(record.protocol_spec({measurement = {timer = "cuda_events", repMs = 100}}).comparability.notes)
function M.protocol_spec(spec)
  args.check('protocol_spec', 1, spec, 'table', 'table')
  local out, extra = {}, {}
  for k, v in pairs(spec) do if SPEC_FIELDS[k] then out[k] = v else extra[k] = v end end
  local m = {}
  for k, v in pairs(type(spec.measurement) == 'table' and spec.measurement or {}) do
    if MEASUREMENT_FIELDS[k] then
      m[k] = v
    elseif k == 'warmupMs' and finite(v) and v >= 0 then
      m.warmupDuration = M.round(v * 1e6)
    else
      extra[k] = v
    end
  end
  m.timer, m.primaryStatistic = m.timer or 'host_monotonic', m.primaryStatistic or 'median'
  out.measurement = m
  out.harness = type(out.harness) == 'table' and out.harness or { name = 'kluabench' }
  local c = type(out.comparability) == 'table' and out.comparability or {}
  local notes = c.notes or ''
  if next(extra) then
    local ok, text = pcall(core.jcs.encode, extra)
    if ok then notes = notes .. (notes ~= '' and ' ' or '') .. 'Parameters: ' .. text end
  end
  out.comparability = { family = c.family or 'kluabench', notes = notes ~= '' and fit_notes(notes) or nil }
  return out
end

--- The BenchmarkProtocol document of a protocol for a mode. info: mode, timed (words), backend, timer.
-- @signature record.protocol_document(protocol [, info]) -> document
-- @example print(record.protocol_document(kb.do_bench.do_bench_protocol(), {mode = "forward"}).metadata.name)
function M.protocol_document(protocol, info)
  args.check('record.protocol_document', 1, protocol, 'table', 'protocol (measure.protocol)')
  args.check('record.protocol_document', 2, info, 'table|nil', 'table of facts')
  info = info or {}
  local mode = info.mode
  local timed = info.timed or M.MODE_TEXT[mode] or ('the ' .. tostring(mode) .. ' pass')
  local spec = M.protocol_spec(protocol:spec { timed = timed, backend = info.backend, timer = info.timer })
  return M.document('BenchmarkProtocol', spec, {
    name = names.dns_name('kluabench', protocol.name, mode, info.backend == 'cpu' and 'cpu' or nil),
    title = ('kluabench ' .. (protocol.title or protocol.name) .. (mode and (' · ' .. mode .. ' pass') or '')
      .. (info.backend == 'cpu' and ' (cpu backend)' or '')):sub(1, 200),
  })
end

local function text(v) return (type(v) == 'string' or type(v) == 'number') and tostring(v) or nil end

local function split(s, sep)
  local out = {}
  for part in ((text(s) or '') .. sep):gmatch('([^' .. sep .. ']*)' .. sep) do out[#out + 1] = part end
  return out
end

--- What a run's sourceNative names: kernel, mode, metric, provider, id (the case key); nil for what it lacks.
-- @signature record.names_of(bundle) -> {kernel, mode, metric, provider, id}
-- @example
--   print(record.names_of({run = {spec = {sourceNative = {benchmark = "k/forward", externalId = "k/forward/p/gpu/n8-fp32/t"}}}}).id)
function M.names_of(b)
  local sn = json.get(b, 'run', 'spec', 'sourceNative')
  sn = type(sn) == 'table' and sn or {}
  local bench, ext = split(sn.benchmark, '/'), split(sn.externalId, '/')
  return { kernel = bench[1] ~= '' and bench[1] or nil, mode = bench[2], metric = bench[3] == 'memory' and 'memory' or 'latency',
    provider = ext[3] ~= '' and ext[3] or nil, id = ext[5] ~= '' and ext[5] or nil }
end

--- A label for people of a bundle's point ("llama4_rope forward hidden512-...-bf16") and its provider.
-- @signature record.label_of(bundle) -> label, provider
-- @example
--   print(record.label_of({run = {spec = {sourceNative = {benchmark = "k/forward", externalId = "k/forward/p/gpu/n8-fp32/t"}}}}))
function M.label_of(b)
  local n = M.names_of(b)
  -- a benchmark without "/MODE" names no mode: the label has what there is (never a hole in the list)
  local parts = { n.kernel or json.get(b, 'workload', 'metadata', 'name') or '?' }
  if n.mode then parts[#parts + 1] = n.mode end
  if n.id then parts[#parts + 1] = n.id end
  return table.concat(parts, ' '), n.provider or '?'
end

-- What the protocol reports of how it ran (result.used), camelCase, for the evidence.
local function execution_of(result)
  local e = {}
  for k, v in pairs(result.used or {}) do
    if type(v) ~= 'function' and k ~= 'quantiles' and k ~= 'return_mode' then e[(k:gsub('_(%w)', string.upper))] = v end
  end
  return e
end

--- {gbps, tflops} of a median from the workload's bytes and flops alone (no ceiling); nil without either.
-- @signature record.throughput(bytes, flops, median_ms) -> {gbps, tflops} | nil
-- @example print(record.throughput(2^30, nil, 1.0).gbps)
function M.throughput(bytes, flops, median_ms)
  if not (finite(median_ms) and median_ms > 0) or (type(bytes) ~= 'number' and type(flops) ~= 'number') then
    return nil
  end
  return { gbps = bytes and bytes / (median_ms * 1e6), tflops = flops and flops / (median_ms * 1e9) }
end

-- {repository, commit} for evidence.harness: KLUABENCH_REPOSITORY is an https URL, the build a clean commit.
local warned_repository
local function harness_ref()
  local commit, repo = tostring(core.git_commit or ''), os.getenv('KLUABENCH_REPOSITORY')
  if repo and not (repo:match('^https://[^/%s?#]+') and not repo:find('%s')) then
    if warned_repository ~= repo then
      warned_repository = repo
      io.stderr:write(string.format("kluabench: KLUABENCH_REPOSITORY '%s' is not an https URL: the records name "
        .. 'no evidence.harness (the commit is still their kluabench_commit label)\n', args.printable(repo, 200)))
    end
    return nil
  end
  if repo and commit:match('^%x+$') and #commit == 40 then return { repository = repo, commit = commit } end
  return nil
end

--- One sealed bundle of a measured session (result: protocol:run's), its evidence entry attached; every figure and
-- verdict is the caller's.
--
-- Optional: parameters, dtype, protocol, environment, operation, tensors, workload and operation_document (both: used
-- as they are), implementation, builtin, timed, time, labels, annotations, check, status, reasons, execution, bytes,
-- flops, throughput, noise, session {index, count}, keep_samples, axis_order, source (the code's repository URL
-- where git does not say it).
-- @signature record.from_result{kernel, mode, provider, result, ...} -> bundle
-- @example
--   local x = kb.randn({4096}, "f32", 1)
--   local r = kb.do_bench.do_bench_protocol{rep_ms = 5}:run(function() x:add_(1) end)
--   local bundle = record.from_result{kernel = "add", mode = "forward", provider = "add_", dtype = "f32", result = r}
function M.from_result(o)
  args.check('from_result', 1, o, 'table', 'table')
  for _, f in ipairs { 'kernel', 'mode', 'provider' } do
    if type(o[f]) ~= 'string' then
      error(string.format("bad argument #1 to 'from_result' (field '%s' must be a string)", f), 2)
    end
  end
  local result = o.result
  if type(result) ~= 'table' or type(result.samples) ~= 'table' then
    error("bad argument #1 to 'from_result' (field 'result' must be a protocol result)", 2)
  end
  for _, f in ipairs { 'bytes', 'flops' } do
    if o[f] ~= nil and (not finite(o[f]) or o[f] < 0) then
      error(string.format("bad argument #1 to 'from_result' (field '%s' must be a finite number >= 0, got %s)", f,
        tostring(o[f])), 2)
    end
  end
  local protocol = o.protocol or result.protocol
  if not protocol then error("bad argument #1 to 'from_result' (no protocol: give field 'protocol')", 2) end
  local backend = result.backend or core.backend()
  local environment, params = o.environment or env.capture(), o.parameters or {}
  local workload, op = o.workload, o.operation_document
  if not (workload and op) then
    workload, op = M.workload { kernel = o.kernel, parameters = params, dtype = o.dtype, operation = o.operation,
      tensors = o.tensors, axis_order = o.axis_order }
  end
  local od = M.digest(op)
  local impl = o.implementation
    or (o.builtin ~= false and M.builtin_implementation { kernel = o.kernel, provider = o.provider, backend = backend,
      operation_digest = od, mode = o.mode, source = o.source })
    or implementation.script { operation_digest = od, provider = o.provider, kernel = o.kernel,
      arch = (environment.spec.hardware or {}).architecture, dtypes = o.dtype and { o.dtype } or nil,
      source = o.source }
  local bytes, flops, kdesc = o.bytes, o.flops, M.KERNELS[o.kernel]
  if (bytes == nil or flops == nil) and kdesc and kdesc.cost then
    local b, f = kdesc.cost(params, o.dtype and names.dtype_name(o.dtype), o.mode)
    bytes, flops = bytes or b, flops or f
  end
  -- the statistics the protocol computed (stats.describe), for the quantiles it recorded
  local samples, fields, metrics, latency, median_ms = result.samples, {}, {}, {}, nil
  if #samples > 0 then
    local qs = (protocol.params and protocol.params.quantiles) or do_bench.QUANTILES
    local s = result.summary
    local has = type(s) == 'table' and type(s.at) == 'table'
    for _, q in ipairs(qs) do has = has and s.at[q] ~= nil end
    -- a protocol's result holds its summary; only a result made by hand lacks one
    if not has then s = stats.describe(samples, qs) end
    for _, q in ipairs(qs) do
      local v = s.at[q]
      metrics[M.metric_name(q)] = v
      if q ~= 0.5 then fields[M.quantile_name(q) .. '_ns'] = v * 1e6 end
    end
    median_ms = s.median
    if finite(s.mean) then latency.mean = M.round(s.mean * 1e6) end
    if finite(s.min) then latency.minimum = M.round(s.min * 1e6) end
    if finite(s.max) then latency.maximum = M.round(s.max * 1e6) end
    if finite(s.stdev) then fields.stdev_ns = s.stdev * 1e6 end
    local ci = s.ci95
    if ci and finite(ci[1]) and finite(ci[2]) and ci[1] >= 0 then
      latency.confidence95 = { M.round(ci[1] * 1e6), M.round(ci[2] * 1e6) }
    end
  end
  local throughput = o.throughput
  if throughput == nil and median_ms then throughput = M.throughput(bytes, flops, median_ms) end
  if throughput then
    fields.gbps, fields.tflops, fields.pct_copy = throughput.gbps, throughput.tflops, throughput.percentOfCopy
    fields.copy_gbps, fields.pct_floor = throughput.copyCeilingGbps, throughput.percentOfFloor
    fields.floor_ns = throughput.floorMs and throughput.floorMs * 1e6
    fields.implausible = throughput.implausible and 1 or nil
  end
  fields.bytes, fields.flops = bytes, flops
  local session = o.session or { index = 1, count = 1 }
  fields.session, fields.sessions = session.index, session.count
  local noise = o.noise
  -- a figure measured on this device is a measurement (history reads it); the default only evidence
  fields.noise_sd = noise and noise.scope ~= 'default' and noise.sd or nil
  if o.check and finite(o.check.relL2) then fields.rel_l2 = o.check.relL2 end
  local clocks = type(result.used) == 'table' and result.used.clocks or nil
  if type(clocks) == 'table' and type(clocks.smMhz) == 'table' then fields.sm_mhz = clocks.smMhz.median end
  local en = result.energy
  if type(en) == 'table' and en.available and type(en.joules_per_call) == 'table' then
    fields.energy_j, fields.energy_j_min = en.joules_per_call.median, en.joules_per_call.min
    fields.energy_j_max = en.joules_per_call.max
    fields.power_w = type(en.watts) == 'table' and en.watts.median or nil
    if type(en.sm_mhz) == 'table' and fields.sm_mhz == nil then fields.sm_mhz = en.sm_mhz.median end
  end
  -- a memory run (measure/memory.lua): Liger's figures in MB at the median, p20 and p80
  local mem, extra = result.memory, nil
  if type(mem) == 'table' then
    extra = {}
    for _, q in ipairs { 'median', 'p20', 'p80' } do
      if finite(mem[q]) then extra[#extra + 1] = { metric = 'memory', unit = 'mb', statistic = q, value = mem[q] } end
    end
  end
  -- a latency run whose median is not a positive time measured nothing: never a pass
  local status, reasons = o.status or 'passed', o.reasons
  if status == 'passed' and not mem and not (finite(median_ms) and median_ms > 0) then
    status, reasons = 'runtime_error', { table.unpack(o.reasons or {}) }
    reasons[#reasons + 1] = string.format('the protocol measured a median of %s ms over %d samples: no positive '
      .. 'time, so nothing was measured', tostring(median_ms), #samples)
  end
  local labels = { kluabench_version = core.version, backend = backend, kluabench_commit = core.git_commit }
  for key, v in pairs(o.labels or {}) do labels[key] = v end
  local run = M.run_document {
    kernel = o.kernel, mode = o.mode, provider = o.provider, gpu = env.device_name(environment) or 'unknown',
    case = operation.case_key { axes = workload.spec.axes, dtype = o.dtype and operation.dtype_token(o.dtype) or 'opaque',
      order = case_tokens(o) },
    time = o.time or M.now(), status = status, median_ns = median_ms and M.round(median_ms * 1e6),
    fields = fields, latency = latency, samples = #samples > 0 and #samples or nil, metrics = metrics,
    correctness = o.check, session = session, labels = labels, harness = harness_ref(),
    metric = mem and 'memory' or nil, extra_measurements = extra,
  }
  local bundle = { run = run,
    protocol = M.protocol_document(protocol, { mode = o.mode, timed = o.timed, backend = backend, timer = result.timer }),
    environment = environment, workload = workload, implementation = impl, operation = op, project = o.project,
  }
  M.seal(bundle)
  local execution = execution_of(result)
  local rule = protocol.params and protocol.params.stop
  if type(rule) == 'table' and type(rule.spec) == 'function' then
    local ok, spec = pcall(rule.spec, rule)
    if ok and type(spec) == 'table' then execution.stopping = spec end
  end
  for key, v in pairs(o.execution or {}) do execution[key] = v end
  if en ~= nil then execution.energy = en end
  if mem ~= nil then execution.memory = mem end
  local entry = {
    format = evidence.FORMAT, run = run.spec.sourceNative.externalId, unit = 'ns', samples = json.array {},
    session = session, execution = M.json_safe(execution), check = M.json_safe(o.check),
    throughput = M.json_safe(throughput), sessionNoise = M.json_safe(noise),
    device = M.json_safe(env.device_facts(backend == 'cpu' and core.device_info('cpu') or core.device_info(), backend)),
    harness = { version = core.version and tostring(core.version), commit = core.git_commit },
    annotations = M.json_safe(o.annotations), reasons = reasons and #reasons > 0 and reasons or nil,
  }
  if o.keep_samples ~= false then for i, ms in ipairs(samples) do entry.samples[i] = M.round(ms * 1e6) end end
  evidence.attach(bundle, entry)
  return bundle
end

return M
