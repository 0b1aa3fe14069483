-- Runs the examples of docs/API.md (apidoc's entries) on the cpu backend, in
-- the current directory, and prints what failed and a count:
--   kluabench --backend cpu tests/helpers/apidoc_examples.lua
-- With --gpu it runs only the examples that need a CUDA device (SKIP's 'gpu'
-- ones), on the cuda backend: tests/help_spec.lua's #gpu spec does.
-- Each example runs as a reader would run it: with kb and the short names of
-- the modules (apidoc.modules: stats, record, plot, ...) bound, and nothing
-- else; what it uses it makes itself. tests/help_spec.lua runs this in an
-- empty temporary directory with HOME there too, and checks that no example
-- wrote anything there; this script checks that every file an example made
-- under a name from os.tmpname() is gone when it ends.
local kb = require 'kluabench'
local apidoc = require 'kluabench.apidoc'

-- Examples that need what the cpu backend cannot give: a CUDA device (graphs, loading and
-- launching user kernels) or a Triton build.
local SKIP = {
  ['kb.graph'] = 'gpu', ['g:replay'] = 'gpu', ['g:free'] = 'gpu',
  ['mod:kernel'] = 'gpu', ['kern:launch'] = 'gpu', ['kern:launch_repeat'] = 'gpu', ['kern:attributes'] = 'gpu',
  ['kern:occupancy'] = 'gpu', ['kern:info'] = 'gpu', ['triton.load'] = "Triton's cubin and a gpu",
}

-- What examples write to stdout and stderr (help text, progress lines) is not this script's output.
local sink = setmetatable({}, { __index = function(t) return function() return t end end })

-- The names os.tmpname gave the examples ({name, example}): nothing starting with one may be left
-- behind.
local made, current = {}, nil

local function env()
  local e = {
    kb = kb,
    print = function() end,
    io = setmetatable({ write = function() end, stderr = sink, stdout = sink }, { __index = io }),
    os = setmetatable({
      tmpname = function()
        local name = os.tmpname()
        made[#made + 1] = { name, current }
        return name
      end,
      -- no shell, but for the clean-up of what an example made under /tmp
      execute = function(cmd)
        if type(cmd) == 'string' and cmd:match('^rm %-r /tmp/[%w_.%-]+$') then return os.execute(cmd) end
        return true
      end,
    }, { __index = os }),
  }
  for prefix, modname in pairs(apidoc.modules) do e[prefix] = require(modname) end
  return setmetatable(e, { __index = _G })
end

local gpu = arg and arg[1] == '--gpu'
if gpu and kb.backend() ~= 'cuda' then
  io.stderr:write('apidoc_examples.lua --gpu: needs the cuda backend\n')
  os.exit(2)
end
-- the examples this run takes: those the cpu can run, or (--gpu) those that need a device
local function taken(e)
  if e.kind == 'command' then return false end
  if gpu then return SKIP[e.name] == 'gpu' end
  return not SKIP[e.name]
end

local ran, failed = 0, {}
for _, e in ipairs(apidoc.entries) do
  if taken(e) then
    local f = assert(load(e.example, '=' .. e.name, 't', env()))
    current = e.name
    local out, err_stream = io.stdout, io.stderr
    io.stdout, io.stderr = sink, sink ---@diagnostic disable-line
    local ok, err = pcall(f)
    io.stdout, io.stderr = out, err_stream ---@diagnostic disable-line
    ran = ran + 1
    if not ok then failed[#failed + 1] = e.name .. ': ' .. tostring(err):gsub('\n', ' ') end
  end
end

-- /tmp/lua_XXXXXX and what an example named after it (.json, .d, a directory)
local in_tmp = package.loaded['kluabench.host'].listdir('/tmp')
for _, m in ipairs(made) do
  local base = m[1]:match('^/tmp/(.+)$')
  for _, entry in ipairs(in_tmp) do
    if base and entry:sub(1, #base) == base then failed[#failed + 1] = m[2] .. ': left /tmp/' .. entry .. ' behind' end
  end
end

for _, line in ipairs(failed) do print('FAILED ' .. line) end
print(string.format('%d examples ran, %d failed', ran, #failed))
