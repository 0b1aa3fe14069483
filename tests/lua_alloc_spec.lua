-- The Lua state's pooled allocator (engine/host/lua_alloc.c): blocks of every size class and past it,
-- grown, shrunk and freed in a random order, keep their contents. Run by the kluabench binary,
-- whose states use the pool (under AddressSanitizer the pool is off and this checks the C
-- library's blocks instead).
local prng = require 'kluabench.stats.prng'

describe('the pooled Lua allocator', function()
  it('keeps the contents of tables and strings grown, shrunk and freed in a random order', function()
    local g = prng.new(os.time())
    local live = {} -- id -> {kind, n, seed, value}
    local function make(id)
      local n = g:int(300) -- array parts of 0..299 slots: blocks of 16 bytes up to 4.8 KB
      local seed = g:int(1000000)
      if g:uniform() < 0.5 then
        local t = {}
        for i = 1, n do t[i] = seed + i end
        local h = n % 37
        for i = 1, h do t['k' .. i] = seed - i end -- a hash part too
        live[id] = { kind = 'table', n = n, h = h, seed = seed, value = t }
      else
        local parts = {}
        for i = 1, n do parts[i] = string.char(65 + (seed + i) % 26) end
        live[id] = { kind = 'string', n = n, seed = seed, value = table.concat(parts) }
      end
    end
    local function check(id)
      local o = live[id]
      if o.kind == 'table' then
        assert.equal(o.n, #o.value)
        for i = 1, o.n do if o.value[i] ~= o.seed + i then error(string.format('object %d: [%d] changed', id, i)) end end
        for i = 1, o.h do assert.equal(o.seed - i, o.value['k' .. i]) end
      else
        assert.equal(o.n, #o.value)
        for i = 1, o.n, 7 do assert.equal(65 + (o.seed + i) % 26, o.value:byte(i)) end
      end
    end
    for round = 1, 40 do
      for id = 1, 200 do
        local r = g:uniform()
        if not live[id] or r < 0.3 then
          make(id)
        elseif r < 0.5 and live[id].kind == 'table' then
          -- shrink: drop the upper half, so that a rehash makes the array part smaller
          local o = live[id]
          for i = o.n, o.n // 2 + 1, -1 do o.value[i] = nil end
          o.n = o.n // 2
          o.value.rehash = true
          o.value.rehash = nil
        elseif r < 0.6 then
          live[id] = nil
        end
      end
      if round % 5 == 0 then collectgarbage() end
      for id in pairs(live) do check(id) end
    end
  end)
end)
