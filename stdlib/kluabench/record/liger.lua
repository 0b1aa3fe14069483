--- Liger-Kernel's benchmark CSV: reading it, turning rows into kernelindex
-- bundles, and writing our results in it.
--
-- A row of benchmark/data/all_benchmark_data.csv is one point: the
-- quantiles 0.5/0.2/0.8 of triton.testing.do_bench (metric_name "speed", ms)
-- or of Liger's peak-memory probe (metric_name "memory", MB). The run,
-- protocol and environment documents of a speed row reproduce, field for
-- field, the record kernelindex.dev publishes for it
-- (tests/data/kernelindex-record-example.json). Input is data: the
-- JSON in extra_benchmark_config_str is parsed by output.decode, never run.
local names = require 'kluabench.record.names'
local output = require 'kluabench.report'
local record = require 'kluabench.record'
local env = require 'kluabench.record.env'

local M = {}

--- The header of Liger's CSV, in its order.
M.HEADER = { 'kernel_name', 'kernel_provider', 'kernel_operation_mode', 'metric_name',
  'metric_unit', 'x_name', 'x_label', 'x_value', 'y_value_50', 'y_value_20', 'y_value_80',
  'extra_benchmark_config_str', 'gpu_name', 'timestamp', 'liger_version' }

--- Liger's quantiles, in the order of the y_value columns.
M.QUANTILES = { 0.5, 0.2, 0.8 }
local Y_COLUMNS = { 'y_value_50', 'y_value_20', 'y_value_80' }

M.HARNESS = { name = 'Liger-Kernel benchmark scripts', repository = 'https://github.com/linkedin/Liger-Kernel' }
M.SOURCE = 'liger-kernel-bench'

--- What a Liger mode timed, in words, as the published records say it.
M.TIMED = {
  forward = 'the forward pass of the module',
  backward = 'the backward pass of the module output given a random upstream gradient',
  full = 'the forward pass and then the backward pass given a random upstream gradient',
}

--- Liger's spelling of our parameter names (for writing its CSV).
M.LIGER_PARAM = { hidden = 'hidden_size', seq = 'seq_len', q_heads = 'num_q_heads',
  kv_heads = 'num_kv_heads' }
--- Liger's x axis names and labels of our parameters.
M.X_AXIS = { hidden = { 'H', 'hidden size' }, seq = { 'T', 'sequence length' } }
M.TORCH_DTYPE = { bf16 = 'torch.bfloat16', f16 = 'torch.float16', f32 = 'torch.float32',
  f64 = 'torch.float64' }
-- Order of keys in extra_benchmark_config_str that we write.
local CONFIG_ORDER = { dtype = 1, hidden_size = 2, seq_len = 3, num_q_heads = 4, num_kv_heads = 5 }

---------------------------------------------------------------------------
-- Reading
---------------------------------------------------------------------------

