--- The one place where the history reads record bundles: what it keeps of
-- a bundle (its documents as written, its identity, its raw samples, the
-- noise and copy ceiling in force) and the bundle it gives back to
-- `kluabench compare`'s functions. Nothing else under history/ looks into a
-- bundle's fields: when the record format changes (issue 19: documents
-- keyed by kernelindex digests, raw samples in an evidence file), this file
-- changes and the database does not.
--
-- It reads through kluabench.record.reader (which reads each run's raw
-- samples from its evidence entry and migrates bundles of the earlier
-- format) and kluabench.record.point (the view of a bundle every command
-- reads), and the run's four digests.
local reader = require 'kluabench.record.reader'
local evidence = require 'kluabench.record.evidence'

local M = {}
local args = require 'kluabench.util.args'
local result = require 'kluabench.result'

local get = reader.get

-- The roles of a bundle's documents, in the order they are stored.
M.ROLES = { 'run', 'protocol', 'environment', 'workload', 'implementation', 'operation' }

--- The bundles of a record file, checked as `compare` checks them (a workload digest, finite
-- positive samples); nil and "FILE:LINE: why" otherwise.
--
-- @signature history_point.read(path) -> bundles | nil, message
-- @example
--   local bundles = history_point.read("results.jsonl")
function M.read(path)
  local bundles, err = reader.read(path, { comparable = true })
  if not bundles then return nil, err end
  return bundles
end

local function text(v) return type(v) == 'string' and v ~= '' and v or nil end

local function digest(v)
  return type(v) == 'string' and v:match('^sha256:%x+$') and v or nil
end

--- What the history keeps of one bundle, or nil and why it cannot.
--
-- Returns {key = {protocol, workload, environment, implementation (digests), observed_at,
-- session_index, session_count}, documents = {role = document}, samples = ms list, raw = {unit,
-- values} (the samples as the evidence entry holds them), label, kernel, mode, provider, device,
-- host, backend, noise_sd, copy_gbps}. The identity of a run is its four digests, the time it was
-- observed and its session: the same bundle added twice has the same key.
--
-- @signature history_point.of(bundle) -> table | nil, message
-- @example
--   local x = kb.randn({4096}, "f32", 1)
--   local r = kb.do_bench.do_bench_protocol{rep_ms = 5}:run(function() x:add_(1) end)
--   local bundle = record.from_result{kernel = "add", mode = "forward", provider = "add_", dtype = "f32", result = r}
--   local p, why = history_point.of(bundle)
--   print(p and p.label or why)
function M.of(b)
  if not reader.is_bundle(b) then return nil, 'not a record bundle' end
  local ok, v = pcall(view.of, b)
  if not ok then return nil, 'not a record bundle: ' .. tostring(v) end
  local rs = get(b, 'run', 'spec')
  local key = {
    protocol = digest(get(rs, 'protocolDigest')), workload = digest(get(rs, 'workloadDigest')),
    environment = digest(get(rs, 'environmentDigest')),
    implementation = digest(get(rs, 'implementationDigest')),
    observed_at = text(get(rs, 'observedAt')),
    session_index = v.session.index, session_count = v.session.count,
  }
  for _, k in ipairs { 'protocol', 'workload', 'environment', 'implementation' } do
    if not key[k] then return nil, 'the run has no ' .. k .. ' digest (run.spec.' .. k .. 'Digest)' end
  end
  if not key.observed_at then return nil, 'the run has no time (run.spec.observedAt)' end
  if not v.samples_ms then return nil, v.samples_why or 'no raw samples in the record' end
  local label, provider = result.label_of(b, v)
  local documents = {}
  for _, role in ipairs(M.ROLES) do
    if type(b[role]) == 'table' then documents[role] = b[role] end
  end
  local noise = v.noise_sd
  return {
    key = key, documents = documents, samples = v.samples_ms, label = label, provider = provider,
    raw = { unit = v.evidence.unit or 'ns', values = v.evidence.samples },
    kernel = v.kernel or label:match('^(%S+)'), mode = v.mode,
    device = v.device or 'unknown device',
    host = text(get(b, 'environment', 'metadata', 'labels', 'host_name')) or 'unknown host',
    backend = v.backend,
    noise_sd = type(noise) == 'number' and noise >= 0 and noise < 1 and noise or nil,
    copy_gbps = v.copy_gbps,
  }
end

