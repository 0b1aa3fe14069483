-- Issue 14, reliability's second round: what an adversarial user tried, one
-- describe per class (docs/RELIABILITY.md, "Classes and their defences"). Outputs never
-- replace what they must not, every write error is reported, every option
-- and input is bounded, every command stops cleanly on a signal, bad Liger
-- data is refused, and errors name the user's file and escape raw bytes.
-- Device nodes are made with mknod in a temporary folder (never the
-- system's /dev/null or /dev/full); tests that need it are pending where
-- mknod is not allowed.
local kb = require 'kluabench'
local files = require 'kluabench.util.files'
local sub = require 'helpers.subprocess'

local ROOT = sub.root()
local q = sub.q

local function sh(cmd)
  local ok = os.execute(cmd)
  return ok == true
end

local function type_of(path) return (kb.stat(path)).type end

-- A character device in dir: "full" (1,7: writes fail with ENOSPC), "null"
-- (1,3) or "zero" (1,5); nil when mknod is not allowed here.
local function device(dir, name)
  local minor = ({ null = 3, zero = 5, full = 7 })[name]
  local path = dir .. '/' .. name
  if not sh(string.format('mknod %s c 1 %d 2> /dev/null', q(path), minor)) then return nil end
  return path
end

local function listdir(dir)
  local p = io.popen('ls -A ' .. q(dir))
  local names = {}
  for n in p:lines() do names[#names + 1] = n end
  p:close()
  table.sort(names)
  return names
end

local HEADER = 'kernel_name,kernel_provider,kernel_operation_mode,metric_name,metric_unit,x_name,x_label,'
  .. 'x_value,y_value_50,y_value_20,y_value_80,extra_benchmark_config_str,gpu_name,timestamp,liger_version\n'
local function liger_row(x, y50, y20, y80)
  return string.format('llama4_rope,liger,forward,speed,ms,H,hidden size,%s,%s,%s,%s,"{""dtype"": '
    .. '""torch.bfloat16"", ""seq_len"": 2048, ""num_q_heads"": 32, ""num_kv_heads"": 8}",'
    .. 'NVIDIA H100 80GB HBM3,2025-08-07 21:42:05,0.6.1\n', x, y50 or '0.1376', y20 or '0.1357',
    y80 or '0.1400')
end

-- A Liger CSV of n good rows.
local function big_csv(path, n)
  local t = { HEADER }
  -- hidden sizes that bind the config's 32 heads, as kernelindex's importer needs
  for i = 1, n do t[#t + 1] = liger_row(tostring(64 * i)) end
  sub.spit(path, table.concat(t))
end

-- Runs `kluabench ARGS REDIRECT` in a shell (env cleared as sub.run does),
-- after `pre`; returns stderr and the exit status.
local function run_to(args, redirect, pre)
  local words = {}
  for i, a in ipairs(args) do words[i] = q(a) end
  local errf = os.tmpname()
  local rc = os.tmpname()
  os.execute(string.format('%s env -u KLUABENCH_BACKEND -u LUA_INIT %s %s %s 2> %s < /dev/null; echo $? > %s',
    pre or '', q(sub.bin()), table.concat(words, ' '), redirect, q(errf), q(rc)))
  local err, code = sub.slurp(errf), tonumber(sub.slurp(rc))
  os.remove(errf)
  os.remove(rc)
  return err, code
end

-- Starts kluabench ARGS in the background, sends `sig` after `delay`
-- seconds (or once `ready` exists), waits; returns stdout, stderr, status.
local function signalled(dir, args, sig, delay, ready)
  local words = {}
  for i, a in ipairs(args) do words[i] = q(a) end
  local out, err, rc = dir .. '/.out', dir .. '/.err', dir .. '/.rc'
  local wait = ready and string.format(
    'n=0; while [ ! -e %s ] && [ $n -lt 400 ]; do sleep 0.05; n=$((n+1)); done; sleep %s', q(ready), delay)
    or ('sleep ' .. delay)
  os.execute(string.format([[
    cd %s && env -u KLUABENCH_BACKEND -u LUA_INIT %s %s > %s 2> %s < /dev/null & pid=$!
    %s; kill -%s $pid 2> /dev/null; wait $pid; echo $? > %s]], q(dir), q(sub.bin()),
    table.concat(words, ' '), q(out), q(err), wait, sig, q(rc)))
  local o, e, c = sub.slurp(out), sub.slurp(err), tonumber(sub.slurp(rc))
  os.remove(out)
  os.remove(err)
  os.remove(rc)
  return o, e, c
end

describe('outputs never replace what they must not', function()
  local dir
  before_each(function() dir = sub.tmpdir() end)
  after_each(function() os.execute('rm -rf ' .. q(dir)) end)

  it('write_atomic writes through a symbolic link to its target and keeps the link', function()
    sub.spit(dir .. '/target.json', 'old')
    assert(sh(string.format('ln -s target.json %s/link.json', q(dir))))
    assert.is_true(files.write_atomic(dir .. '/link.json', 'new'))
    assert.equal('link', type_of(dir .. '/link.json'))
    assert.equal('new', sub.slurp(dir .. '/target.json'))
    -- a link whose target does not exist yet: the target is created, the link stays
    assert(sh(string.format('ln -s made.json %s/dangling.json', q(dir))))
    assert.is_true(files.write_atomic(dir .. '/dangling.json', 'made'))
    assert.equal('link', type_of(dir .. '/dangling.json'))
    assert.equal('made', sub.slurp(dir .. '/made.json'))
    assert.same({ 'dangling.json', 'link.json', 'made.json', 'target.json' }, listdir(dir))
  end)

  it('write_atomic writes devices and FIFOs in place, never replacing them by a file', function()
    local full, null = device(dir, 'full'), device(dir, 'null')
    if not full then return pending('mknod is not allowed here') end
    local ok, err = files.write_atomic(full, 'x')
    assert.is_nil(ok)
    assert.equal(full .. ': No space left on device', err)
    assert.equal('char', type_of(full))
    assert.is_true(files.write_atomic(null, 'x'))
    assert.equal('char', type_of(null))
    local fifo = dir .. '/fifo'
    assert(sh('mkfifo ' .. q(fifo)))
    sh(string.format('(cat %s > %s/read) > /dev/null 2>&1 &', q(fifo), q(dir)))
    assert.is_true(files.write_atomic(fifo, 'through the pipe'))
    assert.equal('fifo', type_of(fifo))
    sh('sleep 0.2')
    assert.equal('through the pipe', sub.slurp(dir .. '/read'))
    assert.same({ 'fifo', 'full', 'null', 'read' }, listdir(dir)) -- no temporary file stays
  end)

  it('write_atomic keeps the mode of the file it replaces', function()
    local path = dir .. '/r.json'
    sub.spit(path, 'old')
    assert(kb.chmod(path, 384)) -- 0600
    assert.is_true(files.write_atomic(path, 'new'))
    assert.equal(384, kb.stat(path).mode)
    assert(kb.chmod(path, 420)) -- 0644
    assert.is_true(files.write_atomic(path, 'newer'))
    assert.equal(420, kb.stat(path).mode)
    assert.equal('newer', sub.slurp(path))
  end)

  it('plot and import-liger write through links and into devices without replacing them', function()
    local null = device(dir, 'null')
    if not null then return pending('mknod is not allowed here') end
    big_csv(dir .. '/in.csv', 2)
    local r = sub.run({ 'import-liger', dir .. '/in.csv', '--jsonl', null })
    assert.equal(0, r.code, r.err)
    r = sub.run({ 'plot', dir .. '/in.csv', '-o', null })
    assert.equal(0, r.code, r.err)
    assert.equal('char', type_of(null))
  end)
end)

describe('every write error is reported', function()
  local dir
  before_each(function() dir = sub.tmpdir() end)
  after_each(function() os.execute('rm -rf ' .. q(dir)) end)

  it('a full stdout is exit 1 naming stdout, for every command that writes there', function()
    local full = device(dir, 'full')
    if not full then return pending('mknod is not allowed here') end
    big_csv(dir .. '/in.csv', 3)
    assert.equal(0, sub.run({ 'import-liger', dir .. '/in.csv', '--jsonl', dir .. '/in.jsonl' }).code)
    local cases = {
      { 'env' }, { 'env', '--json' }, { 'list' }, { 'verify', dir .. '/in.jsonl' },
      { 'compare', dir .. '/in.jsonl', dir .. '/in.jsonl' }, { 'import-liger', dir .. '/in.csv' },
      { 'import-liger', dir .. '/in.csv', '--jsonl', '-' }, { 'plot', dir .. '/in.csv', '-o', '-' },
      { '-e', 'print(1)' },
    }
    for _, args in ipairs(cases) do
      local err, code = run_to(args, '> ' .. q(full))
      local what = table.concat(args, ' ')
      assert.is_true(code == 1 or (args[1] == 'compare' and code == 2), what .. ': ' .. tostring(code))
      assert.matches('stdout', err, 1, true)
      assert.is_truthy(err:find('No space left on device', 1, true) or err:find('a write failed', 1, true), err)
      assert.not_matches('bundles written', err, 1, true) -- import-liger does not claim success
      assert.not_matches('traceback', err, 1, true)
    end
    assert.equal('char', type_of(full))
  end)

  it('a reader that goes away (a FIFO closed early) and a closed stdout are exit 1', function()
    big_csv(dir .. '/in.csv', 600)
    assert.equal(0, sub.run({ 'import-liger', dir .. '/in.csv', '--jsonl', dir .. '/in.jsonl' }).code)
    local fifo = dir .. '/fifo'
    assert(sh('mkfifo ' .. q(fifo)))
    -- the reader takes one byte and leaves; verify has 600 lines to write
    local err, code = run_to({ 'verify', dir .. '/in.jsonl' }, '> ' .. q(fifo),
      string.format('(head -c 1 < %s > /dev/null) & ', q(fifo)))
    assert.equal(1, code, err)
    assert.matches('cannot write to stdout: Broken pipe', err, 1, true)
    err, code = run_to({ 'import-liger', dir .. '/in.csv' }, '>&-')
    assert.equal(1, code, err)
    assert.matches('stdout: Bad file descriptor', err, 1, true)
  end)
end)

describe('options and inputs are bounded', function()
  local bench = require 'kluabench.measure.do_bench'
  local measure = require 'kluabench.measure'
  local stopping = require 'kluabench.measure.stopping'

  -- a device whose events say every call takes 1e-6 ms
  local function fake()
    local ev = { record = function() end }
    return { event = function() return ev end, elapsed_ms = function() return 1e-6 end,
      synchronize = function() end, flush_l2 = function() return 0 end, backend = 'cpu', timer = 'fake' }
  end

  it('do_bench, measure.run and measure.protocol name a wrong, misspelt or unbounded option', function()
    local f = function() end
    local cases = {
      { { rep_ms = 1e9 }, "rep_ms must be a finite number above 0 and at most 3.6e+06, got 1000000000.0" },
      { { rep_ms = 1e300 }, 'rep_ms must be a finite number above 0' },
      { { rep_ms = 0 / 0 }, 'rep_ms must be a finite number above 0' },
      { { warmup_ms = -1 }, 'warmup_ms must be a finite number from 0' },
      { { rep_ms = '5' }, 'rep_ms must be a number, got "5"' },
      { { warmpu_ms = 1 }, "unknown option 'warmpu_ms'" },
      { { before_each = 1 }, 'before_each must be a function, got number' },
    }
    for _, c in ipairs(cases) do
      local ok, err = pcall(bench.do_bench, f, c[1])
      assert.is_false(ok)
      assert.matches("bad argument #2 to 'do_bench' (" .. c[2], err, 1, true)
      ok, err = pcall(measure.run, 'do_bench', f, c[1])
      assert.is_false(ok)
      assert.matches("bad argument #3 to 'run' (" .. c[2], err, 1, true)
    end
    local ok, err = pcall(measure.run, 'cold', f, { hold = 'x' })
    assert.is_false(ok)
    assert.matches('hold must be a number or "auto", got "x"', err, 1, true)
    ok, err = pcall(require("kluabench.measure.session").new, 'hot', f, { batch = 0 })
    assert.is_false(ok)
    assert.matches("bad argument #3 to 'session.new' (batch must be a whole number from 1", err, 1, true)
    ok, err = pcall(measure.protocol, 'cold', { kernel_trace = 'yes' })
    assert.is_false(ok)
    assert.matches('kernel_trace must be a boolean, got string', err, 1, true)
    ok, err = pcall(measure.protocol, 'do_bench', { rep_ms = 1e9 })
    assert.is_false(ok)
    assert.matches("bad argument #2 to 'protocol' (rep_ms", err, 1, true)
    ok, err = pcall(bench.do_bench_protocol, { warmpu_ms = 1 })
    assert.is_false(ok)
    assert.matches("unknown option 'warmpu_ms'", err, 1, true)
    -- one table of options serves every mode
    assert.is_truthy(measure.protocol('do_bench', { stop = stopping.count(3), rep_ms = 5 }))
  end)

  it('bounds the samples of one measurement', function()
    local ok, err = pcall(bench.do_bench, function() end, { rep_ms = 100, device = fake() })
    assert.is_false(ok)
    assert.matches('more than the 1000000 one measurement keeps (measure.MAX_SAMPLES): lower rep_ms', err, 1, true)
    local saved = measure.MAX_SAMPLES
    measure.MAX_SAMPLES = 30
    local ok2, r = pcall(measure.run, 'hot', function() end, { stop = stopping.count(1000000000), batch = 1,
      hold = false, clocks = false, warmup_ms = 0 })
    measure.MAX_SAMPLES = saved
    assert.is_true(ok2, r)
    assert.equal(30, #r.samples)
    assert.matches('sample limit (30, measure.MAX_SAMPLES) reached', r.stop.reason, 1, true)
  end)

  it('verify shows at most 100 error lines per file and counts the rest', function()
    local dir = sub.tmpdir()
    local items = {}
    for i = 1, 3000 do items[i] = '{"x": ' .. i .. '}' end
    sub.spit(dir .. '/many.json', '[' .. table.concat(items, ',\n') .. ']')
    local r = sub.run({ 'verify', dir .. '/many.json' })
    os.execute('rm -rf ' .. q(dir))
    assert.equal(1, r.code)
    local _, lines = r.err:gsub('\n', '')
    assert.equal(102, lines) -- 100 errors, the count of the others, the summary
    assert.matches('many.json: 2900 more errors not shown', r.err, 1, true)
    assert.matches('3000 bundles: 0 ok, 0 mismatched, 3000 errors', r.err, 1, true)
  end)

  it('an endless file (a device, a FIFO) ends with an error in bounded memory', function()
    local dir = sub.tmpdir()
    local zero = device(dir, 'zero')
    local fifo = dir .. '/fifo'
    assert(sh('mkfifo ' .. q(fifo)))
    local hex, err = kb.sha256_file(fifo) -- returns at once: no writer is waited for
    assert.is_nil(hex)
    assert.equal(fifo .. ': not a regular file (a device or FIFO may never end)', err)
    if not zero then
      os.execute('rm -rf ' .. q(dir))
      return pending('mknod is not allowed here')
    end
    hex, err = kb.sha256_file(zero)
    assert.is_nil(hex)
    assert.matches('not a regular file', err, 1, true)
    local saved = files.MAX_READ_BYTES
    files.MAX_READ_BYTES = 4 * 1024 * 1024
    local verify = require 'kluabench.commands.verify'
    local seen = {}
    local c = verify.check_file(zero, function(kind, _, _, detail) seen[#seen + 1] = { kind, detail } end)
    files.MAX_READ_BYTES = saved
    os.execute('rm -rf ' .. q(dir))
    assert.equal(1, c.error)
    assert.equal('error', seen[1][1])
    -- refused by its type before any byte is read (issue 24: a device may never end)
    assert.equal(zero .. ': is a character device, not a regular file (a device or a FIFO may never end)', seen[1][2])
  end)
end)

describe('every command stops cleanly on SIGINT and SIGTERM', function()
  local dir
  before_each(function() dir = sub.tmpdir() end)
  after_each(function() os.execute('rm -rf ' .. q(dir)) end)

  local function assert_stopped(err, code, cmd, sig)
    assert.equal(sig == 'INT' and 130 or 143, code, err)
    assert.matches('kluabench ' .. cmd .. ': interrupted by SIG' .. sig, err, 1, true)
    assert.not_matches('traceback', err, 1, true)
  end

  it('import-liger, verify and plot: exit 130 / 143, no traceback, no temporary file', function()
    big_csv(dir .. '/in.csv', 4000)
    local out = dir .. '/out'
    local _, err, code = signalled(dir, { 'import-liger', 'in.csv', '--out', 'out' }, 'INT', 0.5, out)
    assert_stopped(err, code, 'import-liger', 'INT')
    for _, name in ipairs(listdir(out)) do assert.not_matches('%.tmp%-', name) end
    _, err, code = signalled(dir, { 'import-liger', 'in.csv', '--out', 'out2' }, 'TERM', 0.5, dir .. '/out2')
    assert_stopped(err, code, 'import-liger', 'TERM')
    for _, name in ipairs(listdir(dir .. '/out2')) do assert.not_matches('%.tmp%-', name) end
    assert.equal(0, sub.run({ 'import-liger', dir .. '/in.csv', '--jsonl', dir .. '/in.jsonl' }).code)
    _, err, code = signalled(dir, { 'verify', 'in.jsonl', 'in.jsonl', 'in.jsonl' }, 'INT', 0.7)
    assert_stopped(err, code, 'verify', 'INT')
    _, err, code = signalled(dir, { 'plot', 'in.jsonl', 'in.jsonl', 'in.jsonl', '-o', 'c.svg' }, 'TERM', 0.7)
    assert_stopped(err, code, 'plot', 'TERM')
    assert.same({ 'in.csv', 'in.jsonl', 'out', 'out2' }, listdir(dir))
  end)

  it('compare: the interrupt stops the command instead of making one point UNSURE', function()
    local prng = require 'kluabench.stats.prng'
    local bundles = require 'helpers.bundles'
    local writer = require 'kluabench.record.writer'
    local g = prng.new(1)
    for i = 1, 60 do -- about 20 s of bootstraps here: a compare that goes on still ends
      local values = {}
      for k = 1, 300 do values[k] = 1 + g:uniform() * 0.01 end -- ms
      assert(writer.append(dir .. '/r.jsonl', bundles.make { hidden = 64 * i, samples = values }))
    end
    local out, err, code = signalled(dir, { 'compare', 'r.jsonl', 'r.jsonl', '--resamples', '200000' }, 'INT', 1.5)
    assert_stopped(err, code, 'compare', 'INT')
    assert.equal('', out)
  end)
end)

describe('bad Liger data is refused with the row named', function()
  local liger = require 'kluabench.liger'

  it('refuses zero or negative times, and x or y values that are not decimal numbers', function()
    local cases = {
      { liger_row('512', '0'), "y_value_50 is zero ('0'): a time must be positive" },
      { liger_row('512', nil, '-0.1'), "y_value_20 is negative ('-0.1'): a time must be positive" },
      { liger_row('512', '0x10'), "y_value_50 is not a decimal number ('0x10')" },
      { liger_row('512', ' 0.1'), "y_value_50 is not a decimal number (' 0.1')" },
      { liger_row('nan'), "x_value is not a decimal number ('nan')" },
      { liger_row('0x200'), "x_value is not a decimal number ('0x200')" },
      { liger_row('inf'), "x_value is not a decimal number ('inf')" },
      { liger_row('1e999'), "x_value is not finite ('1e999')" },
      { liger_row('512\27[31m'), "x_value is not a decimal number ('512\\x1B[31m')" },
    }
    for _, c in ipairs(cases) do
      local rows = assert(liger.parse(HEADER .. c[1]))
      local b, _, err = liger.row_to_bundle(rows[1])
      assert.is_nil(b, c[2])
      assert.equal(c[2], err)
    end
    assert.is_table((liger.row_to_bundle(assert(liger.parse(HEADER .. liger_row('512', '1e-3')))[1])))
    assert.is_table((liger.row_to_bundle(assert(liger.parse(HEADER .. liger_row('4096.0')))[1])))
  end)

  it('import-liger names FILE:LINE and writes only the good rows, which verify', function()
    local dir = sub.tmpdir()
    sub.spit(dir .. '/in.csv', HEADER .. liger_row('512') .. liger_row('nan') .. liger_row('1024', '-1'))
    local r = sub.run({ 'import-liger', dir .. '/in.csv', '--jsonl', dir .. '/out.jsonl' })
    assert.equal(1, r.code)
    assert.matches("in.csv:3: x_value is not a decimal number ('nan')", r.err, 1, true)
    assert.matches("in.csv:4: y_value_50 is negative ('-1')", r.err, 1, true)
    local v = sub.run({ 'verify', dir .. '/out.jsonl' })
    os.execute('rm -rf ' .. q(dir))
    assert.equal(0, v.code, v.err)
    assert.matches('1 bundle: 1 ok', v.err, 1, true)
  end)
end)

describe('no crash, no leak', function()
  it('a shape whose dimensions multiply past 2^62 is an error whatever its zeros', function()
    for _, shape in ipairs { { 0, 2 ^ 62 // 1, 2 ^ 62 // 1 }, { 2 ^ 40 // 1, 2 ^ 40 // 1, 0 },
      { 2 ^ 31 // 1, 0, 2 ^ 31 // 1, 2 ^ 31 // 1 }, { 2 ^ 61 // 1 } } do
      local ok, err = pcall(kb.empty, shape, 'f32', 'cpu')
      assert.is_false(ok)
      assert.matches('shape is too large', err, 1, true)
    end
    assert.equal(0, kb.empty({ 0, 2 ^ 20 // 1, 2 ^ 20 // 1 }, 'f32', 'cpu'):numel())
  end)

  it('tensors, events and flush buffers are refused inside __gc (they would leak at close)', function()
    local r = sub.run({ '--backend', 'cpu', '-W', '-e', [[
      local kb = require 'kluabench'
      setmetatable({}, { __gc = function() kb.zeros({ 4 }) end })
      do local x = setmetatable({}, { __gc = function() print(pcall(kb.event)) end }) end
      collectgarbage()
      print(pcall(kb.zeros, { 4 }) and 'outside: fine')]] })
    assert.equal(0, r.code, r.err)
    assert.matches('false\tcannot create an event inside a __gc metamethod', r.out, 1, true)
    assert.matches('outside: fine', r.out, 1, true)
    assert.matches('cannot create a tensor inside a __gc metamethod', r.err, 1, true)
  end)
end)

describe('errors are clear: the user\'s path, early, escaped', function()
  local dir
  before_each(function() dir = sub.tmpdir() end)
  after_each(function() os.execute('rm -rf ' .. q(dir)) end)

  it('files.check_writable says before any work whether --out can be written', function()
    assert.is_true(files.check_writable('-'))
    assert.is_true(files.check_writable(dir .. '/new.jsonl'))
    assert.same({ }, listdir(dir)) -- the probe is gone, nothing created
    sub.spit(dir .. '/old.jsonl', 'keep')
    assert.is_true(files.check_writable(dir .. '/old.jsonl'))
    assert.equal('keep', sub.slurp(dir .. '/old.jsonl'))
    local ok, err = files.check_writable(dir .. '/missing/x.jsonl')
    assert.is_nil(ok)
    assert.equal(dir .. '/missing/x.jsonl: cannot write: ' .. dir .. '/missing does not exist', err)
    ok, err = files.check_writable(dir)
    assert.is_nil(ok)
    assert.equal(dir .. ': is a directory', err)
    ok, err = files.write_atomic(dir .. '/missing/x.json', 'x')
    assert.is_nil(ok)
    assert.equal(dir .. '/missing/x.json: No such file or directory', err) -- not the temporary name
  end)

  it('import-liger --out: a name starting with "-" is a directory, a path too long is refused first', function()
    big_csv(dir .. '/in.csv', 1)
    local r = sub.run({ 'import-liger', 'in.csv', '--out', '-Z' }, { cwd = dir })
    assert.equal(0, r.code, r.err)
    assert.equal('directory', type_of(dir .. '/-Z'))
    local long = dir .. string.rep('/' .. string.rep('d', 200), 30)
    r = sub.run({ 'import-liger', 'in.csv', '--out', long }, { cwd = dir })
    assert.equal(1, r.code)
    assert.matches('the path is %d+ bytes long, the system takes at most 4095', r.err)
    assert.same({ '-Z', 'in.csv' }, listdir(dir)) -- nothing created
  end)

  it('--device that does not exist is an error, also when the backend is auto', function()
    local r = sub.run({ '--device', '99', '-e', 'print("ran")' })
    assert.equal(1, r.code)
    assert.equal('', r.out)
    assert.matches('kluabench: --device 99: no such usable device', r.err, 1, true)
    r = sub.run({ '-e', 'print("ran")' }, { env = { KLUABENCH_DEVICE = '99' } })
    assert.equal(1, r.code)
    assert.matches('KLUABENCH_DEVICE 99: no such usable device', r.err, 1, true)
    assert.equal(0, sub.run({ '--backend', 'cpu', '--device', '99', '-e', 'print("ran")' }).code)
  end)

  it('UTF-16 input is named as such, by the CSV importer and the JSON reader', function()
    local function utf16le(s) return '\255\254' .. s:gsub('.', '%0\0') end
    sub.spit(dir .. '/in.csv', utf16le(HEADER .. liger_row('512')))
    sub.spit(dir .. '/r.json', utf16le('{"run": {}}'))
    sub.spit(dir .. '/nobom.json', ('{"run": {}}'):gsub('.', '%0\0'))
    local r = sub.run({ 'import-liger', dir .. '/in.csv' })
    assert.equal(1, r.code)
    assert.matches('in.csv: the text is UTF-16 (little-endian, with a byte order mark); kluabench '
      .. 'reads UTF-8 (convert it, e.g. iconv -f UTF-16 -t UTF-8)', r.err, 1, true)
    r = sub.run({ 'verify', dir .. '/r.json', dir .. '/nobom.json' })
    assert.equal(1, r.code)
    assert.matches('r.json: the text is UTF-16 (little-endian, with a byte order mark)', r.err, 1, true)
    assert.matches('nobom.json: the text is UTF-16 (little-endian)', r.err, 1, true)
    r = sub.run({ 'compare', dir .. '/r.json', dir .. '/r.json' })
    assert.equal(2, r.code)
    assert.matches('UTF-16', r.err, 1, true)
  end)

  it('raw bytes of the input never reach the terminal: they are escaped as \\xNN', function()
    sub.spit(dir .. '/in.csv', HEADER .. liger_row('1\27]0;pwned\7'))
    sub.spit(dir .. '/bad.json', '{"a": \27[2J\1}')
    local cases = {
      { 'import-liger', dir .. '/in.csv' },
      { 'verify', dir .. '/bad.json' },
      { 'verify', '--\27[2J' },
      { 'plot', dir .. '/in.csv', '--y', '\27[2J\255', '-o', dir .. '/x.svg' },
      { '--\27[2J' },
      { ROOT .. '/scripts/rope.lua', '--provider', '\27[2J' },
    }
    for _, args in ipairs(cases) do
      local r = sub.run(args)
      assert.is_true(r.code == 1 or r.code == 2, table.concat(args, ' '))
      assert.is_nil(r.err:find('[%z\1-\8\11-\31\127]'), 'raw control bytes in: ' .. r.err)
      assert.is_nil(r.err:find('\255', 1, true))
      assert.matches('\\x1B', r.err, 1, true)
    end
  end)
end)
