-- Record bundles: the shape of tests/fixtures/kernelindex-record-example.json,
-- the digest recipe recomputed independently, key order, names.
local kb = require 'kluabench'
local record, env, bench, names = kb.record, kb.env, kb.do_bench, kb.names
local json = require 'kluabench.util.json'

-- The example record (tests/fixtures/kernelindex-record-example.json), byte for byte.
local EXAMPLE = require('helpers.example_record')
local verify = require 'kluabench.record.verify'

-- A device whose clock moves only when fn or flush_l2 runs (see bench_spec).
local function fake_device(fn_ms, flush_ms)
  local dev = { now = 0, timer = 'cuda_events', backend = 'cuda' }
  function dev.event()
    return { record = function(self) self.t = dev.now end }
  end
  function dev.elapsed_ms(a, b) return b.t - a.t end
  function dev.synchronize() end
  function dev.flush_l2()
    dev.now = dev.now + flush_ms
    return 125829120
  end
  local calls = 0
  local function fn()
    calls = calls + 1
    dev.now = dev.now + fn_ms + (calls % 3) * 0.001
  end
  return dev, fn
end

local H100 = { name = 'NVIDIA H100 80GB HBM3', arch = 'sm_90', sm_count = 132, l2_bytes = 52428800,
  memory_bytes = 85520809984, driver_version = 12080, runtime_version = 12080 }

-- A bundle of ours for the example's point, as on an H100.
local function our_bundle(fn_ms, time)
  local protocol = bench.do_bench_protocol { rep_ms = 40, warmup_ms = 5 }
  local dev, fn = fake_device(fn_ms or 0.125, 0.0625)
  local result = protocol:run(fn, dev)
  local environment = env.capture { info = H100, backend = 'cuda', kb = kb, driver_release = '570.86.15',
    os = { kernel = 'Linux 6.8.0', distribution = 'Ubuntu 24.04 LTS' } }
  return record.from_result {
    kernel = 'llama4_rope', mode = 'backward', provider = 'fused',
    parameters = { hidden = 512, seq = 2048, q_heads = 32, kv_heads = 8 }, dtype = 'bf16',
    result = result, protocol = protocol, environment = environment,
    time = time or names.parse_time('2026-12-02T10:11:12.345Z'),
    timed = 'the backward pass', check = { passed = true, maxAbsDiff = 0, relL2 = 0 },
    execution = { seeds = { q = 1, k = 2, dq = 3, dk = 4 } },
  }
end

