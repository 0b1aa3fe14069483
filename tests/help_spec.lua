-- help() and the API documentation: every function of the engine and of the
-- documented stdlib modules has an entry, every entry names something that
-- exists, docs/API.md is the generator's output, the examples run, and
-- help finds entries by value, by name and by near miss.
local kb = require 'kluabench'
local apidoc = require 'kluabench.apidoc'
local help = require 'kluabench.apidoc.help'

local ROOT = require('helpers.subprocess').root()

local names = {}
for _, e in ipairs(apidoc.entries) do names[e.name] = e end

local function sorted_keys(t)
  local out = {}
  for k in pairs(t) do if type(k) == 'string' then out[#out + 1] = k end end
  table.sort(out)
  return out
end

-- Every name a user can reach that needs an entry.
local function reachable()
  local out = {}
  local function need(name) out[#out + 1] = name end
  for _, k in ipairs(sorted_keys(kb)) do
    local v = kb[k]
    -- a lazily loaded stdlib module (documented under its own name); a spec may
    -- have reloaded it, so look for its file rather than compare tables
    local is_stdlib = type(v) == 'table' and (require('kluabench.modules').module(k) ~= nil or package.searchpath('kluabench.' .. k, package.path) ~= nil)
    if type(v) == 'table' and not is_stdlib then
      for _, kk in ipairs(sorted_keys(v)) do need('kb.' .. k .. '.' .. kk) end
    elseif not is_stdlib then
      need('kb.' .. k)
    end
  end
  for prefix in pairs(apidoc.objects) do
    local methods = help.methods(prefix)
    assert(type(methods) == 'table', 'no methods for ' .. prefix)
    for _, m in ipairs(sorted_keys(methods)) do
      if type(methods[m]) == 'function' and not m:match('^_') then need(prefix .. ':' .. m) end
    end
  end
  for prefix, modname in pairs(apidoc.modules) do
    if prefix ~= 'kb' then
      local mod = require(modname)
      for _, k in ipairs(sorted_keys(mod)) do
        if type(mod[k]) == 'function' and not k:match('^_') then need(prefix .. '.' .. k) end
      end
    end
  end
  local cli = require 'kluabench.commands'
  for _, c in ipairs(cli.COMMANDS) do need('kluabench ' .. c.name) end
  table.sort(out)
  return out
end

local util = require 'helpers.util'
local run, read = util.run, util.slurp

describe('apidoc', function()
  it('documents every function of kb, the object methods, the stdlib modules and the commands', function()
    local missing = {}
    for _, name in ipairs(reachable()) do
      if not names[name] then missing[#missing + 1] = name end
    end
    assert.same({}, missing)
  end)

  it('documents only what exists', function()
    local absent = {}
    for _, e in ipairs(apidoc.entries) do
      if not help.exists(e) then absent[#absent + 1] = e.name end
    end
    assert.same({}, absent)
  end)

  it('has a signature, a summary, an example and a known section in every entry', function()
    local sections = {}
    for _, s in ipairs(apidoc.sections) do sections[s.id] = true end
    local seen = {}
    for _, e in ipairs(apidoc.entries) do
      assert.is_string(e.signature, e.name)
      assert.is_string(e.summary, e.name)
      assert.is_string(e.example, e.name .. ' has no example')
      assert.is_true(sections[e.section] or false, e.name .. ': unknown section ' .. tostring(e.section))
      assert.is_nil(seen[e.name], 'two entries named ' .. e.name)
      seen[e.name] = true
    end
  end)

  it('has Lua examples that compile', function()
    for _, e in ipairs(apidoc.entries) do
      if e.kind ~= 'command' then
        local f, err = load(e.example, '=' .. e.name, 't', {})
        assert(f, err)
      end
    end
  end)

  it('has examples that run on the cpu backend with only the module names bound, leaving nothing behind', function()
    -- in an empty directory, with HOME there too: what an example writes into the directory it
    -- runs in, into results/ or into ~/.cache stays behind and fails the test; the runner fails
    -- an example that leaves a file named after an os.tmpname() behind
    local sub = require 'helpers.subprocess'
    local dir = sub.tmpdir()
    assert(os.execute('mkdir ' .. sub.q(dir .. '/home')))
    local r = sub.run({ '--backend', 'cpu', ROOT .. '/tests/helpers/apidoc_examples.lua' },
      { cwd = dir, env = { HOME = dir .. '/home', XDG_CACHE_HOME = '', KLUABENCH_RESULTS = '' } })
    local left = run('cd ' .. sub.q(dir) .. ' && find . -mindepth 1 -not -path ./home')
    local in_home = run('cd ' .. sub.q(dir .. '/home') .. ' && find . -mindepth 1')
    os.execute('rm -rf ' .. sub.q(dir))
    assert.equal(0, r.code, r.err)
    assert.matches('\n?(%d+) examples ran, 0 failed\n$', r.out)
    -- every entry but the commands and the 10 that need a GPU or Triton's files (tests/helpers/apidoc_examples.lua)
    local lua_entries = 0
    for _, e in ipairs(apidoc.entries) do if e.kind ~= 'command' then lua_entries = lua_entries + 1 end end
    assert(lua_entries > 400 and tonumber(r.out:match('(%d+) examples ran')) == lua_entries - 10, r.out)
    assert.equal('', left)
    assert.equal('', in_home)
  end)
end)

describe('docs/API.md examples that need a device #gpu', function()
  it('run on the cuda backend (graphs, loading and launching user kernels), leaving nothing behind', function()
    if kb.backend() ~= 'cuda' then
      pending('needs the cuda backend')
      return
    end
    local sub = require 'helpers.subprocess'
    local dir = sub.tmpdir()
    local r = sub.run({ '--backend', 'cuda', ROOT .. '/tests/helpers/apidoc_examples.lua', '--gpu' },
      { cwd = dir, env = { HOME = dir, XDG_CACHE_HOME = '', KLUABENCH_RESULTS = '' } })
    os.execute('rm -rf ' .. sub.q(dir))
    assert.equal(0, r.code, r.err)
    assert.matches('\n?9 examples ran, 0 failed\n$', r.out)
  end)
end)

describe('docs/API.md', function()
  it('is what scripts/gen_api_doc.lua writes (regenerate it after editing apidoc.lua)', function()
    local exe = kb.executable()
    local text, code = run(string.format('cd %q && %q scripts/gen_api_doc.lua', ROOT, exe))
    assert.equal(0, code)
    local committed = read(ROOT .. '/docs/API.md')
    assert.is_string(committed, 'docs/API.md is missing')
    assert.equal(committed, text)
  end)

  it('says in its first lines that it is generated, and by what (issue 40)', function()
    local doc = read(ROOT .. '/docs/API.md') or ''
    local head = doc:match('^[^\n]*\n\n([^\n]*)') or ''
    assert.truthy(head:find('Generated by `scripts/gen_api_doc.lua`; do not edit it by hand', 1, true), head)
  end)

  it('has a heading for every entry', function()
    local doc = read(ROOT .. '/docs/API.md') or ''
    for _, e in ipairs(apidoc.entries) do
      assert.truthy(doc:find('### `' .. e.name .. '`', 1, true), e.name)
    end
  end)
end)

describe('help', function()
  it('finds a function by identity', function()
    local text = help.text(kb.randn)
    assert.truthy(text:find('kb.randn(shape [, dtype [, seed [, device]]]) -> Tensor', 1, true))
    assert.truthy(text:find('Example:', 1, true))
    assert.truthy(help.text(kb.jcs.encode):find('^kb%.jcs%.encode%('))
    assert.truthy(help.text(require('kluabench.stats').median):find('^stats%.median%('))
  end)

  it('finds tensor methods by identity and by name', function()
    local t = kb.zeros({ 2 }, 'f32', 'cpu')
    assert.truthy(help.text(t.to):find('^t:to%(device_or_dtype%)'))
    assert.truthy(help.text('t:to'):find('^t:to%('))
    assert.truthy(help.text('Tensor:to'):find('^t:to%('))
    assert.truthy(help.text('t.shape'):find('^t%.shape'))
  end)

  it('finds a name in full, without its module, or as kluabench.x', function()
    for _, q in ipairs { 'kb.sha256', 'sha256', 'kluabench.sha256' } do
      assert.truthy(help.text(q):find('^kb%.sha256%(bytes%)'), q)
    end
    assert.truthy(help.text('jcs.encode'):find('^kb%.jcs%.encode'))
    assert.truthy(help.text('median()'):find('^stats%.median'))
    -- a stdlib module as kb reaches it: kb.suite.main is suite.main
    for _, q in ipairs { 'kb.suite.main', 'suite.main', 'kluabench.suite.main' } do
      assert.truthy(help.text(q):find('^suite%.main%(decl'), q)
    end
    assert.truthy(help.text('kb.stats.median'):find('^stats%.median'))
  end)

  it('shows every entry a short name stands for', function()
    local text = help.text('free')
    assert.truthy(text:find('t:free()', 1, true))
    assert.truthy(text:find('g:free()', 1, true))
  end)

  it('documents the commands', function()
    local text = help.text('verify')
    assert.truthy(text:find('^kluabench verify'))
    assert.truthy(text:find('Example:\n    kluabench verify', 1, true))
    assert.truthy(help.text('import-liger'):find('^kluabench import%-liger'))
    assert.truthy(help.text('plot'):find('^kluabench plot'))
  end)

  it('lists a group: a module table, a tensor, a section, a stdlib module', function()
    local jcs = help.text(kb.jcs)
    assert.truthy(jcs:find('kb.jcs.encode', 1, true))
    assert.truthy(jcs:find('kb.jcs.is_array', 1, true))
    local tensor = help.text(kb.zeros({ 1 }, 'f32', 'cpu'))
    assert.truthy(tensor:find('Tensor (t) methods and properties', 1, true))
    assert.truthy(tensor:find('t:digest', 1, true))
    assert.truthy(help.text('timing'):find('kb.elapsed_ms', 1, true))
    assert.truthy(help.text(require 'kluabench.stats'):find('stats.quantile', 1, true))
    assert.truthy(help.text('kluabench.charts.plot'):find('plot.nice_ticks', 1, true))
  end)

  it('gives an overview with no argument, and for kb itself', function()
    local text = help.text()
    for _, s in ipairs(apidoc.sections) do
      assert.truthy(text:find(s.title, 1, true), s.title)
    end
    assert.equal(text, help.text(kb))
  end)

  it('suggests names for an unknown one', function()
    assert.truthy(help.text('digst'):find('^no documentation for "digst"; did you mean: t:digest, kb.digest'))
    assert.truthy(help.text('elapsed_m'):find('kb.elapsed_ms', 1, true))
    assert.truthy(help.text('rnd'):find('did you mean: kb.randn', 1, true))
    assert.truthy(help.text('qqqq'):find('^no documentation for "qqqq"; help%(%) lists everything'))
    assert.truthy(help.text(print):find('^no documentation for this function'))
  end)

  it('prints to stdout, returns nothing, and installs the global', function()
    local real = io.stdout
    local buf = {}
    io.stdout = { write = function(self, s) buf[#buf + 1] = s return self end, flush = function() end } ---@diagnostic disable-line
    local n = select('#', help.help('kb.sha256'))
    io.stdout = real
    assert.equal(0, n)
    assert.truthy(table.concat(buf):find('^kb%.sha256'))
    local saved = rawget(_G, 'help')
    help.install()
    assert.equal(help.help, rawget(_G, 'help'))
    rawset(_G, 'help', saved)
  end)

  it('wraps text to 78 columns', function()
    for _, e in ipairs(apidoc.entries) do
      local text = help.format(e):gsub('^[^\n]*\n', '') -- the signature stays on one line
      for line in text:gmatch('[^\n]+') do
        if not e.preformatted and not line:match('^    ') then
          assert(#line <= 78 or not line:find(' ', 3), e.name .. ': ' .. line)
        end
      end
    end
  end)
end)
