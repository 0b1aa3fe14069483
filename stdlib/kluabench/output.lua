--- Output formats: pretty JSON with a stable key order, JSON Lines, CSV
-- (RFC 4180, used for Liger's format), aligned terminal tables, markdown
-- tables; a JSON reader for checking records back; atomic file writes.
--
-- JSON values in Lua: objects are tables with string keys, arrays tables with
-- keys 1..n. The empty table is ambiguous: M.object{} and M.array{} mark it
-- (with kb.jcs.object / kb.jcs.array when the engine offers them, so that the
-- digest of a spec sees the same value that the file shows). An unmarked
-- empty table is written as {} (an object). JSON null reads as M.null().
local M = {}

local names = require 'kluabench.names'

-- The engine is optional here: this module also runs under a plain Lua
-- (busted on a machine without the binary), where only fsync and the JCS
-- markers are missing.
local core_cache
local function core()
  if core_cache == nil then
    local ok, c = pcall(require, 'kluabench.core')
    core_cache = ok and type(c) == 'table' and c or false
  end
  return core_cache or nil
end

local function jcs()
  local c = core()
  return c and type(c.jcs) == 'table' and c.jcs or nil
end

local OBJECT_MT = { __name = 'kluabench.json.object' }
local ARRAY_MT = { __name = 'kluabench.json.array' }
local NULL = setmetatable({}, { __name = 'kluabench.json.null', __tostring = function() return 'null' end })

-- Metatables the engine's markers put on an empty table, probed once.
local marks
local function engine_marks()
  if marks == nil then
    marks = { object = {}, array = {} }
    local j = jcs()
    if j then
      if j.object then
        local ok, t = pcall(j.object, {})
        if ok and type(t) == 'table' and getmetatable(t) then marks.object[getmetatable(t)] = true end
      end
      if j.array then
        local ok, t = pcall(j.array, {})
        if ok and type(t) == 'table' and getmetatable(t) then marks.array[getmetatable(t)] = true end
      end
    end
  end
  return marks
end

--- Marks t (default {}) as a JSON object; returns the marked table.
function M.object(t)
  t = t or {}
  if next(t) == nil then
    local j = jcs()
    if j and j.object then return j.object(t) end
    return setmetatable(t, OBJECT_MT)
  end
  return t
end

--- Marks t (default {}) as a JSON array; returns the marked table.
function M.array(t)
  t = t or {}
  if next(t) == nil then
    local j = jcs()
    if j and j.array then return j.array(t) end
    return setmetatable(t, ARRAY_MT)
  end
  return t
end

--- The value JSON null decodes to (the engine's kb.jcs.null when it has one).
function M.null()
  local j = jcs()
  if j and j.null ~= nil then return j.null end
  return NULL
end

local function is_null(v)
  if v == NULL then return true end
  local j = jcs()
  return j ~= nil and j.null ~= nil and v == j.null
end

-- 'object', 'array', or raises for a table that is neither.
local function table_kind(t)
  local mt = getmetatable(t)
  if next(t) == nil then
    if mt == ARRAY_MT or (mt and engine_marks().array[mt]) then return 'array' end
    return 'object'
  end
  local n = #t
  if n > 0 then
    local count = 0
    for k in pairs(t) do
      if math.type(k) ~= 'integer' or k < 1 or k > n then
        error('cannot write a table that mixes list items and keys as JSON', 0)
      end
      count = count + 1
    end
    if count ~= n then error('cannot write a list with holes as JSON', 0) end
    return 'array'
  end
  for k in pairs(t) do
    if type(k) ~= 'string' then
      error('cannot write a table with a ' .. type(k) .. ' key as JSON', 0)
    end
  end
  return 'object'
end

M.table_kind = function(t) return table_kind(t) end

---------------------------------------------------------------------------
-- Numbers
---------------------------------------------------------------------------

-- Shortest decimal digits d1..dk and exponent n with |x| = 0.d1..dk * 10^n that
-- read back as x (x finite, nonzero, positive).
local function shortest_digits(x)
  local s
  for prec = 0, 16 do
    s = string.format('%.' .. prec .. 'e', x)
    if tonumber(s) == x then break end
  end
  local int, frac, exp = s:match('^(%d)%.?(%d*)e([-+]%d+)$')
  local digits = (int .. frac):gsub('0+$', '')
  if digits == '' then digits = '0' end
  return digits, tonumber(exp) + 1
end

--- A number as JSON: integers exactly; floats in ECMAScript's Number
-- toString form (shortest round trip), which is also what JCS writes.
-- Raises for NaN and infinities, which JSON cannot carry.
function M.format_number(x)
  if math.type(x) == 'integer' then return string.format('%d', x) end
  if x ~= x or x == math.huge or x == -math.huge then
    error('cannot write ' .. tostring(x) .. ' as JSON', 0)
  end
  if x == 0 then return '0' end
  local sign = x < 0 and '-' or ''
  local digits, n = shortest_digits(math.abs(x))
  local k = #digits
  local body
  if k <= n and n <= 21 then
    body = digits .. string.rep('0', n - k)
  elseif 0 < n and n <= 21 then
    body = digits:sub(1, n) .. '.' .. digits:sub(n + 1)
  elseif -6 < n and n <= 0 then
    body = '0.' .. string.rep('0', -n) .. digits
  else
    local e = n - 1
    body = digits:sub(1, 1) .. (k > 1 and '.' .. digits:sub(2) or '') .. 'e'
      .. (e < 0 and '-' or '+') .. math.abs(e)
  end
  return sign .. body
end

--- A float as Python's repr writes it (what Liger's CSV files hold:
-- "0.13760000467300415", "256.0", "1e-05"); integers plainly.
function M.format_pyfloat(x)
  if math.type(x) == 'integer' then return string.format('%d', x) end
  if x ~= x then return 'nan' end
  if x == math.huge then return 'inf' end
  if x == -math.huge then return '-inf' end
  if x == 0 then return (1 / x < 0) and '-0.0' or '0.0' end
  local sign = x < 0 and '-' or ''
  local digits, n = shortest_digits(math.abs(x))
  local k, e = #digits, n - 1
  if e >= -4 and e < 16 then
    if n <= 0 then return sign .. '0.' .. string.rep('0', -n) .. digits end
    if k <= n then return sign .. digits .. string.rep('0', n - k) .. '.0' end
    return sign .. digits:sub(1, n) .. '.' .. digits:sub(n + 1)
  end
  return string.format('%s%s%se%s%02d', sign, digits:sub(1, 1),
    k > 1 and '.' .. digits:sub(2) or '', e < 0 and '-' or '+', math.abs(e))
end

---------------------------------------------------------------------------
-- Writing JSON
---------------------------------------------------------------------------

--- The preferred order of keys: the example record's order, then ours.
-- Keys not listed come after the listed ones, sorted.
M.KEY_ORDER = {
  -- bundle
  'run', 'protocol', 'environment', 'workload', 'implementation',
  -- document
  'kind', 'spec', 'metadata', 'apiVersion',
  -- run spec
  'status', 'timing', 'observedAt', 'measurements', 'sourceNative',
  'protocolDigest', 'workloadDigest', 'environmentDigest', 'implementationDigest',
  'samples', 'execution', 'check',
  'latencyNs', 'memoryMB', 'timer', 'primaryStatistic',
  'median',
  'unit', 'value', 'metric', 'statistic',
  'provider', 'kernel', 'operation',
  'source', 'metrics', 'benchmark', 'externalId',
  -- metadata
  'name', 'title', 'labels', 'annotations',
  -- protocol spec
  'harness', 'measurement', 'comparability', 'repository', 'version',
  'method', 'warmupMs', 'repMs', 'quantiles', 'returnMode', 'estimateCalls', 'l2Flush',
  'notes', 'family',
  -- environment spec
  'hardware', 'software', 'vendor', 'product', 'formFactor', 'architecture',
  'smCount', 'cores', 'l2Bytes', 'memoryBytes',
  'driver', 'release', 'cudaVersion', 'cudaRuntime', 'kluabench', 'lua', 'os',
  -- workload and implementation specs
  'parameters', 'dtype', 'bytes', 'flops',
  'engine', 'sources', 'build', 'target', 'backend',
}

local RANK = {}
for i, k in ipairs(M.KEY_ORDER) do RANK[k] = RANK[k] or i end

--- The keys of object t in output order.
function M.ordered_keys(t)
  local keys = {}
  for k in pairs(t) do keys[#keys + 1] = k end
  table.sort(keys, function(a, b)
    local ra, rb = RANK[a], RANK[b]
    if ra and rb then return ra < rb end
    if ra or rb then return ra ~= nil end
    return a < b
  end)
  return keys
end

local ESCAPES = { ['"'] = '\\"', ['\\'] = '\\\\', ['\b'] = '\\b', ['\f'] = '\\f', ['\n'] = '\\n',
  ['\r'] = '\\r', ['\t'] = '\\t' }

--- A string as a JSON string literal (UTF-8 kept as is).
function M.quote(s)
  return '"' .. s:gsub('[%c"\\]', function(c)
    return ESCAPES[c] or (c:byte() < 32 and string.format('\\u%04x', c:byte())) or c
  end) .. '"'
end

local function encode(v, out, indent, depth, seen)
  local tv = type(v)
  if tv == 'string' then
    out[#out + 1] = M.quote(v)
  elseif tv == 'number' then
    out[#out + 1] = M.format_number(v)
  elseif tv == 'boolean' then
    out[#out + 1] = tostring(v)
  elseif is_null(v) then
    out[#out + 1] = 'null'
  elseif tv == 'table' then
    if seen[v] then error('cannot write a table that contains itself as JSON', 0) end
    if depth > 100 then error('JSON nesting deeper than 100 levels', 0) end
    seen[v] = true
    local kind = table_kind(v)
    local pad = indent and ('\n' .. string.rep(indent, depth + 1)) or ''
    local close = indent and ('\n' .. string.rep(indent, depth)) or ''
    local sep = indent and ': ' or ':'
    if kind == 'array' then
      local n = #v
      if n == 0 then
        out[#out + 1] = '[]'
      elseif indent and type(v[1]) ~= 'table' then
        -- scalars: packed lines of at most ~100 columns
        out[#out + 1] = '['
        local width = 100 - #indent * (depth + 1)
        local line = {}
        local len = 0
        for i = 1, n do
          local item = {}
          encode(v[i], item, indent, depth + 1, seen)
          local s = table.concat(item)
          if len > 0 and len + #s + 2 > width then
            out[#out + 1] = pad .. table.concat(line, ', ') .. ','
            line, len = {}, 0
          end
          line[#line + 1] = s
          len = len + #s + 2
        end
        out[#out + 1] = pad .. table.concat(line, ', ') .. close .. ']'
      else
        out[#out + 1] = '['
        for i = 1, n do
          out[#out + 1] = pad
          encode(v[i], out, indent, depth + 1, seen)
          if i < n then out[#out + 1] = ',' end
        end
        out[#out + 1] = close .. ']'
      end
    else
      local keys = M.ordered_keys(v)
      if #keys == 0 then
        out[#out + 1] = '{}'
      else
        out[#out + 1] = '{'
        for i, k in ipairs(keys) do
          out[#out + 1] = pad .. M.quote(k) .. sep
          encode(v[k], out, indent, depth + 1, seen)
          if i < #keys then out[#out + 1] = ',' end
        end
        out[#out + 1] = close .. '}'
      end
    end
    seen[v] = nil
  else
    error('cannot write a ' .. tv .. ' as JSON', 0)
  end
end

--- Pretty JSON (2-space indent, keys in M.KEY_ORDER order) ending in a newline.
-- Returns the text, or nil and a message for a value JSON cannot carry.
function M.encode_pretty(v)
  local out = {}
  local ok, err = pcall(encode, v, out, '  ', 0, {})
  if not ok then return nil, err end
  out[#out + 1] = '\n'
  return table.concat(out)
end

--- One-line JSON in the same key order (no trailing newline), or nil, message.
function M.encode_line(v)
  local out = {}
  local ok, err = pcall(encode, v, out, nil, 0, {})
  if not ok then return nil, err end
  return table.concat(out)
end

---------------------------------------------------------------------------
-- Reading JSON (RFC 8259). Pure Lua, never executes its input.
---------------------------------------------------------------------------

local function line_col(text, pos)
  local line, last = 1, 0
  for nl in text:sub(1, pos - 1):gmatch('()\n') do line, last = line + 1, nl end
  return line, pos - last
end

local Decoder = {}
Decoder.__index = Decoder

function Decoder:fail(msg, pos, code)
  local line, col = line_col(self.text, pos or self.pos)
  error({ msg = string.format('line %d, column %d: %s', line, col, msg), code = code, line = line },
    0)
end

function Decoder:skip()
  self.pos = self.text:find('[^ \t\r\n]', self.pos) or (#self.text + 1)
end

local function utf8_char(cp) return utf8.char(cp) end

function Decoder:string()
  local text, pos = self.text, self.pos + 1
  local parts = {}
  while true do
    local i = text:find('[%z\1-\31"\\]', pos)
    if not i then self:fail('unterminated string', self.pos) end
    parts[#parts + 1] = text:sub(pos, i - 1)
    local c = text:sub(i, i)
    if c == '"' then
      self.pos = i + 1
      return table.concat(parts)
    elseif c == '\\' then
      local e = text:sub(i + 1, i + 1)
      local simple = ({ ['"'] = '"', ['\\'] = '\\', ['/'] = '/', b = '\b', f = '\f', n = '\n',
        r = '\r', t = '\t' })[e]
      if simple then
        parts[#parts + 1] = simple
        pos = i + 2
      elseif e == 'u' then
        local hex = text:match('^%x%x%x%x', i + 2)
        if not hex then self:fail('bad \\u escape', i) end
        local cp = tonumber(hex, 16)
        pos = i + 6
        if cp >= 0xD800 and cp <= 0xDBFF then
          local lo = text:match('^\\u(%x%x%x%x)', pos)
          lo = lo and tonumber(lo, 16)
          if not lo or lo < 0xDC00 or lo > 0xDFFF then self:fail('lone surrogate in \\u escape', i) end
          cp = 0x10000 + (cp - 0xD800) * 0x400 + (lo - 0xDC00)
          pos = pos + 6
        elseif cp >= 0xDC00 and cp <= 0xDFFF then
          self:fail('lone surrogate in \\u escape', i)
        end
        parts[#parts + 1] = utf8_char(cp)
      else
        self:fail('bad escape \\' .. e, i)
      end
    else
      self:fail('control character in string', i)
    end
  end
end

function Decoder:number()
  local text, start = self.text, self.pos
  local i = start
  if text:sub(i, i) == '-' then i = i + 1 end
  local int = text:match('^%d+', i)
  if not int then self:fail('invalid number', start) end
  if #int > 1 and int:sub(1, 1) == '0' then self:fail('invalid number (leading zero)', start) end
  i = i + #int
  local float = false
  if text:sub(i, i) == '.' then
    local frac = text:match('^%d+', i + 1)
    if not frac then self:fail('invalid number', start) end
    i, float = i + 1 + #frac, true
  end
  if text:match('^[eE]', i) then
    local e = text:match('^[eE][-+]?%d+', i)
    if not e then self:fail('invalid number', start) end
    i, float = i + #e, true
  end
  self.pos = i
  local n = tonumber(text:sub(start, i - 1))
  -- integers that do not fit 64 bits read as floats, like every parser that
  -- uses doubles; a fraction or exponent always makes a float
  if float then n = n + 0.0 end
  return n
end

function Decoder:value(depth)
  if depth > 200 then self:fail('nesting deeper than 200 levels') end
  self:skip()
  local text, pos = self.text, self.pos
  local c = text:sub(pos, pos)
  if c == '{' then
    local obj = {}
    self.pos = pos + 1
    self:skip()
    if text:sub(self.pos, self.pos) == '}' then
      self.pos = self.pos + 1
      return M.object(obj)
    end
    while true do
      self:skip()
      if text:sub(self.pos, self.pos) ~= '"' then self:fail('expected a string key') end
      local kpos = self.pos
      local k = self:string()
      if obj[k] ~= nil then self:fail(string.format('duplicate key %q', k), kpos) end
      self:skip()
      if text:sub(self.pos, self.pos) ~= ':' then self:fail("expected ':'") end
      self.pos = self.pos + 1
      obj[k] = self:value(depth + 1)
      self:skip()
      local d = text:sub(self.pos, self.pos)
      self.pos = self.pos + 1
      if d == '}' then return obj end
      if d ~= ',' then self:fail("expected ',' or '}'", self.pos - 1) end
    end
  elseif c == '[' then
    local arr = {}
    self.pos = pos + 1
    self:skip()
    if text:sub(self.pos, self.pos) == ']' then
      self.pos = self.pos + 1
      return M.array(arr)
    end
    while true do
      if depth == 0 and self.starts then
        self:skip()
        self.starts[#arr + 1] = self.pos
      end
      arr[#arr + 1] = self:value(depth + 1)
      self:skip()
      local d = text:sub(self.pos, self.pos)
      self.pos = self.pos + 1
      if d == ']' then return arr end
      if d ~= ',' then self:fail("expected ',' or ']'", self.pos - 1) end
    end
  elseif c == '"' then
    return self:string()
  elseif c == '-' or c:match('%d') then
    return self:number()
  elseif text:sub(pos, pos + 3) == 'true' then
    self.pos = pos + 4
    return true
  elseif text:sub(pos, pos + 4) == 'false' then
    self.pos = pos + 5
    return false
  elseif text:sub(pos, pos + 3) == 'null' then
    self.pos = pos + 4
    return M.null()
  elseif c == '' then
    self:fail('unexpected end of input', pos)
  end
  self:fail('unexpected character ' .. string.format('%q', c), pos)
end

--- Decodes one JSON text. Returns the value, or nil, "line L, column C: why"
-- and a code ("trailing" when a complete value is followed by more text,
-- which is how JSON Lines looks to a JSON reader).
-- With opts.starts, a second result lists the line of each element of a
-- top-level array.
function M.decode(text, opts)
  if type(text) ~= 'string' then
    error("bad argument #1 to 'decode' (string expected, got " .. type(text) .. ')', 2)
  end
  local d = setmetatable({ text = text, pos = 1, starts = opts and opts.starts and {} or nil },
    Decoder)
  if text:sub(1, 3) == '\239\187\191' then d.pos = 4 end -- UTF-8 byte order mark
  local ok, v = pcall(function()
    local v = d:value(0)
    d:skip()
    if d.pos <= #text then d:fail('unexpected text after the JSON value', d.pos, 'trailing') end
    return v
  end)
  if not ok then
    if type(v) == 'table' then return nil, v.msg, v.code end
    error(v, 0)
  end
  if d.starts then
    -- one pass over the text for all the (ascending) positions: line_col per
    -- element would make a large array quadratic
    local lines, line = {}, 1
    local nl = text:find('\n', 1, true) -- the first newline not yet counted
    for i, p in ipairs(d.starts) do
      while nl and nl < p do
        line = line + 1
        nl = text:find('\n', nl + 1, true)
      end
      lines[i] = line
    end
    return v, lines
  end
  return v
end

---------------------------------------------------------------------------
-- Files
---------------------------------------------------------------------------

--- Reads a whole file: text, or nil and "path: reason".
function M.read_file(path)
  local f, err = io.open(path, 'rb')
  if not f then return nil, err end
  local text, rerr = f:read('a')
  f:close()
  if not text then return nil, path .. ': ' .. tostring(rerr) end
  return text
end

local tmp_counter = 0

--- Writes text to path atomically: a temporary file in the same directory is
-- written, flushed, fsync'ed (when the engine offers kb.fsync) and closed,
-- then renamed over path, and the directory is fsync'ed so that the rename
-- itself is durable. A reader sees the old or the new file, never a part.
-- Returns true, or nil and a message; the temporary file never stays.
function M.write_atomic(path, text)
  if type(path) ~= 'string' or path == '' then
    error("bad argument #1 to 'write_atomic' (path expected)", 2)
  end
  if type(text) ~= 'string' then
    error("bad argument #2 to 'write_atomic' (string expected, got " .. type(text) .. ')', 2)
  end
  tmp_counter = tmp_counter + 1
  local c = core()
  local stamp = c and c.clock_ns and c.clock_ns() or os.time()
  local tmp = string.format('%s.tmp-%s-%d', path, tostring(stamp), tmp_counter)
  local f, err = io.open(tmp, 'wb')
  if not f then return nil, err end
  local ok, werr = f:write(text)
  if ok then ok, werr = f:flush() end
  if ok and c and c.fsync then
    -- kb.fsync returns nil, message when it fails (a raised error is caught too)
    local called, synced, serr = pcall(c.fsync, tmp)
    if not (called and synced) then ok, werr = nil, called and serr or synced end
  end
  local closed, cerr = f:close()
  if ok and not closed then ok, werr = nil, cerr end
  if ok then ok, werr = os.rename(tmp, path) end
  if not ok then
    os.remove(tmp)
    return nil, string.format('%s: %s', path, tostring(werr))
  end
  if c and c.fsync then
    -- the rename is durable once the directory is; some file systems refuse
    -- fsync on a directory, and the file is in place by now either way
    pcall(c.fsync, path:match('^(.*)/[^/]*$') or '.')
  end
  return true
end

--- Appends one value as a JSON line to path ("-" or nil: stdout) and flushes,
-- so that every finished point is on disk even if a later one crashes. The
-- line goes out in one unbuffered write(2) to a file opened for appending,
-- so a process killed at any moment leaves whole lines only.
-- Returns true, or nil and a message.
function M.append_jsonl(path, value)
  local line, err = M.encode_line(value)
  if not line then return nil, err end
  if path == nil or path == '-' then
    io.stdout:write(line, '\n')
    io.stdout:flush()
    return true
  end
  local f, oerr = io.open(path, 'a')
  if not f then return nil, oerr end
  f:setvbuf('no')
  local ok, werr = f:write(line .. '\n')
  if ok then ok, werr = f:flush() end
  local closed, cerr = f:close()
  if ok and not closed then ok, werr = nil, cerr end
  if not ok then return nil, string.format('%s: %s', path, tostring(werr)) end
  return true
end

--- Creates directory path and its parents if missing (via mkdir -p; the path
-- is passed quoted). Returns true or nil, message.
function M.mkdir_p(path)
  if path == nil or path == '' or path == '.' then return true end
  local probe = io.open(path .. '/.', 'r')
  if probe then probe:close() return true end
  local ok = os.execute("mkdir -p '" .. path:gsub("'", "'\\''") .. "'")
  if ok then return true end
  return nil, path .. ': cannot create directory'
end

---------------------------------------------------------------------------
-- CSV (RFC 4180)
---------------------------------------------------------------------------

--- One CSV field: numbers as Python writes them, strings quoted when they
-- hold a comma, a quote, a line break or edge spaces ("" escapes quotes).
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

--- One CSV line (ending in "\n") of a list of fields.
function M.csv_line(fields, n)
  local out = {}
  for i = 1, n or #fields do out[i] = M.csv_field(fields[i]) end
  return table.concat(out, ',') .. '\n'
end

--- Parses CSV text into a list of records, each a list of strings. Quoted
-- fields may hold commas, "" and line breaks; CRLF and LF both end a record;
-- a trailing newline does not make an empty record. Returns the records and
-- the line on which each record starts, or nil and "line N: why".
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

---------------------------------------------------------------------------
-- Tables for people
---------------------------------------------------------------------------

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
  local liger = require 'kluabench.liger'
  local rows = {}
  for i, b in ipairs(bundles) do
    local row, err = liger.bundle_to_row(b)
    if not row then return nil, err end
    rows[i] = row
  end
  return liger.to_csv(rows)
end

return M
