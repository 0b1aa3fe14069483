--- Tables for people: aligned terminal and markdown tables, and the results table of a list of bundles.
local args = require 'kluabench.util.args'
local result = require 'kluabench.result'
local record = require 'kluabench.record'
local ceilings = require 'kluabench.measure.ceilings'

local M = {}

local function cell_text(col, row)
  local v = row[col.key]
  if col.format then
    if type(col.format) == 'function' then v = col.format(v, row)
    elseif v ~= nil then v = string.format(col.format, v) end
  end
  return v == nil and '' or tostring(v)
end

local function ulen(s) return utf8.len(s) or #s end

local function pad(s, w, right)
  local fill = string.rep(' ', w - ulen(s))
  return right and fill .. s or s .. fill
end

local function columns_and_cells(columns, rows)
  local widths, cells = {}, {}
  for c, col in ipairs(columns) do widths[c] = ulen(col.title or col.key) end
  for r, row in ipairs(rows) do
    cells[r] = {}
    for c, col in ipairs(columns) do
      local s = cell_text(col, row)
      cells[r][c], widths[c] = s, math.max(widths[c], ulen(s))
    end
  end
  return widths, cells
end

--- An aligned plain-text table; columns: {key, title, align = "right", format (printf or function(v, row))}.
-- @signature report.format_table(columns, rows) -> text
-- @example
--   io.write(report.format_table({{key = "name"}, {key = "ms", align = "right", format = "%.3f"}},
--     {{name = "fused", ms = 0.1375}}))
function M.format_table(columns, rows)
  args.check('report.format_table', 1, columns, 'table', 'list of columns')
  args.check('report.format_table', 2, rows, 'table', 'list of rows')
  local widths, cells = columns_and_cells(columns, rows)
  local out, head, rule = {}, {}, {}
  for c, col in ipairs(columns) do
    head[c] = pad(col.title or col.key, widths[c], col.align == 'right')
    rule[c] = string.rep('-', widths[c])
  end
  out[1] = table.concat(head, '  '):gsub('%s+$', '')
  out[2] = table.concat(rule, '  ')
  for r = 1, #rows do
    local line = {}
    for c, col in ipairs(columns) do line[c] = pad(cells[r][c], widths[c], col.align == 'right') end
    out[#out + 1] = table.concat(line, '  '):gsub('%s+$', '')
  end
  return table.concat(out, '\n') .. '\n'
end

--- The same table as GitHub markdown, for pasting into pull requests.
-- @signature report.format_markdown(columns, rows) -> text
-- @example io.write(report.format_markdown({{key = "name"}, {key = "ms"}}, {{name = "fused", ms = 0.14}}))
function M.format_markdown(columns, rows)
  args.check('report.format_markdown', 1, columns, 'table', 'list of columns')
  args.check('report.format_markdown', 2, rows, 'table', 'list of rows')
  local widths, cells = columns_and_cells(columns, rows)
  local function esc(s) return (s:gsub('|', '\\|')) end
  local out, head, rule = {}, {}, {}
  for c, col in ipairs(columns) do
    head[c] = pad(esc(col.title or col.key), widths[c], false)
    local w = math.max(widths[c], 3)
    rule[c] = col.align == 'right' and string.rep('-', w - 1) .. ':' or string.rep('-', w)
  end
  out[1] = '| ' .. table.concat(head, ' | ') .. ' |'
  out[2] = '| ' .. table.concat(rule, ' | ') .. ' |'
  for r = 1, #rows do
    local line = {}
    for c, col in ipairs(columns) do line[c] = pad(esc(cells[r][c]), widths[c], col.align == 'right') end
    out[#out + 1] = '| ' .. table.concat(line, ' | ') .. ' |'
  end
  return table.concat(out, '\n') .. '\n'
end

--- A number for a table cell with `decimals` places (default 2), e-notation from 1e9, "n/a" if not finite.
-- @signature report.cell_number(x [, decimals]) -> text | nil
-- @example print(report.cell_number(1.5), report.cell_number(1e300), report.cell_number(0.001))
function M.cell_number(x, decimals)
  if type(x) ~= 'number' then return nil end
  if x ~= x or x == math.huge or x == -math.huge then return 'n/a' end
  decimals = decimals or 2
  local a = math.abs(x)
  if a >= 1e9 then return string.format('%.3e', x) end
  if a > 0 and a < 0.5 * 10 ^ -decimals then return string.format('%.3g', x) end
  return string.format('%.' .. decimals .. 'f', x)
end

local function us(ns) return type(ns) == 'number' and M.cell_number(ns / 1000, 2) or nil end
local function number(places) return function(v) return M.cell_number(v, places) end end
local function or_na(places) return function(v) return v == false and 'n/a' or M.cell_number(v, places) end end

--- Columns of the results table; an `optional` one is left out when no row has a value for it.
M.RESULT_COLUMNS = {
  { key = 'kernel', title = 'kernel' }, { key = 'mode', title = 'mode' }, { key = 'provider', title = 'provider' },
  { key = 'workload', title = 'workload' },
  -- optional: a table of memory runs alone has no time
  { key = 'median_ns', title = 'median us', align = 'right', format = us, optional = 'time' },
  { quantiles = true }, -- a column per quantile the rows carry ("p20 us", "p80 us", ...: record.quantile_of)
  { key = 'gbps', title = 'GB/s', align = 'right', format = number(1), optional = 'time' },
  { key = 'pct_copy', title = '% of copy', align = 'right', optional = true,
    format = function(v) return M.cell_number(v, 1) or 'n/a' end },
  { key = 'mem_mb', title = 'peak MB', align = 'right', optional = true, format = number(1) },
  { key = 'energy_mj', title = 'mJ/call', align = 'right', optional = true, format = or_na(3) },
  { key = 'power_w', title = 'W', align = 'right', optional = true, format = or_na(0) },
  { key = 'sm_mhz', title = 'SM MHz', align = 'right', optional = true, format = or_na(0) },
  { key = 'flag', title = 'check', optional = true },
  { key = 'n', title = 'samples', align = 'right', optional = 'time' },
  { key = 'sessions', title = 'sessions', align = 'right', optional = true },
  { key = 'ci_pct', title = 'ci95 ±%', align = 'right', optional = true,
    format = function(v, row) return (M.cell_number(v, 2) or 'n/a') .. (row.ci_flag and '*' or '') end },
  { key = 'device', title = 'device' },
  { key = 'protocol', title = 'protocol', optional = true },
  { key = 'timer', title = 'backend/timer', optional = true },
  { key = 'flags', title = 'flags', optional = true },
}

--- How far past the copy floor a median may be before the table flags `<floor` (check.CEILING_SPREAD).
M.CEILING_SPREAD = ceilings.CEILING_SPREAD
--- The width the results table aims to fit (a sweep's rows, and its heading lines).
M.WIDTH = 120
--- Results with fewer samples than this are flagged `n<5` in the table.
M.MIN_SAMPLES = 5
--- A row whose ci95 is wider than this (± percent of its median) is flagged `noisy` (the HTML report reads it too).
M.NOISY_CI_PCT = 10

--- What each flag of the results table's flags column means.
M.FLAGS = {
  ['n<5'] = 'fewer than 5 samples: the median and its interval mean little',
  ['!conv'] = 'the stopping rule sought a noise target (rse_median) and ended without reaching it',
  ['<floor'] = 'the median beats the roofline floor of its bytes and flops (the copy ceiling) by more than '
    .. 'the ceiling\'s own spread: the measurement or the cost model is wrong',
  ['ci=range'] = 'the ci95 (marked *) is the samples\' whole [min, max]: too few samples for the order '
    .. 'statistics of the median, so the interval says little',
  ['ci~1'] = 'the ci95 (marked *) is set by one outlier: without the sample farthest from the median it is '
    .. 'less than half as wide',
  noisy = 'the ci95 is wider than ±' .. M.NOISY_CI_PCT .. ' % of the median: too much spread to trust the median',
}

-- "cuda/cuda_events": the point's backend and its protocol's timer.
local function timer_text(p)
  if not p.backend and not p.timer then return nil end
  return tostring(p.backend or '?') .. '/' .. tostring(p.timer or '?')
end

local function not_converged(stop, rule)
  if type(stop) ~= 'table' or stop.converged ~= false then return false end
  if stop.rule == 'rse_median' or stop.rule == 'interrupted' then return true end
  if type(rule) ~= 'table' or rule.rule == 'rse_median' then return type(rule) == 'table' end
  for _, r in ipairs(type(rule.rules) == 'table' and rule.rules or {}) do
    if type(r) == 'table' and r.rule == 'rse_median' then return true end
  end
  return false
end

-- The flags of one session (the table's flags column); ci_pct: its ci95 when it is a row of its own.
local function session_flags(s, n, ci_flag, ci_pct)
  local ex = type(s.evidence.execution) == 'table' and s.evidence.execution or {}
  local f = {}
  if n and n < M.MIN_SAMPLES then f[#f + 1] = 'n<' .. M.MIN_SAMPLES end
  if not_converged(ex.stop, ex.stopping) then f[#f + 1] = '!conv' end
  if s.implausible or (type(s.pct_floor) == 'number' and s.pct_floor > 100 * (1 + M.CEILING_SPREAD)) then
    f[#f + 1] = '<floor'
  end
  f[#f + 1] = ci_flag
  if type(ci_pct) == 'number' and ci_pct > M.NOISY_CI_PCT then f[#f + 1] = 'noisy' end
  return f
end

-- The row of a session, or of a point (agg: its figures the aggregate of its passed sessions).
local function row_of(x, energy, agg)
  local memory = x.metric == 'memory'
  local row = {
    kernel = x.kernel, mode = x.mode, provider = x.provider, workload = x.id, device = x.device,
    protocol = x.protocol, timer = timer_text(x), median_ns = x.median_ns, gbps = x.gbps, pct_copy = x.pct_copy,
    n = x.n, mem_mb = memory and x.memory_median or nil,
  }
  for f, v in pairs(x) do if record.quantile_of(f) then row[f] = v end end
  if energy and not memory then
    row.energy_mj = x.energy_j and x.energy_j * 1000 or false
    row.power_w, row.sm_mhz = x.power_w or false, x.sm_mhz or false
  end
  if not row.gbps and x.bytes and row.median_ns and row.median_ns > 0 then row.gbps = x.bytes / row.median_ns end
  if agg then
    row.ci_pct, row.ci_flag = x.ci_pct, x.ci_flag
    if #x.passed > 1 then row.sessions = #x.passed end
    local seen, flags = {}, {}
    for i, s in ipairs(x.passed) do -- the point's n and ci95 (over its sessions when several) go with its first
      for _, fl in ipairs(session_flags(s, i == 1 and row.n, #x.passed == 1 and x.ci_flag or nil, i == 1 and x.ci_pct)) do
        if not seen[fl] then seen[fl], flags[#flags + 1] = true, fl end
      end
    end
    row.flags = #flags > 0 and table.concat(flags, ' ') or nil
    return row
  end
  row.ci_pct, row.ci_flag = result.ci_percent(x)
  if x.status and x.status ~= 'passed' then
    local reasons = type(x.evidence.reasons) == 'table' and x.evidence.reasons or {}
    row.flag = x.status == 'suspected_reward_hack' and x.implausible and #reasons <= 1 and 'IMPLAUSIBLE' or x.status
    if type(reasons[1]) == 'string' then row.reason = reasons[1] end
  end
  local f = session_flags(x, row.n, row.ci_flag, row.ci_pct)
  row.flags = #f > 0 and table.concat(f, ' ') or nil
  return row
end

--- The rows of the results table: one per point and one per session that did not pass (opts.sessions:
-- one per session; opts.metrics.energy: the energy columns).
-- @signature table.results_rows(bundles [, opts]) -> rows
-- @example
--   local r = {samples = {0.11, 0.1, 0.12}, protocol = kb.do_bench.do_bench_protocol()}
--   local b = record.from_result{kernel = "k", mode = "forward", provider = "p", result = r}
--   print(results.results_rows({b})[1].n)
function M.results_rows(bundles, opts)
  args.check('table.results_rows', 1, bundles, 'table', 'list of bundles')
  args.check('table.results_rows', 2, opts, 'table|nil', 'options')
  local energy, rows = opts and type(opts.metrics) == 'table' and opts.metrics.energy, {}
  for _, p in ipairs(result.points(bundles)) do
    if opts and opts.sessions then
      for _, s in ipairs(p.sessions) do rows[#rows + 1] = row_of(s, energy) end
    else
      if #p.passed > 0 then rows[#rows + 1] = row_of(p, energy, true) end
      for _, s in ipairs(p.failed) do rows[#rows + 1] = row_of(s, energy) end
    end
  end
  return rows
end

--- Columns said once above the table when every row agrees on them, so a sweep's table fits 120 columns.
M.SHARED_COLUMNS = { kernel = true, device = true, protocol = true, timer = true }

-- The value every row has for key, or nil when they differ or one lacks it.
local function common_value(rows, key)
  local v = rows[1] and rows[1][key]
  if v == nil then return nil end
  for _, row in ipairs(rows) do if row[key] ~= v then return nil end end
  return v
end

-- The words of the workload ids every row shares, said once above the table with "*" for the words
-- that vary ("hidden8192-kv_heads8-q_heads32-seq*-bf16" over "seq1024", "seq2048"), which the cells keep.
local function shared_workload(rows)
  if #rows < 2 then return nil end
  local words, n = {}, nil
  for i, row in ipairs(rows) do
    if type(row.workload) ~= 'string' then return nil end
    local w = {}
    for word in (row.workload .. '-'):gmatch('([^-]*)-') do w[#w + 1] = word end
    if n and #w ~= n then return nil end
    n, words[i] = #w, w
  end
  local same, varying = {}, 0
  for j = 1, n do
    same[j] = true
    for i = 2, #rows do if words[i][j] ~= words[1][j] then same[j] = false break end end
    if not same[j] then varying = varying + 1 end
  end
  if varying == 0 or varying == n then return nil end
  local pattern = {}
  for j = 1, n do
    -- the axis name the varying words start with ("seq" of seq1024, seq2048), then "*"
    local prefix = not same[j] and words[1][j]:match('^([%a_]*)') or nil
    for i = 2, #rows do if prefix and words[i][j]:match('^([%a_]*)') ~= prefix then prefix = '' end end
    pattern[j] = same[j] and words[1][j] or ((prefix or '') .. '*')
  end
  for i, row in ipairs(rows) do
    local cell = {}
    for j = 1, n do if not same[j] then cell[#cell + 1] = words[i][j] end end
    row.workload = table.concat(cell, '-')
  end
  return table.concat(pattern, '-')
end

local function result_columns(rows)
  local cols, heading, workload, timed = {}, {}, shared_workload(rows), false
  for _, row in ipairs(rows) do timed = timed or row.mem_mb == nil end
  local list = {}
  for _, col in ipairs(M.RESULT_COLUMNS) do
    if col.quantiles then
      local fields, seen = {}, {}
      for _, row in ipairs(rows) do
        for f in pairs(row) do if not seen[f] and record.quantile_of(f) then seen[f], fields[#fields + 1] = true, f end end
      end
      table.sort(fields, function(a, b) return record.quantile_of(a) < record.quantile_of(b) end)
      for _, f in ipairs(fields) do
        list[#list + 1] = { key = f, title = f:sub(1, -4) .. ' us', align = 'right', format = us, optional = 'time' }
      end
    else
      list[#list + 1] = col
    end
  end
  for _, col in ipairs(list) do
    if col.key == 'workload' and workload then heading[#heading + 1] = 'workload ' .. workload end
    local used = not col.optional or (col.optional == 'time' and timed)
    for _, row in ipairs(rows) do
      if used then break end
      used = row[col.key] ~= nil
    end
    local shared = M.SHARED_COLUMNS[col.key] and common_value(rows, col.key)
    if shared then heading[#heading + 1] = col.title .. ' ' .. tostring(shared)
    elseif used then cols[#cols + 1] = col end
  end
  if #heading == 0 then return cols, nil end
  -- one line, or as many as it takes to stay within M.WIDTH
  local lines, line = {}, heading[1]
  for i = 2, #heading do
    if ulen(line) + 3 + ulen(heading[i]) > M.WIDTH then lines[#lines + 1], line = line, heading[i]
    else line = line .. ' · ' .. heading[i] end
  end
  lines[#lines + 1] = line
  return cols, table.concat(lines, '\n')
end

-- Why each row whose check is not passed is not: one line per row, after the table.
local function reasons_text(rows, bullet)
  local out = {}
  for _, row in ipairs(rows) do
    if row.flag and row.reason then
      local why = row.reason
      if #why > 400 then why = why:sub(1, 397) .. '...' end
      -- an audit's reason starts with its status already
      if why:sub(1, #row.flag + 2) ~= row.flag .. ': ' then why = row.flag .. ': ' .. why end
      out[#out + 1] = string.format('%s%s %s %s: %s\n', bullet, tostring(row.mode), tostring(row.provider),
        tostring(row.workload), why)
    end
  end
  return table.concat(out)
end

--- The aligned terminal table of bundles: what every row shares in a line above, failures' reasons after.
-- @signature report.results_table(bundles [, opts]) -> text
-- @example
--   local r = {samples = {0.11, 0.1, 0.12}, protocol = kb.do_bench.do_bench_protocol()}
--   io.write(report.results_table({record.from_result{kernel = "k", mode = "forward", provider = "p", result = r}}))
function M.results_table(bundles, opts)
  args.check('report.results_table', 1, bundles, 'table', 'list of bundles')
  local rows = M.results_rows(bundles, opts)
  local cols, heading = result_columns(rows)
  local why = reasons_text(rows, 'check: ')
  return (heading and (heading .. '\n') or '') .. M.format_table(cols, rows) .. why
end

--- The markdown table of a list of bundles, with why a row's check is not passed in a list after it.
-- @signature report.results_markdown(bundles [, opts]) -> text
-- @example
--   local r = {samples = {0.11, 0.1, 0.12}, protocol = kb.do_bench.do_bench_protocol()}
--   local b = record.from_result{kernel = "k", mode = "forward", provider = "p", result = r}
--   io.write(report.results_markdown({b}))
function M.results_markdown(bundles, opts)
  args.check('report.results_markdown', 1, bundles, 'table', 'list of bundles')
  local rows = M.results_rows(bundles, opts)
  local cols, heading = result_columns(rows)
  local why = reasons_text(rows, '- ')
  return (heading and (heading .. '\n\n') or '') .. M.format_markdown(cols, rows) .. (why ~= '' and ('\n' .. why) or '')
end

return M
