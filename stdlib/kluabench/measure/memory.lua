--- Liger-Kernel's memory metric: the peak device memory allocated around one
-- call, in MB (2^20 bytes), as Liger's benchmark scripts measure it
-- (benchmark/scripts/utils.py: reset the allocator's peak, call, read
-- max_memory_allocated; 10 times; the 0.5, 0.2 and 0.8 quantiles).
--
-- kluabench counts the bytes its own allocator holds (kb.memory_stats: every
-- tensor's storage, the scratch of the built-in kernels included; on the cpu
-- backend the same count of host memory), so the figure means the same on
-- both backends: everything allocated while the call ran at its highest,
-- the inputs that were alive before it included, as torch's
-- max_memory_allocated() counts them. Before each iteration the scratch the
-- built-in kernels keep between calls is let go (kb.drop_scratch) and the
-- garbage collector runs, so that only what the call holds or allocates
-- counts, not buffers left by an earlier provider or tensors nobody holds.
local core = require 'kluabench.core'
local args = require 'kluabench.util.args'
local stats = require 'kluabench.stats'
local measure = require 'kluabench.measure'

local M = {}

--- Iterations per figure (Liger's _test_memory: 10).
M.ITERATIONS = 10

--- The quantiles recorded, as Liger's CSV has them: median, p20, p80.
M.QUANTILES = measure.QUANTILES

local MB = 1 << 20

--- Measures the peak memory of fn: `iterations` times (default 10) the garbage collector runs, the
-- allocator's peak is reset to what is allocated, fn is called and the device synchronised, and the
-- peak is read. Returns {median, p20, p80 (MB), values (MB, in order), iterations, before_mb (what
-- was allocated before the first call), device}.
--
-- opts: iterations, kb (the module giving memory_stats, reset_peak_memory, drop_scratch, synchronize:
-- tests pass a fake).
--
-- @signature memory.peak(fn [, opts]) -> {median, p20, p80, values, iterations, before_mb}
-- @section measure
-- @example
--   local x = kb.randn({1024}, "f32", 1)
--   local m = memory.peak(function() local y = x * 2 end)
--   print(m.median, m.before_mb)
function M.peak(fn, opts)
  opts = opts or {}
  if type(fn) ~= 'function' then
    local mt = getmetatable(fn)
    if not (type(mt) == 'table' and type(mt.__call) == 'function') then
      error("bad argument #1 to 'peak' (function expected, got " .. type(fn) .. ')', 2)
    end
  end
  local n = opts.iterations or M.ITERATIONS
  if math.type(n) ~= 'integer' or n < 1 then
    error("bad argument #2 to 'peak' (opts.iterations must be a positive integer, got " .. tostring(n) .. ')', 2)
  end
  local kb = opts.kb or core
  local values, before
  values = {}
  for i = 1, n do
    -- the built-in kernels' scratch is counted while a call uses it, as torch counts its temporaries
    kb.synchronize()
    kb.drop_scratch()
    collectgarbage('collect')
    local now = kb.reset_peak_memory()
    if i == 1 then before = now end
    fn()
    kb.synchronize()
    values[i] = kb.memory_stats().peak_bytes / MB
  end
  local q = stats.quantiles(values, M.QUANTILES)
  return { median = q[1], p20 = q[2], p80 = q[3], values = values, iterations = n, before_mb = before / MB,
    device = kb.memory_stats().device }
end

--- The protocol value of the memory metric, for records (its spec says how the figure is taken); the
-- harness calls memory.peak itself.
--
-- @signature memory.protocol([opts]) -> protocol
-- @section measure
-- @example
--   print(memory.protocol():spec({timed = "the full pass"}).measurement.timer)
function M.protocol(opts)
  args.check('memory.protocol', 1, opts, 'table|nil', 'options')
  opts = opts or {}
  local n = opts.iterations or M.ITERATIONS
  return measure.protocol {
    name = 'memory', title = 'peak memory', params = { iterations = n, quantiles = M.QUANTILES },
    run = function(self, fn)
      local m = M.peak(fn, { iterations = self.params.iterations })
      -- a protocol's samples are times; the memory figure has none (the harness records m itself)
      return { samples = { 0 }, used = { memory = m } }
    end,
    spec = function(self, info)
      return {
        harness = { name = 'kluabench' },
        measurement = { timer = 'kluabench_peak_allocated', primaryStatistic = 'median',
          iterations = self.params.iterations, quantiles = self.params.quantiles, unit = 'MB (2^20 bytes)' },
        comparability = {
          family = 'kluabench_memory',
          notes = 'Measured: the peak of the bytes kluabench\'s allocator held (kb.memory_stats: every tensor\'s '
            .. 'storage, inputs included) while running ' .. (info.timed or 'the benchmarked function') .. ', the '
            .. 'peak reset before each of ' .. self.params.iterations .. ' calls, as Liger-Kernel\'s _test_memory '
            .. 'reads torch.cuda.max_memory_allocated; quantiles 0.5/0.2/0.8 in MB (2^20 bytes).'
            .. ((info.backend or 'cpu') == 'cpu' and ' Run on the cpu backend: host memory of the same allocator.' or ''),
        },
      }
    end,
  }
end

return M
