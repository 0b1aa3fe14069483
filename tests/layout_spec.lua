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
      if not line:match('^%s*%-%-') and (line:match('^%s*local%s+function%s') or line:match('^%s*function%s')
          or line:match('=%s*function%s*%(')) then
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

  -- Runs the seed's default run (scripts/llama4_rope.lua, no options) in a binary of its own with
  -- `before` and `after` (Lua chunks) around it; what after writes to stdout.
  -- (a script of its own, so that the binary starts it as it starts the seed's)
  local function seed_run(before, after, args)
    local sub = require 'helpers.subprocess'
    local script = sub.root() .. '/scripts/llama4_rope.lua'
    local words = {}
    for i, a in ipairs(args or {}) do words[i] = string.format('%q', a) end
    local dir = util.tmpdir()
    local out = dir .. '/out.jsonl'
    for i, w in ipairs(words) do words[i] = w:gsub('@OUT@', out) end
    util.spit(dir .. '/seed.lua', string.format('OUT = %q\n', out) .. before
      .. string.format('\narg = { [0] = %q, %s }\ndofile(%q)\n', script, table.concat(words, ', '), script) .. after)
    local r = sub.run({ '--backend', 'cpu', '--quiet', dir .. '/seed.lua' })
    os.execute('rm -rf ' .. util.q(dir))
    assert(r.code == 0, r.err)
    return r.out
  end

  it("keeps the seed's default run within 30 modules and 8,000 lines of Lua (docs/ARCHITECTURE.md)", function()
    local out = seed_run('', [[
      local n, lines, list = 0, 0, {}
      for name in pairs(package.loaded) do
        local path = (name == 'kluabench' or name:match('^kluabench%.')) and package.searchpath(name, package.path)
        if path then
          local c = 0
          for _ in io.lines(path) do c = c + 1 end
          n, lines = n + 1, lines + c
          list[#list + 1] = string.format('%5d %s', c, name)
        end
      end
      table.sort(list)
      io.write('COUNT ', n, ' ', lines, '\n', table.concat(list, '\n'), '\n')]])
    local n, lines = out:match('\nCOUNT (%d+) (%d+)\n')
    assert.is_true(tonumber(n) <= 30, n .. ' modules:\n' .. out)
    assert.is_true(tonumber(lines) <= 8000, lines .. ' lines:\n' .. out)
  end)

  it('has one timed sample cross only the Lua files docs/ARCHITECTURE.md lists for it, at most 15 files in all', function()
    local doc = assert(util.slurp((ROOT ~= '' and ROOT .. '/' or '') .. 'docs/ARCHITECTURE.md'))
    local part = assert(doc:match('\n## One timed sample\n(.-)\n## '), 'no section "One timed sample"')
    local listed, n = {}, 0
    for path in part:gmatch('\n%d+%. `([^`]+)`') do listed[path], n = true, n + 1 end
    assert.is_true(n >= 5 and n <= 15, n .. ' files listed')
    -- every Lua function called while the protocol measures (the audits off: their samples are not
    -- timed ones), by file
    local out = seed_run([[
      local measure = require 'kluabench.measure'
      local Protocol = getmetatable(measure.protocol { name = 'x', run = function() return { 1 } end }).__index
      local run, seen = Protocol.run, {}
      Protocol.run = function(self, fn, ctx)
        debug.sethook(function()
          local src = debug.getinfo(2, 'S').source
          if src:sub(1, 1) == '@' then seen[src:sub(2)] = true end
        end, 'c')
        local r = table.pack(pcall(run, self, fn, ctx))
        debug.sethook()
        if not r[1] then error(r[2], 0) end
        return table.unpack(r, 2, r.n)
      end
      _G.SEEN = seen]], [[
      for path in pairs(SEEN) do io.write('SEEN ', path, '\n') end]], { '--audits', '0' })
    local root = require('helpers.subprocess').root() .. '/'
    local extra = {}
    for path in out:gmatch('SEEN ([^\n]+)') do
      local rel = path:sub(1, #root) == root and path:sub(#root + 1) or path
      if rel:match('^stdlib/') and not listed[rel] then extra[#extra + 1] = rel end
    end
    table.sort(extra)
    assert.same({}, extra)
  end)

  -- The seams docs/ARCHITECTURE.md names, kept honest: a protocol is its file and its name in measure.MODES, a
  -- statistic its quantile in measure.QUANTILES; the harness, the records, the result model and the table follow.
  it('takes a new protocol from its module and its name in measure.MODES: the harness runs it, records name it',
    function()
      local out = seed_run([[
        local measure = require 'kluabench.measure'
        local session = require 'kluabench.measure.session'
        -- a toy protocol: one call per sample, nothing flushed, the host's hold skipped
        package.preload['kluabench.measure.toy'] = function()
          local M = { name = 'toy' }
          function M.setup(self, fn)
            local e0, e1 = self.ctx.event(), self.ctx.event()
            self.warmup_fn = function() session.warm(self, function() return session.timed_once(self.ctx, e0, e1, fn) end) end
            self.take = function() return session.timed_once(self.ctx, e0, e1, fn) end
          end
          M.what = { title = 'toy protocol', method = 'tests/layout_spec.lua', sample = 'one call', l2Flush = 'none',
            launchOverhead = 'in the sample', hides = 'nothing it knows of' }
          function M.make(params) return session.protocol(M, params) end
          function M.measure(fn, opts, ctx) return session.measure(M, fn, opts, ctx) end
          return M
        end
        measure.MODES[#measure.MODES + 1] = 'toy']], [[
        local b = require('kluabench.record.reader').read(OUT)[1]
        local s = require('kluabench.result').session(b)
        io.write('PROTOCOL ', s.protocol, ' ', s.status, ' ', tostring(s.n), '\n')]],
        { '--protocol', 'toy', '--hidden', '64', '--seq', '16', '--format', 'jsonl', '--out', '@OUT@' })
      local protocol, status, n = out:match('PROTOCOL (%S+) (%S+) (%d+)')
      assert.equal('toy', protocol, out)
      assert.equal('passed', status)
      assert.is_true(tonumber(n) > 0)
    end)

  it('carries a new statistic from measure.QUANTILES alone: a p99 in the record, the point and the table', function()
    local out = seed_run([[
      local measure = require 'kluabench.measure'
      measure.QUANTILES[#measure.QUANTILES + 1] = 0.99]], [[
      local bundles = require('kluabench.record.reader').read(OUT)
      local s = require('kluabench.result').session(bundles[1])
      local p = require('kluabench.result').points(bundles)[1]
      io.write('P99 ', tostring(s.p99_ns), ' ', tostring(p.p99_ns), ' ', tostring(s.p80_ns), '\n')
      io.write(require('kluabench.table').results_table(bundles))]],
      { '--hidden', '64', '--seq', '16', '--format', 'jsonl', '--out', '@OUT@' })
    local sp99, pp99, p80 = out:match('P99 (%S+) (%S+) (%S+)')
    assert.is_true(tonumber(sp99) >= tonumber(p80), out)
    assert.is_true(math.abs(tonumber(sp99) - tonumber(pp99)) <= 1, out) -- the record rounds to whole ns
    assert.matches('p99 us', out, 1, true)
  end)

  it('would catch an upward require, a lazy one and a circle (the checks check)', function()
    local fake = {
      { name = 'kluabench.util.x', text = "local r = require 'kluabench.record'\n" },
      { name = 'kluabench.record', text = "local function f() return require('kluabench.util.x') end\n" },
    }
    local graph = require_graph(fake)
    assert.equal(1, graph['kluabench.util.x']['kluabench.record'])
    assert.equal(1, graph['kluabench.record']['kluabench.util.x']) -- lazy
    assert.is_true(layers.layer_of('kluabench.record') > layers.layer_of('kluabench.util.x'))
    assert.same({ 'kluabench.record kluabench.util.x' }, circles({ 'kluabench.util.x', 'kluabench.record' }, graph))
    local lit, computed = requires.scan("-- require 'kluabench.a'\nlocal s = \"require 'kluabench.b'\"\n"
      .. "local ok, c = pcall(require, 'kluabench.c')\nlocal d = require('kluabench.' .. name)\n")
    assert.same({ { name = 'kluabench.c', line = 3 } }, lit)
    assert.equal(1, #computed)
    assert.equal(4, computed[1].line)
  end)
end)
