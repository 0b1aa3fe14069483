-- Helpers the specs share: the binary under test, shell quoting, files, subprocesses.
local M = {}

--- The kluabench binary to run as a subprocess: KLUABENCH_BIN, else the
-- binary running the tests, else build/kluabench; always an absolute path.
function M.bin()
  local b = os.getenv('KLUABENCH_BIN')
  if not b or b == '' then
    local host = package.loaded['kluabench.host']
    b = host and host.exe or (arg and arg[-1] and arg[-1]:match('kluabench$') and arg[-1])
        or 'build/kluabench'
  end
  if b:sub(1, 1) ~= '/' then b = (os.getenv('PWD') or '.') .. '/' .. b end
  return b
end

--- s quoted for sh.
function M.q(s) return "'" .. tostring(s):gsub("'", "'\\''") .. "'" end

--- The contents of a file, or nil when it cannot be read.
function M.slurp(path)
  local f = io.open(path, 'rb')
  if not f then return nil end
  local s = f:read('a')
  f:close()
  return s
end

--- Writes text to a file (raises on failure).
function M.spit(path, text)
  local f = assert(io.open(path, 'wb'))
  assert(f:write(text))
  f:close()
end

--- A new temporary directory (mktemp -d).
function M.tmpdir()
  local p = io.popen('mktemp -d')
  local d = p:read('l')
  p:close()
  return d
end

--- Runs a shell command; returns its stdout and exit code.
function M.run(cmd)
  local p = assert(io.popen(cmd, 'r'))
  local text = p:read('a')
  local ok, _, code = p:close()
  return text, ok and 0 or code
end

return M
