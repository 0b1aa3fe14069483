-- Energy per call and the clocks over the same windows (issue 26):
-- measure/energy.lua on a fake NVML whose counter steps every 100 ms of a fake
-- clock, kb.nvml.energy against a fake libnvidia-ml.so.1
-- (tests/helpers/fake_nvml.c), the records and the table with --metrics
-- energy, and what the cpu backend says.
local energy = require 'kluabench.measure.energy'
local sub = require 'helpers.subprocess'
local util = require 'helpers.util'

local ROOT = sub.root()

-- A device on a fake clock: fn() advances it by call_ns and burns watts; the
-- counter (mJ) moves only every step_ms, as the H200's does; reasons(t_ns)
-- gives the throttle reasons read at a time.
local function device(o)
  local t, joules = 0, 0
  local d = { calls = 0 }
  local function tick(ns)
    t = t + ns
    joules = joules + o.watts * ns / 1e9
  end
  d.fn = function() d.calls = d.calls + 1; tick(o.call_ns) end
  d.kb = { clock_ns = function() return t end, synchronize = function() tick(o.sync_ns or 2000) end }
  d.nvml = {
    available = function() return true end,
    energy = function()
      local step = o.step_ms * 1e6
      local at = math.floor(t / step) * step -- the counter shows the energy at its last step
      return math.floor(joules * 1000 - o.watts * (t - at) / 1e6), t
    end,
    sample = function()
      return { sm_mhz = o.sm or 1980, throttle = o.reasons and o.reasons(t) or {} }
    end,
  }
  return d
end

