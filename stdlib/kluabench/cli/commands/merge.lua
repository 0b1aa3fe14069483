--- `kluabench merge DIR [-o FILE] [--allow-mixed]`: the shard files of a
-- run-all or slurm run gathered into one JSON Lines file, after checking
-- that every point of the manifest arrived exactly once.
local output = require 'kluabench.report'
local record = require 'kluabench.record'
local launch = require 'kluabench.cli.launch'

local M = {}

M.USAGE = 'kluabench merge DIR [-o FILE] [--allow-mixed]'

M.help = [[
Reads DIR/manifest.json (written by 'kluabench run-all' and 'kluabench
slurm': the script, its arguments and the points of every shard) and the
shard files it names (DIR/shard-I.jsonl), and writes their bundles as one
JSON Lines file: FILE with -o, else stdout. A bundle belongs to the point
whose id is its workload's case key (the axes and dtype of its run:
kluabench.record.point). The raw samples of the shards (their evidence
entries, DIR/shard-I.samples.jsonl) go to FILE's samples file beside it
(FILE.samples.jsonl); on stdout the runs name the shards' samples files.

It checks, and names on stderr, as "kluabench merge: ...":
  missing      a point of the manifest without any bundle, with the shard
               (the Slurm array task) that should have produced it and that
               shard's log
  duplicate    two bundles of the same point, provider, mode and session
               (the first is kept); e.g. a task that ran twice
  incomplete   a point that lacks a provider and mode other points have, or
               a session 1..N of --runs N
  unexpected   a bundle of a point that is not in the manifest
  mixed        bundles from different environments: the environment spec
               differs (device, driver, CUDA, kluabench, OS). Host names and
               Slurm job and task ids are in the environment's
               metadata.labels, not in its spec, so shards on identical
               hosts are one environment. Without --allow-mixed nothing is
               written.

  -o, --out FILE   write the merged bundles to FILE (default: stdout)
  --allow-mixed    merge bundles of different environments
  -q, --quiet      no summary line

Exit status: 0 every point arrived once from one environment; 1 a problem
above (what arrived is still written, except for mixed environments) or an
unreadable file; 2 usage error.]]

local function usage_error(fmt, ...) return require('kluabench.cli').usage_error('merge', fmt, ...) end

local reader = require 'kluabench.record.reader'
local get = reader.get

--- The point id of a bundle: its workload's case key ("seq2048-bf16"), or nil, why.
function M.point_of(b)
  local ok, p = pcall(require('kluabench.record.point').of, b)
  if not ok then return nil, 'not a record bundle: ' .. tostring(p) end
  if not p.id then return nil, 'no workload case key (run.spec.sourceNative.externalId)' end
  return p.id
end

local function provider_of(b)
  return require('kluabench.record.point').of(b).provider or '?'
end

local function mode_of(b)
  return require('kluabench.record.point').of(b).mode or '?'
end

local function session_of(b)
  local s = require('kluabench.record.point').of(b).session
  return s.index, s.count
end

-- The environment a bundle comes from: the digest of its spec (host and
-- Slurm ids are in metadata, outside the spec).
local function environment_of(b)
  local e = b.environment
  if type(e) ~= 'table' or type(e.spec) ~= 'table' then return 'none' end
  local ok, d = pcall(record.digest, e)
  return ok and d or 'unreadable'
end

