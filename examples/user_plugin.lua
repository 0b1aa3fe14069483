-- A C plugin kernel with a CPU twin (examples/plugin/scale_add.c, .cu): run on the default backend, checked, timed.
--
--   kluabench examples/user_plugin.lua [N [PLUGIN.so]]
--
-- make builds the plugin into build/plugins/libscale_add.so (its CUDA entry
-- only with CUDA=1). On cuda the CUDA entry is checked against the plugin's
-- own CPU twin; on cpu the twin is checked against plain Lua.
local kb = require 'kluabench'
local checker = require 'kluabench.kernels.checker'

local n = math.tointeger(tonumber(arg and arg[1] or '')) or (1 << 20)
local path = arg and arg[2] or (kb.executable():match('^(.*)/[^/]*$') .. '/plugins/libscale_add.so')
local plugin = kb.plugin.load(path)
local scale_add = plugin:kernel('scale_add')
local pinfo, kinfo = plugin:info(), scale_add:info()
print(string.format('plugin %s %s (ABI %d): %s(%s), CUDA entry %s, CPU entry %s', pinfo.name, pinfo.version,
  pinfo.abi_version, kinfo.name, kinfo.signature, kinfo.cuda and 'yes' or 'no', kinfo.cpu and 'yes' or 'no'))

local ALPHA = 1.5
local cuda = kb.backend() == 'cuda'
local c = checker.new {
  inputs = function(seed)
    return { x = kb.randn({ n }, 'f32', seed), y = kb.randn({ n }, 'f32', seed + 1), out = kb.empty({ n }, 'f32') }
  end,
  run = function(s) scale_add(s.out, s.x, s.y, ALPHA) end,
  outputs = function(s) return { s.out } end,
  reference = function(s)
    if cuda then -- the CPU twin is the reference of the CUDA entry
      local out = kb.empty({ n }, 'f32', 'cpu')
      scale_add(out, s.x:to('cpu'), s.y:to('cpu'), ALPHA)
      return { out }
    end
    local x, y = s.x:totable(), s.y:totable()
    for i = 1, n do x[i] = ALPHA * x[i] + y[i] end
    return { kb.from_table(x, nil, 'f32', 'cpu') }
  end,
}
local ok, report = c:verify()
print('check on ' .. kb.backend() .. ': ' .. report.message)
if not ok then os.exit(1) end
local ms = kb.do_bench.do_bench(function() c.run(c.state) end, { return_mode = 'median', rep_ms = cuda and 100 or 20 })
print(string.format('scale_add, %d elements: %.4f ms, %.1f GB/s (3 x %d bytes)', n, ms, 3 * 4 * n / (ms * 1e6), 4 * n))
assert(c:recheck())
