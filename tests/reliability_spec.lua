-- Bad input never crashes kluabench and always gets a clear error: every
-- function of the engine called with wrong types and counts, freed tensors,
-- zero-sized and huge shapes, devices that are not there, errors inside
-- timed functions, invalid / truncated / deeply nested / huge JSON and CSV
-- through verify, compare, import-liger and kb.jcs, unknown options, and the
-- rule that data is parsed, never executed. docs/RELIABILITY.md has the table
-- of these classes and the test of each.
--
-- The calls run in this process under pcall: a crash (a segfault, an abort)
-- would end the test run, so the sweep below is itself the crash test.
local kb = require 'kluabench'
local json = require 'kluabench.util.json'
local sub = require 'helpers.subprocess'

local ROOT = sub.root()

---------------------------------------------------------------------------
-- Every engine function and method with wrong argument types and counts
---------------------------------------------------------------------------

-- The wrong values, made fresh for every call (a call may free or mark
-- what it gets).
local WRONG = { 'nil', 'false', 'true', 'int', 'neg', 'float', 'str', 'table', 'func', 'tensor',
  'freed', 'event', 'thread' }
local function wrong_value(name)
  if name == 'nil' then return nil
  elseif name == 'false' then return false
  elseif name == 'true' then return true
  elseif name == 'int' then return 42
  elseif name == 'neg' then return -1
  elseif name == 'float' then return 2.5
  elseif name == 'str' then return 'x'
  elseif name == 'table' then return {}
  elseif name == 'func' then return print
  elseif name == 'tensor' then return kb.zeros({ 2 }, 'f32', 'cpu')
  elseif name == 'freed' then
    local t = kb.zeros({ 2 }, 'f32', 'cpu')
    t:free()
    return t
  elseif name == 'event' then
    local e = kb.event('cpu')
    e:record()
    return e
  elseif name == 'thread' then return coroutine.create(function() end)
  end
  error('no wrong value ' .. name)
end

local function set(...)
  local s = {}
  for _, k in ipairs { ... } do s[k] = true end
  return s
end

-- Which wrong values each kind of parameter takes without a type error (the
-- call may still fail for another reason, with an error; it must not
-- crash). Lua's own conventions hold: luaL_checkstring takes numbers,
-- luaL_checkinteger takes floats with an integer value.
local EVERYTHING = set(table.unpack(WRONG))
local ACCEPTS = {
  tensor = set('tensor'),
  self_free = set('tensor', 'freed'), -- free() is idempotent
  event = set('event'),
  graph = set(), -- no kluabench.Graph on cpu: every value is wrong
  shape = set('table'),
  ['shape?'] = set('nil', 'table'),
  ['dtype?'] = set('nil'),
  ['device?'] = set('nil'),
  ['int?'] = set('nil', 'int', 'neg'),
  ['bytes?'] = set('nil', 'int'),
  ['count?'] = set('nil', 'int'),
  ns = set('int'),
  number = set('int', 'neg', 'float'),
  numbers = set('table'),
  tostring = set('int', 'neg', 'float', 'str'),
  text = set('str'),
  json = set('nil', 'false', 'true', 'int', 'neg', 'float', 'str', 'table'),
  any = EVERYTHING,
  boolean = set('false', 'true'),
  ['function'] = set('func'),
  ['opts?'] = set('nil', 'table'),
  ['table?'] = set('nil', 'table'),
  seq_len = set('int'),
  head_dim = set('int'),
  ['nvml_device?'] = set('nil', 'int', 'str'),
  ['nvml_kind?'] = set('nil'),
  argv = set(), -- a non-empty list of strings: {} is refused too
  pid = set('int'),
  ['pid?'] = set('nil', 'int'),
  ['boolean?'] = set('nil', 'false', 'true'),
  signal = set(), -- names only: a number is refused
  ms = set('int', 'float'),
  operand = set('tensor', 'int', 'neg', 'float'), -- a tensor or a number
  ['dim?'] = set('nil', 'int', 'neg'),
  dtype = set(),
  -- a path written to: the wrong numbers and 'x' name files in the current
  -- directory, which the sweep removes afterwards (WRITTEN below)
  out_path = set('int', 'neg', 'float', 'str'),
  tensors = set('table'),
  ['tostring?'] = set('nil', 'int', 'neg', 'float', 'str'),
  ['sqlite_mode?'] = set('nil'), -- a string, but one of 'rw', 'rwc', 'ro'
}

local function T() return kb.zeros({ 2 }, 'f32', 'cpu') end
local function E()
  local e = kb.event('cpu')
  e:record()
  return e
end
local function ROPE()
  return kb.randn({ 1, 4, 2, 8 }, 'f32', 1, 'cpu'), kb.randn({ 1, 4, 1, 8 }, 'f32', 2, 'cpu'),
    kb.rope.freqs(4, 8, { device = 'cpu' }), { impl = 'reference' }
end
local function ROPE_FULL()
  local q, k, f = ROPE()
  return q, k, q:clone(), k:clone(), f, { impl = 'reference' }
end
local function FLOOR()
  local q, k, f = ROPE()
  return q, k, f, { inplace = false }
end
local function FLOOR_FULL()
  local q, k, f = ROPE()
  return q, k, q:clone(), k:clone(), f, { inplace = false }
end
-- the neox functions: cos and sin where llama4's take freqs
local function NEOX()
  local q, k = ROPE()
  local c, sn = kb.rope.cos_sin(4, 8, 'f32', { device = 'cpu' })
  return q, k, c, sn, { impl = 'reference' }
end
local function NEOX_FULL()
  local q, k, c, sn = NEOX()
  return q, k, q:clone(), k:clone(), c, sn, { impl = 'reference' }
end
local function NEOX_FLOOR()
  local q, k, c, sn = NEOX()
  return q, k, c, sn, { inplace = false }
end
local function NEOX_FLOOR_FULL()
  local q, k, c, sn = NEOX()
  return q, k, q:clone(), k:clone(), c, sn, { inplace = false }
end
local FILE = os.tmpname()
-- tensor files: one to read of each kind, and where the valid calls write
local NPY, SAFETENSORS, OUT = os.tmpname(), os.tmpname(), os.tmpname()
local function M(r, c) return kb.zeros({ r, c }, 'f32', 'cpu') end
-- kb.process: children reaped before each call; the one signalled gets the
-- harmless SIGCONT (a wrong pid, 42, gets it too)
local function REAP()
  while kb.process.wait(nil, false) do end
