--- Stopping criteria: when a measurement has taken enough samples.
--
-- A criterion is a table {name = string, params = table, check = function(
-- self, state) -> done, reason, converged}. `state` is a stopping.state():
-- the samples kept so far (n, samples in ms, the same sorted, their sum) and
-- the host time since sampling began. `reason` is one line for people;
-- `converged` is true only when a statistical target was met (the count and
-- time rules never claim it). A criterion never ends a run with 0 samples:
-- every one of them answers "not done" while state.n == 0, and the runner
-- (measure.lua) keeps sampling until one says done.
--
-- Writing a new one takes a few lines:
--   local rule = stopping.criterion {
--     name = 'p20_below', params = { ms = 0.1 },
--     check = function(self, st)
--       if st.n >= 10 and st:quantile(0.2) < self.params.ms then return true, 'fast enough' end
--       return st.elapsed_ms >= 5000, 'gave up after 5 s'
--     end }
local core = require 'kluabench.core'

local M = {}
local args = require 'kluabench.util.args'
local stats = require 'kluabench.stats'

local floor = math.floor

---------------------------------------------------------------------------
-- The state a criterion sees
---------------------------------------------------------------------------

local State = {}
State.__index = State
State.__name = 'kluabench.StoppingState'

--- A fresh state: the samples kept so far (n, samples, sorted, sum) and the elapsed host time.
--
-- clock_ns: a function returning the host time in ns (default kb.clock_ns, else os.clock). The time
-- starts at the first call of st:start() or st:add().
--
-- @signature stopping.state([clock_ns]) -> State
-- @example
--   local st = stopping.state()
--   st:add(0.12)
--   print(st.n, st:median())
function M.state(clock_ns)
  args.check('stopping.state', 1, clock_ns, 'callable|nil', 'clock function')
  clock_ns = clock_ns or core.clock_ns
  return setmetatable({ n = 0, samples = {}, sorted = {}, sum_ms = 0, elapsed_ms = 0,
    clock_ns = clock_ns, t0 = nil }, State)
end

--- Starts the clock (idempotent).
--
-- @signature st:start()
-- @section stopping
-- @example
--   local st = stopping.state()
--   st:start()
function State:start()
  if not self.t0 then self.t0 = self.clock_ns() end
  return self
end

--- Updates st.elapsed_ms from the clock.
--
-- @signature st:tick()
-- @section stopping
-- @example
--   local st = stopping.state()
--   st:tick()
function State:tick()
  self:start()
  self.elapsed_ms = (self.clock_ns() - self.t0) / 1e6
  return self
end

--- Keeps one sample (sorted copy kept by binary insertion).
--
-- The sorted copy is kept by binary insertion, so that rules that look at order statistics cost
-- O(log n) comparisons and one block move per sample instead of a sort.
--
-- @signature st:add(ms)
-- @section stopping
-- @example
--   local st = stopping.state()
--   st:add(0.5)
function State:add(ms)
  self:start()
  local n = self.n + 1
  self.n = n
  self.samples[n] = ms
  self.sum_ms = self.sum_ms + ms
  local s = self.sorted
  local lo, hi = 1, n
  while lo < hi do
    local mid = (lo + hi) // 2
    if s[mid] <= ms then lo = mid + 1 else hi = mid end
  end
  table.insert(s, lo, ms)
  self:tick()
  return self
end

--- The q-quantile of the samples kept.
--
-- @signature st:quantile(q) -> ms
-- @section stopping
-- @example
--   local st = stopping.state(); st:add(1); st:add(2)
--   print(st:quantile(0.5))
function State:quantile(q)
  local n = self.n
  if n == 0 then return nil end
  local h = q * (n - 1)
  local lo = floor(h)
  local t = h - lo
  local s = self.sorted
  if t == 0 then return s[lo + 1] end
  return (1 - t) * s[lo + 1] + t * s[lo + 2]
end

--- The median of the samples kept (nil when none).
--
-- @signature st:median() -> ms | nil
-- @section stopping
-- @example
--   local st = stopping.state(); st:add(3)
--   print(st:median())
function State:median() return self:quantile(0.5) end

