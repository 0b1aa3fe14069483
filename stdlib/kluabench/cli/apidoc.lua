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
  check = 'kluabench.check',
  triton = 'kluabench.triton',
  reader = 'kluabench.record.reader',
  point = 'kluabench.record.point',
  evidence = 'kluabench.record.evidence',
  schema = 'kluabench.record.schema',
  writer = 'kluabench.record.writer',
  migrate = 'kluabench.record.migrate',
  operation = 'kluabench.record.operation',
  implementation = 'kluabench.record.implementation',
  measurements = 'kluabench.record.measurements',
  show = 'kluabench.repl.show',
  history = 'kluabench.history',
  history_db = 'kluabench.history.db',
  history_schema = 'kluabench.history.schema',
  history_store = 'kluabench.history.store',
  history_detect = 'kluabench.history.detect',
  history_point = 'kluabench.history.point',
  html = 'kluabench.report.html',
  suggest = 'kluabench.cli.suggest',
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
  sqlite = { metatable = 'kluabench.SQLite', title = 'SQLite database (kb.sqlite)' },
  stmt = { metatable = 'kluabench.SQLiteStatement', title = 'SQLite statement' },
  conn = { metatable = 'kluabench.PQ', title = 'PostgreSQL connection (kb.pq)' },
  h = { title = 'History database handle (kluabench.history.db)',
    make = function() return require('kluabench.history.db').open(':memory:', { create = true }) end },
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
  { id = 'tensor_math', title = 'Tensor arithmetic',
    intro = 'Element-wise operations, reductions and matrix products on both backends, for references '
      .. 'and inputs made without C (kernels/tensor_math.h: CUDA kernels, cuBLAS for matmul, CPU twins). '
      .. 'Shapes broadcast as NumPy\'s do: aligned from the last dimension, each pair of sizes equal or '
      .. 'one of them 1 (a missing dimension counts as 1); anything else is refused with both shapes. '
      .. 'Both operands have one dtype and one device. bf16, f16 and f32 are computed in f32, f64 in f64, '
      .. 'and each result is rounded once to the dtype (nearest even); CUDA and CPU agree bit for bit '
      .. 'for every element-wise operation but exp (within 2 ulp of f32). sum and mean accumulate in f64, '
      .. 'max is exact (NaN when any element is; +0 beats -0). dim counts as `t.shape` does: 1 is the '
      .. 'first dimension, -1 the last. The operators `a + b`, `a - b`, `a * b` (element-wise), `a / b` '
      .. 'and `-a` are these methods, with a number on either side. docs/TENSORS.md has the details.' },
  { id = 'tensor_files', title = 'Tensor files: .npy and safetensors',
    intro = 'Tensors saved for, and loaded from, NumPy and PyTorch (safetensors). Only regular files are '
      .. 'read (a FIFO, a device or a directory is refused without waiting), every size in a header is '
      .. 'checked against the file\'s before anything is read, and a file is written through a fsynced '
      .. 'temporary file renamed over it. Failures of the file or its content return nil and '
      .. '"path: what is wrong"; wrong argument types raise.' },
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
  { id = 'show', title = 'The REPL\'s view of results (kluabench.repl.show)',
    intro = 'What the REPL prints for a result, as functions a script can call too: a table as a '
      .. 'bounded, nested view with sorted keys, a timing result as torch.utils.benchmark\'s Measurement.' },
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
      .. '{run, protocol, environment, workload, implementation, operation} of kernelindex.dev/v1alpha1 '
      .. 'documents, each valid against the public schema of its kind (kluabench.record.schema); a digest is '
      .. '"sha256:" .. hex(SHA-256(JCS({apiVersion, kind, spec}))). The raw samples are the run\'s evidence '
      .. '(kluabench.record.evidence), in a samples file beside the records; kluabench.record.point is the '
      .. 'view of a bundle every table and command reads; kluabench.record.operation, .implementation, '
      .. '.measurements, .writer and .migrate are the parts. docs/RECORDS.md describes every field.' },
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
  { id = 'database', title = 'Databases: SQLite and PostgreSQL (kb.sqlite, kb.pq)',
    intro = 'What the history database is made of. SQLite is linked into the binary (public domain); '
      .. 'PostgreSQL\'s client library libpq is opened with dlopen on first use ($KLUABENCH_LIBPQ names it), '
      .. 'so the binary runs where PostgreSQL is not installed. Every message starts with the database\'s '
      .. 'name; expected failures return nil, message, code; misuse raises.' },
  { id = 'history', title = 'kluabench.history: results over commits',
    intro = '`local history = require "kluabench.history"`. The history database (SQLite file or '
      .. 'PostgreSQL), what `kluabench history` and `kluabench report` ask of it, and `history.add_bundles`, '
      .. 'which the harness calls to write a sweep into it. docs/HISTORY.md describes the schema and the method.' },
  { id = 'history_db', title = 'kluabench.history.db: one interface to both databases',
    intro = '`local history_db = require "kluabench.history.db"`. SQL with `?` placeholders in the types both share; '
      .. 'transactions; errors that name the database.' },
  { id = 'history_schema', title = 'kluabench.history.schema: versions and migrations',
    intro = '`local history_schema = require "kluabench.history.schema"`. Ordered migration steps and the '
      .. 'schema_version table; a newer schema is refused by name.' },
  { id = 'history_store', title = 'kluabench.history.store: writing and reading runs',
    intro = '`local history_store = require "kluabench.history.store"`. The SQL of the history: bundles in, series, '
      .. 'commits, runs, marks and rebuilt bundles out.' },
  { id = 'history_detect', title = 'kluabench.history.detect: steps along commits',
    intro = '`local history_detect = require "kluabench.history.detect"`. The regression test of `history check`: '
      .. 'a lookback z-score over the last commits as candidate steps, with a sentinel for machine drift.' },
  { id = 'history_point', title = 'kluabench.history.point: what the history reads of a bundle',
    intro = '`local history_point = require "kluabench.history.point"`. The one adapter between record bundles and '
      .. 'the history (kluabench.record.reader underneath).' },
  { id = 'html', title = 'kluabench.report.html: the HTML report',
    intro = '`local html = require "kluabench.report.html"`. One self-contained page: tables, inline SVG '
      .. 'charts (kluabench.report.plot), trends with their steps marked.' },
  { id = 'suggest', title = 'kluabench.cli.suggest: did you mean',
    intro = '`local suggest = require "kluabench.cli.suggest"`. The valid word a mistyped one most likely '
      .. 'meant: unknown options of every command and benchmark script say it.' },
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