-- Every key path of `want` exists in `got` with the same JSON type (and an
-- integer where want has one); list elements of got are matched against
-- want's first element. Paths in `free` are objects whose keys are free.
local function same_shape(want, got, path, free, problems)
  local tw, tg = type(want), type(got)
  if tw == 'table' then
    if tg ~= 'table' then
      problems[#problems + 1] = path .. ': expected ' .. json.table_kind(want) .. ', got ' .. tg
      return
    end
    local kind = json.table_kind(want)
    if kind ~= json.table_kind(got) and next(got) ~= nil then
      problems[#problems + 1] = path .. ': expected ' .. kind .. ', got ' .. json.table_kind(got)
      return
    end
    if free[path] then return end
    if kind == 'array' then
      if #want > 0 and #got == 0 then problems[#problems + 1] = path .. ': empty list' end
      for i = 1, #got do same_shape(want[1], got[i], path .. '[' .. i .. ']', free, problems) end
    else
      for k, v in pairs(want) do
        if got[k] == nil then
          problems[#problems + 1] = path .. '.' .. k .. ': missing'
        else
          same_shape(v, got[k], path .. '.' .. k, free, problems)
        end
      end
    end
  elseif tw ~= tg then
    problems[#problems + 1] = string.format('%s: expected %s, got %s', path, tw, tg)
  elseif math.type(want) == 'integer' and math.type(got) ~= 'integer' then
    problems[#problems + 1] = path .. ': expected an integer, got ' .. tostring(got)
  end
  return problems
end

-- Canonical JSON (RFC 8785) written here from the RFC's rules, for the
-- values records hold (ASCII keys, plain-notation numbers), to check the
-- engine's kb.jcs against something that is not the engine.
local function canonical(v)
  local t = type(v)
  if t == 'string' then
    return '"' .. v:gsub('[%c"\\]', function(c)
      local named = { ['"'] = '\\"', ['\\'] = '\\\\', ['\b'] = '\\b', ['\f'] = '\\f', ['\n'] = '\\n',
        ['\r'] = '\\r', ['\t'] = '\\t' }
      return named[c] or string.format('\\u%04x', c:byte())
    end) .. '"'
  elseif t == 'number' then
    if math.type(v) == 'integer' or (v == math.floor(v) and math.abs(v) < 2 ^ 53) then
      return string.format('%d', math.tointeger(v))
    end
    for p = 1, 17 do
      local s = string.format('%.' .. p .. 'g', v)
      if tonumber(s) == v then
        assert(not s:find('e'), 'test canonicalizer: exponent form not supported: ' .. s)
        return s
      end
    end
  elseif t == 'boolean' then
    return tostring(v)
  elseif t == 'table' then
    if json.table_kind(v) == 'array' then
      local parts = {}
      for i, x in ipairs(v) do parts[i] = canonical(x) end
      return '[' .. table.concat(parts, ',') .. ']'
    end
    local keys = {}
    for k in pairs(v) do keys[#keys + 1] = k end
    table.sort(keys) -- byte order = UTF-16 order for ASCII keys
    local parts = {}
    for i, k in ipairs(keys) do parts[i] = canonical(k) .. ':' .. canonical(v[k]) end
    return '{' .. table.concat(parts, ',') .. '}'
  end
  error('test canonicalizer: cannot write ' .. t)
end

-- SHA-256 by the sha256sum program (nil when it is not installed).
local function sha256sum(text)
  local path = os.tmpname()
  local f = assert(io.open(path, 'wb'))
  f:write(text)
  f:close()
  local p = io.popen("sha256sum '" .. path .. "' 2>/dev/null")
  local out = p and p:read('a') or ''
  if p then p:close() end
  os.remove(path)
  return out:match('^(%x+)')
end

describe('record bundle shape', function()
  local example = assert(json.decode(EXAMPLE))
  local schema = require 'helpers.schema'

  it('has every key path and value type of the example', function()
    local ours = our_bundle()
    local problems = {}
    local free = {
      ['.run.metadata.labels'] = true, -- labels are free-form: ours carry kluabench_version, backend
      ['.run.spec.measurements'] = true, -- ours hold GB/s and the session too (checked below)
      ['.environment.spec.software'] = true, -- Liger's CSV records no software; we do
    }
    for _, doc in ipairs { 'run', 'protocol', 'environment' } do
      same_shape(example[doc], ours[doc], '.' .. doc, free, problems)
    end
    -- (protocol.spec.harness.repository is the project's URL; none is published yet)
    for i = #problems, 1, -1 do
      if problems[i] == '.protocol.spec.harness.repository: missing' then
        table.remove(problems, i)
      end
    end
    assert.are.same({}, problems)
    for _, m in ipairs(ours.run.spec.measurements) do
      if m.unit == 'ns' then assert.are.equal('integer', math.type(m.value)) end
    end
  end)

  it('has the six documents with their kernelindex kinds and apiVersion, each valid against its schema', function()
    local b = our_bundle()
    local kinds = { run = 'BenchmarkRun', protocol = 'BenchmarkProtocol', environment = 'ExecutionEnvironment',
      workload = 'WorkloadCase', implementation = 'ImplementationRevision', operation = 'OperationSpec' }
    for doc, kind in pairs(kinds) do
      assert.are.equal(kind, b[doc].kind)
      assert.are.equal('kernelindex.dev/v1alpha1', b[doc].apiVersion)
      assert.are.equal('table', type(b[doc].spec))
      assert.are.equal('string', type(b[doc].metadata.name))
      assert.is_true(#b[doc].metadata.name <= 200)
      assert.is_nil(b[doc].metadata.name:find('[^a-z0-9._-]'))
    end
    if schema.available() then assert.are.same({}, schema.check(b)) end
    assert.are.same({}, verify.check(b))
  end)

  it('stores times as ISO-8601 UTC with milliseconds and ns as integers', function()
    local b = our_bundle()
    local s = b.run.spec
    assert.are.equal('2026-12-02T10:11:12.345Z', s.observedAt)
    assert.are.equal('integer', math.type(s.timing.latencyNs.median))
    assert.are.equal(record.round(s.sourceNative.metrics.ms_50 * 1e6), s.timing.latencyNs.median)
    assert.are.equal('p20', s.measurements[1].statistic)
    assert.are.equal('p80', s.measurements[2].statistic)
    assert.are.equal(record.round(s.sourceNative.metrics.ms_20 * 1e6), s.measurements[1].value)
    assert.are.equal(record.round(s.sourceNative.metrics.ms_80 * 1e6), s.measurements[2].value)
    for _, k in ipairs { 'median', 'mean', 'minimum', 'maximum' } do
      assert.are.equal('integer', math.type(s.timing.latencyNs[k]))
    end
    assert.are.equal('integer', math.type(s.timing.latencyNs.confidence95[1]))
    assert.is_true(s.timing.latencyNs.confidence95[1] <= s.timing.latencyNs.median)
    assert.is_true(s.timing.latencyNs.confidence95[2] >= s.timing.latencyNs.median)
    assert.are.equal('llama4_rope/backward', s.sourceNative.benchmark)
    assert.are.equal(
      'llama4_rope/backward/fused/nvidia-h100-80gb-hbm3/hidden512-kv_heads8-q_heads32-seq2048-bf16/2026-12-02-10-11-12-345',
      s.sourceNative.externalId)
  end)

  it('keeps the raw samples and what the protocol derived in the evidence entry the run names', function()
    local evidence = require 'kluabench.record.evidence'
    local b = our_bundle()
    local e = assert(evidence.of(b))
    local s = b.run.spec
    assert.are.equal('ns', e.unit)
    assert.are.equal(e.execution.nRepeat, #e.samples)
    assert.are.equal(s.timing.samples, #e.samples)
    assert.are.equal('integer', math.type(e.samples[1]))
    assert.is_true(e.execution.estimateMs > 0.1875) -- fn 0.125 + flush 0.0625, plus jitter
    assert.are.equal(math.max(1, math.floor(40 / e.execution.estimateMs)), e.execution.nRepeat)
    assert.are.equal(math.max(1, math.floor(5 / e.execution.estimateMs)), e.execution.nWarmup)
    assert.are.equal(125829120, e.execution.flushBytes)
    assert.are.same({ q = 1, k = 2, dq = 3, dk = 4 }, e.execution.seeds)
    assert.matches('"repMs":40', b.protocol.spec.comparability.notes)
    assert.are.same({ passed = true, maxAbsDiff = 0, relL2 = 0 }, e.check)
    assert.are.same({ comparator = 'max_abs_rel_l2', maximumAbsoluteError = 0 }, s.correctness)
    -- written beside the records, the run names the entry by uri and digest
    local path = os.tmpname() .. '.jsonl'
    assert(require('kluabench.record.writer').append(path, b))
    local ref = b.run.spec.evidence.rawSamples
    assert.are.equal(path:match('([^/]+)%.jsonl$') .. '.samples.jsonl#L1', ref.uri)
    local f = assert(io.open(evidence.samples_path(path)))
    local line = f:read('l')
    f:close()
    assert.are.equal('sha256:' .. kb.sha256(line), ref.digest)
    assert.are.equal(kb.jcs.encode(e), line)
    os.remove(path)
    os.remove(evidence.samples_path(path))
  end)

  it('names every run uniquely, within the schema\'s 200 characters', function()
    local b = our_bundle()
    assert.are.equal('kluabench-llama4-rope-backward-fused-nvidia-h100-80gb-hbm3-hidden512-kv-heads8-q-heads32-seq2048-bf16'
      .. '-2026-12-02-10-11-12-345', b.run.metadata.name)
    local later = our_bundle(nil, names.parse_time('2026-12-02T10:11:12.346Z'))
    assert.are_not.equal(b.run.metadata.name, later.run.metadata.name)
    local long = record.run_name('kluabench', string.rep('x', 190), 'seq1024')
    local longer = record.run_name('kluabench', string.rep('x', 190), 'seq16384')
    assert.is_true(#long <= 200 and #longer <= 200)
    assert.are_not.equal(long, longer)
    assert.are.equal('Llama 4 rotary position embedding · fused · backward', b.run.metadata.title)
    assert.are.equal('NVIDIA H100', b.environment.spec.hardware.product)
    assert.are.equal('80GB HBM3', b.environment.spec.hardware.formFactor)
    assert.are.equal('sm_90', b.environment.spec.hardware.architecture)
    assert.are.equal('12.8', b.environment.spec.software.cudaToolkit)
    assert.are.equal(kb.version, b.run.metadata.labels.kluabench_version)
    assert.are.same({ hidden = 512, seq = 2048, q_heads = 32, kv_heads = 8 }, b.workload.spec.axes)
    assert.are.equal('bf16', b.workload.spec.tensors.q.dtype)
    assert.are.equal('kb_rope_fused_cuda', b.implementation.spec.callable.symbol)
    assert.are.equal(kb.version, b.implementation.spec.projectRevision.version)
  end)

  it('identifies the built-in kernel by the digest of its sources, entry point and build', function()
    local b = our_bundle()
    local spec = b.implementation.spec
    local sources = assert(record.kernel_sources('llama4_rope'))
    assert.are.equal('sha256:' .. kb.sha256(kb.jcs.encode(sources)), spec.projectRevision.treeDigest)
    for path, digest in pairs(sources) do
      assert.matches('^kernels/', path)
      assert.are.equal(71, #digest)
    end
    assert.are.equal(record.digest(b.operation), spec.operation.specDigest)
    assert.are.equal('kernels/rope.cu', spec.callable.path)
    assert.matches('^make', spec.buildVariants[1].install.command)
    -- another provider, or the cpu twin, is another implementation
    local op = record.digest(b.operation)
    local ref = record.builtin_implementation { kernel = 'llama4_rope', provider = 'reference', backend = 'cuda',
      operation_digest = op }
    local cpu = record.builtin_implementation { kernel = 'llama4_rope', provider = 'fused', backend = 'cpu',
      operation_digest = op }
    assert.are_not.equal(record.digest(b.implementation), record.digest(ref))
    assert.are_not.equal(record.digest(b.implementation), record.digest(cpu))
  end)

  it("names the layouts a built-in kernel reads (support.layouts, in the digest, sorted), when it has any", function()
    local implementation = require 'kluabench.record.implementation'
    local base = { operation_digest = 'sha256:' .. string.rep('0', 64), provider = 'fused', kernel = 'rope',
      backend = 'cpu', symbol = 'kb_rope_fused_cpu', path = 'kernels/rope_cpu.c' }
    local plain = implementation.builtin(base)
    assert.is_nil(plain.spec.support.layouts)
    base.layouts = { 'q [z]', 'cos [a]' }
    local named = implementation.builtin(base)
    assert.same({ 'cos [a]', 'q [z]' }, named.spec.support.layouts)
    assert.are_not.equal(record.digest(plain), record.digest(named))
    base.layouts = 'q'
    assert.has_error(function() implementation.builtin(base) end,
      "bad argument #1 to 'implementation.builtin' (field 'layouts' must be a list of strings)")
  end)
end)

describe('a run that measured no time is never passed (issues 36, 37)', function()
  local bundles = require 'helpers.bundles'
  local evidence = require 'kluabench.record.evidence'

  it('zero-length samples (a median of 0 ms) make a runtime_error with the reason, never passed', function()
    for _, samples in ipairs { { 0, 0, 0 }, { 0 }, { 0, 0, 1e-9 } } do
      local b = bundles.make { samples = samples }
      assert.equal('runtime_error', b.run.spec.status, table.concat(samples, ','))
      local reasons = evidence.of(b).reasons
      assert.matches('no positive time, so nothing was measured', reasons[#reasons], 1, true)
      assert.same({}, verify.check(b)) -- a record that verifies, saying what it is
    end
    -- a run that did measure a time stays passed; a status given by the caller is kept
    assert.equal('passed', bundles.make({ samples = { 0.001, 0.002 } }).run.spec.status)
    assert.equal('incorrect_numerical', bundles.make({ samples = { 0, 0 }, status = 'incorrect_numerical' }).run.spec.status)
  end)
end)

describe('digest recipe: "sha256:" .. hex(SHA-256(JCS({apiVersion, kind, spec})))', function()
  it('is recomputed independently for all six digests', function()
    local b = our_bundle()
    local function body(doc) return { apiVersion = doc.apiVersion, kind = doc.kind, spec = doc.spec } end
    local links = {}
    for _, d in ipairs(record.DIGESTS) do links[#links + 1] = { b[d.doc], b.run.spec[d.field] } end
    links[#links + 1] = { b.operation, b.workload.spec.operationSpecDigest }
    links[#links + 1] = { b.operation, b.implementation.spec.operation.specDigest }
    for _, l in ipairs(links) do
      local text = canonical(body(l[1]))
      -- our canonical text and the engine's agree ...
      assert.are.equal(text, kb.jcs.encode(body(l[1])))
      -- ... the file's JSON canonicalizes to it too ...
      assert.are.equal(text, kb.jcs.encode(assert(json.decode(assert(json.encode_pretty(body(l[1])))))))
      -- ... and its SHA-256 is the digest recorded
      assert.are.equal('sha256:' .. kb.sha256(text), l[2])
      local other = sha256sum(text)
      if other then assert.are.equal('sha256:' .. other, l[2]) end
    end
  end)

  it('leaves metadata out', function()
    local b = our_bundle()
    local before = record.digest(b.workload)
    b.workload.metadata.title = 'another title'
    assert.are.equal(before, record.digest(b.workload))
  end)

  it('gives equal digests for equal inputs, whatever the samples and time', function()
    local a = our_bundle(0.125, names.parse_time('2026-01-01T00:00:00.000Z'))
    local b = our_bundle(0.25, names.parse_time('2026-06-01T12:00:00.500Z'))
    for _, d in ipairs(record.DIGESTS) do
      assert.are.equal(a.run.spec[d.field], b.run.spec[d.field])
    end
    assert.are_not.equal(a.run.spec.timing.latencyNs.median, b.run.spec.timing.latencyNs.median)
  end)

  it('changes a digest when its document changes', function()
    local b = our_bundle()
    local before = b.run.spec.workloadDigest
    b.workload.spec.axes.seq = 4096
    assert.are_not.equal(before, record.digest(b.workload))
    local problems = verify.check(b)
    assert.are.equal(1, #problems)
    assert.are.equal('workloadDigest', problems[1].field)
    assert.are.equal(before, problems[1].recorded)
    b.workload.spec.axes.seq = 2048
    b.operation.spec.family = 'rotary'
    local fields = {}
    for _, p in ipairs(verify.check(b)) do fields[#fields + 1] = p.field end
    table.sort(fields)
    assert.are.same({ 'implementation.spec.operation.specDigest', 'workload.spec.operationSpecDigest' }, fields)
  end)

  it('survives a round trip through pretty JSON and JSON Lines', function()
    local b = our_bundle()
    for _, text in ipairs { assert(json.encode_pretty(b)), assert(json.encode_line(b)) } do
      local back = assert(json.decode(text))
      assert.are.same({}, verify.check(back))
    end
  end)
end)

describe('shared workloads', function()
  it("put our run of the example record's point on kernelindex's own workload", function()
    assert.are.equal('sha256:98c5e76b9fa318ddeea51b56d90bc6fb39d72e404e2d01dbb467e67f57ff63e8',
      our_bundle().run.spec.workloadDigest)
  end)

  it("put scripts/llama4_rope.lua's default point, as a user runs it, on the example record's workload", function()
    local sub = require 'helpers.subprocess'
    local r = sub.run { '--backend', 'cpu', '--quiet', sub.root() .. '/scripts/llama4_rope.lua', '--rep-ms', '2',
      '--warmup-ms', '1', '--format', 'jsonl' }
    assert.are.equal(0, r.code, r.err)
    local b = assert(json.decode(r.out:match('^[^\n]+')))
    assert.are.equal('sha256:98c5e76b9fa318ddeea51b56d90bc6fb39d72e404e2d01dbb467e67f57ff63e8', b.run.spec.workloadDigest)
    assert.are.equal(record.digest(b.workload), b.run.spec.workloadDigest)
    assert.are.equal(EXAMPLE:match('"workloadDigest": "([^"]+)"'), b.run.spec.workloadDigest)
  end)

  it('give every point of both RoPE benchmarks the workload its Liger rows import to', function()
    local liger = require 'kluabench.liger'
    local rows = assert(liger.parse(table.concat({
      table.concat(liger.HEADER, ','),
      'rope,liger,full,speed,ms,T,sequence length,4096,0.5,0.4,0.6,"{""dtype"": ""torch.float16"", '
        .. '""hidden_size"": 8192, ""num_q_heads"": 32, ""num_kv_heads"": 8}",NVIDIA H100 80GB HBM3,2025-01-01 00:00:00,0.6.1',
      'llama4_rope,liger,forward,speed,ms,H,hidden size,2048,0.5,0.4,0.6,"{""dtype"": ""torch.bfloat16"", '
        .. '""seq_len"": 2048, ""num_q_heads"": 32, ""num_kv_heads"": 8}",NVIDIA H100 80GB HBM3,2025-01-01 00:00:00,0.6.1',
    }, '\n') .. '\n'))
    local want = {
      { 'rope', { hidden = 8192, seq = 4096, q_heads = 32, kv_heads = 8 }, 'f16' },
      { 'llama4_rope', { hidden = 2048, seq = 2048, q_heads = 32, kv_heads = 8 }, 'bf16' },
    }
    for i, row in ipairs(rows) do
      local imported = assert(liger.row_to_bundle(row))
      local ours = record.workload { kernel = want[i][1], parameters = want[i][2], dtype = want[i][3] }
      assert.are.equal(imported.run.spec.workloadDigest, record.digest(ours))
    end
  end)
end)

describe('pretty JSON', function()
  it("writes the example's documents in the example's key order", function()
    local example = assert(json.decode(EXAMPLE))
    assert.are.equal(EXAMPLE .. '\n', json.encode_pretty(example))
  end)

  it('puts unknown keys after the known ones, sorted', function()
    local text = json.encode_line({ zeta = 1, alpha = 2, kind = 'K', apiVersion = 'v' })
    assert.are.equal('{"kind":"K","apiVersion":"v","alpha":2,"zeta":1}', text)
  end)

  it('writes the empty object of the example and marked empty arrays', function()
    assert.are.equal('{"software":{}}', json.encode_line({ software = json.object() }))
    assert.are.equal('{"list":[]}', json.encode_line({ list = json.array() }))
    assert.are.equal('[]', json.encode_line(json.array()))
    assert.are.equal('{}', json.encode_line(json.object()))
    assert.are.equal('[]', kb.jcs.encode(json.array()))
    assert.are.equal('{}', kb.jcs.encode(json.object()))
  end)

  it('writes numbers as JCS does', function()
    for _, v in ipairs { 0.13574400544166565, 137600, 1e21, 1e-7, 0.5, 123.456, -0.0, 2 ^ 60, 1 / 3 } do
      assert.are.equal(kb.jcs.encode(v), json.format_number(v))
    end
  end)

  it('refuses values JSON cannot carry, softly', function()
    local text, err = json.encode_pretty({ x = 0 / 0 })
    assert.is_nil(text)
    assert.matches('cannot write', err)
    assert.is_nil((json.encode_line({ 1, 2, x = 3 })))
  end)
end)

describe('environment capture', function()
  local schema = require 'helpers.schema'

  it('describes the device this process runs on in the schema\'s fields', function()
    local e = env.capture()
    local info = kb.device_info()
    assert.are.equal('ExecutionEnvironment', e.kind)
    assert.are.equal(info.arch, e.spec.hardware.architecture)
    assert.are.same({ name = 'kluabench', version = kb.version }, e.spec.software.framework)
    assert.are.equal(_VERSION, e.spec.software.libraries.lua)
    if schema.available() then assert.are.same({}, schema.check(e)) end
    if kb.backend() == 'cpu' then
      assert.are.equal(info.name, e.spec.hardware.product)
      assert.matches('cpu', e.metadata.name)
    end
    assert.are.equal(kb.backend(), env.device_facts(info, kb.backend()).backend)
  end)

  it('splits GPU names into product and form factor', function()
    local function split(n) return { env.split_gpu_name(n) } end
    assert.are.same({ 'nvidia', 'NVIDIA H100', '80GB HBM3' }, split('NVIDIA H100 80GB HBM3'))
    assert.are.same({ 'nvidia', 'NVIDIA H200' }, split('NVIDIA H200'))
    assert.are.same({ 'nvidia', 'NVIDIA A100', 'SXM4-80GB' }, split('NVIDIA A100-SXM4-80GB'))
    assert.are.same({ 'nvidia', 'NVIDIA GeForce RTX 4090' }, split('NVIDIA GeForce RTX 4090'))
    assert.are.same({ 'amd', 'AMD Instinct MI300X' }, split('AMD Instinct MI300X'))
    assert.are.equal('sm_90', env.arch_of_gpu_name('NVIDIA H200'))
    assert.are.equal('sm_80', env.arch_of_gpu_name('NVIDIA A100-SXM4-80GB'))
    assert.are.equal('sm_100', env.arch_of_gpu_name('NVIDIA B200'))
    assert.is_nil(env.arch_of_gpu_name('Mystery Accelerator 9000'))
  end)

  it('leaves the form factor out when the name has none, and the driver is a string', function()
    local e = env.capture { info = { name = 'NVIDIA H200', arch = 'sm_90', driver_version = 13000,
      runtime_version = 13000 }, backend = 'cuda', kb = kb, os = { kernel = 'Linux' }, driver_release = '580.65.06',
      nvml = false, placement = { host_name = 'gpu7' } }
    assert.are.equal('NVIDIA H200', e.spec.hardware.product)
    assert.is_nil(e.spec.hardware.formFactor)
    assert.are.equal('580.65.06', e.spec.software.driver)
    assert.are.equal('13.0', e.spec.software.cudaToolkit)
    assert.are.equal('13.0', e.spec.software.libraries.cuda_driver)
    assert.are.equal('kluabench-nvidia-h200', e.metadata.name)
    assert.are.equal('kluabench host · H200', e.metadata.title)
    assert.are.same({ host_name = 'gpu7' }, e.metadata.labels)
    if schema.available() then assert.are.same({}, schema.check(e)) end
  end)
end)
