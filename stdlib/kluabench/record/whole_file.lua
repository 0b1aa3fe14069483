--- kluabench.record.whole_file: record formats written whole at the end of a run (--format kernelindex, Liger's CSV,
-- merge -o): a claim on the files when the work starts, the write under a lock on their directory, and fresh names
-- beside them when another process wrote them since (docs/RECORDS.md, "Output formats").
local core = require 'kluabench.core'
local evidence = require 'kluabench.record.evidence'
local files = require 'kluabench.util.files'
local json = require 'kluabench.util.json'
local names = require 'kluabench.record.names'
local args = require 'kluabench.util.args'
local record = require 'kluabench.record'

local M = {}

-- What a file holds now: "missing", "sha256:<hex>", or nil for what is not a regular file.
local function state_of(path)
  if path == nil or path == '-' then return nil end
  local st, _, errno = core.stat(path, true)
  if not st then return errno == 2 and 'missing' or nil end
  if st.type ~= 'file' then return nil end
  local text, err = files.read_file(path)
  if not text then return 'unreadable: ' .. tostring(err) end
  return 'sha256:' .. core.sha256(text)
end

--- What the files a whole-file write will replace hold now, for whole_file.destination to compare.
-- @signature whole_file.claim(path [, samples]) -> claim
-- @example
--   local c = whole_file.claim("results/run.json") -- what run.json and run.samples.jsonl hold now
function M.claim(path, samples)
  if type(path) ~= 'string' or path == '' then
    error("bad argument #1 to 'whole_file.claim' (path expected, got " .. (path == '' and 'an empty string' or type(path))
      .. ')', 2)
  end
  local c = { files = {} }
  local list = { path }
  if samples then list[2] = samples elseif samples == nil and path ~= '-' then list[2] = evidence.samples_path(path) end
  for _, p in ipairs(list) do
    local st = state_of(p)
    if st then c.files[#c.files + 1] = { path = p, state = st } end
  end
  return c
end

-- A sibling of path that does not exist: x.json -> x-<UTC time>.json (then -2, -3, ...).
local function sibling(path)
  local stem, ext = path:match('^(.*)(%.samples%.jsonl)$')
  if not stem then stem, ext = path:match('^(.-)(%.[^./]*)$') end
  if not stem or stem == '' or stem:sub(-1) == '/' then stem, ext = path, '' end
  local base = stem .. '-' .. names.time_id(record.now())
  for i = 1, 1000 do
    local candidate = base .. (i > 1 and ('-' .. i) or '') .. ext
    if not core.stat(candidate) then return candidate end
  end
  return base .. '-' .. tostring(os.clock()):gsub('%.', '') .. ext
end

--- Where a claimed whole-file write goes: path and samples, or fresh names beside them and a note when
-- another process wrote either since. Call it and write under whole_file.locked(path, ...).
-- @signature whole_file.destination(claim, path [, samples]) -> path, samples, note | path, samples
-- @example
--   local p = "results/run.json"
--   local path = whole_file.destination(whole_file.claim(p), p) -- p, when nothing wrote it since the claim
--   print(path) --> results/run.json
function M.destination(claim, path, samples)
  if type(claim) ~= 'table' or type(claim.files) ~= 'table' then
    error("bad argument #1 to 'whole_file.destination' (a claim from whole_file.claim expected, got " .. type(claim) .. ')', 2)
  end
  local changed
  for _, f in ipairs(claim.files) do
    if state_of(f.path) ~= f.state then changed = f.path break end
  end
  if not changed then return path, samples end
  local new_path = sibling(path)
  local new_samples = samples and sibling(samples) or nil
  return new_path, new_samples, string.format('%s was written by another process since this one started (it is '
    .. 'left as it is): this one\'s bundles go to %s instead', changed, new_path)
end

-- The lock is held from a writer's last check to its rename: one held this long is a stuck process.
local LOCK_WAIT_MS = 30000

--- Calls fn(...) holding an exclusive lock on the directory of path, waiting up to 30 s for another
-- holder (then nil, message); a directory that cannot be opened is written without it, "-" takes none.
-- @signature whole_file.locked(path, fn, ...) -> what fn returns | nil, message
-- @example
--   local dir = os.tmpname(); os.remove(dir); assert(kb.mkdir(dir))
--   print(whole_file.locked(dir .. "/run.json", function() return kb.try_lock(dir) end)) --> false	busy
--   kb.remove_tree(dir)
function M.locked(path, fn, ...)
  args.check('whole_file.locked', 1, path, 'string', 'file path')
  args.check('whole_file.locked', 2, fn, 'function', 'function')
  if path == '-' then return fn(...) end
  local dir = path:match('^(.*)/[^/]*$') or '.'
  if dir == '' then dir = '/' end
  local waited = 0
  local lock, busy = core.try_lock(dir)
  while lock == false and busy == 'busy' do
    if waited >= LOCK_WAIT_MS then
      return nil, string.format('%s: another kluabench process has held the lock on this directory for %d s '
        .. '(it writes an output here): nothing was written', dir, LOCK_WAIT_MS // 1000)
    end
    core.process.sleep(10)
    waited = waited + 10
    lock, busy = core.try_lock(dir)
  end
  local held <close> = lock or nil
  return fn(...)
end

--- Writes bundles as one pretty JSON document (one bundle, or an array) to path atomically ("-":
-- stdout), their evidence entries as a fresh samples file beside it: everything is encoded first,
-- then both files are replaced, or neither (files.write_atomic_all). opts.claim (whole_file.claim,
-- taken when the work started): when another process wrote either file since, this one's go to
-- fresh names beside them (whole_file.destination) instead of over the other's.
--
-- Returns true, the path written and a note when it is not path; nil, message on failure.
--
-- @signature whole_file.write_pretty(path, bundles [, samples [, opts]]) -> true, path [, note] | nil, message
-- @example
--   local x = kb.randn({4096}, "f32", 1)
--   local r = kb.do_bench.do_bench_protocol{rep_ms = 5}:run(function() x:add_(1) end)
--   local bundle = record.from_result{kernel = "add", mode = "forward", provider = "add_", dtype = "f32", result = r}
--   local dir = os.tmpname(); os.remove(dir); assert(kb.mkdir(dir))
--   assert(whole_file.write_pretty(dir .. "/run.json", {bundle})) -- and dir/run.samples.jsonl
--   kb.remove_tree(dir)
function M.write_pretty(path, bundles, samples, opts)
  args.check('whole_file.write_pretty', 1, path, 'string', 'file path')
  args.check('whole_file.write_pretty', 2, bundles, 'table', 'list of bundles')
  -- the check that nobody wrote the files since the claim and the writes, under one lock
  return M.locked(path, function()
    local note
    if opts and opts.claim then path, samples, note = M.destination(opts.claim, path, samples) end
    -- everything encoded (checked) first; then the samples file and the records replaced together,
    -- or neither
    local spath, stext, n = evidence.file_of(bundles, path, samples) -- names each run's entry
    if not spath then return nil, stext end
    local text, err2 = json.encode_pretty(#bundles == 1 and bundles[1] or bundles)
    if not text then return nil, err2 end
    local written, werr
    if not stext then
      written, werr = files.write_atomic(path, text)
    elseif path == '-' then
      written, werr = files.write_atomic(spath, stext)
      if written then written, werr = files.write_atomic(path, text) end
    else
      written, werr = files.write_atomic_all { { spath, stext }, { path, text } }
    end
    if not written then return nil, werr end
    if stext then evidence.written(spath, n) end
    return true, path, note
  end)
end

--- --format kernelindex, as the harness writes it: write_pretty with the claim taken at the run's start; the path
-- written and its notes, or nil and why.
-- @signature whole_file.write_kernelindex(bundles, out, samples, claim) -> path, notes | nil, message
-- @example
--   local dir = os.tmpname(); os.remove(dir); assert(kb.mkdir(dir))
--   print(whole_file.write_kernelindex({}, dir .. "/run.json")) --> a run of no bundle writes an empty array
--   kb.remove_tree(dir)
function M.write_kernelindex(bundles, out, samples, claim)
  args.check('whole_file.write_kernelindex', 1, bundles, 'table', 'list of bundles')
  local ok, where, why = M.write_pretty(out, bundles, samples, { claim = claim })
  if not ok then return nil, tostring(where) end
  return where, { why }
end

return M
