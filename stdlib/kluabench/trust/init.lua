--- kluabench.trust: audited samples at random points of a timed session and after it, and the census of what ran
-- besides the timed call; a finding is a run status with its reason (docs/TRUST.md).
local core = require 'kluabench.core'
local args = require 'kluabench.util.args'
local check = require 'kluabench.kernels.check'
local seeds = require 'kluabench.trust.seeds'

local M = {}

-- bound before the user's script (trust.integrity)
local arm, guard_check = core.trust.arm, core.trust.guard_check
local device_synchronize, l2_reset, l2_state = core.trust.device_synchronize, core.trust.l2_reset, core.trust.l2_state
local trace_start, trace_stop, trace_active, trace_available = core.trace.start, core.trace.stop,
  core.trace.active, core.trace.available
local spin, compare_elements, sleep = core.spin, core.compare_elements, core.process.sleep

-- The census: threads busy after the timed call returned, kernels on other streams, the persisting-L2 state.
local census = {}
M.census = census
local threads, clock_ns = core.trust.threads, core.clock_ns

--- How long a census watches at least (ms), and the share of it a thread must run to count as busy.
census.WINDOW_MS, census.BUSY_SHARE = 3, 0.25

--- Starts a thread census right after the timed call: a token for census.busy, or nil and a message (no /proc).
-- @signature trust.census.start() -> token | nil, message
-- @example local token = trust.census.start()
function census.start()
  local a, me = threads()
  if not a then return nil, me end
  return { before = a, me = me, t0 = clock_ns() }
end

