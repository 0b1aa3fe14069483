--- Timing modes: named protocols that each measure a function a different
-- way, keep every raw sample, and say in the record what they measured and
-- what they kept out. docs/MEASUREMENT.md explains each one.
--
--   cold      L2 flushed before every sample (outside the timed region); the
--             stream held behind a spin kernel while the start event, fn and
--             the end event are enqueued, so host launch overhead is not in
--             the device time. One sample = one call of fn.
--   hot       no flush; a batch of back-to-back calls between two events,
--             the stream held the same way. One sample = batch time / batch.
--             Caches are warm: this is throughput on resident data.
--   graph     fn captured `launches` times into a CUDA graph that cycles
--             through `rotate` input sets; refuses to run when the sets do
--             not cover the L2 (measure.rotation_check). One sample = one
--             replay / launches.
--   do_bench  do_bench.do_bench (triton's algorithm), for comparability with
--             Liger's numbers.
--
-- The cold mode also measures, during its warm-up, what an event pair with
-- nothing between costs on this device (event_pairs intervals held the same
-- way: 1.3 us on an H200), and reports the median minus it as an estimate
-- of the kernel-only time; the samples stay raw. With kernel_trace = true it
-- also records, per sample, the device's own start and end of every kernel
-- and copy fn ran (kb.trace: CUPTI on cuda), so each sample has a sum of
-- kernel durations (what Nsight Compute's gpu__time_duration adds up) and a
-- span (first start to last end: device time without the events).
--
-- Each sample also records the host time spent enqueueing fn (ns, the host
-- clock read around the call), so host overhead and device time are
-- reported apart. Between the start and the end event only fn runs (and, in
-- cold/graph/hot, two reads of the host clock, C functions of ~30 ns; the
-- held stream makes them invisible to the device anyway).
--
--   local measure = require 'kluabench.measure'
--   local r = measure.run('cold', function() kb.rope.llama4_fwd(q, k, f) end)
--   print(r.summary.median, r.used.stop.reason)
--   local p = measure.protocol('cold', { stop = stopping.rse_median { target = 0.01 } })
--   local r2 = p:run(fn)        -- a bench protocol value: records for free
--
-- The files: protocol_base.lua (protocol values, the engine's device table,
-- option checks), options.lua (defaults and rules), device.lua (the ctx),
-- modes.lua (the one list of modes), one file per mode (cold.lua, hot.lua,
-- graph.lua; do_bench.lua is triton's algorithm), sample.lua (what the modes'
-- samples share), rotation.lua (the graph mode's warm-cache check),
-- trace.lua (kernel_trace), session.lua (sample-at-a-time measurement),
-- protocol.lua (modes as record protocols), run.lua (measure.run: one
-- measurement in any mode), stopping.lua, clocks.lua and interleave.lua.
-- This file gathers their API as `measure`.
local options = require 'kluabench.measure.options'
local device = require 'kluabench.measure.device'
local rotation = require 'kluabench.measure.rotation'
local trace = require 'kluabench.measure.trace'
local session = require 'kluabench.measure.session'
local protocol = require 'kluabench.measure.protocol'
local run = require 'kluabench.measure.run'

local M = {}

M.MODES = require('kluabench.measure.modes').NAMES

M.DEFAULTS = options.DEFAULTS
M.OPTIONS = options.OPTIONS
M.device = device.device
M.complete = device.complete
M.rotation_check = rotation.rotation_check
M.rotate_for = rotation.rotate_for
M.rotation_message = rotation.rotation_message
M.rotation_bytes = rotation.rotation_bytes
M.trace_totals = trace.trace_totals
M.session = session.session
M.protocol = protocol.protocol
M.run = run.run

return M
