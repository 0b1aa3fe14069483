--- JSON: pretty output with a stable key order, JSON Lines, the number
-- formats records use, and a JSON reader for checking records back. The one
-- JSON writer of the stdlib: records, bundles and reports all go through it.
--
-- JSON values in Lua: objects are tables with string keys, arrays tables with
-- keys 1..n. The empty table is ambiguous: M.object{} and M.array{} mark it
-- (with kb.jcs.object / kb.jcs.array when the engine offers them, so that the
-- digest of a spec sees the same value that the file shows). An unmarked
-- empty table is written as {} (an object). JSON null reads as M.null().
local M = {}
local args = require 'kluabench.io.argcheck'

--- The deepest nesting of arrays and objects that the reader (M.decode) and
-- the writers accept: the engine's kb.jcs.MAX_DEPTH (JCS_MAX_DEPTH in
-- engine/core/jcs.c), the same as lua-cjson's default, so that whatever one side
-- reads the other reads too. A record is a few levels deep.
M.MAX_DEPTH = 1000

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

--- t[key][...] when every step is a table, else nil: a field of a decoded file, any of whose
-- fields may be missing or of another type.
--
-- @signature report.get(t, key, ...) -> value | nil
-- @example
--   print(report.get({run = {spec = {status = "passed"}}}, "run", "spec", "status")) --> passed
function M.get(t, ...)
  local n = select('#', ...)
  if n <= 3 then
    -- the common paths without select() per step (every view of a bundle reads through here)
    local a, b, c = ...
    if n == 0 then return t end
    if type(t) ~= 'table' then return nil end
    t = t[a]
    if n == 1 then return t end
    if type(t) ~= 'table' then return nil end
    t = t[b]
    if n == 2 then return t end
    if type(t) ~= 'table' then return nil end
    return t[c]
  end
  for i = 1, n do
    if type(t) ~= 'table' then return nil end
    t = t[select(i, ...)]
  end
  return t
end

--- Marks t (default {}) to be written as a JSON object when empty.
--
-- @signature report.object([t]) -> t
-- @example
--   local labels = report.object()
function M.object(t)
  args.check('report.object', 1, t, 'table|nil', 'table')
  t = t or {}
  if next(t) == nil then
    local j = jcs()
    if j and j.object then return j.object(t) end
    return setmetatable(t, OBJECT_MT)
  end
  return t
end

--- Marks t (default {}) to be written as a JSON array when empty.
--
-- @signature report.array([t]) -> t
-- @example
--   local samples = report.array()
function M.array(t)
  args.check('report.array', 1, t, 'table|nil', 'table')
  t = t or {}
  if next(t) == nil then
    local j = jcs()
    if j and j.array then return j.array(t) end
    return setmetatable(t, ARRAY_MT)
  end
  return t
end

