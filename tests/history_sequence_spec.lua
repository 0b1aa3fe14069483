-- scripts/history_sequence.sh end to end on the cpu backend: a throwaway git
-- repository, six commits of a real benchmark measured for real, the slow
-- commit (four times the bytes: a shared CPU's timing wanders by several per
-- cent, and by 40 % under CI's load, a GPU's does not; with twice the bytes a
-- CI run missed the step, docs/HISTORY.md) found by `history check` at the commit it was
-- injected, and the HTML report written. The GPU run (5 % more bytes) is the
-- lead's: docs/HISTORY.md.
local sub = require 'helpers.subprocess'
local util = require 'helpers.util'

describe('scripts/history_sequence.sh (cpu)', function()
  it('finds the injected slowdown at its commit', function()
    if not util.run('command -v git'):match('git') then return pending('git is not installed') end
    local dir = sub.tmpdir()
    local cmd = string.format('cd %s && KLUABENCH_BACKEND=cpu COMMITS=6 SLOW_AT=6 MIB=2 RUNS=2 EXTRA=3.0 PROTOCOL=hot '
      .. 'bash scripts/history_sequence.sh %s 2>&1', util.q(sub.root()), util.q(dir))
    local out, code = util.run(cmd)
    assert.equal(0, code, out)
    assert.matches('history_sequence: found at the commit that slowed down', out, 1, true)
    assert.matches('commit 5 %x+: history check exit 0\n', out)
    assert.matches('commit 6 %x+: history check exit 1: REGRESSION', out)
    assert.is_string(sub.slurp(dir .. '/report.html'))
    util.run('rm -rf ' .. util.q(dir))
  end)
end)
