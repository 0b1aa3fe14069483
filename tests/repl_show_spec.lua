-- kluabench.repl.show, what the REPL prints (tests/repl_spec.lua drives it
-- through a terminal): tables nested, sorted and bounded, timing results as
-- torch.utils.benchmark's Measurement with their warnings.
local show = require 'kluabench.repl.show'
local stats = require 'kluabench.stats'

local function measurement(samples, extra)
  local r = { samples = samples, summary = stats.summary(samples) }
  for k, v in pairs(extra or {}) do r[k] = v end
  return r
end

describe('kluabench.repl.show', function()
  it('writes lists as [a, b], tables with sorted keys, nested, cycles marked', function()
    assert.equal('[1, 2048, 32, 64]', show.value({ 1, 2048, 32, 64 }))
    assert.equal('{[1] = "one", a = {[2] = "two", x = true}, b = 1}',
      show.value({ b = 1, a = { x = true, [2] = 'two' }, [1] = 'one' }))
    assert.equal('{["end"] = 2, ["not an id"] = 1}', show.value({ ['end'] = 2, ['not an id'] = 1 }))
    local c = { n = 1 }
    c.me = c
    assert.matches('^{me = <cycle: table: 0x%x+>, n = 1}$', show.value(c))
    assert.equal('{}', show.value({}))
    assert.equal('"a\\nb\\"c"', show.value('a\nb"c'))
    assert.equal('nan  inf  -inf  0.1', table.concat({ show.value(0 / 0), show.value(math.huge),
      show.value(-math.huge), show.value(0.1) }, '  '))
  end)

  it('bounds depth, entries and strings', function()
    assert.equal('{a = {b = {c = {d = {...}}}}}', show.value({ a = { b = { c = { d = { e = 1 } } } } }))
    local big = {}
    for i = 1, 50 do big[i] = i end
    local text = show.value(big)
    assert.matches('\n  40,\n  %.%.%. %(10 more%)\n%]$', text)
    assert.not_matches('41', text, 1, true)
    local s = show.value(string.rep('x', 300))
    assert.matches('"' .. string.rep('x', 200) .. '"%.%.%. %(100 more bytes%)$', s)
    -- the total budget: a table of 20 tables of 40 shows about LIMITS.total entries, not 800
    local wide = {}
    for i = 1, 20 do
      wide[i] = {}
      for j = 1, 40 do wide[i][j] = j end
    end
    local n = select(2, show.value(wide):gsub('%d+,', ''))
    assert(n <= show.LIMITS.total, n)
  end)

  it('shows a timing result as a Measurement: median, IQR, samples, protocol, timer and warnings', function()
    local r = measurement({ 0.010, 0.011, 0.012, 0.013, 0.020 }, { mode = 'cold', timer = 'cuda_events',
      backend = 'cuda', warnings = { 'clocks not locked' }, stop = { reason = 'timeout after 2000 ms' } })
    assert.is_true(show.is_measurement(r))
    assert.equal(table.concat({
      '<kluabench timing result: cold, timer cuda_events, backend cuda>',
      '  Median: 12 us',
      '  IQR:    2 us (11 to 13 us: the 25th to 75th percentile)',
      '  5 samples; stop: timeout after 2000 ms',
      '  WARNING: clocks not locked',
      '  WARNING: Interquartile range is 16.7% of the median: the samples are noisy '
        .. '(another process, clocks, or too short a kernel?)',
    }, '\n'), show.result(r))
    -- quiet samples: no IQR warning; do_bench's result names its protocol and its calls per sample
    local q = measurement({ 1, 1, 1 }, { used = { n_repeat = 3, batch = 4 } })
    local text = show.result(q)
    assert.matches('^<kluabench timing result: do_bench>\n  Median: 1 ms\n', text)
    assert.matches('\n  3 samples, 4 calls per sample$', text)
    assert.not_matches('WARNING', text, 1, true)
    -- a name that differs from the protocol is its own line
    assert.matches('\n  fused forward\n', show.result(measurement({ 2e-6 }, { mode = 'hot', name = 'fused forward' })))
    assert.matches('Median: 2 ns', show.result(measurement({ 2e-6 }, { mode = 'hot' })))
    assert.matches('Median: 1.5 s', show.result(measurement({ 1500 }, { mode = 'hot' })))
  end)

  it("labels what do_bench returns beside its result by its statistic, in one view", function()
    local function printed(...)
      local out, write = {}, io.stdout.write
      local stdout = setmetatable({ write = function(_, ...) for _, x in ipairs { ... } do out[#out + 1] = x end end,
        flush = function() end }, { __index = io.stdout })
      local saved = io.stdout
      io.stdout = stdout
      local ok, err = pcall(show.print, ...)
      io.stdout = saved
      assert(ok, err)
      return table.concat(out)
    end
    local r = measurement({ 0.010, 0.011, 0.012, 0.013, 0.020 }, { used = { n_repeat = 5, return_mode = 'mean' } })
    local text = printed(0.0132, r)
    assert.matches('^<kluabench timing result: do_bench>\n  Mean:   13.2 us %(do_bench\'s return value, 0.0132 ms: '
      .. 'return_mode "mean"%)\n  Median: 12 us\n', text)
    -- the quantiles it was asked for, each named
    r.used.quantiles, r.used.return_mode = { 0.5, 0.2 }, 'mean'
    assert.matches('\n  Quantiles: p50 12 us, p20 10.8 us %(do_bench\'s return value, in ms%)\n', printed({ 0.012, 0.0108 }, r))
    -- return_mode median: one Median line, the returned one
    r.used.quantiles, r.used.return_mode = nil, 'median'
    text = printed(0.012, r)
    assert.equal(1, select(2, text:gsub('Median:', '')))
    -- two plain values print on one line, as lua.c prints them
    assert.equal('1\t2\n', printed(1, 2))
  end)

  it('prints strings as they are and numbers as Lua writes them; anything else through value', function()
    assert.equal('text', show.result('text'))
    assert.equal('1.5', show.result(1.5))
    assert.equal('nil', show.result(nil))
    assert.is_false(show.is_measurement({ samples = {}, summary = {} }))
    assert.equal('[1, 2]', show.result({ 1, 2 }))
  end)
end)
