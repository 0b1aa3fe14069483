--- Timing: protocols as values and the registry of the built-in ones, a file each (docs/MEASUREMENT.md). Device
-- primitives come through ctx, so a test can fake the clock; the audits plug into ctx.between (docs/ARCHITECTURE.md).
local core = require 'kluabench.core'
local args = require 'kluabench.util.args'
local stats = require 'kluabench.stats'

local M = {}

--- The built-in protocols, in the order --help lists them: each is kluabench.measure.<name>.
M.MODES = { 'do_bench', 'cold', 'hot', 'graph' }
--- The quantiles the harness records (Liger's: the median, p20 and p80).
M.QUANTILES = { 0.5, 0.2, 0.8 }
--- The longest time (ms) any one option may ask for (an hour), and the most samples one measurement keeps.
M.MAX_MS, M.MAX_SAMPLES = 3600 * 1000, 1000000

-- The engine's timing functions, bound before the user's script runs (kluabench.trust.integrity).
local ENGINE = { event = core.event, elapsed_ms = core.elapsed_ms, synchronize = core.synchronize,
  flush_l2 = core.flush_l2, clock_ns = core.clock_ns, backend = core.backend, spin = core.spin,
  device_info = core.device_info, interrupted = core.interrupted, nvml = core.nvml, trace = core.trace,
  graph = core.graph }

local function emulated_graph(fn)
  return { emulated = true, free = function() end,
    replay = function(self, n) for _ = 1, n or 1 do fn() end return self end }
end

--- The engine's primitives as a ctx: event, elapsed_ms, synchronize, flush_l2, ..., graph, backend and timer.
-- @signature measure.device() -> ctx
-- @example print(measure.device().timer)
function M.device()
  local e = ENGINE
  local backend = e.backend()
  return {
    event = e.event, elapsed_ms = e.elapsed_ms, synchronize = e.synchronize, flush_l2 = e.flush_l2,
    clock_ns = e.clock_ns, spin = e.spin, device_info = e.device_info, interrupted = e.interrupted, nvml = e.nvml,
    tracer = e.trace, backend = backend, timer = backend == 'cuda' and 'cuda_events' or 'host_monotonic',
    graph = backend == 'cuda' and e.graph or emulated_graph, graph_emulated = backend ~= 'cuda' or nil,
  }
end

--- A ctx with every primitive: the engine's for nil or the engine's bare table, else ctx (a fake).
-- @signature measure.complete([ctx]) -> ctx
-- @example print(measure.complete(nil).timer)
function M.complete(ctx)
  args.check('measure.complete', 1, ctx, 'table|nil', 'device table')
  if ctx == nil or (ctx.event == core.event and ctx.device_info == nil) then return M.device() end
  return ctx
end

--- The L2 size of ctx's device; raises when it reports none.
-- @signature measure.l2_bytes(ctx) -> bytes
-- @example print(measure.l2_bytes(measure.device()))
function M.l2_bytes(ctx)
  args.check('measure.l2_bytes', 1, ctx, 'table', 'device table')
  local ok, info = pcall(ctx.device_info or function() return {} end)
  local l2 = ok and type(info) == 'table' and info.l2_bytes or nil
  if not (type(l2) == 'number' and l2 > 0) then
    error('measure: the device reports no L2 size (device_info().l2_bytes); pass l2_bytes', 3)
  end
  return l2
end

local REQUIRED = { 'event', 'elapsed_ms', 'synchronize', 'flush_l2' }

--- ctx, or an error when it lacks a primitive every protocol needs.
-- @signature measure.check_ctx(fname, ctx) -> ctx
-- @example measure.check_ctx("mine", measure.device())
function M.check_ctx(fname, ctx)
  args.check('measure.check_ctx', 1, fname, 'string', 'function name')
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

--- Defaults of cold, hot and graph (do_bench has its own: do_bench.DEFAULTS).
M.DEFAULTS = {
  warmup_ms = 10,        -- host time spent warming up, at least warmup_min calls
  warmup_min = 3,
  hold = 'auto',         -- spin before each sample: 'auto', false, or ns
  hold_min_ns = 20000,   -- auto hold: 4 x enqueue time + 20 us, within [min, max]
  hold_max_ns = 20000000,
  flush_factor = 2,      -- cold: flush this many times the L2
  batch = 'auto',        -- hot: calls per sample; auto: enough for batch_ms of device time
  batch_ms = 0.2,
  batch_max = 1000,
  rotate = 'auto',       -- graph: input sets; auto: enough to cover margin x L2
  margin = 2,            -- graph: bytes touched between two uses of a set >= margin x L2
  launches = 'auto',     -- graph: launches per graph; auto: a multiple of rotate >= 20
  max_sets = 4096,
  quantiles = M.QUANTILES,
  clocks = true,         -- NVML monitor (inert where there is no NVML)
  event_pairs = 64,      -- cold: empty event intervals timed to calibrate (0: none)
  kernel_trace = false,  -- cold: trace fn's kernels per sample (kb.trace)
}

--- The value of option k in opts, else its default.
-- @signature measure.option(opts, k) -> value
-- @example print(measure.option({}, "warmup_ms")) --> 10
function M.option(opts, k)
  args.check('measure.option', 1, opts, 'table', 'table of options')
  local v = opts[k]
  if v == nil then return M.DEFAULTS[k] end
  return v
end

local NS_MAX = 1e10 -- 10 s: any hold or spin beyond is a typo
local function count(lo, hi, auto)
  return { kind = 'number', min = lo, max = hi, integer = true, one_of = auto and { 'auto' } or nil }
end

--- The options do_bench takes, each a rule {kind, min, max, ...}.
M.DO_BENCH_OPTIONS = {
  warmup_ms = { kind = 'number', min = 0, max = M.MAX_MS },
  rep_ms = { kind = 'number', min = 0, above = true, max = M.MAX_MS }, quantiles = { kind = 'table' },
  return_mode = { kind = 'string' }, before_each = { kind = 'function' }, device = { kind = 'table' },
  flush_bytes = { kind = 'number', min = 0, max = 2 ^ 40, integer = true },
}

--- The options of cold, hot and graph, and do_bench's (but device).
M.OPTIONS = {
  warmup_ms = { kind = 'number', min = 0, max = M.MAX_MS }, warmup_min = count(1, 1e6),
  hold = { kind = 'number', min = 0, max = NS_MAX, one_of = { 'auto', false } },
  hold_min_ns = { kind = 'number', min = 0, max = NS_MAX }, hold_max_ns = { kind = 'number', min = 0, max = NS_MAX },
  flush_factor = { kind = 'number', min = 0, max = 1000 }, batch = count(1, 1e7, true),
  batch_ms = { kind = 'number', min = 0, above = true, max = M.MAX_MS }, batch_max = count(1, 1e7),
  rotate = count(1, 1e6, true), margin = { kind = 'number', min = 1, max = 1000 }, launches = count(1, 1e6, true),
  max_sets = count(1, 1e6), quantiles = { kind = 'table' }, clocks = { kind = 'boolean' },
  event_pairs = count(0, 1e6), kernel_trace = { kind = 'boolean' },
  stop = { kind = 'any' }, -- stopping.from checks it
  l2_bytes = { kind = 'number', min = 0, above = true, max = 2 ^ 40 }, sets = { kind = 'table' },
  make_set = { kind = 'function' }, set_bytes = { kind = 'number', min = 0, above = true, max = 2 ^ 50 },
  allow_warm = { kind = 'boolean' }, name = { kind = 'string' },
  nvml_device = { kind = 'any' }, -- an index or a UUID: clocks.lua checks it
  recovery_ms = { kind = 'number', min = 0, max = M.MAX_MS }, max_drops = count(0, 1e6),
  drop_throttled = { kind = 'boolean' }, keep_graph = { kind = 'boolean' },
}
for k, rule in pairs(M.DO_BENCH_OPTIONS) do if k ~= 'device' and M.OPTIONS[k] == nil then M.OPTIONS[k] = rule end end

local function describe_value(v) return type(v) == 'string' and string.format('%q', v) or tostring(v) end

local function check_value(name, v, rule)
  for _, x in ipairs(rule.one_of or {}) do if v == x then return nil end end
  local k = rule.kind
  if k == 'any' then return nil end
  if k == 'function' then
    if type(v) == 'function' or (getmetatable(v) and getmetatable(v).__call) then return nil end
    return string.format('%s must be a function, got %s', name, type(v))
  end
  if k ~= 'number' then
    if type(v) == k then return nil end
    return string.format('%s must be a %s, got %s', name, k, type(v))
  end
  local alts = rule.one_of and (' or ' .. describe_value(rule.one_of[1])) or ''
  if type(v) ~= 'number' then return string.format('%s must be a number%s, got %s', name, alts, describe_value(v)) end
  local lo, hi = rule.min or -math.huge, rule.max or math.huge
  local ok = v == v and v > -math.huge and v < math.huge
    and (rule.above and v > lo or not rule.above and v >= lo) and v <= hi
    and (not rule.integer or math.type(v) == 'integer' or v == math.floor(v))
  if ok then return nil end
  return string.format('%s must be %s %s %g and at most %g%s, got %s', name, rule.integer and 'a whole number'
    or 'a finite number', rule.above and 'above' or 'from', lo, hi, alts, describe_value(v))
end

--- Checks a table of options against rules (M.OPTIONS, M.DO_BENCH_OPTIONS or one's own); errors name the option.
-- @signature measure.check_options(fname, argn, opts, rules) -> opts
-- @example print(pcall(measure.check_options, "mine", 1, {warmup_ms = -1}, measure.OPTIONS))
function M.check_options(fname, argn, opts, rules)
  args.check('check_options', 1, fname, 'string', 'function name')
  args.check('check_options', 2, argn, 'integer', 'argument number')
  args.check('check_options', 3, opts, 'table', 'table of options')
  args.check('check_options', 4, rules, 'table', 'table of option rules')
  for k, v in pairs(opts) do
    local rule = rules[k]
    if rule == nil then
      local known = {}
      for name in pairs(rules) do known[#known + 1] = name end
      table.sort(known)
      error(string.format("bad argument #%d to '%s' (unknown option '%s'; known: %s)", argn, fname, tostring(k),
        table.concat(known, ', ')), 3)
    end
    local why = check_value(tostring(k), v, rule)
    if why then error(string.format("bad argument #%d to '%s' (%s)", argn, fname, why), 3) end
  end
  return opts
end

local Protocol = {}
Protocol.__index, Protocol.__name = Protocol, 'kluabench.Protocol'

function Protocol:__tostring() return string.format('protocol %s', self.name) end

--- Measures fn: {samples, summary (stats.describe), used, timer, backend, protocol, name, params}; no sample: error.
-- @signature protocol:run(fn [, ctx]) -> result
-- @example
--   local x = kb.randn({4096}, "f32", 1)
--   print(kb.do_bench.do_bench_protocol{rep_ms = 5}:run(function() x:add_(1) end).summary.median)
function Protocol:run(fn, ctx)
  if type(fn) ~= 'function' and not (getmetatable(fn) and getmetatable(fn).__call) then
    error("bad argument #1 to 'run' (function expected, got " .. type(fn) .. ')', 2)
  end
  ctx = ctx or M.device()
  local r = self._run(self, fn, ctx)
  if type(r) ~= 'table' then
    error(string.format("protocol '%s': run returned %s, expected a table with samples", self.name, type(r)), 2)
  end
  if r.samples == nil and #r > 0 then r = { samples = r } end
  if type(r.samples) ~= 'table' or #r.samples == 0 then
    error(string.format("protocol '%s': run produced no samples", self.name), 2)
  end
  r.protocol, r.name, r.params = self, self.name, self.params
  r.used, r.timer, r.backend = r.used or {}, r.timer or ctx.timer, r.backend or ctx.backend
  if type(r.summary) ~= 'table' or type(r.summary.at) ~= 'table' then
    r.summary = stats.describe(r.samples, self.params.quantiles)
  end
  self.last = r
  return r
end

--- What the protocol says of itself for a BenchmarkProtocol document; info: timed, backend, timer.
-- @signature protocol:spec([info]) -> spec
-- @example print(kb.do_bench.do_bench_protocol():spec{backend = "cpu"}.measurement.method)
function Protocol:spec(info) return self._spec(self, info or {}) end

local function default_spec(self, info)
  local params = {}
  for k, v in pairs(self.params) do if type(v) ~= 'function' then params[k] = v end end
  return {
    harness = { name = 'kluabench' },
    measurement = {
      timer = info.timer or ((info.backend or 'cpu') == 'cuda' and 'cuda_events' or 'host_monotonic'),
      primaryStatistic = 'median', method = self.name, parameters = next(params) and params or nil,
    },
  }
end

-- The module of a built-in protocol: the registry loads only the one a run asks for.
local function module_of(name, fname, argn)
  for _, m in ipairs(M.MODES) do if m == name then return require('kluabench.measure.' .. name) end end
  error(string.format("bad argument #%d to '%s' (protocol %s expected, got %s)", argn, fname,
    table.concat(M.MODES, ', ', 1, #M.MODES - 1) .. ' or ' .. M.MODES[#M.MODES], tostring(name)), 3)
end

--- A protocol: a built-in one by name with its parameters, or one of your own from {name, run(self, fn, ctx) ->
-- {samples, ...}, spec(self, info), params, title}.
-- @signature measure.protocol(name [, params]) | measure.protocol{name, run [, spec, params, title]} -> protocol
-- @example
--   local p = measure.protocol{name = "ten-shots", params = {n = 10}, run = function(self, fn, ctx)
--     local out = {}
--     for i = 1, self.params.n do
--       local s, e = ctx.event(), ctx.event()
--       s:record(); fn(); e:record(); ctx.synchronize()
--       out[i] = ctx.elapsed_ms(s, e)
--     end
--     return {samples = out}
--   end}
--   local x = kb.randn({4096}, "f32", 1)
--   print(p:run(function() x:add_(1) end).summary.median)
function M.protocol(def, params)
  if type(def) == 'string' then
    args.check('protocol', 2, params, 'table|nil', 'table of parameters')
    M.check_options('protocol', 2, params or {}, M.OPTIONS)
    return module_of(def, 'protocol', 1).make(params or {})
  end
  if type(def) ~= 'table' then error("bad argument #1 to 'protocol' (table expected, got " .. type(def) .. ')', 2) end
  if type(def.name) ~= 'string' or def.name == '' then
    error("bad argument #1 to 'protocol' (field 'name' must be a non-empty string)", 2)
  end
  if type(def.run) ~= 'function' then error("bad argument #1 to 'protocol' (field 'run' must be a function)", 2) end
  if def.spec ~= nil and type(def.spec) ~= 'function' then
    error("bad argument #1 to 'protocol' (field 'spec' must be a function)", 2)
  end
  if def.params ~= nil and type(def.params) ~= 'table' then
    error("bad argument #1 to 'protocol' (field 'params' must be a table)", 2)
  end
  local p = {}
  for k, v in pairs(def.params or {}) do p[k] = v end
  return setmetatable({ name = def.name, title = def.title or def.name, params = p, _run = def.run,
    _spec = def.spec or default_spec }, Protocol)
end

--- Whether v is a protocol (measure.protocol made it).
-- @signature measure.is_protocol(v) -> boolean
-- @example print(measure.is_protocol(kb.do_bench.do_bench_protocol())) --> true
function M.is_protocol(v) return getmetatable(v) == Protocol end

--- One measurement of fn by a built-in protocol, start to end: its result.
-- @signature measure.run(name, fn [, opts [, ctx]]) -> result
-- @example
--   local x = kb.randn({4096}, "f32", 1)
--   print(measure.run("hot", function() x:add_(1) end, {stop = stopping.count(20)}).summary.median)
function M.run(name, fn, opts, ctx)
  local m = module_of(name, 'run', 1)
  if type(fn) ~= 'function' and not (getmetatable(fn) and getmetatable(fn).__call) then
    error(string.format("bad argument #2 to 'run' (function expected, got %s)", type(fn)), 2)
  end
  args.check('run', 3, opts, 'table|nil', 'table of options')
  M.check_options('run', 3, opts or {}, M.OPTIONS)
  return m.measure(fn, opts or {}, M.complete(ctx))
end

return M
