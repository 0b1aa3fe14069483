--- Energy per call, and the SM clock and throttle reasons over the same
-- windows, from NVML (kb.nvml.energy: the device's total-energy counter,
-- nvmlDeviceGetTotalEnergyConsumption, in mJ).
--
-- The counter moves in steps: on an H200 every ~100 ms (2000 copies of 1 GiB
-- in 1.01 s read 405 J, 0.203 J a copy at 400 W, while 200 copies in 0.10 s
-- read 0.165 J a copy). A difference of two readings at arbitrary times is off
-- by up to a step at each end, so a window here starts and ends on a step:
--   1. fn runs in batches of about batch_ms (default 10 ms) of device time,
--      each followed by a synchronize, and the counter is read after each;
--   2. the window opens after the batch in which the counter moved;
--   3. batches continue for at least window_ms (default 1000 ms), then until
--      the counter moves again, and the window closes after that batch;
--   4. joules per call = (counter at the close - counter at the open) / the
--      calls between; watts = joules / host seconds between.
-- Each end is then known to within one batch: at 10 ms batches in a window of
-- 1 s, within about 2 %. The calls run back to back, with only the
-- synchronize between batches (a few microseconds), so the energy is that of
-- the kernel running continuously, idle gaps excluded.
--
-- Throttling: after every batch the SM clock and the throttle reasons are
-- read (kb.nvml.sample quick). A window in which any reading shows a power or
-- thermal slowdown (clocks.DROP_REASONS) is marked throttled and left out of
-- the statistic; when every window is throttled, all are kept and the result
-- says so (throttled_all, a warning). The result: the median joules per call
-- over the kept windows, with their minimum and maximum as the interval, the
-- median watts, and the SM clock's min/median/max over all readings.
--
-- Where there is no energy counter (the cpu backend, no NVML, a GPU older
-- than Volta) the result is {available = false, reason}; records say so.
local args = require 'kluabench.util.args'
local core = require 'kluabench.core'
local clocks = require 'kluabench.measure.clocks'
local M = {}

M.DEFAULTS = { windows = 3, window_ms = 1000, batch_ms = 10, max_batch = 1000000, edge_timeout_ms = 2000 }


-- The quantile q of a sorted list (linear).
local function quantile(sorted, q)
  local n = #sorted
  if n == 0 then return nil end
  local h = (n - 1) * q + 1
  local lo = math.floor(h)
  return sorted[lo] + (h - lo) * ((sorted[math.min(lo + 1, n)] or sorted[lo]) - sorted[lo])
end

local function sorted_copy(xs)
  local s = {}
  for i, x in ipairs(xs) do s[i] = x end
  table.sort(s)
  return s
end

--- Whether energy can be measured here: true, or false and why.
--
-- opts: nvml (default kb.nvml), backend (default kb.backend()), device (an NVML device).
--
-- @signature energy.available([opts]) -> true | false, why
-- @section measure
-- @example
--   print(energy.available())
function M.available(opts)
  args.check('energy.available', 1, opts, 'table|nil', 'options')
  opts = opts or {}
  local backend = opts.backend or core.backend()
  if backend ~= 'cuda' then
    return false, 'the ' .. tostring(backend) .. ' backend has no energy counter (NVML reads GPUs only)'
  end
  local nvml = opts.nvml or core.nvml
  local ok, why = nvml.available()
  if not ok then return false, tostring(why) end
  local mj, err = nvml.energy(opts.device)
  if not mj then return false, tostring(err) end
  return true
end

