--- Writing record files: bundles and, beside them, their evidence entries. An entry is written before
-- the run that names it, so a process stopped between the two leaves an unreferenced entry, never a run
-- naming an entry that is not there. Also the check that no output is written over an input.
local core = require 'kluabench.core'
local evidence = require 'kluabench.record.evidence'
local files = require 'kluabench.util.files'
local json = require 'kluabench.util.json'
local names = require 'kluabench.record.names'
local args = require 'kluabench.util.args'
local record = require 'kluabench.record'
local printable = args.printable

local M = {}

--- Appends a bundle as one JSON line to path ("-": stdout), its evidence entry first to the samples file.
-- @signature writer.append(path, bundle [, samples]) -> true | nil, message
-- @example
--   local x = kb.randn({4096}, "f32", 1)
--   local r = kb.do_bench.do_bench_protocol{rep_ms = 5}:run(function() x:add_(1) end)
--   local bundle = record.from_result{kernel = "add", mode = "forward", provider = "add_", dtype = "f32", result = r}
--   local dir = os.tmpname(); os.remove(dir); assert(kb.mkdir(dir))
--   assert(writer.append(dir .. "/run.jsonl", bundle)) -- its samples go to dir/run.samples.jsonl
--   kb.remove_tree(dir)
function M.append(path, bundle, samples)
  args.check('writer.append', 1, path, 'string', 'file path')
  args.check('writer.append', 2, bundle, 'table', 'bundle')
  if type(bundle) ~= 'table' or type(bundle.run) ~= 'table' then
    error("bad argument #2 to 'writer.append' (bundle expected, got " .. type(bundle) .. ')', 2)
  end
  local ok, err = evidence.write_for(bundle, path, samples)
  if not ok then return nil, err end
  return files.append_jsonl(path, bundle)
end

-- Whole-file writes another process may race: a claim taken when the work starts, checked at the write.

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

