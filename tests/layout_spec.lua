-- The engine's files keep out of each other's way: a header declares only
-- what its own .c file defines (repl.h is the REPL, host.h what main.c and
-- repl.c share), and timing.c knows neither tensors nor graphs.
local util = require 'helpers.util'

local ROOT = package.searchpath('kluabench.kernels', package.path)
  :match('^(.-)/?stdlib/kluabench/kernels/init%.lua$')
local function file(path) return assert(util.slurp((ROOT ~= '' and ROOT .. '/' or '') .. path), path) end

-- The functions a header declares: "type name(" at the start of a line.
local function declared(text)
  local out = {}
  for name in text:gmatch('\n[%w_ %*]-[%s%*]([%a_][%w_]*)%(') do out[#out + 1] = name end
  return out
end

describe('engine layout', function()
  for _, pair in ipairs { { 'engine/repl.h', 'engine/repl.c' }, { 'engine/host.h', 'engine/host.c' } } do
    it(pair[1] .. ' declares only what ' .. pair[2] .. ' defines', function()
      local names, c = declared(file(pair[1])), file(pair[2])
      assert.is_true(#names > 0)
      for _, name in ipairs(names) do
        assert.is_truthy(c:find('\n[%w_ %*]-[%s%*]' .. name .. '%b()%s*{'), name .. ' is not defined in ' .. pair[2])
      end
    end)
  end

  it('repl.c calls nothing of main.c', function()
    local repl = file('engine/repl.c')
    for _, name in ipairs { 'parse_args', 'open_host', 'pmain', 'set_paths', 'l_message' } do
      assert.is_nil(repl:find(name, 1, true), name)
    end
  end)

  it('timing.c knows neither tensors nor graphs (graph.c pins what a capture uses)', function()
    local timing = file('engine/timing.c')
    for _, word in ipairs { 'kb_tensor', 'kb_capture_note', 'Graph', 'graph_begin' } do
      assert.is_nil(timing:find(word, 1, true), word)
    end
    assert.is_truthy(file('engine/graph.c'):find('\nvoid kb_capture_note%('))
  end)
end)
