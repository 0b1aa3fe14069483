--- How the REPL prints results (engine/host/repl.c requires this module on the
-- first result it prints): a table as a bounded, nested view with sorted
-- keys (lists as `[1, 2048, 32, 64]`, so a tensor's shape reads as one), a
-- timing result (what kb.do_bench.do_bench, kb.measure.run and a protocol's
-- run return) as torch.utils.benchmark's Measurement does (median, IQR,
-- samples, protocol, warnings), anything else as tostring shows it.
-- Strings at the top level print as they are, as lua.c prints them.
local M = {}
local args = require 'kluabench.util.args'

--- Limits of the table view: nesting depth, entries shown per table, entries
-- shown in all (the rest is counted, not shown), bytes of a string, and the
-- width under which a table is written on one line.
M.LIMITS = { depth = 4, items = 40, total = 400, string = 200, width = 100 }

local function is_identifier(k)
  return type(k) == 'string' and k:match('^[%a_][%w_]*$') ~= nil and not ({
    ['and'] = 1, ['break'] = 1, ['do'] = 1, ['else'] = 1, ['elseif'] = 1, ['end'] = 1, ['false'] = 1,
    ['for'] = 1, ['function'] = 1, ['goto'] = 1, ['if'] = 1, ['in'] = 1, ['local'] = 1, ['nil'] = 1,
    ['not'] = 1, ['or'] = 1, ['repeat'] = 1, ['return'] = 1, ['then'] = 1, ['true'] = 1, ['until'] = 1,
    ['while'] = 1 })[k]
end

-- A string as a readable Lua literal, cut after `limit` bytes.
local function quote(s, limit)
  local cut = #s > limit and #s - limit or 0
  if cut > 0 then s = s:sub(1, limit) end
  local q = '"' .. s:gsub('[%c"\\\128-\255]', function(c)
    if c == '\n' then return '\\n' elseif c == '\t' then return '\\t'
    elseif c == '"' or c == '\\' then return '\\' .. c
    elseif c:byte() >= 128 then return c -- UTF-8 text stays readable
    else return string.format('\\%03d', c:byte()) end
  end) .. '"'
  if cut > 0 then q = q .. string.format('... (%d more bytes)', cut) end
  return q
end

-- tostring, never raising (a __tostring that fails is shown as such).
local function safe_tostring(v)
  local ok, s = pcall(tostring, v)
  if ok and type(s) == 'string' then return s end
  return string.format('<%s: __tostring failed: %s>', type(v), tostring(s))
end

local function has_tostring(v)
  local mt = getmetatable(v)
  return type(mt) == 'table' and rawget(mt, '__tostring') ~= nil
end

local TYPE_ORDER = { number = 1, string = 2, boolean = 3 }

