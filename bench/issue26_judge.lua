-- Judges the outputs of issue 26's GPU runs by the rules docs/MEASUREMENT.md pre-registered (E1, E2, E3, E6, E7): one line per rule, "NAME: PASS|FAIL: why".
--
--   kluabench bench/issue26_judge.lua aa COMPARE.json...       E1: no FASTER or SLOWER in any A/A
--   kluabench bench/issue26_judge.lua ab PLUS2.json PLUS5.json  E2: +5 % SLOWER at every size, its
--                                                               change in [+3 %, +7 %]; no FASTER
--   kluabench bench/issue26_judge.lua ncu REPORT.md             E3: every point of the report PASS
--   kluabench bench/issue26_judge.lua energy RECORDS.jsonl      E6: energy > 0 with its interval,
--                                                               the SM clock, 50 W <= power <= 700 W
--   kluabench bench/issue26_judge.lua memory RECORDS.jsonl      E7: the peak >= the inputs' bytes,
--                                                               equal in every session
--
-- COMPARE.json is `kluabench compare --format json` output. Exit status 0 when
-- every rule judged passes, 1 when one fails, 2 on misuse or unreadable input.
local kb = require 'kluabench'
local output = require 'kluabench.report'

local function die(fmt, ...)
  io.stderr:write('issue26_judge.lua: ', string.format(fmt, ...), '\n')
  os.exit(2)
end

local function read_json(path)
  local text = output.read_file(path) or die('cannot read %s', path)
  local v, err = output.decode(text)
  if type(v) ~= 'table' then die('%s: %s', path, tostring(err)) end
  return v
end

local function read_bundles(path)
  local b, err = kb.reader.read(path)
  if not b then die('%s', tostring(err)) end
  return b
end

local failed = false
local function verdict(name, ok, fmt, ...)
  if not ok then failed = true end
  print(string.format('%s: %s: %s', name, ok and 'PASS' or 'FAIL', string.format(fmt, ...)))
end

local function counts_of(result)
  local c = {}
  for _, p in ipairs(result.points or {}) do c[p.verdict] = (c[p.verdict] or 0) + 1 end
  return c
end

