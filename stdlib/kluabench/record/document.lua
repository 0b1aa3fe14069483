--- The primitives every part of a record uses: a document and its digest,
-- a bundle's members and sealing it, the time and the rounding records
-- write, a protocol's spec in the schema's fields, JSON-safe copies and
-- the digests of a kernel's source files.
-- kluabench.record (record/init.lua) documents them as record.document,
-- record.digest, ... and builds bundles on them; the other parts of
-- record/ (liger, migrate, submission, writer) require this file and never
-- the package, which requires them.
local json = require 'kluabench.util.json'
local names = require 'kluabench.record.names'
local kernels = require 'kluabench.kernels'

local args = require 'kluabench.util.args'
local M = {}

local function kb() return require 'kluabench.core' end

local function finite(v) return type(v) == 'number' and v == v and v > -math.huge and v < math.huge end

M.API_VERSION = 'kernelindex.dev/v1alpha1'

--- The documents of a bundle and their kinds, in the order they are written.
M.MEMBERS = {
  { doc = 'run', kind = 'BenchmarkRun' },
  { doc = 'protocol', kind = 'BenchmarkProtocol' },
  { doc = 'environment', kind = 'ExecutionEnvironment' },
  { doc = 'workload', kind = 'WorkloadCase' },
  { doc = 'implementation', kind = 'ImplementationRevision' },
  { doc = 'operation', kind = 'OperationSpec' },
  { doc = 'project', kind = 'SoftwareProject', optional = true },
}

--- The four digested documents, in the order the run lists their digests.
M.DIGESTS = {
  { doc = 'protocol', field = 'protocolDigest' },
  { doc = 'workload', field = 'workloadDigest' },
  { doc = 'environment', field = 'environmentDigest' },
  { doc = 'implementation', field = 'implementationDigest' },
}

--- The links to the operation: the workload's and the implementation's digest of it.
M.OPERATION_LINKS = {
  { doc = 'workload', path = { 'operationSpecDigest' }, field = 'workload.spec.operationSpecDigest' },
  { doc = 'implementation', path = { 'operation', 'specDigest' }, field = 'implementation.spec.operation.specDigest' },
}

-- (documented as record.document in record/init.lua)
function M.document(kind, spec, metadata)
  if type(kind) ~= 'string' then
    error("bad argument #1 to 'document' (kind string expected, got " .. type(kind) .. ')', 2)
  end
  if type(spec) ~= 'table' then
    error("bad argument #2 to 'document' (spec table expected, got " .. type(spec) .. ')', 2)
  end
  return { kind = kind, spec = spec, metadata = metadata or json.object(), apiVersion = M.API_VERSION }
end

-- (documented as record.digest in record/init.lua)
function M.digest(doc)
  if type(doc) ~= 'table' or type(doc.spec) ~= 'table' then
    error("bad argument #1 to 'digest' (document with a spec table expected)", 2)
  end
  local k = kb()
  return 'sha256:' .. k.sha256(k.jcs.encode { apiVersion = doc.apiVersion, kind = doc.kind, spec = doc.spec })
end

-- (documented as record.seal in record/init.lua)
function M.seal(bundle)
  args.check('record.seal', 1, bundle, 'table', 'bundle')
  for _, d in ipairs(M.DIGESTS) do
    local doc = bundle[d.doc]
    if type(doc) ~= 'table' then
      error("bad argument #1 to 'seal' (bundle has no " .. d.doc .. ' document)', 2)
    end
    bundle.run.spec[d.field] = M.digest(doc)
  end
  return bundle
end

-- (documented as record.now in record/init.lua)
function M.now()
  local ok, k = pcall(kb)
  if ok and type(k) == 'table' and type(k.time_ns) == 'function' then
    return names.utc(k.time_ns() / 1e9)
  end
  return names.utc(os.time())
end

-- (documented as record.round in record/init.lua)
function M.round(x)
  args.check('record.round', 1, x, 'number', 'number')
  local r = x >= 0 and math.floor(x + 0.5) or -math.floor(-x + 0.5)
  return math.tointeger(r) or r
end

