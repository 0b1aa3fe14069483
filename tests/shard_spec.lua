-- Shards of a sweep (kluabench.dist.split): every point in exactly one shard,
-- the same shards on every call and whatever the declaration order, costs
-- balanced within the stated bound, bad specs rejected by name.
local shard = require 'kluabench.dist.split'

-- n points with uneven costs from a fixed formula (no randomness).
local function points_of(n)
  local pts = {}
  for k = 1, n do
    pts[k] = { id = string.format('seq%d-bf16', k * 128), cost = ((k * 7919) % 23 + 1) * 1e6 }
  end
  return pts
end

local function ids(list)
  local out = {}
  for k, p in ipairs(list) do out[k] = p.id end
  return out
end

describe('shard.parse', function()
  it('reads I/N, 1-based', function()
    assert.same({ 1, 3 }, { shard.parse('1/3') })
    assert.same({ 3, 3 }, { shard.parse('3/3') })
    assert.same({ 1, 1 }, { shard.parse('1/1') })
    assert.same({ 12, 40 }, { shard.parse('12/40') })
  end)

  it('rejects bad specs with a message naming the spec', function()
    local cases = {
      ['0/3'] = "bad shard '0/3': the shard number I must be between 1 and N = 3",
      ['4/3'] = "bad shard '4/3': the shard number I must be between 1 and N = 3",
      ['1/0'] = "bad shard '1/0': the shard count N must be at least 1",
      ['a/b'] = "bad shard 'a/b': expected I/N with whole numbers 1 <= I <= N, such as 1/4",
      ['1/'] = "bad shard '1/': expected I/N",
      ['-1/3'] = "bad shard '-1/3': expected I/N",
      ['1/3 '] = "bad shard '1/3 ': expected I/N",
      ['1.5/3'] = "bad shard '1.5/3': expected I/N",
      ['2'] = "bad shard '2': expected I/N",
    }
    for spec, msg in pairs(cases) do
      local i, err = shard.parse(spec)
      assert.is_nil(i, spec)
      assert.is_truthy(err:find(msg, 1, true), spec .. ' -> ' .. tostring(err))
    end
    local i, err = shard.parse(nil)
    assert.is_nil(i)
    assert.matches('expected a string I/N', err)
  end)

  it('formats what it reads', function()
    assert.equal('2/5', shard.format(shard.parse('2/5')))
  end)
end)

