--- `kluabench verify FILE...`: recompute every digest of every record
-- bundle in JSON or JSON Lines files, check each document's kind, apiVersion
-- and name and the run's status, and check the run's raw samples (its
-- evidence entry) against their digest and the statistics the run records.
local files = require 'kluabench.util.files'
local reader = require 'kluabench.record.reader'
local evidence = require 'kluabench.record.evidence'
local verify = require 'kluabench.record.verify'
local helpers = require 'kluabench.commands.helpers'

local M = {}

M.USAGE = 'kluabench verify [--quiet] FILE...'

M.help = [[
Reads record bundles and, for each, checks:
  - every digest: the run's protocolDigest, workloadDigest, environmentDigest
    and implementationDigest, and the workload's operationSpecDigest and the
    implementation's operation.specDigest, each recomputed as kernelindex does,
    "sha256:" .. hex(SHA-256(JCS({apiVersion, kind, spec}))) with JCS the
    RFC 8785 canonical JSON (docs/RECORDS.md);
  - every document is of the kind and apiVersion (kernelindex.dev/v1alpha1)
    its place in the bundle says, with a metadata.name, and the run's status
    is one of kernelindex's (the documents' JSON Schemas are checked in the
    project's CI with python3-jsonschema, not here);
  - the raw samples the run names (run.spec.evidence.rawSamples): the samples
    file beside FILE holds an entry with exactly that digest, and the median,
    p20, p80, minimum, maximum, mean and sample count the run records are
    those of its samples (within the 1 ns the writer's rounding allows);
  - what the run claims beside its digests: the kernel, mode, provider, case
    and session of its sourceNative, its backend label, title and session
    measurements agree with each other, with the documents the digests name
    (the protocol's timed pass, the implementation's callable, the workload's
    axes) and with its evidence entry (its run and session); a session is a
    whole index from 1 to its count. A contradiction is a MISMATCH naming the
    field, "recorded" being the claim and "computed" what the documents say.

FILE is a JSON file holding one bundle or an array of bundles, or a JSON Lines
file with one bundle per line (.jsonl and .ndjson files always are; other
files are JSON Lines when they hold more than one JSON value).

For every bundle one line goes to stdout:
  OK FILE:LINE NAME
  MISMATCH FILE:LINE DIGEST: recorded sha256:..., computed sha256:...
LINE is where the bundle starts, NAME its run's metadata.name. Files that
cannot be read or parsed, documents that are not kernelindex documents of
their kind, and samples that do not match are reported on stderr as
"kluabench verify: FILE:LINE: why".

  -q, --quiet   print only MISMATCH lines and errors

Exit status: 0 everything checks out, 1 a mismatch or an invalid file (too
large, not JSON, no bundles), 2 usage error (a FILE that does not exist, is
no regular file or cannot be opened too: then nothing is checked).]]

local function usage_error(fmt, ...) return helpers.usage_error('verify', fmt, ...) end

--- The bundles of a file's text: a list of {bundle = value, line = N}, or
-- nil, line, message (kluabench.record.reader's items).
M.bundles_of_text = reader.items

--- Checks one file. Calls report(kind, path, line, detail) for every finding
-- (kind "ok", "mismatch" or "error"). Returns counts {ok, mismatch, error}.
function M.check_file(path, report)
  local counts = { ok = 0, mismatch = 0, error = 0, bundles = 0 }
  if evidence.is_samples_path(path) then
    -- a glob of *.jsonl gives the samples files too: they are checked through the records beside them
    report('note', path, nil, 'a samples file (the raw samples the runs of the records file beside it name): '
      .. 'checked through that records file')
    return counts
  end
  local text, rerr = files.read_text(path)
  if not text then
    report('error', nil, nil, rerr) -- the message names the file
    counts.error = 1
    return counts
  end
  local items, line, why = M.bundles_of_text(text, path)
  if not items then
    report('error', path, line, why)
    counts.error = 1
    return counts
  end
  if #items == 0 then
    report('error', path, nil, 'no bundles in the file')
    counts.error = 1
    return counts
  end
  local cli = helpers
  for _, it in ipairs(items) do
    cli.stop_if_interrupted()
    counts.bundles = counts.bundles + 1
    local b = it.bundle
    local problems = verify.problems(b, path)
    local hard = {}
    local mism = {}
    for _, p in ipairs(problems) do
      if p.error then hard[#hard + 1] = p else mism[#mism + 1] = p end
    end
    if #hard > 0 then
      for _, p in ipairs(hard) do report('error', path, it.line, p.field .. ': ' .. p.error) end
      counts.error = counts.error + 1
    end
    if #mism > 0 then
      for _, p in ipairs(mism) do report('mismatch', path, it.line, p) end
      counts.mismatch = counts.mismatch + 1
    end
    if #problems == 0 then
      local name = type(b.run.metadata) == 'table' and b.run.metadata.name or nil
      if type(name) ~= 'string' then name = nil end -- the name is not digested: anything may be there
      report('ok', path, it.line, name)
      counts.ok = counts.ok + 1
    end
  end
  return counts
end

--- Error lines shown per file; the rest are counted ("N more errors not shown").
M.MAX_ERRORS_PER_FILE = 100

--- Runs the command on the words after "verify"; returns the exit status.
function M.main(args)
  local opts, files = helpers.parse_args(args or {},
    { quiet = 'flag', help = 'flag', aliases = { q = 'quiet', h = 'help' } })
  if not opts then return usage_error('%s', files) end
  if opts.help then return helpers.help('verify') end
  local quiet = opts.quiet
  if #files == 0 then return usage_error('no FILE given') end
  local cli = helpers
  local unreadable = cli.check_inputs('verify', files)
  if unreadable then return unreadable end

  local printable = cli.printable
  local stdout_err -- set when stdout cannot be written: the command stops
  local errors_here, silenced = 0, 0 -- error lines of the current file, and those left out
  local function out(...)
    local ok, err = io.stdout:write(...)
    if not ok then
      stdout_err = tostring(err)
      error('stdout: ' .. stdout_err, 0)
    end
  end
  local function report(kind, path, line, detail)
    local where = path and printable(line and (path .. ':' .. line) or path, 300)
    if kind == 'ok' then
      if not quiet then out('OK ', where, detail and (' ' .. printable(detail)) or '', '\n') end
    elseif kind == 'mismatch' then
      out(string.format('MISMATCH %s %s: recorded %s, computed %s\n', where,
        detail.field, printable(detail.recorded), printable(detail.computed)))
    elseif kind == 'note' then
      io.stderr:write('kluabench verify: ', where and (where .. ': ') or '', printable(detail, 400), '\n')
    elseif errors_here >= M.MAX_ERRORS_PER_FILE then
      silenced = silenced + 1 -- a file of a million bad elements gives a bounded report
    else
      errors_here = errors_here + 1
      io.stderr:write('kluabench verify: ', where and (where .. ': ') or '', printable(detail, 400), '\n')
    end
  end

  local total = { ok = 0, mismatch = 0, error = 0, bundles = 0 }
  local done, err = pcall(function()
    for _, path in ipairs(files) do
      cli.stop_if_interrupted()
      errors_here, silenced = 0, 0
      local c = M.check_file(path, report)
      for k, v in pairs(c) do total[k] = total[k] + v end
      if silenced > 0 then
        io.stderr:write(string.format('kluabench verify: %s: %d more error%s not shown\n',
          printable(path, 300), silenced, silenced == 1 and '' or 's'))
      end
    end
    local ok, ferr = io.stdout:flush()
    if not ok then stdout_err = tostring(ferr) end
  end)
  if not done and not stdout_err then error(err, 0) end -- an interrupt, or a bug
  if stdout_err then
    io.stderr:write('kluabench verify: cannot write to stdout: ', stdout_err, '\n')
    return 1
  end
  io.stderr:write(string.format('kluabench verify: %d bundle%s: %d ok, %d mismatched, %d error%s\n',
    total.bundles, total.bundles == 1 and '' or 's', total.ok, total.mismatch, total.error,
    total.error == 1 and '' or 's'))
  return (total.mismatch > 0 or total.error > 0) and 1 or 0
end

M.run = M.main

return M
