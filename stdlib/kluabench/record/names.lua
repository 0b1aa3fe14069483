-- Names, slugs and timestamps of records (docs/RECORDS.md, Names and slugs). Times are tables of UTC
-- fields {year, month, day, hour, min, sec, ms}; nothing here depends on the local time zone.
local args = require 'kluabench.util.args'

local M = {}

-- Longest metadata.name (the example record cuts its name at 100).
M.MAX_NAME = 100

-- dtype spellings -> kluabench dtype names.
M.DTYPE_ALIASES = {
  ['torch.bfloat16'] = 'bf16', ['torch.float16'] = 'f16', ['torch.half'] = 'f16', ['torch.float32'] = 'f32',
  ['torch.float'] = 'f32', ['torch.float64'] = 'f64', ['torch.double'] = 'f64',
  bfloat16 = 'bf16', float16 = 'f16', float32 = 'f32', float64 = 'f64',
}

-- kluabench dtype names -> kernelindex's tokens (the importer's bf16/fp16/fp32).
M.DTYPE_TOKEN = { bf16 = 'bf16', f16 = 'fp16', f32 = 'fp32', f64 = 'fp64' }
-- kernelindex's tokens -> kluabench dtype names.
M.DTYPE_NAME = { bf16 = 'bf16', fp16 = 'f16', fp32 = 'f32', fp64 = 'f64' }

-- Our name of a dtype: torch.bfloat16 -> bf16.
function M.dtype_name(dtype)
  args.check('names.dtype_name', 1, dtype, 'string', 'dtype')
  return M.DTYPE_ALIASES[dtype] or dtype
end

-- Lowercase, every run of non-alphanumerics turned into one "-".
function M.slug(s)
  args.check('slug', 1, s, 'string', 'string')
  return (s:lower():gsub('[^%w]+', '-'):gsub('^%-+', ''):gsub('%-+$', ''))
end

-- kernelindex's kebab case (its importers' names): names.slug's rule on a-z0-9, cut to 100 characters.
function M.kebab(s)
  args.check('kebab', 1, s, 'string', 'string')
  return (s:lower():gsub('[^a-z0-9]+', '-'):gsub('^%-+', ''):gsub('%-+$', '')):sub(1, 100)
end

-- The first n characters (UTF-8 code points, as the schemas count) of s, cut on a character boundary.
function M.clip(s, n)
  args.check('clip', 1, s, 'string', 'string')
  if math.type(n) ~= 'integer' or n < 0 then
    error("bad argument #2 to 'clip' (non-negative integer expected, got " .. tostring(n) .. ')', 2)
  end
  local len = utf8.len(s)
  if not len then return s:sub(1, n) end
  if len <= n then return s end
  return s:sub(1, utf8.offset(s, n + 1) - 1)
end

function M.gpu_slug(name)
  args.check('gpu_slug', 1, name, 'string', 'string')
  return M.slug(name)
end

-- A value as slugs spell it: 512, not 512.0; other numbers in shortest round-trip form.
function M.format_value(v)
  if math.type(v) == 'integer' then return string.format('%d', v) end
  if type(v) == 'number' then
    if v == math.floor(v) and math.abs(v) < 2 ^ 53 then return string.format('%d', math.tointeger(v)) end
    for prec = 15, 17 do
      local s = string.format('%.' .. prec .. 'g', v)
      if tonumber(s) == v then return s end
    end
  end
  return tostring(v)
end

