--- Calibration: measuring the ceilings and noise figures that measure/ceilings.lua reads from the
-- cache, and storing them (scripts/ceilings.lua and scripts/run_noise.lua drive it).
local core = require 'kluabench.core'
local args = require 'kluabench.util.args'
local json = require 'kluabench.util.json'
local files = require 'kluabench.util.files'
local stats = require 'kluabench.stats'
local measure = require 'kluabench.measure'
local stopping = require 'kluabench.measure.stopping'
local ceilings = require 'kluabench.measure.ceilings'

local M = {}

local function finite_positive(x) return type(x) == 'number' and x > 0 and x < math.huge end

--- Stores an entry for a device in the cache file (atomic rewrite).
--
-- Returns true or nil, message.
--
-- @signature calibrate.store(info, entry [, path]) -> true | nil, message
-- @example
--   local path = os.tmpname() -- without it: ~/.cache/kluabench/ceilings.json
--   calibrate.store(kb.device_info(), {copy_gbps = 3900}, path)
--   os.remove(path)
function M.store(info, entry, path)
  args.check('calibrate.store', 1, info, 'table', 'device info (kb.device_info())')
  args.check('calibrate.store', 2, entry, 'table', 'ceiling entry')
  args.check('calibrate.store', 3, path, 'string|nil', 'cache file path')
  path = path or ceilings.cache_path()
  local dir = path:match('^(.*)/[^/]*$')
  if dir then
    local ok, err = files.mkdir_p(dir)
    if not ok then return nil, err end
  end
  local c, err = ceilings.load_cache(path)
  if not c then return nil, err end
  c.version = ceilings.VERSION
  local key = ceilings.device_key(info)
  local old = c.devices[key]
  -- the noise figure is measured apart from the ceiling: a new ceiling keeps it
  if type(old) == 'table' and entry.sessionNoise == nil then entry.sessionNoise = old.sessionNoise end
  c.devices[key] = entry
  local text, eerr = json.encode_pretty(c)
  if not text then return nil, path .. ': ' .. tostring(eerr) end
  return files.write_atomic(path, text .. '\n')
end

--- Stores a noise figure in the device's cache entry, beside its ceiling (scripts/run_noise.lua).
--
-- Returns true or nil, message.
--
-- @signature calibrate.store_noise(info, figure [, path]) -> true | nil, message
-- @example
--   local figure = calibrate.noise_figure({{ms = 0.007, sd = 0.015, df = 3}, {ms = 0.008, sd = 0.02, df = 3}})
--   local path = os.tmpname() -- without it: ~/.cache/kluabench/ceilings.json
--   calibrate.store_noise(kb.device_info(), figure, path)
--   os.remove(path)
function M.store_noise(info, figure, path)
  args.check('calibrate.store_noise', 1, info, 'table', 'device info (kb.device_info())')
  args.check('calibrate.store_noise', 2, figure, 'table', 'noise figure')
  args.check('calibrate.store_noise', 3, path, 'string|nil', 'cache file path')
  local c, err = ceilings.load_cache(path)
  if not c then return nil, err end
  local e = c.devices[ceilings.device_key(info)]
  e = type(e) == 'table' and e or {}
  e.sessionNoise = figure
  return M.store(info, e, path)
end

