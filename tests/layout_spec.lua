-- The engine's files keep out of each other's way: a header declares only
-- what its own .c file defines (repl.h is the REPL, host.h what main.c and
-- repl.c share), timing.c knows neither tensors nor graphs, and no two files
-- call each other's functions round in a circle (the helpers every binding
-- shares live in files of their own: errors.c, device.c, usercode.c). The
-- stdlib's modules require downward only, by the layers of
-- stdlib/kluabench/layers.lua, and never round in a circle.
local util = require 'helpers.util'
local circles = require('helpers.graph').circles

local ROOT = package.searchpath('kluabench.kernels', package.path)
  :match('^(.-)/?stdlib/kluabench/kernels/init%.lua$')
local function file(path) return assert(util.slurp((ROOT ~= '' and ROOT .. '/' or '') .. path), path) end

-- The functions a header declares: "type name(" at the start of a line.
local function declared(text)
  local out = {}
  for name in text:gmatch('\n[%w_ %*]-[%s%*]([%a_][%w_]*)%(') do out[#out + 1] = name end
  return out
end

describe('engine layout', function()
  for _, pair in ipairs { { 'engine/host/repl.h', 'engine/host/repl.c' }, { 'engine/host/host.h', 'engine/host/host.c' } } do
    it(pair[1] .. ' declares only what ' .. pair[2] .. ' defines', function()
      local names, c = declared(file(pair[1])), file(pair[2])
      assert.is_true(#names > 0)
      for _, name in ipairs(names) do
        assert.is_truthy(c:find('\n[%w_ %*]-[%s%*]' .. name .. '%b()%s*{'), name .. ' is not defined in ' .. pair[2])
      end
    end)
  end

  it('repl.c calls nothing of main.c', function()
    local repl = file('engine/host/repl.c')
    for _, name in ipairs { 'parse_args', 'open_host', 'pmain', 'set_paths', 'l_message' } do
      assert.is_nil(repl:find(name, 1, true), name)
    end
  end)

  it('timing.c knows neither tensors nor graphs (graph.c pins what a capture uses)', function()
    local timing = file('engine/core/timing.c')
    for _, word in ipairs { 'kb_tensor', 'kb_capture_note', 'Graph', 'graph_begin' } do
      assert.is_nil(timing:find(word, 1, true), word)
    end
    assert.is_truthy(file('engine/core/graph.c'):find('\nvoid kb_capture_note%('))
  end)

  -- The functions each engine .c file defines for the others (not static)
  -- and the files each one calls them in: file -> {file = {names}}.
  local function calls()
    local p = assert(io.popen('cd ' .. util.q(ROOT ~= '' and ROOT or '.') .. " && find engine -name '*.c' | sort"))
    local files, text, def = {}, {}, {}
    for f in p:lines() do files[#files + 1] = f end
    p:close()
    for _, f in ipairs(files) do
      text[f] = file(f)
      for name in text[f]:gmatch('\n[%w_][%w_ %*]-[%s%*]([%a_][%w_]*)%([^;{]-%)%s*{') do
        if not text[f]:find('\nstatic[^\n]-[%s%*]' .. name .. '%(') then def[name] = def[name] or f end
      end
    end
    local graph = {}
    for _, f in ipairs(files) do
      graph[f] = {}
      local code = text[f]:gsub('/%*.-%*/', '')
      for name, where in pairs(def) do
        if where ~= f and code:find('%f[%w_]' .. name .. '%(') then
          graph[f][where] = graph[f][where] or {}
          table.insert(graph[f][where], name)
        end
      end
    end
    return files, graph
  end

  it('has no circle of calls between engine files', function()
    local files, graph = calls()
    assert.is_true(#files > 20)
    -- the helpers of every binding are out of tensor.c (errors.c, device.c) and kb.cuda's
    -- opener out of signature.c (usercode.c), so that graph.c and tensor.c, and module.c,
    -- nvrtc.c, plugin.c and signature.c, no longer call each other round in a circle
    assert.is_truthy(graph['engine/core/graph.c']['engine/core/errors.c'])
    assert.is_nil(graph['engine/core/graph.c']['engine/core/tensor.c'])
    assert.is_truthy(graph['engine/core/tensor.c']['engine/core/graph.c'])
    assert.is_nil(graph['engine/usercode/signature.c']['engine/usercode/module.c'])
    assert.is_truthy(graph['engine/usercode/usercode.c']['engine/usercode/signature.c'])
    -- the backends record their kernels into the trace buffer (backend/trace_buffer.c), not
    -- into kb.trace (core/trace.c), which reads a device argument (core/device.c) that names
    -- the backends; tests/engine_layout_spec.lua checks the same on the built objects
    assert.is_truthy(graph['engine/backend/backend_cpu.c']['engine/backend/trace_buffer.c'])
    assert.is_nil(graph['engine/backend/backend_cpu.c']['engine/core/trace.c'])
    assert.same({}, circles(files, graph))
  end)
end)

describe('stdlib layout', function()
  local layers = require 'kluabench.layers'
  local requires = require 'helpers.requires'
  local STDLIB = (ROOT ~= '' and ROOT .. '/' or '') .. 'stdlib/'

  -- Every module of stdlib/kluabench/ (not stdlib/compat/, the old names): {name, path, text}.
  local function modules()
    local p = assert(io.popen('cd ' .. util.q(STDLIB) .. " && find kluabench -name '*.lua' | sort"))
    local out = {}
    for path in p:lines() do
      local name = path:gsub('%.lua$', ''):gsub('/init$', ''):gsub('/', '.')
      out[#out + 1] = { name = name, path = 'stdlib/' .. path, text = assert(util.slurp(STDLIB .. path)) }
    end
    p:close()
    return out
  end

  local ENGINE = { ['kluabench.core'] = true, ['kluabench.host'] = true }

  -- module -> {required module = line}, the stdlib's modules only.
  local function require_graph(list)
    local known, graph = {}, {}
    for _, m in ipairs(list) do known[m.name] = true end
    for _, m in ipairs(list) do
      graph[m.name] = {}
      for _, r in ipairs((requires.scan(m.text))) do
        if known[r.name] then graph[m.name][r.name] = graph[m.name][r.name] or r.line end
      end
    end
    return graph
  end

  it('puts every module in a layer', function()
    local list, lost = modules(), {}
    assert.is_true(#list > 80)
    for _, m in ipairs(list) do
      if not layers.layer_of(m.name) then lost[#lost + 1] = m.name end
    end
    assert.same({}, lost)
  end)

  it('requires only modules of the stdlib, of the engine and of Lua', function()
    local list, known, unknown = modules(), {}, {}
    for _, m in ipairs(list) do known[m.name] = true end
    for _, m in ipairs(list) do
      for _, r in ipairs((requires.scan(m.text))) do
        local ok = known[r.name] or ENGINE[r.name] or r.name == 'cjson' or not r.name:match('^kluabench')
        if not ok then unknown[#unknown + 1] = string.format('%s:%d: %s', m.path, r.line, r.name) end
      end
    end
    assert.same({}, unknown)
  end)

  it('requires no module of a layer above, lazy requires included', function()
    local list, upward = modules(), {}
    local graph = require_graph(list)
    local path = {}
    for _, m in ipairs(list) do path[m.name] = m.path end
    for from, targets in pairs(graph) do
      local i, l = layers.layer_of(from)
      for to, line in pairs(targets) do
        local j, k = layers.layer_of(to)
        if j > i then
          upward[#upward + 1] = string.format('%s:%d: %s (%s) requires %s (%s)', path[from], line, from, l.name, to,
            k.name)
        end
      end
    end
    table.sort(upward)
    assert.same({}, upward)
  end)

  it('has no circle of requires, lazy ones included', function()
    local list = modules()
    local graph = require_graph(list)
    local names = {}
    for _, m in ipairs(list) do names[#names + 1] = m.name end
    local found = circles(names, graph)
    assert.same({}, found)
  end)

  -- The line of a file's first function definition (its header ends there), or nil.
  local function first_function(text)
    local n = 0
    for line in (text .. '\n'):gmatch('([^\n]*)\n') do
      n = n + 1
      if line:match('^%s*local%s+function%s') or line:match('^%s*function%s') or line:match('=%s*function%s*%(') then
        return n
      end
    end
    return nil
  end

  it('requires at the top of a file, before its first function, except where layers.LAZY says why', function()
    local list, hidden, used = modules(), {}, {}
    for _, m in ipairs(list) do
      local first = first_function(m.text)
      for _, r in ipairs((requires.scan(m.text))) do
        if first and r.line > first then
          if layers.LAZY[m.name] and layers.LAZY[m.name][r.name] then
            used[m.name .. ' ' .. r.name] = true
          else
            hidden[#hidden + 1] = string.format('%s:%d: %s', m.path, r.line, r.name)
          end
        end
      end
    end
    assert.same({}, hidden)
    for name, targets in pairs(layers.LAZY) do
      for target in pairs(targets) do assert.is_true(used[name .. ' ' .. target] or false, name .. ' ' .. target) end
    end
  end)

  it('keeps the core from the optional subsystems: no core module requires one by name', function()
    local list, bad = modules(), {}
    for _, m in ipairs(list) do
      local _, l = layers.layer_of(m.name)
      if l and not l.optional then
        for _, r in ipairs((requires.scan(m.text))) do
          local _, k = layers.layer_of(r.name)
          if k and k.optional then bad[#bad + 1] = string.format('%s:%d: %s', m.path, r.line, r.name) end
        end
      end
    end
    assert.same({}, bad)
  end)

  it('requires a computed name only where layers.DYNAMIC says why', function()
    local list, bad, used = modules(), {}, {}
    for _, m in ipairs(list) do
      local _, computed = requires.scan(m.text)
      for _, c in ipairs(computed) do
        if layers.DYNAMIC[m.name] then
          used[m.name] = true
        else
          bad[#bad + 1] = string.format('%s:%d: require%s', m.path, c.line, c.text)
        end
      end
    end
    assert.same({}, bad)
    for name in pairs(layers.DYNAMIC) do assert.is_true(used[name] or false, name .. ' has no such require') end
  end)

  it('is the order docs/ARCHITECTURE.md draws: its table of layers is layers.LAYERS', function()
    local doc = assert(util.slurp((ROOT ~= '' and ROOT .. '/' or '') .. 'docs/ARCHITECTURE.md'))
    local part = assert(doc:match("\n## The stdlib's layers\n(.-)\n## "), "no section \"The stdlib's layers\"")
    local rows = {}
    for name, mods in part:gmatch('\n| ([%w_]+) | ([^|]+) |') do
      if name ~= 'layer' then
        local list = {}
        for m in mods:gmatch('`([%w_.]+)`') do list[#list + 1] = m end
        rows[#rows + 1] = { name = name, modules = list }
      end
    end
    local want = {}
    for i, l in ipairs(layers.LAYERS) do want[i] = { name = l.name, modules = l.modules } end
    assert.same(want, rows)
  end)

  it('would catch an upward require, a lazy one and a circle (the checks check)', function()
    local fake = {
      { name = 'kluabench.io.x', text = "local r = require 'kluabench.record'\n" },
      { name = 'kluabench.record', text = "local function f() return require('kluabench.io.x') end\n" },
    }
    local graph = require_graph(fake)
    assert.equal(1, graph['kluabench.io.x']['kluabench.record'])
    assert.equal(1, graph['kluabench.record']['kluabench.io.x']) -- lazy
    assert.is_true(layers.layer_of('kluabench.record') > layers.layer_of('kluabench.io.x'))
    assert.same({ 'kluabench.io.x kluabench.record' }, circles({ 'kluabench.io.x', 'kluabench.record' }, graph))
    local lit, computed = requires.scan("-- require 'kluabench.a'\nlocal s = \"require 'kluabench.b'\"\n"
      .. "local ok, c = pcall(require, 'kluabench.c')\nlocal d = require('kluabench.' .. name)\n")
    assert.same({ { name = 'kluabench.c', line = 3 } }, lit)
    assert.equal(1, #computed)
    assert.equal(4, computed[1].line)
  end)
end)
