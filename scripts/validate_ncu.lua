-- Checks kluabench's cold and graph timings of the RoPE kernels against Nsight Compute (run by scripts/validate_ncu.sh).
--
--   kluabench scripts/validate_ncu.lua measure [--out FILE] [--sizes small,medium,large]
--       times llama4_fwd (fused, reference) at each size in the cold mode
--       (twice, interleaved, to check that repeated runs agree), once more
--       in the cold mode with kernel_trace (CUPTI's kernel records per
--       sample; apart, so that tracing cannot slow the other runs), and in
--       the graph mode; one JSON line per measurement to FILE (default stdout)
--   kluabench scripts/validate_ncu.lua target --size S --impl I [--calls N] [--graph yes]
--       the program ncu profiles: the same inputs, N calls (default 30), each
--       after an L2 flush, as the cold mode does; with --graph, the graph
--       mode's graph (same rotated sets, same launches) replayed N times,
--       for ncu --graph-profiling graph
--   kluabench scripts/validate_ncu.lua report --kb FILE --ncu FILE [--calls N]
--       the comparison table (markdown) of the two; exit 1 when a point fails
--       the agreement rule (docs/MEASUREMENT.md): the cold median minus the
--       event pair calibrated in the same session agrees with ncu's
--       gpu__time_duration.sum within max(5 %, 1 us). The raw cold median,
--       CUPTI's kernel records (sum of durations and span), the graph mode
--       and ncu's time of the same graph (--graph-profiling graph) are shown
--       beside it, not judged (docs/MEASUREMENT.md says why).
--
-- Workload: Llama 4's RoPE forward as Liger's benchmark sets it up (batch 1,
-- 32 query heads, 8 key/value heads, head_dim = hidden / 32, bf16, theta
-- 10000), in place (no allocation in the timed region).
local kb = require 'kluabench'
local json = require 'kluabench.util.json'

local SIZES = {
  small = { hidden = 512, seq = 2048 },
  medium = { hidden = 8192, seq = 2048 },
  large = { hidden = 8192, seq = 16384 },
}
local SIZE_ORDER = { 'small', 'medium', 'large' }
local IMPLS = { 'fused', 'reference' }
local Q_HEADS, KV_HEADS, DTYPE = 32, 8, 'bf16'
local TOL_REL, TOL_ABS_MS = 0.05, 0.001

local function die(fmt, ...)
  io.stderr:write('validate_ncu: ', string.format(fmt, ...), '\n')
  os.exit(2)
end

-- --name value options after the subcommand.
local function parse(args)
  local o, i = {}, 2
  while i <= #args do
    local name = args[i]:match('^%-%-(.+)$')
    if not name then die("unexpected argument '%s'", args[i]) end
    o[name] = args[i + 1]
    if o[name] == nil then die('--%s needs a value', name) end
    i = i + 2
  end
  return o
end

-- q, k (seeded, so target and measure see the same values) and freqs.
local function inputs(size, seed)
  local s = SIZES[size] or die("unknown size '%s' (small, medium, large)", tostring(size))
  local d = s.hidden // Q_HEADS
  local q = kb.randn({ 1, s.seq, Q_HEADS, d }, DTYPE, 1000 + seed)
  local k = kb.randn({ 1, s.seq, KV_HEADS, d }, DTYPE, 2000 + seed)
  return q, k, s, d
end

local function call(impl)
  local opts = { impl = impl, inplace = true }
  return function(q, k, freqs) kb.rope.llama4_fwd(q, k, freqs, opts) end
end

---------------------------------------------------------------------------
-- measure
---------------------------------------------------------------------------

local function row(size, impl, mode, r, extra)
  local u = r.used
  local t = {
    size = size, impl = impl, mode = mode, median_ms = r.summary.median, n = #r.samples,
    ci_lo_ms = u.median_ci_ms and u.median_ci_ms.lo, ci_hi_ms = u.median_ci_ms and u.median_ci_ms.hi,
    converged = r.stop.converged, stop = r.stop.reason, hold_ns = u.hold_ns,
    enqueue_ns = u.host_enqueue_ns and u.host_enqueue_ns.median,
    sm_mhz = u.clocks and u.clocks.smMhz and u.clocks.smMhz.median,
    clocks_stable = u.clocks and u.clocks.stable,
    rotate = u.rotation and u.rotation.sets, launches = u.launches,
    event_pair_ms = u.event_pair_ms, minus_pair_ms = u.median_minus_event_pair_ms,
  }
  local kt = u.kernel_trace
  if kt then
    t.kernels = kt.kernelsPerCall
    t.kernel_sum_ms = kt.sumMs and kt.sumMs.median
    t.kernel_span_ms = kt.spanMs and kt.spanMs.median
    t.kernel_names = kt.names
  end
  for k, v in pairs(extra or {}) do t[k] = v end
  return t
