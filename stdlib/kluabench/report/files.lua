--- Files: whole-file reads, atomic writes, JSON Lines appends, mkdir -p.
local M = {}

local json = require 'kluabench.report.json'

-- (busted on a machine without the binary), where only fsync and the JCS
-- markers are missing.
local core_cache
local function core()
  if core_cache == nil then
    local ok, c = pcall(require, 'kluabench.core')
    core_cache = ok and type(c) == 'table' and c or false
  end
  return core_cache or nil
end

--- Reads a whole file: text, or nil and "path: reason".
function M.read_file(path)
  local f, err = io.open(path, 'rb')
  if not f then return nil, err end
  local text, rerr = f:read('a')
  f:close()
  if not text then return nil, path .. ': ' .. tostring(rerr) end
  return text
end

local tmp_counter = 0

--- Writes text to path atomically: a temporary file in the same directory is
-- written, flushed, fsync'ed (when the engine offers kb.fsync) and closed,
-- then renamed over path, and the directory is fsync'ed so that the rename
-- itself is durable. A reader sees the old or the new file, never a part.
-- Returns true, or nil and a message; the temporary file never stays.
function M.write_atomic(path, text)
  if type(path) ~= 'string' or path == '' then
    error("bad argument #1 to 'write_atomic' (path expected)", 2)
  end
  if type(text) ~= 'string' then
    error("bad argument #2 to 'write_atomic' (string expected, got " .. type(text) .. ')', 2)
  end
  tmp_counter = tmp_counter + 1
  local c = core()
  local stamp = c and c.clock_ns and c.clock_ns() or os.time()
  local tmp = string.format('%s.tmp-%s-%d', path, tostring(stamp), tmp_counter)
  local f, err = io.open(tmp, 'wb')
  if not f then return nil, err end
  local ok, werr = f:write(text)
  if ok then ok, werr = f:flush() end
  if ok and c and c.fsync then
    -- kb.fsync returns nil, message when it fails (a raised error is caught too)
    local called, synced, serr = pcall(c.fsync, tmp)
    if not (called and synced) then ok, werr = nil, called and serr or synced end
  end
  local closed, cerr = f:close()
  if ok and not closed then ok, werr = nil, cerr end
  if ok then ok, werr = os.rename(tmp, path) end
  if not ok then
    os.remove(tmp)
    return nil, string.format('%s: %s', path, tostring(werr))
  end
  if c and c.fsync then
    -- the rename is durable once the directory is; some file systems refuse
    -- fsync on a directory, and the file is in place by now either way
    pcall(c.fsync, path:match('^(.*)/[^/]*$') or '.')
  end
  return true
end

--- Appends one value as a JSON line to path ("-" or nil: stdout) and flushes,
-- so that every finished point is on disk even if a later one crashes. The
-- line goes out in one unbuffered write(2) to a file opened for appending,
-- so a process killed at any moment leaves whole lines only.
-- Returns true, or nil and a message.
function M.append_jsonl(path, value)
  local line, err = json.encode_line(value)
  if not line then return nil, err end
  if path == nil or path == '-' then
    io.stdout:write(line, '\n')
    io.stdout:flush()
    return true
  end
  local f, oerr = io.open(path, 'a')
  if not f then return nil, oerr end
  f:setvbuf('no')
  local ok, werr = f:write(line .. '\n')
  if ok then ok, werr = f:flush() end
  local closed, cerr = f:close()
  if ok and not closed then ok, werr = nil, cerr end
  if not ok then return nil, string.format('%s: %s', path, tostring(werr)) end
  return true
end

--- Creates directory path and its parents if missing (via mkdir -p; the path
-- is passed quoted). Returns true or nil, message.
function M.mkdir_p(path)
  if path == nil or path == '' or path == '.' then return true end
  local probe = io.open(path .. '/.', 'r')
  if probe then probe:close() return true end
  local ok = os.execute("mkdir -p '" .. path:gsub("'", "'\\''") .. "'")
  if ok then return true end
  return nil, path .. ': cannot create directory'
end

return M
