--- `kluabench run SCRIPT [args...]`: runs SCRIPT exactly as
-- `kluabench SCRIPT args...` does, for scripts whose name is also a command.
local cli = require 'kluabench.cli'

local M = {}

-- main.c made arg[0] the command name; the script sees the table it would
-- have had without "run": SCRIPT at 0, its arguments from 1, the interpreter
-- and options at negative indices.
local function script_arg(old)
  local new = {}
  for k, v in pairs(old) do
    if math.type(k) == 'integer' then
      if k < 0 then new[k] = v elseif k > 0 then new[k - 1] = v end
    end
  end
  return new
end

--- Loads and runs the script; its errors propagate (main.c reports them
-- with a traceback and exit status 1), as for a script given directly.
function M.run(args)
  local script = args[1]
  if script == nil then return cli.usage_error('run', 'missing SCRIPT') end
  local chunk, err = loadfile(script ~= '-' and script or nil)
  if not chunk then
    io.stderr:write('kluabench: ', err, '\n')
    return 1
  end
  arg = script_arg(arg or {})
  chunk(table.unpack(args, 2, #args))
  return 0
end

return M
