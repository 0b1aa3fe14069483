-- kluabench submission: the layout of kernelindex's submission path
-- (apps/web/src/server/catalog/submissions.ts), each document once, names
-- unique within a kind, and the slugs kernelindex derives from names
-- (kebab(metadata.name), 100 characters) unique too, with every
-- implementation's projectSlug a project's slug.
local kb = require 'kluabench'
local sub = require 'helpers.subprocess'
local json = require 'kluabench.util.json'
local submission = require 'kluabench.record.submission'
local names = require 'kluabench.record.names'
local schema = require 'helpers.schema'
local liger, record = kb.liger, kb.record

local HEADER = table.concat(liger.HEADER, ',') .. '\n'
local function row(provider, hidden)
  return string.format('llama4_rope,%s,backward,speed,ms,H,hidden size,%d,0.1376,0.1357,0.1400,"{""dtype"": '
    .. '""torch.bfloat16"", ""seq_len"": 2048, ""num_q_heads"": 32, ""num_kv_heads"": 8}",NVIDIA H100 80GB HBM3,'
    .. '2025-08-07 21:42:05,0.6.1\n', provider, hidden)
end

local function imported(provider, hidden)
  return assert(liger.row_to_bundle(assert(liger.parse(HEADER .. row(provider, hidden)))[1]))
end

local function copy(t) return json.decode(assert(json.encode_line(t))) end

-- A copy of b whose document member has another spec (so another digest) and the given name, resealed.
local function variant(b, member, name, change)
  local v = copy(b)
  change(v[member].spec)
  v[member].metadata.name = name
  if member == 'operation' then
    v.workload.spec.operationSpecDigest = record.digest(v.operation)
    v.implementation.spec.operation.specDigest = record.digest(v.operation)
  end
  return record.seal(v)
end

-- Every (kind, slug) and (kind, name) of a submission document, counted.
local function counts(doc)
  local by_name, by_slug = {}, {}
  local function note(d)
    local k = d.kind .. ' ' .. d.metadata.name
    by_name[k] = (by_name[k] or 0) + 1
    local s = d.kind .. ' ' .. names.kebab(d.metadata.name)
    by_slug[s] = (by_slug[s] or 0) + 1
  end
  for _, d in ipairs(doc.projects) do note(d) end
  for _, d in ipairs(doc.operations) do note(d) end
  for _, d in ipairs(doc.workloads) do note(d) end
  for _, e in ipairs(doc.implementations) do note(e.manifest) end
  return by_name, by_slug
end

