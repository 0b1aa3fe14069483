-- Soak: the llama4_rope sweep repeated in one process for a given time, with host and device memory sampled after every round.
--
-- Every round runs scripts/llama4_rope.lua in this process (so a leak in the
-- engine, the stdlib or the script accumulates) with --format jsonl into one
-- file, then collects garbage and reads kb.memory_info(). At the end it
-- prints the memory of every round, and for every point the spread of its
-- median across rounds; it fails when host memory (what malloc has handed
-- out, and the resident set) or device memory in use grew by more than the
-- limits between the end of the first round (when every cache and scratch
-- buffer exists) and the end of the last.
local kb = require 'kluabench'
local json = require 'kluabench.util.json'
local results = require 'kluabench.table'

local USAGE = [[
usage: kluabench [--backend cpu|cuda] scripts/soak.lua [options] [sweep options] [-- args]

Repeats the llama4_rope sweep in this process until the time is up and
samples memory after every round (kb.memory_info()): the bytes malloc has
handed out and not got back (the host heap, tensors included), the resident
set of this process (VmRSS) and, on cuda, the device memory in use. Prints
the memory of each round and the spread of each point's median across
rounds; exits 1 when memory grew by more than the limits after the first
round. The heap is the exact measure of a host leak; the resident set also
moves with the allocator's fragmentation, hence its looser limit.

  --seconds S               how long to run (default 600); no round starts
                            that would end past it, once --rounds are done
  --minutes M               the same in minutes
  --rounds N                at least N rounds, whatever the time (default 3)
  --max-heap-growth-mb MB   host heap growth allowed (default 16)
  --max-rss-growth-mb MB    host RSS growth allowed (default 256)
  --max-device-growth-mb MB device memory growth allowed (default 64)
  --out FILE                keep every round's bundles there (JSON Lines;
                            default: a temporary file, removed at the end)
  --script FILE             the sweep to repeat (default llama4_rope.lua
                            beside this script); it must take --format jsonl
                            --out FILE and the sweep options given
  --verbose                 show the sweep's own output (stderr)
  --help                    this text

Any other option goes to scripts/llama4_rope.lua (default --sweep all; for
example --sweep hidden --rep-ms 50 --protocol cold), and so does everything
after "--"; --format and --out are the soak's.

Exit status: 0 memory stayed within the limits, 1 it did not or a round
failed, 2 usage error, 130 / 143 interrupted by SIGINT / SIGTERM (the tables
of the finished rounds are printed first).]]

local function die(fmt, ...)
  io.stderr:write('soak: ', string.format(fmt, ...), '\n')
  os.exit(2)
end

---------------------------------------------------------------------------
-- Options
---------------------------------------------------------------------------

local OWN = { seconds = 'number', minutes = 'number', rounds = 'int', ['max-heap-growth-mb'] = 'number',
  ['max-rss-growth-mb'] = 'number', ['max-device-growth-mb'] = 'number', out = 'string',
  script = 'string', verbose = 'flag', help = 'flag' }
-- llama4_rope options that take a value (the others are flags)
local SWEEP_VALUE = { hidden = true, seq = true, mode = true, provider = true, sweep = true,
  dtype = true, ['q-heads'] = true, ['kv-heads'] = true, ['rep-ms'] = true, ['warmup-ms'] = true,
  protocol = true }

