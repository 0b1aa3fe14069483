-- The kernel seam: the backend interface knows no kernel, each built-in
-- kernel family is a descriptor in the registry (kluabench.kernels), and
-- records and `kluabench list` read the registry.
local kb = require 'kluabench'
local kernels = require 'kluabench.kernels'
local record = require 'kluabench.record'
local util = require 'helpers.util'

local ROOT = package.searchpath('kluabench.kernels', package.path)
  :match('^(.-)/?stdlib/kluabench/kernels/init%.lua$')
local function file(path) return assert(util.slurp((ROOT ~= '' and ROOT .. '/' or '') .. path), path) end

-- Every name a kernel family goes by: the engine's families, their bindings
-- and the record kernel names of their descriptors.
local function kernel_words()
  local words = { rope = true }
  for _, f in ipairs(kb.builtin_kernels()) do words[f] = true end
  for _, f in ipairs(kernels.FAMILIES) do
    if f.binding then
      words[f.family], words[f.binding] = true, true
      for name in pairs(f.kernels) do words[name] = true end
    end
  end
  return words
end

describe('the backend interface', function()
  for _, path in ipairs { 'engine/backend/backend.h', 'engine/backend/backend.c', 'engine/backend/backend_cpu.c', 'engine/backend/backend_cuda.c' } do
    it(path .. ' names no kernel', function()
      local text = file(path):lower()
      for word in pairs(kernel_words()) do
        -- a word of its own or a prefix ("kb_rope_"), not "properties"
        assert.is_nil(text:find('%f[%a]' .. word:lower() .. '%f[^%a]'), path .. ' mentions ' .. word)
      end
    end)
  end
end)