local function environment_label(b)
  local env = require 'kluabench.record.env'
  local name = type(b.environment) == 'table' and env.device_name(b.environment) or nil
  local p = require('kluabench.record.point').of(b)
  local sw = get(b, 'environment', 'spec', 'software') or {}
  local parts = { name or 'unknown device' }
  if p.backend then parts[#parts + 1] = tostring(p.backend) end
  if type(sw.driver) == 'string' then parts[#parts + 1] = 'driver ' .. sw.driver end
  if type(sw.framework) == 'table' and sw.framework.version then
    parts[#parts + 1] = 'kluabench ' .. tostring(sw.framework.version)
  end
  return table.concat(parts, ', ')
end

local function sorted_keys(t)
  local out = {}
  for k in pairs(t) do out[#out + 1] = k end
  table.sort(out)
  return out
end

--- Gathers and checks the shards of dir. opts: allow_mixed. Returns
-- {bundles = list (duplicates dropped, in shard and line order), problems =
-- list of {kind, message}, points = N expected, shards = N, environments =
-- N}; or nil, message when the manifest cannot be read.
function M.collect(dir, opts)
  opts = opts or {}
  local manifest, err = launch.read_manifest(dir)
  if not manifest then return nil, err end
  local res = { bundles = {}, problems = {}, shards = #manifest.shards, points = 0,
    origin = setmetatable({}, { __mode = 'k' }) }
  local function problem(kind, fmt, ...)
    res.problems[#res.problems + 1] = { kind = kind, message = string.format(fmt, ...) }
  end
  local expected = {} -- point id -> shard index
  for i, s in ipairs(manifest.shards) do
    for _, p in ipairs(s.points) do
      expected[p.id] = i
      res.points = res.points + 1
    end
  end
  local seen = {}      -- duplicate key -> "file:line"
  local found = {}     -- point id -> bundles
  local combos = {}    -- "provider mode" -> true, over all points
  local envs, env_order = {}, {}
  for i, s in ipairs(manifest.shards) do
    local path = dir .. '/' .. s.file
    local textv, rerr = output.read_file(path)
    local items, line, why
    if textv then items, line, why = reader.items(textv, path) end
    if not textv and not tostring(rerr):find('No such file', 1, true) then
      problem('unreadable', '%s (shard %d/%d)', tostring(rerr), i, #manifest.shards)
      items = {}
    elseif not textv then
      if #s.points > 0 then problem('missing', '%s does not exist (shard %d/%d)', path, i, #manifest.shards) end
      items = {}
    elseif not items then
      problem('unreadable', '%s:%d: %s', path, line, why)
      items = {}
    end
    for _, it in ipairs(items) do
      local b, where = it.bundle, string.format('%s:%d', s.file, it.line)
      if reader.is_bundle(b) then
        local migrate = require 'kluabench.record.migrate'
        if migrate.is_old(b) then b = migrate.bundle(b) else require('kluabench.record.evidence').resolve(b, path) end
      end
      local id, perr = M.point_of(b)
      if not id then
        problem('unreadable', '%s: not a benchmark bundle (%s)', where, perr)
      elseif not expected[id] then
        problem('unexpected', 'point %s in %s is not in the manifest', id, where)
      else
        local provider, mode = provider_of(b), mode_of(b)
        local si, sn = session_of(b)
        local key = table.concat({ id, provider, mode, si, sn }, '\0')
        if seen[key] then
          problem('duplicate', 'point %s, provider %s, mode %s, session %d/%d is in %s and %s (the first is kept)',
            id, provider, mode, si, sn, seen[key], where)
        else
          seen[key] = where
          if expected[id] ~= i then
            problem('misplaced', 'point %s was planned for shard %d but is in %s', id, expected[id], where)
          end
          found[id] = found[id] or {}
          table.insert(found[id], { provider = provider, mode = mode, index = si, count = sn })
          combos[provider .. ' ' .. mode] = true
          local ek = environment_of(b)
          if not envs[ek] then
            envs[ek] = { label = environment_label(b), count = 0, files = {}, hosts = {} }
            env_order[#env_order + 1] = ek
          end
          local e = envs[ek]
          e.count = e.count + 1
          e.files[s.file] = true
          local host = get(b, 'environment', 'metadata', 'labels', 'host_name')
          if type(host) == 'string' then e.hosts[host] = true end
          res.bundles[#res.bundles + 1] = b
          res.origin[b] = path
        end
      end
    end
  end
  -- missing and incomplete points
  for i, s in ipairs(manifest.shards) do
    for _, p in ipairs(s.points) do
      local got = found[p.id]
      if not got then
        local log = s.log and (', its log: ' .. dir .. '/' .. s.log) or ''
        local task = manifest.launcher == 'slurm' and string.format('Slurm array task %d (shard %d/%d)', i, i, #manifest.shards)
          or string.format('shard %d/%d%s', i, #manifest.shards, s.device and (' on device ' .. tostring(s.device)) or '')
        problem('missing', 'point %s: no bundle; %s should have written it to %s%s', p.id, task, s.file, log)
      else
        local have, sessions = {}, {}
        for _, g in ipairs(got) do
          local c = g.provider .. ' ' .. g.mode
          have[c] = true
          sessions[c] = sessions[c] or { count = g.count, indexes = {} }
          sessions[c].indexes[g.index] = true
        end
        for _, c in ipairs(sorted_keys(combos)) do
          if not have[c] then
            problem('incomplete', 'point %s (shard %d) has no bundle of %s that other points have', p.id, i, c)
          end
        end
        for _, c in ipairs(sorted_keys(sessions)) do
          local ss = sessions[c]
          for k = 1, ss.count do
            if not ss.indexes[k] then
              problem('incomplete', 'point %s (shard %d), %s: session %d of %d is missing', p.id, i, c, k, ss.count)
            end
          end
        end
      end
    end
  end
  res.environments = #env_order
  if #env_order > 1 then
    local lines = {}
    for _, ek in ipairs(env_order) do
      local e = envs[ek]
      local hosts = sorted_keys(e.hosts)
      lines[#lines + 1] = string.format('  %s (%s): %d bundle%s from %s%s', ek:sub(1, 19), e.label, e.count,
        e.count == 1 and '' or 's', table.concat(sorted_keys(e.files), ', '),
        #hosts > 0 and (' on ' .. table.concat(hosts, ', ')) or '')
    end
    problem(opts.allow_mixed and 'mixed-allowed' or 'mixed',
      'the bundles come from %d different environments%s:\n%s', #env_order,
      opts.allow_mixed and ' (merged as --allow-mixed asks)' or ' (--allow-mixed merges them anyway)',
      table.concat(lines, '\n'))
  end
  return res
end

-- Problems that do not fail the merge.
local NOTES = { misplaced = true, ['mixed-allowed'] = true }

--- Writes the merged bundles of res to path (nil or '-' = stdout), their evidence entries into the
-- samples file beside it (on stdout, the runs name the shards' samples files by absolute uri).
-- Returns true or nil, message.
function M.write(res, path)
  local evidence = require 'kluabench.record.evidence'
  local to_stdout = path == nil or path == '-'
  -- runs whose entries stay where they are (on stdout, or not readable now)
  -- name them by absolute uri, so that the uri holds wherever FILE goes
  for _, b in ipairs(res.bundles) do
    local ref = get(b, 'run', 'spec', 'evidence', 'rawSamples')
    if type(ref) == 'table' and res.origin[b] and (to_stdout or not evidence.of(b)) then
      local file, line = evidence.locate(ref.uri, res.origin[b])
      if file then
        local real = require('kluabench.core').realpath(file) or file
        ref.uri = 'file://' .. real .. (line and ('#L' .. line) or '')
      end
    end
  end
  if not to_stdout then
    local ok, err = evidence.write_file(res.bundles, path)
    if not ok then return nil, err end
  end
  local lines = {}
  for _, b in ipairs(res.bundles) do
    local line, err = output.encode_line(b)
    if not line then return nil, err end
    lines[#lines + 1] = line
  end
  local textv = #lines > 0 and (table.concat(lines, '\n') .. '\n') or ''
  if to_stdout then
    io.stdout:write(textv)
    io.stdout:flush()
    return true
  end
  return output.write_atomic(path, textv)
end

--- Merges dir into path and reports on stderr (prefix "kluabench NAME: ").
-- Returns the exit status (0 or 1) and res.
function M.merge(dir, path, opts)
  opts = opts or {}
  local who = 'kluabench ' .. (opts.name or 'merge') .. ': '
  local res, err = M.collect(dir, opts)
  if not res then
    io.stderr:write(who, err, '\n')
    return 1
  end
  local failed = false
  for _, p in ipairs(res.problems) do
    io.stderr:write(who, NOTES[p.kind] and 'note: ' or '', p.kind, ': ', p.message, '\n')
    if not NOTES[p.kind] then failed = true end
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
    local got = {}
    for _, b in ipairs(res.bundles) do got[M.point_of(b)] = true end
    local n = 0
    for _ in pairs(got) do n = n + 1 end
    io.stderr:write(string.format('%s%d bundle%s of %d/%d points from %d shard%s -> %s%s\n', who, #res.bundles,
      #res.bundles == 1 and '' or 's', n, res.points, res.shards, res.shards == 1 and '' or 's',
      (path == nil or path == '-') and 'stdout' or path, failed and ' (INCOMPLETE: see above)' or ''))
  end
  return failed and 1 or 0, res
end

function M.main(args)
  local opts, rest = require('kluabench.cli').parse_args(args or {},
    { out = 'value', ['allow-mixed'] = 'flag', quiet = 'flag', aliases = { o = 'out', q = 'quiet' } })
  if not opts then return usage_error('%s', rest) end
  if #rest == 0 then return usage_error('no DIR given (the --dir of run-all or slurm)') end
  if #rest > 1 then return usage_error("one DIR expected, got also '%s'", rest[2]) end
  return (M.merge(rest[1], opts.out, { allow_mixed = opts['allow-mixed'], quiet = opts.quiet }))
end

M.run = M.main

return M
