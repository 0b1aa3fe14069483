--- kernelindex.dev/v1alpha1 records: one benchmark point is one bundle
--   { run = BenchmarkRun, protocol = BenchmarkProtocol,
--     environment = ExecutionEnvironment, workload = WorkloadCase,
--     implementation = ImplementationRevision, operation = OperationSpec,
--     project = SoftwareProject (where one is named) }
-- Every document is {apiVersion, kind, metadata, spec} and valid against the
-- public JSON Schema of its kind (kluabench.record.schema). The run carries
-- the digests of protocol, workload, environment and implementation; the
-- workload and the implementation carry the operation's. A digest is
-- "sha256:" .. hex(SHA-256(JCS({apiVersion, kind, spec}))), JCS being RFC 8785
-- (kernelindex's recipe: metadata never counts). What the schema has no field
-- for goes into the run's evidence entry (kluabench.record.evidence) and its
-- measurements[] (kluabench.record.measurements). docs/RECORDS.md describes
-- every field and where each figure went.
local json = require 'kluabench.util.json'
local document = require 'kluabench.record.document'
local kernels = require 'kluabench.kernels'
local names = require 'kluabench.record.names'
local operation = require 'kluabench.record.operation'
local implementation = require 'kluabench.record.implementation'
local measurements = require 'kluabench.record.measurements'
local evidence = require 'kluabench.record.evidence'
local schema = require 'kluabench.record.schema'
-- Liger's workloads are kernelindex's; loading it also names Liger's kernels in the registry
local liger = require 'kluabench.liger'

local M = {}
local args = require 'kluabench.util.args'
local printable = require('kluabench.util.args').printable

M.API_VERSION = document.API_VERSION

--- The derived figures of runs' measurements[] (kluabench.record.measurements).
M.measurements = measurements

--- The documents of a bundle and their kinds, in the order they are written.
M.MEMBERS = document.MEMBERS

--- The four digested documents, in the order the run lists their digests.
M.DIGESTS = document.DIGESTS

--- The links to the operation: the workload's and the implementation's digest of it.
M.OPERATION_LINKS = document.OPERATION_LINKS

local function kb() return require 'kluabench.core' end

--- What records know about kernels, by kernel name (the kernel registry, kluabench.kernels).
M.KERNELS = kernels.KERNELS

--- A kernel's title for people ("Llama 4 rotary position embedding"); the name when none is known.
--
-- @signature record.kernel_title(kernel) -> text
-- @example
--   print(record.kernel_title("llama4_rope"))
function M.kernel_title(kernel)
  args.check('record.kernel_title', 1, kernel, 'string', 'kernel name')
  return kernels.title(kernel)
end

--- What a mode times, in words (for protocol notes and titles).
M.MODE_TEXT = {
  forward = 'the forward pass',
  backward = 'the backward pass',
  full = 'the forward pass followed by the backward pass',
}

---------------------------------------------------------------------------
-- Documents and digests
---------------------------------------------------------------------------

--- A document {apiVersion = "kernelindex.dev/v1alpha1", kind, metadata, spec}.
--
-- @signature record.document(kind, spec, metadata) -> document
-- @kind function
-- @example
--   local doc = record.document("SoftwareProject", {name = "mine"}, {name = "mine"})
M.document = document.document

--- The digest of a document: "sha256:" .. hex(SHA-256(JCS({apiVersion, kind, spec}))).
--
-- @signature record.digest(doc) -> "sha256:<hex>"
-- @kind function
-- @example
--   print(record.digest(record.document("SoftwareProject", {name = "mine"}, {name = "mine"})))
M.digest = document.digest

--- Computes the four digests of a bundle into run.spec (the operation links are set when the
-- workload and implementation are made).
--
-- @signature record.seal(bundle) -> bundle
-- @kind function
-- @example
--   local x = kb.randn({4096}, "f32", 1)
--   local r = kb.do_bench.do_bench_protocol{rep_ms = 5}:run(function() x:add_(1) end)
--   local bundle = record.from_result{kernel = "add", mode = "forward", provider = "add_", dtype = "f32", result = r}
--   bundle.environment.spec.software.libraries.cuda = "12.8" -- an edit: environmentDigest is stale
--   print(#record.check(bundle)) --> 1
--   record.seal(bundle)
--   print(#record.check(bundle)) --> 0
M.seal = document.seal

local function get(t, path)
  for _, k in ipairs(path) do
    if type(t) ~= 'table' then return nil end
    t = t[k]
  end
  return t
end

local function recompute(problems, field, doc, recorded, what)
  if type(doc) ~= 'table' or type(doc.spec) ~= 'table' then
    problems[#problems + 1] = { field = field, error = 'missing ' .. what .. ' document or its spec' }
  elseif type(recorded) ~= 'string' then
    problems[#problems + 1] = { field = field, error = field .. ' is missing' }
  else
    local ok, computed = pcall(M.digest, doc)
    if not ok then
      problems[#problems + 1] = { field = field, error = 'cannot hash ' .. what .. ': ' .. tostring(computed) }
    elseif computed ~= recorded then
      problems[#problems + 1] = { field = field, recorded = recorded, computed = computed }
    end
  end
end

--- Recomputes every digest of a decoded bundle (the run's four, the workload's and the
-- implementation's digest of the operation) and checks every document against the schema and
-- field rules of its kind; an empty list when all is well.
--
-- A problem is {field = "protocolDigest", recorded, computed} (a mismatch) or {field, error = why}.
-- opts.schema = false skips the schema checks (digests only).
--
-- @signature record.check(bundle [, opts]) -> problems
-- @example
--   local x = kb.randn({4096}, "f32", 1)
--   local r = kb.do_bench.do_bench_protocol{rep_ms = 5}:run(function() x:add_(1) end)
--   local bundle = record.from_result{kernel = "add", mode = "forward", provider = "add_", dtype = "f32", result = r}
--   for _, p in ipairs(record.check(bundle)) do print(p.field, p.recorded, p.computed or p.error) end
function M.check(bundle, opts)
  local problems = {}
  if type(bundle) ~= 'table' then return { { field = 'bundle', error = 'not a JSON object' } } end
  local run = bundle.run
  if type(run) ~= 'table' or type(run.spec) ~= 'table' then
    return { { field = 'run', error = 'missing run document or run.spec' } }
  end
  for _, d in ipairs(M.DIGESTS) do
    recompute(problems, d.field, bundle[d.doc], run.spec[d.field], d.doc)
  end
  for _, l in ipairs(M.OPERATION_LINKS) do
    if type(bundle[l.doc]) == 'table' then
      recompute(problems, l.field, bundle.operation, get(bundle[l.doc].spec, l.path), 'operation')
    end
  end
  if not (opts and opts.schema == false) then
    for _, m in ipairs(M.MEMBERS) do
      local doc = bundle[m.doc]
      if doc ~= nil or not m.optional then
        if type(doc) == 'table' and doc.kind ~= m.kind then
          problems[#problems + 1] = { field = m.doc, error = string.format('kind %s where %s belongs',
            tostring(doc.kind), m.kind) }
        elseif doc ~= nil then
          for _, p in ipairs(schema.check(doc)) do
            problems[#problems + 1] = { field = m.doc, error = p }
          end
        end
      end
    end
  end
  return problems
end

--- Whether the statistics a run records are those of its raw samples (its evidence entry): the
-- median, p20 and p80 (within 1 ns of rounding) and the sample count. A list of {field, error}.
--
-- @signature record.consistency(bundle, entry) -> problems
-- @example
--   local b = {run = {spec = {timing = {latencyNs = {median = 2000}}}}}
--   for _, p in ipairs(record.consistency(b, {unit = "ns", samples = {1000, 1000, 1000}})) do print(p.field, p.error) end
function M.consistency(bundle, entry)
  args.check('record.consistency', 1, bundle, 'table', 'bundle')
  args.check('record.consistency', 2, entry, 'table|nil', 'evidence entry')
  local problems = {}
  local samples, why = evidence.samples_ms(entry)
  local rs = type(bundle.run) == 'table' and bundle.run.spec or {}
  if not samples then
    if type(entry) == 'table' and type(entry.samples) == 'table' and #entry.samples > 0 then
      problems[1] = { field = 'evidence.samples', error = why }
    end
    return problems
  end
  local stats = require 'kluabench.stats'
  local function check(field, recorded, q)
    if type(recorded) ~= 'number' then return end
    local computed = M.round(stats.quantiles(samples, { q })[1] * 1e6)
    if math.abs(computed - recorded) > 1 then
      problems[#problems + 1] = { field = field, error = string.format('the run records %s ns, its raw samples give %s ns',
        tostring(recorded), tostring(computed)) }
    end
  end
  local timing = type(rs.timing) == 'table' and rs.timing or {}
  check('timing.latencyNs.median', type(timing.latencyNs) == 'table' and timing.latencyNs.median or nil, 0.5)
  local f = measurements.fields(rs.measurements)
  check('measurements p20', f.p20_ns, 0.2)
  check('measurements p80', f.p80_ns, 0.8)
  if timing.samples ~= nil and timing.samples ~= #samples then
    problems[#problems + 1] = { field = 'timing.samples', error = string.format('the run records %s samples, its '
      .. 'evidence holds %d', tostring(timing.samples), #samples) }
  end
  return problems
end

--- The current UTC time as fields (with milliseconds when the engine can tell them).
--
-- @signature record.now() -> time fields
-- @kind function
-- @example
--   print(names.iso8601(record.now()))
M.now = document.now

--- Rounds to the nearest integer, halves away from zero.
--
-- @signature record.round(x) -> integer
-- @kind function
-- @example
--   print(record.round(2.5)) --> 3
M.round = document.round

--- The statistic name of a quantile: 0.2 -> "p20", 0.999 -> "p99_9" (a token: no dots).
--
-- @signature record.quantile_name(q) -> text
-- @example
--   print(record.quantile_name(0.2))
function M.quantile_name(q)
  args.check('record.quantile_name', 1, q, 'number', 'quantile')
  return (('p' .. string.format('%g', q * 100)):gsub('%.', '_'))
end

--- The sourceNative metric name of a quantile: 0.2 -> "ms_20".
--
-- @signature record.metric_name(q [, unit]) -> text
-- @example
--   print(record.metric_name(0.5)) --> ms_50
function M.metric_name(q, unit)
  args.check('record.metric_name', 1, q, 'number', 'quantile')
  args.check('record.metric_name', 2, unit, 'string|nil', 'unit')
  return (((unit or 'ms') .. '_' .. string.format('%g', q * 100)):gsub('%.', '_'))
end

---------------------------------------------------------------------------
-- Operation and workload
---------------------------------------------------------------------------

--- SHA-256 of a kernel's source files ({path = "sha256:<hex>"}): what the binary was built from
-- (kb.kernel_sources) for the files it lists, else the files under the repository (kb.sha256_file).
-- files: the paths (default: the kernel registry's sources of kernel). nil when none is found.
--
-- @signature record.kernel_sources(kernel [, files]) -> {path = "sha256:<hex>"} | nil
-- @kind function
-- @example
--   for path, d in pairs(record.kernel_sources("llama4_rope") or {}) do print(path, d) end
M.kernel_sources = document.kernel_sources

-- A name kernelindex accepts as a token: lowercase, [a-z0-9_], a letter first.
local function token(s)
  local t = tostring(s):lower():gsub('[^a-z0-9_]', '_')
  if not t:match('^[a-z]') then t = 't_' .. t end
  return t
end

--- The operation description kluabench makes when a benchmark declares none: every tensor its setup
-- made is an input and an output (the timed function works on them in place; which ones it writes
-- the harness cannot tell), each dimension an axis of its own ("q_d0"); without tensors, one opaque
-- input and output of the point's dtype.
--
-- @signature record.describe_operation(kernel, dtype [, tensors]) -> description
-- @example
--   local d = record.describe_operation("copy", "f32", {src = kb.zeros({4}, "f32", "cpu")})
--   print(d.inputs[1].name, d.inputs[1].shape[1])
function M.describe_operation(kernel, dtype, tensors)
  if type(kernel) ~= 'string' then
    error("bad argument #1 to 'describe_operation' (kernel name expected, got " .. type(kernel) .. ')', 2)
  end
  local family = names.kebab(kernel)
  if family == '' then family = 'kernel' end
  local tok = dtype and operation.dtype_token(dtype) or 'opaque'
  local inputs, shapes = {}, {}
  local keys = {}
  for name, t in pairs(tensors or {}) do
    if type(name) == 'string' and type(t) ~= 'function' then keys[#keys + 1] = name end
  end
  table.sort(keys)
  for _, name in ipairs(keys) do
    local t = tensors[name]
    local n = token(name)
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
    mutation = described and 'in_place' or 'none',
    tensors = described and shapes or nil,
  }
end

--- The order of the words of a point's case key: nil (sorted by name, kernelindex's own caseKey)
-- for the Liger kernels kluabench shares with kernelindex (llama4_rope, rope: no operation of their
-- own and axes kernelindex binds), else o.axis_order (a benchmark's axes as it declares them).
--
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
  local liger = require 'kluabench.liger'
  if o.operation == nil and liger.KERNELS[o.kernel] and liger.binding_of(o.kernel, o.parameters or {}, o.dtype) then
    return nil
  end
  return o.axis_order
end

--- The WorkloadCase and OperationSpec of a point.
--
-- o: kernel, parameters (integer axes, our names), dtype, and optionally operation (an operation
-- description, kluabench.record.operation; default: kernelindex's own for the Liger kernels
-- kluabench reproduces, else record.describe_operation(kernel, dtype, tensors)), tensors (name ->
-- tensor, for the default description), commit (the Liger commit an imported OperationSpec cites),
-- axis_order (the order of the case key's words in the workload's name, record.case_order).
--
-- @signature record.workload{kernel, parameters, dtype [, operation, tensors, axis_order]} -> workload, operation
-- @example
--   local w, op = record.workload{kernel = "llama4_rope",
--     parameters = {hidden = 512, seq = 2048, q_heads = 32, kv_heads = 8}, dtype = "bf16"}
--   print(record.digest(w))
function M.workload(o)
  if type(o) ~= 'table' or type(o.kernel) ~= 'string' then
    error("bad argument #1 to 'workload' (table with a kernel string expected)", 2)
  end
  local params = o.parameters or {}
  local axes = {}
  for k, v in pairs(params) do
    if math.type(v) == 'integer' or (type(v) == 'number' and v == math.floor(v) and math.abs(v) < 2 ^ 53) then
      axes[token(k)] = math.tointeger(v)
    else
      error(string.format("bad argument #1 to 'workload' (parameter '%s' must be an integer, got %s: kernelindex's "
        .. 'workload axes are integers)', tostring(k), tostring(v)), 2)
    end
  end
  local dtype = o.dtype and operation.dtype_token(o.dtype) or 'opaque'
  if o.operation == nil and liger.KERNELS[o.kernel] then
    local binding = liger.binding_of(o.kernel, params, o.dtype)
    if binding then
      local op = liger.operation_document(o.kernel, o.commit)
      return liger.workload_document(o.kernel, binding, M.digest(op)), op
    end
  end
  local desc = o.operation or M.describe_operation(o.kernel, o.dtype, o.tensors)
  local op = operation.document(desc)
  local order
  for i, k in ipairs(M.case_order(o) or {}) do order = order or {}; order[i] = token(k) end
  local binding = { axes = axes, dtype = dtype, tensors = desc.tensors, order = order }
  return operation.workload(desc, M.digest(op), binding), op
end

---------------------------------------------------------------------------
-- Implementation
---------------------------------------------------------------------------

--- The ImplementationRevision of a provider of a built-in kernel, from the kernel registry
-- (kluabench.kernels: each kernel lists its providers' entry points per backend); nil when the
-- registry does not know the kernel and provider.
--
-- mode: the timed pass, where a mode runs another entry point (the registry's modes). build
-- (kb.build_info()'s fields) and arch (the CPU's): what the code was built with and for, when not
-- this binary's (a record of another build, migrated).
--
-- @signature record.builtin_implementation{kernel, provider, backend, operation_digest [, mode, dtypes, build, arch]} -> document | nil
-- @example
--   local op = require("kluabench.liger").operation_document("llama4_rope")
--   local i = record.builtin_implementation{kernel = "llama4_rope", provider = "fused", backend = "cpu",
--     operation_digest = record.digest(op)}
--   print(i.spec.callable.symbol)
function M.builtin_implementation(o)
  local k = M.KERNELS[o.kernel]
  local entry = k and k.implementations and k.implementations[o.provider]
  entry = entry and entry[o.backend]
  if not entry then return nil end
  -- a mode may run another entry point of the same code (full: one launch for both passes)
  local symbol = o.mode and entry.modes and entry.modes[o.mode] or entry.symbol
  return implementation.builtin { operation_digest = o.operation_digest, provider = o.provider, kernel = o.kernel,
    backend = o.backend, symbol = symbol, path = entry.path, language = entry.language,
    sources = M.kernel_sources(o.kernel, entry.sources or k.sources),
    dtypes = o.dtypes or entry.dtypes or k.dtypes, build = o.build, arch = o.arch }
end

--- The ImplementationRevision of a user kernel (kluabench.record.implementation's user): info is
-- k:info(), mod:info(), pk:info() or tk:info(), or a list of them.
--
-- It names the operation it implements: operation_digest, else the digest of operation (an
-- OperationSpec document), else kernelindex's OperationSpec of kernel when kernel is one of the
-- Liger kernels kluabench reproduces (llama4_rope, rope).
--
-- @signature record.user_implementation{provider, kernel, info [, operation_digest | operation, arch, dtypes]} -> document
-- @example
--   local i = record.user_implementation{provider = "mine", kernel = "llama4_rope",
--     info = {name = "rope", module = {format = "cubin", sha256 = "sha256:" .. string.rep("1", 64), arch = "sm_90"}}}
--   print(i.spec.source.contentDigest, i.spec.operation.specDigest)
function M.user_implementation(o)
  if type(o) ~= 'table' then
    error("bad argument #1 to 'user_implementation' (table expected, got " .. type(o) .. ')', 2)
  end
  if o.operation_digest == nil then
    local op = o.operation
      if op == nil and liger.KERNELS[o.kernel] then op = liger.operation_document(o.kernel) end
    if type(op) ~= 'table' then
      error("bad argument #1 to 'user_implementation' (field 'operation_digest' or 'operation' needed: the "
        .. 'OperationSpec the kernel implements)', 2)
    end
    local copy = {}
    for k, v in pairs(o) do copy[k] = v end
    copy.operation_digest = M.digest(op)
    o = copy
  end
  return implementation.user(o)
end

---------------------------------------------------------------------------
-- Run
---------------------------------------------------------------------------

local function finite(v) return type(v) == 'number' and v == v and v > -math.huge and v < math.huge end

-- The check record of a run as the schema's correctness, or nil.
local function correctness_of(c)
  if type(c) ~= 'table' then return nil end
  local out = { comparator = type(c.comparator) == 'string' and c.comparator or 'max_abs_rel_l2' }
  if finite(c.maxAbsDiff) and c.maxAbsDiff >= 0 then out.maximumAbsoluteError = c.maxAbsDiff end
  if finite(c.maxRelDiff) and c.maxRelDiff >= 0 then out.maximumRelativeError = c.maxRelDiff end
  if finite(c.matchedRatio) and c.matchedRatio >= 0 and c.matchedRatio <= 1 then out.matchedRatio = c.matchedRatio end
  return out
end

--- The run's name: unique per run (the point, the provider, the time to the millisecond and the
-- session), at most 200 characters (a longer one keeps a digest of the whole).
--
-- @signature record.run_name(parts...) -> text
-- @example
--   print(record.run_name("kluabench", "llama4_rope", "forward", "fused", "hidden512-seq2048-bf16"))
function M.run_name(...)
  local parts = {}
  for i = 1, select('#', ...) do
    local p = select(i, ...)
    if p ~= nil and p ~= '' then parts[#parts + 1] = tostring(p) end
  end
  local full = names.slug(table.concat(parts, '-'))
  if #full <= 200 then return full end
  return (full:sub(1, 186):gsub('%-+$', '')) .. '-' .. kb().sha256(full):sub(1, 12)
end

--- The BenchmarkRun document of a latency measurement (digests filled in by record.seal).
--
-- o: kernel, mode, provider, gpu (device name), case (the workload's case key), time (UTC fields),
-- status (default "passed"), median_ns, fields (kluabench.record.measurements fields: p20_ns,
-- p80_ns, gbps, ...), latency (more timing.latencyNs statistics: mean, minimum, maximum,
-- confidence95), samples (their count), metrics (sourceNative.metrics), correctness (a check
-- record), session {index, count}, labels, harness {repository, commit}, metric ("memory": a run of
-- the memory metric, named and sourced as Liger's memory rows are: benchmark "kernel/mode/memory"),
-- extra_measurements (measurements[] entries appended as they are).
--
-- @signature record.run_document{kernel, mode, provider, gpu, case, time, ...} -> document
-- @example
--   local run = record.run_document{kernel = "k", mode = "forward", provider = "p", gpu = "cpu",
--     case = "n1024-fp32", time = record.now(), median_ns = 1000000, fields = {p20_ns = 900000, p80_ns = 1100000}}
--   print(run.spec.timing.latencyNs.median)
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
  -- a memory run says so where Liger's imported memory rows do (kluabench.record.point reads it)
  local memory = o.metric == 'memory'
  if memory then external = external .. '/memory' end
  local spec = {
    status = o.status or 'passed',
    observedAt = names.iso8601(o.time),
    measurements = measurements.list(o.fields or {}, o.extra_measurements),
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

---------------------------------------------------------------------------
-- Protocol
---------------------------------------------------------------------------

--- The schema's BenchmarkProtocol spec of what a protocol's spec() returned: the schema's fields
-- kept; every other field (method, repetition times, stopping rules, ...) written into
-- comparability.notes as canonical JSON, so that it still tells protocols apart (the digest covers
-- the notes) and the document stays valid. warmupMs becomes measurement.warmupDuration in ns.
--
-- @signature record.protocol_spec(spec) -> spec
-- @kind function
-- @example
--   local s = record.protocol_spec{harness = {name = "mine"}, measurement = {timer = "cuda_events",
--     primaryStatistic = "median", repMs = 100}}
--   print(s.comparability.notes)
M.protocol_spec = document.protocol_spec

--- The BenchmarkProtocol document of a protocol value for one timed pass; info: {mode, timed,
-- backend, timer}.
--
-- @signature record.protocol_document(protocol [, info]) -> document
-- @example
--   local doc = record.protocol_document(kb.do_bench.do_bench_protocol(), {mode = "forward", backend = "cpu"})
--   print(doc.spec.comparability.family)
function M.protocol_document(protocol, info)
  args.check('record.protocol_document', 1, protocol, 'table', 'protocol (bench.protocol)')
  args.check('record.protocol_document', 2, info, 'table|nil', 'table of facts')
  info = info or {}
  local timed = info.timed or M.MODE_TEXT[info.mode] or ('the ' .. tostring(info.mode) .. ' pass')
  local spec = M.protocol_spec(protocol:spec { timed = timed, backend = info.backend, timer = info.timer })
  local mode = info.mode
  return M.document('BenchmarkProtocol', spec, {
    name = names.dns_name('kluabench', protocol.name, mode, info.backend == 'cpu' and 'cpu' or nil),
    title = ('kluabench ' .. (protocol.title or protocol.name) .. (mode and (' · ' .. mode .. ' pass') or '')
      .. (info.backend == 'cpu' and ' (cpu backend)' or '')):sub(1, 200),
  })
end

---------------------------------------------------------------------------
-- A bundle from a measurement
---------------------------------------------------------------------------

-- What a protocol reports about a session, camel-cased, for the evidence.
local function execution_of(result)
  local e = {}
  for k, v in pairs(result.used or {}) do
    if type(v) ~= 'function' and k ~= 'quantiles' and k ~= 'return_mode' then
      e[(k:gsub('_(%w)', string.upper))] = v
    end
  end
  return e
end

local json_safe = document.json_safe
--- A copy of a value with only what JSON can carry: no functions, userdata or non-finite numbers, only
-- string and integer keys (what a protocol or hook hands records may hold anything).
--
-- @signature record.json_safe(v) -> copy | nil
-- @example
--   print(kb.jcs.encode(record.json_safe({a = 1, f = print, x = 0 / 0})))
M.json_safe = json_safe

-- The throughput figures of a point (ceilings.throughput against the cached
-- copy ceiling of this process's device, when the bundle's environment is
-- this device), and whether the median is implausibly fast.
local function throughput_of(bytes, flops, median_ms, environment)
  if type(bytes) ~= 'number' and type(flops) ~= 'number' then return nil end
  local ceilings = require 'kluabench.measure.ceilings'
  local env = require 'kluabench.record.env'
  local here = env.local_device_name()
  if here ~= env.device_name(environment) then
    local t = ceilings.throughput(bytes, flops, median_ms)
    t.note = 'measured on ' .. tostring(env.device_name(environment)) .. ', not on this process\'s device ('
      .. tostring(here or 'none') .. '): no cached copy ceiling applies'
    return t
  end
  local t = ceilings.cached_throughput(bytes, flops, median_ms)
  if type(bytes) == 'number' and t.copyCeilingGbps and median_ms and median_ms > 0 then
    local ok, msg = require('kluabench.kernels.check').plausible(median_ms, bytes,
      { copy_gbps = t.copyCeilingGbps, spread = t.copyCeiling and t.copyCeiling.spread })
    if not ok then t.implausible, t.implausibleReason = true, msg end
  end
  return t
end

-- The between-session figure in force for a record made here (record/noise.lua: the cache's, per
-- kernel where measured, else the default), which its evidence names; nil for a record of
-- another device.
local function session_noise_of(median_ms, environment, kernel)
  local env = require 'kluabench.record.env'
  local here = env.local_device_name()
  if here == nil or type(median_ms) ~= 'number' or here ~= env.device_name(environment) then return nil end
  local ok, info = pcall(function() return kb().device_info() end)
  if not ok then return nil end
  return require('kluabench.record.noise').in_force(median_ms, kernel, info)
end

-- The harness's commit for run.spec.evidence.harness: {repository, commit}
-- when the repository's https URL is known (kluabench.REPOSITORY,
-- KLUABENCH_REPOSITORY) and the build is of a clean commit; else nil. A
-- KLUABENCH_REPOSITORY that is no https URL (the schema's rule) is said
-- once on stderr and left out, rather than making every record invalid.
local warned_repository
local function harness_ref()
  local k = kb()
  local commit = tostring(k.git_commit or '')
  local env = os.getenv('KLUABENCH_REPOSITORY')
  local repo = env or require('kluabench.measure.protocol_base').REPOSITORY
  if env and not require('kluabench.record.schema').is_https(env) then
    if warned_repository ~= env then
      warned_repository = env
      io.stderr:write(string.format("kluabench: KLUABENCH_REPOSITORY '%s' is not an https URL: the records name "
        .. 'no evidence.harness (the commit is still their kluabench_commit label)\n', printable(env, 200)))
    end
    return nil
  end
  if type(repo) == 'string' and repo:match('^https://') and commit:match('^%x+$') and #commit == 40 then
    return { repository = repo, commit = commit }
  end
  return nil
end

--- One sealed bundle from what a protocol measured, with its evidence entry attached (written
-- beside the records by the writers: kluabench.record.evidence).
--
-- Required: kernel, mode, provider (strings), result (what protocol:run returned). Optional:
-- parameters (integer axes, our names), dtype, protocol (default result.protocol), quantiles,
-- environment (default env.capture()), operation (an operation description), tensors (for the
-- default description), workload and operation documents (both, to use them as they are),
-- implementation (a document; default: the kernel registry's built-in one of kernel and provider,
-- else the benchmark script's), builtin (false: never the registry's, whatever the names; the
-- harness passes it unless a declaration's implementation hook says 'builtin'), timed (words), time, labels, annotations, check (the check record), status (a run
-- status of the schema's enum) and reasons (why, in words), execution (what the harness adds to
-- the evidence), bytes, flops, session {index, count}, keep_samples (false leaves the raw samples
-- out of the evidence), axis_order (the order of the case key's words in the run's externalId,
-- record.case_order).
--
-- When the workload has bytes or flops, the run's measurements get GB/s, % of the cached copy
-- ceiling and the roofline floor of the median; a median faster than the copy floor sets the
-- status suspected_reward_hack with the reason in the evidence (docs/RECORDS.md). The SM clock the
-- samples ran at (result.used.clocks) becomes the sm_clock measurement; result.energy (what
-- measure/energy.lua returned) the energy and power measurements, or, unavailable, its reason in the
-- evidence; result.memory (measure/memory.lua's peak) makes the run a memory run: the memory
-- measurements in MB (median, p20, p80), sourced "kernel/mode/memory" as Liger's memory rows are.
--
-- @signature record.from_result{kernel, mode, provider, parameters, dtype, result, ...} -> bundle
-- @example
--   local x = kb.randn({4096}, "f32", 1)
--   local r = do_bench.do_bench_protocol{rep_ms = 5}:run(function() x:add_(1) end)
--   local bundle = record.from_result{kernel = "add", mode = "forward", provider = "add_",
--     parameters = {n = 4096}, dtype = "f32", result = r}
function M.from_result(o)
  if type(o) ~= 'table' then
    error("bad argument #1 to 'from_result' (table expected, got " .. type(o) .. ')', 2)
  end
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
  if not protocol then
    error("bad argument #1 to 'from_result' (no protocol: give field 'protocol')", 2)
  end
  local stats = require 'kluabench.stats'
  local env = require 'kluabench.record.env'
  local k = kb()
  local backend = result.backend or (k.backend and k.backend()) or 'cpu'
  local environment = o.environment or env.capture()
  local gpu = env.device_name(environment) or 'unknown'
  local params = o.parameters or {}

  -- workload, operation, implementation
  local workload, op = o.workload, o.operation_document
  if not (workload and op) then
    workload, op = M.workload { kernel = o.kernel, parameters = params, dtype = o.dtype,
      operation = o.operation, tensors = o.tensors, axis_order = o.axis_order }
  end
  local case_order
  for i, k in ipairs(M.case_order { kernel = o.kernel, parameters = params, dtype = o.dtype, operation = o.operation,
    axis_order = o.axis_order } or {}) do
    case_order = case_order or {}
    case_order[i] = token(k)
  end
  local od = M.digest(op)
  local implementation = o.implementation
    or (o.builtin ~= false and M.builtin_implementation { kernel = o.kernel, provider = o.provider, backend = backend,
      operation_digest = od, mode = o.mode })
    or implementation.script { operation_digest = od, provider = o.provider, kernel = o.kernel,
      arch = (environment.spec.hardware or {}).architecture, dtypes = o.dtype and { o.dtype } or nil }
  local bytes, flops = o.bytes, o.flops
  local kdesc = M.KERNELS[o.kernel]
  if (bytes == nil or flops == nil) and kdesc and kdesc.cost then
    local b, f = kdesc.cost(params, o.dtype and names.dtype_name(o.dtype), o.mode)
    bytes, flops = bytes or b, flops or f
  end

  -- statistics of the session's samples
  local samples = result.samples
  local qs = o.quantiles or (protocol.params and protocol.params.quantiles) or require('kluabench.measure.do_bench').QUANTILES
  local fields, metrics, latency = {}, {}, {}
  local median_ms
  if #samples > 0 then
    -- the statistics the measurement computed (inference.describe); computed here only for a result
    -- that lacks them or the quantiles asked for (a protocol of its own)
    local s = result.summary
    local has = type(s) == 'table' and type(s.at) == 'table'
    for _, q in ipairs(qs) do has = has and s.at[q] ~= nil end
    if not has then s = require('kluabench.stats.inference').describe(samples, qs) end
    for _, q in ipairs(qs) do
      local v = s.at[q]
      metrics[M.metric_name(q)] = v
      if q == 0.2 then fields.p20_ns = v * 1e6
      elseif q == 0.8 then fields.p80_ns = v * 1e6 end
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

  -- derived figures
  local status, reasons = o.status or 'passed', {}
  for _, r in ipairs(o.reasons or {}) do reasons[#reasons + 1] = r end
  -- a throughput the caller measured itself replaces the computed one
  local throughput = o.execution and o.execution.throughput
  if throughput == nil and median_ms then throughput = throughput_of(bytes, flops, median_ms, environment) end
  if throughput then
    fields.gbps, fields.tflops, fields.pct_copy = throughput.gbps, throughput.tflops, throughput.percentOfCopy
    fields.copy_gbps, fields.pct_floor = throughput.copyCeilingGbps, throughput.percentOfFloor
    fields.floor_ns = throughput.floorMs and throughput.floorMs * 1e6
    if throughput.implausible then
      fields.implausible = 1
      if status == 'passed' then status = 'suspected_reward_hack' end
      reasons[#reasons + 1] = throughput.implausibleReason
    end
  end
  fields.bytes, fields.flops = bytes, flops
  local session = o.session or { index = 1, count = 1 }
  fields.session, fields.sessions = session.index, session.count
  local noise = median_ms and session_noise_of(median_ms, environment, o.kernel) or nil
  -- the measurement is a figure measured on this device (history reads it); the default is said in
  -- the evidence only
  fields.noise_sd = noise and noise.scope ~= 'default' and noise.sd or nil
  if o.check and finite(o.check.relL2) then fields.rel_l2 = o.check.relL2 end
  -- the SM clock the samples ran at (the clock monitor's median of its readings after each sample)
  local clocks = type(result.used) == 'table' and result.used.clocks or nil
  if type(clocks) == 'table' and type(clocks.smMhz) == 'table' then fields.sm_mhz = clocks.smMhz.median end
  -- energy per call over NVML's windows (measure/energy.lua), when it was asked for and could be read
  local en = result.energy
  if type(en) == 'table' and en.available and type(en.joules_per_call) == 'table' then
    fields.energy_j, fields.energy_j_min = en.joules_per_call.median, en.joules_per_call.min
    fields.energy_j_max = en.joules_per_call.max
    fields.power_w = type(en.watts) == 'table' and en.watts.median or nil
    if type(en.sm_mhz) == 'table' and fields.sm_mhz == nil then fields.sm_mhz = en.sm_mhz.median end
  end
  -- a memory run (measure/memory.lua): Liger's figures, MB at the median, p20 and p80, as its own run
  local mem, extra = result.memory, nil
  if type(mem) == 'table' then
    extra = {}
    for _, q in ipairs { 'median', 'p20', 'p80' } do
      if finite(mem[q]) then extra[#extra + 1] = { metric = 'memory', unit = 'mb', statistic = q, value = mem[q] } end
    end
  end

  local time = o.time or M.now()
  local labels = { kluabench_version = k.version, backend = backend, kluabench_commit = k.git_commit }
  for key, v in pairs(o.labels or {}) do labels[key] = v end
  local run = M.run_document {
    kernel = o.kernel, mode = o.mode, provider = o.provider, gpu = gpu,
    case = operation.case_key { axes = workload.spec.axes, dtype = o.dtype and operation.dtype_token(o.dtype) or 'opaque',
      order = case_order },
    time = time, status = status, median_ns = median_ms and M.round(median_ms * 1e6), fields = fields,
    latency = latency, samples = #samples > 0 and #samples or nil, metrics = metrics, correctness = o.check,
    session = session, labels = labels, harness = harness_ref(), metric = mem and 'memory' or nil,
    extra_measurements = extra,
  }
  local bundle = {
    run = run,
    protocol = M.protocol_document(protocol, { mode = o.mode, timed = o.timed, backend = backend,
      timer = result.timer }),
    environment = environment,
    workload = workload,
    implementation = implementation,
    operation = op,
    project = o.project,
  }
  M.seal(bundle)

  local execution = execution_of(result)
  -- the stopping rule the protocol followed (what !conv in a table judges)
  local rule = protocol.params and protocol.params.stop
  if type(rule) == 'table' and type(rule.spec) == 'function' then
    local ok, spec = pcall(rule.spec, rule)
    if ok and type(spec) == 'table' then execution.stopping = spec end
  end
  for key, v in pairs(o.execution or {}) do execution[key] = v end
  if en ~= nil then execution.energy = en end
  if mem ~= nil then execution.memory = mem end
  local entry = {
    format = evidence.FORMAT,
    run = run.spec.sourceNative.externalId,
    unit = 'ns',
    samples = json.array {},
    session = session,
    execution = json_safe(execution),
    check = json_safe(o.check),
    throughput = json_safe(throughput),
    sessionNoise = json_safe(noise),
    device = json_safe(env.device_facts(k.device_info and (backend == 'cpu' and k.device_info('cpu') or k.device_info())
      or {}, backend)),
    harness = { version = k.version and tostring(k.version), commit = k.git_commit },
    annotations = json_safe(o.annotations),
    reasons = #reasons > 0 and reasons or nil,
  }
  if o.keep_samples ~= false then
    for i, ms in ipairs(samples) do entry.samples[i] = M.round(ms * 1e6) end
  end
  evidence.attach(bundle, entry)
  return bundle
end

return M