describe('submission.of', function()
  it('has the five parts of the submission layout, each document once', function()
    local a, b = imported('liger', 512), imported('huggingface', 512)
    local doc, n = assert(submission.of { a, b, a })
    assert.same({ projects = 2, operations = 1, workloads = 1, implementations = 2, runs = 2 }, n)
    local keys = {}
    for k in pairs(doc) do keys[#keys + 1] = k end
    table.sort(keys)
    assert.same({ 'implementations', 'operations', 'projects', 'runs', 'workloads' }, keys)
    for _, r in ipairs(doc.runs) do
      local ks = {}
      for k in pairs(r) do ks[#ks + 1] = k end
      table.sort(ks)
      assert.same({ 'environment', 'protocol', 'run' }, ks)
    end
  end)

  it('gives every implementation the slug of a project in the document', function()
    local a = imported('liger', 512)
    local mine = copy(a)
    mine.project = { apiVersion = record.API_VERSION, kind = 'SoftwareProject', metadata = { name = 'my_lab.kernels' },
      spec = { name = 'My lab', kind = 'individual' } }
    mine.implementation.spec.callable.language = 'cuda'
    mine.implementation.metadata.name = 'my_lab.rope'
    record.seal(mine)
    local doc = assert(submission.of { a, mine })
    local projects = {}
    for _, p in ipairs(doc.projects) do projects[names.kebab(p.metadata.name)] = true end
    for _, e in ipairs(doc.implementations) do
      assert.is_true(projects[e.projectSlug], e.projectSlug)
    end
    assert.equal('my-lab-kernels', doc.implementations[2].projectSlug)
  end)

  it('renames a second document whose name is taken, and never changes a digest', function()
    local a = imported('liger', 512)
    local b = variant(a, 'workload', a.workload.metadata.name, function(s) s.axes.seq = 4096 end)
    local doc = assert(submission.of { a, b })
    assert.equal(2, #doc.workloads)
    local first, second = doc.workloads[1].metadata.name, doc.workloads[2].metadata.name
    assert.equal(a.workload.metadata.name, first)
    assert.equal(first .. '-' .. record.digest(b.workload):sub(8, 19), second)
    assert.equal(record.digest(b.workload), record.digest(doc.workloads[2]))
    assert.equal(doc.runs[2].run.spec.workloadDigest, record.digest(doc.workloads[2]))
  end)

  it("keeps kernelindex's slugs unique: names that differ only in '_' or '.', or after 100 characters", function()
    local a = imported('liger', 512)
    local under = variant(a, 'implementation', 'liger_bench_llama4_rope_liger', function(s) s.callable.language = 'cuda' end)
    local long = string.rep('op-', 40) -- 120 characters: kebab keeps 100
    local o1 = variant(a, 'operation', long .. 'one', function(s) s.family = 'rope-one' end)
    local o2 = variant(a, 'operation', long .. 'two', function(s) s.family = 'rope-two' end)
    local doc = assert(submission.of { a, under, o1, o2 })
    assert.equal(2 + 1, #doc.operations) -- Liger's, and the two long ones
    assert.equal(2 + 2, #doc.implementations)
    local by_name, by_slug = counts(doc)
    for k, n in pairs(by_name) do assert.equal(1, n, k) end
    for k, n in pairs(by_slug) do
      if not k:match('^WorkloadCase ') then assert.equal(1, n, k) end
    end
    for _, list in ipairs { doc.operations, doc.projects } do
      for _, d in ipairs(list) do
        if schema.available() then assert.same({}, schema.check(d)) end
        assert.is_true(#names.kebab(d.metadata.name) <= 100)
      end
    end
    -- the renamed ones keep their slug whole, digest digits included
    local renamed = doc.operations[3].metadata.name
    assert.equal(renamed, names.kebab(renamed))
    assert.matches('%-' .. record.digest(o2.operation):sub(8, 19) .. '$', renamed)
  end)

  it('writes an invalid document as it is, and the independent validator names it', function()
    -- documents are checked against kernelindex's schemas by CI's validator (python3-jsonschema),
    -- not by kluabench as it writes
    if not schema.available() then return pending('python3-jsonschema is not installed') end
    local a = imported('liger', 512)
    a.workload.metadata.name = 'Not A Name'
    local doc = assert(submission.of { a })
    local problems = schema.check(doc)
    assert.equal(1, #problems, table.concat(problems, '\n'))
    assert.matches('workloads[0] metadata/name', problems[1], 1, true)
  end)
end)

describe('kluabench submission (the command)', function()
  local dir
  setup(function()
    dir = sub.tmpdir()
    sub.spit(dir .. '/in.csv', HEADER .. row('liger', 512) .. row('huggingface', 2048))
    local r = sub.run { 'import-liger', dir .. '/in.csv', '--jsonl', dir .. '/in.jsonl' }
    assert(r.code == 0, r.err)
  end)
  teardown(function() os.execute('rm -rf ' .. sub.q(dir)) end)

  it('writes each run once, whatever the files repeat', function()
    local r = sub.run { 'submission', dir .. '/in.jsonl', dir .. '/in.jsonl', '-o', dir .. '/sub.json' }
    assert.equal(0, r.code, r.err)
    assert.matches('2 runs, 2 implementations, 2 workloads, 1 operation, 2 projects', r.err, 1, true)
    local doc = assert(json.decode(sub.slurp(dir .. '/sub.json')))
    assert.equal(2, #doc.runs)
  end)

  it('needs -o, and never writes over an input (exit status 2)', function()
    local r = sub.run { 'submission', dir .. '/in.jsonl' }
    assert.equal(2, r.code)
    assert.matches('no %-o OUT given', r.err)
    r = sub.run { 'submission', dir .. '/in.jsonl', '-o', dir .. '/in.jsonl' }
    assert.equal(2, r.code)
    assert.matches('is the input .*: writing there would overwrite an input', r.err)
  end)
end)
