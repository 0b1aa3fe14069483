-- Reliability in merge and run-all (docs/RELIABILITY.md, "Classes and their defences"):
-- merge expects what the manifest says each point will have and never calls an
-- incomplete set complete (class 1); the manifest is checked, and no command writes over its own
-- inputs, nor merges a bundle whose digests fail (class 2); one bad line never drops a shard, and a
-- shard that cannot be read is named with the true cause (class 3). The runs use the stand-in
-- harness script tests/helpers/mini_sweep.lua on the cpu backend; every command runs under
-- `timeout`, so that one that waits (on a FIFO) fails its test instead of stalling the suite.
local sh = require 'helpers.shards'
local sub = require 'helpers.subprocess'
local files = require 'kluabench.util.files'
local json = require 'kluabench.util.json'
local reader = require 'kluabench.record.reader'
local shards = require 'kluabench.dist.shards'
local result = require 'kluabench.result'

local q = sh.q

-- kluabench ARGS... under `timeout SECS`: {out, err, code} (124: it hung).
local function run(args, secs)
  local words = {}
  for i, a in ipairs(args) do words[i] = q(a) end
  local errf = os.tmpname()
  local cmd = string.format('env -u KLUABENCH_BACKEND -u KLUABENCH_QUIET timeout %d %s %s < /dev/null 2> %s',
    secs or 60, q(sub.bin()), table.concat(words, ' '), q(errf))
  local p = io.popen(cmd, 'r')
  local out = p:read('a')
  local _, how, code = p:close()
  local err = sh.slurp(errf) or ''
  os.remove(errf)
  return { out = out, err = err, code = how == 'exit' and code or 128 + code }
end

-- A finished run-all of the stand-in into dir (procs children; script arguments).
local function launch_run(dir, procs, args)
  local r = run(sh.launcher('run-all', dir, { '--procs', tostring(procs or 3) }, nil, args))
  assert(r.code == 0, r.err)
end

local function merge(dir, ...) return run({ 'merge', dir, ... }) end

local function point(b) return require('kluabench.dist.merge').point_of(b) end

-- The manifest of dir, changed by f(m) and written back.
local function edit_manifest(dir, f)
  local m = sh.manifest(dir)
  f(m)
  sh.spit(dir .. '/manifest.json', assert(json.encode_pretty(m)))
end

local function sha(path) return sh.slurp(path) and require('kluabench').sha256(sh.slurp(path)) end

local function count_lines(text)
  local n = 0
  for _ in (text or ''):gmatch('[^\n]+') do n = n + 1 end
  return n
end

---------------------------------------------------------------------------
-- Class 1: merge never calls an incomplete set complete
---------------------------------------------------------------------------

