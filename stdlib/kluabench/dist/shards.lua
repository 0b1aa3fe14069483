--- What `kluabench run-all`, `kluabench slurm` and `kluabench merge` share:
-- the launcher's command line (its options, then SCRIPT and the script's
-- arguments), the points of every shard as the script lists them, and the
-- manifest (DIR/manifest.json) that tells merge which points to expect from
-- which shard. docs/DISTRIBUTED.md describes the files.
local files = require 'kluabench.util.files'
local json = require 'kluabench.util.json'
local outputs = require 'kluabench.record.writer'
local names = require 'kluabench.record.names'
local util_args = require 'kluabench.util.args'
local helpers = require 'kluabench.commands.helpers'
local core = require 'kluabench.core'
local record = require 'kluabench.record'
local suite_shard = require 'kluabench.dist.split'
local evidence = require 'kluabench.record.evidence'
local printable = require('kluabench.util.args').printable

local M = {}

M.MANIFEST = 'manifest.json'
M.MANIFEST_KIND = 'KluabenchShards'
M.MANIFEST_VERSION = 1

-- The script options a launcher sets for each shard itself.
local RESERVED = { shard = true, format = true, out = true, ['list-points'] = true }

---------------------------------------------------------------------------
-- Command line
---------------------------------------------------------------------------

