--- Shards of a sweep: which points one process of N measures (docs/DISTRIBUTED.md). A point {id, cost} is never
-- split. Greedy longest-processing-time on the ids and costs alone, so every process and every run computes the same
-- shards: no shard carries more than total/N + max cost.
local M = {}
local args = require 'kluabench.util.args'

--- The most shards a sweep is split into: each is a process, and the split keeps a figure per shard.
M.MAX_SHARDS = 4096

-- Raises "bad argument #argn to 'shard.fn' (why)" at the caller of the public function.
local function fail(fn, argn, fmt, ...)
  error(string.format("bad argument #%d to 'shard.%s' (" .. fmt .. ')', argn, fn, ...), 4)
end

--- Reads "I/N" (1 <= I <= N <= shard.MAX_SHARDS); a bad spec gives nil and a message naming it.
-- @signature shard.parse(spec) -> i, n | nil, message
-- @example
--   local i, n = shard.parse("2/3")
--   assert(i == 2 and n == 3)
--   assert(shard.parse("4/3") == nil)
function M.parse(s)
  args.check('shard.parse', 1, s, 'string|nil', 'shard text "I/N"')
  if type(s) ~= 'string' then
    return nil, string.format("bad shard %s: expected a string I/N, such as 1/4", tostring(s))
  end
  local i, n = s:match('^(%d+)/(%d+)$')
  if not i then
    return nil, string.format("bad shard '%s': expected I/N with whole numbers 1 <= I <= N, such as 1/4", s)
  end
  local digits = n
  i, n = math.tointeger(tonumber(i)), math.tointeger(tonumber(n))
  if n and n < 1 then return nil, string.format("bad shard '%s': the shard count N must be at least 1", s) end
  if not n or n > M.MAX_SHARDS or #digits > 10 then
    return nil, string.format("bad shard '%s': the shard count N must be at most %d", s, M.MAX_SHARDS)
  end
  if not i or i < 1 or i > n then
    return nil, string.format("bad shard '%s': the shard number I must be between 1 and N = %d", s, n)
  end
  return i, n
end

--- The spec of shard i of n, as --shard takes it.
-- @signature shard.format(i, n) -> "i/n"
-- @example
--   assert(shard.format(1, 4) == "1/4")
function M.format(i, n)
  args.check('shard.format', 1, i, 'integer', 'shard index')
  args.check('shard.format', 2, n, 'integer', 'shard count')
  return string.format('%d/%d', i, n)
end

local function check_points(fn, points)
  if type(points) ~= 'table' then fail(fn, 1, 'points: list expected, got %s', type(points)) end
  local seen = {}
  for k, p in ipairs(points) do
    if type(p) ~= 'table' then fail(fn, 1, 'point %d: table expected, got %s', k, type(p)) end
    if type(p.id) ~= 'string' then fail(fn, 1, 'point %d: id must be a string, got %s', k, type(p.id)) end
    local c = p.cost
    if type(c) ~= 'number' or c ~= c or c < 0 or c == math.huge then
      fail(fn, 1, "point %d ('%s'): cost must be a finite number >= 0, got %s", k, p.id, tostring(c))
    end
    if seen[p.id] then fail(fn, 1, "point %d has the id '%s' of point %d; ids must be unique", k, p.id, seen[p.id]) end
    seen[p.id] = k
  end
end

local function check_count(fn, argn, n)
  if math.type(n) ~= 'integer' or n < 1 then
    fail(fn, argn, 'shard count: integer >= 1 expected, got %s', tostring(n))
  end
  if n > M.MAX_SHARDS then fail(fn, argn, 'shard count: at most %d (shard.MAX_SHARDS), got %d', M.MAX_SHARDS, n) end
end

-- LPT: points by cost, largest first (ties by id, then position), each to the least loaded shard.
local function assign(points, n)
  local order = {}
  for k = 1, #points do order[k] = k end
  table.sort(order, function(a, b)
    local pa, pb = points[a], points[b]
    if pa.cost ~= pb.cost then return pa.cost > pb.cost end
    if pa.id ~= pb.id then return pa.id < pb.id end
    return a < b
  end)
  local load = {}
  for s = 1, n do load[s] = 0 end
  local where = {}
  for _, k in ipairs(order) do
    local best = 1
    for s = 2, n do
      if load[s] < load[best] then best = s end
    end
    where[k] = best
    load[best] = load[best] + points[k].cost
  end
  return where
end

local function plan(points, n)
  local where = assign(points, n)
  local shards, cost = {}, {}
  for s = 1, n do shards[s], cost[s] = {}, 0 end
  for k, p in ipairs(points) do
    local s = where[k]
    shards[s][#shards[s] + 1] = p
    cost[s] = cost[s] + p.cost
  end
  return shards, cost
end

--- The shard number (1..n) of every point, a list parallel to points.
-- @signature shard.assign(points, n) -> {shard, ...}
-- @example
--   local where = shard.assign({{id = "a", cost = 2}, {id = "b", cost = 1}}, 2)
--   assert(where[1] == 1 and where[2] == 2)
function M.assign(points, n)
  check_points('assign', points)
  check_count('assign', 2, n)
  return assign(points, n)
end

--- All n shards (lists of points in declaration order, possibly empty) and the total cost of each.
-- @signature shard.plan(points, n) -> shards, costs
-- @example
--   local shards, costs = shard.plan({{id = "a", cost = 2}, {id = "b", cost = 1}, {id = "c", cost = 1}}, 2)
--   assert(costs[1] == 2 and costs[2] == 2 and #shards[2] == 2)
function M.plan(points, n)
  check_points('plan', points)
  check_count('plan', 2, n)
  return plan(points, n)
end

--- The points of shard i of n, in declaration order (possibly none); points: {id, cost >= 0}, ids unique. The same
-- ids and costs give the same shards in every process, whatever their order.
-- @signature shard.select(points, i, n) -> points
-- @example
--   local pts = {{id = "seq1024", cost = 4e6}, {id = "seq2048", cost = 8e6}, {id = "seq4096", cost = 16e6}}
--   local mine = shard.select(pts, 1, 2)
--   assert(#mine == 1 and mine[1].id == "seq4096")
function M.select(points, i, n)
  check_points('select', points)
  check_count('select', 3, n)
  if math.type(i) ~= 'integer' or i < 1 or i > n then
    error(string.format("bad argument #2 to 'shard.select' (shard number between 1 and %d expected, got %s)",
      n, tostring(i)), 2)
  end
  return (plan(points, n))[i]
end

return M
