--- What must hold for any input bytes, for the fuzz targets (tests/fuzz/*.c)
-- and for the spec that replays the corpora and the regression inputs
-- (tests/fuzz_spec.lua). Each function takes one byte string and returns
-- normally when everything held; it raises "oracle: ..." when something did
-- not. A crash, a sanitizer report or an error escaping one of these is a
-- bug; a Lua error that the API documents (invalid JSON, a bad CSV line) is
-- caught here and is not.
local kb = require 'kluabench'
local csv = require 'kluabench.liger.csv'
local json = require 'kluabench.util.json'
local liger = require 'kluabench.liger'
local record = require 'kluabench.record'
local compare = require 'kluabench.compare'
local verify = require 'kluabench.commands.verify'
local reader = require 'kluabench.record.reader'
local plot = require 'kluabench.charts.plot'
local result = require 'kluabench.result'

local M = {}

local function check(cond, fmt, ...)
  if not cond then error('oracle: ' .. string.format(fmt, ...), 0) end
end

local function same(a, b)
  if type(a) ~= 'table' or type(b) ~= 'table' then return a == b end
  for k, v in pairs(a) do if not same(v, b[k]) then return false end end
  for k in pairs(b) do if a[k] == nil then return false end end
  return true
end

--- The stdlib's JSON reader (json.decode: lua-cjson, what verify and compare
-- use, and the one JSON decoder of the program) and the canonical writer
-- kb.jcs.encode on arbitrary text:
--  * json.decode never raises: it returns a value, or nil and "line L,
--    column C: why";
--  * kb.jcs.encode writes what json.decode read, or refuses only what JSON
--    cannot carry (an infinity from an overflowing literal, a string or key
--    that is not UTF-8) with its documented message;
--  * the canonical form c = encode(decode(s)) is a fixed point: json.decode
--    reads c, and encode writes c again; kb.digest of the value is
--    SHA-256(c);
--  * what `kluabench verify` and `kluabench compare` do with a file's text
--    (find the bundles, check their digests, compare them) never raises.
function M.jcs(s)
  local okl, v, err = pcall(json.decode, s)
  check(okl, 'json.decode raised: %s', tostring(v))
  check(v ~= nil or (type(err) == 'string' and err:find('^line %d+, column %d+: ') ~= nil),
    'json.decode returned neither a value nor a message: %s', tostring(err))
  if v ~= nil then
    local oke, canon = pcall(kb.jcs.encode, v)
    if not oke then
      check(type(canon) == 'string' and canon:find('^kb%.jcs%.encode: value at %$')
        and (canon:find(' is %-?inf %(') or canon:find('not valid UTF%-8')),
        'kb.jcs.encode refused what json.decode read: %s', tostring(canon))
    else
      local again, aerr = json.decode(canon)
      check(again ~= nil, 'json.decode refuses the canonical form %q: %s', canon, tostring(aerr))
      local ok2, twice = pcall(kb.jcs.encode, again)
      check(ok2 and twice == canon, 'the canonical form %q is not a fixed point: %s', canon, tostring(twice))
      local okg, digest = pcall(kb.digest, v)
      check(okg and digest == 'sha256:' .. kb.sha256(canon), 'kb.digest disagrees with the canonical form')
    end
  end

  local okv, items = pcall(verify.bundles_of_text, s, 'input.json')
  check(okv, 'verify.bundles_of_text raised: %s', tostring(items))
  for _, it in ipairs(items or {}) do
    local okr, problems = pcall(require('kluabench.record.verify').check, it.bundle)
    check(okr, 'verify.check raised: %s', tostring(problems))
  end
  local okp, bundles = pcall(compare.parse, s, 'input')
  check(okp, 'compare.parse raised: %s', tostring(bundles))
  if bundles then
    local okc, result = pcall(compare.compare, bundles, bundles, { resamples = 100 })
    check(okc, 'compare.compare raised: %s', tostring(result))
    local okf, text = pcall(compare.format, result, 'table')
    check(okf, 'compare.format raised: %s', tostring(text))
  end
end

--- The reader of record files on arbitrary text, as JSON and as JSON Lines:
--  * reader.items and reader.parse never raise; they return values, or nil
--    and a message that names the file and a line ("LABEL:LINE: why");
--  * what parse accepts are bundles (tables with a run table); with
--    comparable, each has a workload digest and samples that are finite
--    positive numbers (or none);
--  * compare of a file against itself never raises, never reads a change
--    (no FASTER, SLOWER or regression: the data are identical), and its
--    JSON report encodes and decodes;
--  * plot makes a point of a bundle or says why, without raising.
function M.records(s)
  for _, label in ipairs { 'input.json', 'input.jsonl' } do
    local ok, items, line, why = pcall(reader.items, s, label)
    check(ok, 'reader.items raised: %s', tostring(items))
    check(items ~= nil or (math.type(line) == 'integer' and type(why) == 'string'),
      'reader.items returned neither items nor a line and a message')
    for _, strict in ipairs { false, true } do
      local okp, bundles, err = pcall(reader.parse, s, label, { comparable = strict })
      check(okp, 'reader.parse raised: %s', tostring(bundles))
      if not bundles then
        check(type(err) == 'string' and err:sub(1, #label + 1) == label .. ':',
          'reader.parse failed without naming the file: %s', tostring(err))
      else
        for i, b in ipairs(bundles) do
          check(reader.is_bundle(b), 'reader.parse accepted element %d, not a bundle', i)
          if strict then
            local xs, swhy = reader.samples_of(b)
            check(xs or swhy == 'no raw samples in the record', 'a comparable bundle has bad samples: %s',
              tostring(swhy))
            for _, x in ipairs(xs or {}) do
              check(x > 0 and x < math.huge, 'a sample passed the checks: %s', tostring(x))
            end
          end
          local okpt, p = pcall(plot.point_from_bundle, b)
          check(okpt, 'plot.point_from_bundle raised: %s', tostring(p))
        end
        if strict then
          local okc, result = pcall(compare.compare, bundles, bundles, { resamples = 100, between = 0.01 })
          check(okc, 'compare.compare raised: %s', tostring(result))
          check(result.regressions == 0 and not result.counts.FASTER and not result.counts.SLOWER,
            'a file compared with itself reads as a change')
          local okf, text = pcall(compare.format, result, 'json')
          check(okf, 'compare.format json raised: %s', tostring(text))
          check(json.decode(text) ~= nil, 'compare.format json wrote invalid JSON')
        end
      end
    end
  end
end

-- A directory of this process for the merge target's files (made on first use).
local merge_dir
local function fuzz_dir()
  if not merge_dir then
    merge_dir = os.tmpname()
    os.remove(merge_dir)
    assert(kb.mkdir(merge_dir))
  end
  return merge_dir
end

-- A manifest of one shard with one point, for shard texts whose own manifest is refused.
local function default_manifest()
  return {
    kind = 'KluabenchShards', version = 1, count = 1, points = 1, launcher = 'run-all',
    shards = { { index = 1, file = 'shard-1.jsonl', log = 'shard-1.log', points = { { id = 'seq128-fp32', cost = 1,
      expect = { providers = { 'a' }, modes = { 'forward', 'backward' }, sessions = 1 } } } } },
  }
end

local MERGE_KINDS = { missing = true, incomplete = true, failed = true, corrupt = true, unreadable = true,
  duplicate = true, unexpected = true, unlisted = true, mixed = true, ['mixed-allowed'] = true, misplaced = true,
  inferred = true, implausible = true }

--- merge's readers on arbitrary bytes: MANIFEST \0 SHARD [\0 SAMPLES] (a part may be empty; without a
-- NUL the bytes are the manifest and the shard both):
--  * shards.parse_manifest never raises; it refuses with "LABEL: why", or what it accepts keeps its
--    promises: count a whole number 1..MAX_SHARDS, count shards with indexes 1..count in order, files
--    inside DIR and distinct, every point id once, expect on every point or none and well-formed;
--  * reader.items in tolerant mode never fails: every non-blank JSON Lines line is an item or a bad
--    line with a message, and a garbage line appended costs only itself;
--  * merge.gather (the manifest, or one of one point when it is refused, and the shard) never raises;
--    its problems are of the documented kinds; what it merges belongs to the manifest's points, never
--    twice; a clean result has every point complete and every expected bundle.
function M.merge(s)
  local shards = require 'kluabench.dist.shards'
  local merge = require 'kluabench.dist.merge'
  local evidence = require 'kluabench.record.evidence'
  local shard = require 'kluabench.dist.split'
  local mtext, rest = s:match('^(.-)%z(.*)$')
  local stext, samples
  if mtext then
    stext, samples = rest:match('^(.-)%z(.*)$')
    if not stext then stext = rest end
  else
    mtext, stext = s, s
  end

  local okm, m, merr = pcall(shards.parse_manifest, mtext, 'fuzz/manifest.json')
  check(okm, 'shards.parse_manifest raised: %s', tostring(m))
  if not m then
    check(type(merr) == 'string' and merr:sub(1, 19) == 'fuzz/manifest.json:', 'a manifest refused without naming '
      .. 'it: %s', tostring(merr))
  else
    check(math.type(m.count) == 'integer' and m.count >= 1 and m.count <= shard.MAX_SHARDS, 'count %s accepted',
      tostring(m.count))
    check(#m.shards == m.count, '%d shards accepted for count %d', #m.shards, m.count)
    local ids, files, with = {}, {}, 0
    local total = 0
    for i, sh in ipairs(m.shards) do
      check(sh.index == i, 'shard %d has index %s', i, tostring(sh.index))
      check(shards.inside_name(sh.file) and not files[sh.file], 'shard %d file %s accepted', i, tostring(sh.file))
      files[sh.file] = true
      for _, p in ipairs(sh.points) do
        check(type(p.id) == 'string' and not ids[p.id], 'point %s accepted twice or without an id', tostring(p.id))
        ids[p.id] = true
        total = total + 1
        if p.expect then
          with = with + 1
          check(math.type(p.expect.sessions) == 'integer' and p.expect.sessions <= shards.MAX_SESSIONS,
            'sessions %s accepted', tostring(p.expect.sessions))
        end
      end
    end
    check(with == 0 or with == total, 'expect on %d of %d points accepted', with, total)
    check(m.expects == (with > 0), 'expects says %s', tostring(m.expects))
  end

  local dir = fuzz_dir()
  local path = dir .. '/shard-1.jsonl'
  evidence.forget()
  os.remove(dir .. '/shard-1.samples.jsonl')
  if samples then
    local f = assert(io.open(dir .. '/shard-1.samples.jsonl', 'wb'))
    f:write(samples)
    f:close()
  end

  local oki, items, bad = pcall(reader.items, stext, path, { tolerant = true })
  check(oki, 'reader.items (tolerant) raised: %s', tostring(items))
  check(type(items) == 'table' and type(bad) == 'table', 'reader.items (tolerant) returned no lists')
  local lines = 0
  for line in (stext .. '\n'):gmatch('(.-)\r?\n') do
    if line:match('%S') then lines = lines + 1 end
  end
  check(#items + #bad == lines, '%d lines, %d items and %d bad lines', lines, #items, #bad)
  for _, b in ipairs(bad) do
    check(math.type(b.line) == 'integer' and type(b.message) == 'string', 'a bad line without a line and a message')
  end
  local more, more_bad = reader.items(stext .. '\ngarbage{{{\n', path, { tolerant = true })
  check(#more == #items and #more_bad == #bad + 1, 'a garbage line cost more than itself (%d items, %d bad, then '
    .. '%d and %d)', #items, #bad, #more, #more_bad)

  local manifest = m or assert(shards.check_manifest(default_manifest(), 'default'))
  local inputs = { dir = dir }
  for i = 1, #manifest.shards do inputs[i] = i == 1 and { path = path, text = stext } or { missing = true } end
  local okg, res = pcall(merge.gather, manifest, inputs, {})
  check(okg, 'merge.gather raised: %s', tostring(res))
  local planned, failing = {}, false
  for _, sh in ipairs(manifest.shards) do
    for _, p in ipairs(sh.points) do planned[p.id] = p end
  end
  for _, p in ipairs(res.problems) do
    check(MERGE_KINDS[p.kind] and type(p.message) == 'string', 'a problem of kind %s', tostring(p.kind))
    failing = failing or not merge.NOTES[p.kind]
  end
  check(#res.bundles <= #items, '%d bundles merged from %d items', #res.bundles, #items)
  local keys = {}
  for _, b in ipairs(res.bundles) do
    local pt = result.session(b)
    check(planned[pt.id], 'a bundle of point %s merged, not in the manifest', tostring(pt.id))
    local key = table.concat({ pt.id, tostring(pt.provider), tostring(pt.mode), pt.session.index, pt.session.count },
      '\0')
    check(not keys[key], 'point %s, provider %s merged twice', pt.id, tostring(pt.provider))
    keys[key] = true
  end
  check(res.complete <= res.points, '%d of %d points complete', res.complete, res.points)
  if not failing then
    check(res.complete == res.points, 'a clean merge with %d of %d points complete', res.complete, res.points)
    check(not manifest.expects or res.expected == #res.bundles, 'a clean merge of %d of %d expected bundles',
      #res.bundles, tostring(res.expected))
  end
end

-- RECORDS \0 SAMPLES (without a NUL: the records alone, no samples file) as run.jsonl and
-- run.samples.jsonl in this process's fuzz directory, every samples index forgotten; returns the
-- paths and both texts.
local function records_and_samples(s)
  local evidence = require 'kluabench.record.evidence'
  local rtext, stext = s:match('^(.-)%z(.*)$')
  if not rtext then rtext = s end
  local dir = fuzz_dir()
  local path, sp = dir .. '/run.jsonl', dir .. '/run.samples.jsonl'
  os.remove(sp)
  local f = assert(io.open(path, 'wb'))
  f:write(rtext)
  f:close()
  if stext then
    f = assert(io.open(sp, 'wb'))
    f:write(stext)
    f:close()
  end
  evidence.forget()
  return path, sp, rtext, stext
end

local function well_formed(problems, what)
  check(type(problems) == 'table', '%s returned no list', what)
  for _, p in ipairs(problems) do
    check(type(p) == 'table' and type(p.field) == 'string' and (type(p.error) == 'string'
      or (p.recorded ~= nil and p.computed ~= nil)), '%s returned a problem without a field and a why', what)
  end
end

--- The record reader as `kluabench verify` runs it, with the samples file beside the records:
--  * reader.read never raises; it returns bundles, or a message that names the file;
--  * verify.problems of each bundle (digests, the run's claims, its evidence through the samples
--    index) never raises, and every problem names a field and why; result.session never raises;
--  * the samples index (evidence.resolve) agrees with a plain reading of the samples text: an entry
--    named by its line (#L<n>) is found at that line when the line has the digest, and an entry
--    named by digest alone at the first line beginning with "{" that has it; a line that is no
--    entry is named by its number.
function M.samples(s)
  local evidence = require 'kluabench.record.evidence'
  local vlib = require 'kluabench.record.verify'
  local files = require 'kluabench.util.files'
  local path, sp, _, stext = records_and_samples(s)
  local okr, bundles, err = pcall(reader.read, path)
  check(okr, 'reader.read raised: %s', tostring(bundles))
  if not bundles then
    check(type(err) == 'string' and err:sub(1, #path) == path, 'reader.read failed without naming the file: %s',
      tostring(err))
  else
    for i, b in ipairs(bundles) do
      local okp, problems = pcall(vlib.problems, b, path)
      check(okp, 'verify.problems raised on bundle %d: %s', i, tostring(problems))
      well_formed(problems, 'verify.problems')
      local oks, sess = pcall(result.session, b)
      check(oks, 'result.session raised on bundle %d: %s', i, tostring(sess))
    end
  end
  if not stext then return end
  -- the text as the index reads it (files.read_text: a UTF-8 byte order mark dropped; UTF-16 and
  -- UTF-32 refused, and then every lookup says so)
  local itext, ierr = files.read_text(sp)
  if not itext then
    local b = { run = { spec = { evidence = { rawSamples = { digest = 'sha256:' .. string.rep('0', 64),
      uri = 'run.samples.jsonl#L1' } } } } }
    local ok, entry, why = pcall(evidence.resolve, b, path)
    check(ok and entry == nil and tostring(why):find(ierr, 1, true), 'a samples file read_text refuses (%s): %s',
      ierr, tostring(why))
    return
  end
  local lines = files.lines(itext)
  if lines[#lines] == '' then lines[#lines] = nil end
  local first = {}
  for i, line in ipairs(lines) do
    if line:sub(1, 1) == '{' then
      local d = 'sha256:' .. kb.sha256(line)
      first[d] = first[d] or i
    end
  end
  local tried = 0
  for i, line in ipairs(lines) do
    if tried >= 12 then break end
    tried = tried + 1
    local d = 'sha256:' .. kb.sha256(line)
    for _, by_line in ipairs { true, false } do
      local b = { run = { spec = { evidence = { rawSamples = { digest = d,
        uri = 'run.samples.jsonl' .. (by_line and ('#L' .. i) or '') } } } } }
      local ok, entry, why = pcall(evidence.resolve, b, path)
      check(ok, 'evidence.resolve raised: %s', tostring(entry))
      local expected = by_line and i or first[d]
      if entry then
        check(expected ~= nil, 'evidence.resolve found line %d%s, which a plain reading does not', i,
          by_line and '' or ' by digest')
        check(type(entry) == 'table' and entry.format == evidence.FORMAT, 'evidence.resolve returned no entry')
      elseif expected then
        local at = tostring(why):match(':(%d+) is not a ')
        check(tonumber(at) == expected, 'line %d %s: the index says %s, a plain reading line %d', i,
          by_line and 'by line' or 'by digest', tostring(why), expected)
      else
        check(tostring(why):find('no entry of ', 1, true), 'line %d by digest: %s', i, tostring(why))
      end
    end
  end
end

--- The history's add path (`kluabench history add FILE`, the harness's --history) on arbitrary
-- bundle text, RECORDS \0 SAMPLES, into an in-memory SQLite database:
--  * history_point.read (the reader `history add` uses) never raises: bundles, or a message naming
--    the file;
--  * store.add_bundles never raises: every bundle is added, already there, or refused with why;
--    nothing verify refuses is added; the database holds one run per bundle added;
--  * adding the same bundles again adds nothing and refuses the same ones;
--  * the series and their runs read back without raising.
-- Returns store.add_bundles' summary (for the spec).
function M.history(s)
  local hpoint = require 'kluabench.history.point'
  local history = require 'kluabench.history'
  local vlib = require 'kluabench.record.verify'
  local path = records_and_samples(s)
  local okr, bundles, err = pcall(hpoint.read, path)
  check(okr, 'history_point.read raised: %s', tostring(bundles))
  if not bundles then
    check(type(err) == 'string' and err:sub(1, #path) == path, 'history_point.read failed without naming the '
      .. 'file: %s', tostring(err))
    return
  end
  local h = assert(history.open(':memory:', { create = true }))
  local meta = { commit = string.rep('f', 40), source = path, batch = 'file:fuzz' }
  local ok, sum = pcall(history.store.add_bundles, h, bundles, meta)
  if not ok then h:close() end
  check(ok, 'store.add_bundles raised: %s', tostring(sum))
  local refused = {}
  for _, r in ipairs(sum.refused) do
    check(math.type(r.index) == 'integer' and type(r.why) == 'string', 'a refusal without an index and a why')
    refused[r.index] = true
  end
  check(sum.added + sum.present + #sum.refused == #bundles, '%d added, %d there, %d refused of %d bundles', sum.added,
    sum.present, #sum.refused, #bundles)
  for i, b in ipairs(bundles) do
    if not refused[i] then
      local problems = vlib.problems(b, path)
      check(#problems == 0, 'bundle %d was added, and verify refuses it: %s', i, tostring(vlib.describe(problems)))
    end
  end
  local again = history.store.add_bundles(h, bundles, meta)
  check(again.added == 0 and again.present == sum.added + sum.present and #again.refused == #sum.refused,
    'adding again: %d added, %d there, %d refused (first: %d, %d, %d)', again.added, again.present, #again.refused,
    sum.added, sum.present, #sum.refused)
  local counts = history.store.counts(h)
  check(counts.runs == sum.added, '%d runs stored for %d bundles added', counts.runs, sum.added)
  local oks, series = pcall(history.store.series, h)
  check(oks, 'store.series raised: %s', tostring(series))
  for _, se in ipairs(series) do
    local okn, runs = pcall(history.store.runs, h, se.series)
    check(okn, 'store.runs raised: %s', tostring(runs))
  end
  h:close()
  return sum
end

--- The Liger CSV importer on arbitrary text:
--  * liger.parse and csv.parse_csv never raise: they return rows, or
--    nil and a message;
--  * every row that converts is a bundle whose digests verify and which
--    encodes as JSON;
--  * CSV records written back with csv.csv_line parse to the same records.
function M.csv(s)
  local ok, rows, err = pcall(liger.parse, s)
  check(ok, 'liger.parse raised: %s', tostring(rows))
  check(rows ~= nil or type(err) == 'string', 'liger.parse returned neither rows nor a message')
  for _, row in ipairs(rows or {}) do
    -- as kernelindex imports, and keeping what it skips (deeper into the row)
    for _, opts in ipairs { {}, { keep = true } } do
    local okb, bundle, reason, berr = pcall(liger.row_to_bundle, row, opts)
    check(okb, 'row_to_bundle raised: %s', tostring(bundle))
    check(bundle ~= nil or (liger.SKIP[reason] ~= nil and type(berr) == 'string'),
      'row_to_bundle returned neither a bundle nor a reason and a message')
    if bundle then
      local problems = require('kluabench.record.verify').check(bundle)
      check(#problems == 0, 'the bundle of line %s does not verify: %s', tostring(row.line),
        tostring(problems[1] and (problems[1].error or problems[1].field)))
      local line, lerr = json.encode_line(bundle)
      check(line ~= nil, 'the bundle of line %s does not encode: %s', tostring(row.line), tostring(lerr))
    end
    end
  end

  local okp, records = pcall(csv.parse_csv, s)
  check(okp, 'csv.parse_csv raised: %s', tostring(records))
  if records then
    local out = {}
    for i, r in ipairs(records) do out[i] = csv.csv_line(r) end
    local again = csv.parse_csv(table.concat(out))
    check(same(again, records), 'CSV records do not survive csv_line and parse_csv')
  end
end

return M
