--- `kluabench run-all --devices 0,1,... SCRIPT [args]`: one process per GPU
-- of this host, each measuring one shard of the script's points, and their
-- results merged into one file. No scheduler: the shards are fixed before
-- the children start (kluabench.suite.shard), each child pinned to its device.
local files = require 'kluabench.util.files'
local shards = require 'kluabench.dist.shards'
local helpers = require 'kluabench.commands.helpers'
local suite_shard = require 'kluabench.suite.shard'
local core = require 'kluabench.core'
local progress_mod = require 'kluabench.progress'
local names = require 'kluabench.record.names'
local record = require 'kluabench.record'
local dist_merge = require 'kluabench.dist.merge'

local M = {}

M.USAGE = 'kluabench run-all (--devices LIST | --procs N) [--dir DIR] [-o FILE] SCRIPT [args...]'

M.help = [[
Host options go before 'run-all': --backend reaches the children; --quiet
silences run-all's status line (the children's progress still goes to their
logs).

Splits the points of SCRIPT (a benchmark on kluabench.suite) into N shards,
one per device, and runs N children at once:

  kluabench [--backend B] --device 0 SCRIPT args... --shard I/N
            --format jsonl --out DIR/shard-I.jsonl

child I with CUDA_VISIBLE_DEVICES set to the I-th device of --devices (so
inside it the device is number 0), stdin from /dev/null and its stdout and
stderr in DIR/shard-I.log. Before they start, SCRIPT --list-points is run
for every shard (on the cpu backend) and DIR/manifest.json written; when
they are done their files are merged as 'kluabench merge DIR -o FILE' does,
checking that every point arrived once.

  --devices LIST   CUDA devices, e.g. 0,1,2,3, or 'all' (every device this
                   process may use: CUDA_VISIBLE_DEVICES, else NVML's count).
                   A device may repeat (0,0): its children share it, and
                   their timings disturb each other.
  --procs N        N children without device pinning (the cpu backend:
                   'kluabench --backend cpu run-all --procs 3 ...')
                   At most 4096 children (kluabench.suite.shard.MAX_SHARDS), and
                   never more than the script has points: N (or the list
                   of devices) is cut to the number of points.
  --dir DIR        where the shard files, logs and manifest go (default
                   results/run-all-TIME); it must not hold a run already
  -o, --out FILE   the merged JSON Lines (default DIR/all.jsonl); SCRIPT,
                   this binary and the files run-all writes in DIR (the
                   manifest, shard files, samples files, logs) are refused
                   (a usage error), compared by real path and inode
  --allow-mixed    merge even when the children's environments differ
  --infer          accept a script whose --list-points does not say what
                   each point expects (merge --infer)

The script's own options follow SCRIPT, except --shard, --format, --out and
--list-points, which run-all sets for each child.

Progress: one line for all children on stderr (none with --quiet), from the
progress lines in their logs. Ctrl-C or SIGTERM is passed on to every child,
which finishes its current point, writes it and stops; a second one stops
them at once. A child that fails makes run-all fail: its last log lines are
shown, and the points the others finished are merged all the same.

Exit status: 0 every child succeeded and every point arrived; 1 a child
failed or the merge found a problem; 2 usage error; 130/143 interrupted by
SIGINT/SIGTERM.]]

local NAME = 'run-all'
local function usage_error(fmt, ...) return helpers.usage_error(NAME, fmt, ...) end
local function say(fmt, ...) io.stderr:write('kluabench run-all: ', string.format(fmt, ...), '\n') end

-- The most children (shards): kluabench.suite.shard's bound.
local MAX = suite_shard.MAX_SHARDS

local SPEC = { devices = 'value', procs = 'value', dir = 'value', out = 'value', ['allow-mixed'] = 'flag', infer = 'flag',
  aliases = { o = 'out' } }

