-- Your C plugin with a CPU twin in the harness (examples/plugin/scale_add.c, .cu): checked, timed and written as records.
--
--   kluabench examples/user_plugin.lua [--plugin PATH.so] [--n N --protocol cold ...]
--
-- make builds the plugin into build/plugins/libscale_add.so (include/kluabench_plugin.h is its whole interface): the
-- CPU twin always, the CUDA entry with CUDA=1. On cuda the CUDA entry is timed and checked against the plugin's own
-- CPU twin; on the cpu backend the twin is timed and checked against tensor ops. The other options are the harness's.
local kb = require 'kluabench'
local check = require 'kluabench.kernels.check'

local ALPHA = 1.5
-- --plugin PATH is this script's own option; the rest of the line goes to the harness
local path, argv, i = nil, {}, 1
while arg and i <= #arg do
  if arg[i] == '--plugin' then path, i = arg[i + 1], i + 2 else argv[#argv + 1], i = arg[i], i + 1 end
end
path = path or (kb.executable():match('^(.*)/[^/]*$') .. '/plugins/libscale_add.so')
local scale_add = kb.plugin.load(path):kernel('scale_add')
local info = scale_add:info()
io.stderr:write(string.format('scale_add: %s(%s) from %s, CUDA entry %s, CPU twin %s\n', info.name, info.signature,
  path, info.cuda and 'yes' or 'no', info.cpu and 'yes' or 'no'))
local gpu = kb.backend() == 'cuda'
if not gpu then io.stderr:write('scale_add: cpu backend: the CUDA entry is skipped; the CPU twin is timed\n') end

kb.suite.main({
  name = 'scale_add', dtypes = { 'f32' }, modes = { 'forward' }, providers = { gpu and 'cuda_entry' or 'cpu_twin' },
  axes = { { name = 'n', default = 1 << 24, help = 'elements' } },
  summary = 'out = 1.5 x + y by the plugin scale_add (--plugin PATH.so: another build of it)',
  setup = function(p)
    return { x = kb.randn({ p.n }, 'f32', 1), y = kb.randn({ p.n }, 'f32', 2), out = kb.empty({ p.n }, 'f32') }
  end,
  run = function(p, provider, mode, t) return function(s) s = s or t; scale_add(s.out, s.x, s.y, ALPHA) end end,
  reference = function(p, provider, mode, t) return { out = t.x * ALPHA + t.y } end, -- what one call leaves in out
  check = function(p, provider, t) -- before timing, on fresh inputs: a wrong result is not timed
    check.poison(t.out) -- an element the plugin does not write reads NaN
    scale_add(t.out, t.x, t.y, ALPHA)
    local want = t.x * ALPHA + t.y
    if gpu then -- the CUDA entry against the plugin's own CPU twin
      want = kb.empty({ p.n }, 'f32', 'cpu')
      scale_add(want, t.x:to('cpu'), t.y:to('cpu'), ALPHA)
    end
    local ok, r = check.compare(t.out, want)
    if not ok then kb.suite.wrong_result('scale_add: ' .. r.message) end
    return { reference = gpu and 'the CPU twin' or 'tensor ops', maxAbsDiff = r.max_abs }
  end,
  cost = function(p) return 12 * p.n, 2 * p.n end, -- bytes (x and y read, out written) and flops
  implementation = function() return info end, -- the records name the plugin, its file and digest
}, argv)