--- The value JSON null decodes to.
--
-- The value JSON null decodes to (the engine's kb.jcs.null when it has one).
--
-- @signature report.null() -> value
-- @example
--   local v = report.decode('{"a": null}').a
--   if v == report.null() then print("null") end
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

--- How a table is written as JSON; raises for mixed keys or a list with holes.
--
-- @signature report.table_kind(t) -> "object" | "array"
-- @example
--   print(report.table_kind({1, 2}))
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

--- A number as JSON: integers exactly, floats in the shortest round-trip form; raises for NaN and
-- infinities.
--
-- @signature report.format_number(x) -> text
-- @example
--   print(report.format_number(0.1)) --> 0.1
function M.format_number(x)
  args.check('report.format_number', 1, x, 'number', 'number')
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

--- A float as Python's repr writes it ("256.0", "1e-05"), as Liger's CSV holds them; an integer
-- plainly ("256").
--
-- @signature report.format_pyfloat(x) -> text
-- @example
--   print(report.format_pyfloat(256.0)) --> 256.0
function M.format_pyfloat(x)
  args.check('report.format_pyfloat', 1, x, 'number', 'number')
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

--- The keys of an object in output order: output.KEY_ORDER first, the rest sorted.
--
-- @signature report.ordered_keys(t) -> {keys}
-- @example
--   local x = kb.randn({4096}, "f32", 1)
--   local r = kb.do_bench.do_bench_protocol{rep_ms = 5}:run(function() x:add_(1) end)
--   local bundle = record.from_result{kernel = "add", mode = "forward", provider = "add_", dtype = "f32", result = r}
--   for _, k in ipairs(report.ordered_keys(bundle.run)) do print(k) end
function M.ordered_keys(t)
  args.check('report.ordered_keys', 1, t, 'table', 'table')
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

--- A string as a JSON string literal.
--
-- @signature report.quote(s) -> text
-- @example
--   print(report.quote('say "hi"'))
function M.quote(s)
  args.check('report.quote', 1, s, 'string', 'string')
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
    if depth >= M.MAX_DEPTH then error(string.format('JSON nesting deeper than %d levels', M.MAX_DEPTH), 0) end
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

--- Pretty JSON (2-space indent) with keys in the record order (output.KEY_ORDER), ending in a
-- newline.
--
-- Returns the text, or nil and a message for a value JSON cannot carry.
--
-- @signature report.encode_pretty(v) -> text
-- @example
--   io.write(report.encode_pretty({apiVersion = "kernelindex.dev/v1alpha1", kind = "BenchmarkRun", spec = {n = 1}}))
function M.encode_pretty(v)
  local out = {}
  local ok, err = pcall(encode, v, out, '  ', 0, {})
  if not ok then return nil, err end
  out[#out + 1] = '\n'
  return table.concat(out)
end

--- One-line JSON in the same key order, for JSON Lines.
--
-- @signature report.encode_line(v) -> text | nil, message
-- @example
--   print(report.encode_line({a = 1}))
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
  -- uses doubles; a fraction or exponent always makes a float (-0.0 stays
  -- -0.0, as kb.jcs reads it)
  if float and math.type(n) == 'integer' then n = n + 0.0 end
  return n
end

function Decoder:value(depth)
  self:skip()
  local text, pos = self.text, self.pos
  local c = text:sub(pos, pos)
  if depth >= M.MAX_DEPTH and (c == '{' or c == '[') then
    self:fail(string.format('nesting deeper than %d levels', M.MAX_DEPTH), pos)
  end
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
  self:fail("unexpected character '" .. M.printable(c) .. "'", pos)
end

--- Says when text is UTF-16 or UTF-32 (with or without a byte order mark), which kluabench does not
-- read; nil when it may be UTF-8.
--
-- @signature report.encoding_problem(text) -> message | nil
-- @example
--   print(report.encoding_problem("\255\254{\0"))
--   --> the text is UTF-16 (little-endian, with a byte order mark); kluabench reads UTF-8 (convert it, e.g. iconv -f UTF-16 -t UTF-8)
function M.encoding_problem(text)
  args.check('report.encoding_problem', 1, text, 'string', 'JSON text')
  local b1, b2, b3, b4 = text:byte(1, 4)
  local what
  if b1 == 0xFF and b2 == 0xFE and b3 == 0 and b4 == 0 then what = 'UTF-32 (little-endian, with a byte order mark)'
  elseif b1 == 0 and b2 == 0 and b3 == 0xFE and b4 == 0xFF then what = 'UTF-32 (big-endian, with a byte order mark)'
  elseif b1 == 0xFF and b2 == 0xFE then what = 'UTF-16 (little-endian, with a byte order mark)'
  elseif b1 == 0xFE and b2 == 0xFF then what = 'UTF-16 (big-endian, with a byte order mark)'
  elseif b1 and b2 and b1 ~= 0 and b2 == 0 and b1 < 0x80 then what = 'UTF-16 (little-endian)'
  elseif b1 == 0 and b2 and b2 ~= 0 and b2 < 0x80 then what = 'UTF-16 (big-endian)'
  end
  if not what then return nil end
  return 'the text is ' .. what .. '; kluabench reads UTF-8 (convert it, e.g. iconv -f '
    .. what:match('^(UTF%-%d+)') .. ' -t UTF-8)'
end

--- s made safe to quote in a message: control characters, DEL and bytes that are not UTF-8 as \xNN,
-- cut at max bytes (200) with "...".
--
-- For every message that quotes input.
--
-- @signature report.printable(s [, max]) -> text
-- @example
--   print(report.printable("a\27[31m")) --> a\x1B[31m
function M.printable(s, max)
  s = tostring(s)
  max = max or 200
  local cut = #s > max
  if cut then s = s:sub(1, max) end
  local out, i, n = {}, 1, #s
  while i <= n do
    local b = s:byte(i)
    local len = b < 0x80 and 1 or b >= 0xF0 and 4 or b >= 0xE0 and 3 or b >= 0xC2 and 2 or 0
    local ch = len > 0 and s:sub(i, i + len - 1) or nil
    if ch and len > 1 and not (#ch == len and utf8.len(ch)) then ch = nil end
    if b < 0x20 or b == 0x7F or ch == nil then
      out[#out + 1] = string.format('\\x%02X', b)
      i = i + 1
    else
      out[#out + 1] = ch
      i = i + len
    end
  end
  return table.concat(out) .. (cut and '...' or '')
end

-- What the engine's parser is asked for to read as the reader below does: integers that fit a Lua
-- integer stay integers, only empty arrays and objects are marked.
local AS_READER = { int64 = true, mark_empty = true }

--- Parses one JSON text; errors say "line L, column C: why".
--
-- code is "trailing" when a complete value is followed by more text (how JSON Lines looks to a JSON
-- reader). With opts.starts, the second result lists the line of each element of a top-level array.
-- With the engine, a text its strict parser (kb.jcs.decode) accepts is read by it, to the same
-- values, several times faster (a 7 KB record line: about 90 us instead of 650); any other text
-- goes through the reader here, which accepts a little more (bytes that are not UTF-8 in strings,
-- numbers beyond the doubles) and words errors.
--
-- @signature report.decode(text [, opts]) -> value | nil, message, code
-- @example
--   local v, err = report.decode('{"a": [1, 2]}')
function M.decode(text, opts)
  if type(text) ~= 'string' then
    error("bad argument #1 to 'decode' (string expected, got " .. type(text) .. ')', 2)
  end
  local d = setmetatable({ text = text, pos = 1, starts = opts and opts.starts and {} or nil },
    Decoder)
  if text:sub(1, 3) == '\239\187\191' then d.pos = 4 end -- UTF-8 byte order mark
  local enc = M.encoding_problem(text)
  if enc then return nil, 'line 1, column 1: ' .. enc, 'encoding' end
  local j = not d.starts and jcs()
  if j and j.decode then
    local ok, v = pcall(j.decode, d.pos == 1 and text or text:sub(d.pos), AS_READER)
    if ok then return v end
  end
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

return M