local function counts_text(c)
  local parts = {}
  for _, v in ipairs { 'FASTER', 'SAME', 'SLOWER', 'UNSURE' } do
    if c[v] then parts[#parts + 1] = c[v] .. ' ' .. v end
  end
  return #parts > 0 and table.concat(parts, ', ') or 'no point'
end

local function median(xs)
  if #xs == 0 then return nil end
  table.sort(xs)
  local n = #xs
  return n % 2 == 1 and xs[(n + 1) // 2] or (xs[n // 2] + xs[n // 2 + 1]) / 2
end

local judges = {}

function judges.aa(files)
  if #files == 0 then die('aa needs compare outputs') end
  local false_verdicts, points, details, mdc = 0, 0, {}, {}
  for _, f in ipairs(files) do
    local r = read_json(f)
    local c = counts_of(r)
    false_verdicts = false_verdicts + (c.FASTER or 0) + (c.SLOWER or 0)
    points = points + #(r.points or {})
    for _, p in ipairs(r.points or {}) do if type(p.detectable) == 'number' then mdc[#mdc + 1] = p.detectable end end
    details[#details + 1] = f:match('[^/]*$') .. ': ' .. counts_text(c)
  end
  local m = median(mdc)
  verdict('E1 A/A', false_verdicts == 0 and points > 0, '%d FASTER or SLOWER in %d point comparisons (%s); median '
    .. '"detects" %s', false_verdicts, points, table.concat(details, '; '), m and string.format('%.2f %%', 100 * m) or 'n/a')
end

function judges.ab(files)
  if #files ~= 2 then die('ab needs the +2 %% and the +5 %% compare outputs, got %d file(s)', #files) end
  local r2, r5 = read_json(files[1]), read_json(files[2])
  local c2, c5 = counts_of(r2), counts_of(r5)
  local slower5, in_range, changes = 0, 0, {}
  for _, p in ipairs(r5.points or {}) do
    if p.verdict == 'SLOWER' then slower5 = slower5 + 1 end
    local ch = type(p.ratio) == 'number' and (p.ratio - 1) * 100 or nil
    if ch and ch >= 3 and ch <= 7 then in_range = in_range + 1 end
    changes[#changes + 1] = string.format('%s %s', p.label:match('(%S+)$') or p.label, ch and string.format('%+.1f%%', ch) or '?')
  end
  local n5 = #(r5.points or {})
  local faster = (c2.FASTER or 0) + (c5.FASTER or 0)
  verdict('E2 A/B +5 %', n5 == 4 and slower5 == n5 and in_range == n5 and faster == 0,
    '%d of %d sizes SLOWER, %d of %d changes in [+3 %%, +7 %%] (%s); %d FASTER in both comparisons', slower5, n5,
    in_range, n5, table.concat(changes, ', '), faster)
  print(string.format('E2 A/B +2 %% (reported, not judged): %s', counts_text(c2)))
end

function judges.ncu(files)
  local text = output.read_file(files[1] or '') or die('cannot read %s', tostring(files[1]))
  local pass, fail = 0, 0
  for line in text:gmatch('[^\n]+') do
    if line:match('^|') then
      if line:match('| PASS') then pass = pass + 1 elseif line:match('| FAIL') then fail = fail + 1 end
    end
  end
  verdict('E3 ncu', pass == 6 and fail == 0, '%d of %d points agree', pass, pass + fail)
end

function judges.energy(files)
  local bs = read_bundles(files[1] or die('energy needs a records file'))
  local bad, seen = {}, 0
  for _, b in ipairs(bs) do
    local p = kb.point.of(b)
    seen = seen + 1
    local why
    if not (type(p.energy_j) == 'number' and p.energy_j > 0) then
      local e = kb.evidence.of(b)
      e = e and e.execution and e.execution.energy
      why = 'no energy' .. (type(e) == 'table' and e.reason and (' (' .. tostring(e.reason) .. ')') or '')
    elseif not (type(p.energy_j_min) == 'number' and type(p.energy_j_max) == 'number') then
      why = 'no interval'
    elseif type(p.sm_mhz) ~= 'number' then
      why = 'no SM clock'
    elseif not (type(p.power_w) == 'number' and p.power_w >= 50 and p.power_w <= 700) then
      why = 'power ' .. tostring(p.power_w) .. ' W'
    end
    local label = string.format('%s %s', p.provider, p.id)
    if why then bad[#bad + 1] = label .. ': ' .. why
    else
      print(string.format('  %s: %.4f J a call (%.4f..%.4f), %.0f W, SM %.0f MHz', label, p.energy_j, p.energy_j_min,
        p.energy_j_max, p.power_w, p.sm_mhz))
    end
  end
  verdict('E6 energy', seen > 0 and #bad == 0, '%d record(s)%s', seen, #bad > 0 and ('; ' .. table.concat(bad, '; ')) or '')
end

-- The bytes of a RoPE point's inputs: q, k, their gradients (bf16) and the (cos, sin) table (f32).
local function input_bytes(params)
  local d = params.hidden // params.q_heads
  local qk = params.seq * (params.q_heads + params.kv_heads) * d * 2
  return 2 * qk + params.seq * d * 4
end

function judges.memory(files)
  local bs = read_bundles(files[1] or die('memory needs a records file'))
  local by, order = {}, {}
  for _, b in ipairs(bs) do
    local p = kb.point.of(b)
    local key = p.provider .. ' ' .. tostring(p.id)
    if not by[key] then by[key] = { p = p, mb = {} }; order[#order + 1] = key end
    table.insert(by[key].mb, p.memory_median)
  end
  local bad = {}
  for _, key in ipairs(order) do
    local g = by[key]
    local need = input_bytes(g.p.params) / (1 << 20)
    local lo, hi = math.huge, -math.huge
    for _, v in ipairs(g.mb) do
      if type(v) ~= 'number' then lo = -1 else lo, hi = math.min(lo, v), math.max(hi, v) end
    end
    print(string.format('  %s: %s MB in %d session(s); inputs %.1f MB', key, table.concat(g.mb, ', '), #g.mb, need))
    if lo < need then bad[#bad + 1] = string.format('%s below its inputs (%.1f < %.1f MB)', key, lo, need) end
    if hi ~= lo then bad[#bad + 1] = key .. ' differs between sessions' end
    if #g.mb < 2 then bad[#bad + 1] = key .. ' has one session' end
  end
  verdict('E7 memory', #order > 0 and #bad == 0, '%d provider point(s)%s', #order,
    #bad > 0 and ('; ' .. table.concat(bad, '; ')) or '')
end

local what = arg[1]
if not judges[what] then die('usage: issue26_judge.lua aa|ab|ncu|energy|memory FILES...') end
local files = {}
for i = 2, #arg do files[#files + 1] = arg[i] end
judges[what](files)
os.exit(failed and 1 or 0)