local function math_method(name, op, sign)
  return { name = 't:' .. name, signature = 't:' .. name .. '(b) -> Tensor',
    summary = 'Element-wise t ' .. sign .. ' b, b a tensor (broadcast) or a number; also `t ' .. sign .. ' b`.',
    details = 'The result has the broadcast shape of t and b. A number is rounded to the compute type '
      .. '(f32 for bf16, f16 and f32; f64 for f64) and may stand on either side of the operator '
      .. '(`2 ' .. sign .. ' t`).',
    example = 'local a = kb.from_table({1, 2, 3, 4, 5, 6}, {2, 3})\nlocal b = kb.from_table({10, 20, 30})\n'
      .. 'print(a:' .. name .. '(b)) --> shape [2, 3]\nprint(a ' .. sign .. ' 2, 2 ' .. sign .. ' a)' }
end

local function inplace_method(name, sign)
  return { name = 't:' .. name .. '_', signature = 't:' .. name .. '_(b) -> t',
    summary = 'In place: t := t ' .. sign .. ' b, b a tensor that broadcasts to t\'s shape, or a number.',
    example = 'local y = kb.randn({4, 3})\ny:' .. name .. '_(kb.randn({3}, "f32", 1)):' .. name .. '_(2)' }
end

local function unary_method(name, what, inplace)
  local sig = 't:' .. name .. (inplace and '_' or '')
  return { name = sig, signature = sig .. '() -> ' .. (inplace and 't' or 'Tensor'),
    summary = (inplace and 'In place: ' or '') .. what .. (name == 'neg' and not inplace and '; also `-t`' or '') .. '.',
    details = name == 'exp' and 'CUDA\'s expf and the C library\'s differ by up to 2 ulp of f32 '
      .. '(the only element-wise operation whose twins are not bit for bit equal).'
      or (name == 'rsqrt' and 'Computed as 1 / sqrt(x), both correctly rounded (not the approximate rsqrtf).' or nil),
    example = 'local t = kb.from_table({1, 4, 9})\nprint(t:' .. name .. (inplace and '_' or '') .. '())' }
