-- A vector-add benchmark with no C: y:add_(x) timed by the harness, checked against a float64 reference made of tensor ops.
--
--   kluabench examples/vector_add_benchmark.lua --sweep size           1 to 256 Mi elements
--   kluabench examples/vector_add_benchmark.lua --mi 64 --dtype bf16 --protocol cold
local kb = require 'kluabench'

local ULP = { f32 = 2 ^ -23, bf16 = 2 ^ -7, f16 = 2 ^ -10 } -- one unit in the last place, relative

-- The timed function, which the check runs too (in graph mode the harness passes each rotated input set s).
local function add(t) return function(s) s = s or t; s.y:add_(s.x) end end

kb.suite.main {
  name = 'vector_add',
  summary = 'Times y:add_(x), y += x in place on 1-D tensors; GB/s counts x and y read and y written.',
  axes = { { name = 'mi', default = 16, max = 1 << 12, help = 'elements, in units of 2^20' } },
  sweeps = { { name = 'size', axis = 'mi', values = { 1, 16, 64, 256 } } },
  dtypes = { 'f32', 'bf16', 'f16' },
  modes = { 'forward' },
  providers = { 'add_' },
  setup = function(p)
    return { x = kb.randn({ p.mi << 20 }, p.dtype, 1), y = kb.randn({ p.mi << 20 }, p.dtype, 2) }
  end,
  run = function(p, provider, mode, t) return add(t) end,
  check = function(p, provider, t)
    local want = t.y:cast('f64') + t.x:cast('f64') -- exact: the sum of two rounded inputs, in f64
    add(t)()
    local diff, scale = kb.max_abs_diff(t.y, want), (want * want):max():item() ^ 0.5
    if not (diff <= ULP[p.dtype] * scale) then
      kb.suite.wrong_result(('vector_add: y + x is off by %g (%s allows %g)'):format(diff, p.dtype, ULP[p.dtype] * scale))
    end
    return { reference = 'y + x in f64 (tensor ops)', passed = true, maxAbsDiff = diff }
  end,
  -- what one call leaves in y, for the harness's audits during timing (docs/TRUST.md)
  reference = function(p, provider, mode, t) return { y = t.y:cast('f64') + t.x:cast('f64') } end,
  cost = function(p) return 3 * (p.mi << 20) * (p.dtype == 'f32' and 4 or 2), p.mi << 20 end,
}
