-- Interleaved sampling (interleave.lua) and its seeded generator (prng.lua).
local interleave = require 'kluabench.measure.interleave'
local prng = require 'kluabench.stats.prng'
local stopping = require 'kluabench.measure.stopping'

-- A session that needs `n` samples; every step logs its name in `log` and
-- takes the value of a shared drift counter as its sample.
local function fake_session(name, n, log, drift)
  local st = stopping.state(function() return 0 end)
  local rule = stopping.count(n)
  local s = { warmed = false }
  function s:warmup() self.warmed = true end
  function s:step()
    log[#log + 1] = name
    drift.t = drift.t + 1
    st:add(drift.t)
    return (rule:check(st))
  end
  function s:result()
    return { samples = st.samples, used = {} }
  end
  return s
end

local function mean(xs)
  local s = 0
  for _, x in ipairs(xs) do s = s + x end
  return s / #xs
end

describe('prng', function()
  it('is SplitMix64: known first outputs for seed 0', function()
    local g = prng.new(0)
    assert.equal(string.format('%x', g:next()), 'e220a8397b1dcdaf')
    assert.equal(string.format('%x', g:next()), '6e789e6aa1b965f4')
  end)

  it('gives integers in [1, n] and floats in [0, 1), reproducibly', function()
    local a, b = prng.new(42), prng.new(42)
    for _ = 1, 1000 do
      local x = a:int(7)
      assert.equal(x, b:int(7))
      assert.is_true(math.type(x) == 'integer' and x >= 1 and x <= 7)
      local u = a:uniform()
      assert.equal(u, b:uniform())
      assert.is_true(u >= 0 and u < 1)
    end
  end)

  it('shuffles into a permutation', function()
    local t = prng.new(9):shuffle { 1, 2, 3, 4, 5, 6, 7, 8 }
    table.sort(t)
    assert.same({ 1, 2, 3, 4, 5, 6, 7, 8 }, t)
    assert.has_error(function() prng.new('x') end)
  end)
end)

describe('interleave', function()
  it('round-robin visits every task once per round in order', function()
    assert.same({ { 1, 2, 3 }, { 1, 2, 3 } }, interleave.schedule(3, 2, 'roundrobin'))
  end)

  it('shuffle: every round is a permutation, the order depends only on the seed', function()
    local a = interleave.schedule(4, 50, 'shuffle', 7)
    local b = interleave.schedule(4, 50, 'shuffle', 7)
    local c = interleave.schedule(4, 50, 'shuffle', 8)
    assert.same(a, b)
    assert.are_not.same(a, c)
    local firsts = {}
    for _, round in ipairs(a) do
      local s = table.move(round, 1, 4, 1, {})
      table.sort(s)
      assert.same({ 1, 2, 3, 4 }, s)
      firsts[round[1]] = true
    end
    for i = 1, 4 do assert.is_true(firsts[i], 'task ' .. i .. ' never went first') end
  end)

  it('runs sessions in turns until all are done; finished ones sit out', function()
    local log, drift = {}, { t = 0 }
    local out = interleave.run({
      { name = 'a', session = fake_session('a', 2, log, drift) },
      { name = 'b', session = fake_session('b', 4, log, drift) },
    }, { order = 'roundrobin', keep_sequence = true })
    assert.same({ 'a', 'b', 'a', 'b', 'b', 'b' }, log)
    assert.same(log, out.sequence)
    assert.equal(4, out.rounds)
    assert.equal(2, #out.results.a.samples)
    assert.equal(4, #out.results.b.samples)
    assert.equal('roundrobin', out.results.a.interleave.order)
  end)

  it('records the seed, drawn when not given, and replays the same order from it', function()
    local function go(seed)
      local log, drift = {}, { t = 0 }
      local tasks = {}
      for _, n in ipairs { 'x', 'y', 'z' } do tasks[#tasks + 1] = { name = n, session = fake_session(n, 5, log, drift) } end
      return interleave.run(tasks, { seed = seed }), log
    end
    local out1, log1 = go(nil)
    assert.equal('shuffle', out1.order)
    assert.equal('integer', math.type(out1.seed))
    assert.equal(out1.seed, out1.results.x.used.interleave.seed)
    local _, log2 = go(out1.seed)
    assert.same(log1, log2)
  end)

  it('spreads a drift evenly over the tasks', function()
    local log, drift = {}, { t = 0 }
    local tasks = {}
    for _, n in ipairs { 'p', 'q', 'r' } do tasks[#tasks + 1] = { name = n, session = fake_session(n, 300, log, drift) } end
    local out = interleave.run(tasks, { seed = 3 })
    -- one after the other, the means would be 150, 450, 750; interleaved they
    -- are within a few samples of each other
    local mp, mq, mr = mean(out.results.p.samples), mean(out.results.q.samples),
      mean(out.results.r.samples)
    assert.is_true(math.abs(mp - mq) < 15 and math.abs(mq - mr) < 15 and math.abs(mp - mr) < 15,
      string.format('%g %g %g', mp, mq, mr))
  end)

  it('rejects bad tasks and orders', function()
    assert.has_error(function() interleave.run({}) end)
    assert.has_error(function() interleave.run({ { name = 'a' } }) end)
    local log, drift = {}, { t = 0 }
    assert.has_error(function()
      interleave.run({ { name = 'a', session = fake_session('a', 1, log, drift) },
        { name = 'a', session = fake_session('a', 1, log, drift) } })
    end)
    assert.has_error(function()
      interleave.run({ { name = 'a', session = fake_session('a', 1, log, drift) } }, { order = 'zigzag' })
    end)
  end)
end)
