--- Tables for people: aligned terminal tables, markdown tables, and the
-- results table of a list of bundles; Liger's CSV of bundles.
local M = {}

local inference = require 'kluabench.stats.inference'

local function cell_text(col, row)
  local v = row[col.key]
  if col.format then
    if type(col.format) == 'function' then v = col.format(v, row)
    elseif v ~= nil then v = string.format(col.format, v) end
  end
  if v == nil then return '' end
  return tostring(v)
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
      cells[r][c] = s
      if ulen(s) > widths[c] then widths[c] = ulen(s) end
    end
  end
  return widths, cells
end

--- An aligned plain-text table; columns: {key, title, align = "left"|"right", format}.
--
-- format is a printf pattern or a function(value, row).
--
-- Returns the text, ending in a newline.
--
-- @signature output.format_table(columns, rows) -> text
-- @example
--   io.write(output.format_table({{key = "name"}, {key = "ms", align = "right", format = "%.3f"}},
--     {{name = "fused", ms = 0.1375}}))
function M.format_table(columns, rows)
  local widths, cells = columns_and_cells(columns, rows)
  local out = {}
  local head, rule = {}, {}
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
--
-- @signature output.format_markdown(columns, rows) -> text
-- @example
--   io.write(output.format_markdown({{key = "name"}, {key = "ms"}}, {{name = "fused", ms = 0.14}}))
function M.format_markdown(columns, rows)
  local widths, cells = columns_and_cells(columns, rows)
  local function esc(s) return (s:gsub('|', '\\|')) end
  local out = {}
  local head, rule = {}, {}
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

--- A number for a table cell with `decimals` places (default 2): e-notation from 1e9 up (a value
-- that far out is a broken input; 300 digits of it would break the table), three significant
-- digits where the places would show 0 (0.001, not 0.00), "n/a" for NaN and infinities, nil for
-- what is not a number.
--
-- @signature output.cell_number(x [, decimals]) -> text | nil
-- @example
--   print(output.cell_number(1.5), output.cell_number(1e300), output.cell_number(0.001))
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

--- Columns of the results table that M.results_rows fills. A column marked
-- `optional` is left out of the table when no row has a value for it.
M.RESULT_COLUMNS = {
  { key = 'kernel', title = 'kernel' },
  { key = 'mode', title = 'mode' },
  { key = 'provider', title = 'provider' },
  { key = 'workload', title = 'workload' },
  { key = 'median_ns', title = 'median us', align = 'right', format = us },
  { key = 'p20_ns', title = 'p20 us', align = 'right', format = us },
  { key = 'p80_ns', title = 'p80 us', align = 'right', format = us },
  { key = 'gbps', title = 'GB/s', align = 'right', format = number(1) },
  { key = 'pct_copy', title = '% of copy', align = 'right', optional = true,
    format = function(v) return M.cell_number(v, 1) or 'n/a' end },
  { key = 'flag', title = 'check', optional = true },
  { key = 'n', title = 'samples', align = 'right' },
  { key = 'ci_pct', title = 'ci95 ±%', align = 'right', optional = true,
    format = function(v) return M.cell_number(v, 2) or 'n/a' end },
  { key = 'device', title = 'device' },
  { key = 'protocol', title = 'protocol', optional = true },
  { key = 'timer', title = 'backend/timer', optional = true },
  { key = 'flags', title = 'flags', optional = true },
}

--- Results with fewer samples than this are flagged `n<5` in the table.
M.MIN_SAMPLES = 5

--- What each flag of the results table's flags column means.
M.FLAGS = {
  ['n<5'] = 'fewer than 5 samples: the median and its interval mean little',
  ['!conv'] = 'the stopping rule sought a noise target (rse_median) and ended without reaching it',
  ['<floor'] = 'the median beats the roofline floor of its bytes and flops (the copy ceiling): '
    .. 'the measurement or the cost model is wrong',
}

-- "cuda/cuda_events": the point's backend and its protocol's timer.
local function timer_text(p)
  if not p.backend and not p.timer then return nil end
  return tostring(p.backend or '?') .. '/' .. tostring(p.timer or '?')
end

-- The relative half-width (%) of the 95 % interval of the median of the
-- recorded samples (inference.rse_median's interval); nil with fewer than 2.
local function ci_percent(values)
  if type(values) ~= 'table' or #values < 2 then return nil end
  local _, med, lo, hi = inference.rse_median(values, { confidence = 0.95 })
  if not med or med <= 0 then return nil end
  return 100 * (hi - lo) / (2 * med)
end

-- True when the run's stopping rule aimed at a noise target (rse_median,
-- alone or inside `any`) or was interrupted, and did not converge.
local function not_converged(stop, rule)
  if type(stop) ~= 'table' or stop.converged ~= false then return false end
  if stop.rule == 'rse_median' or stop.rule == 'interrupted' then return true end
  if type(rule) ~= 'table' then return false end
  if rule.rule == 'rse_median' then return true end
  for _, r in ipairs(type(rule.rules) == 'table' and rule.rules or {}) do
    if type(r) == 'table' and r.rule == 'rse_median' then return true end
  end
  return false
end

