--- The built-in commands of the kluabench executable: their help texts and
-- the dispatcher that engine/main.c calls.
--
-- Dispatch rule (main.c): the first argument that is not an option is a
-- command when it is exactly one of the names in M.COMMANDS; anything else is
-- a script path, run as the lua interpreter runs it. main.c then calls
-- M.main(name, args) and exits with its result.
--
-- A command is the module kluabench.cli.commands.<module>, loaded only when the
-- command runs. It returns a table with
--   run(args) (or main(args)) -> exit status: 0 ok, 1 failed check or
--             regression, 2 usage error (nil counts as 0); args are the
--             words after the name;
--   USAGE  -> its usage line(s) ("kluabench NAME ...");
--   help   -> its help text (what follows the usage line in --help).
-- Commands report usage errors with M.usage_error and may read their options
-- with M.parse_args.
local cmdline = require 'kluabench.io.args'

local M = {}

M.PROGRAM = 'kluabench'

--- The options, as `--help` and usage errors list them.
M.OPTIONS = {
  { '-e stat', "execute string 'stat'" },
  { '-i', "enter interactive mode after executing 'script'" },
  { '-l mod', "require library 'mod' into global 'mod'" },
  { '-l g=mod', "require library 'mod' into global 'g'" },
  { '-v', 'show version information' },
  { '-E', 'ignore LUA_INIT, LUA_PATH, LUA_CPATH and KLUABENCH_PATH/BACKEND/DEVICE' },
  { '-W', 'turn warnings on' },
  { '--', 'stop handling options (a command name after it is a script)' },
  { '-', 'stop handling options and execute stdin' },
  { '--backend NAME', 'cpu, cuda or auto (default: cuda when a device is usable, else cpu)' },
  { '--device N', 'the CUDA device to use (default 0)' },
  { '--quiet', 'no progress display on stderr (sets KLUABENCH_QUIET=1 for scripts)' },
  { '-h, --help', "show this help; 'kluabench COMMAND --help' explains a command" },
}