describe('kluabench.kernels', function()
  it('has a family for every built-in kernel of the engine, with its binding', function()
    local families = {}
    for _, f in ipairs(kernels.FAMILIES) do families[f.family] = f end
    for _, name in ipairs(kb.builtin_kernels()) do
      assert.is_table(families[name], name)
      assert.is_table(kb[families[name].binding], 'kb.' .. name)
    end
  end)

  it('gives records the rope title, sources and cost model', function()
    assert.are.equal(kernels.KERNELS, record.KERNELS)
    assert.are.equal('Llama 4 rotary position embedding', record.kernel_title('llama4_rope'))
    require 'kluabench.liger' -- registers the titles of the kernels Liger benchmarks and kluabench imports
    assert.are.equal('RMS normalization', record.kernel_title('rms_norm'))
    assert.are.equal('nope', record.kernel_title('nope'))
    local k = kernels.kernel('llama4_rope')
    assert.are.equal('rope', k.family)
    assert.same({ 'kernels/rope.h', 'kernels/rope.cu', 'kernels/rope_cpu.c', 'kernels/rope_freqs_cpu.c',
      'kernels/dtype.h' }, k.sources)
    local bytes, flops = k.cost({ hidden = 4096, seq = 2048, q_heads = 32, kv_heads = 8 }, 'bf16', 'forward')
    assert.are.equal(42991616, bytes)
    assert.are.equal(31457280, flops)
  end)

  it("costs rope with the table it reads: the first halves of cos and sin in the dtype, llama4 its f32 pairs", function()
    local p = { hidden = 4096, seq = 2048, q_heads = 32, kv_heads = 8 }
    local n, d = 2048 * 40 * 128, 128
    for dtype, elt in pairs { bf16 = 2, f16 = 2, f32 = 4, f64 = 8 } do
      local rope_bytes, rope_flops = kernels.kernel('rope').cost(p, dtype, 'forward')
      -- q and k read and written; cos [S, D/2] and sin [S, D/2] read in the dtype
      assert.are.equal(2 * n * elt + 2 * 2048 * (d // 2) * elt, rope_bytes)
      assert.are.equal(3 * n, rope_flops)
      assert.are.equal(2 * rope_bytes, (kernels.kernel('rope').cost(p, dtype, 'full')))
      -- llama4: the f32 (cos, sin) pairs [S, D/2, 2]
      assert.are.equal(2 * n * elt + 2048 * d * 4, (kernels.kernel('llama4_rope').cost(p, dtype, 'forward')))
    end
    assert.is_nil(kernels.kernel('rope').cost(p, 'bf16', 'sideways'))
  end)

  it('names the table each RoPE kernel reads in its implementation document (support.layouts)', function()
    local w, op = record.workload { kernel = 'rope', dtype = 'bf16',
      parameters = { hidden = 512, seq = 64, q_heads = 8, kv_heads = 8 } }
    assert.is_table(w)
    local function layouts(kernel)
      return record.builtin_implementation { kernel = kernel, provider = 'fused', backend = 'cpu',
        operation_digest = record.digest(op) }.spec.support.layouts
    end
    assert.same({ "cos, sin [1|batch, seq, head_dim] in q's dtype", 'q, k [batch, seq, heads, head_dim]' }, layouts('rope'))
    assert.same({ 'freqs [seq, head_dim/2, (cos, sin)] f32', 'q, k [batch, seq, heads, head_dim]' }, layouts('llama4_rope'))
  end)

  it("puts a RoPE record on kernelindex's workload, whatever the cost model (batch 1 only)", function()
    -- the digest kernelindex's importer gives this case (computed from its rules, independently)
    local w = record.workload { kernel = 'llama4_rope', dtype = 'bf16',
      parameters = { hidden = 4096, seq = 2048, q_heads = 32, kv_heads = 8, batch = 1 } }
    assert.are.equal('sha256:ddc4e6ddffad8f48e7172e8491b966d0388c2656757a3e5d7566f577b98ca6f5', record.digest(w))
    assert.are.equal('Llama 4 rotary position embedding · seq=2048, hidden=4096, q_heads=32, kv_heads=8 · bf16',
      w.metadata.title)
    -- another batch is not Liger's batch-1 workload
    local other = record.workload { kernel = 'llama4_rope', dtype = 'bf16',
      parameters = { hidden = 4096, seq = 2048, q_heads = 32, kv_heads = 8, batch = 2 } }
    assert.are_not.equal(record.digest(w), record.digest(other))
    assert.are.equal(2, other.spec.axes.batch)
  end)

  it('lists the functions of each family with a binding', function()
    local rope = {}
    for _, f in ipairs(kernels.functions(kb)) do
      local binding, fn = f.name:match('^kb%.([%w_]+)%.([%w_]+)$')
      assert.is_function(kb[binding][fn], f.name)
      if binding == 'rope' then rope[#rope + 1] = f.name end
    end
    assert.same({ 'kb.rope.cos_sin', 'kb.rope.floor', 'kb.rope.floor_fwd_bwd', 'kb.rope.freqs', 'kb.rope.llama4_bwd',
      'kb.rope.llama4_fwd', 'kb.rope.llama4_fwd_bwd', 'kb.rope.neox_bwd', 'kb.rope.neox_floor',
      'kb.rope.neox_floor_fwd_bwd', 'kb.rope.neox_fwd', 'kb.rope.neox_fwd_bwd' }, rope)
  end)

  it('refuses a descriptor that is not a table', function()
    assert.has_error(function() kernels.register('x', 1) end,
      "bad argument #2 to 'register' (descriptor table expected, got number)")
  end)
end)

describe('kluabench list', function()
  it('shows the kernels of the registry', function()
    local out, code = util.run(util.q(util.bin()) .. ' list --format json')
    assert.are.equal(0, code)
    local got = {}
    for _, k in ipairs(require('cjson').decode(out).kernels) do got[#got + 1] = k.name end
    local want = {}
    for _, f in ipairs(kernels.functions(kb)) do want[#want + 1] = f.name end
    assert.same(want, got)
    assert.is_true(#got > 0)
  end)

  it('reads the families from the registry, not from a list of its own', function()
    local list = require 'kluabench.commands.list'
    local fake = { functions = function(k)
      return { { name = 'kb.foo.bar', family = 'foo' } }
    end }
    assert.same({ { name = 'kb.foo.bar', about = '' } }, list.kernels(kb, fake))
  end)
end)
