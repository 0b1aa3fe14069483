-- bench/rope_small_table.py, the rule that judges issue 25's targets, on the CPU: our bundles
-- from the cpu backend (providers fused and floor at one point), Liger's CSV rows written here,
-- and the kernel-time and compare files of a call, each made to pass and then to fail. Needs
-- python3; the GPU machine runs the measurements (bench/rope_small.sh).
local sub = require 'helpers.subprocess'
local util = require 'helpers.util'

local ROOT = sub.root()
local q = sub.q
local HAVE_PY = select(2, util.run('python3 -c "import sys; sys.exit(sys.version_info < (3, 8))" 2>/dev/null')) == 0

local HEADER = 'kernel_name,kernel_provider,kernel_operation_mode,metric_name,metric_unit,x_name,x_label,'
  .. 'x_value,y_value_50,y_value_20,y_value_80,extra_benchmark_config_str,gpu_name,timestamp,liger_version\n'

-- One Liger CSV row of llama4_rope at hidden 512, seq 2048 (the hidden sweep) in ms.
local function liger_row(mode, ms)
  return string.format('llama4_rope,liger,%s,speed,ms,H,hidden size,512,%.9g,%.9g,%.9g,'
    .. '"{""dtype"": ""torch.bfloat16"", ""seq_len"": 2048, ""num_q_heads"": 32, ""num_kv_heads"": 8}",'
    .. 'NVIDIA H200,2026-12-03 00:00:00,0.8.5\n', mode, ms, ms, ms)
end

-- The fused and floor medians (ms) of our bundles at that point, forward.
local function medians(path)
  local out = {}
  for line in io.lines(path) do
    -- the provider is the third part of the run's externalId (kernel/mode/provider/...)
    local provider = line:match('"externalId":"llama4_rope/%a+/(%a+)/')
    local mode = line:match('"benchmark":"llama4_rope/(%a+)"')
    local ms = tonumber(line:match('"ms_50":([%d%.e%-]+)'))
    if mode == 'forward' and provider then out[provider] = ms end
  end
  return out
end

