--- `kluabench list`: the benchmark scripts and examples that come with the
-- binary (each with the first comment line of its file) and the kernels.
local cli = require 'kluabench.commands.helpers'
local files = require 'kluabench.util.files'
local results = require 'kluabench.table'
local kernel_registry = require 'kluabench.kernels'
local core = require 'kluabench.core'
local cjson = require 'cjson'

local M = {}

M.USAGE = 'kluabench list [--format text|markdown|json]'

M.help = [[
Lists the benchmark scripts (scripts/*.lua of the checkout the binary belongs
to) and the examples, each with the first comment line of its file, and the
kernels: the functions of every kernel family in the registry.
  --format F    text (default), markdown or json]]

--- The most bytes of a script read for its summary: a script is a few kilobytes.
M.MAX_SCRIPT_BYTES = 4 * 1024 * 1024

--- The first comment line of a Lua file ("" when it has none, or cannot be read), after an
-- optional #! line and blank lines. Read with the bounded reader: only a regular file of at most
-- MAX_SCRIPT_BYTES, so a FIFO never holds the listing and a link to /dev/zero is not read.
function M.summary(path)
  local text = files.read_text(path, M.MAX_SCRIPT_BYTES)
  if not text then return '' end
  for _, line in ipairs(files.lines(text)) do
    if not line:match('^#!') and line:match('%S') then
      return line:match('^%s*%-%-+%[?=*%[?%s*(.-)%s*$') or ''
    end
  end
  return ''
end

--- The *.lua files of root/dir, sorted: {name = "dir/x.lua", about = "..."}.
function M.files(root, dir)
  local host = package.loaded['kluabench.host']
  local entries = host and root and host.listdir(root .. '/' .. dir)
  local out = {}
  for _, name in ipairs(entries or {}) do
    if name:match('%.lua$') then
      out[#out + 1] = { name = dir .. '/' .. name, about = M.summary(root .. '/' .. dir .. '/' .. name) }
    end
  end
  table.sort(out, function(a, b) return a.name < b.name end)
  return out
end

-- name -> one-line summary, from the API reference (the optional apidoc tools) when this build has it.
local APIDOC = 'kluabench.apidoc'
local function summaries()
  local ok, apidoc = pcall(require, APIDOC)
  local out = {}
  if ok and type(apidoc) == 'table' then
    for _, e in ipairs(apidoc.entries or {}) do out[e.name] = e.summary end
  end
  return out
end

--- The kernels: every function of every family in the kernel registry
-- (kluabench.kernels, or `registry` when given), as {name = "kb.rope.x",
-- about = its summary in the API reference, or ""}.
function M.kernels(kb, registry)
  local out, about = {}, summaries()
  for _, f in ipairs((registry or kernel_registry).functions(kb)) do
    out[#out + 1] = { name = f.name, about = about[f.name] or '' }
  end
  return out
end

function M.collect()
  local host = package.loaded['kluabench.host'] or {}
  return {
    root = host.root,
    scripts = M.files(host.root, 'scripts'),
    examples = M.files(host.root, 'examples'),
    kernels = M.kernels((core)),
  }
end

local FILE_COLUMNS = { { key = 'name', title = 'file' }, { key = 'about', title = 'about' } }
local KERNEL_COLUMNS = { { key = 'name', title = 'function' }, { key = 'about', title = 'about' } }

local function section(format, title, columns, rows)
  if format == 'markdown' then
    return '### ' .. title .. '\n\n' .. (#rows > 0 and results.format_markdown(columns, rows) or '(none)\n')
  end
  return title .. ':' .. (#rows > 0 and '\n' .. results.format_table(columns, rows) or ' (none)\n')
end

function M.run(args)
  local opts, rest = cli.parse_args(args, { format = 'value' })
  if not opts then return cli.usage_error('list', '%s', rest) end
  if #rest > 0 then return cli.usage_error('list', "unexpected argument '%s'", rest[1]) end
  local format = opts.format or 'text'
  if format ~= 'text' and format ~= 'markdown' and format ~= 'json' then
    return cli.usage_error('list', "unknown format '%s' (expected text, markdown or json)", format)
  end
  local l = M.collect()
  if format == 'json' then
    local function arr(t) return #t > 0 and t or cjson.empty_array or t end
    io.stdout:write(cjson.encode({ root = l.root, scripts = arr(l.scripts), examples = arr(l.examples),
      kernels = arr(l.kernels) }), '\n')
    return 0
  end
  local where = l.root and (' (in ' .. l.root .. ')') or ''
  io.stdout:write(section(format, 'scripts' .. where, FILE_COLUMNS, l.scripts), '\n',
    section(format, 'examples' .. where, FILE_COLUMNS, l.examples), '\n',
    section(format, 'kernels', KERNEL_COLUMNS, l.kernels))
  return 0
end

return M
