-- Every document kluabench writes is one kernelindex accepts: one of every
-- kind that every command emits (the harness with every protocol and the
-- statuses passed, incorrect_numerical, timeout and runtime_error, a plugin
-- kernel, a script's implementation covering the code it loaded, do_bench
-- and a user's protocol through record.from_result, import-liger (of the 2025
-- CSV's spelling and of Liger-Kernel 0.8.2's own harness), run-all
-- and merge, submission; all on the cpu backend), validated by an
-- independent JSON Schema validator (python3-jsonschema, draft 2020-12,
-- tests/helpers/validate_kernelindex.py) against the vendored public
-- schemas (kluabench does not validate as it writes: this is the check), and
-- by `kluabench verify`; an unknown field fails; the vendored schemas are the
-- reference copy, byte for byte, when that is present.
local kb = require 'kluabench'
local sub = require 'helpers.subprocess'
local json = require 'kluabench.util.json'

local ROOT = sub.root()
local SCHEMAS = ROOT .. '/tests/fixtures/kernelindex-schemas'
local PYTHON = '/usr/bin/python3' -- Debian's, where python3-jsonschema is installed

local function have_jsonschema()
  local ok = os.execute(PYTHON .. ' -c "import jsonschema; jsonschema.Draft202012Validator" >/dev/null 2>&1')
  return ok == true or ok == 0
end

