-- How `kluabench history` scales: 100,000 bundles added to a SQLite file
-- (1,000 commits x 100 runs: 33 workloads x 3 providers, as a sweep would
-- write them) through history.add_bundles, the call `history add` and the
-- harness make, timed per 10,000; then a trend query and a whole
-- `history check` over them; then `kluabench history add FILE...` of 10,000
-- bundles (--file-bundles) from JSON Lines files of at most 20,000 each (the
-- reading of the files included).
--
-- The bundles are the first H200 bundle of
-- evidence/2026-12-02-s3-h200-aa/aa1-a.jsonl with fresh samples (20
-- each), a time and a workload digest of their own. Making them is not
-- timed: the times are those of the add_bundles calls, as wall time and as
-- this process's CPU time (the machine is shared: wall time counts the
-- other jobs' turns too, CPU time does not).
--
-- Usage: build/kluabench bench/history_scale.lua [--bundles N] [--db PATH] [--file-bundles N]
-- (evidence/history-scale.txt is its output on the 2-core CI machine)
local kb = require 'kluabench'
local history = require 'kluabench.history'
local point = require 'kluabench.history.point'
local output = require 'kluabench.report'
local prng = require 'kluabench.stats.prng'

local opts = require('kluabench.cli').script_options('history_scale.lua',
  'usage: kluabench bench/history_scale.lua [--bundles N] [--db PATH] [--file-bundles N]\n', arg,
  { bundles = 'value', db = 'value', ['file-bundles'] = 'value' })
local N = math.tointeger(tonumber(opts.bundles or 100000)) or 100000
local FILE_N = math.tointeger(tonumber(opts['file-bundles'] or 10000)) or 10000
local PER_COMMIT, WORKLOADS = 99, 33
local dir = os.tmpname()
os.remove(dir)
assert(kb.mkdir(dir))
local DB = opts.db or (dir .. '/scale.db')

local root = arg[0]:match('^(.*)/bench/[^/]*$') or '.'
local templates = {}
for _, b in ipairs(assert(point.read(root .. '/evidence/2026-12-02-s3-h200-aa/aa1-a.jsonl'))) do
  local provider = kb.point.of(b).provider
  templates[provider] = templates[provider] or b
end
local PROVIDERS = { 'fused', 'reference', 'copy' }
local rng = prng.new(1)

