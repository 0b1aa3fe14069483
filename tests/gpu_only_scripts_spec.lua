-- The scripts that only make sense on a GPU refuse the cpu backend (or a machine without a GPU) with a
-- message saying so and exit status 2, before they measure anything; their --help and the parts that
-- need no GPU still work.
local sub = require 'helpers.subprocess'
local util = require 'helpers.util'

local ROOT = sub.root()

describe('scripts that need a GPU', function()
  it('refuse the cpu backend with exit status 2 and say why', function()
    for _, case in ipairs {
      { 'scripts/event_overhead.lua' }, { 'scripts/trace_overhead.lua' }, { 'scripts/launch_overhead.lua' },
      { 'scripts/ab_spin.lua', '--sessions', '1' }, { 'scripts/ncu_target.lua', '--size', 'small' },
      { 'scripts/validate_ncu.lua', 'measure' }, { 'scripts/validate_ncu.lua', 'target', '--size', 'small' },
    } do
      local argv = { '--backend', 'cpu', ROOT .. '/' .. case[1], table.unpack(case, 2) }
      local r = sub.run(argv, { timeout = 60 })
      assert.equal(2, r.code, case[1] .. ': ' .. r.err)
      assert.matches('needs a GPU %(the cuda backend; this is cpu%)', r.err, 1, false, case[1])
      assert.equal('', r.out, case[1])
    end
    -- launch_overhead_user.lua already did, with --dry-run to try it without one
    local r = sub.run({ '--backend', 'cpu', ROOT .. '/scripts/launch_overhead_user.lua' })
    assert.equal(2, r.code)
    assert.matches('needs the cuda backend', r.err, 1, true)
    -- --help needs no GPU
    r = sub.run({ '--backend', 'cpu', ROOT .. '/scripts/ab_spin.lua', '--help' })
    assert.equal(0, r.code, r.err)
  end)

  it('in bash refuse a machine where nvidia-smi lists no GPU, with exit status 2', function()
    local dir = util.tmpdir()
    util.spit(dir .. '/nvidia-smi', '#!/bin/sh\necho "NVIDIA-SMI has failed" >&2\nexit 9\n')
    os.execute('chmod +x ' .. util.q(dir .. '/nvidia-smi'))
    for _, script in ipairs { 'gpu_compare.sh', 'validate_ncu.sh', 'refactor_compare.sh' } do
      local p = assert(io.popen(string.format('cd %s && env -u BACKEND PATH=%s:"$PATH" OUT=%s bash scripts/%s 2>&1; echo "rc=$?"',
        util.q(ROOT), util.q(dir), util.q(dir .. '/out'), script)))
      local text = p:read('a')
      p:close()
      assert.matches('no GPU here %(nvidia%-smi %-L lists none%)', text, 1, false, script)
      assert.matches('rc=2\n$', text, 1, false, script)
    end
    os.execute('rm -rf ' .. util.q(dir))
  end)
end)
