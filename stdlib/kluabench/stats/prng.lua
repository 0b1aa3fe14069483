--- A small seeded pseudo-random generator for the choices a protocol makes
-- (interleaving order, bootstrap resamples), so that every such choice is
-- reproducible from a recorded seed on any machine and any Lua 5.4.
--
-- The generator is SplitMix64 (Steele, Lea and Flood, "Fast splittable
-- pseudorandom number generators", OOPSLA 2014): a 64-bit state advanced by
-- a fixed odd constant and a bijective mixing function of it as output. Lua
-- 5.4 integers are 64-bit two's complement with wrap-around arithmetic and a
-- logical `>>`, which is exactly the arithmetic the algorithm is defined in.
-- Statistical quality is ample for shuffles and bootstraps; it is not a
-- cryptographic generator.
local core = require 'kluabench.core'
local M = {}

local Gen = {}
Gen.__index = Gen
Gen.__name = 'kluabench.Prng'

local GOLDEN = 0x9E3779B97F4A7C15 -- wraps to a negative integer; the bits are what matter
local MIX1 = 0xBF58476D1CE4E5B9
local MIX2 = 0x94D049BB133111EB
local TWO_M53 = 2.0 ^ -53

--- A SplitMix64 generator seeded with an integer.
--
-- @signature prng.new(seed) -> Generator
-- @example
--   local rng = prng.new(42)
--   print(rng:int(6))
function M.new(seed)
  local s = math.tointeger(seed)
  if s == nil then
    error("bad argument #1 to 'new' (integer seed expected, got " .. tostring(seed) .. ')', 2)
  end
  return setmetatable({ state = s, seed = s }, Gen)
end

--- The next 64-bit output (any sign).
--
-- The next 64-bit output, as a Lua integer (any sign: all 64 bits are used).
--
-- @signature rng:next() -> integer
-- @section prng
-- @example
--   print(prng.new(1):next())
function Gen:next()
  local s = self.state + GOLDEN
  self.state = s
  local z = (s ~ (s >> 30)) * MIX1
  z = (z ~ (z >> 27)) * MIX2
  return z ~ (z >> 31)
end

--- A float uniform in [0, 1).
--
-- A float uniform in [0, 1): the top 53 bits of the next output.
--
-- @signature rng:uniform() -> number
-- @section prng
-- @example
--   print(prng.new(1):uniform())
function Gen:uniform()
  return (self:next() >> 11) * TWO_M53
end

--- An integer uniform in [1, n].
--
-- The bias of this mapping is below n / 2^53, far under any effect it could have on a shuffle or a
-- bootstrap.
--
-- @signature rng:int(n) -> integer
-- @section prng
-- @example
--   print(prng.new(1):int(10))
function Gen:int(n)
  return math.floor((self:next() >> 11) * TWO_M53 * n) + 1
end

--- Shuffles a list in place (Fisher-Yates).
--
-- Shuffles list t in place (Fisher-Yates, from the end) and returns it.
--
-- @signature rng:shuffle(t) -> t
-- @section prng
-- @example
--   print(table.concat(prng.new(7):shuffle({1, 2, 3, 4}), " "))
function Gen:shuffle(t)
  for i = #t, 2, -1 do
    local j = self:int(i)
    t[i], t[j] = t[j], t[i]
  end
  return t
end

--- A seed from the host clock, below 2^53 (exact in JSON), for when none is given.
--
-- A seed for when the caller gives none: the host clock mixed once, so that two runs started in the
-- same second still differ. Returned as an integer below 2^53 so that it survives a round trip
-- through JSON exactly.
--
-- @signature prng.fresh_seed() -> integer
-- @example
--   print(prng.fresh_seed())
function M.fresh_seed()
  local t = core.clock_ns()
  local g = M.new(math.tointeger(t) or os.time())
  return g:next() >> 11
end

return M
