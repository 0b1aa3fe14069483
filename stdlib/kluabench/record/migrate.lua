--- Bundles of kluabench's earlier record format (before the kernelindex
-- schemas were followed: kinds BenchmarkWorkload and KernelImplementation,
-- digests of JCS(spec), raw samples, execution and check inside the run)
-- turned into today's: every document schema-valid, kernelindex's digest
-- recipe, the samples and what else the run held in its evidence entry.
--
-- The reader (kluabench.record.reader) migrates such bundles as it reads
-- them, so compare, plot and merge read old results files unchanged;
-- `kluabench migrate OLD -o NEW` writes them out in today's form. The old
-- digests cannot be kept (the recipe changed); every number is, and the old run name as a label
-- (migrated_name: runs get today's unique names).
local json = require 'kluabench.util.json'
local names = require 'kluabench.record.names'
local get = require('kluabench.util.json').get

local function is_old(b)
  if type(b) ~= 'table' then return false end
  if get(b, 'workload', 'kind') == 'BenchmarkWorkload' or get(b, 'implementation', 'kind') == 'KernelImplementation' then
    return true
  end
  local rs = get(b, 'run', 'spec')
  if type(rs) == 'table' and (rs.samples ~= nil or rs.execution ~= nil or rs.check ~= nil
      or get(rs, 'sourceNative', 'samples_ms') ~= nil) then
    return true
  end
  -- the earlier workload and implementation fields, kind or not
  return get(b, 'workload', 'spec', 'parameters') ~= nil or get(b, 'implementation', 'spec', 'provider') ~= nil
end

local M = {}
local args = require 'kluabench.util.args'

local get = json.get

local function num(v) return type(v) == 'number' and v == v and v > -math.huge and v < math.huge and v or nil end

--- True when a bundle is of the earlier format (a BenchmarkWorkload or KernelImplementation, a
-- workload with parameters or an implementation with a provider, or a run with samples, execution
-- or check of its own).
--
-- @signature migrate.is_old(bundle) -> boolean
-- @kind function
-- @example
--   print(migrate.is_old({workload = {kind = "BenchmarkWorkload"}})) --> true
M.is_old = is_old

-- The old environment spec in the schema's fields, and its device facts.
local function environment(old)
  local s = type(old) == 'table' and type(old.spec) == 'table' and old.spec or {}
  local hw = type(s.hardware) == 'table' and s.hardware or {}
  local sw = type(s.software) == 'table' and s.software or {}
  local new_hw = { vendor = hw.vendor, product = hw.product, formFactor = hw.formFactor,
    architecture = hw.architecture, memoryBytes = math.tointeger(num(hw.memoryBytes)), count = 1 }
  if type(new_hw.architecture) == 'string' then new_hw.architecture = new_hw.architecture:lower():gsub('[^%w_]', '_') end
  local libraries = {}
  if type(sw.lua) == 'string' then libraries.lua = sw.lua end
  local new_sw = {}
  if type(sw.driver) == 'table' then
    new_sw.driver = type(sw.driver.release) == 'string' and sw.driver.release or nil
    if type(sw.driver.cudaVersion) == 'string' then libraries.cuda_driver = sw.driver.cudaVersion end
  elseif type(sw.driver) == 'string' then
    new_sw.driver = sw.driver
  end
  if type(sw.cudaRuntime) == 'string' then new_sw.cudaToolkit = sw.cudaRuntime end
  if type(sw.os) == 'table' then
    new_sw.operatingSystem, new_sw.kernel = sw.os.distribution, sw.os.kernel
  end
  local kl = type(sw.kluabench) == 'table' and sw.kluabench or {}
  if kl.version then new_sw.framework = { name = 'kluabench', version = tostring(kl.version) } end
  if next(libraries) then new_sw.libraries = libraries end
  if next(new_sw) == nil then new_sw = json.object() end
  local labels = {}
  for k, v in pairs(get(old, 'metadata', 'annotations') or {}) do
    if type(k) == 'string' and (type(v) == 'string' or type(v) == 'number') then
      labels[(k:gsub('(%u)', function(c) return '_' .. c:lower() end))] = tostring(v):sub(1, 200)
    end
  end
  for k, v in pairs(get(old, 'metadata', 'labels') or {}) do labels[k] = v end
  local doc = {
    apiVersion = 'kernelindex.dev/v1alpha1', kind = 'ExecutionEnvironment',
    metadata = { name = get(old, 'metadata', 'name') or 'kluabench-migrated', title = get(old, 'metadata', 'title'),
      labels = next(labels) and labels or nil },
    spec = { hardware = new_hw, software = new_sw },
  }
  local facts = { backend = s.backend, smCount = num(hw.smCount), l2Bytes = num(hw.l2Bytes), cores = num(hw.cores),
    kluabenchCommit = kl.gitCommit }
  return doc, facts
end

-- The old implementation as an ImplementationRevision of the operation.
local function implementation(old, kernel, provider, od, backend, arch, dtype)
  local record = require 'kluabench.record'
  local impl = require 'kluabench.record.implementation'
  local s = type(old) == 'table' and type(old.spec) == 'table' and old.spec or {}
  if s.source == 'liger-kernel-bench' then
    local doc = require('kluabench.liger').implementation_document(kernel, provider, od)
    if doc then return doc end
  end
  local u = s.userKernel
  if type(u) == 'table' then
    local info
    if u.route == 'plugin' and type(u.plugin) == 'table' then
      info = { name = u.name, signature = u.signature, cuda = type(u.entries) == 'table' and u.entries.cuda,
        plugin = { name = u.plugin.name, version = u.plugin.version, abi_version = u.plugin.abiVersion,
          sha256 = u.plugin.sha256 } }
    else
      info = { name = u.name, symbol = u.symbol, triton = u.triton, module = { format = u.format, sha256 = u.sha256,
        source_sha256 = u.sourceSha256, options = u.compileOptions, names = u.nameExpressions,
        nvrtc_version = u.nvrtcVersion, arch = u.arch } }
    end
    local ok, doc = pcall(impl.user, { operation_digest = od, provider = provider, kernel = kernel, info = info,
      arch = arch })
    if ok then return doc end
  end
  -- built as the record says (flags, compiler, targets, the CPU), not as this binary was
  local build = type(s.build) == 'table' and s.build or nil
  local doc = record.builtin_implementation { kernel = kernel, provider = provider, backend = backend or 'cuda',
    operation_digest = od, build = build,
    arch = type(get(s, 'target', 'architecture')) == 'string' and s.target.architecture or nil }
  if doc and type(s.sources) == 'table' and next(s.sources) then
    -- the sources it was built from, not today's
    local k = require('kluabench.core')
    doc.spec.projectRevision.treeDigest = 'sha256:' .. k.sha256(k.jcs.encode(s.sources))
  end
  if doc and get(s, 'engine', 'version') then doc.spec.projectRevision.version = tostring(s.engine.version) end
  if doc then return doc end
  -- the old run's code is not this process's: what the migrating process loaded is left out
  return impl.script { operation_digest = od, provider = provider, kernel = kernel, arch = arch,
    script = 'migrated', dtypes = dtype and { dtype } or nil, loaded_code = false }
end

--- Today's form of a bundle of the earlier format (see the module's comment), sealed, with its
-- evidence entry attached; a bundle already of today's form is returned as it is.
--
-- @signature migrate.bundle(bundle) -> bundle
-- @example
--   local old = { -- a bundle of the earlier format, in part
--     workload = {kind = "BenchmarkWorkload", spec = {kernel = "llama4_rope", operation = "forward"}},
--     implementation = {kind = "KernelImplementation", spec = {provider = "fused"}},
--     run = {kind = "BenchmarkRun", spec = {samples = {unit = "ns", metric = "latency", values = {6240, 6208}}}},
--   }
--   local new = migrate.bundle(old)
--   print(new.workload.kind) --> WorkloadCase
function M.bundle(old)
  args.check('migrate.bundle', 1, old, 'table', 'bundle')
  if not M.is_old(old) then return old end
  local record = require 'kluabench.record'
  local evidence = require 'kluabench.record.evidence'
  local operation = require 'kluabench.record.operation'
  local rs = get(old, 'run', 'spec') or {}
  local ws = get(old, 'workload', 'spec') or {}
  local is = get(old, 'implementation', 'spec') or {}
  local ex = type(rs.execution) == 'table' and rs.execution or {}
  local kernel = type(ws.kernel) == 'string' and ws.kernel or 'unknown'
  local mode = type(ws.operation) == 'string' and ws.operation or 'unknown'
  local provider = type(is.provider) == 'string' and is.provider or get(old, 'run', 'metadata', 'labels', 'provider')
    or 'unknown'
  local params, other = {}, {}
  for k, v in pairs(type(ws.parameters) == 'table' and ws.parameters or {}) do
    if type(v) == 'number' and v == math.floor(v) then params[k] = math.tointeger(v) else other[k] = v end
  end
  local dtype = type(ws.dtype) == 'string' and names.dtype_name(ws.dtype) or nil
  local env_doc, facts = environment(old.environment)
  local workload, op = record.workload { kernel = kernel, parameters = params, dtype = dtype }
  local od = record.digest(op)
  local backend = facts.backend or get(old, 'run', 'metadata', 'labels', 'backend')
    or get(is, 'target', 'backend')
  local impl = implementation(old.implementation, kernel, provider, od, backend,
    env_doc.spec.hardware.architecture, dtype)
  local protocol = {
    apiVersion = 'kernelindex.dev/v1alpha1', kind = 'BenchmarkProtocol',
    metadata = { name = get(old, 'protocol', 'metadata', 'name') or 'kluabench-migrated',
      title = get(old, 'protocol', 'metadata', 'title') },
    spec = record.protocol_spec(get(old, 'protocol', 'spec') or {}),
  }
  -- the run: every statistic kept, the rest into the evidence
  local fields, latency = {}, {}
  for _, m in ipairs(type(rs.measurements) == 'table' and rs.measurements or {}) do
    if type(m) == 'table' and m.metric == 'latency' and num(m.value) then
      if m.statistic == 'p20' then fields.p20_ns = m.value
      elseif m.statistic == 'p80' then fields.p80_ns = m.value
      elseif m.statistic == 'stdev' then fields.stdev_ns = m.value
      elseif m.statistic == 'mean' then latency.mean = math.tointeger(m.value)
      elseif m.statistic == 'min' then latency.minimum = math.tointeger(m.value)
      elseif m.statistic == 'max' then latency.maximum = math.tointeger(m.value) end
    end
  end
  local tp = type(ex.throughput) == 'table' and ex.throughput or {}
  fields.gbps, fields.tflops, fields.pct_copy = num(tp.gbps), num(tp.tflops), num(tp.percentOfCopy)
  fields.copy_gbps, fields.pct_floor = num(tp.copyCeilingGbps), num(tp.percentOfFloor)
  fields.floor_ns = num(tp.floorMs) and tp.floorMs * 1e6
  fields.implausible = (tp.implausible or ex.implausible) and 1 or nil
  fields.bytes, fields.flops = num(ws.bytes), num(ws.flops)
  local session = type(ex.session) == 'table' and ex.session or {}
  fields.session, fields.sessions = num(session.index), num(session.count)
  fields.noise_sd = num(get(ex, 'sessionNoise', 'sd'))
  if type(rs.check) == 'table' then fields.rel_l2 = num(rs.check.relL2) end
  local time = type(rs.observedAt) == 'string' and names.parse_time(rs.observedAt) or names.utc(0)
  local samples = get(rs, 'samples', 'values') or get(rs, 'sourceNative', 'samples_ms')
  local scale = get(rs, 'samples', 'values') and (({ ns = 1, us = 1e3, ms = 1e6, s = 1e9 })[rs.samples.unit or 'ns'] or 1)
    or 1e6
  local median = get(rs, 'timing', 'latencyNs', 'median')
  local metrics = {}
  for k, v in pairs(get(rs, 'sourceNative', 'metrics') or {}) do
    if type(k) == 'string' and k:match('^[a-z][a-z0-9_]*$') and num(v) then metrics[k] = v end
  end
  local case = operation.case_key { axes = workload.spec.axes, dtype = dtype and operation.dtype_token(dtype) or 'opaque' }
  local run = record.run_document {
    kernel = kernel, mode = mode, provider = provider, gpu = require('kluabench.record.env').device_name(env_doc)
      or 'unknown', case = case, time = time, status = type(rs.status) == 'string' and rs.status or 'passed',
    median_ns = num(median) and math.tointeger(median), fields = fields,
    latency = latency, samples = type(samples) == 'table' and #samples > 0 and #samples or nil, metrics = metrics,
    correctness = rs.check, session = { index = math.tointeger(fields.session) or 1, count = math.tointeger(fields.sessions) or 1 },
    labels = get(old, 'run', 'metadata', 'labels'),
  }
  if type(rs.sourceNative) == 'table' and type(rs.sourceNative.externalId) == 'string' then
    run.spec.sourceNative.externalId = rs.sourceNative.externalId
    run.spec.sourceNative.source = type(rs.sourceNative.source) == 'string' and rs.sourceNative.source or 'kluabench'
  end
  -- the name is today's (the point, provider, time and session): names of the earlier format
  -- were cut at 100 characters, which cut off their time, so two sessions of one point shared a
  -- name and compare refused them as one run seen twice; the old name stays as a label
  run.metadata.labels = run.metadata.labels or {}
  local old_name = get(old, 'run', 'metadata', 'name')
  if type(old_name) == 'string' and old_name ~= run.metadata.name then
    run.metadata.labels.migrated_name = old_name:sub(1, 200)
  end
  run.metadata.labels.migrated_from = 'kluabench records before the kernelindex schemas'
  local bundle = { run = run, protocol = protocol, environment = env_doc, workload = workload, implementation = impl,
    operation = op }
  record.seal(bundle)
  local execution = {}
  for k, v in pairs(ex) do
    if k ~= 'session' and k ~= 'throughput' and k ~= 'sessionNoise' then execution[k] = v end
  end
  local entry = {
    format = evidence.FORMAT, run = run.spec.sourceNative.externalId, unit = 'ns', samples = json.array {},
    session = { index = math.tointeger(fields.session) or 1, count = math.tointeger(fields.sessions) or 1 },
    execution = record.json_safe(execution), check = record.json_safe(rs.check),
    throughput = record.json_safe(ex.throughput), sessionNoise = record.json_safe(ex.sessionNoise),
    device = record.json_safe(facts), annotations = record.json_safe(get(old, 'workload', 'metadata', 'annotations')),
    parameters = next(other) and record.json_safe(other) or nil,
  }
  for i, v in ipairs(type(samples) == 'table' and samples or {}) do
    entry.samples[i] = num(v) and record.round(v * scale) or v
  end
  evidence.attach(bundle, entry)
  return bundle
end

return M
