-- A Python provider in the harness: NumPy's a*x + y beside kluabench's tensor ops, checked and timed alike.
local kb = require 'kluabench'
local check = require 'kluabench.kernels.check'
local SOURCE = (arg[0]:match('^(.*)/') or '.') .. '/python_saxpy.py'
local numpy_saxpy, why_not -- loaded once, by the first provider that asks
local function numpy()
  if numpy_saxpy == nil and why_not == nil then
    local ok, fn = pcall(function() return kb.python.load(SOURCE):fn('saxpy') end)
    if ok then numpy_saxpy = fn else why_not = tostring(fn):gsub('\n.*', '') end -- its first line
  end
  return why_not
end
-- y' = 2x + y as a new tensor: NumPy's (read by DLPack, no copy) or kluabench's own.
local function saxpy(provider, s)
  if provider == 'numpy' then return numpy_saxpy(s.x, s.y, 2.0) end
  return s.x * 2 + s.y
end
kb.suite.main { -- kluabench examples/python_provider.lua --help lists the options it makes
  name = 'saxpy_py', dtypes = { 'f32' }, modes = { 'forward' }, providers = { 'numpy', 'tensor_ops' },
  axes = { { name = 'n', default = 1 << 20, help = 'elements' } },
  available = function(provider) -- nil, or why it cannot run here: the harness skips it with that line
    if provider ~= 'numpy' then return nil end
    if kb.backend() ~= 'cpu' then return 'NumPy reads host memory: give --backend cpu before the script' end
    return numpy()
  end,
  setup = function(p) return { x = kb.randn({ p.n }, 'f32', 1), y = kb.randn({ p.n }, 'f32', 2) } end,
  run = function(p, provider, mode, t) return function(s) saxpy(provider, s or t):free() end end,
  check = function(p, provider, t) -- before timing: a wrong result is recorded incorrect_numerical, not timed
    local got = saxpy(provider, t)
    local ok, r = check.compare(got, t.x * 2 + t.y)
    got:free()
    if not ok then kb.suite.wrong_result('saxpy_py: ' .. r.message) end
  end,
  implementation = function(p, provider) -- the .py file's digest goes into the record (nil: this script)
    if provider == 'numpy' then return numpy_saxpy:info() end
  end,
  cost = function(p) return 12 * p.n, 2 * p.n end, -- bytes (x, y read, y' written) and flops
}
