--- Throughput ceilings and the arithmetic around them.
--
-- The one ceiling kluabench measures itself is the device-to-device copy
-- bandwidth: a large copy (several times the L2, so no byte comes from the
-- cache), timed in the `cold` mode, bytes counted as read + written, the
-- median of many samples. It is cached per device in a JSON file, so that
-- records can say "% of the measured copy ceiling" without measuring it
-- every run:
--   $KLUABENCH_CACHE/ceilings.json, else ~/.cache/kluabench/ceilings.json
-- (scripts/ceilings.lua measures and stores it.)
--
-- Helpers: gbps(bytes, ms); percent(x, ceiling); floor_ms(bytes, flops,
-- ceilings) = the roofline floor, max(bytes / bandwidth, flops / rate).
local output = require 'kluabench.report'

local M = {}

M.FILE = 'ceilings.json'
M.VERSION = 1

---------------------------------------------------------------------------
-- Arithmetic
---------------------------------------------------------------------------

--- GB/s (10^9 bytes per second) of moving `bytes` in `ms` milliseconds.
function M.gbps(bytes, ms)
  if type(bytes) ~= 'number' or type(ms) ~= 'number' then
    error("bad arguments to 'gbps' (bytes and ms numbers expected)", 2)
  end
  if ms <= 0 then return nil end
  return bytes / (ms * 1e6)
end

--- TFLOP/s of `flops` in `ms` milliseconds.
function M.tflops(flops, ms)
  if ms <= 0 then return nil end
  return flops / (ms * 1e9)
end

--- x as a percentage of ceiling (nil when either is missing or ceiling <= 0).
function M.percent(x, ceiling)
  if type(x) ~= 'number' or type(ceiling) ~= 'number' or ceiling <= 0 then return nil end
  return 100 * x / ceiling
end

--- The roofline floor of a workload: the least time in which `bytes` can
-- move at ceil.copy_gbps and `flops` can run at ceil.tflops (either may be
-- absent: that term is left out). Returns floor_ms, bound ("memory" or
-- "compute"), or nil when no term applies.
function M.floor_ms(bytes, flops, ceil)
  ceil = ceil or {}
  local mem = (bytes and ceil.copy_gbps and ceil.copy_gbps > 0) and bytes / (ceil.copy_gbps * 1e6) or nil
  local comp = (flops and ceil.tflops and ceil.tflops > 0) and flops / (ceil.tflops * 1e9) or nil
  if mem and comp then
    if comp > mem then return comp, 'compute' end
    return mem, 'memory'
  end
  if mem then return mem, 'memory' end
  if comp then return comp, 'compute' end
  return nil
end

--- What a record carries about one point's throughput: {gbps, percentOfCopy,
-- floorMs, boundBy, percentOfFloor (floor / measured: 100 = at the roof)}.
-- Any field that cannot be computed is absent.
function M.throughput(bytes, flops, ms, ceil)
  local t = {}
  if bytes and ms and ms > 0 then
    t.gbps = M.gbps(bytes, ms)
    if ceil and ceil.copy_gbps then t.percentOfCopy = M.percent(t.gbps, ceil.copy_gbps) end
  end
  if flops and ms and ms > 0 then t.tflops = M.tflops(flops, ms) end
  local f, bound = M.floor_ms(bytes, flops, ceil)
  if f then
    t.floorMs, t.boundBy = f, bound
    if ms and ms > 0 then t.percentOfFloor = 100 * f / ms end
  end
  return t
end

---------------------------------------------------------------------------
-- The cache file
---------------------------------------------------------------------------

--- The directory of the cache: $KLUABENCH_CACHE, else $XDG_CACHE_HOME/kluabench,
-- else ~/.cache/kluabench.
function M.cache_dir()
  local d = os.getenv('KLUABENCH_CACHE')
  if d and d ~= '' then return d end
  local xdg = os.getenv('XDG_CACHE_HOME')
  if xdg and xdg ~= '' then return xdg .. '/kluabench' end
  local home = os.getenv('HOME') or '.'
  return home .. '/.cache/kluabench'
end

function M.cache_path() return M.cache_dir() .. '/' .. M.FILE end

--- The key of a device in the cache: backend, name, memory and L2 size
-- (two cards of one model share a key; that is the intent: the ceiling is a
-- property of the model, and a card far off it is worth noticing).
function M.device_key(info)
  return string.format('%s|%s|%s|%s', tostring(info.backend or '?'), tostring(info.name or '?'),
    tostring(info.memory_bytes or 0), tostring(info.l2_bytes or 0))
