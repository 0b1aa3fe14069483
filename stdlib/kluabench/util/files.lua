-- Files: whole-file reads, atomic writes, JSON Lines appends, mkdir -p.
local core = require 'kluabench.core'
local args = require 'kluabench.util.args'
local json = require 'kluabench.util.json'

local M = {}


-- The largest file read_file reads (512 MiB): refused by its size before any of it is read.
M.MAX_READ_BYTES = 512 * 1024 * 1024

-- A whole regular file's bytes, at most max_bytes (default files.MAX_READ_BYTES), or nil and "path: cause";
-- a FIFO or device is never opened, and the size is checked before any byte is read.
function M.read_file(path, max_bytes)
  max_bytes = max_bytes or M.MAX_READ_BYTES
  local c = core
  if c and c.read_file then return c.read_file(path, max_bytes) end
  -- without the engine (busted on a machine without the binary): plain io
  local f, err = io.open(path, 'rb')
  if not f then return nil, err end
  local text, rerr = f:read(max_bytes + 1)
  f:close()
  if rerr then return nil, path .. ': ' .. tostring(rerr) end
  text = text or '' -- nil at the end of an empty file
  if #text > max_bytes then
    return nil, string.format('%s: is larger than %d bytes, the most kluabench reads here', path, max_bytes)
  end
  return text
end

-- report.read_file for text: UTF-16 and UTF-32 refused, a UTF-8 byte order mark dropped.
function M.read_text(path, max_bytes)
  args.check('report.read_text', 1, path, 'string', 'path')
  args.check('report.read_text', 2, max_bytes, 'integer|nil', 'byte limit')
  local text, err = M.read_file(path, max_bytes)
  if not text then return nil, err end
  local enc = json.encoding_problem(text)
  if enc then return nil, path .. ': ' .. enc end
  if text:sub(1, 3) == '\239\187\191' then text = text:sub(4) end
  return text
end

