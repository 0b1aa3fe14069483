--- Benchmark protocols as values: the base that every mode and do_bench are built on.
--
-- A protocol has a name, parameters, a `run(self, fn, ctx)` that measures fn
-- and a `spec(self, info)` that says, for the record, how it measures. The
-- result of a run is a table with the raw samples (ms), their summary, the
-- values the protocol derived while running (`used`) and the protocol itself:
--
--   local p = do_bench.protocol{
--     name = 'ten-shots',
--     params = { n = 10 },
--     run = function(self, fn, ctx)
--       local samples = {}
--       for i = 1, self.params.n do
--         local s, e = ctx.event(), ctx.event()
--         s:record(); fn(); e:record(); ctx.synchronize()
--         samples[i] = ctx.elapsed_ms(s, e)
--       end
--       return { samples = samples }
--     end,
--   }
--   local r = p:run(function() kb.rope.llama4_fwd(q, k, f) end)
--   print(r.summary.median)
--
-- Every device primitive comes through `ctx` (see do_bench.device()), so tests
-- pass a fake clock and check the arithmetic exactly; the default is the
-- engine: kb.event(), ev:record(), kb.elapsed_ms(), kb.synchronize(),
-- kb.flush_l2(), kb.clock_ns().

-- The engine's timing functions, bound when this module loads: the host
-- loads it before the user's script (kluabench.trust.integrity.capture), so
-- a script that replaces kb.event or kb.elapsed_ms changes nothing that
-- bench.device() hands the protocols (and the harness reports it).
local ENGINE = (function()
  local kb = require 'kluabench.core'
  return { event = kb.event, elapsed_ms = kb.elapsed_ms, synchronize = kb.synchronize, flush_l2 = kb.flush_l2,
    clock_ns = kb.clock_ns, backend = kb.backend }
end)()

local M = {}
local args = require 'kluabench.util.args'
local stats = require 'kluabench.stats'

--- The engine's primitives as a ctx table: event, elapsed_ms, synchronize, flush_l2, clock_ns,
-- backend, timer.
--
-- timer is "cuda_events" on the cuda backend and "host_monotonic" on cpu.
--
-- @signature do_bench.device() -> ctx
-- @example
--   local ctx = do_bench.device()
--   print(ctx.backend, ctx.timer)
function M.device()
  local kb = ENGINE
  local backend = kb.backend and kb.backend() or 'cpu'
  return {
    event = kb.event,
    elapsed_ms = kb.elapsed_ms,
    synchronize = kb.synchronize,
    flush_l2 = kb.flush_l2,
    clock_ns = kb.clock_ns,
    backend = backend,
    timer = backend == 'cuda' and 'cuda_events' or 'host_monotonic',
  }
end

local REQUIRED = { 'event', 'elapsed_ms', 'synchronize', 'flush_l2' }

local function check_ctx(fname, ctx)
  if type(ctx) ~= 'table' then
    error(string.format("bad argument to '%s' (device table expected, got %s)", fname, type(ctx)), 3)
  end
  for _, k in ipairs(REQUIRED) do
    if type(ctx[k]) ~= 'function' then
      error(string.format("bad argument to '%s' (device table lacks function '%s')", fname, k), 3)
    end
  end
  return ctx
end

local function copy(t)
  local c = {}
  for k, v in pairs(t or {}) do c[k] = v end
  return c
end

---------------------------------------------------------------------------
-- Protocol values
---------------------------------------------------------------------------

local Protocol = {}
Protocol.__index = Protocol
Protocol.__name = 'kluabench.Protocol'

function Protocol:__tostring()
  return string.format('protocol %s', self.name)
end

