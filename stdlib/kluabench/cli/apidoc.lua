--- The API reference of kluabench: one entry per Lua function, method,
-- property and command. `help()` in the REPL and docs/API.md (written by
-- scripts/gen_api_doc.lua) both read this file, so they never disagree;
-- tests/help_spec.lua checks that every function of the kb module, of the
-- Tensor, Event and Graph methods and of the stdlib modules listed in
-- M.modules has an entry, and that every entry names something that exists.
--
-- An entry:
--   name       how a user writes it: "kb.rope.llama4_fwd", "t:to", "t.shape",
--              "stats.quantile", "p:start", "kluabench plot"
--   signature  arguments in brackets are optional; "->" the results
--   summary    one line
--   details    paragraphs (optional)
--   example    Lua (or shell, for commands) that works as written (optional)
--   kind       "function" (default), "method", "property", "value", "command"
--   section    the id of one of M.sections
--   path       {module, key, ...} where the value is, when the name does not say
--   preformatted  details are laid out already (commands' help texts)
local M = {}

--- Name prefixes and the module each stands for.
M.modules = {
  kb = 'kluabench',
  stats = 'kluabench.stats',
  bench = 'kluabench.measure.do_bench',
  output = 'kluabench.report',
  names = 'kluabench.record.names',
  record = 'kluabench.record',
  kernels = 'kluabench.kernels',
  env = 'kluabench.record.env',
  liger = 'kluabench.record.liger',
  measure = 'kluabench.measure',
  stopping = 'kluabench.measure.stopping',
  interleave = 'kluabench.measure.interleave',
  clocks = 'kluabench.measure.clocks',
  ceilings = 'kluabench.record.ceilings',
  inference = 'kluabench.stats.inference',
  compare = 'kluabench.report.compare',
  prng = 'kluabench.stats.prng',
  progress = 'kluabench.report.progress',
  plot = 'kluabench.report.plot',
  help = 'kluabench.cli.help',
  shard = 'kluabench.shard',
  suite = 'kluabench.suite',
  rope_benchmarks = 'kluabench.benchmarks.rope',
  shard = 'kluabench.shard',
  check = 'kluabench.check',
  triton = 'kluabench.triton',
  reader = 'kluabench.record.reader',
}

--- Receivers of methods, and where their methods are: a registry metatable
-- (its `methods` or `__index` table), a module field, or the `__index` of
-- the metatable of an instance that `make` returns.
M.objects = {
  t = { metatable = 'kluabench.Tensor', title = 'Tensor' },
  ev = { metatable = 'kluabench.Event', title = 'Event' },
  g = { metatable = 'kluabench.Graph', title = 'Graph' },
  mod = { metatable = 'kluabench.Module', title = 'Module (user kernels)' },
  kern = { metatable = 'kluabench.Kernel', title = 'Kernel (user kernels)' },
  plugin = { metatable = 'kluabench.Plugin', title = 'Plugin' },
  pk = { metatable = 'kluabench.PluginKernel', title = 'PluginKernel' },
  p = { module = 'kluabench.report.progress', field = 'Progress', title = 'Progress' },
  protocol = { title = 'Protocol',
    make = function() return require('kluabench.measure.do_bench').do_bench_protocol() end },
  session = { title = 'Session (kluabench.measure)',
    make = function()
      local stopping = require 'kluabench.measure.stopping'
      return require('kluabench.measure').session('hot', function() end, { stop = stopping.count(1) })
    end },
  criterion = { title = 'Criterion (kluabench.measure.stopping)',
    make = function() return require('kluabench.measure.stopping').count(1) end },
  st = { title = 'State (kluabench.measure.stopping)', make = function() return require('kluabench.measure.stopping').state() end },
  mon = { title = 'Monitor (kluabench.measure.clocks)',
    make = function() return require('kluabench.measure.clocks').monitor { nvml = {} } end },
  rng = { title = 'Generator (kluabench.stats.prng)', make = function() return require('kluabench.stats.prng').new(1) end },
}

--- Sections in the order of docs/API.md.
M.sections = {
  { id = 'device', title = 'The engine and the device',
    intro = '`local kb = require "kluabench"` gives the engine: the C core (tensors, kernels, '
      .. 'timing, digests). The stdlib modules below are reachable from it too, loaded on first '
      .. 'use: `kb.stats` is `require "kluabench.stats"`, and so on. The REPL has `kb` loaded.' },
  { id = 'tensors', title = 'Tensors',
    intro = 'A tensor (`kluabench.Tensor`) is a contiguous row-major array of `bf16`, `f16`, '
      .. '`f32` or `f64` on one device (`"cpu"`, `"cuda"`, `"cuda:N"`; the default is the '
      .. 'selected backend). Memory is freed by `t:free()`, by `<close>` or by the garbage '
      .. 'collector; using a freed tensor is an error, never a crash.' },
  { id = 'tensor_methods', title = 'Tensor methods and properties',
    intro = 'Properties are read as fields (`t.shape`), methods called with a colon '
      .. '(`t:numel()`). `#t` is the number of elements and `tostring(t)` shows shape, dtype, '
      .. 'device and the first and last values.' },
  { id = 'timing', title = 'Timing: events, clocks, L2 flush, graphs',
    intro = 'The primitives protocols are made of. On the cuda backend events are CUDA events '
      .. 'on the current stream; on cpu they record the host monotonic clock.' },
  { id = 'usercode', title = 'User kernels (kb.cuda, kb.plugin)',
    intro = 'Kernels you bring: CUDA source compiled at run time by NVRTC (`kb.cuda.compile`), '
      .. 'modules built elsewhere (`kb.cuda.load`: cubin, PTX, fatbin), and C plugins with CPU twins '
      .. '(`kb.plugin.load`). They launch on the engine\'s stream, so every measure mode, `kb.bench.do_bench` '
      .. 'and `kb.graph` work on them unchanged. docs/KERNELS.md explains the three routes.' },
  { id = 'check', title = 'kluabench.check: correct outputs and possible times',
    intro = 'Fresh random inputs per seed, outputs poisoned with NaN before each checked run, NaN and Inf '
      .. 'mismatches as errors, a second check after timing, and a flag on times faster than the '
      .. 'copy ceiling.' },
  { id = 'triton', title = 'kluabench.triton: Triton\'s compiled kernels',
    intro = 'A cubin and metadata JSON from Triton\'s cache, launched as Triton\'s launcher does '
      .. '(block, shared memory, hidden scratch parameters), without Python.' },
  { id = 'trace', title = 'Kernel traces (kb.trace)',
    intro = 'What ran on a device and when: one record per kernel or memory copy with its own '
      .. 'start and end. On cuda the records come from CUPTI\'s activity API (libcupti, loaded '
      .. 'with dlopen; $KLUABENCH_CUPTI names the file when it is not found; its serial kernel '
      .. 'mode, which instruments nothing) and carry device timestamps whose kernel durations '
      .. 'agree with Nsight Compute\'s gpu__time_duration; each traced launch costs 1-2 us of '
      .. 'device time, so time with tracing off (docs/MEASUREMENT.md). On cpu the cpu '
      .. 'backend times its own kernels on the host clock. Memsets (the L2 flush) are not traced. '
      .. 'One trace at a time per process.' },
  { id = 'nvml', title = 'GPU clocks, temperature and power (kb.nvml)',
    intro = 'NVML, loaded with dlopen on first use (the binary starts where it is absent). '
      .. 'Functions that query a device return nil and a message on failure; fields a GPU '
      .. 'does not support are left out and listed in `unsupported`. A device is nil (index 0), '
      .. 'an NVML index, a UUID ("GPU-...") or a PCI bus id; NVML ignores '
      .. 'CUDA_VISIBLE_DEVICES, so prefer the UUID.' },
  { id = 'digest', title = 'Digests and canonical JSON',
    intro = 'SHA-256 (OpenSSL) and RFC 8785 canonical JSON (JCS), from which the digests '
      .. 'of records are computed: `"sha256:" .. kb.sha256(kb.jcs.encode(doc.spec))`.' },
  { id = 'signals', title = 'Interrupts',
    intro = 'By default Ctrl-C stops a script at once with an "interrupted!" error. A sweep '
      .. 'that wants to finish the current sample and write what it has asks for '
      .. 'cooperative interrupts and polls.' },
  { id = 'suite', title = 'kluabench.suite: the benchmark harness',
    intro = '`kb.suite.main{...}` runs a declared benchmark: the script gives axes, sweeps, providers, '
      .. 'modes, dtypes and hooks (setup, run, check, cost, record); the harness owns the command line, '
      .. 'the points, the check before timing, the protocol, sessions (--runs), shards, progress, '
      .. 'interrupts, every output format and the records. docs/SUITE.md explains the declaration; '
      .. 'examples/copy_benchmark.lua is a whole benchmark in 32 lines.' },
  { id = 'process', title = 'Child processes (kb.process)',
    intro = 'What `kluabench run-all` starts its children with: fork and exec, waiting for any '
      .. 'child without blocking, signals, sleep. Failures that can happen return nil, a message '
      .. 'and an error name ("ENOENT", "ESRCH", "ECHILD", "EINTR"); misuse raises.' },
  { id = 'stats', title = 'kluabench.stats: statistics of samples',
    intro = '`local stats = require "kluabench.stats"`. Every function takes a list of '
      .. 'numbers (not modified) and raises an error naming the function on an empty list or a '
      .. 'non-number.' },
  { id = 'bench', title = 'kluabench.measure.do_bench: protocols',
    intro = '`local bench = require "kluabench.measure.do_bench"`. A protocol is a value with a name, '
      .. 'parameters, a `run` that measures a function and a `spec` that goes into records.' },
  { id = 'measure', title = 'kluabench.measure: timing modes',
    intro = '`local measure = require "kluabench.measure"`. Named ways of timing a function, '
      .. 'every raw sample kept: `cold` (L2 flushed before each sample, launch overhead held out '
      .. 'by a spin kernel), `hot` (back-to-back batches, warm caches), `graph` (a CUDA graph '
      .. 'cycling through input sets that must cover the L2) and `do_bench` (triton\'s '
      .. 'algorithm). docs/MEASUREMENT.md explains each.' },
  { id = 'stopping', title = 'kluabench.measure.stopping: when to stop sampling',
    intro = '`local stopping = require "kluabench.measure.stopping"`. A criterion looks at the samples '
      .. 'so far and says done, why, and whether a statistical target was met. None ends a run '
      .. 'with 0 samples.' },
  { id = 'interleave', title = 'kluabench.measure.interleave: samples in turns',
    intro = '`local interleave = require "kluabench.measure.interleave"`. Several measurements advanced '
      .. 'one sample at a time, in round-robin or shuffled order (seed recorded), so drift '
      .. 'spreads over all of them.' },
  { id = 'clocks', title = 'kluabench.measure.clocks: GPU clocks during a measurement',
    intro = '`local clocks = require "kluabench.measure.clocks"`. NVML readings around points and after '
      .. 'samples, dropping samples taken while the GPU throttled; inert where NVML is absent.' },
  { id = 'ceilings', title = 'kluabench.record.ceilings: throughput and the roofline',
    intro = '`local ceilings = require "kluabench.record.ceilings"`. The measured copy bandwidth of a '
      .. 'device (cached per device) and the arithmetic of GB/s, % of copy and the roofline floor.' },
  { id = 'inference', title = 'kluabench.stats.inference: how sure the numbers are',
    intro = '`local inference = require "kluabench.stats.inference"`. Distribution-free intervals of '
      .. 'a median, the bootstrap of a ratio of medians and the Mann-Whitney test.' },
  { id = 'compare', title = 'kluabench.report.compare: two result sets, point by point',
    intro = '`local compare = require "kluabench.report.compare"`. What `kluabench compare` does: match '
      .. 'points by workload digest and provider, treat each bundle as one measurement session, and '
      .. 'give each point a verdict SAME, FASTER, SLOWER or UNSURE from a hierarchical bootstrap '
      .. 'interval of the ratio (sessions, then samples), widened by the device\'s between-session '
      .. 'noise for a side of one session (docs/MEASUREMENT.md).' },
  { id = 'reader', title = 'kluabench.record.reader: reading record files',
    intro = '`local reader = require "kluabench.record.reader"`. The one reader of record files '
      .. '(JSON: a bundle, an array, {"bundles": [...]}; JSON Lines: one bundle a line) that '
      .. '`kluabench compare`, `verify` and `plot` use; errors say FILE:LINE: why.' },
  { id = 'prng', title = 'kluabench.stats.prng: seeded random choices',
    intro = '`local prng = require "kluabench.stats.prng"`. SplitMix64: every random choice a protocol '
      .. 'makes (sample order, bootstrap) is reproducible from a recorded seed.' },
  { id = 'output', title = 'kluabench.report: JSON, CSV and tables',
    intro = '`local output = require "kluabench.report"`.' },
  { id = 'record', title = 'kluabench.record: kernelindex records',
    intro = '`local record = require "kluabench.record"`. One benchmark point is one bundle '
      .. '{run, protocol, environment, workload, implementation}; the run carries the digest of '
      .. 'each other document, "sha256:" .. hex(SHA-256(JCS(doc.spec))). docs/RECORDS.md '
      .. 'describes every field.' },
  { id = 'kernels', title = 'kluabench.kernels: the kernel registry',
    intro = '`local kernels = require "kluabench.kernels"`. What records and `kluabench list` '
      .. 'know about each kernel (title, source files, cost model), gathered from one descriptor '
      .. 'per family, stdlib/kluabench/kernels/<family>.lua, for every family the engine names '
      .. '(`kb.builtin_kernels()`). docs/ADDING_A_KERNEL.md adds one.' },
  { id = 'env', title = 'kluabench.record.env: the execution environment',
    intro = '`local env = require "kluabench.record.env"`. The ExecutionEnvironment document: hardware '
      .. 'and software a run used; what cannot be known is left out, never invented.' },
  { id = 'liger', title = 'kluabench.record.liger: Liger-Kernel\'s benchmark CSV',
    intro = '`local liger = require "kluabench.record.liger"`. Reading Liger\'s CSV, turning rows into '
      .. 'bundles (`kluabench import-liger`), and writing our results in its format.' },
  { id = 'names', title = 'kluabench.record.names: slugs, names and times of records',
    intro = '`local names = require "kluabench.record.names"`.' },
  { id = 'progress', title = 'kluabench.report.progress: progress of a sweep',
    intro = '`local progress = require "kluabench.report.progress"`. Writes to stderr only: a '
      .. 'status line redrawn in place on a terminal, one line per point elsewhere, nothing '
      .. 'with `--quiet` or `KLUABENCH_QUIET=1`.' },
  { id = 'plot', title = 'kluabench.report.plot: SVG charts',
    intro = '`local plot = require "kluabench.report.plot"`. Charts written by plain Lua: no plotting '
      .. 'library, the SVG opens in any browser. `kluabench plot` is the command-line face.' },
  { id = 'shard', title = 'kluabench.shard: shards of a sweep',
    intro = '`local shard = require "kluabench.shard"`. Which points of a sweep process I of N '
      .. 'measures (`--shard I/N`, `kluabench run-all`, `kluabench slurm`): a point is '
      .. '`{id = slug, cost = estimated bytes}` and stays whole; the split balances cost and '
      .. 'depends only on the ids and costs (docs/DISTRIBUTED.md).' },
  { id = 'help', title = 'kluabench.cli.help: this documentation at the prompt',
    intro = 'The REPL installs `help` as a global; `?name` is `help("name")`.' },
  { id = 'commands', title = 'Commands',
    intro = '`kluabench COMMAND [args]` runs a built-in command; `kluabench FILE.lua` runs a '
      .. 'script. Exit codes: 0 success, 1 a failed check or bad data, 2 a usage error.' },
}

M.entries = {}

-- Adds the entries of one section, in order.
local function section(id, list)
  for _, e in ipairs(list) do
    e.section = id
    e.kind = e.kind or (e.name:find(':', 1, true) and 'method') or 'function'
    M.entries[#M.entries + 1] = e
  end
end

-- Each kernel family documents its own functions (`doc` in its descriptor,
-- stdlib/kluabench/kernels/<family>.lua); their sections follow the tensor
-- methods.
do
  local at = #M.sections + 1
  for i, s in ipairs(M.sections) do
    if s.id == 'tensor_methods' then at = i + 1 end
  end
  for _, f in ipairs(require('kluabench.kernels').FAMILIES) do
    if f.doc then
      table.insert(M.sections, at, f.doc.section)
      at = at + 1
      section(f.doc.section.id, f.doc.entries)
    end
  end
end

---------------------------------------------------------------------------
-- The engine and the device
---------------------------------------------------------------------------

section('device', {
  { name = 'kb.version', kind = 'value', signature = 'kb.version -> string',
    summary = 'The kluabench version, e.g. "0.1.0".',
    example = 'print(kb.version)' },
  { name = 'kb.git_commit', kind = 'value', signature = 'kb.git_commit -> string',
    summary = 'The git commit the binary was built from ("-dirty" when the tree had changes).',
    example = 'print(kb.git_commit)' },
  { name = 'kb.backend', signature = 'kb.backend() -> "cuda" | "cpu"',
    summary = 'The selected backend: what tensors and events use when no device is given.',
    details = 'Chosen before any Lua runs: `--backend cpu|cuda` or `KLUABENCH_BACKEND`, else '
      .. 'cuda when a CUDA device is usable and cpu otherwise.',
    example = 'if kb.backend() == "cpu" then print("numbers are CPU times") end' },
  { name = 'kb.device_info', signature = 'kb.device_info([device]) -> table',
    summary = 'A description of the device: name, arch, memory and cache sizes, clocks.',
    details = 'Every device has `backend`, `device`, `name`, `arch` (`"sm_90"` on an H100/H200, '
      .. '`"x86_64"` on cpu), `l2_bytes` (the last-level cache on cpu) and `memory_bytes`. CUDA '
      .. 'devices add `ordinal`, `sm_count`, `sm_clock_khz`, `mem_clock_khz`, `mem_bus_bits`, '
      .. '`driver_version` and `runtime_version`; cpu adds `cores`.',
    example = 'local d = kb.device_info()\nprint(d.name, d.arch, d.l2_bytes // 2^20 .. " MiB L2")' },
  { name = 'kb.memory_info', signature = 'kb.memory_info([device [, opts]]) -> table',
    summary = 'Memory in use now: this process on the host, and the device.',
    details = '`device`; `rss_bytes` and `peak_rss_bytes` (the resident set now and at its peak, '
      .. 'from /proc/self/status); `heap_bytes` (with glibc: what malloc has handed out and not got back: '
      .. 'tensors on cpu and the Lua heap included; it does not move with fragmentation as the '
      .. 'resident set does, so it is the measure of a host leak). A cuda device adds '
      .. '`device_total_bytes`, `device_free_bytes` and `device_used_bytes` as the driver counts '
      .. 'them (every process and the CUDA context included). `opts.trim = true` first hands the '
      .. 'memory malloc keeps free back to the system (glibc malloc_trim), so that the resident set '
      .. 'follows what is in use. scripts/soak.lua samples it so after every round.',
    example = 'local m = kb.memory_info()\nprint(m.rss_bytes // 2^20 .. " MiB resident", m.device_used_bytes)' },
  { name = 'kb.build_info', signature = 'kb.build_info() -> table',
    summary = 'How this binary was built: cuda (boolean), cflags, nvflags, compiler, nvcc, '
      .. 'git_commit, targets.',
    example = 'print(kb.build_info().targets) --> sm_90 sm_80 compute_90 (or cpu)' },
  { name = 'kb.builtin_kernels', signature = 'kb.builtin_kernels() -> {family, ...}',
    summary = 'The built-in kernel families of this binary ("rope"), each a table kb.<family>.',
    example = 'for _, f in ipairs(kb.builtin_kernels()) do print(f) end' },
  { name = 'kb.kernel_sources', signature = 'kb.kernel_sources() -> {path = sha256 hex}',
    summary = 'SHA-256 of every kernel source file the binary was built from.',
    details = 'Records cite these hashes in their implementation document, so a result can be '
      .. 'traced to the exact kernel code.',
    example = 'for path, hex in pairs(kb.kernel_sources()) do print(path, hex:sub(1, 12)) end' },
  { name = 'kb.executable', signature = 'kb.executable() -> path',
    summary = 'The absolute path of the running kluabench binary.',
    details = 'Tests use it to start kluabench again as a subprocess.',
    example = 'os.execute(kb.executable() .. " -v")' },
})

---------------------------------------------------------------------------
-- Tensors
---------------------------------------------------------------------------

section('tensors', {
  { name = 'kb.empty', signature = 'kb.empty(shape [, dtype [, device]]) -> Tensor',
    summary = 'A tensor with uninitialised contents.',
    details = 'shape is a list of non-negative integers (at most 8 dimensions); dtype defaults '
      .. 'to "f32", device to the selected backend.',
    example = 'local t = kb.empty({2, 3}, "bf16")' },
  { name = 'kb.zeros', signature = 'kb.zeros(shape [, dtype [, device]]) -> Tensor',
    summary = 'A tensor of zeros.',
    example = 'local z = kb.zeros({4}, "f64", "cpu")\nprint(z) --> kluabench.Tensor([4], f64, cpu) [0, 0, 0, 0]' },
  { name = 'kb.randn', signature = 'kb.randn(shape [, dtype [, seed [, device]]]) -> Tensor',
    summary = 'Standard normal values, deterministic per seed (default 0).',
    details = 'A counter-based generator (Philox4x32-10 and Box-Muller) gives the same values '
      .. 'on every backend and machine for the same seed, shape and dtype (within 1 ulp of f32), '
      .. 'so a GPU result can always be checked against the CPU path.',
    example = 'local q = kb.randn({1, 2048, 32, 16}, "bf16", 42)' },
  { name = 'kb.from_table', signature = 'kb.from_table(values [, shape [, dtype [, device]]]) -> Tensor',
    summary = 'A tensor holding a flat list of numbers (row-major), shape {#values} by default.',
    details = 'Values are rounded to the dtype to nearest, ties to even.',
    example = 'local m = kb.from_table({1, 2, 3, 4, 5, 6}, {2, 3}, "f32")' },
  { name = 'kb.max_abs_diff', signature = 'kb.max_abs_diff(a, b) -> number',
    summary = 'The largest |a[i] - b[i]| of two tensors of equal shape (any dtypes and devices).',
    details = 'NaN when either holds a NaN, so `kb.max_abs_diff(a, b) < tol` fails on NaN.',
    example = 'assert(kb.max_abs_diff(out, ref) < 1e-2)' },
  { name = 'kb.rel_l2', signature = 'kb.rel_l2(a, b) -> number',
    summary = 'The relative L2 error ||a - b|| / ||b||, b being the reference.',
    details = '0 when both are all zero, inf when only b is.',
    example = 'print(kb.rel_l2(gpu_out:to("cpu"), cpu_out))' },
})

section('tensor_methods', {
  { name = 't.shape', kind = 'property', signature = 't.shape -> {d1, d2, ...}',
    summary = 'The shape, as a new list of integers.',
    example = 'local B, S, H, D = table.unpack(q.shape)' },
  { name = 't.dtype', kind = 'property', signature = 't.dtype -> "bf16" | "f16" | "f32" | "f64"',
    summary = 'The element type.', example = 'print(t.dtype)' },
  { name = 't.device', kind = 'property', signature = 't.device -> "cpu" | "cuda:N"',
    summary = 'The device holding the data.', example = 'print(t.device)' },
  { name = 't.ndim', kind = 'property', signature = 't.ndim -> integer',
    summary = 'The number of dimensions.', example = 'assert(q.ndim == 4)' },
  { name = 't:numel', signature = 't:numel() -> integer', summary = 'The number of elements (also `#t`).',
    example = 'print(t:numel(), #t)' },
  { name = 't:nbytes', signature = 't:nbytes() -> integer', summary = 'The size of the data in bytes.',
    example = 'local gb = (q:nbytes() + k:nbytes()) * 2 / 1e9' },
  { name = 't:totable', signature = 't:totable() -> {numbers}',
    summary = 'The values as a flat row-major list of Lua numbers (copied to the host).',
    example = 'local v = kb.randn({3}):totable()\nprint(v[1], v[2], v[3])' },
  { name = 't:clone', signature = 't:clone() -> Tensor', summary = 'A copy on the same device.',
    example = 'local q0 = q:clone()' },
  { name = 't:copy_', signature = 't:copy_(src) -> t',
    summary = 'Copies src (same shape; any dtype or device) into t, converting as needed.',
    example = 'kb.empty(q.shape, "f32"):copy_(q)' },
  { name = 't:fill_', signature = 't:fill_(x) -> t', summary = 'Sets every element to x.',
    example = 'local ones = kb.empty({8}):fill_(1)' },
  { name = 't:to', signature = 't:to(device_or_dtype) -> Tensor',
    summary = 'A new tensor on another device ("cpu", "cuda", "cuda:N") or of another dtype.',
    example = 'local host = t:to("cpu")\nlocal wide = t:to("f64")' },
  { name = 't:digest', signature = 't:digest() -> "sha256:<64 hex>"',
    summary = 'SHA-256 of the tensor\'s little-endian bytes.',
    details = 'Equal on every backend for equal values: `kb.randn` tensors made with the same '
      .. 'seed on cpu and cuda have the same digest.',
    example = 'print(kb.randn({16}, "f32", 1):digest())' },
  { name = 't:free', signature = 't:free()',
    summary = 'Frees the memory now; safe to call twice. Also `__gc` and `__close`.',
    details = 'A tensor captured in a live CUDA graph refuses free(): free the graph first.',
    example = 'do\n  local tmp <close> = kb.empty({1 << 20})\nend -- freed here' },
})

---------------------------------------------------------------------------
-- Timing
---------------------------------------------------------------------------

section('timing', {
  { name = 'kb.event', signature = 'kb.event([device]) -> Event',
    summary = 'A new timing event (a CUDA event, or the host clock on cpu).',
    example = 'local e0, e1 = kb.event(), kb.event()\ne0:record(); work(); e1:record()\n'
      .. 'e1:synchronize()\nprint(kb.elapsed_ms(e0, e1))' },
  { name = 'ev:record', signature = 'ev:record() -> ev', summary = 'Records the event on the stream.',
    example = 'start:record()' },
  { name = 'ev:synchronize', signature = 'ev:synchronize() -> ev',
    summary = 'Waits until the work before the event has finished.', example = 'stop:synchronize()' },
  { name = 'ev:elapsed_ms', signature = 'ev:elapsed_ms(stop) -> ms',
    summary = 'Milliseconds from ev to stop; the method form of kb.elapsed_ms(ev, stop).',
    example = 'print(start:elapsed_ms(stop))' },
  { name = 'ev:destroy', signature = 'ev:destroy()',
    summary = 'Releases the event now (also `__gc` and `__close`); safe twice.',
    example = 'local e <close> = kb.event()' },
  { name = 'kb.elapsed_ms', signature = 'kb.elapsed_ms(start, stop) -> ms',
    summary = 'Milliseconds between two recorded events of one device.',
    details = 'Both events must have been recorded; synchronize on stop first.',
    example = 'local ms = kb.elapsed_ms(e0, e1)' },
  { name = 'kb.synchronize', signature = 'kb.synchronize([device])',
    summary = 'Waits until all queued work on the device has finished.',
    example = 'kb.synchronize()' },
  { name = 'kb.clock_ns', signature = 'kb.clock_ns() -> integer',
    summary = 'The host monotonic clock in nanoseconds.',
    example = 'local t0 = kb.clock_ns(); work(); print((kb.clock_ns() - t0) / 1e6, "ms")' },
  { name = 'kb.time_ns', signature = 'kb.time_ns() -> integer',
    summary = 'Wall-clock nanoseconds since the Unix epoch, for timestamps (intervals use kb.clock_ns).',
    example = 'print(os.date("!%Y-%m-%dT%H:%M:%SZ", kb.time_ns() // 1000000000))' },
  { name = 'kb.flush_l2', signature = 'kb.flush_l2([bytes [, device]]) -> bytes',
    summary = 'Overwrites a buffer of twice the L2 (the last-level cache on cpu) so no input stays cached.',
    details = 'The buffer is allocated once per device and reused; a larger request grows it. '
      .. 'Call it outside the timed region.',
    example = 'kb.flush_l2()\nstart:record(); fn(); stop:record()' },
  { name = 'kb.spin', signature = 'kb.spin(ns [, device])',
    summary = 'Queues a kernel that busy-waits about ns nanoseconds on the device.',
    details = 'Holds the stream so that the start event and the kernel are queued before the GPU '
      .. 'reaches them: launch overhead stays out of the measured time. Does nothing on cpu.',
    example = 'kb.spin(20000); start:record(); fn(); stop:record()' },
  { name = 'kb.graph', signature = 'kb.graph(fn [, device]) -> Graph',
    summary = 'Captures the device work fn queues into a graph to replay.',
    details = 'fn runs once during capture and must only queue device work (no host copies or '
      .. 'synchronisation). Tensors it uses stay alive and pinned as long as the graph. Needs '
      .. 'the cuda backend: on cpu it raises an error.',
    example = 'local g = kb.graph(function() kb.rope.llama4_fwd(q, k, f, {inplace = true}) end)\n'
      .. 'g:replay(10)' },
  { name = 'g:replay', signature = 'g:replay([n]) -> g', summary = 'Launches the graph n times (default 1).',
    example = 'g:replay(100); kb.synchronize()' },
  { name = 'g:free', signature = 'g:free()',
    summary = 'Frees the graph and unpins its tensors; safe twice (also `__gc`, `__close`).',
    example = 'g:free()' },
})

---------------------------------------------------------------------------
-- User kernels
---------------------------------------------------------------------------

local USER_SRC = '[[extern "C" __global__ void scale(float *y, const float *x, float a, int n) {\n'
  .. '  int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = a * x[i]; }]]'

section('usercode', {
  { name = 'kb.cuda.compile', signature = 'kb.cuda.compile(source [, opts]) -> Module',
    summary = 'Compiles CUDA C++ source with NVRTC (opened at run time) into a module; needs no GPU.',
    details = 'opts: name (file name in messages, default "kernel.cu"), names (name expressions to '
      .. 'keep and lower, e.g. "add<float>"), defines ({"N=4"} or {N = 4}), include (paths), headers '
      .. '({name = source}), arch ("sm_90", "compute_90" for PTX only; default the device\'s, else '
      .. 'sm_90), lineinfo (boolean), options (passed through), cache (false: off), cache_dir. A compile '
      .. 'error raises with NVRTC\'s log and line numbers. Results are cached under '
      .. '$KLUABENCH_CACHE/nvrtc (else ~/.cache/kluabench/nvrtc) by SHA-256 of source, options, arch '
      .. 'and NVRTC version; module:info().cache says "hit", "miss" or "off".',
    example = 'local m = kb.cuda.compile(' .. USER_SRC .. ', {cache = false})\nprint(m:info().format, #m:ptx())' },
  { name = 'kb.cuda.load', signature = 'kb.cuda.load(path_or_bytes) -> Module',
    summary = 'A module from a cubin, PTX or fatbin file (nvcc -cubin/-ptx/-fatbin, Triton) or its bytes.',
    details = 'The format is told by the content (ELF, fatbin magic, PTX text). The module is loaded '
      .. 'into the CUDA context when its first kernel is asked for. For Triton\'s kernels see '
      .. '`triton.load`, which also reads the metadata.',
    example = 'local m = kb.cuda.load(".version 8.0\\n.target sm_90\\n.address_size 64\\n")\nprint(m:info().format)' },
  { name = 'kb.cuda.nvrtc_version', signature = 'kb.cuda.nvrtc_version() -> "13.0", path | nil, why',
    summary = 'The NVRTC version and library, or why NVRTC cannot be used.',
    details = 'NVRTC is looked for as $KLUABENCH_NVRTC, libnvrtc.so[.13|.12|.11.2] on the library path, '
      .. '$CUDA_HOME/lib64, $CUDA_PATH/lib64 and /usr/local/cuda/lib64.',
    example = 'print(kb.cuda.nvrtc_version())' },
  { name = 'kb.cuda.parse_signature', signature = 'kb.cuda.parse_signature(signature) -> {types}',
    summary = 'The parameter types a kernel signature names, in canonical names.',
    details = 'Types: ptr, i8, u8, i16, u16, i32, u32, i64, u64, f16, bf16, f32, f64. C spellings ("const '
      .. 'float*", "int", "unsigned long long", "half") and Triton\'s ("*fp32", "fp16", "i1") are accepted. '
      .. 'A ptr takes a tensor (its device pointer, checked to be alive and on the kernel\'s device) or an '
      .. 'integer address (0 for NULL).',
    example = 'print(table.concat(kb.cuda.parse_signature("const float*, float*, int, float"), ", "))' },
  { name = 'mod:kernel', signature = 'mod:kernel(name, signature) -> Kernel',
    summary = 'A kernel of the module, its signature parsed once (loads the module on first use).',
    details = 'name: the kernel\'s name (extern "C") or a name expression given to compile. Needs the '
      .. 'cuda backend. A missing kernel raises CUDA_ERROR_NOT_FOUND with the name; a corrupt image the '
      .. 'loader\'s error and log.',
    example = 'local k = m:kernel("scale", "ptr, ptr, f32, i32")' },
  { name = 'mod:ptx', signature = 'mod:ptx() -> string | nil',
    summary = 'The PTX text (compiled modules and PTX files; nil for a cubin or fatbin file).',
    example = 'print(kb.cuda.load(".version 8.0\\n.target sm_90\\n"):ptx())' },
  { name = 'mod:cubin', signature = 'mod:cubin() -> bytes | nil, why',
    summary = 'The cubin (compiled for an sm_ arch, or loaded from one).',
    example = 'local bytes = m:cubin()' },
  { name = 'mod:info', signature = 'mod:info() -> table',
    summary = 'What records need: format, sha256, bytes, and path or source_sha256, options, arch, '
      .. 'nvrtc_version, names, log, cache; driver_version once loaded.',
    example = 'print(kb.cuda.load(".version 8.0\\n.target sm_90\\n"):info().sha256)' },
  { name = 'kern:launch', signature = 'kern:launch{grid = g, block = b [, shared = bytes], args = {...}} -> kern',
    summary = 'Queues the kernel on the engine\'s stream (cuLaunchKernel); no allocation per launch.',
    details = 'grid and block: an integer or {x [, y [, z]]}. shared: dynamic shared memory in bytes (over 48 '
      .. 'KiB the kernel is allowed it first). args are checked against the signature: a wrong count or '
      .. 'type names the parameter. Tensors used while `kb.graph` captures are pinned, and the graph keeps '
      .. 'the module loaded. A failed launch raises with the CUDA error name.',
    example = 'k:launch{grid = (n + 255) // 256, block = 256, args = {y, x, 2.0, n}}' },
  { name = 'kern:attributes', signature = 'kern:attributes() -> table',
    summary = 'registers, shared_bytes, const_bytes, local_bytes, max_threads_per_block, ptx_version, '
      .. 'binary_version, max_dynamic_shared_bytes.',
    example = 'print(k:attributes().registers)' },
  { name = 'kern:occupancy', signature = 'kern:occupancy(block_size [, shared]) -> table',
    summary = 'blocks_per_sm, active_warps, max_warps and occupancy (0..1) for a block size.',
    example = 'print(k:occupancy(256).blocks_per_sm)' },
  { name = 'kern:info', signature = 'kern:info() -> table',
    summary = 'name, symbol, signature, module_sha256 and module (mod:info()): for record.user_implementation.',
    example = 'local impl = record.user_implementation{provider = "mine", kernel = "scale", info = k:info()}' },
  { name = 'kb.plugin.load', signature = 'kb.plugin.load(path) -> Plugin',
    summary = 'Opens a C plugin (include/kluabench_plugin.h) and checks its ABI version and signatures.',
    details = 'A plugin built for another ABI version is refused with both versions named. The library '
      .. 'stays loaded until the process ends.',
    example = 'local p = kb.plugin.load(kb.executable():match("^(.*)/") .. "/plugins/libscale_add.so")' },
  { name = 'plugin:kernel', signature = 'plugin:kernel(name) -> PluginKernel', summary = 'One of the plugin\'s kernels.',
    example = 'local scale_add = p:kernel("scale_add")' },
  { name = 'plugin:kernels', signature = 'plugin:kernels() -> {names}', summary = 'The names of the plugin\'s kernels.',
    example = 'print(table.concat(p:kernels(), ", "))' },
  { name = 'plugin:info', signature = 'plugin:info() -> table',
    summary = 'name, version, abi_version, path and sha256 of the library.', example = 'print(p:info().sha256)' },
  { name = 'pk:call', signature = 'pk(args...) | pk:call(args...) -> pk',
    summary = 'Runs the kernel on the device of its tensors: the CPU twin for cpu tensors, the CUDA entry '
      .. '(queued on the engine\'s stream) for cuda ones.',
    details = 'Arguments are checked against the kernel\'s signature (tensor, i64, f64). An entry\'s failure '
      .. 'is raised with the plugin\'s message.',
    example = 'scale_add(out, x, y, 2.0)' },
  { name = 'pk:info', signature = 'pk:info() -> table',
    summary = 'name, signature, cuda and cpu (whether each entry exists), doc, plugin (plugin:info()).',
    example = 'print(scale_add:info().signature)' },
  { name = 'kb.compare_elements', signature = 'kb.compare_elements(got, want, atol, rtol) -> table',
    summary = 'Element-by-element comparison counts (the C loop behind check.compare).',
    details = 'Returns n, mismatches, unwritten (NaN in got where want is a number), nan_mismatch, '
      .. 'inf_mismatch, max_abs and worst = {index, got, want}.',
    example = 'print(kb.compare_elements(t, t, 0, 0).mismatches)' },
})

section('check', {
  { name = 'check.tolerance', signature = 'check.tolerance(dtype [, opts]) -> atol, rtol',
    summary = 'The tolerance of a dtype (opts.atol, opts.rtol override).', example = 'print(check.tolerance("bf16"))' },
  { name = 'check.poison', signature = 'check.poison(t) -> t',
    summary = 'Fills a tensor with NaN, so that elements a kernel does not write read as NaN.',
    example = 'check.poison(out)' },
  { name = 'check.compare', signature = 'check.compare(got, want [, opts]) -> ok, report',
    summary = 'Compares with the reference: dtype-fit tolerance, unwritten (NaN) elements, NaN and Inf mismatches.',
    example = 'local ok, r = check.compare(out, ref)\nprint(r.message)' },
  { name = 'check.new', signature = 'check.new{inputs, run, outputs, reference [, seeds, atol, rtol, poison]} -> checker',
    summary = 'A checker: checker:verify() runs the kernel per seed on fresh, poisoned outputs; '
      .. 'checker:recheck() checks the last outputs again after timing; checker.state is what to time.',
    example = 'local c = check.new{inputs = function(seed) return {x = kb.randn({8}, "f32", seed, "cpu"), '
      .. 'y = kb.empty({8}, "f32", "cpu")} end,\n  run = function(s) s.y:copy_(s.x) end, '
      .. 'outputs = function(s) return {s.y} end,\n  reference = function(s) return {s.x} end}\n'
      .. 'assert(c:verify())\nassert(c:recheck())' },
  { name = 'check.run', signature = 'check.run(spec) -> ok, report, checker', summary = 'check.new(spec):verify().',
    example = 'local ok, report = check.run{inputs = function(seed) return {x = kb.randn({8}, "f32", seed, "cpu")} end,\n'
      .. '  run = function() end, outputs = function(s) return {s.x} end, reference = function(s) return {s.x:clone()} end}' },
  { name = 'check.plausible', signature = 'check.plausible(median_ms, bytes, ceiling [, opts]) -> ok, message, percent',
    summary = 'False when bytes moved in median_ms exceed the copy ceiling (GB/s or {copy_gbps}): physically implausible.',
    details = 'record.from_result applies it to every record with a cached ceiling: '
      .. 'execution.throughput.implausible = true and implausibleReason, and results tables show '
      .. 'IMPLAUSIBLE in their check column. opts.limit: the percentage (default 100).',
    example = 'print(check.plausible(0.1, 1e9, 3000))' },
})

section('triton', {
  { name = 'triton.load', signature = 'triton.load(path [, signature]) -> TritonKernel',
    summary = 'A Triton kernel from its cubin and metadata JSON; tk:launch(grid, args) launches it.',
    details = 'path: the .json or the .cubin beside it. signature: the compiled parameters without '
      .. 'the hidden scratch pointers (default: read from the .ptx beside it). The launch uses block = 32 '
      .. '* num_warps and the metadata\'s shared memory and appends the global and profile scratch '
      .. 'pointers recent Triton versions add. tk.kernel is the kluabench.Kernel; tk:info() is for records.',
    example = 'local tk = triton.load("triton_rope/rope_kernel.json")\ntk:launch(n_programs, {q, k, cos, sin, seq})' },
  { name = 'triton.read_metadata', signature = 'triton.read_metadata(path) -> metadata, cubin_path, ptx_path',
    summary = 'Triton\'s metadata JSON (name, num_warps, shared, scratch sizes, ...).',
    example = 'local meta = triton.read_metadata("triton_rope/rope_kernel.json")' },
  { name = 'triton.ptx_signature', signature = 'triton.ptx_signature(ptx [, name]) -> signature, count',
    summary = 'The parameters of a PTX entry as a signature ("ptr, i32, f32").',
    example = 'print(triton.ptx_signature(".entry k(\\n.param .u64 .ptr .global .align 1 k_param_0,\\n.param .u32 k_param_1\\n)"))' },
})

---------------------------------------------------------------------------
-- NVML
---------------------------------------------------------------------------

section('nvml', {
  { name = 'kb.nvml.available', signature = 'kb.nvml.available() -> true | false, reason',
    summary = 'Whether NVML could be loaded and initialised, and why not.',
    example = 'local ok, why = kb.nvml.available()\nif not ok then print("no clocks: " .. why) end' },
  { name = 'kb.nvml.count', signature = 'kb.nvml.count() -> n | nil, message',
    summary = 'The number of GPUs NVML sees.', example = 'print(kb.nvml.count())' },
  { name = 'kb.nvml.sample', signature = 'kb.nvml.sample([device [, "quick"]]) -> table | nil, message',
    summary = 'Clocks now: sm_mhz, mem_mhz, temp_c, power_w, throttle (names), throttle_mask, t_ns.',
    details = '"quick" reads only the SM clock and the throttle reasons, the two cheapest queries, '
      .. 'for use between samples. t_ns is on kb.clock_ns()\'s clock.',
    example = 'local s = kb.nvml.sample()\nif s then print(s.sm_mhz, s.temp_c, table.concat(s.throttle, ",")) end' },
  { name = 'kb.nvml.info', signature = 'kb.nvml.info([device]) -> table | nil, message',
    summary = 'name, uuid, and the max, application, default and boost clocks of a GPU.',
    details = 'Application clocks that differ from their defaults mean someone set them (nvidia-smi -ac).',
    example = 'local i = kb.nvml.info()\nif i then print(i.name, i.max_sm_mhz) end' },
  { name = 'kb.nvml.reason_names', signature = 'kb.nvml.reason_names() -> {[bit] = name}',
    summary = 'The throttle reasons this build knows, by bit of throttle_mask.',
    example = 'for bit, name in pairs(kb.nvml.reason_names()) do print(bit, name) end' },
})

section('trace', {
  { name = 'kb.trace.available', signature = 'kb.trace.available([device]) -> true | false, why',
    summary = 'Whether the device can be traced (on cuda: whether CUPTI loads), and why not.',
    example = 'local ok, why = kb.trace.available()\nif not ok then print(why) end' },
  { name = 'kb.trace.start', signature = 'kb.trace.start([device])',
    summary = 'Records every kernel and copy the device runs from now on.',
    details = 'An error when tracing is already on, or when the device cannot be traced (the '
      .. 'message says why). Records left from an earlier trace are discarded.',
    example = 'kb.trace.start()\nkb.rope.llama4_fwd(q, k, f)\nkb.synchronize()\nfor _, r in ipairs(kb.trace.stop()) do print(r.name, r.ns) end' },
  { name = 'kb.trace.collect', signature = 'kb.trace.collect() -> records, dropped',
    summary = 'The records of the work completed so far (synchronise first), oldest first; the buffer is emptied.',
    details = 'A record: name (demangled on cuda), kind ("kernel" or "memcpy"), start_ns, end_ns, '
      .. 'ns (duration), grid and block ({x, y, z}, kernels), bytes (copies), stream, '
      .. 'correlation, internal (true for kluabench\'s own stream-holding spin kernel). dropped: '
      .. 'records the tracer lost since the last call.',
    example = 'kb.trace.start()\nfn()\nkb.synchronize()\nlocal recs, dropped = kb.trace.collect()' },
  { name = 'kb.trace.stop', signature = 'kb.trace.stop() -> records, dropped',
    summary = 'Switches tracing off and returns what was not collected yet (an empty list when it was off).',
    example = 'local recs = kb.trace.stop()' },
  { name = 'kb.trace.active', signature = 'kb.trace.active() -> device | nil',
    summary = 'The device being traced ("cpu", "cuda:0"), or nil.',
    example = 'print(kb.trace.active())' },
})

---------------------------------------------------------------------------
-- Digests and JCS
---------------------------------------------------------------------------

section('digest', {
  { name = 'kb.sha256', signature = 'kb.sha256(bytes) -> hex',
    summary = 'SHA-256 of a string, as 64 lowercase hex digits.',
    example = 'print(kb.sha256("abc")) --> ba7816bf...' },
  { name = 'kb.sha256_file', signature = 'kb.sha256_file(path) -> hex | nil, message',
    summary = 'SHA-256 of a file\'s bytes; nil and "path: reason" when it cannot be read.',
    details = 'Only regular files: a device or a FIFO (which may never end) gives nil, "path: not a regular file ...".',
    example = 'local hex, err = kb.sha256_file("kernels/rope.cu")' },
  { name = 'kb.fsync', signature = 'kb.fsync(path) -> true | nil, message',
    summary = 'Flushes a file\'s (or a directory\'s) data to the device, for "write, fsync, rename" output that survives a crash.',
    example = 'local ok, err = kb.fsync(".")' },
  { name = 'kb.stat', signature = 'kb.stat(path [, follow]) -> {type, mode, size} | nil, message, errno',
    summary = 'What path is: type "file", "directory", "link", "fifo", "char", "block", "socket" or "other"; mode (permission bits) and size.',
    details = 'Links are not followed unless follow is true (lstat/stat). errno is 2 when path does not exist.',
    example = 'local st = kb.stat("/dev/null", true) print(st.type) --> char' },
  { name = 'kb.realpath', signature = 'kb.realpath(path) -> absolute path | nil, message',
    summary = 'The absolute path with every symbolic link resolved (nil for a dangling link).',
    example = 'print(kb.realpath("."))' },
  { name = 'kb.chmod', signature = 'kb.chmod(path, mode) -> true | nil, message',
    summary = 'Sets the permission bits of a file (0 to 07777); output.write_atomic keeps a replaced file\'s mode with it.',
    example = 'kb.chmod("result.json", 420) -- 0644' },
  { name = 'kb.mkdir', signature = 'kb.mkdir(path) -> true | nil, message, errno',
    summary = 'Creates one directory (mode 0777 less the umask), without a shell; errno 17 when it exists.',
    example = 'local ok, err, errno = kb.mkdir("results")' },
  { name = 'kb.PATH_MAX', signature = 'kb.PATH_MAX -> integer',
    summary = 'The longest path the system takes, in bytes with the final NUL (4096 on Linux); output.mkdir_p and write_atomic refuse longer paths before creating anything.',
    example = 'print(kb.PATH_MAX)' },
  { name = 'kb.digest', signature = 'kb.digest(value) -> "sha256:<hex>"',
    summary = 'The digest of a Lua value: "sha256:" .. kb.sha256(kb.jcs.encode(value)).',
    details = 'The digest recipe of records: equal values give equal digests on any machine.',
    example = 'print(kb.digest({b = 2, a = 1})) -- same as kb.digest({a = 1, b = 2})' },
  { name = 'kb.jcs.canonicalize', signature = 'kb.jcs.canonicalize(json_text) -> text',
    summary = 'The RFC 8785 canonical form of JSON text.',
    details = 'No whitespace, object members sorted by UTF-16 code units, minimal string '
      .. 'escapes, numbers as ECMAScript writes them (shortest round trip; `1e+21`, `1e-7`). '
      .. 'Invalid JSON is an error.',
    example = 'print(kb.jcs.canonicalize(\'{"b": 1.0, "a": [1e3]}\')) --> {"a":[1000],"b":1}' },
  { name = 'kb.jcs.encode', signature = 'kb.jcs.encode(value) -> text',
    summary = 'Canonical JSON of a Lua value.',
    details = 'A table whose keys are exactly 1..n is an array, one with string keys an '
      .. 'object; mark the empty table with kb.jcs.array{} or kb.jcs.object{} (unmarked it is '
      .. 'an object). Integers print exactly (beyond +-2^53 is an error); NaN, infinities, '
      .. 'cycles, mixed keys and invalid UTF-8 are errors naming the path ($.spec.x[2]).',
    example = 'print(kb.jcs.encode({list = {3, 1}, none = kb.jcs.array{}})) --> {"list":[3,1],"none":[]}' },
  { name = 'kb.jcs.decode', signature = 'kb.jcs.decode(json_text) -> value',
    summary = 'Parses strict JSON (RFC 8259) into Lua values.',
    details = 'Arrays and objects come back marked (kb.jcs.is_array tells them apart); null is '
      .. 'kb.jcs.null.',
    example = 'local v = kb.jcs.decode(\'{"a": [1, 2]}\')\nprint(v.a[2], kb.jcs.is_array(v.a))' },
  { name = 'kb.jcs.array', signature = 'kb.jcs.array([t]) -> t',
    summary = 'Marks t (a new table when absent) to encode as a JSON array, even when empty.',
    example = 'local samples = kb.jcs.array{}' },
  { name = 'kb.jcs.object', signature = 'kb.jcs.object([t]) -> t',
    summary = 'Marks t (a new table when absent) to encode as a JSON object.',
    example = 'local labels = kb.jcs.object{}' },
  { name = 'kb.jcs.is_array', signature = 'kb.jcs.is_array(v) -> boolean',
    summary = 'True when v is a table with the array mark.',
    example = 'assert(kb.jcs.is_array(kb.jcs.decode("[]")))' },
  { name = 'kb.jcs.null', kind = 'value', signature = 'kb.jcs.null',
    summary = 'The value JSON null decodes to and encodes from (the NULL light userdata, like cjson.null).',
    example = 'print(kb.jcs.encode({x = kb.jcs.null})) --> {"x":null}' },
  { name = 'kb.jcs.MAX_DEPTH', kind = 'value', signature = 'kb.jcs.MAX_DEPTH',
    summary = 'The deepest nesting of arrays and objects that kb.jcs reads and writes; the stdlib\'s JSON reader and writer (output.decode, output.encode_line) use the same cap.',
    example = 'print(kb.jcs.MAX_DEPTH) --> 1000' },
})

---------------------------------------------------------------------------
-- Interrupts
---------------------------------------------------------------------------

section('signals', {
  { name = 'kb.defer_interrupts', signature = 'kb.defer_interrupts(on) -> previous',
    summary = 'With on = true, Ctrl-C and SIGTERM are remembered instead of stopping the script.',
    details = 'Poll kb.interrupted() between samples or points and stop cleanly. The mode ends '
      .. 'with defer_interrupts(false) or at the end of the top-level chunk; a second Ctrl-C '
      .. 'while one is pending stops at once. Switching the mode forgets a pending signal; asking '
      .. 'for the mode already in force keeps it (a sweep inside a loop that defers too).',
    example = 'kb.defer_interrupts(true)\nfor _, pt in ipairs(points) do\n'
      .. '  if kb.interrupted() then break end\n  run(pt)\nend\nkb.defer_interrupts(false)' },
  { name = 'kb.interrupted', signature = 'kb.interrupted() -> false | true, "SIGINT" | "SIGTERM"',
    summary = 'Whether a deferred interrupt is pending, and which signal it was.',
    example = 'local stop, sig = kb.interrupted()' },
})

---------------------------------------------------------------------------
-- kluabench.stats
---------------------------------------------------------------------------

section('stats', {
  { name = 'stats.quantile', signature = 'stats.quantile(xs, q) -> number',
    summary = 'The q-quantile (0 <= q <= 1) by linear interpolation between closest ranks.',
    details = 'The definition of numpy\'s default, torch.quantile and triton.testing: with sorted '
      .. 'a[0..n-1] and h = q (n - 1), (1 - t) a[floor h] + t a[ceil h], t = h - floor h.',
    example = 'print(stats.quantile({4, 1, 3, 2}, 0.2)) --> 1.6' },
  { name = 'stats.sorted_quantile', signature = 'stats.sorted_quantile(s, n, q) -> number',
    summary = 'stats.quantile on a list s of n samples that is already sorted (no checks, no copy).',
    details = 'For loops that sort once and ask for many quantiles (the bootstrap in '
      .. 'kluabench.stats.inference).',
    example = 'print(stats.sorted_quantile({1, 2, 3, 4}, 4, 0.5)) --> 2.5' },
  { name = 'stats.quantiles', signature = 'stats.quantiles(xs, qs) -> {numbers}',
    summary = 'Several quantiles at once (one sort), in the order of qs.',
    example = 'local med, p20, p80 = table.unpack(stats.quantiles(samples, {0.5, 0.2, 0.8}))' },
  { name = 'stats.median', signature = 'stats.median(xs) -> number',
    summary = 'The median (the mean of the two middle samples when n is even).',
    example = 'print(stats.median({3, 1, 2, 10})) --> 2.5' },
  { name = 'stats.mean', signature = 'stats.mean(xs) -> number',
    summary = 'The arithmetic mean (compensated summation).', example = 'print(stats.mean({1, 2, 3})) --> 2.0' },
  { name = 'stats.min', signature = 'stats.min(xs) -> number', summary = 'The smallest sample.',
    example = 'print(stats.min({3, 1, 2}))' },
  { name = 'stats.max', signature = 'stats.max(xs) -> number', summary = 'The largest sample.',
    example = 'print(stats.max({3, 1, 2}))' },
  { name = 'stats.variance', signature = 'stats.variance(xs) -> number | nil, message',
    summary = 'The sample variance (divisor n - 1); nil and a message for fewer than 2 samples.',
    example = 'print(stats.variance({1, 2, 3, 4}))' },
  { name = 'stats.stdev', signature = 'stats.stdev(xs) -> number | nil, message',
    summary = 'The sample standard deviation (divisor n - 1, as numpy ddof=1 and torch.std).',
    example = 'print(stats.stdev({1, 2, 3, 4}))' },
  { name = 'stats.iqr', signature = 'stats.iqr(xs) -> number',
    summary = 'The interquartile range quantile(0.75) - quantile(0.25).',
    example = 'print(stats.iqr({1, 2, 3, 4, 5}))' },
  { name = 'stats.sorted', signature = 'stats.sorted(xs) -> {numbers}', summary = 'A sorted copy of xs.',
    example = 'local s = stats.sorted(samples)' },
  { name = 'stats.summary', signature = 'stats.summary(xs) -> table',
    summary = 'n, min, max, mean, stdev, median, p20, p80, q25, q75, iqr and rsd of the samples.',
    details = 'stdev and rsd (stdev / mean) are nil when they are undefined (n < 2).',
    example = 'local s = stats.summary(result.samples)\nprint(s.median, s.p20, s.p80, s.rsd)' },
})

---------------------------------------------------------------------------
-- kluabench.measure.do_bench
---------------------------------------------------------------------------

section('bench', {
  { name = 'bench.do_bench', signature = 'bench.do_bench(fn [, opts]) -> value, result',
    summary = 'Times fn with the algorithm of triton.testing.do_bench.',
    details = 'fn once; a 5-call estimate (L2 flushed before each); n_warmup = max(1, warmup_ms / '
      .. 'estimate) and n_repeat = max(1, rep_ms / estimate); then per repetition: '
      .. 'opts.before_each(), flush the L2, start event, fn(), end event; one synchronize. '
      .. 'opts: warmup_ms (25), rep_ms (100), quantiles, return_mode ("mean"; min, max, median, '
      .. 'all), before_each, device (a ctx table like bench.device()), flush_bytes; an unknown option or a value '
      .. 'out of range (rep_ms and warmup_ms at most bench.MAX_MS, an hour) is an error naming it, and a '
      .. 'run that would keep more than bench.MAX_SAMPLES samples is refused. value is what triton '
      .. 'returns (the quantiles when given); result has samples (ms), summary, quantiles and '
      .. 'used (every number the run derived).',
    example = 'local q = kb.randn({1, 2048, 32, 16}, "bf16", 1)\n'
      .. 'local k = kb.randn({1, 2048, 8, 16}, "bf16", 2)\n'
      .. 'local f = kb.rope.freqs(2048, 16)\n'
      .. 'local ms = bench.do_bench(function() kb.rope.llama4_fwd(q, k, f) end,\n'
      .. '  {rep_ms = 400, quantiles = {0.5, 0.2, 0.8}})\nprint(ms[1], ms[2], ms[3])' },
  { name = 'bench.protocol', signature = 'bench.protocol{name, params, run [, spec, title]} -> Protocol',
    summary = 'A protocol value: a named way of measuring a function, that records can describe.',
    details = 'run(self, fn, ctx) returns {samples = {ms...}, used = {...}} or just the list of '
      .. 'samples; ctx holds the device primitives (event, elapsed_ms, synchronize, flush_l2, '
      .. 'clock_ns), so tests can pass a fake clock. spec(self, info) returns the '
      .. 'BenchmarkProtocol spec (a default one names the protocol and its parameters).',
    example = 'local ten = bench.protocol{\n  name = "ten-shots", params = {n = 10},\n'
      .. '  run = function(self, fn, ctx)\n    local samples = {}\n    for i = 1, self.params.n do\n'
      .. '      local s, e = ctx.event(), ctx.event()\n      s:record(); fn(); e:record(); ctx.synchronize()\n'
      .. '      samples[i] = ctx.elapsed_ms(s, e)\n    end\n    return samples\n  end,\n}' },
  { name = 'bench.do_bench_protocol', signature = 'bench.do_bench_protocol([params]) -> Protocol',
    summary = 'bench.do_bench as a protocol value (quantiles 0.5/0.2/0.8 by default, as Liger).',
    details = 'params: warmup_ms, rep_ms, quantiles, return_mode, before_each. Its spec states the '
      .. 'configuration; the values derived per run (estimate, repetitions) go into the run record.',
    example = 'local p = bench.do_bench_protocol{rep_ms = 400}\nlocal r = p:run(fn)\nprint(r.summary.median)' },
  { name = 'bench.device', signature = 'bench.device() -> ctx',
    summary = 'The engine\'s primitives as a ctx table: event, elapsed_ms, synchronize, flush_l2, '
      .. 'clock_ns, backend, timer.',
    details = 'timer is "cuda_events" on the cuda backend and "host_monotonic" on cpu.',
    example = 'local ctx = bench.device()\nprint(ctx.backend, ctx.timer)' },
  { name = 'bench.check_options', signature = 'bench.check_options(fname, argn, opts, schema) -> opts',
    summary = 'Checks an options table: an unknown name (a misspelt key), a value of the wrong type or out of its range raises "bad argument #argn to \'fname\' (why)".',
    details = 'schema maps a name to a rule: {kind = "number", min, max, integer, above} (above: min excluded), '
      .. '{kind = "boolean"|"string"|"table"|"function"|"any"}, with one_of = {values} for allowed extras '
      .. '("auto"). NaN and infinities are never in range. bench.DO_BENCH_OPTIONS and measure.OPTIONS are the schemas of do_bench and of the modes.',
    example = 'local opts = {reps = 10}\nbench.check_options("my_bench", 1, opts, {reps = {kind = "number", min = 1, max = 1e6, integer = true}})' },
  { name = 'bench.is_protocol', signature = 'bench.is_protocol(v) -> boolean',
    summary = 'True when v is a protocol value.',
    example = 'assert(bench.is_protocol(bench.do_bench_protocol()))' },
  { name = 'protocol:run',
    signature = 'protocol:run(fn [, ctx]) -> result',
    summary = 'Measures fn; result has samples (ms), summary, used, protocol, timer, backend.',
    example = 'local r = bench.do_bench_protocol():run(function() kb.rope.llama4_fwd(q, k, f) end)' },
  { name = 'protocol:spec',
    signature = 'protocol:spec([info]) -> table',
    summary = 'The BenchmarkProtocol spec of the protocol; info: {timed = words, backend, timer}.',
    example = 'print(kb.jcs.encode(p:spec{timed = "the forward pass"}))' },
})

---------------------------------------------------------------------------
-- kluabench.measure
---------------------------------------------------------------------------

section('measure', {
  { name = 'measure.run', signature = 'measure.run(mode, fn [, opts [, ctx]]) -> result',
    summary = 'Measures fn in mode "cold", "hot", "graph" or "do_bench"; every raw sample is kept.',
    details = 'opts: the fields of measure.DEFAULTS (warmup_ms, hold, flush_factor, event_pairs, '
      .. 'kernel_trace, batch, rotate, margin, launches, quantiles, clocks, ...) and stop (a '
      .. 'stopping criterion or what stopping.from accepts; default stopping.rse_median()). '
      .. 'result: samples (ms), enqueue_ns (host time per call), summary, timer, backend, stop, '
      .. 'clocks, warnings and used (what the run derived, for the record). The cold mode also '
      .. 'gives used.event_pair_ms (an empty event interval, timed at warm-up) and '
      .. 'used.median_minus_event_pair_ms; with kernel_trace = true, kernel_sum_ms and '
      .. 'kernel_span_ms (per kept sample, from kb.trace) and used.kernel_trace.',
    example = 'local r = measure.run("cold", function() kb.rope.llama4_fwd(q, k, f, {inplace = true}) end,\n'
      .. '  {stop = stopping.count(20)})\nprint(r.summary.median, r.stop.reason)' },
  { name = 'measure.session', signature = 'measure.session(mode, fn [, opts [, ctx]]) -> Session',
    summary = 'A measurement advanced one sample at a time (what interleave drives).',
    example = 'local s = measure.session("cold", fn, {stop = stopping.count(10)})\n'
      .. 's:warmup()\nwhile not s:step() do end\nprint(s:result().summary.median)\ns:close()' },
  { name = 'measure.protocol', signature = 'measure.protocol(mode [, params]) -> Protocol',
    summary = 'A mode as a bench protocol value, so records come for free.',
    details = 'Its spec lists the configuration (the same for every run, so runs share a '
      .. 'protocolDigest); what a run derived goes into result.used.',
    example = 'local p = measure.protocol("cold", {stop = stopping.rse_median{target = 0.01}})\nlocal r = p:run(fn)' },
  { name = 'measure.device', signature = 'measure.device() -> ctx',
    summary = 'bench.device() plus spin, graph, device_info, interrupted and nvml.',
    example = 'local ctx = measure.device()\nprint(ctx.backend)' },
  { name = 'measure.complete', signature = 'measure.complete(ctx) -> ctx',
    summary = 'ctx with what the modes need: the engine\'s ctx becomes measure.device(); a test\'s fake stays as it is.',
    example = 'local ctx = measure.complete(bench.device())' },
  { name = 'measure.trace_totals', signature = 'measure.trace_totals(records) -> n, sum_ms, span_ms, names',
    summary = 'The kernels of kb.trace records, internal ones left out: count, summed durations, first start to last end.',
    example = 'kb.trace.start()\nfn()\nkb.synchronize()\nprint(measure.trace_totals(kb.trace.stop()))' },
  { name = 'measure.rotation_check', signature = 'measure.rotation_check(private_bytes, l2_bytes [, margin]) -> ok, info',
    summary = 'Whether rotating input sets keeps the caches cold: min over sets of (total - own) >= margin x L2.',
    details = 'private_bytes lists, per set, the bytes only that set touches; margin defaults to 2. '
      .. 'One set never passes. The graph mode refuses to run when this fails.',
    example = 'local ok, info = measure.rotation_check({64e6, 64e6, 64e6}, 50e6)\nprint(ok, info.required_bytes)' },
  { name = 'measure.rotate_for', signature = 'measure.rotate_for(set_bytes, l2_bytes [, margin]) -> n',
    summary = 'The number of sets of set_bytes each that passes rotation_check.',
    example = 'print(measure.rotate_for(16e6, 50e6)) -- sets needed on a 50 MB L2' },
  { name = 'measure.rotation_message', signature = 'measure.rotation_message(info, set_bytes) -> text',
    summary = 'The refusal message for a rotation that fails rotation_check.',
    example = 'local ok, info = measure.rotation_check({1e6}, 50e6)\nif not ok then print(measure.rotation_message(info, 1e6)) end' },
  { name = 'measure.rotation_bytes', signature = 'measure.rotation_bytes(sets) -> private, shared_bytes',
    summary = 'The bytes private to each input set, found by tensor identity (a shared tensor counts for none).',
    example = 'local private, shared = measure.rotation_bytes({{q = q, f = f}, {q = q:clone(), f = f}})' },
  { name = 'session:warmup', signature = 'session:warmup()', summary = 'Warms up (once) and reads the clocks before the point.',
    example = 's:warmup()' },
  { name = 'session:step', signature = 'session:step() -> done',
    summary = 'Takes one sample; true when the stopping rule says done.',
    details = 'A sample is retaken when the hold was too short (launch overhead could be inside it) '
      .. 'and dropped when the GPU was throttled.',
    example = 'while not s:step() do end' },
  { name = 'session:result', signature = 'session:result() -> result',
    summary = 'samples (ms), enqueue_ns, summary, timer, backend, stop, clocks, warnings, used.',
    example = 's:warmup()\nwhile not s:step() do end\nlocal r = s:result()\nprint(r.summary.median)' },
  { name = 'session:close', signature = 'session:close()', summary = 'Frees what the session holds on the device (its graph).',
    example = 's:close()' },
})

---------------------------------------------------------------------------
-- kluabench.measure.stopping
---------------------------------------------------------------------------

section('stopping', {
  { name = 'stopping.count', signature = 'stopping.count(n) -> Criterion', summary = 'Exactly n samples.',
    example = 'local r = measure.run("cold", fn, {stop = stopping.count(50)})' },
  { name = 'stopping.time_budget', signature = 'stopping.time_budget(ms) -> Criterion',
    summary = 'As many samples as fit in ms milliseconds of host time (at least one).',
    example = 'local rule = stopping.time_budget(500)' },
  { name = 'stopping.rse_median', signature = 'stopping.rse_median([opts]) -> Criterion',
    summary = 'Until the relative standard error of the median is at most opts.target (0.5 % by default).',
    details = 'With at least min_samples samples and min_time_ms of measured time; or until '
      .. 'timeout_ms of host time or max_samples (then not converged). Defaults: '
      .. 'stopping.RSE_DEFAULTS.',
    example = 'local rule = stopping.rse_median{target = 0.01, timeout_ms = 5000}' },
  { name = 'stopping.any', signature = 'stopping.any(list) -> Criterion',
    summary = 'Done when the first of several criteria is; its reason is reported.',
    example = 'local rule = stopping.any{stopping.rse_median(), stopping.count(1000)}' },
  { name = 'stopping.from', signature = 'stopping.from(v) -> Criterion',
    summary = 'A criterion from a short form: n, "count:N", "time:MS", "rse:TARGET" or {rule = ..., ...}.',
    example = 'local rule = stopping.from("rse:0.01")' },
  { name = 'stopping.criterion', signature = 'stopping.criterion{name, params, check} -> Criterion',
    summary = 'A criterion of your own: check(self, st) -> done, reason, converged.',
    example = 'local fast = stopping.criterion{name = "p20_below", params = {ms = 0.1},\n'
      .. '  check = function(self, st)\n    if st.n >= 10 and st:quantile(0.2) < self.params.ms then return true, "fast enough" end\n'
      .. '    return st.elapsed_ms >= 5000, "gave up after 5 s"\n  end}' },
  { name = 'stopping.is_criterion', signature = 'stopping.is_criterion(v) -> boolean', summary = 'True when v is a criterion.',
    example = 'assert(stopping.is_criterion(stopping.count(3)))' },
  { name = 'stopping.state', signature = 'stopping.state([clock_ns]) -> State',
    summary = 'A fresh state: the samples kept so far (n, samples, sorted, sum) and the elapsed host time.',
    example = 'local st = stopping.state()\nst:add(0.12)\nprint(st.n, st:median())' },
  { name = 'stopping.unmet', signature = 'stopping.unmet(params, st, rse) -> text',
    summary = 'The conditions of an rse_median rule (its params) that state st has not met, as one phrase.',
    details = 'The reason a run that timed out gives: "rse of the median 1.2% > 0.5%", "12 samples < min_samples 20", '
      .. '"3.1 ms measured < min_time_ms 10", joined by "; ".',
    example = 'local st = stopping.state(); st:add(1); st:add(1)\nprint(stopping.unmet(stopping.RSE_DEFAULTS, st, st:rse_median()))' },
  { name = 'stopping.outcome', signature = 'stopping.outcome(criterion, st, reason, converged) -> table',
    summary = 'What the record says about how a run ended: {rule, reason, converged, samples, rseMedian, elapsedMs}.',
    example = 'local st = stopping.state(); st:add(1)\nlocal o = stopping.outcome(stopping.count(1), st, "1 sample", false)' },
  { name = 'criterion:check', signature = 'criterion:check(st) -> done, reason, converged',
    summary = 'Asks the criterion about state st ("not done" while st.n == 0).',
    example = 'local st = stopping.state(); st:add(1)\nprint(stopping.count(1):check(st))' },
  { name = 'criterion:spec', signature = 'criterion:spec() -> {rule, ...params}', summary = 'What goes into the record.',
    example = 'print(stopping.count(5):spec().rule)' },
  { name = 'st:start', signature = 'st:start()', summary = 'Starts the clock (idempotent).', example = 'local st = stopping.state()\nst:start()' },
  { name = 'st:tick', signature = 'st:tick()', summary = 'Updates st.elapsed_ms from the clock.', example = 'local st = stopping.state()\nst:tick()' },
  { name = 'st:add', signature = 'st:add(ms)', summary = 'Keeps one sample (sorted copy kept by binary insertion).',
    example = 'local st = stopping.state()\nst:add(0.5)' },
  { name = 'st:quantile', signature = 'st:quantile(q) -> ms', summary = 'The q-quantile of the samples kept.',
    example = 'local st = stopping.state(); st:add(1); st:add(2)\nprint(st:quantile(0.5))' },
  { name = 'st:median', signature = 'st:median() -> ms | nil', summary = 'The median of the samples kept (nil when none).',
    example = 'local st = stopping.state(); st:add(3)\nprint(st:median())' },
  { name = 'st:rse_median', signature = 'st:rse_median([confidence]) -> number',
    summary = 'The relative standard error of the median; math.huge with fewer than 2 samples.',
    example = 'local st = stopping.state()\nfor _, v in ipairs{1, 1.1, 0.9, 1.05} do st:add(v) end\nprint(st:rse_median())' },
})

---------------------------------------------------------------------------
-- kluabench.measure.interleave
---------------------------------------------------------------------------

section('interleave', {
  { name = 'interleave.run', signature = 'interleave.run(tasks [, opts]) -> out',
    summary = 'Runs sessions ({name, session} each) in turns until every stopping rule is done.',
    details = 'opts: order ("shuffle", default, or "roundrobin"), seed (drawn when absent and '
      .. 'always returned), keep_sequence, max_rounds. out: {order, seed, rounds, results = '
      .. '{[name] = result}, sequence, names}.',
    example = 'local out = interleave.run({\n'
      .. '  {name = "fused", session = measure.session("cold", fused, {stop = stopping.count(30)})},\n'
      .. '  {name = "reference", session = measure.session("cold", reference, {stop = stopping.count(30)})},\n'
      .. '}, {order = "shuffle", seed = 42})\nprint(out.results.fused.summary.median)' },
  { name = 'interleave.schedule', signature = 'interleave.schedule(k, rounds [, order [, seed]]) -> rounds',
    summary = 'The order of the first rounds of k tasks, without running anything.',
    example = 'for _, r in ipairs(interleave.schedule(3, 2, "shuffle", 7)) do print(table.concat(r, " ")) end' },
  { name = 'interleave.round_order', signature = 'interleave.round_order(active, order, rng) -> list',
    summary = 'The order of one round over the task indices in active.',
    example = 'print(table.concat(interleave.round_order({1, 2, 3}, "shuffle", prng.new(1)), " "))' },
})

---------------------------------------------------------------------------
-- kluabench.measure.clocks
---------------------------------------------------------------------------

section('clocks', {
  { name = 'clocks.monitor', signature = 'clocks.monitor([opts]) -> Monitor',
    summary = 'A monitor of one GPU\'s clocks; inert (keeps every sample) where NVML is absent.',
    details = 'opts: device (NVML index, UUID or PCI bus id), nvml (a fake for tests), clock_ns, '
      .. 'sleep_ms, and the fields of clocks.DEFAULTS (stable_spread, recovery_ms, max_drops, ...).',
    example = 'local mon = clocks.monitor()\nmon:before()\n-- per sample: local keep, why = mon:check()\nmon:after()\nlocal s = mon:summary()' },
  { name = 'clocks.nvml_device_for', signature = 'clocks.nvml_device_for(ordinal [, visible]) -> device',
    summary = 'The NVML device of a CUDA ordinal, through CUDA_VISIBLE_DEVICES (visible) when it is set.',
    details = 'NVML ignores CUDA_VISIBLE_DEVICES, so the ordinal-th entry of that list is used (an index '
      .. 'or a "GPU-..." UUID); otherwise the ordinal itself.',
    example = 'print(clocks.nvml_device_for(1, "GPU-aaa,GPU-bbb")) --> GPU-bbb' },
  { name = 'clocks.drop_reasons_of', signature = 'clocks.drop_reasons_of(sample [, reasons]) -> {names}',
    summary = 'The throttle reasons of a reading that drop a sample (clocks.DROP_REASONS by default).',
    example = 'print(#clocks.drop_reasons_of({throttle = {"sw_thermal_slowdown"}}))' },
  { name = 'clocks.locked_state', signature = 'clocks.locked_state(info, reasons, sm) -> locked, basis',
    summary = 'Whether the clocks were locked: true, false or nil (unknown), and why, from settings and readings.',
    example = 'print(clocks.locked_state({}, {}, {1980, 1980}))' },
  { name = 'mon:before', signature = 'mon:before()', summary = 'A full reading (and the clock settings) before a point.',
    example = 'local mon = clocks.monitor()\nmon:before()' },
  { name = 'mon:after', signature = 'mon:after()', summary = 'A full reading after a point.', example = 'local mon = clocks.monitor()\nmon:after()' },
  { name = 'mon:check', signature = 'mon:check() -> true | false, reasons',
    summary = 'After a sample: keep it, or drop it because the GPU was throttled.',
    example = 'local mon = clocks.monitor()\nlocal keep, why = mon:check()' },
  { name = 'mon:recover', signature = 'mon:recover()', summary = 'Pauses recovery_ms after a dropped sample.',
    example = 'local mon = clocks.monitor()\nif not mon:check() then mon:recover() end' },
  { name = 'mon:read', signature = 'mon:read(kind) -> reading | nil',
    summary = 'One reading ("full" or "quick"); an NVML failure is recorded, not raised.',
    example = 'local mon = clocks.monitor()\nlocal r = mon:read("quick")' },
  { name = 'mon:summary', signature = 'mon:summary() -> table',
    summary = 'The record\'s clock summary: smMhz, memMhz, tempC, powerW, stable, locked, drops, warnings.',
    example = 'local mon = clocks.monitor()\nprint(mon:summary().available)' },
})

---------------------------------------------------------------------------
-- kluabench.record.ceilings
---------------------------------------------------------------------------

section('ceilings', {
  { name = 'ceilings.copy_ceiling', signature = 'ceilings.copy_ceiling([opts]) -> entry, from_cache',
    summary = 'The device\'s copy bandwidth: from the cache, or measured and stored (opts.force measures again).',
    example = 'local c = ceilings.copy_ceiling()\nprint(c.copy_gbps .. " GB/s")' },
  { name = 'ceilings.measure_copy', signature = 'ceilings.measure_copy([opts]) -> entry',
    summary = 'Measures the copy bandwidth (bytes read + written) of a large copy in the cold mode.',
    details = 'opts: bytes (one buffer; default max(8 x L2, 1 GiB) on cuda, 64 MiB on cpu), stop, kb.',
    example = 'local e = ceilings.measure_copy{bytes = 256 << 20}' },
  { name = 'ceilings.gbps', signature = 'ceilings.gbps(bytes, ms) -> GB/s', summary = '10^9 bytes per second of moving bytes in ms.',
    example = 'print(ceilings.gbps(1e9, 1)) --> 1000.0' },
  { name = 'ceilings.tflops', signature = 'ceilings.tflops(flops, ms) -> TFLOP/s', summary = 'TFLOP/s of flops in ms.',
    example = 'print(ceilings.tflops(1e12, 1000))' },
  { name = 'ceilings.percent', signature = 'ceilings.percent(x, ceiling) -> number | nil',
    summary = 'x as a percentage of ceiling.', example = 'print(ceilings.percent(3000, 4000)) --> 75.0' },
  { name = 'ceilings.floor_ms', signature = 'ceilings.floor_ms(bytes, flops, ceil) -> ms, "memory" | "compute"',
    summary = 'The roofline floor: max(bytes / ceil.copy_gbps, flops / ceil.tflops).',
    example = 'print(ceilings.floor_ms(1e9, nil, {copy_gbps = 4000}))' },
  { name = 'ceilings.throughput', signature = 'ceilings.throughput(bytes, flops, ms, ceil) -> table',
    summary = 'What a record carries: {gbps, percentOfCopy, floorMs, boundBy, percentOfFloor}.',
    example = 'local t = ceilings.throughput(1e9, nil, 0.5, {copy_gbps = 4000})\nprint(t.gbps, t.percentOfCopy)' },
  { name = 'ceilings.cached_throughput', signature = 'ceilings.cached_throughput(bytes, flops, ms [, opts]) -> table',
    summary = 'ceilings.throughput against the cached copy ceiling of the default device; never measures.',
    details = 'Without a cached ceiling, percentOfCopy and the floor are left out and `note` says how '
      .. 'to get one (kluabench scripts/ceilings.lua). opts.path: another cache file.',
    example = 'local t = ceilings.cached_throughput(2 * q:nbytes(), nil, 0.12)\nprint(t.gbps, t.percentOfCopy or t.note)' },
  { name = 'ceilings.lookup', signature = 'ceilings.lookup(info [, path]) -> entry | nil',
    summary = 'The cached ceilings of a device (a device_info table).', example = 'local e = ceilings.lookup(kb.device_info())' },
  { name = 'ceilings.store', signature = 'ceilings.store(info, entry [, path]) -> true | nil, message',
    summary = 'Stores an entry for a device in the cache file (atomic rewrite).',
    example = 'ceilings.store(kb.device_info(), {copy_gbps = 3900}, os.tmpname())' },
  { name = 'ceilings.usable_copy', signature = 'ceilings.usable_copy(entry) -> gbps | nil, why',
    summary = 'The copy ceiling of a cache entry when it may be used: a finite positive number that did not end unconverged.',
    example = 'print(ceilings.usable_copy({copy_gbps = 4000, converged = false}))' },
  { name = 'ceilings.usable_noise', signature = 'ceilings.usable_noise(entry) -> figure | nil, why',
    summary = 'The between-session noise figure of a cache entry (entry.sessionNoise) when its numbers are valid.',
    example = 'print(ceilings.usable_noise({sessionNoise = {scales = {{ms = 0.01, sd = 0.02}}}}))' },
  { name = 'ceilings.noise_at', signature = 'ceilings.noise_at(figure, ms) -> sd',
    summary = 'The between-session sd of log median at a point of median ms: the scales\' sdUpper interpolated in log(ms).',
    example = 'print(ceilings.noise_at({scales = {{ms = 0.01, sd = 0.02}, {ms = 1, sd = 0.004}}}, 0.1)) --> 0.012' },
  { name = 'ceilings.noise_figure', signature = 'ceilings.noise_figure(points) -> figure | nil, why',
    summary = 'A noise figure from per-point spreads {ms, sd, df} (compare.session_spread): pooled per half-decade of time, with a 90 % upper bound of each sd.',
    example = 'local f = ceilings.noise_figure({{ms = 0.007, sd = 0.015, df = 3}, {ms = 0.008, sd = 0.02, df = 3}})\nprint(f.scales[1].sd, f.scales[1].sdUpper)' },
  { name = 'ceilings.store_noise', signature = 'ceilings.store_noise(info, figure [, path]) -> true | nil, message',
    summary = 'Stores a noise figure in the device\'s cache entry, beside its ceiling (scripts/run_noise.lua).',
    example = 'ceilings.store_noise(kb.device_info(), figure, os.tmpname())' },
  { name = 'ceilings.cached_noise', signature = 'ceilings.cached_noise(ms [, opts]) -> {sd, measuredAt, sessions} | nil',
    summary = 'The cached between-session noise of the default device at a point of median ms (records\' run.spec.execution.sessionNoise).',
    example = 'print(ceilings.cached_noise(0.01))' },
  { name = 'ceilings.load_cache', signature = 'ceilings.load_cache([path]) -> cache | nil, message',
    summary = 'The decoded cache {version, devices}; an empty one when the file is missing.',
    example = 'local c = ceilings.load_cache()' },
  { name = 'ceilings.cache_dir', signature = 'ceilings.cache_dir() -> path',
    summary = '$KLUABENCH_CACHE, else $XDG_CACHE_HOME/kluabench, else ~/.cache/kluabench.', example = 'print(ceilings.cache_dir())' },
  { name = 'ceilings.cache_path', signature = 'ceilings.cache_path() -> path', summary = 'The cache file: cache_dir()/ceilings.json.',
    example = 'print(ceilings.cache_path())' },
  { name = 'ceilings.device_key', signature = 'ceilings.device_key(info) -> text',
    summary = 'The key of a device in the cache: backend, name, memory and L2 size.', example = 'print(ceilings.device_key(kb.device_info()))' },
})

---------------------------------------------------------------------------
-- kluabench.stats.inference
---------------------------------------------------------------------------

section('inference', {
  { name = 'inference.bootstrap_ratio', signature = 'inference.bootstrap_ratio(base, new [, opts]) -> table',
    summary = 'The bootstrap interval of median(new) / median(base); > 1 means new is slower.',
    details = 'opts: resamples (2000), seed (1), confidence (0.95). Returns {ratio, lo, hi, '
      .. 'base_median, new_median, resamples, confidence, seed, method}.',
    example = 'local r = inference.bootstrap_ratio({1.0, 1.1, 0.9, 1.0}, {2.0, 2.1, 1.9, 2.2})\nprint(r.ratio, r.lo, r.hi)' },
  { name = 'inference.hierarchical_ratio', signature = 'inference.hierarchical_ratio(base_sessions, new_sessions [, opts]) -> table',
    summary = 'Hierarchical bootstrap of new / base over sessions (lists of samples): sessions resampled, then samples within them.',
    details = 'A side\'s estimate is the mean of its sessions\' medians; drawn sessions are spread about '
      .. 'their mean by sqrt(R / (R - 1)). opts: resamples (2000), confidence (0.95), seed (1). Returns '
      .. '{ratio, lo, hi, base_median, new_median, base_sessions, new_sessions, base_between, '
      .. 'new_between (sd of the sessions\' log medians), resamples, confidence, seed, method}.',
    example = 'local r = inference.hierarchical_ratio({{1, 1.1, 0.9}, {1.05, 1.0, 1.1}}, {{2, 2.1, 1.9}, {2.2, 2.0, 2.1}})\nprint(r.ratio, r.lo, r.hi)' },
  { name = 'inference.order_statistic_cdf', signature = 'inference.order_statistic_cdf(n, k) -> F',
    summary = 'The law of the k-th smallest of a bootstrap resample of n sorted samples: F[j] = P(Binomial(n, j/n) >= k).',
    details = 'A resample\'s k-th order statistic is s[j] for the first j with F[j] above a uniform draw, so '
      .. 'a bootstrap of a median costs a binary search per resample instead of n draws.',
    example = 'local F = inference.order_statistic_cdf(5, 3)\nprint(F[1], F[3], F[5])' },
  { name = 'inference.widen', signature = 'inference.widen(ratio, lo, hi, sd [, confidence]) -> lo, hi',
    summary = 'Widens an interval around ratio by a further relative sd: each log half-width h becomes sqrt(h^2 + (z sd)^2).',
    example = 'print(inference.widen(1.0, 0.99, 1.01, 0.02))' },
  { name = 'inference.mann_whitney', signature = 'inference.mann_whitney(a, b) -> {u, z, p, p_superiority}',
    summary = 'The two-sided Mann-Whitney U test of a against b (p_superiority > 0.5: a tends to be larger).',
    example = 'print(inference.mann_whitney({1, 2, 3, 4}, {5, 6, 7, 8}).p)' },
  { name = 'inference.median_ci', signature = 'inference.median_ci(xs [, confidence [, opts]]) -> lo, hi',
    summary = 'The distribution-free confidence interval of the median (order statistics).',
    example = 'print(inference.median_ci({5, 1, 4, 2, 3, 6, 7, 8, 9, 10}, 0.95))' },
  { name = 'inference.median_ci_ranks', signature = 'inference.median_ci_ranks(n [, confidence]) -> lo_rank, hi_rank',
    summary = 'The ranks of the order statistics that bracket the median of n samples.', example = 'print(inference.median_ci_ranks(100))' },
  { name = 'inference.rse_median', signature = 'inference.rse_median(xs [, opts]) -> rse, median, lo, hi',
    summary = 'The relative standard error of the median: the CI half-width over z, over the median.',
    example = 'print(inference.rse_median({1, 1.1, 0.9, 1.05, 0.95}))' },
  { name = 'inference.t_cdf', signature = 'inference.t_cdf(t, df) -> p',
    summary = 'Student\'s t distribution function for integer degrees of freedom (Abramowitz and Stegun 26.7.3-4).',
    example = 'print(inference.t_cdf(-2, 5)) --> 0.05097' },
  { name = 'inference.t_quantile', signature = 'inference.t_quantile(p, df) -> t',
    summary = 'The p-quantile (p >= 0.5) of Student\'s t with df degrees of freedom.',
    example = 'print(inference.t_quantile(0.975, 2)) --> 4.3027' },
  { name = 'inference.normal_cdf', signature = 'inference.normal_cdf(x) -> p', summary = 'The standard normal distribution function.',
    example = 'print(inference.normal_cdf(1.96)) --> 0.975' },
  { name = 'inference.normal_quantile', signature = 'inference.normal_quantile(p) -> x',
    summary = 'The p-quantile of the standard normal distribution.', example = 'print(inference.normal_quantile(0.975)) --> 1.959964' },
})

---------------------------------------------------------------------------
-- kluabench.report.compare
---------------------------------------------------------------------------

section('compare', {
  { name = 'compare.compare', signature = 'compare.compare(base, new [, opts]) -> result',
    summary = 'Compares two lists of bundles point by point: verdict, ratio, interval, p-value, hint.',
    details = 'opts: threshold (0.05: a SLOWER point beyond it is a regression), noise (0.01), '
      .. 'confidence, resamples, seed, familywise (true: each interval at 1 - (1 - confidence) / m for m '
      .. 'points) (compare.DEFAULTS), between (the between-session sd of log median: a number or a '
      .. 'function(ms) -> sd, source; default the records\' sessionNoise, else device_between). result: '
      .. '{points, only_base, only_new, regressions, counts, opts}.',
    example = 'local r = compare.compare(assert(compare.read("base.jsonl")), assert(compare.read("new.jsonl")))\n'
      .. 'io.write(compare.format(r, "markdown"))' },
  { name = 'compare.compare_samples', signature = 'compare.compare_samples(base, new [, opts]) -> table',
    summary = 'Compares two lists of samples (ms), one session each: compare.compare_sessions({base}, {new}, opts).',
    example = 'local c = compare.compare_samples({1, 1.1, 0.9, 1, 1.05}, {1.5, 1.6, 1.4, 1.55, 1.5}, {between = 0.01})\nprint(c.verdict, c.ratio)' },
  { name = 'compare.compare_sessions', signature = 'compare.compare_sessions(base_sessions, new_sessions [, opts]) -> table',
    summary = 'Compares the sessions of one point: hierarchical bootstrap, widened by the between-session noise where a side has one session.',
    details = 'Fewer than compare.MIN_SAMPLES (5) samples on a side, or one session a side and no '
      .. 'between-session figure, give UNSURE with `why` set. opts: as compare.compare, and points '
      .. '(how many points the comparison holds, for the family-wise confidence). Returns {ratio, lo, '
      .. 'hi, p, verdict, regression, base_median, new_median, base_n, new_n, base_sessions, '
      .. 'new_sessions, between, point_confidence, why, ...}.',
    example = 'local c = compare.compare_sessions({{1, 1.1, 0.9, 1, 1.05}, {1, 1, 1.1, 0.95, 1}}, {{1.5, 1.6, 1.4, 1.55, 1.5}, {1.5, 1.5, 1.6, 1.45, 1.5}})\nprint(c.verdict)' },
  { name = 'compare.session_spread', signature = 'compare.session_spread(bundles) -> list',
    summary = 'The run-to-run spread of each point found in several sessions: {label, provider, ms, sd (of log session medians), df}.',
    details = 'For ceilings.noise_figure; scripts/run_noise.lua --from uses it.',
    example = 'local sp = compare.session_spread(assert(compare.read("sessions.jsonl")))' },
  { name = 'compare.verdict', signature = 'compare.verdict(lo, hi [, noise]) -> "SAME" | "FASTER" | "SLOWER" | "UNSURE"',
    summary = 'The verdict of an interval of new / base.', example = 'print(compare.verdict(1.10, 1.20)) --> SLOWER' },
  { name = 'compare.format', signature = 'compare.format(result [, format]) -> text',
    summary = 'The report as "table" (default), "markdown" or "json", ending with a summary line.',
    example = 'io.write(compare.format(result, "markdown"))' },
  { name = 'compare.read', signature = 'compare.read(path) -> bundles | nil, message',
    summary = 'Bundles from a JSON or JSON Lines file, checked for comparing (reader.read with comparable = true).', example = 'local bundles = assert(compare.read("results.jsonl"))' },
  { name = 'compare.parse', signature = 'compare.parse(text [, label]) -> bundles | nil, message',
    summary = 'Bundles from JSON or JSON Lines text, checked for comparing (reader.parse with comparable = true).', example = 'local bundles = compare.parse(text, "results.jsonl")' },
  { name = 'compare.bundles_of', signature = 'compare.bundles_of(v) -> bundles | nil, message',
    summary = 'The bundles in a decoded value: a bundle, a list, or {bundles = [...]}.', example = 'local list = compare.bundles_of(decoded)' },
  { name = 'compare.samples_of', signature = 'compare.samples_of(bundle) -> ms list | nil, why',
    summary = 'The raw samples of a bundle in ms (reader.samples_of).', example = 'local xs = compare.samples_of(bundle)' },
  { name = 'compare.median_of', signature = 'compare.median_of(bundle) -> ms | nil', summary = 'The recorded median in ms.',
    example = 'print(compare.median_of(bundle))' },
  { name = 'compare.key_of', signature = 'compare.key_of(bundle) -> key, label',
    summary = 'The matching key ("workloadDigest|provider") and a label for people.', example = 'local key, label = compare.key_of(bundle)' },
})

---------------------------------------------------------------------------
-- kluabench.record.reader
---------------------------------------------------------------------------

section('reader', {
  { name = 'reader.read', signature = 'reader.read(path [, opts]) -> bundles, lines | nil, message',
    summary = 'The bundles of a record file (reader.parse of its text).',
    example = 'local bundles, lines = assert(reader.read("results.jsonl", {comparable = true}))' },
  { name = 'reader.parse', signature = 'reader.parse(text [, label [, opts]]) -> bundles, lines | nil, message',
    summary = 'Strictly: every value must be a bundle (an object with a run object); errors read "LABEL:LINE: why".',
    details = 'opts.comparable: also refuse a bundle without a workload digest ("sha256:...") or with a sample '
      .. 'that is not a finite positive number, naming the point. lines: the line each bundle starts on.',
    example = 'local bs, lines = reader.parse(\'{"run": {}}\\n{"run": {}}\\n\', "x.jsonl")\nprint(#bs, lines[2])' },
  { name = 'reader.items', signature = 'reader.items(text [, label]) -> items | nil, line, message',
    summary = 'Every JSON value of a file with its line, unchecked: {{bundle, line}} (what verify judges one by one).',
    details = '.jsonl and .ndjson labels are JSON Lines; other text is when it holds more than one value. '
      .. 'A JSON array gives its elements, {"bundles": [...]} the elements of that array.',
    example = 'local items = reader.items(\'[{"run": {}}, 3]\', "x.json")\nprint(#items, items[2].bundle)' },
  { name = 'reader.samples_of', signature = 'reader.samples_of(bundle) -> ms list | nil, why',
    summary = 'The raw samples of a bundle in ms (run.spec.samples or sourceNative.samples_ms); nil and why when absent or not finite positive numbers.',
    example = 'print(#reader.samples_of({run = {spec = {samples = {unit = "ns", values = {1000, 2000}}}}}))' },
  { name = 'reader.label_of', signature = 'reader.label_of(bundle) -> label, provider',
    summary = 'A label for people of a bundle\'s point ("llama4_rope forward hidden512-...-bf16") and its provider.',
    example = 'print(reader.label_of({run = {}, implementation = {spec = {provider = "fused"}}}))' },
  { name = 'reader.is_bundle', signature = 'reader.is_bundle(v) -> boolean',
    summary = 'True when v is a table with a run table.', example = 'print(reader.is_bundle({run = {}})) --> true' },
  { name = 'reader.get', signature = 'reader.get(t, key, ...) -> value | nil',
    summary = 't[key][...] when every step is a table, else nil: for fields of files that may be missing or of another type.',
    example = 'print(reader.get({run = {spec = 3}}, "run", "spec", "x")) --> nil' },
})

---------------------------------------------------------------------------
-- kluabench.stats.prng
---------------------------------------------------------------------------

section('prng', {
  { name = 'prng.new', signature = 'prng.new(seed) -> Generator', summary = 'A SplitMix64 generator seeded with an integer.',
    example = 'local rng = prng.new(42)\nprint(rng:int(6))' },
  { name = 'prng.fresh_seed', signature = 'prng.fresh_seed() -> integer',
    summary = 'A seed from the host clock, below 2^53 (exact in JSON), for when none is given.', example = 'print(prng.fresh_seed())' },
  { name = 'rng:next', signature = 'rng:next() -> integer', summary = 'The next 64-bit output (any sign).',
    example = 'print(prng.new(1):next())' },
  { name = 'rng:uniform', signature = 'rng:uniform() -> number', summary = 'A float uniform in [0, 1).',
    example = 'print(prng.new(1):uniform())' },
  { name = 'rng:int', signature = 'rng:int(n) -> integer', summary = 'An integer uniform in [1, n].', example = 'print(prng.new(1):int(10))' },
  { name = 'rng:shuffle', signature = 'rng:shuffle(t) -> t', summary = 'Shuffles a list in place (Fisher-Yates).',
    example = 'print(table.concat(prng.new(7):shuffle({1, 2, 3, 4}), " "))' },
})

---------------------------------------------------------------------------
-- kluabench.report
---------------------------------------------------------------------------

section('output', {
  { name = 'output.encode_pretty', signature = 'output.encode_pretty(v) -> text',
    summary = 'Pretty JSON (2-space indent) with keys in the record order (output.KEY_ORDER), ending in a newline.',
    example = 'io.write(output.encode_pretty(bundle))' },
  { name = 'output.encode_line', signature = 'output.encode_line(v) -> text | nil, message',
    summary = 'One-line JSON in the same key order, for JSON Lines.', example = 'print(output.encode_line({a = 1}))' },
  { name = 'output.decode', signature = 'output.decode(text [, opts]) -> value | nil, message, code',
    summary = 'Parses one JSON text; errors say "line L, column C: why".',
    details = 'code is "trailing" when a complete value is followed by more text (how JSON Lines '
      .. 'looks to a JSON reader). With opts.starts, the second result lists the line of each '
      .. 'element of a top-level array.',
    example = 'local v, err = output.decode(\'{"a": [1, 2]}\')' },
  { name = 'output.object', signature = 'output.object([t]) -> t',
    summary = 'Marks t (default {}) to be written as a JSON object when empty.',
    example = 'local labels = output.object()' },
  { name = 'output.array', signature = 'output.array([t]) -> t',
    summary = 'Marks t (default {}) to be written as a JSON array when empty.',
    example = 'local samples = output.array()' },
  { name = 'output.null', signature = 'output.null() -> value', summary = 'The value JSON null decodes to.',
    example = 'if v == output.null() then print("null") end' },
  { name = 'output.table_kind', signature = 'output.table_kind(t) -> "object" | "array"',
    summary = 'How a table is written as JSON; raises for mixed keys or a list with holes.',
    example = 'print(output.table_kind({1, 2}))' },
  { name = 'output.format_number', signature = 'output.format_number(x) -> text',
    summary = 'A number as JSON: integers exactly, floats in the shortest round-trip form; raises for NaN and infinities.',
    example = 'print(output.format_number(0.1)) --> 0.1' },
  { name = 'output.format_pyfloat', signature = 'output.format_pyfloat(x) -> text',
    summary = 'A float as Python\'s repr writes it ("256.0", "1e-05"), as Liger\'s CSV holds them; an integer plainly ("256").',
    example = 'print(output.format_pyfloat(256.0)) --> 256.0' },
  { name = 'output.ordered_keys', signature = 'output.ordered_keys(t) -> {keys}',
    summary = 'The keys of an object in output order: output.KEY_ORDER first, the rest sorted.',
    example = 'for _, k in ipairs(output.ordered_keys(bundle.run)) do print(k) end' },
  { name = 'output.quote', signature = 'output.quote(s) -> text', summary = 'A string as a JSON string literal.',
    example = 'print(output.quote(\'say "hi"\'))' },
  { name = 'output.read_file', signature = 'output.read_file(path [, max_bytes]) -> text | nil, message',
    summary = 'A whole file\'s bytes, at most max_bytes (default output.MAX_READ_BYTES, 512 MiB): an endless file is an error, not a growing process.',
    example = 'local text = assert(output.read_file("results.jsonl"))' },
  { name = 'output.read_text', signature = 'output.read_text(path [, max_bytes]) -> text | nil, message',
    summary = 'output.read_file for text: UTF-16 and UTF-32 files are refused with a message that says so; a UTF-8 byte order mark is dropped.',
    example = 'local text, err = output.read_text("all_benchmark_data.csv")' },
  { name = 'output.encoding_problem', signature = 'output.encoding_problem(text) -> message | nil',
    summary = 'Says when text is UTF-16 or UTF-32 (with or without a byte order mark), which kluabench does not read; nil when it may be UTF-8.',
    example = 'print(output.encoding_problem("\\255\\254{\\0"))\n--> the text is UTF-16 (little-endian, with a byte order mark); kluabench reads UTF-8 (convert it, e.g. iconv -f UTF-16 -t UTF-8)' },
  { name = 'output.printable', signature = 'output.printable(s [, max]) -> text',
    summary = 's made safe to quote in a message: control characters, DEL and bytes that are not UTF-8 as \\xNN, cut at max bytes (200) with "...".',
    example = 'print(output.printable("a\\27[31m")) --> a\\x1B[31m' },
  { name = 'output.write_stdout', signature = 'output.write_stdout(text) -> true | nil, message',
    summary = 'Writes text to stdout and flushes, checking both: nil, "stdout: why" when stdout is full, closed or its reader went away.',
    example = 'assert(output.write_stdout("one line\\n"))' },
  { name = 'output.check_writable', signature = 'output.check_writable(path) -> true | nil, message',
    summary = 'Whether an output path can be written, checked before any work: "-" can; an existing file must be writable and not a directory; a new file needs an existing, writable directory (a probe file is made and removed). Nothing is truncated.',
    details = 'The message names path: "out/x.jsonl: cannot write: out does not exist". The harness calls it on --out before measuring.',
    example = 'local ok, err = output.check_writable("results/today.jsonl")\nif not ok then io.stderr:write(err, "\\n") end' },
  { name = 'output.check_path_length', signature = 'output.check_path_length(path) -> true | nil, message',
    summary = 'Whether path and each of its names fit the system\'s limits (kb.PATH_MAX, 255 bytes a name).',
    example = 'assert(output.check_path_length("results/today.jsonl"))' },
  { name = 'output.write_atomic', signature = 'output.write_atomic(path, text) -> true | nil, message',
    summary = 'Writes a file through a temporary file and a rename: readers see the old or the new file, never a part.',
    details = 'The replaced file\'s mode is kept; a symbolic link is written through to its target and stays a link; a device, a FIFO or "-" (stdout) is written in place, never replaced by a plain file. Messages name path, not the temporary file, which never stays (also after an interrupt).',
    example = 'assert(output.write_atomic("result.json", output.encode_pretty(bundle)))' },
  { name = 'output.append_jsonl', signature = 'output.append_jsonl(path, value) -> true | nil, message',
    summary = 'Appends value as one JSON line to path ("-" or nil: stdout) and flushes.',
    details = 'Each finished point is on disk at once, even if a later one crashes.',
    example = 'output.append_jsonl("results.jsonl", bundle)' },
  { name = 'output.mkdir_p', signature = 'output.mkdir_p(path) -> true | nil, message',
    summary = 'Creates a directory and its parents when missing, without a shell (a name starting with "-" is a name); a path longer than the system takes is refused before anything is created.',
    example = 'output.mkdir_p("results/today")' },
  { name = 'output.csv_field', signature = 'output.csv_field(v) -> text',
    summary = 'One CSV field: numbers as Python writes them, strings quoted when needed.',
    example = 'print(output.csv_field("a,b")) --> "a,b"' },
  { name = 'output.csv_line', signature = 'output.csv_line(fields [, n]) -> text',
    summary = 'One CSV line, ending in a newline.', example = 'io.write(output.csv_line({"x", 1.5}))' },
  { name = 'output.parse_csv', signature = 'output.parse_csv(text) -> records, lines | nil, message',
    summary = 'Parses RFC 4180 CSV into lists of strings (quoted fields may hold commas, quotes and line breaks).',
    example = 'local rows = assert(output.parse_csv("a,b\\n1,2\\n"))\nprint(rows[2][1]) --> 1' },
  { name = 'output.format_table', signature = 'output.format_table(columns, rows) -> text',
    summary = 'An aligned plain-text table; columns: {key, title, align = "left"|"right", format}.',
    details = 'format is a printf pattern or a function(value, row).',
    example = 'io.write(output.format_table({{key = "name"}, {key = "ms", align = "right", format = "%.3f"}},\n'
      .. '  {{name = "fused", ms = 0.1375}}))' },
  { name = 'output.format_markdown', signature = 'output.format_markdown(columns, rows) -> text',
    summary = 'The same table as GitHub markdown, for pasting into pull requests.',
    example = 'io.write(output.format_markdown({{key = "name"}, {key = "ms"}}, {{name = "fused", ms = 0.14}}))' },
  { name = 'output.results_rows', signature = 'output.results_rows(bundles) -> rows',
    summary = 'One row per bundle for output.RESULT_COLUMNS (kernel, mode, provider, workload, median/p20/p80 us, GB/s, % of copy, samples, ci95 ±% (the 95 % interval of the median over the median), device, protocol, backend/timer, flags: n<5, !conv, <floor as output.FLAGS explains; the optional columns are left out of the tables when no row has them).',
    example = 'local rows = output.results_rows(bundles)' },
  { name = 'output.results_table', signature = 'output.results_table(bundles) -> text',
    summary = 'The aligned terminal table of a list of bundles.', example = 'io.write(output.results_table(bundles))' },
  { name = 'output.results_markdown', signature = 'output.results_markdown(bundles) -> text',
    summary = 'The markdown table of a list of bundles.', example = 'io.write(output.results_markdown(bundles))' },
  { name = 'output.liger_csv', signature = 'output.liger_csv(bundles) -> text | nil, message',
    summary = 'Liger-Kernel\'s benchmark CSV of a list of bundles, header included.',
    example = 'io.write(assert(output.liger_csv(bundles)))' },
})

---------------------------------------------------------------------------
-- kluabench.record
---------------------------------------------------------------------------

section('record', {
  { name = 'record.from_result', signature = 'record.from_result{kernel, mode, provider, parameters, dtype, result, ...} -> bundle',
    summary = 'One sealed bundle from what a protocol measured.',
    details = 'Required: kernel, mode, provider (strings), result (what protocol:run returned). '
      .. 'Optional: parameters (shape, our names), dtype, protocol (default result.protocol), '
      .. 'quantiles, environment (default env.capture()), workload, implementation, timed (words), '
      .. 'time, labels, annotations, check, execution, bytes, flops, keep_samples (false leaves '
      .. 'the raw samples out). When the workload has bytes or flops, run.spec.execution.throughput '
      .. 'gets GB/s, % of the cached copy ceiling and the roofline floor of the median (docs/RECORDS.md).',
    example = 'local r = bench.do_bench_protocol{rep_ms = 50}:run(fn)\n'
      .. 'local bundle = record.from_result{kernel = "llama4_rope", mode = "forward", provider = "fused",\n'
      .. '  parameters = {hidden = 512, seq = 2048, q_heads = 32, kv_heads = 8}, dtype = "bf16", result = r}' },
  { name = 'record.document', signature = 'record.document(kind, spec, metadata) -> document',
    summary = 'A document {kind, spec, metadata, apiVersion = "kernelindex.dev/v1alpha1"}.',
    example = 'local doc = record.document("BenchmarkWorkload", {kernel = "copy"}, {name = "copy"})' },
  { name = 'record.digest', signature = 'record.digest(doc) -> "sha256:<hex>"',
    summary = 'The digest of a document: "sha256:" .. hex(SHA-256(JCS(doc.spec))).',
    example = 'print(record.digest(record.document("BenchmarkWorkload", {kernel = "copy"}, {})))' },
  { name = 'record.seal', signature = 'record.seal(bundle) -> bundle',
    summary = 'Computes the four digests of a bundle into run.spec.', example = 'record.seal(bundle)' },
  { name = 'record.check', signature = 'record.check(bundle) -> problems',
    summary = 'Recomputes the digests of a decoded bundle; an empty list when all match.',
    details = 'A problem is {field = "protocolDigest", recorded, computed} or {field, error = why}.',
    example = 'for _, p in ipairs(record.check(bundle)) do print(p.field, p.recorded, p.computed or p.error) end' },
  { name = 'record.workload', signature = 'record.workload{kernel, operation, parameters, dtype, bytes, flops, annotations} -> document',
    summary = 'A BenchmarkWorkload document; bytes and flops default to the kernel\'s cost model.',
    example = 'local w = record.workload{kernel = "llama4_rope", operation = "forward",\n'
      .. '  parameters = {hidden = 512, seq = 2048, q_heads = 32, kv_heads = 8}, dtype = "bf16"}' },
  { name = 'record.implementation', signature = 'record.implementation{provider, kernel, target, sources, build, version} -> document',
    summary = 'A KernelImplementation document: provider, kluabench version, kernel source hashes, build flags, target.',
    example = 'local i = record.implementation{provider = "fused", kernel = "llama4_rope",\n'
      .. '  target = {backend = kb.backend(), architecture = kb.device_info().arch}}' },
  { name = 'record.user_implementation', signature = 'record.user_implementation{provider, kernel, info [, target]} -> document',
    summary = 'The KernelImplementation of a user kernel: SHA-256 of its source or binary, compile options, '
      .. 'NVRTC and driver versions, arch (info: kern:info(), mod:info(), pk:info() or tk:info()).',
    example = 'local i = record.user_implementation{provider = "mine", kernel = "llama4_rope", info = k:info()}' },
  { name = 'record.kernel_sources', signature = 'record.kernel_sources(kernel) -> {path = "sha256:<hex>"} | nil',
    summary = 'SHA-256 of the source files of a kernel, as built (kb.kernel_sources) or from the checkout.',
    example = 'for path, d in pairs(record.kernel_sources("llama4_rope") or {}) do print(path, d) end' },
  { name = 'record.latency_run', signature = 'record.latency_run{kernel, mode, provider, gpu, workload_slug, quantiles, values_ms, time, ...} -> document',
    summary = 'The BenchmarkRun document of a latency measurement (digests filled in by record.seal).',
    example = 'local run = record.latency_run{kernel = "k", mode = "forward", provider = "p", gpu = "cpu",\n'
      .. '  workload_slug = "n1024", quantiles = {0.5, 0.2, 0.8}, values_ms = {1.0, 0.9, 1.1}, time = record.now()}' },
  { name = 'record.protocol_document', signature = 'record.protocol_document(protocol [, info]) -> document',
    summary = 'The BenchmarkProtocol document of a protocol value for one timed pass; info: {mode, timed, backend}.',
    example = 'local doc = record.protocol_document(bench.do_bench_protocol(), {mode = "forward", backend = "cpu"})' },
  { name = 'record.kernel_title', signature = 'record.kernel_title(kernel) -> text',
    summary = 'A kernel\'s title for people ("Llama 4 rotary position embedding"); the name when none is known.',
    example = 'print(record.kernel_title("llama4_rope"))' },
  { name = 'record.now', signature = 'record.now() -> time fields',
    summary = 'The current UTC time as fields (with milliseconds when the engine can tell them).',
    example = 'print(names.iso8601(record.now()))' },
  { name = 'record.round', signature = 'record.round(x) -> integer', summary = 'Rounds to the nearest integer, halves away from zero.',
    example = 'print(record.round(2.5)) --> 3' },
  { name = 'record.quantile_name', signature = 'record.quantile_name(q) -> text',
    summary = 'The statistic name of a quantile: 0.2 -> "p20", 0.999 -> "p99.9".', example = 'print(record.quantile_name(0.2))' },
  { name = 'record.metric_name', signature = 'record.metric_name(q [, unit]) -> text',
    summary = 'The sourceNative metric name of a quantile: 0.2 -> "ms_20".', example = 'print(record.metric_name(0.5)) --> ms_50' },
})

---------------------------------------------------------------------------
-- kluabench.kernels
---------------------------------------------------------------------------

section('kernels', {
  { name = 'kernels.kernel', signature = 'kernels.kernel(name) -> {title, sources, cost, family} | nil',
    summary = 'What records know about a kernel: its title, source files and cost model.',
    details = 'cost(parameters, dtype, operation) returns the bytes moved and flops of one call, '
      .. 'or nil when the parameters do not say.',
    example = 'print(kernels.kernel("llama4_rope").cost({hidden = 4096, seq = 2048, q_heads = 32, '
      .. 'kv_heads = 8}, "bf16", "forward"))' },
  { name = 'kernels.title', signature = 'kernels.title(name) -> text',
    summary = 'A kernel\'s title for people; the name when none is known.',
    example = 'print(kernels.title("llama4_rope"))' },
  { name = 'kernels.functions', signature = 'kernels.functions(kb) -> {{name, family}, ...}',
    summary = 'The Lua functions of every registered family with a binding, sorted by name.',
    example = 'for _, f in ipairs(kernels.functions(kb)) do print(f.name) end' },
  { name = 'kernels.register', signature = 'kernels.register(family, {binding = name | false, kernels = {...}})',
    summary = 'Adds a family\'s descriptor (what stdlib/kluabench/kernels/<family>.lua returns).',
    details = 'Each entry of kernels (record kernel name -> {title, sources, cost}) becomes known '
      .. 'to records; the functions of kb[binding] to `kluabench list`.',
    example = 'kernels.register("mine", {binding = false, kernels = {my_op = {title = "My op"}}})' },
})

---------------------------------------------------------------------------
-- kluabench.record.env
---------------------------------------------------------------------------

section('env', {
  { name = 'env.capture', signature = 'env.capture([opts]) -> document',
    summary = 'The ExecutionEnvironment document of this process: hardware (vendor, product, formFactor, architecture) and software.',
    details = 'opts (for tests and replays): info (a device_info table), backend, kb, os, driver_release, '
      .. 'placement (metadata.annotations; default env.placement(), false for none).',
    example = 'local doc = env.capture()\nprint(doc.spec.hardware.product, doc.spec.hardware.architecture)' },
  { name = 'env.placement', signature = 'env.placement([getenv [, hostname]]) -> table | nil',
    summary = 'Where this process runs: hostName, and slurmJobId, slurmArrayJobId, slurmArrayTaskId, '
      .. 'slurmClusterName, slurmNodeName when Slurm set them.',
    details = 'env.capture puts it in the environment\'s metadata.annotations, outside the digested '
      .. 'spec: two identical hosts have one environment digest, and `kluabench merge` treats the '
      .. 'shards of one sweep on several nodes as one environment. getenv and hostname replace '
      .. 'os.getenv and /proc/sys/kernel/hostname (for tests).',
    example = 'local where = env.placement()\nprint(where and where.hostName)' },
  { name = 'env.device_name', signature = 'env.device_name(doc) -> text | nil',
    summary = 'The full device name of an environment document: product and form factor.',
    example = 'print(env.device_name(env.capture()))' },
  { name = 'env.split_gpu_name', signature = 'env.split_gpu_name(name) -> vendor, product, form_factor',
    summary = 'Splits a GPU name: "NVIDIA H100 80GB HBM3" -> "nvidia", "NVIDIA H100", "80GB HBM3".',
    example = 'print(env.split_gpu_name("NVIDIA A100-SXM4-80GB"))' },
  { name = 'env.arch_of_gpu_name', signature = 'env.arch_of_gpu_name(name) -> "sm_90" | nil',
    summary = 'The architecture a GPU name implies, or nil when unknown.', example = 'print(env.arch_of_gpu_name("NVIDIA H100 80GB HBM3"))' },
  { name = 'env.short_device_name', signature = 'env.short_device_name(name) -> text',
    summary = 'The device name without its vendor word: "H100 80GB HBM3".', example = 'print(env.short_device_name("NVIDIA H200"))' },
  { name = 'env.cuda_version', signature = 'env.cuda_version(v) -> text | nil',
    summary = '"13.0" from CUDA\'s integer encoding 13000.', example = 'print(env.cuda_version(12080)) --> 12.8' },
  { name = 'env.driver_release', signature = 'env.driver_release() -> text | nil',
    summary = 'The NVIDIA kernel driver release ("580.65.06"), from /proc/driver/nvidia/version.', example = 'print(env.driver_release())' },
  { name = 'env.os_info', signature = 'env.os_info() -> {kernel, distribution}',
    summary = 'The kernel and distribution, from /proc and /etc/os-release.', example = 'print(env.os_info().distribution)' },
  { name = 'env.hardware', signature = 'env.hardware(info, backend) -> table',
    summary = 'The hardware table of a device_info table.', example = 'local hw = env.hardware(kb.device_info(), kb.backend())' },
  { name = 'env.software', signature = 'env.software(info, backend, kb [, opts]) -> table',
    summary = 'The software table: driver, CUDA runtime, kluabench, Lua, OS.', example = 'local sw = env.software(kb.device_info(), kb.backend(), kb)' },
})

---------------------------------------------------------------------------
-- kluabench.record.liger
---------------------------------------------------------------------------

section('liger', {
  { name = 'liger.read', signature = 'liger.read(path) -> rows | nil, message',
    summary = 'Reads and parses a Liger CSV file; each row is keyed by column name, with its line.',
    example = 'local rows = assert(liger.read("all_benchmark_data.csv"))' },
  { name = 'liger.parse', signature = 'liger.parse(text) -> rows | nil, message',
    summary = 'Parses Liger CSV text; a row with the wrong number of fields has `error` instead of columns.',
    example = 'local rows = assert(liger.parse(text))' },
  { name = 'liger.parse_config', signature = 'liger.parse_config(s) -> table | nil, message',
    summary = 'The JSON object of extra_benchmark_config_str (parsed as data, never run).',
    example = 'local c = liger.parse_config(\'{"seq_len": 2048}\')' },
  { name = 'liger.row_to_bundle', signature = 'liger.row_to_bundle(row) -> bundle | nil, message',
    summary = 'The sealed bundle of one row: speed rows as latency records, memory rows in their unit.',
    example = 'for _, row in ipairs(rows) do local b = liger.row_to_bundle(row) end' },
  { name = 'liger.bundle_to_row', signature = 'liger.bundle_to_row(bundle [, opts]) -> row | nil, message',
    summary = 'A CSV row of a bundle; the x axis from the workload\'s annotation, opts.x, hidden or seq.',
    example = 'local row = liger.bundle_to_row(bundle, {x = "seq"})' },
  { name = 'liger.to_csv', signature = 'liger.to_csv(rows) -> text', summary = 'CSV text, header and one line per row.',
    example = 'io.write(liger.to_csv({liger.bundle_to_row(bundle)}))' },
})

---------------------------------------------------------------------------
-- kluabench.record.names
---------------------------------------------------------------------------

section('names', {
  { name = 'names.param_name', signature = 'names.param_name(name) -> name',
    summary = 'Our name of a parameter: hidden_size and H -> hidden, seq_len and T -> seq, num_q_heads -> q_heads.',
    example = 'print(names.param_name("seq_len")) --> seq' },
  { name = 'names.dtype_name', signature = 'names.dtype_name(dtype) -> name',
    summary = 'Our name of a dtype: torch.bfloat16 -> bf16.', example = 'print(names.dtype_name("torch.float16")) --> f16' },
  { name = 'names.slug', signature = 'names.slug(s) -> text',
    summary = 'Lowercase, every run of non-alphanumerics turned into one "-".',
    example = 'print(names.slug("NVIDIA H100 80GB HBM3")) --> nvidia-h100-80gb-hbm3' },
  { name = 'names.gpu_slug', signature = 'names.gpu_slug(name) -> text', summary = 'The GPU slug of a device name.',
    example = 'print(names.gpu_slug(kb.device_info().name))' },
  { name = 'names.format_value', signature = 'names.format_value(v) -> text',
    summary = 'A value as slugs spell it: 512, not 512.0; other numbers in shortest round-trip form.',
    example = 'print(names.format_value(512.0)) --> 512' },
  { name = 'names.workload_slug', signature = 'names.workload_slug(params [, dtype]) -> text',
    summary = 'Parameters sorted by name as name..value joined by "-", dtype last.',
    example = 'print(names.workload_slug({seq = 2048, hidden = 512}, "bf16")) --> hidden512-seq2048-bf16' },
  { name = 'names.dns_name', signature = 'names.dns_name(...) -> text',
    summary = 'The parts joined by "-", lowercase, DNS-safe, cut to 100 characters (metadata.name).',
    example = 'print(names.dns_name("kluabench", "llama4_rope", "forward"))' },
  { name = 'names.utc', signature = 'names.utc(epoch) -> table', summary = 'UTC time fields of an epoch time in seconds (fractions as milliseconds).',
    example = 'local t = names.utc(os.time())' },
  { name = 'names.parse_time', signature = 'names.parse_time(s) -> table | nil, message',
    summary = 'Parses "YYYY-MM-DD HH:MM:SS[.fff]" (Liger\'s timestamp, as UTC) or ISO-8601 with Z.',
    example = 'local t = names.parse_time("2025-08-07 21:42:05")' },
  { name = 'names.iso8601', signature = 'names.iso8601(t) -> text', summary = 'ISO-8601 UTC with milliseconds: "2025-08-07T21:42:05.000Z".',
    example = 'print(names.iso8601(names.utc(0)))' },
  { name = 'names.time_id', signature = 'names.time_id(t) -> text', summary = 'The time as it ends an externalId: "2025-08-07-21-42-05".',
    example = 'print(names.time_id(names.utc(0)))' },
  { name = 'names.liger_time', signature = 'names.liger_time(t) -> text', summary = 'The time as Liger\'s CSV writes it: "2025-08-07 21:42:05".',
    example = 'print(names.liger_time(names.utc(0)))' },
  { name = 'names.external_id', signature = 'names.external_id{kernel, mode, provider, gpu, workload, time} -> text',
    summary = 'The externalId kernel/mode/provider/gpu-slug/workload-slug/YYYY-MM-DD-HH-MM-SS.',
    example = 'print(names.external_id{kernel = "llama4_rope", mode = "forward", provider = "fused",\n'
      .. '  gpu = "NVIDIA H200", workload = "hidden512-seq2048-bf16", time = names.utc(0)})' },
})

---------------------------------------------------------------------------
-- kluabench.report.progress
---------------------------------------------------------------------------

section('suite', {
  { name = 'suite.main', signature = 'suite.main(decl [, args]) -> bundles',
    summary = 'Runs a declared benchmark with the script\'s command line and returns its bundles.',
    details = 'decl: name, summary, axes {name, default, help, max}, sweeps {name, axis, values, fixed}, '
      .. 'dtypes/dtype, providers/provider, modes/mode, and the hooks validate(point), shared(point), '
      .. 'setup(point, provider) -> inputs, run(point, provider, mode, inputs) -> fn, '
      .. 'check(point, provider, inputs, modes) -> check record, cost(point, mode) -> bytes, flops, '
      .. 'record(point, provider, mode) -> {timed, execution, annotations}. A point has one field per '
      .. 'axis, dtype, params, x (the swept axis), id and shared. Exits itself for --help and '
      .. '--list-points (0), on a usage error (2) and after SIGINT/SIGTERM (130/143); a wrong result is '
      .. 'an error. Every bundle\'s run.spec.execution carries session {index, count} and point (the id).',
    example = 'kb.suite.main {\n  name = "tensor_copy", axes = {{name = "mib", default = 64}},\n'
      .. '  dtypes = {"f32"}, modes = {"forward"}, providers = {"copy_"},\n'
      .. '  setup = function(p) local n = p.mib * 262144\n'
      .. '    return {src = kb.randn({n}, "f32", 1), dst = kb.empty({n}, "f32")} end,\n'
      .. '  run = function(p, provider, mode, t) return function(s) s = s or t; s.dst:copy_(s.src) end end,\n'
      .. '  cost = function(p) return 2 * p.mib * 2^20, 0 end,\n}' },
  { name = 'suite.usage', signature = 'suite.usage(decl) -> string',
    summary = 'The --help text that suite.main prints for a declaration.',
    example = 'print(suite.usage(require("kluabench.benchmarks.rope").declaration("rope")))' },
  { name = 'suite.points', signature = 'suite.points(decl, opts) -> list of points',
    summary = 'The points of a declaration for parsed options (opts.axes: lists by axis name; opts.sweep; opts.dtype).',
    details = 'With a sweep: its axis over its values (or the option\'s), the other axes at the sweep\'s '
      .. 'fixed values or their defaults; without: the product of every axis\'s values, the first axis '
      .. 'varying slowest. A workload that two sweeps share is measured in each; its ids are slug@axis.',
    example = 'local d = require("kluabench.benchmarks.rope").declaration("llama4_rope")\n'
      .. 'for _, p in ipairs(suite.points(d, {axes = {seq = {1024, 4096}}, dtype = "bf16"})) do print(p.id) end' },
  { name = 'rope_benchmarks.declaration', signature = 'rope_benchmarks.declaration(variant [, opts]) -> decl',
    summary = 'Liger-Kernel\'s RoPE benchmarks as harness declarations: "llama4_rope" (kb.rope.llama4_*) or '
      .. '"rope" (kb.rope.neox_*); opts.summary replaces the --help summary.',
    details = 'scripts/llama4_rope.lua and scripts/rope.lua run them. The module is '
      .. 'kluabench.benchmarks.rope.',
    example = 'local decl = require("kluabench.benchmarks.rope").declaration("rope")\nprint(decl.name, #decl.axes)' },
})

section('progress', {
  { name = 'progress.new', signature = 'progress.new{total [, quiet, stream, tty, clock, width, label]} -> Progress',
    summary = 'A progress display for a sweep of total points.',
    details = 'quiet defaults to KLUABENCH_QUIET (set by --quiet); stream to io.stderr; tty to '
      .. 'progress.is_tty(stream); clock (seconds) to kb.clock_ns; width to $COLUMNS or 80; label '
      .. 'prefixes every line. On a terminal one status line is redrawn in place; elsewhere each '
      .. 'finished point is one line: "[3/16] seq=4096: 0.137 ms (0.8s; elapsed 2.4s, left ~10.4s)".',
    example = 'local p = progress.new{total = #points}\nfor _, pt in ipairs(points) do\n'
      .. '  p:start(pt.label)\n  local ms = time_point(pt)\n  p:finish(pt.label, string.format("%.3f ms", ms))\nend\np:close()' },
  { name = 'p:start', signature = 'p:start(label)', summary = 'A point starts (on a terminal the status line shows it).',
    example = 'p:start("hidden=512 fused")' },
  { name = 'p:finish', signature = 'p:finish([label [, summary]])',
    summary = 'A point finished; summary is a short result such as "0.137 ms".',
    example = 'p:finish(nil, "0.137 ms")' },
  { name = 'p:tick', signature = 'p:tick()',
    summary = 'Redraws the status line (at most every 0.25 s) so elapsed time moves during a long point.',
    example = 'for i = 1, n do sample(); p:tick() end' },
  { name = 'p:log', signature = 'p:log(text)',
    summary = 'Writes a message on a line of its own; on a terminal the status line is redrawn after it.',
    example = 'p:log("warning: clocks were not locked")' },
  { name = 'p:close', signature = 'p:close()',
    summary = 'Ends the display with "done: N/TOTAL points in T"; safe twice, also `<close>`.',
    example = 'local p <close> = progress.new{total = 3}' },
  { name = 'p:elapsed', signature = 'p:elapsed() -> seconds', summary = 'Seconds since the display was made.',
    example = 'print(p:elapsed())' },
  { name = 'p:remaining', signature = 'p:remaining() -> seconds | nil',
    summary = 'Estimated seconds left: the wall time per finished point so far (between points included) times the points left.',
    example = 'print(p:remaining())' },
  { name = 'progress.is_tty', signature = 'progress.is_tty([stream]) -> boolean',
    summary = 'Whether the stream (default io.stderr) is a terminal.',
    example = 'print(progress.is_tty(io.stderr))' },
  { name = 'progress.quiet_from_env', signature = 'progress.quiet_from_env() -> boolean',
    summary = 'True when KLUABENCH_QUIET is set to anything but "" or "0".',
    example = 'if progress.quiet_from_env() then print("quiet") end' },
  { name = 'progress.default_clock', signature = 'progress.default_clock() -> function',
    summary = 'A function returning seconds: kb.clock_ns / 1e9, or os.time outside kluabench.',
    example = 'local now = progress.default_clock()\nprint(now())' },
  { name = 'progress.format_duration', signature = 'progress.format_duration(seconds) -> text',
    summary = 'A duration for people: "0.4s", "2m05s", "1h02m".', example = 'print(progress.format_duration(125)) --> 2m05s' },
})

---------------------------------------------------------------------------
-- kluabench.report.plot
---------------------------------------------------------------------------

section('plot', {
  { name = 'plot.read', signature = 'plot.read(path [, run]) -> points | nil, message',
    summary = 'The points of a results file: record bundles (JSON, JSON Lines) or Liger CSV, told apart by content.',
    details = 'A point is {kernel, mode, provider, metric, unit, gpu, dtype, run, params = {hidden = 512, ...}, '
      .. 'y50, y20, y80, bytes, flops, gbps, tflops}; run is the given name, else the file\'s name '
      .. 'without its directory, so that several files overlay (--by provider,run).',
    example = 'local points = assert(plot.read("results.jsonl"))' },
  { name = 'plot.run_names', signature = 'plot.run_names(paths) -> {names}',
    summary = 'The run names of several files: each file\'s name, or its path where two files share a name.',
    example = 'print(table.concat(plot.run_names({"a/x.jsonl", "b/x.jsonl", "y.csv"}), " "))' },
  { name = 'plot.xml_text', signature = 'plot.xml_text(s) -> text',
    summary = 'Text XML 1.0 can carry: invalid UTF-8, control characters (but tab, newline, return) and U+FFFE/U+FFFF become U+FFFD.',
    example = 'print(plot.xml_text("a\\1b") == "a\\u{FFFD}b") --> true' },
  { name = 'plot.chart', signature = 'plot.chart(points [, opts]) -> svg, info | nil, message, kind',
    summary = 'The SVG chart of points: lines over opts.x, one per opts.by, or bars for a single x.',
    details = 'opts: x (a field; default the one parameter that varies), by (field or list; default '
      .. '"provider"; an unknown field is a usage error), y ("ms", "us", "ns", "s", or the throughput '
      .. '"gbps" / "tflops": the record\'s own at the median, else the workload\'s bytes / flops over '
      .. 'the median, bars at the p80 and p20 times), logx, logy, bar, title, width, height. Names that '
      .. 'differ (mode, kernel) split lines, and runs (files) where two would share a line and an x; '
      .. 'lines of several runs share a colour per group and differ by dash pattern. For other shape '
      .. 'parameters that vary the slice where x varies most is kept; info.notes says what was done, '
      .. 'info.data holds the series drawn. kind is "usage" when an option must change.',
    example = 'local svg = assert(plot.chart(points, {x = "seq", by = "provider", logx = true}))\n'
      .. 'local f = assert(io.open("chart.svg", "w")); f:write(svg); f:close()' },
  { name = 'plot.line_chart', signature = 'plot.line_chart(spec) -> svg | nil, message',
    summary = 'A line chart from series of {x, y, lo, hi} points, with error bars and a legend.',
    details = 'spec: series = {{name, points}}, title, subtitle, xlabel, ylabel, logx, logy, width, '
      .. 'height, categories (names of x = 1..n).',
    example = 'local svg = plot.line_chart{title = "demo", xlabel = "n", ylabel = "ms",\n'
      .. '  series = {{name = "a", points = {{x = 1, y = 2, lo = 1.8, hi = 2.3}, {x = 2, y = 3}}}}}' },
  { name = 'plot.bar_chart', signature = 'plot.bar_chart(spec) -> svg | nil, message',
    summary = 'A bar chart: a group of bars per category, one per series, with error bars and values.',
    example = 'local svg = plot.bar_chart{categories = {"seq 2048"}, ylabel = "ms",\n'
      .. '  series = {{name = "fused", points = {{x = 1, y = 0.1}}}, {name = "reference", points = {{x = 1, y = 0.3}}}}}' },
  { name = 'plot.point_from_bundle', signature = 'plot.point_from_bundle(bundle) -> point | nil, message',
    summary = 'The point of one record bundle.', example = 'local p = plot.point_from_bundle(bundle)' },
  { name = 'plot.point_from_liger_row', signature = 'plot.point_from_liger_row(row) -> point | nil, message',
    summary = 'The point of one row of liger.parse.', example = 'local p = plot.point_from_liger_row(rows[1])' },
  { name = 'plot.filter', signature = 'plot.filter(points, filters) -> points',
    summary = 'The points that match every filter {key, values}.',
    example = 'local fwd = plot.filter(points, {plot.parse_filter("mode=forward")})' },
  { name = 'plot.parse_filter', signature = 'plot.parse_filter("KEY=V1,V2") -> filter | nil, message',
    summary = 'A filter from its command-line form.', example = 'local f = plot.parse_filter("seq=2048,4096")' },
  { name = 'plot.field', signature = 'plot.field(point, name) -> value',
    summary = 'A field of a point: kernel, mode, provider, metric, unit, gpu, dtype or a parameter.',
    example = 'print(plot.field(points[1], "seq_len"))' },
  { name = 'plot.field_name', signature = 'plot.field_name(name) -> name',
    summary = 'Our name of a field: operation -> mode, seq_len or T -> seq.', example = 'print(plot.field_name("T")) --> seq' },
  { name = 'plot.fields', signature = 'plot.fields(points) -> {names}', summary = 'Every field some point has, sorted.',
    example = 'print(table.concat(plot.fields(points), ", "))' },
  { name = 'plot.distinct', signature = 'plot.distinct(points, name) -> {values}',
    summary = 'The distinct values of a field, in order of first appearance.', example = 'local seqs = plot.distinct(points, "seq")' },
  { name = 'plot.varying', signature = 'plot.varying(points) -> {names}',
    summary = 'The fields whose value differs between points (or that some lack).', example = 'print(table.concat(plot.varying(points), ", "))' },
  { name = 'plot.common', signature = 'plot.common(points, name) -> value | nil',
    summary = 'The value of a field when every point has the same one.', example = 'print(plot.common(points, "gpu"))' },
  { name = 'plot.slice', signature = 'plot.slice(points, x [, by]) -> points, notes',
    summary = 'Keeps, for each other numeric parameter that varies, the value under which x varies most.',
    example = 'local pts, notes = plot.slice(points, "seq")' },
  { name = 'plot.group', signature = 'plot.group(points, {x, by}) -> groups',
    summary = 'Series of points by the by fields (and the other names that differ), sorted by x.',
    example = 'local g = plot.group(points, {x = "seq", by = "provider"})\nfor _, s in ipairs(g.series) do print(s.name, #s.points) end' },
  { name = 'plot.guess_x', signature = 'plot.guess_x(points) -> field | nil, message',
    summary = 'The one shape parameter that varies, for when no x is given.', example = 'print(plot.guess_x(points))' },
  { name = 'plot.nice_ticks', signature = 'plot.nice_ticks(lo, hi [, n]) -> ticks, lo, hi, step',
    summary = 'About n tick values with a step of 1, 2 or 5 times a power of ten, covering [lo, hi].',
    example = 'local ticks = plot.nice_ticks(0, 0.93) --> 0, 0.2, 0.4, 0.6, 0.8, 1' },
  { name = 'plot.log_ticks', signature = 'plot.log_ticks(lo, hi) -> ticks',
    summary = 'Ticks of a log axis: powers of ten, with 2 and 5 when the range is short.',
    example = 'local ticks = plot.log_ticks(0.03, 2) --> 0.05, 0.1, 0.2, 0.5, 1, 2' },
  { name = 'plot.format_tick', signature = 'plot.format_tick(v) -> text', summary = 'A tick label: "0.25", "2048", "16k", "1.5M".',
    example = 'print(plot.format_tick(16384)) --> 16384' },
})

---------------------------------------------------------------------------
-- kluabench.cli.help
---------------------------------------------------------------------------

section('help', {
  { name = 'help', kind = 'function', path = { 'kluabench.cli.help', 'help' }, signature = 'help([x])',
    summary = 'Prints the documentation of x: a function, a name ("llama4_fwd", "t:to", "verify"), a module or a tensor.',
    details = 'With no argument, an overview of every section. An unknown name lists the entries whose '
      .. 'names contain it. In the REPL `?name` is help("name"). Prints to stdout and returns nothing.',
    example = 'help(kb.rope.llama4_fwd)\nhelp("t:to")\nhelp(kb.jcs)' },
  { name = 'help.install', signature = 'help.install() -> help',
    summary = 'Sets the global `help` (the REPL does this itself).', example = 'require("kluabench.cli.help").install()' },
  { name = 'help.help', signature = 'help.help([x])', summary = 'The function the global `help` is.',
    example = 'require("kluabench.cli.help").help("kb.randn")' },
  { name = 'help.text', signature = 'help.text([x]) -> text', summary = 'What help(x) prints, as a string.',
    example = 'local s = require("kluabench.cli.help").text("verify")' },
  { name = 'help.find', signature = 'help.find(name) -> entries',
    summary = 'The entries a name stands for: the exact name, else those whose last component is the name.',
    example = 'for _, e in ipairs(require("kluabench.cli.help").find("free")) do print(e.name) end' },
  { name = 'help.find_value', signature = 'help.find_value(x) -> entries', summary = 'The entries documenting a value, found by identity.',
    example = 'print(require("kluabench.cli.help").find_value(kb.randn)[1].name) --> kb.randn' },
  { name = 'help.group', signature = 'help.group(name) -> entries, title',
    summary = 'The entries of a section ("timing"), a module prefix ("kb.rope", "stats") or an object ("Tensor").',
    example = 'local list = require("kluabench.cli.help").group("kb.jcs")' },
  { name = 'help.search', signature = 'help.search(s) -> entries',
    summary = 'Entries whose name, else summary, contains s; else whose short name holds its letters in order.',
    example = 'local near = require("kluabench.cli.help").search("rnd") --> kb.randn' },
  { name = 'help.format', signature = 'help.format(entry) -> text', summary = 'The text of one entry.',
    example = 'print(require("kluabench.cli.help").format(require("kluabench.cli.apidoc").entries[1]))' },
  { name = 'help.overview', signature = 'help.overview() -> text', summary = 'What help() prints: every section with its names.',
    example = 'io.write(require("kluabench.cli.help").overview())' },
  { name = 'help.resolve', signature = 'help.resolve(entry) -> value | nil',
    summary = 'The value an entry documents (nil for properties and commands).',
    example = 'local h = require("kluabench.cli.help")\nassert(h.resolve(h.find("kb.randn")[1]) == kb.randn)' },
  { name = 'help.exists', signature = 'help.exists(entry) -> boolean',
    summary = 'Whether what an entry documents exists in this build.',
    example = 'local h = require("kluabench.cli.help")\nfor _, e in ipairs(require("kluabench.cli.apidoc").entries) do assert(h.exists(e), e.name) end' },
  { name = 'help.methods', signature = 'help.methods(prefix) -> table | nil',
    summary = 'The methods of an object prefix of the documentation ("t", "ev", "session", ...).',
    example = 'for name in pairs(require("kluabench.cli.help").methods("t")) do print(name) end' },
  { name = 'help.command_module', signature = 'help.command_module(entry) -> module name',
    summary = 'The module that holds a command: "kluabench plot" -> kluabench.cli.commands.plot.',
    example = 'print(require("kluabench.cli.help").command_module({name = "kluabench import-liger"}))' },
})

section('process', {
  { name = 'kb.process.spawn', signature = 'kb.process.spawn(argv [, opts]) -> pid | nil, message, code',
    summary = 'Starts a program (argv[1], searched on PATH) with arguments argv[2..]; does not wait.',
    details = 'opts: env ({NAME = value} to set, {NAME = false} to remove, the rest inherited), stdin, '
      .. 'stdout, stderr (file paths; stdout and stderr are truncated unless append = true), cwd, '
      .. 'group (default true: the child gets its own process group, so a Ctrl-C on the terminal '
      .. 'reaches only kluabench, which passes it on). A child gets SIGTERM when kluabench dies. '
      .. 'A program that cannot be started or a file that cannot be opened gives nil, '
      .. '"exec prog: No such file or directory", "ENOENT".',
    example = 'local pid = assert(kb.process.spawn({"sh", "-c", "echo $X"}, {env = {X = "1"}, stdout = "/dev/null"}))\n'
      .. 'print(kb.process.wait(pid)) --> pid  exit  0' },
  { name = 'kb.process.wait', signature = 'kb.process.wait([pid [, block]]) -> pid, "exit", code | pid, "signal", name | nil',
    summary = 'Waits for child pid (nil: any child); with block = false returns nil at once when none has ended.',
    details = 'A child killed by a signal gives pid, "signal", "SIGTERM". Errors: nil, message, "ECHILD" '
      .. '(no such child) or "EINTR" (a signal arrived while blocking: call again).',
    example = 'local pid = kb.process.spawn({"true"})\nlocal got\nrepeat got = kb.process.wait(nil, false) '
      .. 'until got or not kb.process.sleep(10)\nprint(got == pid)' },
  { name = 'kb.process.kill', signature = 'kb.process.kill(pid, signal) -> true | nil, message, code',
    summary = 'Sends a signal by name ("SIGINT", "TERM", "SIGKILL", ...; no numbers) to process pid (> 0 only).',
    example = 'local pid = kb.process.spawn({"sleep", "10"})\nkb.process.kill(pid, "SIGTERM")\nprint(kb.process.wait(pid)) --> pid  signal  SIGTERM' },
  { name = 'kb.process.sleep', signature = 'kb.process.sleep(ms) -> true | false',
    summary = 'Sleeps ms milliseconds (0 to 86400000); false when a signal cut the sleep short.',
    example = 'kb.process.sleep(10)' },
  { name = 'kb.process.getpid', signature = 'kb.process.getpid() -> integer',
    summary = 'The id of this process.',
    example = 'print(kb.process.getpid())' },
})

---------------------------------------------------------------------------
-- Commands: summaries, usage and help texts come from kluabench.cli and the
-- command modules (what `kluabench COMMAND --help` prints); the examples
-- are here.
---------------------------------------------------------------------------

local COMMAND_EXAMPLES = {
  run = 'kluabench run scripts/llama4_rope.lua --mode forward --sweep seq',
  verify = 'kluabench verify results.jsonl',
  compare = 'kluabench compare base.jsonl new.jsonl',
  ['import-liger'] = 'kluabench import-liger all_benchmark_data.csv --jsonl liger.jsonl',
  plot = 'kluabench plot results.jsonl --x seq --by provider --logx -o chart.svg',
  env = 'kluabench env --format markdown',
  list = 'kluabench list',
  help = 'kluabench help plot',
  ['run-all'] = 'kluabench run-all --devices all --dir results/sweep scripts/llama4_rope.lua --sweep all',
  slurm = 'kluabench slurm --gpus 16 --partition gpu --time 01:00:00 --dir /shared/sweep --submit '
    .. 'scripts/llama4_rope.lua --sweep all',
  merge = 'kluabench merge /shared/sweep -o all.jsonl',
}

local function command_entries()
  local ok, cli = pcall(require, 'kluabench.cli')
  if not ok or type(cli) ~= 'table' or type(cli.COMMANDS) ~= 'table' then return {} end
  local list = {}
  for _, c in ipairs(cli.COMMANDS) do
    local text = c.help or ''
    if cli.command_help then
      local hok, full = pcall(cli.command_help, c)
      if hok and type(full) == 'string' then text = full:gsub('^usage:[^\n]*\n\n', '') end
    end
    local usage = cli.command_usage and cli.command_usage(c) or c.usage
    list[#list + 1] = {
      name = 'kluabench ' .. c.name, kind = 'command', signature = usage, summary = c.summary,
      details = text:gsub('\n+$', ''), preformatted = true, example = COMMAND_EXAMPLES[c.name],
    }
  end
  return list
end

---------------------------------------------------------------------------
-- The Lua modules: their entries are the `---` comments beside their
-- functions (kluabench.cli.doccomments), one copy, next to the code.
---------------------------------------------------------------------------

-- kb.output gathers the functions of four files.
local SOURCES = { output = { 'kluabench.report.json', 'kluabench.report.files', 'kluabench.report.csv',
  'kluabench.report.table' } }
do
  local modules = {}
  for prefix, modname in pairs(M.modules) do
    if prefix ~= 'kb' then modules[prefix] = SOURCES[prefix] or modname end
  end
  for _, e in ipairs(require('kluabench.cli.doccomments').collect(modules, M.sections)) do
    M.entries[#M.entries + 1] = e
  end
end

section('commands', command_entries())

return M
