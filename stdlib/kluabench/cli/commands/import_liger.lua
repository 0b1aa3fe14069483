--- `kluabench import-liger CSV... [--out DIR | --jsonl FILE]`: turn the
-- rows of Liger-Kernel benchmark CSV files into kernelindex record bundles.
local output = require 'kluabench.report'
local liger = require 'kluabench.record.liger'

local M = {}

M.USAGE = 'kluabench import-liger CSV... [--out DIR | --jsonl FILE]'

M.help = [[
Reads the CSV that Liger-Kernel's benchmark scripts write (header
kernel_name,kernel_provider,...,liger_version, e.g. Liger's
benchmark/data/all_benchmark_data.csv) and makes one record bundle per row
(docs/RECORDS.md): speed rows become latency records (ns = round(ms x 1e6)),
memory rows records in their own unit (MB). The input is only parsed, never
executed.

  --out DIR     write one pretty JSON file per row into DIR (created when
                missing), named after the run's metadata.name: DIR/NAME.json.
                Names are cut at 100 characters, so rows that differ only
                beyond that get NAME-2.json, NAME-3.json, ... in row order.
                Files are written atomically.
  --jsonl FILE  append every bundle as one line to FILE ('-': stdout)
  (neither)     JSON Lines on stdout

A row that cannot be converted is reported on stderr as
"kluabench import-liger: FILE:LINE: why" and skipped; the others are written.

Exit status: 0 all rows imported, 1 a file unreadable or a row skipped,
2 usage error.]]

local cli = require 'kluabench.cli'

local function usage_error(fmt, ...) return cli.usage_error('import-liger', fmt, ...) end

local function fail(fmt, ...)
  io.stderr:write('kluabench import-liger: ', cli.printable(string.format(fmt, ...), 400), '\n')
end

-- Options: returns {out = DIR, jsonl = FILE, help}, list of CSV paths; or nil, msg.
local function parse(args)
  return cli.parse_args(args, { out = 'value', jsonl = 'value', help = 'flag', aliases = { h = 'help' } })
end

--- Runs the command on the words after "import-liger"; returns the exit status.
function M.main(args)
  local opts, files = parse(args or {})
  if not opts then return usage_error('%s', files) end
  if opts.help then return cli.help('import-liger') end
  if #files == 0 then return usage_error('no CSV file given') end
  if opts.out and opts.jsonl then return usage_error('give --out or --jsonl, not both') end
  if opts.out then
    local ok, err = output.mkdir_p(opts.out)
    if not ok then
      fail('%s', err)
      return 1
    end
  end
  local jsonl = opts.jsonl or (not opts.out and '-') or nil

  local status, imported, used = 0, 0, {}
  for _, path in ipairs(files) do
    local rows, err = liger.read(path)
    if not rows then
      fail('%s', err)
      status = 1
    else
      for _, row in ipairs(rows) do
        cli.stop_if_interrupted()
        local bundle, berr = liger.row_to_bundle(row)
        if not bundle then
          fail('%s:%d: %s', path, row.line, berr)
          status = 1
        else
          local ok, werr
          if jsonl then
            ok, werr = output.append_jsonl(jsonl, bundle)
          else
            local name = bundle.run.metadata.name
            local n = (used[name] or 0) + 1
            used[name] = n
            local file = string.format('%s/%s%s.json', opts.out, name, n > 1 and ('-' .. n) or '')
            local text
            text, werr = output.encode_pretty(bundle)
            if text then ok, werr = output.write_atomic(file, text) end
          end
          if not ok then
            fail('%s', werr)
            return 1
          end
          imported = imported + 1
        end
      end
    end
  end
  io.stderr:write(string.format('kluabench import-liger: %d bundle%s written%s\n', imported,
    imported == 1 and '' or 's', opts.out and (' to ' .. opts.out) or
    (jsonl ~= '-' and (' to ' .. jsonl) or '')))
  return status
end

M.run = M.main

return M
