--- Throughput ceilings and their arithmetic (gbps, percent, the roofline floor); the copy bandwidth and the
-- between-session noise cached per device in cache_dir()/ceilings.json (docs/MEASUREMENT.md).
local core = require 'kluabench.core'
local json = require 'kluabench.util.json'
local files = require 'kluabench.util.files'
local args = require 'kluabench.util.args'

local M = {}

M.FILE, M.VERSION = 'ceilings.json', 1

--- How much a copy ceiling moves between measurements, relative (five on H200s spanned 1 %).
M.CEILING_SPREAD = 0.01

--- 10^9 bytes per second of moving bytes in ms.
-- @signature ceilings.gbps(bytes, ms) -> GB/s
-- @example print(ceilings.gbps(1e9, 1)) --> 1000.0
function M.gbps(bytes, ms)
  args.check('ceilings.gbps', 1, bytes, 'number', 'bytes')
  args.check('ceilings.gbps', 2, ms, 'number', 'milliseconds')
  if ms <= 0 then return nil end
  return bytes / (ms * 1e6)
end

--- TFLOP/s of flops in ms.
-- @signature ceilings.tflops(flops, ms) -> TFLOP/s
-- @example print(ceilings.tflops(1e12, 1000))
function M.tflops(flops, ms)
  args.check('ceilings.tflops', 1, flops, 'number', 'flops')
  args.check('ceilings.tflops', 2, ms, 'number', 'milliseconds')
  if ms <= 0 then return nil end
  return flops / (ms * 1e9)
end

--- x as a percentage of ceiling (nil when either is missing or ceiling <= 0).
-- @signature ceilings.percent(x, ceiling) -> number | nil
-- @example print(ceilings.percent(3000, 4000)) --> 75.0
function M.percent(x, ceiling)
  if type(x) ~= 'number' or type(ceiling) ~= 'number' or ceiling <= 0 then return nil end
  return 100 * x / ceiling
end

--- The roofline floor max(bytes / ceil.copy_gbps, flops / ceil.tflops) and its bound ("memory" | "compute"), or nil.
-- @signature ceilings.floor_ms(bytes, flops, ceil) -> ms, "memory" | "compute"
-- @example print(ceilings.floor_ms(1e9, nil, {copy_gbps = 4000}))
function M.floor_ms(bytes, flops, ceil)
  args.check('ceilings.floor_ms', 1, bytes, 'number|nil', 'bytes')
  args.check('ceilings.floor_ms', 2, flops, 'number|nil', 'flops')
  args.check('ceilings.floor_ms', 3, ceil, 'table|nil', 'ceiling entry')
  ceil = ceil or {}
  local mem = (bytes and ceil.copy_gbps and ceil.copy_gbps > 0) and bytes / (ceil.copy_gbps * 1e6) or nil
  local comp = (flops and ceil.tflops and ceil.tflops > 0) and flops / (ceil.tflops * 1e9) or nil
  if mem and comp and comp > mem then return comp, 'compute' end
  if mem then return mem, 'memory' end
  if comp then return comp, 'compute' end
  return nil
end

--- A point's throughput as a record carries it: {gbps, percentOfCopy, floorMs, boundBy, percentOfFloor}, as apply.
-- @signature ceilings.throughput(bytes, flops, ms, ceil) -> table
-- @example print(ceilings.throughput(1e9, nil, 0.5, {copy_gbps = 4000}).percentOfCopy) --> 50.0
function M.throughput(bytes, flops, ms, ceil)
  args.check('ceilings.throughput', 1, bytes, 'number|nil', 'bytes')
  args.check('ceilings.throughput', 2, flops, 'number|nil', 'flops')
  args.check('ceilings.throughput', 3, ms, 'number', 'milliseconds')
  args.check('ceilings.throughput', 4, ceil, 'table|nil', 'ceiling entry')
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

--- $KLUABENCH_CACHE, else $XDG_CACHE_HOME/kluabench, else ~/.cache/kluabench.
-- @signature ceilings.cache_dir() -> path
-- @example print(ceilings.cache_dir())
function M.cache_dir()
  local d = os.getenv('KLUABENCH_CACHE')
  if d and d ~= '' then return d end
  local xdg = os.getenv('XDG_CACHE_HOME')
  if xdg and xdg ~= '' then return xdg .. '/kluabench' end
  return (os.getenv('HOME') or '.') .. '/.cache/kluabench'
end

--- The cache file: cache_dir()/ceilings.json.
-- @signature ceilings.cache_path() -> path
-- @example print(ceilings.cache_path())
function M.cache_path() return M.cache_dir() .. '/' .. M.FILE end