end

local function measure_cmd(o)
  local measure, interleave = kb.measure, kb.interleave
  local json = require 'kluabench.util.json'
  local stopping = kb.stopping
  local out = io.stdout
  if o.out then out = assert(io.open(o.out, 'w')) end
  local sizes = {}
  for s in (o.sizes or 'small,medium,large'):gmatch('[^,]+') do sizes[#sizes + 1] = s end
  local stop = stopping.rse_median { target = 0.005, min_samples = 50, timeout_ms = 15000 }
  local function emit(t)
    out:write(json.encode_line(t), '\n')
    out:flush()
    io.stderr:write(string.format('%-6s %-9s %-7s median %8.2f us  n %5d  %s\n', t.size, t.impl,
      t.mode, t.median_ms * 1000, t.n, t.stop))
  end
  for _, size in ipairs(sizes) do
    local q, k, s, d = inputs(size, 0)
    local freqs = kb.rope.freqs(s.seq, d)
    -- cold, twice per impl, all four sessions interleaved (shuffled, seeded)
    local tasks = {}
    for _, impl in ipairs(IMPLS) do
      local f = call(impl)
      for rep = 1, 2 do
        tasks[#tasks + 1] = { name = impl .. '#' .. rep, impl = impl, rep = rep,
          session = require('kluabench.measure.session').new('cold', function() f(q, k, freqs) end, { stop = stop }) }
      end
    end
    local il = interleave.run(tasks, { order = 'shuffle', seed = 20261202 })
    for _, t in ipairs(tasks) do
      emit(row(size, t.impl, 'cold', il.results[t.name], { rep = t.rep, seed = il.seed }))
    end
    -- cold with CUPTI's kernel records, after the others
    for _, impl in ipairs(IMPLS) do
      local f = call(impl)
      local r = measure.run('cold', function() f(q, k, freqs) end, { stop = stop, kernel_trace = true })
      emit(row(size, impl, 'cold_traced', r))
    end
    -- graph: rotated input sets covering 2 x L2, freqs shared
    for _, impl in ipairs(IMPLS) do
      local f = call(impl)
      local seed = 0
      local r = measure.run('graph', function(set) f(set.q, set.k, freqs) end, {
        stop = stop,
        make_set = function()
          seed = seed + 1
          local qq, kk = inputs(size, seed)
          return { q = qq, k = kk }
        end,
      })
      emit(row(size, impl, 'graph', r))
      collectgarbage()
    end
    q:free()
    k:free()
    collectgarbage()
  end
  if out ~= io.stdout then out:close() end
end

---------------------------------------------------------------------------
-- target (what ncu profiles)
---------------------------------------------------------------------------

-- The graph the graph mode replays: the same rotated input sets (seeds 1..n,
-- n from measure.rotate_for, the frequency table shared) and the same
-- 'auto' number of launches; replayed `calls` times, nothing after it, so
-- the last `calls` results of ncu --graph-profiling graph are these.
local function graph_target(size, impl, calls)
  local measure = kb.measure
  local _, _, s, d = inputs(size, 0)
  local freqs = kb.rope.freqs(s.seq, d)
  local f = call(impl)
  local sets = {}
  local q1, k1 = inputs(size, 1)
  sets[1] = { q = q1, k = k1 }
  local n = require('kluabench.measure.graph').rotate_for(q1:nbytes() + k1:nbytes(), kb.device_info().l2_bytes)
  for i = 2, n do
    local q, k = inputs(size, i)
    sets[i] = { q = q, k = k }
  end
  local launches = n * math.ceil(20 / n)
  local g = measure.device().graph(function()
    for i = 1, launches do
      local set = sets[(i - 1) % n + 1]
      f(set.q, set.k, freqs)
    end
  end)
  kb.synchronize()
  for _ = 1, calls do g:replay(1) end
  kb.synchronize()
  io.stderr:write(string.format('graph target: %s %s, %d sets, %d launches per graph, %d replays\n',
    size, impl, n, launches, calls))
end

local function target_cmd(o)
  local size = o.size or die('target needs --size')
  local impl = o.impl or die('target needs --impl')
  if impl ~= 'fused' and impl ~= 'reference' then die("unknown impl '%s'", impl) end
  local calls = math.tointeger(tonumber(o.calls or '30')) or die('--calls must be an integer')
  if o.graph then return graph_target(size, impl, calls) end
  local q, k, s, d = inputs(size, 0)
  local freqs = kb.rope.freqs(s.seq, d)
  local f = call(impl)
  kb.synchronize()
  for _ = 1, calls do
    kb.flush_l2() -- as the cold mode: 2 x L2 overwritten before every call
    f(q, k, freqs)
  end
  kb.synchronize()
  io.stderr:write(string.format('target: %s %s, %d calls\n', size, impl, calls))
end

---------------------------------------------------------------------------
-- report
---------------------------------------------------------------------------

-- One CSV line of ncu's (it quotes every field) as its fields.
local function csv_fields(line)
  local records = require('kluabench.liger.csv').parse_csv(line)
  return records and records[1] or {}
end

local UNIT_NS = { nsecond = 1, ns = 1, usecond = 1e3, us = 1e3, msecond = 1e6, ms = 1e6,
  second = 1e9, s = 1e9 }

-- ncu's CSV (details page) of several runs, each preceded by a line
-- "# size impl" (or "# size impl graph") that validate_ncu.sh writes:
-- {["size impl"] = {ns, ...}} with the durations in launch order.
local function parse_ncu(text)
  local runs, cur, header = {}, nil, nil
  for line in text:gmatch('[^\n]+') do
    local tag = line:match('^# (%S+ %S+ ?%a*)')
    if tag then
      cur = {}
      runs[tag] = cur
      header = nil
    elseif line:sub(1, 1) == '"' and cur then
      local f = csv_fields(line)
      if not header then
        header = {}
        for i, name in ipairs(f) do header[name] = i end
      elseif header['Metric Name'] and f[header['Metric Name']] == 'gpu__time_duration.sum' then
        local unit = f[header['Metric Unit']] or 'nsecond'
        local v = tonumber(((f[header['Metric Value']] or ''):gsub(',', '')))
        local scale = UNIT_NS[unit]
        if v and scale then cur[#cur + 1] = v * scale end
      end
    end
  end
  return runs
end

local median = kb.stats.median

-- Per-call device time from ncu: kernels grouped by call (k per call =
-- total / calls), summed; the first call dropped (warm-up).
local function ncu_per_call(kernels_ns, calls)
  local total = #kernels_ns
  if total == 0 or total % calls ~= 0 then return nil, total end
  local per = total // calls
  local sums = {}
  for c = 2, calls do
    local s = 0
    for j = 1, per do s = s + kernels_ns[(c - 1) * per + j] end
    sums[#sums + 1] = s
  end
  return median(sums) / 1e6, per
end

-- Per-launch time of the graph from ncu --graph-profiling graph: the last
-- `calls` results are the target's replays (the first of them dropped, as a
-- warm-up); median / launches. nil, why when the data does not fit (n/a
-- in the table).
local function ncu_graph_per_launch(rows, calls, launches)
  if not rows or #rows < calls or not launches then return nil, 'no ncu graph data' end
  if #rows >= calls * launches then return nil, 'ncu profiled kernels, not graphs' end
  local last = table.move(rows, #rows - calls + 2, #rows, 1, {})
  return median(last) / 1e6 / launches
end

local function agree(a_ms, b_ms)
  local tol = math.max(TOL_REL * b_ms, TOL_ABS_MS)
  return math.abs(a_ms - b_ms) <= tol, tol
end

local function report_cmd(o)
  local json = require 'kluabench.util.json'
  local kbfile = o.kb or die('report needs --kb FILE')
  local ncufile = o.ncu or die('report needs --ncu FILE')
  local calls = math.tointeger(tonumber(o.calls or '30'))
  local gcalls = math.tointeger(tonumber(o['graph-calls'] or '10'))
  local rows = {}
  for line in assert(io.open(kbfile)):lines() do
    if line:match('%S') then rows[#rows + 1] = assert(json.decode(line)) end
  end
  local ncu = parse_ncu(assert(io.open(ncufile)):read('a'))
  local by = {}
  for _, r in ipairs(rows) do
    local key = r.size .. ' ' .. r.impl
    by[key] = by[key] or {}
    if r.mode == 'cold' then by[key]['cold' .. r.rep] = r else by[key][r.mode] = r end
  end
  local us = function(ms) return ms and string.format('%.2f', ms * 1000) or 'n/a' end
  local rel = function(a, b) return (a and b) and string.format('%+.1f%%', (a / b - 1) * 100) or 'n/a' end
  local lines = {
    '| size | impl | kernels/call | ncu sum us | cold median us | event pair us | cold - pair us '
      .. '| cold - pair vs ncu | cold vs ncu (raw) | CUPTI kernel sum us | CUPTI span us | CUPTI sum vs ncu '
      .. '| graph us/launch | ncu graph us/launch | graph vs ncu graph | cold run 2 in run 1 interval '
      .. '| SM MHz | verdict |',
    '| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: | --- |',
  }
  local failed = 0
  for _, size in ipairs(SIZE_ORDER) do
    for _, impl in ipairs(IMPLS) do
      local key = size .. ' ' .. impl
      local b = by[key]
      if b and b.cold1 then
        local n_ms, per = ncu_per_call(ncu[key] or {}, calls)
        local c1, c2, g, tr = b.cold1, b.cold2, b.graph, b.cold_traced
        local minus = c1.minus_pair_ms
        local sum, span = tr and tr.kernel_sum_ms, tr and tr.kernel_span_ms
        local why = {}
        if not n_ms then why[#why + 1] = 'no ncu data' end
        if not minus then why[#why + 1] = 'no event-pair calibration' end
        local ok, tol
        if n_ms and minus then
          ok, tol = agree(minus, n_ms)
          if not ok then why[#why + 1] = string.format('cold - pair vs ncu > %.2f us', tol * 1000) end
        end
        -- the graph mode beside ncu's time of the same graph (shown, not
        -- judged: ncu's whole-graph time exceeds its own per-kernel time at
        -- the small size, docs/MEASUREMENT.md)
        local g_ncu = ncu_graph_per_launch(ncu[key .. ' graph'], gcalls, g and g.launches)
        local repeat_ok = c2 and c1.ci_lo_ms and c2.median_ms >= c1.ci_lo_ms and c2.median_ms <= c1.ci_hi_ms
        if #why > 0 then failed = failed + 1 end
        lines[#lines + 1] = string.format('| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |',
          size, impl, per or 'n/a', us(n_ms), us(c1.median_ms), us(c1.event_pair_ms), us(minus),
          rel(minus, n_ms), rel(c1.median_ms, n_ms), us(sum), us(span), rel(sum, n_ms),
          us(g and g.median_ms), us(g_ncu), rel(g and g.median_ms, g_ncu), repeat_ok and 'yes' or 'no',
          c1.sm_mhz or 'n/a',
          #why == 0 and string.format('PASS (tol %.2f us)', tol * 1000)
            or ('FAIL: ' .. table.concat(why, '; ')))
      end
    end
  end
  io.stdout:write(table.concat(lines, '\n'), '\n\n')
  io.stdout:write(string.format('Agreement rule: |(cold median - event pair) - ncu| <= max(5%% of '
    .. 'ncu, 1 us). %d of the points failed.\n', failed))
  return failed == 0
end

---------------------------------------------------------------------------

local cmd = arg[1]
if (cmd == 'measure' or cmd == 'target') and kb.backend() ~= 'cuda' then
  -- report reads files anywhere; measure and target time what Nsight Compute profiles: a usage error on the cpu
  io.stderr:write('validate_ncu.lua: needs a GPU (the cuda backend; this is ', kb.backend(), '): ', cmd,
    ' times kernels for Nsight Compute to check; run it on a GPU machine\n')
  os.exit(2)
end
if cmd == 'measure' then measure_cmd(parse(arg))
elseif cmd == 'target' then target_cmd(parse(arg))
elseif cmd == 'report' then os.exit(report_cmd(parse(arg)) and 0 or 1)
else
  io.stderr:write('usage: kluabench scripts/validate_ncu.lua measure|target|report [options]\n')
  os.exit(2)
end
