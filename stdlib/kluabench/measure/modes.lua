--- The timing modes, one list: what measure.run, measure.session, measure.protocol and the
-- harness's --protocol read. A new mode is a file beside this one (its `setup(self, fn)` for a
-- session and its `what` for records, as cold.lua has them) and a line here.
local M = {}

--- The modes in the order the harness offers them (--protocol; do_bench, its default, first).
M.NAMES = { 'do_bench', 'cold', 'hot', 'graph' }

--- The modes a session runs sample by sample: name -> module ({setup, what}). do_bench is
-- triton's algorithm (do_bench.lua), run whole by do_bench.measure.
M.SESSION = {
  cold = require 'kluabench.measure.cold',
  hot = require 'kluabench.measure.hot',
  graph = require 'kluabench.measure.graph',
}

--- name -> true for every mode.
M.IS = {}
for _, name in ipairs(M.NAMES) do M.IS[name] = true end

--- The names as "a, b, c or d", for messages.
function M.listed()
  return table.concat(M.NAMES, ', ', 1, #M.NAMES - 1) .. ' or ' .. M.NAMES[#M.NAMES]
end

return M