-- The flags of a row (see M.FLAGS), space separated, or nil.
local function flags_of(row, p)
  local ex = type(p.evidence.execution) == 'table' and p.evidence.execution or {}
  local f = {}
  if row.n and row.n < M.MIN_SAMPLES then f[#f + 1] = 'n<' .. M.MIN_SAMPLES end
  if not_converged(ex.stop, ex.stopping) then f[#f + 1] = '!conv' end
  -- set by whoever checks the median against the copy floor; a percentage
  -- of the floor above 100 says the same
  if p.implausible or (type(p.pct_floor) == 'number' and p.pct_floor > 100) then f[#f + 1] = '<floor' end
  return #f > 0 and table.concat(f, ' ') or nil
end

--- One row per bundle for output.RESULT_COLUMNS (kernel, mode, provider, workload, median/p20/p80
-- us, GB/s, % of copy, check (the run's status when it is not passed; row.reason: its first reason),
-- samples, ci95 ±% (the 95 %
-- interval of the median over the median), device, protocol, backend/timer, flags: n<5, !conv,
-- <floor as output.FLAGS explains; the optional columns are left out of the tables when no row has
-- them).
--
-- @signature output.results_rows(bundles) -> rows
-- @example
--   local rows = output.results_rows(bundles)
function M.results_rows(bundles)
  local point = require 'kluabench.record.point'
  local rows = {}
  for i, b in ipairs(bundles) do
    local p = point.of(b)
    local row = {
      kernel = p.kernel, mode = p.mode, provider = p.provider, workload = p.id, device = p.device,
      protocol = p.protocol, timer = timer_text(p), median_ns = p.median_ns,
      gbps = p.gbps, pct_copy = p.pct_copy, n = p.n,
    }
    row.p20_ns, row.p80_ns = p.p20_ns, p.p80_ns
    row.ci_pct = ci_percent(p.samples_ms)
    if p.status and p.status ~= 'passed' then
      local reasons = type(p.evidence.reasons) == 'table' and p.evidence.reasons or {}
      -- IMPLAUSIBLE: the copy-floor check alone; another finding says its status
      local only_floor = p.implausible and #reasons <= 1
      row.flag = p.status == 'suspected_reward_hack' and only_floor and 'IMPLAUSIBLE' or p.status
      if type(reasons[1]) == 'string' then row.reason = reasons[1] end
    end
    if not row.gbps and p.bytes and row.median_ns and row.median_ns > 0 then row.gbps = p.bytes / row.median_ns end
    row.flags = flags_of(row, p)
    rows[i] = row
  end
  return rows
end

-- M.RESULT_COLUMNS without the optional columns that no row fills.
--- The columns that say what and how every row measured: when all rows agree on them, they go into a
-- line above the table instead of repeating on each row (the table then fits 120 columns).
M.SHARED_COLUMNS = { kernel = true, device = true, protocol = true, timer = true }

-- The value every row has for key, or nil when they differ or one lacks it.
local function common_value(rows, key)
  local v = rows[1] and rows[1][key]
  if v == nil then return nil end
  for _, row in ipairs(rows) do if row[key] ~= v then return nil end end
  return v
end

local function result_columns(rows)
  local cols, heading = {}, {}
  for _, col in ipairs(M.RESULT_COLUMNS) do
    local used = not col.optional
    for _, row in ipairs(rows) do
      if used then break end
      used = row[col.key] ~= nil
    end
    local shared = M.SHARED_COLUMNS[col.key] and common_value(rows, col.key)
    if shared then
      heading[#heading + 1] = col.title .. ' ' .. tostring(shared)
    elseif used then
      cols[#cols + 1] = col
    end
  end
  return cols, #heading > 0 and table.concat(heading, ' · ') or nil
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

--- The aligned terminal table of a list of bundles; the device, protocol and backend/timer that
-- every row shares (and the kernel) are said once, in a line above it, and why a row's check is
-- not passed (its first reason) in a line after it.
--
-- @signature output.results_table(bundles) -> text
-- @example
--   io.write(output.results_table(bundles))
function M.results_table(bundles)
  local rows = M.results_rows(bundles)
  local cols, heading = result_columns(rows)
  local why = reasons_text(rows, 'check: ')
  return (heading and (heading .. '\n') or '') .. M.format_table(cols, rows) .. why
end

--- The markdown table of a list of bundles, with why a row's check is not passed in a list after it.
--
-- @signature output.results_markdown(bundles) -> text
-- @example
--   io.write(output.results_markdown(bundles))
function M.results_markdown(bundles)
  local rows = M.results_rows(bundles)
  local cols, heading = result_columns(rows)
  local why = reasons_text(rows, '- ')
  return (heading and (heading .. '\n\n') or '') .. M.format_markdown(cols, rows) .. (why ~= '' and ('\n' .. why) or '')
end

--- Liger-Kernel's benchmark CSV of a list of bundles, header included, and how many bundles it
-- leaves out: runs whose status is not passed (a failed or unchecked run has no time, and Liger's
-- CSV has no column to say why; the records keep them).
--
-- @signature output.liger_csv(bundles) -> text, left_out | nil, message
-- @example
--   local text, left_out = assert(output.liger_csv(bundles))
--   io.write(text)
function M.liger_csv(bundles)
  local liger = require 'kluabench.record.liger'
  local point = require 'kluabench.record.point'
  local rows, left_out = {}, 0
  for _, b in ipairs(bundles) do
    if point.of(b).status ~= 'passed' then
      left_out = left_out + 1
    else
      local row, err = liger.bundle_to_row(b)
      if not row then return nil, err end
      rows[#rows + 1] = row
    end
  end
  local text, err = liger.to_csv(rows)
  if not text then return nil, err end
  return text, left_out
end

return M
