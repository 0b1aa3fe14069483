--- The command line of scripts and commands: options read by one parser,
-- the usage errors of a script, messages made safe to quote, and the stop
-- that an interrupt asks for. The base layer (it requires only io/json and
-- io/suggest), so that the harness (kluabench.suite), the history and the
-- commands share it without requiring the dispatcher (kluabench.cli, which
-- re-exports these functions under the names scripts know).
local M = {}

--- The options of a script (`kluabench SCRIPT ARGS`): M.parse_args of
-- args by spec, where --help (-h) prints usage to stdout and exits 0, and an
-- unknown option or a positional argument prints "NAME: message" and usage
-- to stderr and exits 2. Returns opts and fail(fmt, ...), which reports the
-- script's own checks the same way.
function M.script_options(name, usage, args, spec)
  local function fail(fmt, ...)
    io.stderr:write(name, ': ', M.printable(string.format(fmt, ...), 400), '\n', usage)
    os.exit(2)
  end
  spec.help, spec.aliases = 'flag', spec.aliases or { h = 'help' }
  local opts, rest = M.parse_args(args, spec)
  if not opts then fail('%s', rest) end
  if opts.help then io.stdout:write(usage) os.exit(0) end
  if #rest > 0 then fail("unexpected argument '%s'", rest[1]) end
  return opts, fail
end

--- Raises "interrupted!" when SIGINT or SIGTERM stopped the command but a
-- protected call on the way caught it (kb.interrupted() says so): commands
-- call it in their loops, so that they stop promptly. engine/host/main.c then
-- reports "kluabench CMD: interrupted by SIGINT" and exits 130 (143 for
-- SIGTERM); files being written are removed by io/files.lua.
function M.stop_if_interrupted()
  local ok, kb = pcall(require, 'kluabench.core')
  if ok and type(kb) == 'table' and kb.interrupted() then error('interrupted!', 0) end
end

--- s made safe to quote in a message (control characters and bytes that
-- are not UTF-8 as \xNN, long values cut): io.json.printable.
function M.printable(s, max) return require('kluabench.io.json').printable(s, max) end

--- Reads options from args. spec maps an option name (without dashes) to
-- 'flag', 'value' or 'list' (a value that may be given several times:
-- opts[name] is the list of them); spec.aliases maps one-letter names to
-- option names ({o = 'output'}). Accepts --name, --name=value, --name value,
-- -o value; '--' ends the options, and so does the first positional argument
-- when spec.stop_at_positional is set (the rest, options or not, then are
-- positional: a command's own options before SCRIPT and the script's after).
-- Returns opts, positional args; or nil, message.
-- " (did you mean '--seq'?)" for an unknown option name, from the options spec names.
local function option_hint(name, spec)
  local names = {}
  for k, v in pairs(spec) do
    if type(k) == 'string' and (v == 'flag' or v == 'value' or v == 'list') then names[#names + 1] = k end
  end
  return require('kluabench.io.suggest').hint(name, names, '--')
end

function M.parse_args(args, spec)
  local opts, rest = {}, {}
  local aliases = spec.aliases or {}
  local i = 1
  while i <= #args do
    local a = args[i]
    if a == '--' then
      table.move(args, i + 1, #args, #rest + 1, rest)
      break
    end
    local name, value = a:match('^%-%-([^=]+)=(.*)$')
    if not name then name = a:match('^%-%-(.+)$') or aliases[a:match('^%-(%a)$') or ''] end
    if not name then
      if a:match('^%-.') then return nil, string.format("unrecognized option '%s'", a) end
      if spec.stop_at_positional then
        table.move(args, i, #args, #rest + 1, rest)
        break
      end
      rest[#rest + 1] = a
    elseif spec[name] == 'flag' then
      if value then return nil, string.format("option '--%s' takes no value", name) end
      opts[name] = true
    elseif spec[name] == 'value' or spec[name] == 'list' then
      if not value then
        i = i + 1
        value = args[i]
        if value == nil then return nil, string.format("option '%s' needs a value", a) end
      end
      if spec[name] == 'list' then
        opts[name] = opts[name] or {}
        table.insert(opts[name], value)
      else
        opts[name] = value
      end
    else
      return nil, string.format("unrecognized option '%s'", a) .. option_hint(name, spec)
    end
    i = i + 1
  end
  return opts, rest
end

return M