--- The other threads that ran at least BUSY_SHARE of WINDOW_MS ms since census.start(): {{tid, name, ran_ns, new}}.
-- @signature trust.census.busy(token [, window_ms]) -> list | nil, message
-- @example print(#trust.census.busy(trust.census.start()))
function census.busy(token, window_ms)
  args.check('census.busy', 1, token, 'table', 'token of census.start')
  args.check('census.busy', 2, window_ms, 'number|nil', 'window in ms')
  window_ms = window_ms or census.WINDOW_MS
  local left = window_ms - (clock_ns() - token.t0) / 1e6
  if left > 0 then sleep(left) end
  local elapsed_ns, b = clock_ns() - token.t0, threads()
  if not b then return nil, 'the thread census failed at the end of its window' end
  local before, busy = {}, {}
  for _, x in ipairs(token.before or {}) do before[x.tid] = x end
  for _, t in ipairs(b) do
    if t.tid ~= token.me then
      local was = before[t.tid]
      local ran
      if t.run_ns then
        ran = t.run_ns - (was and was.run_ns or 0)
      elseif was and was.state == 'R' and t.state == 'R' then -- no schedstat: running at both ends
        ran = elapsed_ns
      end
      if ran and ran >= census.BUSY_SHARE * window_ms * 1e6 then
        busy[#busy + 1] = { tid = t.tid, name = t.name, ran_ns = ran, new = was == nil }
      end
    end
  end
  return busy, nil, elapsed_ns
end

--- The stream the engine's own marker kernel ran on (the first record flagged internal), or nil.
-- @signature trust.census.engine_stream(records) -> id | nil
-- @example print(trust.census.engine_stream({{internal = true, kind = "kernel", stream = 7}})) --> 7
function census.engine_stream(records)
  args.check('census.engine_stream', 1, records, 'table', 'list of kb.trace records')
  for _, r in ipairs(records) do if r.internal and r.kind == 'kernel' then return r.stream end end
  return nil
end

--- The kernels and copies of a trace on another stream than `stream`: {{name, stream, count, ns}}.
-- @signature trust.census.foreign(records, stream) -> list
-- @example print(#trust.census.foreign({{name = "k", stream = 14, ns = 900}}, 13)) --> 1
function census.foreign(records, stream)
  args.check('census.foreign', 1, records, 'table', 'list of kb.trace records')
  local groups, out = {}, {}
  for _, r in ipairs(records) do
    if r.stream ~= stream then
      local key = tostring(r.name) .. '\0' .. tostring(r.stream)
      local g = groups[key]
      if not g then
        g = { name = r.name, stream = r.stream, count = 0, ns = 0 }
        groups[key], out[#out + 1] = g, g
      end
      g.count, g.ns = g.count + 1, g.ns + (r.ns or 0)
    end
  end
  return out
end

--- The device time of a trace's work (kernels and copies, not kluabench's own spin), in ns.
-- @signature trust.census.work_ns(records) -> ns
-- @example print(trust.census.work_ns({{name = "k", ns = 900}, {internal = true, ns = 50}})) --> 900
function census.work_ns(records)
  args.check('census.work_ns', 1, records, 'table', 'list of kb.trace records')
  local ns = 0
  for _, r in ipairs(records) do if not r.internal then ns = ns + (r.ns or 0) end end
  return ns
end

--- What is wrong with the persisting-L2 state after a timed call (a set-aside, an access-policy window), or nil.
-- @signature trust.census.l2_finding([device]) -> message | nil
-- @example print(trust.census.l2_finding())
function census.l2_finding(device)
  args.check('census.l2_finding', 1, device, 'string|nil', 'device')
  local s = l2_state(device)
  if not s.supported then return nil end
  local parts = {}
  if s.persisting_limit > 0 then
    parts[#parts + 1] = string.format('the persisting-L2 set-aside is %d bytes (cudaLimitPersistingL2CacheSize)',
      s.persisting_limit)
  end
  if s.window_bytes > 0 then
    parts[#parts + 1] = string.format("the engine's stream has an access-policy window of %d bytes (hit ratio %.2f)",
      s.window_bytes, s.hit_ratio)
  end
  if #parts == 0 then return nil end
  return table.concat(parts, ' and ') .. ': the kernel keeps its data in L2 through the flush between samples'
end

M.DEFAULTS = {
  during = 2,      -- audits at random samples while timing (one more follows the last sample)
  fresh_ratio = 3, -- a timed median this many times faster than every fresh sample is suspect
  -- device work beyond ratio x the timed window + slack was done outside the window
  outside_ratio = 1.5, outside_slack_ns = 20000,
}

--- The statuses an audit gives, the most severe first (a run with several findings gets it).
M.STATUSES = { 'policy_violation', 'suspected_reward_hack', 'incorrect_numerical' }
local RANK = {}
for i, s in ipairs(M.STATUSES) do RANK[s] = i end

local function is_tensor(v)
  local mt = getmetatable(v)
  return type(mt) == 'table' and mt.__name == 'kluabench.Tensor'
end

-- The tensors of a table, by key, in key order (messages and work in a stable order).
local function tensor_keys(t)
  local keys = {}
  for k, v in pairs(t) do if is_tensor(v) then keys[#keys + 1] = k end end
  table.sort(keys, function(a, b) return tostring(a) < tostring(b) end)
  return keys
end

-- A copy of t whose tensors are clones (other values as they are).
local function snapshot(t)
  local s = {}
  for k, v in pairs(t) do s[k] = is_tensor(v) and v:clone() or v end
  return s
end

local function free_all(t, keep)
  for _, v in pairs(t or {}) do if is_tensor(v) and not (keep and keep[v]) then v:free() end end
end

local Auditor = {}
Auditor.__index = Auditor

--- An auditor for one timed session. spec: inputs (set 1), refresh(key) -> fresh inputs, reference(snapshot), keep,
-- key, dtype, factor, reduction, atol, rtol, during, fresh_timing, checked, backend, integrity_check (docs/TRUST.md).
-- @signature trust.new(spec) -> auditor
-- @example
--   local fresh = function(key) return {x = kb.randn({256}, "f32", key)} end
--   print(trust.new{inputs = fresh(1), key = 1, refresh = fresh}:due(1))
function M.new(spec)
  if type(spec) ~= 'table' or type(spec.inputs) ~= 'table' or type(spec.refresh) ~= 'function' then
    error("bad argument #1 to 'audit.new' (a table with inputs (a table) and refresh (a function) expected)", 2)
  end
  if spec.reference ~= nil and type(spec.reference) ~= 'function' then
    error("bad argument #1 to 'audit.new' (reference must be a function)", 2)
  end
  local a = setmetatable({}, Auditor)
  for k, v in pairs(spec) do a[k] = v end
  a.during, a.key = spec.during or M.DEFAULTS.during, spec.key or 1
  a.backend, a.keep = spec.backend or core.backend(), spec.keep or {}
  a.n, a.fresh_ms, a.findings, a.by_message, a.before = 0, {}, {}, {}, {}
  a.checks, a.not_checked, a.schedule = {}, {}, {}
  -- while timing: the j-th audit at a random sample in [2^(j+1) - 3, 2^(j+2) - 4] (1-4, 5-12, ...)
  for j = 1, a.during do
    local lo, hi = (1 << (j + 1)) - 3, (1 << (j + 2)) - 4
    a.schedule[lo + seeds.derive(a.key, 'schedule', j) % (hi - lo + 1)] = true
  end
  return a
end

--- Whether an audit is due before the i-th kept sample of a session.
function Auditor:due(i)
  if self.schedule[i] then
    self.schedule[i], self.before[#self.before + 1] = nil, i
    return true
  end
  return false
end

--- For a protocol that knows its sample count n (do_bench): `during` audits at samples drawn from 1..n.
function Auditor:plan(n)
  local plan, picked, j = {}, 0, 0
  while picked < math.min(self.during, n) do
    j = j + 1
    local i = 1 + seeds.derive(self.key, 'plan', j) % n
    if not plan[i] then plan[i], picked = true, picked + 1 end
  end
  self.schedule = plan
  return plan
end

--- The auditor as measure's ctx.between: an audit before sample i of n when one is due, and one after the last
-- (i = nil); true when it took samples.
function Auditor:hook()
  local planned = false
  return function(i, n, take, calls, sets, per)
    if i ~= nil and n and not planned then planned = true; self:plan(n) end
    if i == nil or self:due(i) then self:run(take, calls, sets, per); return true end
    return false
  end
end

-- Records a finding; one kind at several audits is one reason (the first words, the audits listed).
function Auditor:finding(status, kind, message)
  local f = self.by_message[kind]
  if f then
    if f.audits[#f.audits] ~= self.n then f.audits[#f.audits + 1] = self.n end
    return
  end
  f = { status = status, message = message, audits = { self.n } }
  self.by_message[kind], self.findings[#self.findings + 1] = f, f
end

function Auditor:ran(name) self.checks[name] = true end
function Auditor:skipped(name, why) self.not_checked[name] = why end

-- The timing and statistics functions still the harness's own.
function Auditor:integrity()
  if not self.integrity_check then
    self:skipped('integrity', 'the references were not taken before the script ran (not run by the kluabench host)')
    return
  end
  self:ran('integrity')
  for _, f in ipairs(self.integrity_check()) do self:finding('policy_violation', 'integrity ' .. f.what, f.message) end
end

-- New values in the buffers of set 1: the setup made again under a derived key.
function Auditor:refresh_inputs(key)
  local fresh = self.refresh(key)
  if type(fresh) ~= 'table' then error('audit: refresh returned ' .. type(fresh) .. ', not a table of inputs', 0) end
  for _, k in ipairs(tensor_keys(self.inputs)) do
    local t, f = self.inputs[k], fresh[k]
    if is_tensor(f) and f ~= t then t:copy_(f) end
  end
  local keep = {}
  for k, v in pairs(self.keep) do keep[k] = v end
  for _, v in pairs(self.inputs) do if is_tensor(v) then keep[v] = true end end
  free_all(fresh, keep)
  for k, v in pairs(fresh) do -- Python state the setup made (kb.python): only the tensors were used
    local mt = getmetatable(v)
    if type(mt) == 'table' and mt.__name == 'kluabench.PyObject' and v ~= self.inputs[k] then v:free() end
  end
end

local function each_tensor(sets, fn)
  for _, s in ipairs(sets) do
    if type(s) == 'table' then
      for _, k in ipairs(tensor_keys(s)) do fn(s[k], k) end
    elseif is_tensor(s) then
      fn(s, '?')
    end
  end
end

-- The CUPTI-traced sample (cuda): foreign streams, work outside the timed window (the trace waits WINDOW_MS for a
-- kernel queued after the call) and the persisting-L2 state. per: calls per take.
function Auditor:watched(take, per)
  local ok, why = trace_available()
  if not ok then
    self:skipped('streams', 'kernel tracing unavailable: ' .. tostring(why))
  elseif trace_active() then
    self:skipped('streams', 'kernel tracing was already on (the cold mode\'s kernel_trace)')
  else
    trace_start()
    local ms
    local ran, err = pcall(function()
      spin(1000) -- a marker on the engine's stream: its record names that stream
      ms = take()
      sleep(census.WINDOW_MS)
      device_synchronize()
    end)
    local records = trace_stop()
    if not ran then error(err, 0) end
    local window_ns = type(ms) == 'number' and ms * (per or 1) * 1e6 or nil
    local work = census.work_ns(records)
    if window_ns then
      self:ran('work in the window')
      if work > M.DEFAULTS.outside_ratio * window_ns + M.DEFAULTS.outside_slack_ns then
        self:finding('policy_violation', 'outside the window', string.format('the call\'s kernels ran %.1f us on '
          .. 'the device, its timed window measured %.1f us: work queued after the call returned (or on another '
          .. 'stream) runs outside the window', work / 1e3, window_ns / 1e3))
      end
    end
    local engine = census.engine_stream(records)
    if not engine then
      self:skipped('streams', 'the trace has no record of the engine\'s marker kernel')
    else
      self:ran('streams')
      for _, g in ipairs(census.foreign(records, engine)) do
        self:finding('policy_violation', 'stream ' .. tostring(g.name) .. ' ' .. g.stream,
          string.format("%d %s '%s' ran on stream %d, not the engine's stream %d, "
          .. 'during a timed call: work the timed window on the engine\'s stream does not see', g.count,
          g.count == 1 and 'kernel' or 'kernels', tostring(g.name), g.stream, engine))
      end
    end
  end
  if l2_state().supported then
    self:ran('persisting L2')
    local f = census.l2_finding()
    if f then self:finding('policy_violation', 'persisting L2', f) end
  else
    self:skipped('persisting L2', 'the device has no persisting L2 set-aside')
  end
end

-- The outputs against the reference computed from the snapshot, the other inputs unchanged.
function Auditor:verify_outputs(pre, post, calls)
  if not self.reference then
    self:skipped('outputs', 'the benchmark declares no reference')
    self:skipped('inputs unchanged', 'without a reference the harness cannot tell inputs from outputs')
    return
  end
  local sim = snapshot(pre)
  local named, wants = {}, nil
  local ok, err = pcall(function()
    for step = 1, calls do
      local r = self.reference(sim)
      if type(r) ~= 'table' then error('the reference hook returned ' .. type(r) .. ', not a table of tensors', 0) end
      for name, want in pairs(r) do
        if not is_tensor(want) then error("the reference hook returned a " .. type(want) .. " for '" .. tostring(name)
          .. "', not a tensor", 0) end
        if not is_tensor(self.inputs[name]) then
          error(string.format("the reference hook returned '%s', which is not a tensor of the inputs setup made "
            .. '(the audit compares the inputs\' tensors the timed call wrote)', tostring(name)), 0)
        end
        named[name] = true
      end
      if step < calls then
        for name, want in pairs(r) do sim[name]:copy_(want); want:free() end
      else
        wants = r
      end
    end
  end)
  if not ok then free_all(sim); free_all(wants); error('audit: ' .. tostring(err), 0) end
  self:ran('outputs'); self:ran('inputs unchanged')
  local scale = calls
  for _, name in ipairs(tensor_keys(post)) do
    local got = post[name]
    if named[name] then
      local want = wants[name]
      local atol, rtol = check.tolerance(got.dtype, { atol = self.atol, rtol = self.rtol })
      local label = "output '" .. tostring(name) .. "'"
      local inputs = {}
      for _, k in ipairs(tensor_keys(post)) do if not named[k] then inputs[#inputs + 1] = post[k] end end
      local n = self.reduction or check.reduction_length(got, inputs)
      local good, r = check.compare(got, want, { atol = atol * scale, rtol = rtol * scale, name = label,
        reduction = n })
      if not good then
        self:finding(self.checked and 'suspected_reward_hack' or 'incorrect_numerical', 'output ' .. tostring(name),
          string.format('%s on fresh inputs during timing%s', r.message, self.checked
            and ' (the check before timing passed: the kernel is right when checked and wrong when timed)' or ''))
      elseif self.factor ~= false then
        self:ran('precision')
        local dtype = self.dtype or got.dtype
        if check.UNIT_ROUNDOFF[dtype] then
          local factor = (self.factor or check.DEFAULT_FACTOR) * scale
          local fine, _, _, msg = check.normwise(got, want, dtype, { factor = factor, name = label, reduction = n })
          if not fine then self:finding('incorrect_numerical', 'precision ' .. tostring(name), msg) end
        end
      end
    else
      local r = compare_elements(got, pre[name], 0, 0)
      local differ = r.mismatches + r.unwritten + r.nan_mismatch + r.inf_mismatch
      if differ > 0 then
        self:finding('suspected_reward_hack', 'input ' .. tostring(name),
          string.format("the timed call changed '%s', an input the reference "
          .. 'does not name as an output (%d of %d elements differ): a kernel that writes its inputs can make a '
          .. 'reference computed from them agree', tostring(name), differ, r.n))
      end
    end
  end
  free_all(sim); free_all(wants)
end

--- One audit: fresh inputs, a sample, the census, a traced sample (cuda), the checks. take() -> ms; calls: times one
-- take applies the function to set 1; sets: the sets it touches; per: calls per take.
function Auditor:run(take, calls, sets, per)
  self.n = self.n + 1
  calls, sets = calls or 1, sets or { self.inputs }
  self:integrity()
  self:refresh_inputs(seeds.derive(self.key, 'audit', self.n))
  local pre = snapshot(self.inputs)
  each_tensor(sets, function(t) arm(t) end)
  self:ran('guard bytes')
  local cuda = self.backend == 'cuda'
  if cuda then l2_reset() end
  local ms = take()
  local token, why = census.start()
  local post = {}
  for _, k in ipairs(tensor_keys(self.inputs)) do post[k] = self.inputs[k]:clone() end
  local busy, err = nil, why
  if token then busy, err = census.busy(token) end
  if busy then
    self:ran('threads')
    for _, t in ipairs(busy) do
      self:finding('policy_violation', 'thread ' .. t.name, string.format("thread %d ('%s'%s) ran %.1f ms after the "
        .. 'timed call returned: work left running outside the timed window', t.tid, t.name,
        t.new and ', started by the call' or '', t.ran_ns / 1e6))
    end
  else
    self:skipped('threads', err)
  end
  device_synchronize()
  if type(ms) == 'number' then self.fresh_ms[#self.fresh_ms + 1] = ms end
  if cuda then
    self:watched(take, per)
  else
    self:skipped('streams', 'the cpu backend has no streams (the thread census covers its kernels)')
    self:skipped('persisting L2', 'the cpu backend has no persisting L2')
  end
  each_tensor(sets, function(t, k)
    local fine, msg = guard_check(t)
    if not fine then
      self:finding('policy_violation', 'guard ' .. tostring(k),
        string.format("tensor '%s': %s: the kernel wrote outside its tensors", tostring(k), msg))
    end
  end)
  local ok, err = pcall(self.verify_outputs, self, pre, post, calls)
  free_all(pre); free_all(post)
  if not ok then error(err, 0) end
end

--- The audits' outcome for a protocol result: status (nil: nothing found), reasons and evidence.
function Auditor:verdict(result)
  self:integrity()
  local median = result and result.summary and result.summary.median
  if self.fresh_timing and #self.fresh_ms >= 2 and type(median) == 'number' and median > 0 then
    self:ran('fresh timing')
    local fastest = math.huge
    for _, ms in ipairs(self.fresh_ms) do fastest = math.min(fastest, ms) end
    if fastest > M.DEFAULTS.fresh_ratio * median then
      self:finding('suspected_reward_hack', 'fresh timing', string.format('the timed samples (median %.4g ms) are '
        .. '%.1f x faster than every sample on fresh inputs (fastest %.4g ms of %d): a result kept from an earlier '
        .. 'call while the inputs did not change?', median, fastest / median, fastest, #self.fresh_ms))
    end
  elseif not self.fresh_timing then
    self:skipped('fresh timing', 'the protocol times several calls per sample (hot, graph)')
  end
  local status, reasons = nil, {}
  table.sort(self.findings, function(a, b)
    if RANK[a.status] ~= RANK[b.status] then return RANK[a.status] < RANK[b.status] end
    return a.audits[1] < b.audits[1]
  end)
  for _, f in ipairs(self.findings) do
    status = status or f.status
    local where = #f.audits == 1 and (' (audit ' .. f.audits[1] .. ' of ' .. self.n .. ')')
      or (' (audits ' .. table.concat(f.audits, ', ') .. ' of ' .. self.n .. ')')
    reasons[#reasons + 1] = f.status .. ': ' .. f.message .. where
  end
  local ran, skipped = {}, {}
  for k in pairs(self.checks) do if not self.not_checked[k] then ran[#ran + 1] = k end end
  for k, v in pairs(self.not_checked) do skipped[k] = v end
  table.sort(ran)
  return status, reasons, {
    seedKey = seeds.hex(self.key), audits = self.n, checks = ran,
    notChecked = next(skipped) and skipped or nil, freshMs = #self.fresh_ms > 0 and self.fresh_ms or nil,
    -- the samples an audit ran just before; one more ran after the last
    before = #self.before > 0 and self.before or nil,
    findings = #reasons > 0 and reasons or nil,
  }
end

return M
