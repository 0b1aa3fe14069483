-- Issue 24, reliability's third round, the parts in the C engine, in
-- kluabench.kernels.check, in file reading and in the commands that start processes
-- (docs/RELIABILITY.md, "Classes and their defences"): bounded reads
-- that never wait on a FIFO, bounded shard and process counts, plugin
-- messages bounded and escaped, a check that cannot be switched off, errors
-- that say what was wrong, an NVRTC cache verified before use, and NUL bytes
-- refused. Whatever could hang or grow without end runs in a child process
-- under `timeout` (and, outside sanitizer builds, a memory limit), so that a
-- regression fails the test instead of stalling the suite.
local kb = require 'kluabench'
local policy = require 'kluabench.suite.policy'
local files = require 'kluabench.util.files'
local check = require 'kluabench.kernels.check'
local checker = require 'kluabench.kernels.checker'
local sub = require 'helpers.subprocess'

local q = sub.q
local PLUGINS = kb.executable():match('^(.*)/[^/]*$') .. '/plugins/'
local NVRTC, NVRTC_WHY = kb.cuda.nvrtc_version()
local SANITIZED = (kb.build_info().cflags or ''):find('sanitize', 1, true) ~= nil

local function sh(cmd) return os.execute(cmd) == true end

local function needs_nvrtc(name, fn)
  if NVRTC then it(name, fn) else pending(name .. ' (NVRTC not found: ' .. tostring(NVRTC_WHY) .. ')') end
end

-- Runs Lua code in a child kluabench (cpu backend) under `timeout SECS` and,
-- outside sanitizer builds (whose shadow memory needs a large address space),
-- a 4 GB address-space limit. Returns {out, err, code}; 124 means it hung.
local function child(code, secs, args)
  local words = {}
  for i, a in ipairs(args or {}) do words[i] = q(a) end
  local errf = os.tmpname()
  local limit = SANITIZED and '' or 'ulimit -v 4000000; '
  local cmd = string.format("sh -c %s < /dev/null 2> %s", q(string.format('%sexec timeout %d %s --backend cpu %s',
    limit, secs or 20, q(sub.bin()), code and ('-e ' .. q(code)) or table.concat(words, ' '))), q(errf))
  local p = io.popen(cmd, 'r')
  local out = p:read('a')
  local _, how, status = p:close()
  local err = sub.slurp(errf) or ''
  os.remove(errf)
  return { out = out, err = err, code = how == 'exit' and status or 128 + status }
end

local function mkfifo(path) assert(sh('mkfifo ' .. q(path))) return path end

-- The message of a call that must fail.
local function err_of(f, ...)
  local ok, e = pcall(f, ...)
  assert.is_false(ok, 'expected an error')
  return tostring(e)
end

---------------------------------------------------------------------------
-- Class 6: unbounded reads and hangs
---------------------------------------------------------------------------

