--- kluabench.suite: the benchmark harness. A script declares its benchmark
-- and calls suite.main(decl); the harness owns everything else: the command
-- line (with --help made from the declaration), the points, the check before
-- timing, the protocol, repeated sessions, shards, progress, Ctrl-C/SIGTERM,
-- every output format and the records. The declaration (see docs/SUITE.md):
--
--   name       the kernel's name in records and result file names
--   summary    what the benchmark times, for --help
--   axes       list of {name, default, help, max}: numeric workload
--              parameters; each is an option taking a comma list
--              (--seq 1024,4096), and the points are their product
--   sweeps     list of {name, axis, values, fixed}: --sweep NAME varies
--              `axis` over `values` with the other axes at `fixed` (or
--              their defaults); --sweep all runs every sweep
--   dtypes, dtype          the dtypes offered and the default
--   providers, provider    the implementations and the default (all in a sweep)
--   modes, mode            the operations and the default (all in a sweep)
--   validate(point)        a message when the point cannot be run
--   shared(point)          per-point state every provider uses (optional)
--   setup(point, provider) -> inputs, a table of tensors made fresh for
--                          each session (and for each rotated graph set)
--   run(point, provider, mode, inputs) -> fn: the timed function; it is
--                          called as fn() on `inputs`, or as fn(set) on a
--                          rotated input set in graph mode
--   check(point, provider, inputs, modes) -> the check record; raises when
--                          the provider's result is wrong (nothing is timed)
--   cost(point, mode)      -> bytes, flops (default: the kernel's cost model)
--   record(point, provider, mode) -> {timed, execution, annotations} for
--                          the record (its evidence entry)
--   implementation(point, provider) -> what the provider runs: a user
--                          kernel's info() table (k:info(), pk:info(),
--                          tk:info()), a list of them, an
--                          ImplementationRevision document, or 'builtin'
--                          (the kernel registry's built-in code of this
--                          kernel and provider); default: the script
--   operation              the OperationSpec's description
--                          (kluabench.record.operation); default: kernelindex's
--                          own for Liger's kernels, else the tensors setup makes
--   reference(point, provider, mode, inputs) -> {name = tensor}: what each
--                          named tensor of inputs holds after one call of the
--                          timed function, computed from inputs (a snapshot
--                          the harness took before the call; the hook may
--                          change it). The audits (docs/TRUST.md) compare the
--                          timed call's outputs with it, and check that every
--                          other tensor of inputs is unchanged
--   precision              the norm-wise error the audits allow, in units of
--                          the dtype's unit roundoff (default 8), or false
--   reduction              the terms each output element sums (an integer or
--                          function(point)), which widens that bound by its
--                          square root; default: read from the shapes
--   tolerance              {atol, rtol}: the audits' element-wise tolerance
--                          (default by dtype, kluabench.check.TOLERANCES)
--
-- What each hook returns is checked where it is called; a wrong value is an
-- error naming the hook, its script line, the provider, mode and point.
--
-- A check that finds a wrong result raises suite.wrong_result(message): the
-- provider is not timed, its bundles say incorrect_numerical (any other
-- error in a hook says runtime_error, and a session or check past --timeout
-- says timeout), the other points still run, and the exit status is 1.
--
-- Every session is audited (kluabench.trust, docs/TRUST.md): kb.randn's
-- seeds are keyed by a key drawn for the run, and at random samples and
-- after the last one the harness takes extra samples on fresh inputs that it
-- checks (outputs, inputs, guard bytes, threads, streams, persisting L2, the
-- timing functions). A finding gives the bundle the status
-- policy_violation, suspected_reward_hack or incorrect_numerical with the
-- reason, and the exit status is 1.
--
-- A point is a table with one field per axis, `dtype`, `params` (the axis
-- values by name, as records spell them), `x` (the swept axis), `id` (the
-- workload slug) and `shared` (what shared(point) returned).
local core = require 'kluabench.core'
local files = require 'kluabench.util.files'
local seeds = require 'kluabench.trust.seeds'
local env = require 'kluabench.record.env'
local writer = require 'kluabench.record.writer'
local progress_mod = require 'kluabench.progress'
local record = require 'kluabench.record'
local names = require 'kluabench.record.names'
local evidence = require 'kluabench.record.evidence'
local results = require 'kluabench.table'
local declaration = require 'kluabench.suite.declaration'
local run = require 'kluabench.suite.run'
local shard = require 'kluabench.suite.shard'

