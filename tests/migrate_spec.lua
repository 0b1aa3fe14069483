-- Results files of kluabench's earlier record format (before it followed
-- kernelindex's published schemas) still read: compare and plot read the
-- committed file tests/fixtures/records_before_kernelindex.jsonl as they read
-- today's, and `kluabench migrate` rewrites it in today's form, keeping
-- every number.
local kb = require 'kluabench'
local sub = require 'helpers.subprocess'
local json = require 'kluabench.util.json'
local verify = require 'kluabench.record.verify'

local ROOT = sub.root()
local OLD = ROOT .. '/tests/fixtures/records_before_kernelindex.jsonl'

-- The old file's own lines, decoded (no migration).
local function old_lines()
  local out = {}
  for line in assert(sub.slurp(OLD)):gmatch('[^\n]+') do out[#out + 1] = assert(json.decode(line)) end
  return out
end

describe('the earlier record format', function()
  it('is what the committed file holds', function()
    for _, b in ipairs(old_lines()) do
      assert.equal('BenchmarkWorkload', b.workload.kind)
      assert.is_true(kb.migrate.is_old(b))
    end
  end)

  it('reads as today\'s, every number kept: the same median, samples, session and throughput', function()
    local old = old_lines()
    local new = assert(kb.reader.read(OLD))
    assert.equal(#old, #new)
    for i, b in ipairs(new) do
      local o = old[i].run.spec
      assert.same({}, kb.verify.check(b))
      local p = kb.result.session(b)
      assert.equal(o.timing.latencyNs.median, p.median_ns)
      assert.equal(#o.samples.values, #p.samples_ms)
      for j, ns in ipairs(o.samples.values) do assert.near(ns / 1e6, p.samples_ms[j], 1e-12) end
      assert.equal(old[i].workload.spec.kernel, p.kernel)
      assert.equal(old[i].workload.spec.operation, p.mode)
      assert.equal(old[i].implementation.spec.provider, p.provider)
      assert.same(old[i].workload.spec.parameters, p.params)
      assert.equal(o.execution.session.index, p.session.index)
      assert.equal(o.execution.throughput.gbps, p.gbps)
      assert.equal(old[i].workload.spec.bytes, p.bytes)
      -- a Liger benchmark's point lands on kernelindex's own workload
      assert.equal(kb.record.digest((kb.record.workload { kernel = p.kernel, parameters = p.params, dtype = p.dtype })),
        b.run.spec.workloadDigest)
    end
  end)

  it('compares with itself as SAME, and plots', function()
    local r = sub.run { 'compare', OLD, OLD, '--between', '0.001' }
    assert.equal(0, r.code, r.err)
    assert.matches('SAME', r.out)
    assert.not_matches('UNSURE', r.out)
    local svg = sub.tmpdir() .. '/old.svg'
    r = sub.run { 'plot', OLD, '-o', svg }
    assert.equal(0, r.code, r.err)
    assert.matches('<svg', assert(sub.slurp(svg)))
  end)

  it("describes the built-in code as the record's build made it, not as this binary was built", function()
    local dir = sub.tmpdir()
    local lines = {}
    for i, b in ipairs(old_lines()) do
      b.implementation.spec.build = { cflags = '-O1', compiler = 'cc 11', cuda = true, nvcc = 'nvcc 12.4',
        nvflags = '-O2 -gencode arch=compute_80,code=sm_80', targets = 'sm_80' }
      if i == 2 then -- a run of the cpu backend on another CPU
        b.implementation.spec.target = { backend = 'cpu', architecture = 'aarch64' }
        b.environment.spec.backend, b.run.metadata.labels.backend = 'cpu', 'cpu'
      end
      lines[i] = assert(json.encode_line(b))
    end
    sub.spit(dir .. '/old.jsonl', table.concat(lines, '\n') .. '\n')
    local new = assert(kb.reader.read(dir .. '/old.jsonl'))
    local cuda = new[1].implementation.spec
    assert.equal('make (nvcc -O2 -gencode arch=compute_80,code=sm_80)', cuda.buildVariants[1].install.command)
    assert.same({ nvcc = 'nvcc 12.4', cc = 'cc 11' }, cuda.buildVariants[1].requirements)
    assert.same({ 'sm_80' }, cuda.support.hardwareArchitectures)
    local cpu = new[2].implementation.spec
    assert.equal('make (cc -O1)', cpu.buildVariants[1].install.command)
    assert.same({ 'aarch64' }, cpu.support.hardwareArchitectures)
    for _, b in ipairs(new) do assert.same({}, kb.verify.check(b)) end
    os.execute('rm -rf ' .. sub.q(dir))
  end)

  it('is rewritten by kluabench migrate into documents that verify, samples beside them', function()
    local dir = sub.tmpdir()
    local r = sub.run { 'migrate', OLD, '-o', dir .. '/new.jsonl' }
    assert.equal(0, r.code, r.err)
    assert.matches('2 bundles (2 of the earlier format migrated)', r.err, 1, true)
    r = sub.run { 'verify', dir .. '/new.jsonl' }
    assert.equal(0, r.code, r.err)
    assert.matches('2 bundles: 2 ok', r.err, 1, true)
    -- the same results, whichever file compare reads
    r = sub.run { 'compare', OLD, dir .. '/new.jsonl', '--between', '0.001' }
    assert.equal(0, r.code, r.err)
    assert.not_matches('UNSURE', r.out)
    -- migrating a migrated file changes nothing but the samples file's name
    r = sub.run { 'migrate', dir .. '/new.jsonl', '-o', dir .. '/again.jsonl' }
    assert.equal(0, r.code, r.err)
    assert.matches('(0 of the earlier format migrated)', r.err, 1, true)
    assert.equal((sub.slurp(dir .. '/new.jsonl'):gsub('new%.samples%.jsonl', 'again.samples.jsonl')),
      sub.slurp(dir .. '/again.jsonl'))
    assert.equal(sub.slurp(dir .. '/new.samples.jsonl'), sub.slurp(dir .. '/again.samples.jsonl'))
    -- never over an input
    r = sub.run { 'migrate', dir .. '/new.jsonl', '-o', dir .. '/new.jsonl' }
    assert.equal(2, r.code)
    assert.matches('is the input ' .. dir .. '/new.jsonl: writing there would overwrite an input', r.err, 1, true)
    os.execute('rm -rf ' .. sub.q(dir))
  end)

  it('names two sessions of one point apart (old names were cut at 100 characters, before their time)', function()
    -- H200 results of the earlier format: 2 points measured twice under one old name, and one once
    local file = ROOT .. '/tests/fixtures/records/old_format_name_clashes.jsonl'
    local bundles = assert(kb.reader.read(file))
    local names, old_names, clashes = {}, {}, 0
    for _, b in ipairs(bundles) do
      local name, old = b.run.metadata.name, b.run.metadata.labels.migrated_name
      assert.is_nil(names[name], name)
      names[name] = true
      if old then
        if old_names[old] then clashes = clashes + 1 end
        old_names[old] = true
      end
    end
    assert.equal(5, #bundles)
    assert.equal(2, clashes) -- the old names that two runs shared, kept as labels
    local r = sub.run { 'compare', file, file }
    assert.equal(0, r.code, r.err)
    assert.not_matches('appears twice', r.out)
    assert.matches('3 point%(s%)', r.out)
  end)

  it("leaves the migrating process's own loaded code out of a script implementation (issue 19)", function()
    -- a provider that is neither a built-in nor a user kernel's: the old run's script, as
    -- implementation.script makes it; the code this process loaded did not run in the old run
    kb.cuda.load('.version 8.0\n.target sm_90\n.address_size 64\n')
    assert.truthy(#kb.loaded_code() > 0)
    local old = old_lines()[1]
    old.implementation.spec.kernel, old.implementation.spec.provider = 'mykernel', 'mine'
    old.workload.spec.kernel = 'mykernel'
    local impl = kb.migrate.bundle(old).implementation
    assert.equal('migrated', impl.spec.callable.path)
    assert.equal('mine', impl.spec.callable.symbol)
    assert.same({}, impl.spec.projectRevision)
    -- the same document with this process's code would differ
    local with = require('kluabench.record.implementation').script { operation_digest =
      impl.spec.operation.specDigest, provider = 'mine', kernel = 'mykernel', script = 'migrated',
      arch = impl.spec.support.hardwareArchitectures[1], dtypes = { 'bf16' } }
    assert.truthy(with.spec.projectRevision.treeDigest)
    with.spec.projectRevision = impl.spec.projectRevision
    assert.same(impl, with)
  end)
end)