--- The commands: name (as typed), module (under kluabench.cli.commands)
-- and one line of summary. The usage line and the help text are the
-- module's own (its USAGE and help), the one source that `kluabench
-- COMMAND --help`, `kluabench help COMMAND`, usage errors and the API
-- reference all read; only a command without a module (help) carries
-- usage and help here.
M.COMMANDS = {
  { name = 'run', module = 'run', summary = "run a benchmark script (the same as 'kluabench SCRIPT')" },
  { name = 'verify', module = 'verify', summary = 'recompute the digests of record bundles and check them' },
  { name = 'compare', module = 'compare', summary = 'compare two result sets and flag regressions' },
  { name = 'import-liger', module = 'import_liger',
    summary = 'convert Liger-Kernel benchmark CSV results into records' },
  { name = 'plot', module = 'plot', summary = 'draw results as an SVG chart' },
  { name = 'env', module = 'env', summary = 'print the execution environment (versions, backend, device)' },
  { name = 'list', module = 'list', summary = 'list the benchmark scripts, examples and kernels' },
  { name = 'run-all', module = 'run_all',
    summary = 'run a benchmark script as one process per GPU of this host, and merge' },
  { name = 'slurm', module = 'slurm', summary = 'write (and submit) a Slurm job array that runs a script in shards' },
  { name = 'merge', module = 'merge',
    summary = 'merge the shard files of run-all or slurm, checking every point arrived once' },
  { name = 'migrate', module = 'migrate',
    summary = "rewrite results files of kluabench's earlier record format in today's" },
  { name = 'submission', module = 'submission',
    summary = 'write a kernelindex submission document of results files' },
  { name = 'history', module = 'history',
    summary = 'results over commits in a database: add, list, trend, compare, check for regressions' },
  { name = 'report', module = 'report', summary = 'write a self-contained HTML report of results or a history' },
  {
    name = 'help',
    summary = "show this help, or a command's ('kluabench help COMMAND')",
    usage = 'kluabench help [COMMAND]',
    help = "Shows the options and commands, or the help of one command.",
  },
}

M.DISPATCH_RULE = [[
The first argument that is not an option is a command when it is exactly one
of the names above; anything else is a script path, run as the lua
interpreter would. So a path with a '/' or a '.lua' ('./list', 'list.lua') is
always a script, and 'kluabench -- list' or 'kluabench run list' runs a file
named list.]]

M.ENVIRONMENT = {
  { 'KLUABENCH_BACKEND', 'default for --backend (ignored with -E, as the next two)' },
  { 'KLUABENCH_DEVICE', 'default for --device' },
  { 'KLUABENCH_PATH', "';'-separated dirs or ?-templates searched before the stdlib" },
  { 'KLUABENCH_QUIET', '1: no progress display (what --quiet sets)' },
  { 'KLUABENCH_HISTORY', 'the REPL history file (default ~/.kluabench_history)' },
  { 'LUA_INIT_5_4, LUA_INIT', 'code, or @file, run before anything else (as lua does)' },
}

--- The command called name, or nil.
function M.find(name)
  for _, c in ipairs(M.COMMANDS) do
    if c.name == name then return c end
  end
  return nil
end

local function two_columns(rows, indent)
  local w = 0
  for _, r in ipairs(rows) do w = math.max(w, #r[1]) end
  local out = {}
  for _, r in ipairs(rows) do
    out[#out + 1] = indent .. r[1] .. string.rep(' ', w - #r[1] + 2) .. r[2]
  end
  return table.concat(out, '\n') .. '\n'
end

local function command_rows()
  local rows = {}
  for _, c in ipairs(M.COMMANDS) do rows[#rows + 1] = { c.name, c.summary } end
  return rows
end

--- The synopsis, options and commands (what a usage error prints).
function M.usage()
  return 'usage: kluabench [options] [script [args]]\n'
      .. '       kluabench [options] COMMAND [args]\n'
      .. '\nOptions:\n' .. two_columns(M.OPTIONS, '  ')
      .. '\nCommands:\n' .. two_columns(command_rows(), '  ')
end

--- The whole --help text.
function M.help_text()
  return M.usage()
      .. '\n' .. M.DISPATCH_RULE .. '\n'
      .. '\nEnvironment:\n' .. two_columns(M.ENVIRONMENT, '  ')
      .. '\nExit status: 0 success, 1 error, failed check or regression, 2 usage error.\n'
end

local function module_name(c)
  return 'kluabench.cli.commands.' .. c.module
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

-- The module of c when it loads (for its own help and usage), else nil.
local function module_of(c)
  if not (c.module and available(module_name(c))) then return nil end
  local ok, mod = pcall(require, module_name(c))
  return ok and type(mod) == 'table' and mod or nil
end

--- The usage line of command c: its module's USAGE (c.usage for a command
-- without a module; "kluabench NAME" when this build lacks the module).
function M.command_usage(c)
  local mod = module_of(c)
  if mod and type(mod.USAGE) == 'string' then return mod.USAGE end
  return c.usage or (M.PROGRAM .. ' ' .. c.name)
end

--- The help text of command c: the usage line, then its module's help (c.help
-- for a command without a module; the summary when this build lacks it).
function M.command_help(c)
  local mod = module_of(c)
  local text = mod and type(mod.help) == 'string' and mod.help or c.help or c.summary
  return 'usage: ' .. M.command_usage(c) .. '\n\n' .. text:gsub('\n*$', '') .. '\n'
end

--- Prints "kluabench NAME: message" and NAME's usage to stderr; returns 2,
-- the exit status of a usage error.
function M.usage_error(name, fmt, ...)
  local c = M.find(name)
  io.stderr:write(string.format('kluabench %s: %s\n', name, cmdline.printable(string.format(fmt, ...), 400)))
  if c then io.stderr:write('usage: ', M.command_usage(c), '\n') end
  io.stderr:write(string.format("run 'kluabench %s --help' for details\n", name))
  return 2
end

-- What scripts, the harness and the commands share of the command line
-- (kluabench.io.args), here too under the names scripts know.
M.parse_args, M.script_options = cmdline.parse_args, cmdline.script_options
M.printable, M.stop_if_interrupted = cmdline.printable, cmdline.stop_if_interrupted

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

--- `kluabench help [COMMAND]`
function M.help(name)
  if name == nil then
    io.stdout:write(M.help_text())
    return 0
  end
  local c = M.find(name)
  if not c then return M.usage_error('help', "unknown command '%s'", name) end
  io.stdout:write(M.command_help(c))
  return 0
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
