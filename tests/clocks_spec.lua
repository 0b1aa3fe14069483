-- GPU clocks: kb.nvml (engine/os/nvml.c, against a fake libnvidia-ml.so.1
-- built from tests/helpers/fake_nvml.c) and the monitor that judges samples
-- (clocks.lua, against a fake NVML table).
local clocks = require 'kluabench.measure.clocks'

-- A fake kb.nvml whose quick readings follow `seq` (list of {sm, reasons}).
local function fake_nvml(seq, info)
  local i = 0
  return {
    available = function() return true end,
    info = function() return info or { app_sm_mhz = 1980, default_app_sm_mhz = 1980 } end,
    sample = function(_, kind)
      local sm, reasons = 1980, { 'gpu_idle' }
      if kind == 'quick' then
        i = i + 1
        local s = seq[math.min(i, #seq)]
        sm, reasons = s[1], s[2]
      end
      return { sm_mhz = sm, mem_mhz = 3201, temp_c = 40, power_w = 100, throttle = reasons, t_ns = 0 }
    end,
  }
end

local function monitor(nvml, extra)
  local o = { nvml = nvml, backend = 'cuda', device = 0, sleep_ms = function() end }
  for k, v in pairs(extra or {}) do o[k] = v end
  return clocks.monitor(o)
end

describe('clocks monitor', function()
  it('keeps samples on a quiet GPU and reports stable clocks', function()
    local m = monitor(fake_nvml { { 1980, { 'gpu_idle' } } })
    m:before()
    for _ = 1, 5 do assert.is_true((m:check())) end
    m:after()
    local s = m:summary()
    assert.is_true(s.available)
    assert.is_true(s.stable)
    assert.equal(1980, s.smMhz.median)
    assert.equal(0, s.droppedSamples)
    assert.is_false(s.locked)
    assert.matches('clocks not locked', s.warnings[1], 1, true)
  end)

  it('drops power and thermal slowdowns, not idle or clock settings', function()
    assert.same({}, clocks.drop_reasons_of { throttle = { 'gpu_idle', 'applications_clocks_setting' } })
    assert.same({ 'sw_power_cap', 'hw_thermal_slowdown' },
      clocks.drop_reasons_of { throttle = { 'sw_power_cap', 'gpu_idle', 'hw_thermal_slowdown' } })
    local m = monitor(fake_nvml { { 1980, {} }, { 1500, { 'sw_power_cap' } }, { 1980, {} } })
    assert.is_true((m:check()))
    local ok, why = m:check()
    assert.is_false(ok)
    assert.equal('sw_power_cap', why)
    assert.is_true((m:check()))
    local s = m:summary()
    assert.equal(1, s.droppedSamples)
    assert.is_false(s.stable)
    assert.matches('SM clock not stable: 1500-1980 MHz', s.warnings[1], 1, true)
  end)

  it('stops dropping after max_drops so that a run always ends', function()
    local m = monitor(fake_nvml { { 1400, { 'hw_slowdown' } } }, { max_drops = 2 })
    assert.is_false((m:check()))
    assert.is_false((m:check()))
    assert.is_true((m:check()))
    assert.equal(1, m:summary().throttledSamplesKept)
  end)

  it('tells locked clocks from the settings and the reasons', function()
    assert.is_true((clocks.locked_state({ app_sm_mhz = 1500, default_app_sm_mhz = 1980 }, {}, {})))
    assert.is_true((clocks.locked_state({}, { applications_clocks_setting = true }, {})))
    assert.is_false((clocks.locked_state({ app_sm_mhz = 1980, default_app_sm_mhz = 1980 }, {}, { 1980 })))
    assert.is_nil((clocks.locked_state(nil, {}, {})))
    local m = monitor(fake_nvml({ { 1500, { 'applications_clocks_setting' } } },
      { app_sm_mhz = 1500, default_app_sm_mhz = 1980 }))
    m:before()
    m:check()
    local s = m:summary()
    assert.is_true(s.locked)
    assert.matches('application clocks set: SM 1500 MHz', s.lockedBasis, 1, true)
  end)

  it('maps the CUDA ordinal to NVML through CUDA_VISIBLE_DEVICES', function()
    assert.equal(0, clocks.nvml_device_for(0, nil))
    assert.equal(3, clocks.nvml_device_for(0, '3,1'))
    assert.equal(1, clocks.nvml_device_for(1, '3, 1'))
    assert.equal('GPU-abc', clocks.nvml_device_for(0, 'GPU-abc'))
    assert.equal(2, clocks.nvml_device_for(2, ''))
    assert.equal(0, clocks.nvml_device_for(0, 'MIG-x'))
  end)

  it('is inert without NVML and on the cpu backend', function()
    local m = clocks.monitor { nvml = { available = function() return false, 'no driver' end },
      backend = 'cuda' }
    assert.is_true((m:check()))
    assert.same({ available = false, reason = 'no driver' }, m:summary())
    local c = clocks.monitor { nvml = fake_nvml { { 1, {} } }, backend = 'cpu' }
    assert.is_false(c.available)
  end)

  it('survives NVML errors and says so', function()
    local nv = fake_nvml { { 1980, {} } }
    local calls = 0
    nv.sample = function() calls = calls + 1; return nil, 'nvmlDeviceGetClockInfo(SM)(device 0): GPU is lost' end
    local m = monitor(nv)
    for _ = 1, 6 do assert.is_true((m:check())) end
    assert.equal(5, calls) -- gives up after five failures
    local s = m:summary()
    assert.matches('GPU is lost', s.reason)
  end)
end)

describe('kb.nvml', function()
  local ok, kb = pcall(require, 'kluabench.core')
  local has = ok and type(kb.nvml) == 'table' and kb.executable
  local cc = has and os.execute('command -v cc >/dev/null 2>&1')
  local nvml_it = cc and it or pending
  local dir

  local function fake_run(env, code)
    local script = dir .. '/probe.lua'
    local f = assert(io.open(script, 'w'))
    f:write(code)
    f:close()
    local p = io.popen(string.format('env LD_LIBRARY_PATH=%s %s %s %s 2>&1', dir, env, kb.executable(), script))
    local out = p:read('a')
    p:close()
    return out
  end

  setup(function()
    if not cc then return end
    dir = os.tmpname()
    os.remove(dir)
    os.execute('mkdir -p ' .. dir)
    local src = debug.getinfo(1, 'S').source:match('^@(.*)/[^/]*$') .. '/helpers/fake_nvml.c'
    assert(os.execute(string.format('cc -shared -fPIC -o %s/libnvidia-ml.so.1 %s', dir, src)))
  end)

  teardown(function()
    if dir then os.execute('rm -rf ' .. dir) end
  end)

  if ok and type(kb.nvml) == 'table' then
    it('answers false and a reason, or true, without raising', function()
      local avail, why = kb.nvml.available()
      assert.is_boolean(avail)
      if not avail then assert.is_string(why) end
    end)
  end

  nvml_it('samples clocks, temperature, power and throttle reasons', function()
    local out = fake_run('FAKE_NVML_REASONS=0x24', [[
      local nv = require('kluabench').nvml
      assert(nv.available())
      local s = assert(nv.sample())
      print(s.sm_mhz, s.mem_mhz, s.temp_c, s.power_w, s.throttle_mask, table.concat(s.throttle, ','),
        math.type(s.t_ns))
      local q = assert(nv.sample(0, 'quick'))
      print(q.mem_mhz, q.sm_mhz)
      local i = assert(nv.info('GPU-fake'))
      print(i.name, i.uuid, i.max_sm_mhz, i.app_sm_mhz, table.concat(i.unsupported, ','))
      print(nv.sample(3))
      print(pcall(nv.sample, -1))
    ]])
    local lines = {}
    for l in out:gmatch('[^\n]+') do lines[#lines + 1] = l end
    assert.equal('1980\t3201\t41\t123.456\t36\tsw_power_cap,sw_thermal_slowdown\tinteger', lines[1], out)
    assert.equal('nil\t1980', lines[2])
    assert.equal('Fake H200\tGPU-fake\t1980\t1980\tboost_max_sm_mhz', lines[3])
    assert.equal('nil\tnvmlDeviceGetHandleByIndex_v2(device 3): Invalid Argument', lines[4])
    assert.matches('device index must be >= 0', lines[5], 1, true)
  end)

  nvml_it('leaves an unsupported field out and lists it', function()
    local out = fake_run('FAKE_NVML_POWER=unsupported', [[
      local s = assert(require('kluabench').nvml.sample())
      print(s.power_w, table.concat(s.unsupported, ','))
    ]])
    assert.equal('nil\tpower_w\n', out)
  end)

  nvml_it('reports a failed initialisation as unavailable, with NVML\'s words', function()
    local out = fake_run('FAKE_NVML_INIT=9', [[
      local nv = require('kluabench').nvml
      print(nv.available())
      print(nv.sample())
    ]])
    assert.equal('false\tnvmlInit_v2: Driver Not Loaded\nnil\tnvmlInit_v2: Driver Not Loaded\n', out)
  end)
end)

describe('kb.nvml on the GPU machine #gpu', function()
  it('reads the real clocks, or says why it cannot', function()
    local nv = require('kluabench').nvml
    local ok, why = nv.available()
    assert.is_true(ok, why)
    local s = assert(nv.sample())
    assert.is_true(s.sm_mhz > 0 and s.mem_mhz > 0)
    assert.is_table(s.throttle)
    local i = assert(nv.info())
    assert.matches('^GPU%-', i.uuid)
    assert.is_true(i.max_sm_mhz >= s.sm_mhz)
  end)
end)
