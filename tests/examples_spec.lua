-- Every example in examples/ runs (with small sizes) and exits 0, opens with
-- one comment line saying what it shows, and keeps stdout for its output.
local kb = require 'kluabench'
local json = require 'kluabench.util.json'
local result = require 'kluabench.result'

local ROOT = package.searchpath('kluabench.init', package.path):match('^(.-)/?stdlib/kluabench/init%.lua$')
if ROOT == '' then ROOT = '.' end

-- Small sizes for each example (a sequence length, a sample count, ...).
local ARGS = {
  ['custom_protocol.lua'] = { '64', '5' },
  ['compare_interleaved.lua'] = { '64', '5' },
  ['sweep_axes.lua'] = { '32', '2' },
  ['custom_record.lua'] = { '64' },
  ['bandwidth.lua'] = { '64' },
  ['read_results.lua'] = {},
  ['nvrtc_kernel.lua'] = { '--n', '4096', '--rep-ms', '5', '--format', 'jsonl' },
  ['triton_kernel.lua'] = { '--n', '4096', '--rep-ms', '5', '--format', 'jsonl' },
  ['user_plugin.lua'] = { '--n', '4096', '--rep-ms', '5', '--format', 'jsonl' },
  ['python_provider.lua'] = { '--n', '4096', '--rep-ms', '5', '--format', 'jsonl', '--provider', 'all' },
  ['copy_benchmark.lua'] = { '--mib', '1', '--rep-ms', '5', '--format', 'jsonl' },
  ['vector_add_benchmark.lua'] = { '--mi', '1', '--rep-ms', '5', '--format', 'jsonl' },
}

