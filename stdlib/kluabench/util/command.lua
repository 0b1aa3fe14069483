--- Running a program with no shell: an argument vector given to kb.process.spawn, so that no
-- string from outside (a revision, a path) is ever read as shell syntax, and its output captured
-- through files in a private directory (made by mkdir, which fails on anything already there,
-- links included, then set to mode 0700: nobody else can plant a file where the output goes).
local args = require 'kluabench.util.args'
local files = require 'kluabench.util.files'

local M = {}

--- The most bytes of each of a program's stdout and stderr that command.capture reads (16 MiB).
M.MAX_BYTES = 16 * 1024 * 1024

local function core() return require 'kluabench.core' end

local made = 0

--- A fresh private directory under parent (default $TMPDIR, else /tmp): made by mkdir under a name
-- nothing has (pid, clock and a counter), mode 0700. Returns its path, or nil and why.
--
-- @signature command.private_dir([parent]) -> path | nil, message
-- @example
--   local dir = assert(command.private_dir())
--   os.remove(dir)
function M.private_dir(parent)
  args.check('command.private_dir', 1, parent, 'string|nil', 'parent directory')
  local c = core()
  parent = parent or os.getenv('TMPDIR') or '/tmp'
  if parent == '' then parent = '/tmp' end
  for _ = 1, 100 do
    made = made + 1
    local dir = string.format('%s/.kluabench-%d-%s-%d', parent, c.process.getpid(), tostring(c.clock_ns()), made)
    local ok, err, errno = c.mkdir(dir)
    if ok then
      local cok, cerr = c.chmod(dir, 448) -- 0700
      if not cok then
        os.remove(dir)
        return nil, cerr
      end
      return dir
    end
    if errno ~= 17 then return nil, err end -- EEXIST: another name
  end
  return nil, parent .. ': no fresh name for a private directory after 100 tries'
end

-- Waits for pid; an interrupt (Ctrl-C) stops the program, then is raised again.
local function wait(pid)
  local process = core().process
  while true do
    local got, how, code = process.wait(pid)
    if got then return how, code end
    if code ~= 'EINTR' then return nil, how end
    if core().interrupted() then
      process.kill(pid, 'SIGTERM')
      local done, _, why
      repeat done, _, why = process.wait(pid) until done or why ~= 'EINTR'
      error('interrupted!', 0)
    end
  end
end

--- Runs argv[1] (searched on PATH) with the arguments argv[2..] and waits for it: no shell, stdin
-- /dev/null, stdout and stderr captured. Returns {how = "exit" | "signal", code (the exit status or
-- the signal's name), out, err (at most command.MAX_BYTES each)}, or nil and why it could not run.
-- opts: cwd, env (kb.process.spawn's), dir (where its private directory goes: command.private_dir's
-- parent). An interrupt while it runs stops the program and is raised again.
--
-- @signature command.capture(argv [, opts]) -> result | nil, message
-- @example
--   local r = assert(command.capture({"echo", "a;b $(c)"}))
--   print(r.how, r.code, r.out) --> exit  0  a;b $(c)
function M.capture(argv, opts)
  args.check('command.capture', 1, argv, 'table', 'argument vector')
  args.check('command.capture', 2, opts, 'table|nil', 'table of options')
  opts = opts or {}
  for i, a in ipairs(argv) do
    if type(a) ~= 'string' then
      error(string.format("bad argument #1 to 'command.capture' (element %d is %s, string expected)", i, type(a)), 2)
    end
    if a:find('\0', 1, true) then
      error(string.format("bad argument #1 to 'command.capture' (element %d has a NUL byte)", i), 2)
    end
  end
  local dir, derr = M.private_dir(opts.dir)
  if not dir then return nil, derr end
  local out, err = dir .. '/stdout', dir .. '/stderr'
  local function clean()
    os.remove(out)
    os.remove(err)
    os.remove(dir)
  end
  local pid, perr = core().process.spawn(argv, { stdin = '/dev/null', stdout = out, stderr = err, cwd = opts.cwd,
    env = opts.env })
  if not pid then
    clean()
    return nil, perr
  end
  local ok, how, code = pcall(wait, pid)
  if not ok then
    clean()
    error(how, 0)
  end
  local res = { how = how, code = code, out = files.read_file(out, M.MAX_BYTES) or '',
    err = files.read_file(err, M.MAX_BYTES) or '' }
  clean()
  if not how then return nil, code end
  return res
end

return M