-- The comma list of CUDA_VISIBLE_DEVICES, or nil when unset.
local function visible_devices()
  local v = os.getenv('CUDA_VISIBLE_DEVICES')
  if v == nil then return nil end
  local out = {}
  for w in v:gmatch('[^,]+') do out[#out + 1] = w:match('^%s*(.-)%s*$') end
  return out
end

--- The devices of a --devices value: a list of {index = N (as given),
-- visible = what the child's CUDA_VISIBLE_DEVICES gets}; or nil, message.
-- visible maps N through this process's CUDA_VISIBLE_DEVICES when it is
-- set (Slurm sets it): --devices 0,1 with CUDA_VISIBLE_DEVICES=2,3 gives
-- the children 2 and 3.
function M.devices(value, opts)
  opts = opts or {}
  local vis = opts.visible
  if vis == nil then vis = visible_devices() end
  local list = {}
  if value == 'all' then
    local n = vis and #vis or nil
    if not n then
      local nvml = core.nvml
      local ok, count = pcall(function() return nvml and nvml.available() and nvml.count() end)
      n = ok and math.tointeger(count) or nil
    end
    if not n or n < 1 then
      return nil, string.format('--devices all: no CUDA device found (%s); give the devices (--devices 0,1) '
        .. 'or, on the cpu backend, --procs N', vis and 'CUDA_VISIBLE_DEVICES lists none'
        or 'CUDA_VISIBLE_DEVICES is unset and NVML reports none')
    end
    for i = 0, n - 1 do list[#list + 1] = i end
  else
    for w in (value .. ','):gmatch('([^,]*),') do
      local d = math.tointeger(tonumber(w))
      if not w:match('^%d+$') or not d then
        return nil, string.format("--devices '%s': '%s' is not a device number (expected a list such as 0,1,2 or 'all')",
          value, w)
      end
      list[#list + 1] = d
    end
  end
  local out = {}
  for k, d in ipairs(list) do
    local visible = tostring(d)
    if vis then
      visible = vis[d + 1]
      if not visible then
        return nil, string.format('--devices: device %d is not among the %d of CUDA_VISIBLE_DEVICES=%s', d, #vis,
          table.concat(vis, ','))
      end
    end
    out[k] = { index = d, visible = visible }
  end
  return out
end

---------------------------------------------------------------------------
-- Children
---------------------------------------------------------------------------

local function child_argv(o, i, n)
  local argv = { o.exe }
  table.move(o.host_args, 1, #o.host_args, #argv + 1, argv)
  if o.devices then argv[#argv + 1] = '--device=0' end
  argv[#argv + 1] = o.script
  table.move(o.args, 1, #o.args, #argv + 1, argv)
  for _, a in ipairs { '--shard', string.format('%d/%d', i, n), '--format', 'jsonl', '--out',
    o.dir .. '/' .. shards.shard_file(i) } do
    argv[#argv + 1] = a
  end
  return argv
end

local function start_children(o, n)
  local process = core.process
  local children = {}
  for i = 1, n do
    local log = o.dir .. '/' .. string.format('shard-%d.log', i)
    local env = { KLUABENCH_QUIET = false, KLUABENCH_DEVICE = false }
    if o.devices then env.CUDA_VISIBLE_DEVICES = o.devices[i].visible end
    local ok, err = files.write_atomic(log, '')
    if not ok then return nil, err, children end
    local pid, perr = process.spawn(child_argv(o, i, n),
      { env = env, stdin = '/dev/null', stdout = log, stderr = log, append = true })
    if not pid then return nil, string.format('cannot start shard %d: %s', i, perr), children end
    children[i] = { pid = pid, index = i, log = log, device = o.devices and o.devices[i].index or nil }
  end
  return children
end

-- The last "[k/T]" progress line of a child's log: k, T (or nil).
local function progress_of(child)
  local f = io.open(child.log, 'rb')
  if not f then return nil end
  local size = f:seek('end')
  f:seek('set', math.max(0, size - 4096))
  local tail = f:read('a') or ''
  f:close()
  local k, t
  for a, b in tail:gmatch('%[(%d+)/(%d+)%]') do k, t = tonumber(a), tonumber(b) end
  return k, t
end

local function last_lines(path, n)
  local textv = files.read_file(path) or ''
  local lines = {}
  for line in textv:gmatch('[^\n]+') do
    lines[#lines + 1] = line
    if #lines > n then table.remove(lines, 1) end
  end
  return lines
end

local function status_line(children, start_ns, clock)
  local done, total, parts = 0, 0, {}
  for _, c in ipairs(children) do
    local k, t = progress_of(c)
    if c.how then
      local word = c.how == 'exit' and (c.code == 0 and 'done' or (c.code == 130 or c.code == 143) and 'stopped')
      parts[#parts + 1] = string.format('%d:%s', c.index, word or 'FAILED')
    else
      parts[#parts + 1] = string.format('%d:%s', c.index, k and (k .. '/' .. t) or '-')
    end
    done, total = done + (k or 0), total + (t or 0)
  end
  local secs = (clock() - start_ns) / 1e9
  return string.format('run-all: %s%s [%s] %dm%02ds', total > 0 and string.format('%d/%d', done, total) or 'starting',
    total > 0 and ' sessions' or '', table.concat(parts, ' '), secs // 60, math.floor(secs % 60))
end

-- Waits for every child, keeping the status line and passing signals on.
-- Returns the signal that interrupted the run, or nil.
local function supervise(children, quiet)
  local k = core
  local process = k.process
  local tty = not quiet and progress_mod.is_tty(io.stderr)
  local start, last_print, last_line = k.clock_ns(), 0, nil
  local running = #children
  local forwarded
  local function show(force)
    if quiet then return end
    local line = status_line(children, start, k.clock_ns)
    local now = k.clock_ns()
    if tty then
      io.stderr:write('\r\27[K', line)
    elseif force or (line ~= last_line and now - last_print > 10e9) then
      io.stderr:write(line, '\n')
      last_print = now
    end
    last_line = line
  end
  while running > 0 do
    local pid, how, code = process.wait(nil, false)
    if pid then
      for _, c in ipairs(children) do
        if c.pid == pid then
          c.how, c.code = how, code
          running = running - 1
        end
      end
      show(true)
    elseif code == 'ECHILD' then
      break
    else
      local stopped, sig = k.interrupted()
      if stopped and not forwarded then
        forwarded = sig
        if tty then io.stderr:write('\n') end
        say('%s: passed to the children; each finishes its point and stops (again: stop at once)', sig)
        for _, c in ipairs(children) do
          if not c.how then process.kill(c.pid, sig) end
        end
      end
      show(false)
      process.sleep(100)
    end
  end
  if tty then io.stderr:write('\r\27[K', status_line(children, start, k.clock_ns), '\n') end
  return forwarded
end

-- A hard stop (second signal) or an error: the children are stopped too.
local function stop_children(children)
  local process = core.process
  for _, c in ipairs(children) do
    if not c.how then process.kill(c.pid, 'SIGTERM') end
  end
  for _, c in ipairs(children) do
    if not c.how then c.how, c.code = select(2, shards.wait(c.pid)) end
  end
end

---------------------------------------------------------------------------
-- The command
---------------------------------------------------------------------------

local function parse(args)
  local opts, script, script_args = shards.split_args(args, SPEC)
  if not opts then return nil, script end
  if not script then return nil, 'no SCRIPT given' end
  if (opts.devices == nil) == (opts.procs == nil) then
    return nil, 'give either --devices LIST (one child per device) or --procs N'
  end
  local o = { script_args = script_args }
  if opts.procs then
    local n = math.tointeger(tonumber(opts.procs))
    if not n or n < 1 or not opts.procs:match('^%d+$') then
      return nil, string.format("--procs '%s': expected a whole number >= 1", opts.procs)
    end
    if n > MAX then return nil, string.format("--procs '%s': expected a whole number from 1 to %d", opts.procs, MAX) end
    o.n = n
  else
    local devs, err = M.devices(opts.devices)
    if not devs then return nil, err end
    if #devs > MAX then
      return nil, string.format('--devices: %d devices given, at most %d (one child each) are taken', #devs, MAX)
    end
    o.devices, o.n = devs, #devs
  end
  local sok, serr = shards.check_script(script)
  if not sok then return nil, serr end
  o.script = shards.absolute(script)
  o.opts = opts
  return o
end

function M.main(args)
  local o, err = parse(args or {})
  if not o then return usage_error('%s', err) end
  local k = core
  local opts = o.opts
  local dir = shards.absolute(opts.dir or (files.results_dir() .. '/run-all-' .. names.time_id(
    record.now())))
  if opts.out == '' then return usage_error('-o: an empty path (leave -o out for DIR/all.jsonl)') end
  local out = opts.out and shards.absolute(opts.out) or (dir .. '/all.jsonl')
  local ook, oerr = shards.check_output('-o', out, shards.launch_inputs(o.script, k.executable()), dir)
  if not ook then return usage_error('%s', oerr) end
  local ok, derr = shards.prepare_dir(dir)
  if not ok then
    say('%s', derr)
    return 1
  end
  if o.devices and shards.backend_choice() ~= 'cpu' then
    local seen = {}
    for _, d in ipairs(o.devices) do
      if seen[d.visible] then
        say('warning: device %s is given twice: its children share it and disturb each other\'s timings', d.visible)
        break
      end
      seen[d.visible] = true
    end
  end
  local run = { exe = k.executable(), host_args = shards.host_args(), script = o.script, args = o.script_args,
    dir = dir, devices = o.devices }
  local listing, lerr = shards.list_points { exe = run.exe, script = o.script, args = o.script_args, n = o.n,
    dir = dir }
  if not listing then
    say('%s', lerr)
    return 1
  end
  if listing.n < o.n then
    -- a child per point at most: the others would have nothing to measure
    local np = #listing.points
    say('%s: the script has %d point%s; starting %d process%s', opts.procs and ('--procs ' .. o.n)
      or ('--devices ' .. opts.devices), np, np == 1 and '' or 's', listing.n, listing.n == 1 and '' or 'es')
    o.n = listing.n
    if o.devices then o.devices = table.move(o.devices, 1, o.n, 1, {}) end
  end
  local logs, devices = {}, {}
  for i = 1, o.n do
    logs[i] = string.format('shard-%d.log', i)
    devices[i] = o.devices and o.devices[i].visible or nil
  end
  local m = shards.manifest { launcher = NAME, exe = run.exe, host_args = run.host_args, script = o.script,
    args = o.script_args, listing = listing, logs = logs, devices = o.devices and devices or nil }
  ok, derr = shards.write_manifest(dir, m)
  if not ok then
    say('cannot write the manifest: %s', derr)
    return 1
  end
  local quiet = os.getenv('KLUABENCH_QUIET') == '1'
  if not quiet then
    say('%d points in %d shards, %s; results in %s', #listing.points, o.n,
      o.devices and ('devices ' .. table.concat(devices, ',')) or (o.n .. ' processes'), dir)
  end

  k.defer_interrupts(true)
  local children, serr, started = start_children(run, o.n)
  if not children then
    stop_children(started)
    k.defer_interrupts(false)
    say('%s', serr)
    return 1
  end
  local sok, signal = pcall(supervise, children, quiet)
  if not sok then
    stop_children(children)
    k.defer_interrupts(false)
    say('stopped: %s', tostring(signal))
    return 130
  end
  k.defer_interrupts(false)

  local failed = {}
  for _, c in ipairs(children) do
    local stopped = signal and c.how == 'exit' and (c.code == 130 or c.code == 143)
    if stopped then
      say('shard %d/%d stopped after %s', c.index, o.n, signal)
    elseif not (c.how == 'exit' and c.code == 0) then
      failed[#failed + 1] = c
      local where = c.device and string.format(' (device %s)', devices[c.index]) or ''
      say('shard %d/%d%s failed (%s %s); the end of %s:', c.index, o.n, where, c.how, tostring(c.code), c.log)
      for _, line in ipairs(last_lines(c.log, 5)) do io.stderr:write('  | ', line, '\n') end
    end
  end
  local status = dist_merge.merge(dir, out,
    { allow_mixed = opts['allow-mixed'], infer = opts.infer, name = NAME, quiet = quiet })
  if signal then return signal == 'SIGTERM' and 143 or 130 end
  if #failed > 0 then return 1 end
  return status
end

M.run = M.main

return M