describe('energy.measure: windows opened and closed on the counter\'s steps', function()
  it('finds the joules per call of a steady 400 W kernel within 2 %, with the power and clocks', function()
    local d = device { watts = 400, call_ns = 500e3, step_ms = 100 } -- 0.2 J a call, as the issue's 1 GiB copy
    local e = energy.measure(d.fn, { nvml = d.nvml, kb = d.kb, backend = 'cuda', call_ms = 0.5 })
    assert.is_true(e.available)
    assert.equal(3, #e.windows)
    assert.equal(3, e.kept)
    assert.near(0.2, e.joules_per_call.median, 0.2 * 0.02)
    assert.is_true(e.joules_per_call.min <= e.joules_per_call.median and e.joules_per_call.median <= e.joules_per_call.max)
    assert.near(400, e.watts.median, 400 * 0.02)
    assert.equal(1980, e.sm_mhz.median)
    assert.equal(20, e.batch) -- 10 ms of 0.5 ms calls
    for _, w in ipairs(e.windows) do
      assert.is_true(w.seconds >= 1, w.seconds) -- at least window_ms, closed on a step
      assert.is_false(w.throttled)
    end
  end)

  it('a naive reading over less than a step sees no energy at all; the aligned windows see it all', function()
    local d = device { watts = 406, call_ns = 500e3, step_ms = 100 }
    for _ = 1, 30 do d.fn() end -- start between two steps
    local e0 = d.nvml.energy()
    for _ = 1, 160 do d.fn() end -- 80 ms: the counter has not moved
    assert.equal(e0, (d.nvml.energy()))
    local e = energy.measure(d.fn, { nvml = d.nvml, kb = d.kb, backend = 'cuda', call_ms = 0.5 })
    assert.near(0.203, e.joules_per_call.median, 0.203 * 0.02)
  end)

  it('leaves out a window that ran under a power cap, and keeps all when every one did', function()
    local cap = function(t) return (t > 1.3e9 and t < 2.5e9) and { 'sw_power_cap' } or { 'gpu_idle' } end
    local d = device { watts = 300, call_ns = 1e6, step_ms = 100, reasons = cap }
    local e = energy.measure(d.fn, { nvml = d.nvml, kb = d.kb, backend = 'cuda', call_ms = 1 })
    local throttled = 0
    for _, w in ipairs(e.windows) do if w.throttled then throttled = throttled + 1 end end
    assert.is_true(throttled >= 1)
    assert.equal(#e.windows - throttled, e.kept)
    assert.matches('were left out', e.warnings[1], 1, true)
    local all = device { watts = 300, call_ns = 1e6, step_ms = 100, reasons = function() return { 'hw_slowdown' } end }
    local a = energy.measure(all.fn, { nvml = all.nvml, kb = all.kb, backend = 'cuda', call_ms = 1 })
    assert.is_true(a.throttled_all)
    assert.equal(3, a.kept)
    assert.matches('every window ran under a power or thermal slowdown', a.warnings[1], 1, true)
  end)

  it('says why not where there is no counter, and refuses bad options', function()
    local e = energy.measure(function() end, { backend = 'cpu' })
    assert.is_false(e.available)
    assert.matches('the cpu backend has no energy counter', e.reason, 1, true)
    local nv = { available = function() return true end, energy = function() return nil, 'Not Supported' end }
    e = energy.measure(function() end, { backend = 'cuda', nvml = nv })
    assert.is_false(e.available)
    assert.equal('Not Supported', e.reason)
    assert.has_error(function() energy.measure(function() end, { window_ms = 0 / 0 }) end,
      "bad argument #2 to 'measure' (opts.window_ms must be a positive number, got NaN)")
    local stuck = device { watts = 0, call_ns = 1e6, step_ms = 100 }
    assert.has_error(function()
      energy.measure(stuck.fn, { nvml = stuck.nvml, kb = stuck.kb, backend = 'cuda', call_ms = 1 })
    end)
  end)
end)

describe('--metrics energy on the cpu backend', function()
  it('adds the columns, n/a, and the records say why there is no energy', function()
    local dir = util.tmpdir()
    local r = sub.run { '--backend', 'cpu', ROOT .. '/scripts/llama4_rope.lua', '--metrics', 'energy', '--protocol',
      'cold', '--mode', 'forward', '--hidden', '512', '--seq', '64', '--out', dir .. '/e.jsonl' }
    assert.equal(0, r.code, r.err)
    assert.matches('mJ/call +W +SM MHz', r.out)
    assert.matches('n/a +n/a +n/a', r.out)
    local kb = require 'kluabench'
    local b = assert(kb.reader.read(dir .. '/e.jsonl'))[1]
    local e = kb.evidence.of(b).execution.energy
    assert.is_false(e.available)
    assert.matches('cpu backend', e.reason, 1, true)
    assert.is_nil(kb.result.session(b).energy_j)
    os.execute('rm -rf ' .. util.q(dir))
  end)

  it('records energy, power and the SM clock as measurements', function()
    local record = require 'kluabench.record'
    local kb = require 'kluabench'
    local b = record.from_result { kernel = 'copy', mode = 'forward', provider = 'p', parameters = { n = 1 },
      dtype = 'f32', result = { samples = { 0.5, 0.5, 0.5 }, protocol = kb.do_bench.do_bench_protocol {},
        used = { clocks = { smMhz = { median = 1980 } } },
        energy = { available = true, joules_per_call = { median = 0.2, min = 0.19, max = 0.21 },
          watts = { median = 400 } } } }
    local p = kb.result.session(b)
    assert.same({ 0.2, 0.19, 0.21, 400, 1980 }, { p.energy_j, p.energy_j_min, p.energy_j_max, p.power_w, p.sm_mhz })
    local found = {}
    for _, m in ipairs(b.run.spec.measurements) do found[m.metric .. '/' .. m.unit .. '/' .. m.statistic] = m.value end
    assert.equal(0.2, found['energy/j/median'])
    assert.equal(1980, found['sm_clock/mhz/median'])
    assert.equal(400, found['power/w/median'])
    local schema = require 'helpers.schema'
    if schema.available() then assert.same({}, schema.check(b.run)) end
  end)
end)

describe('kb.nvml.energy', function()
  local ok, kb = pcall(require, 'kluabench.core')
  local cc = ok and kb.executable and os.execute('command -v cc >/dev/null 2>&1')
  local nvml_it = cc and it or pending
  local dir
  setup(function()
    if not cc then return end
    dir = util.tmpdir()
    assert(os.execute(string.format('cc -shared -fPIC -o %s/libnvidia-ml.so.1 %s', dir,
      util.q(ROOT .. '/tests/helpers/fake_nvml.c'))))
  end)
  teardown(function() if dir then os.execute('rm -rf ' .. util.q(dir)) end end)

  local function run(env, code)
    util.spit(dir .. '/probe.lua', code)
    local p = io.popen(string.format('env LD_LIBRARY_PATH=%s %s %s %s/probe.lua 2>&1', dir, env, kb.executable(), dir))
    local out = p:read('a')
    p:close()
    return out
  end

  nvml_it('reads the counter in mJ with the host clock, and says when it is not supported', function()
    local out = run('FAKE_NVML_ENERGY=5000 FAKE_NVML_ENERGY_STEP=7', [[
      local nv = require('kluabench').nvml
      local a, t = nv.energy()
      local b = nv.energy(0)
      print(a, b, math.type(t))
      print(nv.energy(4))
    ]])
    assert.equal('5000\t5007\tinteger\nnil\tnvmlDeviceGetHandleByIndex_v2(device 4): Invalid Argument\n', out)
    out = run('FAKE_NVML_ENERGY=unsupported', 'print(require("kluabench").nvml.energy())')
    assert.equal('nil\tnvmlDeviceGetTotalEnergyConsumption(device 0): Not Supported\n', out)
  end)
end)

describe('energy on the GPU #gpu', function()
  it('reads joules per call of a 1 GiB copy over aligned windows, with the power and the SM clock', function()
    local kb = require 'kluabench'
    local n = (1 << 30) // 4
    local src, dst = kb.empty({ n }, 'f32'):fill_(1.5), kb.empty({ n }, 'f32')
    local e = energy.measure(function() dst:copy_(src) end, { window_ms = 500 })
    src:free()
    dst:free()
    assert.is_true(e.available, e.reason)
    assert.equal(3, #e.windows)
    -- 2 GiB moved a call at 100 to 1000 W and 2 to 5 TB/s: 0.04 to 1 J
    assert.is_true(e.joules_per_call.median > 0.04 and e.joules_per_call.median < 1, e.joules_per_call.median)
    assert.is_true(e.watts.median > 50 and e.watts.median < 1000, e.watts.median)
    assert.is_true(e.sm_mhz.median > 0)
    for _, w in ipairs(e.windows) do assert.is_true(w.seconds >= 0.5, w.seconds) end
  end)
end)
