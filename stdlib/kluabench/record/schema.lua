--- The kernelindex.dev/v1alpha1 schemas as a check: every document kluabench
-- writes, imports or verifies is validated against the public JSON Schema of
-- its kind (the vendored copies in stdlib/kluabench/record/schemas/, draft
-- 2020-12, strict: an unknown field is invalid) and against the field rules
-- that kernelindex's own parser adds beyond the JSON Schema (its Zod
-- refinements: a derived axis needs an expression, an argument is a tensor
-- or a scalar, a latency needs a median or a mean, URLs are https, set-like
-- lists are sorted and unique, ...).
--
-- The validator implements the keywords those schemas use (type, const,
-- enum, properties, required, additionalProperties, propertyNames, items,
-- prefixItems, minItems, maxItems, anyOf, pattern, maxLength, minimum,
-- maximum, exclusiveMinimum) and refuses a schema that uses another, so it
-- can never pass a document by ignoring a rule. Patterns are ECMA-262
-- regular expressions, matched through PCRE2 (kb.regex). `format` is an
-- annotation in draft 2020-12 and is not asserted (the date-time pattern
-- beside it is).
local json = require 'kluabench.util.json'
local files = require 'kluabench.util.files'

local M = {}
local args = require 'kluabench.util.args'

--- The kinds and their schema files.
M.FILES = {
  BenchmarkProtocol = 'benchmark-protocol', BenchmarkRun = 'benchmark-run',
  ExecutionEnvironment = 'execution-environment', ImplementationRevision = 'implementation-revision',
  ModelRevision = 'model-revision', OperationSpec = 'operation-spec',
  ServingConfiguration = 'serving-configuration', ServingRun = 'serving-run',
  ServingStackRevision = 'serving-stack-revision', ServingWorkload = 'serving-workload',
  SoftwareProject = 'software-project', WorkloadCase = 'workload-case', WorkloadSuite = 'workload-suite',
}

-- Keywords that only annotate (never make a value invalid).
local ANNOTATIONS = { ['$schema'] = true, ['$id'] = true, ['$comment'] = true, title = true,
  description = true, format = true }
local ASSERTIONS = { type = true, const = true, enum = true, properties = true, required = true,
  additionalProperties = true, propertyNames = true, items = true, prefixItems = true,
  minItems = true, maxItems = true, anyOf = true, pattern = true, maxLength = true, minimum = true,
  maximum = true, exclusiveMinimum = true }

local function schema_dir()
  local path = package.searchpath('kluabench.record.schema', package.path)
  return path and path:match('^(.*)/[^/]*$') .. '/schemas' or 'stdlib/kluabench/record/schemas'
end

--- The directory holding the vendored schema files.
--
-- @signature schema.dir() -> path
-- @example
--   print(schema.dir())
M.dir = schema_dir

local loaded = {}

--- The decoded JSON Schema of a kind (cached); raises for an unknown kind or an unreadable file.
--
-- @signature schema.of(kind) -> table
-- @example
--   print(schema.of("BenchmarkRun").title)
function M.of(kind)
  if loaded[kind] then return loaded[kind] end
  local file = M.FILES[kind]
  if not file then
    error(string.format("bad argument #1 to 'schema.of' (unknown kind %s)", tostring(kind)), 2)
  end
  local path = schema_dir() .. '/' .. file .. '.v1alpha1.schema.json'
  local text, err = files.read_file(path)
  if not text then error('kluabench.record.schema: cannot read ' .. tostring(err), 0) end
  local s, derr = json.decode(text)
  if not s then error('kluabench.record.schema: ' .. path .. ': ' .. derr, 0) end
  loaded[kind] = s
  return s
end

---------------------------------------------------------------------------
-- JSON types of Lua values
---------------------------------------------------------------------------

local function json_type(v)
  local t = type(v)
  if t == 'string' then return 'string' end
  if t == 'boolean' then return 'boolean' end
  if t == 'number' then
    if v ~= v or v == math.huge or v == -math.huge then return 'non-finite number' end
    return 'number'
  end
  if v == json.null() then return 'null' end
  if t == 'table' then
    local ok, kind = pcall(json.table_kind, v)
    return ok and kind or 'table that is not JSON'
  end
  return t