--- The key of a device in the cache: backend, name, memory and L2 size.
-- @signature ceilings.device_key(info) -> text
-- @example print(ceilings.device_key(kb.device_info()))
function M.device_key(info)
  args.check('ceilings.device_key', 1, info, 'table', 'device info (kb.device_info())')
  return string.format('%s|%s|%s|%s', tostring(info.backend or '?'), tostring(info.name or '?'),
    tostring(info.memory_bytes or 0), tostring(info.l2_bytes or 0))
end

--- The decoded cache {version, devices}; an empty one when the file is missing.
-- @signature ceilings.load_cache([path]) -> cache | nil, message
-- @example local c = ceilings.load_cache()
function M.load_cache(path)
  args.check('ceilings.load_cache', 1, path, 'string|nil', 'cache file path')
  path = path or M.cache_path()
  local text = files.read_file(path)
  if not text then return { version = M.VERSION, devices = {} } end
  local v, err = json.decode(text)
  if type(v) ~= 'table' or (next(v) ~= nil and json.table_kind(v) == 'array') then
    return nil, path .. ': ' .. tostring(err or 'not a JSON object')
  end
  if type(v.devices) ~= 'table' then v.devices = {} end
  return v
end

--- The cached entry of a device (a device_info table) as stored: see usable_copy and usable_noise.
-- @signature ceilings.lookup(info [, path]) -> entry | nil
-- @example local e = ceilings.lookup(kb.device_info())
function M.lookup(info, path)
  args.check('ceilings.lookup', 1, info, 'table', 'device info (kb.device_info())')
  args.check('ceilings.lookup', 2, path, 'string|nil', 'cache file path')
  local c = M.load_cache(path)
  local e = c and c.devices[M.device_key(info)] or nil
  return type(e) == 'table' and e or nil
end

local function finite_positive(x) return type(x) == 'number' and x > 0 and x < math.huge end

--- The copy ceiling of a cache entry in GB/s if usable (finite, positive, below 10^6, converged), else nil and why.
-- @signature ceilings.usable_copy(entry) -> gbps | nil, why
-- @example print(ceilings.usable_copy({copy_gbps = 4000, converged = false}))
function M.usable_copy(entry)
  if type(entry) ~= 'table' then return nil, 'no cached copy ceiling' end
  local g = entry.copy_gbps
  if not finite_positive(g) or g >= 1e6 then
    return nil, 'the cached copy ceiling is not a finite positive number of GB/s (' .. tostring(g) .. ')'
  end
  if entry.converged == false then
    return nil, string.format('the cached copy ceiling (%.4g GB/s) did not converge', g)
  end
  return g
end

--- The noise figure of a cache entry if usable (sessionNoise.scales: {ms > 0, sd in [0, 1)}), else nil and why.
-- @signature ceilings.usable_noise(entry) -> figure | nil, why
-- @example print(ceilings.usable_noise({sessionNoise = {scales = {{ms = 0.01, sd = 0.02}}}}))
function M.usable_noise(entry)
  local n = type(entry) == 'table' and entry.sessionNoise or nil
  if type(n) ~= 'table' or type(n.scales) ~= 'table' or #n.scales == 0 then
    return nil, 'no between-session noise figure for this device'
  end
  for i, sc in ipairs(n.scales) do
    if type(sc) ~= 'table' or not finite_positive(sc.ms) or type(sc.sd) ~= 'number'
        or not (sc.sd >= 0 and sc.sd < 1) then
      return nil, string.format('the cached noise figure is malformed (scale %d)', i)
    end
  end
  return n
end

