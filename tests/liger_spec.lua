-- Liger-Kernel CSV: RFC 4180 parsing and writing, round trips, and the
-- import of the example's row into the example record.
local kb = require 'kluabench'
local liger, record = kb.liger, kb.record
local csv = require 'kluabench.liger.csv'
local json = require 'kluabench.util.json'
local verify = require 'kluabench.record.verify'

-- The example record (tests/fixtures/kernelindex-record-example.json), byte for byte.
local EXAMPLE = require('helpers.example_record')

local HEADER = 'kernel_name,kernel_provider,kernel_operation_mode,metric_name,metric_unit,x_name,x_label,'
  .. 'x_value,y_value_50,y_value_20,y_value_80,extra_benchmark_config_str,gpu_name,timestamp,liger_version\n'
-- The row of issue 3 that the example record was made from.
local EXAMPLE_ROW = 'llama4_rope,huggingface,backward,speed,ms,H,hidden size,512,0.13760000467300415,'
  .. '0.13574400544166565,0.14009599387645721,"{""dtype"": ""torch.bfloat16"", ""seq_len"": 2048, '
  .. '""num_q_heads"": 32, ""num_kv_heads"": 8}",NVIDIA H100 80GB HBM3,2025-08-07 21:42:05,0.6.1\n'
local MEMORY_ROW = 'llama4_rope,liger,full,memory,MB,T,sequence length,4096,112.5,112.5,112.5,"{""dtype"": '
  .. '""torch.bfloat16"", ""hidden_size"": 8192, ""num_q_heads"": 32, ""num_kv_heads"": 8}",'
  .. 'NVIDIA H100 80GB HBM3,2025-08-07 21:43:10,0.6.1\n'
local OTHER_ROW = 'cross_entropy,liger,forward,speed,ms,V,vocab size,4096,0.5324159860610962,'
  .. '0.5291008353233337,0.53476482629776,"{""B"": 8, ""T"": 2048}",NVIDIA A100-SXM4-80GB,2024-09-03 15:31:39,0.2.1\n'
local UNKNOWN_ROW = 'my_kernel,mine,forward,speed,ms,N,"size, in ""elements""",1024,1.0,0.5,2.5,{},'
  .. 'NVIDIA H200,2026-01-02 03:04:05,\n'

local function without_digests(doc)
  local copy = json.decode(assert(json.encode_line(doc)))
  if copy.spec then
    for _, d in ipairs(record.DIGESTS) do copy.spec[d.field] = nil end
  end
  return copy
end

describe('csv.parse_csv (RFC 4180)', function()
  it('reads quoted fields with commas, "" escapes and line breaks', function()
    local rows = assert(csv.parse_csv('a,"b,c","say ""hi""","two\nlines",\r\nx,,"",z\n'))
    assert.are.same({ { 'a', 'b,c', 'say "hi"', 'two\nlines', '' }, { 'x', '', '', 'z' } }, rows)
  end)

  it('tells the line where each record starts', function()
    local _, lines = csv.parse_csv('h\n"1\n2"\n3\n')
    assert.are.same({ 1, 2, 4 }, lines)
  end)

  it('handles a missing final newline, CRLF and a byte order mark', function()
    assert.are.same({ { 'a', 'b' }, { 'c', 'd' } }, csv.parse_csv('\239\187\191a,b\r\nc,d'))
    assert.are.same({}, csv.parse_csv(''))
  end)

  it('refuses malformed quoting with the line', function()
    local rows, err = csv.parse_csv('a,b\nc,"d\n')
    assert.is_nil(rows)
    assert.are.equal('line 2: unterminated quoted field', err)
    rows, err = csv.parse_csv('a,b"c\n')
    assert.is_nil(rows)
    assert.matches('^line 1: quote inside an unquoted field', err)
    rows, err = csv.parse_csv('"a"b\n')
    assert.is_nil(rows)
    assert.matches('^line 1: text after a closing quote', err)
  end)
end)

