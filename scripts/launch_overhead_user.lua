-- The host cost of kernel:launch against a C loop of cuLaunchKernel, alternated in rounds in one process (targets: 1.2x reused table, 1.3x inline).
--
--   build/kluabench scripts/launch_overhead_user.lua [--rounds N] [--batches B] [--per P] [--seed S]
--       [--interleave block|batch] [--direct] [--out FILE.csv] [--dry-run]
--
-- An empty kernel (float *, int, float) is compiled with NVRTC. Each round
-- runs four blocks, in an order shuffled per round (seeded): the C loop
-- (kernel:launch_repeat: the arguments packed once, then cuLaunchKernel P
-- times from C), kernel:launch with one options table reused,
-- kernel:launch with a new table per call, and the packing alone
-- (kb.cuda.args:pack of the reused table: what kernel:launch does but the
-- driver call; reported, not judged: the reused path less it is
-- cuLaunchKernel called between Lua code, to set beside the C loop's). A block is B batches of P
-- launches, each batch timed on the host clock, with a synchronize between
-- batches (not timed). --interleave batch (E4b in docs/MEASUREMENT.md) runs
-- the round's batches in turns instead: each turn one batch of every path, in
-- an order shuffled per turn, so that every path's batches span the same time
-- as the C loop's and a drift of the machine within the round reaches all of
-- them alike; block (the default) is E4's design. Per round and path: the
-- median ns per launch over its batches, and its ratio to the C loop's median
-- in the same round. Printed:
-- per path the median over rounds of the round medians and ratios, the range
-- of the ratios, and the verdict (the target met at the median and at the
-- largest round ratio); every batch goes to --out (CSV: round, position, path,
-- batch, ns_per_launch). --direct adds a fifth path, reported and not judged:
-- kernel:launch(opts) of the reused table written in the timed loop itself,
-- as a user's loop would have it (the judged paths call it through a
-- wrapper function, so that --dry-run can put the packing in its place).
-- Last, where /proc can be read: the CPUs the process was allowed, the CPU
-- it was on at the end of each round, and its context switches. --dry-run (any backend) times kb.cuda.args packing
-- instead of launches, to try the script where there is no GPU: its numbers
-- mean nothing.
local kb = require 'kluabench'
local cli = require 'kluabench.util.args'
local prng = require 'kluabench.stats.prng'
local stats = require 'kluabench.stats'

local USAGE = 'usage: kluabench scripts/launch_overhead_user.lua [--rounds N] [--batches B] [--per P] [--seed S] '
  .. '[--interleave block|batch] [--direct] [--out FILE.csv] [--dry-run]\n'
local opts, fail = cli.script_options('launch_overhead_user.lua', USAGE, arg, { rounds = 'value', batches = 'value',
  per = 'value', seed = 'value', interleave = 'value', out = 'value', ['dry-run'] = 'flag', direct = 'flag' })
local function int(name, default, lo)
  local v = math.tointeger(tonumber(opts[name] or default))
  if not v or v < lo then fail("--%s must be an integer >= %d, got '%s'", name, lo, tostring(opts[name])) end
  return v
end
local rounds, batches, per, seed = int('rounds', 7, 5), int('batches', 30, 3), int('per', 256, 1), int('seed', 1, 0)
local dry = opts['dry-run']
local interleave = opts.interleave or 'block'
if interleave ~= 'block' and interleave ~= 'batch' then
  fail("--interleave must be 'block' or 'batch', got '%s'", interleave)
end
if not dry and kb.backend() ~= 'cuda' then
  fail('needs the cuda backend (or --dry-run to try the script without a GPU)')
end

local buf = kb.empty({ 256 }, 'f32')
local opts_reused = { grid = 1, block = 32, args = { buf, 256, 2.0 } }
local c_batch, launch, direct_batch
local pack = kb.cuda.args('ptr, i32, f32')
if dry then
  c_batch = function(n)
    pack:pack(opts_reused)
    local t0 = kb.clock_ns()
    for _ = 1, n do kb.clock_ns() end -- a stand-in for the C loop: a C call per launch
    return kb.clock_ns() - t0
  end
  launch = function(o) pack:pack(o) end
  direct_batch = function(n)
    local t0 = kb.clock_ns()
    for _ = 1, n do pack:pack(opts_reused) end
    return kb.clock_ns() - t0
  end
else
  local module = kb.cuda.compile('extern "C" __global__ void empty(float *p, int n, float a) {}', { name = 'empty.cu' })
  local k = module:kernel('empty', 'ptr, i32, f32')
  c_batch = function(n) return k:launch_repeat(opts_reused, n) end
  launch = function(o) k:launch(o) end
  direct_batch = function(n)
    local t0 = kb.clock_ns()
    for _ = 1, n do k:launch(opts_reused) end
    return kb.clock_ns() - t0
  end
end

