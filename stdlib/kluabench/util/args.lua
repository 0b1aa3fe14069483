-- Arguments: the checks every exported function makes, the command-line parser of scripts and
-- commands, did-you-mean hints, and text made safe to quote in a message.
local core = require 'kluabench.core'
local M = {}

local function is(v, kind)
  if kind == 'integer' then return math.type(v) == 'integer' end
  if kind == 'callable' then
    if type(v) == 'function' then return true end
    local mt = getmetatable(v)
    return type(mt) == 'table' and type(mt.__call) == 'function'
  end
  return type(v) == kind
end

-- Raises "bad argument #n to 'fname' (what expected, got <type>)" at the caller of the checked
-- function unless v is of one of kinds ("string|nil", "integer", "callable"); returns v.
function M.check(fname, n, v, kinds, what)
  for kind in kinds:gmatch('[^|]+') do if is(v, kind) then return v end end
  error(string.format("bad argument #%d to '%s' (%s expected, got %s)", n, fname,
    what or (kinds:gsub('|', ' or ')), math.type(v) == 'float' and 'number' or type(v)), 3)
end

-- s made safe to quote in a message: control characters, DEL and non-UTF-8 as \xNN, cut at max (200).
function M.printable(s, max)
  s, max = tostring(s), max or 200
  local cut = #s > max
  if cut then s = s:sub(1, max) end
  local out, i, n = {}, 1, #s
  while i <= n do
    local b = s:byte(i)
    local len = b < 0x80 and 1 or b >= 0xF0 and 4 or b >= 0xE0 and 3 or b >= 0xC2 and 2 or 0
    local ch = len > 0 and s:sub(i, i + len - 1) or nil
    if ch and len > 1 and not (#ch == len and utf8.len(ch)) then ch = nil end
    if b < 0x20 or b == 0x7F or ch == nil then
      out[#out + 1], i = string.format('\\x%02X', b), i + 1
    else
      out[#out + 1], i = ch, i + len
    end
  end
  return table.concat(out) .. (cut and '...' or '')
end

-- Optimal string alignment distance: edits and swaps of neighbours ("fsued" is one from "fused").
local function distance(a, b)
  local n, m = #a, #b
  local prev2, prev, cur = {}, {}, {}
  for j = 0, m do prev[j] = j end
  for i = 1, n do
    cur = { [0] = i }
    for j = 1, m do
      local best = prev[j - 1] + (a:byte(i) == b:byte(j) and 0 or 1)
      best = math.min(best, prev[j] + 1, cur[j - 1] + 1)
      if i > 1 and j > 1 and a:byte(i) == b:byte(j - 1) and a:byte(i - 1) == b:byte(j) then
        best = math.min(best, prev2[j - 2] + 1)
      end
      cur[j] = best
    end
    prev2, prev = prev, cur
  end
  return prev[m]
end

-- The candidates a mistyped word most likely meant, best first (at most 3): a few edits away, or a prefix.
function M.closest(word, candidates)
  M.check('closest', 1, word, 'string', 'string')
  M.check('closest', 2, candidates, 'table', 'list of strings')
  local limit = #word <= 2 and 0 or math.max(1, math.min(3, #word // 3))
  local scored, seen = {}, {}
  for _, c in ipairs(candidates) do
    if type(c) == 'string' and c ~= word and not seen[c] and #word <= 64 then
      seen[c] = true
      local d = distance(word, c)
      if d > limit and math.min(#c, #word) >= 3 and (word:sub(1, #c) == c or c:sub(1, #word) == word) then
        d = limit
      end
      if d <= limit then scored[#scored + 1] = { c, d } end
    end
  end
  table.sort(scored, function(x, y) return x[2] < y[2] or (x[2] == y[2] and x[1] < y[1]) end)
  local out = {}
  for i = 1, math.min(3, #scored) do out[i] = scored[i][1] end
  return out
end

-- " (did you mean 'x'?)" or " (did you mean 'x' or 'y'?)", prefix before each; "" when nothing is close.
function M.hint(word, candidates, prefix)
  M.check('hint', 1, word, 'string', 'word')
  M.check('hint', 2, candidates, 'table', 'list of strings')
  M.check('hint', 3, prefix, 'string|nil', 'prefix')
  local c = M.closest(word, candidates)
  if #c == 0 then return '' end
  for i, v in ipairs(c) do c[i] = "'" .. (prefix or '') .. v .. "'" end
  local last = table.remove(c)
  return ' (did you mean ' .. (#c > 0 and (table.concat(c, ', ') .. ' or ') or '') .. last .. '?)'
end

local function option_hint(name, spec)
  local names = {}
  for k, v in pairs(spec) do
    if type(k) == 'string' and (v == 'flag' or v == 'value' or v == 'list') then names[#names + 1] = k end
  end
  return M.hint(name, names, '--')
end

-- Reads options by spec (name -> 'flag', 'value' or 'list'; aliases {o = 'out'}): --name[=value], -o value;
-- '--' (or, with stop_at_positional, the first positional) ends them. opts, positional; or nil, message.
function M.parse_args(args, spec)
  local opts, rest = {}, {}
  local aliases, i = spec.aliases or {}, 1
  while i <= #args do
    local a = args[i]
    if a == '--' then table.move(args, i + 1, #args, #rest + 1, rest); break end
    local name, value = a:match('^%-%-([^=]+)=(.*)$')
    if not name then name = a:match('^%-%-(.+)$') or aliases[a:match('^%-(%a)$') or ''] end
    if not name then
      if a:match('^%-.') then return nil, string.format("unrecognized option '%s'", a) end
      if spec.stop_at_positional then table.move(args, i, #args, #rest + 1, rest); break end
      rest[#rest + 1] = a
    elseif spec[name] == 'flag' then
      if value then return nil, string.format("option '--%s' takes no value", name) end
      opts[name] = true
    elseif spec[name] == 'value' or spec[name] == 'list' then
      if not value then
        i = i + 1
        value = args[i]
        if value == nil then return nil, string.format("option '%s' needs a value", a) end
      end
      if spec[name] == 'list' then
        opts[name] = opts[name] or {}
        table.insert(opts[name], value)
      else
        opts[name] = value
      end
    else
      return nil, string.format("unrecognized option '%s'", a) .. option_hint(name, spec)
    end
    i = i + 1
  end
  return opts, rest
end

-- A script's options: parse_args; --help prints usage (exit 0); a bad argument prints "NAME: message"
-- and usage to stderr and exits 2, as the fail(fmt, ...) it returns does. -h is --help, and -o --out
-- where the script has one (as every command that writes an output takes it).
function M.script_options(name, usage, args, spec)
  local function fail(fmt, ...)
    io.stderr:write(name, ': ', M.printable(string.format(fmt, ...), 400), '\n', usage)
    os.exit(2)
  end
  spec.help, spec.aliases = 'flag', spec.aliases or { h = 'help', o = spec.out == 'value' and 'out' or nil }
  local opts, rest = M.parse_args(args, spec)
  if not opts then fail('%s', rest) end
  if opts.help then io.stdout:write(usage) os.exit(0) end
  if #rest > 0 then fail("unexpected argument '%s'", rest[1]) end
  return opts, fail
end

-- Raises "interrupted!" when SIGINT or SIGTERM stopped the command but a protected call caught it.
function M.stop_if_interrupted()
  if core.interrupted() then error('interrupted!', 0) end
end

return M
