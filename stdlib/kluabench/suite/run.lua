--- The sweep: every (session, point, provider, mode) checked, measured, audited and recorded; the estimate before it.
local core = require 'kluabench.core'
local measure = require 'kluabench.measure'
local bench = require 'kluabench.measure.do_bench'
local trust = require 'kluabench.trust'
local seeds = require 'kluabench.trust.seeds'
local integrity = require 'kluabench.trust.integrity'
local record = require 'kluabench.record'
local declaration = require 'kluabench.suite.declaration'
local policy = require 'kluabench.suite.policy'

local M = {}

-- A sweep estimated to take at least this many seconds says so before it starts.
M.ESTIMATE_FROM_S = 30

-- Seconds one session takes when one call takes call_s (do_bench's estimate, warm-up and repetitions; a rule's
-- warm-up and n samples, else its timeout: an upper bound on a GPU), capped by --timeout.
local function session_seconds(protocol, o, call_s, backend)
  local p, s = protocol.params or {}, nil
  if protocol.name == 'do_bench' then
    local warmup = (p.warmup_ms or bench.DO_BENCH_DEFAULTS.warmup_ms) / 1e3
    local rep = (p.rep_ms or bench.DO_BENCH_DEFAULTS.rep_ms) / 1e3
    s = 6 * call_s + math.max(call_s, warmup) + math.max((backend == 'cpu' and bench.CPU_MIN_REPEAT or 1) * call_s, rep)
  else
    local defaults, rule = measure.DEFAULTS, type(p.stop) == 'table' and p.stop or {}
    local q = type(rule.params) == 'table' and rule.params or {}
    local sampling
    if rule.name == 'count' and math.type(q.n) == 'integer' then sampling = q.n * call_s
    elseif type(q.timeout_ms) == 'number' then sampling = q.timeout_ms / 1e3
    else sampling = 20 * call_s end
    s = math.max((p.warmup_ms or defaults.warmup_ms) / 1e3, (p.warmup_min or defaults.warmup_min) * call_s) + sampling
  end
  return o.timeout and math.min(s, o.timeout) or s
end

local function free_shared(shared)
  if not shared then return end
  declaration.free_tensors(shared, {})
  if declaration.is_tensor(shared) then shared:free() end
end

-- Times the setup and one call (after a first) of each provider and mode at the smallest point: the point, {provider
-- -> setup s}, {provider -> {mode -> call s}}; nil when a hook fails.
local function probe(d, o, points)
  local p0, c0
  for _, p in ipairs(points) do
    local c = declaration.point_cost(d, p, o)
    if not c0 or c < c0 then p0, c0 = p, c end
  end
  local dev, setup_s, call_s = measure.device(), {}, {}
  local shared, inputs
  local ok = pcall(function()
    shared = declaration.call_shared(d, p0)
    p0.shared = shared
    for _, provider in ipairs(o.providers) do
      local t0 = core.clock_ns()
      inputs = declaration.call_setup(d, p0, provider)
      dev.synchronize()
      setup_s[provider] = (core.clock_ns() - t0) / 1e9
      call_s[provider] = {}
      for _, mode in ipairs(o.modes) do
        local fn = declaration.call_run(d, p0, provider, mode, inputs)
        fn()
        local e0, e1 = dev.event(), dev.event()
        e0:record(); fn(); e1:record()
        dev.synchronize()
        call_s[provider][mode] = dev.elapsed_ms(e0, e1) / 1e3
      end
      declaration.free_tensors(inputs, declaration.tensor_set(shared))
      inputs = nil
    end
  end)
  if inputs then declaration.free_tensors(inputs, declaration.tensor_set(shared)) end
  p0.shared = nil
  free_shared(shared)
  if not ok then return nil end
  return p0, setup_s, call_s
end

-- The sweep's estimated seconds: the probe of the smallest point scaled by each point's bytes.
function M.estimate_seconds(d, ctx, points)
  local o = ctx.o
  local p0, setup_s, call_s = probe(d, o, points)
  if not p0 then return nil end
  local backend = core.backend and core.backend() or 'cpu'
  local function ratio(a, b) return (a and b and a > 0 and b > 0) and a / b or 1 end
  local total = 0
  for _, p in ipairs(points) do
    local r_point = ratio(declaration.point_cost(d, p, o), declaration.point_cost(d, p0, o))
    for _, provider in ipairs(o.providers) do
      local setup = setup_s[provider] * r_point
      total = total + setup -- the check's setup, once a point and provider
      for _, mode in ipairs(o.modes) do
        local call = call_s[provider][mode] * ratio(declaration.cost_of(d, p, mode), declaration.cost_of(d, p0, mode))
        total = total + (d.check and 2 * call or 0) -- the check's calls (the reference is the check's own)
          + o.runs * (setup + session_seconds(ctx.protocol, o, call, backend))
      end
    end
  end
  return total
