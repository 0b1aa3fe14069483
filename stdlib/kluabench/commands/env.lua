--- `kluabench env`: the execution environment as an aligned table, a
-- markdown table or one JSON object (--json).
local cli = require 'kluabench.commands.helpers'
local results = require 'kluabench.table'
local record_env = require 'kluabench.record.env'
local kb = require 'kluabench.core'
local cjson = require 'cjson'

local M = {}

M.USAGE = 'kluabench env [--json | --format text|markdown|json]'

M.help = [[
Prints kluabench's and Lua's versions, the backend in use and what it reports
about its device (kb.device_info()), and the environment variables that
change kluabench's behaviour.
  --json        one JSON object on stdout
  --format F    text (default), markdown or json]]

--- The environment variables that change what kluabench or Lua do.
M.VARIABLES = {
  'KLUABENCH_BACKEND', 'KLUABENCH_DEVICE', 'KLUABENCH_PATH', 'KLUABENCH_QUIET',
  'KLUABENCH_HISTORY', 'LUA_INIT_5_4', 'LUA_INIT', 'LUA_PATH_5_4', 'LUA_PATH',
  'LUA_CPATH_5_4', 'LUA_CPATH', 'CUDA_VISIBLE_DEVICES', 'CUDA_DEVICE_ORDER',
}

local function call(f, ...)
  if type(f) ~= 'function' then return nil end
  local ok, v = pcall(f, ...)
  return ok and v or nil
end

-- The ExecutionEnvironment document that records carry, and its digest.
local function record_environment(kb)
  local ok, doc = pcall(function() return record_env.capture() end)
  if not ok or type(doc) ~= 'table' then return nil end
  local digest = type(kb.digest) == 'function' and call(kb.digest, doc.spec) or nil
  return doc, digest
end

--- Everything `env` reports, as plain data: kluabench (version, commit,
-- executable, lua), backend, device (kb.device_info()), build
-- (kb.build_info(), when the engine has it), environment (the variables in
-- M.VARIABLES that are set), and record: the ExecutionEnvironment document
-- that result records carry (kluabench.record.env.capture()) with its digest.
function M.collect()
  local host = package.loaded['kluabench.host'] or {}
  local vars = {}
  for _, name in ipairs(M.VARIABLES) do vars[name] = os.getenv(name) end
  local doc, digest = record_environment(kb)
  return {
    record = doc and { document = doc, digest = digest } or nil,
    kluabench = {
      version = kb.version or host.version,
      commit = kb.git_commit or host.commit,
      executable = host.exe,
      lua = host.lua or _VERSION,
    },
    backend = kb.backend(),
    device = kb.device_info(),
    build = call(kb.build_info),
    environment = vars,
  }
end

local MIB = 1024 * 1024

local function bytes(n)
  if n >= 1024 * MIB then return string.format('%d (%.1f GiB)', n, n / (1024 * MIB)) end
  if n >= MIB then return string.format('%d (%.1f MiB)', n, n / MIB) end
  return tostring(n)
end

local function cuda_version(v) return string.format('%d.%d', v // 1000, v % 1000 // 10) end

-- How a known device field reads; others print as they are.
local FORMAT = {
  l2_bytes = bytes,
  memory_bytes = bytes,
  sm_clock_khz = function(v) return string.format('%d MHz', v // 1000) end,
  mem_clock_khz = function(v) return string.format('%d MHz', v // 1000) end,
  mem_bus_bits = function(v) return v .. ' bits' end,
  driver_version = cuda_version,
  runtime_version = cuda_version,
}

-- Zero and empty fields are the ones a backend cannot know: left out.
local function known(v) return v ~= nil and v ~= 0 and v ~= '' end

local function sorted_keys(t)
  local keys = {}
  for k in pairs(t) do keys[#keys + 1] = k end
  table.sort(keys, function(a, b) return tostring(a) < tostring(b) end)
  return keys
end

local function add_section(rows, section, t, order)
  if type(t) ~= 'table' then return end
  for _, k in ipairs(order or sorted_keys(t)) do
    local v = t[k]
    if known(v) and type(v) ~= 'table' then
      local f = FORMAT[k]
      rows[#rows + 1] = { name = section .. '.' .. k, value = f and f(v) or tostring(v) }
    end
  end
end

--- The rows of the text table: {name = "device.name", value = "..."}.
function M.rows(env)
  local rows = {}
  add_section(rows, 'kluabench', env.kluabench, { 'version', 'commit', 'executable', 'lua' })
  rows[#rows + 1] = { name = 'backend', value = env.backend }
  add_section(rows, 'device', env.device)
  add_section(rows, 'build', env.build)
  local rec = env.record
  if rec then
    local sw = rec.document.spec and rec.document.spec.software or {}
    add_section(rows, 'os', sw.os, { 'kernel', 'distribution' })
    add_section(rows, 'driver', sw.driver, { 'release', 'cudaVersion' })
    add_section(rows, 'record', { name = rec.document.metadata and rec.document.metadata.name,
      environmentDigest = rec.digest }, { 'name', 'environmentDigest' })
  end
  for _, name in ipairs(M.VARIABLES) do
    rows[#rows + 1] = { name = 'env.' .. name, value = env.environment[name] or '(unset)' }
  end
  return rows
end

local COLUMNS = { { key = 'name', title = 'item' }, { key = 'value', title = 'value' } }

function M.run(args)
  local opts, rest = cli.parse_args(args, { json = 'flag', format = 'value' })
  if not opts then return cli.usage_error('env', '%s', rest) end
  if #rest > 0 then return cli.usage_error('env', "unexpected argument '%s'", rest[1]) end
  local format = opts.json and 'json' or opts.format or 'text'
  local env = M.collect()
  if format == 'json' then
    io.stdout:write(cjson.encode(env), '\n')
  elseif format == 'text' then
    io.stdout:write(results.format_table(COLUMNS, M.rows(env)))
  elseif format == 'markdown' then
    io.stdout:write(results.format_markdown(COLUMNS, M.rows(env)))
  else
    return cli.usage_error('env', "unknown format '%s' (expected text, markdown or json)", format)
  end
  return 0
end

return M
