--- Policy: what the harness decides about a measured session, apart from its facts: throughput against the cached
-- copy ceiling, plausibility against the memory level its bytes fit in, the noise figure in force
-- (record.from_result records them).
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

--- False when bytes moved in median_ms beat opts.limit % (default 100) of a bound (GB/s, or {gbps | copy_gbps,
-- spread, name}: the fastest the level the bytes fit in allows, ceilings.levels) times 1 + spread (at least
-- ceilings.CEILING_SPREAD): physically implausible. Without a bound: true, a message, nil. A NaN or infinite argument
-- is an error, never a pass.
-- @signature policy.plausible(median_ms, bytes, bound [, opts]) -> ok, message, percent
-- @example
--   print(policy.plausible(0.1, 1e9, 3000))
function M.plausible(median_ms, bytes, bound, opts)
  if not (finite(median_ms) and median_ms > 0) then
    error("bad argument #1 to 'plausible' (median_ms must be a finite number > 0, got " .. shown(median_ms) .. ')', 2)
  end
  if not (finite(bytes) and bytes >= 0) then
    error("bad argument #2 to 'plausible' (bytes must be a finite number >= 0, got " .. shown(bytes) .. ')', 2)
  end
  local tbl = type(bound) == 'table'
  local gbps_max = tbl and (bound.gbps or bound.copy_gbps) or bound
  if type(gbps_max) == 'number' and not finite(gbps_max) then
    error("bad argument #3 to 'plausible' (the bound must be a finite number of GB/s > 0, got " .. shown(gbps_max)
      .. ')', 2)
  end
  if type(gbps_max) ~= 'number' or gbps_max <= 0 then
    return true, 'no bound on how fast this device moves bytes: plausibility not judged', nil
  end
  local what = tbl and bound.name or (tbl and bound.copy_gbps and 'the copy ceiling') or 'the bound'
  local spread = ceilings.CEILING_SPREAD
  if tbl and bound.spread ~= nil then
    if not (finite(bound.spread) and bound.spread >= 0 and bound.spread < 1) then
      error("bad argument #3 to 'plausible' (the bound's spread must be a finite number in [0, 1), got "
        .. shown(bound.spread) .. ')', 2)
    end
    spread = math.max(spread, bound.spread)
  end
  local limit = (opts and opts.limit) or 100
  if not (finite(limit) and limit > 0) then
    error("bad argument #4 to 'plausible' (opts.limit must be a finite number > 0, got " .. shown(limit) .. ')', 2)
  end
  local gbps = bytes / (median_ms * 1e6)
  local pct = 100 * gbps / gbps_max
  if pct > limit * (1 + spread) then
    return false, string.format('physically implausible: %.1f GB/s is %.1f %% of %s (%.1f GB/s), beyond its spread '
      .. 'of %.1f %%; the kernel may skip work, or the declared bytes are too many', gbps, pct, what, gbps_max,
      spread * 100), pct
  end
  return true, string.format('%.1f %% of %s (within its spread of %.1f %%)', pct, what, spread * 100), pct
end

--- A session's throughput figures (ceilings.cached_throughput when it was measured on this device), judged against
-- the fastest the level of the memory hierarchy its bytes fit in allows (`plausibility`: level, boundGbps, source,
-- percent, or judged = false and why), with implausible and implausibleReason when beyond it; nil without bytes and
-- flops.
-- @signature policy.throughput(bytes, flops, median_ms, environment) -> figures | nil
-- @example
--   local t = policy.throughput(2^30, nil, 1.0, kb.env.capture())
--   print(t.gbps, t.plausibility.level, t.plausibility.boundGbps)
function M.throughput(bytes, flops, median_ms, environment)
  if type(bytes) ~= 'number' and type(flops) ~= 'number' then return nil end
  args.check('policy.throughput', 3, median_ms, 'number', 'median in ms')
  local here = env.local_device_name()
  if here ~= env.device_name(environment) then
    local t = ceilings.throughput(bytes, flops, median_ms)
    t.note = 'measured on ' .. tostring(env.device_name(environment)) .. ", not on this process's device ("
      .. tostring(here or 'none') .. '): no cached copy ceiling applies'
    t.plausibility = { judged = false, reason = t.note }
    return t
  end
  local t = ceilings.cached_throughput(bytes, flops, median_ms)
  local pl = t.plausibility
  if pl and pl.boundGbps and median_ms > 0 then
    local from_copy = pl.source == 'the measured copy ceiling'
    local ok, msg, pct = M.plausible(median_ms, bytes, { gbps = pl.boundGbps, name = string.format(
      'the fastest its working set\'s level (%s) allows, from %s', pl.level, pl.source),
      spread = from_copy and t.copyCeiling and t.copyCeiling.spread or nil })
    pl.judged, pl.percent = true, pct
    if not ok then t.implausible, t.implausibleReason = true, msg end
  elseif type(bytes) == 'number' then
    t.plausibility = { judged = false, reason = median_ms > 0 and 'no bound on how fast this device moves bytes'
      or 'no positive median to judge' }
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
