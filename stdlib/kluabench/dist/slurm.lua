--- `kluabench slurm --gpus N --dir DIR [...] SCRIPT [args]`: a Slurm job
-- array of N tasks, one GPU each, task I running shard I/N of the script.
-- Slurm schedules; kluabench only writes the batch script (and submits it
-- with sbatch when asked) and the manifest that `kluabench merge` checks.
local files = require 'kluabench.util.files'
local command = require 'kluabench.util.command'
local printable = require('kluabench.util.args').printable
local shards = require 'kluabench.dist.shards'
local helpers = require 'kluabench.commands.helpers'
local suite_shard = require 'kluabench.suite.shard'
local k0 = require 'kluabench.core'
local dist_merge = require 'kluabench.dist.merge'

local M = {}

M.USAGE = 'kluabench slurm --gpus N --dir DIR [options] [--submit | --wait] SCRIPT [args...]'

M.help = [[
A host option --backend goes before 'slurm' and is written into the tasks.

Writes DIR/job.sbatch, a Slurm job array of N tasks (--array=1-N), and
DIR/manifest.json (the points of every shard, from SCRIPT --list-points run
here on the cpu backend). Task I runs

  kluabench [--backend B] SCRIPT args... --shard I/N --format jsonl
            --out DIR/shard-I.jsonl

with one GPU (--gres=gpu:1; Slurm sets CUDA_VISIBLE_DEVICES, so the task
uses device 0) and its output in DIR/shard-I.log. A task that Slurm requeues
starts its shard file afresh. DIR must be on a file system the compute nodes
share; its path, SCRIPT's and the binary's are written as absolute paths.
Nothing with a control character (a newline in a path, say) is written into
the batch script: such a SCRIPT, argument, DIR, --exe or option is a usage
error. sbatch runs with its arguments as a vector: no shell reads them.
When the array is done, 'kluabench merge DIR -o all.jsonl' gathers the
results and names any point that is missing, with the task that should have
measured it.

  --gpus N              the number of tasks (shards), one GPU each (at most
                        4096, kluabench.suite.shard.MAX_SHARDS)
  --dir DIR             where the batch script, manifest, shard files and logs go
  --partition P, --time T, --account A, --qos Q, --constraint C, --mem M,
  --cpus-per-task C, --job-name NAME
                        the sbatch options of the same names
  --max-parallel K      at most K tasks at a time (--array=1-N%K)
  --sbatch ARG          one more #SBATCH line, as written (may repeat):
                        --sbatch=--exclusive --sbatch=--reservation=R
  --no-gres, --cpu      no --gres=gpu:1 (CPU-only nodes; with --backend cpu)
  --exe PATH            the kluabench binary on the compute nodes (default:
                        this binary)
  --submit              submit it with 'sbatch --parsable' and print the job id
  --wait                submit, wait for every task ('sbatch --wait'), then
                        merge into -o FILE (default DIR/all.jsonl)
  -o, --out FILE        the merged file for --wait (default DIR/all.jsonl);
                        SCRIPT, the binary and the files of DIR are refused
  --allow-mixed         for --wait: merge even when environments differ
  --infer               for --wait: accept a script whose --list-points does
                        not say what each point expects (merge --infer)

Exit status: 0 written (and submitted; with --wait: every task succeeded and
every point arrived); 1 the listing, writing, sbatch or the merge failed;
2 usage error.]]

local NAME = 'slurm'
local function usage_error(fmt, ...) return helpers.usage_error(NAME, fmt, ...) end
local function say(fmt, ...) io.stderr:write('kluabench slurm: ', printable(string.format(fmt, ...), 2000), '\n') end

local SBATCH_VALUES = { 'partition', 'time', 'account', 'qos', 'constraint', 'mem', 'cpus-per-task', 'job-name' }

local SPEC = { gpus = 'value', dir = 'value', ['max-parallel'] = 'value', sbatch = 'list', ['no-gres'] = 'flag',
  cpu = 'flag', exe = 'value', submit = 'flag', wait = 'flag', out = 'value', ['allow-mixed'] = 'flag', infer = 'flag',
  aliases = { o = 'out' } }
for _, k in ipairs(SBATCH_VALUES) do SPEC[k] = 'value' end

local q = shards.shell_quote