-- Bundle number i: the template of its provider with its own run document.
local function bundle(i)
  local c = (i - 1) // PER_COMMIT
  local k = (i - 1) % PER_COMMIT
  local provider = PROVIDERS[k % 3 + 1]
  local w = k // 3
  local t = templates[provider]
  local spec = {}
  for key, v in pairs(t.run.spec) do spec[key] = v end
  local base = t.run.spec.timing.latencyNs.median * (1 + w / 10)
  local vals = {}
  for j = 1, 20 do vals[j] = math.floor(base * (1 + 0.01 * rng:uniform()) + 0.5) end
  spec.workloadDigest = 'sha256:' .. kb.sha256('workload ' .. w)
  spec.observedAt = string.format('2026-%02d-%02dT%02d:%02d:%02d.000Z', 1 + c // 600 % 12, 1 + c // 24 % 25, c % 24,
    k // 60, k % 60)
  local b = { run = { apiVersion = t.run.apiVersion, kind = t.run.kind, metadata = t.run.metadata, spec = spec },
    protocol = t.protocol, environment = t.environment, workload = t.workload, implementation = t.implementation,
    operation = t.operation }
  -- the raw samples are the run's evidence entry, as the records keep them
  return kb.evidence.attach(b, { format = kb.evidence.FORMAT, unit = 'ns', samples = vals })
end

local function sha(c) return string.format('%08x%032x', c, 0x5ca1e) end

local out = {}
local function say(fmt, ...)
  out[#out + 1] = string.format(fmt, ...)
  io.stderr:write(out[#out], '\n')
end
-- MiB of a file; of a database, with its write-ahead log (what it holds until the next checkpoint)
local function size(path, wal)
  local st = kb.stat(path, true)
  local n = st and st.size or 0
  local w = wal and kb.stat(path .. '-wal', true)
  return (n + (w and w.size or 0)) / 2 ^ 20
end

say('history scale: %d bundles into %s (%d commits x %d runs), SQLite %s, %s', N, 'a new SQLite file', N // PER_COMMIT,
  PER_COMMIT, kb.sqlite.version(), os.date('!%Y-%m-%d'))
local function loadavg()
  local f = io.open('/proc/loadavg')
  local l = f and f:read('l')
  if f then f:close() end
  return l and l:match('^(%S+)') or '?'
end
say('load average at the start: %s (2 cores)', loadavg())
local h = assert(history.open(DB, { create = true }))
say('%10s %14s %12s %16s %16s %12s', 'bundles', 'last ~10k (s)', 'cpu (s)', 'per bundle (us)', 'cpu/bundle (us)',
  'file+WAL (MiB)')
local wall, cpu, chunk_wall, chunk_cpu, chunk_n = 0, 0, 0, 0, 0
local commit = 0
local i = 1
while i <= N do
  local list = {}
  for j = i, math.min(i + PER_COMMIT - 1, N) do list[#list + 1] = bundle(j) end
  commit = commit + 1
  local meta = { commit = sha(commit), parents = { commit > 1 and sha(commit - 1) or nil },
    committed_at = string.format('2026-01-01T00:00:00Z+%06d', commit), batch = 'c' .. commit }
  local t0, c0 = kb.clock_ns(), os.clock()
  local s = assert(history.add_bundles(h, list, meta))
  local dt, dc = (kb.clock_ns() - t0) / 1e9, os.clock() - c0
  assert(s.added == #list, 'added ' .. s.added)
  wall, cpu, chunk_wall, chunk_cpu = wall + dt, cpu + dc, chunk_wall + dt, chunk_cpu + dc
  i = i + #list
  chunk_n = chunk_n + #list
  if chunk_n >= 10000 or i > N then
    say('%10d %14.2f %12.2f %16.1f %16.1f %12.1f', i - 1, chunk_wall, chunk_cpu, chunk_wall * 1e6 / chunk_n,
      chunk_cpu * 1e6 / chunk_n, size(DB, true))
    chunk_wall, chunk_cpu, chunk_n = 0, 0, 0
  end
end
say('added %d bundles in %.1f s (%.0f bundles/s; %.1f s of CPU)', N, wall, N / wall, cpu)

local series = history.find_series(h, { provider = 'fused', point = 'hidden512' })[1]
local t0, c0 = kb.clock_ns(), os.clock()
local trend = history.trend(h, series.series)
say('trend of one series (%d commits): %.3f s (%.3f s of CPU)', #trend, (kb.clock_ns() - t0) / 1e9, os.clock() - c0)
t0, c0 = kb.clock_ns(), os.clock()
local r = history.check(h)
say('history check of every series at the newest commit (%d series): %.2f s (%.2f s of CPU)', #r.results,
  (kb.clock_ns() - t0) / 1e9, os.clock() - c0)
h:close()

-- history add of files: the reading of JSON Lines included. At most PER_FILE bundles a file
-- (about 136 MiB): kluabench reads no file over 512 MiB (a bounded read), so a large batch is
-- several files, as run-all's shards are.
local PER_FILE = 20000
local files, total_bytes = {}, 0
for first = 1, FILE_N, PER_FILE do
  local file = string.format('%s/bundles-%03d.jsonl', dir, #files + 1)
  local bundles = {}
  for j = first, math.min(FILE_N, first + PER_FILE - 1) do bundles[#bundles + 1] = bundle(N + j) end
  -- the records and, beside them, their raw samples (as the harness writes them)
  assert(kb.evidence.write_file(bundles, file))
  local lines = {}
  for j, b in ipairs(bundles) do lines[j] = output.encode_line(b) end
  local f = assert(io.open(file, 'w'))
  f:write(table.concat(lines, '\n'), '\n')
  f:close()
  files[#files + 1] = file
  total_bytes = total_bytes + size(file)
  collectgarbage()
end
t0 = kb.clock_ns()
-- bash's time gives the command's CPU time (user + system) on its last line
local quoted = {}
for i, f in ipairs(files) do quoted[i] = "'" .. f .. "'" end
local cmd = string.format("bash -c 'TIMEFORMAT=\"cpu %%U %%S\"; time \"$0\" history add --db \"$1\" --commit \"$2\" "
  .. "\"${@:3}\"' '%s' '%s' %s %s 2>&1", kb.executable(), DB, sha(commit + 1), table.concat(quoted, ' '))
local p = io.popen(cmd)
local msg = p:read('a')
local ok, _, code = p:close()
local dt = (kb.clock_ns() - t0) / 1e9
if not ok then error(string.format('history_scale.lua: kluabench history add failed (exit %s): %s', tostring(code), msg), 0) end
local user, sys = msg:match('cpu (%S+) (%S+)%s*$')
msg = msg:gsub('cpu %S+ %S+%s*$', '')
say('kluabench history add FILE... of %d bundles (%d files, %.0f MiB of JSON Lines) into the %d-bundle database: '
  .. '%.1f s (%.0f bundles/s; %.1f s of CPU); %s', FILE_N, #files, total_bytes, N, dt, FILE_N / dt,
  (tonumber(user) or 0) + (tonumber(sys) or 0), (msg:gsub('\n$', '')))
say('database file: %.1f MiB for %d runs (%.0f bytes a run)', size(DB), N + FILE_N, size(DB) * 2 ^ 20 / (N + FILE_N))
os.execute("rm -rf '" .. dir .. "'")
io.write(table.concat(out, '\n'), '\n')
