--- Tables for people: aligned terminal tables, markdown tables, and the
-- results table of a list of bundles; Liger's CSV of bundles.
local M = {}

local names = require 'kluabench.record.names'

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

--- An aligned plain-text table. columns: list of {key=, title=, align=
-- "left"|"right", format= printf string or function(value, row)}; rows: list
-- of tables. Returns the text, ending in a newline.
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

--- The same table as GitHub markdown (| separated, alignment in the rule row).
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

local function us(ns) return ns and string.format('%.2f', ns / 1000) or nil end

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
  { key = 'gbps', title = 'GB/s', align = 'right', format = '%.1f' },
  { key = 'pct_copy', title = '% of copy', align = 'right', optional = true,
    format = function(v) return v and string.format('%.1f', v) or 'n/a' end },
  { key = 'flag', title = 'check', optional = true },
  { key = 'n', title = 'samples', align = 'right' },
  { key = 'device', title = 'device' },
}

--- One row per bundle for M.RESULT_COLUMNS.
function M.results_rows(bundles)
  local rows = {}
  for i, b in ipairs(bundles) do
    local rs = b.run and b.run.spec or {}
    local ws = b.workload and b.workload.spec or {}
    local is = b.implementation and b.implementation.spec or {}
    local hw = b.environment and b.environment.spec and b.environment.spec.hardware or {}
    local row = {
      kernel = ws.kernel, mode = ws.operation, provider = is.provider,
      workload = type(ws.parameters) == 'table' and names.workload_slug(ws.parameters, ws.dtype)
        or nil,
      device = hw.product and (hw.product .. (hw.formFactor and (' ' .. hw.formFactor) or '')),
    }
    if rs.timing and rs.timing.latencyNs then row.median_ns = rs.timing.latencyNs.median end
    for _, m in ipairs(rs.measurements or {}) do
      if m.metric == 'latency' and m.unit == 'ns' then
        row[m.statistic .. '_ns'] = m.value
      end
    end
    if rs.samples and rs.samples.values then row.n = #rs.samples.values end
    -- the record's own throughput (of the unrounded median) when it has one;
    -- else from the workload's bytes (imports carry no throughput)
    local tp = type(rs.execution) == 'table' and type(rs.execution.throughput) == 'table'
      and rs.execution.throughput or {}
    row.gbps, row.pct_copy = tp.gbps, tp.percentOfCopy
    if tp.implausible then row.flag = 'IMPLAUSIBLE' end
    if not row.gbps and ws.bytes and row.median_ns and row.median_ns > 0 then
      row.gbps = ws.bytes / row.median_ns
    end
    rows[i] = row
  end
  return rows
end

-- M.RESULT_COLUMNS without the optional columns that no row fills.
local function result_columns(rows)
  local cols = {}
  for _, col in ipairs(M.RESULT_COLUMNS) do
    local used = not col.optional
    for _, row in ipairs(rows) do
      if used then break end
      used = row[col.key] ~= nil
    end
    if used then cols[#cols + 1] = col end
  end
  return cols
end

--- The aligned terminal table of a list of bundles.
function M.results_table(bundles)
  local rows = M.results_rows(bundles)
  return M.format_table(result_columns(rows), rows)
end

--- The markdown table of a list of bundles.
function M.results_markdown(bundles)
  local rows = M.results_rows(bundles)
  return M.format_markdown(result_columns(rows), rows)
end

--- Liger's CSV of a list of bundles (header included); see liger.bundle_to_row.
function M.liger_csv(bundles)
  local liger = require 'kluabench.record.liger'
  local rows = {}
  for i, b in ipairs(bundles) do
    local row, err = liger.bundle_to_row(b)
    if not row then return nil, err end
    rows[i] = row
  end
  return liger.to_csv(rows)
end

return M
