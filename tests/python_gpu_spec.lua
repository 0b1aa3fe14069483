-- kb.python on the GPU (docs/KERNELS.md, "Python providers"): torch views a cuda tensor through DLPack and
-- returns cuda tensors without a copy, runs on the engine's stream (the CUPTI trace finds no kernel elsewhere),
-- and the RoPE benchmarks' Python peers (huggingface, liger, torch_compile) pass their checks and are timed under
-- do_bench and cold, and under graph where a CUDA graph can capture them; the seed's point lands on the seed's
-- workload. Which Python: KLUABENCH_PYTHON as the environment gives it (on the GPU machine, the venv that has
-- torch, transformers and liger_kernel: KLUABENCH_PYTHON=/opt/torch/.venv/bin/python), else python3 on PATH.
-- Every case runs a fresh kluabench process; a case whose packages are missing is pending and says which.
-- On the GPU machine: KLUABENCH_PYTHON=... build/kluabench tests/run.lua --tags=gpu tests/python_gpu_spec.lua
local kb = require 'kluabench'
local sub = require 'helpers.subprocess'
local json = require 'kluabench.util.json'
local result = require 'kluabench.result'

local ROOT = sub.root()
local FIXTURES = ROOT .. '/tests/fixtures/python'
local PYTHON = os.getenv('KLUABENCH_PYTHON')
local SEED_WORKLOAD = 'sha256:98c5e76b9fa318ddeea51b56d90bc6fb39d72e404e2d01dbb467e67f57ff63e8'

