-- Rules the stdlib keeps across files: submodules require "kluabench.core"
-- (never "kluabench", whose loader reaches back into them), and one function
-- (env.device_name) names a device for the table, plot and records.
local sub = require 'helpers.subprocess'
local util = require 'helpers.util'
local results = require 'kluabench.table'
local ROOT = sub.root()

local function stdlib_files()
  local p = assert(io.popen('find ' .. util.q(ROOT .. '/stdlib/kluabench') .. " -name '*.lua' | sort"))
  local out = {}
  for line in p:lines() do out[#out + 1] = line end
  p:close()
  return out
end

describe('stdlib rules', function()
  -- No shell sees a string from outside (issue 37): commands run through kb.process.spawn with an
  -- argument vector, files are removed with os.remove or kb.remove_tree. Every file under stdlib/,
  -- scripts/ and examples/ is read, comments and @example code included (the API examples run).
  -- The specs under tests/ may still call io.popen and os.execute, with constant commands or
  -- arguments quoted by helpers.util.q, to set up and inspect what they test.
  it('no io.popen or os.execute anywhere in stdlib/, scripts/ or examples/ (code, comments, examples)', function()
    local p = assert(io.popen('find ' .. util.q(ROOT .. '/stdlib') .. ' ' .. util.q(ROOT .. '/scripts') .. ' '
      .. util.q(ROOT .. '/examples') .. ' -type f | sort'))
    local bad, n = {}, 0
    for path in p:lines() do
      n = n + 1
      local text = assert(util.slurp(path))
      local ln = 0
      for line in (text .. '\n'):gmatch('([^\n]*)\n') do
        ln = ln + 1
        if line:find('popen', 1, true) or line:find('%f[%w_]os%s*[%.:]%s*execute') or line:find('%f[%w_]os%s*%[%s*[\'"]execute') then
          bad[#bad + 1] = path:sub(#ROOT + 2) .. ':' .. ln .. ': ' .. line
        end
      end
    end
    p:close()
    assert.is_true(n > 100, tostring(n))
    assert.same({}, bad)
  end)

  it('no submodule requires "kluabench" (only init.lua, which is that module)', function()
    local files, bad = stdlib_files(), {}
    assert.is_true(#files > 20)
    for _, path in ipairs(files) do
      if not path:match('/stdlib/kluabench/init%.lua$') then
        local text = assert(util.slurp(path))
        for line in text:gmatch('[^\n]+') do
          -- code, not a comment or documentation text quoting `require "kluabench"`
          local code = not line:match('^%s*%-%-') and not line:match('`[^`]*require')
          if code and line:match('require%s*%(?%s*[\'"]kluabench[\'"]') then
            bad[#bad + 1] = path:sub(#ROOT + 2) .. ': ' .. line
          end
        end
      end
    end
    assert.same({}, bad)
  end)

  it('builds a device name from hardware.product and formFactor in one place (env.device_name)', function()
    local bad = {}
    for _, path in ipairs(stdlib_files()) do
      if not path:match('/record/env%.lua$') then
        local text = assert(util.slurp(path))
        if text:match('product%s*%.%.') or text:match('%.%.%s*[%w_.]*formFactor') then
          bad[#bad + 1] = path:sub(#ROOT + 2)
        end
      end
    end
    assert.same({}, bad)
  end)

  it('gives the results table and the plot the same device name as env.device_name', function()
    local env = require 'kluabench.record.env'
    local results = require 'kluabench.table'
    local plot = require 'kluabench.charts.plot'
    local environment = { spec = { hardware = { product = 'NVIDIA H100', formFactor = '80GB HBM3' } } }
    local b = {
      run = { spec = { status = 'passed', timing = { latencyNs = { median = 1000 } } } },
      environment = environment,
      workload = { spec = { kernel = 'k', operation = 'forward', parameters = { seq = 1 } } },
      implementation = { spec = { provider = 'p' } },
    }
    assert.equal('NVIDIA H100 80GB HBM3', env.device_name(environment))
    assert.equal(env.device_name(environment), results.results_rows({ b })[1].device)
    assert.equal(env.device_name(environment), assert(plot.point_from_bundle(b)).gpu)
    environment.spec.hardware.formFactor = nil
    assert.equal('NVIDIA H100', results.results_rows({ b })[1].device)
    assert.equal('NVIDIA H100', assert(plot.point_from_bundle(b)).gpu)
  end)
end)
