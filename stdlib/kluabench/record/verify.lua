--- What `kluabench verify`, merge and the history check of a bundle read from a file: every digest
-- recomputed, every document of the kind and format its place says, and the statistics the run
-- records those of its raw samples. Validation against the public JSON Schemas is CI's
-- (tests/helpers/validate_kernelindex.py runs python3-jsonschema on one document of every kind).
local args = require 'kluabench.util.args'
local json = require 'kluabench.util.json'
local stats = require 'kluabench.stats'
local record = require 'kluabench.record'
local evidence = require 'kluabench.record.evidence'

local M = {}

local function recompute(problems, field, doc, recorded, what)
  if type(doc) ~= 'table' or type(doc.spec) ~= 'table' then
    problems[#problems + 1] = { field = field, error = 'missing ' .. what .. ' document or its spec' }
  elseif type(recorded) ~= 'string' then
    problems[#problems + 1] = { field = field, error = field .. ' is missing' }
  else
    local ok, computed = pcall(record.digest, doc)
    if not ok then
      problems[#problems + 1] = { field = field, error = 'cannot hash ' .. what .. ': ' .. tostring(computed) }
    elseif computed ~= recorded then
      problems[#problems + 1] = { field = field, recorded = recorded, computed = computed }
    end
  end
end

--- Recomputes every digest of a decoded bundle (the run's four, the workload's and the
-- implementation's digest of the operation) and checks that every document is a kernelindex
-- document of its kind; an empty list when all is well. A problem is {field, recorded, computed}
-- (a mismatch) or {field, error}.
--
-- @signature verify.check(bundle) -> problems
-- @example
--   local x = kb.randn({4096}, "f32", 1)
--   local r = kb.do_bench.do_bench_protocol{rep_ms = 5}:run(function() x:add_(1) end)
--   local bundle = record.from_result{kernel = "add", mode = "forward", provider = "add_", dtype = "f32", result = r}
--   print(#verify.check(bundle)) --> 0
function M.check(bundle)
  if type(bundle) ~= 'table' then return { { field = 'bundle', error = 'not a JSON object' } } end
  local run = bundle.run
  if type(run) ~= 'table' or type(run.spec) ~= 'table' then
    return { { field = 'run', error = 'missing run document or run.spec' } }
  end
  local problems = {}
  for _, d in ipairs(record.DIGESTS) do recompute(problems, d.field, bundle[d.doc], run.spec[d.field], d.doc) end
  for _, l in ipairs(record.OPERATION_LINKS) do
    if type(bundle[l.doc]) == 'table' then
      recompute(problems, l.field, bundle.operation, json.get(bundle[l.doc].spec, table.unpack(l.path)), 'operation')
    end
  end
  for _, m in ipairs(record.MEMBERS) do
    local doc = bundle[m.doc]
    if doc ~= nil or not m.optional then
      if type(doc) ~= 'table' then
        problems[#problems + 1] = { field = m.doc, error = 'a document (JSON object) expected' }
      elseif doc.kind ~= m.kind then
        problems[#problems + 1] = { field = m.doc, error = string.format('kind %s where %s belongs', tostring(doc.kind),
          m.kind) }
      elseif doc.apiVersion ~= record.API_VERSION then
        problems[#problems + 1] = { field = m.doc, error = string.format('apiVersion %s where %s belongs',
          args.printable(tostring(doc.apiVersion), 80), record.API_VERSION) }
      elseif type(doc.metadata) ~= 'table' or type(doc.metadata.name) ~= 'string' then
        problems[#problems + 1] = { field = m.doc, error = 'metadata.name must be a string' }
      end
    end
  end
  return problems
end

--- Whether the statistics a run records are those of its raw samples (its evidence entry): the
-- median, p20 and p80 within 1 ns of rounding, and the sample count. A list of {field, error}.
--
-- @signature verify.consistency(bundle, entry) -> problems
-- @example
--   local b = {run = {spec = {timing = {latencyNs = {median = 2000}}}}}
--   for _, p in ipairs(verify.consistency(b, {unit = "ns", samples = {1000, 1000, 1000}})) do print(p.field, p.error) end
function M.consistency(bundle, entry)
  args.check('verify.consistency', 1, bundle, 'table', 'bundle')
  args.check('verify.consistency', 2, entry, 'table|nil', 'evidence entry')
  local problems = {}
  local samples, why = evidence.samples_ms(entry)
  local rs = type(bundle.run) == 'table' and bundle.run.spec or {}
  if not samples then
    if type(entry) == 'table' and type(entry.samples) == 'table' and #entry.samples > 0 then
      problems[1] = { field = 'evidence.samples', error = why }
    end
    return problems
  end
  local function check(field, recorded, q)
    if type(recorded) ~= 'number' then return end
    local computed = record.round(stats.quantiles(samples, { q })[1] * 1e6)
    if math.abs(computed - recorded) > 1 then
      problems[#problems + 1] = { field = field, error = string.format('the run records %s ns, its raw samples give %s ns',
        tostring(recorded), tostring(computed)) }
    end
  end
  local timing = type(rs.timing) == 'table' and rs.timing or {}
  check('timing.latencyNs.median', type(timing.latencyNs) == 'table' and timing.latencyNs.median or nil, 0.5)
  local f = record.measurement_fields(rs.measurements)
  check('measurements p20', f.p20_ns, 0.2)
  check('measurements p80', f.p80_ns, 0.8)
  if timing.samples ~= nil and timing.samples ~= #samples then
    problems[#problems + 1] = { field = 'timing.samples', error = string.format('the run records %s samples, its '
      .. 'evidence holds %d', tostring(timing.samples), #samples) }
  end
  return problems
end

return M
