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
-- parse and read also read each run's evidence entry (its raw samples:
-- kluabench.record.evidence) from the samples file beside the records file;
-- kluabench.result then gives the view of each.
local output = require 'kluabench.util.json'
local files = require 'kluabench.util.files'
local evidence = require 'kluabench.record.evidence'

local record = require 'kluabench.record'

local M = {}
local args = require 'kluabench.util.args'

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

local get = output.get

-- The line on which each element of a top-level JSON array starts (what messages about a bundle of
-- a JSON array file name): a scan of brackets outside strings, after cjson has read the text.
local function element_lines(text)
  local lines, depth, line, i = {}, 0, 1, 1
  local expecting = false
  while true do
    local j = text:find('[%[%]{}"\n,]', i)
    if not j then break end
    local c = text:sub(j, j)
    if c == '\n' then
      line = line + 1
    elseif c == '"' then
      if expecting then lines[#lines + 1], expecting = line, false end
      local k = j + 1
      while true do
        local q = text:find('["\\\n]', k)
        if not q then return lines end
        local qc = text:byte(q)
        if qc == 92 then k = q + 2 elseif qc == 10 then line, k = line + 1, q + 1 else j = q break end
      end
    elseif c == '[' or c == '{' then
      if expecting then lines[#lines + 1], expecting = line, false end
      depth = depth + 1
      if depth == 1 and c == '[' then expecting = true end
    elseif c == ']' or c == '}' then
      -- a scalar element (no bracket or quote of its own) is placed where it ends
      if expecting and depth == 1 and text:sub(i, j - 1):match('%S') then lines[#lines + 1] = line end
      depth, expecting = depth - 1, false
    elseif c == ',' then
      if expecting and text:sub(i, j - 1):match('%S') then lines[#lines + 1] = line end
      expecting = depth == 1
    end
    i = j + 1
  end
  return lines
end
--- t[key][...] when every step is a table, else nil: for fields of files that may be missing or of
-- another type.
--
-- @signature reader.get(t, key, ...) -> value | nil
-- @example
--   print(reader.get({run = {spec = 3}}, "run", "spec", "x")) --> nil
M.get = get

--- True when v is a table with a run table.
--
-- @signature reader.is_bundle(v) -> boolean
-- @example
--   print(reader.is_bundle({run = {}})) --> true
function M.is_bundle(v)
  return type(v) == 'table' and type(v.run) == 'table'
end

local items_of

--- Every JSON value of a file with its line, unchecked: {{bundle, line}} (what verify judges one by
-- one).
--
-- .jsonl and .ndjson labels are JSON Lines; other text is when it holds more than one value. A JSON
-- array gives its elements, {"bundles": [...]} the elements of that array.
--
-- The values are not checked (see parse). By default the first line that is not JSON fails the
-- whole text. opts.tolerant (merge's reading of shard files) keeps every line that is and lists
-- each one that is not in bad, {line, message}: one bad line never drops the others, and a last
-- line cut short (no newline after it) loses only itself.
--
-- @signature reader.items(text [, label [, opts]]) -> items | nil, line, message; with opts.tolerant: items, bad
-- @example
--   local items = reader.items('[{"run": {}}, 3]', "x.json")
--   print(#items, items[2].bundle)
--   local kept, bad = reader.items('{"run": {}}\ngarbage{{{\n', "x.jsonl", {tolerant = true})
--   print(#kept, bad[1].line, bad[1].message)
function M.items(text, label, opts)
  args.check('reader.items', 1, text, 'string', 'JSON or JSON Lines text')
  args.check('reader.items', 2, label, 'string|nil', 'label')
  args.check('reader.items', 3, opts, 'table|nil', 'table of options')
  -- a file whose values do not fit in the memory left is an error about that file (its line 1),
  -- never a bare "not enough memory" raised through the caller
  local ok, a, b, c = pcall(items_of, text, label, opts)
  if ok then return a, b, c end
  if a ~= 'not enough memory' then error(a, 0) end
  local why = string.format('not enough memory to read its %d bytes', #text)
  if opts and opts.tolerant then return {}, { { line = 1, message = why } } end
  return nil, 1, why
end

function items_of(text, label, opts)
  local tolerant = opts and opts.tolerant
  local items, bad = {}, tolerant and {} or nil
  if not is_jsonl_name(label) then
    local v, err, code = output.decode(text)
    if v ~= nil then
      if type(v) == 'table' and v.run == nil and type(v.bundles) == 'table' then
        -- {"bundles": [...]}: the element lines are not tracked, the wrapper's is
        for i, b in ipairs(v.bundles) do items[i] = { bundle = b, line = 1 } end
      elseif type(v) == 'table' and next(v) ~= nil and output.table_kind(v) == 'array' then
        local lines = element_lines(text)
        for i, b in ipairs(v) do items[i] = { bundle = b, line = lines[i] or 1 } end
      else
        items[1] = { bundle = v, line = 1 }
      end
      return items, bad
    end
    if code ~= 'trailing' then
      local line, why = split_position(err)
      if tolerant then return items, { { line = line or 1, message = why } } end
      return nil, line or 1, why
    end
  end
  -- one line at a time, and a run of blank lines skipped at once: a file of a million blank lines
  -- costs neither a table of a million strings nor a million steps
  local pos, n, len = 1, 0, #text
  while pos <= len do
    local s = text:find('%S', pos)
    if not s then break end
    -- the line begins after the last newline before s (the blank lines end there)
    local start = s
    while start > pos and text:byte(start - 1) ~= 10 do start = start - 1 end
    if start > pos then n = n + select(2, text:sub(pos, start - 1):gsub('\n', '')) end
    local nl = text:find('\n', s, true)
    local line = text:sub(start, (nl or len + 1) - 1)
    if line:byte(-1) == 13 then line = line:sub(1, -2) end
    n = n + 1
    local v, err = output.decode(line)
    if v == nil then
      local _, why = split_position(err)
      if not tolerant then return nil, n, why end
      if not nl then why = why .. ' (the last line, without a newline after it: cut short as it was written?)' end
      bad[#bad + 1] = { line = n, message = why }
    else
      items[#items + 1] = { bundle = v, line = n }
    end
    pos = nl and nl + 1 or len + 1
  end
  return items, bad
end

--- The raw samples of a bundle in ms, from its evidence entry (read with the bundle); nil and why
-- when absent or not finite positive numbers.
--
-- @signature reader.samples_of(bundle) -> ms list | nil, why
-- @example
--   local x = kb.randn({4096}, "f32", 1)
--   local r = kb.do_bench.do_bench_protocol{rep_ms = 5}:run(function() x:add_(1) end)
--   local bundle = record.from_result{kernel = "add", mode = "forward", provider = "add_", dtype = "f32", result = r}
--   local xs, why = reader.samples_of(bundle)
function M.samples_of(bundle)
  local e = evidence.of(bundle)
  if not e then return nil, evidence.failure(bundle) or 'no raw samples in the record' end
  return evidence.samples_ms(e)
end

-- What comparing needs of one bundle; nil or why not.
local function not_comparable(b)
  local wd = get(b, 'run', 'spec', 'workloadDigest')
  if type(wd) ~= 'string' or not wd:match('^sha256:%x+$') then
    return 'no workload digest (run.spec.workloadDigest): the point cannot be matched, '
      .. 'so the bundle is refused rather than pooled with others'
  end
  local s, why = M.samples_of(b)
  -- a record without samples (an import) is compared by its median; one
  -- whose samples are there but broken is refused
  if not s and why ~= 'no raw samples in the record' and not (evidence.failure(b) and not evidence.of(b)) then
    return why
  end
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
  args.check('reader.parse', 1, text, 'string', 'JSON or JSON Lines text')
  args.check('reader.parse', 2, label, 'string|nil', 'label')
  args.check('reader.parse', 3, opts, 'table|nil', 'table of options')
  label = label or 'input'
  local items, line, why = M.items(text, label)
  if not items then return nil, string.format('%s:%d: %s', label, line or 1, why) end
  if #items == 0 then return nil, label .. ': no bundles' end
  local bundles, lines = {}, {}
  for i, it in ipairs(items) do
    local b = it.bundle
    if not M.is_bundle(b) then
      if type(b) == 'table' and b.format == evidence.FORMAT then
        return nil, string.format('%s:%d: an evidence entry (a samples file), not a record bundle: give the '
          .. 'records file beside it', label, it.line)
      end
      return nil, string.format('%s:%d: not a record bundle (a JSON object with a "run" object)',
        label, it.line)
    end
    evidence.resolve(b, label)
    if opts and opts.comparable then
      local bad = not_comparable(b)
      if bad then
        local point, provider = record.label_of(b)
        return nil, string.format('%s:%d: point %s (%s): %s', label, it.line, point, provider, bad)
      end
    end
    bundles[i], lines[i] = b, it.line
  end
  return bundles, lines
end

--- The bundles of a record file (reader.parse of its text); nil, message when it cannot be read
-- or is not a file of record bundles.
--
-- @signature reader.read(path [, opts]) -> bundles, lines | nil, message
-- @example
--   local x = kb.randn({4096}, "f32", 1)
--   local r = kb.do_bench.do_bench_protocol{rep_ms = 5}:run(function() x:add_(1) end)
--   local bundle = record.from_result{kernel = "add", mode = "forward", provider = "add_", dtype = "f32", result = r}
--   local dir = os.tmpname(); os.remove(dir); assert(kb.mkdir(dir))
--   assert(writer.append(dir .. "/results.jsonl", bundle))
--   local bundles, lines = assert(reader.read(dir .. "/results.jsonl", {comparable = true}))
--   kb.remove_tree(dir)
function M.read(path, opts)
  local text, err = files.read_file(path)
  if not text then return nil, err end
  return M.parse(text, path, opts)
end

return M
