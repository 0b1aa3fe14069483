-- The harness (kluabench.suite): points from axes and sweeps, the options it
-- makes from a declaration, the check before timing, sessions (--runs),
-- --list-points, the records, and a malformed declaration.
local kb = require 'kluabench'
local suite = require 'kluabench.suite'
local sub = require 'helpers.subprocess'
local json = require 'kluabench.report.json'

local ROOT = sub.root()

local function run(script, args)
  local a = { '--backend', 'cpu', '--quiet', script }
  for _, x in ipairs(args or {}) do a[#a + 1] = x end
  return sub.run(a)
end

local function bundles(text)
  local out = {}
  for line in text:gmatch('[^\n]+') do out[#out + 1] = json.decode(line) end
  return out
end

-- A small declaration written to a file, so that it runs as a user's script
-- does. `wrong` makes the 'bad' provider return a wrong result.
local SCRIPT = [[
local kb = require 'kluabench'
kb.suite.main {
  name = 'scale',
  summary = 'Doubles a vector.',
  axes = { { name = 'n', default = 256, max = 1 << 20 }, { name = 'k', default = 1 } },
  sweeps = { { name = 'size', axis = 'n', values = { 64, 128 }, fixed = { k = 2 } } },
  dtypes = { 'f32' },
  modes = { 'forward' },
  providers = { 'good', 'bad' }, provider = 'good',
  setup = function(p) return { x = kb.randn({ p.n * p.k }, 'f32', 7), y = kb.zeros({ p.n * p.k }, 'f32') } end,
  run = function(p, provider, mode, t)
    return function(s) s = s or t; s.y:copy_(s.x) end
  end,
  check = function(p, provider, t)
    t.y:copy_(t.x)
    if provider == 'bad' then t.y:fill_(1) end
    local d = kb.max_abs_diff(t.y, t.x)
    if d ~= 0 then error('scale: WRONG RESULT: provider ' .. provider .. ' differs by ' .. d, 0) end
    return { passed = true, maxAbsDiff = 0 }
  end,
  cost = function(p) return 8 * p.n * p.k, 0 end,
}
]]

describe('kluabench.suite', function()
  local dir, script
  setup(function()
    dir = sub.tmpdir()
    script = dir .. '/scale.lua'
    sub.spit(script, SCRIPT)
  end)
  teardown(function() os.execute('rm -rf ' .. sub.q(dir)) end)

  it('makes one point per value of a comma-list axis, in order', function()
    local r = run(script, { '--n', '16,32,48', '--list-points' })
    assert.equal(0, r.code, r.err)
    local ids = {}
    for id, cost in r.out:gmatch('([^\t\n]+)\t(%d+)\t[^\n]*') do ids[#ids + 1] = id .. ' ' .. cost end
    assert.same({ 'k1-n16-f32 128', 'k1-n32-f32 256', 'k1-n48-f32 384' }, ids)
  end)

  it('takes the product of two list axes and sweeps with their fixed values', function()
    local r = run(script, { '--n', '16,32', '--k', '1,2', '--list-points' })
    assert.equal(0, r.code, r.err)
    assert.equal(4, select(2, r.out:gsub('\n', '')))
    r = run(script, { '--sweep', 'size', '--list-points' })
    assert.equal(0, r.code, r.err)
    -- both providers in a sweep: the cost counts each
    assert.matches('^k2%-n64%-f32\t2048\t', r.out)
    assert.matches('\nk2%-n128%-f32\t4096\t', r.out)
    -- providers as a comma list, each once: the cost counts two
    r = run(script, { '--n', '16', '--provider', 'good,bad,good', '--list-points' })
    assert.equal(0, r.code, r.err)
    assert.matches('^k1%-n16%-f32\t256\t', r.out)
  end)

  it('rejects bad values with the option named, exit 2', function()
    for _, case in ipairs {
      { { '--n', '0' }, "option '%-%-n' needs a positive integer, got '0'" },
      { { '--n', '1,x' }, "option '%-%-n' needs a positive integer, got 'x'" },
      { { '--n', '2000000' }, "option '%-%-n': 2000000 is larger than the largest allowed, 1048576" },
      { { '--sweep', 'nope' }, "option '%-%-sweep' must be size or all, got 'nope'" },
      { { '--provider', 'worst' }, "option '%-%-provider' must be good, bad or all" },
      { { '--provider', 'good,worst' }, "option '%-%-provider' must be good, bad or all, got 'worst'" },
      { { '--provider', 'good,' }, "option '%-%-provider' must be good, bad or all, got ''" },
      { { '--provider', 'good,all' }, "option '%-%-provider': all cannot be part of a list" },
      { { '--runs', '0' }, "option '%-%-runs' needs a whole number from 1 to 1000" },
      { { '--rep-ms', 'nan' }, "option '%-%-rep%-ms' needs a positive number" },
      { { '--bogus' }, "unrecognized option '%-%-bogus'" },
    } do
      local r = run(script, case[1])
      assert.equal(2, r.code, table.concat(case[1], ' '))
      assert.matches(case[2], r.err)
    end
  end)

  it('generates --help from the declaration', function()
    local r = run(script, { '--help' })
    assert.equal(0, r.code)
    assert.matches('Doubles a vector.', r.out, 1, true)
    assert.matches('%-%-n N,%.%.%.', r.out)
    assert.matches('size: n {64, 128} at k 2', r.out, 1, true)
    assert.matches('%-%-provider P,%.%.%.%s+good, bad or all, or a comma list %(default good', r.out)
    assert.matches('%-%-shard I/N', r.out)
  end)

  it('stops loudly on a wrong result before timing anything', function()
    local out = dir .. '/wrong.jsonl'
    local r = run(script, { '--provider', 'all', '--rep-ms', '5', '--out', out })
    assert.equal(1, r.code)
    assert.matches('scale: WRONG RESULT: provider bad differs by', r.err, 1, true)
    -- the good provider's point was measured and kept; nothing of the bad one
    local got = bundles(sub.slurp(out))
    assert.equal(1, #got)
    assert.equal('good', got[1].implementation.spec.provider)
  end)

  it('measures every point in --runs sessions, interleaved, and records the session', function()
    local r = run(script, { '--n', '16,32', '--runs', '3', '--rep-ms', '5', '--format', 'jsonl' })
    assert.equal(0, r.code, r.err)
    local got = bundles(r.out)
    assert.equal(6, #got)
    local order = {}
    for i, b in ipairs(got) do
      local s = b.run.spec.execution.session
      assert.equal(3, s.count)
      order[i] = b.workload.spec.parameters.n .. ':' .. s.index
      assert.same({}, kb.record.check(b))
    end
    assert.same({ '16:1', '32:1', '16:2', '32:2', '16:3', '32:3' }, order)
  end)

  it('writes records whose workload and digests are the benchmark\'s', function()
    local r = run(script, { '--n', '16', '--rep-ms', '5', '--format', 'jsonl' })
    assert.equal(0, r.code, r.err)
    local b = bundles(r.out)[1]
    assert.equal('scale', b.workload.spec.kernel)
    assert.equal(128, b.workload.spec.bytes)
    assert.same({ n = 16, k = 1 }, b.workload.spec.parameters)
    assert.same({ index = 1, count = 1 }, b.run.spec.execution.session)
    assert.same({}, kb.record.check(b))
  end)

  it('refuses an unwritable --out before measuring anything', function()
    local r = run(script, { '--out', dir .. '/no/such/dir/x.jsonl' })
    assert.equal(1, r.code)
    assert.matches('cannot write %-%-out .*no/such/dir/x%.jsonl', r.err)
    assert.not_matches('%[1/', r.err)
  end)

  it('raises on a malformed declaration, naming the field', function()
    local ok, err = pcall(suite.main, { name = 'x', setup = function() end })
    assert.is_false(ok)
    assert.matches("field 'run' must be a function", err)
    ok, err = pcall(suite.main, { name = 'x', setup = function() end, run = function() end,
      providers = { 'a' }, modes = { 'm' }, dtypes = { 'f32' }, axes = { { name = 'n', default = 0 } } })
    assert.is_false(ok)
    assert.matches("axes%[1%] %('n'%) needs a positive integer default", err)
  end)
end)

describe('scripts on the harness', function()
  it('llama4_rope.lua and rope.lua list the same sweep points, under their own kernel names', function()
    for _, name in ipairs { 'llama4_rope', 'rope' } do
      local r = run(ROOT .. '/scripts/' .. name .. '.lua', { '--sweep', 'all', '--list-points' })
      assert.equal(0, r.code, r.err)
      assert.equal(8, select(2, r.out:gsub('\n', '')))
      assert.matches('^hidden512%-kv_heads8%-q_heads32%-seq2048%-bf16\t%d+\t' .. name, r.out)
    end
  end)

  it('--shard I/N splits the sweep: every point in exactly one shard, the same each time', function()
    local all = run(ROOT .. '/scripts/llama4_rope.lua', { '--sweep', 'all', '--list-points' }).out
    for n = 1, 4 do
      local seen = {}
      for i = 1, n do
        local r = run(ROOT .. '/scripts/llama4_rope.lua', { '--sweep', 'all', '--shard', i .. '/' .. n, '--list-points' })
        assert.equal(0, r.code, r.err)
        assert.equal(r.out, run(ROOT .. '/scripts/llama4_rope.lua',
          { '--sweep', 'all', '--shard', i .. '/' .. n, '--list-points' }).out)
        for line in r.out:gmatch('[^\n]+') do
          assert.is_nil(seen[line], line)
          seen[line] = true
        end
      end
      local count = 0
      for line in all:gmatch('[^\n]+') do assert.is_true(seen[line], line); count = count + 1 end
      assert.equal(8, count)
    end
    local r = run(ROOT .. '/scripts/llama4_rope.lua', { '--shard', '4/3' })
    assert.equal(2, r.code)
    assert.matches("option '%-%-shard'", r.err)
  end)

  it('rope.lua times kb.rope.neox_* and checks it against the cpu reference', function()
    local r = run(ROOT .. '/scripts/rope.lua', { '--hidden', '256', '--seq', '64', '--mode', 'all',
      '--rep-ms', '5', '--format', 'jsonl' })
    assert.equal(0, r.code, r.err)
    local got = bundles(r.out)
    assert.equal(3, #got)
    for _, b in ipairs(got) do
      assert.equal('rope', b.workload.spec.kernel)
      assert.matches('kb.rope.neox_', b.protocol.spec.notes and table.concat(b.protocol.spec.notes, ' ')
        or json.encode_line(b.protocol.spec), 1, true)
      assert.equal('kb.rope neox impl=fused on the cpu backend (bit for bit its impl=reference), same inputs', b.run.spec.check.reference)
    end
  end)

  it('the copy example declares a whole benchmark in under 40 lines', function()
    local path = ROOT .. '/examples/copy_benchmark.lua'
    assert.is_true(select(2, sub.slurp(path):gsub('\n', '')) < 40)
    local r = run(path, { '--mib', '1', '--rep-ms', '5', '--format', 'jsonl' })
    assert.equal(0, r.code, r.err)
    assert.equal(2 * (1 << 20), bundles(r.out)[1].workload.spec.bytes)
  end)
end)
