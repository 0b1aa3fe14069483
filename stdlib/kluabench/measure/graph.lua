--- The graph protocol: one CUDA graph replay per sample, cycling through input sets whose bytes
-- keep the caches cold; docs/MEASUREMENT.md.
local args = require 'kluabench.util.args'
local measure = require 'kluabench.measure'
local session = require 'kluabench.measure.session'

local M = { name = 'graph' }

local ceil, min = math.ceil, math.min
local opt = measure.option

--- Whether rotating input sets keeps the caches cold: min over sets of (total - own) >= margin x L2.
--
-- private_bytes lists, per set, the bytes only that set touches; margin defaults to 2. One set
-- never passes. The graph mode refuses to run when this fails.
--
-- private_bytes is a list with, for each set, the bytes that belong to it alone. The rule: min over
-- i of (total - private_bytes[i]) >= margin x l2_bytes with margin 2 by default (replacement is not
-- perfect LRU; writes allocate lines too). Returns ok, info = {sets, total_bytes, between_bytes,
-- required_bytes, l2_bytes, margin}.
--
-- @signature measure.rotation_check(private_bytes, l2_bytes [, margin]) -> ok, info
-- @example
--   local ok, info = measure.rotation_check({64e6, 64e6, 64e6}, 50e6)
--   print(ok, info.required_bytes)
function M.rotation_check(private_bytes, l2_bytes, margin)
  margin = margin or measure.DEFAULTS.margin
  if type(private_bytes) ~= 'table' then
    error("bad argument #1 to 'rotation_check' (list of bytes per set expected)", 2)
  end
  if type(l2_bytes) ~= 'number' or l2_bytes <= 0 then
    error("bad argument #2 to 'rotation_check' (L2 size in bytes > 0 expected)", 2)
  end
  if type(margin) ~= 'number' or margin < 1 then
    error("bad argument #3 to 'rotation_check' (margin >= 1 expected)", 2)
  end
  local n, total = #private_bytes, 0
  for i = 1, n do total = total + private_bytes[i] end
  local between = n >= 2 and math.huge or 0
  for i = 1, n do between = min(between, total - private_bytes[i]) end
  local info = { sets = n, total_bytes = total, between_bytes = between,
    required_bytes = margin * l2_bytes, l2_bytes = l2_bytes, margin = margin }
  return between >= margin * l2_bytes, info
end

--- The number of sets of set_bytes each that passes rotation_check.
--
-- @signature measure.rotate_for(set_bytes, l2_bytes [, margin]) -> n
-- @example
--   print(measure.rotate_for(16e6, 50e6)) -- sets needed on a 50 MB L2
function M.rotate_for(set_bytes, l2_bytes, margin)
  if type(set_bytes) ~= 'number' or set_bytes <= 0 then
    error("bad argument #1 to 'rotate_for' (bytes per set > 0 expected)", 2)
  end
  margin = margin or measure.DEFAULTS.margin
  return ceil(margin * l2_bytes / set_bytes) + 1
end

local function mib(b) return string.format('%.1f MiB', b / 1048576) end

--- The refusal message for a rotation that fails rotation_check.
--
-- @signature measure.rotation_message(info, set_bytes) -> text
-- @example
--   local ok, info = measure.rotation_check({1e6}, 50e6)
--   if not ok then print(measure.rotation_message(info, 1e6)) end
function M.rotation_message(info, set_bytes)
  args.check('measure.rotation_message', 1, info, 'table', 'rotation info')
  args.check('measure.rotation_message', 2, set_bytes, 'number', 'bytes per set')
  local need = set_bytes and set_bytes > 0
    and string.format('; use rotate >= %d (or rotate = "auto")',
      M.rotate_for(set_bytes, info.l2_bytes, info.margin))
    or ''
  return string.format('graph mode refused: the rotation of %d input set(s) touches %s between '
    .. 'two uses of one set, under %g x L2 = %s, so caches would be warm%s, or pass allow_warm = '
    .. 'true to measure warm caches on purpose', info.sets, mib(info.between_bytes), info.margin,
    mib(info.required_bytes), need)
end

-- The tensors in a set (a tensor, or a table holding tensors up to three
-- levels down): anything with an nbytes method.
local function tensor_bytes(v)
  local ok, f = pcall(function() return v.nbytes end)
  if ok and type(f) == 'function' then
    local ok2, b = pcall(f, v)
    if ok2 and type(b) == 'number' then return b end
  end
  return nil
end

local function collect_tensors(v, out, depth)
  local t = type(v)
  if t ~= 'table' and t ~= 'userdata' then return end
  local b = tensor_bytes(v)
  if b then
    out[v] = b
    return
  end
  if t == 'table' and depth < 3 then
    for _, x in pairs(v) do collect_tensors(x, out, depth + 1) end
  end
end