end

--- The decoded cache file ({version, devices = {[key] = entry}}), or an
-- empty one when the file is missing; nil, message when it is unreadable.
function M.load_cache(path)
  path = path or M.cache_path()
  local text = output.read_file(path)
  if not text then return { version = M.VERSION, devices = {} } end
  local v, err = output.decode(text)
  if type(v) ~= 'table' then return nil, path .. ': ' .. tostring(err or 'not a JSON object') end
  if type(v.devices) ~= 'table' then v.devices = {} end
  return v
end

--- The cached ceilings of a device (device_info table), or nil.
function M.lookup(info, path)
  local c = M.load_cache(path)
  return c and c.devices[M.device_key(info)] or nil
end

--- Stores entry for the device in the cache file (atomic rewrite).
-- Returns true or nil, message.
function M.store(info, entry, path)
  path = path or M.cache_path()
  local dir = path:match('^(.*)/[^/]*$')
  if dir then
    local ok, err = output.mkdir_p(dir)
    if not ok then return nil, err end
  end
  local c, err = M.load_cache(path)
  if not c then return nil, err end
  c.version = M.VERSION
  c.devices[M.device_key(info)] = entry
  return output.write_atomic(path, output.encode_pretty(c) .. '\n')
end

--- The throughput of a point for its record (ceilings.throughput) against
-- the cached copy ceiling of the default device; never measures (a missing
-- ceiling leaves percentOfCopy and the floor out, and says how to get it).
-- For record.from_result's `execution`: { throughput = ... }.
function M.cached_throughput(bytes, flops, ms, opts)
  opts = opts or {}
  local ok, kb = pcall(require, 'kluabench.core')
  local entry
  if ok and type(kb) == 'table' and kb.device_info then
    entry = M.lookup(kb.device_info(), opts.path)
  end
  local t = M.throughput(bytes, flops, ms, entry and { copy_gbps = entry.copy_gbps } or nil)
  if entry then
    t.copyCeilingGbps = entry.copy_gbps
  else
    t.note = 'no cached copy ceiling for this device: run kluabench scripts/ceilings.lua'
  end
  return t
end

---------------------------------------------------------------------------
-- Measuring
---------------------------------------------------------------------------

--- Measures the copy bandwidth of the default device. opts: bytes (size of
-- one buffer; default max(8 x L2, 1 GiB) on cuda, 64 MiB on cpu), stop
-- (stopping rule; default rse 0.5 % with at least 30 samples), kb (the
-- engine, for tests). Returns the cache entry {copy_gbps, bytes_per_copy
-- (read + written), buffer_bytes, median_ms, samples, rse, device,
-- backend, measured_at, method}.
function M.measure_copy(opts)
  opts = opts or {}
  local kb = opts.kb or require 'kluabench.core'
  local measure = require 'kluabench.measure'
  local stopping = require 'kluabench.measure.stopping'
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
  local stop = opts.stop or stopping.rse_median { target = 0.005, min_samples = 30, timeout_ms = 20000 }
  local r = measure.run('cold', function() dst:copy_(src) end, { stop = stop })
  src:free()
  dst:free()
  local moved = 2 * n * 4
  local med = r.summary.median
  return {
    copy_gbps = M.gbps(moved, med),
    bytes_per_copy = moved,
    buffer_bytes = n * 4,
    median_ms = med,
    samples = #r.samples,
    rse = r.stop.rseMedian,
    converged = r.stop.converged,
    device = info.name,
    backend = kb.backend(),
    measured_at = require('kluabench.record.names').iso8601(require('kluabench.record').now()),
    method = 'median of cold-mode device-to-device copies, bytes read + written',
  }
end

--- The copy ceiling of the default device: from the cache, or measured and
-- stored when absent (or when opts.force). Returns entry, from_cache.
function M.copy_ceiling(opts)
  opts = opts or {}
  local kb = opts.kb or require 'kluabench.core'
  local info = kb.device_info()
  if not opts.force then
    local e = M.lookup(info, opts.path)
    if e and e.copy_gbps then return e, true end
  end
  local e = M.measure_copy(opts)
  local ok, err = M.store(info, e, opts.path)
  if not ok then io.stderr:write('kluabench: cannot cache the ceiling: ', tostring(err), '\n') end
  return e, false
end

return M
