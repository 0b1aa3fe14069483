-- The harness (kluabench.suite): points from axes and sweeps, the options it
-- makes from a declaration, the check before timing, sessions (--runs),
-- --list-points, the records, and a malformed declaration.
local kb = require 'kluabench'
local suite = require 'kluabench.suite'
local sub = require 'helpers.subprocess'
local json = require 'kluabench.util.json'

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

local function point(b) return kb.result.session(b) end

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
    if d ~= 0 then kb.suite.wrong_result('scale: WRONG RESULT: provider ' .. provider .. ' differs by ' .. d) end
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

  it('makes one point per value of a comma-list axis, in order, its id words in declaration order', function()
    local r = run(script, { '--n', '16,32,48', '--list-points' })
    assert.equal(0, r.code, r.err)
    local ids = {}
    for id, cost in r.out:gmatch('([^\t\n]+)\t(%d+)\t[^\n]*') do ids[#ids + 1] = id .. ' ' .. cost end
    -- n is declared before k: the id says n first (kernelindex's own workloads sort, below)
    assert.same({ 'n16-k1-fp32 128', 'n32-k1-fp32 256', 'n48-k1-fp32 384' }, ids)
    -- the records name the workload as the table and --list-points do
    local out = dir .. '/order.jsonl'
    r = run(script, { '--n', '16', '--provider', 'good', '--rep-ms', '2', '--format', 'jsonl', '--out', out })
    assert.equal(0, r.code, r.err)
    local f = assert(io.open(out))
    local b = json.decode(f:read('l'))
    f:close()
    assert.matches('/n16%-k1%-fp32/', b.run.spec.sourceNative.externalId)
    assert.equal('n16-k1-fp32', point(b).id)
    assert.matches('%-n16%-k1%-fp32$', b.workload.metadata.name)
  end)

  it('takes the product of two list axes and sweeps with their fixed values', function()
    local r = run(script, { '--n', '16,32', '--k', '1,2', '--list-points' })
    assert.equal(0, r.code, r.err)
    assert.equal(4, select(2, r.out:gsub('\n', '')))
    r = run(script, { '--sweep', 'size', '--list-points' })
    assert.equal(0, r.code, r.err)
    -- both providers in a sweep: the cost counts each
    assert.matches('^n64%-k2%-fp32\t2048\t', r.out)
    assert.matches('\nn128%-k2%-fp32\t4096\t', r.out)
    -- providers as a comma list, each once: the cost counts two
    r = run(script, { '--n', '16', '--provider', 'good,bad,good', '--list-points' })
    assert.equal(0, r.code, r.err)
    assert.matches('^n16%-k1%-fp32\t256\t', r.out)
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
      -- did you mean, for choices and options alike
      { { '--provider', 'godo' }, "must be good, bad or all, got 'godo' %(did you mean 'good'%?%)" },
      { { '--rep-m', '16' }, "unrecognized option '%-%-rep%-m' %(did you mean '%-%-rep%-ms'%?%)" },
      -- `all` only where it is offered: a run has one dtype, one protocol, one format
      { { '--dtype', 'all' }, "option '%-%-dtype' must be one of fp32, got 'all'" },
      -- dtypes print as records spell them (fp32), with a hint
      { { '--dtype', 'fp33' }, "option '%-%-dtype' must be one of fp32, got 'fp33' %(did you mean 'fp32'%?%)" },
      -- the host's options go before the script, and the message says so
      { { '--backend', 'cpu' }, "unrecognized option '%-%-backend' %(a host option: give it before the script" },
      { { '--protocol', 'all' }, "option '%-%-protocol' must be one of do_bench, cold, hot, graph, got 'all'" },
      { { '--format', 'all' }, "option '%-%-format' must be one of table, markdown, jsonl, kernelindex, liger%-csv, got 'all'" },
      { { '--protocol', 'cld' }, "got 'cld' %(did you mean 'cold'%?%)" },
    } do
      local r = run(script, case[1])
      assert.equal(2, r.code, table.concat(case[1], ' '))
      assert.matches(case[2], r.err)
    end
  end)

  it('makes a field a point does not have an error in the hook that read it, with the fields it has', function()
    local typo = dir .. '/typo.lua'
    sub.spit(typo, (SCRIPT:gsub("kb.randn%({ p.n %* p.k }, 'f32'", "kb.randn({ p.n * p.k }, p.dtyp", 1)))
    local r = run(typo, { '--n', '16', '--format', 'jsonl', '--out', dir .. '/typo.jsonl' })
    assert.equal(1, r.code)
    assert.matches("typo.lua:%d+: scale: a point has no field 'dtyp' %(did you mean 'dtype'%?%) %(its fields: n, k, params, dtype,", r.err)
  end)

  it('takes -o as --out and -q as --quiet anywhere on the line, and a dtype spelled fp32 or f32', function()
    local ids = {}
    for i, dtype in ipairs { 'fp32', 'f32', 'float32' } do
      local out = dir .. '/o' .. i .. '.jsonl'
      local r = sub.run { '--backend', 'cpu', script, '-o', out, '--n', '16', '-q', '--rep-ms', '2', '--dtype', dtype }
      assert.equal(0, r.code, r.err)
      assert.not_matches('%[1/1%]', r.err) -- quiet: no progress line
      local f = assert(io.open(out))
      ids[i] = point(json.decode(f:read('l'))).id
      f:close()
    end
    assert.same({ 'n16-k1-fp32', 'n16-k1-fp32', 'n16-k1-fp32' }, ids)
    local r = run(script, { '--help' })
    assert.matches('%-o, %-%-out PATH', r.out)
    assert.matches('%-q, %-%-quiet', r.out)
    assert.matches('%-%-dtype D%s+fp32 %(default fp32', r.out)
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

  it('times nothing of a wrong result, records it as incorrect_numerical, runs the rest and exits 1', function()
    local out = dir .. '/wrong.jsonl'
    local r = run(script, { '--provider', 'all', '--rep-ms', '5', '--out', out })
    assert.equal(1, r.code)
    assert.matches('scale: incorrect_numerical: provider bad at n256-k1-fp32 is not timed: scale: WRONG RESULT: '
      .. 'provider bad differs by', r.err, 1, true)
    -- the good provider's point was measured; the bad one's bundle says why it was not
    local got = bundles(sub.slurp(out))
    assert.equal(2, #got)
    assert.equal('good', point(got[1]).provider)
    assert.equal('passed', got[1].run.spec.status)
    assert.equal('bad', point(got[2]).provider)
    assert.equal('incorrect_numerical', got[2].run.spec.status)
    assert.is_nil(got[2].run.spec.timing)
    local samples = sub.slurp(dir .. '/wrong.samples.jsonl')
    assert.matches('WRONG RESULT: provider bad differs by', samples, 1, true)
  end)

  it('records a session past --timeout as timeout, stopped at the deadline, and exits 1', function()
    local slow = dir .. '/slow.lua'
    sub.spit(slow, [[
local kb = require 'kluabench'
kb.suite.main { name = 'slow', axes = { { name = 'n', default = 8 } }, dtypes = { 'f32' }, modes = { 'forward' },
  providers = { 'sleepy' }, setup = function(p) return { x = kb.zeros({ p.n }, 'f32') } end,
  run = function() return function() kb.process.sleep(20) end end }
]])
    local out = dir .. '/slow.jsonl'
    local r = run(slow, { '--protocol', 'hot', '--timeout', '0.2', '--out', out })
    assert.equal(1, r.code)
    assert.matches('slow: timeout: forward sleepy at n8-fp32: the session took', r.err, 1, true)
    local b = assert(kb.reader.read(out))[1]
    assert.equal('timeout', b.run.spec.status)
    local p = point(b)
    assert.equal('timeout', p.evidence.execution.stop.rule)
    assert.is_true(#p.samples_ms >= 1 and #p.samples_ms < 20) -- fewer than the rule would have taken
    assert.matches('past %-%-timeout 0.2 s', p.evidence.reasons[1])
    r = run(slow, { '--timeout', '-1' })
    assert.equal(2, r.code)
    assert.matches("option '%-%-timeout' needs a positive number", r.err)
  end)

  it('says what a long sweep will take before it starts, from a probe of its smallest point', function()
    -- a call of p.n ms, its cost p.n bytes; the check finds every result wrong, so nothing is
    -- timed and the run ends at once, after the estimate
    local long = dir .. '/long.lua'
    sub.spit(long, [[
local kb = require 'kluabench'
kb.suite.main { name = 'long', axes = { { name = 'n', default = 100, max = 10000 } }, dtypes = { 'f32' },
  modes = { 'forward' }, providers = { 'nap' }, setup = function(p) return { x = kb.zeros({ 4 }, 'f32') } end,
  run = function(p) return function()
    -- p.n ms whatever signal cuts a sleep short (nanosleep returns early on one; it read 36 s for
    -- 37-43 once under AddressSanitizer)
    local stop = kb.clock_ns() + p.n * 1e6
    repeat kb.process.sleep(math.max(0, stop - kb.clock_ns()) / 1e6) until kb.clock_ns() >= stop
  end end,
  check = function() kb.suite.wrong_result('long: not timed on purpose') end,
  cost = function(p) return p.n, 0 end }
]])
    -- do_bench on the cpu: about 12 calls a session; 12 x (0.1 + 0.2 + 0.4 + 0.8 + 1.6) s = 37 s,
    -- and 2 calls a check: 6 s (unscaled, 5 x 12 x 0.1 s would be 6 s and say nothing)
    local r = sub.run { '--backend', 'cpu', long, '--n', '100,200,400,800,1600' }
    assert.equal(1, r.code, r.err)
    local seconds = r.err:match('^long: 5 sessions, estimated ([%d.]+)s %(one call of each provider and mode timed at '
      .. 'the smallest point, scaled by bytes%); fewer values, %-%-provider or %-%-mode make it shorter\n')
    assert(seconds, r.err)
    assert(tonumber(seconds) > 38 and tonumber(seconds) < 50, seconds)
    -- cold on the cpu: each session its 2 s budget (16 x 2 s), whatever the call takes
    r = sub.run { '--backend', 'cpu', long, '--n', '1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16', '--protocol', 'cold' }
    seconds = r.err:match('^long: 16 sessions, estimated ([%d.]+)s ')
    assert(seconds, r.err)
    assert(tonumber(seconds) > 32 and tonumber(seconds) < 34, seconds)
    -- a short sweep says nothing, nor does a quiet one
    r = sub.run { '--backend', 'cpu', long, '--n', '1,2' }
    assert.not_matches('estimated', r.err, 1, true)
    r = sub.run { '--backend', 'cpu', '--quiet', long, '--n', '100,200,400,800,1600' }
    assert.not_matches('estimated', r.err, 1, true)
    -- --quiet (or -q) after the script name as before it
    for _, q in ipairs { '--quiet', '-q' } do
      r = sub.run { '--backend', 'cpu', long, '--n', '100,200,400,800,1600', q }
      assert.equal(1, r.code, r.err)
      assert.not_matches('estimated', r.err, 1, true)
    end
  end)

  it('measures every point in --runs sessions, interleaved, and records the session', function()
    local r = run(script, { '--n', '16,32', '--runs', '3', '--rep-ms', '5', '--format', 'jsonl' })
    assert.equal(0, r.code, r.err)
    local got = bundles(r.out)
    assert.equal(6, #got)
    local order = {}
    for i, b in ipairs(got) do
      local s = point(b).session
      assert.equal(3, s.count)
      order[i] = b.workload.spec.axes.n .. ':' .. s.index
      assert.same({}, kb.verify.check(b))
    end
    assert.same({ '16:1', '32:1', '16:2', '32:2', '16:3', '32:3' }, order)
  end)

  it('writes records whose workload and digests are the benchmark\'s', function()
    local r = run(script, { '--n', '16', '--rep-ms', '5', '--format', 'jsonl' })
    assert.equal(0, r.code, r.err)
    local b = bundles(r.out)[1]
    local p = point(b)
    assert.equal('scale', p.kernel)
    assert.equal(128, p.bytes)
    assert.same({ n = 16, k = 1 }, b.workload.spec.axes)
    -- no operation declared: the tensors setup made describe it
    assert.same({ x = { shape = { 16 }, dtype = 'fp32' }, y = { shape = { 16 }, dtype = 'fp32' } },
      b.workload.spec.tensors)
    assert.equal('in_place', b.operation.spec.semantics.mutation)
    -- no implementation declared: the script and the provider
    assert.equal('good', b.implementation.spec.callable.symbol)
    assert.equal('sha256:' .. kb.sha256_file(script), b.implementation.spec.source.contentDigest)
    assert.same({ index = 1, count = 1 }, p.session)
    assert.same({}, kb.verify.check(b))
  end)

  it("takes a provider's implementation from the provider, never from a built-in kernel of the same names", function()
    -- a script of the user's named like the built-in benchmark, its provider named like a built-in one
    local mine = dir .. '/llama4_mine.lua'
    sub.spit(mine, (SCRIPT:gsub("name = 'scale'", "name = 'llama4_rope'"):gsub("'good', 'bad'", "'fused', 'bad'")
      :gsub("provider = 'good'", "provider = 'fused'")))
    local r = run(mine, { '--n', '16', '--rep-ms', '2', '--format', 'jsonl' })
    assert.equal(0, r.code, r.err)
    local spec = bundles(r.out)[1].implementation.spec
    assert.equal('kluabench_suite', spec.callable.interface)
    assert.equal('fused', spec.callable.symbol)
    assert.equal('sha256:' .. kb.sha256_file(mine), spec.source.contentDigest)
    assert.is_nil(spec.projectRevision.treeDigest)
    -- only the declaration's word makes it the registry's built-in code ...
    local builtin = dir .. '/llama4_builtin.lua'
    sub.spit(builtin, (sub.slurp(mine):gsub("'fused', 'bad'", "'fused', 'other'")
      :gsub("cost = function", "implementation = function() return 'builtin' end,\n  cost = function")))
    r = run(builtin, { '--n', '16', '--rep-ms', '2', '--format', 'jsonl' })
    assert.equal(0, r.code, r.err)
    spec = bundles(r.out)[1].implementation.spec
    assert.equal('kernels/rope_cpu.c', spec.callable.path)
    assert.matches('^sha256:%x+$', spec.projectRevision.treeDigest)
    -- ... and the word is refused for a provider the registry does not have
    r = run(builtin, { '--n', '16', '--rep-ms', '2', '--provider', 'other', '--format', 'jsonl' })
    assert.equal(1, r.code)
    assert.matches("runtime_error: forward other at n16-k1-fp32: the implementation hook (", r.err, 1, true)
    assert.matches("llama4_builtin.lua:%d+%) returned the string 'builtin' for provider 'other'", r.err)
    assert.matches("which has no provider other of a kernel llama4_rope on the cpu backend)", r.err, 1, true)
  end)

  it("names a plugin kernel's library by its digest: another library, or another kernel, another digest", function()
    local plugins = kb.executable():match('^(.*)/[^/]*$') .. '/plugins/'
    local lib1, lib2 = dir .. '/p1.so', dir .. '/p2.so'
    local so = sub.slurp(plugins .. 'libscale_add.so')
    sub.spit(lib1, so)
    sub.spit(lib2, so .. 'x') -- the same code, another file: another digest
    local plug = dir .. '/plug.lua'
    sub.spit(plug, [[
local kb = require 'kluabench'
local verify = require 'kluabench.record.verify'
local pk = kb.plugin.load(os.getenv('LIB')):kernel('scale_add')
kb.suite.main { name = 'scale_add', axes = { { name = 'n', default = 64 } }, dtypes = { 'f32' }, modes = { 'forward' },
  providers = { 'plugin', 'lua' },
  setup = function(p) return { x = kb.randn({ p.n }, 'f32', 1), y = kb.randn({ p.n }, 'f32', 2), out = kb.empty({ p.n }, 'f32') } end,
  run = function(p, provider, mode, t)
    if provider == 'plugin' then return function() pk(t.out, t.x, t.y, 1.5) end end
    return function() t.out:copy_(t.x) end
  end,
  implementation = function(p, provider) if provider == 'plugin' then return pk:info() end end,
}
]])
    local function impl(lib)
      local r = sub.run({ '--backend', 'cpu', '--quiet', plug, '--provider', 'all', '--rep-ms', '2', '--format', 'jsonl' },
        { env = { LIB = lib } })
      assert.equal(0, r.code, r.err)
      local got = {}
      for _, b in ipairs(bundles(r.out)) do
        assert.same({}, kb.verify.check(b))
        got[point(b).provider] = b
      end
      return got
    end
    local a, b = impl(lib1), impl(lib2)
    local s = a.plugin.implementation.spec
    assert.equal('kluabench_plugin', s.callable.interface)
    assert.equal('scale_add', s.callable.symbol)
    assert.equal('sha256:' .. kb.sha256_file(lib1), s.source.contentDigest)
    assert.are_not.equal(a.plugin.run.spec.implementationDigest, b.plugin.run.spec.implementationDigest)
    assert.are_not.equal(a.plugin.run.spec.implementationDigest, a.lua.run.spec.implementationDigest)
    -- the script's own provider is the script's and the code the process loaded (issue 19), so the
    -- other library changes it too
    assert.equal('sha256:' .. kb.sha256_file(plug), a.lua.implementation.spec.source.contentDigest)
    assert.are_not.equal(a.lua.run.spec.implementationDigest, b.lua.run.spec.implementationDigest)
  end)

  it('names the harness commit as evidence.harness when KLUABENCH_REPOSITORY is an https URL', function()
    local function harness(repo)
      local r = sub.run({ '--backend', 'cpu', '--quiet', script, '--n', '16,32', '--rep-ms', '2', '--format', 'jsonl' },
        { env = { KLUABENCH_REPOSITORY = repo } })
      assert.equal(0, r.code, r.err)
      local got = bundles(r.out)
      assert.equal(2, #got)
      for _, b in ipairs(got) do assert.same({}, kb.verify.check(b)) end
      return got[1].run.spec.evidence.harness, r.err
    end
    local h = harness('https://example.org/kluabench')
    local commit = tostring(kb.git_commit)
    if commit:match('^%x+$') and #commit == 40 then
      assert.same({ repository = 'https://example.org/kluabench', commit = commit }, h)
    else -- a build of a tree with changes has no commit to name
      assert.is_nil(h)
    end
    -- not an https URL: said once, and the records are still written (without it)
    for _, bad in ipairs { 'http://example.org/kluabench', 'https://' } do
      local none, err = harness(bad)
      assert.is_nil(none)
      local _, n = err:gsub("KLUABENCH_REPOSITORY '[^']*' is not an https URL", '')
      assert.equal(1, n, err)
    end
  end)

  it('records the status wrong_result names, and refuses one that is not a wrong result', function()
    local shape = dir .. '/shape.lua'
    sub.spit(shape, (SCRIPT:gsub("kb%.suite%.wrong_result%('scale: WRONG RESULT: provider ' %.%. provider %.%. ' differs by ' %.%. d%)",
      "kb.suite.wrong_result('shape differs', os.getenv('STATUS'))")))
    local function status_of(st)
      local out = dir .. '/shape-' .. st .. '.jsonl'
      local r = sub.run({ '--backend', 'cpu', '--quiet', shape, '--n', '16', '--provider', 'bad', '--rep-ms', '2',
        '--format', 'jsonl', '--out', out }, { env = { STATUS = st } })
      assert.equal(1, r.code, r.err)
      local b = assert(kb.reader.read(out))[1]
      return b.run.spec.status, point(b).evidence.reasons[1], r.err
    end
    for _, st in ipairs { 'incorrect_shape', 'incorrect_dtype', 'incorrect_numerical' } do
      local got, why = status_of(st)
      assert.equal(st, got)
      assert.equal('shape differs', why)
    end
    local got, why = status_of('failed')
    assert.equal('runtime_error', got)
    assert.matches("bad argument #2 to 'wrong_result' (\"incorrect_numerical\", \"incorrect_shape\" or "
      .. '"incorrect_dtype" expected, got "failed")', why, 1, true)
  end)

  it('refuses an unwritable --out before measuring anything', function()
    local r = run(script, { '--out', dir .. '/no/such/dir/x.jsonl' })
    assert.equal(2, r.code) -- a usage error (issue 23)
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
    -- a sweep of an axis that is not declared: the axis named, the likely one, the axes there are
    local function decl(sweep)
      return { name = 'x', setup = function() end, run = function() end, providers = { 'a' }, modes = { 'm' },
        dtypes = { 'f32' }, axes = { { name = 'rows', default = 8 }, { name = 'cols', default = 8 } }, sweeps = { sweep } }
    end
    ok, err = pcall(suite.main, decl { name = 'wide', axis = 'colls', values = { 8, 16 } })
    assert.is_false(ok)
    assert.matches("sweeps%[1%] %('wide'%) sweeps axis 'colls', which is not one of axes %(did you mean 'cols'%?%) "
      .. "%(axes: rows, cols%)", err)
    ok, err = pcall(suite.main, decl { name = 'wide', values = { 8 } })
    assert.matches("sweeps%[1%] %('wide'%) sweeps axis 'nil', which is not one of axes %(axes: rows, cols%)", err)
    ok, err = pcall(suite.main, decl { name = 'wide', axis = 'cols', values = {} })
    assert.matches("sweeps%[1%] %('wide'%) needs a non%-empty list of values", err)
    ok, err = pcall(suite.main, decl { axis = 'cols', values = { 8 } })
    assert.matches("sweeps%[1%] needs a name %(a word%)", err)
  end)
end)

describe('scripts on the harness', function()
  it('llama4_rope.lua and rope.lua list the same sweep points, under their own kernel names', function()
    for _, name in ipairs { 'llama4_rope', 'rope' } do
      local r = run(ROOT .. '/scripts/' .. name .. '.lua', { '--sweep', 'all', '--list-points' })
      assert.equal(0, r.code, r.err)
      assert.equal(7, select(2, r.out:gsub('\n', ''))) -- 8 in the sweeps, the point two share measured once
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
      assert.equal(7, count)
    end
    local r = run(ROOT .. '/scripts/llama4_rope.lua', { '--shard', '4/3' })
    assert.equal(2, r.code)
    assert.matches("option '%-%-shard'", r.err)
  end)

  it('rope.lua times kb.rope.neox_* and checks it against the cpu reference', function()
    local dir = sub.tmpdir()
    local out = dir .. '/rope.jsonl'
    local r = run(ROOT .. '/scripts/rope.lua', { '--hidden', '256', '--seq', '64', '--mode', 'all',
      '--rep-ms', '5', '--format', 'jsonl', '--out', out })
    assert.equal(0, r.code, r.err)
    local got = assert(kb.reader.read(out))
    assert.equal(3, #got)
    for _, b in ipairs(got) do
      local p = point(b)
      assert.equal('rope', p.kernel)
      assert.equal('liger-rope', b.operation.metadata.name)
      assert.matches('kb.rope.neox_', b.protocol.spec.comparability.notes, 1, true)
      assert.equal('kb.rope neox impl=fused on the cpu backend (bit for bit its impl=reference), same inputs', p.evidence.check.reference)
    end
    os.execute('rm -rf ' .. sub.q(dir))
  end)

  it('the copy example declares a whole benchmark in under 40 lines', function()
    local path = ROOT .. '/examples/copy_benchmark.lua'
    assert.is_true(select(2, sub.slurp(path):gsub('\n', '')) < 40)
    local r = run(path, { '--mib', '1', '--rep-ms', '5', '--format', 'jsonl' })
    assert.equal(0, r.code, r.err)
    assert.equal(2 * (1 << 20), point(bundles(r.out)[1]).bytes)
  end)
end)
