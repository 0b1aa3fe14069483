-- Llama 4 RoPE timed the way Liger-Kernel's llama4_rope benchmark times it, written as kernelindex records.
--
-- Workload as Liger's benchmark_llama4_rope.py: batch 1, q [1, seq, q_heads,
-- hidden / q_heads], k [1, seq, kv_heads, hidden / q_heads], bf16, rope theta
-- 10000; the hidden sweep {512, 2048, 8192} at seq 2048 and the sequence
-- sweep {1024, ..., 16384} at hidden 8192; modes forward, backward (given
-- random upstream gradients for q and k) and full; providers fused (one
-- kernel for q and k) and reference (PyTorch eager's op sequence).
-- Every provider's output is checked against the cpu reference on the same
-- inputs before it is timed; a wrong kernel stops the run with an error.
local kb = require 'kluabench'
local bench, record, output, names, envmod = kb.bench, kb.record, kb.output, kb.names, kb.env

local HIDDEN_SWEEP = { 512, 2048, 8192 }
local SEQ_SWEEP = { 1024, 2048, 4096, 8192, 16384 }
local MODES = { 'forward', 'backward', 'full' }
-- copy: one device-to-device copy of q's and k's bytes (two for full), the
-- bandwidth ceiling of the same traffic under the same protocol. (It does
-- not read the (cos, sin) table, which the workload's bytes count: about
-- 2.5 % of them in bf16 with 32 + 8 heads, so copy's GB/s reads that much high.)
local PROVIDERS = { 'fused', 'reference', 'copy' }
local FORMATS = { table = true, markdown = true, kernelindex = true, jsonl = true, ['liger-csv'] = true }
local DTYPES = { bf16 = true, f16 = true, f32 = true, f64 = true }
local THETA = 10000.0
local SEEDS = { q = 1, k = 2, dq = 3, dk = 4 }

-- Largest |difference| and relative L2 error allowed against the cpu
-- reference. The kernels promise bit-identical results (kernels/rope.h);
-- the tolerances leave room for one rounding step of the dtype, so a
-- changed evaluation order passes and a wrong kernel does not.
local TOLERANCE = {
  bf16 = { abs = 2 ^ -4, rel = 1e-2 },
  f16 = { abs = 2 ^ -7, rel = 2e-3 },
  f32 = { abs = 1e-5, rel = 1e-6 },
  f64 = { abs = 1e-12, rel = 1e-14 },
}

local USAGE = [[
usage: kluabench scripts/llama4_rope.lua [options]

Times Llama 4 rotary position embedding (kb.rope.llama4_fwd / llama4_bwd) the
way Liger-Kernel's llama4_rope benchmark does (bench.do_bench = the algorithm
of triton.testing.do_bench) and writes one kernelindex bundle per point.
With no options: hidden 512, seq 2048, backward, fused (the point of
shared/reference/kernelindex-record-example.json); prints the table and
appends the bundle to results/llama4_rope-<UTC time>.jsonl.

  --hidden N        hidden size (default 512; 8192 in the seq sweep)
  --seq N           sequence length (default 2048)
  --mode M          forward, backward, full or all (default backward; all in a sweep)
  --provider P      fused, reference, copy or all (default fused; all in a sweep);
                    copy = a device-to-device copy of q's and k's bytes (twice
                    for full): the ceiling for the same traffic and protocol
  --sweep S         hidden ({512, 2048, 8192} at --seq), seq ({1024..16384}
                    at --hidden) or all (both)
  --dtype D         bf16 (default), f16, f32, f64
  --q-heads N       query heads (default 32); head_dim = hidden / q-heads
  --kv-heads N      key/value heads (default 8)
  --rep-ms MS       do_bench repetition time (default 400, Liger's)
  --warmup-ms MS    do_bench warm-up time (default 25)
  --protocol P      do_bench (default: triton's algorithm, as Liger times), or one of
                    kluabench's modes (docs/MEASUREMENT.md): cold (L2 flushed, launch
                    overhead kept out), hot (back-to-back, warm caches), graph (CUDA
                    graph replay over rotated input sets that exceed the L2)
  --format F        table (default): the table on stdout, the bundles appended
                      as JSON Lines to --out (default results/llama4_rope-<time>.jsonl);
                    markdown: the same with the table in markdown (for pull requests);
                    jsonl: bundles as JSON Lines to --out or stdout;
                    kernelindex: pretty JSON (one bundle, or an array) to --out or stdout;
                    liger-csv: Liger's CSV to --out or stdout.
                    With the last three the table goes to stderr.
  --out PATH        where the bundles go (see --format)
  --help            this text

The table and every record carry GB/s (the workload's minimal bytes over
the median) and, once scripts/ceilings.lua has cached this device's copy
ceiling (under $KLUABENCH_CACHE, default ~/.cache/kluabench), % of it.

Timed functions run in place (inplace = true), so no allocation falls inside
the timed region; the traffic is the same as out of place. On the cpu
backend the times are CPU times and the records say so (timer host_monotonic).

Ctrl-C (SIGINT) or SIGTERM during a sweep: the point being measured is
finished and written, the table of the finished points is printed, and the
exit status is 130 (SIGINT) or 143 (SIGTERM); a second signal stops at once.]]

---------------------------------------------------------------------------
-- Options
---------------------------------------------------------------------------

local function die(fmt, ...)
  io.stderr:write('llama4_rope: ', string.format(fmt, ...), '\n')
  os.exit(2)
end

local OPTIONS = {
  hidden = 'int', seq = 'int', mode = 'string', provider = 'string', sweep = 'string',
  dtype = 'string', ['q-heads'] = 'int', ['kv-heads'] = 'int', ['rep-ms'] = 'number',
  ['warmup-ms'] = 'number', format = 'string', out = 'string', help = 'flag', protocol = 'string',
}

local function parse_args(args)
  local o = {}
  local i = 1
  while i <= #args do
    local a = args[i]
    local name, value = a:match('^%-%-([%w-]+)=(.*)$')
    name = name or a:match('^%-%-([%w-]+)$')
    if a == '-h' then name = 'help' end
    local kind = name and OPTIONS[name]
    if not kind then die("unrecognized argument '%s' (see --help)", a) end
    if kind == 'flag' then
      o[name] = true
    else
      if value == nil then
        i = i + 1
        value = args[i]
        if value == nil then die("option '--%s' needs a value", name) end
      end
      if kind == 'int' then
        local n = math.tointeger(tonumber(value))
        if not n or n <= 0 then die("option '--%s' needs a positive integer, got '%s'", name, value) end
        value = n
      elseif kind == 'number' then
        local n = tonumber(value)
        if not n or n <= 0 then die("option '--%s' needs a positive number, got '%s'", name, value) end
        value = n
      end
      o[name] = value
    end
    i = i + 1
  end
  return o
end

local function choice(name, value, list)
  if value == 'all' then return list end
  for _, v in ipairs(list) do if v == value then return { v } end end
  die("option '--%s' must be %s or all, got '%s'", name, table.concat(list, ', '), value)
end

local opts = parse_args(arg or {})
if opts.help then
  io.stdout:write(USAGE, '\n')
  os.exit(0)
end

local dtype = opts.dtype or 'bf16'
if not DTYPES[dtype] then die("option '--dtype' must be bf16, f16, f32 or f64, got '%s'", dtype) end
local format = opts.format or 'table'
if not FORMATS[format] then
  die("option '--format' must be table, markdown, kernelindex, jsonl or liger-csv, got '%s'", format)
end
local q_heads, kv_heads = opts['q-heads'] or 32, opts['kv-heads'] or 8
local sweep = opts.sweep
if sweep and sweep ~= 'hidden' and sweep ~= 'seq' and sweep ~= 'all' then
  die("option '--sweep' must be hidden, seq or all, got '%s'", sweep)
end
local modes = choice('mode', opts.mode or (sweep and 'all' or 'backward'), MODES)
local providers = choice('provider', opts.provider or (sweep and 'all' or 'fused'), PROVIDERS)

-- The points: {hidden, seq, axis}; axis is the swept parameter (Liger's x).
local points = {}
if sweep == 'hidden' or sweep == 'all' then
  for _, h in ipairs(HIDDEN_SWEEP) do points[#points + 1] = { hidden = h, seq = opts.seq or 2048, axis = 'hidden' } end
end
if sweep == 'seq' or sweep == 'all' then
  for _, s in ipairs(SEQ_SWEEP) do points[#points + 1] = { hidden = opts.hidden or 8192, seq = s, axis = 'seq' } end
end
if not sweep then points[1] = { hidden = opts.hidden or 512, seq = opts.seq or 2048, axis = 'hidden' } end
for _, p in ipairs(points) do
  if p.hidden % q_heads ~= 0 or (p.hidden // q_heads) % 2 ~= 0 then
    die('hidden %d is not a multiple of 2 x q-heads (%d): head_dim must be an even integer', p.hidden,
      q_heads)
  end
end

---------------------------------------------------------------------------
-- Checking a provider against the cpu reference
---------------------------------------------------------------------------

local function free(...)
  for i = 1, select('#', ...) do
    local t = select(i, ...)
    if t then t:free() end
  end
end

local function compare(what, got, want, tol, ctx)
  local got_cpu = got:to('cpu')
  local mad, rel = kb.max_abs_diff(got_cpu, want), kb.rel_l2(got_cpu, want)
  if got_cpu ~= got then got_cpu:free() end
  if not (mad <= tol.abs and rel <= tol.rel) then
    error(string.format('llama4_rope: WRONG RESULT: provider %s, %s of %s differs from the cpu '
      .. 'reference: max |diff| %.6g (allowed %.3g), rel_l2 %.6g (allowed %.3g); not timed',
      ctx.provider, what, ctx.label, mad, tol.abs, rel, tol.rel), 0)
  end
  return mad, rel
end

-- Runs provider on the point's device tensors and the cpu reference on cpu
-- copies of the same inputs; raises on a difference beyond TOLERANCE.
-- Returns the check record for run.spec.check.
local function check(provider, t, label, need_fwd, need_bwd)
  local tol = TOLERANCE[dtype]
  if provider == 'copy' then
    t.dst:copy_(t.src)
    local mad = kb.max_abs_diff(t.dst, t.src)
    if mad ~= 0 then error('llama4_rope: WRONG RESULT: the copy of ' .. label .. ' differs by ' .. mad, 0) end
    return { reference = 'the source buffer', passed = true, maxAbsDiff = 0, relL2 = 0,
      tolerance = { maxAbsDiff = 0, relL2 = 0 } }
  end
  local ctx = { provider = provider, label = label }
  local cq, ck, cf = t.q:to('cpu'), t.k:to('cpu'), t.freqs:to('cpu')
  local worst_abs, worst_rel = 0, 0
  local function note(mad, rel)
    worst_abs, worst_rel = math.max(worst_abs, mad), math.max(worst_rel, rel)
  end
  if need_fwd then
    local qo, ko = kb.rope.llama4_fwd(t.q, t.k, t.freqs, { impl = provider })
    local rq, rk = kb.rope.llama4_fwd(cq, ck, cf, { impl = 'reference' })
    note(compare('forward q_out', qo, rq, tol, ctx))
    note(compare('forward k_out', ko, rk, tol, ctx))
    free(qo, ko, rq, rk)
  end
  if need_bwd then
    local cdq, cdk = t.dq:to('cpu'), t.dk:to('cpu')
    local gq, gk = kb.rope.llama4_bwd(t.dq, t.dk, t.freqs, { impl = provider })
    local rq, rk = kb.rope.llama4_bwd(cdq, cdk, cf, { impl = 'reference' })
    note(compare('backward dq', gq, rq, tol, ctx))
    note(compare('backward dk', gk, rk, tol, ctx))
    free(gq, gk, rq, rk, cdq ~= t.dq and cdq or nil, cdk ~= t.dk and cdk or nil)
  end
  free(cq ~= t.q and cq or nil, ck ~= t.k and ck or nil, cf ~= t.freqs and cf or nil)
  return {
    reference = 'kb.rope llama4 impl=reference on the cpu backend, same inputs',
    passed = true,
    maxAbsDiff = worst_abs,
    relL2 = worst_rel,
    tolerance = { maxAbsDiff = tol.abs, relL2 = tol.rel },
  }
end

---------------------------------------------------------------------------
-- Timing
---------------------------------------------------------------------------

local TIMED = {
  forward = 'the forward pass (kb.rope.llama4_fwd of q and k, in place)',
  backward = 'the backward pass given random upstream gradients for q and k '
    .. '(kb.rope.llama4_bwd, in place)',
  full = 'the forward pass followed by the backward pass (kb.rope.llama4_fwd then '
    .. 'kb.rope.llama4_bwd, in place)',
}

-- The timed function. In graph mode it is called with one of the rotated
-- input sets (tables like t); otherwise it always works on t.
local function timed_fn(mode, provider, t)
  if provider == 'copy' then
    local twice = mode == 'full'
    return function(set)
      set = set or t
      set.dst:copy_(set.src)
      if twice then set.src:copy_(set.dst) end
    end
  end
  local o = { impl = provider, inplace = true }
  local fwd, bwd = kb.rope.llama4_fwd, kb.rope.llama4_bwd
  local f = t.freqs
  if mode == 'forward' then
    return function(set) set = set or t; fwd(set.q, set.k, f, o) end
  elseif mode == 'backward' then
    return function(set) set = set or t; bwd(set.dq, set.dk, f, o) end
  end
  return function(set)
    set = set or t
    fwd(set.q, set.k, f, o)
    bwd(set.dq, set.dk, f, o)
  end
end

local protocol_name = opts.protocol or 'do_bench'
local PROTOCOLS = { do_bench = true, cold = true, hot = true, graph = true }
if not PROTOCOLS[protocol_name] then
  die("option '--protocol' must be do_bench, cold, hot or graph, got '%s'", protocol_name)
end
local protocol
if protocol_name == 'do_bench' then
  protocol = bench.do_bench_protocol {
    warmup_ms = opts['warmup-ms'] or 25,
    rep_ms = opts['rep-ms'] or 400,
    quantiles = { 0.5, 0.2, 0.8 },
  }
else
  protocol = kb.measure.protocol(protocol_name, { quantiles = { 0.5, 0.2, 0.8 } })
end

local environment = envmod.capture()
local device_name = envmod.device_name(environment) or kb.device_info().name
local liger = kb.liger

---------------------------------------------------------------------------
-- Output
---------------------------------------------------------------------------

local jsonl_path
if format == 'table' or format == 'markdown' then
  jsonl_path = opts.out
  if not jsonl_path then
    local ok, err = output.mkdir_p('results')
    if not ok then die('%s', err) end
    jsonl_path = 'results/llama4_rope-' .. names.time_id(record.now()) .. '.jsonl'
  end
elseif format == 'jsonl' then
  jsonl_path = opts.out or '-'
end

local bundles = {}
local function emit(bundle)
  bundles[#bundles + 1] = bundle
  if jsonl_path then
    local ok, err = output.append_jsonl(jsonl_path, bundle)
    if not ok then error('llama4_rope: cannot write ' .. tostring(err), 0) end
  end
end

local total = #points * #providers * #modes
local okp, progress_mod = pcall(require, 'kluabench.report.progress')
-- to-be-closed: an error or a hard stop clears the progress line before the
-- message is printed
local progress <close> = okp and progress_mod.new { total = total } or nil

---------------------------------------------------------------------------
-- The sweep
---------------------------------------------------------------------------

local need_fwd, need_bwd = false, false
for _, m in ipairs(modes) do
  if m ~= 'backward' then need_fwd = true end
  if m ~= 'forward' then need_bwd = true end
end

-- Fresh inputs from the recorded seeds: every check and every timed mode
-- starts from the same q, k, dq, dk (the timed functions work in place).
local function inputs(p, d, freqs, provider)
  if provider == 'copy' then
    local n = p.seq * (q_heads + kv_heads) * d
    return { src = kb.randn({ n }, dtype, SEEDS.q), dst = kb.empty({ n }, dtype), freqs = freqs }
  end
  return {
    q = kb.randn({ 1, p.seq, q_heads, d }, dtype, SEEDS.q),
    k = kb.randn({ 1, p.seq, kv_heads, d }, dtype, SEEDS.k),
    dq = kb.randn({ 1, p.seq, q_heads, d }, dtype, SEEDS.dq),
    dk = kb.randn({ 1, p.seq, kv_heads, d }, dtype, SEEDS.dk),
    freqs = freqs,
  }
end

-- Ctrl-C and SIGTERM are deferred while the sweep runs: the point being
-- measured is finished and written (a do_bench point cannot be stopped
-- half-way; the cold, hot and graph protocols stop sampling early and their
-- record says so), then the sweep stops, prints the summary of the finished
-- points and exits with 130 (SIGINT) or 143 (SIGTERM). A second signal stops
-- at once.
kb.defer_interrupts(true)
local stopped_by -- 'SIGINT' or 'SIGTERM' once the sweep has been interrupted
local function interrupted()
  local hit, sig = kb.interrupted()
  if hit then stopped_by = sig or 'SIGINT' end
  return hit
end

local function sweep()
  for _, p in ipairs(points) do
    local d = p.hidden // q_heads
    local params = { hidden = p.hidden, seq = p.seq, q_heads = q_heads, kv_heads = kv_heads }
    local label = names.workload_slug(params, dtype)
    local freqs <close> = kb.rope.freqs(p.seq, d, { theta = THETA })
    local x = liger.X_AXIS[p.axis]
    for _, provider in ipairs(providers) do
      if interrupted() then return end
      local t = inputs(p, d, freqs, provider)
      local checked = check(provider, t, label, need_fwd, need_bwd)
      free(t.q, t.k, t.dq, t.dk, t.src, t.dst)
      for _, mode in ipairs(modes) do
        if interrupted() then return end
        local what = string.format('%s %s %s', mode, provider, label)
        if progress then progress:start(what) end
        t = inputs(p, d, freqs, provider)
        local sets = {}
        if protocol_name == 'graph' then
          -- rotated input sets (set 1 is t): the rotation must exceed the L2
          protocol.params.make_set = function(i)
            local u = i == 1 and t or inputs(p, d, freqs, provider)
            -- freqs is shared by every set, so it is no part of the rotation
            sets[i] = { q = u.q, k = u.k, dq = u.dq, dk = u.dk, src = u.src, dst = u.dst }
            return sets[i]
          end
        end
        local result = protocol:run(timed_fn(mode, provider, t))
        free(t.q, t.k, t.dq, t.dk, t.src, t.dst)
        for i = 2, #sets do free(sets[i].q, sets[i].k, sets[i].dq, sets[i].dk, sets[i].src, sets[i].dst) end
        -- The workload's bytes and flops are record.KERNELS.llama4_rope.cost,
        -- the one cost model: the minimal traffic of the operation, whatever
        -- the provider does — q and k (dq and dk) read and written once per
        -- pass plus the f32 (cos, sin) table read once per pass (an input of
        -- the operation, not recomputed inside the kernel), two passes for
        -- full; 6 flops per complex product. from_result puts GB/s, % of the
        -- cached copy ceiling and the roofline floor of the median into
        -- run.spec.execution.throughput (docs/RECORDS.md).
        local bundle = record.from_result {
          kernel = 'llama4_rope', mode = mode, provider = provider, parameters = params,
          dtype = dtype, result = result, protocol = protocol, environment = environment,
          timed = TIMED[mode], check = checked,
          execution = { seeds = SEEDS, ropeTheta = THETA, batch = 1, headDim = d, inplace = true },
          annotations = { liger_x_name = x[1], liger_x_label = x[2], liger_gpu_name = device_name },
        }
        emit(bundle)
        if progress then
          progress:finish(what, string.format('median %.2f us', result.summary.median * 1000))
        end
      end
    end
  end
  interrupted() -- a signal during the last point counts too
end

sweep()
if progress then progress:close() end

-- The summary and the files, of every finished point (all of them unless the
-- sweep was interrupted).
local function write_results()
  local table_text = format == 'markdown' and output.results_markdown(bundles) or output.results_table(bundles)
  if format == 'table' or format == 'markdown' then
    io.stdout:write(table_text)
    io.stderr:write(string.format('llama4_rope: %d bundle%s appended to %s (backend %s)\n', #bundles,
      #bundles == 1 and '' or 's', jsonl_path, kb.backend()))
    return
  end
  io.stderr:write(table_text)
  if #bundles == 0 then return end
  local text, err
  if format == 'kernelindex' then
    text, err = output.encode_pretty(#bundles == 1 and bundles[1] or bundles)
  elseif format == 'liger-csv' then
    text, err = output.liger_csv(bundles)
  end
  if text then
    if opts.out then
      local ok, werr = output.write_atomic(opts.out, text)
      if not ok then error('llama4_rope: cannot write ' .. tostring(werr), 0) end
      io.stderr:write('llama4_rope: wrote ', opts.out, '\n')
    else
      io.stdout:write(text)
    end
  elseif err then
    error('llama4_rope: ' .. err, 0)
  end
end
write_results()

if stopped_by then
  io.stdout:flush()
  io.stderr:write(string.format('llama4_rope: interrupted by %s after %d of %d points\n', stopped_by,
    #bundles, total))
  os.exit(stopped_by == 'SIGTERM' and 143 or 130)
end