end

-- JSON Schema's integer: a number with no fractional part (1.0 is one).
local function is_integer(v)
  return type(v) == 'number' and v == v and v ~= math.huge and v ~= -math.huge and v == math.floor(v)
end

local function has_type(v, want)
  local t = json_type(v)
  if want == 'integer' then return is_integer(v) end
  return t == want
end

local function equal(a, b)
  if type(a) ~= type(b) then return false end
  if type(a) ~= 'table' then return a == b end
  for k, v in pairs(a) do if not equal(v, b[k]) then return false end end
  for k in pairs(b) do if a[k] == nil then return false end end
  return true
end

local function show(v)
  if type(v) == 'string' then return string.format('%q', #v > 60 and v:sub(1, 57) .. '...' or v) end
  if type(v) == 'table' then return json_type(v) end
  return tostring(v)
end

local function sorted_keys(t)
  local keys = {}
  for k in pairs(t) do keys[#keys + 1] = k end
  table.sort(keys, function(a, b) return tostring(a) < tostring(b) end)
  return keys
end

---------------------------------------------------------------------------
-- The validator
---------------------------------------------------------------------------

local function regex()
  return require('kluabench.core').regex
end

-- Appends "where: why" for each way v breaks s.
local function validate(v, s, where, out)
  if s == true then return end
  if s == false then out[#out + 1] = where .. ': not allowed'; return end
  for k in pairs(s) do
    if not ASSERTIONS[k] and not ANNOTATIONS[k] then
      error('kluabench.record.schema: the schema at ' .. where .. ' uses the keyword ' .. k
        .. ', which this validator does not implement', 0)
    end
  end
  local before = #out
  local function bad(fmt, ...) out[#out + 1] = where .. ': ' .. string.format(fmt, ...) end
  if s.type ~= nil then
    local types = type(s.type) == 'table' and s.type or { s.type }
    local ok = false
    for _, t in ipairs(types) do ok = ok or has_type(v, t) end
    if not ok then
      bad('%s expected, got %s', table.concat(types, ' or '), json_type(v))
      return
    end
  end
  if s.const ~= nil and not equal(v, s.const) then bad('must be %s, got %s', show(s.const), show(v)) end
  if s.enum ~= nil then
    local ok = false
    for _, e in ipairs(s.enum) do ok = ok or equal(v, e) end
    if not ok then
      local names = {}
      for i, e in ipairs(s.enum) do names[i] = tostring(e) end
      bad('must be one of %s, got %s', table.concat(names, ', '), show(v))
    end
  end
  local t = json_type(v)
  if t == 'string' then
    if s.maxLength and (utf8.len(v) or #v) > s.maxLength then
      bad('longer than %d characters (%d)', s.maxLength, utf8.len(v) or #v)
    end
    if s.pattern then
      local ok, why = regex().test(s.pattern, v)
      if not ok then bad('%s does not match %s%s', show(v), s.pattern, why and (' (' .. why .. ')') or '') end
    end
  elseif t == 'number' then
    if s.minimum and v < s.minimum then bad('%s is below the minimum %s', show(v), show(s.minimum)) end
    if s.maximum and v > s.maximum then bad('%s is above the maximum %s', show(v), show(s.maximum)) end
    if s.exclusiveMinimum and v <= s.exclusiveMinimum then
      bad('%s must be greater than %s', show(v), show(s.exclusiveMinimum))
    end
  elseif t == 'object' then
    for _, r in ipairs(s.required or {}) do
      if v[r] == nil then bad('required field %s is missing', r) end
    end
    local props = s.properties or {}
    for _, k in ipairs(sorted_keys(v)) do
      local sub = where .. '.' .. k
      if s.propertyNames then validate(k, s.propertyNames, sub .. ' (name)', out) end
      if props[k] ~= nil then
        validate(v[k], props[k], sub, out)
      elseif s.additionalProperties == false then
        out[#out + 1] = sub .. ': unknown field (the schema allows none beyond its own)'
      elseif type(s.additionalProperties) == 'table' then
        validate(v[k], s.additionalProperties, sub, out)
      end
    end
  elseif t == 'array' then
    if s.minItems and #v < s.minItems then bad('fewer than %d items (%d)', s.minItems, #v) end
    if s.maxItems and #v > s.maxItems then bad('more than %d items (%d)', s.maxItems, #v) end
    local prefix = s.prefixItems or {}
    for i, x in ipairs(v) do
      local sub = prefix[i] or s.items
      if sub ~= nil then validate(x, sub, where .. '[' .. (i - 1) .. ']', out) end
    end
  end
  if s.anyOf then
    local fits = false
    for _, alt in ipairs(s.anyOf) do
      local tmp = {}
      validate(v, alt, where, tmp)
      if #tmp == 0 then fits = true; break end
    end
    if not fits then bad('%s fits none of the allowed forms', show(v)) end
  end
  return #out == before
end

--- Validates v against a JSON Schema; the list of problems ("$.spec.status: must be one of ...").
--
-- @signature schema.validate(v, json_schema [, where]) -> problems
-- @example
--   print(#schema.validate(3, {type = "string"}))
function M.validate(v, s, where)
  args.check('schema.validate', 2, s, 'table', 'JSON Schema table')
  args.check('schema.validate', 3, where, 'string|nil', 'path')
  local out = {}
  validate(v, s, where or '$', out)
  return out
end

---------------------------------------------------------------------------
-- kernelindex's field rules beyond the JSON Schema
---------------------------------------------------------------------------

local function is_https(url)
  return type(url) == 'string' and url:match('^https://[^/%s?#]+') ~= nil and not url:find('%s')
end

--- Whether a value is an https URL as kernelindex's field rules require one (its httpsUrl): a string
-- "https://HOST..." without whitespace.
--
-- @signature schema.is_https(url) -> boolean
-- @example
--   print(schema.is_https("https://github.com/x/y"), schema.is_https("http://x"))
M.is_https = is_https

local function sorted_unique(list)
  if type(list) ~= 'table' then return true end
  for i = 2, #list do
    if not (list[i - 1] < list[i]) then return false end
  end
  return true
end

-- Rules by kind: function(spec, bad) where bad(where, why) records one.
local RULES = {}

RULES.OperationSpec = function(spec, bad)
  for _, name in ipairs(sorted_keys(type(spec.axes) == 'table' and spec.axes or {})) do
    local a = spec.axes[name]
    if type(a) == 'table' then
      if a.role == 'constant' and a.value == nil then bad('$.spec.axes.' .. name, 'a constant axis requires a value') end
      if a.role == 'derived' and a.expression == nil then
        bad('$.spec.axes.' .. name, 'a derived axis requires an expression')
      end
    end
  end
  for _, side in ipairs { 'inputs', 'outputs' } do
    for i, arg in ipairs(type(spec[side]) == 'table' and spec[side] or {}) do
      if type(arg) == 'table' and (arg.tensor == nil) == (arg.scalar == nil) then
        bad(string.format('$.spec.%s[%d]', side, i - 1), 'an argument is exactly one of tensor or scalar')
      end
    end
  end
end

RULES.BenchmarkRun = function(spec, bad)
  local l = type(spec.timing) == 'table' and spec.timing.latencyNs or nil
  if type(l) == 'table' and l.median == nil and l.mean == nil then
    bad('$.spec.timing.latencyNs', 'latencyNs requires median or mean')
  end
  local h = type(spec.evidence) == 'table' and spec.evidence.harness or nil
  if type(h) == 'table' and not is_https(h.repository) then
    bad('$.spec.evidence.harness.repository', 'expected an https URL')
  end
end

RULES.ImplementationRevision = function(spec, bad)
  local pr = type(spec.projectRevision) == 'table' and spec.projectRevision or {}
  if pr.repository ~= nil and not is_https(pr.repository) then
    bad('$.spec.projectRevision.repository', 'expected an https URL')
  end
  local s = type(spec.support) == 'table' and spec.support or {}
  for _, f in ipairs { 'hardwareArchitectures', 'productsTested', 'axes', 'dtypes', 'layouts' } do
    if not sorted_unique(s[f]) then
      bad('$.spec.support.' .. f, 'a set-like list must be sorted and free of repeats '
        .. '(kernelindex sorts it before hashing, so the digest would differ)')
    end
  end
  for i, v in ipairs(type(spec.buildVariants) == 'table' and spec.buildVariants or {}) do
    local inst = type(v) == 'table' and v.install or nil
    if type(inst) == 'table' and inst.repository ~= nil and not is_https(inst.repository) then
      bad(string.format('$.spec.buildVariants[%d].install.repository', i - 1), 'expected an https URL')
    end
  end
end

RULES.SoftwareProject = function(spec, bad)
  for _, f in ipairs { 'repository', 'homepage' } do
    if spec[f] ~= nil and not is_https(spec[f]) then bad('$.spec.' .. f, 'expected an https URL') end
  end
end

RULES.BenchmarkProtocol = function(spec, bad)
  local h = type(spec.harness) == 'table' and spec.harness or {}
  if h.repository ~= nil and not is_https(h.repository) then bad('$.spec.harness.repository', 'expected an https URL') end
  local m = type(spec.measurement) == 'table' and spec.measurement or {}
  if type(m.warmupDuration) == 'string' then
    bad('$.spec.measurement.warmupDuration', 'write durations as integer nanoseconds: kernelindex '
      .. 'normalizes a string before hashing, so the digest would differ')
  end
end

local function metadata_rules(doc, bad)
  local md = type(doc.metadata) == 'table' and doc.metadata or {}
  for i, r in ipairs(type(md.sourceRefs) == 'table' and md.sourceRefs or {}) do
    if type(r) == 'table' and not is_https(r.url) then
      bad(string.format('$.metadata.sourceRefs[%d].url', i - 1), 'expected an https URL')
    end
  end
end

--- Every way a document breaks the schema of its kind or kernelindex's field rules: a list of
-- "$.path: why" (empty when the document is valid).
--
-- @signature schema.check(doc [, kind]) -> problems
-- @example
--   for _, p in ipairs(schema.check({apiVersion = "kernelindex.dev/v1alpha1", kind = "SoftwareProject",
--     metadata = {name = "mine"}, spec = {name = "Mine", color = "blue"}})) do print(p) end
function M.check(doc, kind)
  if type(doc) ~= 'table' then return { '$: a document (JSON object) expected, got ' .. json_type(doc) } end
  kind = kind or doc.kind
  if not M.FILES[kind] then
    return { '$.kind: ' .. show(kind) .. ' is not a kernelindex.dev/v1alpha1 kind' }
  end
  local problems = M.validate(doc, M.of(kind))
  if type(doc.spec) == 'table' and RULES[kind] then
    RULES[kind](doc.spec, function(where, why) problems[#problems + 1] = where .. ': ' .. why end)
  end
  metadata_rules(doc, function(where, why) problems[#problems + 1] = where .. ': ' .. why end)
  return problems
end

--- Raises when a document is invalid, naming its kind, its metadata.name and the first problems.
--
-- @signature schema.assert_valid(doc [, what]) -> doc
-- @example
--   print(pcall(schema.assert_valid, {apiVersion = "kernelindex.dev/v1alpha1", kind = "SoftwareProject",
--     metadata = {name = "Not A Name"}, spec = {name = "x"}}))
function M.assert_valid(doc, what)
  args.check('schema.assert_valid', 1, doc, 'table', 'kernelindex document')
  args.check('schema.assert_valid', 2, what, 'string|nil', 'what the document is')
  local problems = M.check(doc)
  if #problems > 0 then
    local name = type(doc) == 'table' and type(doc.metadata) == 'table' and doc.metadata.name or '?'
    local shown = {}
    for i = 1, math.min(5, #problems) do shown[i] = problems[i] end
    error(string.format('%s%s %s is not a valid kernelindex document: %s%s', what and (what .. ': ') or '',
      tostring(type(doc) == 'table' and doc.kind or '?'), tostring(name), table.concat(shown, '; '),
      #problems > 5 and string.format(' (and %d more)', #problems - 5) or ''), 2)
  end
  return doc
end

return M