end

-- The run's protocol (--metric memory and --metrics energy load their modules only when asked for).
function M.make_protocol(o)
  if o.metric == 'memory' then return require('kluabench.measure.memory').protocol() end
  local params = { quantiles = bench.HARNESS_DEFAULTS.quantiles }
  if o.protocol == 'do_bench' then params.warmup_ms, params.rep_ms = o.warmup_ms, o.rep_ms end
  return measure.protocol(o.protocol, params)
end

-- The workload, operation and implementation documents of (point, provider), made once.
local function describe(d, ctx, p, provider, bare)
  local key = p.id .. '\0' .. provider
  if ctx.described[key] then return ctx.described[key] end
  local out = { operation = d.operation }
  if not d.operation and not record.is_shared(d.name, p.params, p.dtype) then
    local t = ctx.tensors[p.id]
    if not t and not bare then
      -- the default provider's inputs describe the point, whatever providers run
      local inputs = declaration.call_setup(d, p, d.provider or d.providers[1])
      t = {}
      for name, v in pairs(inputs) do
        if declaration.is_tensor(v) then t[name] = { shape = v.shape, dtype = v.dtype } end
      end
      declaration.free_tensors(inputs, declaration.tensor_set(p.shared))
      ctx.tensors[p.id] = t
    end
    out.tensors = t
  end
  local workload, op = record.workload { kernel = d.name, parameters = p.params, dtype = p.dtype,
    operation = out.operation, tensors = out.tensors, axis_order = declaration.axis_names(d) }
  out.workload, out.operation_document = workload, op
  local od = record.digest(op)
  local declared = not bare and d.implementation and d.implementation(p, provider) or nil
  if declared == 'builtin' then
    -- only where the declaration says so: a user's provider named like a built-in one is not it
    if not record.builtin_implementation { kernel = d.name, provider = provider, backend = core.backend(),
        operation_digest = od } then
      declaration.bad_return(d, 'implementation', nil, declared, string.format("nil, an info() table, a list of "
        .. "them or an ImplementationRevision document expected: 'builtin' names a provider of the kernel registry "
        .. '(kluabench.kernels), which has no provider %s of a kernel %s on the %s backend', provider, d.name,
        core.backend()), p, provider)
    end
    out.builtin = true
  elseif type(declared) == 'table' and declared.kind == 'ImplementationRevision' then
    out.implementation = declared
  elseif type(declared) == 'table' then
    local hw = ctx.environment.spec.hardware or {}
    out.implementation = record.user_implementation { provider = provider, kernel = d.name, info = declared,
      operation_digest = od, arch = hw.architecture, dtypes = { p.dtype }, source = ctx.o.source }
  elseif declared ~= nil then
    declaration.bad_return(d, 'implementation', nil, declared, "nil, 'builtin', an info() table, a list of them or an "
      .. 'ImplementationRevision document', p, provider)
  end
  if not bare then ctx.described[key] = out end
  return out
end

