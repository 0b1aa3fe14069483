--- Policy: what the harness decides about a measured session, apart from its facts: throughput against the cached
-- copy ceiling, plausibility, the noise figure in force (record.from_result records them).
local core = require 'kluabench.core'
local args = require 'kluabench.util.args'
local ceilings = require 'kluabench.measure.ceilings'
local env = require 'kluabench.record.env'
local noise = require 'kluabench.record.noise'

local M = {}

local function finite(v) return type(v) == 'number' and v == v and v > -math.huge and v < math.huge end

local function shown(v)
  if v ~= v then return 'NaN' end
  return tostring(v)
end

--- False when bytes moved in median_ms beat opts.limit % (default 100) of the copy ceiling (GB/s or {copy_gbps,
-- spread}) times 1 + spread (at least ceilings.CEILING_SPREAD): physically implausible. Without a ceiling: true, a
-- message, nil. A NaN or infinite argument is an error, never a pass.
-- @signature policy.plausible(median_ms, bytes, ceiling [, opts]) -> ok, message, percent
-- @example
--   print(policy.plausible(0.1, 1e9, 3000))
function M.plausible(median_ms, bytes, ceiling, opts)
  if not (finite(median_ms) and median_ms > 0) then
    error("bad argument #1 to 'plausible' (median_ms must be a finite number > 0, got " .. shown(median_ms) .. ')', 2)
  end
  if not (finite(bytes) and bytes >= 0) then
    error("bad argument #2 to 'plausible' (bytes must be a finite number >= 0, got " .. shown(bytes) .. ')', 2)
  end
  local copy = type(ceiling) == 'table' and ceiling.copy_gbps or ceiling
  if type(copy) == 'number' and not finite(copy) then
    error("bad argument #3 to 'plausible' (the copy ceiling must be a finite number > 0, got " .. shown(copy) .. ')', 2)
  end
  if type(copy) ~= 'number' or copy <= 0 then
    return true, 'no copy ceiling for this device: plausibility not judged', nil
  end
  local spread = ceilings.CEILING_SPREAD
  if type(ceiling) == 'table' and ceiling.spread ~= nil then
    if not (finite(ceiling.spread) and ceiling.spread >= 0 and ceiling.spread < 1) then
      error("bad argument #3 to 'plausible' (the ceiling's spread must be a finite number in [0, 1), got "
        .. shown(ceiling.spread) .. ')', 2)
    end
    spread = math.max(spread, ceiling.spread)
  end
  local limit = (opts and opts.limit) or 100
  if not (finite(limit) and limit > 0) then
    error("bad argument #4 to 'plausible' (opts.limit must be a finite number > 0, got " .. shown(limit) .. ')', 2)
  end
  local gbps = bytes / (median_ms * 1e6)
  local pct = 100 * gbps / copy
  if pct > limit * (1 + spread) then
    return false, string.format('physically implausible: %.1f GB/s is %.1f %% of the copy ceiling (%.1f GB/s), '
      .. 'beyond its own spread of %.1f %%; the kernel may skip work, or the declared bytes are too many', gbps, pct,
      copy, spread * 100), pct
  end
  return true, string.format('%.1f %% of the copy ceiling (within its spread of %.1f %%)', pct, spread * 100), pct
end

--- A session's throughput figures (against this device's cached copy ceiling when it was measured here), with
-- implausible and implausibleReason when it beats the ceiling; nil without bytes, flops.
-- @signature policy.throughput(bytes, flops, median_ms, environment) -> figures | nil
-- @example
--   local t = policy.throughput(2^30, nil, 1.0, kb.env.capture())
--   print(t.gbps, t.note)
function M.throughput(bytes, flops, median_ms, environment)
  if type(bytes) ~= 'number' and type(flops) ~= 'number' then return nil end
  args.check('policy.throughput', 3, median_ms, 'number', 'median in ms')
  local here = env.local_device_name()
  if here ~= env.device_name(environment) then
    local t = ceilings.throughput(bytes, flops, median_ms)
    t.note = 'measured on ' .. tostring(env.device_name(environment)) .. ", not on this process's device ("
      .. tostring(here or 'none') .. '): no cached copy ceiling applies'
    return t
  end
  local t = ceilings.cached_throughput(bytes, flops, median_ms)
  if type(bytes) == 'number' and t.copyCeilingGbps and median_ms > 0 then
    local ok, msg = M.plausible(median_ms, bytes, { copy_gbps = t.copyCeilingGbps,
      spread = t.copyCeiling and t.copyCeiling.spread })
    if not ok then t.implausible, t.implausibleReason = true, msg end
  end
  return t
end

--- The between-session noise figure in force for a session measured here (record/noise.lua); nil for a record of
-- another device.
-- @signature policy.noise(median_ms, environment, kernel) -> figure | nil
-- @example
--   print(policy.noise(0.05, kb.env.capture(), "llama4_rope").sd)
function M.noise(median_ms, environment, kernel)
  local here = env.local_device_name()
  if here == nil or type(median_ms) ~= 'number' or here ~= env.device_name(environment) then return nil end
  local ok, info = pcall(core.device_info)
  if not ok then return nil end
  return noise.in_force(median_ms, kernel, info)
end

return M
