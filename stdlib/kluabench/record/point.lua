--- The one view of a bundle that tables, compare, plot, merge, the Liger
-- CSV writer and the history read: point.of(bundle) gathers what a point is
-- from the documents where kernelindex's schema puts it and from the run's
-- evidence entry (kluabench.record.evidence), so that no view digs into
-- record fields itself.
--
-- A point:
--   kernel, mode, provider   from run.spec.sourceNative (benchmark "kernel/mode",
--                            externalId "kernel/mode/provider/gpu/case/time")
--   metric                   "latency", or "memory" (Liger's memory rows)
--   params                   the workload's axes (integers), dtype (kluabench's
--                            name: bf16, f16, f32, f64), id (the case key,
--                            "hidden512-kv_heads8-q_heads32-seq2048-bf16")
--   device, backend, timer, protocol (cold, hot, graph, do_bench, ...)
--   digests                  {protocol, workload, environment, implementation, operation}
--   status, observed_at, labels
--   median_ns, n (samples), and the measurements' fields (p20_ns, p80_ns,
--   gbps, pct_copy, copy_gbps, floor_ns, pct_floor, bytes, flops, session,
--   sessions, noise_sd, implausible, rel_l2; kluabench.record.measurements)
--   samples_ms | samples_why the raw samples of the session (ms), or why none
--   session                  {index, count}
--   evidence                 the evidence entry (execution, check, throughput,
--                            annotations, reasons, device), or {}
local measurements = require 'kluabench.record.measurements'
local evidence = require 'kluabench.record.evidence'
local operation = require 'kluabench.record.operation'

local M = {}

local get = require('kluabench.report.json').get

local function text(v) return (type(v) == 'string' or type(v) == 'number') and tostring(v) or nil end

local DURATION_NS = { ns = 1, us = 1e3, ['µs'] = 1e3, ms = 1e6, s = 1e9 }

--- A latencyNs value in ns: an integer, or a "<number> ns|us|ms|s" string as the schema allows.
--
-- @signature point.duration_ns(v) -> number | nil
-- @example
--   print(point.duration_ns("1.5 us")) --> 1500.0
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

--- The point of a bundle (see the module's comment); fields that the bundle does not have are nil.
-- It is made anew at each call: bundles may change.
--
-- @signature point.of(bundle) -> point
-- @example
--   local p = point.of(bundle)
--   print(p.kernel, p.mode, p.provider, p.id, p.median_ns)
function M.of(b)
  if type(b) ~= 'table' then
    error("bad argument #1 to 'point.of' (bundle expected, got " .. type(b) .. ')', 2)
  end
  if require('kluabench.record.migrate').is_old(b) then b = require('kluabench.record.migrate').bundle(b) end
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
      if type(m) == 'table' and m.metric == 'memory' then p['memory_' .. tostring(m.statistic)] = m.value end
    end
    p.memory_unit = get(rs, 'measurements', 1, 'unit')
  end
  p.implausible = fields.implausible == 1 or nil
  p.evidence = type(e) == 'table' and e or {}
  local samples, why = evidence.samples_ms(e)
  if not e then why = evidence.failure(b) or why end
  p.samples_ms, p.samples_why = samples, why
  if samples and not p.n then p.n = #samples end
  local stop = get(p.evidence, 'execution', 'stop')
  if not p.n and type(stop) == 'table' and math.type(stop.samples) == 'integer' then p.n = stop.samples end
  local se = type(p.evidence.session) == 'table' and p.evidence.session or {}
  p.session = { index = math.tointeger(fields.session) or se.index or 1, count = math.tointeger(fields.sessions)
    or se.count or 1 }
  p.backend = text(p.labels.backend) or text(get(p.evidence, 'device', 'backend'))
    or (p.timer == 'host_monotonic' and 'cpu' or (p.timer and 'cuda') or nil)
  return p
end

--- A label for people of a bundle's point ("llama4_rope forward hidden512-...-bf16") and its
-- provider. p: the bundle's point.of when the caller has it already (it is not made again).
--
-- @signature point.label_of(bundle [, p]) -> label, provider
-- @example
--   local label, provider = point.label_of(bundle)
function M.label_of(b, p)
  if not p then
    local ok
    ok, p = pcall(M.of, b)
    if not ok then return '?', '?' end
  end
  local parts = { p.kernel or get(b, 'workload', 'metadata', 'name') or '?' }
  parts[#parts + 1] = p.mode
  parts[#parts + 1] = p.id
  return table.concat(parts, ' '), p.provider or '?'
end

return M
