--- What `kluabench run-all`, `kluabench slurm` and `kluabench merge` share:
-- the launcher's command line (its options, then SCRIPT and the script's
-- arguments), the points of every shard as the script lists them, and the
-- manifest (DIR/manifest.json) that tells merge which points to expect from
-- which shard. docs/DISTRIBUTED.md describes the files.
local output = require 'kluabench.report'
local names = require 'kluabench.record.names'

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
  local stopping = setmetatable({ stop_at_positional = true }, { __index = spec })
  local opts, rest = require('kluabench.cli').parse_args(args, stopping)
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

--- path made absolute against the working directory.
function M.absolute(path)
  if path:sub(1, 1) == '/' then return path end
  local cwd = os.getenv('PWD')
  if not cwd or cwd == '' then
    local p = io.popen('pwd')
    cwd = p and p:read('l') or '.'
    if p then p:close() end
  end
  path = path:gsub('^%./', '')
  return cwd .. '/' .. path
end

--- s quoted for sh.
function M.shell_quote(s)
  s = tostring(s)
  if s:match('^[%w%-_./=:,@+]+$') then return s end
  return "'" .. s:gsub("'", "'\\''") .. "'"
end

--- Whether SCRIPT can be read: true, or nil and "cannot read SCRIPT 'x': why". Only a regular
-- file: opening a FIFO would wait for a writer (checked without opening it).
function M.check_script(script)
  local st, err = require('kluabench.core').stat(script, true)
  local why = not st and err:gsub('^.-: ', '') or st.type ~= 'file' and ('is a ' .. (st.type == 'fifo' and 'FIFO'
    or st.type == 'char' and 'character device' or st.type == 'block' and 'block device' or st.type)
    .. ', not a regular file') or nil
  if not why then
    local f, oerr = io.open(script, 'r')
    if f then f:close() else why = tostring(oerr):gsub('^.-: ', '') end
  end
  if why then return nil, string.format("cannot read SCRIPT '%s': %s", script, why) end
  return true
end

--- Waits for child pid: pid, "exit", code | pid, "signal", name; or nil,
-- message (a wait cut short by a signal is resumed).
function M.wait(pid)
  local process = require('kluabench.core').process
  while true do
    local got, how, code = process.wait(pid)
    if got or code ~= 'EINTR' then return got, how, code end
  end
end

---------------------------------------------------------------------------
-- The points of every shard
---------------------------------------------------------------------------

-- Parses --list-points output: ID<TAB>COST<TAB>DESCRIPTION per line.
local function parse_points(text, what)
  local out = {}
  local n = 0
  for line in text:gmatch('[^\n]+') do
    n = n + 1
    local id, cost, desc = line:match('^([^\t]+)\t([^\t]+)\t?(.*)$')
    local c = tonumber(cost)
    if not id or not c then
      return nil, string.format("%s, line %d: expected ID<TAB>COST<TAB>DESCRIPTION, got '%s'", what, n, line)
    end
    out[#out + 1] = { id = id, cost = c, description = desc ~= '' and desc or nil }
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
  local process = require('kluabench.core').process
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
    local text = output.read_file(job.out) or ''
    local err = output.read_file(job.err) or ''
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
          .. 'the points (it must call kluabench.shard.select)', o.script, p.id, where[p.id], i, n)
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
    for k, p in ipairs(pts) do list[k] = { id = p.id, cost = p.cost, description = p.description } end
    shards[i] = { index = i, file = M.shard_file(i), log = o.logs and o.logs[i] or nil,
      device = o.devices and o.devices[i] or nil, points = next(list) and list or output.array() }
  end
  return {
    kind = M.MANIFEST_KIND, version = M.MANIFEST_VERSION, launcher = o.launcher,
    created = names.iso8601(require('kluabench.record').now()),
    executable = o.exe, hostArgs = next(o.host_args) and o.host_args or output.array(),
    script = o.script, args = next(o.args) and o.args or output.array(),
    count = #shards, points = #o.listing.points, shards = shards,
  }
end

--- Writes m as dir/manifest.json; true or nil, message.
function M.write_manifest(dir, m)
  local text, err = output.encode_pretty(m)
  if not text then return nil, err end
  return output.write_atomic(dir .. '/' .. M.MANIFEST, text)
end

--- Reads and checks dir/manifest.json; the manifest or nil, message.
function M.read_manifest(dir)
  local path = dir .. '/' .. M.MANIFEST
  local text = output.read_file(path)
  if not text then
    return nil, path .. ' not found: merge needs the point list that run-all and slurm write there'
  end
  local m, err = output.decode(text)
  if type(m) ~= 'table' then return nil, path .. ': ' .. tostring(err or 'not a JSON object') end
  if m.kind ~= M.MANIFEST_KIND then
    return nil, string.format("%s: kind is %s, expected %s", path, tostring(m.kind), M.MANIFEST_KIND)
  end
  if m.version ~= M.MANIFEST_VERSION then
    return nil, string.format('%s: version %s, this kluabench reads version %d', path, tostring(m.version),
      M.MANIFEST_VERSION)
  end
  if type(m.shards) ~= 'table' or #m.shards == 0 then return nil, path .. ': no shards' end
  for i, s in ipairs(m.shards) do
    if type(s) ~= 'table' or type(s.file) ~= 'string' or type(s.points) ~= 'table' then
      return nil, string.format('%s: shard %d lacks its file or points', path, i)
    end
    for k, p in ipairs(s.points) do
      if type(p) ~= 'table' or type(p.id) ~= 'string' then
        return nil, string.format('%s: shard %d, point %d has no id', path, i, k)
      end
    end
  end
  return m
end

--- Prepares an output directory for a launch: creates it, and refuses one
-- that holds a manifest or shard files already (JSON Lines files are
-- appended to: results of two runs would mix). true or nil, message.
function M.prepare_dir(dir)
  local ok, err = output.mkdir_p(dir)
  if not ok then return nil, err end
  -- stat, not open: opening a FIFO there would wait for a writer
  local stat = require('kluabench.core').stat
  if stat(dir .. '/' .. M.MANIFEST, true) then
    return nil, string.format('%s already holds a run (%s); give another --dir or remove it', dir, M.MANIFEST)
  end
  if stat(dir .. '/' .. M.shard_file(1), true) then
    return nil, string.format('%s already holds %s; give another --dir or remove it', dir, M.shard_file(1))
  end
  return true
end

return M
