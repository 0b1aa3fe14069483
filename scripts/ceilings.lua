-- Measures the device-to-device copy bandwidth (the memory ceiling) and caches it per device.
--
--   kluabench scripts/ceilings.lua [--force] [--mib N] [--json] [--cache PATH]
--
-- Without --force, a ceiling already in the cache is printed, not measured
-- again. The cache is $KLUABENCH_CACHE/ceilings.json (default
-- ~/.cache/kluabench/ceilings.json); records use it for "% of copy ceiling".
local kb = require 'kluabench'
local ceilings = require 'kluabench.measure.ceilings'
local json = require 'kluabench.util.json'
local calibrate = require 'kluabench.measure.calibrate'

local USAGE = 'usage: kluabench scripts/ceilings.lua [--force] [--mib N] [--json] [--cache PATH]\n'

local opts = {}
local i = 1
while i <= #arg do
  local a = arg[i]
  if a == '--force' then opts.force = true
  elseif a == '--json' then opts.json = true
  elseif a == '--mib' then
    i = i + 1
    local n = math.tointeger(tonumber(arg[i]))
    if not n or n <= 0 then io.stderr:write('ceilings.lua: --mib needs a positive integer\n', USAGE) os.exit(2) end
    opts.bytes = n << 20
  elseif a == '--cache' then
    i = i + 1
    opts.path = arg[i]
    if not opts.path then io.stderr:write('ceilings.lua: --cache needs a path\n', USAGE) os.exit(2) end
  elseif a == '--help' or a == '-h' then io.stdout:write(USAGE) os.exit(0)
  else io.stderr:write("ceilings.lua: unknown option '", a, "'\n", USAGE) os.exit(2) end
  i = i + 1
end

local info = kb.device_info()
io.stderr:write(string.format('device: %s (%s)\n', info.name, kb.backend()))
local entry, cached = calibrate.copy_ceiling(opts)

if opts.json then
  io.stdout:write(json.encode_pretty(entry), '\n')
else
  io.stdout:write(string.format('copy ceiling: %.1f GB/s (%s; median %.4f ms for %.0f MiB read + '
    .. 'written, %d samples)\n', entry.copy_gbps, cached and 'cached' or 'measured now',
    entry.median_ms, entry.bytes_per_copy / 1048576, entry.samples))
  for _, l in ipairs(ceilings.levels(info, entry)) do
    io.stdout:write(string.format('%-14s %10s  at most %.1f GB/s (%s)\n', l.name,
      l.bytes and string.format('%.4g MiB', l.bytes / 1048576) or '', l.gbps or 0 / 0, l.source or 'no bound'))
  end
  io.stdout:write('cache: ', opts.path or ceilings.cache_path(), '\n')
end
