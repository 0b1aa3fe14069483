--- The harness's output formats, one table: what --format offers and what each does with the
-- bundles of a sweep. A new format is an entry here (and, for a view of its own, a function of
-- this layer); the harness (kluabench.suite) reads these fields and names no format.
--
-- A format:
--   records  where the bundles go as they are made, as JSON Lines: 'results' (--out, else a new
--            file of the results folder; the table is then the format's output, on stdout),
--            'stdout' (--out, else stdout), or nil (kept until the end, for `write`)
--   view     the table of the finished points: 'table' or 'markdown'
--   samples  false when the format keeps no raw samples (nothing written beside it)
--   write    for a whole-file format: write(bundles, out, samples, claim) -> dest, notes (a list
--            of lines for stderr), or nil and the error; out is --out or '-' (stdout)
local M = {}

local writer = require 'kluabench.record.writer'
local liger = require 'kluabench.liger'
local results = require 'kluabench.table'
local files = require 'kluabench.util.files'

--- The names in the order --format lists them (the first is the default).
M.NAMES = { 'table', 'markdown', 'jsonl', 'kernelindex', 'liger-csv' }

M.FORMATS = {
  table = { records = 'results', view = 'table' },
  markdown = { records = 'results', view = 'markdown' },
  jsonl = { records = 'stdout', view = 'table' },
  kernelindex = {
    view = 'table',
    -- one pretty JSON document of every bundle (writer.write_pretty), the samples beside it
    write = function(bundles, out, samples, claim)
      local ok, where, why = writer.write_pretty(out, bundles, samples, { claim = claim })
      if not ok then return nil, tostring(where) end
      return where, { why }
    end,
  },
  ['liger-csv'] = {
    view = 'table',
    samples = false, -- Liger's CSV carries no samples
    write = function(bundles, out, _, claim)
      local text, left_out = liger.csv_of_bundles(bundles)
      if not text then return nil, left_out end
      local notes = {}
      if left_out > 0 then
        notes[#notes + 1] = string.format('%d bundle%s whose status is not passed %s not in the Liger CSV (it has '
          .. 'no column to say why; --format jsonl keeps every bundle)', left_out, left_out == 1 and '' or 's',
          left_out == 1 and 'is' or 'are')
      end
      -- the check that nobody wrote it since the claim and the write, under one lock
      return writer.locked(out, function()
        if claim then
          local dest, _, why = writer.destination(claim, out)
          out = dest
          notes[#notes + 1] = why
        end
        local ok, err = files.write_atomic(out, text)
        if not ok then return nil, tostring(err) end
        return out, notes
      end)
    end,
  },
}

--- The table of the finished points as the format shows it (opts as report.results_table's).
function M.view(name, bundles, opts)
  if M.FORMATS[name].view == 'markdown' then return results.results_markdown(bundles, opts) end
  return results.results_table(bundles, opts)
end

return M
