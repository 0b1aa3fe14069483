-- The API reference read from `---` comments (kluabench.apidoc.doccomments):
-- what makes a block an entry, how its parts are read, and the errors.
local doc = require 'kluabench.apidoc.doccomments'

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

describe('kluabench.apidoc.doccomments', function()
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

  describe('parse_c: the /*** comments of the engine\'s C files', function()
    local C = table.concat({
      '/* An ordinary comment: not an entry. */',
      '/*** The selected backend: what tensors and events use when no device',
      ' * is given.',
      ' *',
      ' * Chosen before any Lua runs,',
      ' * else cpu.',
      ' *',
      ' * Second paragraph.',
      ' *',
      ' * @signature kb.backend() -> "cuda" | "cpu"',
      ' * @section device',
      ' * @example',
      ' *   if kb.backend() == "cpu" then',
      ' *     print("cpu")',
      ' *   end',
      ' */',
      'static int l_backend(lua_State *L) {',
      '/*** The shape.',
      ' *',
      ' * @signature t.shape -> {d1, ...}',
      ' * @section tensor_methods',
      ' * @kind property',
      ' * @example',
      ' *   print(t.shape)',
      ' */',
      '/*** Runs SQL.',
      ' *',
      ' * @signature db:exec(sql) -> true',
      ' * @name sqlite:exec',
      ' * @section database',
      ' * @example',
      ' *   db:exec("SELECT 1")',
      ' */',
    }, '\n')

    it('reads every block: name, kind, section, summary, details and example', function()
      local es = doc.parse_c(C, 'engine/x.c')
      assert.equal(3, #es)
      assert.same({ name = 'kb.backend', signature = 'kb.backend() -> "cuda" | "cpu"', kind = 'function',
        section = 'device', summary = 'The selected backend: what tensors and events use when no device is given.',
        details = 'Chosen before any Lua runs, else cpu.\nSecond paragraph.',
        example = 'if kb.backend() == "cpu" then\n  print("cpu")\nend', source = 'engine/x.c:2' }, es[1])
      assert.same({ 't.shape', 'property', 'tensor_methods' }, { es[2].name, es[2].kind, es[2].section })
      assert.same({ 'sqlite:exec', 'method', 'db:exec(sql) -> true' }, { es[3].name, es[3].kind, es[3].signature })
    end)

    it('refuses a block without @signature, @section or @example, or one never closed', function()
      local function err(text) return select(2, pcall(doc.parse_c, text, 'engine/y.c')) end
      assert.matches('engine/y.c:1: a /%*%*%* block needs @signature, @section and @example',
        err('/*** A.\n * @signature kb.a()\n * @example\n *   kb.a()\n */'))
      assert.matches('engine/y.c:1: a /%*%*%* block needs', err('/*** A.\n * @signature kb.a()\n * @section device\n */'))
      assert.matches('engine/y.c:1: a /%*%*%* block is not closed', err('/*** A.\n * @signature kb.a()\n'))
      assert.matches('engine/y.c:2: @section given twice', err('x\n/*** A.\n * @section a\n * @section b\n */'))
    end)

    it("holds every C function's entry of the API reference (apidoc reads engine/<role>/*.c)", function()
      local apidoc = require 'kluabench.apidoc'
      local from_c = 0
      for _, e in ipairs(apidoc.entries) do
        if e.source and e.source:match('^engine/') then from_c = from_c + 1 end
      end
      assert.is_true(from_c >= 150, from_c .. ' entries from engine/<role>/*.c')
    end)
  end)
end)
