--- The history's adapter to record bundles: what only the database needs of a bundle beyond what
-- the result model gives. The history reads a run's kernel, mode, provider, device, host, backend,
-- label, raw samples, noise and copy ceiling through kluabench.result (result.session); this file
-- holds what it stores besides: the run's identity (its four digests, its time and its session),
-- its documents as written, by role, and its raw samples as its evidence entry holds them, and the
-- bundle rebuilt from a stored row for `kluabench compare`'s functions.
local reader = require 'kluabench.record.reader'
local evidence = require 'kluabench.record.evidence'
local args = require 'kluabench.util.args'

local M = {}

--- The roles of a bundle's documents, in the order they are stored.
M.ROLES = { 'run', 'protocol', 'environment', 'workload', 'implementation', 'operation' }

--- The bundles of a record file (kluabench.record.reader, with their evidence entries); nil and
-- "FILE:LINE: why" otherwise.
--
-- @signature history_point.read(path) -> bundles | nil, message
-- @example
--   local bundles, why = history_point.read("results.jsonl")
function M.read(path)
  args.check('history_point.read', 1, path, 'string', 'path')
  return reader.read(path)
end

local function digest(v) return type(v) == 'string' and v:match('^sha256:%x+$') and v or nil end

--- The identity of a run (result.session's): {protocol, workload, environment, implementation (its
-- run's digests), observed_at, session_index, session_count}, or nil and why. The same bundle added
-- twice has the same identity.
--
-- @signature history_point.key(session) -> key | nil, message
-- @example
--   local x = kb.randn({4096}, "f32", 1)
--   local r = kb.do_bench.do_bench_protocol{rep_ms = 5}:run(function() x:add_(1) end)
--   local b = record.from_result{kernel = "add", mode = "forward", provider = "add_", dtype = "f32", result = r}
--   print(history_point.key(result.session(b)).observed_at)
function M.key(s)
  args.check('history_point.key', 1, s, 'table', 'session (result.session)')
  local d = s.digests or {}
  local key = { protocol = digest(d.protocol), workload = digest(d.workload), environment = digest(d.environment),
    implementation = digest(d.implementation), observed_at = type(s.observed_at) == 'string' and s.observed_at ~= ''
      and s.observed_at or nil, session_index = s.session.index, session_count = s.session.count }
  for _, k in ipairs { 'protocol', 'workload', 'environment', 'implementation' } do
    if not key[k] then return nil, 'the run has no ' .. k .. ' digest (run.spec.' .. k .. 'Digest)' end
  end
  if not key.observed_at then return nil, 'the run has no time (run.spec.observedAt)' end
  return key
end

--- A bundle's documents as written, by role (M.ROLES), to be stored whole.
--
-- @signature history_point.documents(bundle) -> {role = document}
-- @example
--   print(history_point.documents({run = {kind = "BenchmarkRun"}}).run.kind) --> BenchmarkRun
function M.documents(b)
  args.check('history_point.documents', 1, b, 'table', 'bundle')
  local out = {}
  for _, role in ipairs(M.ROLES) do
    if type(b[role]) == 'table' then out[role] = b[role] end
  end
  return out
end

--- A session's raw samples as its evidence entry holds them: {unit, values}.
--
-- @signature history_point.raw(session) -> {unit, values}
-- @example
--   print(history_point.raw({evidence = {unit = "ns", samples = {6240, 6272}}}).unit) --> ns
function M.raw(s)
  args.check('history_point.raw', 1, s, 'table', 'session (result.session)')
  local e = s.evidence or {}
  return { unit = type(e.unit) == 'string' and e.unit or 'ns', values = e.samples }
end

--- A bundle for kluabench.compare from stored documents and samples (the inverse of storing it):
-- the documents by role, with the raw samples attached as its evidence entry. unit: the samples'
-- ("ns", "us", "ms", "s"; default "ms"); ms samples are given back in ns.
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
  if samples and type(reader.get(b, 'run', 'spec')) == 'table' then
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

return M
