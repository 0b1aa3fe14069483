--- kluabench.suite: the benchmark harness. A script declares its benchmark and calls suite.main(decl); the harness
-- owns the rest. docs/SUITE.md lists the declaration's fields and hooks, a point's fields and what the harness does
-- (the audits: docs/TRUST.md).
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

local M = {}

--- Each --format: records "results" (appended to the results folder) or "stdout" (JSON Lines), view (the table's
-- kind), write (a whole-file format, written at the end; module: the subsystem that has it), samples = false.
M.FORMATS = {
  table = { records = 'results', view = 'table' },
  markdown = { records = 'results', view = 'markdown' },
  jsonl = { records = 'stdout', view = 'table' },
  kernelindex = { view = 'table', module = 'kluabench.record.whole_file', write = 'write_kernelindex' },
  ['liger-csv'] = { view = 'table', samples = false, module = 'kluabench.liger', write = 'write_csv' },
}
for _, name in ipairs(declaration.FORMATS) do assert(M.FORMATS[name], 'suite: no format ' .. name) end

local function format_writer(f)
  if type(f.write) == 'string' then return require(f.module)[f.write] end
  return f.write
end

local function results_file(d, suffix)
  local dir = files.results_dir()
  local ok, err = files.mkdir_p(dir)
  if not ok then declaration.fail(d.name, '%s', err) end
  return dir .. '/' .. d.name .. '-' .. names.time_id(record.now()) .. suffix
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

-- The files a sweep reads that --out and --samples must not overwrite: the script, its hooks' files, the binary.
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

-- A usage error when --out (or its samples file) or --samples is an input, or --samples the records file (target).
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

-- A usage error when the samples file exists and is no regular file (a FIFO would block): by stat, never by open.
local function check_samples_file(d, o, target)
  local beside = target and target ~= '-' and M.FORMATS[o.format].samples ~= false
  local samples = o.samples or (beside and evidence.samples_path(target))
  if not samples or samples == '-' then return end
  local why = files.not_regular(samples)
  if not why then return end
  if o.samples then declaration.usage_error(d.name, "option '--samples' %s %s", samples, why) end
  declaration.usage_error(d.name, "option '--out' %s: its samples file %s %s", target, samples, why)
end

-- Where the raw samples go when the bundles go to stdout (else beside them, or --samples).
local function samples_path(d, o, records)
  if o.samples then return o.samples end
  if records and records ~= '-' then return nil end
  if M.FORMATS[o.format].samples == false then return nil end -- e.g. Liger's CSV
  local path = results_file(d, '.samples.jsonl')
  io.stderr:write(d.name, ': the raw samples of the bundles on stdout go to ', path, ' (--samples)\n')
  return path
end