end

local function reduce_method(name, what)
  return { name = 't:' .. name, signature = 't:' .. name .. '([dim [, keepdim]]) -> Tensor',
    summary = what .. ' over dimension dim, or over every element when dim is nil.',
    details = 'dim is 1-based like `t.shape` (-1 is the last dimension). The result drops that dimension, '
      .. 'or keeps it with size 1 when keepdim is true; over every element it has shape [] '
      .. '(`:item()` reads it). '
      .. (name == 'max' and 'Returns the values only. NaN when any element is NaN; +0 beats -0; an empty '
        .. 'dimension is an error.'
        or 'Accumulates in f64 for every dtype and rounds once.'
          .. (name == 'mean' and ' The mean of no element is NaN.' or '')),
    example = 'local x = kb.from_table({1, 2, 3, 4, 5, 6}, {2, 3})\n'
      .. 'print(x:' .. name .. '(), x:' .. name .. '(1), x:' .. name .. '(-1, true))' }
end

section('tensor_math', {
  math_method('add', 'add', '+'), math_method('sub', 'sub', '-'), math_method('mul', 'mul', '*'),
  math_method('div', 'div', '/'),
  inplace_method('add', '+'), inplace_method('sub', '-'), inplace_method('mul', '*'), inplace_method('div', '/'),
  unary_method('neg', 'Negation, -x'), unary_method('exp', 'e^x'), unary_method('sqrt', 'The square root'),
  unary_method('rsqrt', '1 / sqrt(x)'),
  unary_method('neg', 'Negation', true), unary_method('exp', 'e^x', true),
  unary_method('sqrt', 'The square root', true), unary_method('rsqrt', '1 / sqrt(x)', true),
  reduce_method('sum', 'The sum'), reduce_method('mean', 'The mean'), reduce_method('max', 'The largest value'),
  { name = 't:matmul', signature = 't:matmul(b) -> Tensor',
    summary = 'The matrix product [.., m, k] x [.., k, n] -> [.., m, n]: 2-D, or batched over the leading dimensions.',
    details = 'The leading dimensions of t and b are equal, or one operand is 2-D and is used for every '
      .. 'matrix of the other. On cuda it is cublasGemmStridedBatchedEx (libcublas opened at run time; '
      .. '$KLUABENCH_CUBLAS names it when it is not found): f32 accumulation for bf16, f16 and f32 without '
      .. 'TF32, f64 for f64. On cpu the reference accumulates in f64 and rounds once. A vector is a '
      .. '[1, n] or [n, 1] matrix (`t:reshape`).',
    example = 'local a = kb.from_table({1, 2, 3, 4, 5, 6}, {2, 3})\n'
      .. 'print(a:matmul(a:reshape({3, 2}))) --> [[22, 28], [49, 64]]\n'
      .. 'print(kb.randn({8, 2, 3}):matmul(kb.randn({3, 4})).shape[1]) --> 8' },
  { name = 't:cast', signature = 't:cast(dtype) -> Tensor',
    summary = 'A new tensor of another dtype on the same device, rounded to nearest even: t:to(dtype) that takes only a dtype.',
    example = 'local h = kb.randn({4}, "f32", 1):cast("bf16")\nprint(h.dtype)' },
  { name = 't:reshape', signature = 't:reshape(shape) -> Tensor',
    summary = 'A copy with another shape of as many elements (one dimension may be -1, inferred).',
    details = 'Tensors are contiguous and never share storage: this is a copy, not a view.',
    example = 'local v = kb.randn({6})\nprint(v:reshape({2, -1}).shape[2]) --> 3' },
  { name = 't:item', signature = 't:item() -> number',
    summary = 'The value of a tensor of one element (a reduction over everything, say).',
    example = 'print(kb.from_table({1, 2, 3}):sum():item()) --> 6.0' },
})

