-- Judges a run of bench/rope_tune.cu's kernel variants against the production path by a rule
-- docs/perf-notes.md registered before the run ("The flat kernel", "The token kernel").
--
--   kluabench bench/rope_flat_judge.lua [--family flat|token] [--limit X] [--styles S,...] TUNE-1.csv TUNE-2.csv ...
--
-- TUNE-i.csv: the output of one process of bench/rope_tune.cu (point, style, mode, variant,
-- median_us, p20_us, p80_us, check). A configuration is a variant of the family (its name less
-- its waves, and for the token kernel less its K, which follows from the shape). The rule, at the
-- judged cells (hidden 2048 / seq 2048 and hidden 8192 / seq 1024; the styles given, default
-- llama4 and neox; forward and full):
--   1. a configuration is eligible at a cell when its check is ok in every process;
--   2. the family is adopted when one configuration is eligible at every judged cell and its
--      median is at most LIMIT x the production path's ("fused prod", same process, same cell)
--      at every judged cell in every process. LIMIT: 0.97 for the flat kernel (its registered
--      rule), --limit for another.
-- Prints per cell the production median and the best eligible configuration (its largest ratio
-- over the processes), the configurations that pass 2 (best first, by their worst ratio), the
-- hidden 512 point (reported, not judged), and last one line "FAMILY kernel: ADOPT|REJECT: why".
-- Exit status 0 when adopted, 1 when not, 2 on misuse or unreadable input.
local csv = require 'kluabench.io.csv'
local output = require 'kluabench.report'

local JUDGED = { H2048_T2048 = true, H8192_T1024 = true }
local REPORTED = { H512_T2048 = true }
local USAGE = 'usage: kluabench bench/rope_flat_judge.lua [--family flat|token] [--limit X] [--styles S,...] '
  .. 'TUNE-1.csv TUNE-2.csv [...]'

local function die(fmt, ...)
  io.stderr:write('rope_flat_judge.lua: ', string.format(fmt, ...), '\n')
  os.exit(2)
end

