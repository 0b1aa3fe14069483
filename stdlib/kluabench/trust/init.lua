--- kluabench.trust: the parts of the defences against a kernel that games the
-- timer that sit below the kernels' checks (docs/TRUST.md says which trick
-- each defence catches, and what is not defended):
--
--   seeds      the run's seed key: kb.randn's seeds mixed with a key drawn at
--              run time and written into the records
--   census     the thread, stream and L2 observations the audits use
--   precision  the norm-wise error check against the declared dtype
--
-- The harness's part is in the suite layer: kluabench.trust.audit (audited
-- samples at random points of a session and after it: fresh inputs, outputs
-- against the reference, inputs unchanged, guard bytes, busy threads,
-- foreign streams, persisting L2) and kluabench.trust.integrity (the timing
-- and statistics functions as they were before the script ran).
local M = {}

M.seeds = require 'kluabench.trust.seeds'
M.census = require 'kluabench.trust.census'
M.precision = require 'kluabench.trust.precision'

return M
