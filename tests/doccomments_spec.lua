-- The API reference read from `---` comments (kluabench.cli.doccomments):
-- what makes a block an entry, how its parts are read, and the errors.
local doc = require 'kluabench.cli.doccomments'

local SOURCE = [[
--- The module's header: no definition follows, so no entry.
local M = {}

--- A note for readers of the code, with no @example: not an entry.
function M.private_ish(x) return x end

--- Doubles x.
-- Still the summary's paragraph.
--
-- Details, first paragraph,
-- continued.
--
-- Second paragraph.
--
-- @signature util.double(x) -> number
-- @example
--   print(util.double(2)) --> 4
--
--   print(util.double(0.5)) --> 1
function M.double(x) return 2 * x end

--- Triples x.
-- @example
--   util.triple(1)
function M.triple(x, y) return 3 * x end

---------------------------------------------------------------------------
-- A rule ends a block
---------------------------------------------------------------------------

--- Reads the next value.
--
-- @signature r:next() -> number
-- @section prng
-- @example
--   local v = r:next()
function Reader:next() return 1 end

--- The defaults.
-- @signature util.DEFAULTS
-- @example
--   print(util.DEFAULTS.n)
M.DEFAULTS = { n = 1 }
]]

describe('kluabench.cli.doccomments', function()
  local entries = doc.parse(SOURCE, 'util', 'util.lua')
  local by = {}
  for _, e in ipairs(entries) do by[e.name] = e end

  it('takes the blocks with an @example that stand right above a definition', function()
    local names = {}
    for i, e in ipairs(entries) do names[i] = e.name end
    assert.same({ 'util.double', 'util.triple', 'r:next', 'util.DEFAULTS' }, names)
  end)

  it('reads the summary, the detail paragraphs and the example', function()
    local e = by['util.double']
    assert.equal('Doubles x. Still the summary\'s paragraph.', e.summary)
    assert.equal('Details, first paragraph, continued.\nSecond paragraph.', e.details)
    assert.equal('util.double(x) -> number', e.signature)
    assert.equal('print(util.double(2)) --> 4\n\nprint(util.double(0.5)) --> 1', e.example)
    assert.equal('function', e.kind)
    assert.equal('util.lua:7', e.source)
  end)

  it('derives a missing signature from the definition, and the kind from the name', function()
    assert.equal('util.triple(x, y)', by['util.triple'].signature)
    assert.is_nil(by['util.triple'].details)
    assert.equal('method', by['r:next'].kind)
    assert.equal('prng', by['r:next'].section)
    assert.equal('value', by['util.DEFAULTS'].kind)
  end)

  it('says where a documented method lacks its signature', function()
    local ok, err = pcall(doc.parse, '--- Hm.\n-- @example\n--   x()\nfunction R:go() end\n', 'util', 'x.lua')
    assert.is_false(ok)
    assert.matches('x.lua:1: a documented definition needs @signature', err, 1, true)
  end)

  it('refuses a tag given twice in one block (a re-wrapped copy would end up in the prose)', function()
    local text = '--- Hm.\n--\n-- @signature util.f(x) -> y @example f(1)\n--\n-- @signature util.f(x) -> y\n'
      .. '-- @example\n--   f(1)\nfunction M.f(x) end\n'
    local ok, err = pcall(doc.parse, text, 'util', 'x.lua')
    assert.is_false(ok)
    assert.matches('x.lua:1: @signature given twice in one block', err, 1, true)
    ok, err = pcall(doc.parse, '--- Hm.\n-- @example\n--   f(1)\n-- @example\n--   f(2)\nfunction M.f(x) end\n',
      'util', 'x.lua')
    assert.is_false(ok)
    assert.matches('x.lua:1: @example given twice in one block', err, 1, true)
  end)

  it('collects the entries of modules, each in its section', function()
    local list = doc.collect({ stats = 'kluabench.stats' }, { { id = 'stats' } })
    for _, e in ipairs(list) do
      assert.equal('stats', e.section)
      assert.matches('^stats%.', e.name)
    end
  end)
end)
