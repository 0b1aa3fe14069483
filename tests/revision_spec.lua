-- Records name the code's source (kernelindex's Reproducible tier, docs/RECORDS.md): the repository and commit git
-- knows for a user's script, its dirty state, --source where git does not say it, kluabench's own build for the
-- built-in kernels; never a credential or a local path; valid against the schemas.
local sub = require 'helpers.subprocess'
local util = require 'helpers.util'
local schema = require 'helpers.schema'
local json = require 'kluabench.util.json'
local implementation = require 'kluabench.record.implementation'

local SCRIPT = [[
local kb = require 'kluabench'
kb.suite.main { name = 'rev_copy', axes = { { name = 'n', default = 64 } }, dtypes = { 'f32' }, modes = { 'forward' },
  providers = { 'mine' }, setup = function(p) return { x = kb.randn({ p.n }, 'f32', 1), y = kb.empty({ p.n }, 'f32') } end,
  run = function(p, provider, mode, t) return function() t.y:copy_(t.x) end end }
]]

local function git(dir, ...)
  local argv = { 'git', '-C', dir, ... }
  for i, a in ipairs(argv) do argv[i] = util.q(a) end
  assert(os.execute(table.concat(argv, ' ') .. ' >/dev/null 2>&1'), 'git ' .. table.concat({ ... }, ' '))
end

-- A git work tree holding the script, committed, with origin set to `origin`.
local function repo(origin)
  local dir = util.tmpdir()
  git(dir, 'init', '-q', '-b', 'main')
  git(dir, 'config', 'user.name', 'rev')
  git(dir, 'config', 'user.email', 'rev@example.invalid')
  util.spit(dir .. '/bench.lua', SCRIPT)
  git(dir, 'add', 'bench.lua')
  git(dir, 'commit', '-q', '-m', 'bench')
  if origin then git(dir, 'remote', 'add', 'origin', origin) end
  return dir
end

local function run(dir, extra)
  local out = dir .. '/out.jsonl'
  os.remove(out)
  os.remove(dir .. '/out.samples.jsonl')
  local argv = { '--backend', 'cpu', dir .. '/bench.lua', '--rep-ms', '5', '--audits', '0', '--format', 'jsonl', '--out',
    out }
  for _, a in ipairs(extra or {}) do argv[#argv + 1] = a end
  local r = sub.run(argv)
  return r, r.code == 0 and assert(json.decode((util.slurp(out):match('[^\n]+')))) or nil
end

local function head(dir)
  local p = assert(io.popen('git -C ' .. util.q(dir) .. ' rev-parse HEAD'))
  local sha = p:read('l')
  p:close()
  return sha
end

describe('records name their source', function()
  it('a script in a git work tree with an https origin: the repository, the commit, valid, clean', function()
    local dir = repo('https://github.com/example/kernels.git')
    local r, b = run(dir)
    assert.equal(0, r.code, r.err)
    local pr = b.implementation.spec.projectRevision
    assert.equal('https://github.com/example/kernels.git', pr.repository)
    assert.equal(head(dir), pr.commit)
    assert.is_nil(b.implementation.metadata.labels)
    if schema.available() then assert.same({}, schema.check(b)) end
  end)

  it('an edited script is labelled dirty; credentials in the origin never reach the record', function()
    local dir = repo('https://user:secret-token@github.com/example/kernels.git')
    util.spit(dir .. '/bench.lua', SCRIPT .. '-- edited\n')
    local r, b = run(dir)
    assert.equal(0, r.code, r.err)
    assert.equal('https://github.com/example/kernels.git', b.implementation.spec.projectRevision.repository)
    assert.same({ git_dirty = 'true' }, b.implementation.metadata.labels)
    assert.is_nil(util.slurp(dir .. '/out.jsonl'):find('secret-token', 1, true))
  end)

  it('a local path as origin names no repository; --source says it; a --source that is no URL is a usage error',
    function()
      local dir = repo('/srv/git/kernels')
      local r, b = run(dir)
      assert.equal(0, r.code, r.err)
      assert.is_nil(b.implementation.spec.projectRevision.repository)
      assert.equal(head(dir), b.implementation.spec.projectRevision.commit)
      r, b = run(dir, { '--source', 'git@github.com:example/kernels.git' })
      assert.equal(0, r.code, r.err)
      assert.equal('git@github.com:example/kernels.git', b.implementation.spec.projectRevision.repository)
      r = run(dir, { '--source', '/srv/git/kernels' })
      assert.equal(2, r.code)
      assert.matches("option '--source' needs the code's repository as an https, ssh or git URL", r.err, 1, true)
    end)

  it('outside git: no repository, no commit', function()
    local dir = util.tmpdir()
    util.spit(dir .. '/bench.lua', SCRIPT)
    local r, b = run(dir)
    assert.equal(0, r.code, r.err)
    assert.is_nil(b.implementation.spec.projectRevision.repository)
    assert.is_nil(b.implementation.spec.projectRevision.commit)
  end)

  it('the built-in kernels name the commit kluabench was built from', function()
    local dir = util.tmpdir()
    local out = dir .. '/b.jsonl'
    local r = sub.run { '--backend', 'cpu', sub.root() .. '/scripts/llama4_rope.lua', '--hidden', '64', '--seq', '16',
      '--rep-ms', '5', '--audits', '0', '--format', 'jsonl', '--out', out, '--source', 'https://example.org/kb.git' }
    assert.equal(0, r.code, r.err)
    local b = assert(json.decode((util.slurp(out):match('[^\n]+'))))
    local built = require('kluabench.core').build_info().git_commit:match('^(%x+)')
    if built and #built == 40 then assert.equal(built, b.implementation.spec.projectRevision.commit) end
    assert.equal('https://example.org/kb.git', b.implementation.spec.projectRevision.repository)
  end)

  it('keeps only URLs a reader can fetch, without credentials', function()
    assert.equal('https://h/x', implementation.repository_url('https://u:p@h/x'))
    assert.equal('ssh://h/x', implementation.repository_url('ssh://git@h/x'))
    assert.equal('git@h:o/x.git', implementation.repository_url('git@h:o/x.git'))
    for _, bad in ipairs { '/srv/x', 'file:///srv/x', 'https://h/x y', 'h:x', '', 'https://h/\nx' } do
      assert.is_nil(implementation.repository_url(bad), bad)
    end
  end)
end)