--- The between-session sd of log median at a median of ms (each scale's sdUpper, else sd, interpolated in log(ms))
-- and the degrees of freedom of the nearest scale (or nil).
-- @signature ceilings.noise_at(figure, ms) -> sd, df
-- @example print(ceilings.noise_at({scales = {{ms = 0.01, sd = 0.02, df = 4}, {ms = 1, sd = 0.004, df = 4}}}, 0.1)) --> 0.012	4
function M.noise_at(figure, ms)
  args.check('ceilings.noise_at', 1, figure, 'table', 'noise figure')
  args.check('ceilings.noise_at', 2, ms, 'number', 'milliseconds')
  local sc = {}
  for i, x in ipairs(figure.scales) do
    local up = x.sdUpper
    sc[i] = { ms = x.ms, sd = (type(up) == 'number' and up >= x.sd and up < 1) and up or x.sd,
      df = math.type(x.df) == 'integer' and x.df or nil }
  end
  table.sort(sc, function(a, b) return a.ms < b.ms end)
  if not finite_positive(ms) or ms <= sc[1].ms then return sc[1].sd, sc[1].df end
  if ms >= sc[#sc].ms then return sc[#sc].sd, sc[#sc].df end
  for i = 2, #sc do
    if ms <= sc[i].ms then
      local a, b = sc[i - 1], sc[i]
      local t = (math.log(ms) - math.log(a.ms)) / (math.log(b.ms) - math.log(a.ms))
      return a.sd + t * (b.sd - a.sd), (t < 0.5 and a or b).df
    end
  end
  return sc[#sc].sd, sc[#sc].df
end

--- A cache entry's noise figure for a kernel (sessionNoise.kernels[kernel], else the device's) and its scope, or nil.
-- @signature ceilings.noise_of(entry [, kernel]) -> figure, scope | nil
-- @example print(ceilings.noise_of({sessionNoise = {scales = {{ms = 0.01, sd = 0.02}}}}, "llama4_rope"))
function M.noise_of(entry, kernel)
  local n = type(entry) == 'table' and entry.sessionNoise or nil
  if type(n) ~= 'table' then return nil end
  local k = kernel and type(n.kernels) == 'table' and n.kernels[kernel] or nil
  if k and M.usable_noise { sessionNoise = k } then return k, 'kernel' end
  if M.usable_noise(entry) then return n, 'device' end
  return nil
end

--- How far a kernel may beat a copy measured at its level (an in-place kernel skips a copy's write-allocate).
M.MARGIN = 2
--- Bytes a CPU core moves per clock at most (three 64-byte loads, two stores), and a clock no CPU sustains.
M.CPU_BYTES_PER_CLOCK, M.CPU_MAX_GHZ = 320, 6.5
--- Bytes an SM's L1 moves per clock at most (128 of loads, 128 of stores).
M.SM_BYTES_PER_CLOCK = 256

local function read_line(path)
  local f = io.open(path, 'r')
  if not f then return nil end
  local line = f:read('l')
  f:close()
  return line
end

-- The data caches of cpu0 from sysfs, smallest first: {name, bytes (a private cache counts once per core)}.
local function cpu_caches(cores)
  local out = {}
  for i = 0, 9 do
    local dir = '/sys/devices/system/cpu/cpu0/cache/index' .. i .. '/'
    local level, kind, size = read_line(dir .. 'level'), read_line(dir .. 'type'), read_line(dir .. 'size')
    if not level then break end
    local n, unit = (size or ''):match('^(%d+)([KMG]?)$')
    if kind ~= 'Instruction' and n then
      local sharing = 0
      for a, b in (read_line(dir .. 'shared_cpu_list') or '0'):gmatch('(%d+)%-?(%d*)') do
        sharing = sharing + (b ~= '' and tonumber(b) - tonumber(a) + 1 or 1)
      end
      local bytes = tonumber(n) * ({ K = 1 << 10, M = 1 << 20, G = 1 << 30 })[unit ~= '' and unit or 'K']
      out[#out + 1] = { name = 'L' .. level, bytes = bytes * math.max(1, cores // math.max(1, sharing)),
        per_thread = bytes }
    end
  end
  table.sort(out, function(a, b) return a.bytes < b.bytes end)
  return out
end

--- The levels of a device's memory, smallest first, {name, bytes, gbps (the fastest any kernel moves a working set
-- that fits there), source, per_thread}: measured or from the specs (docs/MEASUREMENT.md's table).
-- @signature ceilings.levels(info [, entry]) -> {{name, bytes, gbps, source}, ...}
-- @example for _, l in ipairs(ceilings.levels(kb.device_info())) do print(l.name, l.bytes, l.gbps, l.source) end
function M.levels(info, entry)
  args.check('ceilings.levels', 1, info, 'table', 'device info (kb.device_info())')
  local measured = {}
  for _, l in ipairs(type(entry) == 'table' and type(entry.levels) == 'table' and entry.levels or {}) do
    if type(l) == 'table' and type(l.name) == 'string' and finite_positive(l.copy_gbps) then measured[l.name] = l end
  end
  local cores = math.max(1, math.tointeger(info.cores) or 1)
  local levels, top, top_source
  if info.backend == 'cuda' then
    top = (info.sm_count or 0) * M.SM_BYTES_PER_CLOCK * (info.sm_clock_khz or 0) / 1e6
    top_source = "the SMs' L1 bandwidth from the specs"
    levels = { { name = 'L2', bytes = info.l2_bytes } }
    local peak = (info.mem_clock_khz or 0) * 2 * (info.mem_bus_bits or 0) / 8 / 1e6
    if peak > 0 then levels[2] = { name = 'device memory', gbps = peak, source = 'the memory clock and bus width' } end
  else
    top = cores * M.CPU_BYTES_PER_CLOCK * M.CPU_MAX_GHZ
    top_source = "the cores' load and store width at the fastest clock any CPU runs"
    levels = cpu_caches(cores)
    if #levels == 0 and finite_positive(info.l2_bytes) then
      levels = { { name = 'last-level cache', bytes = info.l2_bytes } }
    end
  end
  if not (levels[#levels] and levels[#levels].name == 'device memory') then
    levels[#levels + 1] = { name = 'device memory' }
  end
  local memory, copy = levels[#levels], M.usable_copy(entry)
  if copy and not memory.gbps then memory.gbps, memory.source = M.MARGIN * copy, 'the measured copy ceiling' end
  for i = #levels, 1, -1 do
    local l, m = levels[i], measured[levels[i].name]
    if m and l.bytes then
      local idle = math.tointeger(m.threads) and math.max(1, cores // m.threads) or 1
      l.gbps, l.source = M.MARGIN * m.copy_gbps * idle, 'its measured copy bandwidth'
    end
    if not l.gbps and top > 0 then l.gbps, l.source = top, top_source end
    local below = levels[i + 1]
    if below and below.gbps and not (l.gbps and l.gbps >= below.gbps) then l.gbps, l.source = below.gbps, below.source end
  end
  return levels
end

--- The level `bytes` moved (read + written) fit in: the first that holds half of them (an in-place working set).
-- @signature ceilings.level_for(levels, bytes) -> level
-- @example print(ceilings.level_for(ceilings.levels(kb.device_info()), 2^20).name)
function M.level_for(levels, bytes)
  args.check('ceilings.level_for', 1, levels, 'table', 'list of levels (ceilings.levels)')
  args.check('ceilings.level_for', 2, bytes, 'number', 'bytes')
  for _, l in ipairs(levels) do if not l.bytes or l.bytes >= bytes / 2 then return l end end
  return levels[#levels]
end

--- ceilings.throughput against the default device's cached copy ceiling (else a `note` says how to get one; never
-- measures). opts.path: another cache file.
-- @signature ceilings.cached_throughput(bytes, flops, ms [, opts]) -> table
-- @example print(ceilings.cached_throughput(2 * 2^21, nil, 0.12).gbps) -- 2 MiB read and written in 0.12 ms
function M.cached_throughput(bytes, flops, ms, opts)
  args.check('ceilings.cached_throughput', 1, bytes, 'number|nil', 'bytes')
  args.check('ceilings.cached_throughput', 2, flops, 'number|nil', 'flops')
  args.check('ceilings.cached_throughput', 3, ms, 'number', 'milliseconds')
  args.check('ceilings.cached_throughput', 4, opts, 'table|nil', 'table of options')
  opts = opts or {}
  local info = core.device_info()
  local okl, e = pcall(M.lookup, info, opts.path)
  local entry = okl and e or nil
  local gbps, why = M.usable_copy(entry)
  local t = M.throughput(bytes, flops, ms, gbps and { copy_gbps = gbps } or nil)
  if gbps then
    t.copyCeilingGbps = gbps
    t.copyCeiling = { gbps = gbps, measuredAt = type(entry.measured_at) == 'string' and entry.measured_at or nil,
      converged = entry.converged,
      spread = (type(entry.spread) == 'number' and entry.spread >= 0 and entry.spread < 1) and entry.spread or nil }
  elseif entry then
    t.note = why .. ': not used; re-measure with kluabench scripts/ceilings.lua --force'
  else
    t.note = 'no cached copy ceiling for this device: run kluabench scripts/ceilings.lua'
  end
  if bytes then
    local lv = M.level_for(M.levels(info, entry), bytes)
    t.plausibility = { level = lv.name, capacityBytes = lv.bytes, boundGbps = lv.gbps, source = lv.source }
  end
  return t
end

--- The between-session noise figure measured on this device (for opts.kernel where measured) at a median of ms;
-- nil where none was (compare then applies its defaults). opts: kernel, path (another cache file).
-- @signature ceilings.cached_noise(ms [, opts]) -> {sd, df, scope, measuredAt, sessions} | nil
-- @example print(ceilings.cached_noise(0.01, {kernel = "llama4_rope"}))
function M.cached_noise(ms, opts)
  args.check('ceilings.cached_noise', 1, ms, 'number', 'milliseconds')
  args.check('ceilings.cached_noise', 2, opts, 'table|nil', 'table of options')
  opts = opts or {}
  local okl, e = pcall(M.lookup, core.device_info(), opts.path)
  local fig, scope = M.noise_of(okl and e or nil, opts.kernel)
  if not fig then return nil end
  local sd, df = M.noise_at(fig, ms)
  local top = e.sessionNoise
  local function text(v) return type(v) == 'string' and v or nil end
  local function int(v) return math.type(v) == 'integer' and v or nil end
  return { sd = sd, df = df, scope = scope, measuredAt = text(fig.measuredAt) or text(top.measuredAt),
    sessions = int(fig.sessions) or int(top.sessions) }
end

return M