-- Keys in a stable order: numbers ascending, then strings, then the rest
-- by their text.
local function sorted_keys(t)
  local keys = {}
  for k in next, t do keys[#keys + 1] = k end
  table.sort(keys, function(a, b)
    local ta, tb = TYPE_ORDER[type(a)] or 4, TYPE_ORDER[type(b)] or 4
    if ta ~= tb then return ta < tb end
    if ta <= 2 then return a < b end
    return safe_tostring(a) < safe_tostring(b)
  end)
  return keys
end

-- The length n when t's keys are exactly 1..n (a list), else nil.
local function list_length(t)
  local n = 0
  for _ in next, t do n = n + 1 end
  for i = 1, n do
    if rawget(t, i) == nil then return nil end
  end
  return n
end

local function scalar(v)
  local tv = type(v)
  if tv == 'string' then return quote(v, M.LIMITS.string) end
  if tv == 'number' then
    if math.type(v) == 'integer' then return tostring(v) end
    if v ~= v then return 'nan' elseif v == math.huge then return 'inf' elseif v == -math.huge then return '-inf' end
    return string.format('%.14g', v)
  end
  return safe_tostring(v)
end

local function key_text(k)
  if is_identifier(k) then return k end
  return '[' .. scalar(k) .. ']'
end

-- The view of v as a list of lines (one for a short value). `state` holds
-- the tables on the current path (cycles) and the budget of entries.
local function view(v, depth, state)
  if type(v) ~= 'table' or has_tostring(v) then return { scalar(v) } end
  if state.path[v] then return { '<cycle: ' .. safe_tostring(v) .. '>' } end
  if next(v) == nil then return { '{}' } end
  if depth >= M.LIMITS.depth then return { '{...}' } end
  state.path[v] = true
  local n = list_length(v)
  local keys = n and nil or sorted_keys(v)
  local count = n or #keys
  local items, multiline = {}, false
  for i = 1, count do
    if i > M.LIMITS.items or state.budget <= 0 then
      items[#items + 1] = { string.format('... (%d more)', count - i + 1) }
      break
    end
    state.budget = state.budget - 1
    local k = n and i or keys[i]
    local lines = view(rawget(v, k), depth + 1, state)
    if not n then lines[1] = key_text(k) .. ' = ' .. lines[1] end
    if #lines > 1 then multiline = true end
    items[#items + 1] = lines
  end
  state.path[v] = nil
  local open, close = n and '[' or '{', n and ']' or '}'
  if not multiline then
    local flat = {}
    for i, lines in ipairs(items) do flat[i] = lines[1] end
    local one = open .. table.concat(flat, ', ') .. close
    if #one <= M.LIMITS.width then return { one } end
  end
  local out = { open }
  for i, lines in ipairs(items) do
    for j, line in ipairs(lines) do
      out[#out + 1] = '  ' .. line .. ((j == #lines and i < #items) and ',' or '')
    end
  end
  out[#out + 1] = close
  return out
end

--- The readable view of any value: a table nested and bounded (M.LIMITS), cycles marked.
--
-- Lists (keys 1..n) are written `[a, b, c]`, other tables `{key = value}` with sorted keys,
-- one line when short enough; nested deeper than LIMITS.depth shows `{...}`, a table met again
-- on its own path `<cycle: table: 0x...>`, entries past the limits `... (N more)`.
-- A value with a __tostring (a tensor) shows its tostring.
--
-- @signature show.value(v) -> string
-- @example
--   local show = require 'kluabench.repl.show'
--   print(show.value({shape = {1, 2048, 32, 64}, dtype = "bf16"}))
--   --> {dtype = "bf16", shape = [1, 2048, 32, 64]}
function M.value(v)
  return table.concat(view(v, 0, { path = {}, budget = M.LIMITS.total }), '\n')
end

--- Whether v is a timing result: a table with a list of samples and a summary with a median.
--
-- @signature show.is_measurement(v) -> boolean
-- @example
--   local show = require 'kluabench.repl.show'
--   assert(not show.is_measurement({1, 2, 3}))
function M.is_measurement(v)
  return type(v) == 'table' and not has_tostring(v) and type(rawget(v, 'samples')) == 'table'
    and type(rawget(v, 'summary')) == 'table' and type(rawget(v.summary, 'median')) == 'number'
end

-- A duration given in ms, in the unit that suits it: "12.34 us".
local function duration(ms, unit)
  if ms ~= ms then return 'nan' end
  local a = math.abs(ms)
  unit = unit or (a >= 1000 and 's' or a >= 1 and 'ms' or a >= 1e-3 and 'us' or 'ns')
  local scale = ({ s = 1e-3, ms = 1, us = 1e3, ns = 1e6 })[unit]
  return string.format('%.4g %s', ms * scale, unit), unit
end

-- What measured it: the mode or protocol, and how the samples were timed.
local function protocol_of(r)
  local p = rawget(r, 'protocol')
  local name = rawget(r, 'mode') or (type(p) == 'table' and p.name)
    or (type(r.used) == 'table' and (r.used.mode or (r.used.n_repeat and 'do_bench')))
  return name or 'unknown protocol'
end

local RETURNED = { min = 'Min:   ', max = 'Max:   ', mean = 'Mean:  ', median = 'Median:' }

-- The line of what do_bench returned beside its result (value: a number or a list, in ms), named by its statistic.
local function returned_line(value, r)
  local used = type(r.used) == 'table' and r.used or {}
  if type(value) == 'number' then
    return string.format('  %s %s (do_bench\'s return value, %.6g ms: return_mode "%s")',
      RETURNED[used.return_mode] or 'Value: ', duration(value), value, tostring(used.return_mode))
  end
  if used.return_mode == 'all' and not used.quantiles then
    return string.format('  Samples: do_bench\'s return value, all %d samples in ms (return_mode "all")', #value)
  end
  local parts = {}
  for i, v in ipairs(value) do
    local q = type(used.quantiles) == 'table' and used.quantiles[i]
    parts[i] = (q and string.format('p%g ', 100 * q) or '') .. duration(v)
  end
  return '  Quantiles: ' .. table.concat(parts, ', ') .. " (do_bench's return value, in ms)"
end

--- A timing result as torch.utils.benchmark's Measurement shows one.
--
-- The median and interquartile range in a unit that suits them, the number of samples, the
-- protocol (mode) and its stopping rule, the timer and backend, and each warning the result
-- carries; an IQR above 10 % of the median adds a warning, as torch's does. returned: what
-- do_bench returned beside the result (its value in ms: a number or a list), labelled.
--
-- @signature show.measurement(r [, returned]) -> string
-- @example
--   local show = require 'kluabench.repl.show'
--   local r = {samples = {0.011, 0.012, 0.013}, mode = "cold",
--     summary = require("kluabench.stats").summary({0.011, 0.012, 0.013})}
--   print(show.measurement(r))
function M.measurement(r, returned)
  if not M.is_measurement(r) then
    error("bad argument #1 to 'show.measurement' (timing result {samples, summary} expected, got " .. type(r) .. ')', 2)
  end
  local s = r.summary
  local median, unit = duration(s.median)
  local lines = {}
  local where = {}
  if r.timer then where[#where + 1] = 'timer ' .. tostring(r.timer) end
  if r.backend then where[#where + 1] = 'backend ' .. tostring(r.backend) end
  local protocol = protocol_of(r)
  lines[1] = string.format('<kluabench timing result: %s%s>', protocol,
    #where > 0 and (', ' .. table.concat(where, ', ')) or '')
  if r.name and tostring(r.name) ~= protocol then lines[#lines + 1] = '  ' .. tostring(r.name) end
  if returned ~= nil then lines[#lines + 1] = returned_line(returned, r) end
  if not (returned ~= nil and type(r.used) == 'table' and r.used.return_mode == 'median' and type(returned) == 'number') then
    lines[#lines + 1] = '  Median: ' .. median
  end
  local q25, q75 = s.q25, s.q75
  if type(q25) == 'number' and type(q75) == 'number' then
    local scale = ({ s = 1e-3, ms = 1, us = 1e3, ns = 1e6 })[unit]
    lines[#lines + 1] = string.format('  IQR:    %s (%.4g to %.4g %s: the 25th to 75th percentile)',
      duration(q75 - q25, unit), q25 * scale, q75 * scale, unit)
  end
  local n = s.n or #r.samples
  local stop = type(r.stop) == 'table' and r.stop or (type(r.used) == 'table' and type(r.used.stop) == 'table' and r.used.stop)
  local counts = string.format('  %d sample%s', n, n == 1 and '' or 's')
  if type(r.used) == 'table' and r.used.batch then
    counts = counts .. string.format(', %s call%s per sample', tostring(r.used.batch), r.used.batch == 1 and '' or 's')
  end
  if stop and stop.reason then counts = counts .. '; stop: ' .. tostring(stop.reason) end
  lines[#lines + 1] = counts
  local warnings = {}
  for _, w in ipairs(type(r.warnings) == 'table' and r.warnings or {}) do warnings[#warnings + 1] = tostring(w) end
  if type(q25) == 'number' and s.median > 0 and (q75 - q25) / s.median > 0.1 then
    warnings[#warnings + 1] = string.format('Interquartile range is %.1f%% of the median: the samples are noisy '
      .. '(another process, clocks, or too short a kernel?)', 100 * (q75 - q25) / s.median)
  end
  for _, w in ipairs(warnings) do lines[#lines + 1] = '  WARNING: ' .. w end
  return table.concat(lines, '\n')
end

--- What the REPL prints for one result: a timing result, a table, or what tostring gives.
--
-- Top-level strings are written as they are (as lua.c prints them); numbers as Lua writes them.
--
-- @signature show.result(v) -> string
-- @example
--   local show = require 'kluabench.repl.show'
--   print(show.result({1, 2048, 32, 64})) --> [1, 2048, 32, 64]
function M.result(v)
  if type(v) == 'string' then return v end
  if type(v) == 'number' then return tostring(v) end
  if M.is_measurement(v) then return M.measurement(v) end
  return M.value(v)
end

local function is_number_list(v)
  if type(v) ~= 'table' or has_tostring(v) or #v == 0 then return false end
  for _, x in ipairs(v) do if type(x) ~= 'number' then return false end end
  return true
end

--- Prints the REPL's results: one line separated by tabs, as lua.c does, unless one of them takes
-- several lines (then one result after the other). do_bench's pair (value, result) prints as one
-- view, its value labelled by the statistic it is (Mean, Median, Quantiles: show.measurement).
--
-- @signature show.print(...)
-- @example
--   local show = require 'kluabench.repl.show'
--   show.print(1, "two", {3})
function M.print(...)
  local n = select('#', ...)
  local first, second = ...
  -- do_bench's (value, result): one labelled view, not a bare number above it
  if n == 2 and M.is_measurement(second) and type(second.used) == 'table' and second.used.return_mode
      and (type(first) == 'number' or is_number_list(first)) then
    io.stdout:write(M.measurement(second, first), '\n')
    io.stdout:flush()
    return
  end
  local parts, multiline = {}, false
  for i = 1, n do
    parts[i] = M.result((select(i, ...)))
    if parts[i]:find('\n', 1, true) then multiline = true end
  end
  io.stdout:write(table.concat(parts, multiline and '\n' or '\t'), '\n')
  io.stdout:flush()
end

return M
