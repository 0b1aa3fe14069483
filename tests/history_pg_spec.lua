-- kluabench history on a real PostgreSQL server, started for this spec on a
-- Unix socket in a temporary folder (tests/helpers/pg_server.lua) and stopped
-- at its end: the same commands as on SQLite, two writers at once, a retried
-- transaction, a newer schema refused, and a server that is down named
-- without its password.
-- Pending, with the reason, where PostgreSQL is not installed.
local sub = require 'helpers.subprocess'
local data = require 'helpers.history_data'
local pg = require 'helpers.pg_server'
local history = require 'kluabench.history'

local run = sub.run

local server, why = nil, nil

local function sha(i) return string.format('%02x%038x', i, 0xbeef) end

describe('kluabench history (PostgreSQL)', function()
  setup(function() server, why = pg.start() end)
  teardown(function() if server then server.stop() end end)

  local function needs_server()
    if not server then
      pending('no PostgreSQL server here: ' .. tostring(why))
      return false
    end
    return true
  end

  it('adds once, lists, checks a step and names its commit, reports and marks, as on SQLite', function()
    if not needs_server() then return end
    local uri = server.database('steps')
    local dir = sub.tmpdir()
    for i = 1, 11 do
      local f = string.format('%s/c%02d.jsonl', dir, i)
      local noise = 1 + 0.004 * math.sin(i * 2.1)
      data.write(f, data.session(i, { fused = 6200 * noise * (i >= 10 and 1.07 or 1), copy = 5000 * noise }, { seed = i }))
      local r = run({ 'history', 'add', f, '--db', uri, '--commit', sha(i), '--parents', i > 1 and sha(i - 1) or '',
        '--commit-time', string.format('2026-11-%02dT12:00:00Z', i) })
      assert.equal(0, r.code, r.err)
      if i == 1 then
        r = run({ 'history', 'add', f, '--db', uri, '--commit', sha(i) })
        assert.matches('0 bundle(s) added, 2 already there', r.err, 1, true)
      end
    end
    local r = run({ 'history', 'list', '--db', uri })
    assert.equal(0, r.code, r.err)
    assert.matches('2 series, 22 run(s), 11 commit(s)', r.out, 1, true)
    r = run({ 'history', 'check', '--db', uri })
    assert.equal(1, r.code, r.out .. r.err)
    assert.matches('stepped at commit ' .. sha(10), r.out, 1, true)
    r = run({ 'history', 'trend', '--db', uri, '--point', 'hidden512', '--provider', 'fused' })
    assert.equal(0, r.code, r.err)
    assert.matches('11 commit(s), oldest first', r.out, 1, true)
    r = run({ 'history', 'compare', sha(9), sha(10), '--db', uri, '--between', '0.01' })
    assert.equal(1, r.code, r.out .. r.err)
    assert.matches('SLOWER', r.out, 1, true)
    r = run({ 'report', '--db', uri, '-o', dir .. '/report.html' })
    assert.equal(0, r.code, r.err)
    assert.matches('1 regression(s)', r.err, 1, true)
    assert.matches('stepped here (regression)', sub.slurp(dir .. '/report.html'), 1, true)
    -- a mark at the step restarts the baseline there
    r = run({ 'history', 'mark', sha(10), '--reason', 'new driver', '--db', uri })
    assert.equal(0, r.code, r.err)
    r = run({ 'history', 'check', '--db', uri })
    assert.equal(0, r.code, r.out .. r.err)
    assert.matches('baseline from mark at ' .. sha(10):sub(1, 12) .. ' (new driver)', r.out, 1, true)
    run({ '-e', 'os.execute("rm -rf ' .. dir .. '")' })
  end)

  it('two processes adding at once into a new database lose nothing', function()
    if not needs_server() then return end
    local uri = server.database('concurrent')
    local dir = sub.tmpdir()
    local files = {}
    for k = 1, 2 do
      local bs = {}
      for i = 1, 100 do
        for _, b in ipairs(data.session(k * 1000 + i, { fused = 6200, copy = 5000 }, { seed = i, n = 20 })) do
          bs[#bs + 1] = b
        end
      end
      files[k] = dir .. '/w' .. k .. '.jsonl'
      data.write(files[k], bs)
    end
    local cmd = string.format('(%s history add %s --db %s --commit %s & %s history add %s --db %s --commit %s & wait) 2>&1',
      sub.q(sub.bin()), sub.q(files[1]), sub.q(uri), sha(1), sub.q(sub.bin()), sub.q(files[2]), sub.q(uri), sha(2))
    local r = run({ '-e', 'os.exit(os.execute(' .. string.format('%q', cmd) .. ') and 0 or 1)' })
    assert.equal(0, r.code, r.err)
    local h = assert(history.open(uri))
    local c = history.store.counts(h)
    assert.equal(400, c.runs)
    assert.equal(400, c.samples)
    assert.equal(require('kluabench.history.schema').latest(), h:query('SELECT COUNT(*) FROM schema_version')[1][1])
    h:close()
    run({ '-e', 'os.execute("rm -rf ' .. dir .. '")' })
  end)

  it('a transaction retried after a deadlock adds again without the ids of the attempt rolled back', function()
    if not needs_server() then return end
    -- a real deadlock cannot be timed from here: each transaction's first attempt is rolled back by
    -- force (data.add_retried); PostgreSQL's ids come from a sequence, so a rolled-back id is never
    -- given again and one reused from the first attempt names no document
    local h = assert(history.open(server.database('retry'), { create = true }))
    local s, rolled = data.add_retried(h, data.session(1, { fused = 6200, copy = 5000 }), sha(1))
    assert.equal(2, rolled)
    assert.same({ 2, 0 }, { s.added, s.present })
    assert.same({}, data.dangling_documents(h))
    assert.equal(2, history.store.counts(h).runs)
    h:close()
  end)

  it('a transaction whose query hits a serialization failure is retried, and then commits', function()
    if not needs_server() then return end
    -- a real one: under REPEATABLE READ, a row another connection changed after this transaction's
    -- snapshot cannot be updated (SQLSTATE 40001, raised by the query inside the transaction)
    local hdb = require 'kluabench.history.db'
    local uri = server.database('serialize')
    local a, b = assert(hdb.open(uri, { create = true })), assert(hdb.open(uri, { create = true }))
    a:exec('CREATE TABLE ser (k BIGINT PRIMARY KEY, v BIGINT)')
    a:run('INSERT INTO ser VALUES (1, 0)')
    local attempts = 0
    a:transaction(function(h)
      attempts = attempts + 1
      h:exec('SET TRANSACTION ISOLATION LEVEL REPEATABLE READ')
      h:query('SELECT v FROM ser WHERE k = 1')
      if attempts == 1 then b:run('UPDATE ser SET v = v + 1 WHERE k = 1') end
      h:run('UPDATE ser SET v = v + 10 WHERE k = 1')
    end)
    assert.equal(2, attempts)
    assert.equal(11, a:query('SELECT v FROM ser WHERE k = 1')[1][1])
    a:close()
    b:close()
  end)

  it('a schema step added later migrates the database once and keeps its runs; a failing step changes nothing',
    function()
      if not needs_server() then return end
      local schema = require 'kluabench.history.schema'
      local uri = server.database('migrate')
      local dir = sub.tmpdir()
      local f = dir .. '/c.jsonl'
      data.write(f, data.session(1, { fused = 6200, copy = 5000 }))
      local r = run({ 'history', 'add', f, '--db', uri, '--commit', sha(1) })
      assert.equal(0, r.code, r.err)
      local function versions(h)
        local out = {}
        for i, row in ipairs(h:query('SELECT version FROM schema_version ORDER BY version')) do out[i] = row[1] end
        return out
      end
      -- the steps this kluabench has, 1..latest, and one more appended here
      local latest = schema.latest()
      local function upto(n)
        local out = {}
        for v = 1, n do out[v] = v end
        return out
      end
      table.insert(schema.STEPS, { version = latest + 1, description = 'a broken step',
        sql = 'ALTER TABLE runs ADD COLUMN note TEXT; INSERT INTO nosuch VALUES (1)' })
      local h, err = history.open(uri)
      table.remove(schema.STEPS)
      assert.is_nil(h)
      assert.matches(uri .. ': ', err, 1, true)
      assert.matches('nosuch', err, 1, true)
      h = assert(history.open(uri))
      assert.same(upto(latest), versions(h))
      assert.is_false(pcall(h.query, h, 'SELECT note FROM runs'))
      h:close()
      table.insert(schema.STEPS, { version = latest + 1, description = 'a note per run',
        sql = 'ALTER TABLE runs ADD COLUMN note TEXT; CREATE INDEX runs_note ON runs (note)' })
      local ok, e = pcall(function()
        for _ = 1, 2 do
          local hh = assert(history.open(uri))
          assert.same(upto(latest + 1), versions(hh))
          assert.equal(2, history.store.counts(hh).runs)
          assert.equal(2, hh:run('UPDATE runs SET note = ?', { 'kept' }))
          hh:close()
        end
      end)
      table.remove(schema.STEPS)
      assert(ok, e)
      r = run({ 'history', 'list', '--db', uri })
      assert.equal(1, r.code)
      assert.matches(uri .. string.format(': the history database has schema version %d, newer than this kluabench knows (%d)',
        latest + 1, latest), r.err, 1, true)
      run({ '-e', 'os.execute("rm -rf ' .. dir .. '")' })
    end)

  it('a version-1 database migrates to version 2 on its next open, keeping every run, document, sample and mark',
    function()
      if not needs_server() then return end
      local kb = require 'kluabench'
      local uri = server.database('v1')
      data.v1_database(uri)
      local raw = assert(require('kluabench.history.db').open(uri))
      local before = {}
      for _, r in ipairs(raw:query([[SELECT r.run_key, r.commit_sha, s.unit, s.vals, d.body FROM runs r
        JOIN samples s ON s.run_key = r.run_key JOIN documents d ON d.id = r.run_doc]])) do
        before[r[1]] = r
      end
      local fused = history.find_series(raw, { provider = 'fused' })[1].series
      local trend = history.trend(raw, fused)
      local commits = history.store.commits(raw)
      raw:close()
      local r = run({ 'history', 'list', '--db', uri })
      assert.equal(0, r.code, r.err)
      assert.matches('2 series, 6 run(s), 3 commit(s)', r.out, 1, true)
      local h = assert(history.open(uri))
      assert.equal(2, h:query('SELECT MAX(version) FROM schema_version')[1][1])
      assert.same({ runs = 6, samples = 6, documents = 12, commits = 3, marks = 1 }, history.store.counts(h))
      for key, b in pairs(before) do
        assert.same({ b[3], b[4], b[2] },
          h:query('SELECT samples_unit, samples, commit_sha FROM runs WHERE run_key = ?', { key })[1])
      end
      local n = 0
      for _, cm in ipairs(commits) do
        for _, bundle in ipairs(history.store.bundles(h, cm.sha)) do
          local k = assert(history.point.key(require('kluabench.result').session(bundle)))
          local key = 'sha256:' .. kb.sha256(table.concat({ k.protocol, k.workload, k.environment,
            k.implementation, k.observed_at, tostring(k.session_index), tostring(k.session_count) },
            '\n'))
          assert.equal(assert(before[key], key)[5], kb.jcs.encode(bundle.run))
          n = n + 1
        end
      end
      assert.equal(6, n)
      assert.same(commits, history.store.commits(h))
      assert.same(trend, history.trend(h, fused))
      -- the rebuilt bundles kept their identity (each was found above by it); adding them again adds
      -- nothing: version 1 holds records whose samples its test helper redrew without their
      -- quantiles, which kluabench verify refuses, and so does add
      local again = history.store.add_bundles(h, history.store.bundles(h, commits[1].sha), { commit = commits[1].sha })
      assert.same({ 0, 0, 2 }, { again.added, again.present, #again.refused })
      assert.matches('refused as kluabench verify refuses it: measurements p20', again.refused[1].why, 1, true)
      h:close()
    end)

  it('refuses a newer schema and a foreign database by name', function()
    if not needs_server() then return end
    local uri = server.database('newer')
    local h = assert(history.open(uri, { create = true }))
    h:close()
    server.psql('newer', "INSERT INTO schema_version VALUES (42, 'later', '2030-01-01')")
    local r = run({ 'history', 'list', '--db', uri })
    assert.equal(1, r.code)
    assert.matches(uri .. ': the history database has schema version 42, newer than this kluabench knows', r.err, 1, true)
    local other = server.database('other')
    server.psql('other', 'CREATE TABLE orders (id integer)')
    r = run({ 'history', 'add', data.SESSION, '--db', other,
      '--commit', sha(1) })
    assert.equal(1, r.code)
    assert.matches('not a kluabench history database (it has tables orders', r.err, 1, true)
  end)

  it('a server that is down: an error naming the database, without its password', function()
    if not needs_server() then return end
    local uri = string.format('postgresql://kb:s3cret@/nosuch?host=%s&port=%d', server.dir .. '/none', server.port)
    local r = run({ 'history', 'list', '--db', uri })
    assert.equal(1, r.code)
    assert.matches('kluabench history: postgresql://kb@/nosuch?host=', r.err, 1, true)
    assert.matches('No such file or directory', r.err, 1, true)
    assert.is_nil(r.err:find('s3cret', 1, true))
  end)
end)