local M = {}

---------------------------------------------------------------------------
-- Where the results go: --format, --out and --samples, checked before anything is measured
---------------------------------------------------------------------------


--- What each --format (declaration.FORMATS) does: records "results" (appended to the results folder as
-- they are made, the table on stdout) or "stdout" (JSON Lines to --out or stdout), view (the
-- table's kind), write (whole-file formats: the bundles written at the end; module names the
-- optional subsystem that writes it), samples = false (no samples file).
M.FORMATS = {
  table = { records = 'results', view = 'table' },
  markdown = { records = 'results', view = 'markdown' },
  jsonl = { records = 'stdout', view = 'table' },
  kernelindex = {
    view = 'table',
    write = function(bundles, out, samples, claim)
      local ok, where, why = writer.write_pretty(out, bundles, samples, { claim = claim })
      if not ok then return nil, tostring(where) end
      return where, { why }
    end,
  },
  ['liger-csv'] = { view = 'table', samples = false, module = 'kluabench.liger', write = 'write_csv' },
}
for _, name in ipairs(declaration.FORMATS) do assert(M.FORMATS[name], 'suite: no format ' .. name) end

-- The writer of a format: its function, or that of the optional subsystem it names.
local function format_writer(f)
  if type(f.write) == 'string' then return require(f.module)[f.write] end
  return f.write
end

local function results_file(d, suffix)
  local dir = files.results_dir()
  local ok, err = files.mkdir_p(dir)
  if not ok then declaration.fail(d.name, '%s', err) end
  return dir .. '/' .. d.name .. '-' .. names.time_id(record.now())
    .. suffix
end

-- Where the bundles go as they are made: the JSON Lines path or nil.
local function jsonl_path(d, o)
  local records = M.FORMATS[o.format].records
  if records == 'results' then
    return o.out or results_file(d, '.jsonl')
  elseif records == 'stdout' then
    return o.out or '-'
  end
  return nil
end