-- Runs the independent validator on files: its exit status and output.
local function python_validate(files)
  local words = { PYTHON, sub.q(ROOT .. '/tests/helpers/validate_kernelindex.py'), sub.q(SCHEMAS) }
  for _, f in ipairs(files) do words[#words + 1] = sub.q(f) end
  local p = io.popen(table.concat(words, ' ') .. ' 2>&1; echo "rc=$?"')
  local out = p:read('a')
  p:close()
  return tonumber(out:match('rc=(%d+)%s*$')), out
end

local function kluabench(args, opts)
  local r = sub.run(args, opts)
  assert(r.code == 0, table.concat(args, ' ') .. ': ' .. r.err)
  return r
end

local HEADER = 'kernel_name,kernel_provider,kernel_operation_mode,metric_name,metric_unit,x_name,x_label,'
  .. 'x_value,y_value_50,y_value_20,y_value_80,extra_benchmark_config_str,gpu_name,timestamp,liger_version\n'
local function row(kernel, provider, mode, metric, gpu)
  return string.format('%s,%s,%s,%s,%s,H,hidden size,512,0.1376,0.1357,0.1400,"{""dtype"": ""torch.bfloat16"", '
    .. '""seq_len"": 2048, ""num_q_heads"": 32, ""num_kv_heads"": 8}",%s,2025-08-07 21:42:05,0.6.1\n', kernel,
    provider, mode, metric, metric == 'memory' and 'MB' or 'ms', gpu or 'NVIDIA H100 80GB HBM3')
end

describe('every document every command writes', function()
  local dir
  local files = {}
  local engine_ok = pcall(require, 'kluabench.core')

  setup(function()
    dir = sub.tmpdir()
    if not engine_ok then return end
    local tiny = { '--hidden', '64', '--seq', '16', '--rep-ms', '2', '--warmup-ms', '1' }
    local function script(name, extra, out)
      local a = { '--backend', 'cpu', '--quiet', ROOT .. '/scripts/' .. name }
      for _, x in ipairs(tiny) do a[#a + 1] = x end
      for _, x in ipairs(extra) do a[#a + 1] = x end
      for _, x in ipairs { '--format', 'jsonl', '--out', out } do a[#a + 1] = x end
      kluabench(a)
      files[#files + 1] = out
    end
    -- the harness: both RoPE benchmarks, every provider and mode, every protocol
    script('llama4_rope.lua', { '--provider', 'all', '--mode', 'all' }, dir .. '/llama4.jsonl')
    script('rope.lua', { '--provider', 'all', '--mode', 'forward', '--protocol', 'cold' }, dir .. '/rope.jsonl')
    script('llama4_rope.lua', { '--protocol', 'hot' }, dir .. '/hot.jsonl')
    -- Liger's memory metric, and energy asked for where there is none (issue 26)
    script('llama4_rope.lua', { '--metric', 'memory', '--mode', 'full', '--provider', 'all' }, dir .. '/memory.jsonl')
    script('llama4_rope.lua', { '--metrics', 'energy', '--protocol', 'cold' }, dir .. '/energy.jsonl')
    -- a benchmark of the user's own, declaring no operation and no implementation
    local ex = dir .. '/copy.jsonl'
    kluabench { '--backend', 'cpu', ROOT .. '/examples/copy_benchmark.lua', '--mib', '1', '--rep-ms', '2',
      '--format', 'jsonl', '--out', ex }
    files[#files + 1] = ex
    -- a wrong result: its bundle is valid too
    local wrong = dir .. '/wrong.lua'
    sub.spit(wrong, [[
local kb = require 'kluabench'
kb.suite.main { name = 'wrong', axes = { { name = 'n', default = 8 } }, dtypes = { 'f32' }, modes = { 'forward' },
  providers = { 'bad' }, setup = function(p) return { x = kb.zeros({ p.n }, 'f32') } end,
  run = function() return function() end end,
  check = function() kb.suite.wrong_result('wrong on purpose') end }
]])
    local r = sub.run { '--backend', 'cpu', wrong, '--format', 'jsonl', '--out', dir .. '/wrong.jsonl' }
    assert(r.code == 1, r.err)
    files[#files + 1] = dir .. '/wrong.jsonl'
    -- a session past --timeout, and the graph protocol (refused at this size on the cpu: runtime_error)
    local slow = dir .. '/slow.lua'
    sub.spit(slow, [[
local kb = require 'kluabench'
kb.suite.main { name = 'slow', axes = { { name = 'n', default = 8 } }, dtypes = { 'f32' }, modes = { 'forward' },
  providers = { 'sleepy' }, setup = function(p) return { x = kb.zeros({ p.n }, 'f32') } end,
  run = function() return function() kb.process.sleep(20) end end }
]])
    r = sub.run { '--backend', 'cpu', slow, '--protocol', 'hot', '--timeout', '0.1', '--format', 'jsonl', '--out',
      dir .. '/timeout.jsonl' }
    assert(r.code == 1, r.err)
    files[#files + 1] = dir .. '/timeout.jsonl'
    r = sub.run { '--backend', 'cpu', ROOT .. '/scripts/llama4_rope.lua', '--hidden', '64', '--seq', '16', '--protocol',
      'graph', '--format', 'jsonl', '--out', dir .. '/graph.jsonl' }
    assert(r.code == 1, r.err)
    files[#files + 1] = dir .. '/graph.jsonl'
    -- a user kernel (a plugin's CPU twin) named by the implementation hook
    local plug = dir .. '/plug.lua'
    sub.spit(plug, [[
local kb = require 'kluabench'
local pk = kb.plugin.load(os.getenv('LIB')):kernel('scale_add')
kb.suite.main { name = 'scale_add', axes = { { name = 'n', default = 64 } }, dtypes = { 'f32' }, modes = { 'forward' },
  providers = { 'plugin' },
  setup = function(p) return { x = kb.randn({ p.n }, 'f32', 1), y = kb.randn({ p.n }, 'f32', 2), out = kb.empty({ p.n }, 'f32') } end,
  run = function(p, provider, mode, t) return function() pk(t.out, t.x, t.y, 1.5) end end,
  implementation = function() return pk:info() end,
}
]])
    r = sub.run({ '--backend', 'cpu', plug, '--rep-ms', '2', '--format', 'jsonl', '--out', dir .. '/plugin.jsonl' },
      { env = { LIB = kb.executable():match('^(.*)/[^/]*$') .. '/plugins/libscale_add.so' } })
    assert(r.code == 0, r.err)
    files[#files + 1] = dir .. '/plugin.jsonl'
    -- the same plugin, a PTX module and (where NVRTC is) a compiled .cu loaded by a script without an
    -- implementation hook: the script's implementation then covers them (projectRevision.treeDigest)
    local loads = dir .. '/loads.lua'
    sub.spit(loads, [[
local kb = require 'kluabench'
kb.plugin.load(os.getenv('LIB'))
kb.cuda.load(".version 8.0\n.target sm_90\n.address_size 64\n")
if kb.cuda.nvrtc_version() then
  kb.cuda.compile('extern "C" __global__ void k(float *p) { p[threadIdx.x] = 1.0f; }', { cache = false })
end
kb.suite.main { name = 'loads', axes = { { name = 'n', default = 8 } }, dtypes = { 'f32' }, modes = { 'forward' },
  providers = { 'mine' }, setup = function(p) return { x = kb.zeros({ p.n }, 'f32') } end,
  run = function() return function() end end }
]])
    r = sub.run({ '--backend', 'cpu', loads, '--rep-ms', '2', '--format', 'jsonl', '--out', dir .. '/loads.jsonl' },
      { env = { LIB = kb.executable():match('^(.*)/[^/]*$') .. '/plugins/libscale_add.so' } })
    assert(r.code == 0, r.err)
    local loaded = assert(json.decode(assert(sub.slurp(dir .. '/loads.jsonl')):match('[^\n]+')))
    assert(loaded.implementation.spec.projectRevision.treeDigest, 'no treeDigest for the loaded code')
    files[#files + 1] = dir .. '/loads.jsonl'
    -- do_bench and a protocol of the user's, made into records by record.from_result and written by
    -- writer.append, as a script of the user's does without the harness
    local own = dir .. '/own.lua'
    sub.spit(own, [[
local kb = require 'kluabench'
local q, k = kb.randn({ 1, 16, 32, 2 }, 'bf16', 1), kb.randn({ 1, 16, 8, 2 }, 'bf16', 2)
local f = kb.rope.freqs(16, 2)
local fn = function() kb.rope.llama4_fwd(q, k, f, { inplace = true }) end
local best = require('kluabench.measure').protocol { name = 'best-of-n', title = 'best of N', params = { n = 5 },
  run = function(self, g, ctx)
    local samples = {}
    for i = 1, self.params.n do
      local a, b = ctx.event(), ctx.event()
      a:record() g() b:record() b:synchronize()
      samples[i] = ctx.elapsed_ms(a, b)
    end
    return { samples = samples }
  end }
for _, r in ipairs { kb.do_bench.do_bench_protocol { rep_ms = 2, warmup_ms = 1 }:run(fn), best:run(fn) } do
  assert(kb.writer.append(arg[1], kb.record.from_result { kernel = 'llama4_rope', mode = 'forward',
    provider = 'fused', dtype = 'bf16', parameters = { hidden = 64, seq = 16, q_heads = 32, kv_heads = 8 }, result = r }))
end
]])
    kluabench { '--backend', 'cpu', own, dir .. '/own.jsonl' }
    files[#files + 1] = dir .. '/own.jsonl'
    -- whole-file output of the harness
    kluabench { '--backend', 'cpu', ROOT .. '/scripts/llama4_rope.lua', '--rep-ms', '2', '--warmup-ms', '1',
      '--format', 'kernelindex', '--out', dir .. '/pretty.json' }
    files[#files + 1] = dir .. '/pretty.json'
    -- import-liger: reproduced rows, memory rows (kept by default) and with --keep an unknown GPU
    sub.spit(dir .. '/liger.csv', HEADER .. row('llama4_rope', 'huggingface', 'backward', 'speed')
      .. row('rope', 'liger', 'forward', 'speed') .. row('rope', 'torch_compile', 'full', 'speed')
      .. row('llama4_rope', 'liger', 'full', 'memory') .. row('llama4_rope', 'liger', 'forward', 'speed', 'NVIDIA H200'))
    kluabench { 'import-liger', dir .. '/liger.csv', '--keep', '--jsonl', dir .. '/liger.jsonl' }
    files[#files + 1] = dir .. '/liger.jsonl'
    -- import-liger of a CSV Liger-Kernel 0.8.2's own harness wrote (its spelling of the heads, bsz)
    kluabench { 'import-liger', ROOT .. '/tests/fixtures/liger/llama4_rope-0.8.2.csv', '--jsonl',
      dir .. '/liger-0.8.2.jsonl' }
    files[#files + 1] = dir .. '/liger-0.8.2.jsonl'
    -- run-all and its merge
    kluabench { '--backend', 'cpu', 'run-all', '--procs', '2', '--dir', dir .. '/run', ROOT .. '/scripts/rope.lua',
      '--seq', '16,32', '--hidden', '64', '--rep-ms', '2', '--warmup-ms', '1' }
    files[#files + 1] = dir .. '/run/all.jsonl'
    -- the submission of all of them
    local args = { 'submission' }
    for _, f in ipairs(files) do args[#args + 1] = f end
    for _, x in ipairs { '-o', dir .. '/submission.json' } do args[#args + 1] = x end
    kluabench(args)
    files[#files + 1] = dir .. '/submission.json'
  end)
  teardown(function() os.execute('rm -rf ' .. sub.q(dir)) end)

  local engine_it = engine_ok and it or pending
  local python_it = (engine_ok and have_jsonschema()) and it or pending

  python_it('validate with python3-jsonschema, one of every kind and more', function()
    local rc, out = python_validate(files)
    assert.equal(0, rc, out)
    for _, kind in ipairs { 'BenchmarkRun', 'BenchmarkProtocol', 'ExecutionEnvironment', 'WorkloadCase',
      'ImplementationRevision', 'OperationSpec', 'SoftwareProject' } do
      assert.matches(kind .. ' %d+', out)
    end
  end)

  python_it("validate for every speed and memory row of a CSV of Liger-Kernel 0.8.2's own harness", function()
    local rc, out = python_validate { dir .. '/liger-0.8.2.jsonl' }
    assert.equal(0, rc, out)
    -- 32 bundles of 6 documents and a SoftwareProject each
    assert.matches('224 documents: 224 valid', out, 1, true)
    assert.matches('BenchmarkRun 32', out, 1, true)
    local runs, memory = 0, 0
    for line in sub.slurp(dir .. '/liger-0.8.2.jsonl'):gmatch('[^\n]+') do
      local b = assert(json.decode(line))
      runs = runs + 1
      if b.run.spec.sourceNative.benchmark:match('/memory$') then memory = memory + 1 end
    end
    assert.same({ 32, 8 }, { runs, memory })
  end)

  engine_it('hold the statuses, protocols and implementations they are meant to', function()
    local seen = {}
    local function note(what) seen[what] = true end
    for _, f in ipairs(files) do
      if f:match('%.jsonl$') then
        for line in sub.slurp(f):gmatch('[^\n]+') do
          local b = assert(json.decode(line))
          note('status ' .. b.run.spec.status)
          note('protocol ' .. b.protocol.spec.comparability.family)
          note('interface ' .. tostring(b.implementation.spec.callable.interface))
        end
      end
    end
    for _, want in ipairs { 'status passed', 'status incorrect_numerical', 'status timeout', 'status runtime_error',
      'protocol triton_do_bench', 'protocol kluabench_cold', 'protocol kluabench_hot', 'protocol kluabench_graph',
      'protocol liger_kernel_bench', 'protocol kluabench', 'interface kluabench', 'interface kluabench_plugin',
      'interface kluabench_suite' } do
      assert.is_true(seen[want] == true, want)
    end
  end)

  engine_it("validate with kluabench's own checker and verify", function()
    for _, f in ipairs(files) do
      if not f:match('submission%.json$') then
        local r = sub.run { 'verify', '--quiet', f }
        assert.equal(0, r.code, f .. ': ' .. r.err)
      end
    end
  end)

  python_it('fail on an unknown field, in each kind', function()
    local bundles = assert(kb.reader.read(dir .. '/llama4.jsonl'))
    for _, member in ipairs { 'run', 'protocol', 'environment', 'workload', 'implementation', 'operation' } do
      local b = json.decode(assert(json.encode_line(bundles[1])))
      b[member].spec.kluabenchExtra = 1
      local path = dir .. '/unknown-' .. member .. '.json'
      sub.spit(path, assert(json.encode_line(b)))
      local rc, out = python_validate { path }
      assert.equal(1, rc, member .. ': ' .. out)
      assert.matches('INVALID', out)
      assert.matches('kluabenchExtra', out)
    end
  end)

  -- a user kernel's ImplementationRevision for each way it can come (the gpu specs make them from
  -- loaded kernels; here from the info tables those give): NVRTC (a real compile, which needs no
  -- GPU), a cubin module, a Triton kernel, a C plugin (a real library), and a provider of several
  python_it('validate for user kernels of every kind: NVRTC, cubin, Triton, plugin and several', function()
    local op = 'sha256:' .. string.rep('0', 64)
    local infos = {}
    local compiled, mod = pcall(kb.cuda.compile, 'extern "C" __global__ void twice(float *p) { p[0] *= 2; }',
      { cache = false, options = { '-lineinfo' } })
    if compiled then infos.nvrtc = { name = 'twice', symbol = 'twice', module = mod:info() } end
    infos.cubin = { name = 'scale', symbol = 'scale', module = { format = 'cubin', name = 'scale.cubin',
      sha256 = 'sha256:' .. string.rep('1', 64), bytes = 4096, arch = 'sm_90' } }
    infos.triton = { name = 'rmsnorm', symbol = '_rms_norm_kernel', triton = { num_warps = 4, num_stages = 3,
      shared = 0, hash = string.rep('a', 64) }, module = { format = 'cubin', name = '_rms_norm_kernel.cubin',
      sha256 = 'sha256:' .. string.rep('2', 64), bytes = 8192, arch = 'sm_90' } }
    local plugin = kb.plugin.load(kb.executable():match('^(.*)/') .. '/plugins/libscale_add.so')
    infos.plugin = plugin:kernel('scale_add'):info()
    infos.several = { infos.cubin, infos.triton }
    local docs, kinds = {}, {}
    for kind, info in pairs(infos) do
      local doc = kb.record.user_implementation { provider = 'mine', kernel = 'k', info = info, operation_digest = op,
        dtypes = { 'bf16', 'f32' } }
      docs[#docs + 1] = doc
      kinds[#kinds + 1] = kind
    end
    local path = dir .. '/user-implementations.json'
    sub.spit(path, assert(json.encode_line(docs)))
    local rc, out = python_validate { path }
    assert.equal(0, rc, out)
    assert.matches(#docs .. ' documents: ' .. #docs .. ' valid', out, 1, true)
    assert.is_true(#docs >= 4, table.concat(kinds, ' '))
  end)

  python_it('find the example record valid, and each of its broken variants invalid', function()
    local ex = json.decode(require 'helpers.example_record')
    local path = dir .. '/example.json'
    sub.spit(path, json.encode_line(ex))
    assert.equal(0, (python_validate { path }))
    -- a wrong status, a bad digest pattern, a too-long name, a missing required field
    local cases = {
      function(b) b.run.spec.status = 'failed' end,
      function(b) b.run.spec.workloadDigest = 'sha256:XYZ' end,
      function(b) b.run.metadata.name = string.rep('a', 201) end,
      function(b) b.protocol.spec.measurement.timer = nil end,
      function(b) b.environment.spec.hardware.architecture = 'SM-90' end,
      function(b) b.run.spec.observedAt = '2025-02-30T00:00:00Z' end,
    }
    for i, break_it in ipairs(cases) do
      local b = json.decode(require 'helpers.example_record')
      break_it(b)
      local p = dir .. '/broken-' .. i .. '.json'
      sub.spit(p, json.encode_line(b))
      assert.equal(1, (python_validate { p }), 'case ' .. i)
    end
  end)
end)

describe('the vendored schemas', function()
  it('are the reference copy, byte for byte, where the project keeps it beside the checkout', function()
    local ref = ROOT .. '/../shared/reference/kernelindex'
    local probe = io.open(ref .. '/benchmark-run.v1alpha1.schema.json', 'rb')
    if not probe then
      pending('no reference copy beside this checkout')
      return
    end
    probe:close()
    local p = io.popen('ls ' .. sub.q(ref) .. '/*.schema.json')
    local n = 0
    for path in p:lines() do
      local name = path:match('([^/]+)$')
      assert.equal(sub.slurp(path), sub.slurp(SCHEMAS .. '/' .. name), name)
      n = n + 1
    end
    p:close()
    assert.equal(13, n)
  end)
end)
