--- Running the kluabench binary as a subprocess from specs, and small file
-- helpers: what tests/reliability_spec.lua, durability_spec.lua,
-- soak_spec.lua and fuzz_spec.lua share.
local M = {}

local util = require 'helpers.util'

-- The binary, quoting, file and directory helpers are util's (one copy for every spec).
M.bin, M.q, M.slurp, M.spit, M.tmpdir = util.bin, util.q, util.slurp, util.spit, util.tmpdir

--- The source tree (where stdlib/ and scripts/ are).
function M.root()
  local p = package.searchpath('kluabench.suite', package.path) or 'stdlib/kluabench/suite/init.lua'
  local r = p:match('^(.-)/?stdlib/kluabench/suite/init%.lua$')
  if r == nil or r == '' then r = os.getenv('PWD') or '.' end
  if r:sub(1, 1) ~= '/' then r = (os.getenv('PWD') or '.') .. '/' .. r end
  return r
end

-- Variables that would change what the binary does, cleared for each run.
local CLEARED = { 'LUA_INIT', 'LUA_INIT_5_4', 'KLUABENCH_BACKEND', 'KLUABENCH_DEVICE', 'KLUABENCH_QUIET' }

--- Runs the binary with args (a list, quoted here) and returns
-- {out =, err =, code =}; code is 128 + N for a process killed by signal N.
-- opts: env ({NAME = value}), stdin (text), cwd, timeout (seconds: the child then runs under
-- `timeout -k 5`, since one blocked in open(2) on a FIFO outlives SIGTERM; code 124 or 137 says it
-- ran past them, so that a hang fails the spec instead of stalling it). KLUABENCH_RESULTS is a temporary folder
-- (M.results), so that a script's default results never land in the source tree.
function M.run(args, opts)
  opts = opts or {}
  local words = {}
  for i, a in ipairs(args) do words[i] = M.q(a) end
  local env = { 'env' }
  for _, name in ipairs(CLEARED) do env[#env + 1] = '-u ' .. name end
  -- what a script writes to its default results folder stays in a temporary one
  M.results = M.results or util.tmpdir()
  env[#env + 1] = M.q('KLUABENCH_RESULTS=' .. M.results)
  for k, v in pairs(opts.env or {}) do env[#env + 1] = M.q(k .. '=' .. v) end
  local errf, inf = os.tmpname(), os.tmpname()
  M.spit(inf, opts.stdin or '')
  local cmd = string.format('%s%s%s %s %s < %s 2> %s', opts.cwd and ('cd ' .. M.q(opts.cwd) .. ' && ') or '',
    opts.timeout and string.format('timeout -k 5 %d ', opts.timeout) or '', table.concat(env, ' '), M.q(M.bin()), table.concat(words, ' '), M.q(inf), M.q(errf))
  local p = io.popen(cmd, 'r')
  local out = p:read('a')
  local _, how, code = p:close()
  local err = M.slurp(errf)
  os.remove(errf)
  os.remove(inf)
  return { out = out, err = err, code = how == 'exit' and code or 128 + code }
end

return M
