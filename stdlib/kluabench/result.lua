--- The one result model (docs/ARCHITECTURE.md): a session is one bundle's fields, a point the sessions of one
-- workload, kernel, mode, provider, device and protocol with the aggregate of the passed ones. Every view reads
-- bundles through it and only formats what it gives.
local args = require 'kluabench.util.args'
local json = require 'kluabench.util.json'
local stats = require 'kluabench.stats'
local record = require 'kluabench.record'
local measure = require 'kluabench.measure'
local env = require 'kluabench.record.env'
local evidence = require 'kluabench.record.evidence'
local operation = require 'kluabench.record.operation'

local M = {}

local get = json.get

local function text(v) return (type(v) == 'string' or type(v) == 'number') and tostring(v) or nil end
local function finite(v) return type(v) == 'number' and v == v and v > -math.huge and v < math.huge end

local DURATION_NS = { ns = 1, us = 1e3, ['µs'] = 1e3, ms = 1e6, s = 1e9 }

--- A latencyNs value in ns: a number, or a "<number> ns|us|ms|s" string as the schema allows.
-- @signature result.duration_ns(v) -> number | nil
-- @example print(result.duration_ns("1.5 us")) --> 1500.0
function M.duration_ns(v)
  if type(v) == 'number' then return (v == v and v >= 0 and v < math.huge) and v or nil end
  if type(v) ~= 'string' then return nil end
  local num, unit = v:match('^(%d+%.?%d*)%s?(%S+)$')
  local scale = unit and DURATION_NS[unit]
  return scale and tonumber(num) * scale or nil
end

-- A protocol's short name: its family without kluabench_; Liger's harness and ours of triton's are do_bench.
local FAMILY = { triton_do_bench = 'do_bench', liger_kernel_bench = 'do_bench', liger_kernel_bench_memory = 'memory' }
local function protocol_name(p)
  local fam = get(p, 'spec', 'comparability', 'family')
  if type(fam) ~= 'string' then return nil end
  return FAMILY[fam] or fam:match('^kluabench_(.+)$') or fam
end