local PATHS = {
  { name = 'C loop of cuLaunchKernel (kernel:launch_repeat)', key = 'c', batch = c_batch },
  { name = 'kernel:launch(opts), one table reused', key = 'reused', target = 1.2,
    batch = function(n)
      local t0 = kb.clock_ns()
      for _ = 1, n do launch(opts_reused) end
      return kb.clock_ns() - t0
    end },
  { name = 'kernel:launch{...}, a new table per call', key = 'inline', target = 1.3,
    batch = function(n)
      local t0 = kb.clock_ns()
      for _ = 1, n do launch { grid = 1, block = 32, args = { buf, 256, 2.0 } } end
      return kb.clock_ns() - t0
    end },
  -- kernel:launch's work without the driver: with the reused path it splits the cost over the
  -- C loop into the Lua side and cuLaunchKernel called between Lua code
  { name = 'the packing alone (kb.cuda.args:pack, the reused table; reported, not judged)', key = 'pack',
    batch = function(n)
      local t0 = kb.clock_ns()
      for _ = 1, n do pack:pack(opts_reused) end
      return kb.clock_ns() - t0
    end },
}
if opts.direct then
  PATHS[#PATHS + 1] = { name = 'kernel:launch(opts) in the loop itself, one table reused (reported, not judged)',
    key = 'direct', batch = direct_batch }
end

-- The CPU this process is on (field 39 of /proc/self/stat, counted after the command's closing
-- parenthesis, which may hold spaces), or nil where /proc cannot be read.
local function current_cpu()
  local f = io.open('/proc/self/stat')
  if not f then return nil end
  local line = f:read('a')
  f:close()
  local rest = line:match('%)%s(.*)$')
  if not rest then return nil end
  local i = 2
  for field in rest:gmatch('%S+') do
    i = i + 1
    if i == 39 then return field end
  end
end
local round_cpus = {}

-- warm-up: every path, untimed
for _, p in ipairs(PATHS) do for _ = 1, 5 do p.batch(per); kb.synchronize() end end

local rows = { 'round,position,path,batch,ns_per_launch' }
local medians = {} -- medians[key][round]
for _, p in ipairs(PATHS) do medians[p.key] = {} end
local g = prng.new(seed)
local function shuffled()
  local order = {}
  for i = 1, #PATHS do order[i] = i end
  for i = #PATHS, 2, -1 do
    local j = math.floor(g:uniform() * i) + 1
    order[i], order[j] = order[j], order[i]
  end
  return order
end
-- one batch of path idx in round r, at position pos of its block or turn
local function run_batch(r, pos, idx, b, t)
  local p = PATHS[idx]
  local ns = p.batch(per) / per
  kb.synchronize()
  t[idx][b] = ns
  rows[#rows + 1] = string.format('%d,%d,%s,%d,%.1f', r, pos, p.key, b, ns)
end
for r = 1, rounds do
  local t = {}
  for i = 1, #PATHS do t[i] = {} end
  if interleave == 'block' then
    for pos, idx in ipairs(shuffled()) do
      for b = 1, batches do run_batch(r, pos, idx, b, t) end
    end
  else
    for b = 1, batches do
      for pos, idx in ipairs(shuffled()) do run_batch(r, pos, idx, b, t) end
    end
  end
  for i, p in ipairs(PATHS) do medians[p.key][r] = stats.median(t[i]) end
  round_cpus[r] = current_cpu() or '?'
end

if opts.out then
  local f = assert(io.open(opts.out, 'w'))
  f:write(table.concat(rows, '\n'), '\n')
  f:close()
  io.stderr:write('launch_overhead_user.lua: ', #rows - 1, ' batches written to ', opts.out, '\n')
end

local info = kb.device_info()
print(string.format('%s%s: %d rounds (%s, seed %d), %d batches of %d launches per path and round',
  dry and 'DRY RUN (kb.cuda.args packing, no launch) on ' or '', info.name, rounds,
  interleave == 'block' and 'a block per path, order shuffled per round'
    or 'batches in turns, order shuffled per turn', seed, batches, per))
print('')
print('| path | ns per launch (median of rounds) | range of round medians | vs C (median) | vs C (range) | target | verdict |')
print('|---|---:|---:|---:|---:|---:|---|')
local all_met = true
for _, p in ipairs(PATHS) do
  local ms = medians[p.key]
  local ratios = {}
  for r = 1, rounds do ratios[r] = ms[r] / medians.c[r] end
  local sorted_ms, sorted_r = {}, {}
  for i = 1, rounds do sorted_ms[i], sorted_r[i] = ms[i], ratios[i] end
  table.sort(sorted_ms)
  table.sort(sorted_r)
  local med_r = stats.median(ratios)
  local verdict = ''
  if p.target then
    local met = med_r <= p.target and sorted_r[rounds] <= p.target
    all_met = all_met and met
    verdict = met and 'met' or 'NOT met'
  end
  print(string.format('| %s | %.0f | %.0f..%.0f | %.2f | %.2f..%.2f | %s | %s |', p.name, stats.median(ms), sorted_ms[1],
    sorted_ms[rounds], med_r, sorted_r[1], sorted_r[rounds], p.target and string.format('<= %.1fx', p.target) or '',
    verdict))
end
print('')
print(string.format('targets (the median and the largest round ratio): %s%s', all_met and 'met' or 'NOT met',
  dry and ' (dry run: meaningless)' or ''))

-- where the process ran: a process slow as a whole (E4b's seed 14) may have shared or changed its core
local f = io.open('/proc/self/status')
if f then
  local status = f:read('a')
  f:close()
  print(string.format('host: cpus allowed %s; on cpu %s at the end of each round; context switches %s voluntary, %s involuntary',
    status:match('Cpus_allowed_list:%s*(%S+)') or '?', table.concat(round_cpus, ','),
    status:match('\nvoluntary_ctxt_switches:%s*(%d+)') or '?', status:match('nonvoluntary_ctxt_switches:%s*(%d+)') or '?'))
end
