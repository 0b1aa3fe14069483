-- The graph mode: fn captured `launches` times into a CUDA graph that
-- cycles through `rotate` input sets (refused when the sets do not cover
-- the L2: rotation.lua); one sample = one replay / launches. On the cpu
-- backend the graph is emulated (device.lua).
local sample = require 'kluabench.measure.sample'
local options = require 'kluabench.measure.options'
local device = require 'kluabench.measure.device'
local rotation = require 'kluabench.measure.rotation'

local M = {}

local ceil, min = math.ceil, math.min
local opt = options.get

-- The input sets of the graph mode, checked against the L2.
local function graph_sets(self)
  local o = self.opts
  local l2 = o.l2_bytes or device.l2_bytes(self.ctx)
  local margin = opt(o, 'margin')
  local sets = o.sets
  if sets == nil and o.make_set then
    local rotate = opt(o, 'rotate')
    sets = { o.make_set(1) }
    if rotate == 'auto' then
      local private = rotation.rotation_bytes(sets)
      local b = o.set_bytes or private[1]
      if not (b and b > 0) then
        error('graph mode: make_set(1) returned no tensors; give set_bytes or sets', 3)
      end
      rotate = min(rotation.rotate_for(b, l2, margin), opt(o, 'max_sets'))
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
  local private, shared = rotation.rotation_bytes(sets)
  if o.set_bytes then
    for i = 1, #sets do private[i] = o.set_bytes end
  end
  local ok, info = rotation.rotation_check(private, l2, margin)
  info.shared_bytes = shared
  if not ok and not o.allow_warm then error(rotation.rotation_message(info, private[1]), 3) end
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
    local ms, enq = sample.timed_once(ctx, e0, e1, body)
    return ms / launches, enq
  end
  self.warmup_fn = function()
    local _, enq = sample.warm(self, once)
    sample.set_hold(self, enq, 1)
  end
  self.take = function() return sample.held_sample(self, e0, e1, body, launches) end
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

return M
