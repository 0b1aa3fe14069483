-- JSON: lua-cjson reads it; this module writes records (pretty, or one line) in a stable key order,
-- and empty tables as {} unless json.array{} marks them (kb.jcs's markers, which digests see too).
local core = require 'kluabench.core'
local args = require 'kluabench.util.args'
local cjson = require('cjson').new()

local M = {}

-- The deepest nesting of arrays and objects read or written: kb.jcs's and lua-cjson's limit.
M.MAX_DEPTH = 1000

local ARRAY_MT = getmetatable(core.jcs.array {})
local NULL = core.jcs.null -- the NULL light userdata, as cjson.null

-- t[key][...] when every step is a table, else nil: a field of a decoded file.
function M.get(t, ...)
  for i = 1, select('#', ...) do
    if type(t) ~= 'table' then return nil end
    t = t[select(i, ...)]
  end
  return t
end

-- Marks t (default {}) to be written as a JSON object when empty.
function M.object(t)
  args.check('json.object', 1, t, 'table|nil', 'table')
  t = t or {}
  return next(t) == nil and core.jcs.object(t) or t
end

-- Marks t (default {}) to be written as a JSON array when empty.
function M.array(t)
  args.check('json.array', 1, t, 'table|nil', 'table')
  t = t or {}
  return next(t) == nil and core.jcs.array(t) or t
end

-- The value JSON null reads as and is written from.
function M.null() return NULL end

-- How a table is written: "object" or "array"; raises for mixed keys or a list with holes.
function M.table_kind(t)
  if next(t) == nil then return getmetatable(t) == ARRAY_MT and 'array' or 'object' end
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
    if type(k) ~= 'string' then error('cannot write a table with a ' .. type(k) .. ' key as JSON', 0) end
  end
  return 'object'
end

-- The shortest digits d1..dk and n with x = 0.d1..dk * 10^n that read back as x (x finite, > 0).
local function shortest_digits(x)
  local s
  for prec = 0, 16 do
    s = string.format('%.' .. prec .. 'e', x)
    if tonumber(s) == x then break end
  end
  local int, frac, exp = s:match('^(%d)%.?(%d*)e([-+]%d+)$')
  local digits = (int .. frac):gsub('0+$', '')
  return digits == '' and '0' or digits, tonumber(exp) + 1
end
M.shortest_digits = shortest_digits

-- A number as JSON: integers exactly, floats shortest as ECMAScript writes them; raises for NaN and inf.
function M.format_number(x)
  args.check('json.format_number', 1, x, 'number', 'number')
  if math.type(x) == 'integer' then return string.format('%d', x) end
  if x ~= x or x == math.huge or x == -math.huge then error('cannot write ' .. tostring(x) .. ' as JSON', 0) end
  if x == 0 then return '0' end
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
    body = digits:sub(1, 1) .. (k > 1 and '.' .. digits:sub(2) or '') .. 'e' .. (e < 0 and '-' or '+') .. math.abs(e)
  end
  return (x < 0 and '-' or '') .. body
end

-- The order of keys in files: the example record's, then ours; other keys after them, sorted.
M.KEY_ORDER = {
  'run', 'protocol', 'environment', 'workload', 'implementation', 'kind', 'spec', 'metadata', 'apiVersion', 'status',
  'timing', 'observedAt', 'measurements', 'sourceNative', 'protocolDigest', 'workloadDigest', 'environmentDigest',
  'implementationDigest', 'samples', 'execution', 'check', 'latencyNs', 'memoryMB', 'timer', 'primaryStatistic',
  'median', 'unit', 'value', 'metric', 'statistic', 'provider', 'kernel', 'operation', 'source', 'metrics',
  'benchmark', 'externalId', 'name', 'title', 'labels', 'annotations', 'harness', 'measurement', 'comparability',
  'repository', 'version', 'method', 'warmupMs', 'repMs', 'quantiles', 'returnMode', 'estimateCalls', 'l2Flush',
  'notes', 'family', 'hardware', 'software', 'vendor', 'product', 'formFactor', 'architecture', 'smCount', 'cores',
  'l2Bytes', 'memoryBytes', 'driver', 'release', 'cudaVersion', 'cudaRuntime', 'kluabench', 'lua', 'os', 'parameters',
  'dtype', 'bytes', 'flops', 'engine', 'sources', 'build', 'target', 'backend',
}
local RANK = {}
for i, k in ipairs(M.KEY_ORDER) do RANK[k] = RANK[k] or i end

local function key_before(a, b)
  local ra, rb = RANK[a], RANK[b]
  if ra and rb then return ra < rb end
  if ra or rb then return ra ~= nil end
  return a < b
end

local ESCAPES = { ['"'] = '\\"', ['\\'] = '\\\\', ['\b'] = '\\b', ['\f'] = '\\f', ['\n'] = '\\n', ['\r'] = '\\r',
  ['\t'] = '\\t' }

-- A string as a JSON string literal.
function M.quote(s)
  args.check('json.quote', 1, s, 'string', 'string')
  return '"' .. s:gsub('[%c"\\]', function(c)
    return ESCAPES[c] or (c:byte() < 32 and string.format('\\u%04x', c:byte())) or c
  end) .. '"'
end

local function encode(v, out, indent, depth, seen)
  local tv = type(v)
  if tv == 'string' then out[#out + 1] = M.quote(v)
  elseif tv == 'number' then out[#out + 1] = M.format_number(v)
  elseif tv == 'boolean' then out[#out + 1] = tostring(v)
  elseif v == NULL then out[#out + 1] = 'null'
  elseif tv ~= 'table' then error('cannot write a ' .. tv .. ' as JSON', 0)
  else
    if seen[v] then error('cannot write a table that contains itself as JSON', 0) end
    if depth >= M.MAX_DEPTH then error(string.format('JSON nesting deeper than %d levels', M.MAX_DEPTH), 0) end
    seen[v] = true
    local pad = indent and ('\n' .. string.rep(indent, depth + 1)) or ''
    local close = indent and ('\n' .. string.rep(indent, depth)) or ''
    if M.table_kind(v) == 'array' then
      local n = #v
      if n == 0 then out[#out + 1] = '[]'
      elseif indent and type(v[1]) ~= 'table' then -- scalars: packed lines of about 100 columns
        out[#out + 1] = '['
        local width, line, len = 100 - #indent * (depth + 1), {}, 0
        for i = 1, n do
          local item = {}
          encode(v[i], item, indent, depth + 1, seen)
          local s = table.concat(item)
          if len > 0 and len + #s + 2 > width then
            out[#out + 1] = pad .. table.concat(line, ', ') .. ','
            line, len = {}, 0
          end
          line[#line + 1], len = s, len + #s + 2
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
      local keys = {}
      for k in pairs(v) do keys[#keys + 1] = k end
      table.sort(keys, key_before)
      if #keys == 0 then out[#out + 1] = '{}'
      else
        out[#out + 1] = '{'
        for i, k in ipairs(keys) do
          out[#out + 1] = pad .. M.quote(k) .. (indent and ': ' or ':')
          encode(v[k], out, indent, depth + 1, seen)
          if i < #keys then out[#out + 1] = ',' end
        end
        out[#out + 1] = close .. '}'
      end
    end
    seen[v] = nil
  end
end

-- Pretty JSON (2-space indent, keys in json.KEY_ORDER) ending in a newline; or nil and a message.
function M.encode_pretty(v)
  local out = {}
  local ok, err = pcall(encode, v, out, '  ', 0, {})
  if not ok then return nil, err end
  return table.concat(out) .. '\n'
end

-- One-line JSON in the same key order, for JSON Lines; nil and a message as encode_pretty.
function M.encode_line(v)
  local out = {}
  local ok, err = pcall(encode, v, out, nil, 0, {})
  if not ok then return nil, err end
  return table.concat(out)
end

cjson.decode_invalid_numbers(false) -- NaN, Infinity and hex are not JSON
cjson.decode_max_depth(M.MAX_DEPTH)

-- cjson reads [] and {} alike, but a digest must see which a document holds: before decoding, each
-- empty array outside a string becomes a one-element array of EMPTY, which comes back as json.array{}.
local EMPTY, EMPTY_JSON = '\0kluabench:empty-array\0', '["\\u0000kluabench:empty-array\\u0000"]'

local function mark_empty_arrays(text)
  if not text:find('%[%s*%]') then return text end
  local out, from, i = {}, 1, 1
  while true do
    local j = text:find('["%[]', i)
    if not j then break end
    if text:byte(j) == 34 then -- skip the string, to the first quote not escaped
      local k = j + 1
      while true do
        local q = text:find('["\\]', k)
        if not q then return text end -- unterminated: cjson says where
        if text:byte(q) == 92 then k = q + 2 else i = q + 1 break end
      end
    else
      local after = text:match('^%[%s*%]()', j)
      if after then out[#out + 1], out[#out + 2], from = text:sub(from, j - 1), EMPTY_JSON, after end
      i = j + 1
    end
  end
  out[#out + 1] = text:sub(from)
  return table.concat(out)
end

local MAX_EXACT = 2 ^ 53

-- cjson reads every number as a float: integral ones become integers again.
local function normalize(v)
  local tv = type(v)
  if tv == 'number' then
    if v == math.floor(v) and v > -MAX_EXACT and v < MAX_EXACT then return math.tointeger(v) end
    return v
  end
  if tv ~= 'table' then return v end
  if v[1] == EMPTY and v[2] == nil then return M.array {} end
  for k, x in pairs(v) do v[k] = normalize(x) end
  return v
end

local function line_col(text, pos)
  local line, last = 1, 0
  for nl in text:sub(1, pos - 1):gmatch('()\n') do line, last = line + 1, nl end
  return line, pos - last
end

-- Says when text is UTF-16 or UTF-32 (with or without a byte order mark); nil when it may be UTF-8.
function M.encoding_problem(text)
  args.check('json.encoding_problem', 1, text, 'string', 'JSON text')
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

-- Parses one JSON text (integers, [] as json.array{}, null as json.null()): value, or nil, "line L,
-- column C: why near '...'" and code ("trailing": more text after a value; "encoding": UTF-16/32). A NUL byte
-- outside a \u0000 escape is refused.
function M.decode(text)
  args.check('decode', 1, text, 'string', 'string')
  local skip = text:sub(1, 3) == '\239\187\191' and 3 or 0 -- a UTF-8 byte order mark
  local enc = M.encoding_problem(text)
  if enc then return nil, 'line 1, column 1: ' .. enc, 'encoding' end
  local nul = text:find('\0', 1, true) -- lua-cjson would stop reading there and ignore the rest
  if nul then
    local line, col = line_col(text, nul)
    return nil, string.format('line %d, column %d: a NUL byte (JSON text has none)', line, col)
  end
  local body = skip > 0 and text:sub(skip + 1) or text
  local marked = mark_empty_arrays(body)
  local ok, v = pcall(cjson.decode, marked)
  if ok then return normalize(v) end
  local msg = tostring(v):gsub('^.-:%d+: ', '')
  local code = msg:find('Expected the end', 1, true) and 'trailing' or nil
  local at = math.tointeger(tonumber(msg:match('at character (%d+)')))
  if not at then return nil, 'line 1, column 1: ' .. msg, code end
  if marked ~= body then -- cjson counted in the marked text
    local before = select(2, marked:sub(1, at):gsub(EMPTY_JSON:gsub('%p', '%%%0'), ''))
    at = at - before * (#EMPTY_JSON - 2)
  end
  local line, col = line_col(text, at + skip)
  local near = text:sub(at + skip, at + skip + 15):match('^[^\n]*')
  msg = msg:gsub(' at character %d+', ''):gsub('^Found too many nested data structures %(%d+%)',
    string.format('nesting deeper than %d levels', M.MAX_DEPTH))
  if near ~= '' then msg = msg .. " near '" .. args.printable(near, 16) .. "'" end
  return nil, string.format('line %d, column %d: %s', line, col, msg), code
end

return M
