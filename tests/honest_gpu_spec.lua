-- The honest corpus on the cuda backend (tests/honest/, docs/TRUST.md): every
-- provider (the plugin's CUDA entries and ops.cuh compiled by NVRTC), every
-- dtype and every protocol comes out passed with zero findings and every
-- audit check run. Tagged gpu: on the GPU machine,
-- build/kluabench tests/run.lua --tags=gpu tests/honest_gpu_spec.lua
local kb = require 'kluabench'
local cjson = require 'cjson'
local sub = require 'helpers.subprocess'
local util = require 'helpers.util'
local reader = require 'kluabench.record.reader'
local result = require 'kluabench.result'

local ROOT = sub.root()
local BENCH = ROOT .. '/tests/honest/bench.lua'
local OPS = { 'softmax', 'layernorm', 'rmsnorm', 'sum', 'matmul', 'scan' }
local PROVIDERS = {}
for i, op in ipairs(OPS) do PROVIDERS[i], PROVIDERS[#OPS + i] = op, op .. '_nvrtc' end
local CHECKS = { 'outputs', 'inputs unchanged', 'guard bytes', 'streams', 'persisting L2', 'work in the window',
  'integrity', 'precision' }

-- The corpus's benchmark on the cuda backend: {code, err, sessions (result.session of each bundle)}.
local function run(dtype, protocol, o)
  o = o or {}
  local dir = util.tmpdir()
  local out = dir .. '/b.jsonl'
  local args = { BENCH, '--provider', table.concat(o.providers or PROVIDERS, ','), '--dtype', dtype, '--protocol',
    protocol, '--rows', tostring(o.rows or 1024), '--cols', tostring(o.cols or 1024), '--format', 'jsonl', '--out', out }
  if not o.defaults then
    for _, a in ipairs { '--rep-ms', '50', '--warmup-ms', '10' } do args[#args + 1] = a end
  end
  local r = sub.run(args, { env = { KLUABENCH_BACKEND = 'cuda' } })
  local sessions = {}
  for i, b in ipairs(reader.read(out) or {}) do sessions[i] = result.session(b) end
  return { code = r.code, err = r.err, sessions = sessions }
end

local function assert_honest(r, providers, what)
  assert.equal(0, r.code, what .. ': exit status\n' .. r.err)
  assert.equal(#providers, #r.sessions, what .. ': sessions\n' .. r.err)
  for i, s in ipairs(r.sessions) do
    local label = what .. ' ' .. tostring(s.provider)
    assert.equal(providers[i], s.provider, label)
    local e = s.evidence
    assert.equal('passed', s.status, label .. ': ' .. table.concat(e.reasons or {}, '\n'))
    local trust = assert(e.execution and e.execution.trust, label .. ': no trust section')
    assert.is_nil(trust.findings, label .. ': findings')
    assert.truthy(trust.audits >= 1, label .. ': audits')
    local ran = table.concat(trust.checks, ',')
    for _, c in ipairs(CHECKS) do
      assert.truthy(ran:find(c, 1, true), label .. ': ' .. c .. ' not run: ' .. ran .. ' (not: '
        .. cjson.encode(trust.notChecked or {}) .. ')')
    end
  end
end

describe('the honest corpus on the cuda backend #gpu', function()
  for _, dtype in ipairs { 'f32', 'bf16', 'f16' } do
    for _, protocol in ipairs { 'do_bench', 'cold', 'hot', 'graph' } do
      it(string.format('passes every provider in %s through %s with zero findings', dtype, protocol), function()
        assert_honest(run(dtype, protocol), PROVIDERS, dtype .. ' ' .. protocol)
      end)
    end
  end

  it('passes an f32 softmax (plugin and NVRTC) at 1024 and at 8192 columns under the default settings', function()
    for _, cols in ipairs { 1024, 8192 } do
      local providers = { 'softmax', 'softmax_nvrtc' }
      assert_honest(run('f32', 'do_bench', { providers = providers, rows = 4096, cols = cols, defaults = true }),
        providers, 'softmax f32 at ' .. cols .. ' columns')
    end
  end)

  it('runs the plugin\'s CUDA entries: the references of both agree with the CPU\'s', function()
    local p = kb.plugin.load(kb.executable():match('^(.*)/[^/]*$') .. '/honest/libhonest_ops.so')
    for _, op in ipairs(OPS) do assert.is_true(p:kernel(op):info().cuda, op) end
    local x = kb.randn({ 64, 256 }, 'bf16', 1, 'cpu')
    local gpu, cpu = kb.empty({ 64, 256 }, 'f64', 'cuda'), kb.empty({ 64, 256 }, 'f64', 'cpu')
    p:kernel('softmax_ref')(gpu, x:to('cuda'))
    p:kernel('softmax_ref')(cpu, x)
    assert.truthy(kb.max_abs_diff(gpu:to('cpu'), cpu) <= 1e-12)
  end)
end)
