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
-- changes). Projects, operations and implementations are also known to
-- kernelindex by a slug, kebab(metadata.name) cut at 100 characters (its
-- submissions.ts), which must be unique too (its operations and projects
-- tables index them as unique): such a document whose slug is taken is
-- renamed to a slug-shaped name within those 100 characters, and an
-- implementation's projectSlug is its project's slug.
local json = require 'kluabench.util.json'
local names = require 'kluabench.record.names'
local record = require 'kluabench.record'

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

-- The kinds kernelindex's submission path gives a slug, kebab(metadata.name).
local SLUGGED = { SoftwareProject = true, OperationSpec = true, ImplementationRevision = true }

-- A name kernelindex's pattern accepts, at most 200 characters (at most 100
-- and slug-shaped for a kind with a slug, so that kebab keeps it whole), with
-- the first 12 hex digits of the document's digest at its end.
local function fit_name(name, digest, slugged)
  local tail = '-' .. digest:sub(8, 19)
  local n, limit
  if slugged then
    n, limit = names.kebab(tostring(name)), 100
  else
    n, limit = tostring(name):lower():gsub('[^a-z0-9._-]+', '-'):gsub('^[^a-z0-9]+', ''), 200
  end
  if n == '' then n = 'doc' end
  if #n + #tail > limit then n = n:sub(1, limit - #tail):gsub('[^a-z0-9]+$', '') end
  return n .. tail
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
  local doc = { projects = json.array(), operations = json.array(), workloads = json.array(),
    implementations = json.array(), runs = json.array() }
  local seen = {}        -- kind .. digest -> the document as it went in
  local taken = {}       -- kind .. name (and kind .. slug, for kinds with one) -> true
  local function add(d)
    local digest = record.digest(d)
    local key = d.kind .. '\0' .. digest
    if seen[key] then return seen[key], false end
    local slugged = SLUGGED[d.kind]
    local function free(name)
      return not taken[d.kind .. '\0' .. name] and not (slugged and taken[d.kind .. '\1' .. names.kebab(name)])
    end
    if not free(d.metadata.name) then
      d = renamed(d, fit_name(d.metadata.name, digest, slugged))
      if not free(d.metadata.name) then
        error({ message = string.format('%s %s: its name and slug are taken even with its digest appended', d.kind,
          d.metadata.name) })
      end
    end
    taken[d.kind .. '\0' .. d.metadata.name] = true
    if slugged then taken[d.kind .. '\1' .. names.kebab(d.metadata.name)] = true end
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
      if new then
        doc.implementations[#doc.implementations + 1] = { manifest = i, projectSlug = names.kebab(p.metadata.name) }
      end
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