--- The bytes private to each input set, found by tensor identity (a shared tensor counts for none).
--
-- Returns private (list), shared_bytes.
--
-- @signature measure.rotation_bytes(sets) -> private, shared_bytes
-- @example
--   local q, f = kb.randn({1, 128, 32, 16}, "bf16", 1), kb.rope.freqs(128, 16)
--   local private, shared = measure.rotation_bytes({{q = q, f = f}, {q = q:clone(), f = f}})
--   print(private[1], private[2], shared) -- each set's q is its own; f is shared
function M.rotation_bytes(sets)
  args.check('measure.rotation_bytes', 1, sets, 'table', 'list of input sets')
  local owners, bytes = {}, {}
  for i, s in ipairs(sets) do
    local ts = {}
    collect_tensors(s, ts, 0)
    for t, b in pairs(ts) do
      bytes[t] = b
      owners[t] = owners[t] and (owners[t] == i and i or 0) or i
    end
  end
  local private, shared = {}, 0
  for i = 1, #sets do private[i] = 0 end
  for t, o in pairs(owners) do
    if o == 0 then shared = shared + bytes[t] else private[o] = private[o] + bytes[t] end
  end
  return private, shared
end

-- The input sets of the graph mode, checked against the L2.
local function graph_sets(self)
  local o = self.opts
  local l2 = o.l2_bytes or measure.l2_bytes(self.ctx)
  local margin = opt(o, 'margin')
  local sets = o.sets
  if sets == nil and o.make_set then
    local rotate = opt(o, 'rotate')
    sets = { o.make_set(1) }
    if rotate == 'auto' then
      local private = M.rotation_bytes(sets)
      local b = o.set_bytes or private[1]
      if not (b and b > 0) then
        error('graph mode: make_set(1) returned no tensors; give set_bytes or sets', 3)
      end
      rotate = min(M.rotate_for(b, l2, margin), opt(o, 'max_sets'))
    elseif math.type(rotate) ~= 'integer' or rotate < 1 then
      error("graph mode: rotate must be 'auto' or an integer >= 1, got " .. tostring(rotate), 3)
    end
    for i = 2, rotate do sets[i] = o.make_set(i) end
  end
  if sets == nil then
    if not o.allow_warm then
      error('graph mode refused: no input sets to rotate (give sets or make_set), so every launch '
        .. 'would read the same, cached data; pass allow_warm = true to measure warm caches on '
        .. 'purpose', 3)
    end
    sets = { false }
  end
  local private, shared = M.rotation_bytes(sets)
  if o.set_bytes then
    for i = 1, #sets do private[i] = o.set_bytes end
  end
  local ok, info = M.rotation_check(private, l2, margin)
  info.shared_bytes = shared
  if not ok and not o.allow_warm then error(M.rotation_message(info, private[1]), 3) end
  self.used.rotation = { sets = info.sets, totalBytes = info.total_bytes,
    betweenBytes = info.between_bytes ~= math.huge and info.between_bytes or nil,
    requiredBytes = info.required_bytes, sharedBytes = shared, l2Bytes = l2, margin = margin,
    cold = ok }
  self.used.l2_bytes = l2
  return sets
end

-- graph: hold, start, replay (launches calls of fn over the rotated sets), end.
function M.setup(self, fn)
  local ctx = self.ctx
  if not ctx.graph then error('graph mode: ctx has no graph function', 3) end
  local sets = graph_sets(self)
  local n = #sets
  local launches = opt(self.opts, 'launches')
  if launches == 'auto' then
    launches = n * ceil(20 / n)
  elseif math.type(launches) ~= 'integer' or launches < 1 then
    error("graph mode: launches must be 'auto' or an integer >= 1, got " .. tostring(launches), 3)
  end
  local g = ctx.graph(function()
    for i = 1, launches do
      local k = (i - 1) % n + 1
      fn(sets[k] or nil, k)
    end
  end)
  self.graph = g
  self.sets = sets
  self.used.launches = launches
  self.used.graph = g.emulated and 'emulated (cpu backend: fn called on every replay)' or 'cuda graph'
  local e0, e1 = ctx.event(), ctx.event()
  local function body() g:replay(1) end
  local function once()
    local ms, enq = session.timed_once(ctx, e0, e1, body)
    return ms / launches, enq
  end
  self.warmup_fn = function()
    local _, enq = session.warm(self, once)
    session.set_hold(self, enq, 1)
  end
  self.take = function() return session.held_sample(self, e0, e1, body, launches) end
  -- an audit replays the graph: set 1 goes through fn once per n launches
  self.audit_calls, self.audit_per = math.ceil(launches / n), launches
end

-- What the record says the mode measured and kept out.
M.what = {
  title = 'kluabench graph protocol',
  method = 'kluabench.measure.graph',
  l2Flush = 'none inside the graph: the launches cycle through input sets whose private bytes '
    .. 'touched between two uses of one set are at least margin x L2 (refused otherwise)',
  launchOverhead = 'kept out: one graph launch per sample, queued behind a spin kernel; '
    .. 'inter-kernel gaps of the graph stay in',
  sample = 'device time of one graph replay divided by the launches in the graph',
  hides = 'host launch overhead per call (one graph launch for all)',
}

--- This protocol as a value (measure.protocol("graph", params) makes it).
function M.make(params) return session.protocol(M, params) end

--- One measurement of fn by this protocol (measure.run("graph", fn, opts, ctx)).
function M.measure(fn, opts, ctx) return session.measure(M, fn, opts, ctx) end

return M
