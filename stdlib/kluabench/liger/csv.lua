--- CSV (RFC 4180): fields written as Python writes them, and a parser.
local M = {}
local args = require 'kluabench.util.args'

local json = require 'kluabench.util.json'

--- A float as Python's repr writes it ("256.0", "1e-05"), as Liger's CSV holds them; an integer
-- plainly ("256").
--
-- @signature csv.format_pyfloat(x) -> text
-- @example
--   print(csv.format_pyfloat(256.0)) --> 256.0
function M.format_pyfloat(x)
  args.check('csv.format_pyfloat', 1, x, 'number', 'number')
  if math.type(x) == 'integer' then return string.format('%d', x) end
  if x ~= x then return 'nan' end
  if x == math.huge then return 'inf' end
  if x == -math.huge then return '-inf' end
  if x == 0 then return (1 / x < 0) and '-0.0' or '0.0' end
  local sign = x < 0 and '-' or ''
  local digits, n = json.shortest_digits(math.abs(x))
  local k, e = #digits, n - 1
  if e >= -4 and e < 16 then
    if n <= 0 then return sign .. '0.' .. string.rep('0', -n) .. digits end
    if k <= n then return sign .. digits .. string.rep('0', n - k) .. '.0' end
    return sign .. digits:sub(1, n) .. '.' .. digits:sub(n + 1)
  end
  return string.format('%s%s%se%s%02d', sign, digits:sub(1, 1), k > 1 and '.' .. digits:sub(2) or '',
    e < 0 and '-' or '+', math.abs(e))
end

--- One CSV field: numbers as Python writes them, strings quoted when needed.
--
-- One CSV field: numbers as Python writes them, strings quoted when they hold a comma, a quote, a
-- line break or edge spaces ("" escapes quotes).
--
-- @signature report.csv_field(v) -> text
-- @example
--   print(report.csv_field("a,b")) --> "a,b"
function M.csv_field(v)
  if v == nil then return '' end
  if type(v) == 'number' then return M.format_pyfloat(v) end
  local s = tostring(v)
  -- a leading byte order mark is quoted too: parse_csv drops an unquoted
  -- one at the start of the text, so the field would not read back
  if s:find('[,"\r\n]') or s:match('^%s') or s:match('%s$') or s:sub(1, 3) == '\239\187\191' then
    return '"' .. s:gsub('"', '""') .. '"'
  end
  return s
end

--- One CSV line, ending in a newline.
--
-- @signature report.csv_line(fields [, n]) -> text
-- @example
--   io.write(report.csv_line({"x", 1.5}))
function M.csv_line(fields, n)
  args.check('report.csv_line', 1, fields, 'table', 'list of fields')
  args.check('report.csv_line', 2, n, 'integer|nil', 'number of fields')
  local out = {}
  for i = 1, n or #fields do out[i] = M.csv_field(fields[i]) end
  return table.concat(out, ',') .. '\n'
end

--- Parses RFC 4180 CSV into lists of strings (quoted fields may hold commas, quotes and line
-- breaks).
--
-- Parses CSV text into a list of records, each a list of strings. Quoted fields may hold commas, ""
-- and line breaks; CRLF and LF both end a record; a trailing newline does not make an empty record.
-- Returns the records and the line on which each record starts, or nil and "line N: why".
--
-- @signature report.parse_csv(text) -> records, lines | nil, message
-- @example
--   local rows = assert(report.parse_csv("a,b\n1,2\n"))
--   print(rows[2][1]) --> 1
function M.parse_csv(text)
  if type(text) ~= 'string' then
    error("bad argument #1 to 'parse_csv' (string expected, got " .. type(text) .. ')', 2)
  end
  local records, starts, record, field = {}, {}, {}, {}
  local pos, n, line = 1, #text, 1
  if text:sub(1, 3) == '\239\187\191' then pos = 4 end
  local record_line = 1
  local function end_field()
    record[#record + 1] = table.concat(field)
    field = {}
  end
  local function end_record()
    end_field()
    records[#records + 1] = record
    starts[#starts + 1] = record_line
    record = {}
  end
  if pos > n then return records, starts end
  while true do
    local c = text:sub(pos, pos)
    if c == '"' then
      if #field > 0 then return nil, string.format('line %d: quote inside an unquoted field', line) end
      pos = pos + 1
      while true do
        local q = text:find('"', pos, true)
        if not q then return nil, string.format('line %d: unterminated quoted field', record_line) end
        local chunk = text:sub(pos, q - 1)
        for _ in chunk:gmatch('\n') do line = line + 1 end
        field[#field + 1] = chunk
        if text:sub(q + 1, q + 1) == '"' then
          field[#field + 1] = '"'
          pos = q + 2
        else
          pos = q + 1
          break
        end
      end
      local d = text:sub(pos, pos)
      if d ~= ',' and d ~= '\n' and d ~= '\r' and d ~= '' then
        return nil, string.format('line %d: text after a closing quote', line)
      end
    else
      local j = text:find('[,"\r\n]', pos)
      local stop = j or (n + 1)
      if stop > pos then field[#field + 1] = text:sub(pos, stop - 1) end
      pos = stop
      if text:sub(pos, pos) == '"' then
        return nil, string.format('line %d: quote inside an unquoted field', line)
      end
    end
    local d = text:sub(pos, pos)
    if d == ',' then
      end_field()
      pos = pos + 1
    elseif d == '\r' or d == '\n' then
      end_record()
      pos = pos + ((d == '\r' and text:sub(pos + 1, pos + 1) == '\n') and 2 or 1)
      line = line + 1
      record_line = line
      if pos > n then break end
    else -- end of text
      end_record()
      break
    end
  end
  return records, starts
end

return M