end
local function CHILD()
  REAP()
  return assert(kb.process.spawn({ 'true' }, { stdout = '/dev/null' }))
end

-- name, parameter kinds, valid arguments. Names: kb.x (the engine's module),
-- t:m (tensor methods), ev:m (event methods), g:m (graph methods).
local API = {
  { 'kb.backend', {}, function() end },
  { 'kb.executable', {}, function() end },
  { 'kb.build_info', {}, function() end },
  { 'kb.kernel_sources', {}, function() end },
  { 'kb.builtin_kernels', {}, function() end },
  { 'kb.device_info', { 'device?' }, function() return 'cpu' end },
  { 'kb.memory_info', { 'device?', 'opts?' }, function() return 'cpu', { trim = true } end },
  { 'kb.empty', { 'shape', 'dtype?', 'device?' }, function() return { 2, 3 }, 'f32', 'cpu' end },
  { 'kb.zeros', { 'shape', 'dtype?', 'device?' }, function() return { 2, 3 }, 'bf16', 'cpu' end },
  { 'kb.randn', { 'shape', 'dtype?', 'int?', 'device?' }, function() return { 5 }, 'f16', 7, 'cpu' end },
  { 'kb.from_table', { 'numbers', 'shape?', 'dtype?', 'device?' },
    function() return { 1, 2, 3, 4 }, { 2, 2 }, 'f64', 'cpu' end },
  { 'kb.max_abs_diff', { 'tensor', 'tensor' }, function() return T(), T() end },
  { 'kb.rel_l2', { 'tensor', 'tensor' }, function() return T(), T() end },
  { 'kb.event', { 'device?' }, function() return 'cpu' end },
  { 'kb.elapsed_ms', { 'event', 'event' }, function() return E(), E() end },
  { 'kb.synchronize', { 'device?' }, function() return 'cpu' end },
  { 'kb.clock_ns', {}, function() end },
  { 'kb.time_ns', {}, function() end },
  { 'kb.flush_l2', { 'bytes?', 'device?' }, function() return 4096, 'cpu' end },
  { 'kb.spin', { 'ns', 'device?' }, function() return 0, 'cpu' end },
  { 'kb.graph', { 'function', 'device?' }, function() return function() end, 'cpu' end },
  { 'kb.sha256', { 'text' }, function() return 'abc' end },
  { 'kb.sha256_file', { 'tostring' }, function() return FILE end },
  { 'kb.read_file', { 'tostring', 'bytes?' }, function() return FILE, 1 << 20 end },
  { 'kb.digest', { 'json' }, function() return { a = 1 } end },
  { 'kb.fsync', { 'tostring' }, function() return FILE end },
  { 'kb.stat', { 'tostring', 'any' }, function() return FILE, true end },
  { 'kb.realpath', { 'tostring' }, function() return FILE end },
  { 'kb.readlink', { 'tostring' }, function() return FILE end },
  { 'kb.chmod', { 'tostring', 'ns' }, function() return FILE, 420 end },
  { 'kb.try_lock', { 'tostring' }, function() return FILE end },
  -- (a directory that exists: the valid call fails softly, creating nothing;
  -- the values it accepts, numbers among them, would make directories in the
  -- working directory, so only the refused ones are tried: `refused_only`)
  { 'kb.mkdir', { 'tostring' }, function() return '/' end, refused_only = true },
  -- (in a directory that does not exist: the valid call fails softly; accepted values such as
  -- numbers would make files in the working directory, so only the refused ones are tried)
  { 'kb.write_temp', { 'tostring', 'tostring', 'int?', 'table?' }, function() return '/nonexistent-kluabench/x', '', 420, {} end,
    refused_only = true },
  { 'kb.append_file', { 'tostring', 'tostring' }, function() return '/nonexistent-kluabench/x', 'x' end,
    refused_only = true },
  { 'kb.remove_tree', { 'tostring' }, function() return '/nonexistent-kluabench/x' end, refused_only = true },
  { 'kb.defer_interrupts', { 'boolean' }, function() return false end },
  { 'kb.interrupted', {}, function() end },
  { 'kb.rope.freqs', { 'seq_len', 'head_dim', 'opts?' }, function() return 4, 8, { device = 'cpu' } end },
  { 'kb.rope.llama4_fwd', { 'tensor', 'tensor', 'tensor', 'opts?' }, ROPE },
  { 'kb.rope.llama4_bwd', { 'tensor', 'tensor', 'tensor', 'opts?' }, ROPE },
  { 'kb.rope.cos_sin', { 'seq_len', 'head_dim', 'dtype', 'opts?' }, function() return 4, 8, 'bf16', { device = 'cpu' } end },
  { 'kb.rope.neox_fwd', { 'tensor', 'tensor', 'tensor', 'tensor', 'opts?' }, NEOX },
  { 'kb.rope.neox_bwd', { 'tensor', 'tensor', 'tensor', 'tensor', 'opts?' }, NEOX },
  { 'kb.rope.llama4_fwd_bwd', { 'tensor', 'tensor', 'tensor', 'tensor', 'tensor', 'opts?' }, ROPE_FULL },
  { 'kb.rope.neox_fwd_bwd', { 'tensor', 'tensor', 'tensor', 'tensor', 'tensor', 'tensor', 'opts?' }, NEOX_FULL },
  { 'kb.rope.floor', { 'tensor', 'tensor', 'tensor', 'opts?' }, FLOOR },
  { 'kb.rope.floor_fwd_bwd', { 'tensor', 'tensor', 'tensor', 'tensor', 'tensor', 'opts?' }, FLOOR_FULL },
  { 'kb.rope.neox_floor', { 'tensor', 'tensor', 'tensor', 'tensor', 'opts?' }, NEOX_FLOOR },
  { 'kb.rope.neox_floor_fwd_bwd', { 'tensor', 'tensor', 'tensor', 'tensor', 'tensor', 'tensor', 'opts?' },
    NEOX_FLOOR_FULL },
  { 'kb.jcs.encode', { 'json' }, function() return { b = 1 } end },
  { 'kb.jcs.array', { 'table?' }, function() return {} end },
  { 'kb.jcs.object', { 'table?' }, function() return {} end },
  { 'kb.jcs.is_array', { 'any' }, function() return {} end },
  { 'kb.process.spawn', { 'argv', 'opts?' }, function() REAP(); return { 'true' }, { stdout = '/dev/null' } end },
  { 'kb.process.wait', { 'pid?', 'boolean?' }, function() return CHILD(), true end },
  { 'kb.process.kill', { 'pid', 'signal' }, function() return CHILD(), 'SIGCONT' end },
  { 'kb.process.sleep', { 'ms' }, function() return 1 end },
  { 'kb.process.getpid', {}, function() end },
  { 'kb.nvml.available', {}, function() end },
  { 'kb.nvml.count', {}, function() end },
  { 'kb.nvml.reason_names', {}, function() end },
  { 'kb.nvml.sample', { 'nvml_device?', 'nvml_kind?' }, function() return 0, 'quick' end },
  { 'kb.nvml.info', { 'nvml_device?' }, function() return 0 end },
  { 'kb.nvml.energy', { 'nvml_device?' }, function() return 0 end },
  { 'kb.memory_stats', { 'device?' }, function() return 'cpu' end },
  { 'kb.reset_peak_memory', { 'device?' }, function() return 'cpu' end },
  { 'kb.drop_scratch', {}, function() end },
  { 'kb.loaded_code', {}, function() end },
  { 'kb.cuda.args', { 'text' }, function() return 'ptr, i32' end },
  { 'kb.trace.available', { 'device?' }, function() return 'cpu' end },
  -- valid: tracing off first, so that a start that works is not refused as a second one
  { 'kb.trust.seed_key', { 'int?' }, function() return 0 end },
  { 'kb.trust.threads', {}, function() end },
  { 'kb.trust.arm', { 'tensor' }, function() return T() end },
  { 'kb.trust.guard_check', { 'tensor' }, function() local t = T(); kb.trust.arm(t); return t end },
  { 'kb.trust.device_synchronize', { 'device?' }, function() return 'cpu' end },
  { 'kb.trust.l2_state', { 'device?' }, function() return 'cpu' end },
  { 'kb.trust.l2_reset', { 'device?' }, function() return 'cpu' end },
  { 'kb.trace.start', { 'device?' }, function() kb.trace.stop(); return 'cpu' end },
  { 'kb.trace.collect', {}, function() kb.trace.stop(); kb.trace.start('cpu') end },
  { 'kb.trace.stop', {}, function() end },
  { 'kb.trace.active', {}, function() end },
  { 'kb.compare_elements', { 'tensor', 'tensor', 'number', 'number' }, function() return T(), T(), 0, 0 end },
  { 'kb.cuda.compile', { 'tostring', 'opts?' },
    function() return 'extern "C" __global__ void k() {}', { cache = false } end },
  { 'kb.cuda.load', { 'tostring' }, function() return '.version 8.0\n.target sm_90\n.address_size 64\n' end },
  { 'kb.cuda.nvrtc_version', {}, function() end },
  { 'kb.cuda.parse_signature', { 'tostring' }, function() return 'ptr, i32' end },
  { 'kb.plugin.load', { 'tostring' },
    function() return kb.executable():match('^(.*)/[^/]*$') .. '/plugins/libscale_add.so' end },
  -- (absent files are not created: the default mode opens existing ones only)
  { 'kb.sqlite.open', { 'tostring', 'sqlite_mode?' }, function() return ':memory:', 'rw' end },
  { 'kb.sqlite.version', {}, function() end },
  { 'kb.pq.available', {}, function() end },
  { 'kb.pq.version', {}, function() end },
  -- (a socket folder that does not exist: the valid call fails softly at once)
  { 'kb.pq.connect', { 'tostring', 'tostring?' }, function() return 'host=/nonexistent-kb port=1', 'label' end },
  -- (where there is no Python, info and load raise why: never a crash)
  { 'kb.python.available', {}, function() end },
  { 'kb.python.info', {}, function() end },
  { 'kb.python.load', { 'tostring' }, function() return 'json' end },
  { 't:numel', { 'tensor' }, function() return T() end },
  { 't:nbytes', { 'tensor' }, function() return T() end },
  { 't:totable', { 'tensor' }, function() return T() end },
  { 't:clone', { 'tensor' }, function() return T() end },
  { 't:digest', { 'tensor' }, function() return T() end },
  { 't:free', { 'self_free' }, function() return T() end },
  { 't:copy_', { 'tensor', 'tensor' }, function() return T(), T() end },
  { 't:fill_', { 'tensor', 'number' }, function() return T(), 1.5 end },
  { 't:to', { 'tensor', 'tostring' }, function() return T(), 'f64' end },
  { 'kb.load_npy', { 'tostring', 'device?' }, function() return NPY, 'cpu' end },
  { 'kb.save_npy', { 'out_path', 'tensor' }, function() return OUT, T() end },
  { 'kb.load_safetensors', { 'tostring', 'device?' }, function() return SAFETENSORS, 'cpu' end },
  { 'kb.save_safetensors', { 'out_path', 'tensors', 'table?' }, function() return OUT, { w = T() }, { k = 'v' } end },
  { 't:add', { 'tensor', 'operand' }, function() return T(), T() end },
  { 't:sub', { 'tensor', 'operand' }, function() return T(), 2 end },
  { 't:mul', { 'tensor', 'operand' }, function() return T(), T() end },
  { 't:div', { 'tensor', 'operand' }, function() return T(), 0.5 end },
  { 't:add_', { 'tensor', 'operand' }, function() return T(), T() end },
  { 't:sub_', { 'tensor', 'operand' }, function() return T(), 1 end },
  { 't:mul_', { 'tensor', 'operand' }, function() return T(), T() end },
  { 't:div_', { 'tensor', 'operand' }, function() return T(), 4 end },
  { 't:neg', { 'tensor' }, function() return T() end },
  { 't:exp', { 'tensor' }, function() return T() end },
  { 't:sqrt', { 'tensor' }, function() return T() end },
  { 't:rsqrt', { 'tensor' }, function() return T() end },
  { 't:neg_', { 'tensor' }, function() return T() end },
  { 't:exp_', { 'tensor' }, function() return T() end },
  { 't:sqrt_', { 'tensor' }, function() return T() end },
  { 't:rsqrt_', { 'tensor' }, function() return T() end },
  { 't:sum', { 'tensor', 'dim?', 'boolean?' }, function() return T(), 1, true end },
  { 't:mean', { 'tensor', 'dim?', 'boolean?' }, function() return T(), -1, false end },
  { 't:max', { 'tensor', 'dim?', 'boolean?' }, function() return T(), 1, true end },
  { 't:matmul', { 'tensor', 'tensor' }, function() return M(2, 3), M(3, 4) end },
  { 't:cast', { 'tensor', 'dtype' }, function() return T(), 'bf16' end },
  { 't:reshape', { 'tensor', 'shape' }, function() return T(), { 1, 2 } end },
  { 't:item', { 'tensor' }, function() return kb.zeros({ 1 }, 'f32', 'cpu') end },
  { 'ev:record', { 'event' }, function() return E() end },
  { 'ev:synchronize', { 'event' }, function() return E() end },
  { 'ev:elapsed_ms', { 'event', 'event' }, function() return E(), E() end },
  { 'ev:destroy', { 'event' }, function() return E() end },
  { 'g:replay', { 'graph', 'count?' }, function() return nil, 1 end },
  { 'g:free', { 'graph' }, function() return nil end },
}

local METHODS = {
  t = getmetatable(kb.zeros({ 1 }, 'f32', 'cpu')).methods,
  ev = getmetatable(kb.event('cpu')).__index,
  g = debug.getregistry()['kluabench.Graph'].__index,
}

local function lookup(name)
  local obj, m = name:match('^(%a+):(.+)$')
  if obj then return METHODS[obj][m] end
  local v = kb
  for part in name:gmatch('[^.]+') do
    if part ~= 'kb' then v = v[part] end
  end
  return v
end

-- What a type error may say: luaL_argerror's form, or the encoder's
-- description of the value it cannot write.
local function is_argument_error(err)
  return type(err) == 'string' and (err:find('bad argument #%d') ~= nil
    or err:find('^kb%.jcs%.encode: value at %$ is a') ~= nil)
end

local function call(fn, args, n)
  return pcall(fn, table.unpack(args, 1, n))
end

describe('every engine function and method with wrong arguments', function()
  -- names the sweep's wrong path values give files in the current
  -- directory (kb.save_npy(42, t) writes ./42, kb.mkdir('x') makes ./x),
  -- and whether each was there before
  local WRITTEN = { 'x', '42', '-1', '2.5' }
  local existed = {}
  setup(function()
    sub.spit(FILE, 'some bytes')
    assert(kb.save_npy(NPY, T()))
    assert(kb.save_safetensors(SAFETENSORS, { w = T() }))
    for _, name in ipairs(WRITTEN) do existed[name] = kb.stat(name) ~= nil end
  end)
  teardown(function()
    for _, name in ipairs(WRITTEN) do
      local st = kb.stat(name)
      if not existed[name] and st and (st.type == 'file' or st.type == 'directory') then
        os.remove(name) -- (a directory only when empty, as the sweep left it)
      end
    end
    for _, f in ipairs { NPY, SAFETENSORS, OUT } do os.remove(f) end
    os.remove(FILE)
    kb.defer_interrupts(false)
    kb.trace.stop()
    kb.trust.seed_key(0) -- the sweep set a key: kb.randn as documented again
  end)

  it('has an entry here for every function of kb, kb.rope, kb.jcs, kb.nvml and every method', function()
    local listed, missing = {}, {}
    for _, e in ipairs(API) do listed[e[1]] = true end
    local core = require 'kluabench.core'
    -- the C functions: kb.*, kb.rope.*, kb.jcs.*, kb.nvml.* (kb also reaches
    -- the stdlib modules, kb.bench and the like, which are Lua)
    local function walk(prefix, t)
      for k, v in pairs(t) do
        if type(v) == 'function' and debug.getinfo(v, 'S').what == 'C' and not listed[prefix .. k] then
          missing[#missing + 1] = prefix .. k
        end
        if type(v) == 'table' and prefix == 'kb.' then walk('kb.' .. k .. '.', v) end
      end
    end
    walk('kb.', core)
    for obj, methods in pairs(METHODS) do
      for k, v in pairs(methods) do
        if type(v) == 'function' and not listed[obj .. ':' .. k] then missing[#missing + 1] = obj .. ':' .. k end
      end
    end
    table.sort(missing)
    assert.same({}, missing)
    for _, e in ipairs(API) do assert.is_function(lookup(e[1]), e[1]) end
  end)

  it('raises an argument error for each wrong type, in every position, and never crashes', function()
    local wrong_accepted, bad_messages, calls = {}, {}, 0
    for _, e in ipairs(API) do
      local name, kinds, valid = e[1], e[2], e[3]
      local fn = lookup(name)
      for pos, kind in ipairs(kinds) do
        local accepts = assert(ACCEPTS[kind], 'no kind ' .. kind)
        for _, w in ipairs(WRONG) do
          local args = table.pack(valid())
          local complete = true
          for i, k in ipairs(kinds) do
            if i ~= pos and args[i] == nil and not ACCEPTS[k]['nil'] then complete = false end
          end
          if complete and e.refused_only and accepts[w] then complete = false end
          if complete then
            args[pos] = wrong_value(w)
            local ok, err = call(fn, args, #kinds)
            calls = calls + 1
            if not accepts[w] then
              if ok then
                wrong_accepted[#wrong_accepted + 1] = string.format('%s: argument %d = %s', name, pos, w)
              elseif not is_argument_error(err) then
                bad_messages[#bad_messages + 1] = string.format('%s: argument %d = %s: %s', name, pos, w,
                  tostring(err))
              end
            else
              assert(ok or type(err) == 'string', name .. ': a non-string error')
            end
          end
        end
      end
    end
    assert.same({}, wrong_accepted)
    assert.same({}, bad_messages)
    assert.is_true(calls > 500, tostring(calls))
  end)

  it('raises for missing arguments and survives extra ones', function()
    for _, e in ipairs(API) do
      local name, kinds, valid = e[1], e[2], e[3]
      local fn = lookup(name)
      local required = false
      for _, k in ipairs(kinds) do if not ACCEPTS[k]['nil'] then required = true end end
      local ok, err = pcall(fn)
      if required then
        assert.is_false(ok, name .. '() succeeded')
        assert.is_true(is_argument_error(err), name .. '(): ' .. tostring(err))
      end
      -- extra arguments: ignored as Lua functions do, or refused where the
      -- function says how many it takes (kb.rope)
      local args = table.pack(valid())
      local n = #kinds
      args[n + 1], args[n + 2], args[n + 3] = 'extra', 42, {}
      local ok2, err2 = call(fn, args, n + 3)
      assert(ok2 or type(err2) == 'string', name)
      if name:match('^kb%.rope%.') then
        assert.is_false(ok2)
        assert.matches('expected at most %d arguments', err2)
      end
    end
  end)

  it('the valid calls of the table work (so that the sweep tests the types, not broken calls)', function()
    local failed = {}
    -- graphs need cuda (the valid arguments say 'cpu'); no graph object here
    local expected_to_fail = { ['kb.graph'] = true, ['g:replay'] = true, ['g:free'] = true,
      ['kb.cuda.compile'] = not kb.cuda.nvrtc_version(), -- where NVRTC is not installed
      ['kb.python.info'] = not kb.python.available(), ['kb.python.load'] = not kb.python.available() }
    for _, e in ipairs(API) do
      local args = table.pack(e[3]())
      local ok, err = call(lookup(e[1]), args, #e[2])
      if not ok and not expected_to_fail[e[1]] then failed[#failed + 1] = e[1] .. ': ' .. tostring(err) end
    end
    assert.same({}, failed)
  end)
end)

---------------------------------------------------------------------------
-- Tensors: freed, zero-sized, huge; devices that are not there
---------------------------------------------------------------------------

describe('tensors', function()
  it('a freed tensor is an error in every method, in kb functions and in kb.rope, never a crash', function()
    local dead = kb.randn({ 1, 4, 2, 8 }, 'f32', 1, 'cpu')
    dead:free()
    for _, m in ipairs { 'numel', 'nbytes', 'totable', 'clone', 'digest', 'copy_', 'fill_', 'to' } do
      local ok, err = pcall(METHODS.t[m], dead, m == 'to' and 'f64' or T())
      assert.is_false(ok, m)
      assert.matches('tensor has been freed', err, 1, true)
    end
    assert.has_error(function() return dead.shape end, "attempt to read field 'shape' of a freed kluabench.Tensor")
    assert.equal('kluabench.Tensor(freed)', tostring(dead))
    dead:free() -- twice is fine
    local ok, err = pcall(kb.max_abs_diff, T(), dead)
    assert.is_false(ok)
    assert.matches('tensor has been freed', err, 1, true)
    local q, k, f = ROPE()
    assert.has_error(function() kb.rope.llama4_fwd(dead, k, f) end,
      "bad argument #1 to 'llama4_fwd' (q has been freed)")
    local pos = kb.from_table({ 0, 1, 2, 3 }, nil, 'f32', 'cpu')
    pos:free()
    assert.has_error(function() kb.rope.freqs(4, 8, { positions = pos }) end,
      "bad argument #3 to 'freqs' (opts.positions has been freed)")
    assert.equal(0, kb.max_abs_diff(q, q:clone())) -- and everything else still works
  end)

  it('zero-sized tensors go through every method and kb.rope', function()
    local z = kb.zeros({ 0, 3 }, 'bf16', 'cpu')
    assert.equal(0, z:numel())
    assert.equal(0, z:nbytes())
    assert.same({}, z:totable())
    assert.same({ 0, 3 }, z:clone().shape)
    assert.same({ 0, 3 }, z:to('f64').shape)
    z:fill_(1)
    z:copy_(kb.empty({ 0, 3 }, 'f32', 'cpu'))
    assert.equal(kb.sha256(''), z:digest():sub(8))
    assert.equal(0, kb.max_abs_diff(z, z))
    assert.equal(0, kb.rel_l2(z, z))
    assert.equal('kluabench.Tensor([0, 3], bf16, cpu) []', tostring(z))
    assert.same({}, kb.from_table({}, { 0 }, 'f32', 'cpu'):totable())
    local f0 = kb.rope.freqs(0, 8, { device = 'cpu' })
    assert.same({ 0, 4, 2 }, f0.shape)
    for _, shape in ipairs { { 1, 0, 2, 8 }, { 0, 4, 2, 8 }, { 1, 4, 0, 8 } } do
      local q = kb.zeros(shape, 'f32', 'cpu')
      local k = kb.zeros({ shape[1], shape[2], 1, 8 }, 'f32', 'cpu')
      local f = kb.rope.freqs(shape[2], 8, { device = 'cpu' })
      for _, impl in ipairs { 'fused', 'reference' } do
        local qo, ko = kb.rope.llama4_fwd(q, k, f, { impl = impl })
        assert.same(shape, qo.shape)
        assert.equal(k:numel(), ko:numel())
      end
    end
  end)

  it('an allocation larger than memory is a Lua error naming the size, and the engine keeps working', function()
    -- 2^50 f32 = 4 PiB: no machine has it, and the shape check lets it through
    local ok, err = pcall(kb.empty, { 2 ^ 50 }, 'f32', 'cpu')
    assert.is_false(ok)
    assert.matches('cannot allocate tensor [1125899906842624] f32 on cpu (4503599627370496 bytes)', err, 1,
      true)
    ok, err = pcall(kb.zeros, { 2 ^ 40, 2 ^ 40 }, 'f64', 'cpu') -- past what a size can hold
    assert.is_false(ok)
    assert.matches('shape is too large', err, 1, true)
    ok, err = pcall(kb.flush_l2, 2 ^ 53, 'cpu')
    assert.is_false(ok)
    assert.matches('9007199254740992 bytes', err, 1, true)
    ok, err = pcall(kb.rope.freqs, 2 ^ 40, 8)
    assert.is_false(ok)
    assert.matches('seq_len 1099511627776 is too large', err, 1, true)
    -- still working: a tensor, a flush and a kernel
    assert.same({ 1, 1 }, kb.zeros({ 2 }, 'f32', 'cpu'):fill_(1):totable())
    assert.is_true(kb.flush_l2(1 << 20, 'cpu') >= 1 << 20)
    local q, k, f = ROPE()
    assert.same(q.shape, (kb.rope.llama4_fwd(q, k, f)).shape)
  end)

  it('a device that is not there is an error naming it and why (cpu-only machines)', function()
    if kb.backend() == 'cuda' then return pending('a CUDA device is usable here (see the #gpu tests)') end
    for _, dev in ipairs { 'cuda', 'cuda:0', 'cuda:7' } do
      local ok, err = pcall(kb.empty, { 2 }, 'f32', dev)
      assert.is_false(ok)
      assert.matches("device '" .. dev .. "' is not usable", err, 1, true)
      ok, err = pcall(kb.rope.freqs, 4, 8, { device = dev })
      assert.is_false(ok)
      assert.matches("bad argument #3 to 'freqs' (opts.device: device '" .. dev .. "' is not usable", err, 1,
        true)
      assert.has_error(function() T():to(dev) end)
      assert.has_error(function() kb.event(dev) end)
    end
    local r = sub.run({ '--backend', 'cuda', '-e', 'print(1)' })
    assert.equal(1, r.code)
    assert.matches("backend 'cuda' (device 0) is not usable", r.err, 1, true)
    assert.equal('', r.out)
  end)
end)

describe('tensors on two devices #gpu', function()
  it('kb.rope refuses q, k and the table on different devices; copies and comparisons go through the host', function()
    local q, k, f = ROPE()
    local _, _, c, sn = NEOX()
    local kc, fc = k:to('cuda'), f:to('cuda')
    assert.has_error(function() kb.rope.llama4_fwd(q, kc, f) end,
      "bad argument #2 to 'llama4_fwd' (k is on " .. kc.device .. ", q is on cpu)")
    assert.has_error(function() kb.rope.llama4_bwd(q:to('cuda'), kc, f) end,
      "bad argument #3 to 'llama4_bwd' (freqs is on cpu, q is on " .. kc.device .. ")")
    assert.has_error(function() kb.rope.neox_bwd(q:to('cuda'), kc, c, sn) end,
      "bad argument #3 to 'neox_bwd' (cos is on cpu, q is on " .. kc.device .. ")")
    assert.equal(0, kb.max_abs_diff(kc, k))
    assert.same(k:totable(), kb.zeros(k.shape, 'f32', 'cuda'):copy_(k):totable())
    local e0, e1 = kb.event('cpu'), kb.event('cuda')
    e0:record()
    e1:record()
    assert.has_error(function() kb.elapsed_ms(e0, e1) end)
    fc:free()
  end)

  it('an allocation larger than the device is an error naming the size, and the device keeps working', function()
    local ok, err = pcall(kb.empty, { 2 ^ 45 }, 'f32', 'cuda')
    assert.is_false(ok)
    assert.matches('cudaMalloc(140737488355328 bytes)', err, 1, true)
    assert.matches('cudaErrorMemoryAllocation', err, 1, true)
    assert.same({ 2, 2 }, kb.zeros({ 2 }, 'f32', 'cuda'):fill_(2):totable())
  end)
end)

describe('a sticky CUDA error #gpu', function()
  -- tests/helpers/cuda_fault.cu: a Lua C module whose loading runs a kernel
  -- that writes to an illegal address, poisoning the CUDA context.
  local function nvcc()
    for _, c in ipairs { os.getenv('NVCC') or '', 'nvcc', '/usr/local/cuda/bin/nvcc' } do
      if c ~= '' and os.execute('command -v ' .. sub.q(c) .. ' > /dev/null 2>&1') then return c end
    end
  end

  it('is reported with the CUDA error, and the process says it cannot continue instead of printing numbers', function()
    local cc = nvcc()
    if not cc then return pending('nvcc is not here to build tests/helpers/cuda_fault.cu') end
    local dir = sub.tmpdir()
    local built = os.execute(string.format('%s -shared -Xcompiler -fPIC -o %s %s > %s 2>&1', sub.q(cc),
      sub.q(dir .. '/cuda_fault.so'), sub.q(ROOT .. '/tests/helpers/cuda_fault.cu'), sub.q(dir .. '/nvcc.log')))
    assert(built, sub.slurp(dir .. '/nvcc.log'))
    sub.spit(dir .. '/fault.lua', [[
      package.cpath = ]] .. string.format('%q', dir .. '/?.so;') .. [[ .. package.cpath
      local kb = require 'kluabench'
      local t = kb.randn({ 1024 }, 'f32', 1, 'cuda')
      print('before', #t:totable())
      require 'cuda_fault'
      print('first', pcall(t.totable, t))
      print('again', pcall(kb.randn, { 4 }, 'f32', 1, 'cuda'))
      print('memory', pcall(kb.memory_info, 'cuda'))
      print('numbers', kb.zeros({ 4 }, 'f32', 'cuda'):fill_(1):totable()[1])
    ]])
    local r = sub.run({ dir .. '/fault.lua' })
    assert.equal(1, r.code)
    assert.matches('before\t1024\n', r.out, 1, true)
    for _, what in ipairs { 'first', 'again', 'memory' } do
      local line = r.out:match(what .. '\tfalse\t([^\n]*)')
      assert.is_string(line, what .. ' did not fail: ' .. r.out)
      assert.matches('cudaError%w+', line)
      assert.matches('the CUDA context is unusable, kluabench cannot continue', line, 1, true)
    end
    assert.is_nil(r.out:find('numbers', 1, true))
    assert.matches('\nkluabench: [^\n]*kluabench cannot continue\nstack traceback:', '\n' .. r.err)
  end)
end)

---------------------------------------------------------------------------
-- An error inside a timed function
---------------------------------------------------------------------------

describe('an error inside a timed function', function()
  it('propagates out of do_bench and the measure modes, and every event it made can be collected', function()
    local bench = require 'kluabench.measure.do_bench'
    local measure = require 'kluabench.measure'
    local made = setmetatable({}, { __mode = 'k' })
    local function tracked(ctx)
      local event = ctx.event
      ctx.event = function(...)
        local e = event(...)
        made[e] = true
        return e
      end
      return ctx
    end
    local calls = 0
    local function boom()
      calls = calls + 1
      if calls == 9 then error('boom in the timed function') end
    end
    local function count()
      local n = 0
      for _ in pairs(made) do n = n + 1 end
      return n
    end
    local ok, err = pcall(bench.do_bench, boom, { warmup_ms = 1, rep_ms = 5, flush_bytes = 4096,
      device = tracked(measure.device()) })
    assert.is_false(ok)
    assert.matches('boom in the timed function', err, 1, true)
    local n_bench = count()
    assert.is_true(n_bench > 0)
    calls = 0
    local ok2, err2 = pcall(measure.run, 'cold', boom, {}, tracked(measure.device()))
    assert.is_false(ok2)
    assert.matches('boom in the timed function', tostring(err2), 1, true)
    assert.is_true(count() > n_bench)
    collectgarbage('collect')
    collectgarbage('collect')
    assert.is_nil(next(made)) -- nothing holds them: their __gc destroyed them
  end)

  it('in a script: the error and a traceback through the protocol, exit status 1', function()
    local dir = sub.tmpdir()
    sub.spit(dir .. '/timed.lua', [[
      local kb = require 'kluabench'
      local function kernel() error('kernel exploded') end
      kb.do_bench.do_bench(kernel, { warmup_ms = 1, rep_ms = 2, flush_bytes = 4096 })
      print('not reached')
    ]])
    local r = sub.run({ '--backend', 'cpu', dir .. '/timed.lua' })
    assert.equal(1, r.code)
    assert.equal('', r.out)
    assert.matches('^kluabench: [^\n]*timed%.lua:2: kernel exploded\nstack traceback:\n', r.err)
    assert.matches("in %a+ 'kluabench.measure.do_bench.do_bench'", r.err)
  end)
end)

---------------------------------------------------------------------------
-- Bad files to verify, compare, import-liger and kb.jcs
---------------------------------------------------------------------------

-- One real bundle, from a Liger row.
local function a_bundle_line()
  local liger = require 'kluabench.liger'
  local rows = assert(liger.parse(sub.slurp(ROOT .. '/tests/fuzz/corpus/csv/liger_speed.csv')))
  return assert(json.encode_line(assert(liger.row_to_bundle(rows[1]))))
end

local function json_inputs(dir)
  local line = a_bundle_line()
  local files = {
    invalid = '{"run": nope}',
    truncated = line:sub(1, #line // 2),
    deep = string.rep('[', 100000) .. string.rep(']', 100000),
    deep_object = string.rep('{"a":', 100000) .. '1' .. string.rep('}', 100000),
    huge_string = '{"run": {"spec": {}}, "blob": "' .. string.rep('a', 16 * 2 ^ 20) .. '"}',
    -- 50000 elements: line numbers for each used to cost a scan of the text
    huge_array = '[' .. string.rep('{"run": 1},\n', 50000) .. '{"run": 1}]',
    not_a_bundle = '[1, 2, 3]',
    empty = '',
    -- a megabyte of blank lines: compare's JSON Lines test used to be quadratic
    blank_lines = string.rep('\n', 2 ^ 20),
    binary = '\0\1\2\255\254{"\0":',
    invalid_utf8 = '{"run": "\255\254"}',
    lines_one_bad = line .. '\n' .. '{"run":\n' .. line .. '\n',
  }
  local paths = {}
  for name, text in pairs(files) do
    paths[name] = dir .. '/' .. name .. '.json'
    sub.spit(paths[name], text)
  end
  return paths, line
end

local function csv_inputs(dir)
  local header = sub.slurp(ROOT .. '/tests/fuzz/corpus/csv/liger_speed.csv')
  local good = header:match('^[^\n]*\n[^\n]*\n')
  -- 2000 more runs of the row, each at its own time (the same run twice is imported once)
  local rows = {}
  for i = 1, 2000 do
    rows[i] = (good:match('\n([^\n]*\n)$'):gsub('2025%-08%-07 21:42:00', string.format('2025-08-07 %02d:%02d:%02d',
      i // 3600, i // 60 % 60, i % 60)))
  end
  local files = {
    invalid_quote = good .. 'a,b"c,d\n',
    truncated = good:sub(1, #good - 30) .. '"unterminated',
    deep_config = good:gsub('"{[^\n]*}"', '"' .. string.rep('[', 100000) .. string.rep(']', 100000) .. '"'),
    many_rows = good .. table.concat(rows),
    huge_field = good:gsub('NVIDIA', string.rep('N', 4 * 2 ^ 20)),
    empty = '',
    binary = '\0\1\2\255,\254\n"\0",',
    invalid_utf8 = good:gsub('NVIDIA', 'NV\255IDIA'),
    no_header = 'a,b,c\n1,2,3\n',
  }
  local paths = {}
  for name, text in pairs(files) do
    paths[name] = dir .. '/' .. name .. '.csv'
    sub.spit(paths[name], text)
  end
  return paths
end

-- A command's verdict on a bad file: an exit status, one message naming the
-- file, and no Lua error escaping (no traceback).
local function assert_clean_failure(r, path, codes)
  assert.is_true(codes[r.code] ~= nil, string.format('exit %d: %s', r.code, r.err:sub(1, 300)))
  assert.is_nil(r.err:find('stack traceback', 1, true), r.err:sub(1, 500))
  if r.code ~= 0 then assert.matches(path:match('[^/]*$'), r.err, 1, true) end
end

describe('bad JSON and CSV files', function()
  local dir, bad_json, csv
  setup(function()
    dir = sub.tmpdir()
    bad_json = json_inputs(dir)
    csv = csv_inputs(dir)
  end)
  teardown(function() os.execute('rm -rf ' .. sub.q(dir)) end)

  it('verify reports every bad JSON file by name and exits 1, never with a Lua error', function()
    for name, path in pairs(bad_json) do
      local t0 = os.time()
      local r = sub.run({ 'verify', '--quiet', path })
      assert_clean_failure(r, path, { [1] = true })
      assert.is_true(os.time() - t0 < 30, name .. ' took too long')
    end
    local r = sub.run({ 'verify', bad_json.deep })
    assert.matches('deep.json:1: 1001: nesting deeper than ' .. json.MAX_DEPTH .. ' levels', r.err, 1, true)
    r = sub.run({ 'verify', bad_json.lines_one_bad })
    assert.matches('lines_one_bad.json:2:', r.err, 1, true)
    -- metadata is not digested, but its schema holds: a name that is no string is named, cleanly
    local b = json.decode(a_bundle_line())
    b.run.metadata.name = { 'not', 'a', 'string' }
    sub.spit(dir .. '/odd_name.json', json.encode_line(b))
    r = sub.run({ 'verify', dir .. '/odd_name.json' })
    assert_clean_failure(r, dir .. '/odd_name.json', { [1] = true })
    assert.matches('odd_name.json:1: run: metadata.name must be a string', r.err, 1, true)
  end)

  it('compare refuses every bad JSON file by name with exit status 2', function()
    local good = dir .. '/good.jsonl'
    sub.spit(good, a_bundle_line() .. '\n')
    for name, path in pairs(bad_json) do
      local t0 = os.time()
      assert_clean_failure(sub.run({ 'compare', good, path }), path, { [2] = true })
      assert_clean_failure(sub.run({ 'compare', path, good }), path, { [2] = true })
      assert.is_true(os.time() - t0 < 30, name .. ' took too long')
    end
  end)

  it('import-liger reports bad CSV files and bad rows by name and line, and imports the good rows', function()
    for name, path in pairs(csv) do
      local out = dir .. '/' .. name .. '.jsonl'
      local r = sub.run({ 'import-liger', '--jsonl', out, path })
      -- a config too deep to read binds no axes: skipped, as kernelindex skips an unknown config
      local valid = name == 'many_rows' or name == 'huge_field' or name == 'deep_config'
      assert_clean_failure(r, path, { [1] = not valid or nil, [0] = valid or nil })
      -- whatever was written is valid JSON Lines
      for line in (sub.slurp(out) or ''):gmatch('[^\n]+') do assert.is_not_nil(json.decode(line)) end
    end
    local r = sub.run({ 'import-liger', '--jsonl', dir .. '/bad_utf8.jsonl', csv.invalid_utf8 })
    assert.matches('invalid_utf8.csv:2: gpu_name is not valid UTF-8', r.err, 1, true)
    r = sub.run({ 'import-liger', '--jsonl', dir .. '/deep.jsonl', csv.deep_config })
    assert.matches('deep_config.csv:2: skipped: extra_benchmark_config_str: line 1, column 1001: nesting deeper', r.err,
      1, true)
    assert.matches("skipped 1 row: configs that do not bind the kernel's axes", r.err, 1, true)
    r = sub.run({ 'import-liger', '--jsonl', dir .. '/rows.jsonl', csv.many_rows })
    assert.equal(0, r.code, r.err)
    assert.matches('2001 bundles written', r.err, 1, true)
  end)

  it('the commands refuse a file of the other kind (CSV to verify, JSON to import-liger)', function()
    assert_clean_failure(sub.run({ 'verify', csv.many_rows }), csv.many_rows, { [1] = true })
    assert_clean_failure(sub.run({ 'import-liger', bad_json.huge_string }), bad_json.huge_string, { [1] = true })
  end)

  it('json.decode refuses each bad text naming its line and column, and kb.jcs.encode writes huge ones', function()
    for name, path in pairs(bad_json) do
      local text = sub.slurp(path)
      local v, err = json.decode(text)
      if name == 'invalid_utf8' then -- read as bytes; the canonical writer refuses them
        assert.is_not_nil(v, name)
        local ok, eerr = pcall(kb.jcs.encode, v)
        assert.is_false(ok, name)
        assert.matches('kb.jcs.encode: value at $.run is a string that is not valid UTF-8', eerr, 1, true)
      elseif name ~= 'huge_string' and name ~= 'huge_array' and name ~= 'not_a_bundle' then
        assert.is_nil(v, name)
        assert.matches('^line %d+, column %d+: ', err)
      else
        assert.is_not_nil(v, name .. ': ' .. tostring(err))
        assert.is_string(kb.jcs.encode(v), name)
      end
    end
    local text = sub.slurp(bad_json.huge_string)
    assert.equal(#text - 4, #kb.jcs.encode(json.decode(text))) -- the four spaces go
  end)
end)

---------------------------------------------------------------------------
-- Unknown options
---------------------------------------------------------------------------

describe('unknown options', function()
  it('are a usage error (exit 2) for the binary, every command and the scripts', function()
    local cli = require 'kluabench.commands'
    local r = sub.run({ '--no-such-option' })
    assert.equal(2, r.code)
    assert.matches("unrecognized option '--no-such-option'", r.err, 1, true)
    for _, c in ipairs(cli.COMMANDS) do
      if c.name ~= 'help' then
        r = sub.run({ c.name, '--no-such-option' })
        assert.equal(2, r.code, c.name .. ': ' .. r.err)
        assert.matches("unrecognized option '--no-such-option'", r.err, 1, true)
      end
    end
    r = sub.run({ 'help', '--no-such-option' })
    assert.equal(2, r.code)
    for _, script in ipairs { 'llama4_rope.lua', 'soak.lua' } do
      r = sub.run({ '--backend', 'cpu', ROOT .. '/scripts/' .. script, '--no-such-option' })
      assert.equal(2, r.code, script)
      assert.matches("unrecognized %a+ '%-%-no%-such%-option'", r.err)
      assert.equal('', r.out)
    end
    r = sub.run({ '--backend', 'cpu', ROOT .. '/scripts/llama4_rope.lua', '--hidden', '-5' })
    assert.equal(2, r.code)
    assert.matches("option '--hidden' needs a positive integer, got '-5'", r.err, 1, true)
  end)
end)

---------------------------------------------------------------------------
-- Data is parsed, never executed
---------------------------------------------------------------------------

describe('data files', function()
  it('are only parsed: the stdlib loads code only where the user names a script to run', function()
    -- the one place: `kluabench run SCRIPT` runs the script it is given
    local allowed = { ['commands/run.lua'] = 1 }
    local found = {}
    local p = io.popen('cd ' .. sub.q(ROOT .. '/stdlib/kluabench') .. ' && find . -name "*.lua"')
    for file in p:lines() do
      file = file:gsub('^%./', '')
      local n = 0
      for line in io.lines(ROOT .. '/stdlib/kluabench/' .. file) do
        local code = ' ' .. line:gsub('%-%-.*$', '') -- calls of the functions, not of fields named so
        if code:find('[^%w_.:]load%s*%(') or code:find('[^%w_.:]loadstring%s*%(')
            or code:find('[^%w_.:]dofile%s*%(') or code:find('[^%w_.:]loadfile%s*%(') then
          n = n + 1
        end
      end
      if n > 0 then found[file] = n end
    end
    p:close()
    assert.same(allowed, found)
  end)

  it('a record or CSV that holds Lua code is read as text', function()
    local dir = sub.tmpdir()
    local marker = dir .. '/executed'
    local code = 'os.execute("touch ' .. marker .. '")'
    sub.spit(dir .. '/code.json', code)
    sub.spit(dir .. '/code.jsonl', '{"run": "' .. code:gsub('"', '\\"') .. '"}\n' .. code .. '\n')
    local header = sub.slurp(ROOT .. '/tests/fuzz/corpus/csv/liger_speed.csv'):match('^[^\n]*\n')
    sub.spit(dir .. '/code.csv', header .. string.rep(code:gsub(',', ';') .. ',', 14) .. code .. '\n')
    assert.equal(1, sub.run({ 'verify', dir .. '/code.json' }).code)
    assert.equal(1, sub.run({ 'verify', dir .. '/code.jsonl' }).code)
    assert.equal(2, sub.run({ 'compare', dir .. '/code.json', dir .. '/code.jsonl' }).code)
    assert.equal(1, sub.run({ 'import-liger', dir .. '/code.csv' }).code)
    assert.is_nil(json.decode(code))
    assert.is_nil(io.open(marker, 'r'))
    os.execute('rm -rf ' .. sub.q(dir))
  end)
end)
