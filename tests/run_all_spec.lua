-- kluabench run-all on the cpu backend: several child processes, each one
-- shard of a harness-like script (tests/helpers/mini_sweep.lua), merged
-- into the same set of points as an unsharded run; device pinning; a failing
-- child; Ctrl-C passed on; usage errors.
local kb = require 'kluabench'
local sh = require 'helpers.shards'
local run_all = require 'kluabench.dist.run_all'
local result = require 'kluabench.result'

local function run_all_args(dir, extra, script_args) return sh.launcher('run-all', dir, extra, nil, script_args) end

describe('kluabench run-all', function()
  local tmp
  before_each(function() tmp = sh.tmpdir() end)
  after_each(function() os.execute('rm -rf ' .. sh.q(tmp)) end)

  it('runs N processes, one shard each, and merges the same points as one unsharded run', function()
    local dir = tmp .. '/run'
    local r = sh.run(run_all_args(dir, { '--procs', '3' }, { '--runs', '2' }))
    assert.equal(0, r.code, r.err)
    local want = sh.unsharded(tmp .. '/one.jsonl', { '--runs', '2' })
    assert.equal(40, #want) -- 5 points x 2 providers x 2 modes x 2 sessions
    assert.same(want, sh.keys(dir .. '/all.jsonl'))
    assert.matches('40 of 40 bundles, 5 of 5 points complete, from 3 shards', r.err, 1, true)
    -- the manifest: three shards that hold every point once
    local m = sh.manifest(dir)
    assert.equal('run-all', m.launcher)
    assert.equal(3, m.count)
    assert.equal(5, m.points)
    local seen = {}
    for i, s in ipairs(m.shards) do
      assert.equal(string.format('shard-%d.jsonl', i), s.file)
      for _, p in ipairs(s.points) do
        assert.is_nil(seen[p.id], p.id)
        seen[p.id] = i
        assert.is_number(p.cost)
      end
    end
    -- each child wrote its own shard's points only
    for i, s in ipairs(m.shards) do
      local bundles = sh.bundles(dir .. '/' .. s.file)
      assert.equal(#s.points * 8, #bundles)
      for _, b in ipairs(bundles) do
        assert.equal(i, seen[require('kluabench.dist.merge').point_of(b)])
      end
    end
    local n = 0
    for _ in pairs(seen) do n = n + 1 end
    assert.equal(5, n)
  end)

  it('writes the merged file to -o and pins each child to its device (--devices, repeated on cpu)', function()
    local dir, out = tmp .. '/run', tmp .. '/merged.jsonl'
    local r = sh.run(run_all_args(dir, { '--devices', '0,0,0', '-o', out }))
    assert.equal(0, r.code, r.err)
    assert.same(sh.unsharded(tmp .. '/one.jsonl'), sh.keys(out))
    for i = 1, 3 do
      local log = sh.slurp(string.format('%s/shard-%d.log', dir, i))
      assert.matches('CUDA_VISIBLE_DEVICES=0 --device=0', log, 1, true)
    end
    assert.equal('0', sh.manifest(dir).shards[2].device)
  end)

  it('maps --devices through CUDA_VISIBLE_DEVICES and rejects devices that are not there', function()
    local d = assert(run_all.devices('0,1', { visible = { '5', '7' } }))
    assert.same({ { index = 0, visible = '5' }, { index = 1, visible = '7' } }, d)
    assert.same({ { index = 0, visible = '0' }, { index = 2, visible = '2' } }, run_all.devices('0,2', { visible = false }))
    assert.same({ { index = 0, visible = 'GPU-a' }, { index = 1, visible = 'GPU-b' } },
      run_all.devices('all', { visible = { 'GPU-a', 'GPU-b' } }))
    local none, msg = run_all.devices('2', { visible = { '5' } })
    assert.is_nil(none)
    assert.equal('--devices: device 2 is not among the 1 of CUDA_VISIBLE_DEVICES=5', msg)
    none, msg = run_all.devices('0,x', { visible = false })
    assert.is_nil(none)
    assert.matches("'x' is not a device number", msg, 1, true)
    none, msg = run_all.devices('0,,1', { visible = false })
    assert.is_nil(none)
    none, msg = run_all.devices('all', { visible = {} })
    assert.is_nil(none)
    assert.matches('no CUDA device found (CUDA_VISIBLE_DEVICES lists none)', msg, 1, true)
  end)

  it('fails when a child fails, shows its message, and keeps the points the others finished', function()
    local dir = tmp .. '/run'
    local r = sh.run(run_all_args(dir, { '--procs', '3' }, { '--fail-at', 'seq256-fp32' }))
    assert.equal(1, r.code)
    local bad = sh.shard_of(dir, 'seq256-fp32')
    assert.matches(string.format('shard %d/3 failed (exit 1)', bad), r.err, 1, true)
    assert.matches('failing at point seq256-fp32 as asked', r.err, 1, true)
    assert.matches(string.format('missing: point seq256-fp32: no bundle; shard %d/3 should have written it', bad), r.err,
      1, true)
    -- every point of the other shards is in the merged file
    local merged = {}
    for _, b in ipairs(sh.bundles(dir .. '/all.jsonl')) do
      merged[require('kluabench.dist.merge').point_of(b)] = true
    end
    for i, s in ipairs(sh.manifest(dir).shards) do
      for _, p in ipairs(s.points) do
        if i ~= bad then assert.is_true(merged[p.id], p.id) end
      end
    end
  end)

  for _, case in ipairs { { 'SIGINT', 130 }, { 'SIGTERM', 143 } } do
    local sig, status = case[1], case[2]
    it('passes ' .. sig .. ' on to the children, which stop after their point, and merges what they wrote', function()
      local dir = tmp .. '/run'
      local argv = { require('helpers.util').bin() }
      for _, a in ipairs(run_all_args(dir, { '--procs', '2' }, { '--sleep-ms', '300' })) do argv[#argv + 1] = a end
      local err = tmp .. '/err'
      local pid = assert(kb.process.spawn(argv, { stdin = '/dev/null', stdout = tmp .. '/out', stderr = err,
        env = { KLUABENCH_BACKEND = false, KLUABENCH_QUIET = false } }))
      -- wait until both children have written a bundle: both are then in
      -- their sweeps (a signal while one still loads its modules stops it
      -- with a plain "interrupted!", as lua.c does; slow under ASan)
      local deadline = kb.clock_ns() + 120e9
      local function started(i) return #sh.bundles(string.format('%s/shard-%d.jsonl', dir, i)) > 0 end
      while kb.clock_ns() < deadline and not (started(1) and started(2)) do kb.process.sleep(50) end
      assert.is_true(kb.process.kill(pid, sig))
      local _, how, code = require('kluabench.dist.shards').wait(pid)
      local text = sh.slurp(err)
      assert.same({ 'exit', status }, { how, code }, text)
      assert.matches(sig .. ': passed to the children', text, 1, true)
      assert.matches('shard 1/2 stopped after ' .. sig, text, 1, true)
      for i = 1, 2 do
        assert.matches('interrupted by ' .. sig, sh.slurp(string.format('%s/shard-%d.log', dir, i)), 1, true)
      end
      local n = #sh.bundles(dir .. '/all.jsonl')
      assert.is_true(n >= 1 and n < 20, 'merged ' .. n)
    end)
  end

  it('reports usage errors', function()
    local r = sh.run({ '--backend', 'cpu', 'run-all', sh.mini() })
    assert.equal(2, r.code)
    assert.matches('give either --devices LIST', r.err, 1, true)
    r = sh.run(run_all_args(tmp .. '/a', { '--procs', '2' }, { '--shard', '1/2' }))
    assert.equal(2, r.code)
    assert.matches("the script option '--shard' is set for each shard by the launcher", r.err, 1, true)
    r = sh.run(run_all_args(tmp .. '/a', { '--procs', '0' }))
    assert.equal(2, r.code)
    assert.matches("--procs '0': expected a whole number >= 1", r.err, 1, true)
    r = sh.run({ '--backend', 'cpu', 'run-all', '--procs', '2', tmp .. '/no-such-script.lua' })
    assert.equal(2, r.code)
    assert.matches('cannot read SCRIPT', r.err, 1, true)
    r = sh.run(run_all_args(tmp .. '/b', { '--procs', '2' }))
    assert.equal(0, r.code, r.err)
    r = sh.run(run_all_args(tmp .. '/b', { '--procs', '2' }))
    assert.equal(1, r.code)
    assert.matches('already holds a run', r.err, 1, true)
  end)

  it('names a script whose --list-points fails', function()
    local script = tmp .. '/broken.lua'
    sh.spit(script, 'io.stderr:write("broken: no such option\\n") os.exit(2)\n')
    local r = sh.run({ '--backend', 'cpu', 'run-all', '--procs', '2', '--dir', tmp .. '/c', script })
    assert.equal(1, r.code)
    assert.matches('broken.lua --list-points failed (exit 2): broken: no such option', r.err, 1, true)
  end)
end)

describe('kluabench run-all on the CUDA devices of this host #gpu', function()
  it('runs one child per device and merges the points of an unsharded run, measured on cuda', function()
    local tmp = sh.tmpdir()
    finally(function() os.execute('rm -rf ' .. sh.q(tmp)) end)
    local script = require('helpers.subprocess').root() .. '/scripts/llama4_rope.lua'
    local args = { '--hidden', '512', '--seq', '256,512,1024,2048', '--mode', 'forward', '--provider', 'all',
      '--rep-ms', '20', '--warmup-ms', '5' }
    local argv = { 'run-all', '--devices', 'all', '--dir', tmp .. '/run', script }
    table.move(args, 1, #args, #argv + 1, argv)
    local r = sh.run(argv)
    assert.equal(0, r.code, r.err)
    local one = { script }
    table.move(args, 1, #args, 2, one)
    for _, a in ipairs { '--format', 'jsonl', '--out', tmp .. '/one.jsonl' } do one[#one + 1] = a end
    local r1 = sh.run(one)
    assert.equal(0, r1.code, r1.err)
    assert.same(sh.keys(tmp .. '/one.jsonl'), sh.keys(tmp .. '/run/all.jsonl'))
    assert.equal(16, #sh.bundles(tmp .. '/run/all.jsonl')) -- 4 points x 4 providers (fused, reference, floor, copy)
    for _, b in ipairs(sh.bundles(tmp .. '/run/all.jsonl')) do
      assert.equal('cuda', result.session(b).backend)
    end
    local m = sh.manifest(tmp .. '/run')
    assert.is_true(m.count >= 1)
    assert.is_string(m.shards[1].device)
  end)
end)
