-- The Makefile's targets build what they need: `make bench` the binary alone (its first number comes in under a
-- minute on 2 cores from a clean clone), `make all` and `make test` the plugins, corpora and cubins the specs load.
-- Read from `make -n` (nothing is built) into a temporary BUILD folder.
local sub = require 'helpers.subprocess'
local util = require 'helpers.util'

local ROOT = sub.root()

-- What `make -n TARGET` would do with objects in a fresh folder: its text, and the folder.
local function dry_run(target)
  local dir = util.tmpdir()
  local build = dir .. '/build'
  local p = assert(io.popen(string.format('make -C %s -n %s BUILD=%s 2>&1', util.q(ROOT), target, util.q(build))))
  local text = p:read('a')
  p:close()
  os.execute('rm -rf ' .. util.q(dir))
  return text, build
end

describe('make', function()
  if not os.execute('command -v make >/dev/null 2>&1') then return pending('make is not installed') end

  it('bench builds the binary and runs the benchmark, and nothing the tests load', function()
    local text, build = dry_run('bench')
    assert.truthy(text:find(build .. '/kluabench scripts/llama4_rope.lua', 1, true), text:sub(-2000))
    assert.truthy(text:find('-o ' .. build .. '/kluabench ', 1, true), 'no link line')
    for _, dir in ipairs { '/plugins/', '/exploits/', '/honest/', '/usercode/', '/lua/' } do
      assert.is_nil(text:find(build .. dir, 1, true), dir)
    end
  end)

  it('all (which test runs first) builds the plugins and the corpora too', function()
    local text, build = dry_run('all')
    for _, dir in ipairs { '/plugins/', '/exploits/', '/honest/', '/lua/' } do
      assert.truthy(text:find(build .. dir, 1, true), dir)
    end
    assert.truthy(util.slurp(ROOT .. '/Makefile'):find('\ntest: deps\n\t@$(MAKE) --no-print-directory all\n', 1, true))
  end)
end)
