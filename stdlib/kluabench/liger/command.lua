--- `kluabench import-liger CSV... [--out DIR | --jsonl FILE] [--keep]`: the
-- rows of Liger-Kernel benchmark CSV files as kernelindex record bundles,
-- built the way kernelindex's own Liger importer builds them.
local fs = require 'kluabench.util.files'
local liger = require 'kluabench.liger'
local writer = require 'kluabench.record.writer'
local whole_file = require 'kluabench.record.whole_file'
local result = require 'kluabench.result'

local M = {}

M.USAGE = 'kluabench import-liger CSV... [-o/--out DIR | --jsonl FILE] [--speed-only] [--keep] [--liger-commit SHA]'

M.help = [[
Reads the CSV that Liger-Kernel's benchmark scripts write (header
kernel_name,kernel_provider,...,liger_version, e.g. Liger's
benchmark/data/all_benchmark_data.csv) and makes one record bundle per row of
the kernels kluabench reproduces (llama4_rope and rope), exactly as
kernelindex's Liger importer does (docs/RECORDS.md): the same OperationSpec,
WorkloadCase, ImplementationRevision, SoftwareProject, BenchmarkProtocol,
ExecutionEnvironment and BenchmarkRun, and so the same digests; a speed row
becomes a latency record (ns = round(ms x 1e6)). The input is only parsed,
never executed.

Liger's memory rows (metric_name memory: the peak MB of a pass), which
kernelindex's importer skips, are kept as runs of our own: the same workload,
implementation and environment documents as the speed rows, our own protocol
of Liger's memory probe, the run labelled not_reproduced, its figures as
memory measurements in MB, so that compare and plot line our --metric memory
runs up with them. The speed rows are exactly the importer's either way;
--speed-only skips the memory rows as the importer does.

Rows kernelindex's importer skips are otherwise skipped and counted by reason
on stderr: kernels it does not curate (and those it curates that kluabench
does not reproduce), unknown providers, modes and GPUs, and a row repeating a
run already imported (the same externalId, in any of the files). With --keep,
rows of GPUs it does not know are kept as valid documents of our own,
labelled not_reproduced (their digests are kluabench's, not kernelindex's).

  -o, --out DIR        write one pretty JSON file per row into DIR (created when
                       missing), named after the run's metadata.name:
                       DIR/NAME.json; a file there that holds another run is
                       never written over (NAME-2.json, ... then), one of
                       the same run is replaced. Files are written
                       atomically.
  --jsonl FILE         append every bundle as one line to FILE ('-': stdout);
                       one of the CSV files is refused (a usage error)
  (neither)            JSON Lines on stdout
  --speed-only         skip the memory rows, as kernelindex's importer does
  --keep               keep rows of unknown GPUs as documents of our own
  --liger-commit SHA   the Liger-Kernel commit the OperationSpecs cite (metadata
                       only; default the CSV's commit when the schemas were
                       copied, liger/init.lua's COMMIT)

Configs in either spelling import: the 2025 CSV's (num_q_heads, num_kv_heads)
and that of Liger-Kernel 0.8's harness (num_attention_heads,
num_key_value_heads, bsz). kernelindex's RoPE workloads are of batch 1: a row
whose bsz is not 1 binds none of them. A row of a reproduced kernel whose
config does not bind the kernel's axes (kernelindex's importer skips it as an
unknown config; also a row of Liger's model-config sweep) is named on stderr as
"kluabench import-liger: FILE:LINE: skipped: why" and counted. A row that
cannot be converted (a value that is not a number, a time or UTF-8, a row of
the wrong width) is reported as "kluabench import-liger: FILE:LINE: why" and
left out; the others are written. A row whose p20 is above its p80 is
imported as it is, with a warning.

Exit status: 0 all rows imported or skipped as kernelindex skips them, 1 a file
that is not a Liger CSV or a row that cannot be converted, 2 usage error (a CSV
that does not exist, is no regular file or cannot be opened too: then nothing
is written, not even --out's folder).]]

local cli = require 'kluabench.commands.helpers'
local json = require 'kluabench.util.json'
local core = require 'kluabench.core'

local function usage_error(fmt, ...) return cli.usage_error('import-liger', fmt, ...) end

local function say(fmt, ...)
  io.stderr:write('kluabench import-liger: ', cli.printable(string.format(fmt, ...), 400), '\n')
end

-- Reasons of a skip that mean the row is broken, not merely outside what
-- kernelindex imports: named one by one, and exit status 1.
local BROKEN = { invalid = true }
-- Skips kernelindex's importer makes too (exit status 0) whose rows are still
-- named, since a row of a kernel we reproduce was meant to import.
local NAMED = { unknown_config = true }

-- The file of a run (its externalId: id) in dir, named after the run (name): DIR/NAME.json, or
-- NAME-2.json, ... when that one holds another run or was written in this import (taken): another
-- run's file is never written over; the same run's is replaced. A name that is not a regular file
-- (a link, a directory) is passed over.
local function out_path(dir, name, id, taken)
  for n = 1, 100000 do
    local path = string.format('%s/%s%s.json', dir, name, n > 1 and ('-' .. n) or '')
    if not taken[path] then
      local st, _, errno = core.stat(path, false)
      if not st and errno == 2 then return path end
      if st and st.type == 'file' then
        local old = json.decode(fs.read_file(path) or '')
        if type(old) == 'table' and result.session(old).external_id == id then return path end
      end
    end
  end
  return nil, string.format('%s: no free name for %s', dir, name)
end

-- Options: returns {out = DIR, jsonl = FILE, keep, ['speed-only'], help, ['liger-commit']}, list of CSV paths;
-- or nil, msg.
local function parse(args)
  return cli.parse_args(args, { out = 'value', jsonl = 'value', keep = 'flag', ['speed-only'] = 'flag',
    ['liger-commit'] = 'value', help = 'flag', aliases = { h = 'help', o = 'out' } })
end

--- Runs the command on the words after "import-liger"; returns the exit status.
function M.main(args)
  local opts, files = parse(args or {})
  if not opts then return usage_error('%s', files) end
  if opts.help then return cli.help('import-liger') end
  if #files == 0 then return usage_error('no CSV file given') end
  local unreadable = cli.check_inputs('import-liger', files)
  if unreadable then return unreadable end
  if opts.out and opts.jsonl then return usage_error('give --out or --jsonl, not both') end
  local fresh, why_not = writer.check_output('--jsonl', opts.jsonl, writer.file_inputs(files, true))
  if not fresh then return usage_error('%s', why_not) end
  local commit = opts['liger-commit']
  if commit and not commit:match('^%x+$') then
    return usage_error("option '--liger-commit' needs a commit SHA (hexadecimal), got '%s'", commit)
  end
  if opts.out then
    local ok, err = fs.mkdir_p(opts.out)
    if not ok then
      say('%s', err)
      return 1
    end
  end
  local jsonl = opts.jsonl or (not opts.out and '-') or nil

  local status, imported, taken, skipped = 0, 0, {}, {}
  local runs = {} -- externalIds imported: kernelindex's importer imports a run once (its duplicateRows)
  for _, path in ipairs(files) do
    local rows, err = liger.read(path)
    if not rows then
      say('%s', err)
      status = 1
    else
      for _, row in ipairs(rows) do
        cli.stop_if_interrupted()
        local bundle, why, berr = liger.row_to_bundle(row, { keep = opts.keep, memory = not opts['speed-only'],
          commit = commit and commit:lower() })
        if bundle then
          local id = result.session(bundle).external_id
          if runs[id] then
            bundle, why = nil, 'duplicate_row'
          else
            runs[id] = true
          end
        end
        if not bundle then
          skipped[why] = (skipped[why] or 0) + 1
          if BROKEN[why] then
            say('%s:%d: %s', path, row.line, berr)
            status = 1
          elseif NAMED[why] then
            say('%s:%d: skipped: %s', path, row.line, berr)
          end
        else
          local warning = liger.row_warning(row)
          if warning then say('%s:%d: warning: %s', path, row.line, warning) end
          local ok, werr
          if jsonl then
            ok, werr = writer.append(jsonl, bundle)
          else
            local s = result.session(bundle)
            local path
            path, werr = out_path(opts.out, s.name, s.external_id, taken)
            if path then
              taken[path] = true
              ok, werr = whole_file.write_pretty(path, { bundle })
            end
          end
          if not ok then
            say('%s', werr)
            return 1
          end
          imported = imported + 1
        end
      end
    end
  end
  local reasons = {}
  for why in pairs(skipped) do reasons[#reasons + 1] = why end
  table.sort(reasons)
  for _, why in ipairs(reasons) do
    say('skipped %d row%s: %s', skipped[why], skipped[why] == 1 and '' or 's', liger.SKIP[why] or why)
  end
  io.stderr:write(string.format('kluabench import-liger: %d bundle%s written%s\n', imported,
    imported == 1 and '' or 's', opts.out and (' to ' .. opts.out) or
    (jsonl ~= '-' and (' to ' .. jsonl) or '')))
  return status
end

M.run = M.main

return M
