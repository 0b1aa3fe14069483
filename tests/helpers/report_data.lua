-- A results file for the report specs, made of today's bundles (tests/helpers/bundles.lua): a sweep
-- with --runs 3 whose sessions run at different speeds, so that a point's aggregate (the mean of its
-- session medians) differs from each session's; a cold run beside it (two protocols in one chart);
-- backward points: a noisy one (ci95 far above 10 %), one with a failed session and one no
-- session of which passed. Medians in the thousands of us with decimals, the
-- numbers whose digits wrapped in the old report.
local bundles = require 'helpers.bundles'
local writer = require 'kluabench.record.writer'
local cold = require 'kluabench.measure.cold'

local M = {}

M.SEQS = { 1024, 2048, 4096 }
M.DEVICE = 'NVIDIA H200'

-- five samples around m (ms)
local function around(m) return { m * 0.99, m * 0.995, m, m * 1.005, m * 1.01 } end

--- The bundles, in the order a --runs 3 sweep writes them (session 1 of every point, then 2, 3).
function M.bundles()
  local out = {}
  local function add(o)
    o.device = o.device or M.DEVICE
    out[#out + 1] = bundles.make(o)
  end
  local speeds = { 1, 1.02, 1.045 }
  for i = 1, 3 do
    for _, seq in ipairs(M.SEQS) do
      add { provider = 'fused', seq = seq, session = { i, 3 }, samples = around(4.33031 * speeds[i] * seq / 1024) }
      add { provider = 'reference', seq = seq, session = { i, 3 }, samples = around(12.3456 * speeds[i] * seq / 1024) }
    end
    -- the third session failed its check
    add { provider = 'fused', mode = 'backward', seq = 2048, session = { i, 3 }, samples = around(6.5 + i),
      status = i == 3 and 'incorrect_numerical' or nil, reasons = i == 3 and { 'check failed: rel_l2 0.3' } or nil }
    -- noisy: session medians 1, 3, 9 ms
    add { provider = 'fused', mode = 'backward', seq = 4096, session = { i, 3 }, samples = around(3 ^ (i - 1)) }
  end
  for _, seq in ipairs(M.SEQS) do
    add { provider = 'fused', seq = seq, protocol = cold.make {}, samples = around(5.1234 * seq / 1024) }
  end
  -- no session passed
  add { provider = 'reference', mode = 'backward', seq = 2048, samples = around(20), status = 'incorrect_numerical',
    reasons = { 'check failed' } }
  return out
end

--- Writes M.bundles() as JSON Lines to path (raw samples beside it); returns the bundles.
function M.write(path)
  local list = M.bundles()
  os.remove(path)
  os.remove(require('kluabench.record.evidence').samples_path(path))
  for _, b in ipairs(list) do assert(writer.append(path, b)) end
  return list
end

return M
