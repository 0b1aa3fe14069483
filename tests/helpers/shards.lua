-- What the specs of run-all, merge and slurm share: the stand-in harness
-- script, running the binary, and the set of points a results file holds.
local sub = require 'helpers.subprocess'
local json = require 'kluabench.util.json'
local result = require 'kluabench.result'

local M = {}

M.run, M.q, M.slurp, M.spit, M.tmpdir = sub.run, sub.q, sub.slurp, sub.spit, sub.tmpdir

--- tests/helpers/mini_sweep.lua, absolute.
function M.mini() return sub.root() .. '/tests/helpers/mini_sweep.lua' end

--- The arguments of `kluabench --backend cpu COMMAND --dir DIR OPTS... SCRIPT
-- SCRIPT_ARGS...` (COMMAND run-all or slurm; SCRIPT default the stand-in).
function M.launcher(command, dir, opts, script, script_args)
  local argv = { '--backend', 'cpu', command, '--dir', dir }
  table.move(opts, 1, #opts, #argv + 1, argv)
  argv[#argv + 1] = script or M.mini()
  table.move(script_args or {}, 1, #(script_args or {}), #argv + 1, argv)
  return argv
end

--- The bundles of a JSON Lines file (a list; empty when the file is absent).
function M.bundles(path)
  local out = {}
  local text = sub.slurp(path) or ''
  for line in text:gmatch('[^\n]+') do out[#out + 1] = assert(json.decode(line)) end
  return out
end

--- The sorted list of "workloadDigest provider session/count" of a file's
-- bundles: what must be equal between a sharded and an unsharded run.
function M.keys(path)
  local out = {}
  for _, b in ipairs(M.bundles(path)) do
    local p = result.session(b)
    out[#out + 1] = string.format('%s %s %d/%d', p.digests.workload, p.provider, p.session.index,
      p.session.count)
  end
  table.sort(out)
  return out
end

--- The decoded DIR/manifest.json.
function M.manifest(dir)
  return assert(json.decode(assert(sub.slurp(dir .. '/manifest.json'))))
end

--- The shard (1..N) that the manifest of dir plans point id for.
function M.shard_of(dir, id)
  for i, s in ipairs(M.manifest(dir).shards) do
    for _, p in ipairs(s.points) do
      if p.id == id then return i end
    end
  end
end

--- Rewrites a JSON Lines file through f(bundle, line number) -> bundle | nil
-- (nil drops the line).
function M.rewrite(path, f)
  local lines = {}
  for i, b in ipairs(M.bundles(path)) do
    local nb = f(b, i)
    if nb then lines[#lines + 1] = assert(json.encode_line(nb)) end
  end
  sub.spit(path, #lines > 0 and (table.concat(lines, '\n') .. '\n') or '')
end

--- An unsharded run of the stand-in with args into path.
function M.unsharded(path, args)
  local argv = { '--backend', 'cpu', M.mini() }
  for _, a in ipairs(args or {}) do argv[#argv + 1] = a end
  for _, a in ipairs { '--format', 'jsonl', '--out', path } do argv[#argv + 1] = a end
  local r = sub.run(argv)
  assert(r.code == 0, r.err)
  return M.keys(path)
end

return M
