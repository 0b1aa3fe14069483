--- kluabench.trust: what the harness does so that a kernel cannot game the
-- timer (docs/TRUST.md says which trick each defence catches, and what is
-- not defended). kluabench.suite uses it for every timed session:
--
--   seeds      the run's seed key: kb.randn's seeds mixed with a key drawn at
--              run time and written into the records
--   integrity  the timing and statistics functions as they were before the
--              script ran, and which of them a script replaced
--   audit      audited samples at random points of a session and after it:
--              fresh inputs, outputs against the reference, inputs unchanged,
--              guard bytes, busy threads, foreign streams, persisting L2
--   census     the thread, stream and L2 observations the audits use
--   precision  the norm-wise error check against the declared dtype
local M = {}

M.seeds = require 'kluabench.trust.seeds'
M.integrity = require 'kluabench.trust.integrity'
M.audit = require 'kluabench.trust.audit'
M.census = require 'kluabench.trust.census'
M.precision = require 'kluabench.trust.precision'

return M
