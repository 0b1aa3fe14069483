-- scripts/launch_overhead_user.lua's two designs (docs/MEASUREMENT.md E4 and E4b), on the cpu
-- backend with --dry-run: which batch runs when. The numbers of a dry run mean nothing; the
-- order of the batches in its --out CSV is what E4b changes, so that is what is checked.
local sub = require 'helpers.subprocess'

local PATHS = { c = true, reused = true, inline = true, pack = true }

local function run(interleave, dir)
  local out = dir .. '/' .. interleave .. '.csv'
  local r = sub.run({ sub.root() .. '/scripts/launch_overhead_user.lua', '--dry-run', '--rounds', '5', '--batches', '3',
    '--per', '4', '--seed', '7', '--interleave', interleave, '--out', out }, { env = { KLUABENCH_BACKEND = 'cpu' } })
  assert.equal(0, r.code, r.err)
  local rows = {}
  for line in sub.slurp(out):gmatch('[^\n]+') do
    local round, pos, path, batch = line:match('^(%d+),(%d+),(%a+),(%d+),[%d.]+$')
    if round then rows[#rows + 1] = { round = tonumber(round), pos = tonumber(pos), path = path, batch = tonumber(batch) } end
  end
  assert.equal(5 * 4 * 3, #rows)
  return rows, r.out
end

describe('scripts/launch_overhead_user.lua --dry-run', function()
  local dir
  setup(function() dir = sub.tmpdir() end)
  teardown(function() os.execute('rm -rf ' .. sub.q(dir)) end)

  it('block (E4): each path runs its batches back to back, the paths in a shuffled order per round', function()
    local rows, out = run('block', dir)
    assert.matches('a block per path, order shuffled per round, seed 7', out, 1, true)
    local orders = {}
    for i, row in ipairs(rows) do
      local k = (i - 1) % 12 -- 12 batches a round
      assert.equal((i - 1) // 12 + 1, row.round)
      assert.equal(k // 3 + 1, row.pos)
      assert.equal(k % 3 + 1, row.batch)
      assert.is_true(PATHS[row.path], row.path)
      if k % 3 > 0 then assert.equal(rows[i - 1].path, row.path) end
      if k % 3 == 0 then orders[#orders + 1] = row.path end
    end
    local distinct = {}
    for r = 0, 4 do distinct[table.concat(orders, ',', 4 * r + 1, 4 * r + 4)] = true end
    assert.is_true(next(distinct, next(distinct)) ~= nil, 'the same order in every round')
  end)

  it('batch (E4b): every turn runs one batch of each path, in an order shuffled per turn', function()
    local rows, out = run('batch', dir)
    assert.matches('batches in turns, order shuffled per turn, seed 7', out, 1, true)
    local turns = {}
    for i, row in ipairs(rows) do
      local k = (i - 1) % 12
      assert.equal((i - 1) // 12 + 1, row.round)
      assert.equal(k // 4 + 1, row.batch)
      assert.equal(k % 4 + 1, row.pos)
      local t = (i - 1) // 4 + 1
      turns[t] = turns[t] or {}
      assert.is_nil(turns[t][row.path], 'a path twice in one turn')
      turns[t][row.path] = k % 4 + 1
    end
    local firsts = {}
    for _, turn in ipairs(turns) do
      for path, pos in pairs(turn) do if pos == 1 then firsts[path] = true end end
    end
    local n = 0
    for _ in pairs(firsts) do n = n + 1 end
    assert.is_true(n >= 2, 'one path first in every turn')
  end)

  it('--direct adds a fifth path, reported and not judged, to every turn; the host line says where it ran', function()
    local out = dir .. '/direct.csv'
    local r = sub.run({ sub.root() .. '/scripts/launch_overhead_user.lua', '--dry-run', '--direct', '--rounds', '5',
      '--batches', '3', '--per', '4', '--seed', '7', '--interleave', 'batch', '--out', out },
      { env = { KLUABENCH_BACKEND = 'cpu' } })
    assert.equal(0, r.code, r.err)
    local per_turn = {}
    for line in sub.slurp(out):gmatch('[^\n]+') do
      local round, path, batch = line:match('^(%d+),%d+,(%a+),(%d+),[%d.]+$')
      if round then
        local key = round .. '/' .. batch
        per_turn[key] = per_turn[key] or {}
        assert.is_nil(per_turn[key][path], 'a path twice in one turn')
        per_turn[key][path] = true
      end
    end
    local turns = 0
    for _, paths in pairs(per_turn) do
      turns = turns + 1
      for _, k in ipairs { 'c', 'reused', 'inline', 'pack', 'direct' } do assert.is_true(paths[k], k) end
    end
    assert.equal(5 * 3, turns)
    assert.matches('| kernel:launch(opts) in the loop itself, one table reused (reported, not judged) |', r.out, 1, true)
    local cpus, rounds = r.out:match('host: cpus allowed (%S+); on cpu (%S+) at the end of each round')
    assert.truthy(cpus, r.out)
    assert.equal(5, select(2, rounds:gsub('%d+', '')))
  end)

  it('refuses an unknown design (exit 2)', function()
    local r = sub.run({ sub.root() .. '/scripts/launch_overhead_user.lua', '--dry-run', '--interleave', 'rounds' },
      { env = { KLUABENCH_BACKEND = 'cpu' } })
    assert.equal(2, r.code)
    assert.matches("--interleave must be 'block' or 'batch', got 'rounds'", r.err, 1, true)
  end)
end)