local function split(s, sep)
  local out = {}
  for part in ((text(s) or '') .. sep):gmatch('([^' .. sep .. ']*)' .. sep) do out[#out + 1] = part end
  return out
end

--- One session of a bundle: kernel, mode, provider, metric, params, dtype, id, device, backend, timer, protocol,
-- digests, status, median_ns, n, figures, memory_*, samples_ms, ci_ms, ci_flag, session, evidence; nil if absent.
-- @signature result.session(bundle) -> session
-- @example
--   local r = {samples = {0.11, 0.1, 0.12}, protocol = kb.do_bench.do_bench_protocol()}
--   local s = result.session(record.from_result{kernel = "add", mode = "forward", provider = "add_", result = r})
--   print(s.kernel, s.mode, s.provider, s.id, s.median_ns)
function M.session(b)
  args.check('result.session', 1, b, 'table', 'bundle')
  local rs, p = get(b, 'run', 'spec') or {}, record.names_of(b)
  local axes = get(b, 'workload', 'spec', 'axes')
  p.params = {}
  if type(axes) == 'table' then
    for k, v in pairs(axes) do p.params[k] = v end
  elseif p.id then -- no workload document: the case key spells the axes ("hidden512-seq2048-bf16")
    local words = split(p.id, '-')
    for i = 1, #words - 1 do
      local k, v = words[i]:match('^([%a_]+)(%d+)$')
      if k then p.params[k] = math.tointeger(tonumber(v)) end
    end
  end
  local token = p.id and p.id:match('%-([%w_]+)$')
  p.dtype = token and (operation.DTYPE_NAME[token] or token) or nil
  if not p.id and next(p.params) then p.id = operation.case_key { axes = p.params, dtype = token or '?' } end
  p.device = env.device_name(b.environment)
  p.host = text(get(b, 'environment', 'metadata', 'labels', 'host_name'))
  p.driver = text(get(b, 'environment', 'spec', 'software', 'driver'))
  p.harness_version = text(get(b, 'environment', 'spec', 'software', 'framework', 'version'))
  p.timer = get(b, 'protocol', 'spec', 'measurement', 'timer')
  p.protocol = protocol_name(b.protocol)
  p.digests = { protocol = rs.protocolDigest, workload = rs.workloadDigest, environment = rs.environmentDigest,
    implementation = rs.implementationDigest, operation = get(b, 'workload', 'spec', 'operationSpecDigest') }
  p.status, p.observed_at = rs.status, rs.observedAt
  p.labels = get(b, 'run', 'metadata', 'labels') or {}
  p.name = get(b, 'run', 'metadata', 'name')
  p.external_id = text(get(rs, 'sourceNative', 'externalId'))
  p.evidence_digest = text(get(rs, 'evidence', 'rawSamples', 'digest'))
  p.median_ns = M.duration_ns(get(rs, 'timing', 'latencyNs', 'median'))
  p.n = math.type(get(rs, 'timing', 'samples')) == 'integer' and rs.timing.samples or nil
  local fields = record.measurement_fields(rs.measurements)
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
  local metrics = get(rs, 'sourceNative', 'metrics')
  p.source_metrics = type(metrics) == 'table' and metrics or nil
  local e = evidence.of(b)
  p.evidence = type(e) == 'table' and e or {}
  local samples, why = evidence.samples_ms(e)
  if not e then why = evidence.failure(b) or why end
  p.samples_ms, p.samples_why = samples, why
  if samples and not p.n then p.n = #samples end
  local ci = get(p.evidence, 'execution', 'medianCiMs')
  if type(ci) == 'table' and type(ci.lo) == 'number' and type(ci.hi) == 'number' and type(ci.flags) == 'string' then
    p.ci_ms, p.ci_flag = { ci.lo, ci.hi }, ci.flags ~= '' and ci.flags or nil
  end
  local stop = get(p.evidence, 'execution', 'stop')
  if not p.n and type(stop) == 'table' and math.type(stop.samples) == 'integer' then p.n = stop.samples end
  local se = type(p.evidence.session) == 'table' and p.evidence.session or {}
  p.session = { index = math.tointeger(fields.session) or se.index or 1,
    count = math.tointeger(fields.sessions) or se.count or 1 }
  p.backend = text(p.labels.backend) or text(get(p.evidence, 'device', 'backend'))
    or (p.timer == 'host_monotonic' and 'cpu' or (p.timer and 'cuda') or nil)
  return p
end

--- A label for people of a bundle's point and its provider (kluabench.record's), or of a session or point this
-- module made (`of`: what it names wins).
-- @signature result.label_of(bundle [, of]) -> label, provider
-- @example
--   print(result.label_of({run = {spec = {sourceNative = {benchmark = "k/forward", externalId = "k/forward/p/gpu/n8-fp32/t"}}}}))
function M.label_of(b, of)
  if not of then return record.label_of(b) end
  local label, provider = record.label_of(b)
  if of.kernel or of.id then label = table.concat({ of.kernel or '?', of.mode or '?', of.id or '?' }, ' ') end
  return label, of.provider or provider
end

--- A point's identity: what two sessions of one point share.
-- @signature result.key(session) -> text
-- @example print(result.key({kernel = "k", mode = "forward", provider = "p", id = "n8-fp32", device = "cpu"}))
function M.key(s)
  args.check('result.key', 1, s, 'table', 'session')
  return table.concat({ tostring(s.digests and s.digests.workload or s.id), tostring(s.kernel), tostring(s.mode),
    tostring(s.provider), tostring(s.device), tostring(s.protocol), tostring(s.digests and s.digests.protocol),
    s.metric == 'memory' and 'memory' or '' }, '|')
end

-- The figures a point averages over its sessions.
local AVERAGED = { 'gbps', 'tflops', 'pct_copy', 'copy_gbps', 'pct_floor', 'floor_ns', 'energy_j', 'power_w', 'sm_mhz',
  'rel_l2' }

--- The 95 % interval's half-width of a session's median in percent of it, and its flag (ci=range, ci~1).
-- @signature result.ci_percent(session) -> percent, flag | nil
-- @example print(result.ci_percent({median_ns = 1e6, samples_ms = {1, 1.1, 0.9, 1, 1.05, 0.98}}))
function M.ci_percent(s)
  args.check('result.ci_percent', 1, s, 'table', 'session')
  local ci, flag, med = s.ci_ms, s.ci_flag, s.median_ns and s.median_ns / 1e6
  if not ci then
    local values = s.samples_ms
    if type(values) ~= 'table' or #values < 2 then return nil end
    local d = stats.describe(values)
    ci, flag, med = d.ci95, d.ci_flag, d.median
  end
  if not med or med <= 0 then return nil end
  return 100 * (ci[2] - ci[1]) / (2 * med), flag
end

