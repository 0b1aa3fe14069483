-- The options of the timing modes: their defaults and the rules that
-- bench.check_options applies (one table of options serves every mode).
local bench = require 'kluabench.measure.do_bench'

local M = {}

--- Defaults of the modes (do_bench has bench.DO_BENCH_DEFAULTS instead).
M.DEFAULTS = {
  warmup_ms = 10,        -- host time spent warming up, at least warmup_min calls
  warmup_min = 3,
  hold = 'auto',         -- spin before each sample: 'auto', false, or ns
  hold_min_ns = 20000,   -- auto hold: 4 x enqueue time + 20 us, within [min, max]
  hold_max_ns = 20000000,
  flush_factor = 2,      -- cold: flush this many times the L2
  batch = 'auto',        -- hot: calls per sample; auto: enough for batch_ms of device time
  batch_ms = 0.2,
  batch_max = 1000,
  rotate = 'auto',       -- graph: input sets; auto: enough to cover margin x L2
  margin = 2,            -- graph: bytes touched between two uses of a set >= margin x L2
  launches = 'auto',     -- graph: launches per graph; auto: a multiple of rotate >= 20
  max_sets = 4096,
  quantiles = bench.QUANTILES,
  clocks = true,         -- NVML monitor (inert where there is no NVML)
  event_pairs = 64,      -- cold: empty event intervals timed to calibrate (0: none)
  kernel_trace = false,  -- cold: trace fn's kernels per sample (kb.trace)
}

--- The options of measure.run, measure.session and measure.protocol, and
-- their rules (bench.check_options): the modes' (DEFAULTS) and those of
-- do_bench, so that one table of options serves every mode; an unknown
-- name or a value out of range is an error naming it.
local NS_MAX = 1e10 -- 10 s: any hold or spin beyond is a typo
local count = function(lo, hi, auto)
  return { kind = 'number', min = lo, max = hi, integer = true, one_of = auto and { 'auto' } or nil }
end
M.OPTIONS = {
  warmup_ms = { kind = 'number', min = 0, max = bench.MAX_MS },
  warmup_min = count(1, 1e6),
  hold = { kind = 'number', min = 0, max = NS_MAX, one_of = { 'auto', false } },
  hold_min_ns = { kind = 'number', min = 0, max = NS_MAX },
  hold_max_ns = { kind = 'number', min = 0, max = NS_MAX },
  flush_factor = { kind = 'number', min = 0, max = 1000 },
  batch = count(1, 1e7, true),
  batch_ms = { kind = 'number', min = 0, above = true, max = bench.MAX_MS },
  batch_max = count(1, 1e7),
  rotate = count(1, 1e6, true),
  margin = { kind = 'number', min = 1, max = 1000 },
  launches = count(1, 1e6, true),
  max_sets = count(1, 1e6),
  quantiles = { kind = 'table' },
  clocks = { kind = 'boolean' },
  event_pairs = count(0, 1e6),
  kernel_trace = { kind = 'boolean' },
  stop = { kind = 'any' }, -- stopping.from checks it
  l2_bytes = { kind = 'number', min = 0, above = true, max = 2 ^ 40 },
  sets = { kind = 'table' },
  make_set = { kind = 'function' },
  set_bytes = { kind = 'number', min = 0, above = true, max = 2 ^ 50 },
  allow_warm = { kind = 'boolean' },
  name = { kind = 'string' },
  nvml_device = { kind = 'any' }, -- an index or a UUID: clocks.lua checks it
  recovery_ms = { kind = 'number', min = 0, max = bench.MAX_MS },
  max_drops = count(0, 1e6),
  drop_throttled = { kind = 'boolean' },
  keep_graph = { kind = 'boolean' },
}
for k, rule in pairs(bench.DO_BENCH_OPTIONS) do
  if k ~= 'device' and M.OPTIONS[k] == nil then M.OPTIONS[k] = rule end
end

-- opts[k], or its default.
function M.get(opts, k)
  local v = opts[k]
  if v == nil then return M.DEFAULTS[k] end
  return v
end

return M