local MEASUREMENT_FIELDS = { timer = true, synchronization = true, compileIncluded = true, setupIncluded = true,
  warmupIterations = true, warmupDuration = true, measuredIterations = true, samples = true,
  inputRegeneration = true, outlierPolicy = true, primaryStatistic = true }
local SPEC_FIELDS = { harness = true, measurement = true, correctness = true, devicePolicy = true,
  comparability = true }
local NOTES_MAX = 1000

-- Shortens notes to the schema's 1000 characters, keeping a digest of the
-- whole so that two protocols that differ only past the cut stay apart.
local function fit_notes(notes)
  if utf8.len(notes) and utf8.len(notes) <= NOTES_MAX then return notes end
  local tail = ' [sha256 of the full notes: ' .. kb().sha256(notes):sub(1, 16) .. ']'
  local keep = NOTES_MAX - #tail
  local cut = notes:sub(1, keep)
  while not utf8.len(cut) do cut = cut:sub(1, -2) end
  return cut .. tail
end

-- (documented as record.protocol_spec in record/init.lua)
function M.protocol_spec(spec)
  if type(spec) ~= 'table' then
    error("bad argument #1 to 'protocol_spec' (table expected, got " .. type(spec) .. ')', 2)
  end
  local out, extra = {}, {}
  for k, v in pairs(spec) do
    if SPEC_FIELDS[k] then out[k] = v else extra[k] = v end
  end
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
  m.timer = m.timer or 'host_monotonic'
  m.primaryStatistic = m.primaryStatistic or 'median'
  out.measurement = m
  out.harness = type(out.harness) == 'table' and out.harness or { name = 'kluabench' }
  local c = type(out.comparability) == 'table' and out.comparability or {}
  local notes = c.notes or ''
  if next(extra) then
    local ok, text = pcall(kb().jcs.encode, extra)
    if ok then notes = notes .. (notes ~= '' and ' ' or '') .. 'Parameters: ' .. text end
  end
  out.comparability = { family = c.family or 'kluabench', notes = notes ~= '' and fit_notes(notes) or nil }
  return out
end

-- A copy with only what JSON can carry (no functions, no NaN, string keys).
local function json_safe(v, depth)
  depth = depth or 0
  local t = type(v)
  if t == 'string' or t == 'boolean' then return v end
  if t == 'number' then return finite(v) and v or nil end
  if t == 'table' and depth < 16 then
    if getmetatable(v) and getmetatable(v).__name then
      local mt = getmetatable(v).__name
      if mt:match('^kluabench%.json') or mt:match('^kluabench%.jcs') then return v end
      return nil
    end
    local c = {}
    for k, x in pairs(v) do
      if type(k) == 'string' or math.type(k) == 'integer' then c[k] = json_safe(x, depth + 1) end
    end
    local ok = pcall(json.table_kind, c)
    return ok and c or nil
  end
  return nil
end
M.json_safe = json_safe

-- The repository root: two directories above this file (stdlib/kluabench/record/).
local function repo_root()
  local src = debug.getinfo(1, 'S').source
  local dir = src:match('^@(.*)/stdlib/kluabench/record/[^/]*$')
  if dir then return dir end
  if src:match('^@stdlib/kluabench/') then return '.' end
  return nil
end

-- (documented as record.kernel_sources in record/init.lua)
function M.kernel_sources(kernel, files)
  args.check('record.kernel_sources', 1, kernel, 'string', 'kernel name')
  args.check('record.kernel_sources', 2, files, 'table|nil', 'list of files')
  local k = kb()
  files = files or (kernels.KERNELS[kernel] and kernels.KERNELS[kernel].sources)
  if not files then return nil end
  local built = type(k.kernel_sources) == 'function' and k.kernel_sources() or {}
  local out = {}
  local root = repo_root()
  for _, path in ipairs(files) do
    local hex = built[path]
    if hex then
      out[path] = hex:match('^sha256:') and hex or ('sha256:' .. hex)
    elseif type(k.sha256_file) == 'function' then
      local ok, h = pcall(k.sha256_file, root and (root .. '/' .. path) or path)
      if ok and type(h) == 'string' then out[path] = 'sha256:' .. h end
    end
  end
  return next(out) and out or nil
end

return M