-- The names of params in `order` first, then the others sorted (tables left out): a slug's word order.
function M.axis_order(params, order)
  args.check('axis_order', 1, params, 'table', 'table of parameters')
  args.check('axis_order', 2, order, 'table|nil', 'list of axis names')
  local keys, listed = {}, {}
  for _, k in ipairs(order or {}) do
    if type(k) == 'string' and params[k] ~= nil and type(params[k]) ~= 'table' and not listed[k] then
      keys[#keys + 1], listed[k] = k, true
    end
  end
  local rest = {}
  for k, v in pairs(params) do
    if type(k) ~= 'string' then
      error("bad argument #1 to 'axis_order' (parameter names must be strings, got " .. type(k) .. ')', 2)
    end
    if type(v) ~= 'table' and not listed[k] then rest[#rest + 1] = k end
  end
  table.sort(rest)
  table.move(rest, 1, #rest, #keys + 1, keys)
  return keys
end

-- Parameters as name..value joined by "-" in names.axis_order, then the dtype's kernelindex token.
function M.workload_slug(params, dtype, order)
  args.check('workload_slug', 1, params, 'table', 'table of parameters')
  args.check('workload_slug', 3, order, 'table|nil', 'list of axis names')
  for k in pairs(params) do
    if type(k) ~= 'string' then
      error("bad argument #1 to 'workload_slug' (parameter names must be strings, got " .. type(k) .. ')', 2)
    end
  end
  local parts = {}
  for i, k in ipairs(M.axis_order(params, order)) do parts[i] = k .. M.format_value(params[k]) end
  if dtype ~= nil then -- operation.dtype_token's token: "bf16", "fp16", ...
    args.check('workload_slug', 2, dtype, 'string', 'dtype string')
    local ours = M.dtype_name(dtype)
    parts[#parts + 1] = M.DTYPE_TOKEN[ours] or ours
  end
  return table.concat(parts, '-')
end

-- The parts joined by "-" as a DNS-safe metadata.name, at most names.MAX_NAME, never ending in "-".
function M.dns_name(...)
  local parts = {}
  for i = 1, select('#', ...) do
    local p = select(i, ...)
    if p ~= nil and p ~= '' then
      if type(p) ~= 'string' and type(p) ~= 'number' then
        error(string.format("bad argument #%d to 'dns_name' (string expected, got %s)", i, type(p)), 2)
      end
      parts[#parts + 1] = tostring(p)
    end
  end
  local s = M.slug(table.concat(parts, '-'))
  return (s:sub(1, M.MAX_NAME):gsub('%-+$', ''))
end

-- UTC time fields of an epoch time in seconds (fractions as milliseconds).
function M.utc(epoch)
  args.check('utc', 1, epoch, 'number', 'epoch seconds')
  local sec = math.floor(epoch)
  local ms = math.floor((epoch - sec) * 1000 + 0.5)
  if ms >= 1000 then sec, ms = sec + 1, ms - 1000 end
  local t = os.date('!*t', sec)
  return { year = t.year, month = t.month, day = t.day, hour = t.hour, min = t.min, sec = t.sec, ms = ms }
end

local function days_in_month(year, month)
  if month == 2 then return (year % 4 == 0 and (year % 100 ~= 0 or year % 400 == 0)) and 29 or 28 end
  return (month == 4 or month == 6 or month == 9 or month == 11) and 30 or 31
end

-- Parses "YYYY-MM-DD HH:MM:SS[.fff]" (Liger's, as UTC) or ISO-8601 with Z: fields, or nil and a message.
function M.parse_time(s)
  args.check('names.parse_time', 1, s, 'string', 'time text')
  local y, mo, d, h, mi, se, rest = s:match('^%s*(%d%d%d%d)%-(%d%d)%-(%d%d)[T ](%d%d):(%d%d):(%d%d)(.-)%s*$')
  if not y then return nil, string.format('unrecognised timestamp %q', s) end
  local ms = 0
  if rest ~= '' and rest ~= 'Z' and rest ~= '+00:00' then
    local frac, z = rest:match('^%.(%d+)(Z?)$')
    if not frac then return nil, string.format('unrecognised timestamp %q', s) end
    ms = math.floor(tonumber('0.' .. frac) * 1000 + 0.5)
    if ms > 999 then ms = 999 end
  end
  local t = { year = tonumber(y), month = tonumber(mo), day = tonumber(d), hour = tonumber(h), min = tonumber(mi),
    sec = tonumber(se), ms = ms }
  -- a day the month has, no leap second: RFC 3339 as kernelindex's schemas spell it (tests/fuzz/fuzz_csv.c)
  if t.month < 1 or t.month > 12 or t.day < 1 or t.day > days_in_month(t.year, t.month) or t.hour > 23
      or t.min > 59 or t.sec > 59 then
    return nil, string.format('timestamp %q is out of range (not a day of the calendar, or a time of '
      .. 'day beyond 23:59:59)', s)
  end
  return t
end

-- ISO-8601 UTC with milliseconds: "2025-08-07T21:42:05.000Z".
function M.iso8601(t)
  args.check('names.iso8601', 1, t, 'table', 'time fields (names.utc)')
  return string.format('%04d-%02d-%02dT%02d:%02d:%02d.%03dZ', t.year, t.month, t.day, t.hour, t.min, t.sec, t.ms or 0)
end

-- The time as it ends an externalId: "2025-08-07-21-42-05".
function M.time_id(t)
  args.check('names.time_id', 1, t, 'table', 'time fields (names.utc)')
  return string.format('%04d-%02d-%02d-%02d-%02d-%02d', t.year, t.month, t.day, t.hour, t.min, t.sec)
end

-- The time as Liger's CSV writes it: "2025-08-07 21:42:05".
function M.liger_time(t)
  args.check('names.liger_time', 1, t, 'table', 'time fields (names.utc)')
  return string.format('%04d-%02d-%02d %02d:%02d:%02d', t.year, t.month, t.day, t.hour, t.min, t.sec)
end

-- The externalId kernel/mode/provider/gpu-slug/workload-slug/time, then /metric unless speed or latency.
function M.external_id(o)
  for _, k in ipairs { 'kernel', 'mode', 'provider', 'gpu', 'workload' } do
    if type(o[k]) ~= 'string' then
      error(string.format("bad argument #1 to 'external_id' (field '%s' must be a string, got %s)", k, type(o[k])), 2)
    end
  end
  if type(o.time) ~= 'table' then
    error("bad argument #1 to 'external_id' (field 'time' must be a table of UTC fields)", 2)
  end
  local id = table.concat({ o.kernel, o.mode, o.provider, M.gpu_slug(o.gpu), o.workload, M.time_id(o.time) }, '/')
  if o.metric and o.metric ~= 'speed' and o.metric ~= 'latency' then id = id .. '/' .. o.metric end
  return id
end

return M
