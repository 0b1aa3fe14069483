-- kluabench slurm: the batch script it writes, its usage errors, and a real
-- job array on a single-node Slurm cluster started on this machine
-- (tests/slurm/cluster.sh: munged, slurmctld and slurmd under a temporary
-- directory, stopped afterwards): three tasks of scripts/llama4_rope.lua on
-- the cpu backend, merged, holding the points of an unsharded run.
local kb = require 'kluabench'
local sh = require 'helpers.shards'
local sub = require 'helpers.subprocess'
local slurm = require 'kluabench.dist.slurm'

local ROOT = sub.root()
local LLAMA = ROOT .. '/scripts/llama4_rope.lua'
-- tiny points, every provider, short timing: the array takes seconds
local LLAMA_ARGS = { '--hidden', '64', '--seq', '16,32,48', '--q-heads', '4', '--kv-heads', '2', '--mode', 'forward',
  '--provider', 'all', '--rep-ms', '1', '--warmup-ms', '1' }

local function slurm_args(dir, opts, script, script_args) return sh.launcher('slurm', dir, opts, script, script_args) end

describe('kluabench slurm', function()
  local tmp
  before_each(function() tmp = sh.tmpdir() end)
  after_each(function() os.execute('rm -rf ' .. sh.q(tmp)) end)

  it('writes a job array of N one-GPU tasks, each running its shard into its own file, and a manifest', function()
    local dir = tmp .. '/job'
    local r = sh.run(slurm_args(dir, { '--gpus', '3', '--partition', 'gpu', '--time', '00:30:00', '--account', 'lab',
      '--max-parallel', '2', '--sbatch=--exclusive' }, nil, { '--seq', '128,256' }))
    assert.equal(0, r.code, r.err)
    assert.equal(dir .. '/job.sbatch\n', r.out)
    local job = assert(sh.slurp(dir .. '/job.sbatch'))
    for _, line in ipairs { '#!/bin/bash', '#SBATCH --array=1-3%2', '#SBATCH --ntasks=1', '#SBATCH --gres=gpu:1',
      '#SBATCH --output=' .. dir .. '/shard-%a.log', '#SBATCH --partition=gpu', '#SBATCH --time=00:30:00',
      '#SBATCH --account=lab', '#SBATCH --exclusive', '#SBATCH --job-name=kluabench-mini_sweep',
      'i=$SLURM_ARRAY_TASK_ID', 'out=' .. dir .. '/shard-$i.jsonl' } do
      assert.truthy(job:find('\n' .. line .. '\n', 1, true) or job:find('^' .. line:gsub('%p', '%%%0') .. '\n'), line)
    end
    assert.matches('\nexec ' .. sub.bin() .. ' --backend=cpu ' .. sh.mini() .. ' --seq 128,256 --shard "$i/3" '
      .. '--format jsonl --out "$out"\n', job, 1, true)
    -- no #SBATCH line after the first command (sbatch stops reading them there)
    assert.is_nil(job:match('\nset %-eu\n.*#SBATCH'))
    local m = sh.manifest(dir)
    assert.equal('slurm', m.launcher)
    assert.equal(3, m.count)
    assert.equal(2, m.points)
    assert.equal(0, #m.shards[3].points) -- more shards than points: one stays empty
    -- the script is valid bash
    local _, code = require('helpers.util').run('bash -n ' .. sh.q(dir .. '/job.sbatch'))
    assert.equal(0, code)
  end)

  it('leaves --gres out for CPU-only nodes', function()
    local r = sh.run(slurm_args(tmp .. '/j', { '--gpus', '2', '--no-gres' }))
    assert.equal(0, r.code, r.err)
    assert.is_nil(sh.slurp(tmp .. '/j/job.sbatch'):find('--gres', 1, true))
  end)

  it('quotes what the shell would split', function()
    local text = slurm.batch_script { n = 2, dir = '/shared/my runs', exe = '/opt/kb/kluabench', host_args = {},
      script = '/s/x.lua', args = { '--note', "it's" }, sbatch = {}, gres = true, job_name = 'kb' }
    assert.matches("out='/shared/my runs'/shard-$i.jsonl", text, 1, true)
    assert.matches("/s/x.lua --note 'it'\\''s' --shard", text, 1, true)
  end)

  it('reports usage errors', function()
    local r = sh.run(slurm_args(tmp .. '/j', {}))
    assert.equal(2, r.code)
    assert.matches('--gpus N is required', r.err, 1, true)
    r = sh.run({ '--backend', 'cpu', 'slurm', '--gpus', '2', sh.mini() })
    assert.equal(2, r.code)
    assert.matches('--dir DIR is required', r.err, 1, true)
    r = sh.run(slurm_args(tmp .. '/j', { '--gpus', '0' }))
    assert.equal(2, r.code)
    assert.matches("--gpus '0': expected a whole number >= 1", r.err, 1, true)
    r = sh.run(slurm_args(tmp .. '/j', { '--gpus', '2', '--sbatch', 'exclusive' }))
    assert.equal(2, r.code)
    assert.matches("--sbatch 'exclusive': expected one sbatch option", r.err, 1, true)
    r = sh.run(slurm_args(tmp .. '/j', { '--gpus', '2' }, nil, { '--out', 'x.jsonl' }))
    assert.equal(2, r.code)
    assert.matches("the script option '--out' is set for each shard by the launcher", r.err, 1, true)
  end)

  it('refuses a control character in anything it would write into the batch script (issue 37): exit 2, '
    .. 'nothing made', function()
    -- a newline in a path would end a comment or an #SBATCH line and start a command of its own
    local odd = tmp .. '/a\n#SBATCH --wrap=id\ntouch PWNED\n.lua'
    sh.spit(odd, sh.slurp(sh.mini()))
    for _, case in ipairs {
      { slurm_args(tmp .. '/j1', { '--gpus', '2' }, odd), "SCRIPT '" },
      { slurm_args(tmp .. '/j2\nx', { '--gpus', '2' }), "--dir '" },
      { slurm_args(tmp .. '/j3', { '--gpus', '2' }, nil, { '--note', 'a\rb' }), "the argument 'a\\x0Db'" },
      { slurm_args(tmp .. '/j4', { '--gpus', '2', '--exe', tmp .. '/kb\tx' }), "--exe '" },
    } do
      local r = sh.run(case[1])
      assert.equal(2, r.code, r.err)
      assert.matches(case[2], r.err, 1, true)
      assert.matches('has a control character: it cannot be written into a batch script', r.err, 1, true)
    end
    for _, d in ipairs { '/j1', '/j2\nx', '/j3', '/j4' } do assert.is_nil(kb.stat(tmp .. d)) end
    assert.is_nil(kb.stat(tmp .. '/PWNED'))
    -- the function that writes the script refuses them too
    assert.has_error(function()
      slurm.batch_script { n = 1, dir = '/d', exe = '/kb', host_args = {}, script = '/s\nid.lua', args = {}, sbatch = {},
        gres = true, job_name = 'kb' }
    end)
  end)

  it('submits with sbatch given its arguments as a vector, no shell between (issue 37)', function()
    -- a stand-in sbatch that says what it was given
    local bin = tmp .. '/bin'
    assert(os.execute('mkdir ' .. sh.q(bin)))
    local fake = assert(io.open(bin .. '/sbatch', 'wb'))
    fake:write('#!/bin/sh\nfor a in "$@"; do printf \'%s\\n\' "$a"; done > "$SBATCH_ARGS"\necho 4242\n')
    fake:close()
    assert(os.execute('chmod +x ' .. sh.q(bin .. '/sbatch')))
    local dir = tmp .. "/run $(touch PWNED) 'q'"
    local r = sh.run(slurm_args(dir, { '--gpus', '2', '--submit' }), { cwd = tmp,
      env = { PATH = bin .. ':' .. os.getenv('PATH'), SBATCH_ARGS = tmp .. '/args' } })
    assert.equal(0, r.code, r.err)
    assert.equal('4242\n', r.out)
    assert.equal('--parsable\n' .. dir .. '/job.sbatch\n', sh.slurp(tmp .. '/args'))
    assert.equal('4242', sh.manifest(dir).slurm.jobId)
    assert.is_nil(kb.stat(tmp .. '/PWNED'))
    -- a failing sbatch: its message, exit 1
    fake = assert(io.open(bin .. '/sbatch', 'wb'))
    fake:write('#!/bin/sh\necho "sbatch: error: Batch job submission failed" >&2\nexit 1\n')
    fake:close()
    r = sh.run(slurm_args(tmp .. '/run2', { '--gpus', '2', '--submit' }), { env = { PATH = bin .. ':' .. os.getenv('PATH') } })
    assert.equal(1, r.code, r.err)
    assert.matches('sbatch --parsable ' .. tmp .. '/run2/job.sbatch failed (exit 1): sbatch: error: Batch job submission failed',
      r.err, 1, true)
  end)
end)

-- Why the real cluster cannot run here, or nil.
local function why_no_cluster()
  local p = io.popen('id -u')
  local uid = p:read('l')
  p:close()
  if uid ~= '0' then return 'not root (slurmd runs jobs as their user)' end
  for _, b in ipairs { 'munged', 'slurmctld', 'slurmd', 'sbatch', 'sinfo' } do
    if not os.execute('PATH=$PATH:/usr/sbin command -v ' .. b .. ' >/dev/null 2>&1') then
      return b .. ' is not installed (make slurm-deps installs slurm-wlm and munge)'
    end
  end
  return nil
end

describe('a real Slurm job array (single-node cluster on this machine)', function()
  local why = why_no_cluster()
  if why then
    io.stderr:write('\nslurm_spec: SKIPPING the real Slurm array: ', why, '\n')
    pending('SKIPPED: ' .. why)
    return
  end

  it('runs three shards of llama4_rope as array tasks; merged, they hold the points of an unsharded run', function()
    local tmp = sh.tmpdir()
    local cluster = tmp .. '/cluster'
    local script = ROOT .. '/tests/slurm/cluster.sh'
    finally(function()
      os.execute(sh.q(script) .. ' stop ' .. sh.q(cluster) .. ' >/dev/null 2>&1')
      os.execute('rm -rf ' .. sh.q(tmp))
    end)
    -- with this process as the owner: the daemons stop even if the test run is killed
    local p = io.popen(sh.q(script) .. ' start ' .. sh.q(cluster) .. ' ' .. kb.process.getpid() .. ' 2>&1')
    local started = p:read('a')
    local ok = p:close()
    assert(ok, 'the cluster did not start: ' .. started)
    local conf = started:match('([^\n]*slurm%.conf)\n?$')
    assert.is_string(conf, started)
    local envs = { SLURM_CONF = conf, PATH = os.getenv('PATH') .. ':/usr/sbin' }

    local dir = tmp .. '/run'
    local r = sh.run(slurm_args(dir, { '--gpus', '3', '--no-gres', '--wait', '--time', '5' }, LLAMA, LLAMA_ARGS),
      { env = envs })
    local logs = ''
    for _, f in ipairs { 'shard-1.log', 'shard-2.log', 'shard-3.log' } do
      logs = logs .. '\n== ' .. f .. '\n' .. (sh.slurp(dir .. '/' .. f) or '(none)')
    end
    assert.equal(0, r.code, r.err .. logs .. '\n== slurmctld.log\n' .. (sh.slurp(cluster .. '/slurmctld.log') or ''))
    local m = sh.manifest(dir)
    local job = m.slurm and m.slurm.jobId
    assert.matches('^%d+$', job)
    assert.equal(job .. '\n', r.out)

    -- merge again by hand, and compare with an unsharded run on this machine
    r = sh.run({ 'merge', dir, '-o', tmp .. '/all.jsonl' })
    assert.equal(0, r.code, r.err)
    assert.matches('12 of 12 bundles, 3 of 3 points complete, from 3 shards', r.err, 1, true)
    local argv = { '--backend', 'cpu', LLAMA }
    for _, a in ipairs(LLAMA_ARGS) do argv[#argv + 1] = a end
    for _, a in ipairs { '--format', 'jsonl', '--out', tmp .. '/one.jsonl' } do argv[#argv + 1] = a end
    r = sh.run(argv)
    assert.equal(0, r.code, r.err)
    assert.same(sh.keys(tmp .. '/one.jsonl'), sh.keys(tmp .. '/all.jsonl'))

    -- every record says which job and task measured it
    for i = 1, 3 do
      for _, b in ipairs(sh.bundles(string.format('%s/shard-%d.jsonl', dir, i))) do
        local a = b.environment.metadata.labels
        assert.equal(job, a.slurm_array_job_id)
        assert.equal(tostring(i), a.slurm_array_task_id)
        assert.equal('kbnode', a.slurm_node_name)
        assert.is_string(a.host_name)
      end
    end
  end)
end)