local FAMILY, LIMIT, STYLES = 'flat', 0.97, { llama4 = true, neox = true }
local files = {}
local argv = { ... }
local i = 1
while i <= #argv do
  local a = argv[i]
  if a == '--family' or a == '--limit' or a == '--styles' then
    local v = argv[i + 1] or die('%s needs a value\n%s', a, USAGE)
    if a == '--family' then
      if v ~= 'flat' and v ~= 'token' then die("--family must be flat or token, got '%s'", v) end
      FAMILY = v
    elseif a == '--limit' then
      LIMIT = tonumber(v)
      if not LIMIT or LIMIT <= 0 or LIMIT > 1 then die("--limit must be a number in (0, 1], got '%s'", v) end
    else
      STYLES = {}
      for st in v:gmatch('[^,]+') do
        if st ~= 'llama4' and st ~= 'neox' then die("--styles takes llama4 and neox, got '%s'", st) end
        STYLES[st] = true
      end
    end
    i = i + 2
  elseif a:sub(1, 2) == '--' then
    die("unknown option '%s'\n%s", a, USAGE)
  else
    files[#files + 1] = a
    i = i + 1
  end
end
if #files < 2 then die('%s', USAGE) end
local NSTYLES = 0
for _ in pairs(STYLES) do NSTYLES = NSTYLES + 1 end
local NJUDGED = NSTYLES * 2 * 2

-- runs[i][cell][config] = {median = us, ok = bool}; cells "point style mode"
local runs = {}
for i, path in ipairs(files) do
  local text = output.read_file(path) or die('cannot read %s', path)
  local rows, err = csv.parse_csv(text)
  if not rows then die('%s: %s', path, err) end
  local header = table.concat(rows[1] or {}, ',')
  if header ~= 'point,style,mode,variant,median_us,p20_us,p80_us,check' then
    die("%s: not rope_tune's output (its header is '%s')", path, header)
  end
  local run = {}
  for r = 2, #rows do
    local row = rows[r]
    local median = tonumber(row[5])
    if #row ~= 8 or not median then die('%s: row %d is not point,style,...,check: %s', path, r, table.concat(row, ',')) end
    local cell = row[1] .. ' ' .. row[2] .. ' ' .. row[3]
    -- the token kernel's K follows from the shape: one configuration is its T and table
    local config = row[4]:gsub(' waves=[%d.]+$', ''):gsub('^(token .-) K=%d+$', '%1')
    run[cell] = run[cell] or {}
    run[cell][config] = { median = median, ok = row[8] == 'ok' }
  end
  runs[i] = run
end

local function judged_cell(cell, set)
  return set[cell:match('^(%S+)')] and (set == REPORTED or STYLES[cell:match('^%S+ (%S+) ')])
end

-- every cell of every process; the judged ones must be in all of them
local cells, seen = {}, {}
for _, run in ipairs(runs) do
  for cell in pairs(run) do
    local style = cell:match('^%S+ (%S+) ')
    if not seen[cell] and (judged_cell(cell, JUDGED) or judged_cell(cell, REPORTED))
        and (style == 'llama4' or style == 'neox') then
      seen[cell] = true
      cells[#cells + 1] = cell
    end
  end
end
table.sort(cells)

-- the largest ratio to fused prod over the processes, or nil when not eligible
local function worst_ratio(cell, config)
  local worst = 0
  for i, run in ipairs(runs) do
    local c = run[cell]
    if not c or not c[config] or not c['fused prod'] then return nil, 'missing in process ' .. i end
    if not c[config].ok then return nil, 'WRONG in process ' .. i end
    if not c['fused prod'].ok then return nil, 'fused prod WRONG in process ' .. i end
    worst = math.max(worst, c[config].median / c['fused prod'].median)
  end
  return worst
end

local configs, cfg_seen = {}, {}
for _, run in ipairs(runs) do
  for _, c in pairs(run) do
    for config in pairs(c) do
      if config:match('^' .. FAMILY .. ' ') and not config:match('^%a+ copy') and not cfg_seen[config] then
        cfg_seen[config] = true
        configs[#configs + 1] = config
      end
    end
  end
end
table.sort(configs)
if #configs == 0 then die('no %s configuration in %s', FAMILY, table.concat(files, ', ')) end

print(string.format('| cell | fused prod µs (process 1) | best %s configuration | its worst ratio | judged |', FAMILY))
print('|---|---:|---|---:|---|')
local judged_cells = 0
for _, cell in ipairs(cells) do
  local best, best_r
  for _, config in ipairs(configs) do
    local r = worst_ratio(cell, config)
    if r and (not best_r or r < best_r) then best, best_r = config, r end
  end
  local prod = runs[1][cell] and runs[1][cell]['fused prod']
  local judged = judged_cell(cell, JUDGED) and true or false
  if judged then judged_cells = judged_cells + 1 end
  print(string.format('| %s | %s | %s | %s | %s |', cell, prod and string.format('%.3f', prod.median) or '-',
    best or 'none eligible', best_r and string.format('%.3f', best_r) or '-', judged and 'yes' or 'reported'))
end
print('')

if judged_cells ~= NJUDGED then
  print(string.format('%s kernel: REJECT: %d of the %d judged cells are in the files', FAMILY, judged_cells, NJUDGED))
  os.exit(1)
end

local passing = {}
for _, config in ipairs(configs) do
  local worst, why = 0, nil
  for _, cell in ipairs(cells) do
    if judged_cell(cell, JUDGED) then
      local r, no = worst_ratio(cell, config)
      if not r then why = cell .. ': ' .. no; break end
      worst = math.max(worst, r)
    end
  end
  if not why and worst <= LIMIT then passing[#passing + 1] = { config = config, worst = worst } end
end
table.sort(passing, function(a, b) return a.worst < b.worst end)
for _, p in ipairs(passing) do print(string.format('passes: %s (worst ratio %.3f)', p.config, p.worst)) end
if #passing > 0 then
  print(string.format('%s kernel: ADOPT: %s is within %.2f x fused prod at all %d cells in all %d processes '
    .. '(worst %.3f)', FAMILY, passing[1].config, LIMIT, NJUDGED, #runs, passing[1].worst))
  os.exit(0)
end
print(string.format('%s kernel: REJECT: no one configuration is within %.2f x fused prod at all %d cells in all %d '
  .. 'processes', FAMILY, LIMIT, NJUDGED, #runs))
os.exit(1)
