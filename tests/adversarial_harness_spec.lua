-- Issue 24, reliability's third round, the parts in the harness, compare and
-- verify (docs/RELIABILITY.md, "Classes and their defences"):
-- compare counts a session once and never a failed run; every output format
-- keeps the points finished before a failure; repeated option values are
-- measured once; a hook that returns the wrong thing is named with its script
-- line, provider and point; verify checks a run against its raw samples;
-- nothing prints "nan%" or a 300-digit time; a second writer of one
-- --format kernelindex file is noticed; a samples file that is a FIFO, a
-- device or a directory is refused before measuring. Every test here failed before the
-- fix it checks (the class's row says what it was).
local kb = require 'kluabench'
local whole_file = require 'kluabench.record.whole_file'
local sub = require 'helpers.subprocess'
local json = require 'kluabench.util.json'
local results = require 'kluabench.table'
local compare = require 'kluabench.compare'
local record = require 'kluabench.record'
local writer = require 'kluabench.record.writer'
local evidence = require 'kluabench.record.evidence'
local names = require 'kluabench.record.names'
local prng = require 'kluabench.stats.prng'

local q = sub.q

---------------------------------------------------------------------------
-- Records made here: real sealed bundles with evidence, from known samples
---------------------------------------------------------------------------

-- n samples (ms) around center with a relative spread `noise`, seeded.
local function noisy(center, noise, n, seed)
  local g = prng.new(seed)
  local out = {}
  for i = 1, n do out[i] = center * (1 + noise * (g:uniform() - 0.5)) end
  return out
end

local PROTOCOL = kb.do_bench.do_bench_protocol { warmup_ms = 1, rep_ms = 1 }
local clock = 0

-- One run as the harness makes it. o: samples (ms), session {i, n}, status, reasons, n (the
-- workload axis), provider, time (a number of seconds; default a fresh one, so every run is its
-- own), evidence_ns (what the evidence entry holds instead of the samples, in ns).
local function run(o)
  clock = clock + 1
  local b = record.from_result { kernel = 'toy', mode = 'forward', provider = o.provider or 'p',
    parameters = { n = o.n or 8 }, dtype = 'f32',
    result = { samples = o.samples or {}, used = {}, protocol = PROTOCOL }, protocol = PROTOCOL,
    session = o.session and { index = o.session[1], count = o.session[2] } or nil,
    status = o.status, reasons = o.reasons, time = names.utc(o.time or (1.7e9 + clock)) }
  if o.evidence_ns then evidence.of(b).samples = o.evidence_ns end
  return b
end

-- Bundles appended to a records file (and its samples file beside it); returns path.
local function write(path, bundles)
  for _, b in ipairs(bundles) do assert(writer.append(path, b)) end
  return path
end

local function read(path)
  evidence.forget() -- files rewritten in this process are read afresh
  return assert(compare.read(path))
end

-- `kluabench ARGS...` on the cpu backend with an empty noise cache: {out, err, code}.
local function kluabench(args, env)
  local e = { KLUABENCH_CACHE = sub.tmpdir() }
  for k, v in pairs(env or {}) do e[k] = v end
  local a = { '--backend', 'cpu' }
  for _, x in ipairs(args) do a[#a + 1] = x end
  return sub.run(a, { env = e })
end

local function lines_of(path)
  local out = {}
  for line in (sub.slurp(path) or ''):gmatch('[^\n]+') do out[#out + 1] = line end
  return out
end

---------------------------------------------------------------------------
-- 24.4: compare counts a session once
---------------------------------------------------------------------------

describe('compare counts each run once (issue 24, class 4)', function()
  local dir
  before_each(function() dir = sub.tmpdir() end)
  after_each(function() os.execute('rm -rf ' .. q(dir)) end)

  it('a file concatenated with itself 50 times gives the verdict of the file once, naming the duplicates', function()
    -- one session a side, 18 % apart but noisy (+-30 % within the session): UNSURE; before,
    -- the 50 copies were 50 sessions a side and read SLOWER REGRESSION
    write(dir .. '/base.jsonl', { run { samples = noisy(1.0, 0.6, 20, 1) } })
    write(dir .. '/new.jsonl', { run { samples = noisy(1.18, 0.6, 20, 2) } })
    for _, side in ipairs { 'base', 'new' } do
      local text = sub.slurp(dir .. '/' .. side .. '.jsonl')
      sub.spit(dir .. '/' .. side .. '50.jsonl', string.rep(text, 50))
    end
    local once = compare.compare(read(dir .. '/base.jsonl'), read(dir .. '/new.jsonl'))
    local fifty = compare.compare(read(dir .. '/base50.jsonl'), read(dir .. '/new50.jsonl'))
    local a, b = once.points[1], fifty.points[1]
    assert.equal('UNSURE', a.verdict)
    assert.equal(a.verdict, b.verdict)
    assert.equal(a.ratio, b.ratio)
    assert.equal(a.lo, b.lo)
    assert.equal(a.hi, b.hi)
    assert.equal(1, b.base_sessions)
    assert.equal(1, b.new_sessions)
    assert.equal(49, b.base_duplicates)
    assert.equal(98, fifty.duplicates)
    assert.matches('BASE: 49 duplicate bundles of the same run counted once', b.hint, 1, true)
    local r1 = kluabench { 'compare', dir .. '/base.jsonl', dir .. '/new.jsonl' }
    local r50 = kluabench { 'compare', dir .. '/base50.jsonl', dir .. '/new50.jsonl' }
    assert.equal(0, r1.code, r1.out .. r1.err)
    assert.equal(0, r50.code, r50.out .. r50.err)
    assert.is_nil(r50.out:find('SLOWER', 1, true), r50.out)
    assert.matches('98 duplicate bundles (the same run again) counted once', r50.out, 1, true)
    assert.matches(' 1/1 ', r50.out, 1, true)
  end)

  it('the sessions of one sweep (--runs 3) are three sessions; failed ones are left out and said so', function()
    local base = {}
    for i = 1, 3 do base[i] = run { samples = noisy(1, 0.01, 30, i), session = { i, 3 } } end
    local new = { run { samples = noisy(1.2, 0.01, 30, 11), session = { 1, 3 } },
      run { samples = noisy(1.2, 0.01, 30, 12), session = { 2, 3 } },
      run { samples = noisy(1.2, 0.01, 30, 13), session = { 3, 3 }, status = 'timeout',
        reasons = { 'the session took 9 s, past --timeout 1 s' } } }
    local p = compare.compare(base, new, { between = 0.01 }).points[1]
    assert.equal(3, p.base_sessions)
    assert.equal(2, p.new_sessions)
    assert.equal(1, p.new_failed)
    assert.equal('SLOWER', p.verdict)
    assert.matches('NEW: 1 run timeout (the session took 9 s, past --timeout 1 s) left out', p.hint, 1, true)
  end)

  it('one run with different data, a session past its count: UNSURE, not compared, the note says which', function()
    local function verdict_of(base, new)
      local r = compare.compare(base, new, { between = 0.001 })
      return r.points[1], r
    end
    local good = { run { samples = noisy(1, 0.01, 30, 1) } }
    local cases = {
      { 'the same run twice with different data',
        { run { samples = noisy(1.2, 0.01, 30, 2), time = 1.8e9 }, run { samples = noisy(1.3, 0.01, 30, 3), time = 1.8e9 } },
        'appears twice with different data' },
      { 'session 99 of 1', { run { samples = noisy(1.2, 0.01, 30, 4), session = { 99, 1 } } },
        'session 99 of 1: the index is past the count' },
    }
    for _, c in ipairs(cases) do
      local p, r = verdict_of(good, c[2])
      assert.equal('UNSURE', p.verdict, c[1])
      assert.is_true(p.refused, c[1])
      assert.is_nil(p.lo, c[1])
      assert.is_false(p.regression, c[1])
      assert.matches('^not compared: NEW: ', p.hint, 1)
      assert.matches(c[3], p.hint, 1, true)
      assert.equal(1, r.refused)
      assert.matches('1 point not compared', compare.format(r), 1, true)
    end
  end)

  it('several sweeps in one file (a repeated index, counts that differ): each run a session, and a note', function()
    local good = { run { samples = noisy(1, 0.01, 30, 1) } }
    local cases = {
      { 'session 1 of 1 twice', { run { samples = noisy(1.2, 0.01, 30, 5) }, run { samples = noisy(1.2, 0.01, 30, 6) } },
        'NEW: session 1 of 1 appears in several runs (several sweeps in one file): each run is counted as a '
          .. 'session of its own' },
      { 'counts that differ', { run { samples = noisy(1.2, 0.01, 30, 7), session = { 1, 3 } },
        run { samples = noisy(1.2, 0.01, 30, 8), session = { 2, 2 } } },
        'NEW: its runs count their sessions differently (of 2, of 3)' },
    }
    for _, c in ipairs(cases) do
      local r = compare.compare(good, c[2], { between = 0.001 })
      local p = r.points[1]
      assert.is_nil(p.refused, c[1])
      assert.equal(0, r.refused, c[1])
      assert.equal(2, p.new_sessions, c[1])
      assert.equal('SLOWER', p.verdict, c[1])
      assert.matches(c[3], p.hint, 1, true)
    end
  end)

  it('the session fields of the run and of its evidence must agree', function()
    local b = run { samples = noisy(1.2, 0.01, 30, 9), session = { 1, 2 } }
    evidence.of(b).session = { index = 2, count = 2 }
    local p = compare.compare({ run { samples = noisy(1, 0.01, 30, 1) } }, { b }, { between = 0.001 }).points[1]
    assert.equal('UNSURE', p.verdict)
    assert.matches('the run says session 1 of 2, its evidence session 2 of 2', p.hint, 1, true)
  end)

  it('across_sweeps (a history database: every batch of a commit) pools sessions of several sweeps', function()
    local base = { run { samples = noisy(1, 0.01, 30, 1) }, run { samples = noisy(1, 0.01, 30, 2) } }
    local new = { run { samples = noisy(1.2, 0.01, 30, 3) }, run { samples = noisy(1.2, 0.01, 30, 4) } }
    local strict = compare.compare(base, new, { between = 0.01 }).points[1]
    assert.is_nil(strict.refused)
    assert.matches('appears in several runs', strict.hint, 1, true)
    local pooled = compare.compare(base, new, { across_sweeps = true, between = 0.01 }).points[1]
    assert.is_nil(pooled.refused)
    assert.equal(2, pooled.base_sessions)
    assert.equal('SLOWER', pooled.verdict)
    -- history.compare: two batches of one commit are two sessions, the same run added twice one
    local history = require 'kluabench.history'
    local h = assert(history.open(':memory:', { create = true }))
    local A, B = string.rep('a', 40), string.rep('b', 40)
    assert(history.add_bundles(h, { base[1] }, { commit = A, batch = 'one' }))
    assert(history.add_bundles(h, { base[2], base[1] }, { commit = A, batch = 'two' }))
    assert(history.add_bundles(h, new, { commit = B, batch = 'three' }))
    local p = history.compare(h, A, B, { between = 0.01 }).points[1]
    h:close()
    assert.equal(2, p.base_sessions)
    assert.equal('SLOWER', p.verdict)
  end)

  it('session_spread (run_noise --from) counts a run given twice once', function()
    local bs = {}
    for i, ms in ipairs { 2.00, 2.04, 1.96 } do bs[i] = run { samples = { ms, ms, ms, ms, ms } } end
    local once = compare.session_spread(bs)
    bs[4], bs[5] = bs[1], bs[1]
    local twice = compare.session_spread(bs)
    assert.equal(2, once[1].df)
    assert.equal(once[1].df, twice[1].df)
    assert.equal(once[1].sd, twice[1].sd)
  end)
end)

---------------------------------------------------------------------------
-- 24.13: integrity (compare: failed runs, digests, odd numbers; verify)
---------------------------------------------------------------------------

-- The longest run of digits in text.
local function longest_digits(text)
  local n = 0
  for d in text:gmatch('%d+') do n = math.max(n, #d) end
  return n
end

describe('compare trusts no failed run, no stale digest, no odd number (issue 24, class 13)', function()
  local dir
  before_each(function() dir = sub.tmpdir() end)
  after_each(function() os.execute('rm -rf ' .. q(dir)) end)

  it('a point whose NEW run failed is not compared as a time, and the output says so', function()
    write(dir .. '/base.jsonl', { run { samples = noisy(1, 0.01, 30, 1) } })
    write(dir .. '/new.jsonl', { run { status = 'runtime_error', reasons = { 'toy.lua:9: boom' } } })
    local p = compare.compare(read(dir .. '/base.jsonl'), read(dir .. '/new.jsonl')).points[1]
    assert.equal('UNSURE', p.verdict)
    assert.is_true(p.refused)
    assert.is_nil(p.ratio)
    assert.matches('not compared: NEW: no passed run', p.hint, 1, true)
    assert.matches('NEW: 1 run runtime_error (toy.lua:9: boom) left out (a failed run is never compared as a time)',
      p.hint, 1, true)
    local r = kluabench { 'compare', dir .. '/base.jsonl', dir .. '/new.jsonl' }
    assert.equal(0, r.code, r.err)
    assert.matches('1 point with failed runs (left out, never compared as times)', r.out, 1, true)
  end)

  it('a run whose status is not passed but has samples (suspected_reward_hack) is not pooled either', function()
    local base = { run { samples = noisy(1, 0.01, 30, 1), session = { 1, 2 } },
      run { samples = noisy(1, 0.01, 30, 2), session = { 2, 2 } } }
    local new = { run { samples = noisy(1, 0.01, 30, 3), session = { 1, 2 } },
      run { samples = noisy(0.01, 0.01, 30, 4), session = { 2, 2 }, status = 'suspected_reward_hack' } }
    local p = compare.compare(base, new, { between = 0.001 }).points[1]
    assert.equal(1, p.new_sessions)
    assert.equal(1, p.new_failed)
    assert.near(1, p.ratio, 0.02)
  end)

  it('a bundle whose workloadDigest is not that of its workload document is refused, naming the line', function()
    write(dir .. '/ok.jsonl', { run { samples = noisy(1, 0.01, 30, 1) }, run { samples = noisy(1, 0.01, 30, 2), n = 16 } })
    local ls = lines_of(dir .. '/ok.jsonl')
    local b = json.decode(ls[2])
    b.workload.spec.axes.n = 17 -- the document edited, its digest in the run left as it was
    sub.spit(dir .. '/edited.jsonl', ls[1] .. '\n' .. json.encode_line(b) .. '\n')
    os.execute('cp ' .. q(dir .. '/ok.samples.jsonl') .. ' ' .. q(dir .. '/edited.samples.jsonl'))
    local bundles, err = compare.read(dir .. '/edited.jsonl')
    assert.is_nil(bundles)
    assert.matches('edited.jsonl:2: point toy forward n16-fp32 (p): run.spec.workloadDigest sha256:', err, 1, true)
    assert.matches('is not the digest of its workload document', err, 1, true)
    local r = kluabench { 'compare', dir .. '/ok.jsonl', dir .. '/edited.jsonl' }
    assert.equal(2, r.code)
    assert.matches('is not the digest of its workload document', r.err, 1, true)
    -- a bundle without its workload document cannot be checked: refused too
    b.workload = nil
    local _, err2 = compare.parse(json.encode_line(b) .. '\n', 'nowork.jsonl')
    assert.matches('no workload document to check run.spec.workloadDigest against', err2, 1, true)
  end)

  it('five 1-ns samples a side: no "nan%", and the time shows as 0.001 us, not 0.00', function()
    local ns = { 1e-6, 1e-6, 1e-6, 1e-6, 1e-6 } -- ms
    write(dir .. '/a.jsonl', { run { samples = ns } })
    write(dir .. '/b.jsonl', { run { samples = ns } })
    for _, extra in ipairs { {}, { '--between', '0.01' }, { '--format', 'markdown' } } do
      local args = { 'compare', dir .. '/a.jsonl', dir .. '/b.jsonl' }
      for _, x in ipairs(extra) do args[#args + 1] = x end
      local r = kluabench(args)
      assert.equal(0, r.code, r.err)
      assert.is_nil(r.out:lower():find('nan', 1, true), r.out)
      assert.matches('0.001', r.out, 1, true)
    end
  end)

  it('samples of 1e300 ns (and 1e308) print in e-notation, never as 300 digits; no nan% either', function()
    -- runs whose samples (in ms here) are 1 ns, 1e300 ns, 1e308 ns and 1.7e308 ns, as they record them
    local function five(ms) return { ms, ms, ms, ms, ms } end
    write(dir .. '/small.jsonl', { run { samples = five(1e-6) } })
    write(dir .. '/big.jsonl', { run { samples = five(1e294) } })
    write(dir .. '/huge.jsonl', { run { samples = five(1e302) }, run { samples = five(1.7e302), session = { 2, 2 } } })
    for _, f in ipairs { 'small', 'big', 'huge' } do
      for _, b in ipairs(read(dir .. '/' .. f .. '.jsonl')) do
        local s = require('kluabench.result').session(b)
        -- a run that agrees with its samples (to the rounding of ns)
        assert.is_true(math.abs(s.samples_ms[1] * 1e6 - s.median_ns) <= 1 + 1e-9 * s.median_ns, f)
      end
    end
    for _, pair in ipairs { { 'small', 'big' }, { 'big', 'big' }, { 'small', 'huge' }, { 'huge', 'small' } } do
      for _, fmt in ipairs { 'table', 'markdown', 'json' } do
        local r = kluabench { 'compare', dir .. '/' .. pair[1] .. '.jsonl', dir .. '/' .. pair[2] .. '.jsonl',
          '--between', '0.01', '--format', fmt }
        assert.is_true(r.code == 0 or r.code == 1, r.err)
        assert.is_true(longest_digits(r.out) < 30, pair[1] .. '/' .. pair[2] .. ' ' .. fmt .. ':\n' .. r.out)
        assert.is_nil(r.out:lower():find('nan', 1, true), r.out)
      end
    end
    -- compare_sessions itself: a ratio floating point cannot hold gives no interval, never NaN
    local c = compare.compare_sessions({ { 1e-6, 1e-6, 1e-6, 1e-6, 1e-6 } }, { { 1e308, 1e308, 1e308, 1e308, 1e308 } },
      { between = 0.01 })
    assert.equal('UNSURE', c.verdict)
    assert.is_nil(c.lo)
    assert.matches('no interval', c.why, 1, true)
    assert.equal('', compare.percent(0 / 0))
    assert.equal('+1.00e+302%', compare.percent(1e300))
    assert.equal('+inf%', compare.percent(1e308))
  end)

  it('the results table shows 1e300 ns and a non-finite time without 300 digits or "nan"', function()
    local b = run { samples = noisy(1, 0.01, 5, 1) }
    b.run.spec.timing.latencyNs.median = 1e300
    local c = run { samples = noisy(1, 0.01, 5, 2) }
    c.run.spec.timing.latencyNs.median = '1' .. string.rep('0', 300) .. ' s' -- the schema's string form, past a double
    local text = results.results_table { b, c } .. results.results_markdown { b, c }
    assert.is_true(longest_digits(text) < 30, text)
    assert.is_nil(text:lower():find('nan', 1, true), text)
    assert.matches('1.000e+297', text, 1, true)
    assert.equal('1.000e+300', results.cell_number(1e300))
    assert.equal('0.001', results.cell_number(0.001))
    assert.equal('n/a', results.cell_number(0 / 0))
    assert.equal('1.50', results.cell_number(1.5))
  end)
end)

describe('verify checks a run against its raw samples (issue 24, class 13)', function()
  local dir
  before_each(function()
    dir = sub.tmpdir()
    write(dir .. '/r.jsonl', { run { samples = noisy(1, 0.2, 9, 1) } })
  end)
  after_each(function() os.execute('rm -rf ' .. q(dir)) end)

  -- The records file and its samples file with the run and its evidence entry edited by
  -- edit(run_spec, entry), as e.jsonl and e.samples.jsonl; verify's result. reseal: the run's
  -- rawSamples digest is made that of the edited entry (a consistent edit of both files).
  local function edited(edit, reseal)
    local b = json.decode(lines_of(dir .. '/r.jsonl')[1])
    local entry = json.decode(lines_of(dir .. '/r.samples.jsonl')[1])
    edit(b.run.spec, entry)
    local line = kb.jcs.encode(entry)
    if reseal then b.run.spec.evidence.rawSamples.digest = 'sha256:' .. kb.sha256(line) end
    b.run.spec.evidence.rawSamples.uri = 'e.samples.jsonl#L1'
    sub.spit(dir .. '/e.samples.jsonl', line .. '\n')
    sub.spit(dir .. '/e.jsonl', json.encode_line(b) .. '\n')
    return kluabench { 'verify', dir .. '/e.jsonl' }
  end

  it('passes the file as written', function()
    local r = kluabench { 'verify', dir .. '/r.jsonl' }
    assert.equal(0, r.code, r.err)
  end)

  it('passes an edit of nothing (the files copied through the edit)', function()
    local r = edited(function() end)
    assert.equal(0, r.code, r.err)
  end)

  it('a sample changed in the samples file: no entry has the digest the run names', function()
    local r = edited(function(_, e) e.samples[1] = e.samples[1] + 1 end)
    assert.equal(1, r.code)
    assert.matches('no entry of .* has the digest sha256:', r.err)
  end)

  it('samples set to five 1-ns values, the digest redone: the median, quantiles and extremes disagree', function()
    local r = edited(function(_, e) e.samples = { 1, 1, 1, 1, 1 } end, true)
    assert.equal(1, r.code)
    for _, f in ipairs { 'timing.latencyNs.median', 'measurements p20', 'measurements p80', 'timing.latencyNs.minimum',
      'timing.latencyNs.maximum', 'timing.latencyNs.mean' } do
      assert.matches(f .. ': the run records %d+ ns, its raw samples give 1 ns', r.err)
    end
    assert.matches('timing.samples: the run records 9 samples, its evidence holds 5', r.err, 1, true)
  end)

  it('median = 1, minimum or maximum edited in the run: named, with both values', function()
    local r = edited(function(s) s.timing.latencyNs.median = 1 end)
    assert.equal(1, r.code)
    assert.matches('timing.latencyNs.median: the run records 1 ns, its raw samples give %d+ ns', r.err)
    r = edited(function(s) s.timing.latencyNs.minimum = s.timing.latencyNs.minimum - 5 end)
    assert.equal(1, r.code)
    assert.matches('timing.latencyNs.minimum: the run records', r.err, 1, true)
    r = edited(function(s) s.timing.latencyNs.maximum = s.timing.latencyNs.maximum + 5 end)
    assert.matches('timing.latencyNs.maximum: the run records', r.err, 1, true)
    r = edited(function(s) s.timing.samples = 10 end)
    assert.matches('timing.samples: the run records 10 samples, its evidence holds 9', r.err, 1, true)
  end)

  it('a status outside the schema\'s enum fails schema validation', function()
    local r = edited(function(s) s.status = 'failed' end)
    assert.equal(1, r.code)
    assert.matches('run: $.spec.status: must be one of passed, ', r.err, 1, true)
    assert.matches('got "failed"', r.err, 1, true)
  end)
end)

---------------------------------------------------------------------------
-- The harness: a toy benchmark whose hooks fail or misbehave on request
---------------------------------------------------------------------------

-- HOOK = raise | check | sigint | shared | clobber: what happens at the point n = AT;
-- BADHOOK / BADVALUE / BADFIELD: which hook returns which wrong value (as field BADFIELD of a
-- table, when given). CLOBBER: the file a "second process" writes at that point.
local TOY = [[
local kb = require 'kluabench'
local HOOK, AT = os.getenv('HOOK') or '', tonumber(os.getenv('AT') or '0')
local BADV = { ['nil'] = nil, number = 5, string = 'hello', nan = 0 / 0, inf = math.huge, neg = -1, table = {} }
local function bad(hook)
  if os.getenv('BADHOOK') ~= hook then return false end
  local v = BADV[os.getenv('BADVALUE')]
  if os.getenv('BADFIELD') then v = { [os.getenv('BADFIELD')] = v } end
  return true, v
end
kb.suite.main {
  name = 'toy',
  axes = { { name = 'n', default = 16, max = 1 << 20 } },
  sweeps = { { name = 'small', axis = 'n', values = { 16, 32 } }, { name = 'large', axis = 'n', values = { 32, 64 } } },
  dtypes = { 'f32' }, modes = { 'forward', 'backward' }, mode = 'forward',
  providers = { 'good', 'other' }, provider = 'good',
  validate = function(p)
    local b, v = bad('validate') if b then return v end
  end,
  shared = function(p)
    if HOOK == 'shared' and p.n == AT then error('shared broke at ' .. p.n) end
    local b, v = bad('shared') if b then return v end
  end,
  setup = function(p, provider)
    local b, v = bad('setup') if b then return v end
    return { x = kb.randn({ p.n }, 'f32', 7), y = kb.zeros({ p.n }, 'f32') }
  end,
  run = function(p, provider, mode, t)
    if HOOK == 'raise' and p.n == AT then error('run broke at ' .. p.n) end
    if HOOK == 'sigint' and p.n == AT then io.popen('kill -INT $PPID'):close() end
    if HOOK == 'clobber' and p.n == AT then
      local f = assert(io.open(os.getenv('CLOBBER'), 'w')) f:write('written by another process\n') f:close()
    end
    local b, v = bad('run') if b then return v end
    return function(s) s = s or t; s.y:copy_(s.x) end
  end,
  check = function(p, provider, t)
    if HOOK == 'check' and p.n == AT then kb.suite.wrong_result('wrong at ' .. p.n) end
    local b, v = bad('check') if b then return v end
    t.y:copy_(t.x)
    return { passed = true, maxAbsDiff = kb.max_abs_diff(t.y, t.x) }
  end,
  cost = function(p)
    local b, v = bad('cost') if b then return v, 0 end
    return 8 * p.n, 0
  end,
  record = function(p, provider, mode)
    local b, v = bad('record') if b then return v end
    return { timed = 'y:copy_(x)' }
  end,
  implementation = function(p, provider)
    local b, v = bad('implementation') if b then return v end
  end,
}
]]

-- The line of the toy script where `hook = function` is.
local function line_of(hook)
  local n = 0
  for line in TOY:gmatch('([^\n]*)\n') do
    n = n + 1
    if line:match('^  ' .. hook .. ' = function') then return n end
  end
  error('no hook ' .. hook)
end

local FAST = { '--rep-ms', '2', '--warmup-ms', '1' }

local function toy(dir, args, env)
  local a = { dir .. '/toy.lua' }
  for _, x in ipairs(FAST) do a[#a + 1] = x end
  for _, x in ipairs(args) do a[#a + 1] = x end
  return kluabench(a, env)
end

---------------------------------------------------------------------------
-- 24.5: every output format keeps the finished points
---------------------------------------------------------------------------

describe('every output format keeps the points finished before a failure (issue 24, class 5)', function()
  local dir
  setup(function()
    dir = sub.tmpdir()
    sub.spit(dir .. '/toy.lua', TOY)
  end)
  teardown(function() os.execute('rm -rf ' .. q(dir)) end)

  -- What a format's output holds: the points (n values) with a time, and those with a status.
  local function points_in(format, path)
    local timed, failed = {}, {}
    if format == 'liger-csv' then
      local ls = lines_of(path)
      for i = 2, #ls do timed[#timed + 1] = tonumber(ls[i]:match('^toy,good,forward,speed,ms,n,n,(%d+),')) end
      return timed, failed
    end
    local bundles
    if format == 'kernelindex' then
      local v = assert(json.decode(sub.slurp(path)))
      bundles = v.run and { v } or v
    else
      bundles = {}
      for i, line in ipairs(lines_of(path)) do bundles[i] = assert(json.decode(line)) end
    end
    for _, b in ipairs(bundles) do
      local n = b.workload.spec.axes.n
      if b.run.spec.status == 'passed' then timed[#timed + 1] = n else failed[#failed + 1] = b.run.spec.status .. ' ' .. n end
    end
    return timed, failed
  end

  local FORMATS = { 'kernelindex', 'liger-csv', 'jsonl', 'table' }
  local CASES = {
    -- what fails at point 3 of 4, the exit status, the points timed, the failed bundles
    { hook = 'raise', code = 1, timed = { 16, 32, 64 }, failed = { 'runtime_error 48' } },
    { hook = 'check', code = 1, timed = { 16, 32, 64 }, failed = { 'incorrect_numerical 48' } },
    { hook = 'shared', code = 1, timed = { 16, 32, 64 }, failed = { 'runtime_error 48' } },
    { hook = 'sigint', code = 130, timed = { 16, 32, 48 }, failed = {} },
  }
  for _, c in ipairs(CASES) do
    it(string.format('%s at point 3 of 4: kernelindex, liger-csv, jsonl and table keep the others', c.hook), function()
      for _, format in ipairs(FORMATS) do
        local out = dir .. '/' .. c.hook .. '.' .. format
        local r = toy(dir, { '--n', '16,32,48,64', '--format', format, '--out', out }, { HOOK = c.hook, AT = '48' })
        assert.equal(c.code, r.code, format .. ': ' .. r.err)
        assert.is_nil(r.err:find('traceback', 1, true), format .. ': ' .. r.err)
        local timed, failed = points_in(format, out)
        assert.same(c.timed, timed, format)
        -- Liger's CSV has no status column: a failed point is left out, and said so
        if format == 'liger-csv' then
          if #c.failed > 0 then
            assert.matches('1 bundle whose status is not passed is not in the Liger CSV', r.err, 1, true)
          end
        else
          assert.same(c.failed, failed, format)
        end
        if format == 'kernelindex' or format == 'jsonl' or format == 'table' then
          local v = kluabench { 'verify', '--quiet', out }
          assert.equal(0, v.code, format .. ': ' .. v.err)
        end
        -- the table of the finished points is printed in every format (the words every row's
        -- workload id shares in its heading)
        assert.matches('workload n*-fp32', r.out .. r.err, 1, true)
        assert.matches('forward  good      n16 ', r.out .. r.err, 1, true)
      end
    end)
  end
end)

---------------------------------------------------------------------------
-- 24.9: repeated option values
---------------------------------------------------------------------------

describe('a value repeated in a list option is measured once, with a note (issue 24, class 9)', function()
  local dir
  setup(function()
    dir = sub.tmpdir()
    sub.spit(dir .. '/toy.lua', TOY)
  end)
  teardown(function() os.execute('rm -rf ' .. q(dir)) end)

  local function ids(out)
    local t = {}
    for id in out:gmatch('([^\t\n]+)\t%d+\t') do t[#t + 1] = id end
    return t
  end

  it('--n 16,16,32,16 lists two points, and the note names the option', function()
    local r = toy(dir, { '--n', '16,16,32,16', '--list-points' })
    assert.equal(0, r.code, r.err)
    assert.same({ 'n16-fp32', 'n32-fp32' }, ids(r.out))
    assert.matches("toy: option '--n' lists 16 more than once: each is measured once", r.err, 1, true)
  end)

  it('under --shard a repeated value is no traceback: every point in one shard', function()
    local all = {}
    for i = 1, 2 do
      local r = toy(dir, { '--n', '16,16,32', '--shard', i .. '/2', '--list-points' })
      assert.equal(0, r.code, r.err)
      assert.is_nil(r.err:find('traceback', 1, true), r.err)
      for _, id in ipairs(ids(r.out)) do all[#all + 1] = id end
    end
    table.sort(all)
    assert.same({ 'n16-fp32', 'n32-fp32' }, all)
  end)

  it('--provider good,good and --mode forward,forward run each once: one bundle', function()
    local out = dir .. '/once.jsonl'
    local r = toy(dir, { '--n', '16,16', '--provider', 'good,good', '--mode', 'forward,forward', '--format', 'jsonl',
      '--out', out })
    assert.equal(0, r.code, r.err)
    assert.equal(1, #lines_of(out))
    assert.matches("option '--provider' lists good more than once", r.err, 1, true)
    assert.matches("option '--mode' lists forward more than once", r.err, 1, true)
  end)

  it('two sweeps that share a workload: it is measured once, one session of one, and shards take it once', function()
    local r = toy(dir, { '--sweep', 'all', '--list-points' })
    assert.equal(0, r.code, r.err)
    assert.same({ 'n16-fp32', 'n32-fp32', 'n64-fp32' }, ids(r.out))
    local out = dir .. '/all.jsonl'
    r = toy(dir, { '--sweep', 'all', '--provider', 'good', '--mode', 'forward', '--format', 'jsonl', '--out', out })
    assert.equal(0, r.code, r.err)
    local seen = {}
    for _, line in ipairs(lines_of(out)) do
      local id = line:match('"externalId":"[^"]-/(n%d+%-fp32)/')
      assert.is_nil(seen[id], id .. ' measured twice')
      seen[id] = true
    end
    assert.same({ ['n16-fp32'] = true, ['n32-fp32'] = true, ['n64-fp32'] = true }, seen)
    local a = toy(dir, { '--sweep', 'all', '--shard', '1/2', '--list-points' })
    local b = toy(dir, { '--sweep', 'all', '--shard', '2/2', '--list-points' })
    assert.equal(0, a.code, a.err)
    local both = {}
    for _, id in ipairs(ids(a.out)) do both[#both + 1] = id end
    for _, id in ipairs(ids(b.out)) do both[#both + 1] = id end
    table.sort(both)
    assert.same({ 'n16-fp32', 'n32-fp32', 'n64-fp32' }, both)
  end)

  it('a declaration whose sweep lists a value twice, or two sweeps of one name, is refused', function()
    for _, c in ipairs {
      { "values = { 16, 32 } }, { name = 'large'", "values = { 16, 16 } }, { name = 'large'", "('small') lists 16 twice" },
      { "{ name = 'large'", "{ name = 'small'", "sweeps[2] has the name 'small' of sweeps[1]" },
    } do
      local path = dir .. '/decl.lua'
      sub.spit(path, (TOY:gsub(c[1]:gsub('%p', '%%%0'), c[2])))
      local r = kluabench { path, '--list-points' }
      assert.equal(1, r.code, r.err)
      assert.matches(c[3], r.err, 1, true)
    end
  end)
end)

---------------------------------------------------------------------------
-- 24.10 (harness): errors that say what was wrong
---------------------------------------------------------------------------

describe('a hook that returns the wrong thing is named, with its line, provider and point (issue 24, class 10)', function()
  local dir
  setup(function()
    dir = sub.tmpdir()
    sub.spit(dir .. '/toy.lua', TOY)
  end)
  teardown(function() os.execute('rm -rf ' .. q(dir)) end)

  it("--out '', --samples '' and --history '' are usage errors naming the option", function()
    for _, opt in ipairs { 'out', 'samples', 'history' } do
      local r = toy(dir, { '--' .. opt, '' })
      assert.equal(2, r.code, r.err)
      assert.matches("toy: option '--" .. opt .. "' needs a path, got an empty string", r.err, 1, true)
      assert.is_nil(r.err:find('traceback', 1, true), r.err)
    end
  end)

  -- hook, value, field, what the message says it returned, what it expected; each run
  -- records the failure (runtime_error) in valid bundles and exits 1
  local CASES = {
    { 'run', 'nil', nil, 'returned nil', 'the function to time expected', true },
    { 'run', 'number', nil, 'returned the number 5', 'the function to time expected', true },
    { 'setup', 'nil', nil, 'returned nil', 'a table of inputs expected' },
    { 'check', 'string', nil, "returned the string 'hello'", 'nothing or a check record table expected' },
    { 'check', 'nan', 'maxAbsDiff', 'returned maxAbsDiff = NaN', 'a finite number >= 0 expected' },
    { 'check', 'inf', 'maxRelDiff', 'returned maxRelDiff = the number inf', 'a finite number >= 0 expected' },
    { 'check', 'neg', 'relL2', 'returned relL2 = the number -1', 'a finite number >= 0 expected' },
    { 'check', 'number', 'passed', 'returned passed = the number 5', 'true or false expected' },
    { 'cost', 'neg', nil, 'returned bytes = the number -1', 'nil or a finite number >= 0 expected', true },
    { 'cost', 'nan', nil, 'returned bytes = NaN', 'nil or a finite number >= 0 expected', true },
    { 'cost', 'string', nil, "returned bytes = the string 'hello'", 'nil or a finite number >= 0 expected', true },
    { 'shared', 'string', nil, "returned the string 'hello'", 'nil, a tensor or a table of per-point state expected' },
    { 'record', 'number', nil, 'returned the number 5', 'nil or a table {timed, execution, annotations} expected', true },
    { 'record', 'number', 'execution', 'returned execution = the number 5', 'a table expected', true },
    { 'implementation', 'string', nil, "returned the string 'hello'", 'an ImplementationRevision document expected' },
  }
  for _, c in ipairs(CASES) do
    it(string.format('%s returning %s%s', c[1], c[3] and (c[3] .. ' = ') or '', c[2]), function()
      local out = dir .. '/' .. c[1] .. '-' .. c[2] .. '.jsonl'
      local r = toy(dir, { '--n', '16', '--format', 'jsonl', '--out', out },
        { BADHOOK = c[1], BADVALUE = c[2], BADFIELD = c[3] })
      assert.equal(1, r.code, r.err)
      local where = string.format('the %s hook (%s:%d) %s', c[1], dir .. '/toy.lua', line_of(c[1]), c[4])
      assert.matches(where, r.err, 1, true)
      if c[1] ~= 'shared' then assert.matches("provider 'good'", r.err, 1, true) end -- shared(point) is per point
      assert.matches('point n16-fp32', r.err, 1, true)
      if c[6] then assert.matches("mode 'forward'", r.err, 1, true) end
      assert.matches(c[5], r.err, 1, true)
      assert.is_nil(r.err:find('traceback', 1, true), r.err)
      assert.is_nil(r.err:find('as JSON', 1, true), r.err)
      -- the failure is a bundle like any other, and it verifies
      local b = assert(json.decode(lines_of(out)[1]))
      assert.equal('runtime_error', b.run.spec.status)
      local v = kluabench { 'verify', '--quiet', out }
      assert.equal(0, v.code, v.err)
      assert.matches(where, sub.slurp(dir .. '/' .. c[1] .. '-' .. c[2] .. '.samples.jsonl'), 1, true)
    end)
  end

  it('check returning passed = false is a wrong result: incorrect_numerical, not timed', function()
    local out = dir .. '/passed-false.jsonl'
    local r = toy(dir, { '--n', '16', '--format', 'jsonl', '--out', out }, { BADHOOK = 'check', BADVALUE = 'number',
      BADFIELD = 'passed' })
    assert.equal(1, r.code)
    sub.spit(dir .. '/false.lua', (TOY:gsub("number = 5,", "number = false,")))
    r = kluabench({ dir .. '/false.lua', '--n', '16', '--format', 'jsonl', '--out', out, table.unpack(FAST) },
      { BADHOOK = 'check', BADVALUE = 'number', BADFIELD = 'passed' })
    assert.equal(1, r.code, r.err)
    assert.matches('incorrect_numerical: provider good at n16-fp32 is not timed: the check hook (' .. dir .. '/false.lua:'
      .. line_of('check') .. ') returned passed = false', r.err, 1, true)
  end)

  it('validate returning a number names the hook before anything runs', function()
    local r = toy(dir, { '--n', '16' }, { BADHOOK = 'validate', BADVALUE = 'number' })
    assert.equal(1, r.code)
    assert.matches('the validate hook (' .. dir .. '/toy.lua:' .. line_of('validate') .. ') returned the number 5 for point n16-fp32',
      r.err, 1, true)
  end)

  it('a cost hook that returns garbage is named by --list-points and --shard too', function()
    local r = toy(dir, { '--n', '16,32', '--shard', '1/2', '--list-points' }, { BADHOOK = 'cost', BADVALUE = 'nan' })
    assert.equal(1, r.code)
    assert.matches('the cost hook (' .. dir .. '/toy.lua:' .. line_of('cost') .. ') returned bytes = NaN', r.err, 1, true)
  end)
end)

---------------------------------------------------------------------------
-- Lesser: two writers of one --format kernelindex file
---------------------------------------------------------------------------

describe('the harness never writes over the files it runs (issue 24, class 2)', function()
  local dir
  before_each(function()
    dir = sub.tmpdir()
    sub.spit(dir .. '/toy.lua', TOY)
    -- the same declaration in a module that a script requires (as scripts/llama4_rope.lua does)
    sub.spit(dir .. '/decl.lua', (TOY:gsub('kb%.suite%.main {', 'return {', 1)))
    sub.spit(dir .. '/main.lua', string.format("package.path = %q .. '/?.lua;' .. package.path\n"
      .. "require('kluabench').suite.main((require('decl')))\n", dir))
    assert(os.execute(string.format('ln -s toy.lua %s', q(dir .. '/link.lua'))))
  end)
  after_each(function() os.execute('rm -rf ' .. q(dir)) end)

  it('--out or --samples naming the script, a file of its hooks or the records file is a usage error', function()
    local script, decl = dir .. '/toy.lua', dir .. '/decl.lua'
    local before = { sub.slurp(script), sub.slurp(decl) }
    for _, format in ipairs { 'table', 'jsonl', 'kernelindex', 'liger-csv' } do
      for _, out in ipairs { script, dir .. '/link.lua', dir .. '/../' .. dir:match('[^/]+$') .. '/toy.lua' } do
        local r = toy(dir, { '--n', '16', '--format', format, '--out', out })
        assert.equal(2, r.code, format .. ' ' .. out .. ': ' .. r.err)
        assert.matches("toy: option '--out' " .. out .. ' is the benchmark script: writing there would overwrite an '
          .. 'input; give another path (see --help)', r.err, 1, true)
      end
    end
    local r = toy(dir, { '--n', '16', '--format', 'jsonl', '--out', dir .. '/x.jsonl', '--samples', script })
    assert.equal(2, r.code, r.err)
    assert.matches("option '--samples' " .. script .. ' is the benchmark script', r.err, 1, true)
    r = toy(dir, { '--n', '16', '--out', dir .. '/x.jsonl', '--samples', dir .. '/./x.jsonl' })
    assert.equal(2, r.code, r.err)
    assert.matches("option '--samples' " .. dir .. '/./x.jsonl is the records file', r.err, 1, true)
    -- a module that defines the hooks is an input too
    r = kluabench({ dir .. '/main.lua', '--n', '16', '--format', 'kernelindex', '--out', decl })
    assert.equal(2, r.code, r.err)
    assert.matches("option '--out' " .. decl .. ' is the file of the setup hook', r.err, 1, true)
    assert.same(before, { sub.slurp(script), sub.slurp(decl) })
    assert.is_nil(sub.slurp(dir .. '/x.jsonl'))
    -- a path beside them is written as before
    r = kluabench({ dir .. '/main.lua', '--n', '16', '--rep-ms', '2', '--warmup-ms', '1', '--format', 'jsonl',
      '--out', dir .. '/x.jsonl' })
    assert.equal(0, r.code, r.err)
    assert.equal(1, #lines_of(dir .. '/x.jsonl'))
  end)
end)

describe('--samples that resolves to the records file is a usage error before measuring (issue 37)', function()
  local dir
  before_each(function()
    dir = sub.tmpdir()
    sub.spit(dir .. '/toy.lua', TOY)
  end)
  after_each(function() os.execute('rm -rf ' .. q(dir)) end)

  it('a link to a --out not written yet, a chain of links, a relative link, --out a link to --samples, the samples file beside --out a link to it', function()
    local out = dir .. '/run.jsonl'
    assert(os.execute(string.format('ln -s %s %s && ln -s run.jsonl %s && ln -s %s %s', q(out), q(dir .. '/abs.jsonl'),
      q(dir .. '/rel.jsonl'), q(dir .. '/rel.jsonl'), q(dir .. '/chain.jsonl'))))
    for _, format in ipairs { 'jsonl', 'kernelindex' } do
      for _, link in ipairs { 'abs.jsonl', 'rel.jsonl', 'chain.jsonl' } do
        local r = toy(dir, { '--n', '16', '--format', format, '--out', out, '--samples', dir .. '/' .. link })
        assert.equal(2, r.code, format .. ' ' .. link .. ': ' .. r.err)
        assert.matches("toy: option '--samples' " .. dir .. '/' .. link .. ' is the records file: writing there would '
          .. 'overwrite an input', r.err, 1, true)
        assert.not_matches('measur', r.err) -- refused before measuring
      end
    end
    -- --out a dangling link to the --samples file
    local r = toy(dir, { '--n', '16', '--format', 'jsonl', '--out', dir .. '/abs.jsonl', '--samples', out })
    assert.equal(2, r.code, r.err)
    assert.matches("option '--samples' " .. out .. ' is the records file', r.err, 1, true)
    assert.is_nil(kb.stat(out)) -- nothing written
    -- the samples file beside --out a link to --out
    assert(os.execute(string.format('ln -s run.jsonl %s', q(dir .. '/run.samples.jsonl'))))
    r = toy(dir, { '--n', '16', '--format', 'jsonl', '--out', out })
    assert.equal(2, r.code, r.err)
    assert.matches("option '--out' " .. out .. ' (its samples file ' .. dir .. '/run.samples.jsonl) is the records file',
      r.err, 1, true)
    assert.is_nil(kb.stat(out))
    os.remove(dir .. '/run.samples.jsonl')
    -- a link to another file not written yet is fine
    assert(os.execute(string.format('ln -s %s %s', q(dir .. '/elsewhere.samples.jsonl'), q(dir .. '/s.jsonl'))))
    r = toy(dir, { '--n', '16', '--format', 'jsonl', '--out', out, '--samples', dir .. '/s.jsonl' })
    assert.equal(0, r.code, r.err)
    assert.equal(1, #lines_of(out))
    assert.equal(1, #lines_of(dir .. '/elsewhere.samples.jsonl'))
  end)
end)

describe('a second writer of one whole-file --out is noticed, not overwritten (issue 24, lesser)', function()
  local dir
  before_each(function()
    dir = sub.tmpdir()
    sub.spit(dir .. '/toy.lua', TOY)
  end)
  after_each(function() os.execute('rm -rf ' .. q(dir)) end)

  it('whole_file.claim and write_pretty: a file changed since the claim is kept, the bundles go beside it', function()
    local path = dir .. '/x.json'
    sub.spit(path, 'yesterday\n')
    local claim = whole_file.claim(path)
    -- unchanged since the claim: written in place
    local ok, where, note = whole_file.write_pretty(path, { run { samples = noisy(1, 0.01, 5, 1) } }, nil, { claim = claim })
    assert.is_true(ok)
    assert.equal(path, where)
    assert.is_nil(note)
    claim = whole_file.claim(path)
    sub.spit(path, 'the other process\n')
    ok, where, note = whole_file.write_pretty(path, { run { samples = noisy(1, 0.01, 5, 2) } }, nil, { claim = claim })
    assert.is_true(ok)
    assert.are_not.equal(path, where)
    assert.matches('^' .. dir:gsub('%p', '%%%0') .. '/x%-[%d%-]+%.json$', where)
    assert.equal('the other process\n', sub.slurp(path))
    assert.matches(path .. ' was written by another process since this one started', note, 1, true)
    local v = kluabench { 'verify', where }
    assert.equal(0, v.code, v.err)
    -- the samples file beside it counts too
    claim = whole_file.claim(path)
    sub.spit(dir .. '/x.samples.jsonl', '{}\n')
    local _, _, note2 = whole_file.destination(claim, path)
    assert.matches('x.samples.jsonl was written by another process', note2, 1, true)
  end)

  it('two writers finishing at once: the check and the write are one step under the directory\'s lock', function()
    -- Another process takes the lock, says so, writes x.json a second later and lets go. A writer
    -- that claimed x.json before must wait for it, then find the file changed and go beside it.
    -- Without the lock it wrote x.json at once (the claim still held) and the other process
    -- overwrote it: both said they wrote x.json, and one's bundles were gone.
    local path, ready = dir .. '/x.json', dir .. '/held'
    sub.spit(path, 'yesterday\n')
    local claim = whole_file.claim(path)
    local holder = string.format([[
      local core = require 'kluabench.core'
      local lock = assert(core.try_lock(%q))
      local f = assert(io.open(%q, 'w')); f:close()
      core.process.sleep(1000)
      f = assert(io.open(%q, 'w')); f:write('the other process\n'); f:close()
      lock:unlock()
    ]], dir, ready, path)
    local pid = assert(kb.process.spawn({ sub.bin(), '-e', holder }, { stdout = '/dev/null', stderr = '/dev/null' }))
    local deadline = kb.clock_ns() + 20e9
    while not io.open(ready) and kb.clock_ns() < deadline do kb.process.sleep(10) end
    assert.is_truthy(io.open(ready), 'the holder did not start')
    local t0 = kb.clock_ns()
    local ok, where, note = whole_file.write_pretty(path, { run { samples = noisy(1, 0.01, 5, 3) } }, nil, { claim = claim })
    local waited = (kb.clock_ns() - t0) / 1e9
    local _, how, code = kb.process.wait(pid)
    assert.same({ 'exit', 0 }, { how, code })
    assert.is_true(ok, where)
    assert.is_true(waited > 0.5, string.format('wrote after %.3f s: it did not wait for the lock', waited))
    assert.are_not.equal(path, where)
    assert.equal('the other process\n', sub.slurp(path))
    assert.matches(path .. ' was written by another process since this one started', note, 1, true)
    local v = kluabench { 'verify', where }
    assert.equal(0, v.code, v.err)
  end)

  it('kb.try_lock: one holder at a time, released by unlock, <close> and collection; whole_file.locked waits', function()
    local a = assert(kb.try_lock(dir))
    local b, why = kb.try_lock(dir)
    assert.equal(false, b)
    assert.equal('busy', why)
    a:unlock()
    a:unlock() -- twice is safe
    do
      local c <close> = assert(kb.try_lock(dir))
      assert.equal(false, (kb.try_lock(dir)))
    end
    local d = assert(kb.try_lock(dir))
    d = nil -- luacheck: ignore
    collectgarbage()
    collectgarbage()
    local e = assert(kb.try_lock(dir))
    e:unlock()
    local none, msg, errno = kb.try_lock(dir .. '/missing')
    assert.is_nil(none)
    assert.equal(dir .. '/missing: No such file or directory', msg)
    assert.equal(2, errno)
    -- whole_file.locked returns what fn returns, holds the lock meanwhile, and writes where it cannot lock
    assert.same({ false, 'busy' }, { whole_file.locked(dir .. '/f.json', function() return kb.try_lock(dir) end) })
    assert.same({ 1, 2 }, { whole_file.locked(dir .. '/missing/f.json', function() return 1, 2 end) })
    assert.same({ 'out' }, { whole_file.locked('-', function() return 'out' end) })
    assert.is_truthy(kb.try_lock(dir)) -- released after fn
  end)

  for _, format in ipairs { 'kernelindex', 'liger-csv' } do
    it('--format ' .. format .. ': a file another process wrote during the sweep is kept, and the message says where '
      .. 'this one went', function()
      local out = dir .. '/x.' .. format
      local r = toy(dir, { '--n', '16,32', '--format', format, '--out', out }, { HOOK = 'clobber', AT = '16',
        CLOBBER = out })
      assert.equal(0, r.code, r.err)
      assert.equal('written by another process\n', sub.slurp(out))
      local alt = r.err:match('go to (%S+) instead')
      assert.is_string(alt, r.err)
      assert.matches('toy: wrote ' .. alt, r.err, 1, true)
      if format == 'kernelindex' then
        local v = kluabench { 'verify', alt }
        assert.equal(0, v.code, v.err)
      else
        assert.equal(3, #lines_of(alt))
      end
    end)
  end
end)

---------------------------------------------------------------------------
-- 24.6a: a samples file that is a FIFO, a device or a directory
---------------------------------------------------------------------------

describe('a samples file that is not a regular file is refused before measuring (issue 24, class 6)', function()
  local dir
  before_each(function() dir = sub.tmpdir() sub.spit(dir .. '/toy.lua', TOY) end)
  after_each(function() os.execute('rm -rf ' .. q(dir)) end)

  local function mkfifo(path) assert(os.execute('mkfifo ' .. q(path))) return path end

  -- kluabench ARGS under a timeout: before the fix these waited forever in the open of the FIFO
  -- (SIGTERM did not end them), so a regression reads 124 or 137 here instead of stalling the suite.
  local function bounded(args)
    return sub.run(args, { env = { KLUABENCH_CACHE = sub.tmpdir() }, timeout = 60 })
  end

  local function toy_bounded(args)
    local a = { '--backend', 'cpu', dir .. '/toy.lua', '--n', '16' }
    for _, x in ipairs(FAST) do a[#a + 1] = x end
    for _, x in ipairs(args) do a[#a + 1] = x end
    return bounded(a)
  end

  it('--out whose samples file beside it is a FIFO: a usage error naming both, nothing measured', function()
    for _, format in ipairs { 'table', 'jsonl', 'kernelindex' } do
      local out = dir .. '/' .. format .. '.jsonl'
      local fifo = mkfifo(dir .. '/' .. format .. '.samples.jsonl')
      local r = toy_bounded { '--format', format, '--out', out }
      assert.equal(2, r.code, format .. ': ' .. r.err)
      assert.equal("toy: option '--out' " .. out .. ': its samples file ' .. fifo .. ' is a FIFO, not a regular file '
        .. '(a device or a FIFO may never end) (see --help)\n', r.err)
      assert.is_nil(sub.slurp(out), format .. ': measured and wrote records before refusing')
    end
    -- Liger's CSV has no samples file: a FIFO where one would be is no concern of it
    mkfifo(dir .. '/x.samples.jsonl')
    local r = toy_bounded { '--format', 'liger-csv', '--out', dir .. '/x.csv' }
    assert.equal(0, r.code, r.err)
  end)

  it('--samples naming a FIFO, a device or a directory is a usage error naming it, at once', function()
    local fifo = mkfifo(dir .. '/s.jsonl')
    for _, case in ipairs {
      { fifo, 'is a FIFO, not a regular file (a device or a FIFO may never end)' },
      { '/dev/null', 'is a character device, not a regular file (a device or a FIFO may never end)' },
      { dir, 'is a directory' },
    } do
      for _, format in ipairs { 'jsonl', 'kernelindex' } do
        local out = dir .. '/r.' .. format
        local r = toy_bounded { '--format', format, '--out', out, '--samples', case[1] }
        assert.equal(2, r.code, case[1] .. ': ' .. r.err)
        assert.equal("toy: option '--samples' " .. case[1] .. ' ' .. case[2] .. ' (see --help)\n', r.err)
        assert.is_nil(sub.slurp(out))
      end
    end
  end)

  it('writer.append and evidence.write_file refuse a samples file that is a FIFO instead of opening it', function()
    local fifo = mkfifo(dir .. '/s.jsonl')
    local code = string.format([[
      local record, writer = require 'kluabench.record', require 'kluabench.record.writer'
      local evidence = require 'kluabench.record.evidence'
      local P = require('kluabench').do_bench.do_bench_protocol { warmup_ms = 1, rep_ms = 1 }
      local function bundle()
        return record.from_result { kernel = 'toy', mode = 'forward', provider = 'p', parameters = { n = 8 },
          dtype = 'f32', result = { samples = { 1, 1.1, 1.2 }, used = {}, protocol = P }, protocol = P }
      end
      print(select(2, writer.append(%q, bundle(), %q)))
      print(select(2, evidence.write_file({ bundle() }, %q, %q)))]], dir .. '/r.jsonl', fifo, dir .. '/r.json', fifo)
    local r = bounded { '--backend', 'cpu', '-e', code }
    assert.equal(0, r.code, r.err)
    local want = fifo .. ': is a FIFO, not a regular file (a device or a FIFO may never end)\n'
    assert.equal(want .. want, r.out)
    assert.is_nil(sub.slurp(dir .. '/r.jsonl'))
  end)
end)