local function parse_args(args)
  local o, sweep = { seconds = 600, rounds = 3, ['max-heap-growth-mb'] = 16,
    ['max-rss-growth-mb'] = 256, ['max-device-growth-mb'] = 64 }, {}
  local i = 1
  while i <= #args do
    local a = args[i]
    if a == '--' then
      for j = i + 1, #args do sweep[#sweep + 1] = args[j] end
      break
    end
    local name, value = a:match('^%-%-([%w-]+)=(.*)$')
    name = name or a:match('^%-%-([%w-]+)$')
    if a == '-h' then name = 'help' end
    local kind = name and OWN[name]
    if kind == 'flag' then
      o[name] = true
    elseif kind then
      if value == nil then
        i = i + 1
        value = args[i]
        if value == nil then die("option '--%s' needs a value", name) end
      end
      if kind ~= 'string' then
        local n = tonumber(value)
        if kind == 'int' then n = math.tointeger(n) end
        if not n or n <= 0 then die("option '--%s' needs a positive %s, got '%s'", name,
          kind == 'int' and 'integer' or 'number', value) end
        value = n
      end
      o[name] = value
      if name == 'minutes' then o.seconds = value * 60 end
    elseif name == 'format' then
      die("option '--format' is the soak's own (it reads the bundles back as JSON Lines)")
    elseif name and SWEEP_VALUE[name] then
      sweep[#sweep + 1] = a
      if value == nil then
        i = i + 1
        if args[i] == nil then die("option '--%s' needs a value", name) end
        sweep[#sweep + 1] = args[i]
      end
    elseif name then
      die("unrecognized option '%s' (see --help)", a)
    else
      die("unexpected argument '%s' (see --help)", a)
    end
    i = i + 1
  end
  local has_sweep = false
  for _, a in ipairs(sweep) do if a:match('^%-%-sweep') then has_sweep = true end end
  if not has_sweep then table.insert(sweep, 1, 'all') table.insert(sweep, 1, '--sweep') end
  return o, sweep
end

local opts, sweep_args = parse_args(arg or {})
if opts.help then
  io.stdout:write(USAGE, '\n')
  os.exit(0)
end

local here = (arg and arg[0] or ''):match('^(.*)/[^/]*$') or '.'
local script = opts.script or (here .. '/llama4_rope.lua')
local chunk, lerr = loadfile(script)
if not chunk then die('cannot load the sweep: %s', lerr) end

local out_path = opts.out or os.tmpname()
local keep_out = opts.out ~= nil
do -- start from an empty file
  local f, err = io.open(out_path, 'w')
  if not f then die('%s', err) end
  f:close()
end

---------------------------------------------------------------------------
-- Rounds
---------------------------------------------------------------------------

-- os.exit inside the sweep (its usage errors, its exit after an interrupt)
-- ends the round instead of the process, so that the soak still reports.
local EXIT = {}

-- The sweep's stderr during a round (unless --verbose): its last 64 KiB are
-- kept, and shown when the round fails.
local sink = { parts = {}, size = 0 }
function sink.write(self, ...)
  for i = 1, select('#', ...) do
    local s = tostring((select(i, ...)))
    self.parts[#self.parts + 1] = s
    self.size = self.size + #s
  end
  while self.size > 65536 and #self.parts > 1 do
    self.size = self.size - #table.remove(self.parts, 1)
  end
  return self
end
function sink.flush(self) return self end
function sink.setvbuf() return true end
function sink.close() return true end
function sink.take(self)
  local text = table.concat(self.parts)
  self.parts, self.size = {}, 0
  return text
end

local function count_lines(path)
  local n = 0
  for _ in io.lines(path) do n = n + 1 end
  return n
end

-- Runs the sweep once. Returns true, or false and an exit status and a
-- message when the round did not finish.
local function run_round()
  local saved_arg, saved_exit, saved_stderr = arg, os.exit, io.stderr
  local args = { [0] = script, '--format', 'jsonl', '--out', out_path }
  for _, a in ipairs(sweep_args) do args[#args + 1] = a end
  arg = args ---@diagnostic disable-line: lowercase-global
  os.exit = function(code) error({ [EXIT] = true, code = code == true and 0 or code or 0 }, 0) end
  if not opts.verbose then io.stderr = sink end ---@diagnostic disable-line
  local ok, err = xpcall(chunk, function(e)
    if type(e) == 'table' and e[EXIT] then return e end
    return debug.traceback(tostring(e), 2)
  end)
  arg, os.exit, io.stderr = saved_arg, saved_exit, saved_stderr ---@diagnostic disable-line
  local said = sink:take()
  if ok then return true end
  io.stderr:write(said) -- what the sweep said before it stopped
  if type(err) == 'table' then
    if err.code == 0 then return true end
    return false, err.code, string.format('the sweep exited with status %s', tostring(err.code))
  end
  return false, 1, err
end

local function memory()
  collectgarbage('collect')
  collectgarbage('collect')
  -- trim: memory malloc keeps after large frees (the cpu checks of big
  -- points) would otherwise stay in the resident set
  return kb.memory_info(nil, { trim = true })
end

kb.defer_interrupts(true)
local rounds = {}
local t_start = kb.clock_ns()
local failure -- {code, message} when a round did not finish
local lines_before = 0
while true do
  local t0 = kb.clock_ns()
  local ok, code, msg = run_round()
  local m = memory()
  local t1 = kb.clock_ns()
  local lines = count_lines(out_path)
  local r = { seconds = (t1 - t0) / 1e9, heap = m.heap_bytes, rss = m.rss_bytes,
    device = m.device_used_bytes, first = lines_before + 1, last = lines }
  rounds[#rounds + 1] = r
  lines_before = lines
  io.stderr:write(string.format('soak: round %d: %d points in %.1f s, host heap %.1f MiB, RSS %.1f MiB%s\n',
    #rounds, r.last - r.first + 1, r.seconds, (r.heap or 0) / 2 ^ 20, (r.rss or 0) / 2 ^ 20,
    r.device and string.format(', device in use %.1f MiB', r.device / 2 ^ 20) or ''))
  if not ok then
    failure = { code = code, message = msg }
    break
  end
  local hit, sig = kb.interrupted()
  if hit then
    failure = { code = sig == 'SIGTERM' and 143 or 130, message = 'interrupted by ' .. sig }
    break
  end
  local elapsed = (t1 - t_start) / 1e9
  if #rounds >= opts.rounds and elapsed + rounds[#rounds].seconds > opts.seconds then break end
end
local total_seconds = (kb.clock_ns() - t_start) / 1e9

---------------------------------------------------------------------------
-- Report
---------------------------------------------------------------------------

local function mib(b) return b and string.format('%.1f', b / 2 ^ 20) or '' end
local function delta(b, base) return (b and base) and string.format('%+.1f', (b - base) / 2 ^ 20) or '' end

local base = rounds[1]
local mem_rows = {}
for i, r in ipairs(rounds) do
  mem_rows[i] = { round = i, seconds = string.format('%.1f', r.seconds), points = r.last - r.first + 1,
    heap = mib(r.heap), dheap = delta(r.heap, base.heap), rss = mib(r.rss), drss = delta(r.rss, base.rss),
    dev = mib(r.device), ddev = delta(r.device, base.device) }
end
local device_name = kb.device_info().name
io.stdout:write(string.format('soak: %d round%s of %s %s in %.0f s on %s (%s)\n\n', #rounds,
  #rounds == 1 and '' or 's', script:match('[^/]*$'), table.concat(sweep_args, ' '), total_seconds,
  kb.backend(), device_name))
io.stdout:write(results.format_table({
  { key = 'round', title = 'round', align = 'right' },
  { key = 'seconds', title = 'seconds', align = 'right' },
  { key = 'points', title = 'points', align = 'right' },
  { key = 'heap', title = 'host heap MiB', align = 'right' },
  { key = 'dheap', title = 'vs round 1', align = 'right' },
  { key = 'rss', title = 'host RSS MiB', align = 'right' },
  { key = 'drss', title = 'vs round 1', align = 'right' },
  { key = 'dev', title = 'device used MiB', align = 'right' },
  { key = 'ddev', title = 'vs round 1', align = 'right' },
}, mem_rows), '\n')

-- Each point's median across rounds, and how many rounds fell inside the
-- p20-p80 interval the first round reported.
local bundles = {}
for line in io.lines(out_path) do
  local b = json.decode(line)
  if b then bundles[#bundles + 1] = b end
end
local rows = results.results_rows(bundles, { sessions = true }) -- a row per round of each point
local points, order = {}, {}
for i, row in ipairs(rows) do
  local key = table.concat({ row.mode or '', row.provider or '', row.workload or '' }, ' ')
  local p = points[key]
  if not p then
    p = { key = key, medians = {}, p20 = row.p20_ns, p80 = row.p80_ns }
    points[key] = p
    order[#order + 1] = p
  end
  if row.median_ns then p.medians[#p.medians + 1] = row.median_ns end
  rows[i] = nil
end
local stats = require 'kluabench.stats'
local spread_rows = {}
for _, p in ipairs(order) do
  local m = p.medians
  if #m > 0 then
    local med = stats.median(m)
    local inside = 0
    for j = 2, #m do
      if p.p20 and p.p80 and m[j] >= p.p20 and m[j] <= p.p80 then inside = inside + 1 end
    end
    spread_rows[#spread_rows + 1] = {
      point = p.key, n = #m, median = string.format('%.2f', med / 1000),
      min = string.format('%.2f', stats.min(m) / 1000), max = string.format('%.2f', stats.max(m) / 1000),
      spread = med > 0 and string.format('%.1f', (stats.max(m) - stats.min(m)) / med * 100) or '',
      inside = #m > 1 and string.format('%d/%d', inside, #m - 1) or '',
    }
  end
end
io.stdout:write(results.format_table({
  { key = 'point', title = 'point (mode provider workload)' },
  { key = 'n', title = 'rounds', align = 'right' },
  { key = 'median', title = 'median us', align = 'right' },
  { key = 'min', title = 'min us', align = 'right' },
  { key = 'max', title = 'max us', align = 'right' },
  { key = 'spread', title = 'spread %', align = 'right' },
  { key = 'inside', title = 'in round-1 p20-p80', align = 'right' },
}, spread_rows), '\n')

if not keep_out then os.remove(out_path) end

-- Growth from the end of round 1 to the end of the last round, per measure.
local last = rounds[#rounds]
local all_ok = true
local function verdict(what, field, limit)
  if not (base[field] and last[field]) then return end
  local growth = (last[field] - base[field]) / 2 ^ 20
  local ok = growth <= limit
  all_ok = all_ok and ok
  io.stdout:write(string.format('soak: %s %+.1f MiB after round 1 (limit %g): %s\n', what, growth, limit,
    ok and 'ok' or 'GREW'))
end
verdict('host heap', 'heap', opts['max-heap-growth-mb'])
verdict('host RSS', 'rss', opts['max-rss-growth-mb'])
verdict('device memory in use', 'device', opts['max-device-growth-mb'])
io.stdout:flush()

if failure then
  io.stderr:write('soak: stopped in round ', #rounds, ': ', tostring(failure.message), '\n')
  os.exit(failure.code)
end
if #rounds < 2 then
  io.stderr:write('soak: only one round ran; give more time (--seconds) to compare rounds\n')
end
if not all_ok then
  io.stderr:write('soak: FAILED: memory grew beyond the limit\n')
  os.exit(1)
end
