-- kluabench merge: every point of the manifest exactly once, named when it
-- is missing (with the shard that should have written it), duplicated,
-- incomplete or unexpected; environments compared without the host and
-- Slurm fields; and where a process ran, as records carry it.
local sh = require 'helpers.shards'
local whole_file = require 'kluabench.record.whole_file'
local env = require 'kluabench.record.env'
local record = require 'kluabench.record'
local result = require 'kluabench.result'

-- A finished run-all of the stand-in in dir (3 shards; args for the script).
local function shards(dir, args, launcher_opts)
  local r = sh.run(sh.launcher('run-all', dir, launcher_opts or { '--procs', '3' }, nil, args))
  assert(r.code == 0, r.err)
end

local function merge(dir, ...)
  return sh.run({ 'merge', dir, ... })
end

-- The bundle's point id, as merge reads it.
local function point(b) return require('kluabench.dist.merge').point_of(b) end

describe('kluabench merge', function()
  local tmp, dir
  before_each(function()
    tmp = sh.tmpdir()
    dir = tmp .. '/run'
    shards(dir)
  end)
  after_each(function() os.execute('rm -rf ' .. sh.q(tmp)) end)

  it('merges the shards of a complete run, to -o or stdout', function()
    local r = merge(dir, '-o', tmp .. '/all.jsonl')
    assert.equal(0, r.code, r.err)
    assert.equal('kluabench merge: 20 of 20 bundles, 5 of 5 points complete, from 3 shards -> ' .. tmp .. '/all.jsonl\n',
      r.err)
    assert.same(sh.keys(dir .. '/all.jsonl'), sh.keys(tmp .. '/all.jsonl'))
    r = merge(dir, '--quiet')
    assert.equal(0, r.code, r.err)
    assert.equal('', r.err)
    local n = 0
    for _ in r.out:gmatch('[^\n]+') do n = n + 1 end
    assert.equal(20, n)
  end)

  it('names a missing point and the shard that should have written it', function()
    local k = sh.shard_of(dir, 'seq384-fp32')
    sh.rewrite(string.format('%s/shard-%d.jsonl', dir, k), function(b) return point(b) ~= 'seq384-fp32' and b or nil end)
    local r = merge(dir, '-o', tmp .. '/all.jsonl')
    assert.equal(1, r.code)
    assert.matches(string.format('missing: point seq384-fp32: no bundle; shard %d/3 should have written it to '
      .. 'shard-%d.jsonl, its log: %s/shard-%d.log', k, k, dir, k), r.err, 1, true)
    assert.matches('16 of 20 bundles, 4 of 5 points complete, from 3 shards', r.err, 1, true)
    assert.matches('INCOMPLETE', r.err, 1, true)
    assert.equal(16, #sh.bundles(tmp .. '/all.jsonl')) -- what arrived is written
  end)

  it('names a whole shard file that is missing', function()
    os.remove(dir .. '/shard-2.jsonl')
    local r = merge(dir, '-o', tmp .. '/all.jsonl')
    assert.equal(1, r.code)
    assert.matches('missing: ' .. dir .. '/shard-2.jsonl does not exist (shard 2/3)', r.err, 1, true)
  end)

  it('names duplicates by point, provider, mode, session and place, and keeps the first', function()
    local first = assert(sh.slurp(dir .. '/shard-1.jsonl'):match('^[^\n]*\n'))
    local f = assert(io.open(dir .. '/shard-2.jsonl', 'a'))
    f:write(first)
    f:close()
    local nlines = #sh.bundles(dir .. '/shard-2.jsonl')
    local id = point(sh.bundles(dir .. '/shard-1.jsonl')[1])
    local r = merge(dir, '-o', tmp .. '/all.jsonl')
    assert.equal(1, r.code)
    assert.matches(string.format('duplicate: point %s, provider a, mode forward, session 1/1 is in shard-1.jsonl:1 '
      .. 'and shard-2.jsonl:%d (the first is kept)', id, nlines), r.err, 1, true)
    assert.equal(20, #sh.bundles(tmp .. '/all.jsonl'))
  end)

  -- drops provider a forward of seq128 (both sessions) and session 2 of its b backward
  local function damage(run)
    local k = sh.shard_of(run, 'seq128-fp32')
    sh.rewrite(string.format('%s/shard-%d.jsonl', run, k), function(b)
      local p = result.session(b)
      if point(b) == 'seq128-fp32' and p.provider == 'b' and p.mode == 'backward' then
        return p.session.index == 1 and b or nil
      end
      if point(b) == 'seq128-fp32' and p.provider == 'a' and p.mode == 'forward' then
        return nil
      end
      return b
    end)
    return k
  end

  it('names the bundles a point lacks of what the manifest expects: providers x modes x sessions', function()
    shards(tmp .. '/runs', { '--runs', '2' })
    local e = sh.manifest(tmp .. '/runs').shards[1].points[1].expect
    assert.same({ providers = { 'a', 'b' }, modes = { 'forward', 'backward' }, sessions = 2 }, e)
    local k = damage(tmp .. '/runs')
    local r = merge(tmp .. '/runs')
    assert.equal(1, r.code)
    assert.matches(string.format('incomplete: point seq128-fp32 (shard %d): 5 of its 8 bundles arrived; missing: '
      .. 'provider a mode forward session 1/2, provider a mode forward session 2/2, provider b mode backward session '
      .. '2/2', k), r.err, 1, true)
    assert.matches('37 of 40 bundles, 4 of 5 points complete, from 3 shards', r.err, 1, true)
    assert.is_nil(r.err:find('inferred', 1, true))
  end)

  it('infers what a point expects from the others when the manifest does not say (an earlier kluabench): exit 1 '
    .. 'unless --infer accepts it, then a note', function()
    -- run-all's own merge takes --infer as merge does
    local r = sh.run(sh.launcher('run-all', tmp .. '/runs0', { '--procs', '3' }, nil, { '--runs', '2', '--plain-list' }))
    assert.equal(1, r.code, r.err)
    assert.matches('(--infer accepts it)', r.err, 1, true)
    shards(tmp .. '/runs', { '--runs', '2', '--plain-list' }, { '--procs', '3', '--infer' })
    assert.is_nil(sh.manifest(tmp .. '/runs').shards[1].points[1].expect)
    -- a provider or mode missing from every point cannot be seen: never exit 0 without --infer
    r = merge(tmp .. '/runs')
    assert.equal(1, r.code, r.err)
    assert.matches('kluabench merge: inferred: the manifest does not say which providers, modes and sessions each '
      .. 'point expects', r.err, 1, true)
    assert.matches('(--infer accepts it)', r.err, 1, true)
    r = merge(tmp .. '/runs', '--infer')
    assert.equal(0, r.code, r.err)
    assert.matches('note: inferred: the manifest does not say which providers, modes and sessions each point expects',
      r.err, 1, true)
    assert.matches('40 bundles, 5 of 5 points complete (as inferred), from 3 shards', r.err, 1, true)
    local k = damage(tmp .. '/runs')
    r = merge(tmp .. '/runs', '--infer')
    assert.equal(1, r.code)
    assert.matches(string.format('incomplete: point seq128-fp32 (shard %d) has no bundle of a forward that other points have', k),
      r.err, 1, true)
    assert.matches(string.format('incomplete: point seq128-fp32 (shard %d), b backward: session 2 of 2 is missing', k),
      r.err, 1, true)
  end)

  it('names a point that is not in the manifest', function()
    local r = sh.run({ '--backend', 'cpu', sh.mini(), '--seq', '999', '--format', 'jsonl', '--out', dir .. '/shard-3.jsonl' })
    assert.equal(0, r.code, r.err)
    r = merge(dir)
    assert.equal(1, r.code)
    assert.matches('unexpected: point seq999%-fp32 in shard%-3%.jsonl:%d+ is not in the manifest', r.err)
  end)

  it('rejects bundles of different environments unless --allow-mixed, and writes nothing then', function()
    os.remove(dir .. '/shard-2.jsonl')
    local r = sh.run({ '--backend', 'cpu', sh.mini(), '--shard', '2/3', '--label', 'Another CPU', '--format', 'jsonl',
      '--out', dir .. '/shard-2.jsonl' })
    assert.equal(0, r.code, r.err)
    r = merge(dir, '-o', tmp .. '/all.jsonl')
    assert.equal(1, r.code)
    assert.matches('mixed: the bundles come from 2 different environments (--allow-mixed merges them anyway):', r.err,
      1, true)
    assert.matches('Another CPU, cpu', r.err, 1, true)
    assert.matches('from shard-2.jsonl on ', r.err, 1, true)
    assert.matches('nothing written', r.err, 1, true)
    assert.is_nil(sh.slurp(tmp .. '/all.jsonl'))
    r = merge(dir, '--allow-mixed', '-o', tmp .. '/all.jsonl')
    assert.equal(0, r.code, r.err)
    assert.matches('note: mixed-allowed: the bundles come from 2 different environments (merged as --allow-mixed asks)',
      r.err, 1, true)
    assert.equal(20, #sh.bundles(tmp .. '/all.jsonl'))
  end)

  it('treats shards from other hosts and Slurm tasks as one environment', function()
    sh.rewrite(dir .. '/shard-2.jsonl', function(b)
      b.environment.metadata.labels = { host_name = 'node17', slurm_job_id = '42', slurm_array_task_id = '2' }
      return record.seal(b)
    end)
    local r = merge(dir, '-o', tmp .. '/all.jsonl')
    assert.equal(0, r.code, r.err)
  end)

  it('opens no device (so --backend cuda works without a GPU), and still checks the host options', function()
    local r = sh.run({ '--backend', 'cuda', 'merge', dir, '-q' })
    assert.equal(0, r.code, r.err)
    r = sh.run({ '--backend', 'gpu', 'merge', dir })
    assert.equal(2, r.code)
    assert.matches("invalid value 'gpu' for --backend", r.err, 1, true)
  end)

  it('needs the manifest, and says so', function()
    os.remove(dir .. '/manifest.json')
    local r = merge(dir)
    assert.equal(1, r.code)
    assert.matches('manifest.json not found: merge needs the point list that run-all and slurm write there', r.err, 1,
      true)
    r = sh.run({ 'merge' })
    assert.equal(2, r.code)
    assert.matches('no DIR given', r.err, 1, true)
    r = sh.run({ 'merge', dir, dir })
    assert.equal(2, r.code)
  end)

  it('replaces -o and its samples file together or neither: a write that fails leaves an earlier merge whole '
    .. '(issue 37)', function()
    local m = require 'kluabench.dist.merge'
    local evidence = require 'kluabench.record.evidence'
    local out = tmp .. '/all.jsonl'
    local r = merge(dir, '-o', out)
    assert.equal(0, r.code, r.err)
    local before, before_samples = sh.slurp(out), sh.slurp(evidence.samples_path(out))
    -- another merge into the same file (fewer bundles: other files), one of whose bundles cannot be
    -- written: found only after the samples file would have been written
    local res = assert(m.collect(dir))
    for _ = 1, 5 do table.remove(res.bundles) end
    res.bundles[#res.bundles + 1] = { run = { spec = { note = function() end } } }
    local ok, err = m.write(res, out)
    assert.is_nil(ok)
    assert.matches('cannot write a function', err, 1, true)
    assert.equal(before, sh.slurp(out))
    assert.equal(before_samples, sh.slurp(evidence.samples_path(out)))
    r = sh.run { 'verify', out }
    assert.equal(0, r.code, r.err)
    -- the same for a whole-file output (whole_file.write_pretty: the harness's --format kernelindex)
    local writer = require 'kluabench.record.writer'
    local pretty = tmp .. '/all.json'
    local good = assert(m.collect(dir)).bundles
    assert(whole_file.write_pretty(pretty, good))
    before, before_samples = sh.slurp(pretty), sh.slurp(evidence.samples_path(pretty))
    local bad = { good[1], { run = { spec = { note = function() end } } } }
    ok, err = whole_file.write_pretty(pretty, bad)
    assert.is_nil(ok)
    assert.equal(before, sh.slurp(pretty))
    assert.equal(before_samples, sh.slurp(evidence.samples_path(pretty)))
  end)
end)

describe('where a process ran (env.placement)', function()
  it('records the host name always and the Slurm ids when Slurm set them, outside the digested spec', function()
    local vars = { SLURM_JOB_ID = '1234', SLURM_ARRAY_JOB_ID = '1230', SLURM_ARRAY_TASK_ID = '4',
      SLURMD_NODENAME = 'gpu07', SLURM_CLUSTER_NAME = 'lab' }
    local p = env.placement(function(k) return vars[k] end, 'gpu07.lab')
    assert.same({ host_name = 'gpu07.lab', slurm_job_id = '1234', slurm_array_job_id = '1230', slurm_array_task_id = '4',
      slurm_node_name = 'gpu07', slurm_cluster_name = 'lab' }, p)
    assert.same({ host_name = 'x' }, env.placement(function() return nil end, 'x'))
    assert.is_nil(env.placement(function() return '' end, ''))
    local a = env.capture { placement = p }
    local b = env.capture { placement = false }
    assert.same(p, a.metadata.labels)
    assert.is_nil(b.metadata.labels)
    assert.equal(record.digest(a), record.digest(b))
    assert.is_string(env.capture().metadata.labels.host_name)
  end)
end)