describe('merge expects every provider x mode x session the run asked for (issue 24, class 1)', function()
  local tmp
  before_each(function() tmp = sh.tmpdir() end)
  after_each(function() os.execute('rm -rf ' .. q(tmp)) end)

  it('a point whose child was killed after 8 of its 9 bundles is incomplete, exit 1', function()
    local dir = tmp .. '/run'
    launch_run(dir, 1, { '--seq', '128', '--provider', 'a,b,c', '--mode', 'f,g,h' })
    local m = sh.manifest(dir)
    assert.same({ providers = { 'a', 'b', 'c' }, modes = { 'f', 'g', 'h' }, sessions = 1 }, m.shards[1].points[1].expect)
    -- the last bundle never written: what a child killed before its last session leaves
    local text = sh.slurp(dir .. '/shard-1.jsonl')
    sh.spit(dir .. '/shard-1.jsonl', text:match('^(.*\n)[^\n]+\n$'))
    local r = merge(dir, '-o', tmp .. '/m.jsonl')
    assert.equal(1, r.code, r.err)
    assert.matches('incomplete: point seq128-fp32 (shard 1): 8 of its 9 bundles arrived; missing: provider c mode h '
      .. 'session 1/1', r.err, 1, true)
    assert.matches('8 of 9 bundles, 0 of 1 points complete, from 1 shard', r.err, 1, true)
    assert.matches('INCOMPLETE', r.err, 1, true)
    assert.equal(8, count_lines(sh.slurp(tmp .. '/m.jsonl'))) -- what arrived is written
  end)

  it('a mode missing from every point is incomplete on every point, not inferred away', function()
    local dir = tmp .. '/run'
    launch_run(dir, 2, { '--seq', '128,256' })
    for i = 1, 2 do
      sh.rewrite(string.format('%s/shard-%d.jsonl', dir, i), function(b)
        return result.session(b).mode ~= 'backward' and b or nil
      end)
    end
    local r = merge(dir, '-o', tmp .. '/m.jsonl')
    assert.equal(1, r.code, r.err)
    for _, id in ipairs { 'seq128-fp32', 'seq256-fp32' } do
      assert.matches(string.format('incomplete: point %s (shard %d): 2 of its 4 bundles arrived; missing: provider a '
        .. 'mode backward session 1/1, provider b mode backward session 1/1', id, sh.shard_of(dir, id)), r.err, 1, true)
    end
    assert.matches('4 of 8 bundles, 0 of 2 points complete', r.err, 1, true)
  end)

  it('failed runs count as arrived, are merged and counted, and make the exit status 1', function()
    local dir = tmp .. '/run'
    -- run-all merges as it ends, and fails as merge does
    local r = run(sh.launcher('run-all', dir, { '--procs', '2' }, nil, { '--seq', '128,256', '--status',
      'b:backward:runtime_error' }))
    assert.equal(1, r.code, r.err)
    assert.matches('kluabench run-all: failed: 2 runs of 8 did not pass', r.err, 1, true)
    r = merge(dir, '-o', tmp .. '/m.jsonl')
    assert.equal(1, r.code, r.err)
    assert.matches('failed: point seq128%-fp32, provider b, mode backward, session 1/1 in shard%-%d%.jsonl:%d+: '
      .. 'runtime_error: made to fail as asked %(%-%-status%) %(merged; its record says why%)', r.err)
    assert.matches('failed: 2 runs of 8 did not pass (see above); their bundles are merged', r.err, 1, true)
    assert.matches('8 of 8 bundles (2 failed), 2 of 2 points complete', r.err, 1, true)
    assert.equal(8, count_lines(sh.slurp(tmp .. '/m.jsonl')))
    assert.matches('any failed run makes the\n               exit status 1', require('kluabench.dist.merge').help, 1, true)
  end)

  it('the harness lists what each point will have; the launchers write it into the manifest', function()
    local dir = tmp .. '/run'
    local script = sub.root() .. '/examples/copy_benchmark.lua'
    local r = run({ '--backend', 'cpu', script, '--list-points', '--runs', '2' })
    assert.equal(0, r.code, r.err)
    local line = r.out:match('^[^\n]+')
    assert.matches('^[^\t]+\t%d+\t[^\t]+\tproviders=[^\t]+\tmodes=[^\t]+\tsessions=2$', line)
    r = run(sh.launcher('run-all', dir, { '--procs', '1' }, script, { '--runs', '2', '--rep-ms', '1',
      '--warmup-ms', '1' }), 300)
    assert.equal(0, r.code, r.err)
    local e = sh.manifest(dir).shards[1].points[1].expect
    assert.equal(2, e.sessions)
    assert.is_true(#e.providers >= 1 and #e.modes >= 1)
    assert.matches(' of %d+ bundles, 1 of 1 points complete, from 1 shard', r.err)
  end)
end)

---------------------------------------------------------------------------
-- Class 2: a manifest that lies, outputs over inputs, corrupt bundles
---------------------------------------------------------------------------

describe('merge and run-all check the manifest (issue 24, class 2)', function()
  local tmp, dir
  before_each(function()
    tmp = sh.tmpdir()
    dir = tmp .. '/run'
    launch_run(dir, 3)
  end)
  after_each(function() os.execute('rm -rf ' .. q(tmp)) end)

  it('a manifest cut to 2 shards names the shard file it no longer lists', function()
    edit_manifest(dir, function(m)
      m.points = m.points - #m.shards[3].points
      m.shards[3], m.count = nil, 2
    end)
    local r = merge(dir, '-o', tmp .. '/m.jsonl')
    assert.equal(1, r.code, r.err)
    assert.matches('unlisted: ' .. dir .. '/shard-3.jsonl is in DIR but not in the manifest (count 2): its bundles are '
      .. 'not merged', r.err, 1, true)
    -- cut without its point count: the manifest contradicts itself, and nothing is merged
    edit_manifest(dir, function(m) m.points = 5 end)
    r = merge(dir, '-o', tmp .. '/m2.jsonl')
    assert.equal(1, r.code)
    assert.matches(dir .. '/manifest.json: points is 5 but the shards list ', r.err, 1, true)
    assert.matches('nothing merged', r.err, 1, true)
    assert.is_nil(sh.slurp(tmp .. '/m2.jsonl'))
  end)

  it('a point listed in two shards is refused, naming both', function()
    local id
    edit_manifest(dir, function(m)
      id = m.shards[1].points[1].id
      table.insert(m.shards[2].points, m.shards[1].points[1])
      m.points = m.points + 1
    end)
    local r = merge(dir, '-o', tmp .. '/m.jsonl')
    assert.equal(1, r.code)
    assert.matches(string.format('manifest.json: point %s is in shard 1 and in shard 2 (a point belongs to one shard)',
      id), r.err, 1, true)
    assert.is_nil(sh.slurp(tmp .. '/m.jsonl'))
  end)

  it('count must be a whole number from 1 to shard.MAX_SHARDS that matches the shards', function()
    local max = require('kluabench.dist.split').MAX_SHARDS
    for _, case in ipairs {
      { -1, 'count is -1, expected a whole number from 1 to ' .. max },
      { 1e15, 'count is 1000000000000000, expected a whole number from 1 to ' .. max },
      { 1e300, 'count is 1e+300, expected a whole number' },
      { '3', 'count is "3" (a string), expected a whole number' },
      { 2.5, 'count is 2.5, expected' },
      { max + 1, 'count is ' .. (max + 1) .. ', expected' },
      { 2, 'count is 2 but shards lists 3 shards' },
    } do
      edit_manifest(dir, function(m) m.count = case[1] end)
      local r = merge(dir)
      assert.equal(1, r.code, tostring(case[1]))
      assert.matches(case[2], r.err, 1, true)
    end
  end)

  it('indexes are 1..count each once, and files and logs are names inside DIR, each once', function()
    local original = sh.slurp(dir .. '/manifest.json')
    for _, case in ipairs {
      { function(m) m.shards[2].index = 1 end, 'shards[1] and shards[2] both have index 1' },
      { function(m) m.shards[3].index = 7 end, 'shards[3] has index 7, expected a whole number from 1 to 3' },
      { function(m) m.shards[1].file = '../elsewhere.jsonl' end, "shard 1's file \"../elsewhere.jsonl\" (a string): a "
        .. "'..' component" },
      { function(m) m.shards[1].file = '/etc/passwd' end, 'an absolute path, not a name inside DIR' },
      { function(m) m.shards[2].file = 'shard-1.jsonl' end, "shard 2's file is 'shard-1.jsonl', which is shard 1's file "
        .. 'too' },
      { function(m) m.shards[1].file = 'manifest.json' end, "which is the manifest too" },
      { function(m) m.shards[1].log = 'shard-2.jsonl' end, "shard 2's file is 'shard-2.jsonl', which is shard 1's log too" },
      { function(m) m.shards = { m.shards[1], m.shards[2], 'x' } end, 'shards[3] is not an object' },
      { function(m) m.shards[1].points[1].expect.sessions = 1e9 end, 'expect.sessions must be a whole number from 1 to '
        .. shards.MAX_SESSIONS },
      { function(m) m.shards[1].points[1].expect.providers = {} end, 'expect.providers must be a non-empty array' },
      { function(m) m.shards[1].points[1].expect = nil end, 'of the 5 points say what they expect' },
    } do
      sh.spit(dir .. '/manifest.json', original)
      edit_manifest(dir, case[1])
      local r = merge(dir)
      assert.equal(1, r.code, case[2])
      assert.matches(case[2], r.err, 1, true)
    end
  end)

  it('merge -o naming the manifest, a shard file, a samples file or a log of DIR is a usage error, also through a link', function()
    local before = {}
    local names = { 'manifest.json', 'shard-1.jsonl', 'shard-2.samples.jsonl', 'shard-3.log' }
    for _, n in ipairs(names) do before[n] = sha(dir .. '/' .. n) end
    assert(os.execute(string.format('ln -s %s %s && ln %s %s', q(dir .. '/shard-2.jsonl'), q(tmp .. '/link.jsonl'),
      q(dir .. '/shard-3.jsonl'), q(tmp .. '/hard.jsonl'))))
    for _, case in ipairs {
      { dir .. '/shard-1.jsonl', "is shard 1's results file" },
      { dir .. '/manifest.json', 'is the manifest of ' .. dir },
      { dir .. '/shard-2.samples.jsonl', "is shard 2's samples file" },
      { dir .. '/shard-3.log', "is shard 3's log" },
      { dir .. '/../run/shard-1.jsonl', "is shard 1's results file" },
      { dir .. '/shard-1', "(its samples file " .. dir .. "/shard-1.samples.jsonl) is shard 1's samples file" },
      { tmp .. '/link.jsonl', "is shard 2's results file" },
      { tmp .. '/hard.jsonl', "is shard 3's results file" },
    } do
      local r = merge(dir, '-o', case[1])
      assert.equal(2, r.code, case[1])
      assert.matches('kluabench merge: -o ' .. case[1], r.err, 1, true)
      assert.matches(case[2] .. ': writing there would overwrite an input', r.err, 1, true)
    end
    for _, n in ipairs(names) do assert.equal(before[n], sha(dir .. '/' .. n), n) end
    assert.equal(0, merge(dir, '-o', dir .. '/all.jsonl', '-q').code) -- run-all's own default is no input
  end)

  it('run-all -o SCRIPT, the binary or a file it writes in DIR is a usage error before anything runs', function()
    local script = tmp .. '/bench.lua'
    sh.spit(script, sh.slurp(sh.mini()))
    local before = sha(script)
    for _, case in ipairs {
      { { '-o', script }, 'is SCRIPT' },
      { { '-o', tmp .. '/./bench.lua' }, 'is SCRIPT' },
      { { '-o', sub.bin() }, 'is the kluabench binary' },
      { { '-o', tmp .. '/new/shard-2.jsonl' }, "is shard 2's results file" },
      { { '-o', tmp .. '/new/manifest.json' }, 'is the manifest' },
    } do
      local opts = { '--procs', '2' }
      for _, a in ipairs(case[1]) do opts[#opts + 1] = a end
      local r = run(sh.launcher('run-all', tmp .. '/new', opts, script))
      assert.equal(2, r.code, r.err)
      assert.matches('kluabench run-all: -o ', r.err, 1, true)
      assert.matches(case[2], r.err, 1, true)
      assert.is_nil(sh.slurp(tmp .. '/new/manifest.json'))
    end
    assert.equal(before, sha(script))
  end)

  it('bundles whose digests or raw samples fail verify are corrupt: named and not merged', function()
    local k = sh.shard_of(dir, 'seq256-fp32')
    local id
    sh.rewrite(string.format('%s/shard-%d.jsonl', dir, k), function(b, i)
      if i == 1 then
        id = point(b)
        b.environment.spec.hardware.product = 'A faster CPU' -- the environment digest no longer matches
      end
      return b
    end)
    local r = merge(dir, '-o', tmp .. '/m.jsonl')
    assert.equal(1, r.code, r.err)
    assert.matches(string.format('corrupt: shard-%d.jsonl:1: point %s: environmentDigest: recorded sha256:', k, id),
      r.err, 1, true)
    assert.matches('(not merged)', r.err, 1, true)
    assert.matches('19 of 20 bundles', r.err, 1, true)
    assert.equal(19, count_lines(sh.slurp(tmp .. '/m.jsonl')))
    -- the raw samples changed after the fact: their digest fails
    local samples = string.format('%s/shard-%d.samples.jsonl', dir, 1 + k % 3)
    sh.spit(samples, (sh.slurp(samples):gsub('"samples":%[%d+', '"samples":[1', 1)))
    r = merge(dir, '-o', tmp .. '/m.jsonl')
    assert.equal(1, r.code)
    assert.matches(string.format('corrupt: shard%%-%d%%.jsonl:1: point [^:]+: evidence%%.rawSamples: raw samples: no entry '
      .. 'of [^ ]+ has the digest', 1 + k % 3), r.err)
    assert.matches('18 of 20 bundles', r.err, 1, true)
  end)
end)

describe('merge refuses a run that claims another provider or session than its documents (issue 37)', function()
  local tmp, dir
  before_each(function()
    tmp = sh.tmpdir()
    dir = tmp .. '/run'
    launch_run(dir, 3)
  end)
  after_each(function() os.execute('rm -rf ' .. q(tmp)) end)

  it('a provider renamed in the externalId, a session past its count: corrupt, named, not merged', function()
    local k = sh.shard_of(dir, 'seq256-fp32')
    sh.rewrite(string.format('%s/shard-%d.jsonl', dir, k), function(b, i)
      local sn = b.run.spec.sourceNative
      if i == 1 then
        local provider = sn.externalId:match('^[^/]*/[^/]*/([^/]*)/')
        sn.externalId = sn.externalId:gsub('^([^/]*/[^/]*/)[^/]*/', '%1' .. provider .. 'x/')
      elseif i == 2 then
        for _, m in ipairs(b.run.spec.measurements) do if m.metric == 'session' then m.value = 9 end end
      end
      return b
    end)
    local r = merge(dir, '-o', tmp .. '/m.jsonl')
    assert.equal(1, r.code, r.err)
    assert.matches(string.format('corrupt: shard%%-%d%%.jsonl:1: point [^:]+: run%%.spec%%.sourceNative%%.externalId '
      .. '%%(provider%%): recorded %%S+x, computed', k), r.err)
    assert.matches(string.format('corrupt: shard%%-%d%%.jsonl:2: point [^:]+: run%%.spec%%.measurements %%(session%%): '
      .. 'recorded 9 of 1', k), r.err)
    assert.matches('18 of 20 bundles', r.err, 1, true)
  end)
end)

---------------------------------------------------------------------------
-- Class 3: one bad line never drops a shard
---------------------------------------------------------------------------

describe('one bad line never drops a shard, and an unreadable shard is named as it is (issue 24, class 3)', function()
  local tmp, dir
  before_each(function()
    tmp = sh.tmpdir()
    dir = tmp .. '/run'
    launch_run(dir, 3)
  end)
  after_each(function() os.execute('rm -rf ' .. q(tmp)) end)

  it('garbage appended to a shard keeps its valid bundles and names the line', function()
    local path = dir .. '/shard-1.jsonl'
    local n = count_lines(sh.slurp(path))
    local f = assert(io.open(path, 'a'))
    f:write('garbage{{{\n')
    f:close()
    local r = merge(dir, '-o', tmp .. '/m.jsonl')
    assert.equal(1, r.code)
    assert.matches(string.format('unreadable: shard-1.jsonl:%d: ', n + 1), r.err, 1, true)
    assert.matches('(the other lines of shard 1 are kept)', r.err, 1, true)
    assert.is_nil(r.err:find('missing', 1, true), r.err)
    assert.matches('20 of 20 bundles, 5 of 5 points complete', r.err, 1, true)
    -- every point arrived whole: the summary says the merge was not clean, not that it is incomplete
    assert.matches('(NOT CLEAN: see above)', r.err, 1, true)
    assert.is_nil(r.err:find('INCOMPLETE', 1, true), r.err)
    assert.equal(20, count_lines(sh.slurp(tmp .. '/m.jsonl')))
  end)

  it('a truncated last line loses only itself', function()
    local path = dir .. '/shard-1.jsonl'
    local text = sh.slurp(path)
    local n = count_lines(text)
    sh.spit(path, text:sub(1, #text - 200)) -- the writer stopped in the middle of the last line
    local r = merge(dir, '-o', tmp .. '/m.jsonl')
    assert.equal(1, r.code)
    assert.matches(string.format('unreadable: shard-1.jsonl:%d: ', n), r.err, 1, true)
    assert.matches('the last line, without a newline after it: cut short', r.err, 1, true)
    assert.matches('19 of 20 bundles', r.err, 1, true)
    assert.equal(19, count_lines(sh.slurp(tmp .. '/m.jsonl')))
  end)

  it('a shard that is a directory, a device, a FIFO or too large is named as that, not as missing', function()
    for _, case in ipairs {
      { 'mkdir %s', 'is a directory' },
      { 'ln -s /dev/zero %s', 'is a character device' },
      { 'mkfifo %s', 'is a FIFO' },
      { 'truncate -s 600M %s', 'is larger than ' .. files.MAX_READ_BYTES .. ' bytes' },
    } do
      local path = dir .. '/shard-2.jsonl'
      os.execute('rm -rf ' .. q(path))
      assert(os.execute(string.format(case[1], q(path))))
      local r = run({ 'merge', dir, '-o', tmp .. '/m.jsonl' }, 30)
      assert.are_not.equal(124, r.code, case[2] .. ': merge waited')
      assert.equal(1, r.code, r.err)
      assert.matches('unreadable: ' .. path .. ': ' .. case[2], r.err, 1, true)
      assert.is_nil(r.err:find('does not exist', 1, true), r.err)
    end
    os.execute('rm -rf ' .. q(dir .. '/shard-2.jsonl'))
    assert.matches('shard-2.jsonl does not exist (shard 2/3)', merge(dir).err, 1, true)
  end)

  it('reader.items keeps every valid line in tolerant mode; by default the first bad line still fails the text', function()
    local good = '{"run": {}}'
    local text = good .. '\ngarbage{{{\n' .. good .. '\n' .. good:sub(1, 6)
    local items, bad = reader.items(text, 'x.jsonl', { tolerant = true })
    assert.equal(2, #items)
    assert.same({ 1, 3 }, { items[1].line, items[2].line })
    assert.equal(2, #bad)
    assert.same({ 2, 4 }, { bad[1].line, bad[2].line })
    assert.matches('cut short', bad[2].message, 1, true)
    assert.is_nil(bad[1].message:find('cut short', 1, true))
    local none, line, why = reader.items(text, 'x.jsonl')
    assert.is_nil(none)
    assert.equal(2, line)
    assert.is_string(why)
    -- a JSON file that does not parse is one bad line, not an error
    items, bad = reader.items('[{"run": {}}, ', 'x.json', { tolerant = true })
    assert.same({}, items)
    assert.equal(1, #bad)
  end)
end)

---------------------------------------------------------------------------
-- Class 2, the rule for every command: no command writes over one of its inputs
---------------------------------------------------------------------------

describe('no command writes over one of its inputs (issue 24, class 2)', function()
  local tmp, rec, samples, csv
  before_each(function()
    tmp = sh.tmpdir()
    rec, samples, csv = tmp .. '/r.jsonl', tmp .. '/r.samples.jsonl', tmp .. '/liger.csv'
    sh.unsharded(rec, { '--seq', '128' })
    sh.spit(csv, 'kernel_name,kernel_provider,kernel_operation_mode,metric_name,metric_unit,x_name,x_label,x_value,'
      .. 'y_value_50,y_value_20,y_value_80,extra_benchmark_config_str,gpu_name,timestamp,liger_version\n'
      .. 'llama4_rope,liger,forward,speed,ms,H,hidden size,512,0.1,0.09,0.11,"{""dtype"": ""torch.bfloat16"", '
      .. '""seq_len"": 2048, ""num_q_heads"": 32, ""num_kv_heads"": 8}",NVIDIA H100 80GB HBM3,'
      .. '2025-08-07 21:42:05,0.6.1\n')
    assert(os.execute(string.format('ln -s r.jsonl %s && ln %s %s', q(tmp .. '/link.jsonl'), q(samples),
      q(tmp .. '/hard.jsonl'))))
  end)
  after_each(function() os.execute('rm -rf ' .. q(tmp)) end)

  it('plot, report, submission and import-liger refuse an output that is an input or its samples', function()
    local before = { sha(rec), sha(samples), sha(csv) }
    for _, case in ipairs {
      { { 'plot', rec, '-o', rec }, 'kluabench plot: -o ' .. rec .. ' is the input ' .. rec },
      { { 'plot', rec, '-o', tmp .. '/link.jsonl' }, 'is the input ' .. rec },
      { { 'plot', rec, '-o', tmp .. '/hard.jsonl' }, 'is the samples file of the input ' .. rec },
      { { 'report', rec, '-o', tmp .. '/./r.jsonl' }, 'kluabench report: -o ' .. tmp .. '/./r.jsonl is the input ' },
      { { 'report', '--db', rec, '-o', rec }, 'is the history database (--db)' },
      { { 'submission', rec, '-o', tmp .. '/link.jsonl' }, 'kluabench submission: -o ' .. tmp .. '/link.jsonl is the' },
      { { 'submission', rec, '-o', samples }, 'is the samples file of the input ' .. rec },
      { { 'import-liger', csv, '--jsonl', csv }, 'kluabench import-liger: --jsonl ' .. csv .. ' is the input ' .. csv },
    } do
      local r = run(case[1])
      assert.equal(2, r.code, table.concat(case[1], ' ') .. ': ' .. r.err)
      assert.matches(case[2], r.err, 1, true)
      assert.matches(': writing there would overwrite an input; give another path', r.err, 1, true)
    end
    assert.same(before, { sha(rec), sha(samples), sha(csv) })
    -- an output beside the inputs is written as before
    assert.equal(0, run({ 'plot', rec, '-o', tmp .. '/r.svg' }).code)
    assert.equal(0, run({ 'submission', rec, '-o', tmp .. '/s.json' }).code)
    assert.equal(0, run({ 'import-liger', csv, '--jsonl', tmp .. '/l.jsonl' }).code)
  end)
end)