section('tensor_files', {
  { name = 'kb.save_npy', signature = 'kb.save_npy(path, t) -> true | nil, message',
    summary = 'Writes t as a NumPy .npy file (format 1.0, C order, little-endian <f2, <f4 or <f8).',
    details = 'NumPy has no bfloat16 (ml_dtypes stores its bfloat16 as raw 2-byte void data, "<V2", '
      .. 'which cannot be told from other data), so a bf16 tensor is refused: save t:cast("f32"), or '
      .. 'a safetensors file (BF16). `numpy.load(path)` reads the file.',
    example = 'local path = os.tmpname()\nassert(kb.save_npy(path, kb.randn({2, 3}, "f32", 1)))\n'
      .. 'print(kb.load_npy(path).shape[2]) --> 3\nos.remove(path)' },
  { name = 'kb.load_npy', signature = 'kb.load_npy(path [, device]) -> Tensor | nil, message',
    summary = 'Reads a .npy file (formats 1.0 to 3.0; f2, f4, f8 of either byte order; C order) into a tensor on device.',
    details = 'Refused, with a message naming the file: another dtype (integers, "<V2"), Fortran order, '
      .. 'more than 8 dimensions, a header over 1 MiB, data shorter or longer than the header\'s shape, '
      .. 'anything that is not a regular file. `numpy.save(path, x)` writes what it reads.',
    example = 'local path = os.tmpname()\nassert(kb.save_npy(path, kb.zeros({4}, "f64")))\n'
      .. 'local t = assert(kb.load_npy(path, "cpu"))\nprint(t)\nos.remove(path)' },
  { name = 'kb.save_safetensors', signature = 'kb.save_safetensors(path, tensors [, metadata]) -> true | nil, message',
    summary = 'Writes named tensors ({name = Tensor}) as a safetensors file, with optional string metadata.',
    details = 'Tensors are stored in name order, dtypes BF16, F16, F32 and F64; the JSON header is padded '
      .. 'to 8 bytes. `safetensors.torch.load_file(path)` reads the file.',
    example = 'local path = os.tmpname()\n'
      .. 'assert(kb.save_safetensors(path, {q = kb.randn({2, 4}, "bf16", 1), k = kb.zeros({2})}, {who = "me"}))\n'
      .. 'local t, meta = kb.load_safetensors(path)\nprint(t.q, meta.who)\nos.remove(path)' },
  { name = 'kb.load_safetensors', signature = 'kb.load_safetensors(path [, device]) -> {name = Tensor}, metadata | nil, message',
    summary = 'Reads every tensor of a safetensors file onto device, and its __metadata__ (a table of strings).',
    details = 'Dtypes BF16, F16, F32 and F64 (another dtype is refused, naming the tensor). The header is '
      .. 'at most 100 MB, as the safetensors library allows, and the tensors\' data offsets must tile the data '
      .. 'exactly: no gap, no overlap, nothing after; a header that says otherwise is refused.',
    example = 'local path = os.tmpname()\nassert(kb.save_safetensors(path, {w = kb.randn({3, 3})}))\n'
      .. 'local t = assert(kb.load_safetensors(path))\nprint(t.w.shape[1])\nos.remove(path)' },
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
    example = 'local impl = record.user_implementation{provider = "mine", kernel = "llama4_rope", info = k:info()}' },
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
})

