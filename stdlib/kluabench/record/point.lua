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
--   sessions, noise_sd, implausible, rel_l2, sm_mhz, energy_j, energy_j_min,
--   energy_j_max, power_w; kluabench.record.measurements)
--   memory_median, memory_p20, memory_p80, memory_unit   of a memory run
--   samples_ms | samples_why the raw samples of the session (ms), or why none
--   session                  {index, count}
--   evidence                 the evidence entry (execution, check, throughput,
--                            annotations, reasons, device), or {}
local view = require 'kluabench.record.view'

local get = require('kluabench.util.json').get

local M = {}

--- A latencyNs value in ns: an integer, or a "<number> ns|us|ms|s" string as the schema allows.
--
-- @signature point.duration_ns(v) -> number | nil
-- @kind function
-- @example
--   print(point.duration_ns("1.5 us")) --> 1500.0
M.duration_ns = view.duration_ns

--- The point of a bundle (see the module's comment); fields that the bundle does not have are nil.
-- It is made anew at each call: bundles may change.
--
-- @signature point.of(bundle) -> point
-- @example
--   local x = kb.randn({4096}, "f32", 1)
--   local r = kb.do_bench.do_bench_protocol{rep_ms = 5}:run(function() x:add_(1) end)
--   local bundle = record.from_result{kernel = "add", mode = "forward", provider = "add_", dtype = "f32", result = r}
--   local p = point.of(bundle)
--   print(p.kernel, p.mode, p.provider, p.id, p.median_ns)
function M.of(b)
  if type(b) ~= 'table' then
    error("bad argument #1 to 'point.of' (bundle expected, got " .. type(b) .. ')', 2)
  end
  local migrate = require 'kluabench.record.migrate'
  if migrate.is_old(b) then b = migrate.bundle(b) end
  return view.of(b)
end

--- A label for people of a bundle's point ("llama4_rope forward hidden512-...-bf16") and its
-- provider. p: the bundle's point.of when the caller has it already (it is not made again).
--
-- @signature point.label_of(bundle [, p]) -> label, provider
-- @example
--   local x = kb.randn({4096}, "f32", 1)
--   local r = kb.do_bench.do_bench_protocol{rep_ms = 5}:run(function() x:add_(1) end)
--   local bundle = record.from_result{kernel = "add", mode = "forward", provider = "add_", dtype = "f32", result = r}
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
