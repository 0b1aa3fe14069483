--- The derived figures a run records in run.spec.measurements[]: one name
-- each, the one list both the writer (record.from_result) and the reader
-- (kluabench.record.point) use. A measurement is {metric, unit, statistic,
-- value}, all tokens but the value (the schema's form).
local M = {}
local args = require 'kluabench.util.args'

--- field -> {metric, unit, statistic, integer}: what a point's field is called in a record.
M.FIELDS = {
  p20_ns = { metric = 'latency', unit = 'ns', statistic = 'p20', integer = true },
  p80_ns = { metric = 'latency', unit = 'ns', statistic = 'p80', integer = true },
  stdev_ns = { metric = 'latency', unit = 'ns', statistic = 'stdev', integer = true },
  gbps = { metric = 'throughput', unit = 'gb_per_s', statistic = 'median' },
  tflops = { metric = 'compute', unit = 'tflop_per_s', statistic = 'median' },
  copy_gbps = { metric = 'copy_ceiling', unit = 'gb_per_s', statistic = 'median' },
  pct_copy = { metric = 'copy_ceiling_share', unit = 'percent', statistic = 'median' },
  floor_ns = { metric = 'roofline_floor', unit = 'ns', statistic = 'model', integer = true },
  pct_floor = { metric = 'roofline_share', unit = 'percent', statistic = 'median' },
  bytes = { metric = 'traffic', unit = 'byte', statistic = 'model', integer = true },
  flops = { metric = 'work', unit = 'flop', statistic = 'model', integer = true },
  session = { metric = 'session', unit = 'index', statistic = 'value', integer = true },
  sessions = { metric = 'sessions', unit = 'count', statistic = 'value', integer = true },
  noise_sd = { metric = 'session_noise', unit = 'log_sd', statistic = 'value' },
  implausible = { metric = 'implausible', unit = 'flag', statistic = 'value', integer = true },
  rel_l2 = { metric = 'rel_l2_error', unit = 'ratio', statistic = 'maximum' },
  sm_mhz = { metric = 'sm_clock', unit = 'mhz', statistic = 'median' },
  energy_j = { metric = 'energy', unit = 'j', statistic = 'median' },
  energy_j_min = { metric = 'energy', unit = 'j', statistic = 'minimum' },
  energy_j_max = { metric = 'energy', unit = 'j', statistic = 'maximum' },
  power_w = { metric = 'power', unit = 'w', statistic = 'median' },
}

--- The order measurements are written in.
M.ORDER = { 'p20_ns', 'p80_ns', 'stdev_ns', 'gbps', 'tflops', 'copy_gbps', 'pct_copy', 'floor_ns', 'pct_floor',
  'bytes', 'flops', 'session', 'sessions', 'noise_sd', 'implausible', 'rel_l2', 'sm_mhz', 'energy_j', 'energy_j_min',
  'energy_j_max', 'power_w' }

-- metric -> unit -> statistic -> field (tables rather than a joined key: no string is made per lookup)
local BY_KEY = {}
for field, m in pairs(M.FIELDS) do
  BY_KEY[m.metric] = BY_KEY[m.metric] or {}
  BY_KEY[m.metric][m.unit] = BY_KEY[m.metric][m.unit] or {}
  BY_KEY[m.metric][m.unit][m.statistic] = field
end

local function finite(v) return type(v) == 'number' and v == v and v > -math.huge and v < math.huge end

--- The measurements[] list of a table of fields (see M.FIELDS); fields that are absent or not
-- finite are left out, integer ones rounded. extra: more measurements appended as they are.
--
-- @signature measurements.list(fields [, extra]) -> list
-- @example
--   local l = measurements.list({gbps = 812.5, session = 1, sessions = 3})
--   print(#l, l[1].metric)
function M.list(fields, extra)
  args.check('measurements.list', 1, fields, 'table', 'table of fields')
  args.check('measurements.list', 2, extra, 'table|nil', 'list of measurements')
  local out = {}
  for _, f in ipairs(M.ORDER) do
    local v = fields[f]
    if v == true then v = 1 end
    if finite(v) then
      local m = M.FIELDS[f]
      if m.integer then
        v = v >= 0 and math.floor(v + 0.5) or -math.floor(-v + 0.5)
        v = math.tointeger(v) or v
      end
      out[#out + 1] = { metric = m.metric, unit = m.unit, statistic = m.statistic, value = v }
    end
  end
  for _, m in ipairs(extra or {}) do out[#out + 1] = m end
  return out
end

--- The fields of a measurements[] list (the inverse of measurements.list); measurements it does not
-- know are returned in the second list.
--
-- @signature measurements.fields(list) -> fields, others
-- @example
--   local f = measurements.fields({{metric = "throughput", unit = "gb_per_s", statistic = "median", value = 812.5}})
--   print(f.gbps)
function M.fields(list)
  local out, others = {}, {}
  for _, m in ipairs(type(list) == 'table' and list or {}) do
    if type(m) == 'table' then
      local units = m.metric ~= nil and BY_KEY[m.metric]
      local stats = units and m.unit ~= nil and units[m.unit]
      local f = stats and m.statistic ~= nil and stats[m.statistic]
      if f and finite(m.value) then out[f] = m.value else others[#others + 1] = m end
    end
  end
  return out, others
end

return M