local function examples()
  local host = package.loaded['kluabench.host']
  local names = {}
  for _, name in ipairs(host.listdir(ROOT .. '/examples')) do
    if name:match('%.lua$') then names[#names + 1] = name end
  end
  table.sort(names)
  return names
end

local function slurp(path)
  local f = io.open(path, 'rb')
  if not f then return '' end
  local s = f:read('a')
  f:close()
  return s
end

local function quote(s) return "'" .. tostring(s):gsub("'", "'\\''") .. "'" end

-- Runs a script on the cpu backend (env: NAME=value words before it): exit code, stdout, stderr.
local function run_script(path, args, env)
  local out, err = os.tmpname(), os.tmpname()
  local words = { 'KLUABENCH_QUIET=', quote(kb.executable()), '--backend', 'cpu', quote(path) }
  for i, e in ipairs(env or {}) do table.insert(words, i, e:match('^[%w_]+=') .. quote(e:match('=(.*)$'))) end
  for _, a in ipairs(args or {}) do words[#words + 1] = quote(a) end
  local cmd = table.concat(words, ' ') .. ' >' .. out .. ' 2>' .. err
  local ok, _, code = os.execute(cmd)
  local o, e = slurp(out), slurp(err)
  os.remove(out)
  os.remove(err)
  return ok and 0 or code, o, e
end

-- Runs an example of examples/.
local function run(name, args, env) return run_script(ROOT .. '/examples/' .. name, args, env) end

describe('examples', function()
  local list = examples()

  it('exist, one feature per file', function()
    assert.is_true(#list >= 6)
  end)

  for _, name in ipairs(list) do
    it(name .. ' opens with one comment line saying what it shows', function()
      local first = slurp(ROOT .. '/examples/' .. name):match('^[^\n]*')
      assert.truthy(first:match('^%-%- %u.+[%.:]?$'), first)
      assert.is_true(#first <= 160, 'first line too long: ' .. first)
    end)

    it(name .. ' runs on the cpu backend and exits 0', function()
      local code, out, err = run(name, ARGS[name])
      assert(code == 0, string.format('%s exited %s\nstdout:\n%s\nstderr:\n%s', name, tostring(code), out, err))
      assert.truthy(out:match('%S'), name .. ' printed nothing')
    end)
  end

  -- the three routes of a user kernel (docs/KERNELS.md), each in the harness
  for _, case in ipairs {
    { 'nvrtc_kernel.lua', 'saxpy: cpu backend: the kernel is compiled, not run; the reference is timed' },
    { 'triton_kernel.lua', 'add_kernel: cpu backend: the kernel is read, not run; the reference is timed' },
    { 'user_plugin.lua', 'scale_add: cpu backend: the CUDA entry is skipped; the CPU twin is timed' },
  } do
    it(case[1] .. ' runs its kernel in the harness as far as the cpu goes, and says what it skipped', function()
      local code, out, err = run(case[1], ARGS[case[1]])
      assert.equal(0, code, err)
      assert.truthy(err:find(case[2], 1, true), err)
      local bundle = assert(json.decode(out:match('^[^\n]+')))
      assert.equal('passed', bundle.run.spec.status)
      -- the harness checked the result before timing it, and audits each call against the reference hook
      local text = slurp(ROOT .. '/examples/' .. case[1])
      assert.truthy(text:find('\n  check = function', 1, true) and text:find('\n  reference = function', 1, true))
    end)
  end

  -- Debian's python3 with python3-numpy (make deps installs both), as tests/python_spec.lua uses
  local PYTHON = '/usr/bin/python3'
  local has_numpy = os.execute(quote(PYTHON) .. ' -c "import numpy" >/dev/null 2>&1') == true
  local numpy_it = has_numpy and it or pending
  numpy_it('python_provider.lua times NumPy beside tensor ops, each checked, the .py file in its record', function()
    local code, out, err = run('python_provider.lua', ARGS['python_provider.lua'], { 'KLUABENCH_PYTHON=' .. PYTHON })
    assert.equal(0, code, err)
    local by = {}
    for line in out:gmatch('[^\n]+') do
      local b = assert(json.decode(line))
      by[result.session(b).provider] = b
    end
    assert.equal('passed', by.numpy.run.spec.status)
    assert.equal('passed', by.tensor_ops.run.spec.status)
    assert.equal('python_saxpy.py', by.numpy.implementation.spec.source.fileName)
    assert.equal('python_saxpy.saxpy', by.numpy.implementation.spec.callable.symbol)
  end)

  it('python_provider.lua skips NumPy with one line where Python cannot load it, and times the rest', function()
    local code, out, err = run('python_provider.lua', ARGS['python_provider.lua'],
      { 'KLUABENCH_PYTHON=/nonexistent/python3' })
    assert.equal(0, code, err)
    assert.truthy(err:find('saxpy_py: provider numpy skipped: ', 1, true), err)
    local _, rows = out:gsub('[^\n]+', '')
    assert.equal(1, rows)
  end)

  it('nvrtc_kernel.lua times a CUDA kernel in the harness in at most 25 non-blank lines', function()
    local n = 0
    for line in slurp(ROOT .. '/examples/nvrtc_kernel.lua'):gmatch('[^\n]*') do
      if line:match('%S') then n = n + 1 end
    end
    assert.is_true(n <= 25, n .. ' non-blank lines')
  end)

  it('triton_kernel.lua takes a kernel of Triton\'s cache with --kernel, and says which it read', function()
    local dir = os.tmpname()
    os.remove(dir)
    assert(kb.mkdir(dir))
    local f = assert(io.open(dir .. '/add_kernel.cubin', 'wb'))
    f:write(kb.cuda.compile('extern "C" __global__ void add_kernel(const float *x, const float *y, float *out, int n) {}',
      { name = 'add_kernel.cu' }):cubin())
    f:close()
    f = assert(io.open(dir .. '/add_kernel.json', 'w'))
    f:write('{"name": "add_kernel", "num_warps": 8, "shared": 64}')
    f:close()
    local code, _, err = run('triton_kernel.lua', { '--kernel', dir .. '/add_kernel.json', '--list-points' })
    kb.remove_tree(dir)
    assert.equal(0, code, err)
    assert.truthy(err:find('add_kernel: add_kernel, num_warps 8 (256 threads a program), shared 64 B', 1, true), err)
    assert.is_nil(err:find('stand-in', 1, true), err)
  end)

  it('nvrtc_kernel.lua catches a wrong kernel in its check: not timed, incorrect_numerical, exit 1', function()
    -- the example as it is, with y:add_ (its cpu path) made wrong by a script that loads it
    local wrapper, out = os.tmpname(), os.tmpname() .. '.jsonl'
    local f = assert(io.open(wrapper, 'w'))
    f:write([[
local kb = require 'kluabench'
local methods = getmetatable(kb.empty({ 1 })).methods
local add_ = methods.add_
methods.add_ = function(y, x) return add_(add_(y, x), x) end
arg[0] = ]], string.format('%q', ROOT .. '/examples/nvrtc_kernel.lua'), '\n', 'dofile(arg[0])\n')
    f:close()
    local code, stdout, err = run_script(wrapper, { '--n', '4096', '--rep-ms', '5', '--format', 'jsonl', '--out', out })
    local records = slurp(out)
    os.remove(wrapper)
    os.remove(out)
    os.remove((out:gsub('%.jsonl$', '.samples.jsonl')))
    os.remove(out:sub(1, -7))
    assert.equal(1, code, err)
    assert.truthy(err:find('incorrect_numerical: provider tensor_ops at n4096-fp32 is not timed: saxpy: ', 1, true), err)
    assert.equal('incorrect_numerical', assert(json.decode(records:match('^[^\n]+'))).run.spec.status)
    assert.equal('', stdout)
  end)

  it('sweep_axes.lua writes its table to stdout and its progress to stderr', function()
    local code, out, err = run('sweep_axes.lua', { '32', '1' })
    assert.equal(0, code)
    assert.truthy(out:match('^| head_dim |'), out)
    assert.is_nil(out:find('[1/6]', 1, true))
    assert.truthy(err:find('[6/6]', 1, true), err)
    assert.truthy(err:find('done: 6/6 points', 1, true), err)
  end)

  it('read_results.lua reads a results file back and draws its chart', function()
    local liger = require 'kluabench.liger'
    local json = require 'kluabench.util.json'
    local results, chart = os.tmpname(), os.tmpname() .. '.svg'
    local f = assert(io.open(results, 'w'))
    for _, row in ipairs(assert(liger.read(ROOT .. '/tests/fixtures/plot/llama4_rope_liger.csv'))) do
      if row.kernel_operation_mode == 'backward' and row.x_name == 'T' then
        f:write(assert(json.encode_line(assert(liger.row_to_bundle(row)))), '\n')
      end
    end
    f:close()
    local code, out, err = run('read_results.lua', { results, chart })
    local svg = slurp(chart)
    os.remove(results)
    os.remove(chart)
    os.remove(chart:sub(1, -5))
    assert.equal(0, code, err)
    assert.truthy(out:find('10 bundles in', 1, true), out)
    assert.truthy(out:find('backward hidden8192-kv_heads8-q_heads32-seq1024-bf16: liger is 2.40x the speed of huggingface',
      1, true), out)
    assert.truthy(out:find('wrote ' .. chart, 1, true), out)
    assert.truthy(svg:match('^<svg'))
  end)

  it('vector_add_benchmark.lua catches a wrong kernel in its check: not timed, incorrect_numerical, exit 1', function()
    -- the example as it is, with y:add_(x) made wrong (y + 2x) by a script that loads it; its
    -- reference is made with `+`, which the swap leaves alone
    local wrapper, out = os.tmpname(), os.tmpname() .. '.jsonl'
    local f = assert(io.open(wrapper, 'w'))
    f:write([[
local kb = require 'kluabench'
local json = require 'kluabench.util.json'
local methods = getmetatable(kb.empty({ 1 })).methods
local add_ = methods.add_
methods.add_ = function(y, x) return add_(add_(y, x), x) end
arg[0] = ]], string.format('%q', ROOT .. '/examples/vector_add_benchmark.lua'), '\n', 'dofile(arg[0])\n')
    f:close()
    local code, stdout, err = run_script(wrapper, { '--mi', '1', '--rep-ms', '5', '--format', 'jsonl', '--out', out })
    local records = slurp(out)
    os.remove(wrapper)
    os.remove(out)
    os.remove((out:gsub('%.jsonl$', '.samples.jsonl')))
    os.remove(out:sub(1, -7))
    assert.equal(1, code, err)
    assert.truthy(err:find('incorrect_numerical: provider add_ at mi1-fp32 is not timed: vector_add: y + x is off by',
      1, true), err)
    assert.is_nil(err:find('traceback', 1, true), err)
    local bundle = assert(json.decode(records:match('^[^\n]+')))
    assert.equal('incorrect_numerical', bundle.run.spec.status)
    assert.equal('', stdout)
  end)

  it('custom_record.lua prints a canonical line whose digest recomputes', function()
    local code, out = run('custom_record.lua', { '32' })
    assert.equal(0, code)
    local line = out:match('^[^\n]+')
    local rec = assert(json.decode(line))
    assert.equal(line, kb.jcs.encode(rec))
    local digest = rec.digest
    rec.digest = nil
    assert.equal(digest, kb.digest(rec))
  end)
end)