describe('shard.select', function()
  it('puts every point in exactly one shard, for N = 1..7 and 0..9 points', function()
    for np = 0, 9 do
      local pts = points_of(np)
      for n = 1, 7 do
        local count = {}
        for i = 1, n do
          local sel = shard.select(pts, i, n)
          for _, p in ipairs(sel) do count[p.id] = (count[p.id] or 0) + 1 end
        end
        for _, p in ipairs(pts) do
          assert.equal(1, count[p.id], string.format('%s with %d points, N = %d', p.id, np, n))
        end
        local total = 0
        for _ in pairs(count) do total = total + 1 end
        assert.equal(np, total)
      end
    end
  end)

  it('keeps declaration order within a shard and gives the same shards on every call', function()
    local pts = points_of(9)
    local pos = {}
    for k, p in ipairs(pts) do pos[p.id] = k end
    for n = 1, 7 do
      for i = 1, n do
        local a, b = ids(shard.select(pts, i, n)), ids(shard.select(pts, i, n))
        assert.same(a, b)
        for k = 2, #a do assert.is_true(pos[a[k - 1]] < pos[a[k]]) end
      end
    end
  end)

  it('does not depend on the order the points were declared in', function()
    local pts = points_of(9)
    local rev = {}
    for k = #pts, 1, -1 do rev[#rev + 1] = pts[k] end
    for n = 1, 7 do
      for i = 1, n do
        local a, b = ids(shard.select(pts, i, n)), ids(shard.select(rev, i, n))
        table.sort(a)
        table.sort(b)
        assert.same(a, b)
      end
    end
  end)

  it('gives these shards (a change here moves points between the processes of a running sweep)', function()
    local pts = {
      { id = 'a', cost = 5 }, { id = 'b', cost = 3 }, { id = 'c', cost = 3 },
      { id = 'd', cost = 2 }, { id = 'e', cost = 1 }, { id = 'f', cost = 0 },
    }
    -- largest first a5 b3 c3 d2 e1 f0, each to the lighter shard: loads (5,0) (5,3)
    -- (5,6) (7,6) (7,7), and f to shard 1 on the tie
    assert.same({ 'a', 'd', 'f' }, ids(shard.select(pts, 1, 2)))
    assert.same({ 'b', 'c', 'e' }, ids(shard.select(pts, 2, 2)))
    assert.same({ 1, 2, 2, 1, 2, 1 }, shard.assign(pts, 2))
    -- equal costs: by id, shards in turn
    local eq = { { id = 'z', cost = 1 }, { id = 'y', cost = 1 }, { id = 'x', cost = 1 } }
    assert.same({ 3, 2, 1 }, shard.assign(eq, 3))
  end)

  it('balances cost: the most and least loaded shards differ by at most the largest cost', function()
    for np = 1, 40, 3 do
      local pts = points_of(np)
      local max = 0
      for _, p in ipairs(pts) do max = math.max(max, p.cost) end
      for n = 1, 7 do
        local _, cost = shard.plan(pts, n)
        local hi, lo = math.max(table.unpack(cost)), math.min(table.unpack(cost))
        assert.is_true(hi - lo <= max, string.format('%d points, N = %d: %g - %g > %g', np, n, hi, lo, max))
      end
    end
    -- a case where the greedy order matters: 4 shards, 8 points, costs 8..1
    local pts = {}
    for k = 1, 8 do pts[k] = { id = 'p' .. k, cost = 9 - k } end
    local _, cost = shard.plan(pts, 4)
    assert.same({ 9, 9, 9, 9 }, cost)
  end)

  it('leaves shards empty when there are more shards than points', function()
    local pts = points_of(2)
    local nonempty = 0
    for i = 1, 5 do
      if #shard.select(pts, i, 5) > 0 then nonempty = nonempty + 1 end
    end
    assert.equal(2, nonempty)
    assert.same({}, shard.select({}, 1, 3))
  end)

  it('rejects bad arguments naming them', function()
    local pts = points_of(3)
    assert.has_error(function() shard.select(pts, 0, 3) end,
      "bad argument #2 to 'shard.select' (shard number between 1 and 3 expected, got 0)")
    assert.has_error(function() shard.select(pts, 4, 3) end,
      "bad argument #2 to 'shard.select' (shard number between 1 and 3 expected, got 4)")
    assert.has_error(function() shard.select(pts, 1, 0) end,
      "bad argument #3 to 'shard.select' (shard count: integer >= 1 expected, got 0)")
    assert.has_error(function() shard.select(nil, 1, 2) end,
      "bad argument #1 to 'shard.select' (points: list expected, got nil)")
    assert.has_error(function() shard.select({ { id = 'a', cost = -1 } }, 1, 2) end,
      "bad argument #1 to 'shard.select' (point 1 ('a'): cost must be a finite number >= 0, got -1)")
    assert.has_error(function() shard.assign({ { id = 'a', cost = 0 / 0 } }, 2) end)
    assert.has_error(function() shard.plan({ { id = 'a', cost = 1 }, { id = 'a', cost = 2 } }, 2) end,
      "bad argument #1 to 'shard.plan' (point 2 has the id 'a' of point 1; ids must be unique)")
    assert.has_error(function() shard.assign({ { cost = 1 } }, 2) end,
      "bad argument #1 to 'shard.assign' (point 1: id must be a string, got nil)")
  end)
end)
