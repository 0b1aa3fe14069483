--- Interleaved sampling: when several providers or configurations are
-- measured, take their samples in turns instead of one after the other, so
-- that slow drift (clocks, temperature, other tenants) spreads over all of
-- them instead of biasing whichever ran last.
--
--   local il = require 'kluabench.measure.interleave'
--   local out = il.run({
--     { name = 'fused',     session = session.new('cold', fused_fn) },
--     { name = 'reference', session = session.new('cold', ref_fn) },
--   }, { order = 'shuffle', seed = 42 })
--   out.results.fused.summary.median; out.seed; out.sequence
--
-- Orders: "roundrobin" (1, 2, ..., k every round) and "shuffle" (a fresh
-- permutation every round, from a SplitMix64 stream seeded with `seed`; a
-- seed is drawn from the clock when none is given, and always returned so
-- the record can carry it). Rounds continue until every session's stopping
-- rule is done; a session that is done sits out the later rounds.
--
-- A session is anything with warmup(), step() -> done and result() (what
-- session.new returns); tests pass small fakes.
local prng = require 'kluabench.stats.prng'

local M = {}
local args = require 'kluabench.util.args'

M.ORDERS = { roundrobin = true, shuffle = true }

--- The order of one round over the task indices in active.
--
-- The order of one round over the active task indices `active` (a list, not modified): a copy for
-- "roundrobin", a shuffled copy drawn from g for "shuffle".
--
-- @signature interleave.round_order(active, order, rng) -> list
-- @example
--   print(table.concat(interleave.round_order({1, 2, 3}, "shuffle", prng.new(1)), " "))
function M.round_order(active, order, g)
  args.check('interleave.round_order', 1, active, 'table', 'list of tasks')
  args.check('interleave.round_order', 2, order, 'string', 'order name')
  local t = table.move(active, 1, #active, 1, {})
  if order == 'shuffle' then g:shuffle(t) end
  return t
end

--- The order of the first rounds of k tasks, without running anything.
--
-- The first `rounds` rounds of k tasks that never finish: a list of rounds, each a list of task
-- indices. Pure, for tests and for showing a schedule before running it.
--
-- @signature interleave.schedule(k, rounds [, order [, seed]]) -> rounds
-- @example
--   for _, r in ipairs(interleave.schedule(3, 2, "shuffle", 7)) do print(table.concat(r, " ")) end
function M.schedule(k, rounds, order, seed)
  args.check('interleave.schedule', 1, k, 'integer', 'number of tasks')
  args.check('interleave.schedule', 2, rounds, 'integer', 'number of rounds')
  order = order or 'roundrobin'
  if not M.ORDERS[order] then
    error("bad argument #3 to 'schedule' (order roundrobin or shuffle expected, got "
      .. tostring(order) .. ')', 2)
  end
  local g = prng.new(seed or 0)
  local active = {}
  for i = 1, k do active[i] = i end
  local out = {}
  for r = 1, rounds do out[r] = M.round_order(active, order, g) end
  return out
end

local function check_tasks(tasks)
  if type(tasks) ~= 'table' or #tasks == 0 then
    error("bad argument #1 to 'run' (non-empty list of {name, session} expected)", 3)
  end
  local seen = {}
  for i, t in ipairs(tasks) do
    local s = type(t) == 'table' and t.session
    if type(s) ~= 'table' or type(s.step) ~= 'function' or type(s.result) ~= 'function' then
      error(string.format("bad argument #1 to 'run' (task %d has no session with step and result)",
        i), 3)
    end
    local name = t.name or tostring(i)
    if seen[name] then
      error(string.format("bad argument #1 to 'run' (two tasks are named '%s')", name), 3)
    end
    seen[name] = true
  end
end

--- Runs sessions ({name, session} each) in turns until every stopping rule is done.
--
-- opts: order ("shuffle", default, or "roundrobin"), seed (drawn when absent and always returned),
-- keep_sequence, max_rounds. out: {order, seed, rounds, results = {[name] = result}, sequence,
-- names}.
--
-- Runs the sessions of `tasks` (list of {name, session}) interleaved. opts: order ("shuffle" by
-- default), seed (integer; drawn when absent), keep_sequence (true: return the full order of
-- samples taken), max_rounds (a safety net; default 10^7). Every session warms up first, in task
-- order.
--
-- @signature interleave.run(tasks [, opts]) -> out
-- @example
--   local x = kb.randn({1 << 16}, "f32", 1)
--   local new = require("kluabench.measure.session").new
--   local function session(fn) return new("cold", fn, {stop = stopping.count(30)}) end
--   local out = interleave.run({
--     {name = "add", session = session(function() x:add_(1) end)},
--     {name = "mul", session = session(function() x:mul_(1) end)},
--   }, {order = "shuffle", seed = 42})
--   print(out.results.add.summary.median)
function M.run(tasks, opts)
  check_tasks(tasks)
  opts = opts or {}
  local order = opts.order or 'shuffle'
  if not M.ORDERS[order] then
    error("bad argument #2 to 'run' (order roundrobin or shuffle expected, got " .. tostring(order)
      .. ')', 2)
  end
  local seed = opts.seed
  if seed == nil then seed = prng.fresh_seed() end
  local g = prng.new(seed)
  local names = {}
  for i, t in ipairs(tasks) do names[i] = t.name or tostring(i) end
  for _, t in ipairs(tasks) do
    if t.session.warmup then t.session:warmup() end
  end
  local active = {}
  for i = 1, #tasks do active[i] = i end
  local sequence = opts.keep_sequence and {} or nil
  local rounds, max_rounds = 0, opts.max_rounds or 10000000
  while #active > 0 and rounds < max_rounds do
    rounds = rounds + 1
    local still = {}
    for _, i in ipairs(M.round_order(active, order, g)) do
      if sequence then sequence[#sequence + 1] = names[i] end
      if not tasks[i].session:step() then still[#still + 1] = i end
    end
    table.sort(still) -- the next round's permutation is drawn over a canonical order
    active = still
  end
  if #active > 0 then error(string.format('interleave: %d session(s) still running after %d rounds',
      #active, rounds), 2) end
  local results = {}
  for i, t in ipairs(tasks) do
    local r = t.session:result()
    r.interleave = { order = order, seed = seed, position = i, tasks = #tasks }
    if r.used then r.used.interleave = r.interleave end
    results[names[i]] = r
  end
  return { order = order, seed = seed, rounds = rounds, results = results, sequence = sequence,
    names = names }
end

return M
