--- A run's evidence: its raw samples and what else one measured session left
-- that the schema has no field for, kept beside the records.
--
-- Every run kluabench measures has one evidence entry: a JSON object written
-- as one canonical (RFC 8785) line into a samples file beside the records
-- file (results/x.jsonl -> results/x.samples.jsonl), so that a sweep of
-- thousands of points makes two files, not thousands. The run names it in
-- run.spec.evidence.rawSamples = {uri = "x.samples.jsonl#L12", digest =
-- "sha256:<hex of exactly that line's bytes, without its newline>"}. The uri
-- is relative to the records file (an absolute file:// uri where the records
-- go to stdout); its fragment names the line. A reader takes the named line
-- and checks its digest; when the line moved (files concatenated or merged
-- by hand) the entry whose bytes have that digest is found anyway, since the
-- digest identifies it.
--
-- An entry (format "kluabench.samples/v1"):
--   run          the run's sourceNative.externalId (for people)
--   unit         "ns"
--   samples      the raw samples of the session, integers in ns
--   session      {index, count}: which of the point's sessions (--runs N)
--   execution    what the protocol used and derived (n_repeat, flush bytes,
--                clocks, stopping, seeds, ...), camel-cased
--   check        the correctness check in full (reference, tolerance, ...)
--   throughput   GB/s, % of the copy ceiling, the ceiling itself and where
--                it came from, the roofline floor, notes
--   sessionNoise the between-session noise figure in force
--   device       device facts the environment has no field for (backend,
--                SM count, L2 bytes, CPU cores)
--   harness      {version, commit} of kluabench
--   annotations  what a benchmark adds (Liger's x axis name and label, ...)
--   reasons      why the run's status is not "passed", in words
-- In memory, before it is written, a bundle's entry is held beside it
-- (evidence.attach / evidence.of); writers put it in the samples file and
-- set the uri (evidence.write_for).
local json = require 'kluabench.util.json'
local files = require 'kluabench.util.files'

local M = {}
local args = require 'kluabench.util.args'

M.FORMAT = 'kluabench.samples/v1'

local function core() return require 'kluabench.core' end

-- bundle -> entry, for bundles made or read in this process (weak keys:
-- a bundle nobody holds takes its entry with it); bundle -> why its evidence
-- could not be read (evidence.resolve). Kept in the registry, not in this
-- module, so that a second load of the module (busted's insulation unloads
-- and reloads modules between spec files) sees the same entries.
local function side_table(name)
  local reg = debug.getregistry()
  local t = reg[name]
  if t == nil then
    t = setmetatable({}, { __mode = 'k' })
    reg[name] = t
  end
  return t
end
local entries = side_table('kluabench.record.evidence.entries')
local failures = side_table('kluabench.record.evidence.failures')

--- The canonical line of an entry and its digest "sha256:<hex>".
--
-- @signature evidence.encode(entry) -> line, digest
-- @example
--   local line, d = evidence.encode({format = "kluabench.samples/v1", unit = "ns", samples = {1000, 1100}})
--   print(line, d)
function M.encode(entry)
  if type(entry) ~= 'table' then
    error("bad argument #1 to 'evidence.encode' (entry table expected, got " .. type(entry) .. ')', 2)
  end
  local k = core()
  local line = k.jcs.encode(entry)
  return line, 'sha256:' .. k.sha256(line)
end

--- Attaches an evidence entry to an in-memory bundle (replacing any); returns the bundle.
--
-- @signature evidence.attach(bundle, entry) -> bundle
-- @example
--   local b = evidence.attach({run = {spec = {}}}, {format = evidence.FORMAT, unit = "ns", samples = {1000}})
--   print(#evidence.of(b).samples)
function M.attach(bundle, entry)
  if type(bundle) ~= 'table' then
    error("bad argument #1 to 'evidence.attach' (bundle expected, got " .. type(bundle) .. ')', 2)
  end
  entries[bundle] = entry
  return bundle
end

--- The evidence entry of a bundle made or read in this process, or nil.
--
-- @signature evidence.of(bundle) -> entry | nil
-- @example
--   print(evidence.of({run = {spec = {}}})) --> nil
function M.of(bundle) return entries[bundle] end

--- Why the evidence of a bundle read in this process could not be resolved (evidence.resolve), or
-- nil.
--
-- @signature evidence.failure(bundle) -> message | nil
-- @example
--   print(evidence.failure({run = {spec = {}}})) --> nil
function M.failure(bundle) return failures[bundle] end

--- The samples file beside a records file: x.jsonl, x.json or x -> x.samples.jsonl.
--
-- @signature evidence.samples_path(records_path) -> path
-- @example
--   print(evidence.samples_path("results/run.jsonl")) --> results/run.samples.jsonl
function M.samples_path(path)
  if type(path) ~= 'string' or path == '' then
    error("bad argument #1 to 'samples_path' (records path expected)", 2)
  end
  local stem = path:match('^(.*)%.jsonl$') or path:match('^(.*)%.ndjson$') or path:match('^(.*)%.json$') or path
  return stem .. '.samples.jsonl'
end

--- True when a file name is that of a samples file (x.samples.jsonl).
--
-- @signature evidence.is_samples_path(path) -> boolean
-- @example
--   print(evidence.is_samples_path("run.samples.jsonl")) --> true
function M.is_samples_path(path)
  return type(path) == 'string' and path:match('%.samples%.jsonl$') ~= nil
end

local function dirname(path) return path:match('^(.*)/[^/]*$') or '.' end
local function basename(path) return path:match('([^/]+)$') or path end

-- Lines already in each samples file this process appends to.
local line_count = {}

-- A samples file is a regular file or none yet: its lines are counted (read) before an entry is
-- appended, and runs name an entry by its line. A FIFO would block the open for a writer forever, a
-- device never ends; nil and "PATH: is a FIFO, not a regular file (...)" for those and a directory.
local function regular_or_new(path)
  local why = files.not_regular(path)
  if why then return nil, path .. ': ' .. why end
  return true
end

local function count_lines(path)
  local n = line_count[path]
  if n then return n end
  local ok, why = regular_or_new(path)
  if not ok then return nil, why end
  n = 0
  local f = io.open(path, 'rb')
  if f then
    while true do
      local chunk = f:read(1 << 20)
      if not chunk then break end
      n = n + select(2, chunk:gsub('\n', ''))
    end
    f:close()
  end
  line_count[path] = n
  return n
end

local function absolute(path)
  if path:sub(1, 1) == '/' then return path end
  local k = core()
  local real = k.realpath and k.realpath(dirname(path))
  return (real or os.getenv('PWD') or '.') .. '/' .. basename(path)
end

--- Writes the evidence entry of a bundle into the samples file and sets run.spec.evidence.rawSamples
-- to its uri and digest. records_path: where the bundle goes ("-" or nil: stdout, then samples_path
-- is required and the uri is an absolute file:// uri). A bundle without an entry is left as it is.
--
-- Returns true, or nil and a message naming the samples file.
--
-- @signature evidence.write_for(bundle, records_path [, samples_path]) -> true | nil, message
-- @example
--   local x = kb.randn({4096}, "f32", 1)
--   local r = kb.do_bench.do_bench_protocol{rep_ms = 5}:run(function() x:add_(1) end)
--   local b = record.from_result{kernel = "add", mode = "forward", provider = "add_", dtype = "f32", result = r}
--   local dir = os.tmpname(); os.remove(dir); assert(kb.mkdir(dir))
--   assert(evidence.write_for(b, dir .. "/run.jsonl")) -- the entry goes to dir/run.samples.jsonl
--   os.execute("rm -r " .. dir)
function M.write_for(bundle, records_path, samples)
  args.check('evidence.write_for', 1, bundle, 'table', 'bundle')
  args.check('evidence.write_for', 2, records_path, 'string|nil', 'records file path (nil or "-": stdout)')
  local entry = entries[bundle]
  if entry == nil then return true end
  local to_stdout = records_path == nil or records_path == '-'
  if to_stdout and not samples then
    return nil, 'records on stdout need a samples file (evidence.write_for\'s third argument)'
  end
  samples = samples or M.samples_path(records_path)
  local line, digest = M.encode(entry)
  local n, why = count_lines(samples)
  if not n then return nil, why end
  n = n + 1
  local ok, err = files.append_line(samples, line)
  if not ok then return nil, err end
  line_count[samples] = n
  local uri
  if to_stdout or dirname(samples) ~= dirname(records_path) then
    uri = 'file://' .. absolute(samples) .. '#L' .. n
  else
    uri = basename(samples) .. '#L' .. n
  end
  local spec = bundle.run.spec
  spec.evidence = spec.evidence or {}
  spec.evidence.rawSamples = { uri = uri, digest = digest }
  return true
end

--- Writes the evidence entries of bundles as a fresh samples file (atomically, replacing one that
-- is there: for whole-file record formats, written anew each time) and sets each run's
-- evidence.rawSamples. Bundles without an entry are left as they are.
--
-- @signature evidence.write_file(bundles, records_path [, samples_path]) -> true | nil, message
-- @example
--   local x = kb.randn({4096}, "f32", 1)
--   local r = kb.do_bench.do_bench_protocol{rep_ms = 5}:run(function() x:add_(1) end)
--   local b = record.from_result{kernel = "add", mode = "forward", provider = "add_", dtype = "f32", result = r}
--   local dir = os.tmpname(); os.remove(dir); assert(kb.mkdir(dir))
--   assert(evidence.write_file({b}, dir .. "/run.json"))
--   os.execute("rm -r " .. dir)
function M.write_file(bundles, records_path, samples)
  args.check('evidence.write_file', 1, bundles, 'table', 'list of bundles')
  args.check('evidence.write_file', 2, records_path, 'string|nil', 'records file path (nil or "-": stdout)')
  local to_stdout = records_path == nil or records_path == '-'
  if to_stdout and not samples then
    return nil, 'records on stdout need a samples file (evidence.write_file\'s third argument)'
  end
  samples = samples or M.samples_path(records_path)
  local lines, refs = {}, {}
  for _, b in ipairs(bundles) do
    local entry = entries[b]
    if entry then
      local line, digest = M.encode(entry)
      lines[#lines + 1] = line
      refs[#refs + 1] = { bundle = b, line = #lines, digest = digest }
    end
  end
  if #lines == 0 then return true end
  local ok, err = regular_or_new(samples)
  if not ok then return nil, err end
  ok, err = files.write_atomic(samples, table.concat(lines, '\n') .. '\n')
  if not ok then return nil, err end
  line_count[samples] = #lines
  local prefix = (to_stdout or dirname(samples) ~= dirname(records_path)) and ('file://' .. absolute(samples))
    or basename(samples)
  for _, r in ipairs(refs) do
    local spec = r.bundle.run.spec
    spec.evidence = spec.evidence or {}
    spec.evidence.rawSamples = { uri = prefix .. '#L' .. r.line, digest = r.digest }
  end
  return true
end

---------------------------------------------------------------------------
-- Reading
---------------------------------------------------------------------------

-- Samples files read in this process: path -> {lines = {...}, by_digest = {digest = line number}}.
local indexes = {}

--- Forgets the samples files read so far (they are re-read at the next use).
--
-- @signature evidence.forget()
-- @example
--   evidence.forget()
function M.forget() indexes = {} end

local function index_of(path)
  local ix = indexes[path]
  if ix then return ix end
  local text, err = files.read_text(path)
  if not text then return nil, err end
  ix = { lines = {}, by_digest = {} }
  local k = core()
  local n = 0
  for _, line in ipairs(files.lines(text)) do
    n = n + 1
    ix.lines[n] = line
  end
  if ix.lines[n] == '' then ix.lines[n] = nil end
  ix.hash = function(i)
    local line = ix.lines[i]
    return line and ('sha256:' .. k.sha256(line)) or nil
  end
  ix.search = function(digest)
    if next(ix.by_digest) == nil then
      for i = 1, #ix.lines do ix.by_digest[ix.hash(i)] = ix.by_digest[ix.hash(i)] or i end
    end
    return ix.by_digest[digest]
  end
  indexes[path] = ix
  return ix
end

--- The samples file and line a rawSamples uri names, resolved against the records file's
-- directory: path, line (nil when the uri names no line), or nil and why (also for a uri that is
-- not a non-empty string: it comes from a record as read).
--
-- @signature evidence.locate(uri, records_path) -> path, line | nil, message
-- @example
--   print(evidence.locate("run.samples.jsonl#L3", "results/run.jsonl"))
function M.locate(uri, records_path)
  -- uri comes from a record as it was read: anything that is not a non-empty string is an answer
  args.check('evidence.locate', 2, records_path, 'string|nil', 'records file path')
  if type(uri) ~= 'string' or uri == '' then return nil, 'the evidence uri is empty' end
  local target, frag = uri:match('^([^#]*)#?(.*)$')
  local path
  if target:match('^file://') then
    path = target:gsub('^file://', '')
  elseif target:match('^%a[%w+.-]*:') then
    return nil, 'evidence at ' .. uri .. ' is not a local file (only relative paths and file:// uris are read)'
  elseif target:sub(1, 1) == '/' then
    path = target
  else
    local base = records_path and records_path ~= '-' and dirname(records_path) or '.'
    path = base == '.' and target or (base .. '/' .. target)
  end
  local line = frag:match('^L(%d+)$')
  return path, line and tonumber(line) or nil
end

local function resolve(bundle, records_path)
  local spec = type(bundle) == 'table' and type(bundle.run) == 'table' and bundle.run.spec or nil
  local ref = type(spec) == 'table' and type(spec.evidence) == 'table' and spec.evidence.rawSamples or nil
  if type(ref) ~= 'table' then return nil, 'no raw samples in the record' end
  if type(ref.digest) ~= 'string' or not ref.digest:match('^sha256:%x+$') then
    return nil, 'run.spec.evidence.rawSamples has no digest'
  end
  local path, line = M.locate(ref.uri, records_path)
  if not path then return nil, line end
  local ix, err = index_of(path)
  if not ix then return nil, 'raw samples: ' .. tostring(err) end
  local at = line
  if not at or ix.hash(at) ~= ref.digest then at = ix.search(ref.digest) end
  if not at then
    return nil, string.format('raw samples: no entry of %s has the digest %s (the samples file does not '
      .. 'match the record)', path, ref.digest)
  end
  local entry, derr = json.decode(ix.lines[at])
  if type(entry) ~= 'table' or entry.format ~= M.FORMAT then
    return nil, string.format('raw samples: %s:%d is not a %s entry%s', path, at, M.FORMAT,
      derr and (' (' .. derr .. ')') or '')
  end
  return entry
end

--- The evidence entry a bundle's run names, read and checked against its digest: entry, or nil and
-- why (no evidence named, the file missing, no line with that digest, not an entry).
--
-- records_path is the file the bundle was read from (relative uris resolve against its directory).
-- The entry is also attached to the bundle (evidence.of).
--
-- @signature evidence.resolve(bundle, records_path) -> entry | nil, message
-- @example
--   local x = kb.randn({4096}, "f32", 1)
--   local r = kb.do_bench.do_bench_protocol{rep_ms = 5}:run(function() x:add_(1) end)
--   local dir = os.tmpname(); os.remove(dir); assert(kb.mkdir(dir))
--   assert(writer.append(dir .. "/run.jsonl", record.from_result{kernel = "add", mode = "forward",
--     provider = "add_", dtype = "f32", result = r}))
--   local read = assert(io.open(dir .. "/run.jsonl")):read("l")
--   local e, why = evidence.resolve(require("kluabench.util.json").decode(read), dir .. "/run.jsonl")
--   print(#e.samples, why)
--   os.execute("rm -r " .. dir)
function M.resolve(bundle, records_path)
  args.check('evidence.resolve', 1, bundle, 'table', 'bundle')
  args.check('evidence.resolve', 2, records_path, 'string|nil', 'records file path')
  if entries[bundle] then return entries[bundle] end
  local entry, why = resolve(bundle, records_path)
  if not entry then failures[bundle] = why; return nil, why end
  entries[bundle] = entry
  return entry
end

-- The factor from each unit of raw samples to ms.
local TO_MS = { ns = 1e-6, us = 1e-3, ms = 1, s = 1e3 }

--- The raw samples of an entry in ms, or nil and why (none, an unknown unit, a value that is not a
-- finite positive number).
--
-- @signature evidence.samples_ms(entry) -> list | nil, message
-- @example
--   print(#evidence.samples_ms({unit = "ns", samples = {1000, 2000}}))
function M.samples_ms(entry)
  if type(entry) ~= 'table' or type(entry.samples) ~= 'table' or #entry.samples == 0 then
    return nil, 'no raw samples in the record'
  end
  local scale = TO_MS[entry.unit or 'ns']
  if not scale then return nil, 'samples in unknown unit ' .. tostring(entry.unit) end
  local out = {}
  for i, v in ipairs(entry.samples) do
    if type(v) ~= 'number' or not (v > 0 and v < math.huge) then
      return nil, string.format('sample %d is not a finite positive number (%s)', i,
        type(v) == 'number' and string.format('%.17g', v) or type(v))
    end
    out[i] = v * scale
  end
  return out
end

return M