-- The lines of a text as `(text .. "\n"):gmatch("(.-)\r?\n")` gives them, at a fraction of its cost.
function M.lines(text)
  args.check('report.lines', 1, text, 'string', 'text')
  local out, pos, n = {}, 1, #text
  while pos <= n + 1 do
    local nl = text:find('\n', pos, true)
    local line = text:sub(pos, (nl or n + 1) - 1)
    if line:byte(-1) == 13 then line = line:sub(1, -2) end
    out[#out + 1] = line
    if not nl then break end
    pos = nl + 1
  end
  return out
end

-- Linux's NAME_MAX (and PATH_MAX below): a longer path is refused before anything is created.
local NAME_MAX = 255
local function path_max() return core.PATH_MAX or 4096 end

-- Whether path and each of its names fit the system's limits: true, or nil and a message naming it.
function M.check_path_length(path)
  args.check('report.check_path_length', 1, path, 'string', 'path')
  local limit = path_max()
  if #path >= limit then
    return nil, string.format('%s...: the path is %d bytes long, the system takes at most %d',
      path:sub(1, 60), #path, limit - 1)
  end
  for part in path:gmatch('[^/]+') do
    if #part > NAME_MAX then
      return nil, string.format('%s...: a name in the path is %d bytes long, the system takes at most %d',
        path:sub(1, 60), #part, NAME_MAX)
    end
  end
  return true
end

-- io.open's message names the file it opened; ours names the user's path.
local function reason(err, name)
  err = tostring(err)
  if name and err:sub(1, #name + 2) == name .. ': ' then err = err:sub(#name + 3) end
  return err
end

-- What path is (kb.stat's type, or 'missing') and its stat; nil when the engine cannot tell.
local function kind_of(path, follow)
  local c = core
  if not (c and c.stat) then return nil end
  local st, _, errno = c.stat(path, follow)
  if not st then return errno == 2 and 'missing' or nil, nil end
  return st.type, st
end

-- kb.stat's types as kb.read_file (engine/os/fs.c) names them in its messages.
local KIND_WORDS = { fifo = 'a FIFO', char = 'a character device', block = 'a block device', socket = 'a socket',
  other = 'an unknown kind of file' }

-- Why a path that exists is not a regular file, as read_file words it; nil otherwise. Never opened.
function M.not_regular(path)
  args.check('report.not_regular', 1, path, 'string', 'path')
  local kind = kind_of(path, true)
  if kind == nil or kind == 'missing' or kind == 'file' then return nil end
  if kind == 'directory' then return 'is a directory' end
  return string.format('is %s, not a regular file (a device or a FIFO may never end)', KIND_WORDS[kind] or kind)
end

-- Writes text to stdout and flushes: nil, "stdout: why" when stdout is full, closed or gone.
function M.write_stdout(text)
  args.check('report.write_stdout', 1, text, 'string', 'text')
  local ok, err = io.stdout:write(text)
  if ok then ok, err = io.stdout:flush() end
  if not ok then return nil, 'stdout: ' .. reason(err) end
  return true
end

-- Opens path in mode, writes text (one write(2) unbuffered), flushes and closes: true or nil, "path: why".
local function write_to(path, mode, text, unbuffered)
  local f, err = io.open(path, mode)
  if not f then return nil, string.format('%s: %s', path, reason(err, path)) end
  if unbuffered then f:setvbuf('no') end
  local ok, werr = f:write(text)
  if ok then ok, werr = f:flush() end
  local closed, cerr = f:close()
  if ok and not closed then ok, werr = nil, cerr end
  if not ok then return nil, string.format('%s: %s', path, reason(werr, path)) end
  return true
end

-- Devices, FIFOs, a link whose target is missing: nothing to replace atomically.
local function write_in_place(path, text) return write_to(path, 'wb', text) end

-- The temporary of an atomic replacement of target: text written, fsync'ed and closed in a file
-- beside it that kb.write_temp creates exclusively under a random name (never one a link can be
-- planted at), given mode. Raises nothing itself; returns its path or nil, reason. created gets the
-- path the moment the file exists: an interrupt that ends the call before the path comes back
-- leaves the caller what to remove (remove_created).
local function write_temp(target, text, mode, created)
  local c = core
  if not (c and c.write_temp) then return nil, 'this build has no kb.write_temp (temporary files)' end
  local tmp, err = c.write_temp(target, text, mode, created)
  if not tmp then return nil, reason(err, target) end
  return tmp
end

-- Removes the temporaries kb.write_temp made (and that were not renamed since: renamed[path]).
local function remove_created(created, renamed)
  for _, t in ipairs(created) do
    if not (renamed and renamed[t]) then os.remove(t) end
  end
end

-- Writes text to path through a fsync'ed temporary file and a rename: readers see the old file or the new.
-- A link is written through to its target; a device, a FIFO or "-" (stdout) in place.
function M.write_atomic(path, text)
  if type(path) ~= 'string' or path == '' then error("bad argument #1 to 'write_atomic' (path expected)", 2) end
  if type(text) ~= 'string' then error("bad argument #2 to 'write_atomic' (string expected, got " .. type(text) .. ')', 2) end
  if path == '-' then return M.write_stdout(text) end
  local okl, lerr = M.check_path_length(path)
  if not okl then return nil, lerr end
  local target, kind, st = path, kind_of(path, false)
  if kind == 'link' then
    local c = core
    local real = c.realpath(path)
    if not real then return write_in_place(path, text) end -- dangling: open() creates the target
    target = real
    kind, st = kind_of(real, true)
  end
  if kind == 'directory' then return nil, path .. ': is a directory' end
  if kind and kind ~= 'missing' and kind ~= 'file' then return write_in_place(path, text) end
  local c, created, done = core, {}, false
  local called, ok, werr = pcall(function()
    local t, err = write_temp(target, text, st and st.mode, created)
    if not t then return nil, err end
    local renamed, rerr = os.rename(t, target)
    if not renamed then return nil, reason(rerr, t) end
    done = true
    return true
  end)
  if not (called and ok) then
    if not done then remove_created(created) end
    -- an interrupt (raised here) is raised again, the temporary file gone
    if not called then error(ok, 0) end
    if c and c.interrupted and c.interrupted() then error('interrupted!', 0) end
    return nil, string.format('%s: %s', path, tostring(werr))
  end
  if c and c.fsync then
    -- the rename is durable once the directory is (some file systems refuse fsync on a directory)
    pcall(c.fsync, target:match('^(.*)/[^/]*$') or '.')
  end
  return true
end

-- Writes several files so that every one is replaced or none is: each file's text goes to a
-- temporary file beside it first (as write_atomic writes one), and only when all of them are
-- written are they renamed over their paths, in the order given. A failure before the renames
-- removes the temporary files and leaves every path as it was. list: {{path, text}, ...}; paths
-- as write_atomic takes them (a link is written through to its target; a device or a FIFO is
-- written in place, after the others are renamed; "-" is refused).
function M.write_atomic_all(list)
  args.check('report.write_atomic_all', 1, list, 'table', 'list of {path, text}')
  local plan, c = {}, core
  for i, item in ipairs(list) do
    local path, text = type(item) == 'table' and item[1], type(item) == 'table' and item[2]
    if type(path) ~= 'string' or path == '' or path == '-' or type(text) ~= 'string' then
      error(string.format("bad argument #1 to 'write_atomic_all' (element %d: {path, text} expected, a path "
        .. "other than '-')", i), 2)
    end
    local okl, lerr = M.check_path_length(path)
    if not okl then return nil, lerr end
    local target, kind, st = path, kind_of(path, false)
    if kind == 'link' then
      local real = c and c.realpath(path)
      if real then target, kind, st = real, kind_of(real, true) else kind = 'in place' end
    end
    if kind == 'directory' then return nil, path .. ': is a directory' end
    local in_place = kind and kind ~= 'missing' and kind ~= 'file'
    plan[i] = { path = path, target = target, text = text, mode = st and st.mode, in_place = in_place }
  end
  local created = {}
  for _, p in ipairs(plan) do
    if not p.in_place then
      local called, ok, werr = pcall(function()
        local tmp, err = write_temp(p.target, p.text, p.mode, created)
        p.tmp = tmp
        return tmp ~= nil, err
      end)
      if not (called and ok) then
        remove_created(created)
        if not called then error(ok, 0) end
        if c and c.interrupted and c.interrupted() then error('interrupted!', 0) end
        return nil, string.format('%s: %s', p.path, tostring(werr))
      end
    end
  end
  for k, p in ipairs(plan) do
    if p.tmp then
      local ok, err = os.rename(p.tmp, p.target)
      if not ok then
        for j = k, #plan do if plan[j].tmp then os.remove(plan[j].tmp) end end
        return nil, string.format('%s: %s', p.path, reason(err, p.tmp))
      end
    end
  end
  for _, p in ipairs(plan) do
    if p.in_place then
      local ok, err = write_in_place(p.path, p.text)
      if not ok then return nil, err end
    end
  end
  if c and c.fsync then
    for _, p in ipairs(plan) do
      if p.tmp then pcall(c.fsync, p.target:match('^(.*)/[^/]*$') or '.') end
    end
  end
  return true
end

-- True when path is a regular file that begins as a SQLite database does ("SQLite format 3\0": a
-- history database, or another program's).
function M.is_sqlite(path)
  args.check('report.is_sqlite', 1, path, 'string', 'path')
  if kind_of(path, true) ~= 'file' then return false end
  local f = io.open(path, 'rb')
  if not f then return false end
  local head = f:read(16)
  f:close()
  return head == 'SQLite format 3\0'
end

-- Whether an output path can be written, before any work: a writable file that is no directory or SQLite
-- database, or a new file in a writable directory (probed). Nothing is truncated.
function M.check_writable(path)
  if type(path) ~= 'string' or path == '' then error("bad argument #1 to 'check_writable' (path expected)", 2) end
  if path == '-' then return true end
  local okl, lerr = M.check_path_length(path)
  if not okl then return nil, lerr end
  local kind = kind_of(path, true)
  if kind == 'directory' then return nil, path .. ': is a directory' end
  if kind == 'fifo' or kind == 'socket' then return true end -- opening a FIFO waits for a reader
  if kind and kind ~= 'missing' then
    local f, err = io.open(path, 'ab')
    if not f then return nil, string.format('%s: cannot write: %s', path, reason(err, path)) end
    f:close()
    if kind == 'file' and M.is_sqlite(path) then
      return nil, string.format('%s: a SQLite database (a history database?): results and reports are never '
        .. 'written over one; give another path', path)
    end
    return true
  end
  local dir = path:match('^(.*)/[^/]*$') or '.'
  if dir == '' then dir = '/' end
  local dkind = kind_of(dir, true)
  if dkind and dkind ~= 'directory' then
    return nil, string.format('%s: cannot write: %s %s', path, dir,
      dkind == 'missing' and 'does not exist' or 'is not a directory')
  end
  -- the probe: an empty temporary beside path, created exclusively (never through a planted link),
  -- removed whatever happens (an interrupt as it comes back included)
  local created = {}
  local called, probe, err = pcall(write_temp, path, '', nil, created)
  remove_created(created)
  if not called then error(probe, 0) end
  if not probe then return nil, string.format('%s: cannot write: %s', path, err) end
  return true
end

-- Appends value as one JSON line to path ("-": stdout) in one write(2): a kill leaves whole lines only.
function M.append_jsonl(path, value)
  args.check('report.append_jsonl', 1, path, 'string', 'path')
  local line, err = json.encode_line(value)
  if not line then return nil, err end
  return M.append_line(path, line)
end

-- Appends one line of text (a newline added) to path ("-": stdout), as append_jsonl does.
function M.append_line(path, line)
  args.check('report.append_line', 1, path, 'string', 'path')
  args.check('report.append_line', 2, line, 'string', 'line')
  if path == nil or path == '-' then return M.write_stdout(line .. '\n') end
  local c = core
  if not (c and c.append_file) then return write_to(path, 'a', line .. '\n', true) end
  -- whole or not at all: a failed append (full disk, file-size limit) is cut back off
  local ok, err = c.append_file(path, line .. '\n')
  if not ok then return nil, string.format('%s: %s', path, reason(err, path)) end
  return true
end

-- The folder results go to by default: $KLUABENCH_RESULTS, else results/.
function M.results_dir()
  local dir = os.getenv('KLUABENCH_RESULTS')
  return (dir == nil or dir == '') and 'results' or dir
end

-- Creates a directory and its parents when missing, without a shell: true, or nil and a message.
function M.mkdir_p(path)
  args.check('report.mkdir_p', 1, path, 'string', 'path')
  if path == nil or path == '' or path == '.' then return true end
  local okl, lerr = M.check_path_length(path)
  if not okl then return nil, lerr end
  local c = core
  local prefix = path:sub(1, 1) == '/' and '/' or ''
  for part in path:gmatch('[^/]+') do
    prefix = prefix .. part
    local kind = kind_of(prefix, true)
    if kind == nil and not (c and c.mkdir) then
      return nil, path .. ': cannot create directory (this build has no kb.mkdir)'
    end
    if kind == 'missing' then
      local ok, err, errno = c.mkdir(prefix)
      if not ok and errno ~= 17 then -- EEXIST: made by someone else meanwhile
        return nil, string.format('%s: cannot create directory %s', path, reason(err))
      end
    elseif kind ~= 'directory' and part ~= '.' and part ~= '..' then
      return nil, string.format('%s: cannot create directory: %s is not a directory', path, prefix)
    end
    prefix = prefix .. '/'
  end
  return true
end

return M
