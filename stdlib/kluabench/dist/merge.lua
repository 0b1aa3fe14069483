--- `kluabench merge DIR [-o FILE] [--allow-mixed] [--infer]`: the shard files of a
-- run-all or slurm run gathered into one JSON Lines file, after checking
-- that every point of the manifest arrived exactly once.
local files = require 'kluabench.util.files'
local json = require 'kluabench.util.json'
local shards = require 'kluabench.dist.shards'
local helpers = require 'kluabench.commands.helpers'
local reader = require 'kluabench.record.reader'
local util_args = require 'kluabench.util.args'
local verify = require 'kluabench.record.verify'
local result = require 'kluabench.result'
local core = require 'kluabench.core'
local evidence = require 'kluabench.record.evidence'

local M = {}

M.USAGE = 'kluabench merge DIR [-o FILE] [--allow-mixed] [--infer]'

M.help = [[
Reads DIR/manifest.json (written by 'kluabench run-all' and 'kluabench
slurm': the script, its arguments, the points of every shard and the
providers, modes and sessions each point will have) and the shard files it
names (DIR/shard-I.jsonl), and writes their bundles as one JSON Lines file:
FILE with -o, else stdout. A bundle belongs to the point whose id is its
workload's case key (the axes and dtype of its run: kluabench.result).
The raw samples of the shards (their evidence entries,
DIR/shard-I.samples.jsonl) go to FILE's samples file beside it
(FILE.samples.jsonl); on stdout the runs name the shards' samples files.

The manifest is checked first: kind and version, count a whole number from
1 to 4096 with as many shards, indexes 1..count each once, files inside DIR,
every point in exactly one shard. A manifest that fails is named and nothing
is merged. Then merge names on stderr, as "kluabench merge: KIND: ...":
  missing      a point of the manifest without any bundle, with the shard
               (the Slurm array task) that should have produced it and that
               shard's log; or a shard file that does not exist
  incomplete   a point that lacks some of its bundles: every provider x mode
               x session 1..N the manifest expects (a child killed half-way,
               a mode that never ran), named with the first ones missing
  failed       a run that arrived with a status other than passed
               (incorrect_numerical, runtime_error, timeout, ...): it
               counts as arrived and is merged (its record says why);
               merge says how many failed, and any failed run makes the
               exit status 1
  corrupt      a bundle whose digests, schema or raw samples do not check
               out as 'kluabench verify' checks them: not merged
  unreadable   a line of a shard file that is not JSON, or not a bundle (the
               other lines are kept), or a shard file that is a directory, a
               device, a FIFO or larger than the read limit
  duplicate    two bundles of the same point, provider, mode and session
               (the first is kept); e.g. a task that ran twice
  unexpected   a bundle of a point, provider, mode or session that the
               manifest does not expect (not merged)
  unlisted     a shard file in DIR that the manifest does not name (a
               manifest cut short): its bundles are not merged
  mixed        bundles from different environments: the environment spec
               differs (device, driver, CUDA, kluabench, OS). Host names and
               Slurm job and task ids are in the environment's
               metadata.labels, not in its spec, so shards on identical
               hosts are one environment. Without --allow-mixed nothing is
               written.
A manifest of an earlier kluabench (or of a script whose --list-points names
no providers=, modes=, sessions=) does not say what each point expects: merge
then infers it from the points that arrived (a provider and mode that other
points have, sessions 1..N of --runs N). A provider or mode missing from every
point cannot be seen so, and that is a problem (exit 1, 'inferred') unless
--infer accepts the inference (then a note).

  -o, --out FILE   write the merged bundles to FILE (default: stdout). FILE
                   must not be one of the inputs (the manifest, a shard
                   file, samples file or log of DIR), nor its samples file
                   FILE.samples.jsonl: that is a usage error
  --allow-mixed    merge bundles of different environments
  --infer          accept a manifest that does not say what each point
                   expects (inferred from what arrived: a note, not a problem)
  -q, --quiet      no summary line

Exit status: 0 every bundle the manifest expects arrived once, passed, from
one environment; 1 a problem above (what arrived is still written, except
for mixed environments and a bad manifest), a failed run, or an unreadable
file; 2 usage error (-o naming an input included).]]

