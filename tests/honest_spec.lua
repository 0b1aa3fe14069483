-- The honest corpus (tests/honest/, docs/TRUST.md) on the cpu backend: kernels
-- a new user brings (softmax, layernorm, RMSNorm, a row sum, a matmul, a scan;
-- f32, bf16 and f16; f32 accumulators) come out passed with zero findings
-- through every protocol under the harness's defaults (no declared precision,
-- tolerance or reduction length), and an f32 softmax does at 1024 and 8192
-- columns (issue 36's held-out check). Then the pieces: the CPU twins and the
-- float64 references against Lua's own float64 arithmetic on a tiny case,
-- the plugin's argument checks, the NVRTC providers' message on the cpu
-- backend, and ops.cuh compiled by NVRTC.
local kb = require 'kluabench'
local sub = require 'helpers.subprocess'
local util = require 'helpers.util'
local reader = require 'kluabench.record.reader'
local result = require 'kluabench.result'

local ROOT = sub.root()
local BUILD = kb.executable():match('^(.*)/[^/]*$')
local BENCH = ROOT .. '/tests/honest/bench.lua'
local OPS = { 'softmax', 'layernorm', 'rmsnorm', 'sum', 'matmul', 'scan' }
local DTYPES = { 'f32', 'bf16', 'f16' }
local PROTOCOLS = { 'do_bench', 'cold', 'hot', 'graph' }
-- what every audited session of the cpu backend runs (docs/TRUST.md)
local CHECKS = { 'outputs', 'inputs unchanged', 'guard bytes', 'threads', 'integrity', 'precision' }

-- Runs the corpus's benchmark on the cpu backend: {code, err, sessions (result.session of each bundle)}.
local function run(providers, dtype, protocol, o)
  o = o or {}
  local dir = util.tmpdir()
  local out = dir .. '/b.jsonl'
  local args = { BENCH, '--provider', providers, '--dtype', dtype, '--protocol', protocol, '--rows',
    tostring(o.rows or 8), '--cols', tostring(o.cols or 1024), '--format', 'jsonl', '--out', out }
  if not o.defaults then
    for _, a in ipairs { '--rep-ms', '10', '--warmup-ms', '2' } do args[#args + 1] = a end
  end
  local r = sub.run(args, { env = { KLUABENCH_BACKEND = 'cpu' } })
  local sessions = {}
  for i, b in ipairs(reader.read(out) or {}) do sessions[i] = result.session(b) end
  return { code = r.code, err = r.err, sessions = sessions }
end

-- Every session passed, audited, with every check run and no finding; one per provider.
local function assert_honest(r, providers, protocol, what)
  assert.equal(0, r.code, what .. ': exit status\n' .. r.err)
  assert.equal(#providers, #r.sessions, what .. ': sessions\n' .. r.err)
  for i, s in ipairs(r.sessions) do
    local label = what .. ' ' .. tostring(s.provider)
    assert.equal(providers[i], s.provider, label)
    local e = s.evidence
    assert.equal('passed', s.status, label .. ': ' .. table.concat(e.reasons or {}, '\n'))
    local trust = assert(e.execution and e.execution.trust, label .. ': no trust section')
    assert.is_nil(trust.findings, label .. ': findings')
    -- two audits at random samples (in 1-4 and 5-12) and one after the last; a graph session on the
    -- cpu may end after a few samples (each replays 20 launches or more within the cpu's 2 s)
    if protocol == 'graph' then
      assert.truthy(trust.audits >= 1, label .. ': audits ' .. tostring(trust.audits))
    else
      assert.equal(3, trust.audits, label .. ': audits')
    end
    local ran = table.concat(trust.checks, ',')
    for _, c in ipairs(CHECKS) do assert.truthy(ran:find(c, 1, true), label .. ': ' .. c .. ' not run: ' .. ran) end
    assert.truthy(s.median_ns and s.median_ns > 0, label .. ': median')
  end
end

describe('the honest corpus on the cpu backend (tests/honest/)', function()
  for _, dtype in ipairs(DTYPES) do
    for _, protocol in ipairs(PROTOCOLS) do
      it(string.format('passes every op in %s through %s with zero findings', dtype, protocol), function()
        assert_honest(run(table.concat(OPS, ','), dtype, protocol), OPS, protocol, dtype .. ' ' .. protocol)
      end)
    end
  end

  it('passes an f32 softmax at 1024 and at 8192 columns under the default settings', function()
    for _, cols in ipairs { 1024, 8192 } do
      assert_honest(run('softmax', 'f32', 'do_bench', { rows = 64, cols = cols, defaults = true }), { 'softmax' },
        'do_bench', 'softmax f32 at ' .. cols .. ' columns')
    end
  end)

  it('says that the NVRTC providers need the cuda backend', function()
    local r = run('softmax_nvrtc', 'f32', 'do_bench', { rows = 2, cols = 8 })
    assert.equal(1, r.code, r.err)
    assert.equal('runtime_error', r.sessions[1].status)
    assert.truthy(r.err:find("provider 'softmax_nvrtc' is ops.cuh compiled by NVRTC: it needs the cuda backend", 1,
      true), r.err)
  end)
end)

describe('the honest plugin, piece by piece', function()
  local p = kb.plugin.load(BUILD .. '/honest/libhonest_ops.so')
  local U = { f32 = 2 ^ -24, bf16 = 2 ^ -8, f16 = 2 ^ -11 }

  -- Lua's own float64 of each op on rows of plain numbers (x: rows x cols, flat)
  local function rows_of(x, rows, cols)
    local out = {}
    for r = 1, rows do
      out[r] = {}
      for j = 1, cols do out[r][j] = x[(r - 1) * cols + j] end
    end
    return out
  end
  local LUA = {
    softmax = function(x)
      local m, s, y = -math.huge, 0, {}
      for _, v in ipairs(x) do m = math.max(m, v) end
      for j, v in ipairs(x) do y[j] = math.exp(v - m); s = s + y[j] end
      for j = 1, #x do y[j] = y[j] / s end
      return y
    end,
    layernorm = function(x, w, b)
      local mean, var, y = 0, 0, {}
      for _, v in ipairs(x) do mean = mean + v end
      mean = mean / #x
      for _, v in ipairs(x) do var = var + (v - mean) ^ 2 end
      local rstd = 1 / math.sqrt(var / #x + 1e-5)
      for j, v in ipairs(x) do y[j] = (v - mean) * rstd * w[j] + b[j] end
      return y
    end,
    rmsnorm = function(x, w)
      local q, y = 0, {}
      for _, v in ipairs(x) do q = q + v * v end
      local r = 1 / math.sqrt(q / #x + 1e-6)
      for j, v in ipairs(x) do y[j] = v * r * w[j] end
      return y
    end,
    sum = function(x)
      local s = 0
      for _, v in ipairs(x) do s = s + v end
      return { s }
    end,
    scan = function(x)
      local s, y = 0, {}
      for j, v in ipairs(x) do s = s + v; y[j] = s end
      return y
    end,
  }

  -- The inputs of op on the cpu, and the Lua float64 result as a flat list with the scale of
  -- each element (the sum of the magnitudes it is made of, for the allowed error).
  local ROWS, COLS = 3, 7
  local function case(op, dtype)
    local x = kb.randn({ ROWS, COLS }, dtype, 11, 'cpu')
    if op == 'matmul' then
      local b = kb.randn({ COLS, 5 }, dtype, 12, 'cpu')
      local xa, xb = x:totable(), b:totable()
      local want, scale = {}, {}
      for i = 1, ROWS do
        for j = 1, 5 do
          local s, m = 0, 0
          for k = 1, COLS do
            local t = xa[(i - 1) * COLS + k] * xb[(k - 1) * 5 + j]
            s, m = s + t, m + math.abs(t)
          end
          want[#want + 1], scale[#scale + 1] = s, m
        end
      end
      return { x, b }, { ROWS, 5 }, want, scale
    end
    local w = kb.randn({ COLS }, dtype, 13, 'cpu')
    local b = kb.randn({ COLS }, dtype, 14, 'cpu')
    local inputs = { x }
    if op == 'layernorm' or op == 'rmsnorm' then inputs[2] = w end
    if op == 'layernorm' then inputs[3] = b end
    local wv, bv = w:totable(), b:totable()
    local want, scale = {}, {}
    for _, row in ipairs(rows_of(x:totable(), ROWS, COLS)) do
      local mag = 1
      for _, v in ipairs(row) do mag = mag + math.abs(v) end
      for _, v in ipairs(LUA[op](row, wv, bv)) do want[#want + 1], scale[#scale + 1] = v, mag end
    end
    return inputs, op == 'sum' and { ROWS } or { ROWS, COLS }, want, scale
  end

  for _, op in ipairs(OPS) do
    it(op .. "'s CPU twin and float64 reference agree with Lua's float64 on a tiny case", function()
      for _, dtype in ipairs(DTYPES) do
        local inputs, shape, want, scale = case(op, dtype)
        local out, ref = kb.empty(shape, dtype, 'cpu'), kb.empty(shape, 'f64', 'cpu')
        p:kernel(op)(out, table.unpack(inputs))
        p:kernel(op .. '_ref')(ref, table.unpack(inputs))
        local got, exact = out:totable(), ref:totable()
        assert.equal(#want, #got)
        for i, w in ipairs(want) do
          -- the twin: rounded once to the dtype (half a unit of it), after f32 arithmetic over a few
          -- terms (well within 64 units of f32 of the terms' magnitudes)
          local allowed = U[dtype] * math.abs(w) + 64 * U.f32 * scale[i]
          assert.truthy(math.abs(got[i] - w) <= allowed, string.format('%s %s element %d: %.9g, want %.9g (allowed %.3g)',
            op, dtype, i, got[i], w, allowed))
          assert.truthy(math.abs(exact[i] - w) <= 1e-12 * scale[i], string.format('%s_ref %s element %d: %.17g, want %.17g',
            op, dtype, i, exact[i], w))
        end
      end
    end)
  end

  it('rounds to bf16 and f16 by hand to nearest even, ties to even, as the GPU does', function()
    -- a row sum of values of the dtype whose f32 sum (exact) falls on a tie, just past one, or
    -- past the largest f16
    local function sum(dtype, values)
      local out = kb.empty({ 1 }, dtype, 'cpu')
      p:kernel('sum')(out, kb.from_table(values, { 1, #values }, dtype, 'cpu'))
      return out:totable()[1]
    end
    assert.equal(1, sum('bf16', { 1, 2 ^ -8 }))                       -- tie: to even (1)
    assert.equal(1 + 2 ^ -6, sum('bf16', { 1 + 2 ^ -7, 2 ^ -8 }))     -- tie: to even (up)
    assert.equal(1 + 2 ^ -7, sum('bf16', { 1, 2 ^ -8, 2 ^ -15 }))     -- past the tie: up
    assert.equal(-(1 + 2 ^ -6), sum('bf16', { -1 - 2 ^ -7, -2 ^ -8 }))
    assert.equal(1, sum('f16', { 1, 2 ^ -11 }))
    assert.equal(1 + 2 ^ -9, sum('f16', { 1 + 2 ^ -10, 2 ^ -11 }))
    assert.equal(1 + 2 ^ -10, sum('f16', { 1, 2 ^ -11, 2 ^ -20 }))
    assert.equal(65504, sum('f16', { 65504, 8 }))                      -- below the tie with 65536
    assert.equal(math.huge, sum('f16', { 65504, 16 }))                 -- the tie: to even, inf
    assert.equal(2 ^ -24, sum('f16', { 2 ^ -24, 0 }))                  -- subnormals stay
    assert.equal(3 * 2 ^ -24, sum('f16', { 2 ^ -23, 2 ^ -24 }))
  end)

  it('refuses wrong dtypes and shapes, saying what was wrong', function()
    local x = kb.randn({ 2, 3 }, 'bf16', 1, 'cpu')
    for _, c in ipairs {
      { 'softmax', { kb.empty({ 2, 3 }, 'f32', 'cpu'), x }, 'out must be bf16 (as the inputs), got f32' },
      { 'sum', { kb.empty({ 3 }, 'bf16', 'cpu'), x }, 'out has 3 elements, want 2' },
      { 'sum_ref', { kb.empty({ 2 }, 'bf16', 'cpu'), x }, 'out must be f64 (the reference), got bf16' },
      { 'rmsnorm', { kb.empty({ 2, 3 }, 'bf16', 'cpu'), x, kb.empty({ 3 }, 'f32', 'cpu') },
        'argument 3 is f32, argument 2 is bf16: the inputs share one dtype' },
      { 'layernorm', { kb.empty({ 2, 3 }, 'bf16', 'cpu'), x, kb.empty({ 3 }, 'bf16', 'cpu'), kb.empty({ 4 }, 'bf16', 'cpu') },
        'b has 4 elements, want 3' },
      { 'matmul', { kb.empty({ 2, 2 }, 'bf16', 'cpu'), x, kb.empty({ 3, 4 }, 'bf16', 'cpu') },
        "out must be 2 x 4 (a's rows x b's columns), got 2 x 2" },
      { 'matmul', { kb.empty({ 2, 4 }, 'bf16', 'cpu'), x, kb.empty({ 2, 4 }, 'bf16', 'cpu') },
        'b has 2 rows, a has 3 columns' },
      { 'scan', { kb.empty({ 6 }, 'f64', 'cpu'), kb.empty({ 6 }, 'f64', 'cpu') },
        'argument 2 must be an f32, bf16 or f16 tensor, got f64' },
      { 'scan', { kb.empty({ 6 }, 'f32', 'cpu'), kb.empty({ 6 }, 'f32', 'cpu') },
        'x must be 2-D (rows x cols), got 1 dimensions' },
    } do
      local ok, err = pcall(p:kernel(c[1]), table.unpack(c[2]))
      assert.is_false(ok, c[1])
      assert.truthy(tostring(err):find('honest_ops.' .. c[1] .. ' (CPU entry) failed: ' .. c[3], 1, true), tostring(err))
    end
  end)

  it('has a CPU twin for every kernel, and a CUDA entry where nvcc built it', function()
    for _, op in ipairs(OPS) do
      for _, name in ipairs { op, op .. '_ref' } do assert.is_true(p:kernel(name):info().cpu, name) end
    end
  end)

  it('keeps ops.cuh compiling with NVRTC (where NVRTC is found), every kernel of every dtype in it', function()
    if not kb.cuda.nvrtc_version() then return pending('NVRTC not found') end
    local src = assert(util.slurp(ROOT .. '/tests/honest/ops.cuh'))
    local m = kb.cuda.compile(src, { name = 'ops.cuh', cache = false, arch = 'sm_90' })
    assert.equal('cubin', m:info().format)
    local cubin = m:cubin()
    for _, op in ipairs(OPS) do
      for _, dtype in ipairs(DTYPES) do
        assert.truthy(cubin:find(op .. '_' .. dtype, 1, true), op .. '_' .. dtype .. ' is not in the cubin')
      end
    end
  end)
end)
