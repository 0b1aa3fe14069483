-- The device as the timing modes see it: do_bench.device() plus what they
-- need beyond do_bench (spin, graphs, device facts, interrupts, NVML,
-- kernel tracing).
local bench = require 'kluabench.measure.do_bench'

-- bound when this module loads, before the user's script (see protocol_base.lua)
local ENGINE = (function()
  local kb = require 'kluabench.core'
  return { spin = kb.spin, device_info = kb.device_info, interrupted = kb.interrupted, nvml = kb.nvml,
    trace = kb.trace, graph = kb.graph }
end)()

local M = {}
local args = require 'kluabench.util.args'

-- A stand-in for kb.graph on the cpu backend, where no capture exists: the
-- "graph" calls the captured function again on every replay. Results on cpu
-- are host times anyway; this keeps the graph mode runnable (and testable)
-- there, and the record says it was emulated.
local function emulated_graph(fn)
  return {
    emulated = true,
    replay = function(self, n)
      for _ = 1, n or 1 do fn() end
      return self
    end,
    free = function() end,
  }
end

--- do_bench.device() plus spin, graph, device_info, interrupted and nvml.
--
-- The engine's primitives as a ctx table: do_bench.device() plus spin, graph, device_info,
-- interrupted, nvml.
--
-- @signature measure.device() -> ctx
-- @example
--   local ctx = measure.device()
--   print(ctx.backend)
function M.device()
  local kb = ENGINE
  local ctx = bench.device()
  ctx.spin = kb.spin
  ctx.device_info = kb.device_info
  ctx.interrupted = kb.interrupted
  ctx.nvml = kb.nvml
  ctx.tracer = kb.trace
  if ctx.backend == 'cuda' then
    ctx.graph = kb.graph
  else
    ctx.graph = emulated_graph
    ctx.graph_emulated = true
  end
  return ctx
end

--- ctx with what the modes need: the engine's ctx becomes measure.device(); a test's fake stays as
-- it is.
--
-- @signature measure.complete([ctx]) -> ctx
-- @example
--   local ctx = measure.complete(do_bench.device())
function M.complete(ctx)
  args.check('measure.complete', 1, ctx, 'table|nil', 'device table')
  if ctx == nil then return M.device() end
  local ok, kb = pcall(require, 'kluabench.core')
  if ok and type(kb) == 'table' and ctx.event == kb.event and ctx.device_info == nil then
    return M.device()
  end
  return ctx
end

-- The L2 size of ctx's device (for the cold flush and the graph rotation);
-- an error at the caller's caller's level when the device does not say.
function M.l2_bytes(ctx)
  local ok, info = pcall(ctx.device_info or function() return {} end)
  local l2 = ok and type(info) == 'table' and info.l2_bytes or nil
  if not (type(l2) == 'number' and l2 > 0) then
    error('measure: the device reports no L2 size (device_info().l2_bytes); pass l2_bytes', 3)
  end
  return l2
end

return M
