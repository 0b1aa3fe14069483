-- The engine's C is grouped by role (engine/<role>/*.c, docs/ARCHITECTURE.md)
-- and no two of its files use each other's symbols round in a circle, as the
-- objects of the build say: nm lists what each object defines and what it
-- leaves undefined, and "a uses b" when a leaves undefined a symbol that b
-- defines. The role folders, drawn the same way, call one way only.
-- tests/layout_spec.lua reads the same from the sources; this reads what the
-- compiler made, the CUDA-only files of a CUDA build included.
local kb = require 'kluabench'
local util = require 'helpers.util'
local circles = require('helpers.graph').circles

local ROOT = package.searchpath('kluabench.kernels', package.path)
  :match('^(.-)/?stdlib/kluabench/kernels/init%.lua$')
local ROOT_DIR = ROOT ~= '' and ROOT or '.'
-- The build the running binary belongs to: its objects are in obj/ beside it.
local BUILD = kb.executable():match('^(.*)/[^/]*$')

local function lines(cmd)
  local p = assert(io.popen(cmd))
  local out = {}
  for l in p:lines() do out[#out + 1] = l end
  p:close()
  return out
end

-- The engine's C sources, relative to the root, sorted.
local function sources()
  return lines('cd ' .. util.q(ROOT_DIR) .. " && find engine -name '*.c' | sort")
end

-- What a file's folder is: engine/<role>/x.c -> "engine/<role>"; a file directly in engine/ is its
-- own folder.
local function folder(path) return path:match('^(engine/[^/]+)/[^/]+$') or path end

--- The symbols of one object from `nm -P`'s lines: defined (external) and undefined names.
local function symbols(nm_lines)
  local defined, undefined = {}, {}
  for _, l in ipairs(nm_lines) do
    local name, kind = l:match('^(%S+) (%a) ')
    if not name then name, kind = l:match('^(%S+) (%a)$') end
    if kind == 'U' or kind == 'w' then
      undefined[#undefined + 1] = name
    elseif kind and (kind:match('%u') or kind == 'i') then
      defined[#defined + 1] = name -- T D B R C G S V W, and i (GNU indirect function)
    end
  end
  return defined, undefined
end

--- file -> {file = {symbols}}: a uses b's symbols. objects: {file = {defined, undefined}}.
local function uses(objects)
  local owner = {}
  for f, o in pairs(objects) do
    for _, s in ipairs(o.defined) do owner[s] = owner[s] or f end
  end
  local graph = {}
  for f, o in pairs(objects) do
    graph[f] = {}
    for _, s in ipairs(o.undefined) do
      local b = owner[s]
      if b and b ~= f then
        graph[f][b] = graph[f][b] or {}
        table.insert(graph[f][b], s)
      end
    end
    for _, syms in pairs(graph[f]) do table.sort(syms) end
  end
  return graph
end

-- The folder graph of a file graph: folder -> {folder = {"a.c -> b.c (syms)"}}.
local function folders(graph)
  local out = {}
  for a, targets in pairs(graph) do
    local fa = folder(a)
    out[fa] = out[fa] or {}
    for b, syms in pairs(targets) do
      local fb = folder(b)
      if fa ~= fb then
        out[fa][fb] = out[fa][fb] or {}
        table.insert(out[fa][fb], string.format('%s -> %s (%s)', a, b, table.concat(syms, ', ')))
      end
    end
  end
  for _, targets in pairs(out) do
    for _, why in pairs(targets) do table.sort(why) end
  end
  return out
end

--- Each circle of graph (node -> {node = list}) with the edges inside it, one line each:
-- "circle: a b c", then "  a -> b: x, y" (describe turns an edge's list into text).
local function explain(graph, describe)
  local nodes = {}
  for v in pairs(graph) do nodes[#nodes + 1] = v end
  table.sort(nodes)
  local out = {}
  for _, c in ipairs(circles(nodes, graph)) do
    out[#out + 1] = 'circle: ' .. c
    local member = {}
    for v in c:gmatch('%S+') do member[v] = true end
    for v in c:gmatch('%S+') do
      local targets = {}
      for w in pairs(graph[v]) do if member[w] then targets[#targets + 1] = w end end
      table.sort(targets)
      for _, w in ipairs(targets) do out[#out + 1] = '  ' .. v .. ' -> ' .. w .. ': ' .. describe(graph[v][w]) end
    end
  end
  return out
end

local function by_symbols(syms) return table.concat(syms, ', ') end
local function by_files(why) return table.concat(why, '; ') end

-- The objects of this build for the engine's sources: {file = {defined, undefined}} and how many,
-- or nil and why the check cannot run here.
local function built_objects()
  if #lines('command -v nm') == 0 then return nil, 'nm is not installed (binutils): the objects cannot be read' end
  local objects, n, stale = {}, 0, {}
  for _, src in ipairs(sources()) do
    local obj = BUILD .. '/obj/' .. src:gsub('%.c$', '.o')
    local f = io.open(obj, 'rb')
    if f then
      f:close()
      local newer = lines('[ ' .. util.q(ROOT_DIR .. '/' .. src) .. ' -nt ' .. util.q(obj) .. ' ] && echo newer')
      if #newer > 0 then stale[#stale + 1] = src end
      local defined, undefined = symbols(lines('nm -P ' .. util.q(obj)))
      objects[src] = { defined = defined, undefined = undefined }
      n = n + 1
    end
  end
  if n == 0 then
    return nil, 'no engine objects under ' .. BUILD .. '/obj/engine/ (the binary was not built from this checkout: run make)'
  end
  if #stale > 0 then
    return nil, 'the build is older than ' .. table.concat(stale, ', ') .. ' (run make first)'
  end
  return objects, n
end

describe('engine layout (the built objects)', function()
  it('keeps every C file of the engine in a role folder, none directly in engine/', function()
    local loose = lines('cd ' .. util.q(ROOT_DIR) .. " && find engine -maxdepth 1 -type f -name '*.[ch]' | sort")
    assert.same({}, loose)
    local roles = {}
    for _, src in ipairs(sources()) do roles[folder(src)] = true end
    for _, role in ipairs { 'engine/host', 'engine/core', 'engine/backend', 'engine/usercode', 'engine/os' } do
      assert.is_true(roles[role] or false, role .. ' holds no C file')
    end
  end)

  local objects, why = built_objects()
  local function check(name, fn)
    if objects then it(name, fn) else pending(name .. ' (' .. why .. ')') end
  end

  check('has no circle of files by their symbols (a uses a symbol b defines)', function()
    local n = 0
    for _ in pairs(objects) do n = n + 1 end
    assert.is_true(n > 20, n .. ' objects')
    local graph = uses(objects)
    local edges = 0 -- the symbols were read: the files use each other
    for _, targets in pairs(graph) do for _ in pairs(targets) do edges = edges + 1 end end
    assert.is_true(edges > 20, edges .. ' uses')
    local found = explain(graph, by_symbols)
    assert(#found == 0, 'the engine\'s files use each other round in a circle:\n' .. table.concat(found, '\n'))
  end)

  check('has role folders that call one way only (host, usercode, os, core, backend)', function()
    local found = explain(folders(uses(objects)), by_files)
    assert(#found == 0, 'the role folders use each other round in a circle:\n' .. table.concat(found, '\n'))
  end)

  it('would find a circle and a file outside the role folders (the checks check)', function()
    local a = { symbols({ 'kb_a T 0 10', 'kb_b U', 'printf U', 'helper t 10 4', '.LC0 r 0' }) }
    local b = { symbols({ 'kb_b T 0 10', 'kb_c U' }) }
    local c = { symbols({ 'kb_c D 0 8', 'kb_a U', 'kb_weak W 0 4' }) }
    assert.same({ 'kb_a' }, a[1])
    assert.same({ 'kb_b', 'printf' }, a[2])
    local graph = uses {
      ['engine/x/a.c'] = { defined = a[1], undefined = a[2] },
      ['engine/y/b.c'] = { defined = b[1], undefined = b[2] },
      ['engine/y/c.c'] = { defined = c[1], undefined = c[2] },
    }
    assert.same({
      'circle: engine/x/a.c engine/y/b.c engine/y/c.c',
      '  engine/x/a.c -> engine/y/b.c: kb_b',
      '  engine/y/b.c -> engine/y/c.c: kb_c',
      '  engine/y/c.c -> engine/x/a.c: kb_a',
    }, explain(graph, by_symbols))
    assert.same({
      'circle: engine/x engine/y',
      '  engine/x -> engine/y: engine/x/a.c -> engine/y/b.c (kb_b)',
      '  engine/y -> engine/x: engine/y/c.c -> engine/x/a.c (kb_a)',
    }, explain(folders(graph), by_files))
    assert.equal('engine/core', folder('engine/core/tensor.c'))
    assert.equal('engine/tensor.c', folder('engine/tensor.c'))
  end)
end)