section('triton', {
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
  { name = 'kb.regex.test', signature = 'kb.regex.test(pattern, subject) -> boolean [, why]',
    summary = 'Whether a regular expression (ECMA-262 syntax as JSON Schema uses it, through PCRE2) matches somewhere in subject.',
    details = 'Unanchored unless the pattern anchors itself, as JSON Schema\'s `pattern` keyword. Patterns and subjects '
      .. 'are UTF-8; a subject that is not valid UTF-8 does not match, and the second result says why. A pattern that '
      .. 'does not compile is an error naming the offset and PCRE2\'s reason.',
    example = 'print(kb.regex.test("^sha256:[0-9a-f]{64}$", "sha256:" .. string.rep("0", 64))) --> true' },
  { name = 'kb.read_file', signature = 'kb.read_file(path [, max_bytes]) -> bytes | nil, message',
    summary = 'A whole regular file\'s bytes, at most max_bytes (default 512 MiB); never waits on a FIFO.',
    details = 'The one bounded reader behind output.read_file, kb.cuda.load, the NVRTC cache and plugin '
      .. 'digests. Opened non-blocking and refused unless it is a regular file ("path: is a directory", '
      .. '"path: is a FIFO, not a regular file (...)", "path: is a character device, ..."); a file larger '
      .. 'than max_bytes is refused by its size before any byte is read ("path: is larger than N bytes (it '
      .. 'has M), ..."). A path holding a NUL byte is an argument error.',
    example = 'local text, err = kb.read_file("README.md")' },
  { name = 'kb.fsync', signature = 'kb.fsync(path) -> true | nil, message',
    summary = 'Flushes a file\'s (or a directory\'s) data to the device, for "write, fsync, rename" output that survives a crash.',
    example = 'local ok, err = kb.fsync(".")' },
  { name = 'kb.stat', signature = 'kb.stat(path [, follow]) -> {type, mode, size, dev, ino} | nil, message, errno',
    summary = 'What path is: type "file", "directory", "link", "fifo", "char", "block", "socket" or "other"; mode (permission bits), size, and the device and inode numbers (equal for two names of one file).',
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
    example = 'local ok, err, errno = kb.mkdir(os.tmpname() .. ".d")' },
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
  { name = 'kb.jcs.decode', signature = 'kb.jcs.decode(json_text [, opts]) -> value',
    summary = 'Parses strict JSON (RFC 8259) into Lua values.',
    details = 'Arrays and objects come back marked (kb.jcs.is_array tells them apart); null is '
      .. 'kb.jcs.null. Integers up to +-2^53 are Lua integers, other numbers doubles. opts.int64: '
      .. 'every integer that fits a Lua integer stays one (as Lua\'s tonumber reads it); '
      .. 'opts.mark_empty: only empty arrays and objects are marked. With both, a text reads as the '
      .. 'stdlib\'s JSON reader (output.decode) reads it, which uses this parser so.',
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
})

---------------------------------------------------------------------------
-- kluabench.measure.do_bench
---------------------------------------------------------------------------

section('bench', {
})

---------------------------------------------------------------------------
-- kluabench.measure
---------------------------------------------------------------------------

section('measure', {
})

---------------------------------------------------------------------------
-- kluabench.measure.stopping
---------------------------------------------------------------------------

section('stopping', {
})

---------------------------------------------------------------------------
-- kluabench.measure.interleave
---------------------------------------------------------------------------

section('interleave', {
})

---------------------------------------------------------------------------
-- kluabench.measure.clocks
---------------------------------------------------------------------------

section('clocks', {
})

---------------------------------------------------------------------------
-- kluabench.record.ceilings
---------------------------------------------------------------------------

section('ceilings', {
})

---------------------------------------------------------------------------
-- kluabench.stats.inference
---------------------------------------------------------------------------

section('inference', {
})

---------------------------------------------------------------------------
-- kluabench.report.compare
---------------------------------------------------------------------------

section('compare', {
})

---------------------------------------------------------------------------
-- kluabench.record.reader
---------------------------------------------------------------------------

section('reader', {
})

---------------------------------------------------------------------------
-- kluabench.stats.prng
---------------------------------------------------------------------------

section('prng', {
})

---------------------------------------------------------------------------
-- kluabench.report
---------------------------------------------------------------------------

section('output', {
})

---------------------------------------------------------------------------
-- kluabench.record
---------------------------------------------------------------------------

section('record', {
})

---------------------------------------------------------------------------
-- kluabench.kernels
---------------------------------------------------------------------------

section('kernels', {
})

---------------------------------------------------------------------------
-- kluabench.record.env
---------------------------------------------------------------------------

section('env', {
})

---------------------------------------------------------------------------
-- kluabench.record.liger
---------------------------------------------------------------------------

section('liger', {
})

---------------------------------------------------------------------------
-- kluabench.record.names
---------------------------------------------------------------------------

section('names', {
})

---------------------------------------------------------------------------
-- kluabench.report.progress
---------------------------------------------------------------------------

section('suite', {
})

section('progress', {
})

---------------------------------------------------------------------------
-- kluabench.report.plot
---------------------------------------------------------------------------

section('plot', {
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

section('database', {
  { name = 'kb.sqlite.open', signature = 'kb.sqlite.open(path [, mode]) -> db | nil, message, code',
    summary = 'Opens a SQLite database file (":memory:": one in memory); mode "rw" (default: the file must exist), "rwc" (create it), "ro".',
    details = 'A file that is not a database opens but fails at its first statement with "path: file is not a '
      .. 'database", "SQLITE_NOTADB". Codes: SQLITE_CANTOPEN, SQLITE_BUSY, SQLITE_CONSTRAINT, ...',
    example = 'local db = assert(kb.sqlite.open(":memory:"))\nassert(db:exec("CREATE TABLE t (x INTEGER)"))\ndb:close()' },
  { name = 'kb.sqlite.version', signature = 'kb.sqlite.version() -> text',
    summary = 'The version of the SQLite library linked in ("3.40.1").', example = 'print(kb.sqlite.version())' },
  { name = 'sqlite:exec', signature = 'db:exec(sql) -> true | nil, message, code',
    summary = 'Runs one or more SQL statements without parameters.',
    example = 'local db = assert(kb.sqlite.open(":memory:"))\nprint(db:exec("CREATE TABLE a (x); CREATE TABLE b (y)"))' },
  { name = 'sqlite:prepare', signature = 'db:prepare(sql) -> stmt | nil, message, code',
    summary = 'Compiles one SQL statement with ? parameters into a statement to execute many times.',
    example = 'local db = assert(kb.sqlite.open(":memory:"))\nlocal st = assert(db:prepare("SELECT ? + 1"))\nprint(st:execute({41})[1][1]) --> 42' },
  { name = 'sqlite:busy_timeout', signature = 'db:busy_timeout(ms)',
    summary = 'How long a statement waits for another process\'s lock before failing with SQLITE_BUSY.',
    example = 'local db = assert(kb.sqlite.open(":memory:"))\ndb:busy_timeout(5000)' },
  { name = 'sqlite:changes', signature = 'db:changes() -> integer',
    summary = 'The rows the last INSERT, UPDATE or DELETE changed.',
    example = 'local db = assert(kb.sqlite.open(":memory:"))\ndb:exec("CREATE TABLE t (x); INSERT INTO t VALUES (1), (2)")\nprint(db:changes()) --> 2' },
  { name = 'sqlite:autocommit', signature = 'db:autocommit() -> boolean',
    summary = 'True outside a transaction.',
    example = 'local db = assert(kb.sqlite.open(":memory:"))\nprint(db:autocommit()) --> true' },
  { name = 'sqlite:path', signature = 'db:path() -> text', summary = 'The path the database was opened with.',
    example = 'print(assert(kb.sqlite.open(":memory:")):path())' },
  { name = 'sqlite:close', signature = 'db:close()',
    summary = 'Closes the database and finalizes its statements; closing twice is fine, using a closed one is an error.',
    example = 'local db = assert(kb.sqlite.open(":memory:"))\ndb:close()\ndb:close()' },
  { name = 'stmt:execute', signature = 'stmt:execute([params]) -> rows | nil, message, code',
    summary = 'Binds params (nil, booleans, numbers, strings; params.n for trailing nils), runs the statement to its end and returns its rows as lists of column values.',
    example = 'local db = assert(kb.sqlite.open(":memory:"))\ndb:exec("CREATE TABLE t (a, b)")\n'
      .. 'local ins = assert(db:prepare("INSERT INTO t VALUES (?, ?)"))\nins:execute({1, "x"})\n'
      .. 'print(assert(db:prepare("SELECT b FROM t")):execute()[1][1]) --> x' },
  { name = 'stmt:columns', signature = 'stmt:columns() -> {names}', summary = 'The names of the result columns.',
    example = 'local db = assert(kb.sqlite.open(":memory:"))\nprint(assert(db:prepare("SELECT 1 AS one")):columns()[1]) --> one' },
  { name = 'stmt:finalize', signature = 'stmt:finalize()', summary = 'Frees the statement (idempotent).',
    example = 'local db = assert(kb.sqlite.open(":memory:"))\nlocal st = assert(db:prepare("SELECT 1"))\nst:finalize()' },
  { name = 'kb.pq.available', signature = 'kb.pq.available() -> true, path | false, why',
    summary = 'Whether libpq (the PostgreSQL client library) could be opened, and from where.',
    example = 'print(kb.pq.available())' },
  { name = 'kb.pq.version', signature = 'kb.pq.version() -> integer | nil, why',
    summary = 'libpq\'s version number (150018 for 15.18).', example = 'print(kb.pq.version())' },
  { name = 'kb.pq.connect', signature = 'kb.pq.connect(conninfo [, label]) -> conn | nil, message, code',
    summary = 'Connects to a PostgreSQL server (a postgresql:// URI or key=value words); label names the database in every message (give it without a password).',
    details = 'A server that does not answer gives nil, "label: connection to server ... failed: ...", "CONNECTION"; '
      .. 'without libpq, code "NOLIBPQ".',
    example = 'local conn, err = kb.pq.connect("host=/nonexistent port=5432 dbname=bench", "bench")\nprint(conn, err)' },
  { name = 'conn:exec', signature = 'conn:exec(sql [, params]) -> rows, changes, columns | nil, message, sqlstate',
    summary = 'Runs SQL: without params one or more statements; with params ($1, $2, ...) one. Numbers, booleans and NULL come back typed.',
    example = 'local conn = kb.pq.connect("host=/nonexistent port=5432")\nif conn then print(conn:exec("SELECT $1::int + 1", {41})[1][1]) end' },
  { name = 'conn:in_transaction', signature = 'conn:in_transaction() -> boolean',
    summary = 'True between BEGIN and COMMIT (or after a failed statement inside one).',
    example = 'local conn = kb.pq.connect("host=/nonexistent port=5432")\nif conn then print(conn:in_transaction()) end' },
  { name = 'conn:label', signature = 'conn:label() -> text', summary = 'The name messages use for this database.',
    example = 'local conn = kb.pq.connect("host=/nonexistent port=5432", "team db")\nif conn then print(conn:label()) end' },
  { name = 'conn:close', signature = 'conn:close()', summary = 'Closes the connection (idempotent).',
    example = 'local conn = kb.pq.connect("host=/nonexistent port=5432")\nif conn then conn:close() end' },
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
  migrate = 'kluabench migrate bench/results/2026-12-02-s3-h200-aa/aa1-a.jsonl -o aa1-a.kernelindex.jsonl',
  submission = 'kluabench submission results/run.jsonl records/liger.jsonl -o submission.json',
  history = 'kluabench history add results/run.jsonl --db results/history.db && kluabench history check',
  report = 'kluabench report results/run.jsonl -o report.html',
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

-- kb.output gathers the functions of four files, measure those of six.
local SOURCES = {
  output = { 'kluabench.report.json', 'kluabench.report.files', 'kluabench.report.csv', 'kluabench.report.table' },
  measure = { 'kluabench.measure.device', 'kluabench.measure.rotation', 'kluabench.measure.trace',
    'kluabench.measure.session', 'kluabench.measure', 'kluabench.measure.protocol' },
}
do
  local modules = {}
  for prefix, modname in pairs(M.modules) do
    if prefix ~= 'kb' then modules[prefix] = SOURCES[prefix] or modname end
  end
  -- the record format's parts are documented with kluabench.record
  local record_parts = { point = 'record', evidence = 'record', schema = 'record', writer = 'record',
    migrate = 'record', operation = 'record', implementation = 'record', measurements = 'record' }
  for _, e in ipairs(require('kluabench.cli.doccomments').collect(modules, M.sections, record_parts)) do
    M.entries[#M.entries + 1] = e
  end
end

section('commands', command_entries())

return M
