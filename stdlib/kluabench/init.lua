--- `local kb = require "kluabench"`: the engine's C core (kb.version,
-- kb.randn, kb.rope, kb.event, kb.jcs, kb.digest, ...) with the Lua stdlib
-- reachable from it as kb.<name> (stdlib/kluabench/modules.lua: kb.do_bench
-- is stdlib/kluabench/measure/do_bench.lua), and any other module
-- stdlib/kluabench/<name>.lua or <name>/init.lua as kb.<name>.
-- A submodule is loaded the first time it is used, so `require "kluabench"`
-- stays cheap. Submodules themselves require "kluabench.core" (never
-- "kluabench"), which keeps the loading free of cycles.
local core = require 'kluabench.core'

-- kb.<name> → the module it loads (stdlib/kluabench/modules.lua).
local modules = require 'kluabench.modules'

-- Names already looked up and not found as modules, so that a typo such as
-- kb.statz costs one search and then simply reads nil, as for any table.
local missing = {}

local function module_of(name)
  if type(name) ~= 'string' then return nil end
  if modules.module(name) then return modules.module(name) end
  if missing[name] or not name:match('^[%a_][%w_]*$') then return nil end
  local modname = 'kluabench.' .. name
  if package.loaded[modname] or package.preload[modname]
      or package.searchpath(modname, package.path) then
    return modname
  end
  missing[name] = true
  return nil
end

local mt = getmetatable(core) or {}
local previous = mt.__index

mt.__index = function(t, name)
  local modname = module_of(name)
  if modname then
    local m = require(modname)
    rawset(t, name, m)
    return m
  end
  if type(previous) == 'function' then return previous(t, name) end
  if type(previous) == 'table' then return previous[name] end
  return nil
end

-- mt.fields: every name __index can load, for the REPL's completion
-- (engine/host/repl.c reads a metatable's `fields` raw, and reads a listed
-- field that is not loaded yet through __index): the short names above and
-- the modules found beside this file.
local function loadable_names()
  local names = {}
  for name in pairs(modules.MODULES) do names[name] = true end
  local here = package.searchpath('kluabench.init', package.path)
  local host = package.loaded['kluabench.host']
  local entries = here and host and host.listdir and host.listdir((here:gsub('/init%.lua$', ''))) or {}
  for _, e in ipairs(entries) do
    local name = e:match('^([%a_][%w_]*)%.lua$') or e:match('^([%a_][%w_]*)$')
    if name and name ~= 'init' and name ~= 'modules' and module_of(name) then names[name] = true end
  end
  return names
end
mt.fields = loadable_names()

return setmetatable(core, mt)