--- The relative standard error of the median; math.huge with fewer than 2 samples.
--
-- @signature st:rse_median([confidence]) -> number
-- @section stopping
-- @example
--   local st = stopping.state()
--   for _, v in ipairs{1, 1.1, 0.9, 1.05} do st:add(v) end
--   print(st:rse_median())
function State:rse_median(confidence)
  if self.n < 2 then return math.huge end
  return (stats.rse_median(self.sorted, { sorted = true, confidence = confidence }))
end

---------------------------------------------------------------------------
-- Criteria
---------------------------------------------------------------------------

local Criterion = {}
Criterion.__index = Criterion
Criterion.__name = 'kluabench.StoppingCriterion'

function Criterion:__tostring()
  return 'stopping rule ' .. self.name
end

--- Asks the criterion about state st ("not done" while st.n == 0).
--
-- @signature criterion:check(st) -> done, reason, converged
-- @section stopping
-- @example
--   local st = stopping.state(); st:add(1)
--   print(stopping.count(1):check(st))
function Criterion:check(st)
  if st.n == 0 then return false, 'no samples yet', false end
  local done, reason, converged = self._check(self, st)
  return done and true or false, reason, (done and converged) and true or false
end

--- What goes into the record.
--
-- @signature criterion:spec() -> {rule, ...params}
-- @section stopping
-- @example
--   print(stopping.count(5):spec().rule)
function Criterion:spec()
  local t = { rule = self.name }
  for k, v in pairs(self.params) do t[k] = v end
  return t
end

--- A criterion of your own: check(self, st) -> done, reason, converged.
--
-- @signature stopping.criterion{name, params, check} -> Criterion
-- @example
--   local fast = stopping.criterion{name = "p20_below", params = {ms = 0.1},
--     check = function(self, st)
--       if st.n >= 10 and st:quantile(0.2) < self.params.ms then return true, "fast enough" end
--       return st.elapsed_ms >= 5000, "gave up after 5 s"
--     end}
function M.criterion(def)
  if type(def) ~= 'table' or type(def.name) ~= 'string' or type(def.check) ~= 'function' then
    error("bad argument #1 to 'criterion' (table with name and check expected)", 2)
  end
  return setmetatable({ name = def.name, params = def.params or {}, _check = def.check }, Criterion)
end

--- True when v is a criterion.
--
-- @signature stopping.is_criterion(v) -> boolean
-- @example
--   assert(stopping.is_criterion(stopping.count(3)))
function M.is_criterion(v) return getmetatable(v) == Criterion end

local function positive(fname, name, v, integer)
  if type(v) ~= 'number' or v <= 0 or v ~= v or (integer and math.type(v) ~= 'integer') then
    error(string.format("bad argument #1 to '%s' (%s must be a positive %s, got %s)", fname, name,
      integer and 'integer' or 'number', tostring(v)), 3)
  end
  return v
end

