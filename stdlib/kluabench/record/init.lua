--- kernelindex.dev/v1alpha1 records: one benchmark point is one bundle
--   { run = BenchmarkRun, protocol = BenchmarkProtocol,
--     environment = ExecutionEnvironment, workload = BenchmarkWorkload,
--     implementation = KernelImplementation }
-- Every document is {kind, spec, metadata, apiVersion}. The run carries the
-- digests of the other four: "sha256:" .. hex(SHA-256(JCS(doc.spec))), JCS
-- being RFC 8785 (kb.jcs.encode), i.e. kb.digest(doc.spec).
-- docs/RECORDS.md describes every field.
local kernels = require 'kluabench.kernels'
local names = require 'kluabench.record.names'
local output = require 'kluabench.report'

local M = {}

M.API_VERSION = 'kernelindex.dev/v1alpha1'

--- The four digested documents, in the order the run lists their digests.
M.DIGESTS = {
  { doc = 'protocol', field = 'protocolDigest' },
  { doc = 'workload', field = 'workloadDigest' },
  { doc = 'environment', field = 'environmentDigest' },
  { doc = 'implementation', field = 'implementationDigest' },
}

local function kb() return require 'kluabench.core' end

--- What records know about kernels, by kernel name: a title for people, the
-- source files that implement it (for the implementation digest when the
-- engine does not list them), and a cost model (bytes moved and flops of one
-- call, the algorithmic minimum) from the workload parameters. The kernel
-- registry (kluabench.kernels) gathers them from the descriptor beside each
-- kernel (stdlib/kluabench/kernels/<family>.lua).
M.KERNELS = kernels.KERNELS

--- A kernel's title for people ("Llama 4 rotary position embedding"); the name when none is known.
--
-- @signature record.kernel_title(kernel) -> text
-- @example
--   print(record.kernel_title("llama4_rope"))
function M.kernel_title(kernel)
  local k = M.KERNELS[kernel]
  return k and k.title or kernel
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

--- A document {kind, spec, metadata, apiVersion = "kernelindex.dev/v1alpha1"}.
--
-- @signature record.document(kind, spec, metadata) -> document
-- @example
--   local doc = record.document("BenchmarkWorkload", {kernel = "copy"}, {name = "copy"})
function M.document(kind, spec, metadata)
  if type(kind) ~= 'string' then
    error("bad argument #1 to 'document' (kind string expected, got " .. type(kind) .. ')', 2)
  end
  if type(spec) ~= 'table' then
    error("bad argument #2 to 'document' (spec table expected, got " .. type(spec) .. ')', 2)
  end
  return { kind = kind, spec = spec, metadata = metadata or output.object(), apiVersion = M.API_VERSION }
end

--- The digest of a document: "sha256:" .. hex(SHA-256(JCS(doc.spec))).
--
-- @signature record.digest(doc) -> "sha256:<hex>"
-- @example
--   print(record.digest(record.document("BenchmarkWorkload", {kernel = "copy"}, {})))
function M.digest(doc)
  if type(doc) ~= 'table' or type(doc.spec) ~= 'table' then
    error("bad argument #1 to 'digest' (document with a spec table expected)", 2)
  end
  local k = kb()
  if k.digest then return k.digest(doc.spec) end
  return 'sha256:' .. k.sha256(k.jcs.encode(doc.spec))
end

--- Computes the four digests of a bundle into run.spec.
--
-- @signature record.seal(bundle) -> bundle
-- @example
--   record.seal(bundle)
function M.seal(bundle)
  for _, d in ipairs(M.DIGESTS) do
    local doc = bundle[d.doc]
    if type(doc) ~= 'table' then
      error("bad argument #1 to 'seal' (bundle has no " .. d.doc .. ' document)', 2)
    end
    bundle.run.spec[d.field] = M.digest(doc)
  end
  return bundle
end