describe('csv.csv_field', function()
  it('quotes only what needs it and doubles quotes', function()
    assert.are.equal('plain', csv.csv_field('plain'))
    assert.are.equal('"a,b"', csv.csv_field('a,b'))
    assert.are.equal('"say ""hi"""', csv.csv_field('say "hi"'))
    assert.are.equal('"x\ny"', csv.csv_field('x\ny'))
    assert.are.equal('" lead"', csv.csv_field(' lead'))
    assert.are.equal('', csv.csv_field(nil))
  end)

  it("writes numbers as Python's repr does", function()
    assert.are.equal('0.13760000467300415', csv.csv_field(0.13760000467300415))
    assert.are.equal('512', csv.csv_field(512))
    assert.are.equal('256.0', csv.csv_field(256.0))
    assert.are.equal('1e-05', csv.csv_field(1e-05))
    assert.are.equal('0.0001', csv.csv_field(1e-04))
    assert.are.equal('1e+16', csv.csv_field(1e16))
    assert.are.equal('1234567890123456.0', csv.csv_field(1234567890123456.0))
  end)

  it('round-trips any rows', function()
    local rows = { { 'a', 'b,c', 'q"uote', 'multi\nline', '' }, { ' x ', '"', ',', '\r\n', 'end' } }
    local text = csv.csv_line(rows[1]) .. csv.csv_line(rows[2])
    assert.are.same(rows, csv.parse_csv(text))
  end)
end)

