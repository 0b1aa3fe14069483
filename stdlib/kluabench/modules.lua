--- The short names of the stdlib, the one map of them: kb.<name> loads the
-- module (stdlib/kluabench/init.lua), help() and docs/API.md name a module's
-- functions by it (stats.median, record.from_result; apidoc/init.lua), and
-- the REPL completes it. A module is named after its file, or its folder for
-- an init.lua, unless that name is taken ("history_db" for history/db.lua).
local M = {}

--- Short name -> module.
M.MODULES = {
  stats = 'kluabench.stats', inference = 'kluabench.stats.inference', prng = 'kluabench.stats.prng',
  measure = 'kluabench.measure', do_bench = 'kluabench.measure.do_bench',
  stopping = 'kluabench.measure.stopping', clocks = 'kluabench.measure.clocks',
  interleave = 'kluabench.measure.interleave', ceilings = 'kluabench.measure.ceilings',
  memory = 'kluabench.measure.memory', energy = 'kluabench.measure.energy',
  seeds = 'kluabench.trust.seeds', trust = 'kluabench.trust',
  kernels = 'kluabench.kernels', check = 'kluabench.kernels.check', checker = 'kluabench.kernels.checker',
  triton = 'kluabench.kernels.triton',
  record = 'kluabench.record', env = 'kluabench.record.env', names = 'kluabench.record.names',
  liger = 'kluabench.liger', reader = 'kluabench.record.reader', result = 'kluabench.result', verify = 'kluabench.record.verify',
  evidence = 'kluabench.record.evidence', writer = 'kluabench.record.writer',
  whole_file = 'kluabench.record.whole_file',
  operation = 'kluabench.record.operation',
  implementation = 'kluabench.record.implementation',
  noise = 'kluabench.record.noise',
  plot = 'kluabench.charts.plot', compare = 'kluabench.compare',
  progress = 'kluabench.progress', html = 'kluabench.charts.html',
  history = 'kluabench.history', history_db = 'kluabench.history.db', history_schema = 'kluabench.history.schema',
  history_store = 'kluabench.history.store', history_detect = 'kluabench.history.detect',
  history_point = 'kluabench.history.point',
  suite = 'kluabench.suite', shard = 'kluabench.dist.split', policy = 'kluabench.suite.policy',
  integrity = 'kluabench.trust.integrity', rope_benchmarks = 'kluabench.benchmarks.rope',
  suggest = 'kluabench.util.args', show = 'kluabench.repl.show',
  commands = 'kluabench.commands', help = 'kluabench.apidoc.help', apidoc = 'kluabench.apidoc',
}


--- Short names whose modules have no section in the API reference: the command line's machinery and the internals
-- of records, the harness and the audits, whose functions a benchmark never calls (plain comments document them).
M.UNDOCUMENTED = { commands = true, apidoc = true, names = true, env = true, operation = true, noise = true,
  shard = true, policy = true, integrity = true, seeds = true, suggest = true, evidence = true,
  implementation = true }

--- The module a short name loads, or nil.
function M.module(name)
  return M.MODULES[name]
end

return M
