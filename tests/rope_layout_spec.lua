-- bench/rope_layout_table.py, the rule of "In place or out of place" (docs/perf-notes.md, issue
-- 25), on synthetic ncu CSVs in the launch orders of bench/rope_layout_gpu.sh: each verdict made
-- to come out, and a file with the wrong launch count refused. Needs python3.
local sub = require 'helpers.subprocess'
local util = require 'helpers.util'

local ROOT = sub.root()
local q = sub.q
local HAVE_PY = select(2, util.run('python3 -c "import sys; sys.exit(sys.version_info < (3, 8))" 2>/dev/null')) == 0

local function ncu_csv(rows)
  local out = { '==PROF== Connected to process', 'point,style,mode,variant,median_us,p20_us,p80_us,check',
    '"ID","Kernel Name","Metric Name","Metric Unit","Metric Value"' }
  for i, r in ipairs(rows) do
    out[#out + 1] = string.format('"%d","%s","gpu__time_duration.sum","ns","%s"', i - 1, r[1], r[2])
  end
  return table.concat(out, '\n') .. '\n'
end

-- rope_tune --rows prod --samples 10: forward and backward rows of 15 launches (a reference, the
-- check, 3 warm-ups, 10 samples; the first five slower, so that taking them would show), the
-- floor's 14. fwd, bwd, floor: ns of the samples.
local function ours(fwd, bwd, floor)
  local rows = {}
  for _, r in ipairs { { 'void rope_flat_kernel<0>(FlatGeom)', fwd, 15 }, { 'void rope_flat_kernel<2>(FlatGeom)', bwd, 15 },
    { 'void rope_floor_kernel<16>(FloorGeom)', floor, 14 } } do
    for i = 1, r[3] do rows[#rows + 1] = { r[1], i <= r[3] - 10 and r[2] * 3 or r[2] } end
  end
  return ncu_csv(rows)
end

-- rope_peers_graph.py --what ncu --calls 10 for one cell: a backward's forward and the warm-up first
local function liger(ns)
  local rows = { { '_triton_rope', 99999 }, { '_triton_rope', 99999 } }
  for _ = 1, 10 do rows[#rows + 1] = { '_triton_rope', ns } end
  return ncu_csv(rows)
end

describe('bench/rope_layout_table.py', function()
  local dir
  before_each(function()
    if not HAVE_PY then return end
    dir = sub.tmpdir()
  end)
  after_each(function() if dir then os.execute('rm -rf ' .. q(dir)) end end)

  -- ours out of place and in place (ns, the same at every cell), Liger's
  local function write(out_ns, in_ns, liger_ns)
    for _, p in ipairs { 'H2048_T2048', 'H8192_T1024' } do
      sub.spit(dir .. '/ncu_ours_' .. p .. '_out.csv', ours(out_ns, out_ns, 7000))
      sub.spit(dir .. '/ncu_ours_' .. p .. '_in.csv', ours(in_ns, in_ns, 6900))
      for _, m in ipairs { 'forward', 'backward' } do
        sub.spit(dir .. '/ncu_liger_' .. p .. '_' .. m .. '.csv', liger(liger_ns))
      end
    end
  end
  local function judge()
    local text, code = util.run('cd ' .. q(ROOT) .. ' && python3 bench/rope_layout_table.py ' .. q(dir) .. ' 2>&1')
    return text, code
  end

  it('says LAYOUT when in place is at most Liger at every cell, from the last ten launches of each row', function()
    if not HAVE_PY then return pending('python3 (3.8 or later) is not installed') end
    write(11600, 11000, 11000)
    -- the event times: c0f591e's harness wrote a comma into the variant, later ones do not
    local head = 'point,style,mode,variant,median_us,p20_us,p80_us,check\n'
    sub.spit(dir .. '/tune_H8192_T1024_out.csv', head .. 'H8192_T1024,neox,backward,fused prod, out of place,15.232,15.0,15.5,ok\n')
    sub.spit(dir .. '/tune_H8192_T1024_in.csv', head .. 'H8192_T1024,neox,backward,fused prod in place,14.784,14.6,15.0,ok\n')
    local text, code = judge()
    assert.equal(0, code, text)
    assert.matches('verdict: LAYOUT', text, 1, true)
    assert.matches('| 0.948 | 15.232 | 14.784 |', text, 1, true)
    assert.matches('| H8192_T1024 | backward | 11.60 | 11.00 | 11.00 | 1.055 | 1.000 | 0.948 |', text, 1, true)
    assert.matches('| H2048_T2048 | 7.00 | 6.90 | 0.986 |', text, 1, true)
  end)

  it('says PART when in place gains 1 % or more but stays above Liger, and NONE when it does not gain', function()
    if not HAVE_PY then return pending('python3 (3.8 or later) is not installed') end
    write(11600, 11400, 11000)
    assert.matches('verdict: PART', (judge()), 1, true)
    write(11600, 11550, 11000)
    assert.matches('verdict: NONE', (judge()), 1, true)
  end)

  it('refuses a run whose launch count is not the harness\'s', function()
    if not HAVE_PY then return pending('python3 (3.8 or later) is not installed') end
    write(11600, 11000, 11000)
    sub.spit(dir .. '/ncu_ours_H2048_T2048_in.csv', ncu_csv { { 'void rope_flat_kernel<0>(FlatGeom)', 1000 } })
    local text, code = judge()
    assert.are_not.equal(0, code)
    assert.matches('1 rope launches, expected 44', text, 1, true)
  end)
end)
