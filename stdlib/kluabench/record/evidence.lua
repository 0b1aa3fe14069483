-- A run's evidence entry: its raw samples and what else the session left that the schema has no
-- field for, one canonical (RFC 8785) line of the samples file beside the records file, named by the
-- run's spec.evidence.rawSamples {uri, digest} (docs/RECORDS.md, Evidence). In memory an entry is held
-- beside its bundle (attach, of) until a writer puts it in the samples file (write_for, write_file).
local json = require 'kluabench.util.json'
local files = require 'kluabench.util.files'
local args = require 'kluabench.util.args'

local M = {}

M.FORMAT = 'kluabench.samples/v1'

local function core() return require 'kluabench.core' end

-- bundle -> entry or failure, weak-keyed, in the registry: a module reloaded (busted) sees the same.
local function side_table(name)
  local reg = debug.getregistry()
  local t = reg[name]
  if t == nil then t = setmetatable({}, { __mode = 'k' }); reg[name] = t end
  return t
end
local entries = side_table('kluabench.record.evidence.entries')
local failures = side_table('kluabench.record.evidence.failures')

-- The canonical line of an entry and its digest "sha256:<hex>".
function M.encode(entry)
  if type(entry) ~= 'table' then
    error("bad argument #1 to 'evidence.encode' (entry table expected, got " .. type(entry) .. ')', 2)
  end
  local k = core()
  local line = k.jcs.encode(entry)
  return line, 'sha256:' .. k.sha256(line)
end

-- Attaches an evidence entry to an in-memory bundle (replacing any); returns the bundle.
function M.attach(bundle, entry)
  if type(bundle) ~= 'table' then
    error("bad argument #1 to 'evidence.attach' (bundle expected, got " .. type(bundle) .. ')', 2)
  end
  entries[bundle] = entry
  return bundle
end

-- The evidence entry of a bundle made or read in this process, or nil.
function M.of(bundle) return entries[bundle] end

-- Why the evidence of a bundle read in this process could not be resolved, or nil.
function M.failure(bundle) return failures[bundle] end

-- The samples file beside a records file: x.jsonl, x.json or x -> x.samples.jsonl.
function M.samples_path(path)
  if type(path) ~= 'string' or path == '' then
    error("bad argument #1 to 'samples_path' (records path expected)", 2)
  end
  local stem = path:match('^(.*)%.jsonl$') or path:match('^(.*)%.ndjson$') or path:match('^(.*)%.json$') or path
  return stem .. '.samples.jsonl'
end

-- True when a file name is that of a samples file (x.samples.jsonl).
function M.is_samples_path(path)
  return type(path) == 'string' and path:match('%.samples%.jsonl$') ~= nil
end

local function dirname(path) return path:match('^(.*)/[^/]*$') or '.' end
local function basename(path) return path:match('([^/]+)$') or path end

-- Lines already in each samples file this process appends to.
local line_count = {}

