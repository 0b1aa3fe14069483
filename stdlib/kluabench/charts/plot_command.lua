--- `kluabench plot RESULTS... -o chart.svg`: draw results as an SVG chart
-- (the drawing is kluabench.charts.plot; this is the command line around it).
local writer = require 'kluabench.record.writer'
local plot = require 'kluabench.charts.plot'
local cli = require 'kluabench.commands.helpers'
local files_mod = require 'kluabench.util.files'

local M = {}

M.USAGE = 'kluabench plot RESULTS... [--x FIELD] [--by FIELD[,FIELD]] [--y UNIT] [options] -o chart.svg'

M.help = [[
Draws benchmark results as an SVG chart: one line per group over the x
field, a mark per point with p20-p80 error bars, a title, axis labels and a
legend. When x has a single value (or with --bar) it draws bars instead.
The SVG opens in any browser.

A point of a record file is a measured point: its sessions (a sweep with
--runs N) make one mark, its median the mean of their medians (as the
results table and compare show it), its bars p20-p80 of their pooled
samples; a point no session of which passed is left out, with a note.
Every mark's tooltip (an SVG <title>) names its point (kernel, mode,
workload, provider, protocol), its median, sessions and samples.

RESULTS are record bundles (JSON or JSON Lines, as scripts write them and
import-liger makes them) or Liger-Kernel benchmark CSV files (a row is a
point). Several files overlay: each point's `run` field is its file's name
(the path where two names are the same), so `--by provider,run` draws one
line per provider and run, a colour per provider and a dash pattern per run.
Without `run` in --by, files split lines only where their points would share
a line and an x. Protocols that differ (do_bench and cold) split lines the
same way: a colour per provider, a dash pattern per protocol.

  -o, --output FILE   where to write the SVG ('-': stdout); required. One of
                      the RESULTS (or the samples file beside one) is refused,
                      compared by real path and inode: it is never written over
  --x FIELD           the x axis: a shape parameter (seq, hidden, ...) or
                      any field below (default: the one parameter that varies)
  --by FIELD[,FIELD]  one line per value of these fields (default: provider);
                      an unknown field is an error that lists the known ones
  --y UNIT            latency in ms (the default for times), us, ns or s;
                      or throughput: gbps (GB/s) or tflops (TFLOP/s), the
                      record's own at the median, else the workload's bytes
                      or flops over the median (Liger CSV rows: the kernel's
                      cost model), bars at the p80 and p20 times
  --filter KEY=V[,V]  keep the points whose KEY is one of the values;
                      repeatable (--filter mode=forward --filter seq=2048)
  --logx, --logy      logarithmic axes
  --bar               a bar chart (groups of bars per x value)
  --title TEXT        the title (default: kernel and mode)
  --width N, --height N  size in pixels (default 800 x 480)

FIELDS: kernel, mode, provider, protocol, metric, gpu, dtype, run, and the shape parameters
of the workload (hidden, seq, q_heads, kv_heads, ...; Liger's names such as
seq_len or T work too). Fields that differ between points but are neither x
nor --by split the lines, and a note on stderr says so.

Examples:
  kluabench plot results.jsonl --x seq --by provider --logx -o seq.svg
  kluabench plot all_benchmark_data.csv --filter kernel=llama4_rope \
      --filter mode=backward --x H -o liger.svg
  kluabench plot point.json --bar -o bars.svg
  kluabench plot base.jsonl new.jsonl --x seq --by provider,run --y gbps -o ab.svg

Exit status: 0 written, 1 unsuitable data (a file too large or not results),
2 usage error (a RESULTS file that does not exist, is no regular file or
cannot be opened too).]]


local SPEC = { logx = 'flag', logy = 'flag', bar = 'flag', help = 'flag', x = 'value', by = 'value',
  y = 'value', filter = 'list', title = 'value', output = 'value', width = 'value', height = 'value',
  aliases = { o = 'output', h = 'help' } }

local function usage_error(fmt, ...) return cli.usage_error('plot', fmt, ...) end

