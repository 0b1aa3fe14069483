-- kluabench history on a real SQLite file: adding bundles (idempotent, whole
-- bundles only, two writers at once), the queries, regression detection
-- along commits (a step found at its commit, machine drift kept apart by the
-- sentinel, a mark restarting the baseline), compare's statistics, and bad
-- databases (corrupt, foreign, newer schema, not a file) refused by name.
local sub = require 'helpers.subprocess'
local data = require 'helpers.history_data'
local history = require 'kluabench.history'
local detect = require 'kluabench.history.detect'
local kb = require 'kluabench'

local run, q = sub.run, sub.q

-- A series of commits c1..cN: per commit one session of fused and copy;
-- fused is scaled by step(i), copy by drift(i).
local function series_files(dir, n, step, drift)
  local files = {}
  for i = 1, n do
    local f = string.format('%s/c%02d.jsonl', dir, i)
    local noise = 1 + 0.004 * math.sin(i * 2.1)
    data.write(f, data.session(i, { fused = 6200 * noise * (step and step(i) or 1),
      copy = 5000 * noise * (drift and drift(i) or 1) }, { seed = i }))
    files[i] = f
  end
  return files
end

local function sha(i) return string.format('%02x%038x', i, 0xc0ffee) end

local function add_series(db, files)
  for i, f in ipairs(files) do
    local r = run({ 'history', 'add', f, '--db', db, '--commit', sha(i), '--parents', i > 1 and sha(i - 1) or '',
      '--commit-time', string.format('2026-11-%02dT12:00:00Z', i), '--branch', 'main' })
    assert(r.code == 0, r.err)
  end
end