-- Lua code run on the cuda backend with this environment's Python: {out, err, code}.
local function lua(code, args)
  local dir = sub.tmpdir()
  sub.spit(dir .. '/t.lua', "local kb = require 'kluabench'\nlocal FIX = " .. string.format('%q', FIXTURES) .. '\n'
    .. code)
  local argv = { '--backend', 'cuda', dir .. '/t.lua' }
  for _, a in ipairs(args or {}) do argv[#argv + 1] = a end
  local r = sub.run(argv, { cwd = dir, timeout = 600 })
  os.execute('rm -rf ' .. sub.q(dir))
  return r
end

-- Why torch (with CUDA) cannot be used by kb.python here, or nil.
local torch_missing = (function()
  if kb.backend() ~= 'cuda' then return 'needs the cuda backend' end
  local r = lua([[
local ok, why = kb.python.available()
if not ok then print(why) return end
local fine, cuda = pcall(function() return kb.python.load('torch.cuda'):fn('is_available')() end)
print(fine and (cuda and 'yes' or 'torch sees no CUDA device') or cuda)]])
  local line = (r.out or ''):match('^[^\n]*') or ''
  if r.code == 0 and line == 'yes' then return nil end
  return 'torch with CUDA is not usable by kb.python here (KLUABENCH_PYTHON=' .. tostring(PYTHON) .. '): '
    .. (line ~= '' and line or r.err)
end)()

local function with_torch(name, fn)
  if torch_missing then pending(name .. ' (' .. torch_missing .. ')') else it(name, fn) end
end

describe('kb.python with torch on cuda #gpu', function()
  with_torch('lends a cuda tensor to torch.from_dlpack and takes torch\'s result back, without a copy', function()
    local r = lua([[
local m = kb.python.load(FIX .. '/torch_provider.py')
local x = kb.randn({ 1 << 20 }, 'f32', 1, 'cuda')
local y = m:fn('scale')(x, 3.0)
print(y.device, y.dtype, kb.max_abs_diff(y, x * 3.0))
m:fn('add_one_')(x) -- in place, on the engine's stream: what kluabench reads next sees it
local want = kb.randn({ 1 << 20 }, 'f32', 1, 'cuda') + 1.0
print(kb.max_abs_diff(x, want))
x:fill_(0.5) -- kluabench's write, then torch's read on the same stream
print(m:fn('total')(x) == 0.5 * (1 << 20))
local ptr, dev, index = m:fn('same_memory')(x)
print(dev, index, math.type(ptr))
]])
    assert(r.code == 0, r.err)
    local lines = {}
    for l in r.out:gmatch('[^\n]+') do lines[#lines + 1] = l end
    assert.equal('cuda:0\tf32\t0.0', lines[1])
    assert.equal('0.0', lines[2])
    assert.equal('true', lines[3])
    assert.equal('cuda\t0\tinteger', lines[4])
  end)

  with_torch('runs a call on the engine\'s stream: torch\'s current stream, and the CUPTI trace', function()
    local r = lua([[
local census = require('kluabench.trust').census
local m = kb.python.load(FIX .. '/torch_provider.py')
local a, b = kb.randn({ 512, 512 }, 'f32', 1, 'cuda'), kb.randn({ 512, 512 }, 'f32', 2, 'cuda')
local matmul = m:fn('matmul')
matmul(a, b) -- torch imported and bound: its current stream is the engine's from now on
print(m:fn('current_stream')() ~= m:fn('default_stream')())
local ok, why = kb.trace.available()
if not ok then print('no trace: ' .. tostring(why)) return end
kb.trace.start()
kb.spin(1000) -- the engine's marker
for _ = 1, 3 do matmul(a, b) end
kb.trust.device_synchronize()
local records = kb.trace.stop()
local engine = census.engine_stream(records)
print(engine ~= nil, #census.foreign(records, engine), census.work_ns(records) > 0)
]])
    assert(r.code == 0, r.err)
    assert.equal('true\n', r.out:match('^[^\n]*\n'))
    if not r.out:find('no trace', 1, true) then assert.matches('\ntrue\t0\ttrue\n$', r.out) end
  end)
end)

-- The RoPE benchmarks with the peers: {bundles}, the exit code and stderr; nil and why when the peers are skipped.
local function peers(script, args)
  local out = sub.tmpdir() .. '/out.jsonl'
  local argv = { '--backend', 'cuda', '--quiet', ROOT .. '/scripts/' .. script, '--format', 'jsonl', '--out', out }
  for _, a in ipairs(args) do argv[#argv + 1] = a end
  local r = sub.run(argv, { timeout = 1800 })
  local skipped = r.err:match('provider %S+ skipped: [^\n]+')
  local bundles = {}
  for l in (sub.slurp(out) or ''):gmatch('[^\n]+') do bundles[#bundles + 1] = json.decode(l) end
  os.execute('rm -rf ' .. sub.q(out:match('^(.*)/')))
  return bundles, r, skipped
end

-- "kernel provider mode: status" of each bundle, for messages (stderr says why a run failed).
local function outcomes(bundles)
  local lines = {}
  for _, b in ipairs(bundles) do
    local s = result.session(b)
    lines[#lines + 1] = string.format('%s %s %s: %s', s.kernel, s.provider, s.mode, s.status)
  end
  return table.concat(lines, '\n')
end

describe('the RoPE benchmarks\' Python peers #gpu', function()
  local PEERS = 'huggingface,liger,torch_compile'
  local POINT = { '--hidden', '512', '--seq', '2048' }

  for _, script in ipairs { 'llama4_rope.lua', 'rope.lua' } do
    for _, protocol in ipairs { 'do_bench', 'cold' } do
      with_torch(script .. ': every peer passes its check and is timed under ' .. protocol .. ', every mode', function()
        local args = { '--provider', PEERS, '--mode', 'all', '--protocol', protocol, '--rep-ms', '50' }
        for _, a in ipairs(POINT) do args[#args + 1] = a end
        local bundles, r, skipped = peers(script, args)
        if skipped then
          pending(skipped)
          return
        end
        assert(r.code == 0, r.err .. '\n' .. outcomes(bundles))
        io.stderr:write('\n' .. outcomes(bundles) .. '\n')
        assert.equal(9, #bundles, outcomes(bundles))
        for _, b in ipairs(bundles) do
          local s = result.session(b)
          assert.equal('passed', s.status, outcomes(bundles))
          assert.is_true(s.median_ns > 0)
          local impl = b.implementation.spec
          assert.equal('python', impl.callable.language)
          assert.equal('rope_providers.py', impl.source.fileName)
          assert.is_string(impl.buildVariants[1].requirements.torch)
          assert.is_string(impl.buildVariants[1].requirements.transformers)
        end
      end)
    end

    -- Graph capture of a Python call captures what it queues on the engine's stream: it can work for eager ops
    -- whose memory torch's caching allocator already holds; it cannot where the call synchronises, allocates
    -- anew during the capture, or leaves work to other threads (autograd's engine runs the backward on a thread
    -- of its own; torch.compile's guards and first compilation run on the host). Each provider runs in a process
    -- of its own, so that a failed capture leaves the others' alone; the outcomes are printed either way.
    for _, provider in ipairs { 'huggingface', 'liger', 'torch_compile' } do
      with_torch(script .. ': ' .. provider .. ' under graph passes or says why the capture failed', function()
        local args = { '--provider', provider, '--mode', 'all', '--protocol', 'graph' }
        for _, a in ipairs(POINT) do args[#args + 1] = a end
        local bundles, r, skipped = peers(script, args)
        if skipped then
          pending(skipped)
          return
        end
        io.stderr:write('\n' .. outcomes(bundles) .. '\n' .. r.err)
        assert.equal(3, #bundles, r.err)
        for _, b in ipairs(bundles) do
          local s = result.session(b)
          if s.status ~= 'passed' then
            assert.equal('runtime_error', s.status, outcomes(bundles) .. '\n' .. r.err) -- a capture that fails
            assert.truthy(r.err:find(s.mode .. ' ' .. provider, 1, true), r.err) -- and says why, on stderr
          end
        end
      end)
    end
  end

  with_torch('measures the seed\'s point (llama4_rope backward, hidden 512, seq 2048, bf16) on the seed\'s workload',
    function()
      local bundles, r, skipped = peers('llama4_rope.lua', { '--provider', 'huggingface', '--mode', 'backward' })
      if skipped then
        pending(skipped)
        return
      end
      assert(r.code == 0, r.err)
      assert.equal(1, #bundles)
      local s = result.session(bundles[1])
      assert.equal('passed', s.status)
      assert.equal(SEED_WORKLOAD, s.digests.workload)
      io.stderr:write(string.format('\nthe seed\'s point, huggingface backward under do_bench: median %.1f us '
        .. '(the seed: 137.6 us, an H100 in 2025)\n', s.median_ns / 1e3))
    end)
end)
