-- The user code a process loads is part of the implementation of a script
-- that declares none (issue 19): kb.loaded_code lists every module and
-- plugin once, and a record of a benchmark script without an implementation
-- hook changes digest when any kernel it compiled or loaded changes, not
-- when the same code is loaded twice or in another order; a script loading
-- nothing keeps the document it had before. Each run is a fresh process, so
-- that what other specs loaded into this one does not count.
local kb = require 'kluabench'
local sub = require 'helpers.subprocess'
local json = require 'kluabench.util.json'

local BUILD = kb.executable():match('^(.*)/[^/]*$')
local LIB = BUILD .. '/plugins/libscale_add.so'
local NVRTC, NVRTC_WHY = kb.cuda.nvrtc_version()
local SRC = require('helpers.user_kernels').SCALE
local PTX = '.version 8.0\n.target sm_90\n.address_size 64\n'

local function needs_nvrtc(name, fn)
  if NVRTC then it(name, fn) else pending(name .. ' (NVRTC not found: ' .. tostring(NVRTC_WHY) .. ')') end
end

-- A benchmark of the user's without an implementation hook; it loads what LOAD lists, in that order,
-- so that the script's own bytes stay the same whatever it loads.
local SCRIPT = [[
local kb = require 'kluabench'
for what in (os.getenv('LOAD') or ''):gmatch('[^,]+') do
  if what == 'cu' then
    local f = assert(io.open(os.getenv('CU')))
    kb.cuda.compile(f:read('a'), { name = 'scale.cu', cache = false })
    f:close()
  elseif what == 'ptx' then
    kb.cuda.load(os.getenv('PTX'))
  elseif what == 'plugin' then
    kb.plugin.load(os.getenv('LIB'))
  end
end
kb.suite.main { name = 'scale', axes = { { name = 'n', default = 16 } }, dtypes = { 'f32' }, modes = { 'forward' },
  providers = { 'mine' },
  setup = function(p) return { x = kb.zeros({ p.n }, 'f32') } end,
  run = function() return function() end end }
]]

describe('code loaded by a benchmark script', function()
  local dir
  setup(function()
    dir = sub.tmpdir()
    sub.spit(dir .. '/bench.lua', SCRIPT)
    sub.spit(dir .. '/scale.cu', SRC)
    sub.spit(dir .. '/scale2.cu', (SRC:gsub('a %* x%[i%]', 'a + x[i]', 1))) -- one byte changed
    sub.spit(dir .. '/k.ptx', PTX)
    sub.spit(dir .. '/k2.ptx', (PTX:gsub('sm_90', 'sm_80', 1))) -- one byte changed
  end)
  teardown(function() os.execute('rm -rf ' .. sub.q(dir)) end)

  -- The implementation document of the run's one bundle, checked; cu and ptx name the files loaded.
  local function implementation(load, cu, ptx)
    local r = sub.run({ '--backend', 'cpu', '--quiet', 'bench.lua', '--rep-ms', '1', '--warmup-ms', '1',
      '--format', 'jsonl' }, { cwd = dir, env = { LOAD = load, LIB = LIB, CU = dir .. '/' .. (cu or 'scale.cu'),
        PTX = dir .. '/' .. (ptx or 'k.ptx') } })
    assert(r.code == 0, r.err)
    local b = json.decode(r.out:match('[^\n]+'))
    assert.same({}, kb.verify.check(b))
    assert.equal('sha256:' .. kb.sha256_file(dir .. '/bench.lua'), b.implementation.spec.source.contentDigest)
    return b.implementation, kb.record.digest(b.implementation)
  end

  needs_nvrtc('changes digest when the .cu it compiles changes by one byte, not for the same code loaded '
    .. 'twice or in another order', function()
    local doc, d1 = implementation('cu,plugin')
    assert.truthy(doc.spec.projectRevision.treeDigest:match('^sha256:%x+$'))
    local _, d2 = implementation('cu,plugin', 'scale2.cu')
    assert.are_not.equal(d1, d2)
    assert.equal(d1, select(2, implementation('plugin,cu,cu')))
    -- the script alone is another implementation
    assert.are_not.equal(d1, select(2, implementation('')))
  end)

  it('changes digest when the PTX or the plugin it loads changes, not for the same code twice or reordered', function()
    local _, d1 = implementation('ptx,plugin')
    assert.are_not.equal(d1, select(2, implementation('ptx,plugin', nil, 'k2.ptx')))
    assert.are_not.equal(d1, select(2, implementation('ptx')))
    assert.equal(d1, select(2, implementation('plugin,ptx,ptx,plugin')))
  end)

  it('keeps the script-only document when it loads nothing', function()
    local doc = implementation('')
    assert.same({}, doc.spec.projectRevision)
    -- the digest implementation.script gave before it covered loaded code (pinned: computed with the
    -- code before issue 19), in a process that loaded nothing; the script's path is relative, so that
    -- the document does not name this folder
    sub.spit(dir .. '/pinned.lua', "-- a benchmark script whose provider declares no implementation\nreturn 'pinned'\n")
    sub.spit(dir .. '/pin.lua', [[
local kb = require 'kluabench'
local d = require('kluabench.record.implementation').script { operation_digest = 'sha256:' .. string.rep('0', 64),
  provider = 'mine', script = 'pinned.lua', kernel = 'scale', arch = 'sm_90', dtypes = { 'f32' } }
print(kb.record.digest(d))
]])
    local r = sub.run({ '--backend', 'cpu', 'pin.lua' }, { cwd = dir })
    assert(r.code == 0, r.err)
    assert.equal('sha256:1826ea8f952c20ba0068c042a3a5aac5e7fba39d5b167f120ffce6568739fe80\n', r.out)
  end)
end)

