--- kluabench.trust.seeds: the run's seed key, drawn at its start and recorded after, so that no kernel knows its inputs
-- in advance; kb.trust.seed_key(key) mixes it into every kb.randn seed; KLUABENCH_SEED_KEY=0x... replays a run.
local args = require 'kluabench.util.args'
local M = {}

local core = require 'kluabench.core'
-- bound when the module loads, before the user's script (trust.integrity)
local seed_key = core.trust.seed_key

local function mix(x)
  x = x + 0x9e3779b97f4a7c15
  x = (x ~ (x >> 30)) * 0xbf58476d1ce4e5b9
  x = (x ~ (x >> 27)) * 0x94d049bb133111eb
  return x ~ (x >> 31)
end

-- 8 bytes of /dev/urandom as an integer, or nil.
local function urandom()
  local f = io.open('/dev/urandom', 'rb')
  if not f then return nil end
  local s = f:read(8)
  f:close()
  if not s or #s < 8 then return nil end
  return (string.unpack('<i8', s))
end

--- The key as the records write it: "0x" and 16 hex digits.
-- @signature seeds.hex(key) -> text
-- @example
--   print(require("kluabench.trust.seeds").hex(255))
function M.hex(key)
  args.check('seeds.hex', 1, key, 'integer', 'seed key')
  return string.format('0x%016x', key)
end

--- Parses a key as hex() writes it (or a decimal integer); nil and a message for anything else.
-- @signature seeds.parse(text) -> key | nil, message
-- @example
--   print(require("kluabench.trust.seeds").parse("0x00000000000000ff"))
function M.parse(text)
  args.check('seeds.parse', 1, text, 'string', 'seed key text')
  local s = tostring(text)
  local hex = s:match('^0[xX](%x+)$')
  local v
  if hex and #hex <= 16 then
    v = 0
    for i = 1, #hex do v = (v << 4) | tonumber(hex:sub(i, i), 16) end
  elseif s:match('^%d+$') then
    v = math.tointeger(tonumber(s))
  end
  if not v or v == 0 then
    return nil, string.format("a seed key is a non-zero integer (0x and up to 16 hex digits, or decimal), got '%s'", s)
  end
  return v
end

--- A fresh non-zero key and its source: $KLUABENCH_SEED_KEY when set (an error when malformed), else "drawn" from
-- /dev/urandom (or the clock).
-- @signature seeds.draw() -> key, source
-- @example
--   local key = require("kluabench.trust.seeds").draw()
function M.draw()
  local env = os.getenv('KLUABENCH_SEED_KEY')
  if env and env ~= '' then
    local k, err = M.parse(env)
    if not k then error('KLUABENCH_SEED_KEY: ' .. err, 2) end
    return k, 'KLUABENCH_SEED_KEY'
  end
  local k = urandom() or (core.time_ns() ~ (core.clock_ns() << 20))
  k = mix(k)
  if k == 0 then k = 1 end
  return k, 'drawn'
end

--- A key derived from key for one purpose: derive(key, "audit", 3) differs from derive(key, "set", 3).
-- @signature seeds.derive(key, ...) -> key
-- @example
--   local s = require("kluabench.trust.seeds")
--   print(s.hex(s.derive(1, "audit", 2)))
function M.derive(key, ...)
  args.check('seeds.derive', 1, key, 'integer', 'seed key')
  local x = mix(key)
  for i = 1, select('#', ...) do
    local v = select(i, ...)
    if type(v) == 'string' then
      for j = 1, #v do x = mix(x ~ v:byte(j)) end
    else
      x = mix(x ~ math.tointeger(v))
    end
  end
  return x ~= 0 and x or 1
end

--- n seeds for check.new, each in [1, 2^31), drawn from key.
-- @signature seeds.list(n, key) -> {seeds}
-- @example
--   print(table.concat(require("kluabench.trust.seeds").list(3, 42), ", "))
function M.list(n, key)
  args.check('seeds.list', 1, n, 'integer', 'number of seeds')
  args.check('seeds.list', 2, key, 'integer', 'seed key')
  local out = {}
  for i = 1, n do out[i] = (M.derive(key, 'check', i) & 0x7fffffff) | 1 end
  return out
end

--- Calls fn(...) with kb.randn keyed by key, then restores the key (also on an error).
-- @signature seeds.with_key(key, fn, ...) -> what fn returns
-- @example
--   local s = require("kluabench.trust.seeds")
--   local x = s.with_key(7, kb.randn, {4}, "f32", 1)
function M.with_key(key, fn, ...)
  args.check('seeds.with_key', 1, key, 'integer', 'seed key')
  args.check('seeds.with_key', 2, fn, 'callable', 'function')
  local before = seed_key(key)
  local r = table.pack(pcall(fn, ...))
  seed_key(before)
  if not r[1] then error(r[2], 0) end
  return table.unpack(r, 2, r.n)
end

return M