describe('liger.parse', function()
  it('reads rows by column name, with their line', function()
    local rows = assert(liger.parse(HEADER .. EXAMPLE_ROW .. OTHER_ROW))
    assert.are.equal(2, #rows)
    assert.are.equal('llama4_rope', rows[1].kernel_name)
    assert.are.equal('{"dtype": "torch.bfloat16", "seq_len": 2048, "num_q_heads": 32, "num_kv_heads": 8}',
      rows[1].extra_benchmark_config_str)
    assert.are.equal('NVIDIA H100 80GB HBM3', rows[1].gpu_name)
    assert.are.equal(2, rows[1].line)
    assert.are.equal(3, rows[2].line)
  end)

  it('refuses a header without the columns and marks short rows', function()
    local rows, err = liger.parse('kernel_name,kernel_provider\nx,y\n')
    assert.is_nil(rows)
    assert.matches("header lacks column \"kernel_operation_mode\"", err, 1, true)
    rows = assert(liger.parse(HEADER .. 'too,short\n' .. EXAMPLE_ROW))
    assert.are.equal('2 fields, the header has 15', rows[1].error)
    local b, why, berr = liger.row_to_bundle(rows[1])
    assert.is_nil(b)
    assert.are.equal('invalid', why)
    assert.are.equal('2 fields, the header has 15', berr)
    assert.is_table((liger.row_to_bundle(rows[2])))
  end)

  it('parses the config as JSON data, never as code', function()
    assert.are.same({ B = 8, T = 2048 }, liger.parse_config('{"B": 8, "T": 2048}'))
    assert.are.same({}, liger.parse_config(''))
    local v, err = liger.parse_config('os.exit(3)')
    assert.is_nil(v)
    assert.matches('extra_benchmark_config_str', err)
    v, err = liger.parse_config('[1, 2]')
    assert.is_nil(v)
    assert.matches('not a JSON object', err)
  end)
end)

-- The run's whole name, as kernelindex's importer kebabs it before cutting it at 100 characters
-- (which drops the time: its example record's name ends "...seq2048-b").
local FULL_NAME = 'liger-llama4-rope-backward-huggingface-nvidia-h100-80gb-hbm3-hidden512-kv-heads8-q-heads32-'
  .. 'seq2048-bf16-2025-08-07-21-42-05'

describe("liger.row_to_bundle of the example's row", function()
  local example = assert(json.decode(EXAMPLE))
  local bundle = assert(liger.row_to_bundle(assert(liger.parse(HEADER .. EXAMPLE_ROW))[1]))
  -- the example with our run name: kernelindex's importer cuts the name at 100 characters, which
  -- drops the run's time; ours keeps the run's identity (issue 37). Names are metadata: no digest
  -- changes.
  local ours = json.decode(assert(json.encode_line(example)))
  ours.run.metadata.name = bundle.run.metadata.name

  it("names the run so that the name keeps its identity: cut to 100 with the whole name's digest", function()
    assert.are.equal(FULL_NAME:sub(1, 100), example.run.metadata.name) -- kernelindex's: the time cut off
    local tail = '-' .. kb.sha256(FULL_NAME):sub(1, 12)
    assert.are.equal((FULL_NAME:sub(1, 100 - #tail):gsub('%-+$', '')) .. tail, bundle.run.metadata.name)
    assert.is_true(#bundle.run.metadata.name <= 100)
    -- another date of the same point: another name (kernelindex's cut gives both the same)
    local later = assert(liger.row_to_bundle(assert(liger.parse(HEADER
      .. EXAMPLE_ROW:gsub('2025%-08%-07 21:42:05', '2025-09-01 08:00:00')))[1]))
    assert.are_not.equal(bundle.run.metadata.name, later.run.metadata.name)
    -- a name that fits is kebab'd whole, as kernelindex's
    assert.are.equal('liger-rope-forward-liger-nvidia-h100', liger.run_name('liger-rope-forward-liger-NVIDIA H100'))
  end)

  for _, doc in ipairs { 'run', 'protocol', 'environment' } do
    it('equals the example ' .. doc .. ' field for field (digests aside; the run named as ours)', function()
      assert.are.same(without_digests(ours[doc]), without_digests(bundle[doc]))
    end)
  end

  it("writes the run, protocol and environment in the example's key order", function()
    local want = {}
    for _, doc in ipairs { 'run', 'protocol', 'environment' } do
      want[#want + 1] = json.encode_pretty(without_digests(ours[doc]))
      assert.are.equal(want[#want], json.encode_pretty(without_digests(bundle[doc])))
    end
  end)

  it("equals the example record byte for byte after JCS, digests and metadata included (the run's name aside)",
    function()
      for _, doc in ipairs { 'run', 'protocol', 'environment' } do
        assert.are.equal(kb.jcs.encode(ours[doc]), kb.jcs.encode(bundle[doc]))
      end
      assert.are.equal(kb.jcs.encode(example.protocol), kb.jcs.encode(bundle.protocol))
      assert.are.equal(kb.jcs.encode(example.environment), kb.jcs.encode(bundle.environment))
    end)

  it("pins the example record's four digests, recomputed by kernelindex's recipe", function()
    assert.are.same({}, verify.check(bundle))
    local want = {
      protocolDigest = 'sha256:080e6e66e4ec75a131aa0c9121c74b8e8eed64e7b6d621d567c6a28f79548be8',
      workloadDigest = 'sha256:98c5e76b9fa318ddeea51b56d90bc6fb39d72e404e2d01dbb467e67f57ff63e8',
      environmentDigest = 'sha256:2750ae381d6de582f1eb6b9008e0987463d19ede8af127d97d76c5ae09121393',
      implementationDigest = 'sha256:cca024409163839a832c1d39bd301f536494b645171665d65fae5faf2717be48',
    }
    for _, d in ipairs(record.DIGESTS) do
      assert.are.equal(want[d.field], bundle.run.spec[d.field])
      local doc = bundle[d.doc]
      assert.are.equal('sha256:' .. kb.sha256(kb.jcs.encode { apiVersion = doc.apiVersion, kind = doc.kind,
        spec = doc.spec }), bundle.run.spec[d.field])
    end
  end)

  it("has kernelindex's OperationSpec, WorkloadCase, ImplementationRevision and SoftwareProject", function()
    assert.are.equal('WorkloadCase', bundle.workload.kind)
    assert.are.same({ hidden = 512, seq = 2048, q_heads = 32, kv_heads = 8 }, bundle.workload.spec.axes)
    assert.are.same({ shape = { 1, 2048, 32, 16 }, dtype = 'bf16' }, bundle.workload.spec.tensors.q)
    assert.are.same({ comparator = 'not_asserted' }, bundle.workload.spec.correctness)
    assert.are.equal('OperationSpec', bundle.operation.kind)
    assert.are.equal('liger-llama4-rope', bundle.operation.metadata.name)
    assert.are.same({ role = 'derived', type = 'integer', expression = 'hidden // q_heads' },
      bundle.operation.spec.axes.head_dim)
    assert.are.equal(record.digest(bundle.operation), bundle.workload.spec.operationSpecDigest)
    assert.are.equal('ImplementationRevision', bundle.implementation.kind)
    assert.are.same({ language = 'python' }, bundle.implementation.spec.callable)
    assert.are.same({ declared = 'Apache-2.0' }, bundle.implementation.spec.licensing)
    assert.are.equal('liger-bench-llama4-rope-huggingface', bundle.implementation.metadata.name)
    assert.are.equal('SoftwareProject', bundle.project.kind)
    assert.are.equal('transformers', bundle.project.metadata.name)
  end)

  it('has the workload digest of our own run of the same point', function()
    local ours = record.workload { kernel = 'llama4_rope',
      parameters = { hidden = 512, seq = 2048, q_heads = 32, kv_heads = 8 }, dtype = 'bf16' }
    assert.are.equal(record.digest(ours), bundle.run.spec.workloadDigest)
  end)
end)

describe('liger.row_to_bundle of other rows', function()
  it('skips memory rows as kernelindex does, and with keep makes runs of our own in MB', function()
    local row = assert(liger.parse(HEADER .. MEMORY_ROW))[1]
    local none, why = liger.row_to_bundle(row)
    assert.is_nil(none)
    assert.are.equal('memory_row', why)
    local b = assert(liger.row_to_bundle(row, { keep = true }))
    local s = b.run.spec
    assert.is_nil(s.timing)
    assert.are.equal(3, #s.measurements)
    for _, m in ipairs(s.measurements) do
      assert.are.equal('mb', m.unit)
      assert.are.equal('memory', m.metric)
      assert.are.equal(112.5, m.value)
    end
    assert.are.same({ 'median', 'p20', 'p80' },
      { s.measurements[1].statistic, s.measurements[2].statistic, s.measurements[3].statistic })
    assert.matches('/memory$', s.sourceNative.externalId)
    assert.are.equal('llama4_rope/full/memory', s.sourceNative.benchmark)
    assert.are.same({ hidden = 8192, seq = 4096, q_heads = 32, kv_heads = 8 }, b.workload.spec.axes)
    assert.matches('memory', b.run.metadata.name)
    assert.is_string(b.run.metadata.labels.not_reproduced)
    assert.are.equal('torch_cuda_max_memory_allocated', b.protocol.spec.measurement.timer)
    assert.are.same({}, verify.check(b))
  end)

  it('skips kernels it does not reproduce, with the reason', function()
    local b, why, msg = liger.row_to_bundle(assert(liger.parse(HEADER .. OTHER_ROW))[1])
    assert.is_nil(b)
    assert.are.equal('not_reproduced', why)
    assert.matches('cross_entropy', msg)
    b, why = liger.row_to_bundle(assert(liger.parse(HEADER .. UNKNOWN_ROW))[1])
    assert.is_nil(b)
    assert.are.equal('uncurated_kernel', why)
    -- kernels of the importer's later curation (kernels-extra.ts, kernels-losses.ts) are curated too
    for _, name in ipairs { 'fused_moe', 'geglu', 'group_norm', 'kl_div', 'kto_loss', 'relu_squared', 'sparsemax',
      'tvd', 'fused_linear_jsd', 'fused_linear_cross_entropy', 'fused_neighborhood_attention', 'megatron_cross_entropy' } do
      b, why = liger.row_to_bundle(assert(liger.parse(HEADER .. OTHER_ROW:gsub('^cross_entropy', name)))[1])
      assert.is_nil(b)
      assert.are.equal('not_reproduced', why, name)
    end
  end)

  it('skips GPUs kernelindex does not know, and with keep names them itself', function()
    local row = assert(liger.parse(HEADER .. EXAMPLE_ROW:gsub('NVIDIA H100 80GB HBM3', 'NVIDIA H200')))[1]
    local b, why = liger.row_to_bundle(row)
    assert.is_nil(b)
    assert.are.equal('unknown_gpu', why)
    b = assert(liger.row_to_bundle(row, { keep = true }))
    assert.are.equal('NVIDIA H200', b.environment.spec.hardware.product)
    assert.are.equal('sm_90', b.environment.spec.hardware.architecture)
    assert.is_string(b.run.metadata.labels.not_reproduced)
    assert.are.same({}, verify.check(b))
  end)

  it('imports a row whose p20 is above its p80 as it is, and import-liger warns, naming the line (issue 24)', function()
    local swapped = EXAMPLE_ROW:gsub('0%.13574400544166565,0%.14009599387645721',
      '0.14009599387645721,0.13574400544166565', 1)
    assert.are_not.equal(EXAMPLE_ROW, swapped)
    local row = assert(liger.parse(HEADER .. swapped))[1]
    assert.are.equal("y_value_20 ('0.14009599387645721') is above y_value_80 ('0.13574400544166565'): the quantiles "
      .. "look swapped; imported as they are, as kernelindex's importer does", liger.row_warning(row))
    assert.is_nil(liger.row_warning(assert(liger.parse(HEADER .. EXAMPLE_ROW))[1]))
    assert.is_nil(liger.row_warning({ y_value_20 = '1', y_value_80 = '1' }))
    local b = assert(liger.row_to_bundle(row))
    assert.are.same({}, verify.check(b))
    local sub = require 'helpers.subprocess'
    local dir = sub.tmpdir()
    -- another time, so that it is another run (a repeated externalId is skipped as a duplicate)
    local later = swapped:gsub('2025%-08%-07 21:42:05', '2025-08-07 21:43:05', 1)
    assert.are_not.equal(swapped, later)
    sub.spit(dir .. '/in.csv', HEADER .. EXAMPLE_ROW .. later)
    local r = sub.run { 'import-liger', dir .. '/in.csv', '--jsonl', dir .. '/out.jsonl' }
    assert.are.equal(0, r.code, r.err)
    assert.matches('kluabench import-liger: ' .. dir .. '/in.csv:3: warning: y_value_20 (', r.err, 1, true)
    assert.is_nil(r.err:find('in.csv:2:', 1, true), r.err) -- the row in order is not named
    assert.matches('2 bundles written', r.err, 1, true)
    os.execute('rm -rf ' .. sub.q(dir))
  end)

  it("import-liger --out: another date of the same point is a file of its own, and another run's file is never "
    .. 'written over (issue 37)', function()
    local sub = require 'helpers.subprocess'
    local util = require 'helpers.util'
    local dir = sub.tmpdir()
    local out = dir .. '/out'
    local later = EXAMPLE_ROW:gsub('2025%-08%-07 21:42:05', '2025-09-01 08:00:00', 1)
    sub.spit(dir .. '/a.csv', HEADER .. EXAMPLE_ROW)
    sub.spit(dir .. '/b.csv', HEADER .. later)
    local function files()
      local list = {}
      for name in util.run('ls ' .. util.q(out)):gmatch('[^\n]+') do list[#list + 1] = name end
      return list
    end
    local function run_of(name) return assert(json.decode(assert(sub.slurp(out .. '/' .. name)))).run end
    for i, csv_file in ipairs { 'a.csv', 'b.csv', 'a.csv' } do -- the same run again replaces its own file
      -- -o is --out, as everywhere an output is written
      local r = sub.run { 'import-liger', dir .. '/' .. csv_file, i == 2 and '-o' or '--out', out }
      assert.are.equal(0, r.code, r.err)
    end
    local list = files()
    assert.are.equal(2, #list, table.concat(list, ' '))
    local a, b = run_of(list[1]), run_of(list[2])
    assert.are_not.equal(a.spec.sourceNative.externalId, b.spec.sourceNative.externalId)
    for _, name in ipairs(list) do
      assert.are.equal(run_of(name).metadata.name .. '.json', name)
      local r = sub.run { 'verify', out .. '/' .. name }
      assert.are.equal(0, r.code, r.err)
    end
    -- a file of another run where a run's file would go: left as it is, the run goes beside it
    local a_name = assert(liger.row_to_bundle(assert(liger.parse(HEADER .. EXAMPLE_ROW))[1])).run.metadata.name
    local b_name = a_name == list[1]:sub(1, -6) and list[2] or list[1]
    local other = assert(sub.slurp(out .. '/' .. b_name))
    sub.spit(out .. '/' .. a_name .. '.json', other)
    local r = sub.run { 'import-liger', dir .. '/a.csv', '--out', out }
    assert.are.equal(0, r.code, r.err)
    assert.are.equal(other, sub.slurp(out .. '/' .. a_name .. '.json'))
    assert.are.equal(a_name, run_of(a_name .. '-2.json').metadata.name)
    os.execute('rm -rf ' .. sub.q(dir))
  end)

  it('reports bad values instead of guessing', function()
    local bad = EXAMPLE_ROW:gsub('0%.13760000467300415', 'fast')
    local b, why, err = liger.row_to_bundle(assert(liger.parse(HEADER .. bad))[1])
    assert.is_nil(b)
    assert.are.equal('invalid', why)
    assert.are.equal("y_value_50 is not a decimal number ('fast')", err)
    bad = EXAMPLE_ROW:gsub('2025%-08%-07 21:42:05', 'last week')
    b, why, err = liger.row_to_bundle(assert(liger.parse(HEADER .. bad))[1])
    assert.is_nil(b)
    assert.matches('^timestamp: ', err)
  end)
end)

-- Liger-Kernel 0.8's harness spells the head counts as transformers' configs do
-- (num_attention_heads, num_key_value_heads) and adds the batch, bsz (issue 38).
describe("a CSV of Liger-Kernel 0.8.2's own harness", function()
  local sub = require 'helpers.subprocess'
  local FIXTURE = sub.root() .. '/tests/fixtures/liger/llama4_rope-0.8.2.csv'
  local NEW_CONFIG = '"{""hidden_size"": 4096, ""num_attention_heads"": 32, ""num_key_value_heads"": 8, ""dtype"": '
    .. '""torch.bfloat16"", ""bsz"": 1, ""seq_len"": 8192}"'
  local OLD_CONFIG = '"{""dtype"": ""torch.bfloat16"", ""hidden_size"": 4096, ""num_q_heads"": 32, ""num_kv_heads"": 8}"'

  it('imports every speed and memory row, on the workloads the same axes give in either spelling', function()
    local rows = assert(liger.read(FIXTURE))
    assert.are.equal(32, #rows)
    local speed, memory = 0, 0
    for _, row in ipairs(rows) do
      local b, why, msg = liger.row_to_bundle(row, { memory = true }) -- as import-liger does
      assert.is_table(b, tostring(why) .. ': ' .. tostring(msg))
      assert.are.same({}, verify.check(b))
      local x = math.tointeger(tonumber(row.x_value))
      assert.are.same({ hidden = 4096, seq = x, q_heads = 32, kv_heads = 8 }, b.workload.spec.axes)
      -- our own run of the point lands on the same workload
      assert.are.equal(record.digest(record.workload { kernel = 'llama4_rope', dtype = 'bf16',
        parameters = { hidden = 4096, seq = x, q_heads = 32, kv_heads = 8 } }), b.run.spec.workloadDigest)
      if row.metric_name == 'speed' then speed = speed + 1 else memory = memory + 1 end
    end
    assert.are.same({ 24, 8 }, { speed, memory })
    -- the same row in the 2025 spelling: the same documents, digests and all, but the run's
    -- labels (the Liger version) and its time
    local text = assert(sub.slurp(FIXTURE))
    local line = text:match('\n(llama4_rope,liger,backward,speed[^\r\n]*)')
    local old = line:gsub(NEW_CONFIG:gsub('%p', '%%%0'), OLD_CONFIG)
    assert.are_not.equal(line, old)
    local a = assert(liger.row_to_bundle(assert(liger.parse(HEADER .. line .. '\n'))[1]))
    local b = assert(liger.row_to_bundle(assert(liger.parse(HEADER .. old .. '\n'))[1]))
    for _, doc in ipairs { 'workload', 'implementation', 'protocol', 'environment', 'operation' } do
      assert.are.equal(kb.jcs.encode(b[doc]), kb.jcs.encode(a[doc]), doc)
    end
    assert.are.equal(b.run.spec.workloadDigest, a.run.spec.workloadDigest)
  end)

  it('import-liger writes a bundle for each of its 32 rows, and verify passes them all', function()
    local dir = sub.tmpdir()
    local r = sub.run { 'import-liger', FIXTURE, '--jsonl', dir .. '/out.jsonl' }
    assert.are.equal(0, r.code, r.err)
    assert.are.equal('kluabench import-liger: 32 bundles written to ' .. dir .. '/out.jsonl\n', r.err)
    r = sub.run { 'verify', dir .. '/out.jsonl' }
    assert.are.equal(0, r.code, r.err)
    assert.matches('32 bundles: 32 ok', r.err, 1, true)
    os.execute('rm -rf ' .. sub.q(dir))
  end)

  it('skips, naming them, a batch other than 1, spellings that disagree, and a model-config sweep', function()
    local line = assert(sub.slurp(FIXTURE)):match('\n(llama4_rope,liger,forward,speed[^\r\n]*)')
    for _, case in ipairs {
      -- kernelindex's RoPE workloads are of batch 1: a row of another batch lands on none of them
      { line:gsub('""bsz"": 1', '""bsz"": 4'), 'does not bind the axes of llama4_rope' },
      { line:gsub('""num_key_value_heads"": 8', '""num_key_value_heads"": 8, ""num_kv_heads"": 4'),
        'does not bind the axes of llama4_rope' },
      { line:gsub(',T,sequence length,1024,', ',model_config,model configuration,llama_3_8b,'),
        "x 'model_config' = 'llama_3_8b' names a model of Liger's registry" },
    } do
      local b, why, msg = liger.row_to_bundle(assert(liger.parse(HEADER .. case[1] .. '\n'))[1])
      assert.is_nil(b)
      assert.are.equal('unknown_config', why)
      assert.matches(case[2], msg, 1, true)
    end
    local dir = sub.tmpdir()
    sub.spit(dir .. '/in.csv', HEADER .. line:gsub('""bsz"": 1', '""bsz"": 4') .. '\n' .. line .. '\n')
    local r = sub.run { 'import-liger', dir .. '/in.csv', '--jsonl', dir .. '/out.jsonl' }
    assert.are.equal(0, r.code, r.err)
    assert.matches('in.csv:2: skipped: x \'T\' = \'1024\' with config', r.err, 1, true)
    assert.matches('1 bundle written', r.err, 1, true)
    os.execute('rm -rf ' .. sub.q(dir))
  end)
end)

describe('Liger CSV round trip', function()
  local T_ROW = EXAMPLE_ROW:gsub(',H,hidden size,512,', ',T,sequence length,4096,')
    :gsub('""seq_len"": 2048', '""hidden_size"": 8192')
  it('CSV -> bundles -> CSV gives the same text', function()
    local text = HEADER .. EXAMPLE_ROW .. T_ROW
    local bundles = {}
    for i, row in ipairs(assert(liger.parse(text))) do bundles[i] = assert(liger.row_to_bundle(row)) end
    assert.are.equal(text, (liger.csv_of_bundles(bundles)))
  end)

  it('bundles -> JSON Lines -> bundles -> CSV gives the same text', function()
    local text = HEADER .. EXAMPLE_ROW .. T_ROW
    local bundles = {}
    for i, row in ipairs(assert(liger.parse(text))) do
      local line = assert(json.encode_line(assert(liger.row_to_bundle(row))))
      bundles[i] = assert(json.decode(line))
    end
    assert.are.equal(text, (liger.csv_of_bundles(bundles)))
  end)

  it("writes Liger's config string for bundles of ours", function()
    local b = record.from_result {
      kernel = 'llama4_rope', mode = 'forward', provider = 'fused',
      parameters = { hidden = 2048, seq = 2048, q_heads = 32, kv_heads = 8 }, dtype = 'bf16',
      result = { samples = { 0.01, 0.02, 0.03 } }, protocol = kb.do_bench.do_bench_protocol {},
      environment = kb.env.capture { info = { name = 'NVIDIA H200', arch = 'sm_90' }, backend = 'cuda', kb = kb,
        os = { kernel = 'Linux' }, driver_release = false },
      time = kb.names.parse_time('2026-12-02 10:00:00'),
    }
    local row = assert(liger.bundle_to_row(b))
    assert.are.equal('H', row.x_name)
    assert.are.equal(2048, row.x_value)
    assert.are.equal('{"dtype": "torch.bfloat16", "seq_len": 2048, "num_q_heads": 32, "num_kv_heads": 8}',
      row.extra_benchmark_config_str)
    assert.are.equal('NVIDIA H200', row.gpu_name)
    assert.are.equal('2026-12-02 10:00:00', row.timestamp)
    assert.are.equal(0.02, row.y_value_50)
    row = assert(liger.bundle_to_row(b, { x = 'seq' }))
    assert.are.equal('T', row.x_name)
    assert.are.equal('sequence length', row.x_label)
    assert.are.equal('{"dtype": "torch.bfloat16", "hidden_size": 2048, "num_q_heads": 32, "num_kv_heads": 8}',
      row.extra_benchmark_config_str)
  end)
end)