--- Why a value cannot go into a batch script, or nil: every text written into job.sbatch (the
-- script's path and arguments, DIR, the binary, host options, the job name, #SBATCH options) must
-- be free of control characters. A newline in a path would end a comment or an #SBATCH line and
-- start a command of its own; quoting cannot help in a comment.
--
-- o: as batch_script's. Returns nil, or a message naming the value.
function M.unwritable(o)
  local function bad(what, v)
    if type(v) == 'string' and v:find('%c') then
      return string.format("%s '%s' has a control character: it cannot be written into a batch script", what,
        printable(v, 200))
    end
  end
  local why = bad('SCRIPT', o.script) or bad('--dir', o.dir) or bad('--exe', o.exe)
    or bad('--job-name', o.job_name)
  if why then return why end
  for _, list in ipairs { { 'the argument', o.args }, { 'the host option', o.host_args },
    { 'the sbatch option', o.sbatch } } do
    for _, v in ipairs(list[2] or {}) do
      why = bad(list[1], v)
      if why then return why end
    end
  end
  return nil
end

--- The batch script. o: n, dir, exe, host_args, script, args, sbatch
-- (list of option strings such as "--partition=gpu"), gres (boolean),
-- max_parallel, job_name. Raises an error when a value has a control character (M.unwritable).
function M.batch_script(o)
  local why = M.unwritable(o)
  if why then error('slurm.batch_script: ' .. why, 2) end
  local lines = {
    '#!/bin/bash',
    string.format('# Written by kluabench slurm: %d shards of %s.', o.n, o.script),
    string.format('# Submit: sbatch %s/job.sbatch    When it is done: kluabench merge %s -o all.jsonl', q(o.dir),
      q(o.dir)),
    '#SBATCH --job-name=' .. o.job_name,
    string.format('#SBATCH --array=1-%d%s', o.n, o.max_parallel and ('%' .. o.max_parallel) or ''),
    '#SBATCH --ntasks=1',
  }
  if o.gres then lines[#lines + 1] = '#SBATCH --gres=gpu:1' end
  lines[#lines + 1] = '#SBATCH --output=' .. o.dir .. '/shard-%a.log'
  for _, s in ipairs(o.sbatch) do lines[#lines + 1] = '#SBATCH ' .. s end
  local cmd = { q(o.exe) }
  for _, a in ipairs(o.host_args) do cmd[#cmd + 1] = q(a) end
  cmd[#cmd + 1] = q(o.script)
  for _, a in ipairs(o.args) do cmd[#cmd + 1] = q(a) end
  cmd[#cmd + 1] = string.format('--shard "$i/%d" --format jsonl --out "$out"', o.n)
  for _, l in ipairs {
    'set -eu',
    'i=$SLURM_ARRAY_TASK_ID',
    'out=' .. q(o.dir) .. '/shard-$i.jsonl',
    'rm -f "$out" "${out%.jsonl}.samples.jsonl" # JSON Lines are appended to: a requeued task starts afresh',
    'exec ' .. table.concat(cmd, ' '),
  } do lines[#lines + 1] = l end
  return table.concat(lines, '\n') .. '\n'
end

-- The sbatch options from the command line, checked.
local function sbatch_options(opts)
  local out = {}
  for _, k in ipairs(SBATCH_VALUES) do
    local v = opts[k]
    if v then
      if v == '' or v:find('[%c]') then return nil, string.format("--%s '%s': empty or has control characters", k, v) end
      out[#out + 1] = string.format('--%s=%s', k, v)
    end
  end
  for _, s in ipairs(opts.sbatch or {}) do
    if not s:match('^%-') or s:find('[%c]') then
      return nil, string.format("--sbatch '%s': expected one sbatch option such as --exclusive", s)
    end
    out[#out + 1] = s
  end
  return out
end

local function parse(args)
  local opts, script, script_args = shards.split_args(args, SPEC)
  if not opts then return nil, script end
  if not script then return nil, 'no SCRIPT given' end
  if not opts.gpus then return nil, '--gpus N is required (the number of tasks, one GPU each)' end
  local n = opts.gpus:match('^%d+$') and math.tointeger(tonumber(opts.gpus))
  if not n or n < 1 then return nil, string.format("--gpus '%s': expected a whole number >= 1", opts.gpus) end
  local max = suite_shard.MAX_SHARDS
  if n > max then return nil, string.format("--gpus '%s': expected a whole number from 1 to %d", opts.gpus, max) end
  if not opts.dir then return nil, '--dir DIR is required (a directory the compute nodes share)' end
  local k
  if opts['max-parallel'] then
    k = opts['max-parallel']:match('^%d+$') and math.tointeger(tonumber(opts['max-parallel']))
    if not k or k < 1 then
      return nil, string.format("--max-parallel '%s': expected a whole number >= 1", opts['max-parallel'])
    end
  end
  if opts.out and not opts.wait then return nil, '-o/--out is for --wait (merge later with kluabench merge DIR -o FILE)' end
  local sb, err = sbatch_options(opts)
  if not sb then return nil, err end
  local sok, serr = shards.check_script(script)
  if not sok then return nil, serr end
  return { opts = opts, n = n, max_parallel = k, sbatch = sb, script = shards.absolute(script), args = script_args }
end

-- Runs sbatch on the batch script (an argument vector: no shell); the job id, or nil, message (and
-- the job id when sbatch printed one, e.g. --wait with a failed task).
local function submit(path, wait, dir)
  local argv = { 'sbatch', '--parsable' }
  if wait then argv[#argv + 1] = '--wait' end
  argv[#argv + 1] = path
  local r, err = command.capture(argv, { dir = dir })
  local shown = table.concat(argv, ' ')
  if not r then return nil, string.format('cannot run %s: %s', shown, err) end
  local textv = (r.out .. r.err):gsub('%s+$', '')
  local id = r.out:match('^%s*(%d+)')
  if not (r.how == 'exit' and r.code == 0) then
    return nil, string.format('%s failed (%s %s): %s', shown, tostring(r.how), tostring(r.code), textv), id
  end
  if not id then return nil, 'sbatch printed no job id: ' .. textv end
  return id
end

function M.main(args)
  local o, err = parse(args or {})
  if not o then return usage_error('%s', err) end
  local opts = o.opts
  local dir = shards.absolute(opts.dir)
  if opts.out == '' then return usage_error('-o: an empty path (leave -o out for DIR/all.jsonl)') end
  local out = opts.out and shards.absolute(opts.out) or (dir .. '/all.jsonl')
  local ook, oerr = shards.check_output('-o', out, shards.launch_inputs(o.script,
    opts.exe and shards.absolute(opts.exe) or k0.executable()), dir)
  if not ook then return usage_error('%s', oerr) end
  local k = k0
  local exe = opts.exe and shards.absolute(opts.exe) or k.executable()
  local host_args = shards.host_args()
  local base = o.script:match('([^/]+)$'):gsub('%.lua$', '')
  local batch = { n = o.n, dir = dir, exe = exe, host_args = host_args, script = o.script, args = o.args,
    sbatch = o.sbatch, gres = not (opts['no-gres'] or opts.cpu), max_parallel = o.max_parallel,
    job_name = opts['job-name'] or ('kluabench-' .. base) }
  -- nothing with a control character goes into the batch script: refused before anything is made
  local unwritable = M.unwritable(batch)
  if unwritable then return usage_error('%s', unwritable) end
  local ok, derr = shards.prepare_dir(dir)
  if not ok then
    say('%s', derr)
    return 1
  end
  -- every task is listed, those without points too (the array has the size asked for)
  local listing, lerr = shards.list_points { exe = k.executable(), script = o.script, args = o.args, n = o.n, dir = dir,
    keep_empty = true }
  if not listing then
    say('%s', lerr)
    return 1
  end
  local logs = {}
  for i = 1, o.n do logs[i] = string.format('shard-%d.log', i) end
  local m = shards.manifest { launcher = NAME, exe = exe, host_args = host_args, script = o.script, args = o.args,
    listing = listing, logs = logs }
  ok, derr = shards.write_manifest(dir, m)
  if ok then ok, derr = files.write_atomic(dir .. '/job.sbatch', M.batch_script(batch)) end
  if not ok then
    say('cannot write to %s: %s', dir, tostring(derr))
    return 1
  end
  local job = dir .. '/job.sbatch'
  say('%d points in %d shards: %s', #listing.points, o.n, job)
  if not (opts.submit or opts.wait) then
    io.stdout:write(job, '\n')
    say('submit it with: sbatch %s   then: kluabench merge %s -o all.jsonl', q(job), q(dir))
    return 0
  end
  local id, serr, partial = submit(job, opts.wait, dir)
  if id or partial then
    m.slurm = { jobId = id or partial }
    shards.write_manifest(dir, m)
  end
  if not id then
    say('%s', serr)
    if not (opts.wait and partial) then return 1 end
  end
  io.stdout:write(id or partial, '\n')
  io.stdout:flush()
  if not opts.wait then
    say('submitted job %s (%d tasks); when it is done: kluabench merge %s -o all.jsonl', id, o.n, q(dir))
    return 0
  end
  say('job %s finished%s; merging', id or partial, id and '' or ' with a failed task')
  local status = dist_merge.merge(dir, out,
    { allow_mixed = opts['allow-mixed'], infer = opts.infer, name = NAME })
  if not id then return 1 end
  return status
end

M.run = M.main

return M