-- The aggregate of a point's passed sessions (each with a positive median, or a memory peak): median_ns the mean of
-- their medians, n, each recorded quantile of the pooled samples (p20_ns, p80_ns, ...), ci_pct, the means of the figures.
local function aggregate(p, passed)
  local R = #passed
  if p.metric == 'memory' then
    for _, f in ipairs { 'memory_median', 'memory_p20', 'memory_p80' } do
      local total = 0
      for _, s in ipairs(passed) do total = total + (s[f] or 0 / 0) end
      p[f] = finite(total) and total / R or nil
    end
    p.memory_unit = passed[1].memory_unit
    return
  end
  local sum, logs, n, pooled, all_samples = 0, {}, 0, {}, true
  for i, s in ipairs(passed) do
    sum = sum + s.median_ns
    logs[i] = math.log(s.median_ns)
    n = n + (s.n or 0)
    local xs = s.samples_ms
    if type(xs) == 'table' and #xs > 0 then table.move(xs, 1, #xs, #pooled + 1, pooled) else all_samples = false end
  end
  p.median_ns, p.n = sum / R, n
  for _, f in ipairs(AVERAGED) do
    local total = 0
    for _, s in ipairs(passed) do
      if not finite(s[f]) then total = nil break end
      total = total + s[f]
    end
    p[f] = total and total / R or nil
  end
  -- every quantile the sessions recorded (record.quantile_of): of the pooled samples, or the one session's
  local fields, qs, seen = {}, {}, {}
  local function add(f, q)
    if not seen[f] then seen[f], fields[#fields + 1], qs[#qs + 1] = true, f, q end
  end
  for _, q in ipairs(measure.QUANTILES) do if q ~= 0.5 then add(record.quantile_name(q) .. '_ns', q) end end
  for f in pairs(passed[1]) do
    local q = record.quantile_of(f)
    if q then add(f, q) end
  end
  if all_samples and #pooled > 0 and #qs > 0 then
    local v = stats.quantiles(pooled, qs)
    for i, f in ipairs(fields) do p[f] = v[i] * 1e6 end
  elseif R == 1 then
    for _, f in ipairs(fields) do p[f] = passed[1][f] end
  end
  if R == 1 then
    p.ci_pct, p.ci_flag = M.ci_percent(passed[1])
  else
    local mean, ss = 0, 0
    for _, l in ipairs(logs) do mean = mean + l / R end
    for _, l in ipairs(logs) do ss = ss + (l - mean) ^ 2 end
    p.ci_pct = 100 * stats.t_quantile(0.975, R - 1) * math.sqrt(ss / (R - 1)) / math.sqrt(R)
  end
  if not p.gbps and p.bytes and p.median_ns > 0 then p.gbps = p.bytes / p.median_ns end
end

--- The points of bundles in order: sessions, passed, failed, status, implausible and the passed ones' aggregate.
-- @signature result.points(bundles) -> list of points
-- @example
--   local bs, P = {}, kb.do_bench.do_bench_protocol()
--   for i = 1, 3 do bs[i] = record.from_result{kernel = "add", mode = "forward", provider = "add_",
--     session = {index = i, count = 3}, result = {samples = {0.1 * i, 0.11 * i}, protocol = P}} end
--   print(#result.points(bs)[1].sessions, result.points(bs)[1].median_ns) --> 3  210000.0
function M.points(bundles)
  args.check('result.points', 1, bundles, 'table', 'list of bundles')
  local by, out = {}, {}
  for _, b in ipairs(bundles) do
    local s = M.session(b)
    local key = M.key(s)
    local p = by[key]
    if not p then
      p = { key = key, sessions = {}, passed = {}, failed = {} }
      for _, f in ipairs { 'kernel', 'mode', 'provider', 'id', 'params', 'dtype', 'device', 'backend', 'timer',
        'protocol', 'metric', 'digests', 'bytes', 'flops', 'copy_gbps' } do p[f] = s[f] end
      by[key], out[#out + 1] = p, p
    end
    p.sessions[#p.sessions + 1] = s
    local measured = s.metric == 'memory' and finite(s.memory_median) or (finite(s.median_ns) and s.median_ns > 0)
    local list = (s.status == 'passed' and measured) and p.passed or p.failed
    list[#list + 1] = s
    if s.implausible then p.implausible = true end
  end
  for _, p in ipairs(out) do
    p.status = 'passed'
    for _, s in ipairs(p.sessions) do if s.status ~= 'passed' then p.status = s.status or 'no status' break end end
    if #p.passed > 0 then aggregate(p, p.passed) end
  end
  return out
end

return M