describe('reads are bounded and never wait (issue 24, class 6)', function()
  local dir
  before_each(function() dir = sub.tmpdir() end)
  after_each(function() os.execute('rm -rf ' .. q(dir)) end)

  it('kb.read_file and output.read_file name a directory, a FIFO and a device, at once', function()
    local fifo = mkfifo(dir .. '/fifo')
    local t0 = kb.clock_ns()
    for _, read in ipairs { kb.read_file, files.read_file } do
      local text, err = read(dir)
      assert.is_nil(text)
      assert.equal(dir .. ': is a directory', err)
      text, err = read(fifo) -- returns at once: no writer is waited for
      assert.is_nil(text)
      assert.matches('^' .. fifo:gsub('%p', '%%%0') .. ': is a FIFO, not a regular file', err)
      text, err = read('/dev/zero')
      assert.is_nil(text)
      assert.matches('^/dev/zero: is a character device, not a regular file', err)
      text, err = read(dir .. '/missing')
      assert.is_nil(text)
      assert.equal(dir .. '/missing: No such file or directory', err)
    end
    assert.truthy(kb.clock_ns() - t0 < 5e9)
    sub.spit(dir .. '/small', 'abc\0def')
    assert.equal('abc\0def', kb.read_file(dir .. '/small'))
    assert.equal('abc\0def', files.read_file(dir .. '/small'))
    local text, err = kb.read_file(dir .. '/small', 3)
    assert.is_nil(text)
    assert.equal(dir .. '/small: is larger than 3 bytes (it has 7), the most kluabench reads here', err)
  end)

  it('a huge (sparse) file is refused by its size, before any of it is read', function()
    local big = dir .. '/sparse'
    assert(sh('truncate -s 700M ' .. q(big)))
    local before = collectgarbage('count')
    local t0 = kb.clock_ns()
    local text, err = files.read_file(big)
    assert.is_nil(text)
    -- the size in the message comes from stat: the old reader read 512 MiB first to find out
    assert.equal(big .. ': is larger than 536870912 bytes (it has 734003200), the most kluabench reads here', err)
    assert.truthy(collectgarbage('count') - before < 64 * 1024, 'read the file into memory')
    assert.truthy(kb.clock_ns() - t0 < 5e9)
    text, err = files.read_text(big)
    assert.is_nil(text)
    assert.matches('is larger than', err, 1, true)
  end)

  -- under a memory limit (the child's 4 GB address space) a file within the bound that does not
  -- fit is a message naming it, not a bare "not enough memory"; sanitizer builds have no limit
  local function under_a_limit(name, fn)
    if SANITIZED then pending(name .. ' (a sanitizer build runs without ulimit -v)') else it(name, fn) end
  end
  under_a_limit('a file that does not fit in the memory left is an error naming it and its size', function()
    local big = dir .. '/sparse'
    assert(sh('truncate -s 5G ' .. q(big)))
    local r = child(string.format('print(kb.read_file(%q, 6e9))', big), 20)
    assert.equal(0, r.code, r.err)
    assert.equal('nil\t' .. big .. ': not enough memory to read its 5368709120 bytes\n', r.out)
    os.remove(big)
  end)

  it('kb.cuda.load of /dev/zero, a FIFO and a directory is an error naming the file and why', function()
    local fifo = mkfifo(dir .. '/fifo')
    local code = string.format([[
      local kb = require 'kluabench'
      for _, p in ipairs { '/dev/zero', %q, %q } do print((select(2, pcall(kb.cuda.load, p)))) end]], fifo, dir)
    local r = child(code, 20)
    assert.equal(0, r.code, r.err)
    local lines = {}
    for l in r.out:gmatch('[^\n]+') do lines[#lines + 1] = l end
    assert.equal("bad argument #1 to 'load' (cannot read '/dev/zero': is a character device, not a regular file "
      .. "(a device or a FIFO may never end))", lines[1])
    assert.equal("bad argument #1 to 'load' (cannot read '" .. fifo .. "': is a FIFO, not a regular file "
      .. "(a device or a FIFO may never end))", lines[2])
    assert.equal("bad argument #1 to 'load' (cannot read '" .. dir .. "': is a directory)", lines[3])
  end)

  it('kb.triton.load of a metadata file that is /dev/zero or a FIFO fails at once, naming it', function()
    assert(sh(string.format('ln -s /dev/zero %s', q(dir .. '/zero.json'))))
    mkfifo(dir .. '/fifo.json')
    local code = string.format([[
      local triton = require 'kluabench.kernels.triton'
      for _, p in ipairs { %q, %q } do print((select(2, pcall(triton.load, p)))) end]],
      dir .. '/zero.json', dir .. '/fifo.json')
    local r = child(code, 20)
    assert.equal(0, r.code, r.err)
    assert.matches('read_metadata: cannot read ' .. dir .. '/zero.json: is a character device', r.out, 1, true)
    assert.matches('read_metadata: cannot read ' .. dir .. '/fifo.json: is a FIFO', r.out, 1, true)
  end)

  it('a PTX beside the metadata that is a FIFO is refused, never waited on', function()
    sub.spit(dir .. '/k.json', '{"name": "k", "num_warps": 4}')
    mkfifo(dir .. '/k.ptx')
    local code = string.format([[print((select(2, pcall(require('kluabench.kernels.triton').load, %q))))]],
      dir .. '/k.json')
    local r = child(code, 20)
    assert.equal(0, r.code, r.err)
    assert.matches('cannot read ' .. dir .. '/k.ptx: is a FIFO', r.out, 1, true)
  end)

  it('verify, compare, plot, import-liger and merge end on a FIFO, a directory or a device instead of waiting', function()
    local fifo = mkfifo(dir .. '/fifo.jsonl')
    for _, argv in ipairs {
      { 'verify', fifo }, { 'compare', fifo, fifo }, { 'plot', fifo, '-o', dir .. '/p.svg' },
      { 'import-liger', fifo, '--out', dir .. '/o' },
    } do
      local r = child(nil, 20, argv)
      assert.are_not.equal(124, r.code, argv[1] .. ' waited for a writer')
      assert.matches(fifo .. ': is a FIFO', r.err, 1, true)
      assert.is_nil(r.err:find('does not exist', 1, true), r.err)
    end
    -- merge reads its manifest with the same reader: a FIFO there ends the command, never waits
    os.execute('mkdir ' .. q(dir .. '/run'))
    mkfifo(dir .. '/run/manifest.json')
    local m = child(nil, 20, { 'merge', dir .. '/run', '-o', dir .. '/m.jsonl' })
    assert.are_not.equal(124, m.code, 'merge waited for a writer')
    assert.are_not.equal(0, m.code)
    -- a FILE that is no regular file is a usage error, named before anything is read
    local r = child(nil, 20, { 'verify', dir, '/dev/zero' })
    assert.equal(2, r.code)
    assert.matches(dir .. ': is a directory', r.err, 1, true)
    r = child(nil, 20, { 'verify', '/dev/zero' })
    assert.equal(2, r.code)
    assert.matches('/dev/zero: is a character device', r.err, 1, true)
  end)
end)

describe('shard, process and task counts are bounded (issue 24, class 6)', function()
  local dir
  before_each(function() dir = sub.tmpdir() end)
  after_each(function() os.execute('rm -rf ' .. q(dir)) end)

  -- A harness script that measures nothing costly, and the arguments that
  -- give it n points (--n 8,16,...).
  local function script()
    local path = dir .. '/tiny.lua'
    sub.spit(path, [[
      local kb = require 'kluabench'
      kb.suite.main {
        name = 'tiny', axes = {{name = 'n', default = 8}}, dtypes = {'f32'}, modes = {'forward'},
        providers = {'copy'},
        setup = function(p) return {src = kb.zeros({p.n}, 'f32'), dst = kb.empty({p.n}, 'f32')} end,
        run = function(p, provider, mode, t) return function() t.dst:copy_(t.src) end end,
        cost = function(p) return 8 * p.n, 0 end,
      }]])
    return path
  end
  local function points(n)
    local t = {}
    for i = 1, n do t[i] = tostring(8 * i) end
    return '--n', table.concat(t, ',')
  end

  it('--shard with a count beyond shard.MAX_SHARDS is a usage error naming --shard, at once', function()
    local shard = require 'kluabench.dist.split'
    local i, why = shard.parse('1/999999999')
    assert.is_nil(i)
    assert.equal(string.format("bad shard '1/999999999': the shard count N must be at most %d", shard.MAX_SHARDS), why)
    assert.equal(1, (shard.parse('1/' .. shard.MAX_SHARDS)))
    assert.matches('(shard count: at most ' .. shard.MAX_SHARDS .. ' (shard.MAX_SHARDS), got 1000000000)',
      err_of(shard.select, { { id = 'a', cost = 1 } }, 1, 1000000000), 1, true)
    local r = child(nil, 30, { script(), '--shard', '1/999999999', '--list-points' })
    assert.equal(2, r.code, r.err)
    assert.matches("option '--shard': bad shard '1/999999999': the shard count N must be at most", r.err, 1, true)
  end)

  it('run-all --procs larger than the points starts one child per point; beyond the bound it is a usage error', function()
    local r = child(nil, 120, { 'run-all', '--procs', '1000', '--dir', dir .. '/run', script(), '--rep-ms', '1',
      '--warmup-ms', '1' })
    assert.equal(0, r.code, r.err)
    assert.matches('--procs 1000: the script has 1 point; starting 1 process', r.err, 1, true)
    local m = assert(require('kluabench.util.json').decode(sub.slurp(dir .. '/run/manifest.json')))
    assert.equal(1, m.count)
    assert.is_nil(sub.slurp(dir .. '/run/shard-2.log'))
    r = child(nil, 30, { 'run-all', '--procs', '100000', '--dir', dir .. '/r2', script() })
    assert.equal(2, r.code, r.err)
    assert.matches("kluabench run-all: --procs '100000': expected a whole number from 1 to", r.err, 1, true)
  end)

  it('run-all and slurm refuse a SCRIPT that is a FIFO, without waiting for a writer', function()
    local fifo = mkfifo(dir .. '/script.lua')
    for _, argv in ipairs { { 'run-all', '--procs', '2', '--dir', dir .. '/r', fifo },
      { 'slurm', '--gpus', '2', '--dir', dir .. '/s', fifo } } do
      local r = child(nil, 20, argv)
      assert.equal(2, r.code, r.err)
      assert.matches("cannot read SCRIPT '" .. fifo .. "': is a FIFO, not a regular file", r.err, 1, true)
    end
  end)

  it('slurm --gpus beyond the bound is a usage error at once, before any listing', function()
    local t0 = kb.clock_ns()
    local r = child(nil, 30, { 'slurm', '--gpus', '100000', '--dir', dir .. '/s', script(), points(3) })
    assert.equal(2, r.code, r.err)
    assert.matches("kluabench slurm: --gpus '100000': expected a whole number from 1 to "
      .. require('kluabench.dist.split').MAX_SHARDS, r.err, 1, true)
    assert.is_nil(sub.slurp(dir .. '/s/manifest.json'))
    assert.truthy(kb.clock_ns() - t0 < 20e9)
  end)
end)

---------------------------------------------------------------------------
-- Class 7: plugin messages
---------------------------------------------------------------------------

describe('plugin error text is bounded and escaped (issue 24, class 7)', function()
  local p = kb.plugin.load(PLUGINS .. 'libbroken5.so')
  local t = kb.zeros({ 1 }, 'f32', 'cpu')

  it('a message without its terminating NUL is cut at the buffer, never read past it', function()
    local err = err_of(p:kernel('unterminated'), t)
    assert.equal('broken.unterminated (CPU entry) failed: ' .. string.rep('A', 511)
      .. ' (the plugin left its message unterminated: cut at 511 bytes)', err)
  end)

  it('control bytes and invalid UTF-8 in a message are shown as \\xNN', function()
    local err = err_of(p:kernel('control'), t)
    assert.equal('broken.control (CPU entry) failed: bad\\x1B[2J\\x0Dthing\\xFF', err)
  end)
end)

describe('plugin error text from a CUDA entry #gpu (issue 24, class 7)', function()
  it('is bounded and escaped too, and the context stays usable', function()
    local p = kb.plugin.load(PLUGINS .. 'libbroken5.so')
    local t = kb.zeros({ 1 }, 'f32', 'cuda')
    local err = err_of(p:kernel('unterminated'), t)
    assert.matches('^broken%.unterminated %(CUDA entry%): cudaErrorInvalidValue %(AAAA', err)
    assert.truthy(#err < 600, #err)
    err = err_of(p:kernel('control'), t)
    assert.equal('broken.control (CUDA entry): cudaErrorInvalidValue (bad\\x1B[2J\\x0Dthing\\xFF)', err)
    assert.is_nil(err:find('[%c]'))
    assert.same({ 1, 2 }, kb.from_table({ 1, 2 }, nil, 'f32', 'cuda'):totable())
  end)
end)

---------------------------------------------------------------------------
-- Class 8: kluabench.kernels.check
---------------------------------------------------------------------------

describe('kluabench.kernels.check cannot be switched off or fooled (issue 24, class 8)', function()
  local function cpu(values) return kb.from_table(values, nil, 'f32', 'cpu') end
  -- out = 2 * x, by a "kernel" that writes zeros unless told to be right
  local function spec(over)
    local s = {
      inputs = function(seed) return { x = kb.randn({ 16 }, 'f32', seed, 'cpu'), out = kb.empty({ 16 }, 'f32', 'cpu') } end,
      run = function(st) st.out:fill_(0) end,
      outputs = function(st) return { st.out } end,
      reference = function(st)
        local v = st.x:totable()
        for i = 1, #v do v[i] = 2 * v[i] end
        return { cpu(v) }
      end,
    }
    for k, v in pairs(over or {}) do s[k] = v end
    return s
  end

  it('refuses non-finite and negative tolerances wherever they are given', function()
    for _, c in ipairs { { 0 / 0, 'NaN' }, { -1, '-1' }, { math.huge, 'inf' }, { -math.huge, '-inf' },
      { '1e-3', "string '1e-3'" } } do
      local bad, shown = c[1], c[2]
      assert.matches("bad argument #1 to 'new' (atol must be a finite number >= 0, got " .. shown,
        err_of(checker.new, spec { atol = bad }), 1, true)
      assert.matches("bad argument #1 to 'new' (rtol must be a finite number >= 0, got " .. shown,
        err_of(checker.new, spec { rtol = bad }), 1, true)
      assert.matches("bad argument #3 to 'compare' (atol must be a finite number >= 0, got " .. shown,
        err_of(check.compare, cpu { 0 }, cpu { 1 }, { atol = bad }), 1, true)
      assert.matches("bad argument #2 to 'tolerance' (rtol must be a finite number >= 0, got " .. shown,
        err_of(check.tolerance, 'f32', { rtol = bad }), 1, true)
    end
    assert.matches("compare_elements' (atol must be a finite number >= 0, got NaN)",
      err_of(kb.compare_elements, cpu { 0 }, cpu { 1 }, 0 / 0, 0), 1, true)
    assert.matches("compare_elements' (rtol must be a finite number >= 0, got -1.0)",
      err_of(kb.compare_elements, cpu { 0 }, cpu { 1 }, 0, -1), 1, true)
    -- zero is a tolerance (exact comparison), and the kernel that writes zeros still fails
    assert.is_false((checker.run(spec { atol = 0, rtol = 0 })))
  end)

  it('outputs or a reference that return no tensors are an error, never a pass', function()
    -- (the seeds are drawn at run time: the messages name them)
    assert.matches('verify: outputs%(state%) for seed %d+ returned no tensors',
      err_of(checker.run, spec { outputs = function() return {} end }))
    assert.matches('verify: reference%(state%) for seed %d+ returned no tensors',
      err_of(checker.run, spec { reference = function() return {} end }))
    assert.matches('verify: outputs%(state%) for seed %d+ returned a string',
      err_of(checker.run, spec { outputs = function() return 'x' end }))
    assert.matches('verify: reference%(state%) for seed %d+: element 1 is a number, not a kluabench.Tensor',
      err_of(checker.run, spec { reference = function() return { 1 } end }))
  end)

  it('outputs and references of zero elements are an error, never a pass', function()
    -- both empty: every element (none) matched, and the check used to pass
    local empty = function() return kb.empty({ 0 }, 'f32', 'cpu') end
    local none = spec { inputs = function() return { out = empty() } end, reference = function() return { empty() } end }
    assert.matches('verify: outputs%(state%) for seed %d+: output 1 has no elements %(shape {0}%): a check that '
      .. 'compares nothing cannot pass', err_of(checker.run, none))
    -- a second output of zero elements beside a compared one is named by its place
    local second = spec { run = function(st) st.out:copy_(st.x):mul_(2) end,
      outputs = function(st) return { st.out, empty() } end,
      reference = function(st) return { st.x:clone():mul_(2), kb.empty({ 0, 3 }, 'f32', 'cpu') } end }
    assert.matches('verify: outputs%(state%) for seed %d+: output 2 has no elements %(shape {0}%)',
      err_of(checker.run, second))
    second.outputs = function(st) return { st.out, kb.empty({ 2, 3 }, 'f32', 'cpu') } end
    assert.matches('verify: reference%(state%) for seed %d+: output 2 has no elements %(shape {0, 3}%)',
      err_of(checker.run, second))
  end)

  it('a reference holding NaN is an error: a poisoned output would match it unwritten', function()
    local nan_ref = function(st) return { kb.empty({ 16 }, 'f32', 'cpu'):fill_(0 / 0) } end
    local err = err_of(checker.run, spec { reference = nan_ref, run = function() end })
    assert.matches('verify: reference%(state%) for seed %d+, output 1 holds 16 NaN of 16 elements', err)
    -- also one NaN among numbers
    local one_nan = function(st)
      local v = st.x:totable()
      v[3] = 0 / 0
      return { cpu(v) }
    end
    assert.matches('holds 1 NaN of 16 elements', err_of(checker.run, spec { reference = one_nan }), 1, true)
    -- check.compare itself still matches NaN with NaN (a caller comparing NaN propagation)
    local ok, r = check.compare(cpu { 0 / 0, 1 }, cpu { 0 / 0, 1 })
    assert.is_true(ok)
    assert.equal(1, r.want_nan)
  end)

  it('policy.plausible refuses NaN times, byte counts and ceilings', function()
    assert.matches("bad argument #1 to 'plausible' (median_ms must be a finite number > 0, got NaN",
      err_of(policy.plausible, 0 / 0, 1e9, 3000), 1, true)
    assert.matches("bad argument #1 to 'plausible'", err_of(policy.plausible, math.huge, 1e9, 3000), 1, true)
    assert.matches("bad argument #2 to 'plausible' (bytes must be a finite number >= 0, got NaN",
      err_of(policy.plausible, 1, 0 / 0, 3000), 1, true)
    assert.matches("bad argument #3 to 'plausible' (the bound must be a finite number of GB/s > 0, got NaN",
      err_of(policy.plausible, 0.001, 1e12, 0 / 0), 1, true)
    assert.matches("bad argument #3 to 'plausible'", err_of(policy.plausible, 0.001, 1e12, { copy_gbps = 0 / 0 }),
      1, true)
    assert.matches("bad argument #4 to 'plausible' (opts.limit must be a finite number > 0",
      err_of(policy.plausible, 0.001, 1e12, 3000, { limit = 0 / 0 }), 1, true)
    -- what was judged before is judged the same
    assert.is_false((policy.plausible(0.001, 1e12, 3000)))
    assert.is_true((policy.plausible(1, 1e9, nil)))
  end)
end)

---------------------------------------------------------------------------
-- Class 10: errors that say what was wrong (engine and loaders)
---------------------------------------------------------------------------

describe('engine and loader errors say what was wrong (issue 24, class 10)', function()
  local triton = require 'kluabench.kernels.triton'
  local dir
  before_each(function() dir = sub.tmpdir() end)
  after_each(function() os.execute('rm -rf ' .. q(dir)) end)

  it('Triton metadata of the wrong types is named field by field', function()
    local cases = {
      { '{"name": 5, "num_warps": 4}', "k.json: 'name' must be a kernel name (a string), got number 5" },
      { '{"name": "", "num_warps": 4}', "k.json: 'name' must be a kernel name (a string), got ''" },
      { '{"name": "k", "num_warps": "4"}', "k.json: 'num_warps' must be a whole number from 1 to 32, got string '4'" },
      { '{"name": "k", "num_warps": 0}', "k.json: 'num_warps' must be a whole number from 1 to 32, got 0" },
      { '{"name": "k", "num_warps": 4, "num_ctas": "1"}', "k.json: 'num_ctas' must be a whole number >= 1, got string '1'" },
      { '{"name": "k", "num_warps": 4, "shared": -1}', "k.json: 'shared' must be a whole number of bytes >= 0, got -1" },
      { '{"name": "k", "num_warps": 4, "global_scratch_size": 1.5}',
        "k.json: 'global_scratch_size' must be a whole number of bytes >= 0, got 1.5" },
      { '[1, 2]', 'k.json is not a JSON object' },
    }
    for _, c in ipairs(cases) do
      sub.spit(dir .. '/k.json', c[1])
      local err = err_of(triton.read_metadata, dir .. '/k.json')
      assert.matches('read_metadata: ' .. dir .. '/' .. c[2], err, 1, true)
    end
    -- num_ctas = 2 is what clusters are, and still said so
    sub.spit(dir .. '/k.json', '{"name": "k", "num_warps": 4, "num_ctas": 2}')
    assert.matches('uses num_ctas = 2 (thread block clusters)', err_of(triton.load, dir .. '/k.json', 'ptr'), 1, true)
  end)

  it("Triton metadata errors point at the caller's line, not into triton.lua, and show no traceback", function()
    sub.spit(dir .. '/k.json', '{"name": 5, "num_warps": 4}')
    sub.spit(dir .. '/s.lua', string.format("local kb = require 'kluabench'\n\nkb.triton.load(%q)\n", dir .. '/k.json'))
    local r = child(nil, 20, { dir .. '/s.lua' })
    assert.equal(1, r.code, r.err)
    assert.equal('kluabench: ' .. dir .. "/s.lua:3: read_metadata: " .. dir .. "/k.json: 'name' must be a kernel name "
      .. '(a string), got number 5\n', r.err)
    for _, f in ipairs { triton.load, triton.read_metadata } do
      local ok, err = pcall(f, dir .. '/k.json')
      assert.is_false(ok)
      assert.is_nil(err:find('triton.lua', 1, true), err)
    end
  end)

  it('a plugin kernel of 33 parameters says why its signature is bad', function()
    local err = err_of(kb.plugin.load, PLUGINS .. 'libbroken6.so')
    assert.matches("kernel 'wide' has a bad signature: more than 32 parameters (it has 33)", err, 1, true)
  end)

  it('module:kernel without a signature names the argument and what it expects', function()
    local m = kb.cuda.load('.version 8.0\n.target sm_90\n.address_size 64\n')
    local err = err_of(m.kernel, m, 'f')
    assert.equal("bad argument #2 to 'kernel' (signature expected: a string such as \"ptr, i32\", got no value)", err)
    err = err_of(m.kernel, m)
    assert.equal("bad argument #1 to 'kernel' (kernel name expected: a string, got no value)", err)
  end)

  it('kb.cuda.load of a directory says it is a directory, not that there is no such file', function()
    local err = err_of(kb.cuda.load, dir)
    assert.equal("bad argument #1 to 'load' (cannot read '" .. dir .. "': is a directory)", err)
    err = err_of(kb.cuda.load, dir .. '/none.cubin')
    assert.equal("bad argument #1 to 'load' (cannot read '" .. dir .. "/none.cubin': No such file or directory)", err)
  end)

  it('kb.plugin.load of a directory or a FIFO names it, without waiting', function()
    mkfifo(dir .. '/p.so')
    local code = string.format([[
      local kb = require 'kluabench'
      for _, p in ipairs { %q, %q } do print((select(2, pcall(kb.plugin.load, p)))) end]], dir, dir .. '/p.so')
    local r = child(code, 20)
    assert.equal(0, r.code, r.err)
    assert.matches("load: cannot open plugin '" .. dir .. "': is a directory", r.out, 1, true)
    assert.matches("load: cannot open plugin '" .. dir .. "/p.so': is a FIFO", r.out, 1, true)
  end)
end)

---------------------------------------------------------------------------
-- Class 11: the NVRTC cache
---------------------------------------------------------------------------

describe('the NVRTC cache is verified before use (issue 24, class 11)', function()
  local SRC = require('helpers.user_kernels').SCALE
  local cache
  before_each(function() cache = sub.tmpdir() end)
  after_each(function() os.execute('rm -rf ' .. q(cache)) end)

  needs_nvrtc('a cached cubin or PTX that was truncated, emptied or replaced is rebuilt, and info() says so', function()
    local first = kb.cuda.compile(SRC, { cache_dir = cache })
    assert.equal('miss', first:info().cache)
    local key = first:info().cache_key
    local entry = cache .. '/nvrtc/' .. key
    local good_cubin, good_ptx = first:cubin(), first:ptx()
    local damage = {
      { 'cubin', function(s) return s:sub(1, 100) end },
      { 'cubin', function() return '' end },
      { 'cubin', function(s) local t = {} for i = 1, #s do t[i] = string.char((i * 37) % 256) end return table.concat(t) end },
      { 'ptx', function(s) return s:sub(1, #s // 2) end },
      { 'names', function() return 'twice<float>\t_Zbogus\n' end },
    }
    for _, d in ipairs(damage) do
      local path = entry .. '.' .. d[1]
      sub.spit(path, d[2](sub.slurp(path)))
      local m = kb.cuda.compile(SRC, { cache_dir = cache })
      local info = m:info()
      assert.equal('rebuilt', info.cache, d[1])
      assert.matches(key .. '.' .. d[1] .. ' does not match the SHA-256 recorded when it was cached', info.cache_problem,
        1, true)
      assert.equal(good_cubin, m:cubin())
      assert.equal(good_ptx, m:ptx())
      assert.equal(first:info().sha256, info.sha256)
      -- the entry is whole again
      local again = kb.cuda.compile(SRC, { cache_dir = cache })
      assert.equal('hit', again:info().cache)
      assert.is_nil(again:info().cache_problem)
      assert.equal(good_cubin, again:cubin())
    end
  end)

  needs_nvrtc('an entry whose record of digests is damaged is rebuilt too', function()
    local key = kb.cuda.compile(SRC, { cache_dir = cache }):info().cache_key
    local sums = cache .. '/nvrtc/' .. key .. '.sha256'
    assert.truthy(sub.slurp(sums), 'the digests are recorded beside the entry')
    sub.spit(sums, 'garbage')
    local info = kb.cuda.compile(SRC, { cache_dir = cache }):info()
    assert.equal('rebuilt', info.cache)
    assert.matches('.sha256 is not a record of digests', info.cache_problem, 1, true)
    assert.equal('hit', kb.cuda.compile(SRC, { cache_dir = cache }):info().cache)
  end)
end)

---------------------------------------------------------------------------
-- Class 12: embedded NUL bytes
---------------------------------------------------------------------------

describe('NUL bytes are refused where C would stop reading (issue 24, class 12)', function()
  it('kb.cuda.parse_signature and module:kernel name the byte', function()
    assert.equal("bad argument #1 to 'parse_signature' (signature has a NUL byte at byte 4: C would read only "
      .. "the text before it)", err_of(kb.cuda.parse_signature, 'ptr\0, i32'))
    local m = kb.cuda.load('.version 8.0\n.target sm_90\n.address_size 64\n')
    assert.matches("bad argument #2 to 'kernel' (signature has a NUL byte at byte 4", err_of(m.kernel, m, 'f', 'ptr\0'),
      1, true)
    assert.matches("bad argument #1 to 'kernel' (kernel name has a NUL byte at byte 2", err_of(m.kernel, m, 'f\0g', 'ptr'),
      1, true)
  end)

  needs_nvrtc('kb.cuda.compile refuses NUL in the source, a header, a name or an option', function()
    local good = 'extern "C" __global__ void f(float *x) { x[0] = 1; }'
    assert.matches("bad argument #1 to 'compile' (source has a NUL byte at byte " .. (#good + 1)
      .. ': C would read only the text before it)',
      err_of(kb.cuda.compile, good .. '\0 this would not compile', { cache = false }), 1, true)
    assert.matches("opts.headers['v.h'] has a NUL byte at byte 4",
      err_of(kb.cuda.compile, '#include "v.h"\n', { headers = { ['v.h'] = '#de\0fine' }, cache = false }), 1, true)
    assert.matches('opts.name has a NUL byte at byte 2',
      err_of(kb.cuda.compile, 'extern "C" __global__ void f() {}', { name = 'k\0.cu', cache = false }), 1, true)
    assert.matches('opts.options[1] has a NUL byte at byte 3',
      err_of(kb.cuda.compile, 'extern "C" __global__ void f() {}', { options = { '-D\0X' }, cache = false }), 1, true)
    assert.matches('opts.names[1] has a NUL byte at byte 2',
      err_of(kb.cuda.compile, 'extern "C" __global__ void f() {}', { names = { 'f\0' }, cache = false }), 1, true)
  end)

  it('paths with a NUL byte are refused, not cut short', function()
    assert.matches("bad argument #1 to 'read_file' (path has a NUL byte at byte 5",
      err_of(kb.read_file, '/etc\0/passwd'), 1, true)
    assert.matches("bad argument #1 to 'load' (path has a NUL byte at byte 5",
      err_of(kb.plugin.load, '/tmp\0/x.so'), 1, true)
  end)
end)