describe('kb.loaded_code', function()
  local dir
  setup(function()
    dir = sub.tmpdir()
    sub.spit(dir .. '/k.ptx', PTX)
  end)
  teardown(function() os.execute('rm -rf ' .. sub.q(dir)) end)

  -- What a fresh process's kb.loaded_code() says after running body (a chunk with kb bound).
  local function loaded_after(body)
    sub.spit(dir .. '/t.lua', "local kb = require 'kluabench'\n" .. body
      .. "\nprint(kb.jcs.encode(kb.loaded_code()))\n")
    local r = sub.run({ '--backend', 'cpu', dir .. '/t.lua' }, { env = { LIB = LIB, PTX = dir .. '/k.ptx' } })
    assert(r.code == 0, r.err)
    return json.decode(r.out)
  end

  it('is empty in a process that loaded nothing', function()
    assert.same({}, loaded_after(''))
  end)

  it('lists each module and plugin once, sorted by sha256, with what :info() reports', function()
    local got = loaded_after([[
kb.plugin.load(os.getenv('LIB'))
kb.cuda.load(os.getenv('PTX'))
kb.cuda.load(os.getenv('PTX'))
kb.cuda.load(']] .. PTX:gsub('\n', '\\n') .. [[')
kb.plugin.load(os.getenv('LIB'))]])
    assert.equal(2, #got)
    assert.truthy(got[1].sha256 < got[2].sha256)
    local by = {}
    for _, c in ipairs(got) do by[c.kind] = c end
    assert.same({ kind = 'ptx', sha256 = 'sha256:' .. kb.sha256(PTX), path = dir .. '/k.ptx' }, by.ptx)
    assert.same({ kind = 'plugin', sha256 = 'sha256:' .. kb.sha256_file(LIB), name = 'scale_add', path = LIB }, by.plugin)
  end)

  needs_nvrtc('lists a compiled module by its source and its image, the same code once', function()
    local got = loaded_after([[
local a = kb.cuda.compile(]] .. string.format('%q', SRC) .. [[, { cache = false, name = 'scale.cu' })
kb.cuda.compile(]] .. string.format('%q', SRC) .. [[, { cache = false, name = 'again.cu' })
local b = kb.cuda.compile(]] .. string.format('%q', SRC) .. [[, { cache = false, arch = 'compute_90' })
assert(a:info().sha256 ~= b:info().sha256)]])
    assert.equal(2, #got)
    for _, c in ipairs(got) do
      assert.equal('nvrtc', c.kind)
      assert.equal('sha256:' .. kb.sha256(SRC), c.sha256)
      assert.truthy(c.image_sha256:match('^sha256:%x+$'))
    end
    -- the first load names it; the same source built another way is another entry, ordered by image
    assert.truthy(got[1].image_sha256 < got[2].image_sha256)
    local names = { got[1].name, got[2].name }
    table.sort(names)
    assert.same({ 'kernel.cu', 'scale.cu' }, names)
  end)

  it('returns a fresh copy: changing it changes nothing', function()
    local got = loaded_after([[
kb.cuda.load(os.getenv('PTX'))
local l = kb.loaded_code()
l[1].sha256, l[2] = 'x', {}]])
    assert.equal(1, #got)
    assert.equal('sha256:' .. kb.sha256(PTX), got[1].sha256)
  end)
end)
