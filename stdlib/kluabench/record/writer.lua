--- Writing record files: bundles and, beside them, their evidence entries
-- (raw samples; kluabench.record.evidence). A bundle's entry is written to
-- the samples file first and its run then names it (uri and digest), so a
-- process stopped between the two leaves an unreferenced entry, never a run
-- that names an entry that is not there.
local evidence = require 'kluabench.record.evidence'
local files = require 'kluabench.report.files'
local json = require 'kluabench.report.json'
local schema = require 'kluabench.record.schema'

local M = {}

-- Every document of a bundle valid, or an error naming the first problem:
-- nothing invalid is written.
local function validate(bundle)
  for _, m in ipairs(require('kluabench.record').MEMBERS) do
    local doc = bundle[m.doc]
    if doc ~= nil then
      local problems = schema.check(doc)
      if #problems > 0 then
        return nil, string.format('refusing to write an invalid %s (%s): %s', m.doc, tostring(doc.kind), problems[1])
      end
    end
  end
  return true
end

--- Whether every document of a bundle is valid against its schema: true, or nil and a message naming
-- the first problem (what the writers check before writing).
--
-- @signature writer.check(bundle) -> true | nil, message
-- @example
--   print(writer.check({run = {kind = "BenchmarkRun"}}))
function M.check(bundle)
  if type(bundle) ~= 'table' then
    error("bad argument #1 to 'writer.check' (bundle expected, got " .. type(bundle) .. ')', 2)
  end
  return validate(bundle)
end

--- Appends a bundle as one JSON line to path ("-": stdout), its evidence entry first to the samples
-- file beside it (samples: another samples file; required when path is stdout). Every document is
-- checked against its schema first: an invalid one is not written.
--
-- @signature writer.append(path, bundle [, samples]) -> true | nil, message
-- @example
--   assert(writer.append(os.tmpname() .. ".jsonl", bundle))
function M.append(path, bundle, samples)
  if type(bundle) ~= 'table' or type(bundle.run) ~= 'table' then
    error("bad argument #2 to 'writer.append' (bundle expected, got " .. type(bundle) .. ')', 2)
  end
  local ok, err = validate(bundle)
  if not ok then return nil, err end
  ok, err = evidence.write_for(bundle, path, samples)
  if not ok then return nil, err end
  return files.append_jsonl(path, bundle)
end

--- Writes bundles as one pretty JSON document (one bundle, or an array) to path atomically ("-":
-- stdout), their evidence entries first, as a fresh samples file beside it.
--
-- @signature writer.write_pretty(path, bundles [, samples]) -> true | nil, message
-- @example
--   assert(writer.write_pretty(os.tmpname() .. ".json", {bundle}))
function M.write_pretty(path, bundles, samples)
  for _, b in ipairs(bundles) do
    local ok, err = validate(b)
    if not ok then return nil, err end
  end
  local ok, err = evidence.write_file(bundles, path, samples)
  if not ok then return nil, err end
  local text, err = json.encode_pretty(#bundles == 1 and bundles[1] or bundles)
  if not text then return nil, err end
  return files.write_atomic(path, text)
end

return M