--- A bundle for kluabench.compare from stored documents and samples (the inverse of
-- point.of): the documents by role, with the raw samples where the reader finds them. unit: the
-- samples' ("ns", "us", "ms", "s"; default "ms"); ms samples are given back in ns.
--
-- @signature history_point.bundle(documents, samples [, unit]) -> bundle
-- @example
--   local b = history_point.bundle({run = {spec = {workloadDigest = "sha256:ab"}}}, {6240, 6272}, "ns")
--   print(#require("kluabench.record.evidence").of(b).samples)
function M.bundle(documents, samples, unit)
  args.check('history_point.bundle', 1, documents, 'table', 'table of documents')
  args.check('history_point.bundle', 2, samples, 'table|nil', 'list of samples')
  args.check('history_point.bundle', 3, unit, 'string|nil', 'unit of the samples')
  local b = {}
  for role, doc in pairs(documents) do b[role] = doc end
  if samples and type(get(b, 'run', 'spec')) == 'table' then
    unit = unit or 'ms'
    if unit == 'ms' then
      local ns = {}
      for i, ms in ipairs(samples) do ns[i] = ms * 1e6 end
      samples, unit = ns, 'ns'
    end
    evidence.attach(b, { format = evidence.FORMAT, unit = unit, samples = samples })
  end
  return b
end

-- The fields of a table flattened to "a.b.c" = text, sorted (for the
-- report's environment and protocol tables).
local function flatten(t, prefix, out, depth)
  out = out or {}
  if type(t) ~= 'table' or depth > 6 then return out end
  for k, v in pairs(t) do
    local name = prefix and (prefix .. '.' .. tostring(k)) or tostring(k)
    if type(v) == 'table' then
      if #v > 0 and type(v[1]) ~= 'table' then
        local parts = {}
        for i = 1, math.min(#v, 16) do parts[i] = tostring(v[i]) end
        out[#out + 1] = { name, table.concat(parts, ', ') .. (#v > 16 and ', ...' or '') }
      else
        flatten(v, name, out, depth + 1)
      end
    elseif type(v) ~= 'function' and type(v) ~= 'userdata' then
      out[#out + 1] = { name, tostring(v) }
    end
  end
  if depth == 0 then table.sort(out, function(a, b) return a[1] < b[1] end) end
  return out
end

--- What the HTML report shows of one bundle: label, kernel, mode, provider, device, host,
-- median_ms, p20_ms, p80_ms (recorded), samples (count), session {index, count}, noise_sd, gbps,
-- copy_gbps, protocol (name), digests {run key fields}, environment and protocol (flattened
-- {name, value} rows), observed_at.
--
-- @signature history_point.summary(bundle) -> table | nil, message
-- @example
--   local x = kb.randn({4096}, "f32", 1)
--   local r = kb.do_bench.do_bench_protocol{rep_ms = 5}:run(function() x:add_(1) end)
--   local bundle = record.from_result{kernel = "add", mode = "forward", provider = "add_", dtype = "f32", result = r}
--   local s = history_point.summary(bundle)
function M.summary(b)
  local p, why = M.of(b)
  if not p then return nil, why end
  local v = result.session(b)
  local stats = require 'kluabench.stats'
  local median = stats.median(p.samples)
  return {
    label = p.label, kernel = p.kernel, mode = p.mode, provider = p.provider,
    device = p.device, host = p.host, backend = p.backend, median_ms = median,
    p20_ms = v.p20_ns and v.p20_ns / 1e6 or stats.quantile(p.samples, 0.2),
    p80_ms = v.p80_ns and v.p80_ns / 1e6 or stats.quantile(p.samples, 0.8),
    samples = #p.samples, raw = p.samples, session = { index = p.key.session_index, count = p.key.session_count },
    noise_sd = p.noise_sd, copy_gbps = p.copy_gbps,
    gbps = v.gbps,
    protocol = text(get(b, 'protocol', 'metadata', 'name')) or p.key.protocol,
    digests = p.key, observed_at = p.key.observed_at,
    environment = flatten(get(b, 'environment', 'spec'), nil, nil, 0),
    protocol_fields = flatten(get(b, 'protocol', 'spec'), nil, nil, 0),
  }
end

--- The raw samples of a bundle in ms (reader.samples_of).
--
-- @signature history_point.samples(bundle) -> ms list | nil, why
-- @example
--   print(history_point.samples({run = {spec = {}}}))
M.samples = reader.samples_of

--- The label and provider of a bundle's point, for people (reader.label_of).
--
-- @signature history_point.label(bundle) -> label, provider
-- @example
--   print(history_point.label({run = {}, implementation = {spec = {provider = "fused"}}}))
M.label = reader.label_of

return M