-- The files a sweep reads that --out and --samples must not overwrite: the
-- script run (arg[0]), every file that defines one of the declaration's hooks
-- (a benchmark module the script requires) and the kluabench binary.
local function sweep_inputs(d)
  local inputs, seen = {}, {}
  local function add(path, what)
    if type(path) == 'string' and path ~= '' and not seen[path] then
      seen[path] = true
      inputs[#inputs + 1] = { path, what }
    end
  end
  local script = rawget(_G, 'arg') and _G.arg[0]
  add(script, 'the benchmark script')
  for _, list in ipairs { declaration.HOOKS, declaration.OPTIONAL_HOOKS } do
    for _, h in ipairs(list) do
      local info = type(d[h]) == 'function' and debug.getinfo(d[h], 'S')
      if info and info.source:sub(1, 1) == '@' then add(info.source:sub(2), 'the file of the ' .. h .. ' hook') end
    end
  end
  add(core.executable(), 'the kluabench binary')
  return inputs
end

-- A usage error when --out (or the samples file beside it) or --samples is a
-- file the sweep reads, or --samples is the records file: appending there
-- would overwrite or corrupt an input. target: where the bundles go.
local function check_not_inputs(d, o, target)
  local inputs = sweep_inputs(d)
  local beside = o.samples == nil and M.FORMATS[o.format].samples ~= false
  local ok, why = writer.check_output("option '--out'", target, inputs, not beside)
  if not ok then declaration.usage_error(d.name, '%s', why) end
  if o.samples then
    if target and target ~= '-' then inputs[#inputs + 1] = { target, 'the records file' } end
    ok, why = writer.check_output("option '--samples'", o.samples, inputs, true)
    if not ok then declaration.usage_error(d.name, '%s', why) end
  end
end

-- A usage error, before anything is measured, when the samples file (--samples, or the one beside
-- --out) exists and is not a regular file: it is read before it is written (its lines are counted),
-- and opening a FIFO there waited for a writer forever, after the measuring for the whole-file
-- formats. Found by stat, never by opening it.
local function check_samples_file(d, o, target)
  local beside = target and target ~= '-' and M.FORMATS[o.format].samples ~= false
  local samples = o.samples or (beside and evidence.samples_path(target))
  if not samples or samples == '-' then return end
  local why = files.not_regular(samples)
  if not why then return end
  if o.samples then declaration.usage_error(d.name, "option '--samples' %s %s", samples, why) end
  declaration.usage_error(d.name, "option '--out' %s: its samples file %s %s", target, samples, why)
end

-- Where the raw samples go when the bundles go to stdout (else beside them,
-- unless --samples says otherwise).
local function samples_path(d, o, records)
  if o.samples then return o.samples end
  if records and records ~= '-' then return nil end
  if M.FORMATS[o.format].samples == false then return nil end -- e.g. Liger's CSV
  local path = results_file(d, '.samples.jsonl')
  io.stderr:write(d.name, ': the raw samples of the bundles on stdout go to ', path, ' (--samples)\n')
  return path
end

-- The table of the finished points and, for the whole-file formats, the file
-- (claim: what the file held when the sweep started, writer.claim: another
-- process's file written since is not overwritten).
local function write_results(d, o, bundles, path, samples, claim)
  local f = M.FORMATS[o.format]
  local opts = { sessions = o.sessions, metrics = o.metrics }
  local table_text = f.view == 'markdown' and results.results_markdown(bundles, opts) or results.results_table(bundles, opts)
  if f.records == 'results' then -- the table is the output; the bundles went to the results file
    local ok, err = files.write_stdout(table_text)
    if not ok then declaration.fail(d.name, 'cannot write %s', err) end
    io.stderr:write(string.format('%s: %d bundle%s appended to %s (backend %s)\n', d.name, #bundles,
      #bundles == 1 and '' or 's', path, core.backend()))
    return
  end
  io.stderr:write(table_text)
  if #bundles == 0 or not f.write then return end
  local out, notes = format_writer(f)(bundles, o.out or '-', samples, claim)
  if not out then declaration.fail(d.name, '%s', notes) end
  for _, note in ipairs(notes) do io.stderr:write(d.name, ': ', note, '\n') end
  if out ~= '-' then io.stderr:write(d.name, ': wrote ', out, '\n') end
end

-- --history DB: the commit of the code under test (git, in the current
-- directory) and the database, both checked before anything is timed, so that
-- a sweep does not end in an error it could have had at its start.
local function open_history(d, o)
  local history = require 'kluabench.history'
  local meta = history.git_meta()
  if not meta then
    declaration.fail(d.name, '--history %s: no git commit in the current directory to file the runs under (run in the work '
      .. 'tree of the code under test, or write the results and add them with kluabench history add FILE --commit '
      .. 'SHA)', o.history)
  end
  local h, err = history.open(o.history, { create = true })
  if not h then declaration.fail(d.name, '--history %s: %s', o.history, tostring(err)) end
  h:close()
  return meta
end

-- Adds the finished points to the --history database (also after an error or
-- a signal: they are in the results file too).
local function add_to_history(d, o, bundles, meta, source)
  local m = {}
  for k, v in pairs(meta) do m[k] = v end
  m.source = source ~= '-' and source or nil
  m.batch = (source or 'stdout') .. '@' .. names.time_id(record.now())
  local s, err = require('kluabench.history').add_bundles(o.history, bundles, m)
  if not s then
    io.stderr:write(string.format('%s: --history %s: %s (the bundles are in the results file; history add '
      .. 'takes them later)\n', d.name, o.history, tostring(err)))
    return
  end
  io.stderr:write(string.format('%s: history %s: %d run%s added, %d already there, %d refused (commit %s)\n', d.name,
    o.history, s.added, s.added == 1 and '' or 's', s.present, #s.refused, tostring(m.commit):sub(1, 12)))
end

---------------------------------------------------------------------------
-- The loop
---------------------------------------------------------------------------


---------------------------------------------------------------------------
-- The harness
---------------------------------------------------------------------------

--- The --help text that suite.main prints for a declaration.
--
-- @signature suite.usage(decl) -> string
-- @example
--   print(suite.usage(require("kluabench.benchmarks.rope").declaration("rope")))
M.usage = declaration.usage

--- The points of a declaration for parsed options: with a sweep, its axis over its values, the
-- other axes at the sweep's fixed values or their defaults; without, the product of every axis's
-- values.
--
-- @signature suite.points(decl, opts) -> list of points
-- @example
--   local d = require("kluabench.benchmarks.rope").declaration("llama4_rope")
--   for _, p in ipairs(suite.points(d, {axes = {seq = {1024, 4096}}, dtype = "bf16"})) do print(p.id) end
M.points = declaration.points

--- Raised by a benchmark's check when the provider's result is wrong: the provider is not timed and
-- its bundles say status (default incorrect_numerical; incorrect_shape or incorrect_dtype).
--
-- @signature suite.wrong_result(message [, status])
-- @example
--   local ok, e = pcall(suite.wrong_result, "q_out differs from the reference")
--   print(tostring(e))
M.wrong_result = declaration.wrong_result

--- A sweep estimated to take at least this many seconds says so before it starts.
M.ESTIMATE_FROM_S = run.ESTIMATE_FROM_S

function M.main(d, args)
  declaration.check_decl(d)
  local o = declaration.parse(d, args or arg or {})
  if o.help then
    io.stdout:write(M.usage(d), '\n')
    os.exit(0)
  end
  local points = M.points(d, o)
  for _, p in ipairs(points) do
    local why = declaration.call_validate(d, p)
    if why then declaration.usage_error(d.name, '%s', why) end
  end
  if o.shard then
    local list = {}
    for i, p in ipairs(points) do list[i] = { id = p.id, cost = declaration.point_cost(d, p, o), point = p } end
    local selected = shard.select(list, o.shard[1], o.shard[2])
    points = {}
    for i, s in ipairs(selected) do points[i] = s.point end
  end
  if o.list_points then
    -- ID, COST, DESCRIPTION, then the bundles the point will have (every provider x mode x session),
    -- which the launchers write into their manifest for merge to expect
    local providers, modes = table.concat(o.providers, ','), table.concat(o.modes, ',')
    for _, p in ipairs(points) do
      io.stdout:write(string.format('%s\t%.0f\t%s x {%s} x {%s}, %s sweep\tproviders=%s\tmodes=%s\tsessions=%d\n',
        p.id, declaration.point_cost(d, p, o), d.name, providers, modes, p.x, providers, modes, o.runs))
    end
    os.exit(0)
  end

  local path = jsonl_path(d, o)
  local target = path or o.out
  if o.history and not (o.history:match('^postgresql://') or o.history:match('^postgres://')) then
    -- results appended to the database file would damage it
    for _, out in ipairs { { '--out', target }, { '--samples', o.samples } } do
      local ok, err = writer.check_output(out[1], out[2], { { o.history, 'the --history database' } })
      if not ok then declaration.usage_error(d.name, '%s', err) end
    end
  end
  check_not_inputs(d, o, target)
  check_samples_file(d, o, target)
  -- a path given as --out or --samples that cannot be written is a usage
  -- error (exit 2, as issue 23 asks of every command); a file of the results
  -- folder that cannot be written is not the command line's fault (exit 1)
  local function check_writable(file, option)
    local ok, err = files.check_writable(file)
    if ok then return end
    if file == o[option] then declaration.usage_error(d.name, 'cannot write --%s %s', option, err) end
    declaration.fail(d.name, 'cannot write %s (the results folder: KLUABENCH_RESULTS, default results/)', err)
  end
  if target then check_writable(target, 'out') end

  local samples = samples_path(d, o, path or o.out)
  if samples then check_writable(samples, 'samples') end
  -- the whole-file formats replace --out at the end: what it holds now is
  -- claimed, so that another process's file written meanwhile is kept
  local claim
  local f = M.FORMATS[o.format]
  if f.write and o.out and o.out ~= '-' then
    claim = writer.claim(o.out, f.samples ~= false and samples or false)
  end
  local history_meta = o.history and open_history(d, o)
  -- the run's seed key: kb.randn's values cannot be known before the run (records carry the key)
  local key = seeds.draw()
  local ctx = { o = o, protocol = run.make_protocol(o), environment = env.capture(),
    described = {}, tensors = {}, failures = 0, trust = { key = key } }
  local bundles = {}
  local function emit(bundle)
    bundles[#bundles + 1] = bundle
    if path then
      local ok, err = writer.append(path, bundle, samples)
      if not ok then declaration.fail(d.name, '%s', tostring(err)) end
    end
  end

  local total = #points * #o.providers * #o.modes * o.runs
  -- to-be-closed: an error or a hard stop clears the progress line before
  -- the message is printed
  local progress <close> = progress_mod.new { total = total }
  ctx.progress = progress

  -- Ctrl-C and SIGTERM are deferred while the sweep runs: the point being
  -- measured is finished and written (a do_bench point cannot be stopped
  -- half-way; the cold, hot and graph protocols stop sampling early and
  -- their record says so), then the sweep stops, prints the summary of the
  -- finished points and exits with 130 (SIGINT) or 143 (SIGTERM). A second
  -- signal stops at once.
  core.defer_interrupts(true)
  local key_before = core.trust.seed_key(key)
  if total > 1 and not progress_mod.quiet_from_env() then
    local seconds = run.estimate_seconds(d, ctx, points)
    if seconds and seconds >= M.ESTIMATE_FROM_S and not core.interrupted() then
      io.stderr:write(string.format('%s: %d sessions, estimated %s (one call of each provider and mode timed at the '
        .. 'smallest point, scaled by bytes); fewer values, --provider or --mode make it shorter\n', d.name, total,
        progress_mod.format_duration(seconds)))
    end
  end
  local swept, stopped_by = pcall(run.sweep, d, ctx, points, emit)
  core.trust.seed_key(key_before)
  if progress then progress:close() end
  -- the points finished before an error are written in every format too
  write_results(d, o, bundles, path, samples, claim)
  if history_meta and #bundles > 0 then add_to_history(d, o, bundles, history_meta, path or o.out) end
  if not swept then error(stopped_by, 0) end
  if ctx.failures > 0 then
    io.stdout:flush()
    io.stderr:write(string.format('%s: %d provider%s or session%s failed (their bundles say why); exit status 1\n',
      d.name, ctx.failures, ctx.failures == 1 and '' or 's', ctx.failures == 1 and '' or 's'))
    if not stopped_by then os.exit(1) end
  end
  if stopped_by then
    io.stdout:flush() -- os.exit below skips the host's check of stdout: the writes above were checked
    io.stderr:write(string.format('%s: interrupted by %s after %d of %d points\n', d.name, stopped_by,
      #bundles, total))
    os.exit(stopped_by == 'SIGTERM' and 143 or 130)
  end
  return bundles
end

return M
