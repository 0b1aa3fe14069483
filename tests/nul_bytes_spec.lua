-- NUL bytes (issue 37): a Lua string may hold "\0", C text ends there. Every
-- binding that hands a string to the OS or a library as C text refuses one
-- with "bad argument #N to 'fn' (... has a NUL byte at byte K: ...)", so that
-- kb.chmod("x.jsonl\0zz") never changes x.jsonl and "GPU\0A" never becomes
-- "GPU". One block per binding family; each checks the error and that
-- nothing happened to the text before the NUL.
local kb = require 'kluabench'
local util = require 'helpers.util'
local pg = require 'helpers.pg_server'

-- The error of f(...), failing the test when f succeeds.
local function err_of(f, ...)
  local ok, err = pcall(f, ...)
  assert(not ok, 'expected an error')
  return tostring(err)
end

-- Asserts the NUL refusal: argument n of fn, what, at byte at.
local function refused(err, n, fn, what, at)
  local want = string.format("bad argument #%d to '%s' (%s has a NUL byte at byte %d", n, fn, what, at)
  assert.truthy(err:find(want, 1, true), 'expected «' .. want .. '» in «' .. err .. '»')
end

local dir
before_each(function() dir = util.tmpdir() end)
after_each(function() os.execute('rm -rf ' .. util.q(dir)) end)

