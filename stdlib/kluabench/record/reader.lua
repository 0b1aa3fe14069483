--- The one reader of record files: JSON (a bundle, an array of bundles, or
-- {"bundles": [...]}) and JSON Lines (one bundle per line), into bundles
-- with the line each starts on, and errors that say FILE:LINE: why.
-- `kluabench compare`, `verify` and `plot` read through it.
--
-- Three levels of checking, from lenient to strict:
--   reader.items(text, label)         every JSON value with its line (verify
--                                     judges each one itself)
--   reader.parse(text, label [, opts]) bundles: JSON objects with a `run`
--                                     object, else an error naming the line
--   opts.comparable = true            also what comparing needs: a workload
--                                     digest ("sha256:..."), and raw samples
--                                     that are finite positive numbers
local output = require 'kluabench.report'
local names = require 'kluabench.record.names'

local M = {}

--- Units of run.spec.samples, in ms.
M.UNIT_MS = { ns = 1e-6, us = 1e-3, ms = 1, s = 1e3 }

local function is_jsonl_name(label)
  return type(label) == 'string' and (label:match('%.jsonl$') or label:match('%.ndjson$')) ~= nil
end

-- "line 3, column 7: why" -> 3, "7: why" (for FILE:LINE:COLUMN: why).
local function split_position(msg)
  local line, col, why = tostring(msg):match('^line (%d+), column (%d+): (.*)$')
  if line then return tonumber(line), col .. ': ' .. why end
  return nil, msg
end

-- t[k1][k2]... where every step is a table, else nil: any field of a file
-- may be missing or of another type.
local function get(t, ...)
  for i = 1, select('#', ...) do
    if type(t) ~= 'table' then return nil end
    t = t[select(i, ...)]
  end
  return t
end
--- t[key][...] when every step is a table, else nil: for fields of files that may be missing or of
-- another type.
--
-- @signature reader.get(t, key, ...) -> value | nil
-- @example
--   print(reader.get({run = {spec = 3}}, "run", "spec", "x")) --> nil
M.get = get

local function text_of(v)
  return (type(v) == 'string' or type(v) == 'number') and tostring(v) or nil
end

--- True when v is a table with a run table.
--
-- @signature reader.is_bundle(v) -> boolean
-- @example
--   print(reader.is_bundle({run = {}})) --> true
function M.is_bundle(v)
  return type(v) == 'table' and type(v.run) == 'table'
end