-- The table of the finished points and, for the whole-file formats, the file (claim: writer.claim's).
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


--- The --help text that suite.main prints for a declaration.
-- @signature suite.usage(decl) -> string
-- @example
--   print(suite.usage(require("kluabench.benchmarks.rope").declaration("rope")))
function M.usage(d) return require('kluabench.suite.usage').text(d) end

--- The points of a declaration for parsed options: a sweep's, else the product of the axes' values.
-- @signature suite.points(decl, opts) -> list of points
-- @example
--   local d = require("kluabench.benchmarks.rope").declaration("llama4_rope")
--   for _, p in ipairs(suite.points(d, {axes = {seq = {1024, 4096}}, dtype = "bf16"})) do print(p.id) end
M.points = declaration.points

--- Raised by a check when the provider's result is wrong: it is not timed and its bundles say status
-- (incorrect_numerical, the default, incorrect_shape or incorrect_dtype).
-- @signature suite.wrong_result(message [, status])
-- @example
--   local ok, e = pcall(suite.wrong_result, "q_out differs from the reference")
--   print(tostring(e))
M.wrong_result = declaration.wrong_result

--- A sweep estimated to take at least this many seconds says so before it starts.
M.ESTIMATE_FROM_S = run.ESTIMATE_FROM_S

--- Runs a declared benchmark (docs/SUITE.md) on the script's command line and returns its bundles. Exits 0 after
-- --help and --list-points, 2 on a usage error, 1 after a failure (every bundle written), 130/143 on a signal.
-- @signature suite.main(decl [, args]) -> bundles
-- @example
--   local out = os.tmpname() -- a script runs it with its own command line: kb.suite.main{...}
--   kb.suite.main({
--     name = "tensor_copy", axes = {{name = "mib", default = 64}},
--     dtypes = {"f32"}, modes = {"forward"}, providers = {"copy_"},
--     setup = function(p) local n = p.mib * 262144
--       return {src = kb.randn({n}, "f32", 1), dst = kb.empty({n}, "f32")} end,
--     run = function(p, provider, mode, t) return function(s) s = s or t; s.dst:copy_(s.src) end end,
--     cost = function(p) return 2 * p.mib * 2^20, 0 end,
--   }, {"--mib", "1", "--rep-ms", "5", "--format", "jsonl", "--out", out .. ".jsonl"})
--   os.remove(out); os.remove(out .. ".jsonl"); os.remove(out .. ".samples.jsonl")
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
    local selected = declaration.extension(d, 'shard').select(list, o.shard[1], o.shard[2])
    points = {}
    for i, s in ipairs(selected) do points[i] = s.point end
  end
  if o.list_points then
    -- then the bundles the point will have (launchers' manifests)
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
    for _, out in ipairs { { '--out', target }, { '--samples', o.samples } } do
      local ok, err = writer.check_output(out[1], out[2], { { o.history, 'the --history database' } })
      if not ok then declaration.usage_error(d.name, '%s', err) end
    end
  end
  check_not_inputs(d, o, target)
  check_samples_file(d, o, target)
  -- an unwritable --out or --samples is a usage error (2); an unwritable results folder is not (1)
  local function check_writable(file, option)
    local ok, err = files.check_writable(file)
    if ok then return end
    if file == o[option] then declaration.usage_error(d.name, 'cannot write --%s %s', option, err) end
    declaration.fail(d.name, 'cannot write %s (the results folder: KLUABENCH_RESULTS, default results/)', err)
  end
  if target then check_writable(target, 'out') end
  local samples = samples_path(d, o, path or o.out)
  if samples then check_writable(samples, 'samples') end
  -- the whole-file formats replace --out at the end: claim what it holds now
  local claim
  local f = M.FORMATS[o.format]
  if f.write and o.out and o.out ~= '-' then
    claim = require('kluabench.record.whole_file').claim(o.out, f.samples ~= false and samples or false)
  end
  local history = o.history and declaration.extension(d, 'history')
  local history_meta
  if history then
    local ok, meta = pcall(history.open, o.history)
    if not ok then declaration.fail(d.name, '%s', tostring(meta)) end
    history_meta = meta
  end
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
  -- to-be-closed: an error or a hard stop clears the progress line before its message
  local progress <close> = progress_mod.new { total = total, quiet = o.quiet or nil }
  ctx.progress = progress
  -- signals are deferred: the point being measured is finished and written, then the sweep stops
  core.defer_interrupts(true)
  local key_before = core.trust.seed_key(key)
  if total > 1 and not progress.quiet then
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
  if history_meta and #bundles > 0 then history.add(d.name, o.history, bundles, history_meta, path or o.out) end
  if not swept then error(stopped_by, 0) end
  -- the exit status follows the bundles' status: any run not passed (a hook's failure, a finding, an implausible
  -- rate, a timeout) fails the command
  local not_passed, by_status, kinds = 0, {}, {}
  for _, b in ipairs(bundles) do
    local st = b.run.spec.status
    if st ~= 'passed' then
      not_passed = not_passed + 1
      if not by_status[st] then kinds[#kinds + 1] = st end
      by_status[st] = (by_status[st] or 0) + 1
    end
  end
  if not_passed > 0 or ctx.failures > 0 then
    local parts = {}
    for _, st in ipairs(kinds) do parts[#parts + 1] = by_status[st] .. ' ' .. tostring(st) end
    io.stdout:flush()
    io.stderr:write(string.format('%s: %d of %d runs not passed (%s; their bundles say why); exit status 1\n',
      d.name, not_passed, #bundles, #parts > 0 and table.concat(parts, ', ') or ctx.failures .. ' failures'))
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