--- What the files a whole-file write will replace hold now, for writer.destination to compare.
-- @signature writer.claim(path [, samples]) -> claim
-- @example
--   local c = writer.claim("results/run.json") -- what run.json and run.samples.jsonl hold now
function M.claim(path, samples)
  if type(path) ~= 'string' or path == '' then
    error("bad argument #1 to 'writer.claim' (path expected, got " .. (path == '' and 'an empty string' or type(path))
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
-- another process wrote either since. Call it and write under writer.locked(path, ...).
-- @signature writer.destination(claim, path [, samples]) -> path, samples, note | path, samples
-- @example
--   local p = "results/run.json"
--   local path = writer.destination(writer.claim(p), p) -- p, when nothing wrote it since the claim
--   print(path) --> results/run.json
function M.destination(claim, path, samples)
  if type(claim) ~= 'table' or type(claim.files) ~= 'table' then
    error("bad argument #1 to 'writer.destination' (a claim from writer.claim expected, got " .. type(claim) .. ')', 2)
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
-- @signature writer.locked(path, fn, ...) -> what fn returns | nil, message
-- @example
--   local dir = os.tmpname(); os.remove(dir); assert(kb.mkdir(dir))
--   print(writer.locked(dir .. "/run.json", function() return kb.try_lock(dir) end)) --> false	busy
--   kb.remove_tree(dir)
function M.locked(path, fn, ...)
  args.check('writer.locked', 1, path, 'string', 'file path')
  args.check('writer.locked', 2, fn, 'function', 'function')
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
-- then both files are replaced, or neither (files.write_atomic_all). opts.claim (writer.claim,
-- taken when the work started): when another process wrote either file since, this one's go to
-- fresh names beside them (writer.destination) instead of over the other's.
--
-- Returns true, the path written and a note when it is not path; nil, message on failure.
--
-- @signature writer.write_pretty(path, bundles [, samples [, opts]]) -> true, path [, note] | nil, message
-- @example
--   local x = kb.randn({4096}, "f32", 1)
--   local r = kb.do_bench.do_bench_protocol{rep_ms = 5}:run(function() x:add_(1) end)
--   local bundle = record.from_result{kernel = "add", mode = "forward", provider = "add_", dtype = "f32", result = r}
--   local dir = os.tmpname(); os.remove(dir); assert(kb.mkdir(dir))
--   assert(writer.write_pretty(dir .. "/run.json", {bundle})) -- and dir/run.samples.jsonl
--   kb.remove_tree(dir)
function M.write_pretty(path, bundles, samples, opts)
  args.check('writer.write_pretty', 1, path, 'string', 'file path')
  args.check('writer.write_pretty', 2, bundles, 'table', 'list of bundles')
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

-- No output written over an input: every command that writes checks it before reading or writing.

--- path made absolute against the working directory.
function M.absolute(path)
  if path:sub(1, 1) == '/' then return path end
  local cwd = os.getenv('PWD')
  if not cwd or cwd == '' then cwd = core.realpath('.') or '.' end
  path = path:gsub('^%./', '')
  return cwd .. '/' .. path
end

local function parent_and_base(path)
  local parent, base = path:match('^(.*)/([^/]*)$')
  if not parent then return '.', path end
  return parent == '' and '/' or parent, base
end

-- Links followed before a path is taken as it stands (Linux's SYMLOOP_MAX).
local MAX_LINKS = 40

--- path as one spelling: its realpath; a dangling link followed to the path it names (a file not yet
-- written: --samples linked to a --out that does not exist yet is that --out); else its deepest
-- existing ancestor's realpath with the rest after it.
function M.canonical(path)
  path = M.absolute(path)
  local real = core.realpath(path)
  if real then return real end
  for _ = 1, MAX_LINKS do
    local st = core.stat(path)
    local to = st and st.type == 'link' and core.readlink(path)
    if not to then break end
    path = to:sub(1, 1) == '/' and to or (parent_and_base(path) .. '/' .. to)
    real = core.realpath(path)
    if real then return real end
  end
  local rest, p = {}, path
  while true do
    local parent, base = parent_and_base(p)
    table.insert(rest, 1, base)
    local r = core.realpath(parent)
    if r then return (r == '/' and '' or r) .. '/' .. table.concat(rest, '/') end
    if parent == '/' or parent == '.' or parent == p then return path end
    p = parent
  end
end

--- The inputs {path, what} for M.check_output of the files a command reads, and their samples files.
function M.file_inputs(paths, without_samples)
  local inputs = {}
  for _, path in ipairs(paths) do
    if path ~= '-' then
      local shown = printable(path, 200)
      inputs[#inputs + 1] = { path, 'the input ' .. shown }
      if not without_samples then
        inputs[#inputs + 1] = { evidence.samples_path(path), 'the samples file of the input ' .. shown }
      end
    end
  end
  return inputs
end

--- Whether out (and, unless alone, its samples file) would overwrite an input, by canonical path or
-- device and inode: true, or nil and "OPTION PATH is WHAT: ..."; role(parent, name) names directory inputs.
function M.check_output(option, out, inputs, alone, role)
  if out == nil or out == '-' then return true end
  local keyed = {}
  for _, input in ipairs(inputs) do keyed[M.canonical(input[1])] = keyed[M.canonical(input[1])] or input end
  local targets = { { path = out } }
  local samples = evidence.samples_path(out)
  if not alone then targets[2] = { path = samples, samples = true } end
  for _, t in ipairs(targets) do
    local c = M.canonical(t.path)
    local what = keyed[c] and keyed[c][2]
    -- the samples file beside out is out itself (a link to it, written or not)
    if not what and t.samples and c == M.canonical(out) then what = 'the records file' end
    if not what and role then
      local parent, base = parent_and_base(c)
      what = role(parent, base)
    end
    if not what then
      local st = core.stat(t.path, true)
      if st then
        for _, input in ipairs(inputs) do
          local ist = core.stat(input[1], true)
          if ist and ist.dev == st.dev and ist.ino == st.ino then what = input[2] break end
        end
      end
    end
    if what then
      return nil, string.format('%s %s%s is %s: writing there would overwrite an input; give another path', option,
        printable(out, 200), t.samples and (' (its samples file ' .. printable(samples, 200) .. ')') or '',
        what)
    end
  end
  return true
end

return M
