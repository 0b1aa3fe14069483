--- A kernelindex submission document of record bundles: the layout its
-- submission path reads (apps/web/src/server/catalog/submissions.ts in
-- github.com/SamMausberg/KernelIndex):
--   { projects = {SoftwareProject...}, operations = {OperationSpec...},
--     workloads = {WorkloadCase...},
--     implementations = {{manifest = ImplementationRevision, projectSlug}...},
--     runs = {{run = BenchmarkRun, protocol, environment}...} }
-- Every document once (by kind and digest), every manifest valid against its
-- schema, and every metadata.name unique within its kind: a second document
-- of a kind that bears a name already taken gets the name with the first 12
-- hex digits of its digest appended (names are not digested, so no digest
-- changes).
local json = require 'kluabench.io.json'
local names = require 'kluabench.record.names'
local schema = require 'kluabench.record.schema'

local M = {}

local API = 'kernelindex.dev/v1alpha1'

--- The project built-in kernels of kluabench belong to (their implementations' projectSlug).
M.KLUABENCH_PROJECT = { apiVersion = API, kind = 'SoftwareProject', metadata = { name = 'kluabench' },
  spec = { name = 'kluabench', kind = 'library' } }

-- A copy of a document with another metadata.name.
local function renamed(doc, name)
  local meta = {}
  for k, v in pairs(doc.metadata or {}) do meta[k] = v end
  meta.name = name
  return { apiVersion = doc.apiVersion, kind = doc.kind, metadata = meta, spec = doc.spec }
end

-- A name kernelindex's pattern accepts, at most 200 characters.
local function fit_name(name, digest)
  local n = tostring(name):lower():gsub('[^a-z0-9._-]+', '-'):gsub('^[^a-z0-9]+', '')
  if n == '' then n = 'doc' end
  local tail = '-' .. digest:sub(8, 19)
  if #n + #tail > 200 then n = n:sub(1, 200 - #tail) end
  return n, tail
end

--- The submission document of bundles; opts.project: the projectSlug of implementations that name
-- no project (default "local", a SoftwareProject of kind individual). Returns the document and a
-- count of each part, or nil and a message naming the first invalid document.
--
-- @signature submission.of(bundles [, opts]) -> document, counts | nil, message
-- @example
--   local sub, n = submission.of({})
--   print(n.runs)
function M.of(bundles, opts)
  if type(bundles) ~= 'table' then
    error("bad argument #1 to 'submission.of' (list of bundles expected, got " .. type(bundles) .. ')', 2)
  end
  opts = opts or {}
  local record = require 'kluabench.record.document'
  local doc = { projects = json.array(), operations = json.array(), workloads = json.array(),
    implementations = json.array(), runs = json.array() }
  local seen = {}        -- kind .. digest -> the document as it went in
  local taken = {}       -- kind .. name -> true
  local function add(d)
    local digest = record.digest(d)
    local key = d.kind .. '\0' .. digest
    if seen[key] then return seen[key], false end
    local problems = schema.check(d)
    if #problems > 0 then
      error({ message = string.format('%s %s: %s', d.kind, tostring(d.metadata and d.metadata.name), problems[1]) })
    end
    local name = d.metadata.name
    if taken[d.kind .. '\0' .. name] then
      local base, tail = fit_name(name, digest)
      d = renamed(d, base .. tail)
    end
    taken[d.kind .. '\0' .. d.metadata.name] = true
    seen[key] = d
    return d, true
  end
  local local_project = { apiVersion = API, kind = 'SoftwareProject',
    metadata = { name = names.kebab(opts.project or 'local') },
    spec = { name = opts.project or 'local', kind = 'individual' } }
  local ok, err = pcall(function()
    for _, b in ipairs(bundles) do
      local project = b.project
      if not project then
        local interface = type(b.implementation) == 'table' and type(b.implementation.spec) == 'table'
          and type(b.implementation.spec.callable) == 'table' and b.implementation.spec.callable.interface
        project = interface == 'kluabench' and M.KLUABENCH_PROJECT or local_project
      end
      local p, new = add(project)
      if new then doc.projects[#doc.projects + 1] = p end
      local o
      o, new = add(b.operation)
      if new then doc.operations[#doc.operations + 1] = o end
      local w
      w, new = add(b.workload)
      if new then doc.workloads[#doc.workloads + 1] = w end
      local i
      i, new = add(b.implementation)
      if new then doc.implementations[#doc.implementations + 1] = { manifest = i, projectSlug = p.metadata.name } end
      local r
      r, new = add(b.run)
      local pr = add(b.protocol)
      local e = add(b.environment)
      -- the same run twice (a file given twice) is one run
      if new then doc.runs[#doc.runs + 1] = { run = r, protocol = pr, environment = e } end
    end
  end)
  if not ok then
    if type(err) == 'table' then return nil, err.message end
    error(err, 0)
  end
  return doc, { projects = #doc.projects, operations = #doc.operations, workloads = #doc.workloads,
    implementations = #doc.implementations, runs = #doc.runs }
end

return M
