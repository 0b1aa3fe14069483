--- The dispatcher of the built-in commands, which engine/host/main.c calls:
-- main(name, args) finds the command in kluabench.commands.registry (the one
-- list), loads its module and runs it. The texts and helpers commands share
-- are kluabench.commands.helpers; this module re-exports them, and the
-- command-line functions of kluabench.util.args, for the scripts that use them
-- under these names.
--
-- Dispatch rule (main.c): the first argument that is not an option is a
-- command when it is exactly one of the names kluabench.commands.registry lists; anything else is
-- a script path, run as the lua interpreter runs it. main.c then calls
-- M.main(name, args) and exits with its result.
--
-- A command is the module the module named, loaded only when the
-- command runs. It returns a table with
--   run(args) (or main(args)) -> exit status: 0 ok, 1 failed check or
--             regression, 2 usage error (nil counts as 0); args are the
--             words after the name;
--   USAGE  -> its usage line(s) ("kluabench NAME ...");
--   help   -> its help text (what follows the usage line in --help).
-- Commands report usage errors with helpers.usage_error and may read their
-- options with helpers.parse_args (kluabench.commands.helpers).
local helpers = require 'kluabench.commands.helpers'

local M = {}

-- The texts and helpers (kluabench.commands.helpers), here under the names
-- scripts and tests know: M.COMMANDS, M.usage(), M.parse_args, ...
for k, v in pairs(helpers) do M[k] = v end

local function module_name(c)
  return c.module
end

local function available(modname)
  return package.loaded[modname] ~= nil or package.preload[modname] ~= nil
      or package.searchpath(modname, package.path) ~= nil
end

--- The module of command c, or nil and a message when this build lacks it.
function M.load(c)
  local modname = module_name(c)
  if not available(modname) then
    return nil, string.format("command '%s' is not available in this build (module %s not found)",
      c.name, modname)
  end
  return require(modname)
end

local function wants_help(c, args)
  if c.name == 'run' then return args[1] == '--help' or args[1] == '-h' end
  for _, a in ipairs(args) do
    if a == '--' then return false end
    if a == '--help' or a == '-h' then return true end
  end
  return false
end

local function exit_status(v)
  if math.type(v) == 'integer' then return v end
  if v == nil or v == true then return 0 end
  return 1
end

--- Runs command `name` with the words that followed it; returns the exit
-- status.
function M.main(name, args)
  args = args or {}
  if name == 'help' then
    if args[1] == '--help' or args[1] == '-h' then return M.help('help') end
    return M.help(args[1])
  end
  local c = M.find(name)
  if not c then
    io.stderr:write(string.format("kluabench: unknown command '%s'\n", tostring(name)))
    io.stderr:write(M.usage())
    return 2
  end
  if wants_help(c, args) then
    io.stdout:write(M.command_help(c))
    return 0
  end
  local mod, err = M.load(c)
  if not mod then
    io.stderr:write('kluabench: ', err, '\n')
    return 1
  end
  local run = type(mod) == 'function' and mod or type(mod) == 'table' and (mod.run or mod.main)
  if not run then error(string.format("module %s has no run function", module_name(c)), 0) end
  return exit_status(run(args))
end

return M