describe('kluabench history (SQLite)', function()
  local dir
  before_each(function() dir = sub.tmpdir() end)
  after_each(function() run({ '-e', 'os.execute("rm -rf ' .. dir .. '")' }) end)

  it('adds bundles once: the same file twice is a no-op, and every document is kept as written', function()
    local f = dir .. '/a.jsonl'
    local bundles = data.session(1, { fused = 6200, copy = 5000 })
    data.write(f, bundles)
    local db = dir .. '/h.db'
    local r = run({ 'history', 'add', f, '--db', db, '--commit', sha(1) })
    assert.equal(0, r.code, r.err)
    assert.matches('2 bundle(s) added, 0 already there', r.err, 1, true)
    r = run({ 'history', 'add', f, '--db', db, '--commit', sha(2) })
    assert.equal(0, r.code, r.err)
    assert.matches('0 bundle(s) added, 2 already there', r.err, 1, true)
    local h = assert(history.open(db))
    local c = history.store.counts(h)
    assert.equal(2, c.runs)
    assert.equal(2, c.samples)
    assert.equal(1, c.commits) -- the second add added nothing, so no commit
    -- the documents as written: each stored body is the document's canonical JSON
    local back = history.store.bundles(h, sha(1))
    assert.equal(2, #back)
    for _, role in ipairs { 'run', 'protocol', 'environment', 'workload', 'implementation' } do
      assert.equal(kb.jcs.encode(bundles[1][role]), kb.jcs.encode(back[1][role]), role)
    end
    h:close()
  end)

  it('lists series and commits, and trends one series over commits with intervals', function()
    local db = dir .. '/h.db'
    add_series(db, series_files(dir, 4, function(i) return i == 4 and 1.1 or 1 end))
    local r = run({ 'history', 'list', '--db', db })
    assert.equal(0, r.code, r.err)
    assert.matches('hidden512-kv_heads8-q_heads32-seq2048-bf16', r.out, 1, true)
    assert.matches('2 series, 8 run(s), 4 commit(s)', r.out, 1, true)
    r = run({ 'history', 'list', '--commits', '--db', db })
    assert.matches(sha(4):sub(1, 12), r.out, 1, true)
    r = run({ 'history', 'trend', '--db', db, '--point', 'hidden512', '--provider', 'fused', '--format', 'json' })
    assert.equal(0, r.code, r.err)
    local t = assert(require('kluabench.util.json').decode(r.out))
    assert.equal(4, #t.commits)
    assert.equal(sha(1), t.commits[1].commit.sha)
    for _, c in ipairs(t.commits) do
      assert.is_true(c.lo_ms <= c.median_ms and c.median_ms <= c.hi_ms)
    end
    assert.near(1.1, t.commits[4].median_ms / t.commits[3].median_ms, 0.02)
    -- two series match without --provider: the user is told which
    r = run({ 'history', 'trend', '--db', db, '--point', 'hidden512' })
    assert.equal(1, r.code)
    assert.matches('2 series match', r.err, 1, true)
    -- one series a line (issue 40: the list read '\x0A' between them)
    assert.matches('narrow with %-%-point, %-%-provider, %-%-device:\n  [^\n]+\n  [^\n]+\n$', r.err)
    assert.is_nil(r.err:find('\\x0A', 1, true))
  end)

  it('check: exit 1 and the commit where the series stepped (+6 % at commit 10 of 12)', function()
    local db = dir .. '/h.db'
    add_series(db, series_files(dir, 12, function(i) return i >= 10 and 1.06 or 1 end))
    local r = run({ 'history', 'check', '--db', db })
    assert.equal(1, r.code, r.out .. r.err)
    assert.matches('REGRESSION: llama4_rope forward hidden512[^\n]*%(fused, NVIDIA H200%) stepped at commit '
      .. sha(10), r.out)
    -- the copy provider (the sentinel) did not step, and the row says so
    assert.matches('1 regression%(s%)', r.out)
    assert.matches('the sentinel (copy) did not step (', r.out, 1, true)
    -- the same history checked at commit 9 (before the step): nothing
    r = run({ 'history', 'check', '--db', db, '--head', sha(9):sub(1, 10) })
    assert.equal(0, r.code, r.out)
    -- a mark at the step restarts the baseline: too few commits after it to judge
    r = run({ 'history', 'mark', sha(10), '--reason', 'new kernel tuning on purpose', '--db', db })
    assert.equal(0, r.code, r.err)
    r = run({ 'history', 'check', '--db', db })
    assert.equal(0, r.code, r.out)
    assert.matches('short', r.out, 1, true)
    assert.matches('baseline from mark', r.out, 1, true)
  end)

  it('check: a step the sentinel (copy, same sessions) shows too is drift, not a regression', function()
    local db = dir .. '/h.db'
    local up = function(i) return i >= 10 and 1.06 or 1 end
    add_series(db, series_files(dir, 12, up, up))
    local r = run({ 'history', 'check', '--db', db })
    assert.equal(0, r.code, r.out .. r.err)
    assert.matches('drift', r.out, 1, true)
    assert.matches('the sentinel stepped too', r.out, 1, true)
    -- without the sentinel the same data is a regression
    r = run({ 'history', 'check', '--db', db, '--sentinel', 'none' })
    assert.equal(1, r.code, r.out)
  end)

  it('check: a regression with no sentinel runs says that machine drift is not ruled out', function()
    local db, files = dir .. '/h.db', {}
    for i = 1, 12 do
      files[i] = string.format('%s/c%02d.jsonl', dir, i)
      local noise = 1 + 0.004 * math.sin(i * 2.1)
      data.write(files[i], data.session(i, { fused = 6200 * noise * (i >= 10 and 1.06 or 1) }, { seed = i,
        providers = { 'fused' } }))
    end
    add_series(db, files)
    local r = run({ 'history', 'check', '--db', db })
    assert.equal(1, r.code, r.out .. r.err)
    assert.matches('stepped at commit ' .. sha(10), r.out, 1, true)
    assert.matches('no sentinel (copy) runs around the step: machine drift not ruled out', r.out, 1, true)
  end)

  it('compare REV1 REV2 gives the statistics of kluabench compare on the stored bundles', function()
    local db = dir .. '/h.db'
    local files = series_files(dir, 2, function(i) return i == 2 and 1.3 or 1 end)
    add_series(db, files)
    local r = run({ 'history', 'compare', sha(1):sub(1, 9), sha(2):sub(1, 9), '--db', db, '--between', '0.01',
      '--format', 'json' })
    local direct = run({ 'compare', files[1], files[2], '--between', '0.01', '--format', 'json' })
    assert.equal(direct.code, r.code)
    local a = assert(require('kluabench.util.json').decode(r.out))
    local b = assert(require('kluabench.util.json').decode(direct.out))
    assert.equal(#b.points, #a.points)
    for i, p in ipairs(b.points) do
      assert.equal(p.verdict, a.points[i].verdict)
      assert.equal(p.ratio, a.points[i].ratio)
      assert.equal(p.lo, a.points[i].lo)
    end
    assert.equal(1, r.code) -- +30 %: a regression
  end)

  it('compare pools the runs of several adds of one commit as its sessions', function()
    -- CI adds a commit's sweeps one file at a time: each file's session 1 is one more session of the
    -- commit, not "several sweeps in one file"
    local db = dir .. '/h.db'
    for c = 1, 2 do
      for k = 1, 2 do
        local tag = c * 10 + k
        local f = string.format('%s/c%d-%d.jsonl', dir, c, k)
        data.write(f, data.session(tag, { fused = 6200 * (c == 2 and 1.3 or 1), copy = 5000 }, { seed = tag }))
        local r = run({ 'history', 'add', f, '--db', db, '--commit', sha(c), '--parents', c > 1 and sha(1) or '',
          '--commit-time', string.format('2026-11-%02dT12:00:00Z', c) })
        assert.equal(0, r.code, r.err)
      end
    end
    local r = run({ 'history', 'compare', sha(1), sha(2), '--db', db, '--format', 'json' })
    assert.equal(1, r.code, r.err) -- +30 % on fused: a regression
    local res = assert(require('kluabench.util.json').decode(r.out))
    assert.equal(2, #res.points)
    for _, p in ipairs(res.points) do
      assert.equal(2, p.base_sessions, p.provider)
      assert.equal(2, p.new_sessions, p.provider)
      assert.no.matches('several', p.hint or '', 1, true)
      if p.provider == 'fused' then assert.equal('SLOWER', p.verdict) else assert.are_not.equal('SLOWER', p.verdict) end
    end
  end)

  it("the harness's --history DB adds its runs under the git commit of the current directory", function()
    local git = function(cmd)
      local ok = os.execute(string.format('cd %s && git -c user.email=t@example.com -c user.name=t %s >/dev/null 2>&1',
        q(dir), cmd))
      assert(ok, 'git ' .. cmd)
    end
    git('init -q')
    git('commit -q --allow-empty -m one')
    local db = dir .. '/h.db'
    local script = sub.root() .. '/scripts/llama4_rope.lua'
    local args = { script, '--seq', '64,128', '--hidden', '64', '--rep-ms', '5', '--warmup-ms', '1',
      '--format', 'jsonl', '--out', dir .. '/r.jsonl', '--history', db }
    local r = run(args, { cwd = dir })
    assert.equal(0, r.code, r.err)
    assert.matches('2 runs added, 0 already there, 0 refused', r.err, 1, true)
    local list = run({ 'history', 'list', '--db', db })
    assert.equal(0, list.code, list.err)
    assert.matches('2 series, 2 run%(s%), 1 commit%(s%)', list.out)
    -- the runs are the results file's: history add of it finds them there
    local again = run({ 'history', 'add', dir .. '/r.jsonl', '--db', db }, { cwd = dir })
    assert.equal(0, again.code, again.err)
    assert.matches('0 bundle(s) added, 2 already there', again.out .. again.err, 1, true)
    -- no git work tree, or a database that cannot be opened: refused before anything is timed
    local outside = sub.tmpdir()
    r = run({ script, '--seq', '64', '--hidden', '64', '--history', db }, { cwd = outside })
    assert.equal(1, r.code)
    assert.matches('--history ' .. db .. ': no git commit in the current directory', r.err, 1, true)
    assert.no.matches('median', r.err .. r.out, 1, true)
    sub.spit(dir .. '/bad.db', string.rep('not a database ', 100))
    r = run({ script, '--seq', '64', '--hidden', '64', '--history', dir .. '/bad.db' }, { cwd = dir })
    assert.equal(1, r.code)
    assert.matches('bad.db: file is not a database', r.err, 1, true)
  end)

  it('a schema step added later migrates an existing database once and keeps its runs; a failing step changes nothing',
    function()
      local schema = require 'kluabench.history.schema'
      local db = dir .. '/h.db'
      add_series(db, series_files(dir, 2))
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
      -- a step that fails half way: rolled back whole, the database stays at the latest version
      table.insert(schema.STEPS, { version = latest + 1, description = 'a broken step',
        sql = 'ALTER TABLE runs ADD COLUMN note TEXT; INSERT INTO nosuch VALUES (1)' })
      local h, err = history.open(db)
      table.remove(schema.STEPS)
      assert.is_nil(h)
      assert.matches(db .. ': ', err, 1, true)
      assert.matches('nosuch', err, 1, true)
      h = assert(history.open(db))
      assert.same(upto(latest), versions(h))
      assert.is_false(pcall(h.query, h, 'SELECT note FROM runs')) -- the ALTER was rolled back with it
      h:close()
      -- a good step: applied once, on the next open; the runs are all there
      table.insert(schema.STEPS, { version = latest + 1, description = 'a note per run',
        sql = 'ALTER TABLE runs ADD COLUMN note TEXT; CREATE INDEX runs_note ON runs (note)' })
      local ok, e = pcall(function()
        for _ = 1, 2 do
          local hh = assert(history.open(db))
          assert.same(upto(latest + 1), versions(hh))
          assert.equal(4, history.store.counts(hh).runs)
          assert.equal(4, hh:run('UPDATE runs SET note = ?', { 'kept' }))
          hh:close()
        end
      end)
      table.remove(schema.STEPS)
      assert(ok, e)
      -- this kluabench, without that step, refuses the migrated database by name
      local r = run({ 'history', 'list', '--db', db })
      assert.equal(1, r.code)
      assert.matches(db .. string.format(': the history database has schema version %d, newer than this kluabench knows (%d)',
        latest + 1, latest), r.err, 1, true)
    end)

  it('a version-1 database migrates to version 2 on its next open, keeping every run, document, sample and mark',
    function()
      local db = dir .. '/v1.db'
      data.v1_database(db)
      -- what version 1 holds, read through its own tables
      local raw = assert(require('kluabench.history.db').open(db))
      local before = {}
      for _, r in ipairs(raw:query([[SELECT r.run_key, r.commit_sha, s.unit, s.vals, d.body, p.body, e.body, w.body,
        i.body, o.body FROM runs r JOIN samples s ON s.run_key = r.run_key JOIN documents d ON d.id = r.run_doc
        LEFT JOIN documents p ON p.id = r.protocol_doc LEFT JOIN documents e ON e.id = r.environment_doc
        LEFT JOIN documents w ON w.id = r.workload_doc LEFT JOIN documents i ON i.id = r.implementation_doc
        LEFT JOIN documents o ON o.id = r.operation_doc]])) do
        before[r[1]] = r
      end
      local fused = history.find_series(raw, { provider = 'fused' })[1].series
      local trend = history.trend(raw, fused)
      local series, commits = history.store.series(raw), history.store.commits(raw)
      raw:close()
      -- a reader that opens it read-only (report) says how to bring it up to date
      local r = run({ 'report', '--db', db, '-o', dir .. '/r.html' })
      assert.equal(1, r.code)
      assert.matches(db .. ": the history database has schema version 1, older than this kluabench's", r.err, 1, true)
      r = run({ 'history', 'list', '--db', db })
      assert.equal(0, r.code, r.err)
      assert.matches('2 series, 6 run(s), 3 commit(s)', r.out, 1, true)
      local h = assert(history.open(db))
      assert.same({ 1, 2 }, (function()
        local out = {}
        for i, row in ipairs(h:query('SELECT version FROM schema_version ORDER BY version')) do out[i] = row[1] end
        return out
      end)())
      local c = history.store.counts(h)
      assert.same({ runs = 6, samples = 6, documents = 12, commits = 3, marks = 1 }, c)
      -- every run with its documents as written and its raw samples (the ms text of version 1)
      for key, b in pairs(before) do
        local row = h:query('SELECT samples_unit, samples, commit_sha FROM runs WHERE run_key = ?', { key })[1]
        assert.same({ b[3], b[4], b[2] }, row)
      end
      local n = 0
      for _, cm in ipairs(commits) do
        for _, bundle in ipairs(history.store.bundles(h, cm.sha)) do
          local k = assert(history.point.key(require('kluabench.result').session(bundle)))
          local key = 'sha256:' .. kb.sha256(table.concat({ k.protocol, k.workload, k.environment,
            k.implementation, k.observed_at, tostring(k.session_index), tostring(k.session_count) },
            '\n'))
          local b = assert(before[key], key)
          for j, role in ipairs(history.point.ROLES) do
            if b[j + 4] then assert.equal(b[j + 4], kb.jcs.encode(bundle[role]), role) end
          end
          n = n + 1
        end
      end
      assert.equal(6, n)
      -- the same series, commits, trend and mark; the runs are found again by their identity
      assert.same(series, history.store.series(h))
      assert.same(commits, history.store.commits(h))
      assert.same(trend, history.trend(h, fused))
      assert.equal(1, #history.store.marks(h, 'NVIDIA H200', fused))
      -- the rebuilt bundles kept their identity (each was found above by it); adding them again adds
      -- nothing: version 1 holds records whose samples its test helper redrew without their
      -- quantiles, which kluabench verify refuses, and so does add
      local again = history.store.add_bundles(h, history.store.bundles(h, commits[1].sha), { commit = commits[1].sha })
      assert.same({ 0, 0, 2 }, { again.added, again.present, #again.refused })
      assert.matches('refused as kluabench verify refuses it: measurements p20', again.refused[1].why, 1, true)
      h:close()
      r = run({ 'report', '--db', db, '-o', dir .. '/r.html' })
      assert.equal(0, r.code, r.err)
    end)

  it('two processes adding at once lose nothing (and migrate a new database once)', function()
    local db = dir .. '/h.db'
    local files = {}
    for k = 1, 2 do
      local bs = {}
      for i = 1, 150 do
        for _, b in ipairs(data.session(k * 1000 + i, { fused = 6200, copy = 5000 }, { seed = i, n = 20 })) do
          bs[#bs + 1] = b
        end
      end
      files[k] = dir .. '/w' .. k .. '.jsonl'
      data.write(files[k], bs)
    end
    -- each add's own exit status and output (a shell's bare `wait` would hide a failed one)
    local cmd = string.format('(%s history add %s --db %s --commit %s > %s 2>&1; echo $? >> %s) & '
      .. '(%s history add %s --db %s --commit %s > %s 2>&1; echo $? >> %s) & wait',
      q(sub.bin()), q(files[1]), q(db), sha(1), q(dir .. '/o1'), q(dir .. '/rc'),
      q(sub.bin()), q(files[2]), q(db), sha(2), q(dir .. '/o2'), q(dir .. '/rc'))
    local out = sub.run({ '-e', 'os.exit(os.execute(' .. string.format('%q', cmd) .. ') and 0 or 1)' })
    assert.equal(0, out.code, out.err)
    local outputs = (sub.slurp(dir .. '/o1') or '') .. (sub.slurp(dir .. '/o2') or '')
    assert.equal('0\n0\n', sub.slurp(dir .. '/rc'), outputs)
    local h = assert(history.open(db))
    local c = history.store.counts(h)
    assert.equal(600, c.runs)
    assert.equal(600, c.samples)
    assert.equal(require('kluabench.history.schema').latest(), h:query('SELECT COUNT(*) FROM schema_version')[1][1])
    h:close()
  end)

  it("opening a new database while another process writes to it waits its turn (no 'database is locked')", function()
    -- SQLite answers the switch to WAL with SQLITE_BUSY at once, without its busy handler, while
    -- another process holds the write lock of a new (not yet WAL) file: two adds starting together
    -- failed about one time in three with "database is locked", within milliseconds
    local db, ready = dir .. '/new.db', dir .. '/held'
    local holder = string.format([[
      local core = require 'kluabench.core'
      local c = assert(core.sqlite.open(%q, 'rwc'))
      assert(c:exec('BEGIN IMMEDIATE'))
      local f = assert(io.open(%q, 'w')); f:close()
      core.process.sleep(1000)
      assert(c:exec('ROLLBACK'))
    ]], db, ready)
    local pid = assert(kb.process.spawn({ sub.bin(), '-e', holder }, { stdout = '/dev/null', stderr = '/dev/null' }))
    local deadline = kb.clock_ns() + 20e9
    while not io.open(ready) and kb.clock_ns() < deadline do kb.process.sleep(10) end
    assert.is_truthy(io.open(ready), 'the holder did not start')
    local t0 = kb.clock_ns()
    local h, err = history.open(db, { create = true })
    local waited = (kb.clock_ns() - t0) / 1e9
    kb.process.wait(pid)
    assert.is_truthy(h, err)
    assert.is_true(waited > 0.5, string.format('opened after %.3f s: it did not wait for the writer', waited))
    local schema = require 'kluabench.history.schema'
    assert.equal(schema.latest(), schema.check(h)) -- migrated once the writer was done
    h:close()
  end)

  for _, signal in ipairs { 'KILL', 'INT' } do
    it('an add stopped by SIG' .. signal .. ' leaves whole bundles only, and adding again completes it', function()
      local bs = {}
      for i = 1, 1300 do
        for _, b in ipairs(data.session(i, { fused = 6200 }, { providers = { 'fused' }, seed = i, n = 40 })) do
          bs[#bs + 1] = b
        end
      end
      local f, db = dir .. '/big.jsonl', dir .. '/h.db'
      data.write(f, bs)
      local ticket = dir .. '/pid'
      -- start the add, wait for the first committed batch, then signal it
      local script = string.format([[
        local kb = require 'kluabench'
        local pid = assert(kb.process.spawn({%q, 'history', 'add', %q, '--db', %q, '--commit', %q},
          {stdout = '/dev/null', stderr = '/dev/null'}))
        local deadline = os.time() + 60
        while os.time() < deadline do
          kb.process.sleep(20)
          local h = require('kluabench.history').open(%q)
          if h then
            local ok, n = pcall(function() return h:query('SELECT COUNT(*) FROM runs')[1][1] end)
            h:close()
            if ok and n > 0 then break end
          end
        end
        kb.process.kill(pid, 'SIG%s')
        local _, how, code = kb.process.wait(pid)
        io.write(tostring(code))
      ]], sub.bin(), f, db, sha(1), db, signal)
      local r = run({ '-e', script })
      assert.equal(0, r.code, r.err)
      local h = assert(history.open(db))
      assert.equal('ok', h:query('PRAGMA integrity_check')[1][1])
      local c = history.store.counts(h)
      assert.is_true(c.runs > 0 and c.runs < 1300, 'stopped part way: ' .. c.runs)
      assert.equal(0, c.runs % history.store.BATCH) -- whole batches of whole bundles
      assert.equal(c.runs, c.samples)
      assert.equal(0, h:query('SELECT COUNT(*) FROM runs r LEFT JOIN documents d ON d.id = r.run_doc '
        .. 'WHERE d.id IS NULL')[1][1])
      h:close()
      r = run({ 'history', 'add', f, '--db', db, '--commit', sha(1) })
      assert.equal(0, r.code, r.err)
      h = assert(history.open(db))
      assert.equal(1300, history.store.counts(h).runs)
      h:close()
    end)
  end

  it('a retried transaction adds its bundles again without the ids of the attempt rolled back', function()
    -- h:transaction retries only on PostgreSQL, but add_bundles' code is the same on both: here
    -- each transaction's first attempt is rolled back by force (data.add_retried) on the real
    -- SQLite file. One bundle per transaction: the second uses the first's committed ids and must
    -- drop its own rolled-back ones.
    local bundles = data.session(1, { fused = 6200, copy = 5000 })
    local h = assert(history.open(dir .. '/h.db', { create = true }))
    local s, rolled = data.add_retried(h, bundles, sha(1))
    assert.equal(2, rolled)
    assert.same({ 2, 0 }, { s.added, s.present })
    assert.same({}, data.dangling_documents(h))
    -- each document stored once: as many as a plain add stores
    local plain = assert(history.open(dir .. '/plain.db', { create = true }))
    history.store.add_bundles(plain, bundles, { commit = sha(1) })
    assert.equal(plain:query('SELECT COUNT(*) FROM documents')[1][1], h:query('SELECT COUNT(*) FROM documents')[1][1])
    plain:close()
    h:close()
  end)

  describe('bad databases are refused, naming the database, and never overwritten', function()
    it('a results file, a text file, a corrupt database', function()
      local f = dir .. '/results.jsonl'
      data.write(f, data.session(1, { fused = 6200, copy = 5000 }))
      local before = sub.slurp(f)
      local r = run({ 'history', 'add', f, '--db', f, '--commit', sha(1) })
      assert.equal(1, r.code)
      assert.matches(f .. ': file is not a database', r.err, 1, true)
      assert.equal(before, sub.slurp(f))
      -- a history database with its pages overwritten in the middle
      local db = dir .. '/h.db'
      add_series(db, series_files(dir, 3))
      local text = sub.slurp(db)
      sub.spit(db, text:sub(1, 100) .. string.rep('\255', #text - 200) .. text:sub(-100))
      r = run({ 'history', 'list', '--db', db })
      assert.equal(1, r.code)
      assert.matches('^kluabench history: ' .. db:gsub('%p', '%%%0') .. ': ', r.err)
    end)

    it('another program\'s SQLite database, and a schema newer than this kluabench', function()
      local db = dir .. '/other.db'
      local conn = assert(kb.sqlite.open(db, 'rwc'))
      assert(conn:exec('CREATE TABLE customers (id INTEGER, name TEXT)'))
      conn:close()
      local r = run({ 'history', 'add', dir .. '/x.jsonl', '--db', db, '--commit', sha(1) })
      assert.equal(1, r.code)
      assert.matches(db .. ': not a kluabench history database (it has tables customers and no schema_version)',
        r.err, 1, true)
      local newer = dir .. '/newer.db'
      add_series(newer, series_files(dir, 1))
      conn = assert(kb.sqlite.open(newer))
      assert(conn:exec("INSERT INTO schema_version VALUES (99, 'from the future', '2030-01-01')"))
      conn:close()
      r = run({ 'history', 'list', '--db', newer })
      assert.equal(1, r.code)
      assert.matches(newer .. ': the history database has schema version 99, newer than this kluabench knows ('
        .. require('kluabench.history.schema').latest() .. ')', r.err, 1, true)
    end)

    it('a directory, a FIFO, an absent file (for queries), and an empty file', function()
      local r = run({ 'history', 'list', '--db', dir })
      assert.equal(1, r.code)
      assert.matches(dir .. ': not a regular file (a directory)', r.err, 1, true)
      assert(os.execute('mkfifo ' .. q(dir .. '/fifo')))
      r = run({ 'history', 'list', '--db', dir .. '/fifo' })
      assert.equal(1, r.code)
      assert.matches('not a regular file (a fifo)', r.err, 1, true)
      r = run({ 'history', 'check', '--db', dir .. '/none.db' })
      assert.equal(1, r.code)
      assert.matches(dir .. "/none.db: no such history database", r.err, 1, true)
      assert.is_nil(kb.stat(dir .. '/none.db'))
      sub.spit(dir .. '/empty.db', '')
      r = run({ 'history', 'list', '--db', dir .. '/empty.db' })
      assert.equal(1, r.code)
      assert.matches('no history in it yet', r.err, 1, true)
    end)

    it('report -o and the harness\'s --out never write over the database or an input', function()
      local db = dir .. '/h.db'
      add_series(db, series_files(dir, 2))
      local f = dir .. '/c01.jsonl'
      local before, results = sub.slurp(db), sub.slurp(f)
      local samples = dir .. '/c01.samples.jsonl'
      local raw = sub.slurp(samples)
      assert(os.execute('ln ' .. q(db) .. ' ' .. q(dir .. '/hard.db')))
      -- report: the database it reads (by any name), a RESULTS file or its samples file: usage errors
      for _, case in ipairs {
        { { 'report', '--db', db, '-o', db }, '-o ' .. db .. ' is the history database (--db)' },
        { { 'report', '--db', db, '-o', dir .. '/./hard.db' }, 'is the history database (--db)' },
        { { 'report', f, '-o', f }, '-o ' .. f .. ' is the input ' .. f },
        { { 'report', f, '-o', samples }, 'is the samples file of the input ' .. f },
      } do
        local r = run(case[1])
        assert.equal(2, r.code, r.err)
        assert.matches(case[2] .. ': writing there would overwrite an input', r.err, 1, true)
      end
      -- another SQLite database as -o: refused (exit 1) by what it is
      local r = run({ 'report', f, '-o', dir .. '/hard.db' })
      assert.equal(1, r.code, r.err)
      assert.matches('a SQLite database (a history database?)', r.err, 1, true)
      -- the harness: --out (or --samples) naming the --history database, new or existing; an existing
      -- history database as --out without --history
      local script = sub.root() .. '/scripts/llama4_rope.lua'
      for _, case in ipairs {
        { { '--out', dir .. '/new.db', '--history', dir .. '/new.db' }, 2, '--out ' .. dir .. '/new.db is the --history database' },
        { { '--out', dir .. '/x.jsonl', '--samples', db, '--history', db }, 2, '--samples ' .. db .. ' is the --history database' },
        { { '--out', db }, 2, 'cannot write --out ' .. db .. ': a SQLite database' },
      } do
        local args = { script, '--seq', '64', '--hidden', '64', '--format', 'jsonl' }
        for _, a in ipairs(case[1]) do args[#args + 1] = a end
        r = run(args, { cwd = dir })
        assert.equal(case[2], r.code, r.err)
        assert.matches(case[3], r.err, 1, true)
        assert.no.matches('median', r.out .. r.err, 1, true) -- refused before anything was timed
      end
      assert.is_nil(kb.stat(dir .. '/new.db'))
      assert.equal(before, sub.slurp(db))
      assert.equal(results, sub.slurp(f))
      assert.equal(raw, sub.slurp(samples))
    end)

    it('usage errors exit 2', function()
      for _, args in ipairs { { 'history' }, { 'history', 'nosuch' }, { 'history', 'list', '--reason', 'x' },
        { 'history', 'check', '--z', 'abc' }, { 'history', 'compare', 'a' }, { 'history', 'mark', 'a' } } do
        local r = run(args)
        assert.equal(2, r.code, table.concat(args, ' '))
        assert.matches('usage: kluabench history', r.err, 1, true)
      end
    end)
  end)
end)

-- Issue 37's classes in the history: no shell, no terminal escapes, no forgery kept, a read-only
-- database read, commit times compared as instants.
describe('kluabench history, adversarial (issue 37)', function()
  local bundles = require 'helpers.bundles'
  local util = require 'helpers.util'
  local json = require 'kluabench.util.json'
  local record = require 'kluabench.record'
  local dir
  before_each(function() dir = sub.tmpdir() end)
  after_each(function() os.execute('rm -rf ' .. q(dir)) end)

  local function git(repo, cmd, env)
    local out, code = util.run(string.format('cd %s && %s git -c user.email=t@example.com -c user.name=t %s 2>&1',
      q(repo), env or '', cmd))
    assert(code == 0, 'git ' .. cmd .. ': ' .. out)
    return out
  end

  it('no shell sees a revision: --commit with ; $() and ${IFS} runs nothing, with or without --git-dir', function()
    local f = dir .. '/a.jsonl'
    data.write(f, data.session(1, { fused = 6200, copy = 5000 }))
    local repo = dir .. '/repo'
    assert(os.execute('mkdir ' .. q(repo)))
    git(repo, 'init -q')
    git(repo, 'commit -q --allow-empty -m one')
    for i, rev in ipairs { 'HEAD;touch${IFS}PWNED;', 'x$(touch PWNED)', "HEAD' ; touch PWNED ; '" } do
      local r = run({ 'history', 'add', f, '--db', dir .. '/h' .. i .. '.db', '--commit', rev }, { cwd = repo })
      assert.equal(0, r.code, r.err) -- not a revision git knows: taken as given, as text
      r = run({ 'history', 'add', f, '--db', dir .. '/g' .. i .. '.db', '--commit', rev, '--git-dir', repo },
        { cwd = dir })
      assert.equal(1, r.code, r.err)
      assert.matches('no git commit', r.err, 1, true)
      assert.is_nil(kb.stat(repo .. '/PWNED'), rev)
      assert.is_nil(kb.stat(dir .. '/PWNED'), rev)
    end
    local h = assert(history.open(dir .. '/h1.db'))
    assert.equal('HEAD;touch${IFS}PWNED;', history.store.commits(h)[1].sha)
    h:close()
    -- a revision git knows, through the same argument vector
    local head = git(repo, 'rev-parse HEAD'):match('%x+')
    local r = run({ 'history', 'add', f, '--db', dir .. '/ok.db', '--commit', 'HEAD', '--git-dir', repo })
    assert.equal(0, r.code, r.err)
    h = assert(history.open(dir .. '/ok.db'))
    assert.equal(head, history.store.commits(h)[1].sha)
    h:close()
    -- a control character in what is stored as the commit: a usage error
    r = run({ 'history', 'add', f, '--db', dir .. '/c.db', '--commit', 'abc\ndef' })
    assert.equal(2, r.code, r.err)
    assert.matches("--commit 'abc\\x0Adef': empty or has control characters", r.err, 1, true)
  end)

  it('no io.popen or os.execute in the history, the distributed runs or Liger interop', function()
    for _, folder in ipairs { 'history', 'dist', 'liger' } do
      local listing = util.run('ls ' .. q(sub.root() .. '/stdlib/kluabench/' .. folder))
      for name in listing:gmatch('[^\n]+%.lua') do
        local text = assert(sub.slurp(sub.root() .. '/stdlib/kluabench/' .. folder .. '/' .. name))
        for line in text:gmatch('[^\n]+') do
          local code = line:gsub('%-%-.*$', '')
          assert.is_nil(code:find('io%.popen') or code:find('os%.execute'), folder .. '/' .. name .. ': ' .. line)
        end
      end
    end
  end)

  it('list, check and compare print a record\'s control characters escaped, as the plain table does', function()
    local provider, device = 'fu\27[31msed', 'NVIDIA \27]0;pwned\7H200'
    local f, db = dir .. '/a.jsonl', dir .. '/h.db'
    data.write(f, { bundles.make { samples = { 0.0062, 0.0063, 0.0061, 0.0062 }, provider = provider, device = device } })
    assert.equal(0, run({ 'verify', f }).code) -- a record that verifies
    local r = run({ 'history', 'add', f, '--db', db, '--commit', sha(1) })
    assert.equal(0, r.code, r.err)
    data.write(dir .. '/b.jsonl', { bundles.make { samples = { 0.0064, 0.0065, 0.0063, 0.0064 }, provider = provider,
      device = device } })
    r = run({ 'history', 'add', dir .. '/b.jsonl', '--db', db, '--commit', sha(2), '--parents', sha(1) })
    assert.equal(0, r.code, r.err)
    for _, fmt in ipairs { 'table', 'markdown' } do
      for _, args in ipairs { { 'list' }, { 'list', '--commits' }, { 'check' }, { 'compare', sha(1), sha(2) },
        { 'trend', '--provider', provider } } do
        local argv = { 'history' }
        for _, a in ipairs(args) do argv[#argv + 1] = a end
        for _, a in ipairs { '--db', db, '--format', fmt } do argv[#argv + 1] = a end
        if args[1] == 'check' and fmt == 'markdown' then argv[#argv - 1], argv[#argv] = nil, nil end
        r = run(argv)
        assert.is_nil((r.out .. r.err):find('[\27\7]'), table.concat(argv, ' ') .. ': ' .. r.out .. r.err)
        if args[1] ~= 'list' or args[2] ~= '--commits' then
          assert.matches('fu\\x1B[31msed', r.out, 1, true)
        end
      end
    end
  end)

  it('refuses what verify refuses: a forged environment (MISMATCH) and another apiVersion; the genuine run is '
    .. 'added after', function()
    local genuine = bundles.make { samples = { 0.0062, 0.0063, 0.0061 } }
    local function copy(b) return json.decode(assert(json.encode_line(b))) end
    local forged = copy(genuine)
    forged.environment.spec.hardware = { vendor = 'nvidia', product = 'NVIDIA B200', architecture = 'sm_100' }
    local other_api = copy(genuine)
    other_api.protocol.apiVersion = 'kernelindex.dev/v2'
    other_api.run.spec.protocolDigest = record.digest(other_api.protocol) -- its digest holds: the version does not
    local db = dir .. '/h.db'
    for _, case in ipairs { { forged, 'environmentDigest: recorded' }, { other_api, 'protocol: apiVersion kernelindex.dev/v2' } } do
      require('kluabench.record.evidence').attach(case[1], require('kluabench.record.evidence').of(genuine))
      local f = dir .. '/forged.jsonl'
      data.write(f, { case[1] })
      local v = run({ 'verify', f })
      assert.equal(1, v.code, v.out)
      local r = run({ 'history', 'add', f, '--db', db, '--commit', sha(1) })
      assert.equal(1, r.code, r.err)
      assert.matches('0 bundle(s) added, 0 already there, 1 refused', r.err, 1, true)
      assert.matches('refused as kluabench verify refuses it: ' .. case[2], r.err, 1, true)
    end
    local f = dir .. '/genuine.jsonl'
    data.write(f, { genuine })
    local r = run({ 'history', 'add', f, '--db', db, '--commit', sha(1) })
    assert.equal(0, r.code, r.err)
    assert.matches('1 bundle(s) added, 0 already there, 0 refused', r.err, 1, true)
    -- the library's door too (the harness's --history)
    local h = assert(history.open(':memory:', { create = true }))
    local s = history.store.add_bundles(h, { forged }, { commit = sha(1) })
    assert.same({ 0, 0, 1 }, { s.added, s.present, #s.refused })
    h:close()
  end)

  -- as root the commands run as nobody, who must be able to read the checkout (a clone in a folder
  -- of mode 0700, as mktemp -d makes, is not)
  local root_run = util.run('id -u'):match('%d+') == '0'
  local readable = not root_run or select(2, util.run('setpriv --reuid=65534 --regid=65534 --clear-groups test -r '
    .. q(sub.root() .. '/stdlib/kluabench/init.lua') .. ' 2>/dev/null')) == 0
  local ro_it = readable and it or pending
  ro_it('reads a database it may not write: list, trend, check, compare and report --db', function()
    local db = dir .. '/ro/h.db'
    assert(os.execute('mkdir ' .. q(dir .. '/ro')))
    add_series(db, series_files(dir, 3))
    assert.is_nil(kb.stat(db .. '-wal'))
    -- the file and its folder read-only, for a user they stop (root is stopped by nothing: nobody then)
    assert(os.execute('chmod 0444 ' .. q(db) .. ' && chmod 0555 ' .. q(dir .. '/ro') .. ' && chmod 0755 ' .. q(dir)))
    local out = dir .. '/out'
    assert(os.execute('mkdir ' .. q(out) .. ' && chmod 0777 ' .. q(out)))
    local as = util.run('id -u'):match('%d+') == '0' and 'setpriv --reuid=65534 --regid=65534 --clear-groups ' or ''
    for _, args in ipairs { { 'history', 'list' }, { 'history', 'list', '--commits' }, { 'history', 'check' },
      { 'history', 'trend', '--provider', 'fused' }, { 'history', 'compare', sha(1), sha(3) },
      { 'report', '-o', out .. '/r.html' } } do
      local words = {}
      for i, a in ipairs(args) do words[i] = q(a) end
      local text, code = util.run(string.format('%s%s %s --db %s 2>&1', as, q(sub.bin()), table.concat(words, ' '),
        q(db)))
      assert.is_true(code == 0 or (args[2] == 'compare' and code == 1), table.concat(args, ' ') .. ': ' .. text)
      assert.no.matches('readonly database', text, 1, true)
    end
    assert.matches('<html', assert(sub.slurp(out .. '/r.html')), 1, true)
    os.execute('chmod 0755 ' .. q(dir .. '/ro'))
  end)

  it("compares commit times as instants: git's %cI carries the committer's UTC offset", function()
    -- two unrelated commits (no parent links, so the newest by time is the head): A at 12:00 UTC,
    -- B at 08:00 in UTC-7, 15:00 UTC, three hours after A; as text, B's time sorts first
    local repo = dir .. '/repo'
    assert(os.execute('mkdir ' .. q(repo)))
    git(repo, 'init -q')
    git(repo, 'commit -q --allow-empty -m A', "GIT_COMMITTER_DATE='2026-11-01T12:00:00+00:00'")
    local a = git(repo, 'rev-parse HEAD'):match('%x+')
    git(repo, 'checkout -q --orphan other')
    git(repo, 'commit -q --allow-empty -m B', "GIT_COMMITTER_DATE='2026-11-01T08:00:00-07:00'")
    local b = git(repo, 'rev-parse HEAD'):match('%x+')
    local db = dir .. '/h.db'
    for i, c in ipairs { a, b } do
      local f = string.format('%s/c%d.jsonl', dir, i)
      data.write(f, data.session(i, { fused = 6200, copy = 5000 }, { seed = i }))
      local r = run({ 'history', 'add', f, '--db', db, '--commit', c, '--git-dir', repo })
      assert.equal(0, r.code, r.err)
    end
    local r = run({ 'history', 'list', '--commits', '--db', db, '--format', 'json' })
    local commits = assert(json.decode(r.out))
    local at = {}
    for _, c in ipairs(commits) do at[c.sha] = c.committed_at end
    assert.same({ [a] = '2026-11-01T12:00:00Z', [b] = '2026-11-01T15:00:00Z' }, at)
    r = run({ 'history', 'check', '--db', db })
    assert.matches('series checked at ' .. b:sub(1, 12), r.out, 1, true)
    -- the option: a time of the calendar with its zone, else a usage error
    for _, bad in ipairs { 'yesterday', '2026-13-01T00:00:00Z', '2026-02-30T00:00:00Z', '2026-11-01T24:00:00Z',
      '2026-11-01T12:00:00+25:00' } do
      r = run({ 'history', 'add', dir .. '/c1.jsonl', '--db', db, '--commit', sha(9), '--commit-time', bad })
      assert.equal(2, r.code, bad .. ': ' .. r.err)
      assert.matches('--commit-time', r.err, 1, true)
    end
    r = run({ 'history', 'add', dir .. '/c1.jsonl', '--db', dir .. '/t.db', '--commit', sha(9), '--commit-time',
      '2026-11-01T20:30:00+05:30' })
    assert.equal(0, r.code, r.err)
    local h = assert(history.open(dir .. '/t.db'))
    assert.equal('2026-11-01T15:00:00Z', history.store.commits(h)[1].committed_at)
    h:close()
  end)
end)

describe('scripts/history_power.lua (the false-alarm rate and power of docs/HISTORY.md)', function()
  it('reads real H200 sessions and reports every point, run from any folder', function()
    -- one trial per point: enough to show the script reads its inputs and runs to the end
    local r = run({ sub.root() .. '/scripts/history_power.lua', '--trials', '1', data.AA .. 'a.jsonl',
      data.AA .. 'b.jsonl' }, { cwd = sub.tmpdir() })
    assert.equal(0, r.code, r.err)
    assert.matches('(2 files, 1 points)', r.out, 1, true)
    local rows = 0
    for _ in r.out:gmatch('\nllama4_rope forward [^\n]+') do rows = rows + 1 end
    assert.equal(2, rows) -- 1 point, fused and reference
    assert.matches('\nA/A: %d+ false alarms in 200 checks', r.out)
    assert.matches('\n%+5%% step: found at its commit', r.out)
    assert.matches('\nmachine drift %(', r.out)
  end)

  it('says what it needs: FILE arguments, --help; exit status 2 on misuse', function()
    local r = run({ sub.root() .. '/scripts/history_power.lua' })
    assert.equal(2, r.code)
    assert.matches('no FILE given', r.err, 1, true)
    r = run({ sub.root() .. '/scripts/history_power.lua', '--help' })
    assert.equal(0, r.code)
    assert.matches('usage: kluabench scripts/history_power.lua', r.out, 1, true)
    r = run({ sub.root() .. '/scripts/history_power.lua', sub.tmpdir() .. '/none.jsonl' })
    assert.equal(2, r.code)
    assert.matches('none.jsonl', r.err, 1, true)
  end)
end)

describe('kluabench.history.store.lineage', function()
  it('orders commits of one second by ancestry: the head is the tip, whatever the shas', function()
    local t = '2026-11-01T12:00:00Z'
    local list = history.store.lineage({ { sha = 'ccc', parents = {}, committed_at = t },
      { sha = 'bbb', parents = { 'ccc' }, committed_at = t }, { sha = 'aaa', parents = { 'bbb' }, committed_at = t } })
    assert.same({ 'ccc', 'bbb', 'aaa' }, { list[1].sha, list[2].sha, list[3].sha })
    -- a parent never benchmarked: the chain goes on with the next older commit
    list = history.store.lineage({ { sha = 'x1', parents = {}, committed_at = '1' },
      { sha = 'x3', parents = { 'x2' }, committed_at = '3' } })
    assert.same({ 'x1', 'x3' }, { list[1].sha, list[2].sha })
  end)
end)

describe('kluabench.history.detect', function()
  local function series(n, f, noise)
    local rng = require('kluabench.stats.prng').new(7)
    local xs = {}
    for i = 1, n do xs[i] = math.log(f(i) * (1 + noise * (rng:uniform() * 2 - 1))) end
    return xs
  end

  it('finds a step at its commit and says where; nothing in a flat series', function()
    local xs = series(25, function(i) return i >= 24 and 1.05 or 1 end, 0.005)
    local r = detect.check(xs, { noise = 0.005 })
    assert.equal('regression', r.status)
    assert.equal(24, r.step)
    assert.near(1.05, r.ratio, 0.01)
    assert.is_true(r.lo > 1 and r.hi > r.ratio)
    assert.equal('ok', detect.check(series(25, function() return 1 end, 0.005), { noise = 0.005 }).status)
    local down = detect.check(series(25, function(i) return i >= 25 and 0.9 or 1 end, 0.005), { noise = 0.005 })
    assert.equal('improvement', down.status)
  end)

  it('a step older than the lag is the series\' new level: the commits after it are not blamed', function()
    -- before, a baseline holding the step's first commits made commits 22 to 24 look like a step of their own
    local xs = series(40, function(i) return (i >= 21 and 1.05 or 1) * (i >= 33 and 1.05 or 1) end, 0.005)
    for n = 21, 40 do
      local r = detect.check(table.move(xs, 1, n, 1, {}), { noise = 0.005 })
      if (n >= 21 and n <= 23) or (n >= 33 and n <= 35) then
        assert.equal('regression', r.status, n)
        assert.equal(n <= 23 and 21 or 33, r.step, n)
      else
        assert.are_not.equal('regression', r.status, n)
        assert.equal(n < 36 and 21 or 33, r.earlier, n) -- the baseline restarts at the older step
      end
    end
  end)

  it('needs min_window commits before the step, and a change beyond the threshold', function()
    assert.equal('short', detect.check(series(4, function() return 1 end, 0.01)).status)
    -- a 1 % step is below the 2 % threshold whatever its z
    local r = detect.check(series(30, function(i) return i >= 29 and 1.01 or 1 end, 0.0005), { noise = 0.0005 })
    assert.equal('ok', r.status)
  end)

  it('one outlier among the last commits is not a step (the step must persist)', function()
    local xs = series(25, function(i) return i == 24 and 1.2 or 1 end, 0.005)
    assert.equal('ok', detect.check(xs, { noise = 0.005 }).status)
  end)

  it('the noise floor keeps a too-quiet baseline from alarming', function()
    local xs = {}
    for i = 1, 21 do xs[i] = math.log(1 + 0.001 * (i % 2) + (i == 21 and 0.025 or 0)) end
    assert.equal('regression', detect.check(xs, { noise = 0 }).status)
    assert.equal('ok', detect.check(xs, { noise = 0.02 }).status)
  end)
end)