--- Recomputes the digests of a decoded bundle; an empty list when all match.
--
-- A problem is {field = "protocolDigest", recorded, computed} or {field, error = why}.
--
-- @signature record.check(bundle) -> problems
-- @example
--   for _, p in ipairs(record.check(bundle)) do print(p.field, p.recorded, p.computed or p.error) end
function M.check(bundle)
  local problems = {}
  if type(bundle) ~= 'table' then return { { field = 'bundle', error = 'not a JSON object' } } end
  local run = bundle.run
  if type(run) ~= 'table' or type(run.spec) ~= 'table' then
    return { { field = 'run', error = 'missing run document or run.spec' } }
  end
  for _, d in ipairs(M.DIGESTS) do
    local doc, recorded = bundle[d.doc], run.spec[d.field]
    if type(doc) ~= 'table' or type(doc.spec) ~= 'table' then
      problems[#problems + 1] = { field = d.field, error = 'missing ' .. d.doc .. ' document or its spec' }
    elseif type(recorded) ~= 'string' then
      problems[#problems + 1] = { field = d.field, error = 'run.spec.' .. d.field .. ' is missing' }
    else
      local ok, computed = pcall(M.digest, doc)
      if not ok then
        problems[#problems + 1] = { field = d.field, error = 'cannot hash ' .. d.doc .. '.spec: '
          .. tostring(computed) }
      elseif computed ~= recorded then
        problems[#problems + 1] = { field = d.field, recorded = recorded, computed = computed }
      end
    end
  end
  return problems
end

--- The current UTC time as fields (with milliseconds when the engine can tell them).
--
-- @signature record.now() -> time fields
-- @example
--   print(names.iso8601(record.now()))
function M.now()
  local ok, k = pcall(kb)
  if ok and type(k) == 'table' and type(k.time_ns) == 'function' then
    return names.utc(k.time_ns() / 1e9)
  end
  return names.utc(os.time())
end

--- Rounds to the nearest integer, halves away from zero.
--
-- @signature record.round(x) -> integer
-- @example
--   print(record.round(2.5)) --> 3
function M.round(x)
  if x >= 0 then return math.floor(x + 0.5) end
  return -math.floor(-x + 0.5)
end

--- The statistic name of a quantile: 0.2 -> "p20", 0.999 -> "p99.9".
--
-- @signature record.quantile_name(q) -> text
-- @example
--   print(record.quantile_name(0.2))
function M.quantile_name(q)
  return 'p' .. string.format('%g', q * 100)
end

--- The sourceNative metric name of a quantile: 0.2 -> "ms_20".
--
-- @signature record.metric_name(q [, unit]) -> text
-- @example
--   print(record.metric_name(0.5)) --> ms_50
function M.metric_name(q, unit)
  return (unit or 'ms') .. '_' .. string.format('%g', q * 100)
end

---------------------------------------------------------------------------
-- Workload and implementation
---------------------------------------------------------------------------

--- A BenchmarkWorkload document; bytes and flops default to the kernel's cost model.
--
-- o: kernel, operation, parameters (name -> number|string, our names: hidden, seq, q_heads,
-- kv_heads, ...), dtype (kluabench name), bytes and flops (numbers; default: the kernel's cost
-- model), annotations (metadata, not digested).
--
-- @signature record.workload{kernel, operation, parameters, dtype, bytes, flops, annotations} -> document
-- @example
--   local w = record.workload{kernel = "llama4_rope", operation = "forward",
--     parameters = {hidden = 512, seq = 2048, q_heads = 32, kv_heads = 8}, dtype = "bf16"}
function M.workload(o)
  if type(o) ~= 'table' or type(o.kernel) ~= 'string' or type(o.operation) ~= 'string' then
    error("bad argument #1 to 'workload' (table with kernel and operation strings expected)", 2)
  end
  local params = o.parameters or {}
  local dtype = o.dtype and names.dtype_name(o.dtype) or nil
  local bytes, flops = o.bytes, o.flops
  local k = M.KERNELS[o.kernel]
  if (bytes == nil or flops == nil) and k and k.cost then
    local b, f = k.cost(params, dtype, o.operation)
    bytes, flops = bytes or b, flops or f
  end
  local spec = {
    kernel = o.kernel,
    operation = o.operation,
    parameters = next(params) and params or output.object(),
    dtype = dtype,
    bytes = bytes,
    flops = flops,
  }
  local slug = names.workload_slug(params, dtype)
  local meta = {
    name = names.dns_name(o.kernel, o.operation, slug),
    title = M.kernel_title(o.kernel) .. ' · ' .. o.operation .. (slug ~= '' and (' · ' .. slug) or ''),
    annotations = o.annotations,
  }
  return M.document('BenchmarkWorkload', spec, meta)
end

-- The repository root: two directories above this file (stdlib/kluabench/).
local function repo_root()
  local src = debug.getinfo(1, 'S').source
  local dir = src:match('^@(.*)/stdlib/kluabench/[^/]*$')
  if dir then return dir end
  if src:match('^@stdlib/kluabench/') then return '.' end
  return nil
end

--- SHA-256 of the source files of a kernel, as built (kb.kernel_sources) or from the checkout.
--
-- SHA-256 of a kernel's sources: {path = "sha256:<hex>"}, from kb.kernel_sources() (what the binary
-- was built from) when the engine has it, else by hashing the files under the repository with
-- kb.sha256_file. Only the kernel's own files when M.KERNELS knows them; nil when none found.
--
-- @signature record.kernel_sources(kernel) -> {path = "sha256:<hex>"} | nil
-- @example
--   for path, d in pairs(record.kernel_sources("llama4_rope") or {}) do print(path, d) end
function M.kernel_sources(kernel)
  local k = kb()
  local wanted
  local known = M.KERNELS[kernel] and M.KERNELS[kernel].sources
  if known then
    wanted = {}
    for _, p in ipairs(known) do wanted[p] = true end
  end
  local out = {}
  if type(k.kernel_sources) == 'function' then
    for path, hex in pairs(k.kernel_sources()) do
      if not wanted or wanted[path] then
        out[path] = hex:match('^sha256:') and hex or ('sha256:' .. hex)
      end
    end
  elseif known and type(k.sha256_file) == 'function' then
    local root = repo_root()
    for _, path in ipairs(known) do
      local full = root and (root .. '/' .. path) or path
      local ok, hex = pcall(k.sha256_file, full)
      if ok and type(hex) == 'string' then out[path] = 'sha256:' .. hex end
    end
  end
  return next(out) and out or nil
end

-- A copy of a build_info table with only what JSON can carry.
local function json_safe(v, depth)
  local t = type(v)
  if t == 'string' or t == 'boolean' then return v end
  if t == 'number' then return (v == v and v ~= math.huge and v ~= -math.huge) and v or nil end
  if t == 'table' and depth < 8 then
    local c = {}
    for k, x in pairs(v) do
      if type(k) == 'string' or math.type(k) == 'integer' then c[k] = json_safe(x, depth + 1) end
    end
    local ok = pcall(output.table_kind, c)
    return ok and c or nil
  end
  return nil
end

--- A KernelImplementation document: provider, kluabench version, kernel source hashes, build flags,
-- target.
--
-- o: provider, kernel, target = {backend, architecture}, and optionally sources ({path =
-- "sha256:..."}, default M.kernel_sources(kernel)), build (default kb.build_info()), version
-- (default kb.version).
--
-- @signature record.implementation{provider, kernel, target, sources, build, version} -> document
-- @example
--   local i = record.implementation{provider = "fused", kernel = "llama4_rope",
--     target = {backend = kb.backend(), architecture = kb.device_info().arch}}
function M.implementation(o)
  if type(o) ~= 'table' or type(o.provider) ~= 'string' or type(o.kernel) ~= 'string' then
    error("bad argument #1 to 'implementation' (table with provider and kernel strings expected)", 2)
  end
  local k = kb()
  local version = o.version or k.version
  local sources = o.sources
  if sources == nil then sources = M.kernel_sources(o.kernel) end
  local build = o.build
  if build == nil and type(k.build_info) == 'function' then
    build = json_safe(k.build_info(), 0)
    -- the commit is in the environment; here it would change the digest of
    -- an unchanged kernel on every commit
    if type(build) == 'table' then build.git_commit = nil end
  end
  local spec = {
    provider = o.provider,
    kernel = o.kernel,
    engine = { name = 'kluabench', version = version },
    sources = sources,
    build = build,
    target = o.target,
  }
  return M.document('KernelImplementation', spec, {
    name = names.dns_name('kluabench', o.kernel, o.provider, version),
    title = M.kernel_title(o.kernel) .. ' · ' .. o.provider .. ' (kluabench ' .. tostring(version) .. ')',
  })
end

-- The file name at the end of a path.
local function basename(path) return (tostring(path):match('([^/]+)$')) end

--- The KernelImplementation of a user kernel: SHA-256 of its source or binary, compile options,
-- NVRTC and driver versions, arch (info: kern:info(), mod:info(), pk:info() or tk:info()).
--
-- @signature record.user_implementation{provider, kernel, info [, target]} -> document
-- @example
--   local i = record.user_implementation{provider = "mine", kernel = "llama4_rope", info = k:info()}
function M.user_implementation(o)
  if type(o) ~= 'table' or type(o.info) ~= 'table' then
    error("bad argument #1 to 'user_implementation' (table with an info table expected)", 2)
  end
  local info = o.info
  local mod = info.module or info
  local user = output.object()
  local sources = {}
  if info.plugin then
    local p = info.plugin
    user.route = 'plugin'
    user.plugin = { name = p.name, version = p.version, abiVersion = p.abi_version, sha256 = p.sha256 }
    user.entries = { cuda = info.cuda, cpu = info.cpu }
    sources[basename(p.path or p.name)] = p.sha256
  else
    user.route = mod.source_sha256 and 'nvrtc' or 'module'
    user.format = mod.format
    user.sha256 = mod.sha256
    user.sourceSha256 = mod.source_sha256
    user.compileOptions = mod.options
    user.nameExpressions = mod.names and next(mod.names) and mod.names or nil
    user.nvrtcVersion = mod.nvrtc_version
    user.arch = mod.arch
    user.driverVersion = mod.driver_version
    user.symbol = info.symbol
    user.triton = info.triton
    local name = mod.name or (mod.path and basename(mod.path)) or ('module.' .. tostring(mod.format))
    sources[name] = mod.source_sha256 or mod.sha256
  end
  user.name = info.name
  user.signature = info.signature
  local doc = M.implementation { provider = o.provider, kernel = o.kernel, target = o.target,
    sources = sources, version = o.version, build = o.build }
  doc.spec.userKernel = user
  return doc
end

---------------------------------------------------------------------------
-- Run
---------------------------------------------------------------------------

--- The BenchmarkRun document of a latency measurement (digests filled in by record.seal).
--
-- o: kernel, mode, provider, gpu (device name), workload_slug quantiles = {0.5, 0.2, 0.8},
-- values_ms = {ms per quantile, same order} time (UTC fields), source ("kluabench"), name_prefix
-- ("kluabench") labels (table), samples_ms (list, optional), summary_ms (stats.summary, optional)
-- execution (table, optional: what the protocol derived), check (table, optional).
--
-- @signature record.latency_run{kernel, mode, provider, gpu, workload_slug, quantiles, values_ms, time, ...} -> document
-- @example
--   local run = record.latency_run{kernel = "k", mode = "forward", provider = "p", gpu = "cpu",
--     workload_slug = "n1024", quantiles = {0.5, 0.2, 0.8}, values_ms = {1.0, 0.9, 1.1}, time = record.now()}
function M.latency_run(o)
  local qs = o.quantiles
  local median_ms
  local measurements, metrics = {}, {}
  for i, q in ipairs(qs) do
    local ms = o.values_ms[i]
    metrics[M.metric_name(q)] = ms
    if q == 0.5 then
      median_ms = ms
    else
      measurements[#measurements + 1] = { unit = 'ns', value = M.round(ms * 1e6), metric = 'latency',
        statistic = M.quantile_name(q) }
    end
  end
  if median_ms == nil then
    error("bad argument #1 to 'latency_run' (quantiles must include 0.5, the median)", 2)
  end
  local s = o.summary_ms
  if s then
    for _, stat in ipairs { 'min', 'max', 'mean', 'stdev' } do
      if s[stat] then
        measurements[#measurements + 1] = { unit = 'ns', value = M.round(s[stat] * 1e6),
          metric = 'latency', statistic = stat }
      end
    end
  end
  local spec = {
    status = o.status or 'passed',
    timing = { latencyNs = { median = M.round(median_ms * 1e6) }, primaryStatistic = 'median' },
    observedAt = names.iso8601(o.time),
    measurements = measurements,
    sourceNative = {
      source = o.source or 'kluabench',
      metrics = metrics,
      benchmark = o.kernel .. '/' .. o.mode,
      externalId = names.external_id { kernel = o.kernel, mode = o.mode, provider = o.provider,
        gpu = o.gpu, workload = o.workload_slug, time = o.time },
    },
    execution = o.execution,
    check = o.check,
  }
  if o.samples_ms then
    local values = {}
    for i, ms in ipairs(o.samples_ms) do values[i] = M.round(ms * 1e6) end
    spec.samples = { metric = 'latency', unit = 'ns', values = values }
  end
  local meta = {
    name = names.dns_name(o.name_prefix or 'kluabench', o.kernel, o.mode, o.provider,
      names.gpu_slug(o.gpu), o.workload_slug),
    title = M.kernel_title(o.kernel) .. ' · ' .. o.provider .. ' · ' .. o.mode,
    labels = o.labels or output.object(),
  }
  return M.document('BenchmarkRun', spec, meta)
end

--- The BenchmarkProtocol document of a protocol value for one timed pass; info: {mode, timed,
-- backend}.
--
-- info: {mode, timed (words; default from M.MODE_TEXT), backend}.
--
-- @signature record.protocol_document(protocol [, info]) -> document
-- @example
--   local doc = record.protocol_document(bench.do_bench_protocol(), {mode = "forward", backend = "cpu"})
function M.protocol_document(protocol, info)
  info = info or {}
  local timed = info.timed or M.MODE_TEXT[info.mode] or ('the ' .. tostring(info.mode) .. ' pass')
  local spec = protocol:spec { timed = timed, backend = info.backend, timer = info.timer }
  local mode = info.mode
  return M.document('BenchmarkProtocol', spec, {
    name = names.dns_name('kluabench', protocol.name, mode, info.backend == 'cpu' and 'cpu' or nil),
    title = 'kluabench ' .. (protocol.title or protocol.name) .. (mode and (' · ' .. mode .. ' pass') or '')
      .. (info.backend == 'cpu' and ' (cpu backend)' or ''),
  })
end

local function execution_of(result)
  local u = result.used or {}
  local e = {
    estimateMs = u.estimate_ms,
    nWarmup = u.n_warmup,
    nRepeat = u.n_repeat,
    flushBytes = u.flush_bytes,
  }
  for k, v in pairs(u) do
    -- anything else a protocol reports, camel-cased
    local ck = k:gsub('_(%w)', string.upper)
    if e[ck] == nil and k ~= 'quantiles' and k ~= 'return_mode' and k ~= 'warmup_ms'
        and k ~= 'rep_ms' and k ~= 'estimate_calls' and type(v) ~= 'function' then
      e[ck] = v
    end
  end
  return e
end

-- run.spec.execution.throughput of a point (see ceilings.throughput): the
-- workload's bytes and flops (spec.bytes, spec.flops: its algorithmic
-- minimum, the same for every provider) over the median time, and their
-- share of this device's copy ceiling as cached by scripts/ceilings.lua.
-- The cache holds ceilings of the machine running this process, so a bundle
-- whose environment names another device (built for a test, or by hand)
-- gets the rates but no ceiling. nil when the workload has no cost.
-- A rate above the copy ceiling sets implausible = true and says why
-- (check.plausible): the record keeps the time, and every table shows it.
local function flag_implausible(t, bytes, median_ms)
  if type(t) == 'table' and type(bytes) == 'number' and t.copyCeilingGbps and median_ms and median_ms > 0 then
    local ok, msg = require('kluabench.check').plausible(median_ms, bytes, t.copyCeilingGbps)
    if not ok then t.implausible, t.implausibleReason = true, msg end
  end
  return t
end

local function throughput_of(workload_spec, median_ms, environment)
  if type(workload_spec.bytes) ~= 'number' and type(workload_spec.flops) ~= 'number' then return nil end
  local ceilings = require 'kluabench.record.ceilings'
  local env = require 'kluabench.record.env'
  local here = env.local_device_name()
  if here ~= env.device_name(environment) then
    local t = ceilings.throughput(workload_spec.bytes, workload_spec.flops, median_ms)
    t.note = 'measured on ' .. tostring(env.device_name(environment)) .. ', not on this process\'s device ('
      .. tostring(here or 'none') .. '): no cached copy ceiling applies'
    return t
  end
  return flag_implausible(ceilings.cached_throughput(workload_spec.bytes, workload_spec.flops, median_ms),
    workload_spec.bytes, median_ms)
end

-- run.spec.execution.sessionNoise: the cached between-session noise of this
-- device at the point's median (ceilings.cached_noise), which `kluabench
-- compare` uses for a side measured in one session; nil when there is none
-- or the bundle's environment names another device.
local function session_noise_of(median_ms, environment)
  local env = require 'kluabench.record.env'
  local here = env.local_device_name()
  if here == nil or type(median_ms) ~= 'number' or here ~= env.device_name(environment) then return nil end
  return require('kluabench.record.ceilings').cached_noise(median_ms)
end

--- One sealed bundle from what a protocol measured.
--
-- Required: kernel, mode, provider (strings), result (what protocol:run returned). Optional:
-- parameters (shape, our names), dtype, protocol (default result.protocol), quantiles, environment
-- (default env.capture()), workload, implementation, timed (words), time, labels, annotations,
-- check, execution, bytes, flops, keep_samples (false leaves the raw samples out). When the
-- workload has bytes or flops, run.spec.execution.throughput gets GB/s, % of the cached copy
-- ceiling and the roofline floor of the median (docs/RECORDS.md).
--
-- @signature record.from_result{kernel, mode, provider, parameters, dtype, result, ...} -> bundle
-- @example
--   local r = bench.do_bench_protocol{rep_ms = 50}:run(fn)
--   local bundle = record.from_result{kernel = "llama4_rope", mode = "forward", provider = "fused",
--     parameters = {hidden = 512, seq = 2048, q_heads = 32, kv_heads = 8}, dtype = "bf16", result = r}
function M.from_result(o)
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
    if o[f] ~= nil and (type(o[f]) ~= 'number' or o[f] < 0) then
      error(string.format("bad argument #1 to 'from_result' (field '%s' must be a number >= 0)", f), 2)
    end
  end
  local protocol = o.protocol or result.protocol
  if not protocol then
    error("bad argument #1 to 'from_result' (no protocol: give field 'protocol')", 2)
  end
  local stats = require 'kluabench.stats'
  local k = kb()
  local backend = result.backend or (k.backend and k.backend()) or 'cpu'
  local environment = o.environment or require('kluabench.record.env').capture()
  local hw = environment.spec.hardware or {}
  local gpu = require('kluabench.record.env').device_name(environment) or 'unknown'
  local params = o.parameters or {}
  local dtype = o.dtype and names.dtype_name(o.dtype) or nil
  local slug = names.workload_slug(params, dtype)
  local qs = o.quantiles or (protocol and protocol.params and protocol.params.quantiles)
    or { 0.5, 0.2, 0.8 }
  local values = stats.quantiles(result.samples, qs)
  local execution = execution_of(result)
  for key, v in pairs(o.execution or {}) do execution[key] = v end
  local labels = { kluabench_version = k.version, backend = backend }
  for key, v in pairs(o.labels or {}) do labels[key] = v end
  local workload = o.workload or M.workload { kernel = o.kernel, operation = o.mode,
    parameters = params, dtype = dtype, bytes = o.bytes, flops = o.flops, annotations = o.annotations }
  if execution.throughput == nil then
    for i, q in ipairs(qs) do
      if q == 0.5 then execution.throughput = throughput_of(workload.spec, values[i], environment) end
    end
  end
  if execution.sessionNoise == nil and #result.samples > 0 then
    execution.sessionNoise = session_noise_of(stats.median(result.samples), environment)
  end
  local run = M.latency_run {
    kernel = o.kernel, mode = o.mode, provider = o.provider, gpu = gpu, workload_slug = slug,
    quantiles = qs, values_ms = values, time = o.time or M.now(), labels = labels,
    samples_ms = o.keep_samples ~= false and result.samples or nil,
    summary_ms = result.summary or stats.summary(result.samples),
    execution = next(execution) and execution or nil, check = o.check,
  }
  local bundle = {
    run = run,
    protocol = M.protocol_document(protocol, { mode = o.mode, timed = o.timed, backend = backend,
      timer = result.timer }),
    environment = environment,
    workload = workload,
    implementation = o.implementation or M.implementation { provider = o.provider,
      kernel = o.kernel, target = { backend = backend, architecture = hw.architecture } },
  }
  return M.seal(bundle)
end

return M