--- Measures the energy of fn over windows aligned to the counter's steps (see the module's comment).
--
-- opts: windows (3), window_ms (1000), batch_ms (10), call_ms (the time of one call, e.g. the
-- session's median: sets the batch size; default measured with one call), device (NVML), nvml,
-- kb (clock_ns, synchronize), backend (tests pass fakes). Returns {available = true, joules_per_call
-- = {median, min, max}, watts = {median, min, max}, sm_mhz = {min, median, max}, windows = {{joules,
-- seconds, calls, joules_per_call, watts, sm_mhz = {min, median, max}, reasons, throttled}},
-- kept, throttled_all, batch, method, warnings} or {available = false, reason}.
--
-- @signature energy.measure(fn [, opts]) -> result
-- @section measure
-- @example
--   local x, y = kb.randn({1 << 20}, "f32", 1), kb.empty({1 << 20}, "f32")
--   local e = energy.measure(function() y:copy_(x) end, {windows = 3})
--   print(e.available, e.joules_per_call and e.joules_per_call.median)
function M.measure(fn, opts)
  args.check('energy.measure', 1, fn, 'callable', 'function to time')
  args.check('energy.measure', 2, opts, 'table|nil', 'options')
  opts = opts or {}
  local o = {}
  for k, v in pairs(M.DEFAULTS) do o[k] = opts[k] == nil and v or opts[k] end
  for _, k in ipairs { 'windows', 'window_ms', 'batch_ms' } do
    if type(o[k]) ~= 'number' or o[k] <= 0 or o[k] ~= o[k] or o[k] == math.huge then
      error(string.format("bad argument #2 to 'measure' (opts.%s must be a positive number, got %s)", k,
        o[k] ~= o[k] and 'NaN' or tostring(o[k])), 2)
    end
  end
  local ok, why = M.available(opts)
  if not ok then return { available = false, reason = why } end
  local nvml = opts.nvml or core.nvml
  local kb = opts.kb or core
  local drop = clocks.DROP_REASONS
  local device = opts.device
  local call_ms = opts.call_ms
  if type(call_ms) ~= 'number' or call_ms <= 0 then
    local t0 = kb.clock_ns()
    fn()
    kb.synchronize()
    call_ms = math.max((kb.clock_ns() - t0) / 1e6, 1e-4)
  end
  local batch = math.max(1, math.min(o.max_batch, math.ceil(o.batch_ms / call_ms)))
  local warnings = {}
  local calls, readings

  local function counter()
    local mj, err = nvml.energy(device)
    if not mj then error('energy: ' .. tostring(err), 0) end
    return mj
  end
  local function run_batch()
    for _ = 1, batch do fn() end
    kb.synchronize()
    calls = calls + batch
    local s = nvml.sample(device, 'quick')
    if s then readings[#readings + 1] = s end
  end
  -- runs batches until the counter differs from `from`: its new value and the host time
  local function to_step(from)
    local t0 = kb.clock_ns()
    while true do
      run_batch()
      local e = counter()
      if e ~= from then return e, kb.clock_ns() end
      if kb.clock_ns() - t0 > o.edge_timeout_ms * 1e6 then
        error(string.format('energy: the counter did not move in %g ms of batches (stuck at %d mJ)',
          o.edge_timeout_ms, from), 0)
      end
    end
  end

  local windows, all_sm = {}, {}
  for w = 1, o.windows do
    calls, readings = 0, {}
    local e1, t1 = to_step(counter())
    calls, readings = 0, {}
    repeat run_batch() until kb.clock_ns() - t1 >= o.window_ms * 1e6
    local e2, t2 = to_step(counter())
    local joules, seconds = (e2 - e1) / 1000, (t2 - t1) / 1e9
    local sm, reasons, seen, throttled = {}, {}, {}, false
    for _, r in ipairs(readings) do
      if type(r.sm_mhz) == 'number' then sm[#sm + 1] = r.sm_mhz; all_sm[#all_sm + 1] = r.sm_mhz end
      for _, name in ipairs(type(r.throttle) == 'table' and r.throttle or {}) do
        if not seen[name] then seen[name] = true; reasons[#reasons + 1] = name end
        if drop[name] then throttled = true end
      end
    end
    table.sort(reasons)
    local ssm = sorted_copy(sm)
    windows[w] = { joules = joules, seconds = seconds, calls = calls, joules_per_call = joules / calls,
      watts = seconds > 0 and joules / seconds or nil,
      sm_mhz = #ssm > 0 and { min = ssm[1], median = quantile(ssm, 0.5), max = ssm[#ssm] } or nil,
      reasons = reasons, throttled = throttled }
  end

  local kept = {}
  for _, w in ipairs(windows) do if not w.throttled then kept[#kept + 1] = w end end
  local throttled_all = #kept == 0
  if throttled_all then
    kept = windows
    warnings[#warnings + 1] = 'every window ran under a power or thermal slowdown: all kept, the energy is that '
      .. 'of a throttled GPU'
  elseif #kept < #windows then
    warnings[#warnings + 1] = string.format('%d of %d windows ran under a power or thermal slowdown and were left out',
      #windows - #kept, #windows)
  end
  local jpc, watts = {}, {}
  for i, w in ipairs(kept) do jpc[i], watts[#watts + 1] = w.joules_per_call, w.watts end
  jpc, watts = sorted_copy(jpc), sorted_copy(watts)
  local sall = sorted_copy(all_sm)
  return {
    available = true,
    joules_per_call = { median = quantile(jpc, 0.5), min = jpc[1], max = jpc[#jpc] },
    watts = #watts > 0 and { median = quantile(watts, 0.5), min = watts[1], max = watts[#watts] } or nil,
    sm_mhz = #sall > 0 and { min = sall[1], median = quantile(sall, 0.5), max = sall[#sall] } or nil,
    windows = windows, kept = #kept, throttled_all = throttled_all, batch = batch,
    window_ms = o.window_ms, batch_ms = o.batch_ms,
    method = 'NVML total-energy counter over windows opened and closed on its steps; median joules per call over '
      .. 'the windows without a power or thermal slowdown, min..max as the interval',
    warnings = #warnings > 0 and warnings or nil,
  }
end

return M
