-- Measures this device's between-session noise (how far a point's median moves from one session to the next) and caches it for compare.
--
--   kluabench scripts/run_noise.lua [--sessions K] [--mode cold|hot|graph]
--       [--kib LIST] [--cache PATH] [--json] [--dry-run]
--   kluabench scripts/run_noise.lua --from FILE [--from FILE ...] [...]
--
-- Measuring: K sessions (default 5), interleaved; in each, every copy size
-- of the list (KiB; default 64 KiB to 1 GiB on cuda, 64 KiB to 64 MiB on
-- cpu, by factors of 8) is copied device to device with fresh buffers and
-- timed in one measurement mode (default cold) until the rse of the median
-- is 0.5 %. With --from, the sessions are record files of one sweep run
-- several times (or run once with --runs N): every point found in two or
-- more sessions counts. Either way the spread of log(session median) is
-- pooled per half-decade of time (calibrate.noise_figure) and stored beside
-- the copy ceiling in the cache ($KLUABENCH_CACHE/ceilings.json), with the
-- date, the number of sessions and the method, for the whole device and per
-- kernel (when the points name one). `kluabench compare` widens the interval
-- of a side measured in fewer than 3 sessions by it (the kernel's own figure
-- first; with 3 sessions a side their own spread decides); records made after
-- say which figure was in force (the session_noise measurement, and
-- sessionNoise in their evidence).
local kb = require 'kluabench'
local ceilings = require 'kluabench.measure.ceilings'
local compare = require 'kluabench.compare'
local json = require 'kluabench.util.json'
local cli = require 'kluabench.commands'
local calibrate = require 'kluabench.measure.calibrate'

local USAGE = 'usage: kluabench scripts/run_noise.lua [--sessions K] [--mode cold|hot|graph] '
  .. '[--kib LIST] [--from FILE]... [--cache PATH] [--json] [--dry-run]\n'

local opts, fail = cli.script_options('run_noise.lua', USAGE, arg, { sessions = 'value', mode = 'value', kib = 'value',
  from = 'list', cache = 'value', json = 'flag', ['dry-run'] = 'flag' })
local K = math.tointeger(tonumber(opts.sessions or '5'))
if not K or K < 2 or K > 1000 then fail("--sessions must be an integer in [2, 1000], got '%s'", opts.sessions) end
local mode = opts.mode or 'cold'
if mode ~= 'cold' and mode ~= 'hot' and mode ~= 'graph' then
  fail("--mode must be cold, hot or graph, got '%s'", mode)
end

-- The bundles of K sessions of copies: one bundle-like table per (session,
-- size), enough for compare.session_spread (digest, provider, samples).
local function measure_sessions()
  local measure = require 'kluabench.measure'
  local stopping = require 'kluabench.measure.stopping'
  local sizes = {}
  if opts.kib then
    for v in opts.kib:gmatch('[^,]+') do
      local n = math.tointeger(tonumber(v))
      if not n or n <= 0 then fail("--kib must list positive integers, got '%s'", v) end
      sizes[#sizes + 1] = n << 10
    end
  else
    local top = kb.backend() == 'cuda' and (1 << 30) or (64 << 20)
    local b = 64 << 10
    while b <= top do sizes[#sizes + 1] = b; b = b * 8 end
  end
  local bundles = {}
  for s = 1, K do
    for _, bytes in ipairs(sizes) do
      local n = bytes // 4
      local src, dst = kb.empty({ n }, 'f32'), kb.empty({ n }, 'f32')
      src:fill_(1.5)
      local r = measure.run(mode, function() dst:copy_(src) end,
        { stop = stopping.rse_median { target = 0.005, min_samples = 30, timeout_ms = 10000 } })
      src:free()
      dst:free()
      local ns = {}
      for i, ms in ipairs(r.samples) do ns[i] = ms * 1e6 end
      -- what compare needs of a point (its digest, kernel, mode, provider, case) and the samples
      local case = 'kib' .. (bytes >> 10) .. '-fp32'
      local b = { run = { spec = { workloadDigest = 'sha256:' .. kb.sha256('copy ' .. bytes),
        sourceNative = { source = 'kluabench', benchmark = 'copy/' .. mode,
          externalId = 'copy/' .. mode .. '/copy_/' .. kb.names.kebab(kb.device_info().name) .. '/' .. case
            .. '/session-' .. s } } },
        workload = { spec = { axes = { kib = bytes >> 10 } } } }
      kb.evidence.attach(b, { format = kb.evidence.FORMAT, unit = 'ns', samples = ns, session = { index = s, count = K } })
      bundles[#bundles + 1] = b
      io.stderr:write(string.format('session %d/%d: copy of %d KiB: median %.4f ms (%d samples)\n', s, K,
        bytes >> 10, r.summary.median, #r.samples))
    end
  end
  return bundles, string.format('%s-mode device-to-device copies, %d sizes, fresh buffers each session',
    mode, #sizes)
end

local function bundles_from_files()
  local all = {}
  for _, path in ipairs(opts.from) do
    local bs, err = compare.read(path)
    if not bs then io.stderr:write('run_noise.lua: ', err, '\n') os.exit(1) end
    table.move(bs, 1, #bs, #all + 1, all)
  end
  return all, 'points of ' .. table.concat(opts.from, ', ')
end

local info = kb.device_info()
io.stderr:write(string.format('device: %s (%s)\n', info.name, kb.backend()))
local bundles, source
if opts.from then bundles, source = bundles_from_files() else bundles, source = measure_sessions() end
local spread = compare.session_spread(bundles)
local figure, why = calibrate.noise_figure(spread)
if not figure then io.stderr:write('run_noise.lua: ', why, '\n') os.exit(1) end
-- per kernel too, when the points name one: compare prefers a kernel's own figure (record/noise.lua)
local by_kernel, kernels = {}, {}
for _, p in ipairs(spread) do
  if p.kernel then
    if not by_kernel[p.kernel] then by_kernel[p.kernel] = {}; kernels[#kernels + 1] = p.kernel end
    table.insert(by_kernel[p.kernel], p)
  end
end
table.sort(kernels)
for _, k in ipairs(kernels) do
  local f = calibrate.noise_figure(by_kernel[k])
  if f then
    figure.kernels = figure.kernels or {}
    figure.kernels[k] = f
  end
end
local sessions = 0
for _, p in ipairs(spread) do sessions = math.max(sessions, p.df + 1) end
figure.sessions = sessions
figure.source = source
figure.device = info.name
figure.measuredAt = require('kluabench.record.names').iso8601(require('kluabench.record').now())

if opts.json then
  io.stdout:write(json.encode_pretty(figure), '\n')
else
  local function show(f, what)
    for _, sc in ipairs(f.scales) do
      io.stdout:write(string.format('%-12s %10.4f ms  between-session sd %.2f%% (90 %% upper bound %.2f%%, '
        .. 'used by compare)  %d point(s), %d df\n', what, sc.ms, sc.sd * 100, sc.sdUpper * 100, sc.points, sc.df))
    end
  end
  show(figure, 'device')
  for _, k in ipairs(kernels) do if figure.kernels and figure.kernels[k] then show(figure.kernels[k], k) end end
end
if not opts['dry-run'] then
  local ok, err = calibrate.store_noise(info, figure, opts.cache)
  if not ok then io.stderr:write('run_noise.lua: cannot store the figure: ', tostring(err), '\n') os.exit(1) end
  io.stderr:write('stored in ', opts.cache or ceilings.cache_path(), '\n')
end