--- Splits args into the launcher's options (read with cli.parse_args and
-- spec) and SCRIPT with its arguments: the launcher's options come first,
-- the first word that is not one of them (or the word after '--') is
-- SCRIPT. Returns opts, script, script_args; or nil, message.
function M.split_args(args, spec)
  -- a copy, not a table reading spec through __index: the did-you-mean of
  -- an unknown option lists the spec's names with pairs, which sees no __index
  local stopping = { stop_at_positional = true }
  for k, v in pairs(spec) do stopping[k] = v end
  local opts, rest = util_args.parse_args(args, stopping)
  if not opts then return nil, rest end
  local script = rest[1]
  local script_args = table.move(rest, 2, #rest, 1, {})
  for _, a in ipairs(script_args) do
    local name = a:match('^%-%-([^=]+)')
    if name and RESERVED[name] then
      return nil, string.format("the script option '%s' is set for each shard by the launcher "
        .. "(--shard I/N, --format jsonl, --out DIR/shard-I.jsonl); leave it out", a)
    end
  end
  return opts, script, script_args
end

--- The host options that children get: --backend as given to this
-- process (KLUABENCH_BACKEND reaches them through the environment).
function M.host_args()
  local host = package.loaded['kluabench.host']
  local out = {}
  if host and host.backend_option then out[#out + 1] = '--backend=' .. host.backend_option end
  return out
end

--- The backend the children will use when it is known: "cpu", "cuda" or nil
-- (auto).
function M.backend_choice()
  local host = package.loaded['kluabench.host']
  local b = host and host.backend_option or os.getenv('KLUABENCH_BACKEND')
  if b == nil or b == '' or b == 'auto' then return nil end
  return b
end

--- path made absolute against the working directory (kluabench.record.writer.absolute).
M.absolute = outputs.absolute

--- s quoted for sh.
function M.shell_quote(s)
  s = tostring(s)
  if s:match('^[%w%-_./=:,@+]+$') then return s end
  return "'" .. s:gsub("'", "'\\''") .. "'"
end

--- Whether SCRIPT can be read: true, or nil and "cannot read SCRIPT 'x': why" (cli.helpers.unreadable:
-- only a regular file, a FIFO refused without opening it).
function M.check_script(script)
  local why = helpers.unreadable(script)
  if why then return nil, string.format("cannot read SCRIPT '%s': %s", script, why) end
  return true
end

--- Waits for child pid: pid, "exit", code | pid, "signal", name; or nil,
-- message (a wait cut short by a signal is resumed).
function M.wait(pid)
  local process = core.process
  while true do
    local got, how, code = process.wait(pid)
    if got or code ~= 'EINTR' then return got, how, code end
  end
end

---------------------------------------------------------------------------
-- The points of every shard
---------------------------------------------------------------------------

--- The most sessions (--runs) a point may expect: the harness's bound on --runs.
M.MAX_SESSIONS = 1000

--- The most providers, or modes, a point may expect.
M.MAX_NAMES = 4096

-- A comma list of distinct, non-empty names (providers, modes); or nil, why.
local function name_list(s, what)
  local out, seen = {}, {}
  for w in (s .. ','):gmatch('([^,]*),') do
    if w == '' or w:find('[%c]') then return nil, string.format("%s '%s': an empty name or a control character", what, s) end
    if seen[w] then return nil, string.format("%s '%s': '%s' twice", what, s, w) end
    if #out == M.MAX_NAMES then return nil, string.format('%s: more than %d names', what, M.MAX_NAMES) end
    seen[w] = true
    out[#out + 1] = w
  end
  return out
end

-- The expectation fields of a --list-points line (after its description).
local EXPECT_KEYS = { providers = true, modes = true, sessions = true }

-- Parses --list-points output: ID<TAB>COST<TAB>DESCRIPTION per line, then
-- (the harness writes them) providers=A,B<TAB>modes=M,N<TAB>sessions=S, the
-- bundles the point will have: every provider x mode x session 1..S. A
-- script that prints no such fields gets points without an expectation
-- (merge then infers it, as before).
local function parse_points(text, what)
  local out = {}
  local n = 0
  for line in text:gmatch('[^\n]+') do
    n = n + 1
    local fields = {}
    for f in (line .. '\t'):gmatch('([^\t]*)\t') do fields[#fields + 1] = f end
    local id, c = fields[1], tonumber(fields[2] or '')
    if not id or id == '' or not c then
      return nil, string.format("%s, line %d: expected ID<TAB>COST<TAB>DESCRIPTION, got '%s'", what, n,
        printable(line, 200))
    end
    local desc, raw = {}, {}
    for k = 3, #fields do
      local key, v = fields[k]:match('^(%l+)=(.*)$')
      if key and EXPECT_KEYS[key] and raw[key] == nil then raw[key] = v else desc[#desc + 1] = fields[k] end
    end
    local p = { id = id, cost = c, description = #desc > 0 and desc[1] ~= '' and table.concat(desc, '\t') or nil }
    if next(raw) then
      if not (raw.providers and raw.modes and raw.sessions) then
        return nil, string.format('%s, line %d: providers=, modes= and sessions= go together (got %s)', what, n,
          printable(line, 200))
      end
      local providers, perr = name_list(raw.providers, 'providers')
      local modes, merr = name_list(raw.modes, 'modes')
      local sessions = raw.sessions:match('^%d+$') and math.tointeger(tonumber(raw.sessions))
      if not providers or not modes then return nil, string.format('%s, line %d: %s', what, n, perr or merr) end
      if not sessions or sessions < 1 or sessions > M.MAX_SESSIONS then
        return nil, string.format("%s, line %d: sessions '%s': expected a whole number from 1 to %d", what, n,
          printable(raw.sessions, 40), M.MAX_SESSIONS)
      end
      p.expect = { providers = providers, modes = modes, sessions = sessions }
    end
    out[#out + 1] = p
  end
  return out
end

local function trimmed_tail(text, max)
  text = (text or ''):gsub('%s+$', '')
  if #text > max then text = '...' .. text:sub(-max) end
  return text
end

--- Runs SCRIPT --list-points once without and then once with each --shard
-- i/n (as child processes on the cpu backend, 8 at a time: listing touches
-- no device, and a login node has none), and checks that the shards hold
-- each point exactly once. o: exe, script, args, n, dir (for temporary
-- files). More shards than points would be shards with nothing to do: n is
-- cut to the number of points (at least 1) before the shards are listed,
-- unless o.keep_empty (slurm: the array has the size asked for).
-- Returns {points = all, shards = {list of points per shard}, n = the
-- shards listed}; or nil, message.
function M.list_points(o)
  local process = core.process
  local lists, failure = {}, nil
  local n -- the shard count, known once the whole list is
  -- one listing process: spawned; finish() waits for it and reads its output
  local function start(i)
    local argv = { o.exe, '--backend=cpu', '--quiet', o.script }
    table.move(o.args, 1, #o.args, #argv + 1, argv)
    argv[#argv + 1] = '--list-points'
    if i > 0 then
      argv[#argv + 1] = '--shard'
      argv[#argv + 1] = string.format('%d/%d', i, n)
    end
    local job = { i = i, out = string.format('%s/.points-%d.tsv', o.dir, i),
      err = string.format('%s/.points-%d.err', o.dir, i) }
    local pid, err = process.spawn(argv, { stdin = '/dev/null', stdout = job.out, stderr = job.err })
    if not pid then
      failure = failure or string.format('cannot run %s: %s', o.script, err)
      return nil
    end
    job.pid = pid
    return job
  end
  local function finish(job)
    local _, how, code = M.wait(job.pid)
    local text = files.read_file(job.out) or ''
    local err = files.read_file(job.err) or ''
    os.remove(job.out)
    os.remove(job.err)
    local shard = job.i > 0 and string.format(' --shard %d/%d', job.i, n) or ''
    if not (how == 'exit' and code == 0) then
      failure = failure or string.format('%s --list-points%s failed (%s %s)%s', o.script, shard, how,
        tostring(code), err:match('%S') and (': ' .. trimmed_tail(err, 600)) or '')
    else
      local pts, perr = parse_points(text, o.script .. ' --list-points' .. shard)
      failure = failure or perr
      lists[job.i] = pts
    end
  end
  -- the whole list first: it says how many shards can have points
  local whole = start(0)
  if whole then finish(whole) end
  if failure then return nil, failure end
  n = o.keep_empty and o.n or math.max(1, math.min(o.n, #lists[0]))
  -- at most 8 at a time (a login node listing the shards of a large array)
  for first = 1, n, 8 do
    if failure then break end
    local batch = {}
    for k = first, math.min(first + 7, n) do
      local job = start(k)
      if job then batch[#batch + 1] = job end
    end
    for _, job in ipairs(batch) do finish(job) end
  end
  if failure then return nil, failure end
  -- every point in exactly one shard
  local where = {}
  for i = 1, n do
    for _, p in ipairs(lists[i]) do
      if where[p.id] then
        return nil, string.format('%s lists point %s in shards %d and %d of %d: its --shard does not split '
          .. 'the points (it must call kluabench.dist.split.select)', o.script, p.id, where[p.id], i, n)
      end
      where[p.id] = i
    end
  end
  for _, p in ipairs(lists[0]) do
    if not where[p.id] then
      return nil, string.format('%s lists point %s without --shard but in none of its %d shards', o.script, p.id, n)
    end
    where[p.id] = nil
  end
  local extra = next(where)
  if extra then
    return nil, string.format('%s lists point %s in shard %d but not without --shard', o.script, extra, where[extra])
  end
  local shards = {}
  for i = 1, n do shards[i] = lists[i] end
  return { points = lists[0], shards = shards, n = n }
end

---------------------------------------------------------------------------
-- The manifest
---------------------------------------------------------------------------

--- The name of shard i's results file in the output directory.
function M.shard_file(i) return string.format('shard-%d.jsonl', i) end

--- A new manifest. o: launcher ("run-all" | "slurm"), exe, host_args,
-- script, args, listing (from list_points), logs (per shard, optional),
-- devices (per shard, optional).
function M.manifest(o)
  local shards = {}
  for i, pts in ipairs(o.listing.shards) do
    local list = {}
    for k, p in ipairs(pts) do
      local e = p.expect
      list[k] = { id = p.id, cost = p.cost, description = p.description, expect = e and {
        providers = json.array(e.providers), modes = json.array(e.modes), sessions = e.sessions } or nil }
    end
    shards[i] = { index = i, file = M.shard_file(i), log = o.logs and o.logs[i] or nil,
      device = o.devices and o.devices[i] or nil, points = next(list) and list or json.array() }
  end
  return {
    kind = M.MANIFEST_KIND, version = M.MANIFEST_VERSION, launcher = o.launcher,
    created = names.iso8601(record.now()),
    executable = o.exe, hostArgs = next(o.host_args) and o.host_args or json.array(),
    script = o.script, args = next(o.args) and o.args or json.array(),
    count = #shards, points = #o.listing.points, shards = shards,
  }
end

--- Writes m as dir/manifest.json after checking it as merge will (shards.check_manifest); true or nil,
-- message.
function M.write_manifest(dir, m)
  local ok, why = M.check_manifest(m, dir .. '/' .. M.MANIFEST)
  if not ok then return nil, why end
  local text, err = json.encode_pretty(m)
  if not text then return nil, err end
  return files.write_atomic(dir .. '/' .. M.MANIFEST, text)
end

-- A list: a table whose keys are 1..#t (an empty table is an empty list).
local function is_list(t)
  if type(t) ~= 'table' then return false end
  local n = 0
  for k in pairs(t) do
    if math.type(k) ~= 'integer' or k < 1 then return false end
    n = n + 1
  end
  return n == #t
end

-- How a value of the manifest reads in a message: 3, "3" (a string), a table.
local function shown(v)
  if type(v) == 'string' then return string.format('"%s" (a string)', printable(v, 60)) end
  if type(v) == 'table' then return 'a JSON ' .. (is_list(v) and 'array' or 'object') end
  if v == nil then return 'missing' end
  return tostring(v)
end

--- Whether name is a path inside the run's directory: relative, without '.', '..' or empty
-- components, control characters or NUL. true or nil, why.
function M.inside_name(name)
  if type(name) ~= 'string' or name == '' then return nil, 'not a file name' end
  if name:sub(1, 1) == '/' then return nil, 'an absolute path, not a name inside DIR' end
  if name:find('[%c]') then return nil, 'a control character or NUL in the name' end
  if #name > 4095 then return nil, 'longer than a path can be' end
  for part in (name .. '/'):gmatch('([^/]*)/') do
    if part == '' or part == '.' or part == '..' then return nil, "a '" .. part .. "' component: not a name inside DIR" end
  end
  return true
end

-- The list of non-empty distinct names of an expect field; or nil, why.
local function check_names(v, what)
  if not is_list(v) or #v == 0 then return nil, what .. ' must be a non-empty array of names, got ' .. shown(v) end
  if #v > M.MAX_NAMES then return nil, string.format('%s has %d names, at most %d', what, #v, M.MAX_NAMES) end
  local seen = {}
  for i, w in ipairs(v) do
    if type(w) ~= 'string' or w == '' or w:find('[%c]') then
      return nil, string.format('%s[%d] must be a name, got %s', what, i, shown(w))
    end
    if seen[w] then return nil, string.format("%s names '%s' twice", what, printable(w, 60)) end
    seen[w] = true
  end
  return true
end

-- What a point of the manifest expects; nil, why.
local function check_expect(e)
  if type(e) ~= 'table' or is_list(e) and next(e) ~= nil then return nil, 'expect must be an object, got ' .. shown(e) end
  local ok, why = check_names(e.providers, 'expect.providers')
  if ok then ok, why = check_names(e.modes, 'expect.modes') end
  if not ok then return nil, why end
  if math.type(e.sessions) ~= 'integer' or e.sessions < 1 or e.sessions > M.MAX_SESSIONS then
    return nil, string.format('expect.sessions must be a whole number from 1 to %d, got %s', M.MAX_SESSIONS,
      shown(e.sessions))
  end
  return true
end

--- Checks a decoded manifest against what the launchers write (docs/DISTRIBUTED.md): kind and version; count a
-- whole number from 1 to shard.MAX_SHARDS; shards a list of count entries whose indexes are 1..count, each once;
-- every file and log a name inside DIR, no two alike (nor the manifest's own name); every point id in exactly one
-- shard; `points` the number of them; every point's expect (the providers, modes and sessions it will have)
-- well-formed, on every point or on none.
--
-- Returns a copy of the manifest with its shards in index order and expects = true when the points carry expect,
-- or nil and "LABEL: why".
function M.check_manifest(m, label)
  label = label or M.MANIFEST
  local function bad(fmt, ...) return nil, label .. ': ' .. string.format(fmt, ...) end
  if type(m) ~= 'table' or is_list(m) and next(m) ~= nil then return bad('not a JSON object') end
  if m.kind ~= M.MANIFEST_KIND then return bad('kind is %s, expected %s', shown(m.kind), M.MANIFEST_KIND) end
  if m.version ~= M.MANIFEST_VERSION then
    return bad('version %s, this kluabench reads version %d', shown(m.version), M.MANIFEST_VERSION)
  end
  local max = suite_shard.MAX_SHARDS
  if math.type(m.count) ~= 'integer' or m.count < 1 or m.count > max then
    return bad('count is %s, expected a whole number from 1 to %d (the number of shards)', shown(m.count), max)
  end
  if not is_list(m.shards) then return bad('shards must be an array, got %s', shown(m.shards)) end
  if #m.shards ~= m.count then
    return bad('count is %d but shards lists %d shard%s', m.count, #m.shards, #m.shards == 1 and '' or 's')
  end
  local by_index, names, where = {}, { [M.MANIFEST] = 'the manifest', ['job.sbatch'] = 'the batch script' }, {}
  local function claim(name, what)
    if names[name] then return bad("%s is '%s', which is %s too", what, printable(name, 80), names[name]) end
    names[name] = what
    return true
  end
  local total, with_expect = 0, 0
  for k, s in ipairs(m.shards) do
    if type(s) ~= 'table' or is_list(s) and next(s) ~= nil then return bad('shards[%d] is not an object', k) end
    if math.type(s.index) ~= 'integer' or s.index < 1 or s.index > m.count then
      return bad('shards[%d] has index %s, expected a whole number from 1 to %d', k, shown(s.index), m.count)
    end
    if by_index[s.index] then return bad('shards[%d] and shards[%d] both have index %d', by_index[s.index].k, k, s.index) end
    by_index[s.index] = { k = k, shard = s }
    local i = s.index
    local ok, why = M.inside_name(s.file)
    if not ok then return bad("shard %d's file %s: %s", i, shown(s.file), why) end
    ok, why = claim(s.file, string.format("shard %d's file", i))
    if not ok then return nil, why end
    local samples = evidence.samples_path(s.file)
    ok, why = claim(samples, string.format("shard %d's samples file", i))
    if not ok then return nil, why end
    if s.log ~= nil then
      ok, why = M.inside_name(s.log)
      if not ok then return bad("shard %d's log %s: %s", i, shown(s.log), why) end
      ok, why = claim(s.log, string.format("shard %d's log", i))
      if not ok then return nil, why end
    end
    if s.device ~= nil and type(s.device) ~= 'string' and math.type(s.device) ~= 'integer' then
      return bad("shard %d's device is %s, expected a device number or name", i, shown(s.device))
    end
    if not is_list(s.points) then return bad("shard %d's points must be an array, got %s", i, shown(s.points)) end
    for j, p in ipairs(s.points) do
      if type(p) ~= 'table' or type(p.id) ~= 'string' or p.id == '' or p.id:find('[%c]') then
        return bad('shard %d, point %d has no id (a non-empty string without control characters)', i, j)
      end
      if where[p.id] then
        return bad('point %s is in shard %d and in shard %d (a point belongs to one shard)', printable(p.id, 80),
          where[p.id], i)
      end
      where[p.id] = i
      if p.cost ~= nil and (type(p.cost) ~= 'number' or not (p.cost >= 0 and p.cost < math.huge)) then
        return bad('point %s: cost is %s, expected a finite number >= 0', printable(p.id, 80), shown(p.cost))
      end
      if p.expect ~= nil then
        local eok, ewhy = check_expect(p.expect)
        if not eok then return bad('point %s: %s', printable(p.id, 80), ewhy) end
        with_expect = with_expect + 1
      end
      total = total + 1
    end
  end
  if m.points ~= nil and m.points ~= total then
    return bad('points is %s but the shards list %d point%s', shown(m.points), total, total == 1 and '' or 's')
  end
  if with_expect > 0 and with_expect < total then
    return bad('%d of the %d points say what they expect (expect) and the others do not', with_expect, total)
  end
  local checked = {}
  for k, v in pairs(m) do checked[k] = v end
  checked.shards = {}
  for i = 1, m.count do checked.shards[i] = by_index[i].shard end
  checked.expects = with_expect > 0
  return checked
end

--- Decodes and checks the text of a manifest (shards.check_manifest); the manifest or nil, "LABEL: why".
function M.parse_manifest(text, label)
  label = label or M.MANIFEST
  local m, err = json.decode(text)
  if m == nil then return nil, label .. ': ' .. tostring(err) end
  return M.check_manifest(m, label)
end

--- Reads and checks dir/manifest.json; the manifest or nil, message.
function M.read_manifest(dir)
  local path = dir .. '/' .. M.MANIFEST
  local text, err = files.read_file(path)
  if not text then
    local _, _, errno = core.stat(path, true)
    if errno == 2 then
      return nil, path .. ' not found: merge needs the point list that run-all and slurm write there'
    end
    return nil, tostring(err)
  end
  return M.parse_manifest(text, path)
end

---------------------------------------------------------------------------
-- Outputs that would overwrite an input
---------------------------------------------------------------------------

--- path as one spelling for comparing (kluabench.record.writer.canonical).
M.canonical = outputs.canonical

--- What a name in a run's directory is ("the manifest", "shard 3's results file", ...), by the names
-- the launchers give: manifest.json, job.sbatch, shard-I.jsonl, shard-I.samples.jsonl, shard-I.log
-- and the listing's .points-I files; or nil.
function M.role_in_dir(name)
  if name == M.MANIFEST then return 'the manifest' end
  if name == 'job.sbatch' then return 'the batch script' end
  local i = name:match('^shard%-(%d+)%.samples%.jsonl$')
  if i then return string.format("shard %s's samples file", i) end
  i = name:match('^shard%-(%d+)%.jsonl$')
  if i then return string.format("shard %s's results file", i) end
  i = name:match('^shard%-(%d+)%.log$')
  if i then return string.format("shard %s's log", i) end
  if name:match('^%.points%-%d+%.') then return 'a listing of the points' end
  return nil
end

--- The inputs of a launch that its -o must not overwrite: SCRIPT and the kluabench binary (the files the
-- launcher writes into DIR are checked by name, shards.role_in_dir).
function M.launch_inputs(script, exe)
  local inputs = { { script, 'SCRIPT' } }
  if exe then inputs[2] = { exe, 'the kluabench binary' } end
  return inputs
end

--- The files a command reads, as inputs for check_output (kluabench.record.writer.file_inputs).
M.file_inputs = outputs.file_inputs

--- Whether an output file (and the samples file beside it) would overwrite an input
-- (kluabench.record.writer.check_output), dir (optional) being the run's directory, whose launcher
-- files (shards.role_in_dir) are inputs too. Returns true, or nil and "OPTION PATH is WHAT: ...".
function M.check_output(option, out, inputs, dir, alone)
  local role
  if dir then
    local cdir = outputs.canonical(dir)
    role = function(parent, base) return parent == cdir and M.role_in_dir(base) or nil end
  end
  return outputs.check_output(option, out, inputs, alone, role)
end

--- Prepares an output directory for a launch: creates it, and refuses one
-- that holds a manifest or shard files already (JSON Lines files are
-- appended to: results of two runs would mix). true or nil, message.
function M.prepare_dir(dir)
  local ok, err = files.mkdir_p(dir)
  if not ok then return nil, err end
  -- stat, not open: opening a FIFO there would wait for a writer
  local stat = core.stat
  if stat(dir .. '/' .. M.MANIFEST, true) then
    return nil, string.format('%s already holds a run (%s); give another --dir or remove it', dir, M.MANIFEST)
  end
  if stat(dir .. '/' .. M.shard_file(1), true) then
    return nil, string.format('%s already holds %s; give another --dir or remove it', dir, M.shard_file(1))
  end
  return true
end

return M