-- A samples file is a regular file or none yet: its lines are counted (a FIFO's open would block).
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

-- Writes a bundle's evidence entry into the samples file and names it in run.spec.evidence.rawSamples.
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
  local uri = ((to_stdout or dirname(samples) ~= dirname(records_path)) and ('file://' .. absolute(samples))
    or basename(samples)) .. '#L' .. n
  local spec = bundle.run.spec
  spec.evidence = spec.evidence or {}
  spec.evidence.rawSamples = { uri = uri, digest = digest }
  return true
end

-- The samples file of bundles' evidence entries, not yet written: its path and text (text nil
-- when no bundle has an entry), every such run's evidence.rawSamples set to name its line there.
-- Every entry is encoded (checked) before any run is changed. What write_file writes, for a writer
-- that must replace the samples file and the records together (files.write_atomic_all).
function M.file_of(bundles, records_path, samples)
  args.check('evidence.file_of', 1, bundles, 'table', 'list of bundles')
  args.check('evidence.file_of', 2, records_path, 'string|nil', 'records file path (nil or "-": stdout)')
  local to_stdout = records_path == nil or records_path == '-'
  if to_stdout and not samples then
    return nil, 'records on stdout need a samples file (evidence.file_of\'s third argument)'
  end
  samples = samples or M.samples_path(records_path)
  local lines, refs = {}, {}
  for _, b in ipairs(bundles) do
    local entry = entries[b]
    if entry then
      local ok, line, digest = pcall(M.encode, entry)
      if not ok then return nil, 'an evidence entry cannot be written: ' .. tostring(line) end
      lines[#lines + 1] = line
      refs[#refs + 1] = { bundle = b, line = #lines, digest = digest }
    end
  end
  if #lines == 0 then return samples, nil end
  local ok, err = regular_or_new(samples)
  if not ok then return nil, err end
  local prefix = (to_stdout or dirname(samples) ~= dirname(records_path)) and ('file://' .. absolute(samples))
    or basename(samples)
  for _, r in ipairs(refs) do
    local spec = r.bundle.run.spec
    spec.evidence = spec.evidence or {}
    spec.evidence.rawSamples = { uri = prefix .. '#L' .. r.line, digest = r.digest }
  end
  return samples, table.concat(lines, '\n') .. '\n', #lines
end

-- Writes the evidence entries of bundles as a fresh samples file (atomically, replacing one that
-- is there: for whole-file record formats, written anew each time) and sets each run's
-- evidence.rawSamples. Bundles without an entry are left as they are.
function M.write_file(bundles, records_path, samples)
  args.check('evidence.write_file', 1, bundles, 'table', 'list of bundles')
  args.check('evidence.write_file', 2, records_path, 'string|nil', 'records file path (nil or "-": stdout)')
  local path, text, n = M.file_of(bundles, records_path, samples)
  if not path then return nil, text end
  if not text then return true end
  local ok, err = files.write_atomic(path, text)
  if not ok then return nil, err end
  line_count[path] = n
  return true
end

-- Notes that a samples file was written whole with n lines (by a writer that wrote it through
-- evidence.file_of), so that appends after it number their lines on from there.
function M.written(samples, n)
  args.check('evidence.written', 1, samples, 'string', 'samples file path')
  args.check('evidence.written', 2, n, 'integer', 'line count')
  line_count[samples] = n
end

---------------------------------------------------------------------------
-- Reading
---------------------------------------------------------------------------

-- Samples files read: path -> {line(i), hash(i), search(digest)} (index_of).
local indexes = {}

-- Forgets the samples files read so far (they are re-read at the next use).
function M.forget() indexes = {} end

-- The most lines of a samples file that can be entries (lines that begin with "{") that the search
-- for an entry by its digest indexes: a file with more is refused, naming it, so that the index of
-- one file stays bounded (about 150 bytes an entry) whatever the file holds.
M.MAX_ENTRIES = 500000

-- The index keeps where every STEP-th line begins (16 bytes per STEP lines), not the lines: a file of
-- 40 MB of newlines costs its 40 MB and half a megabyte more, not a string per line.
local STEP = 64
local STEP_LINES = '^' .. ('[^\n]*\n'):rep(STEP) -- STEP lines from where it is anchored

local function not_enough_memory(err) return err == 'not enough memory' end

-- The index of a samples file's text: line(i) its line i as files.lines gives it (no "\r", the empty
-- string after a last newline not a line), line_at(offset) the number of the line that begins there.
local function build_index(path, text)
  local k = core()
  local at, pos, len = { 1 }, 1, #text
  while true do
    local _, e = text:find(STEP_LINES, pos)
    if not e then break end
    pos = e + 1
    at[#at + 1] = pos
  end
  local count = (#at - 1) * STEP
  while pos <= len do
    local nl = text:find('\n', pos, true)
    count = count + 1
    pos = nl and nl + 1 or len + 1
  end
  local ix = { count = count }
  local function start_of(i)
    if math.type(i) ~= 'integer' or i < 1 or i > count then return nil end
    local p = at[(i - 1) // STEP + 1]
    for _ = 1, (i - 1) % STEP do p = text:find('\n', p, true) + 1 end
    return p
  end
  local function line_from(p)
    local nl = text:find('\n', p, true)
    local line = text:sub(p, (nl or len + 1) - 1)
    if line:byte(-1) == 13 then line = line:sub(1, -2) end
    return line
  end
  ix.line = function(i)
    local p = start_of(i)
    return p and line_from(p) or nil
  end
  ix.hash = function(i)
    local line = ix.line(i)
    return line and ('sha256:' .. k.sha256(line)) or nil
  end
  -- the line number of the line beginning at offset p: the checkpoint before it, then the newlines
  ix.line_at = function(p)
    local lo, hi = 1, #at
    while lo < hi do
      local mid = (lo + hi + 1) // 2
      if at[mid] <= p then lo = mid else hi = mid - 1 end
    end
    local n, q = (lo - 1) * STEP + 1, at[lo]
    while q < p do q = text:find('\n', q, true) + 1; n = n + 1 end
    return n
  end
  -- digest -> offset of the first line beginning with "{" that has it, made at the first search
  local by_digest
  ix.search = function(digest)
    if not by_digest then
      by_digest = {}
      local n, p = 0, text:sub(1, 1) == '{' and 1 or nil
      if not p then p = text:find('\n{', 1, true); p = p and p + 1 end
      while p do
        n = n + 1
        if n > M.MAX_ENTRIES then
          by_digest = nil
          error({ message = string.format('%s: more than %d lines that begin with "{": more than a samples file '
            .. 'holds, not indexed', path, M.MAX_ENTRIES) })
        end
        local d = 'sha256:' .. k.sha256(line_from(p))
        by_digest[d] = by_digest[d] or p
        p = text:find('\n{', p, true)
        p = p and p + 1
      end
    end
    local p = by_digest[digest]
    return p and ix.line_at(p) or nil
  end
  return ix
end

-- Runs fn(...) and turns a memory error (or a refusal raised as {message}) into nil, message naming
-- path: an index that does not fit under the memory limit is an error about that file, never a
-- bare "not enough memory".
local function guarded(path, size, fn, ...)
  local ok, a, b = pcall(fn, ...)
  if ok then return a, b end
  if not_enough_memory(a) then
    return nil, string.format('%s: not enough memory to index it (%d bytes)', path, size)
  end
  if type(a) == 'table' and a.message then return nil, a.message end
  error(a, 0)
end

local function index_of(path)
  local ix = indexes[path]
  if ix then return ix end
  local text, err = files.read_text(path)
  if not text then return nil, err end
  ix, err = guarded(path, #text, build_index, path, text)
  if not ix then return nil, err end
  -- each lookup may build the digest index: its memory errors name the file too
  local search, hash = ix.search, ix.hash
  ix.search = function(digest) return guarded(path, #text, search, digest) end
  ix.hash = function(i) return guarded(path, #text, hash, i) end
  indexes[path] = ix
  return ix
end

-- The samples file and line a rawSamples uri names, relative to the records file; or nil and why.
function M.locate(uri, records_path)
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
  local h, serr = nil, nil
  if at then h, serr = ix.hash(at) end
  if serr then return nil, 'raw samples: ' .. serr end
  if h ~= ref.digest then
    at, serr = ix.search(ref.digest)
    if serr then return nil, 'raw samples: ' .. serr end
  end
  if not at then
    return nil, string.format('raw samples: no entry of %s has the digest %s (the samples file does not '
      .. 'match the record)', path, ref.digest)
  end
  local entry, derr = json.decode(ix.line(at))
  if type(entry) ~= 'table' or entry.format ~= M.FORMAT then
    return nil, string.format('raw samples: %s:%d is not a %s entry%s', path, at, M.FORMAT,
      derr and (' (' .. derr .. ')') or '')
  end
  return entry
end

-- The evidence entry a bundle's run names, read, checked against its digest and attached; or nil, why.
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

-- The raw samples of an entry in ms, or nil and why (none, an unknown unit, a value not finite > 0).
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
