--- The short names of the stdlib, kb.<name>, and the module each loads.
-- The stdlib is grouped in folders by job (measure/, stats/, record/,
-- report/, cli/); these short names are the API that scripts use.
return {
  measure = 'kluabench.measure', bench = 'kluabench.measure.do_bench',
  stopping = 'kluabench.measure.stopping', clocks = 'kluabench.measure.clocks',
  interleave = 'kluabench.measure.interleave',
  stats = 'kluabench.stats', inference = 'kluabench.stats.inference', prng = 'kluabench.stats.prng',
  record = 'kluabench.record', env = 'kluabench.record.env', names = 'kluabench.record.names',
  ceilings = 'kluabench.measure.ceilings', liger = 'kluabench.record.liger',
  reader = 'kluabench.record.reader', point = 'kluabench.record.point', evidence = 'kluabench.record.evidence',
  schema = 'kluabench.record.schema', writer = 'kluabench.record.writer', migrate = 'kluabench.record.migrate',
  operation = 'kluabench.record.operation', implementation = 'kluabench.record.implementation',
  measurements = 'kluabench.record.measurements',
  output = 'kluabench.report', plot = 'kluabench.report.plot', compare = 'kluabench.report.compare',
  suite = 'kluabench.suite',
  progress = 'kluabench.report.progress', shard = 'kluabench.suite.shard',
  cli = 'kluabench.cli', help = 'kluabench.cli.help', apidoc = 'kluabench.cli.apidoc',
}