describe('NUL bytes in paths: fs', function()
  it('kb.chmod refuses "x.jsonl\\0zz" and leaves x.jsonl alone', function()
    local x = dir .. '/x.jsonl'
    util.spit(x, '{}\n')
    assert(kb.chmod(x, 420))
    refused(err_of(kb.chmod, x .. '\0zz', 384), 1, 'chmod', 'path', #x + 1)
    assert.equal(420, kb.stat(x).mode)
  end)

  it('kb.mkdir, kb.stat, kb.realpath, kb.readlink, kb.fsync, kb.read_file, kb.try_lock, kb.write_temp, kb.append_file and kb.remove_tree refuse a NUL', function()
    local x = dir .. '/x'
    refused(err_of(kb.mkdir, x .. '\0y'), 1, 'mkdir', 'path', #x + 1)
    assert.is_nil(kb.stat(x)) -- nothing was made
    util.spit(x, 'data')
    refused(err_of(kb.stat, x .. '\0y'), 1, 'stat', 'path', #x + 1)
    refused(err_of(kb.stat, x .. '\0y', true), 1, 'stat', 'path', #x + 1)
    refused(err_of(kb.realpath, x .. '\0y'), 1, 'realpath', 'path', #x + 1)
    refused(err_of(kb.readlink, x .. '\0y'), 1, 'readlink', 'path', #x + 1)
    refused(err_of(kb.fsync, x .. '\0y'), 1, 'fsync', 'path', #x + 1)
    refused(err_of(kb.read_file, x .. '\0y'), 1, 'read_file', 'path', #x + 1)
    refused(err_of(kb.try_lock, dir .. '\0y'), 1, 'try_lock', 'dir', #dir + 1)
    refused(err_of(package.loaded['kluabench.host'].listdir, dir .. '\0y'), 1, 'listdir', 'path', #dir + 1)
    refused(err_of(kb.write_temp, x .. '\0y', 'z'), 1, 'write_temp', 'target', #x + 1)
    refused(err_of(kb.append_file, x .. '\0y', 'z'), 1, 'append_file', 'path', #x + 1)
    refused(err_of(kb.remove_tree, x .. '\0y'), 1, 'remove_tree', 'path', #x + 1)
    assert.equal('file', kb.stat(x).type) -- x itself not removed
    assert.equal('data', util.slurp(x)) -- nothing appended
  end)
end)

describe('NUL bytes in paths: tensor files', function()
  it('save_npy, load_npy, save_safetensors and load_safetensors refuse a NUL and write nothing', function()
    local t = kb.zeros({ 2 }, 'f32', 'cpu')
    local x = dir .. '/x.npy'
    refused(err_of(kb.save_npy, x .. '\0zz', t), 1, 'save_npy', 'path', #x + 1)
    assert.is_nil(kb.stat(x))
    assert(kb.save_npy(x, t))
    refused(err_of(kb.load_npy, x .. '\0zz'), 1, 'load_npy', 'path', #x + 1)
    local s = dir .. '/x.safetensors'
    refused(err_of(kb.save_safetensors, s .. '\0zz', { t = t }), 1, 'save_safetensors', 'path', #s + 1)
    assert.is_nil(kb.stat(s))
    assert(kb.save_safetensors(s, { t = t }))
    refused(err_of(kb.load_safetensors, s .. '\0zz'), 1, 'load_safetensors', 'path', #s + 1)
    -- a tensor name is JSON text in the file (escaped): a NUL in it is kept, and "__metadata__\0x" is a name
    local n = dir .. '/n.safetensors'
    assert(kb.save_safetensors(n, { ['__metadata__\0x'] = t, ['a\0b'] = t }, { ['k\0'] = 'v\0w' }))
    local back, meta = assert(kb.load_safetensors(n))
    assert.same({ 0, 0 }, back['__metadata__\0x']:totable())
    assert.same({ 0, 0 }, back['a\0b']:totable())
    assert.same({ ['k\0'] = 'v\0w' }, meta)
    os.remove(n)
    -- the entries a leftover temporary would have: none
    assert.same({ 'x.npy', 'x.safetensors' }, (function()
      local names = package.loaded['kluabench.host'].listdir(dir)
      table.sort(names)
      return names
    end)())
  end)
end)

describe('NUL bytes in paths: digests', function()
  it('kb.sha256_file refuses a NUL rather than hash the file before it', function()
    local x = dir .. '/x'
    util.spit(x, 'abc')
    refused(err_of(kb.sha256_file, x .. '\0y'), 1, 'sha256_file', 'path', #x + 1)
    assert.equal(kb.sha256('abc'), kb.sha256_file(x))
  end)
end)

describe('NUL bytes in names: devices and dtypes', function()
  it('a device or dtype name with a NUL is refused, not read as the name before it', function()
    assert.truthy(err_of(kb.zeros, { 1 }, 'f32\0x'):find('dtype has a NUL byte at byte 4', 1, true))
    assert.truthy(err_of(kb.zeros, { 1 }, 'f32', 'cpu\0x'):find('device has a NUL byte at byte 4', 1, true))
    local t = kb.zeros({ 1 }, 'f32', 'cpu')
    assert.truthy(err_of(t.to, t, 'f64\0x'):find('device or dtype has a NUL byte at byte 4', 1, true))
    assert.truthy(err_of(kb.nvml.sample, 'GPU-0\0x'):find('device has a NUL byte at byte 6', 1, true))
    local q = kb.randn({ 1, 4, 2, 8 }, 'f32', 1, 'cpu')
    local f = kb.rope.freqs(4, 8, { device = 'cpu' })
    assert.truthy(err_of(kb.rope.llama4_fwd, q, q, f, { impl = 'reference\0x' })
      :find('opts.impl has a NUL byte at byte 10', 1, true))
  end)
end)

describe('NUL bytes in a process: kb.process.spawn', function()
  it('refuses a NUL in an argument, the environment, a redirection or the directory, and starts nothing', function()
    local out = dir .. '/out'
    local function spawn(argv, opts) return err_of(kb.process.spawn, argv, opts) end
    refused(spawn({ 'touch', out .. '\0zz' }), 1, 'spawn', 'argv[2]', #out + 1)
    refused(spawn({ 'true\0x' }), 1, 'spawn', 'argv[1]', 5)
    refused(spawn({ 'true' }, { env = { X = 'a\0b' } }), 2, 'spawn', 'opts.env.X', 2)
    refused(spawn({ 'true' }, { env = { ['X\0Y'] = 'a' } }), 2, 'spawn', 'a name in opts.env', 2)
    refused(spawn({ 'true' }, { stdout = out .. '\0zz' }), 2, 'spawn', 'opts.stdout', #out + 1)
    refused(spawn({ 'true' }, { stderr = out .. '\0zz' }), 2, 'spawn', 'opts.stderr', #out + 1)
    refused(spawn({ 'true' }, { stdin = out .. '\0zz' }), 2, 'spawn', 'opts.stdin', #out + 1)
    refused(spawn({ 'true' }, { cwd = dir .. '\0zz' }), 2, 'spawn', 'opts.cwd', #dir + 1)
    assert.is_nil(kb.stat(out))
    refused(err_of(kb.process.kill, kb.process.getpid(), 'SIGCONT\0x'), 2, 'kill', 'signal name', 8)
  end)
end)

describe('NUL bytes in SQL: kb.sqlite', function()
  it('refuses a NUL in the path, the mode and SQL text; bound text keeps its NUL', function()
    local path = dir .. '/h.db'
    refused(err_of(kb.sqlite.open, path .. '\0zz', 'rwc'), 1, 'open', 'path', #path + 1)
    assert.is_nil(kb.stat(path))
    refused(err_of(kb.sqlite.open, path, 'rwc\0x'), 2, 'open', 'mode', 4)
    local db = assert(kb.sqlite.open(path, 'rwc'))
    assert(db:exec('CREATE TABLE t (device TEXT)'))
    -- SQLite would run only the statement before the NUL
    refused(err_of(db.exec, db, 'SELECT 1;\0DROP TABLE t'), 1, 'exec', 'SQL text', 10)
    refused(err_of(db.prepare, db, 'SELECT 1\0 junk'), 1, 'prepare', 'SQL text', 9)
    -- values are bound with their length: two devices stay two
    local ins = assert(db:prepare('INSERT INTO t VALUES (?)'))
    assert(ins:execute({ 'GPU\0A' }))
    assert(ins:execute({ 'GPU\0B' }))
    local rows = assert(assert(db:prepare('SELECT DISTINCT device FROM t ORDER BY device')):execute())
    assert.same({ { 'GPU\0A' }, { 'GPU\0B' } }, rows)
    db:close()
  end)
end)

describe('NUL bytes in SQL: kb.pq', function()
  local server, why
  setup(function() server, why = pg.start() end)
  teardown(function() if server then server.stop() end end)

  it('refuses a NUL in the connection string and the label before connecting', function()
    refused(err_of(kb.pq.connect, 'host=/nonexistent\0 port=1'), 1, 'connect', 'conninfo', 18)
    refused(err_of(kb.pq.connect, 'host=/nonexistent', 'db\0x'), 2, 'connect', 'label', 3)
  end)

  it('refuses a NUL in SQL text and in a text parameter: "GPU\\0A" and "GPU\\0B" never become one "GPU"', function()
    if not server then
      pending('no PostgreSQL server here: ' .. tostring(why))
      return
    end
    local conn = assert(kb.pq.connect(server.uri, 'nul-test'))
    assert(conn:exec('CREATE TABLE t (device TEXT)'))
    refused(err_of(conn.exec, conn, 'SELECT 1;\0DROP TABLE t'), 1, 'exec', 'SQL text', 10)
    refused(err_of(conn.exec, conn, 'INSERT INTO t VALUES ($1)', { 'GPU\0A' }), 2, 'exec', 'parameter 1', 4)
    refused(err_of(conn.exec, conn, 'INSERT INTO t VALUES ($1)', { 'GPU\0B' }), 2, 'exec', 'parameter 1', 4)
    assert.same({}, (assert(conn:exec('SELECT device FROM t'))))
    assert(conn:exec('INSERT INTO t VALUES ($1)', { 'GPU' }))
    assert.same({ { 'GPU' } }, (assert(conn:exec('SELECT device FROM t'))))
    conn:close()
  end)
end)

describe('NUL bytes in user code', function()
  local NVRTC = kb.cuda.nvrtc_version()

  it('kb.cuda.compile refuses a NUL in opts.cache_dir', function()
    if not NVRTC then
      pending('NVRTC not found')
      return
    end
    refused(err_of(kb.cuda.compile, 'extern "C" __global__ void k() {}', { cache_dir = dir .. '\0zz' }), 2,
      'compile', 'opts.cache_dir', #dir + 1)
    assert.same({}, package.loaded['kluabench.host'].listdir(dir))
  end)

  it('a plugin kernel name with a NUL is refused', function()
    local lib = kb.executable():match('^(.*)/') .. '/plugins/libscale_add.so'
    if not kb.stat(lib) then
      pending('no ' .. lib .. ' (make plugins)')
      return
    end
    local p = kb.plugin.load(lib)
    refused(err_of(p.kernel, p, 'scale_add\0x'), 1, 'kernel', 'kernel name', 10)
  end)
end)
