-- scripts/host_time_probe.lua: the wall time of a script by function, on the cpu backend.
local sub = require 'helpers.subprocess'

local ROOT = sub.root()

describe('scripts/host_time_probe.lua', function()
  local dir
  before_each(function() dir = sub.tmpdir() end)
  after_each(function() os.execute('rm -rf ' .. sub.q(dir)) end)

  it('sums each function once over its outermost calls, with its arguments passed on', function()
    sub.spit(dir .. '/work.lua', [[
local kb = require 'kluabench'
local function spin(ms)
  local t = kb.clock_ns()
  while kb.clock_ns() - t < ms * 1e6 do end
end
local function slow(n) if n > 0 then slow(n - 1) end spin(50) end
local function quick() spin(1) end
assert(arg[1] == 'x' and select('#', ...) == 2, 'the script gets its arguments')
slow(2)
quick()
]])
    local r = sub.run({ '--backend', 'cpu', ROOT .. '/scripts/host_time_probe.lua', '--top', '50', dir .. '/work.lua',
      'x', 'y' })
    assert.equal(0, r.code, r.err)
    local slow_s, slow_calls = r.out:match('([%d.]+) s%s+(%d+) calls%s+%S*work%.lua:6 %(slow%)')
    local quick_s = r.out:match('([%d.]+) s%s+%d+ calls%s+%S*work%.lua:7 %(quick%)')
    assert.truthy(slow_s, r.out)
    -- three nested calls of slow, 150 ms in all: counted once, not 150 + 100 + 50
    assert.equal('3', slow_calls)
    assert.is_true(tonumber(slow_s) >= 0.149 and tonumber(slow_s) < 0.28, r.out)
    assert.is_true(tonumber(quick_s) < tonumber(slow_s) / 10, r.out)
    assert.matches('^wall [%d.]+ s', r.out)
  end)

  it('says so when the script fails, and refuses bad usage', function()
    sub.spit(dir .. '/bad.lua', 'error("no such point")')
    local r = sub.run({ '--backend', 'cpu', ROOT .. '/scripts/host_time_probe.lua', dir .. '/bad.lua' })
    assert.equal(1, r.code)
    assert.matches('the script failed: .*no such point', r.err)
    r = sub.run({ '--backend', 'cpu', ROOT .. '/scripts/host_time_probe.lua', '--top', '0', dir .. '/bad.lua' })
    assert.equal(2, r.code)
    assert.matches("%-%-top must be an integer >= 1, got '0'", r.err)
    r = sub.run({ '--backend', 'cpu', ROOT .. '/scripts/host_time_probe.lua' })
    assert.equal(2, r.code)
    assert.matches('usage:', r.err)
  end)
end)
