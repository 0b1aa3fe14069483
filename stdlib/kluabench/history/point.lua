--- The one place where the history reads record bundles: what it keeps of
-- a bundle (its documents as written, its identity, its raw samples, the
-- noise and copy ceiling in force) and the bundle it gives back to
-- `kluabench compare`'s functions. Nothing else under history/ looks into a
-- bundle's fields: when the record format changes (issue 19: documents
-- keyed by kernelindex digests, raw samples in an evidence file), this file
-- changes and the database does not.
--
-- Today it reads through kluabench.record.reader (reader.read,
-- reader.samples_of, reader.label_of) and the run's four digests.
local reader = require 'kluabench.record.reader'

local M = {}

local get = reader.get

-- The roles of a bundle's documents, in the order they are stored.
M.ROLES = { 'run', 'protocol', 'environment', 'workload', 'implementation', 'operation' }

--- The bundles of a record file, checked as `compare` checks them (a workload digest, finite
-- positive samples); nil and "FILE:LINE: why" otherwise.
--
-- @signature point.read(path) -> bundles | nil, message
-- @example
--   local bundles = point.read("results.jsonl")
function M.read(path)
  local bundles, err = reader.read(path, { comparable = true })
  if not bundles then return nil, err end
  return bundles
end

local function text(v) return type(v) == 'string' and v ~= '' and v or nil end

local function digest(v)
  return type(v) == 'string' and v:match('^sha256:%x+$') and v or nil
end

-- The copy ceiling a record was measured against, in GB/s: the rate over
-- its share of the ceiling (run.spec.execution.throughput), when both are
-- there.
local function copy_ceiling(b)
  local tp = get(b, 'run', 'spec', 'execution', 'throughput')
  local gbps, pct = get(tp, 'gbps'), get(tp, 'percentOfCopy')
  if type(gbps) == 'number' and type(pct) == 'number' and pct > 0 and gbps > 0 then
    return gbps * 100 / pct
  end
  return nil
end

--- What the history keeps of one bundle, or nil and why it cannot.
--
-- Returns {key = {protocol, workload, environment, implementation (digests), observed_at,
-- session_index, session_count}, documents = {role = document}, samples = ms list, label, kernel,
-- provider, device, host, backend, noise_sd, copy_gbps}. The identity of a run is its four digests,
-- the time it was observed and its session: the same bundle added twice has the same key.
--
-- @signature point.of(bundle) -> table | nil, message
-- @example
--   local p = assert(point.of(bundle))
--   print(p.label, p.provider, #p.samples)
function M.of(b)
  if not reader.is_bundle(b) then return nil, 'not a record bundle' end
  local rs = get(b, 'run', 'spec')
  local key = {
    protocol = digest(get(rs, 'protocolDigest')), workload = digest(get(rs, 'workloadDigest')),
    environment = digest(get(rs, 'environmentDigest')),
    implementation = digest(get(rs, 'implementationDigest')),
    observed_at = text(get(rs, 'observedAt')),
  }
  for _, k in ipairs { 'protocol', 'workload', 'environment', 'implementation' } do
    if not key[k] then return nil, 'the run has no ' .. k .. ' digest (run.spec.' .. k .. 'Digest)' end
  end
  if not key.observed_at then return nil, 'the run has no time (run.spec.observedAt)' end
  local session = get(rs, 'execution', 'session')
  key.session_index = math.tointeger(get(session, 'index')) or 1
  key.session_count = math.tointeger(get(session, 'count')) or 1
  local samples, why = reader.samples_of(b)
  if not samples then return nil, why end
  local label, provider = reader.label_of(b)
  local documents = {}
  for _, role in ipairs(M.ROLES) do
    if type(b[role]) == 'table' then documents[role] = b[role] end
  end
  local env = b.environment
  local device = type(env) == 'table' and require('kluabench.record.env').device_name(env) or nil
  local noise = get(rs, 'execution', 'sessionNoise', 'sd')
  return {
    key = key, documents = documents, samples = samples, label = label, provider = provider,
    kernel = text(get(b, 'workload', 'spec', 'kernel')) or label:match('^(%S+)'),
    device = device or 'unknown device',
    host = text(get(env, 'metadata', 'annotations', 'hostName')) or 'unknown host',
    backend = text(get(env, 'spec', 'backend')) or text(get(b, 'run', 'metadata', 'labels', 'backend')),
    noise_sd = type(noise) == 'number' and noise >= 0 and noise < 1 and noise or nil,
    copy_gbps = copy_ceiling(b),
  }
end

--- A bundle for kluabench.report.compare from stored documents and samples (the inverse of
-- point.of): the documents by role, with the raw samples where the reader finds them.
--
-- @signature point.bundle(documents, samples) -> bundle
-- @example
--   local b = point.bundle({run = {spec = {workloadDigest = "sha256:ab"}}}, {0.1, 0.2})
--   print(#point.samples(b))
function M.bundle(documents, samples)
  local b = {}
  for role, doc in pairs(documents) do b[role] = doc end
  if samples and not reader.samples_of(b) and type(get(b, 'run', 'spec')) == 'table' then
    b.run.spec.samples = { unit = 'ms', metric = 'latency', values = samples }
  end
  return b
end

--- The raw samples of a bundle in ms (reader.samples_of).
--
-- @signature point.samples(bundle) -> ms list | nil, why
-- @example
--   print(#point.samples({run = {spec = {samples = {unit = "ms", values = {1, 2}}}}}))
M.samples = reader.samples_of

--- The label and provider of a bundle's point, for people (reader.label_of).
--
-- @signature point.label(bundle) -> label, provider
-- @example
--   print(point.label({run = {}, implementation = {spec = {provider = "fused"}}}))
M.label = reader.label_of

return M