--- Parses Liger CSV text; a row with the wrong number of fields has `error` instead of columns.
--
-- Returns a list of rows (tables keyed by column name, with `line` = the row's line in the text,
-- and `error` instead of the columns when the row has the wrong number of fields), or nil and "line
-- N: why" when the text is not CSV or the header lacks a column. Columns may come in any order; all
-- of M.HEADER must be present.
--
-- @signature liger.parse(text) -> rows | nil, message
-- @example
--   local rows = assert(liger.parse(text))
function M.parse(text)
  local records, lines = output.parse_csv(text)
  if not records then return nil, lines end
  if #records == 0 then return nil, 'line 1: empty file (no header)' end
  local header = records[1]
  local index = {}
  for i, name in ipairs(header) do index[name] = i end
  for _, name in ipairs(M.HEADER) do
    if not index[name] then
      return nil, string.format('line %d: header lacks column %q', lines[1], name)
    end
  end
  local rows = {}
  for r = 2, #records do
    local rec = records[r]
    if not (#rec == 1 and rec[1] == '') then -- blank line
      local row = { line = lines[r] }
      if #rec ~= #header then
        -- kept, so that one bad row is reported and the others still import
        row.error = string.format('%d fields, the header has %d', #rec, #header)
      else
        for name, i in pairs(index) do row[name] = rec[i] end
      end
      rows[#rows + 1] = row
    end
  end
  return rows
end

--- Reads and parses a Liger CSV file; each row is keyed by column name, with its line.
--
-- @signature liger.read(path) -> rows | nil, message
-- @example
--   local rows = assert(liger.read("all_benchmark_data.csv"))
function M.read(path)
  local text, err = output.read_text(path)
  if not text then return nil, err end
  local rows, perr = M.parse(text)
  if not rows then return nil, path .. ':' .. perr:gsub('^line ', '') end
  return rows
end

--- The JSON object of extra_benchmark_config_str (parsed as data, never run).
--
-- The table in extra_benchmark_config_str ("" -> empty), or nil, message.
--
-- @signature liger.parse_config(s) -> table | nil, message
-- @example
--   local c = liger.parse_config('{"seq_len": 2048}')
function M.parse_config(s)
  if s == nil or s:match('^%s*$') then return {} end
  local v, err = output.decode(s)
  if v == nil then return nil, 'extra_benchmark_config_str: ' .. err end
  if type(v) ~= 'table' or output.table_kind(v) ~= 'object' then
    return nil, 'extra_benchmark_config_str is not a JSON object'
  end
  return v
end

-- Why a value read from the file cannot go into a record (JSON numbers are
-- finite, and integers beyond +-2^53 are not exact), or nil when it can.
local function unrecordable(v)
  if type(v) == 'number' then
    if v ~= v or v == math.huge or v == -math.huge then return 'is not finite' end
    if math.type(v) == 'integer' and (v > 2 ^ 53 or v < -2 ^ 53) then return 'is beyond +-2^53' end
  elseif type(v) == 'table' then
    for _, x in pairs(v) do
      local why = unrecordable(x)
      if why then return why end
    end
  end
  return nil
end

-- The number a decimal numeral spells ("12", "-0.5", "1e-3"), or nil:
-- Lua's tonumber also reads hexadecimal ("0x10") and surrounding spaces,
-- which Liger's files never hold and which would make a silently wrong record.
local function decimal(s)
  if type(s) ~= 'string' then return nil end
  local mant, exp = s:match('^([+-]?[%d.]+)([eE]?[+-]?%d*)$')
  if not mant or not mant:match('%d') or select(2, mant:gsub('%.', '')) > 1 then return nil end
  if exp ~= '' and not exp:match('^[eE][+-]?%d+$') then return nil end
  return tonumber(s)
end

local function quoted(s) return "'" .. output.printable(s, 60) .. "'" end

local function number_field(row, col)
  local v = decimal(row[col])
  if not v then return nil, string.format('%s is not a decimal number (%s)', col, quoted(row[col])) end
  local why = unrecordable(v)
  if why then return nil, string.format('%s %s (%s)', col, why, quoted(row[col])) end
  return v
end

---------------------------------------------------------------------------
-- Row -> bundle
---------------------------------------------------------------------------

local function protocol_document(mode, metric, unit)
  local timed = M.TIMED[mode] or ('the ' .. mode .. ' pass')
  local tail = ' The upstream CSV records no CUDA, driver, or torch version; the Liger release '
    .. "rides each run's labels. Comparable only within one kernel, workload, timed pass, and GPU."
  if metric == 'speed' then
    return record.document('BenchmarkProtocol', {
      harness = { name = M.HARNESS.name, repository = M.HARNESS.repository },
      measurement = { timer = 'cuda_events', primaryStatistic = 'median' },
      comparability = {
        notes = 'Timed: ' .. timed .. ', via triton.testing.do_bench with quantiles 0.5/0.2/0.8 '
          .. '(median with p20/p80 spread).' .. tail,
        family = 'liger_kernel_bench',
      },
    }, {
      name = names.dns_name('liger-bench-do-bench', mode),
      title = 'Liger benchmark harness · ' .. mode .. ' pass',
    })
  end
  local what = metric == 'memory' and ('peak GPU memory allocated (' .. unit .. ')')
    or (metric .. ' (' .. unit .. ')')
  return record.document('BenchmarkProtocol', {
    harness = { name = M.HARNESS.name, repository = M.HARNESS.repository },
    measurement = {
      method = metric == 'memory' and 'torch.cuda.max_memory_allocated' or metric,
      primaryStatistic = 'median',
    },
    comparability = {
      notes = 'Measured: ' .. what .. ' while running ' .. timed .. ', repeated, with quantiles '
        .. '0.5/0.2/0.8 (median with p20/p80 spread).' .. tail,
      family = 'liger_kernel_bench',
    },
  }, {
    name = names.dns_name('liger-bench', metric, mode),
    title = 'Liger benchmark harness · ' .. metric .. ', ' .. mode .. ' pass',
  })
end

local function environment_document(gpu)
  local vendor, product, ff = env.split_gpu_name(gpu)
  return record.document('ExecutionEnvironment', {
    hardware = { vendor = vendor, product = product ~= '' and product or nil, formFactor = ff,
      architecture = env.arch_of_gpu_name(gpu) },
    software = output.object(),
  }, {
    name = names.dns_name('liger-bench', names.gpu_slug(gpu)),
    title = 'Liger benchmark host · ' .. env.short_device_name(gpu),
  })
end

local function implementation_document(kernel, provider, version)
  return record.document('KernelImplementation', {
    provider = provider,
    kernel = kernel,
    source = M.SOURCE,
    ligerVersion = version ~= '' and version or nil,
  }, {
    name = names.dns_name('liger', kernel, provider, version),
    title = record.kernel_title(kernel) .. ' · ' .. provider .. ' (Liger-Kernel '
      .. (version ~= '' and version or 'unknown') .. ' benchmark)',
  })
end

-- A run of a metric other than speed: all three quantiles are measurements
-- in the row's own unit, and there is no timing block.
local function other_run(o)
  local measurements, metrics = {}, {}
  local unit_key = o.unit:lower():gsub('[^%w]+', '_')
  for i, q in ipairs(M.QUANTILES) do
    measurements[i] = { unit = o.unit, value = o.values[i], metric = o.metric,
      statistic = q == 0.5 and 'median' or record.quantile_name(q) }
    metrics[record.metric_name(q, unit_key)] = o.values[i]
  end
  return record.document('BenchmarkRun', {
    status = 'passed',
    observedAt = names.iso8601(o.time),
    measurements = measurements,
    sourceNative = {
      source = M.SOURCE,
      metrics = metrics,
      benchmark = o.kernel .. '/' .. o.mode .. '/' .. o.metric,
      externalId = names.external_id { kernel = o.kernel, mode = o.mode, provider = o.provider,
        gpu = o.gpu, workload = o.slug, time = o.time, metric = o.metric },
    },
  }, {
    name = names.dns_name('liger', o.kernel, o.metric, o.mode, o.provider, names.gpu_slug(o.gpu),
      o.slug),
    title = record.kernel_title(o.kernel) .. ' · ' .. o.provider .. ' · ' .. o.mode .. ' · ' .. o.metric,
    labels = o.labels,
  })
end

--- The sealed bundle of one row: speed rows as latency records, memory rows in their unit.
--
-- The sealed bundle of one parsed row, or nil and a message.
--
-- @signature liger.row_to_bundle(row) -> bundle | nil, message
-- @example
--   for _, row in ipairs(rows) do local b = liger.row_to_bundle(row) end
function M.row_to_bundle(row)
  if row.error then return nil, row.error end
  for _, col in ipairs(M.HEADER) do
    if row[col] == nil then return nil, 'row lacks column ' .. col end
    -- records are JSON, whose strings are UTF-8 (found by tests/fuzz/fuzz_csv.c)
    if not utf8.len(row[col]) then return nil, col .. ' is not valid UTF-8' end
  end
  local kernel, provider, mode = row.kernel_name, row.kernel_provider, row.kernel_operation_mode
  local metric, unit = row.metric_name, row.metric_unit
  for _, col in ipairs { 'kernel_name', 'kernel_provider', 'kernel_operation_mode', 'metric_name',
    'metric_unit', 'x_name', 'gpu_name' } do
    if row[col] == '' then return nil, col .. ' is empty' end
  end
  local config, cerr = M.parse_config(row.extra_benchmark_config_str)
  if not config then return nil, cerr end
  local time, terr = names.parse_time(row.timestamp)
  if not time then return nil, 'timestamp: ' .. terr end
  local values = {}
  for i, col in ipairs(Y_COLUMNS) do
    local v, err = number_field(row, col)
    if not v then return nil, err end
    -- a time of zero or below is no measurement; a negative amount of anything else neither
    if v < 0 or (v == 0 and metric == 'speed') then
      return nil, string.format('%s is %s (%s): a %s must be %s', col, v < 0 and 'negative' or 'zero',
        quoted(row[col]), metric == 'speed' and 'time' or metric,
        metric == 'speed' and 'positive' or 'zero or more')
    end
    values[i] = v + 0.0
  end

  local params, dtype = {}, nil
  for k, v in pairs(config) do
    if k == 'dtype' then
      dtype = names.dtype_name(tostring(v))
    else
      params[names.param_name(k)] = v
    end
  end
  local x = decimal(row.x_value)
  if x == nil then
    return nil, string.format('x_value is not a decimal number (%s)', quoted(row.x_value))
  end
  params[names.param_name(row.x_name)] = x
  -- found by tests/fuzz/fuzz_csv.c: such values made the digest raise
  for k, v in pairs(config) do
    local why = unrecordable(v)
    if why then return nil, string.format('extra_benchmark_config_str: %s %s', k, why) end
  end
  if unrecordable(x) then return nil, string.format('x_value %s (%s)', unrecordable(x), quoted(row.x_value)) end
  local slug = names.workload_slug(params, dtype)
  local gpu = row.gpu_name
  local version = row.liger_version or ''
  local labels = version ~= '' and { liger_version = version } or output.object()

  local run
  if metric == 'speed' then
    if unit ~= 'ms' then return nil, 'speed rows must be in ms, got ' .. unit end
    run = record.latency_run {
      kernel = kernel, mode = mode, provider = provider, gpu = gpu, workload_slug = slug,
      quantiles = M.QUANTILES, values_ms = values, time = time, source = M.SOURCE,
      name_prefix = 'liger', labels = labels,
    }
  else
    run = other_run { kernel = kernel, mode = mode, provider = provider, gpu = gpu, slug = slug,
      metric = metric, unit = unit, values = values, time = time, labels = labels }
  end
  local bundle = {
    run = run,
    protocol = protocol_document(mode, metric, unit),
    environment = environment_document(gpu),
    workload = record.workload { kernel = kernel, operation = mode, parameters = params,
      dtype = dtype, annotations = {
        liger_x_name = row.x_name,
        liger_x_label = row.x_label,
        liger_extra_benchmark_config = row.extra_benchmark_config_str,
        liger_gpu_name = gpu,
      } },
    implementation = implementation_document(kernel, provider, version),
  }
  return record.seal(bundle)
end

---------------------------------------------------------------------------
-- Bundle -> row (our results in Liger's CSV)
---------------------------------------------------------------------------

-- extra_benchmark_config_str as Python's json.dumps writes it.
local function config_string(params, dtype, x_key)
  local keys, vals = {}, {}
  if dtype then
    keys[1], vals.dtype = 'dtype', M.TORCH_DTYPE[dtype] or dtype
  end
  for k, v in pairs(params) do
    if k ~= x_key then
      local lk = M.LIGER_PARAM[k] or k
      keys[#keys + 1] = lk
      vals[lk] = v
    end
  end
  table.sort(keys, function(a, b)
    local ra, rb = CONFIG_ORDER[a], CONFIG_ORDER[b]
    if ra and rb then return ra < rb end
    if ra or rb then return ra ~= nil end
    return a < b
  end)
  local parts = {}
  for i, k in ipairs(keys) do
    local v = vals[k]
    local s = type(v) == 'number' and output.format_pyfloat(v) or output.encode_line(v)
    parts[i] = output.quote(k) .. ': ' .. s
  end
  return '{' .. table.concat(parts, ', ') .. '}'
end

--- A CSV row of a bundle; the x axis from the workload's annotation, opts.x, hidden or seq.
--
-- A row (table keyed by M.HEADER) of a bundle, or nil and a message.
--
-- @signature liger.bundle_to_row(bundle [, opts]) -> row | nil, message
-- @example
--   local row = liger.bundle_to_row(bundle, {x = "seq"})
function M.bundle_to_row(bundle, opts)
  opts = opts or {}
  local run, wl = bundle.run, bundle.workload
  if type(run) ~= 'table' or type(wl) ~= 'table' then return nil, 'bundle lacks run or workload' end
  local rs, ws = run.spec or {}, wl.spec or {}
  local ann = (wl.metadata and wl.metadata.annotations) or {}
  local params = ws.parameters or {}
  local x_name = ann.liger_x_name
  local x_key = x_name and names.param_name(x_name) or opts.x
  if not x_key then x_key = params.hidden and 'hidden' or (params.seq and 'seq') or next(params) end
  if not x_name then x_name = M.X_AXIS[x_key] and M.X_AXIS[x_key][1] or x_key end
  local x_label = ann.liger_x_label or (M.X_AXIS[x_key] and M.X_AXIS[x_key][2]) or x_key
  local metric, unit, y
  local metrics = rs.sourceNative and rs.sourceNative.metrics or {}
  if rs.timing then
    metric, unit = 'speed', 'ms'
    y = { metrics.ms_50, metrics.ms_20, metrics.ms_80 }
  else
    local m = rs.measurements and rs.measurements[1]
    if not m then return nil, 'run has neither timing nor measurements' end
    metric, unit = m.metric, m.unit
    y = {}
    for i, q in ipairs(M.QUANTILES) do
      for _, mm in ipairs(rs.measurements) do
        if mm.statistic == (q == 0.5 and 'median' or record.quantile_name(q)) then y[i] = mm.value end
      end
    end
  end
  for i = 1, 3 do
    if type(y[i]) ~= 'number' then return nil, 'run lacks the ' .. M.QUANTILES[i] .. ' quantile' end
  end
  local time = rs.observedAt and names.parse_time(rs.observedAt)
  local labels = run.metadata and run.metadata.labels or {}
  local impl = bundle.implementation and bundle.implementation.spec or {}
  return {
    kernel_name = ws.kernel,
    kernel_provider = impl.provider,
    kernel_operation_mode = ws.operation,
    metric_name = metric,
    metric_unit = unit,
    x_name = x_name,
    x_label = x_label,
    x_value = params[x_key],
    y_value_50 = y[1] + 0.0,
    y_value_20 = y[2] + 0.0,
    y_value_80 = y[3] + 0.0,
    extra_benchmark_config_str = ann.liger_extra_benchmark_config
      or config_string(params, ws.dtype, x_key),
    gpu_name = ann.liger_gpu_name or env.device_name(bundle.environment),
    timestamp = time and names.liger_time(time) or '',
    liger_version = labels.liger_version or labels.kluabench_version or '',
  }
end

--- CSV text, header and one line per row.
--
-- @signature liger.to_csv(rows) -> text
-- @example
--   io.write(liger.to_csv({liger.bundle_to_row(bundle)}))
function M.to_csv(rows)
  local out = { output.csv_line(M.HEADER) }
  for _, row in ipairs(rows) do
    local fields = {}
    for i, k in ipairs(M.HEADER) do fields[i] = row[k] end
    out[#out + 1] = output.csv_line(fields, #M.HEADER)
  end
  return table.concat(out)
end

return M
