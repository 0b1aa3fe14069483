-- Nothing is lost: output files are replaced atomically (temporary file,
-- flush, fsync, rename, fsync of the directory), JSON Lines are appended one
-- whole line per finished point, and a sweep stopped with Ctrl-C (SIGINT) or
-- SIGTERM keeps every finished point, prints its summary and exits 130 / 143.
local kb = require 'kluabench'
local files = require 'kluabench.util.files'
local json = require 'kluabench.util.json'
local sub = require 'helpers.subprocess'

local ROOT = sub.root()

local function lines_of(path)
  local out = {}
  for line in (sub.slurp(path) or ''):gmatch('([^\n]*)\n') do out[#out + 1] = line end
  return out
end

local function listdir(dir)
  local names = {}
  local p = io.popen('ls -A ' .. sub.q(dir))
  for name in p:lines() do names[#names + 1] = name end
  p:close()
  table.sort(names)
  return names
end

describe('files.write_atomic', function()
  local dir, core, saved, saved_temp
  before_each(function()
    dir = sub.tmpdir()
    core = require 'kluabench.core'
    saved, saved_temp = core.fsync, core.write_temp
  end)
  after_each(function()
    core.fsync, core.write_temp = saved, saved_temp
    os.execute('rm -rf ' .. sub.q(dir))
  end)

  it('writes a fsynced temporary file (kb.write_temp), renames it over the target, then fsyncs the directory',
    function()
    local path = dir .. '/result.json'
    sub.spit(path, 'old')
    local seen = {}
    core.write_temp = function(target, text, mode)
      local tmp, err = saved_temp(target, text, mode)
      -- written and synced whole while the target still holds the old text
      seen[#seen + 1] = { path = tmp, text = sub.slurp(tmp), target = sub.slurp(path) }
      return tmp, err
    end
    core.fsync = function(p)
      seen[#seen + 1] = { path = p, target = sub.slurp(path) }
      return saved(p)
    end
    assert.is_true(files.write_atomic(path, 'new text'))
    assert.equal('new text', sub.slurp(path))
    assert.equal(2, #seen)
    assert.matches('^' .. dir:gsub('%p', '%%%0') .. '/result%.json%.tmp%-', seen[1].path)
    assert.equal('new text', seen[1].text)
    assert.equal('old', seen[1].target)
    assert.equal(dir, seen[2].path)
    assert.equal('new text', seen[2].target)
    assert.same({ 'result.json' }, listdir(dir)) -- no temporary file stays
  end)

  it('keeps the old file and leaves no temporary file when the temporary cannot be written and synced', function()
    local path = dir .. '/result.json'
    sub.spit(path, 'old')
    core.write_temp = function(target) return nil, target .. ': Input/output error' end
    local ok, err = files.write_atomic(path, 'new')
    assert.is_nil(ok)
    assert.matches('result.json: ', err, 1, true)
    assert.matches('Input/output error', err, 1, true)
    assert.equal('old', sub.slurp(path))
    assert.same({ 'result.json' }, listdir(dir))
  end)

  it('an interrupt as kb.write_temp returns (Ctrl-C) is raised again and leaves no temporary file', function()
    local path = dir .. '/result.json'
    sub.spit(path, 'old')
    -- the file exists, the path has not come back: the stop hook strikes as the C function returns
    core.write_temp = function(...)
      saved_temp(...)
      error('interrupted!', 0)
    end
    for _, write in ipairs {
      function() return files.write_atomic(path, 'new') end,
      function() return files.write_atomic_all { { path, 'new' }, { dir .. '/other.json', 'other' } } end,
      function() return files.check_writable(dir .. '/fresh.json') end,
    } do
      local ok, err = pcall(write)
      assert.is_false(ok)
      assert.equal('interrupted!', err)
      assert.equal('old', sub.slurp(path))
      assert.same({ 'result.json' }, listdir(dir))
    end
  end)

  it('returns nil and a message for a directory that does not exist', function()
    local ok, err = files.write_atomic(dir .. '/missing/result.json', 'x')
    assert.is_nil(ok)
    assert.matches('No such file or directory', err, 1, true)
    assert.same({}, listdir(dir))
  end)
end)

describe('files.append_jsonl', function()
  it('appends one whole line per value, readable at once, to a file it does not truncate', function()
    local dir = sub.tmpdir()
    local path = dir .. '/points.jsonl'
    sub.spit(path, '{"earlier":true}\n')
    for i = 1, 3 do
      assert.is_true(files.append_jsonl(path, { point = i, blob = string.rep('x', 20000) }))
      local lines = lines_of(path)
      assert.equal(i + 1, #lines)
      assert.equal(i, json.decode(lines[i + 1]).point)
    end
    local ok, err = files.append_jsonl(dir .. '/missing/points.jsonl', { a = 1 })
    assert.is_nil(ok)
    assert.matches('No such file or directory', err, 1, true)
    os.execute('rm -rf ' .. sub.q(dir))
  end)
end)

-- Runs a Lua script (its text) in a kluabench subprocess with the specs' package.path, under
-- bash's `ulimit -f kib` when given: {out, err, code}.
local function run_script(dir, text, argv, fsize_kib)
  local script = dir .. '/script.lua'
  sub.spit(script, string.format('package.path = %q .. package.path\n', ROOT .. '/tests/?.lua;') .. text)
  local words = { sub.q(sub.bin()), '--backend', 'cpu', sub.q(script) }
  for _, a in ipairs(argv or {}) do words[#words + 1] = sub.q(a) end
  local cmd = table.concat(words, ' ')
  if fsize_kib then cmd = string.format('ulimit -f %d; exec %s', fsize_kib, cmd) end
  local out, err = dir .. '/stdout', dir .. '/stderr'
  local ok, how, code = os.execute(string.format('env -u LUA_INIT -u KLUABENCH_BACKEND bash -c %s > %s 2> %s',
    sub.q(cmd), sub.q(out), sub.q(err)))
  return { out = sub.slurp(out), err = sub.slurp(err), code = ok and 0 or (how == 'signal' and 128 + code or code) }
end

describe('temporary files are created exclusively, never through a planted link (issue 37)', function()
  local dir
  before_each(function() dir = sub.tmpdir() end)
  after_each(function() os.execute('rm -rf ' .. sub.q(dir)) end)

  -- Links at every name the earlier writers would have used and at guessed ones (all to one victim
  -- file), and dangling links beside them (following one would create the file it names).
  local function plant(names, targets)
    local victim = dir .. '/victim'
    sub.spit(victim, 'keep me')
    for _, t in ipairs(targets) do
      for _, guess in ipairs { '.tmp', '.tmp-0', '.tmp-000000000000', '.tmp-ffffffffffff', '.probe' } do
        names[#names + 1] = t .. guess
      end
    end
    local words = {}
    for _, n in ipairs(names) do words[#words + 1] = sub.q(n) end
    assert(os.execute('for n in ' .. table.concat(words, ' ') .. '; do ln -s ' .. sub.q(victim) .. ' "$n"; done'))
    for i, t in ipairs(targets) do
      assert(os.execute(string.format('ln -s %s %s', sub.q(dir .. '/absent' .. i), sub.q(t .. '.tmp-1'))))
    end
    return victim, function()
      for i = 1, #targets do assert.is_nil(kb.stat(dir .. '/absent' .. i)) end
      for _, n in ipairs(names) do assert.equal('link', kb.stat(n).type) end
    end
  end

  it("check_writable's probe: links at OUT.probe-<seconds>-<n> and guessed names are never opened", function()
    local out, names = dir .. '/report.html', {}
    local now = os.time()
    for t = now - 1, now + 4 do
      for n = 1, 20 do names[#names + 1] = string.format('%s.probe-%d-%d', out, t, n) end
    end
    local victim, untouched = plant(names, { out })
    -- a fresh process: the earlier counter would start from 1 there
    local r = run_script(dir, [[
      local files = require 'kluabench.util.files'
      assert(files.check_writable(arg[1]))
      print('writable')]], { out })
    assert.equal(0, r.code, r.err)
    assert.equal('keep me', sub.slurp(victim))
    untouched()
    assert.is_nil(kb.stat(out)) -- nothing created at OUT itself
  end)

  it('write_atomic and write_atomic_all: links at PATH.tmp-<stamp>-<n> and guessed names are never opened, nor renamed over PATH',
    function()
      local a, b = dir .. '/run.json', dir .. '/run.samples.jsonl'
      local names = {}
      for _, target in ipairs { a, b } do
        for n = 1, 10 do names[#names + 1] = string.format('%s.tmp-42-%d', target, n) end
      end
      local victim, untouched = plant(names, { a, b })
      -- the clock the earlier names were stamped with, made predictable
      local r = run_script(dir, [[
        local core = require 'kluabench.core'
        core.clock_ns = function() return 42 end
        local files = require 'kluabench.util.files'
        assert(files.write_atomic(arg[1], 'records one'))
        assert(files.write_atomic_all({ { arg[1], 'records two' }, { arg[2], 'samples two' } }))]], { a, b })
      assert.equal(0, r.code, r.err)
      assert.equal('keep me', sub.slurp(victim))
      untouched()
      assert.equal('file', kb.stat(a).type)
      assert.equal('file', kb.stat(b).type)
      assert.equal('records two', sub.slurp(a))
      assert.equal('samples two', sub.slurp(b))
    end)

  it('kb.write_temp: a fresh file under a random name beside the target, its mode as given, named in created', function()
    local target = dir .. '/x.json'
    local t1 = assert(kb.write_temp(target, 'one', tonumber('600', 8)))
    local t2 = assert(kb.write_temp(target, 'two'))
    assert.matches('^' .. target:gsub('%p', '%%%0') .. '%.tmp%-%x+$', t1)
    assert.are_not.equal(t1, t2)
    assert.equal('file', kb.stat(t1).type)
    assert.equal(tonumber('600', 8), kb.stat(t1).mode)
    assert.equal('two', sub.slurp(t2))
    local created = { 'earlier' }
    local t3 = assert(kb.write_temp(target, 'three', nil, created))
    assert.same({ 'earlier', t3 }, created) -- the path, the moment the file exists
    os.remove(t1); os.remove(t2); os.remove(t3)
    local ok, err = kb.write_temp(dir .. '/missing/x.json', 'x')
    assert.is_nil(ok)
    assert.matches('missing/x.json: No such file or directory', err, 1, true)
  end)
end)

describe('a failed append leaves no half line (issue 37)', function()
  local dir
  before_each(function() dir = sub.tmpdir() end)
  after_each(function() os.execute('rm -rf ' .. sub.q(dir)) end)

  it('at the file-size limit (ulimit -f) the bundle is refused whole: the file ends with a whole line, and '
    .. 'verify and compare still read the earlier bundles', function()
    local path = dir .. '/run.jsonl'
    local writer = require 'kluabench.record.writer'
    local bundles = require 'helpers.bundles'
    for i = 1, 2 do
      assert(writer.append(path, bundles.make { samples = { 1.0, 1.1, 1.2 + i / 100 }, provider = 'p' .. i }))
    end
    local before = sub.slurp(path)
    -- room for the next samples entry (small), not for the next bundle (several KiB)
    local limit = (#before + 2048) // 1024 + 1
    local r = run_script(dir, [[
      local writer = require 'kluabench.record.writer'
      local bundles = require 'helpers.bundles'
      local ok, err = writer.append(arg[1], bundles.make { samples = { 1.0, 1.1, 1.2 }, provider = 'big',
        execution = { padding = string.rep('x', 8000) } })
      print(ok, err)]], { path }, limit)
    assert.equal(0, r.code, r.err) -- not killed by SIGXFSZ
    assert.matches('^nil\t.*run%.jsonl: File too large', r.out)
    assert.equal(before, sub.slurp(path)) -- cut back to the size before the append
    local v = sub.run({ 'verify', path })
    assert.equal(0, v.code, v.err)
    assert.matches('2 bundles: 2 ok, 0 mismatched, 0 errors', v.err, 1, true)
    local c = sub.run({ 'compare', path, path })
    assert.equal(0, c.code, c.err)
  end)

  it('kb.append_file cuts a failed append back off; a device is written as it is', function()
    local path = dir .. '/lines.jsonl'
    sub.spit(path, '{"a":1}\n')
    local r = run_script(dir, [[
      local kb = require 'kluabench'
      print(kb.append_file(arg[1], string.rep('y', 4096) .. '\n'))]], { path }, 2)
    assert.equal(0, r.code, r.err)
    assert.matches('^nil\t.*lines%.jsonl: File too large', r.out)
    assert.equal('{"a":1}\n', sub.slurp(path))
    local ok, err = kb.append_file('/dev/full', 'x\n')
    assert.is_nil(ok)
    assert.matches('/dev/full: No space left on device', err, 1, true)
  end)
end)

---------------------------------------------------------------------------
-- Stopping a real sweep
---------------------------------------------------------------------------

-- 36 points (3 hidden sizes x 3 modes x 4 providers) on the cpu backend, each well under a second.
local SWEEP = { '--sweep', 'hidden', '--seq', '256', '--rep-ms', '5', '--warmup-ms', '1' }
local POINTS = 36

-- Starts the sweep in the background, waits until `file` has a first line
-- (a finished point), sends the signals `gap` seconds apart (0.1) and waits
-- for the exit. Returns stdout, stderr and the exit status.
local function interrupted_sweep(dir, args, file, signals, gap)
  local words = { sub.q(sub.bin()), '--backend', 'cpu', sub.q(ROOT .. '/scripts/llama4_rope.lua') }
  for _, a in ipairs(SWEEP) do words[#words + 1] = sub.q(a) end
  for _, a in ipairs(args) do words[#words + 1] = sub.q(a) end
  local kills = {}
  for i, s in ipairs(signals) do kills[i] = 'kill -' .. s .. ' $pid 2> /dev/null; sleep ' .. (gap or 0.1) end
  local out, err, rc = dir .. '/out', dir .. '/err', dir .. '/rc'
  os.execute(string.format([[
    env -u KLUABENCH_BACKEND -u LUA_INIT %s > %s 2> %s < /dev/null & pid=$!
    n=0; while [ ! -s %s ] && [ $n -lt 1200 ]; do sleep 0.05; n=$((n+1)); done
    %s
    wait $pid; echo $? > %s]], table.concat(words, ' '), sub.q(out), sub.q(err), sub.q(file),
    table.concat(kills, '; '), sub.q(rc)))
  return sub.slurp(out), sub.slurp(err), tonumber(sub.slurp(rc))
end

-- Every line of the file is a bundle and `kluabench verify` passes on it.
local function assert_valid_jsonl(path)
  local lines = lines_of(path)
  for i, line in ipairs(lines) do assert.is_table(json.decode(line), 'line ' .. i) end
  local r = sub.run({ 'verify', path })
  assert.equal(0, r.code, r.err)
  assert.matches(string.format('%d bundles?: %d ok, 0 mismatched, 0 errors', #lines, #lines), r.err)
  return #lines
end

describe('a sweep stopped by a signal', function()
  local dir
  before_each(function() dir = sub.tmpdir() end)
  after_each(function() os.execute('rm -rf ' .. sub.q(dir)) end)

  it('SIGINT: finishes the point, keeps every finished point, reports them, exits 130', function()
    local file = dir .. '/points.jsonl'
    local out, err, code = interrupted_sweep(dir, { '--format', 'jsonl', '--out', file }, file, { 'INT' })
    assert.equal(130, code, err)
    assert.equal('', out)
    local n = assert_valid_jsonl(file)
    assert.is_true(n >= 1 and n < POINTS, tostring(n))
    assert.matches(string.format('llama4_rope: interrupted by SIGINT after %d of %d points\n$', n, POINTS), err)
    -- the summary table of the finished points (on stderr with --format jsonl); the kernel is
    -- said once above it, each row starts with its mode and provider
    assert.matches('kernel llama4_rope · ', err, 1, true)
    local _, rows = err:gsub('\n%a+ +fused ', '')
    assert.equal(n, rows)
  end)

  it('SIGTERM: the same with exit status 143, the table on stdout', function()
    local file = dir .. '/points.jsonl'
    local out, err, code = interrupted_sweep(dir, { '--out', file }, file, { 'TERM' })
    assert.equal(143, code, err)
    local n = assert_valid_jsonl(file)
    assert.is_true(n >= 1 and n < POINTS, tostring(n))
    assert.matches(string.format('interrupted by SIGTERM after %d of %d points', n, POINTS), err, 1, true)
    local _, rows = out:gsub('\n%a+ +fused ', '')
    assert.equal(n, rows)
    assert.matches(n .. ' bundles? appended to', err)
  end)

  it('a second signal stops at once, and the file still holds whole lines only', function()
    local file = dir .. '/points.jsonl'
    local _, err, code = interrupted_sweep(dir, { '--format', 'jsonl', '--out', file }, file, { 'INT', 'INT' },
      0.01)
    assert.is_true(code == 1 or code == 130, tostring(code) .. ': ' .. err)
    if code == 1 then assert.matches('interrupted!', err, 1, true) end
    assert.is_true(assert_valid_jsonl(file) >= 1)
  end)

  it('the do_bench loop runs a point to its end: the last line is a complete point', function()
    local file = dir .. '/points.jsonl'
    interrupted_sweep(dir, { '--format', 'jsonl', '--out', file }, file, { 'INT' })
    local lines = lines_of(file)
    local last = json.decode(lines[#lines])
    assert.is_true(last.run.spec.timing.samples >= 1)
    -- and its raw samples are in the samples file beside it
    local entry = assert(kb.evidence.resolve(last, file))
    assert.equal(last.run.spec.timing.samples, #entry.samples)
    assert.is_not_nil(last.run.spec.timing.latencyNs.median)
    assert.is_true(kb.interrupted() == false) -- this process was not touched
  end)
end)
