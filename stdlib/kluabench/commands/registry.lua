--- The built-in commands of the kluabench executable, in the order `--help`
-- lists them: the one list of them. engine/main.c reads it before any other
-- Lua runs (a first word that is one of these names is a command, anything
-- else a script; `device = false` marks the commands that never touch a
-- device, so that no backend is selected for them), and the dispatcher
-- (kluabench.commands), --help, usage errors and the API reference read it too.
--
-- An entry: name (as typed), module (the module named, loaded
-- only when the command runs), summary (one line), device (false: the
-- command only starts other kluabench processes or reads their files). The
-- usage line and the help text are the module's own (its USAGE and help);
-- only a command without a module (help) carries usage and help here.
--
-- This file requires nothing: main.c loads it in a state that has only the
-- standard libraries.
return {
  { name = 'run', module = 'kluabench.commands.run', summary = "run a benchmark script (the same as 'kluabench SCRIPT')" },
  { name = 'verify', module = 'kluabench.commands.verify', summary = 'recompute the digests of record bundles and check them' },
  { name = 'compare', module = 'kluabench.commands.compare', summary = 'compare two result sets and flag regressions' },
  { name = 'import-liger', module = 'kluabench.liger.command',
    summary = 'convert Liger-Kernel benchmark CSV results into records' },
  { name = 'plot', module = 'kluabench.charts.plot_command', summary = 'draw results as an SVG chart' },
  { name = 'env', module = 'kluabench.commands.env', summary = 'print the execution environment (versions, backend, device)' },
  { name = 'list', module = 'kluabench.commands.list', summary = 'list the benchmark scripts, examples and kernels' },
  { name = 'run-all', device = false, module = 'kluabench.dist.run_all',
    summary = 'run a benchmark script as one process per GPU of this host, and merge' },
  { name = 'slurm', device = false, module = 'kluabench.dist.slurm', summary = 'write (and submit) a Slurm job array that runs a script in shards' },
  { name = 'merge', device = false, module = 'kluabench.dist.merge',
    summary = 'merge the shard files of run-all or slurm, checking every point arrived once' },
  { name = 'submission', device = false, module = 'kluabench.commands.submission',
    summary = 'write a kernelindex submission document of results files' },
  { name = 'history', module = 'kluabench.history.command',
    summary = 'results over commits in a database: add, list, trend, compare, check for regressions' },
  { name = 'report', module = 'kluabench.charts.report_command', summary = 'write a self-contained HTML report of results or a history' },
  {
    name = 'help',
    device = false,
    summary = "show this help, or a command's ('kluabench help COMMAND')",
    usage = 'kluabench help [COMMAND]',
    help = "Shows the options and commands, or the help of one command.",
  },
}
