--- What the commands share, apart from the dispatcher (kluabench.commands):
-- the texts of `--help` and of usage errors (the options, the environment,
-- every command's usage line and help, read from kluabench.commands.registry and
-- the command modules), usage_error and help for a command to call, and the
-- command-line functions of kluabench.util.args under the names commands use.
-- A command requires this module, never the dispatcher that loads it.
local cmdline = require 'kluabench.util.args'
local core = require 'kluabench.core'
local util_files = require 'kluabench.util.files'

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

--- The commands (kluabench.commands.registry, the one list).
M.COMMANDS = require 'kluabench.commands.registry'

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
  return c.module
end

local function available(modname)
  return package.loaded[modname] ~= nil or package.preload[modname] ~= nil
      or package.searchpath(modname, package.path) ~= nil
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

--- Why the file path given on the command line cannot be read ("No such file
-- or directory", "is a directory", "is a FIFO, not a regular file"), or nil
-- when it is a regular file that opens. Commands check their input files with
-- it before doing anything, so that a mistyped path is a usage error (exit 2)
-- in every command, not a failure found halfway; a FIFO is refused without
-- opening it, which would wait for a writer.
function M.unreadable(path)
  local st, err = core.stat(path, true)
  if not st then
    err = tostring(err)
    return err:sub(1, #path + 2) == path .. ': ' and err:sub(#path + 3) or err
  end
  if st.type ~= 'file' then return util_files.not_regular(path) or ('is a ' .. st.type) end
  local f, oerr = io.open(path, 'r')
  if not f then
    oerr = tostring(oerr)
    return oerr:sub(1, #path + 2) == path .. ': ' and oerr:sub(#path + 3) or oerr
  end
  f:close()
  return nil
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

--- The usage error (status 2, after "kluabench NAME: PATH: why" and the
-- usage) of the first of files (the input files of command NAME's command
-- line) that cannot be read (M.unreadable), or nil when each can.
function M.check_inputs(name, files)
  for _, path in ipairs(files) do
    local why = M.unreadable(path)
    if why then return M.usage_error(name, '%s: %s', path, why) end
  end
  return nil
end

-- The command line (kluabench.util.args), under the names commands use.
M.parse_args, M.script_options = cmdline.parse_args, cmdline.script_options
M.printable, M.stop_if_interrupted = cmdline.printable, cmdline.stop_if_interrupted

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

return M
