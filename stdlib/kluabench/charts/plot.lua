--- Charts of benchmark results as SVG, written by plain Lua (no plotting
-- library): a line chart with one line per group (median, with p20/p80
-- error bars), or a bar chart when there is a single x value.
--
--   local plot = require 'kluabench.charts.plot'
--   local points = assert(plot.read('results.jsonl'))
--   local svg = assert(plot.chart(points, { x = 'seq', by = 'provider', logx = true }))
--   io.open('chart.svg', 'w'):write(svg):close()
--
-- Points come from record bundles (JSON, JSON Lines), read through the one result model
-- (kluabench.result.points: the sessions of one point make one chart point, its aggregate), and
-- from Liger-Kernel's benchmark CSV (a row is a point). A chart point is a flat table:
--   kernel, mode, provider, protocol (do_bench, cold, ...), metric ("speed" or e.g. "memory"),
--   unit ("ms", "MB"), gpu, dtype, id (the workload's case key), params = {hidden = 512, ...},
--   y50, y20, y80 (the point's median, the mean of its session medians, and the p20/p80 of its
--   pooled samples, in unit), sessions, passed (session counts; nil for a CSV row), n (samples),
--   x_labels = {param = "words"} (axis titles the source knows, e.g. Liger's),
--   bytes, flops (the workload's cost of one call, when known),
--   gbps, tflops (the record's own throughput at the median, when it has one),
--   run (the name of the file the point came from: M.read's run name)
-- Every mark of a chart carries its point in an SVG <title> (M.tooltip): what was drawn, readable
-- by a person hovering and by a test.
local names = require 'kluabench.record.names'
local operation = require 'kluabench.record.operation'
local reader = require 'kluabench.record.reader'
local liger = require 'kluabench.liger'
local files = require 'kluabench.util.files'
local args = require 'kluabench.util.args'
local result = require 'kluabench.result'

local M = {}

---------------------------------------------------------------------------
-- Reading results
---------------------------------------------------------------------------

local function ns_to_ms(v) return type(v) == 'number' and v / 1e6 or nil end

--- The chart point of a measured point (one of result.points), or nil and why when no session of
-- it passed (nothing measured to draw).
--
-- Its y values are the point's aggregate: the mean of its session medians and the p20/p80 of its
-- pooled samples (in ms), or the memory figures of a memory point (in its unit).
--
-- @signature plot.point_of(point) -> chart point | nil, message
-- @example
--   local x = kb.randn({4096}, "f32", 1)
--   local P = kb.do_bench.do_bench_protocol{rep_ms = 5}
--   local bs = {}
--   for i = 1, 3 do bs[i] = record.from_result{kernel = "add", mode = "forward", provider = "add_", dtype = "f32",
--     session = {index = i, count = 3}, result = P:run(function() x:add_(1) end)} end
--   local p = plot.point_of(result.points(bs)[1])
--   print(p.provider, p.y50, p.sessions) -- add_  (the mean of 3 medians)  3
function M.point_of(rp)
  args.check('plot.point_of', 1, rp, 'table', 'point (result.points)')
  local p = { kernel = rp.kernel, mode = rp.mode, provider = rp.provider, protocol = rp.protocol, dtype = rp.dtype,
    id = rp.id, gpu = rp.device, params = {}, sessions = #(rp.sessions or {}), passed = #(rp.passed or {}),
    n = rp.n, bytes = rp.bytes, flops = rp.flops, gbps = rp.gbps, tflops = rp.tflops }
  for k, v in pairs(rp.params or {}) do p.params[k] = v end
  if rp.metric == 'memory' then
    p.metric, p.unit = 'memory', rp.memory_unit == 'mb' and 'MB' or rp.memory_unit
    p.y50, p.y20, p.y80 = rp.memory_median, rp.memory_p20, rp.memory_p80
  else
    p.metric, p.unit = 'speed', 'ms'
    p.y50, p.y20, p.y80 = ns_to_ms(rp.median_ns), ns_to_ms(rp.p20_ns), ns_to_ms(rp.p80_ns)
  end
  if type(p.y50) ~= 'number' then
    return nil, string.format('no session passed (status %s): nothing measured to draw', tostring(rp.status))
  end
  local first = rp.sessions and rp.sessions[1]
  local ann = first and type(first.evidence) == 'table' and first.evidence.annotations
  if type(ann) == 'table' and type(ann.liger_x_name) == 'string' and ann.liger_x_label then
    p.x_labels = { [liger.param_name(ann.liger_x_name)] = ann.liger_x_label }
  end
  return p
end

--- The chart points of record bundles: one per measured point (result.points), its sessions
-- aggregated; notes say which points were left out (no session passed).
--
-- @signature plot.points_from_bundles(bundles) -> points, notes
-- @example
--   local x = kb.randn({4096}, "f32", 1)
--   local r = kb.do_bench.do_bench_protocol{rep_ms = 5}:run(function() x:add_(1) end)
--   local bundle = record.from_result{kernel = "add", mode = "forward", provider = "add_", dtype = "f32", result = r}
--   local points, notes = plot.points_from_bundles({bundle})
--   print(#points, #notes) --> 1  0
function M.points_from_bundles(bundles)
  args.check('plot.points_from_bundles', 1, bundles, 'table', 'list of bundles')
  local points, notes, left = {}, {}, {}
  for _, rp in ipairs(result.points(bundles)) do
    local p = M.point_of(rp)
    if p then
      points[#points + 1] = p
    else
      left[#left + 1] = string.format('%s (%s, %s)', result.label_of({}, rp), tostring(rp.provider),
        tostring(rp.status))
    end
  end
  if #left > 0 then
    notes[1] = string.format('%d point%s left out: no session passed: %s', #left, #left == 1 and '' or 's',
      table.concat(left, '; ', 1, math.min(#left, 5)) .. (#left > 5 and '; ...' or ''))
  end
  return points, notes
end

--- The chart point of one record bundle (a point of one session), or nil and a message.
--
-- @signature plot.point_from_bundle(bundle) -> point | nil, message
-- @example
--   local x = kb.randn({4096}, "f32", 1)
--   local r = kb.do_bench.do_bench_protocol{rep_ms = 5}:run(function() x:add_(1) end)
--   local bundle = record.from_result{kernel = "add", mode = "forward", provider = "add_", dtype = "f32", result = r}
--   local p = plot.point_from_bundle(bundle)
--   print(p.provider, p.y50, p.unit)
function M.point_from_bundle(b)
  if not reader.is_bundle(b) then return nil, 'not a record bundle (no run)' end
  return M.point_of(result.points({ b })[1])
end

--- The point of one row of liger.parse.
--
-- The point of one parsed Liger CSV row (see liger.parse), or nil and a message. A row is a
-- point: no sessions, no sample count; its protocol is the one result.lua names Liger's harness by
-- (do_bench, or memory for a memory row), so that a CSV and its import-liger bundles plot alike.
--
-- @signature plot.point_from_liger_row(row) -> point | nil, message
-- @example
--   local text = table.concat(liger.HEADER, ",") .. "\n"
--     .. "llama4_rope,liger,forward,speed,ms,H,hidden size,512,0.05,0.0485,0.052,"
--     .. '"{""dtype"": ""torch.bfloat16"", ""seq_len"": 2048, ""num_q_heads"": 32, ""num_kv_heads"": 8}",'
--     .. "NVIDIA H100 80GB HBM3,2025-08-07 21:42:00,0.6.1\n"
--   local p = plot.point_from_liger_row(assert(liger.parse(text))[1])
--   print(p.provider, p.params.hidden, p.y50) --> liger  512  0.05
function M.point_from_liger_row(row)
  args.check('plot.point_from_liger_row', 1, row, 'table', 'Liger CSV row')
  local p, err = liger.plot_point(row)
  if not p then return nil, err end
  p.protocol = p.protocol or (p.metric == 'memory' and 'memory' or 'do_bench')
  if not p.id and next(p.params) then p.id = operation.case_key { axes = p.params, dtype = p.dtype or '?' } end
  return p
end

local function is_liger_csv(text)
  local first = text:gsub('^\239\187\191', ''):match('^[^\r\n]*') or ''
  return first:find('kernel_name', 1, true) ~= nil and first:find(',', 1, true) ~= nil
end

-- The name of a run: the file's name without its directory.
local function basename(path) return (tostring(path):match('([^/]+)/*$') or tostring(path)) end

--- The run names of several files: each file's name, or its path where two files share a name.
--
-- @signature plot.run_names(paths) -> {names}
-- @example
--   print(table.concat(plot.run_names({"a/x.jsonl", "b/x.jsonl", "y.csv"}), " "))
function M.run_names(paths)
  args.check('plot.run_names', 1, paths, 'table', 'list of paths')
  local count, out = {}, {}
  for _, path in ipairs(paths) do count[basename(path)] = (count[basename(path)] or 0) + 1 end
  for i, path in ipairs(paths) do out[i] = count[basename(path)] > 1 and path or basename(path) end
  return out
end

-- The points of one file, without their run name, and notes (see M.read).
local function read_points(path)
  local text, err = files.read_text(path)
  if not text then return nil, err end
  local points = {}
  if is_liger_csv(text) then
    local rows, perr = liger.parse(text)
    if not rows then return nil, path .. ': ' .. perr end
    for _, row in ipairs(rows) do
      local p, rerr = M.point_from_liger_row(row)
      if not p then return nil, string.format('%s:%d: %s', path, row.line or 0, rerr) end
      points[#points + 1] = p
    end
    return points, {}
  end
  local bundles, lines = reader.parse(text, path)
  if not bundles then return nil, lines end
  for i, b in ipairs(bundles) do
    local ok, why = pcall(result.session, b)
    if not ok then return nil, string.format('%s:%d: %s', path, lines[i], tostring(why)) end
  end
  local notes
  points, notes = M.points_from_bundles(bundles)
  for i, n in ipairs(notes) do notes[i] = path .. ': ' .. n end
  return points, notes
end

--- The points of a results file: record bundles (JSON, JSON Lines) or Liger CSV, told apart by
-- content.
--
-- The points of bundles are the measured points of kluabench.result (the sessions of a --runs N
-- sweep make one point, its aggregate); a CSV row is a point. See the module's comment for a
-- point's fields; run is the given name, else the file's name without its directory, so that
-- several files overlay (--by provider,run). notes: what was left out (points no session of which
-- passed).
--
-- @signature plot.read(path [, run]) -> points, notes | nil, message
-- @example
--   local x = kb.randn({4096}, "f32", 1)
--   local r = kb.do_bench.do_bench_protocol{rep_ms = 5}:run(function() x:add_(1) end)
--   local bundle = record.from_result{kernel = "add", mode = "forward", provider = "add_", dtype = "f32", result = r}
--   local dir = os.tmpname(); os.remove(dir); assert(kb.mkdir(dir))
--   assert(writer.append(dir .. "/results.jsonl", bundle))
--   local points = assert(plot.read(dir .. "/results.jsonl"))
--   kb.remove_tree(dir)
function M.read(path, run)
  local points, notes = read_points(path)
  if not points then return nil, notes end
  run = run or basename(path)
  for _, p in ipairs(points) do p.run = run end
  return points, notes
end

---------------------------------------------------------------------------
-- Fields, filters, groups
---------------------------------------------------------------------------

local TOP_FIELDS = { kernel = true, mode = true, provider = true, protocol = true, metric = true, unit = true,
  gpu = true, dtype = true, run = true }
local FIELD_ALIASES = { operation = 'mode', kernel_operation_mode = 'mode', kernel_provider = 'provider',
  kernel_name = 'kernel', impl = 'provider', gpu_name = 'gpu' }

--- Our name of a field: operation -> mode, seq_len or T -> seq.
--
-- @signature plot.field_name(name) -> name
-- @example
--   print(plot.field_name("T")) --> seq
function M.field_name(name)
  args.check('plot.field_name', 1, name, 'string', 'field name')
  return FIELD_ALIASES[name] or (TOP_FIELDS[name] and name) or liger.param_name(name)
end

--- A field of a point: kernel, mode, provider, metric, unit, gpu, dtype or a parameter.
--
-- @signature plot.field(point, name) -> value
-- @example
--   local function pt(provider, seq, ms) -- a point as plot.read makes it
--     return {kernel = "rope", mode = "forward", provider = provider, gpu = "H200", params = {seq = seq}, y50 = ms}
--   end
--   local points = {pt("fused", 1024, 0.03), pt("fused", 2048, 0.05), pt("liger", 2048, 0.09)}
--   print(plot.field(points[1], "seq_len")) --> 1024
function M.field(p, name)
  args.check('plot.field', 1, p, 'table', 'point')
  args.check('plot.field', 2, name, 'string', 'field name')
  name = M.field_name(name)
  if TOP_FIELDS[name] then return p[name] end
  return p.params[name]
end

local function value_text(v)
  if type(v) == 'number' then return names.format_value(v) end
  return tostring(v)
end

--- A filter from its command-line form.
--
-- Parses "key=v1,v2" into {key = field name, values = {v1, v2}}, or nil, message.
--
-- @signature plot.parse_filter("KEY=V1,V2") -> filter | nil, message
-- @example
--   local f = plot.parse_filter("seq=2048,4096")
function M.parse_filter(s)
  args.check('plot.parse_filter', 1, s, 'string', 'filter text "KEY=V1,V2"')
  local k, v = tostring(s):match('^%s*([^=]-)%s*=%s*(.-)%s*$')
  if not k or k == '' or v == '' then return nil, string.format("bad filter '%s' (expected KEY=VALUE)", s) end
  local values = {}
  for part in v:gmatch('[^,]+') do values[#values + 1] = part end
  return { key = M.field_name(k), values = values }
end

local function matches(p, f)
  local v = M.field(p, f.key)
  if v == nil then return false end
  for _, want in ipairs(f.values) do
    if value_text(v) == want or (type(v) == 'number' and tonumber(want) == v) then return true end
  end
  return false
end

--- The points that match every filter {key, values}.
--
-- @signature plot.filter(points, filters) -> points
-- @example
--   local function pt(mode, seq, ms) -- a point as plot.read makes it
--     return {kernel = "rope", mode = mode, provider = "fused", gpu = "H200", params = {seq = seq}, y50 = ms}
--   end
--   local points = {pt("forward", 1024, 0.03), pt("forward", 2048, 0.05), pt("backward", 2048, 0.06)}
--   local fwd = plot.filter(points, {plot.parse_filter("mode=forward")})
--   print(#fwd) --> 2
function M.filter(points, filters)
  args.check('plot.filter', 1, points, 'table', 'list of points')
  args.check('plot.filter', 2, filters, 'table|nil', 'list of filters')
  local out = {}
  for _, p in ipairs(points) do
    local keep = true
    for _, f in ipairs(filters or {}) do
      if not matches(p, f) then keep = false break end
    end
    if keep then out[#out + 1] = p end
  end
  return out
end

--- The distinct values of a field, in order of first appearance.
--
-- @signature plot.distinct(points, name) -> {values}
-- @example
--   local function pt(provider, seq, ms) -- a point as plot.read makes it
--     return {kernel = "rope", mode = "forward", provider = provider, gpu = "H200", params = {seq = seq}, y50 = ms}
--   end
--   local points = {pt("fused", 1024, 0.03), pt("fused", 2048, 0.05), pt("liger", 2048, 0.09)}
--   local seqs = plot.distinct(points, "seq")
--   print(table.concat(seqs, " ")) --> 1024 2048
function M.distinct(points, name)
  args.check('plot.distinct', 1, points, 'table', 'list of points')
  args.check('plot.distinct', 2, name, 'string', 'field name')
  local seen, out = {}, {}
  for _, p in ipairs(points) do
    local v = M.field(p, name)
    if v ~= nil and not seen[v] then
      seen[v] = true
      out[#out + 1] = v
    end
  end
  return out
end

--- Every field some point has, sorted.
--
-- Every field that some point has: the top-level ones and all parameters, sorted.
--
-- @signature plot.fields(points) -> {names}
-- @example
--   local function pt(provider, seq, ms) -- a point as plot.read makes it
--     return {kernel = "rope", mode = "forward", provider = provider, gpu = "H200", params = {seq = seq}, y50 = ms}
--   end
--   local points = {pt("fused", 1024, 0.03), pt("fused", 2048, 0.05), pt("liger", 2048, 0.09)}
--   print(table.concat(plot.fields(points), ", ")) --> gpu, kernel, mode, provider, seq
function M.fields(points)
  args.check('plot.fields', 1, points, 'table', 'list of points')
  local seen, out = {}, {}
  for _, p in ipairs(points) do
    for k in pairs(TOP_FIELDS) do
      if p[k] ~= nil and not seen[k] then seen[k], out[#out + 1] = true, k end
    end
    for k in pairs(p.params) do
      if not seen[k] then seen[k], out[#out + 1] = true, k end
    end
  end
  table.sort(out)
  return out
end

local function missing_somewhere(points, f)
  for _, p in ipairs(points) do
    if M.field(p, f) == nil then return true end
  end
  return false
end

--- The fields whose value differs between points (or that some lack).
--
-- @signature plot.varying(points) -> {names}
-- @example
--   local function pt(provider, seq, ms) -- a point as plot.read makes it
--     return {kernel = "rope", mode = "forward", provider = provider, gpu = "H200", params = {seq = seq}, y50 = ms}
--   end
--   local points = {pt("fused", 1024, 0.03), pt("fused", 2048, 0.05), pt("liger", 2048, 0.09)}
--   print(table.concat(plot.varying(points), ", ")) --> provider, seq
function M.varying(points)
  args.check('plot.varying', 1, points, 'table', 'list of points')
  local out = {}
  for _, f in ipairs(M.fields(points)) do
    if #M.distinct(points, f) > 1 or missing_somewhere(points, f) then out[#out + 1] = f end
  end
  return out
end

--- The value of a field when every point has the same one.
--
-- @signature plot.common(points, name) -> value | nil
-- @example
--   local function pt(provider, seq, ms) -- a point as plot.read makes it
--     return {kernel = "rope", mode = "forward", provider = provider, gpu = "H200", params = {seq = seq}, y50 = ms}
--   end
--   local points = {pt("fused", 1024, 0.03), pt("fused", 2048, 0.05), pt("liger", 2048, 0.09)}
--   print(plot.common(points, "gpu")) --> H200
function M.common(points, f)
  args.check('plot.common', 1, points, 'table', 'list of points')
  args.check('plot.common', 2, f, 'string', 'field name')
  local d = M.distinct(points, f)
  if #d == 1 and not missing_somewhere(points, f) then return d[1] end
  return nil
end

local function sort_values(vs)
  local numeric = true
  for _, v in ipairs(vs) do if type(v) ~= 'number' then numeric = false end end
  if numeric then table.sort(vs) end
  return vs, numeric
end

-- True when two points of different runs have the same values of `keys`
-- and of x (repeats within one run stay "the last one is drawn").
local function runs_collide(points, x, keys)
  local seen = {}
  for _, p in ipairs(points) do
    local xv = M.field(p, x)
    if xv ~= nil then
      local parts = { value_text(xv) }
      for i, f in ipairs(keys) do
        local v = M.field(p, f)
        parts[i + 1] = v == nil and '-' or value_text(v)
      end
      local k = table.concat(parts, '\0')
      if seen[k] ~= nil and seen[k] ~= p.run then return true end
      seen[k] = p.run
    end
  end
  return false
end

--- Series of points by the by fields (and the other names that differ), sorted by x.
--
-- Groups points into series for a chart. opts.x (field), opts.by (field or list of fields). Fields
-- other than x and by whose values differ are added to the grouping, so that no two points of a
-- series share an x (they are returned as `split`; `run` only where it is needed for that). Returns
-- {series = {{name, key, points, values = {field = value}}}, xs (sorted distinct x values),
-- numeric_x, split = {fields}, duplicates = count}.
--
-- @signature plot.group(points, {x, by}) -> groups
-- @example
--   local function pt(provider, seq, ms) -- a point as plot.read makes it
--     return {kernel = "rope", mode = "forward", provider = provider, gpu = "H200", params = {seq = seq}, y50 = ms}
--   end
--   local points = {pt("fused", 1024, 0.03), pt("fused", 2048, 0.05), pt("liger", 2048, 0.09)}
--   local g = plot.group(points, {x = "seq", by = "provider"})
--   for _, s in ipairs(g.series) do print(s.name, #s.points) end
function M.group(points, opts)
  args.check('plot.group', 1, points, 'table', 'list of points')
  args.check('plot.group', 2, opts, 'table', 'table {x, by}')
  local x = M.field_name(opts.x)
  local by = {}
  for i, f in ipairs(type(opts.by) == 'table' and opts.by or { opts.by or 'provider' }) do
    by[i] = M.field_name(f)
  end
  local used = { [x] = true }
  for _, f in ipairs(by) do used[f] = true end
  local split = {}
  for _, f in ipairs(M.varying(points)) do
    if not used[f] and f ~= 'unit' and f ~= 'run' then split[#split + 1] = f end
  end
  local keys = {}
  for _, f in ipairs(by) do keys[#keys + 1] = f end
  for _, f in ipairs(split) do keys[#keys + 1] = f end
  -- the run (the file a point came from) splits lines only where points of
  -- two runs would otherwise share a line and an x: files of different
  -- providers (ours and Liger's CSV) stay one line per provider
  if not used.run and #M.distinct(points, 'run') > 1 and runs_collide(points, x, keys) then
    split[#split + 1] = 'run'
    keys[#keys + 1] = 'run'
  end

  local series, index, duplicates = {}, {}, 0
  for _, p in ipairs(points) do
    local xv = M.field(p, x)
    if xv ~= nil then
      local parts, label = {}, {}
      for i, f in ipairs(keys) do
        local v = M.field(p, f)
        parts[i] = v == nil and '-' or value_text(v)
        label[i] = (i <= #by) and parts[i] or (f .. '=' .. parts[i])
      end
      local key = table.concat(parts, '\0')
      local s = index[key]
      if not s then
        local values = {}
        for _, f in ipairs(keys) do values[f] = M.field(p, f) end
        s = { name = table.concat(label, ' · '), key = key, points = {}, by_x = {}, values = values }
        index[key] = s
        series[#series + 1] = s
      end
      if s.by_x[xv] then
        duplicates = duplicates + 1
        for i, q in ipairs(s.points) do if q == s.by_x[xv] then s.points[i] = p end end
      else
        s.points[#s.points + 1] = p
      end
      s.by_x[xv] = p
    end
  end
  local xs, numeric = sort_values(M.distinct(points, x))
  for _, s in ipairs(series) do
    if numeric then
      table.sort(s.points, function(a, b) return M.field(a, x) < M.field(b, x) end)
    end
    s.by_x = nil
  end
  return { series = series, xs = xs, numeric_x = numeric, split = split, duplicates = duplicates }
end

---------------------------------------------------------------------------
-- Scales and ticks
---------------------------------------------------------------------------

-- The "nice" number (1, 2, 5 or 10 times a power of ten) near x.
local function nice_number(x, round)
  local e = math.floor(math.log(x, 10))
  local f = x / 10 ^ e
  local nf
  if round then
    nf = f < 1.5 and 1 or f < 3 and 2 or f < 7 and 5 or 10
  else
    nf = f <= 1 and 1 or f <= 2 and 2 or f <= 5 and 5 or 10
  end
  return nf * 10 ^ e
end

--- About n tick values with a step of 1, 2 or 5 times a power of ten, covering [lo, hi].
--
-- Returns the ticks and the axis range they span (lo' <= lo, hi' >= hi).
--
-- @signature plot.nice_ticks(lo, hi [, n]) -> ticks, lo, hi, step
-- @example
--   local ticks = plot.nice_ticks(0, 0.93) --> 0, 0.2, 0.4, 0.6, 0.8, 1
function M.nice_ticks(lo, hi, n)
  args.check('plot.nice_ticks', 1, lo, 'number', 'number')
  args.check('plot.nice_ticks', 2, hi, 'number', 'number')
  args.check('plot.nice_ticks', 3, n, 'integer|nil', 'number of ticks')
  n = n or 6
  if hi < lo then lo, hi = hi, lo end
  if hi == lo then
    local d = lo == 0 and 1 or math.abs(lo) * 0.1
    lo, hi = lo - d, hi + d
  end
  local step = nice_number((hi - lo) / (n - 1), true)
  local first, last = math.floor(lo / step + 1e-9) * step, math.ceil(hi / step - 1e-9) * step
  local ticks = {}
  for i = 0, math.floor((last - first) / step + 0.5) do
    local v = first + i * step
    if math.abs(v) < step * 1e-9 then v = 0 end
    -- round away the binary noise of i * step (0.30000000000000004)
    v = tonumber(string.format('%.12g', v))
    ticks[#ticks + 1] = math.tointeger(v) or v
  end
  return ticks, first, last, step
end

--- Ticks of a log axis: powers of ten, with 2 and 5 when the range is short.
--
-- Ticks of a log axis over [lo, hi] (lo > 0): powers of ten, with 2 and 5 between them when the
-- range spans fewer than four decades (and that makes at most 10 ticks); nice linear ticks within
-- one decade.
--
-- @signature plot.log_ticks(lo, hi) -> ticks
-- @example
--   local ticks = plot.log_ticks(0.03, 2) --> 0.05, 0.1, 0.2, 0.5, 1, 2
function M.log_ticks(lo, hi)
  args.check('plot.log_ticks', 1, lo, 'number', 'number')
  args.check('plot.log_ticks', 2, hi, 'number', 'number')
  local e0, e1 = math.floor(math.log(lo, 10) + 1e-9), math.ceil(math.log(hi, 10) - 1e-9)
  local function collect(mults)
    local t = {}
    for e = e0, e1 do
      for _, m in ipairs(mults) do
        local v = m * 10 ^ e
        if v >= lo * (1 - 1e-9) and v <= hi * (1 + 1e-9) then t[#t + 1] = v end
      end
    end
    return t
  end
  local ticks = collect { 1 }
  if #ticks < 4 then
    local finer = collect { 1, 2, 5 }
    if #finer <= 10 then ticks = finer end
  end
  if #ticks < 3 then ticks = (M.nice_ticks(lo, hi, 5)) end
  local out = {}
  for _, v in ipairs(ticks) do
    if v > 0 and v >= lo * (1 - 1e-9) and v <= hi * (1 + 1e-9) then
      v = tonumber(string.format('%.12g', v))
      out[#out + 1] = math.tointeger(v) or v
    end
  end
  return out
end

-- "2.50" -> "2.5", "3.0" -> "3"; integers untouched.
local function trim_zeros(s)
  if not s:find('.', 1, true) then return s end
  return (s:gsub('0+$', ''):gsub('%.$', ''))
end

--- A tick label: "0.25", "2048", "16k", "1.5M".
--
-- @signature plot.format_tick(v) -> text
-- @example
--   print(plot.format_tick(16384)) --> 16384
function M.format_tick(v)
  args.check('plot.format_tick', 1, v, 'number', 'number')
  local a = math.abs(v)
  if a >= 1e5 then
    for _, u in ipairs { { 1e9, 'G' }, { 1e6, 'M' }, { 1e3, 'k' } } do
      if a >= u[1] then return trim_zeros(string.format('%.4g', v / u[1])) .. u[2] end
    end
  end
  if v == math.floor(v) then return string.format('%d', math.tointeger(v) or v) end
  local s = string.format('%.4g', v)
  if s:find('e') then s = trim_zeros(string.format('%.8f', v)) end
  return s
end

-- A scale maps data values to pixels over [a, b].
local function scale(lo, hi, a, b, log)
  if log then
    local l0, l1 = math.log(lo, 10), math.log(hi, 10)
    if l1 == l0 then l1 = l0 + 1 end
    return function(v) return a + (math.log(v, 10) - l0) / (l1 - l0) * (b - a) end
  end
  if hi == lo then hi = lo + 1 end
  return function(v) return a + (v - lo) / (hi - lo) * (b - a) end
end

---------------------------------------------------------------------------
-- SVG
---------------------------------------------------------------------------

--- Colours of the series, in order (Okabe and Ito's palette, readable by
-- people with colour-blindness, then a few more).
M.COLORS = { '#0072B2', '#E69F00', '#009E73', '#D55E00', '#CC79A7', '#56B4E9', '#000000',
  '#999999', '#8C564B', '#F0E442' }

local FONT = 'DejaVu Sans, Helvetica, Arial, sans-serif'

local REPLACEMENT = '\239\191\189' -- U+FFFD

--- Text XML 1.0 can carry: invalid UTF-8, control characters (but tab, newline, return) and
-- U+FFFE/U+FFFF become U+FFFD.
--
-- Text that XML 1.0 can carry: every byte that is not part of valid UTF-8, every control character
-- but tab, newline and carriage return, and the non-characters U+FFFE and U+FFFF become U+FFFD
-- (titles and labels come from files: a Liger CSV or a record may hold anything).
--
-- @signature plot.xml_text(s) -> text
-- @example
--   print(plot.xml_text("a\1b") == "a\u{FFFD}b") --> true
function M.xml_text(s)
  s = tostring(s)
  local out, i = {}, 1
  while i <= #s do
    local ok, bad = utf8.len(s, i)
    if ok then
      out[#out + 1] = s:sub(i)
      break
    end
    out[#out + 1] = s:sub(i, bad - 1) .. REPLACEMENT
    i = bad + 1
  end
  return (table.concat(out):gsub('[%z\1-\8\11\12\14-\31]', REPLACEMENT)
    :gsub('\239\191[\190\191]', REPLACEMENT))
end

local function esc(s)
  return (M.xml_text(s):gsub('[&<>"]', { ['&'] = '&amp;', ['<'] = '&lt;', ['>'] = '&gt;', ['"'] = '&quot;' }))
end

-- Dash patterns of lines after the first (runs overlaid: --by provider,run).
local DASHES = { '7 4', '2 3', '10 3 2 3', '4 2' }

-- The colour and the stroke-dasharray attribute ('' when solid) of series i.
local function style(s, i)
  local color = M.COLORS[((s.color or i) - 1) % #M.COLORS + 1]
  local d = s.dash and s.dash > 1 and DASHES[(s.dash - 2) % #DASHES + 1]
  return color, d and string.format(' stroke-dasharray="%s"', d) or ''
end

local function num(v) return (string.format('%.2f', v):gsub('%.?0+$', '')) end

-- The end of a mark's element: its tooltip as an SVG <title> child when the point has one.
local function tip(p, element)
  if not p.tip then return '/>' end
  return '><title>' .. esc(p.tip) .. '</title></' .. element .. '>'
end

-- Approximate width in pixels of text at a font size (sans-serif averages
-- about 0.6 em per character).
local function text_width(s, size)
  return (utf8.len(s) or #s) * size * 0.6
end

-- A buffer of SVG elements.
local function canvas(w, h, title)
  local out = {
    string.format('<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" '
      .. 'font-family="%s" font-size="12">', w, h, w, h, FONT),
    '<title>' .. esc(title or 'kluabench chart') .. '</title>',
    string.format('<rect x="0" y="0" width="%d" height="%d" fill="#ffffff"/>', w, h),
  }
  local c = {}
  function c.add(s) out[#out + 1] = s end
  function c.text(x, y, s, attrs)
    out[#out + 1] = string.format('<text x="%s" y="%s"%s>%s</text>', num(x), num(y),
      attrs and (' ' .. attrs) or '', esc(s))
  end
  function c.line(x1, y1, x2, y2, attrs)
    out[#out + 1] = string.format('<line x1="%s" y1="%s" x2="%s" y2="%s" %s/>', num(x1), num(y1),
      num(x2), num(y2), attrs)
  end
  function c.finish()
    out[#out + 1] = '</svg>'
    return table.concat(out, '\n') .. '\n'
  end
  return c
end

-- Title and subtitle at the top, centred.
local function draw_titles(c, spec, w)
  if spec.title then
    c.text(w / 2, 26, spec.title, 'text-anchor="middle" font-size="16" font-weight="bold"')
  end
  if spec.subtitle then
    c.text(w / 2, 44, spec.subtitle, 'text-anchor="middle" font-size="11" fill="#555555"')
  end
end

-- Gridlines, axis lines, tick marks and labels, axis titles.
local function draw_axes(c, area, xticks, yticks, spec)
  local L, R, T, B = area.left, area.right, area.top, area.bottom
  c.add('<g stroke="#e5e5e5" stroke-width="1">')
  for _, t in ipairs(yticks) do c.line(L, t.px, R, t.px, '') end
  for _, t in ipairs(xticks) do if t.grid ~= false then c.line(t.px, T, t.px, B, '') end end
  c.add('</g>')
  c.add('<g stroke="#333333" stroke-width="1">')
  c.line(L, B, R, B, '')
  c.line(L, T, L, B, '')
  for _, t in ipairs(yticks) do c.line(L - 5, t.px, L, t.px, '') end
  for _, t in ipairs(xticks) do c.line(t.px, B, t.px, B + 5, '') end
  c.add('</g>')
  for _, t in ipairs(yticks) do c.text(L - 8, t.px + 4, t.label, 'text-anchor="end"') end
  for _, t in ipairs(xticks) do c.text(t.px, B + 19, t.label, 'text-anchor="middle"') end
  if spec.xlabel then
    c.text((L + R) / 2, B + 42, spec.xlabel, 'text-anchor="middle" font-size="13"')
  end
  if spec.ylabel then
    local cx, cy = 18, (T + B) / 2
    c.text(cx, cy, spec.ylabel, string.format('text-anchor="middle" font-size="13" transform="rotate(-90 %s %s)"',
      num(cx), num(cy)))
  end
end

-- A vertical error bar from lo to hi (pixels) at x, with caps.
local function error_bar(c, x, lo, hi, color)
  if not lo or not hi or math.abs(hi - lo) < 0.5 then return end
  c.line(x, lo, x, hi, string.format('stroke="%s" stroke-width="1.5"', color))
  c.line(x - 4, lo, x + 4, lo, string.format('stroke="%s" stroke-width="1.5"', color))
  c.line(x - 4, hi, x + 4, hi, string.format('stroke="%s" stroke-width="1.5"', color))
end

-- Legend labels wider than this (pixels) are cut with an ellipsis.
local LEGEND_TEXT_MAX = 300

-- s cut to about max_px pixels at 12 px, ending in "…" when cut.
local function fit(s, max_px)
  local n = math.floor(max_px / (12 * 0.6))
  if (utf8.len(s) or #s) <= n then return s end
  return s:sub(1, (utf8.offset(s, n) or (n + 1)) - 1) .. '…'
end

-- The legend at the right of the plot area.
local function draw_legend(c, series, x, y, bars)
  c.add('<g class="legend">')
  for i, s in ipairs(series) do
    local ly = y + (i - 1) * 20
    local color, dash = style(s, i)
    if bars then
      c.add(string.format('<rect x="%s" y="%s" width="14" height="12" fill="%s" fill-opacity="0.85"/>',
        num(x + 4), num(ly - 6), color))
    else
      c.line(x, ly, x + 22, ly, string.format('stroke="%s" stroke-width="2.5"%s', color, dash))
      c.add(string.format('<circle cx="%s" cy="%s" r="3.5" fill="%s"/>', num(x + 11), num(ly), color))
    end
    c.text(x + 30, ly + 4, fit(s.name, LEGEND_TEXT_MAX))
  end
  c.add('</g>')
end

local function legend_width(series)
  local w = 0
  for _, s in ipairs(series) do w = math.max(w, text_width(s.name, 12)) end
  return math.min(w, LEGEND_TEXT_MAX) + 50
end

-- The y range of the data (p20..p80 included); linear axes start at 0 when
-- every value is positive.
local function y_range(series, log)
  local lo, hi = math.huge, -math.huge
  for _, s in ipairs(series) do
    for _, pt in ipairs(s.points) do
      for _, v in ipairs { pt.y, pt.lo or pt.y, pt.hi or pt.y } do
        lo, hi = math.min(lo, v), math.max(hi, v)
      end
    end
  end
  if not log and lo >= 0 then lo = 0 end
  return lo, hi
end

local function y_ticks(lo, hi, log, top, bottom)
  if log then
    local pad = (hi / lo) ^ 0.05
    if pad < 1.05 then pad = 1.05 end
    lo, hi = lo / pad, hi * pad
    return M.log_ticks(lo, hi), scale(lo, hi, bottom, top, true)
  end
  local ticks, first, last = M.nice_ticks(lo, hi, 6)
  return ticks, scale(first, last, bottom, top, false)
end

local function check_positive(series, what, get)
  for _, s in ipairs(series) do
    for _, pt in ipairs(s.points) do
      local v = get(pt)
      if v and v <= 0 then return nil, string.format('%s needs positive values, got %s', what, tostring(v)) end
    end
  end
  return true
end

--- A line chart from series of {x, y, lo, hi} points, with error bars and a legend.
--
-- spec: series = {{name, points}}, title, subtitle, xlabel, ylabel, logx, logy, width, height,
-- categories (names of x = 1..n).
--
-- A line chart as SVG text. spec: series = {{name = "fused", points = {{x = 1024, y = 0.1, lo =
-- 0.09, hi = 0.12, tip = "text"}, ...}, color = i (optional: index into M.COLORS, default the
-- series' index; a point's tip becomes its mark's tooltip, an SVG <title>),
-- dash = k (optional: 1 solid, 2.. dashed patterns)}, ...} title, subtitle, xlabel, ylabel, logx,
-- logy, width (800), height (480), categories = {"a", "b"} when x values are names (x = 1..n then)
-- Returns the SVG, or nil and a message (log axis over values <= 0).
--
-- @signature plot.line_chart(spec) -> svg | nil, message
-- @example
--   local svg = plot.line_chart{title = "demo", xlabel = "n", ylabel = "ms",
--     series = {{name = "a", points = {{x = 1, y = 2, lo = 1.8, hi = 2.3}, {x = 2, y = 3}}}}}
function M.line_chart(spec)
  args.check('plot.line_chart', 1, spec, 'table', 'chart table {series, ...}')
  local series = spec.series
  if spec.logx and not spec.categories then
    local ok, err = check_positive(series, 'a log x axis', function(p) return p.x end)
    if not ok then return nil, err end
  end
  if spec.logy then
    local ok, err = check_positive(series, 'a log y axis', function(p) return p.lo or p.y end)
    if not ok then return nil, err end
  end
  local w, h = spec.width or 800, spec.height or 480
  local area = { left = 78, top = spec.subtitle and 62 or 48, bottom = h - 58 }
  area.right = w - legend_width(series) - 16
  local c = canvas(w, h, spec.title)
  draw_titles(c, spec, w)

  -- x: data values as ticks when they are few and far enough apart
  local xs, seen = {}, {}
  for _, s in ipairs(series) do
    for _, p in ipairs(s.points) do
      if not seen[p.x] then seen[p.x], xs[#xs + 1] = true, p.x end
    end
  end
  table.sort(xs)
  local xlo, xhi = xs[1], xs[#xs]
  local pad = (spec.categories or #xs == 1) and 0.5 or 0
  local sx, xticks
  if spec.categories then
    sx = scale(1 - pad - 0.1, #spec.categories + pad + 0.1, area.left, area.right, false)
    xticks = {}
    for i, name in ipairs(spec.categories) do xticks[i] = { px = sx(i), label = name } end
  else
    if spec.logx then
      local f = (xhi / xlo) ^ 0.04
      sx = scale(xlo / f, xhi * f, area.left, area.right, true)
    else
      local span = (xhi - xlo) * 0.04
      if span == 0 then span = math.abs(xlo) * 0.5 + 1 end
      sx = scale(xlo - span, xhi + span, area.left, area.right, false)
    end
    local use_data = #xs <= 12
    for i = 2, #xs do
      if sx(xs[i]) - sx(xs[i - 1]) < text_width(M.format_tick(xs[i]), 12) + 8 then use_data = false end
    end
    local vals = use_data and xs or (spec.logx and M.log_ticks(xlo, xhi) or M.nice_ticks(xlo, xhi, 7))
    xticks = {}
    for _, v in ipairs(vals) do
      local px = sx(v)
      if px >= area.left - 0.5 and px <= area.right + 0.5 then
        xticks[#xticks + 1] = { px = px, label = M.format_tick(v) }
      end
    end
  end

  local ylo, yhi = y_range(series, spec.logy)
  local yvals, sy = y_ticks(ylo, yhi, spec.logy, area.top, area.bottom)
  local yticks = {}
  for i, v in ipairs(yvals) do yticks[i] = { px = sy(v), label = M.format_tick(v) } end
  draw_axes(c, area, xticks, yticks, spec)

  for i, s in ipairs(series) do
    local color, dash = style(s, i)
    c.add(string.format('<g class="series" data-name="%s">', esc(s.name)))
    local pts = {}
    for j, p in ipairs(s.points) do pts[j] = num(sx(p.x)) .. ',' .. num(sy(p.y)) end
    if #pts > 1 then
      c.add(string.format('<polyline fill="none" stroke="%s" stroke-width="2" stroke-linejoin="round"%s points="%s"/>',
        color, dash, table.concat(pts, ' ')))
    end
    for _, p in ipairs(s.points) do
      error_bar(c, sx(p.x), p.lo and sy(p.lo), p.hi and sy(p.hi), color)
    end
    for _, p in ipairs(s.points) do
      c.add(string.format('<circle cx="%s" cy="%s" r="3.5" fill="%s"%s', num(sx(p.x)), num(sy(p.y)), color,
        tip(p, 'circle')))
    end
    c.add('</g>')
  end
  draw_legend(c, series, area.right + 20, area.top + 8)
  return c.finish()
end

--- A bar chart: a group of bars per category, one per series, with error bars, values and a legend.
--
-- With a single category the bars are labelled with the series names too (where they fit). spec:
-- series (points {x = category index, y, lo, hi, tip}), categories (names), title, subtitle,
-- xlabel, ylabel, logy, width, height. A point's tip (text) becomes its bar's tooltip (an SVG
-- <title>).
--
-- @signature plot.bar_chart(spec) -> svg | nil, message
-- @example
--   local svg = plot.bar_chart{categories = {"seq 2048"}, ylabel = "ms",
--     series = {{name = "fused", points = {{x = 1, y = 0.1}}}, {name = "reference", points = {{x = 1, y = 0.3}}}}}
function M.bar_chart(spec)
  args.check('plot.bar_chart', 1, spec, 'table', 'chart table {categories, series, ...}')
  local series, cats = spec.series, spec.categories
  if spec.logy then
    local ok, err = check_positive(series, 'a log y axis', function(p) return p.lo or p.y end)
    if not ok then return nil, err end
  end
  local single = #cats == 1
  local w, h = spec.width or 800, spec.height or 480
  local area = { left = 78, top = spec.subtitle and 62 or 48, bottom = h - 58 }
  area.right = w - legend_width(series) - 16
  local c = canvas(w, h, spec.title)
  draw_titles(c, spec, w)

  local ylo, yhi = y_range(series, spec.logy)
  if spec.logy then ylo = ylo / 1.5 end
  local yvals, sy = y_ticks(ylo, yhi * (spec.logy and 1.3 or 1.08), spec.logy, area.top, area.bottom)
  local yticks = {}
  for i, v in ipairs(yvals) do yticks[i] = { px = sy(v), label = M.format_tick(v) } end

  local slot = (area.right - area.left) / #cats
  local nser = #series
  local bw = math.min(single and 120 or 80, slot * 0.8 / nser)
  local xticks = {}
  if not single then
    for i, name in ipairs(cats) do
      xticks[i] = { px = area.left + (i - 0.5) * slot, label = name, grid = false }
    end
  end
  draw_axes(c, area, xticks, yticks, spec)
  -- one category: each bar is labelled with its series' name too, where every name fits under its bar
  local label_bars = single
  for _, s in ipairs(series) do
    if text_width(s.name, 12) > bw then label_bars = false end
  end
  local base = spec.logy and area.bottom or sy(math.max(0, yvals[1]))
  for si, s in ipairs(series) do
    local color = style(s, si)
    c.add(string.format('<g class="series" data-name="%s">', esc(s.name)))
    for _, p in ipairs(s.points) do
      local cx = area.left + (p.x - 0.5) * slot + (si - (nser + 1) / 2) * bw
      local top = sy(p.y)
      c.add(string.format('<rect x="%s" y="%s" width="%s" height="%s" fill="%s" fill-opacity="0.85"%s',
        num(cx - bw * 0.45), num(math.min(top, base)), num(bw * 0.9), num(math.abs(base - top)), color,
        tip(p, 'rect')))
      error_bar(c, cx, p.lo and sy(p.lo), p.hi and sy(p.hi), '#333333')
      local label_y = math.min(top, p.hi and sy(p.hi) or top) - 6
      c.text(cx, label_y, M.format_tick(tonumber(string.format('%.3g', p.y))),
        'text-anchor="middle" font-size="11"')
      if label_bars then
        c.text(cx, area.bottom + 19, s.name, 'text-anchor="middle"')
      end
    end
    c.add('</g>')
  end
  draw_legend(c, series, area.right + 20, area.top + 8, true)
  return c.finish()
end

---------------------------------------------------------------------------
-- From points to a chart
---------------------------------------------------------------------------

local TIME_UNITS = { s = 1e3, ms = 1, us = 1e-3, ['µs'] = 1e-3, ns = 1e-6 }

-- Throughputs that --y can show: the record's own value at the median
-- (own), else the workload's cost over the median time (cost / (ms * scale)).
local RATES = {
  gbps = { own = 'gbps', cost = 'bytes', scale = 1e6, label = 'throughput (GB/s)', unit = 'GB/s' },
  tflops = { own = 'tflops', cost = 'flops', scale = 1e9, label = 'throughput (TFLOP/s)', unit = 'TFLOP/s' },
}

--- The values --y accepts: time units, throughputs, and MB (memory rows of
-- Liger's CSV).
M.Y_UNITS = { 'ms', 'us', 'ns', 's', 'gbps', 'tflops', 'MB' }

-- The fields whose values a line's dash pattern tells apart (the others its colour): the run (the
-- file) and the protocol.
local STYLE_FIELDS = { 'run', 'protocol' }

-- When the lines overlay runs or protocols (run or protocol is in the grouping), the lines of one
-- group in different runs or protocols share a colour and each run or protocol has its own dash
-- pattern, so that `--by provider,run` reads as providers by colour and runs by line style, and a
-- chart that mixes do_bench and cold runs draws the cold ones dashed.
local function overlay_styles(series, x)
  local styles, order, of = {}, 0, {}
  for i, s in ipairs(series) do
    local parts = {}
    for _, f in ipairs(STYLE_FIELDS) do
      local v = s.values and s.values[f]
      if v ~= nil then parts[#parts + 1] = f .. '=' .. value_text(v) end
    end
    local k = table.concat(parts, '\0')
    if not styles[k] then order = order + 1; styles[k] = order end
    of[i] = styles[k]
  end
  if order < 2 then return end
  local skip = { [x] = true }
  for _, f in ipairs(STYLE_FIELDS) do skip[f] = true end
  local colors, n = {}, 0
  for i, s in ipairs(series) do
    local parts = {}
    for f, v in pairs(s.values or {}) do
      if not skip[f] then parts[#parts + 1] = f .. '=' .. value_text(v) end
    end
    table.sort(parts)
    local key = table.concat(parts, '\0')
    if not colors[key] then n = n + 1; colors[key] = n end
    s.color, s.dash = colors[key], of[i]
  end
end

-- A number for a tooltip: seven significant digits (a median in the thousands of us reads as the
-- report's and the results table's, with two decimals).
local function tip_number(v) return (string.format('%.7g', v)) end

--- The tooltip of a chart point: the point (kernel, mode, workload id, provider, protocol, device,
-- file), its aggregate (the median, the mean of its session medians when it has several, and its
-- p20/p80) in unit (the chart's; a time unit, or the point's own), the value drawn when it is not
-- the median (a throughput), and its session and sample counts.
--
-- scale: what a value of the point's unit is multiplied by to give unit (default 1); shown: the
-- value drawn and its unit's name when the chart shows a throughput.
--
-- @signature plot.tooltip(point [, unit [, scale [, shown]]]) -> text
-- @example
--   print(plot.tooltip({kernel = "rope", mode = "forward", provider = "fused", protocol = "do_bench",
--     id = "seq2048-bf16", params = {}, unit = "ms", y50 = 3.21, y20 = 3.0, y80 = 3.5,
--     sessions = 3, passed = 3, n = 180}))
function M.tooltip(p, unit, scale, shown)
  args.check('plot.tooltip', 1, p, 'table', 'point')
  args.check('plot.tooltip', 2, unit, 'string|nil', 'unit')
  args.check('plot.tooltip', 3, scale, 'number|nil', 'scale')
  args.check('plot.tooltip', 4, shown, 'table|nil', 'table {value, unit}')
  unit, scale = unit or p.unit or 'ms', scale or 1
  local id = p.id
  if not id and next(p.params or {}) then id = operation.case_key { axes = p.params, dtype = p.dtype or '?' } end
  local lines = { table.concat({ p.kernel or '?', p.mode, id }, ' ') }
  local who = { 'provider ' .. tostring(p.provider or '?') }
  if p.protocol then who[#who + 1] = 'protocol ' .. p.protocol end
  if p.gpu then who[#who + 1] = p.gpu end
  if p.run then who[#who + 1] = 'file ' .. p.run end
  lines[#lines + 1] = table.concat(who, ' · ')
  if shown then lines[#lines + 1] = string.format('%s %s at the median', tip_number(shown.value), shown.unit) end
  local agg = string.format('median %s %s', tip_number(p.y50 * scale), unit)
  if p.passed and p.passed > 1 then agg = agg .. string.format(' (the mean of %d session medians)', p.passed) end
  if p.y20 and p.y80 then
    agg = agg .. string.format(' · p20 %s %s · p80 %s %s', tip_number(p.y20 * scale), unit, tip_number(p.y80 * scale),
      unit)
  end
  lines[#lines + 1] = agg
  if p.sessions then
    local failed = p.sessions - (p.passed or p.sessions)
    lines[#lines + 1] = string.format('%d session%s%s · %s sample%s', p.sessions, p.sessions == 1 and '' or 's',
      failed > 0 and string.format(' (%d failed)', failed) or '', p.n and tostring(p.n) or 'no count of',
      p.n == 1 and '' or 's')
  else
    lines[#lines + 1] = 'one row of a Liger CSV: no session or sample count'
  end
  return table.concat(lines, '\n')
end

--- Keeps, for each other numeric parameter that varies, the value under which x varies most.
--
-- Keeps one slice of the data along every shape parameter that varies but is neither x nor a --by
-- field: the value under which x takes the most values (a seq sweep at hidden 8192 rather than the
-- lone seq 2048 point of a hidden sweep). Names (mode, kernel, ...) are not sliced: they split
-- lines (see M.group). Returns the points kept and notes saying what was left out.
--
-- @signature plot.slice(points, x [, by]) -> points, notes
-- @example
--   local function pt(hidden, seq, ms) -- a point as plot.read makes it
--     return {kernel = "rope", mode = "forward", provider = "fused", params = {hidden = hidden, seq = seq}, y50 = ms}
--   end
--   local points = {pt(512, 1024, 0.03), pt(512, 2048, 0.05), pt(4096, 2048, 0.2)}
--   local pts, notes = plot.slice(points, "seq")
function M.slice(points, x, by)
  args.check('plot.slice', 1, points, 'table', 'list of points')
  args.check('plot.slice', 2, x, 'string', 'field name')
  local skip = { [M.field_name(x)] = true }
  for _, f in ipairs(type(by) == 'table' and by or { by or 'provider' }) do skip[M.field_name(f)] = true end
  local notes = {}
  for _, f in ipairs(M.varying(points)) do
    local values = M.distinct(points, f)
    local numeric = true
    for _, v in ipairs(values) do if type(v) ~= 'number' then numeric = false end end
    if not skip[f] and not TOP_FIELDS[f] and numeric and #values > 1 then
      local best, best_n, best_pts = nil, -1, 0
      for _, v in ipairs(values) do
        local sub = M.filter(points, { { key = f, values = { value_text(v) } } })
        local n = #M.distinct(sub, x)
        if n > best_n or (n == best_n and #sub > best_pts) then best, best_n, best_pts = v, n, #sub end
      end
      local others = {}
      for _, v in ipairs(sort_values(values)) do
        if v ~= best then others[#others + 1] = value_text(v) end
      end
      points = M.filter(points, { { key = f, values = { value_text(best) } } })
      notes[#notes + 1] = string.format('kept %s=%s, where %s varies most (also in the data: %s=%s; '
        .. '--filter %s=N picks another)', f, value_text(best), x, f, table.concat(others, ','), f)
    end
  end
  return points, notes
end

--- The one shape parameter that varies, for when no x is given.
--
-- Returns the field, or nil and a message listing the choices.
--
-- @signature plot.guess_x(points) -> field | nil, message
-- @example
--   local function pt(provider, seq, ms) -- a point as plot.read makes it
--     return {kernel = "rope", mode = "forward", provider = provider, gpu = "H200", params = {seq = seq}, y50 = ms}
--   end
--   local points = {pt("fused", 1024, 0.03), pt("fused", 2048, 0.05), pt("liger", 2048, 0.09)}
--   print(plot.guess_x(points)) --> seq
function M.guess_x(points)
  args.check('plot.guess_x', 1, points, 'table', 'list of points')
  local candidates = {}
  for _, f in ipairs(M.varying(points)) do
    if not TOP_FIELDS[f] then candidates[#candidates + 1] = f end
  end
  if #candidates == 1 then return candidates[1] end
  if #candidates == 0 then
    -- nothing varies: any parameter will do (one x value: a bar chart)
    local fields = {}
    for _, f in ipairs(M.fields(points)) do if not TOP_FIELDS[f] then fields[#fields + 1] = f end end
    if #fields > 0 then return fields[1] end
    return 'provider'
  end
  return nil, 'several parameters vary (' .. table.concat(candidates, ', ') .. '): choose one with --x'
end

-- nil when some point has field f, else a message naming it (as `what`)
-- and listing the fields the points have.
local function unknown_field(points, f, what)
  local name = M.field_name(f)
  for _, p in ipairs(points) do if M.field(p, name) ~= nil then return nil end end
  return string.format("no point has the %s '%s' (fields: %s)", what, f, table.concat(M.fields(points), ', '))
end

--- The SVG chart of points: lines over opts.x, one per opts.by, or bars for a single x.
--
-- opts: x (a field; default the one parameter that varies), by (field or list; default "provider";
-- an unknown field is a usage error), y ("ms", "us", "ns", "s", or the throughput "gbps" /
-- "tflops": the record's own at the median, else the workload's bytes / flops over the median, bars
-- at the p80 and p20 times), logx, logy, bar, title, width, height. Names that differ (mode,
-- kernel, protocol) split lines, and runs (files) where two would share a line and an x; lines of
-- several runs or protocols share a colour per group and differ by dash pattern. For other shape
-- parameters that vary the slice where x varies most is kept; info.notes says what was done,
-- info.data holds the series drawn. Every mark carries its point's tooltip (plot.tooltip: the
-- point, its aggregate, sessions and samples) as an SVG <title>. kind is "usage" when an option
-- must change.
--
-- @signature plot.chart(points [, opts]) -> svg, info | nil, message, kind
-- @example
--   local function pt(provider, seq, ms) -- a point as plot.read makes it
--     return {kernel = "rope", mode = "forward", provider = provider, unit = "ms", params = {seq = seq}, y50 = ms}
--   end
--   local points = {pt("fused", 1024, 0.03), pt("fused", 2048, 0.05),
--     pt("liger", 1024, 0.06), pt("liger", 2048, 0.09)}
--   local svg = assert(plot.chart(points, {x = "seq", by = "provider", logx = true}))
--   local path = os.tmpname() -- chart.svg, say
--   local f = assert(io.open(path, "w")); f:write(svg); f:close()
--   os.remove(path)
function M.chart(points, opts)
  args.check('plot.chart', 1, points, 'table', 'list of points')
  args.check('plot.chart', 2, opts, 'table|nil', 'table of options')
  opts = opts or {}
  if #points == 0 then return nil, 'no data points to plot' end
  local notes = {}
  -- one metric at a time: speed when there is a choice
  local metrics = M.distinct(points, 'metric')
  if #metrics > 1 then
    local pick = nil
    for _, m in ipairs(metrics) do if m == 'speed' or m == 'latency' then pick = m end end
    if not pick then
      return nil, 'the data has several metrics (' .. table.concat(metrics, ', ')
        .. '): choose one with --filter metric=NAME'
    end
    points = M.filter(points, { { key = 'metric', values = { pick } } })
    notes[#notes + 1] = 'plotting metric ' .. pick .. ' (others: use --filter metric=NAME)'
  end
  local x = opts.x and M.field_name(opts.x)
  if not x then
    local err
    x, err = M.guess_x(points)
    if not x then return nil, err, 'usage' end
  end
  local why = unknown_field(points, x, 'field')
  if why then return nil, why, 'usage' end
  for _, f in ipairs(type(opts.by) == 'table' and opts.by or { opts.by or 'provider' }) do
    why = unknown_field(points, f, '--by field')
    if why then return nil, why, 'usage' end
  end
  local slice_notes
  points, slice_notes = M.slice(points, x, opts.by)
  for _, n in ipairs(slice_notes) do notes[#notes + 1] = n end
  local g = M.group(points, { x = x, by = opts.by })
  if #g.split > 0 then
    notes[#notes + 1] = 'lines split by ' .. table.concat(g.split, ', ')
      .. ' (their values differ; --filter KEY=VALUE picks one)'
  end
  if g.duplicates > 0 then
    notes[#notes + 1] = string.format('%d points repeat a line and x value: the last one is drawn', g.duplicates)
  end

  local unit = points[1].unit or 'ms'
  local want = opts.y or unit
  local factor = 1
  local rate = RATES[want]
  if rate then
    if not TIME_UNITS[unit] then
      return nil, string.format("cannot show %s values as '%s': %s needs times", unit, want, want), 'usage'
    end
    factor = TIME_UNITS[unit] -- to ms
  elseif want ~= unit then
    if not (TIME_UNITS[unit] and TIME_UNITS[want]) then
      return nil, string.format("cannot show %s values as '%s'", unit, want), 'usage'
    end
    factor = TIME_UNITS[unit] / TIME_UNITS[want]
  end
  -- y, lo, hi of a point: times scaled to `want`, or the rate at the median
  -- time with bars at the rates of the p80 and p20 times
  -- and the mark's tooltip (the median in the chart's time unit, or in the point's own)
  local function values_of(p)
    if not rate then
      return p.y50 * factor, p.y20 and p.y20 * factor, p.y80 and p.y80 * factor, M.tooltip(p, want, factor)
    end
    local ms = p.y50 * factor
    local r = p[rate.own] or (p[rate.cost] and ms > 0 and p[rate.cost] / (ms * rate.scale)) or nil
    if not r then return nil end
    local function at(y) return y and y > 0 and r * p.y50 / y or nil end
    return r, at(p.y80), at(p.y20), M.tooltip(p, 'ms', factor, { value = r, unit = rate.unit })
  end
  local bar = opts.bar or #g.xs == 1
  local cat_index = {}
  local categories = nil
  if bar or not g.numeric_x then
    categories = {}
    for i, v in ipairs(g.xs) do
      categories[i] = value_text(v)
      cat_index[v] = i
    end
  end
  local series, dropped = {}, 0
  for _, s in ipairs(g.series) do
    local pts = {}
    for _, p in ipairs(s.points) do
      local xv = M.field(p, x)
      local y, lo, hi, tip = values_of(p)
      if y then
        pts[#pts + 1] = { x = categories and cat_index[xv] or xv, y = y, lo = lo, hi = hi, tip = tip,
          sessions = p.sessions, n = p.n }
      else
        dropped = dropped + 1
      end
    end
    if #pts > 0 then series[#series + 1] = { name = s.name, points = pts, values = s.values } end
  end
  if #series == 0 then
    return nil, string.format('no point has the %s to plot %s (records carry it in the workload\'s '
      .. '%s measurement or the run\'s throughput measurement; Liger CSV rows only for kernels with a cost model)',
      rate.cost, rate.label, rate.cost)
  end
  if dropped > 0 then
    notes[#notes + 1] = string.format('%d points left out: no %s to plot %s', dropped, rate.cost, rate.label)
  end
  if not bar then overlay_styles(series, x) end

  -- titles from what all points share
  local function common(f) return M.common(points, f) end
  local kernel, mode, gpu = common('kernel'), common('mode'), common('gpu')
  local title = opts.title
  if not title then
    local parts = {}
    if kernel then parts[#parts + 1] = kernel end
    if mode and x ~= 'mode' then parts[#parts + 1] = mode end
    title = #parts > 0 and table.concat(parts, ' · ') or 'kluabench results'
  end
  local sub = {}
  for _, f in ipairs(M.fields(points)) do
    if not TOP_FIELDS[f] and f ~= x then
      local v = common(f)
      if v ~= nil then sub[#sub + 1] = f .. ' ' .. value_text(v) end
    end
  end
  local dtype = common('dtype')
  if dtype then sub[#sub + 1] = dtype end
  local protocol = common('protocol')
  if protocol then sub[#sub + 1] = 'protocol ' .. protocol end
  if bar and #g.xs == 1 and x ~= 'provider' then
    table.insert(sub, 1, x .. ' ' .. value_text(g.xs[1]))
  end
  if gpu then sub[#sub + 1] = gpu end
  local x_label = x
  for _, p in ipairs(points) do
    if p.x_labels and p.x_labels[x] then x_label = p.x_labels[x] break end
  end
  local metric_word = (unit == 'ms' or TIME_UNITS[unit]) and 'latency' or (points[1].metric or 'value')
  local ylabel = rate and string.format('%s: at the median, bars at p80–p20 times', rate.label)
    or string.format('%s (%s): median, bars p20–p80', metric_word, want)
  local spec = {
    series = series, categories = categories, title = title,
    subtitle = #sub > 0 and table.concat(sub, ' · ') or nil,
    xlabel = x_label, ylabel = ylabel,
    logx = opts.logx, logy = opts.logy, width = opts.width, height = opts.height,
  }
  if bar and #g.xs == 1 then spec.xlabel = nil end -- the subtitle names the one x value
  local svg, err
  if bar then svg, err = M.bar_chart(spec) else svg, err = M.line_chart(spec) end
  if not svg then return nil, err end
  local n = 0
  for _, s in ipairs(series) do n = n + #s.points end
  return svg, { kind = bar and 'bar' or 'line', series = #series, points = n, x = x,
    split = g.split, duplicates = g.duplicates, notes = notes, data = series, ylabel = ylabel }
end

return M