-- sqrt(df / q) with q the 10 % quantile of chi-square(df) (Wilson and
-- Hilferty's approximation): an sd estimated with df degrees of freedom
-- times this is a one-sided 90 % upper confidence bound of the true sd.
local function chi2_factor(df)
  local z = stats.normal_quantile(0.10)
  local c = 2 / (9 * df)
  local q = df * (1 - c + z * math.sqrt(c)) ^ 3
  if q <= 0 then return 10 end
  return math.sqrt(df / q)
end

--- A noise figure from per-point spreads {ms, sd, df} (compare.session_spread): pooled per
-- half-decade of time, with a 90 % upper bound of each sd.
--
-- Points are binned by half-decades of ms and pooled in each bin (sqrt(sum df sd^2 / sum df)), ms
-- the bin's geometric mean; sdUpper is the one-sided 90 % upper confidence bound of that sd (so
-- that a figure from few sessions errs wide; noise_at uses it). Returns {scales = {{ms, sd,
-- sdUpper, points, df}} ascending in ms, points, method} (add measuredAt, sessions, device before
-- storing it), or nil, why.
--
-- @signature calibrate.noise_figure(points) -> figure | nil, why
-- @example
--   local f = calibrate.noise_figure({{ms = 0.007, sd = 0.015, df = 3}, {ms = 0.008, sd = 0.02, df = 3}})
--   print(f.scales[1].sd, f.scales[1].sdUpper)
function M.noise_figure(points)
  args.check('calibrate.noise_figure', 1, points, 'table', 'list of points')
  local bins, order = {}, {}
  for _, p in ipairs(points or {}) do
    if finite_positive(p.ms) and type(p.sd) == 'number' and p.sd >= 0 and p.sd < 1
        and math.type(p.df) == 'integer' and p.df >= 1 then
      local k = math.floor(2 * math.log(p.ms, 10))
      local b = bins[k]
      if not b then
        b = { ss = 0, df = 0, logms = 0, n = 0 }
        bins[k] = b
        order[#order + 1] = k
      end
      b.ss, b.df = b.ss + p.df * p.sd ^ 2, b.df + p.df
      b.logms, b.n = b.logms + math.log(p.ms), b.n + 1
    end
  end
  if #order == 0 then return nil, 'no point was measured in two sessions or more' end
  table.sort(order)
  local scales, total = {}, 0
  for i, k in ipairs(order) do
    local b = bins[k]
    local sd = math.sqrt(b.ss / b.df)
    scales[i] = { ms = math.exp(b.logms / b.n), sd = sd, sdUpper = math.min(0.99, sd * chi2_factor(b.df)),
      points = b.n, df = b.df }
    total = total + b.n
  end
  return { scales = scales, points = total,
    method = 'sd of log(session median) over sessions of each point, pooled per half-decade of time' }
end

---------------------------------------------------------------------------
-- Measuring
---------------------------------------------------------------------------

-- The time of a measurement, written as records write times (names.utc and
-- names.iso8601 of record.now(): ISO-8601 UTC, milliseconds rounded); this
-- layer is below record/, so it formats the time itself.
local function utc_now(kb)
  local epoch = type(kb.time_ns) == 'function' and kb.time_ns() / 1e9 or os.time()
  local sec = math.floor(epoch)
  local ms = math.floor((epoch - sec) * 1000 + 0.5)
  if ms >= 1000 then sec, ms = sec + 1, ms - 1000 end
  return os.date('!%Y-%m-%dT%H:%M:%S', sec) .. string.format('.%03dZ', ms)
end

--- Measures the copy bandwidth (bytes read + written) of a large copy in the cold mode.
--
-- opts: bytes (one buffer; default max(8 x L2, 1 GiB) on cuda, 64 MiB on cpu), stop, kb.
--
-- Returns the cache entry {copy_gbps, bytes_per_copy (read + written), buffer_bytes, median_ms,
-- samples, rse, spread (the farther of p10 and p90 from the median, relative: what
-- check.plausible allows beyond the ceiling, at least check.CEILING_SPREAD), device, backend,
-- measured_at, method}.
--
-- @signature calibrate.measure_copy([opts]) -> entry
-- @example
--   local e = calibrate.measure_copy{bytes = 16 << 20}
--   print(e.copy_gbps .. " GB/s")
function M.measure_copy(opts)
  args.check('calibrate.measure_copy', 1, opts, 'table|nil', 'table of options')
  opts = opts or {}
  local kb = opts.kb or core
  local info = kb.device_info()
  local bytes = opts.bytes
  if not bytes then
    if kb.backend() == 'cpu' then bytes = 64 << 20
    else bytes = math.max(8 * (info.l2_bytes or 0), 1 << 30) end
  end
  local n = bytes // 4
  local src = kb.empty({ n }, 'f32')
  src:fill_(1.5)
  local dst = kb.empty({ n }, 'f32')
  -- a CPU shared with other work rarely gets its median within 0.5 %: 2 % there
  local stop = opts.stop or stopping.rse_median { target = kb.backend() == 'cpu' and 0.02 or 0.005, min_samples = 30,
    timeout_ms = 20000 }
  local r = measure.run('cold', function() dst:copy_(src) end, { stop = stop })
  src:free()
  dst:free()
  local moved = 2 * n * 4
  local med = r.summary.median
  -- the ceiling's own spread (relative): the larger distance of its p10 and p90 from the median
  local q = stats.quantiles(r.samples, { 0.1, 0.9 })
  local spread = (med > 0 and q[1] and q[2]) and math.max(med - q[1], q[2] - med) / med or nil
  return {
    spread = spread,
    copy_gbps = ceilings.gbps(moved, med),
    bytes_per_copy = moved,
    buffer_bytes = n * 4,
    median_ms = med,
    samples = #r.samples,
    rse = r.stop.rseMedian,
    converged = r.stop.converged,
    device = info.name,
    backend = kb.backend(),
    measured_at = utc_now(kb),
    method = 'median of cold-mode device-to-device copies, bytes read + written',
  }
end

--- Measures the copy bandwidth within each cache level of the device (ceilings.levels): hot copies of two buffers
-- of a quarter of the level's bytes per thread each, the fast end (p90 of GB/s) of 30 samples or more.
--
-- Returns the list the cache keeps as entry.levels: {name, bytes (one buffer), copy_gbps, threads (1 on a CPU:
-- such copies run on one core)}.
--
-- @signature calibrate.measure_levels([opts]) -> {{name, bytes, copy_gbps, threads}, ...}
-- @example
--   for _, l in ipairs(calibrate.measure_levels()) do print(l.name, l.copy_gbps) end
function M.measure_levels(opts)
  args.check('calibrate.measure_levels', 1, opts, 'table|nil', 'table of options')
  opts = opts or {}
  local kb = opts.kb or core
  local info = kb.device_info()
  local out = {}
  for _, l in ipairs(ceilings.levels(info)) do
    if l.bytes then
      local n = math.max(1024, (l.per_thread or l.bytes) // 16) -- f32 elements: a quarter of the bytes per buffer
      local src, dst = kb.empty({ n }, 'f32'), kb.empty({ n }, 'f32')
      src:fill_(1.5)
      local stop = opts.stop or stopping.rse_median { target = 0.02, min_samples = 30, timeout_ms = 3000 }
      local r = measure.run('hot', function() dst:copy_(src) end, { stop = stop })
      src:free()
      dst:free()
      local fast = stats.quantiles(r.samples, { 0.1 })[1]
      out[#out + 1] = { name = l.name, bytes = n * 4, copy_gbps = ceilings.gbps(2 * n * 4, fast),
        threads = kb.backend() == 'cpu' and 1 or nil }
    end
  end
  return out
end

--- The device's copy bandwidth: from the cache, or measured and stored (opts.force measures again).
--
-- Returns entry, from_cache.
--
-- @signature calibrate.copy_ceiling([opts]) -> entry, from_cache
-- @example
--   local cache = os.tmpname() -- default: ~/.cache/kluabench/ceilings.json, which tables then read
--   local c = calibrate.copy_ceiling{path = cache, bytes = 16 << 20}
--   print(c.copy_gbps .. " GB/s")
--   os.remove(cache)
function M.copy_ceiling(opts)
  args.check('calibrate.copy_ceiling', 1, opts, 'table|nil', 'table of options')
  opts = opts or {}
  local kb = opts.kb or core
  local info = kb.device_info()
  if not opts.force then
    local e = ceilings.lookup(info, opts.path)
    if ceilings.usable_copy(e) then return e, true end
  end
  local e = M.measure_copy(opts)
  e.levels = M.measure_levels(opts)
  local ok, err = M.store(info, e, opts.path)
  if not ok then io.stderr:write('kluabench: cannot cache the ceiling: ', tostring(err), '\n') end
  return e, false
end

return M
