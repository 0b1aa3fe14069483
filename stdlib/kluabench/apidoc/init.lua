--- The API reference of kluabench: one entry per Lua function, method,
-- property and command, gathered from the comments beside the functions (the
-- `---` comments of the Lua modules, the `/***` comments of engine/<role>/*.c:
-- kluabench.apidoc.doccomments) with the sections and the commands defined here.
-- `help()` in the REPL and docs/API.md (written by scripts/gen_api_doc.lua)
-- both read this module, so they never disagree;
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
local measure_do_bench = require 'kluabench.measure.do_bench'
local stopping = require 'kluabench.measure.stopping'
local measure_session = require 'kluabench.measure.session'
local clocks = require 'kluabench.measure.clocks'
local prng = require 'kluabench.stats.prng'
local db = require 'kluabench.history.db'
local kernels_mod = require 'kluabench.kernels'
local doccomments = require 'kluabench.apidoc.doccomments'
local cli = require 'kluabench.commands.helpers'
local M = {}

--- Name prefixes and the module each stands for: kb (the engine) and every short name of
-- kluabench.modules (the one map of them) but its old names and the command line's machinery.
M.modules = { kb = 'kluabench' }
do
  local map = require 'kluabench.modules'
  for name, modname in pairs(map.MODULES) do
    if not map.UNDOCUMENTED[name] then M.modules[name] = modname end
  end
end

--- Receivers of methods, and where their methods are: a registry metatable
-- (its `methods` or `__index` table), a module field, or the `__index` of
-- the metatable of an instance that `make` returns. `functions` names the
-- module that holds what is written `prefix.name` (session.new).
M.objects = {
  t = { metatable = 'kluabench.Tensor', title = 'Tensor' },
  ev = { metatable = 'kluabench.Event', title = 'Event' },
  g = { metatable = 'kluabench.Graph', title = 'Graph' },
  mod = { metatable = 'kluabench.Module', title = 'Module (user kernels)' },
  kern = { metatable = 'kluabench.Kernel', title = 'Kernel (user kernels)' },
  pack = { metatable = 'kluabench.ArgPack', title = 'ArgPack (a launch\'s arguments, packed without a launch)' },
  plugin = { metatable = 'kluabench.Plugin', title = 'Plugin' },
  pk = { metatable = 'kluabench.PluginKernel', title = 'PluginKernel' },
  pymod = { metatable = 'kluabench.PyModule', title = 'PyModule (kb.python)' },
  pyfn = { metatable = 'kluabench.PyFunction', title = 'PyFunction (kb.python)' },
  pyobj = { metatable = 'kluabench.PyObject', title = 'PyObject (kb.python)' },
  p = { module = 'kluabench.progress', field = 'Progress', title = 'Progress' },
  protocol = { title = 'Protocol',
    make = function() return measure_do_bench.do_bench_protocol() end },
  session = { title = 'Session (kluabench.measure.session)', functions = 'kluabench.measure.session',
    make = function() return measure_session.new('hot', function() end, { stop = stopping.count(1) }) end },
  criterion = { title = 'Criterion (kluabench.measure.stopping)',
    make = function() return stopping.count(1) end },
  st = { title = 'State (kluabench.measure.stopping)', make = function() return stopping.state() end },
  mon = { title = 'Monitor (kluabench.measure.clocks)',
    make = function() return clocks.monitor { nvml = {} } end },
  rng = { title = 'Generator (kluabench.stats.prng)', make = function() return prng.new(1) end },
  sqlite = { metatable = 'kluabench.SQLite', title = 'SQLite database (kb.sqlite)' },
  stmt = { metatable = 'kluabench.SQLiteStatement', title = 'SQLite statement' },
  conn = { metatable = 'kluabench.PQ', title = 'PostgreSQL connection (kb.pq)' },
  lock = { metatable = 'kluabench.Lock', title = 'Lock (kb.try_lock)' },
  h = { title = 'History database handle (kluabench.history.db)',
    make = function() return db.open(':memory:', { create = true }) end },
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
  { id = 'usercode', title = 'User kernels (kb.cuda, kb.plugin, kb.python)',
    intro = 'Kernels you bring: CUDA source compiled at run time by NVRTC (`kb.cuda.compile`), '
      .. 'modules built elsewhere (`kb.cuda.load`: cubin, PTX, fatbin), C plugins with CPU twins '
      .. '(`kb.plugin.load`), and Python functions (`kb.python.load`: NumPy, torch, any library; libpython '
      .. 'opened at run time, tensors across through DLPack). They run on the engine\'s stream, so every measure '
      .. 'mode, `kb.do_bench.do_bench` and `kb.graph` work on them unchanged. docs/KERNELS.md explains the '
      .. 'four routes.' },
  { id = 'check', title = 'kluabench.kernels.check: tolerances and comparisons of outputs',
    intro = '`local check = require "kluabench.kernels.check"`. What a check compares with: tolerances by dtype, '
      .. 'outputs poisoned with NaN, an element-wise comparison that counts NaN and Inf mismatches and elements '
      .. 'never written as errors, and the norm-wise precision bound by dtype and reduction length (docs/TRUST.md).' },
  { id = 'checker', title = 'kluabench.kernels.checker: is a kernel\'s output right',
    intro = '`local checker = require "kluabench.kernels.checker"`. A check made against the ways checks are '
      .. 'gamed: fresh random inputs per seed (seeds drawn at run time), outputs poisoned with NaN before each '
      .. 'checked run, the reference computed after the run from a snapshot of the inputs, inputs unchanged and '
      .. 'guard bytes around outputs, the norm-wise precision bound, and a second check after timing '
      .. '(`c:verify()`, then `c:recheck()`).' },
  { id = 'triton', title = 'kluabench.kernels.triton: Triton\'s compiled kernels',
    intro = 'A cubin and metadata JSON from Triton\'s cache, launched as Triton\'s launcher does '
      .. '(block, shared memory, hidden scratch parameters), without Python.' },
  { id = 'trust', title = 'Trust: catching a kernel that games the timer (kb.trust, kluabench.trust)',
    intro = 'What the harness does so that a kernel cannot game the timer (docs/TRUST.md): kb.randn\'s seeds '
      .. 'keyed by a key drawn at run time, its own references to the timing functions, audited samples '
      .. 'at random points of every session (fresh inputs, outputs against the reference, inputs '
      .. 'unchanged, guard bytes, busy threads, foreign streams, persisting L2) and a norm-wise '
      .. 'precision bound. kb.trust holds the engine\'s observations, kluabench.trust the policy: the audit '
      .. '(`trust.new`) and the census of what ran besides the timed call (`trust.census`).' },
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
      .. 'examples/copy_benchmark.lua is a whole benchmark in 34 lines.' },
  { id = 'process', title = 'Child processes (kb.process)',
    intro = 'What `kluabench run-all` starts its children with: fork and exec, waiting for any '
      .. 'child without blocking, signals, sleep. Failures that can happen return nil, a message '
      .. 'and an error name ("ENOENT", "ESRCH", "ECHILD", "EINTR"); misuse raises.' },
  { id = 'stats', title = 'kluabench.stats: statistics of samples',
    intro = '`local stats = require "kluabench.stats"`. Every function takes a list of '
      .. 'numbers (not modified) and raises an error naming the function on an empty list or a '
      .. 'non-number.' },
  { id = 'do_bench', title = 'kluabench.measure.do_bench: protocols',
    intro = '`local do_bench = require "kluabench.measure.do_bench"`. A protocol is a value with a name, '
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
  { id = 'ceilings', title = 'kluabench.measure.ceilings: throughput and the roofline',
    intro = '`local ceilings = require "kluabench.measure.ceilings"`. The measured copy bandwidth of a '
      .. 'device (cached per device) and the arithmetic of GB/s, % of copy and the roofline floor.' },
  { id = 'inference', title = 'kluabench.stats.inference: how sure the numbers are',
    intro = '`local inference = require "kluabench.stats.inference"`. Distribution-free intervals of '
      .. 'a median, the bootstrap of a ratio of medians and the Mann-Whitney test.' },
  { id = 'compare', title = 'kluabench.compare: two result sets, point by point',
    intro = '`local compare = require "kluabench.compare"`. What `kluabench compare` does: match '
      .. 'points by workload digest and provider, treat each bundle as one measurement session, and '
      .. 'give each point a verdict SAME, FASTER, SLOWER or UNSURE from a hierarchical bootstrap '
      .. 'interval of the ratio (sessions, then samples), widened by the device\'s between-session '
      .. 'noise for a side of one session (docs/MEASUREMENT.md).' },
  { id = 'reader', title = 'kluabench.record.reader: reading record files',
    intro = '`local reader = require "kluabench.record.reader"`. The one reader of record files '
      .. '(JSON: a bundle, an array, {"bundles": [...]}; JSON Lines: one bundle a line) that '
      .. '`kluabench compare`, `verify` and `plot` use; errors say FILE:LINE: why.' },
  { id = 'result', title = 'kluabench.result: sessions and points of bundles',
    intro = '`local result = require "kluabench.result"`. The one result model: a session is what one bundle '
      .. 'says (`result.session`), a point the sessions of one workload, kernel, mode, provider, device and '
      .. 'protocol with the aggregate of the passed ones (`result.points`). Every table, chart, comparison and '
      .. 'history view reads bundles through it (docs/ARCHITECTURE.md).' },
  { id = 'verify', title = 'kluabench.record.verify: checking records',
    intro = '`local verify = require "kluabench.record.verify"`. What `kluabench verify` checks of a bundle: '
      .. 'every digest recomputed, every document of the kind and format its place says, and the statistics '
      .. 'the run records those of its raw samples.' },
  { id = 'prng', title = 'kluabench.stats.prng: seeded random choices',
    intro = '`local prng = require "kluabench.stats.prng"`. SplitMix64: every random choice a protocol '
      .. 'makes (sample order, bootstrap) is reproducible from a recorded seed.' },
  { id = 'record', title = 'kluabench.record: kernelindex records',
    intro = '`local record = require "kluabench.record"`. One benchmark point is one bundle '
      .. '{run, protocol, environment, workload, implementation, operation} of kernelindex.dev/v1alpha1 '
      .. 'documents, built from the facts of a measurement by a pure function (`record.from_result`); a digest '
      .. 'is "sha256:" .. hex(SHA-256(JCS({apiVersion, kind, spec}))). The raw samples are the run\'s evidence, '
      .. 'in a samples file beside the records. kluabench.record.writer appends bundles to a file, '
      .. 'kluabench.record.whole_file writes a whole one (`--format kernelindex`); kluabench.result reads them. '
      .. 'docs/RECORDS.md describes every field.' },
  { id = 'kernels', title = 'kluabench.kernels: the kernel registry',
    intro = '`local kernels = require "kluabench.kernels"`. What records and `kluabench list` '
      .. 'know about each kernel (title, source files, cost model), gathered from one descriptor '
      .. 'per family, stdlib/kluabench/kernels/<family>.lua, for every family the engine names '
      .. '(`kb.builtin_kernels()`). docs/ADDING_A_KERNEL.md adds one.' },
  { id = 'liger', title = 'kluabench.liger: Liger-Kernel\'s benchmark CSV',
    intro = '`local liger = require "kluabench.liger"`. Reading Liger\'s CSV, turning rows into '
      .. 'bundles (`kluabench import-liger`), and writing our results in its format.' },
  { id = 'progress', title = 'kluabench.progress: progress of a sweep',
    intro = '`local progress = require "kluabench.progress"`. Writes to stderr only: a '
      .. 'status line redrawn in place on a terminal, one line per point elsewhere, nothing '
      .. 'with `--quiet` or `KLUABENCH_QUIET=1`.' },
  { id = 'plot', title = 'kluabench.charts.plot: SVG charts',
    intro = '`local plot = require "kluabench.charts.plot"`. Charts written by plain Lua: no plotting '
      .. 'library, the SVG opens in any browser. `kluabench plot` is the command-line face.' },
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
  { id = 'history_point', title = 'kluabench.history.point: what the database stores of a bundle',
    intro = '`local history_point = require "kluabench.history.point"`. What only the database needs beyond the '
      .. 'result model (kluabench.result): a run\'s identity, its documents as written, its raw samples as '
      .. 'stored, and the bundle rebuilt from a stored row.' },
  { id = 'html', title = 'kluabench.charts.html: the HTML report',
    intro = '`local html = require "kluabench.charts.html"`. One self-contained page: tables, inline SVG '
      .. 'charts (kluabench.charts.plot), trends with their steps marked.' },
  { id = 'help', title = 'kluabench.apidoc.help: this documentation at the prompt',
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

-- Each kernel family names its own section (`doc.section` in its descriptor,
-- stdlib/kluabench/kernels/<family>.lua; its functions' entries are the
-- `/***` comments of its binding, engine/core/<family>.c); the sections follow the
-- tensor methods.
do
  local at = #M.sections + 1
  for i, s in ipairs(M.sections) do
    if s.id == 'tensor_methods' then at = i + 1 end
  end
  for _, f in ipairs(kernels_mod.FAMILIES) do
    if f.doc then
      table.insert(M.sections, at, f.doc.section)
      at = at + 1
      section(f.doc.section.id, f.doc.entries or {})
    end
  end
end

---------------------------------------------------------------------------
-- The engine's C functions: their entries are the `/***` comments beside
-- them in engine/<role>/*.c (kluabench.apidoc.doccomments.parse_c), read from
-- the checkout this stdlib belongs to, in file order.
---------------------------------------------------------------------------

do
  local here = package.searchpath('kluabench.apidoc', package.path)
  local root = here and here:match('^(.-)/?stdlib/kluabench/apidoc/init%.lua$')
  local host = package.loaded['kluabench.host']
  local dir = root and ((root ~= '' and root or '.') .. '/engine')
  local function list(d) return dir and host and host.listdir and host.listdir(d) or {} end
  -- engine/<role>/<name>.c, ordered by name: which role folder holds a file
  -- does not move its entries within a section
  local files = {}
  for _, role in ipairs(list(dir)) do
    for _, name in ipairs(list(dir .. '/' .. role)) do
      if name:match('%.c$') then files[#files + 1] = { name = name, path = role .. '/' .. name } end
    end
  end
  table.sort(files, function(a, b) return a.name < b.name or a.name == b.name and a.path < b.path end)
  local found = {}
  for _, file in ipairs(files) do
    local f = io.open(dir .. '/' .. file.path, 'rb')
    if f then
      local text = f:read('a')
      f:close()
      for _, e in ipairs(doccomments.parse_c(text, 'engine/' .. file.path)) do found[#found + 1] = e end
    end
  end
  -- in the order of the sections, and of the files and lines within one
  local rank = {}
  for i, s in ipairs(M.sections) do rank[s.id] = i end
  for i, e in ipairs(found) do e.n = i end
  table.sort(found, function(a, b)
    local ra, rb = rank[a.section] or math.huge, rank[b.section] or math.huge
    if ra ~= rb then return ra < rb end
    return a.n < b.n
  end)
  for _, e in ipairs(found) do
    e.n = nil
    M.entries[#M.entries + 1] = e
  end
end

---------------------------------------------------------------------------
-- kluabench.apidoc.help
---------------------------------------------------------------------------

section('help', {
  { name = 'help', kind = 'function', path = { 'kluabench.apidoc.help', 'help' }, signature = 'help([x])',
    summary = 'Prints the documentation of x: a function, a name ("llama4_fwd", "t:to", "verify"), a module or a tensor.',
    details = 'With no argument, an overview of every section. An unknown name lists the entries whose '
      .. 'names contain it. In the REPL `?name` is help("name"). Prints to stdout and returns nothing.',
    example = 'help(kb.rope.llama4_fwd)\nhelp("t:to")\nhelp(kb.jcs)' },
})



---------------------------------------------------------------------------
-- Commands: summaries, usage and help texts come from kluabench.commands and the
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
  submission = 'kluabench submission results/run.jsonl records/liger.jsonl -o submission.json',
  history = 'kluabench history add results/run.jsonl --db results/history.db && kluabench history check',
  report = 'kluabench report results/run.jsonl -o report.html',
}

local function command_entries()
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
-- functions (kluabench.apidoc.doccomments), one copy, next to the code.
---------------------------------------------------------------------------

-- measure gathers the functions of its init.lua and of session.lua (session.new, the session object).
local SOURCES = {
  measure = { 'kluabench.measure', 'kluabench.measure.session' },
}
do
  local modules = {}
  for prefix, modname in pairs(M.modules) do
    if prefix ~= 'kb' then modules[prefix] = SOURCES[prefix] or modname end
  end
  -- the record files' writers are documented with kluabench.record
  local record_parts = { writer = 'record', whole_file = 'record' }
  for _, e in ipairs(doccomments.collect(modules, M.sections, record_parts)) do
    M.entries[#M.entries + 1] = e
  end
end

section('commands', command_entries())

return M
