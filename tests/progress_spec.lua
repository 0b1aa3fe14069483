-- The sweep progress display: plain lines off a terminal, one line redrawn
-- in place on a terminal, silence when quiet, nothing on stdout, and the
-- arithmetic of elapsed and remaining time (with a fake clock).
local progress = require 'kluabench.progress'

-- A stream that keeps what is written, and a clock that moves when told.
local function fake_stream()
  local s = { parts = {} }
  function s:write(...)
    for i = 1, select('#', ...) do self.parts[#self.parts + 1] = tostring((select(i, ...))) end
    return self
  end
  function s:flush() return self end
  function s:text() return table.concat(self.parts) end
  return s
end

local function fake_clock(t)
  local c = { t = t or 100 }
  c.fn = function() return c.t end
  return c
end

local function lines(text)
  local out = {}
  for l in text:gmatch('([^\n]*)\n') do out[#out + 1] = l end
  return out
end

local function sweep(p, clock, points)
  for _, pt in ipairs(points) do
    p:start(pt[1])
    clock.t = clock.t + pt[2]
    p:finish(pt[1], pt[3])
  end
  p:close()
end

describe('progress', function()
  it('writes one plain line per point when not on a terminal', function()
    local s, c = fake_stream(), fake_clock()
    local p = progress.new { total = 3, stream = s, tty = false, quiet = false, clock = c.fn }
    sweep(p, c, { { 'seq=1024', 2, '0.10 ms' }, { 'seq=2048', 4, '0.20 ms' }, { 'seq=4096', 6 } })
    local text = s:text()
    assert.is_nil(text:find('\r', 1, true))
    assert.is_nil(text:find('\27', 1, true))
    local l = lines(text)
    assert.equal(4, #l)
    assert.equal('[1/3] seq=1024: 0.10 ms (2.0s; elapsed 2.0s, left ~4.0s)', l[1])
    assert.equal('[2/3] seq=2048: 0.20 ms (4.0s; elapsed 6.0s, left ~3.0s)', l[2])
    assert.equal('[3/3] seq=4096 (6.0s; elapsed 12.0s, left ~0.0s)', l[3])
    assert.equal('done: 3/3 points in 12.0s', l[4])
  end)

  it('redraws one status line in place on a terminal', function()
    local s, c = fake_stream(), fake_clock()
    local p = progress.new { total = 2, stream = s, tty = true, quiet = false, clock = c.fn, width = 200 }
    p:start('hidden=512 fused')
    local first = s:text()
    assert.equal('\r\27[2K[1/2] hidden=512 fused  (elapsed 0.0s)', first)
    c.t = c.t + 3
    p:finish(nil, '0.137 ms')
    p:start('hidden=2048 fused')
    c.t = c.t + 1
    p:finish('hidden=2048 fused')
    p:close()
    local text = s:text()
    -- every redraw starts with carriage return + clear line; only close ends the line
    local n_redraw = select(2, text:gsub('\r\27%[2K', ''))
    assert.equal(5, n_redraw)
    assert.equal(1, select(2, text:gsub('\n', '')))
    assert.truthy(text:find('[1/2] hidden=512 fused: 0.137 ms (3.0s; elapsed 3.0s, left ~3.0s)', 1, true))
    assert.truthy(text:find('[2/2] hidden=2048 fused  (elapsed 3.0s, left ~3.0s)', 1, true))
    assert.truthy(text:match('done: 2/2 points in 4%.0s\n$'))
  end)

  it('logs messages on their own line, redrawing the status line after them', function()
    local s, c = fake_stream(), fake_clock()
    local p = progress.new { total = 2, stream = s, tty = true, quiet = false, clock = c.fn, width = 200 }
    p:start('a')
    p:log('warning: clocks not locked\n')
    assert.equal('\r\27[2K[1/2] a  (elapsed 0.0s)\r\27[2Kwarning: clocks not locked\n\r\27[2K[1/2] a  (elapsed 0.0s)',
      s:text())
    local plain = fake_stream()
    local q = progress.new { total = 1, stream = plain, tty = false, quiet = false, clock = c.fn }
    q:log('note')
    assert.equal('note\n', plain:text())
    local quiet = fake_stream()
    progress.new({ total = 1, stream = quiet, quiet = true }):log('x')
    assert.equal('', quiet:text())
  end)

  it('cuts the status line to the terminal width', function()
    local s, c = fake_stream(), fake_clock()
    local p = progress.new { total = 1, stream = s, tty = true, quiet = false, clock = c.fn, width = 30 }
    p:start(string.rep('x', 100))
    local line = s:text():gsub('^\r\27%[2K', '')
    assert.equal(29, utf8.len(line))
    assert.truthy(line:match('…$'))
  end)

  it('writes nothing when quiet, by option or by KLUABENCH_QUIET', function()
    local s, c = fake_stream(), fake_clock()
    local p = progress.new { total = 2, stream = s, tty = true, quiet = true, clock = c.fn }
    sweep(p, c, { { 'a', 1 }, { 'b', 1 } })
    assert.equal('', s:text())
    assert.equal(2, p.done)
  end)

  it('reads quiet from the environment', function()
    local saved = os.getenv
    local env = {}
    os.getenv = function(k) if env[k] ~= nil then return env[k] end return saved(k) end
    local ok, err = pcall(function()
      env.KLUABENCH_QUIET = '1'
      assert.is_true(progress.quiet_from_env())
      assert.is_true(progress.new({ total = 1, stream = fake_stream(), tty = true }).quiet)
      env.KLUABENCH_QUIET = '0'
      assert.is_false(progress.quiet_from_env())
      env.KLUABENCH_QUIET = ''
      assert.is_false(progress.quiet_from_env())
    end)
    os.getenv = saved
    assert(ok, err)
  end)

  it('estimates the time left from the mean time of finished points', function()
    local c = fake_clock(0)
    local p = progress.new { total = 5, stream = fake_stream(), tty = false, quiet = false, clock = c.fn }
    assert.is_nil(p:remaining())
    p:start('a'); c.t = 2; p:finish()
    p:start('b'); c.t = 6; p:finish()
    assert.equal(6, p:elapsed())
    assert.equal(9, p:remaining()) -- mean 3 s x 3 points left
    p:start('c'); c.t = 7
    assert.equal(8, p:remaining()) -- the current point has run 1 s of its 3
    c.t = 20
    assert.equal(6, p:remaining()) -- never less than the points not yet started
  end)

  it('estimates the time left from the wall time per point, between points included', function()
    local c = fake_clock(0)
    local p = progress.new { total = 4, stream = fake_stream(), tty = false, quiet = false, clock = c.fn }
    -- each point measures for 1 s, but 3 s pass before each (setup, checks, writing)
    c.t = 3; p:start('a'); c.t = 4; p:finish()
    c.t = 7; p:start('b'); c.t = 8; p:finish()
    assert.equal(8, p:remaining()) -- 4 s of wall time per point x 2 points left, not 1 s x 2
    c.t = 9
    assert.equal(7, p:remaining()) -- 1 s of the next point's 4 already spent
    c.t = 30
    assert.equal(4, p:remaining()) -- never less than the points not yet started
  end)

  it('formats durations for people', function()
    assert.equal('0.4s', progress.format_duration(0.4))
    assert.equal('59.9s', progress.format_duration(59.9))
    assert.equal('2m05s', progress.format_duration(125.5))
    assert.equal('1h02m', progress.format_duration(3725))
    assert.equal('?', progress.format_duration(nil))
  end)

  it('never writes to stdout', function()
    local real = io.stdout
    local out = fake_stream()
    local ok, err = pcall(function()
      io.stdout = out ---@diagnostic disable-line
      local s, c = fake_stream(), fake_clock()
      sweep(progress.new { total = 1, stream = s, tty = false, quiet = false, clock = c.fn }, c, { { 'a', 1 } })
      sweep(progress.new { total = 1, stream = s, tty = true, quiet = false, clock = c.fn }, c, { { 'a', 1 } })
    end)
    io.stdout = real
    assert(ok, err)
    assert.equal('', out:text())
  end)

  it('defaults to stderr and detects a terminal through an injectable check', function()
    local p = progress.new { total = 1, quiet = true }
    assert.equal(io.stderr, p.stream)
    assert.is_boolean(progress.is_tty(io.stderr))
    -- a stream that is no file is never a terminal
    assert.is_false(progress.is_tty(fake_stream()))
  end)

  it('rejects a missing total and use after close', function()
    assert.has_error(function() progress.new {} end,
      "bad argument #1 to 'new' (opts.total must be an integer, got nil)")
    local p = progress.new { total = 1, quiet = true }
    p:close()
    p:close() -- twice is fine
    assert.has_error(function() p:start('x') end, 'progress: start after close')
  end)

  it('is quiet about a sweep of zero points off a terminal', function()
    local s = fake_stream()
    local p = progress.new { total = 0, stream = s, tty = false, quiet = false }
    p:close()
    assert.equal('', s:text())
  end)
end)

-- The real thing: a subprocess whose stderr is a file (not a terminal)
-- writes plain lines there and nothing to stdout.
describe('progress in a subprocess', function()
  local ok, kb = pcall(require, 'kluabench')
  local exe = ok and type(kb) == 'table' and kb.executable and kb.executable()
  it('writes plain lines to stderr only', function()
    if not exe then return pending('needs the kluabench binary') end
    local dir = os.tmpname()
    os.remove(dir)
    local out, err = dir .. '.out', dir .. '.err'
    local code = [[local p = require('kluabench.progress').new{total = 2}
      p:start('a') p:finish('a', 'x') p:start('b') p:finish('b') p:close()]]
    local cmd = string.format('KLUABENCH_QUIET= %q -e %q >%s 2>%s', exe, code, out, err)
    assert.is_true(os.execute(cmd))
    local fo, fe = io.open(out), io.open(err)
    local o, e = fo:read('a'), fe:read('a')
    fo:close(); fe:close(); os.remove(out); os.remove(err)
    assert.equal('', o)
    assert.truthy(e:match('^%[1/2%] a: x %('))
    assert.truthy(e:find('\n[2/2] b (', 1, true))
    assert.is_nil(e:find('\r', 1, true))
    local cmd2 = string.format('%q --quiet -e %q >%s 2>%s', exe, code, out, err)
    assert.is_true(os.execute(cmd2))
    fe = io.open(err)
    e = fe:read('a')
    fe:close(); os.remove(out); os.remove(err)
    assert.equal('', e)
  end)
end)