--- Reads the arguments: opts (filters as a list of parsed filters), files;
-- or nil, message.
function M.parse_args(args)
  local opts, files = cli.parse_args(args, SPEC)
  if not opts then return nil, files end
  local filters = {}
  for i, text in ipairs(opts.filter or {}) do
    local f, err = plot.parse_filter(text)
    if not f then return nil, err end
    filters[i] = f
  end
  opts.filter, opts.filters = nil, filters
  return opts, files
end

local function check_size(opts, key)
  if opts[key] == nil then return true end
  local n = tonumber(opts[key])
  if not n or n < 200 or n > 10000 or n ~= math.floor(n) then
    return nil, string.format("--%s must be a whole number of pixels from 200 to 10000, got '%s'",
      key, opts[key])
  end
  opts[key] = math.tointeger(n)
  return true
end

local function fail(fmt, ...)
  io.stderr:write('kluabench plot: ', cli.printable(string.format(fmt, ...), 400), '\n')
  return 1
end

-- The SVG to path ('-': stdout), whole or not at all (io.files): a
-- link is written through, a device in place, a replaced file keeps its mode.
local function write_output(path, svg)
  return files_mod.write_atomic(path, svg)
end

--- Runs the command; returns the exit status.
function M.run(args)
  local opts, files = M.parse_args(args or {})
  if not opts then return usage_error('%s', files) end
  if opts.help then return cli.help('plot') end
  if #files == 0 then return usage_error('no RESULTS file given') end
  if not opts.output then return usage_error('no output file: give -o chart.svg (or -o - for stdout)') end
  local unreadable = cli.check_inputs('plot', files)
  if unreadable then return unreadable end
  local fresh, why_not = writer.check_output('-o', opts.output, writer.file_inputs(files), true)
  if not fresh then return usage_error('%s', why_not) end
  if opts.y then
    local known = false
    for _, u in ipairs(plot.Y_UNITS) do known = known or u == opts.y end
    if not known then
      return usage_error("--y must be one of %s, got '%s'", table.concat(plot.Y_UNITS, ', '), opts.y)
    end
  end
  for _, key in ipairs { 'width', 'height' } do
    local ok, err = check_size(opts, key)
    if not ok then return usage_error('%s', err) end
  end
  local by = nil
  if opts.by then
    by = {}
    for f in opts.by:gmatch('[^,]+') do by[#by + 1] = f end
  end

  local points, read_notes = {}, {}
  local runs = plot.run_names(files)
  for i, path in ipairs(files) do
    cli.stop_if_interrupted()
    local pts, notes = plot.read(path, runs[i])
    if not pts then return fail('%s', notes) end
    table.move(pts, 1, #pts, #points + 1, points)
    table.move(notes, 1, #notes, #read_notes + 1, read_notes)
  end
  for _, note in ipairs(read_notes) do io.stderr:write('kluabench plot: note: ', cli.printable(note, 400), '\n') end
  local total = #points
  points = plot.filter(points, opts.filters)
  if #points == 0 then
    return fail('no data points%s', total > 0 and string.format(' left after the filters (of %d read)', total) or '')
  end
  local svg, info, why = plot.chart(points, { x = opts.x, by = by, y = opts.y, logx = opts.logx,
    logy = opts.logy, bar = opts.bar, title = opts.title, width = opts.width, height = opts.height })
  if not svg then
    if why == 'usage' then return usage_error('%s', info) end
    return fail('%s', info)
  end
  for _, note in ipairs(info.notes) do io.stderr:write('kluabench plot: note: ', note, '\n') end
  local ok, err = write_output(opts.output, svg)
  if not ok then return fail('cannot write %s', err) end
  if opts.output ~= '-' then
    io.stderr:write(string.format('kluabench plot: wrote %s (%s chart, %d %s, %d points)\n', opts.output,
      info.kind, info.series, info.kind == 'bar' and 'series' or (info.series == 1 and 'line' or 'lines'),
      info.points))
  end
  return 0
end

M.main = M.run

return M
