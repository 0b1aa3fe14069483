--- What the harness writes: where the bundles and their samples go (--format, --out, --samples),
-- the checks made on those paths before anything is measured, the table of the finished points,
-- and the bundles added to a --history database.
local core = require 'kluabench.core'
local files = require 'kluabench.util.files'
local record = require 'kluabench.record'
local names = require 'kluabench.record.names'
local evidence = require 'kluabench.record.evidence'
local writer = require 'kluabench.record.writer'
local results = require 'kluabench.table'
local cli = require 'kluabench.suite.cli'

local M = {}

--- What each --format (cli.FORMATS) does: records "results" (appended to the results folder as
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
for _, name in ipairs(cli.FORMATS) do assert(M.FORMATS[name], 'suite.output: no format ' .. name) end

-- The writer of a format: its function, or that of the optional subsystem it names.
local function format_writer(f)
  if type(f.write) == 'string' then return require(f.module)[f.write] end
  return f.write
end

function M.results_file(d, suffix)
  local dir = files.results_dir()
  local ok, err = files.mkdir_p(dir)
  if not ok then cli.fail(d.name, '%s', err) end
  return dir .. '/' .. d.name .. '-' .. names.time_id(record.now())
    .. suffix
end

-- Where the bundles go as they are made: the JSON Lines path or nil.
function M.jsonl_path(d, o)
  local records = M.FORMATS[o.format].records
  if records == 'results' then
    return o.out or M.results_file(d, '.jsonl')
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
  for _, list in ipairs { cli.HOOKS, cli.OPTIONAL_HOOKS } do
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
function M.check_not_inputs(d, o, target)
  local inputs = sweep_inputs(d)
  local beside = o.samples == nil and M.FORMATS[o.format].samples ~= false
  local ok, why = writer.check_output("option '--out'", target, inputs, not beside)
  if not ok then cli.usage_error(d.name, '%s', why) end
  if o.samples then
    if target and target ~= '-' then inputs[#inputs + 1] = { target, 'the records file' } end
    ok, why = writer.check_output("option '--samples'", o.samples, inputs, true)
    if not ok then cli.usage_error(d.name, '%s', why) end
  end
end

-- A usage error, before anything is measured, when the samples file (--samples, or the one beside
-- --out) exists and is not a regular file: it is read before it is written (its lines are counted),
-- and opening a FIFO there waited for a writer forever, after the measuring for the whole-file
-- formats. Found by stat, never by opening it.
function M.check_samples_file(d, o, target)
  local beside = target and target ~= '-' and M.FORMATS[o.format].samples ~= false
  local samples = o.samples or (beside and evidence.samples_path(target))
  if not samples or samples == '-' then return end
  local why = files.not_regular(samples)
  if not why then return end
  if o.samples then cli.usage_error(d.name, "option '--samples' %s %s", samples, why) end
  cli.usage_error(d.name, "option '--out' %s: its samples file %s %s", target, samples, why)
end

-- Where the raw samples go when the bundles go to stdout (else beside them,
-- unless --samples says otherwise).
function M.samples_path(d, o, records)
  if o.samples then return o.samples end
  if records and records ~= '-' then return nil end
  if M.FORMATS[o.format].samples == false then return nil end -- e.g. Liger's CSV
  local path = M.results_file(d, '.samples.jsonl')
  io.stderr:write(d.name, ': the raw samples of the bundles on stdout go to ', path, ' (--samples)\n')
  return path
end

-- The table of the finished points and, for the whole-file formats, the file
-- (claim: what the file held when the sweep started, writer.claim: another
-- process's file written since is not overwritten).
function M.write_results(d, o, bundles, path, samples, claim)
  local f = M.FORMATS[o.format]
  local opts = { sessions = o.sessions, metrics = o.metrics }
  local table_text = f.view == 'markdown' and results.results_markdown(bundles, opts) or results.results_table(bundles, opts)
  if f.records == 'results' then -- the table is the output; the bundles went to the results file
    local ok, err = files.write_stdout(table_text)
    if not ok then cli.fail(d.name, 'cannot write %s', err) end
    io.stderr:write(string.format('%s: %d bundle%s appended to %s (backend %s)\n', d.name, #bundles,
      #bundles == 1 and '' or 's', path, core.backend()))
    return
  end
  io.stderr:write(table_text)
  if #bundles == 0 or not f.write then return end
  local out, notes = format_writer(f)(bundles, o.out or '-', samples, claim)
  if not out then cli.fail(d.name, '%s', notes) end
  for _, note in ipairs(notes) do io.stderr:write(d.name, ': ', note, '\n') end
  if out ~= '-' then io.stderr:write(d.name, ': wrote ', out, '\n') end
end

-- --history DB: the commit of the code under test (git, in the current
-- directory) and the database, both checked before anything is timed, so that
-- a sweep does not end in an error it could have had at its start.
function M.open_history(d, o)
  local history = require 'kluabench.history'
  local meta = history.git_meta()
  if not meta then
    cli.fail(d.name, '--history %s: no git commit in the current directory to file the runs under (run in the work '
      .. 'tree of the code under test, or write the results and add them with kluabench history add FILE --commit '
      .. 'SHA)', o.history)
  end
  local h, err = history.open(o.history, { create = true })
  if not h then cli.fail(d.name, '--history %s: %s', o.history, tostring(err)) end
  h:close()
  return meta
end

-- Adds the finished points to the --history database (also after an error or
-- a signal: they are in the results file too).
function M.add_to_history(d, o, bundles, meta, source)
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

return M
