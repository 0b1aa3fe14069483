--- The stdlib's layers, lowest first: the one statement of who may require whom. A module requires
-- modules of its own layer and of the layers below, never above; the core's layers come first and
-- the optional subsystems after them, so the core never requires an optional one (it names one by
-- a computed require, listed in DYNAMIC, where a registry loads it on demand). Requires sit at the
-- top of a file: LAZY lists the few that do not, and why. tests/layout_spec.lua checks all of it;
-- docs/ARCHITECTURE.md draws this table.
local M = {}

--- The layers, lowest first: name, the modules (each a name and everything under it; exact: the
-- name alone), optional (a subsystem the core never requires) and what they hold.
M.LAYERS = {
  { name = 'base', modules = { 'kluabench.util', 'kluabench.modules', 'kluabench.layers' },
    what = 'argument checks and the option parser, files, JSON (lua-cjson reads it)' },
  { name = 'stats', modules = { 'kluabench.stats' }, what = 'statistics of samples, inference, seeded choices' },
  { name = 'measure', modules = { 'kluabench.measure' },
    what = 'protocols as values and their registry (one file each), sessions, stopping, clocks, ceilings' },
  { name = 'seeds', modules = { 'kluabench.trust.seeds' }, exact = true,
    what = "the run's seed key, which kb.randn's seeds mix in" },
  { name = 'kernels', modules = { 'kluabench.kernels' },
    what = "the kernel registry, each family's descriptor, Triton's compiled kernels, checks of outputs" },
  { name = 'trust', modules = { 'kluabench.trust' },
    what = 'the audit between samples and its census; the integrity of the timing functions' },
  { name = 'record', modules = { 'kluabench.record' },
    what = 'kernelindex bundles built from facts: documents, environment, names, evidence, reading, writing, verifying' },
  { name = 'result', modules = { 'kluabench.result' }, what = 'the one result model: sessions and points of bundles' },
  { name = 'views', modules = { 'kluabench.table', 'kluabench.progress', 'kluabench.compare' },
    what = 'the results table, the progress line, run-aware comparison' },
  { name = 'suite', modules = { 'kluabench.suite', 'kluabench.benchmarks' },
    what = 'the harness (declaration, sweep, policy) and the benchmarks declared on it' },
  { name = 'commands', modules = { 'kluabench.commands' }, what = 'the dispatcher and the basic commands' },
  { name = 'liger', optional = true, modules = { 'kluabench.liger' },
    what = "Liger-Kernel's CSV: import-liger and the liger-csv format" },
  { name = 'history', optional = true, modules = { 'kluabench.history' },
    what = "results over commits in SQLite or PostgreSQL (and the harness's --history)" },
  { name = 'dist', optional = true, modules = { 'kluabench.dist' },
    what = "distributed runs: run-all, slurm, merge, and the split of a sweep (the harness's --shard)" },
  { name = 'charts', optional = true, modules = { 'kluabench.charts' }, what = 'SVG charts and the HTML report' },
  { name = 'tools', optional = true, modules = { 'kluabench.apidoc', 'kluabench.repl' },
    what = "the API reference and help(), the REPL's views" },
  { name = 'kluabench', modules = { 'kluabench' }, exact = true,
    what = 'init.lua: the engine with every module reachable as kb.<name>' },
}

--- Modules that require a name computed at run time, and why that stays inside the rules.
M.DYNAMIC = {
  ['kluabench'] = 'kb.<name> loads the module that kluabench.modules maps the name to (the top layer)',
  ['kluabench.kernels'] = "loads kluabench.kernels.<family>, the descriptor of each of the engine's families",
  ['kluabench.measure'] = 'the registry: loads kluabench.measure.<name>, the protocol a run names (measure.MODES)',
  ['kluabench.measure.session'] = 'loads the sampling protocol a session names',
  ['kluabench.suite'] = 'loads the writer of the whole-file --format a run asks for (FORMATS: kernelindex, liger-csv)',
  ['kluabench.suite.declaration'] = 'loads the optional subsystem that offers an option a run gives (EXTENSIONS: '
    .. '--history, --shard)',
  ['kluabench.commands'] = 'loads the module of the command a user named (commands/registry.lua)',
  ['kluabench.commands.helpers'] = "loads a command's module for its usage line and help",
  ['kluabench.commands.list'] = "loads the API reference (the optional apidoc tools) for the kernels' one-line summaries",
  ['kluabench.apidoc.help'] = 'loads a documented module to find the value an entry names',
  ['kluabench.trust.integrity'] = 'loads the modules it watches (its MODULES) before the user script runs',
}

--- Requires that are not at the top of their file: module -> {required module = why}.
M.LAZY = {
  ['kluabench.benchmarks.rope'] = {
    ['kluabench.benchmarks.rope_peers'] = 'only for a Python peer provider: the seed run times the built-in kernels',
  },
  ['kluabench.suite'] = {
    ['kluabench.suite.usage'] = 'only for --help: the seed run prints none',
    ['kluabench.record.whole_file'] = 'only for a whole-file --format (kernelindex, liger-csv): the seed run writes '
      .. 'JSON Lines',
  },
  ['kluabench.record.implementation'] = {
    ['kluabench.util.command'] = "only for a user's code, to ask git its revision: the seed run's built-in providers "
      .. 'carry their build\'s',
  },
  ['kluabench.suite.run'] = {
    ['kluabench.measure.memory'] = 'only with --metric memory: the seed run does not load it',
    ['kluabench.measure.energy'] = 'only with --metrics energy: the seed run does not load it',
  },
}

--- The layer of a module: its index in M.LAYERS and the layer; nil for a module in no layer.
function M.layer_of(modname)
  local best, best_len, best_i
  for i, l in ipairs(M.LAYERS) do
    for _, prefix in ipairs(l.modules) do
      local under = not l.exact and modname:sub(1, #prefix + 1) == prefix .. '.'
      if (modname == prefix or under) and #prefix > (best_len or -1) then
        best, best_len, best_i = l, #prefix, i
      end
    end
  end
  return best_i, best
end

return M
