--- The view of a bundle of today's format (kernelindex records): what
-- point.of returns, without migrating a bundle of kluabench's earlier
-- format first. record/point.lua is the one view every table, compare,
-- plot, merge and the history read (it migrates old bundles, then calls
-- this); the Liger CSV writer reads bundles through this file directly,
-- because migrating needs the Liger documents it is part of. The fields of
-- a point are listed in record/point.lua.
local measurements = require 'kluabench.record.measurements'
local evidence = require 'kluabench.record.evidence'
local operation = require 'kluabench.record.operation'

local M = {}

local get = require('kluabench.util.json').get

local function text(v) return (type(v) == 'string' or type(v) == 'number') and tostring(v) or nil end

local DURATION_NS = { ns = 1, us = 1e3, ['µs'] = 1e3, ms = 1e6, s = 1e9 }

-- (documented as point.duration_ns in record/point.lua)
function M.duration_ns(v)
  if type(v) == 'number' then return (v == v and v >= 0 and v < math.huge) and v or nil end
  if type(v) ~= 'string' then return nil end
  local num, unit = v:match('^(%d+%.?%d*)%s?(%S+)$')
  local scale = unit and DURATION_NS[unit]
  return scale and tonumber(num) * scale or nil
end

-- The short name of a protocol document: its comparability family without
-- the kluabench_ prefix (kluabench_cold -> cold); Liger's harness and ours
-- of triton's algorithm are do_bench.
local FAMILY = { triton_do_bench = 'do_bench', liger_kernel_bench = 'do_bench', liger_kernel_bench_memory = 'memory' }
local function protocol_name(p)
  local fam = get(p, 'spec', 'comparability', 'family')
  if type(fam) ~= 'string' then return nil end
  return FAMILY[fam] or fam:match('^kluabench_(.+)$') or fam
end

-- (documented as migrate.is_old in record/migrate.lua)
function M.is_old(b)
  if type(b) ~= 'table' then return false end
  if get(b, 'workload', 'kind') == 'BenchmarkWorkload' or get(b, 'implementation', 'kind') == 'KernelImplementation' then
    return true
  end
  local rs = get(b, 'run', 'spec')
  if type(rs) == 'table' and (rs.samples ~= nil or rs.execution ~= nil or rs.check ~= nil
      or get(rs, 'sourceNative', 'samples_ms') ~= nil) then
    return true
  end
  -- the earlier workload and implementation fields, kind or not
  return get(b, 'workload', 'spec', 'parameters') ~= nil or get(b, 'implementation', 'spec', 'provider') ~= nil
end

-- The point of a bundle of today's format; point.of (record/point.lua)
-- migrates an old bundle first, then calls this.
function M.of(b)
  if type(b) ~= 'table' then
    error("bad argument #1 to 'point.of' (bundle expected, got " .. type(b) .. ')', 2)
  end
  local rs = get(b, 'run', 'spec') or {}
  local sn = type(rs.sourceNative) == 'table' and rs.sourceNative or {}
  local p = {}
  local e = evidence.of(b)
  local bench = text(sn.benchmark) or ''
  local parts = {}
  for s in (bench .. '/'):gmatch('([^/]*)/') do parts[#parts + 1] = s end
  p.kernel, p.mode = parts[1] ~= '' and parts[1] or nil, parts[2]
  p.metric = parts[3] == 'memory' and 'memory' or 'latency'
  local ext = {}
  for s in ((text(sn.externalId) or '') .. '/'):gmatch('([^/]*)/') do ext[#ext + 1] = s end
  p.provider = ext[3] ~= '' and ext[3] or nil
  p.id = ext[5] ~= '' and ext[5] or nil
  local axes = get(b, 'workload', 'spec', 'axes')
  p.params = {}
  if type(axes) == 'table' then
    for k, v in pairs(axes) do p.params[k] = v end
  elseif p.id then
    -- no workload document: the case key spells the axes ("hidden512-seq2048-bf16")
    local words = {}
    for word in p.id:gmatch('[^%-]+') do words[#words + 1] = word end
    for i = 1, #words - 1 do -- the last word is the dtype
      local k, v = words[i]:match('^([%a_]+)(%d+)$')
      if k then p.params[k] = math.tointeger(tonumber(v)) end
    end
  end
  local token = p.id and p.id:match('%-([%w_]+)$')
  p.dtype = token and (operation.DTYPE_NAME[token] or token) or nil
  if not p.id and next(p.params) then p.id = operation.case_key { axes = p.params, dtype = token or '?' } end
  p.device = require('kluabench.record.env').device_name(b.environment)
  p.timer = get(b, 'protocol', 'spec', 'measurement', 'timer')
  p.protocol = protocol_name(b.protocol)
  p.digests = { protocol = rs.protocolDigest, workload = rs.workloadDigest, environment = rs.environmentDigest,
    implementation = rs.implementationDigest, operation = get(b, 'workload', 'spec', 'operationSpecDigest') }
  p.status = rs.status
  p.observed_at = rs.observedAt
  p.labels = get(b, 'run', 'metadata', 'labels') or {}
  p.name = get(b, 'run', 'metadata', 'name')
  p.median_ns = M.duration_ns(get(rs, 'timing', 'latencyNs', 'median'))
  p.n = math.type(get(rs, 'timing', 'samples')) == 'integer' and rs.timing.samples or nil
  local fields = measurements.fields(rs.measurements)
  for k, v in pairs(fields) do p[k] = v end
  if p.metric == 'memory' then
    for _, m in ipairs(type(rs.measurements) == 'table' and rs.measurements or {}) do
      if type(m) == 'table' and m.metric == 'memory' then
        p['memory_' .. tostring(m.statistic)] = m.value
        p.memory_unit = p.memory_unit or m.unit
      end
    end
  end
  p.implausible = fields.implausible == 1 or nil
  p.evidence = type(e) == 'table' and e or {}
  local samples, why = evidence.samples_ms(e)
  if not e then why = evidence.failure(b) or why end
  p.samples_ms, p.samples_why = samples, why
  if samples and not p.n then p.n = #samples end
  -- the interval of the median the measurement computed (inference.describe): with its flags since
  -- 2026-12-04; older files have none, and a table computes it from the samples
  local ci = get(p.evidence, 'execution', 'medianCiMs')
  if type(ci) == 'table' and type(ci.lo) == 'number' and type(ci.hi) == 'number' and type(ci.flags) == 'string' then
    p.ci_ms = { ci.lo, ci.hi }
    p.ci_flag = ci.flags ~= '' and ci.flags or nil
  end
  local stop = get(p.evidence, 'execution', 'stop')
  if not p.n and type(stop) == 'table' and math.type(stop.samples) == 'integer' then p.n = stop.samples end
  local se = type(p.evidence.session) == 'table' and p.evidence.session or {}
  p.session = { index = math.tointeger(fields.session) or se.index or 1, count = math.tointeger(fields.sessions)
    or se.count or 1 }
  p.backend = text(p.labels.backend) or text(get(p.evidence, 'device', 'backend'))
    or (p.timer == 'host_monotonic' and 'cpu' or (p.timer and 'cuda') or nil)
  return p
end


return M
