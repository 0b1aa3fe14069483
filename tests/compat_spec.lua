-- The old names of moved modules (stdlib/compat/, searched after the stdlib:
-- engine/host/main.c's package.path) still load, for one release, and give the
-- very table the new name gives: each file there is one require of the new
-- name, so the two can never drift apart.
local sub = require 'helpers.subprocess'
local util = require 'helpers.util'
local ROOT = sub.root()

local function compat_files()
  local p = assert(io.popen('cd ' .. util.q(ROOT .. '/stdlib/compat') .. " && find . -name '*.lua' | sort"))
  local out = {}
  for line in p:lines() do out[#out + 1] = line:gsub('^%./', '') end
  p:close()
  return out
end

describe('stdlib/compat', function()
  local files = compat_files()

  it('holds the old names of the moved modules', function()
    assert.is_true(#files >= 3)
  end)

  for _, path in ipairs(files) do
    local old = path:gsub('%.lua$', ''):gsub('/init$', ''):gsub('/', '.')
    it(old .. ' is one require of its new name, and the same table', function()
      local text = assert(util.slurp(ROOT .. '/stdlib/compat/' .. path))
      local new = text:match("\nreturn require '([%w_.]+)'\n$")
      assert.is_string(new, path .. ' is not "-- comment" + "return require \'NEW\'"')
      assert.is_nil(package.searchpath(old, (package.path:gsub('[^;]*/stdlib/compat/%?%.lua;?', ''))),
        old .. ' is still a module of the stdlib: its compat file shadows nothing')
      assert.is_string(package.searchpath(new, package.path), new)
      assert.are.equal(require(new), require(old))
    end)
  end
end)

describe('the old short names (kluabench.modules.ALIASES)', function()
  local kb = require 'kluabench'
  local modules = require 'kluabench.modules'

  it('kb.bench is kb.do_bench and kb.output is kb.report, for one release', function()
    assert.same({ bench = 'do_bench', output = 'report' }, modules.ALIASES)
    -- in a fresh process: a spec run before this one may have reloaded the modules
    local code = 'local kb = require "kluabench"; io.write(tostring(kb.bench == kb.do_bench), " ", '
      .. 'tostring(kb.do_bench == require "kluabench.measure.do_bench"), " ", tostring(kb.output == kb.report), " ", '
      .. 'tostring(kb.report == require "kluabench.report"))'
    local p = assert(io.popen(util.q(util.bin()) .. ' -e ' .. util.q(code)))
    local out = p:read('a')
    p:close()
    assert.equal('true true true true', out)
    assert.is_function(kb.bench.do_bench_protocol)
    assert.is_function(kb.output.encode_pretty)
  end)

  it('name modules that have a short name of their own', function()
    for old, new in pairs(modules.ALIASES) do
      assert.is_nil(modules.MODULES[old], old)
      assert.is_string(modules.MODULES[new], new)
      assert.are.equal(modules.MODULES[new], modules.module(old))
    end
  end)
end)