--- Every JSON value of a file with its line, unchecked: {{bundle, line}} (what verify judges one by
-- one).
--
-- .jsonl and .ndjson labels are JSON Lines; other text is when it holds more than one value. A JSON
-- array gives its elements, {"bundles": [...]} the elements of that array.
--
-- The values are not checked (see parse).
--
-- @signature reader.items(text [, label]) -> items | nil, line, message
-- @example
--   local items = reader.items('[{"run": {}}, 3]', "x.json")
--   print(#items, items[2].bundle)
function M.items(text, label)
  local items = {}
  if not is_jsonl_name(label) then
    local v, starts, code = output.decode(text, { starts = true })
    if v ~= nil then
      if type(v) == 'table' and v.run == nil and type(v.bundles) == 'table' then
        -- {"bundles": [...]}: the element lines are not tracked, the wrapper's is
        for i, b in ipairs(v.bundles) do items[i] = { bundle = b, line = 1 } end
      elseif type(v) == 'table' and next(v) ~= nil and output.table_kind(v) == 'array' then
        for i, b in ipairs(v) do items[i] = { bundle = b, line = starts[i] } end
      else
        items[1] = { bundle = v, line = 1 }
      end
      return items
    end
    if code ~= 'trailing' then
      local line, why = split_position(starts)
      return nil, line or 1, why
    end
  end
  local n = 0
  for line in (text .. '\n'):gmatch('(.-)\r?\n') do
    n = n + 1
    if line:match('%S') then
      local v, err = output.decode(line)
      if v == nil then
        local _, why = split_position(err)
        return nil, n, why
      end
      items[#items + 1] = { bundle = v, line = n }
    end
  end
  return items
end

--- A label for people of a bundle's point ("llama4_rope forward hidden512-...-bf16") and its
-- provider.
--
-- @signature reader.label_of(bundle) -> label, provider
-- @example
--   print(reader.label_of({run = {}, implementation = {spec = {provider = "fused"}}}))
function M.label_of(b)
  local ws = get(b, 'workload', 'spec')
  local parts = { text_of(get(ws, 'kernel')) or text_of(get(b, 'workload', 'metadata', 'name')) or '?' }
  parts[#parts + 1] = text_of(get(ws, 'operation'))
  if type(get(ws, 'parameters')) == 'table' then
    local ok, s = pcall(names.workload_slug, ws.parameters, text_of(ws.dtype))
    if ok and s ~= '' then parts[#parts + 1] = s end
  end
  local provider = text_of(get(b, 'implementation', 'spec', 'provider'))
    or text_of(get(b, 'run', 'metadata', 'labels', 'provider')) or '?'
  return table.concat(parts, ' '), provider
end

-- A copy of list times scale, or nil and why when an element is not a
-- finite positive number (a time of 0, a negative one, NaN or infinity is
-- a broken record, not a fast kernel).
local function times(list, scale)
  local out = {}
  for i, v in ipairs(list) do
    if type(v) ~= 'number' or not (v > 0 and v < math.huge) then
      return nil, string.format('sample %d is not a finite positive number (%s)', i,
        type(v) == 'number' and string.format('%.17g', v) or type(v))
    end
    out[i] = v * scale
  end
  return out
end

--- The raw samples of a bundle in ms (run.spec.samples or sourceNative.samples_ms); nil and why when
-- absent or not finite positive numbers.
--
-- Returns the list, or nil, why (no samples, an unknown unit, a value that is not a finite positive
-- number).
--
-- @signature reader.samples_of(bundle) -> ms list | nil, why
-- @example
--   print(#reader.samples_of({run = {spec = {samples = {unit = "ns", values = {1000, 2000}}}}}))
function M.samples_of(bundle)
  local s = get(bundle, 'run', 'spec', 'samples')
  if type(s) == 'table' and type(s.values) == 'table' and #s.values > 0 then
    local scale = M.UNIT_MS[s.unit or 'ns']
    if not scale then return nil, 'samples in unknown unit ' .. tostring(s.unit) end
    return times(s.values, scale)
  end
  local ms = get(bundle, 'run', 'spec', 'sourceNative', 'samples_ms')
  if type(ms) == 'table' and #ms > 0 then return times(ms, 1) end
  return nil, 'no raw samples in the record'
end

-- What comparing needs of one bundle; nil or why not.
local function not_comparable(b)
  local wd = get(b, 'run', 'spec', 'workloadDigest')
  if type(wd) ~= 'string' or not wd:match('^sha256:%x+$') then
    return 'no workload digest (run.spec.workloadDigest): the point cannot be matched, '
      .. 'so the bundle is refused rather than pooled with others'
  end
  local s, why = M.samples_of(b)
  if not s and why ~= 'no raw samples in the record' then return why end
  return nil
end

--- Strictly: every value must be a bundle (an object with a run object); errors read "LABEL:LINE:
-- why".
--
-- opts.comparable: also refuse a bundle without a workload digest ("sha256:...") or with a sample
-- that is not a finite positive number, naming the point. lines: the line each bundle starts on.
--
-- @signature reader.parse(text [, label [, opts]]) -> bundles, lines | nil, message
-- @example
--   local bs, lines = reader.parse('{"run": {}}\n{"run": {}}\n', "x.jsonl")
--   print(#bs, lines[2])
function M.parse(text, label, opts)
  label = label or 'input'
  local items, line, why = M.items(text, label)
  if not items then return nil, string.format('%s:%d: %s', label, line or 1, why) end
  if #items == 0 then return nil, label .. ': no bundles' end
  local bundles, lines = {}, {}
  for i, it in ipairs(items) do
    local b = it.bundle
    if not M.is_bundle(b) then
      return nil, string.format('%s:%d: not a record bundle (a JSON object with a "run" object)',
        label, it.line)
    end
    if opts and opts.comparable then
      local bad = not_comparable(b)
      if bad then
        local point, provider = M.label_of(b)
        return nil, string.format('%s:%d: point %s (%s): %s', label, it.line, point, provider, bad)
      end
    end
    bundles[i], lines[i] = b, it.line
  end
  return bundles, lines
end

--- The bundles of a record file (reader.parse of its text).
--
-- The bundles of a file (see parse); nil, message when it cannot be read or is not a file of record
-- bundles.
--
-- @signature reader.read(path [, opts]) -> bundles, lines | nil, message
-- @example
--   local bundles, lines = assert(reader.read("results.jsonl", {comparable = true}))
function M.read(path, opts)
  local text, err = output.read_file(path)
  if not text then return nil, err end
  return M.parse(text, path, opts)
end

return M