-- The bundle of (point, provider, mode): o.result, or none (o.status and o.reasons say why); o.bare: without the
-- record, cost, setup and implementation hooks.
local function bundle_of(d, ctx, p, provider, mode, run_index, o)
  local extra = (d.record and not o.bare) and declaration.call_record(d, p, provider, mode) or {}
  local execution = {}
  for key, v in pairs(extra.execution or {}) do execution[key] = v end
  execution.point, execution.trust = p.id, o.trust
  local bytes, flops
  if not o.bare then
    if d.cost then bytes, flops = declaration.call_cost(d, p, mode, provider) else bytes, flops = declaration.cost_of(d, p, mode) end
  end
  local desc = describe(d, ctx, p, provider, o.bare)
  local result = o.result or { samples = {}, used = {}, protocol = ctx.protocol }
  local median_ms = #result.samples > 0 and result.summary and result.summary.median or nil
  local throughput = median_ms and policy.throughput(bytes, flops, median_ms, ctx.environment) or nil
  local status, reasons = o.status, o.reasons
  if throughput and throughput.implausible then
    if status == nil or status == 'passed' then status = 'suspected_reward_hack' end
    reasons = reasons or {}
    reasons[#reasons + 1] = throughput.implausibleReason
  end
  return record.from_result {
    kernel = d.name, mode = mode, provider = provider, parameters = p.params, dtype = p.dtype, result = result,
    protocol = ctx.protocol, environment = ctx.environment, timed = extra.timed, check = o.check,
    execution = execution, annotations = extra.annotations, bytes = bytes, flops = flops, throughput = throughput,
    noise = median_ms and policy.noise(median_ms, ctx.environment, d.name) or nil,
    workload = desc.workload, operation_document = desc.operation_document, implementation = desc.implementation,
    builtin = desc.builtin == true, session = { index = run_index, count = ctx.o.runs }, status = status,
    reasons = reasons, axis_order = declaration.axis_names(d), source = ctx.o.source,
  }
end

-- The bundle of a failed (point, provider, mode): made without the hooks, and saying so, when one of them fails too.
local function failure_bundle(d, ctx, p, provider, mode, run_index, status, message)
  local ok, b = pcall(bundle_of, d, ctx, p, provider, mode, run_index, { status = status, reasons = { message } })
  if ok then return b end
  if core.interrupted() then error(b, 0) end
  local again = tostring(b)
  return bundle_of(d, ctx, p, provider, mode, run_index, { status = status, bare = true,
    reasons = { message, 'its record was made without the record, cost and implementation hooks'
      .. (again == message and ' (one of them raised that error)' or (', which raised: ' .. again)) } })
end

-- The session's auditor, or nil with --audits 0.
local function auditor(d, ctx, p, provider, mode, inputs, keep)
  if ctx.o.audits == 0 then return nil end
  return trust.new {
    inputs = inputs, keep = keep, key = seeds.derive(ctx.trust.key, p.id, provider, mode, ctx.sessions),
    refresh = function(key) return seeds.with_key(key, declaration.call_setup, d, p, provider) end,
    reference = d.reference and function(snap) return declaration.call_reference(d, p, provider, mode, snap) end,
    dtype = p.dtype, factor = d.precision, reduction = declaration.reduction(d, p), atol = d.tolerance and d.tolerance.atol,
    rtol = d.tolerance and d.tolerance.rtol, during = ctx.o.audits, checked = d.check ~= nil,
    -- one call per sample: a fresh sample and a timed one measure the same thing
    fresh_timing = ctx.o.protocol == 'cold' or ctx.o.protocol == 'do_bench', backend = core.backend(),
    integrity_check = integrity.captured() and integrity.verify or nil,
  }
end

-- One measured session of (point, provider, mode): the sealed bundle.
local function session(d, ctx, p, provider, mode, run_index, checked)
  local keep = declaration.tensor_set(p.shared)
  local inputs, sets = declaration.call_setup(d, p, provider), {}
  ctx.sessions = (ctx.sessions or 0) + 1
  if ctx.o.protocol == 'graph' then
    -- rotated input sets (set 1 is inputs), a seed key each, so that no two are alike
    ctx.protocol.params.make_set = function(i)
      if i == 1 then return inputs end
      sets[#sets + 1] = seeds.with_key(seeds.derive(ctx.trust.key, 'set', i), declaration.call_setup, d, p, provider)
      return sets[#sets]
    end
  end
  local t0, limit_ns, audit = core.clock_ns(), ctx.o.timeout and ctx.o.timeout * 1e9, nil
  local ok, result = pcall(function()
    local fn = declaration.call_run(d, p, provider, mode, inputs)
    local run_ctx = measure.device()
    -- the deadline is checked between samples (a call that never returns is not stopped)
    if ctx.o.metric == 'memory' then
      -- Liger's memory metric: the peak allocated around one call, no time
      return { samples = {}, used = {}, protocol = ctx.protocol,
        memory = require('kluabench.measure.memory').peak(fn) }
    end
    if limit_ns then run_ctx.deadline_ns = t0 + limit_ns end
    audit = auditor(d, ctx, p, provider, mode, inputs, keep)
    if audit then run_ctx.between = audit:hook() end
    local r = ctx.protocol:run(fn, run_ctx)
    if ctx.o.metrics.energy then
      r.energy = require('kluabench.measure.energy').measure(fn, { call_ms = r.summary and r.summary.median })
    end
    return r
  end)
  declaration.free_tensors(inputs, keep)
  for _, s in ipairs(sets) do declaration.free_tensors(s, keep) end
  if not ok then error(result, 0) end
  local o = { result = result, check = checked }
  if audit then
    local status, reasons, evidence = audit:verdict(result)
    -- the run's key (KLUABENCH_SEED_KEY replays it); the session's are derived from it
    evidence.seedKey = seeds.hex(ctx.trust.key)
    o.trust = evidence
    if status then
      o.status, o.reasons = status, reasons
      io.stderr:write(string.format('%s: %s: %s %s at %s: %s\n', d.name, status, mode, provider, p.id,
        table.concat(reasons, '; ')))
      ctx.failures = ctx.failures + 1
    end
  else
    o.trust = { audits = 0, seedKey = seeds.hex(ctx.trust.key), notChecked = { all = 'no audits (--audits 0)' } }
  end
  local elapsed = (core.clock_ns() - t0) / 1e9
  local stop = type(result) == 'table' and type(result.used) == 'table' and result.used.stop or nil
  local stopped = type(stop) == 'table' and stop.rule == 'timeout'
  if limit_ns and (elapsed > ctx.o.timeout or stopped) and not o.status then
    o.status, o.reasons = 'timeout', { string.format('the session took %.3f s, past --timeout %g s%s', elapsed,
      ctx.o.timeout, stopped and ': sampling stopped at the deadline' or '') }
    io.stderr:write(string.format('%s: timeout: %s %s at %s: %s\n', d.name, mode, provider, p.id, o.reasons[1]))
    ctx.failures = ctx.failures + 1
  end
  return bundle_of(d, ctx, p, provider, mode, run_index, o)
end

-- Checks provider at p on fresh inputs before timing: the check record, or nil, status, message.
local function check_provider(d, p, provider, modes, timeout)
  if not d.check then return true end
  local t0 = core.clock_ns()
  local inputs
  local ok, checked = pcall(function()
    inputs = declaration.call_setup(d, p, provider)
    return declaration.checked_record(d, d.check(p, provider, inputs, modes), p, provider)
  end)
  declaration.free_tensors(inputs, declaration.tensor_set(p.shared))
  if not ok then
    if core.interrupted() then error(checked, 0) end
    return nil, declaration.failure_of(checked)
  end
  local elapsed = (core.clock_ns() - t0) / 1e9
  if timeout and elapsed > timeout then
    return nil, 'timeout', string.format('the check took %.3f s, past --timeout %g s', elapsed, timeout)
  end
  return checked
end

-- Runs every (session, point, provider, mode), stopping between sessions after a signal: the signal's name or nil.
function M.sweep(d, ctx, points, emit)
  local o, progress = ctx.o, ctx.progress
  local stopped_by
  local function interrupted()
    local hit, sig = core.interrupted()
    if hit then stopped_by = sig or 'SIGINT' end
    return hit
  end
  local checks = {}
  for run_index = 1, o.runs do
    for _, p in ipairs(points) do
      if interrupted() then return stopped_by end
      -- a shared hook that fails fails the point (this session), not the sweep
      local shared_failure
      local ok_shared, shared_v = pcall(declaration.call_shared, d, p)
      if ok_shared then
        p.shared = shared_v
      else
        if core.interrupted() then error(shared_v, 0) end
        p.shared = nil
        local status, message = declaration.failure_of(shared_v)
        shared_failure = { status = status, message = message }
        io.stderr:write(string.format('%s: %s: point %s is not timed: %s\n', d.name, status, p.id, message))
        ctx.failures = ctx.failures + 1
      end
      for _, provider in ipairs(o.providers) do
        local key = p.id .. '\0' .. provider
        if checks[key] == nil and not shared_failure then
          local c, status, message = check_provider(d, p, provider, o.modes, o.timeout)
          -- {record = the check record} or {status, message} of a failed check
          checks[key] = c and { record = c ~= true and c or nil } or { status = status, message = message }
          if not c then
            io.stderr:write(string.format('%s: %s: provider %s at %s is not timed: %s\n', d.name, status, provider,
              p.id, message))
            ctx.failures = ctx.failures + 1
          end
        end
        local c = shared_failure or checks[key]
        for _, mode in ipairs(o.modes) do
          if interrupted() then break end
          local what = string.format('%s %s %s', mode, provider, p.id)
          if o.runs > 1 then what = what .. string.format(' (run %d/%d)', run_index, o.runs) end
          if progress then progress:start(what) end
          local bundle
          if c.status then
            bundle = failure_bundle(d, ctx, p, provider, mode, run_index, c.status, c.message)
          else
            local ok, b = pcall(session, d, ctx, p, provider, mode, run_index, c.record)
            if not ok then
              if core.interrupted() then error(b, 0) end
              local status, message = declaration.failure_of(b)
              io.stderr:write(string.format('%s: %s: %s %s at %s: %s\n', d.name, status, mode, provider, p.id, message))
              ctx.failures = ctx.failures + 1
              b = failure_bundle(d, ctx, p, provider, mode, run_index, status, message)
            end
            bundle = b
          end
          emit(bundle)
          if progress then
            local median = bundle.run.spec.timing and bundle.run.spec.timing.latencyNs.median
            progress:finish(what, median and string.format('median %.2f us', median / 1000) or bundle.run.spec.status)
          end
        end
      end
      local shared = p.shared
      p.shared = nil
      free_shared(shared)
      if stopped_by then return stopped_by end
    end
  end
  interrupted() -- a signal during the last point counts too
  return stopped_by
end

return M