local function usage_error(fmt, ...) return helpers.usage_error('merge', fmt, ...) end

local printable = util_args.printable
local get = reader.get

--- The point id of a bundle: its workload's case key ("seq2048-bf16"), or nil, why.
function M.point_of(b)
  local ok, p = pcall(result.session, b)
  if not ok then return nil, 'not a record bundle: ' .. tostring(p) end
  if not p.id then return nil, 'no workload case key (run.spec.sourceNative.externalId)' end
  return p.id
end

-- The environment a session comes from: its environment digest (of the spec: host and Slurm ids
-- are in metadata, outside it), which the corruption check has recomputed.
local function environment_of(s)
  return s.digests.environment or 'none'
end

local function environment_label(s)
  local parts = { s.device or 'unknown device' }
  if s.backend then parts[#parts + 1] = tostring(s.backend) end
  if s.driver then parts[#parts + 1] = 'driver ' .. s.driver end
  if s.harness_version then parts[#parts + 1] = 'kluabench ' .. s.harness_version end
  return table.concat(parts, ', ')
end

local function sorted_keys(t)
  local out = {}
  for k in pairs(t) do out[#out + 1] = k end
  table.sort(out)
  return out
end

--- The run statuses that are not a failure: a measurement that passed, or one flagged as faster than
-- its copy floor (suspected_reward_hack: measured, reported as a note).
M.PASSED = { passed = true, suspected_reward_hack = true }

--- Problems listed per kind on stderr; the rest are counted ("N more").
M.MAX_LISTED = 20

-- What is wrong with a bundle as `kluabench verify` sees it (digests, documents, raw samples and
-- the statistics the run records of them: verify.problems): a message, or nil.
local function corruption(b, path)
  return verify.describe(verify.problems(b, path))
end

-- The set of a list's values.
local function set_of(list)
  local t = {}
  for _, v in ipairs(list) do t[v] = true end
  return t
end

--- Gathers and checks the shards of a manifest (shards.check_manifest's) from their contents: inputs[i] =
-- {path = the shard file, text = its bytes | missing = true | error = why it cannot be read}. opts:
-- allow_mixed. Reads nothing but the samples files the bundles name. Returns {bundles (merged, in shard and
-- line order), problems = list of {kind, message}, points (expected), complete (points with every bundle),
-- expected (bundles expected, nil when inferred), failed, shards, environments}.
function M.gather(manifest, inputs, opts)
  opts = opts or {}
  local n = #manifest.shards
  local res = { bundles = {}, problems = {}, shards = n, points = 0, failed = 0, complete = 0,
    origin = setmetatable({}, { __mode = 'k' }) }
  -- what the files say is quoted printable (no control bytes reach the terminal)
  local function problem(kind, fmt, ...)
    local args = table.pack(...)
    for k = 1, args.n do
      if type(args[k]) == 'string' then args[k] = printable(args[k], 300) end
    end
    res.problems[#res.problems + 1] = { kind = kind, message = string.format(fmt, table.unpack(args, 1, args.n)) }
  end
  local expected = {} -- point id -> {shard = i, expect = {providers set, modes set, sessions}}
  for i, s in ipairs(manifest.shards) do
    for _, p in ipairs(s.points) do
      local e = p.expect
      expected[p.id] = { shard = i, expect = e and { providers = set_of(e.providers), modes = set_of(e.modes),
        sessions = e.sessions, list = e } }
      res.points = res.points + 1
    end
  end
  local seen = {}      -- duplicate key -> "file:line"
  local found = {}     -- point id -> arrivals
  local combos = {}    -- "provider mode" -> true, over all points (the inference of old manifests)
  local envs, env_order = {}, {}
  for i, s in ipairs(manifest.shards) do
    local input = inputs[i] or { missing = true }
    local path = input.path or s.file
    local items, bad = {}, {}
    if input.missing then
      if #s.points > 0 then problem('missing', '%s does not exist (shard %d/%d)', path, i, n) end
    elseif input.error then
      problem('unreadable', '%s (shard %d/%d)', printable(input.error, 400), i, n)
    else
      items, bad = reader.items(input.text, path, { tolerant = true })
    end
    for _, b in ipairs(bad) do
      problem('unreadable', '%s:%d: %s (the other lines of shard %d are kept)', s.file, b.line, b.message, i)
    end
    for _, it in ipairs(items) do
      local b, where = it.bundle, string.format('%s:%d', s.file, it.line)
      local id, perr
      if reader.is_bundle(b) then
        id, perr = M.point_of(b)
      else
        perr = 'not a JSON object with a run object'
      end
      local bad_digest = id and corruption(b, path)
      if not id then
        problem('unreadable', '%s: not a benchmark bundle (%s)', where, perr)
      elseif bad_digest then
        problem('corrupt', '%s: point %s: %s (not merged)', where, id, bad_digest)
      elseif not expected[id] then
        problem('unexpected', 'point %s in %s is not in the manifest', id, where)
      else
        local pt = result.session(b)
        local provider, mode = pt.provider or '?', pt.mode or '?'
        local si, sn = pt.session.index, pt.session.count
        local key = table.concat({ id, provider, mode, tostring(si), tostring(sn) }, '\0')
        local e = expected[id].expect
        if math.type(si) ~= 'integer' or math.type(sn) ~= 'integer' or si < 1 or si > sn
            or sn > shards.MAX_SESSIONS then
          problem('unreadable', '%s: point %s, provider %s, mode %s: session %s of %s is not one of 1..N (N at most '
            .. '%d) (not merged)', where, id, provider, mode, printable(tostring(si), 40),
            printable(tostring(sn), 40), shards.MAX_SESSIONS)
        elseif e and not (e.providers[provider] and e.modes[mode] and sn == e.sessions
            and math.type(si) == 'integer' and si >= 1 and si <= sn) then
          problem('unexpected', 'point %s, provider %s, mode %s, session %s/%s in %s: the manifest expects '
            .. 'providers %s, modes %s, sessions 1..%d (not merged)', id, provider, mode, tostring(si), tostring(sn),
            where, table.concat(e.list.providers, ','), table.concat(e.list.modes, ','), e.sessions)
        elseif seen[key] then
          problem('duplicate', 'point %s, provider %s, mode %s, session %d/%d is in %s and %s (the first is kept)',
            id, provider, mode, si, sn, seen[key], where)
        else
          seen[key] = where
          if expected[id].shard ~= i then
            problem('misplaced', 'point %s was planned for shard %d but is in %s', id, expected[id].shard, where)
          end
          found[id] = found[id] or {}
          table.insert(found[id], { provider = provider, mode = mode, index = si, count = sn })
          combos[provider .. ' ' .. mode] = true
          if not M.PASSED[pt.status] then
            res.failed = res.failed + 1
            local why = type(pt.evidence.reasons) == 'table' and pt.evidence.reasons[1] or nil
            problem('failed', 'point %s, provider %s, mode %s, session %d/%d in %s: %s%s (merged; its record says why)',
              id, provider, mode, si, sn, where, tostring(pt.status),
              type(why) == 'string' and (': ' .. printable(why, 200)) or '')
          elseif pt.status == 'suspected_reward_hack' then
            problem('implausible', 'point %s, provider %s, mode %s, session %d/%d in %s: faster than the copy floor '
              .. 'of its bytes (status suspected_reward_hack)', id, provider, mode, si, sn, where)
          end
          local ek = environment_of(pt)
          if not envs[ek] then
            envs[ek] = { label = environment_label(pt), count = 0, files = {}, hosts = {} }
            env_order[#env_order + 1] = ek
          end
          local env = envs[ek]
          env.count = env.count + 1
          env.files[s.file] = true
          if pt.host then env.hosts[pt.host] = true end
          res.bundles[#res.bundles + 1] = b
          res.origin[b] = path
        end
      end
    end
  end
  -- missing and incomplete points
  if manifest.expects then res.expected = 0 end
  for i, s in ipairs(manifest.shards) do
    for _, p in ipairs(s.points) do
      local got = found[p.id]
      if manifest.expects then
        local e = p.expect
        res.expected = res.expected + #e.providers * #e.modes * e.sessions
      end
      if not got then
        local log = s.log and (', its log: ' .. (inputs.dir and (inputs.dir .. '/') or '') .. s.log) or ''
        local task = manifest.launcher == 'slurm' and string.format('Slurm array task %d (shard %d/%d)', i, i, n)
          or string.format('shard %d/%d%s', i, n, s.device and (' on device ' .. tostring(s.device)) or '')
        problem('missing', 'point %s: no bundle; %s should have written it to %s%s', p.id, task, s.file, log)
      elseif manifest.expects then
        local e = p.expect
        local want = #e.providers * #e.modes * e.sessions
        if #got == want then
          res.complete = res.complete + 1
        else
          -- name the first few missing; each bundle that arrived is one of the expected (checked above), so the
          -- walk stops after at most #got + 5 steps
          local have = {}
          for _, g in ipairs(got) do have[table.concat({ g.provider, g.mode, g.index }, '\0')] = true end
          local names = {}
          for k = 1, e.sessions do
            for _, pr in ipairs(e.providers) do
              for _, mo in ipairs(e.modes) do
                if #names < 5 and not have[table.concat({ pr, mo, k }, '\0')] then
                  names[#names + 1] = string.format('provider %s mode %s session %d/%d', pr, mo, k, e.sessions)
                end
              end
              if #names >= 5 then break end
            end
            if #names >= 5 then break end
          end
          problem('incomplete', 'point %s (shard %d): %d of its %d bundles arrived; missing: %s%s', p.id, i, #got, want,
            table.concat(names, ', '), want - #got > #names and string.format(' and %d more', want - #got - #names) or '')
        end
      else
        local have, sessions = {}, {}
        for _, g in ipairs(got) do
          local c = g.provider .. ' ' .. g.mode
          have[c] = true
          sessions[c] = sessions[c] or { count = g.count, indexes = {} }
          sessions[c].indexes[g.index] = true
        end
        local whole = true
        for _, c in ipairs(sorted_keys(combos)) do
          if not have[c] then
            whole = false
            problem('incomplete', 'point %s (shard %d) has no bundle of %s that other points have', p.id, i, c)
          end
        end
        for _, c in ipairs(sorted_keys(sessions)) do
          local ss = sessions[c]
          -- at most MAX_SESSIONS: a count beyond it is not a --runs this kluabench makes
          for k = 1, math.min(ss.count, shards.MAX_SESSIONS) do
            if not ss.indexes[k] then
              whole = false
              problem('incomplete', 'point %s (shard %d), %s: session %d of %d is missing', p.id, i, c, k, ss.count)
            end
          end
        end
        if whole then res.complete = res.complete + 1 end
      end
    end
  end
  if not manifest.expects and res.points > 0 then
    problem('inferred', 'the manifest does not say which providers, modes and sessions each point expects (an '
      .. 'earlier kluabench, or a script whose --list-points prints no providers=, modes=, sessions=): merge '
      .. 'infers them from the points that arrived, so a provider or mode missing from every point goes unnoticed')
  end
  if res.failed > 0 then
    problem('failed', '%d run%s of %d did not pass (see above); their bundles are merged', res.failed,
      res.failed == 1 and '' or 's', #res.bundles)
  end
  res.environments = #env_order
  if #env_order > 1 then
    local lines = {}
    for _, ek in ipairs(env_order) do
      local e = envs[ek]
      local hosts = sorted_keys(e.hosts)
      lines[#lines + 1] = printable(string.format('  %s (%s): %d bundle%s from %s%s', ek:sub(1, 19), e.label,
        e.count, e.count == 1 and '' or 's', table.concat(sorted_keys(e.files), ', '),
        #hosts > 0 and (' on ' .. table.concat(hosts, ', ')) or ''), 600)
    end
    res.problems[#res.problems + 1] = { kind = opts.allow_mixed and 'mixed-allowed' or 'mixed',
      message = string.format('the bundles come from %d different environments%s:\n%s', #env_order,
        opts.allow_mixed and ' (merged as --allow-mixed asks)' or ' (--allow-mixed merges them anyway)',
        table.concat(lines, '\n')) }
  end
  return res
end

-- A shard file's contents for gather: {path, text} | {path, missing = true} | {path, error = why}. Only a
-- missing file is "missing"; a directory, a device, a FIFO or a file beyond the read limit is named as that.
local function read_shard(path)
  local _, _, errno = core.stat(path, true)
  if errno == 2 then return { path = path, missing = true } end
  local text, err = files.read_file(path)
  if not text then return { path = path, error = err } end
  return { path = path, text = text }
end

--- Gathers and checks the shards of dir (M.gather on the manifest and the files it names), and names the
-- shard files in dir that the manifest does not (unlisted). Returns res, or nil, message when the manifest
-- cannot be read or fails its checks.
function M.collect(dir, opts)
  local manifest, err = shards.read_manifest(dir)
  if not manifest then return nil, err end
  local inputs = { dir = dir }
  local listed = {}
  for i, s in ipairs(manifest.shards) do
    inputs[i] = read_shard(dir .. '/' .. s.file)
    listed[s.file] = true
  end
  local res = M.gather(manifest, inputs, opts)
  local host = package.loaded['kluabench.host']
  local names = host and host.listdir and host.listdir(dir) or {}
  table.sort(names)
  for _, name in ipairs(names) do
    if name:match('^shard%-%d+%.jsonl$') and not listed[name] then
      res.problems[#res.problems + 1] = { kind = 'unlisted', message = string.format('%s/%s is in DIR but not in the '
        .. 'manifest (count %d): its bundles are not merged; a manifest cut short?', dir, name, manifest.count) }
    end
  end
  return res
end

-- Problems that do not fail the merge.
local NOTES = { misplaced = true, ['mixed-allowed'] = true, inferred = true, implausible = true }
M.NOTES = NOTES

--- Writes the merged bundles of res to path (nil or '-' = stdout), their evidence entries into the
-- samples file beside it (on stdout, the runs name the shards' samples files by absolute uri).
-- Everything is encoded first; then the samples file and path are replaced together, or neither
-- is (files.write_atomic_all): a merge that fails leaves an earlier one's files as they were.
-- Returns true or nil, message.
function M.write(res, path)
  local to_stdout = path == nil or path == '-'
  -- runs whose entries stay where they are (on stdout, or not readable now)
  -- name them by absolute uri, so that the uri holds wherever FILE goes
  for _, b in ipairs(res.bundles) do
    local ref = get(b, 'run', 'spec', 'evidence', 'rawSamples')
    if type(ref) == 'table' and res.origin[b] and (to_stdout or not evidence.of(b)) then
      local file, line = evidence.locate(ref.uri, res.origin[b])
      if file then
        local real = core.realpath(file) or file
        ref.uri = 'file://' .. real .. (line and ('#L' .. line) or '')
      end
    end
  end
  local spath, stext, n
  if not to_stdout then
    spath, stext, n = evidence.file_of(res.bundles, path) -- names each run's entry there
    if not spath then return nil, stext end
  end
  local lines = {}
  for _, b in ipairs(res.bundles) do
    local line, err = json.encode_line(b)
    if not line then return nil, err end
    lines[#lines + 1] = line
  end
  local textv = #lines > 0 and (table.concat(lines, '\n') .. '\n') or ''
  if to_stdout then
    io.stdout:write(textv)
    io.stdout:flush()
    return true
  end
  if not stext then return files.write_atomic(path, textv) end
  local ok, err = files.write_atomic_all { { spath, stext }, { path, textv } }
  if not ok then return nil, err end
  evidence.written(spath, n)
  return true
end

-- The summary line's counts: "20 of 20 bundles, 5 of 5 points complete" (or "20 bundles, ..., inferred").
local function summary(res)
  local bundles = res.expected and string.format('%d of %d bundles', #res.bundles, res.expected)
    or string.format('%d bundle%s', #res.bundles, #res.bundles == 1 and '' or 's')
  return string.format('%s%s, %d of %d points complete%s', bundles,
    res.failed > 0 and string.format(' (%d failed)', res.failed) or '', res.complete, res.points,
    res.expected and '' or ' (as inferred)')
end

--- Merges dir into path and reports on stderr (prefix "kluabench NAME: "). Problems are listed up to
-- M.MAX_LISTED per kind. Returns the exit status (0 or 1) and res.
function M.merge(dir, path, opts)
  opts = opts or {}
  local who = 'kluabench ' .. (opts.name or 'merge') .. ': '
  local res, err = M.collect(dir, opts)
  if not res then
    io.stderr:write(who, printable(err, 600), '\n', who, 'nothing merged\n')
    return 1
  end
  local failed = false
  local shown = {}
  -- an inferred expectation cannot see a provider or mode missing from every point: a problem
  -- (issue 24: merge never exits 0 on a missing bundle) unless the caller accepts it
  local function note(kind) return NOTES[kind] and (kind ~= 'inferred' or opts.infer) end
  for _, p in ipairs(res.problems) do
    shown[p.kind] = (shown[p.kind] or 0) + 1
    if shown[p.kind] <= M.MAX_LISTED then
      io.stderr:write(who, note(p.kind) and 'note: ' or '', p.kind, ': ', p.message,
        (p.kind == 'inferred' and not opts.infer) and ' (--infer accepts it)' or '', '\n')
    end
    if not note(p.kind) then failed = true end
  end
  for _, kind in ipairs(sorted_keys(shown)) do
    if shown[kind] > M.MAX_LISTED then
      io.stderr:write(string.format('%s%s%s: %d more not shown\n', who, note(kind) and 'note: ' or '', kind,
        shown[kind] - M.MAX_LISTED))
    end
  end
  local blocked = false
  for _, p in ipairs(res.problems) do blocked = blocked or p.kind == 'mixed' end
  if blocked then
    io.stderr:write(who, 'nothing written\n')
    return 1, res
  end
  local ok, werr = M.write(res, path)
  if not ok then
    io.stderr:write(who, 'cannot write ', tostring(path), ': ', tostring(werr), '\n')
    return 1, res
  end
  if not opts.quiet then
    io.stderr:write(string.format('%s%s, from %d shard%s -> %s%s\n', who, summary(res), res.shards,
      res.shards == 1 and '' or 's', (path == nil or path == '-') and 'stdout' or path,
      failed and (res.complete < res.points and ' (INCOMPLETE: see above)' or ' (NOT CLEAN: see above)') or ''))
  end
  return failed and 1 or 0, res
end

--- Whether writing out (and its samples file) would overwrite an input of merging dir: the manifest, the
-- files and logs it names, and any launcher file in dir (kluabench.dist.shards.check_output). true, or nil and
-- the message of a usage error naming option.
function M.check_output(dir, out, option)
  local inputs = { { dir .. '/' .. shards.MANIFEST, 'the manifest of ' .. dir } }
  local m = shards.read_manifest(dir)
  for i, s in ipairs(m and m.shards or {}) do
    local file = dir .. '/' .. s.file
    inputs[#inputs + 1] = { file, string.format("shard %d's results file", i) }
    inputs[#inputs + 1] = { evidence.samples_path(file),
      string.format("shard %d's samples file", i) }
    if s.log then inputs[#inputs + 1] = { dir .. '/' .. s.log, string.format("shard %d's log", i) } end
  end
  return shards.check_output(option or '-o', out, inputs, dir)
end

function M.main(args)
  local opts, rest = helpers.parse_args(args or {},
    { out = 'value', ['allow-mixed'] = 'flag', infer = 'flag', quiet = 'flag', aliases = { o = 'out', q = 'quiet' } })
  if not opts then return usage_error('%s', rest) end
  if #rest == 0 then return usage_error('no DIR given (the --dir of run-all or slurm)') end
  if #rest > 1 then return usage_error("one DIR expected, got also '%s'", rest[2]) end
  if opts.out == '' then return usage_error('-o: an empty path (give a file, or leave -o out for stdout)') end
  local ok, why = M.check_output(rest[1], opts.out)
  if not ok then return usage_error('%s', why) end
  return (M.merge(rest[1], opts.out, { allow_mixed = opts['allow-mixed'], infer = opts.infer, quiet = opts.quiet }))
end

M.run = M.main

return M
