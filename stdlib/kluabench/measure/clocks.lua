--- GPU clocks around and during a measurement: NVML readings (kb.nvml)
-- before and after each point and after each sample, a throttle rule that
-- drops samples taken while the GPU slowed itself down for heat or power
-- (with a pause to let it recover), and the summary a record carries.
--
--   local mon = clocks.monitor { device = 0 }
--   mon:before()
--   ... per sample: local ok, why = mon:check(); if not ok then drop it; mon:recover() end
--   mon:after()
--   local summary = mon:summary()   -- goes into the evidence entry's execution.clocks
--
-- Where NVML is missing (the cpu backend, a machine without the driver) the
-- monitor is inert: check() always keeps the sample and the summary says
-- `available = false` with the reason.
--
-- What NVML can and cannot tell: its clock and throttle-reason readings are
-- instantaneous. A sample is judged by the reading taken right after it
-- finished (after the synchronize that ended it), so a slowdown that began
-- and ended inside one sample is not seen; one that lasts is. The SM clock
-- read right after a sample may already show the GPU relaxing: it is a
-- lower bound of the clock the sample ran at, not an average.
local core = require 'kluabench.core'
local M = {}
local args = require 'kluabench.util.args'

--- The throttle reasons that make a sample be dropped by default: the GPU
-- lowered its clocks for power or temperature. Not in the list: gpu_idle
-- (read between samples, it is expected), applications_clocks_setting and
-- display_clock_setting (settings, not events), sync_boost.
M.DROP_REASONS = {
  sw_power_cap = true,
  hw_slowdown = true,
  sw_thermal_slowdown = true,
  hw_thermal_slowdown = true,
  hw_power_brake_slowdown = true,
}

--- Defaults of a monitor. stable_spread: the SM clock is "stable" when
-- (max - min) / median over the readings stays at or under this fraction.
M.DEFAULTS = {
  per_sample = true,       -- read SM clock + reasons after every sample
  drop_throttled = true,   -- drop samples taken while a DROP_REASONS reason is active
  recovery_ms = 100,       -- pause after a dropped sample
  max_drops = 50,          -- after this many drops, keep samples (and warn)
  stable_spread = 0.02,
}

local function default_sleep(ms, clock_ns)
  -- Lua has no sleep, and a shell's sleep would fork. A busy wait on the host clock
  -- for at most a few hundred ms is harmless next to a GPU benchmark.
  local t0 = clock_ns()
  while clock_ns() - t0 < ms * 1e6 do end
end


