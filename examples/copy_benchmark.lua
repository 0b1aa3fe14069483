-- A whole new benchmark in a few lines: tensor copy over sizes, with the harness's options, checks, table and records.
--
--   kluabench examples/copy_benchmark.lua --sweep size        1 to 1024 MiB
--   kluabench examples/copy_benchmark.lua --mib 64,256 --protocol cold --format jsonl
--   kluabench examples/copy_benchmark.lua --help              every option
local kb = require 'kluabench'

-- The timed function: fn() copies the session's inputs t; in graph mode the
-- harness passes each rotated input set s instead.
local function copy(t) return function(s) s = s or t; s.dst:copy_(s.src) end end

kb.suite.main {
  name = 'tensor_copy',
  summary = 'Times dst:copy_(src) of a 1-D tensor; GB/s counts the bytes read and written.',
  axes = { { name = 'mib', default = 64, max = 1 << 16, help = 'tensor size in MiB' } },
  sweeps = { { name = 'size', axis = 'mib', values = { 1, 16, 256, 1024 } } },
  dtypes = { 'f32', 'bf16' },
  modes = { 'forward' },
  providers = { 'copy_' },
  setup = function(p)
    local n = p.mib * (1 << 20) // (p.dtype == 'f32' and 4 or 2)
    return { src = kb.randn({ n }, p.dtype, 1), dst = kb.zeros({ n }, p.dtype) }
  end,
  run = function(p, provider, mode, t) return copy(t) end,
  check = function(p, provider, t)
    copy(t)()
    local diff = kb.max_abs_diff(t.dst, t.src)
    if diff ~= 0 then kb.suite.wrong_result('tensor_copy: the copy differs by ' .. diff) end
    return { reference = 'the source tensor', passed = true, maxAbsDiff = 0 }
  end,
  -- what one call leaves in dst, for the harness's audits during timing (docs/TRUST.md)
  reference = function(p, provider, mode, t) return { dst = t.src:clone() } end,
  cost = function(p) return 2 * p.mib * (1 << 20), 0 end,
}
