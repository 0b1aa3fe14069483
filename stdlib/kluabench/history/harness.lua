--- The history subsystem's harness option, `--history DB` (kluabench.suite reaches it through
-- declaration.EXTENSIONS): the commit under test and the database, checked before anything is timed, and the
-- finished points added after the sweep (also after an error or a signal).
local history = require 'kluabench.history'
local record = require 'kluabench.record'
local names = require 'kluabench.record.names'

local M = {}

--- Before the sweep: the git commit to file the runs under, with the database opened (made) once; raises a message
-- naming the option when either is missing.
-- @signature harness.open(db) -> meta
-- @example
--   local ok, why = pcall(require("kluabench.history.harness").open, os.tmpname() .. ".db")
function M.open(db)
  local meta = history.git_meta()
  if not meta then
    error(string.format('--history %s: no git commit in the current directory to file the runs under (run in the work '
      .. 'tree of the code under test, or write the results and add them with kluabench history add FILE --commit '
      .. 'SHA)', db), 0)
  end
  local h, err = history.open(db, { create = true })
  if not h then error(string.format('--history %s: %s', db, tostring(err)), 0) end
  h:close()
  return meta
end

--- After the sweep: adds the bundles to the database under meta (from open); a line on stderr says what happened.
-- @signature harness.add(name, db, bundles, meta, source)
-- @example
--   -- harness.add("llama4_rope", "results/history.db", bundles, harness.open("results/history.db"), "results/r.jsonl")
function M.add(name, db, bundles, meta, source)
  local m = {}
  for k, v in pairs(meta) do m[k] = v end
  m.source = source ~= '-' and source or nil
  m.batch = (source or 'stdout') .. '@' .. names.time_id(record.now())
  local s, err = history.add_bundles(db, bundles, m)
  if not s then
    io.stderr:write(string.format('%s: --history %s: %s (the bundles are in the results file; history add takes them '
      .. 'later)\n', name, db, tostring(err)))
    return
  end
  io.stderr:write(string.format('%s: history %s: %d run%s added, %d already there, %d refused (commit %s)\n', name, db,
    s.added, s.added == 1 and '' or 's', s.present, #s.refused, tostring(m.commit):sub(1, 12)))
end

return M
