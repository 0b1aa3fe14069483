--- `kluabench run SCRIPT [args...]`: runs SCRIPT exactly as
-- `kluabench SCRIPT args...` does, for scripts whose name is also a command.
local cli = require 'kluabench.commands.helpers'
local integrity = require 'kluabench.trust.integrity'

local M = {}

M.USAGE = 'kluabench run SCRIPT [args...]'

M.help = [[
Runs SCRIPT exactly as 'kluabench SCRIPT args...' does: the arguments are in
the global 'arg' (arg[0] is SCRIPT, the interpreter and options at negative
indices) and in '...'. SCRIPT '-' reads the script from stdin. Use it to run
a script whose file name is also the name of a command: 'kluabench run list'.]]

-- main.c made arg[0] the command name; the script sees the table it would
-- have had without "run" (and a "--" before SCRIPT): SCRIPT at 0, its
-- arguments from 1, the interpreter and options at negative indices.
local function script_arg(old, shift)
  local new = {}
  for k, v in pairs(old) do
    if math.type(k) == 'integer' then
      if k < 0 then new[k] = v elseif k >= shift then new[k - shift] = v end
    end
  end
  return new
end

--- Loads and runs the script; its errors propagate (main.c reports them
-- with a traceback and exit status 1), as for a script given directly.
function M.run(args)
  local first = 1
  if args[1] == '--' then -- a script whose name starts with '-'
    first = 2
  elseif args[1] and args[1]:match('^%-.') then
    return cli.usage_error('run', "unrecognized option '%s'", args[1])
  end
  local script = args[first]
  if script == nil then return cli.usage_error('run', 'missing SCRIPT') end
  local chunk, err = loadfile(script ~= '-' and script or nil)
  if not chunk then
    io.stderr:write('kluabench: ', err, '\n')
    return 1
  end
  arg = script_arg(arg or {}, first)
  -- the harness's references to the timing functions, before the script can replace them
  integrity.capture()
  chunk(table.unpack(args, first + 1, #args))
  return 0
end

return M