-- The table's row of llama4_rope H 512 2048 forward, as cells.
local function row_of(text)
  for l in text:gmatch('[^\n]+') do
    if l:find('| llama4_rope | H | 512 | 2048 | forward |', 1, true) then
      local c = {}
      for cell in l:gmatch('|%s*([^|]-)%s*%f[|]') do c[#c + 1] = cell end
      return c
    end
  end
end

local function verdict(text, key)
  return text:match('\n%- ' .. key:gsub("'", "%%'") .. ': ([^\n]*)')
end

describe('bench/rope_small_table.py', function()
  if not HAVE_PY then
    pending('python3 (3.8 or later) is not installed')
    return
  end
  local dir, ours
  setup(function()
    dir = sub.tmpdir()
    local r = sub.run({ '--backend', 'cpu', '--quiet', ROOT .. '/scripts/llama4_rope.lua', '--hidden', '512',
      '--seq', '2048', '--mode', 'forward', '--provider', 'fused,floor', '--rep-ms', '1', '--warmup-ms', '1',
      '--format', 'jsonl', '--out', dir .. '/ours_llama4_rope.jsonl' })
    assert(r.code == 0, r.err)
    ours = medians(dir .. '/ours_llama4_rope.jsonl')
    assert(ours.fused and ours.floor, 'our bundles hold fused and floor')
  end)
  teardown(function() os.execute('rm -rf ' .. q(dir)) end)

  local function judge()
    local text, code = util.run('cd ' .. q(ROOT) .. ' && python3 bench/rope_small_table.py ' .. q(dir) .. ' 2>&1')
    assert.equal(0, code, text)
    return text
  end

  it('gives ours over Liger and over the floor of the same call, and marks a miss', function()
    sub.spit(dir .. '/peers.csv', HEADER .. liger_row('forward', ours.fused * 2))
    local text = judge()
    local c = assert(row_of(text), text)
    -- kernel, sweep, H, T, mode, ours us, Liger us, floor us, ours/Liger, spread, ours/floor, ...
    assert.near(0.5, tonumber(c[9]), 0.001)
    assert.near(ours.fused / ours.floor, tonumber((c[11]:match('^[%d%.]+'))), 0.001)
    assert.equal(ours.fused / ours.floor > 1.05, c[11]:find('**x**', 1, true) ~= nil)
    -- 47 cells have no Liger time: the verdict says so rather than met
    assert.matches('NOT MET %(47 cells missing%)', verdict(text, 'A'))

    sub.spit(dir .. '/peers.csv', HEADER .. liger_row('forward', ours.fused / 2))
    c = row_of(judge())
    assert.near(2.0, tonumber((c[9]:match('^[%d%.]+'))), 0.001)
    assert.truthy(c[9]:find('**x**', 1, true))
  end)

  it('judges the one-launch full by the kernels per call that kb.trace counted', function()
    local head = 'kernel,point,mode,provider,event_median_us,event_minus_pair_us,kernel_median_us,kernels_per_call\n'
    sub.spit(dir .. '/kernel_times.csv', head .. 'llama4_rope,H512_T2048,full,fused,9.1,7.8,6.1,1.0\n'
      .. 'rope,H512_T2048,full,fused,8.7,7.4,5.9,1.0\n')
    assert.equal('met (2 traced cells)', verdict(judge(), 'C'))
    sub.spit(dir .. '/kernel_times.csv', head .. 'llama4_rope,H512_T2048,full,fused,12.1,10.8,9.1,2.0\n')
    assert.equal('NOT MET (1 traced cells)', verdict(judge(), 'C'))
  end)

  it('judges the large shapes by compare and says when there was none', function()
    os.remove(dir .. '/compare_llama4_rope.txt')
    assert.matches('^not run here', verdict(judge(), 'D'))
    sub.spit(dir .. '/compare_llama4_rope.txt', 'llama4_rope forward x fused 3/3 1 1 +0.1% -1%..+1% 0.5 SAME\n')
    assert.equal('met (1 compares)', verdict(judge(), 'D'))
    sub.spit(dir .. '/compare_llama4_rope.txt', 'llama4_rope forward x fused 3/3 1 1.2 +20% +18%..+22% 0 SLOWER\n')
    assert.equal('NOT MET (1 compares)', verdict(judge(), 'D'))
  end)

  -- ncu --csv rows as rope_small.sh writes them: ours in bench/rope_kernel_times.lua's launch order
  -- (2 kernels x 3 points x 3 modes x (fused, floor), a warm-up and 5 calls each), Liger in
  -- rope_peers_graph.py's (the warm-up, the forward a backward needs, full's two kernels).
  local function ncu_csv(rows)
    local out = { '"ID","Kernel Name","Metric Name","Metric Unit","Metric Value"' }
    for i, r in ipairs(rows) do
      out[#out + 1] = string.format('"%d","%s","gpu__time_duration.sum","ns","%d"', i - 1, r[1], r[2])
    end
    return table.concat(out, '\n') .. '\n'
  end
  local function ours_ncu(ns)
    local rows = {}
    for _ = 1, 2 * 3 * 3 do
      for _, kernel in ipairs { 'rope_flat_kernel', 'rope_floor_kernel' } do
        for _ = 1, 6 do rows[#rows + 1] = { kernel, ns } end
      end
    end
    return ncu_csv(rows)
  end
  local function liger_ncu(ns)
    local rows = {}
    for _ = 1, 2 * 3 do
      for _, mode in ipairs { 'forward', 'backward', 'full' } do
        local per = mode == 'full' and 2 or 1
        local n = 6 * per + (mode == 'backward' and 1 or 0)
        for _ = 1, n do rows[#rows + 1] = { '_triton_rope', ns // per } end
      end
    end
    return ncu_csv(rows)
  end

  it("judges A'f from the kernel times after ncu's flush, apart from A'", function()
    sub.spit(dir .. '/ncu_ours.csv', ours_ncu(8000))
    sub.spit(dir .. '/ncu_liger.csv', liger_ncu(7000))
    sub.spit(dir .. '/ncu_ours_flush.csv', ours_ncu(7000))
    sub.spit(dir .. '/ncu_liger_flush.csv', liger_ncu(8000))
    local text = judge()
    assert.equal('NOT MET (18 cells)', verdict(text, "A'"))
    assert.equal('met (18 cells)', verdict(text, "A'f"))
    -- the kernel-time table gives both pairs: 8.00 / 7.00 without the flush, 7.00 / 8.00 after it
    assert.truthy(text:find('| 8.00 | 7.00 | 7.00 | 8.00 |', 1, true), text)
    sub.spit(dir .. '/ncu_liger_flush.csv', liger_ncu(6000))
    assert.equal('NOT MET (18 cells)', verdict(judge(), "A'f"))
    for _, f in ipairs { 'ncu_ours.csv', 'ncu_liger.csv', 'ncu_ours_flush.csv', 'ncu_liger_flush.csv' } do
      os.remove(dir .. '/' .. f)
    end
  end)

  it("says that kernel times were not measured when no ncu rows are there", function()
    os.remove(dir .. '/ncu_ours.csv')
    local text = judge()
    assert.matches('^not measured', verdict(text, "A'"))
    assert.matches('^not measured', verdict(text, "A'f"))
  end)
end)