--- Exactly n samples.
--
-- @signature stopping.count(n) -> Criterion
-- @example
--   local x = kb.randn({1 << 16}, "f32", 1)
--   local r = measure.run("cold", function() x:add_(1) end, {stop = stopping.count(50)})
--   print(#r.samples) --> 50
function M.count(n)
  positive('count', 'n', n, true)
  return M.criterion {
    name = 'count', params = { n = n },
    check = function(self, st)
      if st.n >= self.params.n then
        return true, string.format('fixed count: %d samples taken', st.n), false
      end
      return false
    end,
  }
end

--- As many samples as fit in ms milliseconds of host time (at least one).
--
-- @signature stopping.time_budget(ms) -> Criterion
-- @example
--   local rule = stopping.time_budget(500)
function M.time_budget(ms)
  positive('time_budget', 'ms', ms)
  return M.criterion {
    name = 'time_budget', params = { budget_ms = ms },
    check = function(self, st)
      if st.elapsed_ms >= self.params.budget_ms then
        return true, string.format('time budget of %g ms spent: %d samples', self.params.budget_ms,
          st.n), false
      end
      return false
    end,
  }
end

--- The defaults of rse_median: 0.5 % noise (nvbench's default target),
-- at least 20 samples and 10 ms of measured time, 10 s timeout.
M.RSE_DEFAULTS = { target = 0.005, min_samples = 20, min_time_ms = 10, timeout_ms = 10000,
  max_samples = 100000, confidence = 0.95 }

--- How long a session on the cpu backend may sample by default (ms): a CPU rarely reaches
-- rse_median's 0.5 % target (other processes share its cores), so the 10 s timeout would be spent
-- on every point; 2 s gives a median and its interval on a CPU while a sweep stays short.
M.CPU_TIMEOUT_MS = 2000

--- The stopping rule of a session that names none: stopping.rse_median() on a GPU (or with no
-- backend named), with a timeout of stopping.CPU_TIMEOUT_MS on the cpu backend.
--
-- @signature stopping.default_for([backend]) -> Criterion
-- @example
--   print(stopping.default_for("cpu").params.timeout_ms) --> 2000
function M.default_for(backend)
  if backend ~= nil and type(backend) ~= 'string' then
    error("bad argument #1 to 'default_for' (backend name expected, got " .. type(backend) .. ')', 2)
  end
  if backend == 'cpu' then return M.rse_median { timeout_ms = M.CPU_TIMEOUT_MS } end
  return M.rse_median()
end

--- Until the relative standard error of the median is at most opts.target (0.5 % by default).
--
-- With at least min_samples samples and min_time_ms of measured time; or until timeout_ms of host
-- time or max_samples (then not converged). Defaults: stopping.RSE_DEFAULTS.
--
-- The standard error is that of the distribution-free confidence interval of the median
-- (stats.rse_median), cheap enough to evaluate after every sample; no bootstrap.
--
-- @signature stopping.rse_median([opts]) -> Criterion
-- @example
--   local rule = stopping.rse_median{target = 0.01, timeout_ms = 5000}
function M.rse_median(opts)
  args.check('stopping.rse_median', 1, opts, 'table|nil', 'table of options')
  opts = opts or {}
  local p = {}
  for k, v in pairs(M.RSE_DEFAULTS) do p[k] = opts[k] == nil and v or opts[k] end
  positive('rse_median', 'target', p.target)
  positive('rse_median', 'min_samples', p.min_samples, true)
  positive('rse_median', 'timeout_ms', p.timeout_ms)
  positive('rse_median', 'max_samples', p.max_samples, true)
  if type(p.min_time_ms) ~= 'number' or p.min_time_ms < 0 then
    error("bad argument #1 to 'rse_median' (min_time_ms must be a number >= 0)", 2)
  end
  if p.min_samples < 2 then
    error("bad argument #1 to 'rse_median' (min_samples must be >= 2: one sample has no spread)", 2)
  end
  return M.criterion {
    name = 'rse_median', params = p,
    check = function(self, st)
      local q = self.params
      local rse = st:rse_median(q.confidence)
      if st.n >= q.min_samples and st.sum_ms >= q.min_time_ms and rse <= q.target then
        return true, string.format('converged: rse of the median %.3g%% <= %.3g%% after %d samples',
          rse * 100, q.target * 100, st.n), true
      end
      if st.elapsed_ms >= q.timeout_ms then
        return true, string.format('timeout after %g ms: %s', q.timeout_ms, M.unmet(q, st, rse)), false
      end
      if st.n >= q.max_samples then
        return true, string.format('max_samples (%d) reached: %s', q.max_samples, M.unmet(q, st, rse)),
          false
      end
      return false
    end,
  }
end

--- The conditions of an rse_median rule (its params) that state st has not met, as one phrase.
--
-- The reason a run that timed out gives: "rse of the median 1.2% > 0.5%", "12 samples < min_samples
-- 20", "3.1 ms measured < min_time_ms 10", joined by "; ".
--
-- @signature stopping.unmet(params, st, rse) -> text
-- @example
--   local st = stopping.state(); st:add(1); st:add(1)
--   print(stopping.unmet(stopping.RSE_DEFAULTS, st, st:rse_median()))
function M.unmet(q, st, rse)
  args.check('stopping.unmet', 1, q, 'table', 'rule parameters')
  args.check('stopping.unmet', 2, st, 'table', 'stopping state')
  args.check('stopping.unmet', 3, rse, 'number', 'relative standard error')
  local parts = {}
  if not (rse <= q.target) then
    parts[#parts + 1] = string.format('rse of the median %.3g%% > %.3g%%', rse * 100, q.target * 100)
  end
  if st.n < q.min_samples then
    parts[#parts + 1] = string.format('%d samples < min_samples %d', st.n, q.min_samples)
  end
  if st.sum_ms < q.min_time_ms then
    parts[#parts + 1] = string.format('%.3g ms measured < min_time_ms %g', st.sum_ms, q.min_time_ms)
  end
  if #parts == 0 then parts[1] = 'every condition met' end
  return table.concat(parts, '; ') .. string.format(' (%d samples)', st.n)
end

--- Done when the first of several criteria is; its reason is reported.
--
-- The first of several criteria that says done ends the run; its reason and converged flag are
-- reported, prefixed by its name.
--
-- @signature stopping.any(list) -> Criterion
-- @example
--   local rule = stopping.any{stopping.rse_median(), stopping.count(1000)}
function M.any(list)
  if type(list) ~= 'table' or #list == 0 then
    error("bad argument #1 to 'any' (non-empty list of criteria expected)", 2)
  end
  local names, rules = {}, {}
  for i, c in ipairs(list) do
    if not M.is_criterion(c) then
      error(string.format("bad argument #1 to 'any' (element %d is not a stopping criterion)", i), 2)
    end
    names[i], rules[i] = c:spec(), c
  end
  local any = M.criterion {
    name = 'any', params = { rules = names },
    check = function(self, st)
      for _, c in ipairs(rules) do
        local done, reason, converged = c:check(st)
        if done then
          self.ended_by = c.name
          return true, c.name .. ': ' .. reason, converged
        end
      end
      return false
    end,
  }
  return any
end

--- A criterion from a short form: n, "count:N", "time:MS", "rse:TARGET" or {rule = ..., ...}.
--
-- A criterion from a short description, for command-line options and script parameters: a criterion
-- passes through; a number n means count(n); "count:N", "time:MS", "rse:TARGET" (rse_median with
-- that target); a table {rule = "count"|"time_budget"|"rse_median", ...} the same with options.
--
-- @signature stopping.from(v) -> Criterion
-- @example
--   local rule = stopping.from("rse:0.01")
function M.from(v)
  if M.is_criterion(v) then return v end
  if math.type(v) == 'integer' then return M.count(v) end
  if type(v) == 'string' then
    local kind, x = v:match('^(%a+):([%d%.eE+-]+)$')
    x = tonumber(x)
    if kind == 'count' and math.tointeger(x) then return M.count(math.tointeger(x)) end
    if kind == 'time' and x then return M.time_budget(x) end
    if kind == 'rse' and x then return M.rse_median { target = x } end
    error("bad stopping rule '" .. v .. "' (expected count:N, time:MS or rse:TARGET)", 2)
  end
  if type(v) == 'table' then
    if v.rule == 'count' then return M.count(v.n) end
    if v.rule == 'time_budget' then return M.time_budget(v.budget_ms or v.ms) end
    if v.rule == 'rse_median' then return M.rse_median(v) end
  end
  error(string.format("bad argument #1 to 'stopping.from' (bad stopping rule %s: a criterion, integer, string or table "
    .. 'expected, got %s)', tostring(v), type(v)), 2)
end

--- What the record says about how a run ended: {rule, reason, converged, samples, rseMedian,
-- elapsedMs}.
--
-- @signature stopping.outcome(criterion, st, reason, converged) -> table
-- @example
--   local st = stopping.state(); st:add(1)
--   local o = stopping.outcome(stopping.count(1), st, "1 sample", false)
function M.outcome(criterion, st, reason, converged)
  args.check('stopping.outcome', 1, criterion, 'table', 'stopping criterion')
  args.check('stopping.outcome', 2, st, 'table', 'stopping state')
  args.check('stopping.outcome', 3, reason, 'string', 'reason')
  local rse = st:rse_median()
  return {
    rule = criterion.ended_by or criterion.name,
    reason = reason,
    converged = converged and true or false,
    samples = st.n,
    rseMedian = rse ~= math.huge and rse or nil,
    elapsedMs = st.elapsed_ms,
  }
end

return M