--- The NVML device of a CUDA ordinal, through CUDA_VISIBLE_DEVICES (visible) when it is set.
--
-- NVML ignores CUDA_VISIBLE_DEVICES, so the ordinal-th entry of that list is used (an index or a
-- "GPU-..." UUID); otherwise the ordinal itself.
--
-- (With several different GPUs CUDA's default order, fastest first, can differ from NVML's PCI
-- order: pass the device explicitly there.).
--
-- @signature clocks.nvml_device_for(ordinal [, visible]) -> device
-- @example
--   print(clocks.nvml_device_for(1, "GPU-aaa,GPU-bbb")) --> GPU-bbb
function M.nvml_device_for(ordinal, visible)
  args.check('clocks.nvml_device_for', 1, ordinal, 'integer', 'device ordinal')
  if type(visible) == 'string' and visible:match('%S') then
    local list = {}
    for e in visible:gmatch('[^,]+') do list[#list + 1] = e:match('^%s*(.-)%s*$') end
    local e = list[ordinal + 1]
    if e then
      if e:match('^%d+$') then return math.tointeger(tonumber(e)) end
      if e:match('^GPU%-') then return e end
    end
  end
  return ordinal
end

local Monitor = {}
Monitor.__index = Monitor
Monitor.__name = 'kluabench.ClockMonitor'

--- A monitor of one GPU's clocks; inert (keeps every sample) where NVML is absent.
--
-- opts: device (NVML index, UUID or PCI bus id), nvml (a fake for tests), clock_ns, sleep_ms, and
-- the fields of clocks.DEFAULTS (stable_spread, recovery_ms, max_drops, ...).
--
-- @signature clocks.monitor([opts]) -> Monitor
-- @example
--   local mon = clocks.monitor()
--   mon:before()
--   -- per sample: local keep, why = mon:check()
--   mon:after()
--   local s = mon:summary()
function M.monitor(opts)
  args.check('clocks.monitor', 1, opts, 'table|nil', 'table of options')
  opts = opts or {}
  local nvml = opts.nvml
  if nvml == nil then nvml = core.nvml end
  local m = setmetatable({
    nvml = nvml,
    device = opts.device,
    clock_ns = opts.clock_ns or core.clock_ns,
    readings = {},      -- per-sample quick readings
    before_s = nil, after_s = nil, info = nil,
    drops = 0, throttled_kept = 0, reasons_seen = {},
    errors = {},
  }, Monitor)
  for k, v in pairs(M.DEFAULTS) do m[k] = opts[k] == nil and v or opts[k] end
  m.sleep_ms = opts.sleep_ms or function(ms) default_sleep(ms, m.clock_ns) end
  if m.device == nil and core.backend() == 'cuda' then
    local ok, info = pcall(core.device_info)
    m.device = M.nvml_device_for(ok and info.ordinal or 0, os.getenv('CUDA_VISIBLE_DEVICES'))
  end
  if not nvml then
    m.available, m.why = false, 'kb.nvml is not in this build'
  elseif opts.backend == 'cpu' or (opts.backend == nil and core.backend() == 'cpu') then
    m.available, m.why = false, 'cpu backend: no GPU clocks to read'
  else
    local ok, why = nvml.available()
    m.available, m.why = ok and true or false, why
  end
  return m
end

-- A reading, or nil after recording the error (one NVML failure must not
-- end a benchmark: the summary says the clocks are unknown instead).
--- One reading ("full" or "quick"); an NVML failure is recorded, not raised.
--
-- @signature mon:read(kind) -> reading | nil
-- @section clocks
-- @example
--   local mon = clocks.monitor()
--   local r = mon:read("quick")
function Monitor:read(kind)
  if not self.available then return nil end
  local s, err = self.nvml.sample(self.device, kind)
  if not s then
    self.errors[#self.errors + 1] = err
    if #self.errors >= 5 then self.available, self.why = false, 'NVML failing: ' .. tostring(err) end
    return nil
  end
  for _, r in ipairs(s.throttle or {}) do self.reasons_seen[r] = true end
  return s
end

--- The throttle reasons of a reading that drop a sample (clocks.DROP_REASONS by default).
--
-- @signature clocks.drop_reasons_of(sample [, reasons]) -> {names}
-- @example
--   print(#clocks.drop_reasons_of({throttle = {"sw_thermal_slowdown"}}))
function M.drop_reasons_of(s, reasons)
  args.check('clocks.drop_reasons_of', 1, s, 'table', 'clock sample')
  reasons = reasons or M.DROP_REASONS
  local out = {}
  for _, r in ipairs(s and s.throttle or {}) do
    if reasons[r] then out[#out + 1] = r end
  end
  return out
end

--- A full reading (and the clock settings) before a point.
--
-- @signature mon:before()
-- @section clocks
-- @example
--   local mon = clocks.monitor()
--   mon:before()
function Monitor:before()
  self.before_s = self:read('full')
  if self.available and self.info == nil and self.nvml.info then
    self.info = self.nvml.info(self.device) or false
  end
  return self.before_s
end

--- A full reading after a point.
--
-- @signature mon:after()
-- @section clocks
-- @example
--   local mon = clocks.monitor()
--   mon:after()
function Monitor:after()
  self.after_s = self:read('full')
  return self.after_s
end

--- After a sample: keep it, or drop it because the GPU was throttled.
--
-- Drops stop after max_drops (then throttled samples are kept and counted, and the summary warns),
-- so that a GPU that is throttled all the time still yields a result.
--
-- @signature mon:check() -> true | false, reasons
-- @section clocks
-- @example
--   local mon = clocks.monitor()
--   local keep, why = mon:check()
function Monitor:check()
  if not (self.available and self.per_sample) then return true end
  local s = self:read('quick')
  if not s then return true end
  self.readings[#self.readings + 1] = s
  local why = M.drop_reasons_of(s, self.drop_reasons)
  if #why == 0 then return true end
  if self.drop_throttled and self.drops < self.max_drops then
    self.drops = self.drops + 1
    return false, table.concat(why, ', ')
  end
  self.throttled_kept = self.throttled_kept + 1
  return true
end

--- Pauses recovery_ms after a dropped sample.
--
-- @signature mon:recover()
-- @section clocks
-- @example
--   local mon = clocks.monitor()
--   if not mon:check() then mon:recover() end
function Monitor:recover()
  if self.recovery_ms > 0 then self.sleep_ms(self.recovery_ms) end
end

local function median_of(xs)
  if #xs == 0 then return nil end
  local s = table.move(xs, 1, #xs, 1, {})
  table.sort(s)
  local n = #s
  if n % 2 == 1 then return s[(n + 1) // 2] end
  return (s[n // 2] + s[n // 2 + 1]) / 2
end

--- Whether the clocks were locked: true, false or nil (unknown), and why, from settings and
-- readings.
--
-- Pure, for tests: info is kb.nvml.info(), reasons a set of reason names seen, sm a list of SM MHz
-- readings.
--
-- @signature clocks.locked_state(info, reasons, sm) -> locked, basis
-- @example
--   print(clocks.locked_state({}, {}, {1980, 1980}))
function M.locked_state(info, reasons, sm)
  args.check('clocks.locked_state', 1, info, 'table|nil', 'kb.nvml.info() table')
  if info and info.app_sm_mhz and info.default_app_sm_mhz
      and info.app_sm_mhz ~= info.default_app_sm_mhz then
    return true, string.format('application clocks set: SM %d MHz (default %d)', info.app_sm_mhz,
      info.default_app_sm_mhz)
  end
  if reasons and reasons.applications_clocks_setting then
    return true, 'throttle reason applications_clocks_setting active (clocks locked or set)'
  end
  if info == nil and (sm == nil or #sm == 0) then return nil, 'no clock information' end
  return false, 'application clocks at their defaults and no clock-setting reason active: '
    .. 'the GPU boosts freely'
end

--- The record's clock summary: smMhz, memMhz, tempC, powerW, stable, locked, drops, warnings.
--
-- The summary for the record (camelCase, as record documents are): {available, reason?, smMhz =
-- {before, after, min, median, max}, memMhz = {before, after}, tempC = {before, after}, powerW =
-- {before, after}, stable, spread, locked, lockedBasis, throttleReasonsSeen, droppedSamples,
-- throttledSamplesKept, readings, warnings}.
--
-- @signature mon:summary() -> table
-- @section clocks
-- @example
--   local mon = clocks.monitor()
--   print(mon:summary().available)
function Monitor:summary()
  if not self.available and not self.before_s and #self.readings == 0 then
    return { available = false, reason = self.why }
  end
  local sm = {}
  for _, r in ipairs(self.readings) do if r.sm_mhz then sm[#sm + 1] = r.sm_mhz end end
  for _, r in ipairs { self.before_s, self.after_s } do
    if r and r.sm_mhz then sm[#sm + 1] = r.sm_mhz end
  end
  local b, a = self.before_s or {}, self.after_s or {}
  local out = {
    available = true,
    smMhz = { before = b.sm_mhz, after = a.sm_mhz },
    memMhz = { before = b.mem_mhz, after = a.mem_mhz },
    tempC = { before = b.temp_c, after = a.temp_c },
    powerW = { before = b.power_w, after = a.power_w },
    droppedSamples = self.drops,
    throttledSamplesKept = self.throttled_kept,
    readings = #self.readings,
  }
  local warnings = {}
  if #sm > 0 then
    local lo, hi, med = math.huge, -math.huge, median_of(sm)
    for _, v in ipairs(sm) do
      if v < lo then lo = v end
      if v > hi then hi = v end
    end
    out.smMhz.min, out.smMhz.median, out.smMhz.max = lo, med, hi
    out.spread = med > 0 and (hi - lo) / med or nil
    out.stable = out.spread ~= nil and out.spread <= self.stable_spread
    if not out.stable then
      warnings[#warnings + 1] = string.format('SM clock not stable: %d-%d MHz (%.1f%% spread > %.1f%%)',
        lo, hi, (out.spread or 0) * 100, self.stable_spread * 100)
    end
  end
  local seen = {}
  for r in pairs(self.reasons_seen) do seen[#seen + 1] = r end
  table.sort(seen)
  out.throttleReasonsSeen = seen
  out.locked, out.lockedBasis = M.locked_state(self.info or nil, self.reasons_seen, sm)
  if out.locked == false then
    warnings[#warnings + 1] = 'clocks not locked: results depend on boost behaviour '
      .. '(lock them with nvidia-smi -lgc where you own the machine)'
  end
  if self.drops > 0 then
    warnings[#warnings + 1] = string.format('%d sample(s) dropped while throttled (%s)', self.drops,
      table.concat(seen, ', '))
  end
  if self.throttled_kept > 0 then
    warnings[#warnings + 1] = string.format('%d throttled sample(s) kept after %d drops',
      self.throttled_kept, self.max_drops)
  end
  if #self.errors > 0 then
    warnings[#warnings + 1] = string.format('%d NVML reading(s) failed: %s', #self.errors,
      self.errors[1])
  end
  if not self.available then out.reason = self.why end
  out.warnings = warnings
  return out
end

return M
