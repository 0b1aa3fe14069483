-- Events, elapsed time, synchronisation, flush, host clock, spin and graphs.
local kb = require 'kluabench'

describe('timing', function()
  it('measures elapsed time between two events on the host clock (cpu)', function()
    local a, b = kb.event('cpu'), kb.event('cpu')
    a:record()
    local t0 = kb.clock_ns()
    while kb.clock_ns() - t0 < 2e6 do end -- 2 ms
    b:record()
    b:synchronize()
    local ms = kb.elapsed_ms(a, b)
    assert.is_true(ms >= 2 and ms < 50, ms)
    assert.equal(ms, a:elapsed_ms(b))
  end)

  it('refuses unrecorded and destroyed events', function()
    local a, b = kb.event('cpu'), kb.event('cpu')
    a:record()
    assert.has_error(function() kb.elapsed_ms(a, b) end,
      "bad argument #2 to 'elapsed_ms' (event has not been recorded)")
    b:destroy()
    b:destroy()
    assert.has_error(function() b:record() end)
    assert.has_error(function() kb.elapsed_ms(a, 1) end)
  end)

  it('has a monotonic integer host clock', function()
    local a = kb.clock_ns()
    local b = kb.clock_ns()
    assert.is_true(math.type(a) == 'integer' and b >= a)
  end)

  it('flushes at least twice the last-level cache by default', function()
    local bytes = kb.flush_l2(nil, 'cpu')
    local l2 = kb.device_info('cpu').l2_bytes
    assert.is_true(bytes >= 2 * l2 and bytes > 0)
    assert.equal(1 << 20, kb.flush_l2(1 << 20, 'cpu'))
    assert.has_error(function() kb.flush_l2(-1, 'cpu') end)
  end)

  it('synchronize and spin are accepted on cpu', function()
    kb.synchronize('cpu')
    kb.spin(1000, 'cpu')
    assert.has_error(function() kb.spin(-1, 'cpu') end)
  end)

  it('graphs need the cuda backend', function()
    assert.has_error(function() kb.graph(function() end, 'cpu') end)
  end)
end)

describe('timing on cuda #gpu', function()
  it('times a spin kernel with events', function()
    local a, b = kb.event(), kb.event()
    a:record()
    kb.spin(200000) -- 0.2 ms
    b:record()
    b:synchronize()
    local ms = kb.elapsed_ms(a, b)
    assert.is_true(ms >= 0.19 and ms < 5, ms)
  end)

  it('captures and replays a graph that keeps its tensors alive', function()
    local x = kb.randn({ 1024 }, 'f32', 7)
    local y
    local g = kb.graph(function() y = x:clone() end)
    assert.has_error(function() x:free() end, 'free: tensor is used by a CUDA graph; free the graph first')
    x:fill_(3)
    g:replay(3)
    kb.synchronize()
    assert.equal(3, y:totable()[1])
    g:free()
    x:free()
  end)

  it('refuses to close a tensor that a live graph uses, as free() does', function()
    local x = kb.randn({ 1024 }, 'f32', 7)
    local g, y
    local ok, err = pcall(function()
      local t <close> = x
      g = kb.graph(function() y = t:clone() end)
    end)
    assert.is_false(ok)
    assert.is_truthy(tostring(err):find('close: tensor is used by a CUDA graph; free the graph first', 1, true), err)
    x:fill_(2) -- still alive: the graph replays into it
    g:replay()
    kb.synchronize()
    assert.equal(2, y:totable()[1])
    g:free()
    do
      local t <close> = x
    end
    assert.equal('kluabench.Tensor(freed)', tostring(x))
  end)

  it('flushes twice the device L2 by default', function()
    assert.equal(2 * kb.device_info().l2_bytes, kb.flush_l2())
  end)
end)
