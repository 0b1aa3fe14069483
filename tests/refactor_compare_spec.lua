-- scripts/refactor_compare.sh, the before/after compare of a change, on the cpu backend: a dry
-- run with this tree as its own baseline (both sides measured in interleaved rounds, then
-- compared per protocol), its refusal to run without a GPU, and its --help.
local sub = require 'helpers.subprocess'
local util = require 'helpers.util'

local ROOT = sub.root()
local q = util.q

describe('scripts/refactor_compare.sh', function()
  it('compares a baseline build with this tree in a dry run on the cpu backend', function()
    local dir = sub.tmpdir()
    local out, code = util.run(string.format('cd %s && OUT=%s BASE=. BACKEND=cpu SWEEP_ARGS="--hidden 64 --seq 64" '
      .. 'REP_MS=5 ROUNDS=2 SPECS=0 CEILING=0 PROTOCOLS=cold bash scripts/refactor_compare.sh 2>&1', q(ROOT), q(dir)))
    assert.equal(0, code, out)
    assert.matches('before cold round 2: %d+ bundle%(s%)', out)
    assert.matches('after cold round 2: %d+ bundle%(s%)', out)
    assert.matches('| cold     |', out, 1, true)
    assert.matches('overall: PASS', out, 1, true)
    for _, f in ipairs { 'summary.md', 'log.txt', 'raw.tar.gz' } do
      assert.is_string(sub.slurp(dir .. '/' .. f), f)
    end
    util.run('rm -rf ' .. q(dir))
  end)

  it('refuses to run without a GPU unless BACKEND=cpu: a clear message and exit status 2', function()
    local dir = sub.tmpdir()
    sub.spit(dir .. '/nvidia-smi', '#!/bin/sh\necho "NVIDIA-SMI has failed" >&2\nexit 9\n')
    os.execute('chmod +x ' .. q(dir .. '/nvidia-smi'))
    local out, code = util.run(string.format('cd %s && PATH=%s:"$PATH" OUT=%s bash scripts/refactor_compare.sh 2>&1',
      q(ROOT), q(dir), q(dir .. '/out')))
    assert.equal(2, code, out)
    assert.matches('refactor_compare.sh: no GPU here (nvidia-smi -L lists none)', out, 1, true)
    assert.is_nil(sub.slurp(dir .. '/out/log.txt'))
    util.run('rm -rf ' .. q(dir))
  end)

  it('prints its header with --help', function()
    local out, code = util.run('cd ' .. q(ROOT) .. ' && bash scripts/refactor_compare.sh --help 2>&1')
    assert.equal(0, code, out)
    assert.matches('^Before/after a change on the GPU', out)
    assert.matches('ROUNDS', out, 1, true)
  end)
end)
