-- kb.python (docs/KERNELS.md, "Python providers") on the cpu backend, with Debian's /usr/bin/python3 and
-- python3-numpy (make deps installs them): KLUABENCH_PYTHON names that interpreter in every run here, since
-- `python3` on PATH may be another one (a pyenv shim without NumPy). Each case runs a fresh kluabench process,
-- so that which Python is started, and what it keeps, never depends on the specs before it.
--   * the held-out check: a NumPy function loaded with kb.python.load(path):fn(name) and timed through
--     kb.suite.main comes out passed, checked and recorded, and its implementation digest changes when its
--     .py file changes (and not when it does not);
--   * tensors cross without a copy both ways (DLPack, NumPy's array interface), an argument returned is
--     that tensor, a tensor from Python goes back as its object;
--   * clear errors: Python exceptions with their traceback's last lines, a missing module or file, results
--     kluabench cannot take, a view kept past the call (the tensor stays alive until Python drops it);
--   * the interpreter: a venv's, the environment given back, Ctrl-C still kluabench's;
--   * without Python (KLUABENCH_PYTHON naming nothing, no python on PATH): a clear message when a script asks
--     for it, and everything else runs.
local sub = require 'helpers.subprocess'
local json = require 'kluabench.util.json'
local result = require 'kluabench.result'

local ROOT = sub.root()
local PYTHON = '/usr/bin/python3'
local FIXTURES = ROOT .. '/tests/fixtures/python'

-- Runs Lua code (a script file written for the run) with KLUABENCH_PYTHON = PYTHON, on the cpu backend:
-- {out, err, code}. env adds variables; args follow the script.
local function lua(code, env, args)
  local dir = sub.tmpdir()
  sub.spit(dir .. '/t.lua', "local kb = require 'kluabench'\nlocal FIX = " .. string.format('%q', FIXTURES) .. '\n'
    .. code)
  local e = { KLUABENCH_PYTHON = PYTHON }
  for k, v in pairs(env or {}) do e[k] = v end
  local argv = { '--backend', 'cpu', dir .. '/t.lua' }
  for _, a in ipairs(args or {}) do argv[#argv + 1] = a end
  local r = sub.run(argv, { env = e, cwd = dir, timeout = 120 })
  os.execute('rm -rf ' .. sub.q(dir))
  return r
end

-- Whether PYTHON runs kb.python with NumPy here, or why not.
local usable, why_not = (function()
  local r = lua([[
local ok, why = kb.python.available()
if not ok then print(why) return end
local fine, err = pcall(kb.python.load, 'numpy')
print(fine and 'yes' or err)]])
  local line = (r.out or ''):match('^[^\n]*') or ''
  if r.code == 0 and line == 'yes' then return true end
  return false, PYTHON .. ' cannot run kb.python with NumPy here (make deps installs python3-numpy): '
    .. (line ~= '' and line or r.err)
end)()

local function check(name, fn)
  if usable then it(name, fn) else pending(name .. ' (' .. why_not .. ')') end
end

-- The one benchmark of the held-out check: numpy's 2 * x through kb.python, checked against kluabench's own.
local BENCH = [[
local kb = require 'kluabench'
local dir = arg[0]:match('^(.*)/') or '.'
local scale = kb.python.load(dir .. '/scale_numpy.py'):fn('scale')
kb.suite.main {
  name = 'numpy_scale', axes = { { name = 'n', default = 4096 } }, dtypes = { 'f32' }, modes = { 'forward' },
  providers = { 'numpy' },
  setup = function(p) return { x = kb.randn({ p.n }, 'f32', 1) } end,
  run = function(p, provider, mode, t) return function(s) s = s or t; scale(s.x, 2.0) end end,
  check = function(p, provider, t)
    local got, want = scale(t.x, 2.0), t.x * 2.0
    local d = kb.max_abs_diff(got, want)
    if d ~= 0 then kb.suite.wrong_result('numpy_scale: 2 * x differs by ' .. d) end
    got:free()
    want:free()
    return { reference = 'x * 2 by kluabench', passed = true, maxAbsDiff = d, relL2 = 0 }
  end,
  reference = function() return {} end, -- out of place: the inputs stay as they are
  implementation = os.getenv('HOOK') ~= 'none' and function() return scale:info() end or nil,
}
]]

local PROVIDER = [[
import numpy as np


def scale(x, a):
    return np.from_dlpack(x) * a
]]

describe('kb.python: the held-out check', function()
  local dir
  setup(function()
    dir = sub.tmpdir()
    sub.spit(dir .. '/bench.lua', BENCH)
  end)
  teardown(function() os.execute('rm -rf ' .. sub.q(dir)) end)

  -- The run's one bundle, after the run passed.
  local function run(source, hook)
    sub.spit(dir .. '/scale_numpy.py', source)
    local out = dir .. '/out.jsonl'
    os.remove(out)
    local r = sub.run({ '--backend', 'cpu', '--quiet', dir .. '/bench.lua', '--rep-ms', '5', '--warmup-ms', '1',
      '--format', 'jsonl', '--out', out }, { env = { KLUABENCH_PYTHON = PYTHON, HOOK = hook }, timeout = 120 })
    assert(r.code == 0, r.err)
    local lines = {}
    for l in sub.slurp(out):gmatch('[^\n]+') do lines[#lines + 1] = json.decode(l) end
    assert.equal(1, #lines)
    local v = sub.run({ 'verify', out })
    assert(v.code == 0, v.out .. v.err)
    return lines[1]
  end

  check('times a NumPy function through kb.suite.main: passed, checked and recorded', function()
    local b = run(PROVIDER)
    local s = result.session(b)
    assert.equal('passed', s.status)
    assert.equal('numpy', s.provider)
    assert.is_true(s.median_ns > 0)
    assert.equal(0, b.run.spec.correctness.maximumAbsoluteError) -- the check's record
    local impl = b.implementation.spec
    assert.equal('python', impl.callable.language)
    assert.equal('scale_numpy.scale', impl.callable.symbol)
    assert.equal('kluabench_python', impl.callable.interface)
    assert.equal('scale_numpy.py', impl.source.fileName)
    local req = impl.buildVariants[1].requirements
    assert.matches('^3%.%d+%.%d+$', req.python)
    assert.matches('^%d+%.%d+', req.numpy) -- the version NumPy says it is
    assert.truthy(b.implementation.metadata.name:find('numpy', 1, true))
  end)

  check('changes the implementation digest when the .py file changes, and only then', function()
    local function digest(source, hook) return result.session(run(source, hook)).digests.implementation end
    local a, same = digest(PROVIDER), digest(PROVIDER)
    local changed = digest((PROVIDER:gsub('return np.from_dlpack%(x%) %* a', 'return a * np.from_dlpack(x)')))
    assert.equal(a, same)
    assert.not_equal(a, changed)
  end)

  check('covers the .py file in the script\'s implementation when the benchmark declares none (kb.loaded_code)',
    function()
      local a = run(PROVIDER, 'none')
      local changed = run(PROVIDER .. '\n# one more line\n', 'none')
      assert.equal('lua', a.implementation.spec.callable.language)
      assert.not_equal(result.session(a).digests.implementation, result.session(changed).digests.implementation)
    end)
end)

describe('kb.python: tensors across without a copy', function()
  check('lends a tensor: NumPy writes through its view, and DLPack views the same memory', function()
    local r = lua([[
local m = kb.python.load(FIX .. '/numpy_provider.py')
local x = kb.from_table({ 1, 2, 3, 4 }, { 4 }, 'f32')
local out = kb.zeros({ 4 }, 'f32')
m:fn('scale_into')(x, 3, out)
print(table.concat(out:totable(), ','))
local dl, ai = m:fn('addresses')(x)
print(dl == ai, math.type(dl))
local back = m:fn('double_in_place')(x)
print(rawequal(back, x), table.concat(x:totable(), ','))
]])
    assert(r.code == 0, r.err)
    assert.equal('3.0,6.0,9.0,12.0\ntrue\tinteger\ntrue\t2.0,4.0,6.0,8.0\n', r.out)
  end)

  check('takes what Python returns: a tensor over its memory (no copy), numbers, strings, several', function()
    local r = lua([[
local m = kb.python.load(FIX .. '/numpy_provider.py')
local g = m:fn('make_global')(5)
print(g, g.device)
g:fill_(7)
print(m:fn('global_total')()) -- Python sees what Lua wrote
local x = kb.from_table({ 1, 2 }, { 2 }, 'f64')
local y, s, t, n, b, i = m:fn('several')(x)
print(table.concat(y:totable(), ','), s, t, n, b, i, math.type(i), select('#', m:fn('several')(x)))
print(rawequal(m:fn('identity')(g), g)) -- a tensor from Python goes back as its object, and comes back as itself
local before = kb.memory_stats('cpu').allocated_bytes
g:free()
print(kb.memory_stats('cpu').allocated_bytes == before) -- Python's storage was never counted as kluabench's
print(kb.trust.guard_check(kb.trust.arm(m:fn('make_global')(3)))) -- no guard bytes around Python's memory
]])
    assert(r.code == 0, r.err)
    local lines = {}
    for l in r.out:gmatch('[^\n]+') do lines[#lines + 1] = l end
    assert.matches('^kluabench%.Tensor%(%[5%], f32, cpu%)', lines[1])
    assert.equal('35.0', lines[2])
    assert.equal('2.0,3.0\t3.0\ttext\tnil\ttrue\t7\tinteger\t6', lines[3])
    assert.equal('true', lines[4])
    assert.equal('true', lines[5])
    assert.equal('true', lines[6])
  end)

  check('keeps a Python object as a kluabench.PyObject that later calls take back', function()
    local r = lua([[
local m = kb.python.load(FIX .. '/numpy_provider.py')
local st = m:fn('make_state', { returns = 'object' })(3)
local bump = m:fn('bump')
print(tostring(st):match('^kluabench%.PyObject: numpy_provider%.State') ~= nil, bump(st), bump(st))
st:free()
st:free()
print(pcall(bump, st))
print(pcall(m.fn, m, 'scale', { returns = 'table' }))
]])
    assert(r.code == 0, r.err)
    assert.equal('true\t1\t2\nfalse\tbad argument #1 to \'call\' (Python object has been freed)\n'
      .. 'false\tbad argument #2 to \'fn\' (opts.returns must be "values" or "object")\n', r.out)
  end)
end)

describe('kb.python: errors', function()
  -- The message of a failed call of the fixture's function name, with args (Lua source).
  local function fails(name, args)
    local r = lua(string.format([[
local m = kb.python.load(FIX .. '/numpy_provider.py')
local x = kb.from_table({ 1, 2, 3, 4 }, { 4 }, 'f32')
local ok, err = pcall(m:fn(%q)%s)
assert(not ok, 'no error')
io.write(err)
]], name, args and (', ' .. args) or ''))
    assert(r.code == 0, r.err)
    return r.out
  end

  check('turns a Python exception into an error with its traceback\'s last lines', function()
    local msg = fails('fail', 'x')
    assert.matches('^kb%.python: numpy_provider%.fail raised ValueError: the input is negative\n', msg)
    assert.matches('Traceback %(most recent call last%):\n', msg)
    assert.matches('numpy_provider%.py", line %d+, in inner\n', msg)
    assert.matches("raise ValueError%('the input is negative'%)$", msg)
    assert.is_nil(msg:find('<kluabench python glue>', 1, true)) -- the glue's own frames are left out
  end)

  check('refuses results kluabench cannot take, saying what a provider returns', function()
    assert.matches('returns_dict returned what kluabench cannot take: result 1 is a dict %(a Python provider returns '
      .. 'None, booleans, numbers, strings or tensors', fails('returns_dict'))
    assert.matches('result 1 that kluabench cannot take as a tensor: its dtype is int64, not one of a kluabench '
      .. 'tensor\'s %(bf16, f16, f32, f64%)', fails('returns_ints'))
    assert.matches('it is not contiguous %(dimension 2 has stride 4 elements, row%-major needs 1%): return a '
      .. 'contiguous copy', fails('returns_transposed'))
    assert.matches('is not 16%-byte aligned', fails('returns_misaligned'))
    assert.matches('result 1 is an integer outside 64 bits', fails('returns_big_int'))
    assert.matches('numpy_provider%.head returned a view of argument #1 %(a part of it, or another shape or dtype%) '
      .. 'as result 1: return the argument itself, or a copy', fails('head', 'x'))
  end)

  check('refuses arguments Python cannot take', function()
    assert.equal("bad argument #2 to 'call' (table cannot be passed to Python: nil, booleans, numbers, strings, "
      .. 'tensors and Python objects can)', fails('identity', '1, {}'))
    assert.equal("bad argument #1 to 'call' (tensor has been freed)",
      fails('identity', '(function() local t = kb.zeros({ 1 }); t:free(); return t end)()'))
    assert.equal("bad argument #1 to 'call' (a string that is not UTF-8 text: Python takes str)",
      fails('identity', '"\\255"'))
  end)

  check('names a missing module, file and function', function()
    local r = lua([[
print(select(2, pcall(kb.python.load, 'no_such_module_kb')))
print(select(2, pcall(kb.python.load, FIX .. '/missing.py')))
print(select(2, pcall(kb.python.load(FIX .. '/numpy_provider.py').fn, kb.python.load(FIX .. '/numpy_provider.py'), 'nope')))
]])
    assert(r.code == 0, r.err)
    assert.matches("kb%.python%.load: cannot load 'no_such_module_kb': ModuleNotFoundError: No module named "
      .. "'no_such_module_kb'", r.out)
    assert.matches("kb%.python%.load: cannot read '[^']*/missing%.py': No such file or directory", r.out)
    assert.matches("bad argument #1 to 'fn': AttributeError: module 'numpy_provider' has no attribute 'nope' "
      .. '%(its callables: State, addresses, ', r.out)
  end)

  check('makes keeping a view past the call an error, and keeps the tensor alive until Python drops it', function()
    local r = lua([[
local m = kb.python.load(FIX .. '/numpy_provider.py')
local x = kb.from_table({ 1, 2, 3, 4 }, { 4 }, 'f32')
print(select(2, pcall(m:fn('keep_view'), x)))
print(select(2, pcall(x.free, x)))
print(m:fn('total')(x)) -- the kept view reads the tensor still
m:fn('drop_kept')()
m:fn('total')(x) -- the next call notices the view is gone
print(pcall(x.free, x))
local y = kb.zeros({ 2 }, 'f32')
print(select(2, pcall(m:fn('keep_tensor'), y)))
print(select(2, pcall(m:fn('use_kept'))))
]])
    assert(r.code == 0, r.err)
    local lines = {}
    for l in r.out:gmatch('[^\n]+') do lines[#lines + 1] = l end
    assert.equal('kb.python: numpy_provider.keep_view kept a view of argument #1 (a kluabench tensor) after its call '
      .. 'returned: a view of a lent tensor is valid only during the call (copy what you keep: x.clone(), '
      .. 'numpy.array(x)); the tensor stays alive, and free() refuses it, until Python drops the view', lines[1])
    assert.equal('free: tensor is viewed by Python: a function kb.python called kept a view of it after its call '
      .. '(freed once Python drops the view)', lines[2])
    assert.equal('10.0', lines[3])
    assert.equal('true', lines[4])
    assert.matches('^kb%.python: numpy_provider%.keep_tensor kept a view of argument #1', lines[5])
    assert.matches('^kb%.python: numpy_provider%.use_kept raised BufferError: this kluabench tensor was lent for a '
      .. 'call that has returned', lines[6])
  end)
end)

describe('kb.python: the interpreter', function()
  check('runs the Python KLUABENCH_PYTHON names, gives the environment back, and leaves Ctrl-C to kluabench',
    function()
      local r = lua([[
local info = kb.python.info()
print(info.asked, info.executable, info.home)
local m = kb.python.load(FIX .. '/introspect.py')
local exe, prefix, home, unbuffered, version = m:fn('runtime')()
-- what the start set (PYTHONHOME, PYTHONUNBUFFERED) is as the process had it
print(exe, prefix, home == os.getenv('PYTHONHOME'), unbuffered == os.getenv('PYTHONUNBUFFERED'), version)
print(m:fn('child_prefix')())
kb.defer_interrupts(true)
kb.process.kill(kb.process.getpid(), 'SIGINT')
kb.process.sleep(50)
print(kb.interrupted())
]])
      assert(r.code == 0, r.err)
      local lines = {}
      for l in r.out:gmatch('[^\n]+') do lines[#lines + 1] = l end
      assert.equal(PYTHON .. '\t' .. PYTHON .. '\t/usr', lines[1])
      assert.matches('^' .. PYTHON:gsub('%p', '%%%0') .. '\t/usr\ttrue\ttrue\t3%.%d+$', lines[2])
      assert.equal('/usr', lines[3])
      assert.equal('true\tSIGINT', lines[4])
    end)

  check('runs a venv\'s Python with its prefix and the packages it sees', function()
    local venv = sub.tmpdir() .. '/venv'
    assert(os.execute(sub.q(PYTHON) .. ' -m venv --without-pip --system-site-packages ' .. sub.q(venv)))
    local r = lua([[
local m = kb.python.load(FIX .. '/introspect.py')
local exe, prefix = m:fn('runtime')()
print(exe, prefix, kb.python.info().home, m:fn('child_prefix')())
print(kb.python.load('numpy'):info().name)
]], { KLUABENCH_PYTHON = venv .. '/bin/python' })
    os.execute('rm -rf ' .. sub.q(venv:match('^(.*)/venv$')))
    assert(r.code == 0, r.err)
    assert.equal(string.format('%s/bin/python\t%s\t/usr\t%s\nnumpy\n', venv, venv, venv), r.out)
  end)
end)

describe('the RoPE benchmarks\' Python peers (stdlib/kluabench/benchmarks/rope_providers.py)', function()
  check('load without torch and say which package a provider lacks', function()
    local r = lua(string.format([[
local m = kb.python.load(%q)
print(m:fn('unavailable')('llama4_rope', 'liger'))
print(m:fn('packages')('liger'))
print(m:fn('packages')('huggingface'))
]], ROOT .. '/stdlib/kluabench/benchmarks/rope_providers.py'))
    assert(r.code == 0, r.err)
    local lines = {}
    for l in r.out:gmatch('[^\n]+') do lines[#lines + 1] = l end
    -- torch is missing here (or, where Debian's python3-torch is installed, it sees no CUDA device)
    assert.matches('^torch (.+)$', lines[1])
    assert.truthy(lines[1]:find('is not installed for ' .. PYTHON, 1, true) or lines[1]:find('sees no CUDA device', 1, true))
    assert.equal('torch\ttransformers\tliger_kernel\ttriton', lines[2])
    assert.equal('torch\ttransformers', lines[3])
  end)
end)

describe('kb.python where there is no Python', function()
  -- PATH without any python, KLUABENCH_PYTHON as given.
  local function hidden(code, python, args)
    local empty = sub.tmpdir()
    local r = lua(code, { KLUABENCH_PYTHON = python, PATH = empty }, args)
    os.execute('rm -rf ' .. sub.q(empty))
    return r
  end

  it('says why when a script asks for Python, and only then', function()
    local r = hidden([[
print(kb.python.available())
print(select(2, pcall(kb.python.load, 'json')))
print(select(2, pcall(kb.python.info)))
print(kb.randn({ 4 }, 'f32', 1):sum():item() ~= nil) -- the rest of kluabench runs
]], '/nonexistent/python3')
    assert(r.code == 0, r.err)
    local why = 'kb.python: no Python: KLUABENCH_PYTHON=/nonexistent/python3: cannot run it: No such file or directory'
    assert.equal('false\t' .. why .. '\n' .. why .. '\n' .. why .. '\ntrue\n', r.out)
    local unset = hidden('print(select(2, kb.python.available()))', '')
    assert(unset.code == 0, unset.err)
    assert.equal('kb.python: no Python: python3 on PATH (KLUABENCH_PYTHON is not set): cannot run it: No such file '
      .. 'or directory\n', unset.out)
  end)

  it('runs the RoPE benchmarks, skipping the Python peers with a line each and writing no bundle for them',
    function()
      local out = sub.tmpdir() .. '/rope.jsonl'
      local empty = sub.tmpdir()
      local r = sub.run({ '--backend', 'cpu', '--quiet', ROOT .. '/scripts/llama4_rope.lua', '--provider', 'all',
        '--hidden', '512', '--seq', '64', '--rep-ms', '1', '--warmup-ms', '1', '--format', 'jsonl', '--out', out },
        { env = { KLUABENCH_PYTHON = '/nonexistent/python3', PATH = empty }, timeout = 300 })
      assert(r.code == 0, r.err)
      for _, peer in ipairs { 'huggingface', 'liger', 'torch_compile' } do
        assert.matches('llama4_rope: provider ' .. peer .. ' skipped: [^\n]+\n', r.err)
      end
      local providers = {}
      for l in sub.slurp(out):gmatch('[^\n]+') do providers[result.session(json.decode(l)).provider] = true end
      assert.same({ fused = true, reference = true, floor = true, copy = true }, providers)
      os.execute('rm -rf ' .. sub.q(out:match('^(.*)/')) .. ' ' .. sub.q(empty))
    end)
end)
