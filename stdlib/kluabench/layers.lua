--- The layers of the stdlib, lowest first: the one statement of who may require whom.
-- A module may require modules of its own layer and of the layers below it, never of a layer above
-- (data flows down, results flow up), and no module may reach itself through its requires, lazy
-- ones (inside functions) included. tests/layout_spec.lua reads every require of
-- stdlib/kluabench/ and fails on an upward one, on a circle, on a module in no layer and on a
-- require of a name computed at run time that DYNAMIC does not list; docs/ARCHITECTURE.md draws
-- this table. kluabench.core and kluabench.host (the engine, in C) are below every layer.
local M = {}

--- The layers, lowest first: name, the modules (each a name and everything under it; exact: the
-- names alone), what they hold.
M.LAYERS = {
  { name = 'base', modules = { 'kluabench.io', 'kluabench.modules', 'kluabench.layers' },
    what = 'JSON, CSV, files, the command line and argument checks (io/); the map of short names; this table' },
  { name = 'stats', modules = { 'kluabench.stats' },
    what = 'statistics of samples, inference, seeded choices' },
  { name = 'measure', modules = { 'kluabench.measure' },
    what = 'timing: protocols (one file per mode), sessions, stopping, clocks, interleaving, ceilings' },
  { name = 'trust', modules = { 'kluabench.trust' },
    what = "defences against a kernel that games the timer: the run's seed key, thread and stream census, precision" },
  { name = 'kernels', modules = { 'kluabench.kernels' },
    what = "the kernel registry and each family's descriptor, Triton's compiled kernels, checks of outputs" },
  { name = 'record', modules = { 'kluabench.record' },
    what = 'kernelindex bundles: documents, environment, names, evidence, reading, writing, Liger interop' },
  { name = 'report', modules = { 'kluabench.report' },
    what = 'views of records: tables, plots, compare, HTML, progress' },
  { name = 'history', modules = { 'kluabench.history' },
    what = 'results over commits in a database' },
  { name = 'suite', modules = { 'kluabench.suite', 'kluabench.benchmarks' },
    what = 'the benchmark harness (its shards, audits and integrity), and the benchmarks declared on it' },
  { name = 'cli', modules = { 'kluabench.commands', 'kluabench.repl' },
    what = "the commands, their dispatcher, help and the API reference; the REPL's views" },
  { name = 'kluabench', modules = { 'kluabench' }, exact = true,
    what = 'init.lua: the engine with every module above reachable as kb.<name>' },
}

--- Modules that require a name computed at run time, and why that stays inside the rules.
M.DYNAMIC = {
  ['kluabench'] = 'kb.<name> loads the module that kluabench.modules maps the name to (the top layer)',
  ['kluabench.kernels'] = "loads kluabench.kernels.<family>, the descriptor of each of the engine's families",
  ['kluabench.commands'] = 'loads kluabench.commands.registry.<module>, the command a user named',
  ['kluabench.commands.helpers'] = "loads a command's module for its usage line and help",
  ['kluabench.apidoc.help'] = 'loads a documented module to find the value an entry names',
  ['kluabench.trust.integrity'] = 'loads the timing and statistics modules it watches (its MODULES, all in '
    .. 'the suite layer or below) before the user script runs, so that their upvalues are bound first',
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