--- Measures fn; result has samples (ms), summary, used, protocol, timer, backend.
--
-- ctx defaults to do_bench.device(). Returns the result {protocol, name, params, samples (ms),
-- summary, used, ...}; the protocol also keeps it as self.last.
--
-- @signature protocol:run(fn [, ctx]) -> result
-- @section do_bench
-- @example
--   local q = kb.randn({1, 128, 32, 16}, "bf16", 1)
--   local k = kb.randn({1, 128, 8, 16}, "bf16", 2)
--   local f = kb.rope.freqs(128, 16)
--   local r = do_bench.do_bench_protocol():run(function() kb.rope.llama4_fwd(q, k, f) end)
--   print(r.summary.median)
function Protocol:run(fn, ctx)
  if type(fn) ~= 'function' and not (getmetatable(fn) and getmetatable(fn).__call) then
    error("bad argument #1 to 'run' (function expected, got " .. type(fn) .. ')', 2)
  end
  ctx = ctx or M.device()
  local r = self._run(self, fn, ctx)
  if type(r) ~= 'table' then
    error(string.format("protocol '%s': run returned %s, expected a table with samples", self.name,
      type(r)), 2)
  end
  if r.samples == nil and #r > 0 then r = { samples = r } end
  if type(r.samples) ~= 'table' or #r.samples == 0 then
    error(string.format("protocol '%s': run produced no samples", self.name), 2)
  end
  r.protocol = self
  r.name = self.name
  r.params = self.params
  r.used = r.used or {}
  r.timer = r.timer or ctx.timer
  r.backend = r.backend or ctx.backend
  -- the statistics, once: the modes and do_bench computed them; a protocol of its own may not have
  if type(r.summary) ~= 'table' or type(r.summary.at) ~= 'table' then
    r.summary = stats.describe(r.samples, self.params.quantiles)
  end
  self.last = r
  return r
end

--- The BenchmarkProtocol spec of the protocol; info: {timed = words, backend, timer}.
--
-- info is optional: {timed = "what fn does, in words", backend = "cuda"|"cpu"}.
--
-- @signature protocol:spec([info]) -> table
-- @section do_bench
-- @example
--   local p = do_bench.do_bench_protocol{rep_ms = 100}
--   print(kb.jcs.encode(p:spec{timed = "the forward pass"}))
function Protocol:spec(info)
  return self._spec(self, info or {})
end

-- A default spec for protocols that do not define one: their name and
-- parameters, so the record still says what was done.
local function default_spec(self, info)
  local params = {}
  for k, v in pairs(self.params) do
    if type(v) ~= 'function' then params[k] = v end
  end
  return {
    harness = { name = 'kluabench', repository = M.REPOSITORY },
    measurement = {
      timer = info.timer or ((info.backend or 'cpu') == 'cuda' and 'cuda_events' or 'host_monotonic'),
      primaryStatistic = 'median',
      method = self.name,
      parameters = next(params) and params or nil,
    },
  }
end

--- A protocol value: a named way of measuring a function, that records can describe.
--
-- run(self, fn, ctx) returns {samples = {ms...}, used = {...}} or just the list of samples; ctx
-- holds the device primitives (event, elapsed_ms, synchronize, flush_l2, clock_ns), so tests can
-- pass a fake clock. spec(self, info) returns the BenchmarkProtocol spec (a default one names the
-- protocol and its parameters).
--
-- @signature do_bench.protocol{name, params, run [, spec, title]} -> Protocol
-- @example
--   local ten = do_bench.protocol{
--     name = "ten-shots", params = {n = 10},
--     run = function(self, fn, ctx)
--       local samples = {}
--       for i = 1, self.params.n do
--         local s, e = ctx.event(), ctx.event()
--         s:record(); fn(); e:record(); ctx.synchronize()
--         samples[i] = ctx.elapsed_ms(s, e)
--       end
--       return samples
--     end,
--   }
function M.protocol(def)
  if type(def) ~= 'table' then
    error("bad argument #1 to 'protocol' (table expected, got " .. type(def) .. ')', 2)
  end
  if type(def.name) ~= 'string' or def.name == '' then
    error("bad argument #1 to 'protocol' (field 'name' must be a non-empty string)", 2)
  end
  if type(def.run) ~= 'function' then
    error("bad argument #1 to 'protocol' (field 'run' must be a function)", 2)
  end
  if def.spec ~= nil and type(def.spec) ~= 'function' then
    error("bad argument #1 to 'protocol' (field 'spec' must be a function)", 2)
  end
  if def.params ~= nil and type(def.params) ~= 'table' then
    error("bad argument #1 to 'protocol' (field 'params' must be a table)", 2)
  end
  local p = setmetatable({
    name = def.name,
    title = def.title or def.name,
    params = copy(def.params),
    _run = def.run,
    _spec = def.spec or default_spec,
  }, Protocol)
  return p
end

--- True when v is a protocol value.
--
-- @signature do_bench.is_protocol(v) -> boolean
-- @example
--   assert(do_bench.is_protocol(do_bench.do_bench_protocol()))
function M.is_protocol(v)
  return getmetatable(v) == Protocol
end

--- Where the harness lives, for the record's harness.repository (nil: left out).
M.REPOSITORY = nil

---------------------------------------------------------------------------
-- Options: every name known, every value of its type and in its range
---------------------------------------------------------------------------

--- The longest time an option in milliseconds may ask for (one hour): a
-- larger rep_ms or warmup_ms is a typo, not a plan.
M.MAX_MS = 3600 * 1000

--- The most samples one measurement keeps (do_bench's repetitions, a mode's
-- samples): their events and numbers stay in memory until the end.
M.MAX_SAMPLES = 1000000

local function describe_value(v)
  if type(v) == 'string' then return string.format('%q', v) end
  return tostring(v)
end

--- An option's rule: {kind = 'number', min, max, integer, above (min
-- excluded)}, {kind = 'boolean'|'string'|'table'|'function'}, {one_of =
-- {values...}} added to a number rule ('auto'), or kind 'any'.
local function check_value(name, v, rule)
  if rule.one_of then
    for _, x in ipairs(rule.one_of) do if v == x then return nil end end
  end
  local k = rule.kind
  if k == 'any' then return nil end
  if k == 'function' then
    local callable = type(v) == 'function' or (getmetatable(v) and getmetatable(v).__call)
    if callable then return nil end
    return string.format('%s must be a function, got %s', name, type(v))
  end
  if k ~= 'number' then
    if type(v) == k then return nil end
    return string.format('%s must be a %s, got %s', name, k, type(v))
  end
  local alts = rule.one_of and (' or ' .. describe_value(rule.one_of[1])) or ''
  if type(v) ~= 'number' then
    return string.format('%s must be a number%s, got %s', name, alts, describe_value(v))
  end
  local lo, hi = rule.min or -math.huge, rule.max or math.huge
  local ok = v == v and v > -math.huge and v < math.huge
    and (rule.above and v > lo or not rule.above and v >= lo) and v <= hi
    and (not rule.integer or math.type(v) == 'integer' or v == math.floor(v))
  if ok then return nil end
  return string.format('%s must be %s %s %g and at most %g%s, got %s', name,
    rule.integer and 'a whole number' or 'a finite number', rule.above and 'above' or 'from', lo, hi,
    alts, describe_value(v))
end

--- Checks an options table: an unknown name (a misspelt key), a value of the wrong type or out of
-- its range raises "bad argument #argn to 'fname' (why)".
--
-- schema maps a name to a rule: {kind = "number", min, max, integer, above} (above: min excluded),
-- {kind = "boolean"|"string"|"table"|"function"|"any"}, with one_of = {values} for allowed extras
-- ("auto"). NaN and infinities are never in range. bench.DO_BENCH_OPTIONS and measure.OPTIONS are
-- the schemas of do_bench and of the modes.
--
-- Returns opts.
--
-- @signature do_bench.check_options(fname, argn, opts, schema) -> opts
-- @example
--   local opts = {reps = 10}
--   do_bench.check_options("my_bench", 1, opts, {reps = {kind = "number", min = 1, max = 1e6, integer = true}})
function M.check_options(fname, argn, opts, schema)
  args.check('check_options', 1, fname, 'string', 'function name')
  args.check('check_options', 2, argn, 'integer', 'argument number')
  args.check('check_options', 3, opts, 'table', 'table of options')
  args.check('check_options', 4, schema, 'table', 'table of option rules')
  for k, v in pairs(opts) do
    local rule = schema[k]
    if rule == nil then
      local known = {}
      for name in pairs(schema) do known[#known + 1] = name end
      table.sort(known)
      error(string.format("bad argument #%d to '%s' (unknown option '%s'; known: %s)", argn, fname,
        tostring(k), table.concat(known, ', ')), 3)
    end
    local why = check_value(tostring(k), v, rule)
    if why then error(string.format("bad argument #%d to '%s' (%s)", argn, fname, why), 3) end
  end
  return opts
end

-- for do_bench.lua, which checks its device table and copies its parameters as protocols do
M.check_ctx, M.copy = check_ctx, copy

return M
