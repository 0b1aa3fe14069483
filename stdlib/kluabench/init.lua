--- `local kb = require "kluabench"`: the engine's C core (kb.version,
-- kb.randn, kb.rope, kb.event, kb.jcs, kb.digest, ...) with the Lua stdlib
-- reachable from it: kb.stats, kb.bench, kb.record, kb.env, kb.output,
-- kb.names, kb.liger, and any other stdlib/kluabench/<name>.lua as kb.<name>.
-- A submodule is loaded the first time it is used, so `require "kluabench"`
-- stays cheap. Submodules themselves require "kluabench.core" (never
-- "kluabench"), which keeps the loading free of cycles.
local core = require 'kluabench.core'

-- The stdlib modules that kb.<name> loads; others are found by name below.
local SUBMODULES = { stats = true, bench = true, record = true, env = true, output = true,
  names = true, liger = true, cli = true, progress = true }

-- Names already looked up and not found as modules, so that a typo such as
-- kb.statz costs one search and then simply reads nil, as for any table.
local missing = {}

local function loadable(name)
  if SUBMODULES[name] then return true end
  if missing[name] or type(name) ~= 'string' or not name:match('^[%a_][%w_]*$') then return false end
  local modname = 'kluabench.' .. name
  if package.loaded[modname] or package.preload[modname]
      or package.searchpath(modname, package.path) then
    return true
  end
  missing[name] = true
  return false
end

local mt = getmetatable(core) or {}
local previous = mt.__index

mt.__index = function(t, name)
  if loadable(name) then
    local m = require('kluabench.' .. name)
    rawset(t, name, m)
    return m
  end
  if type(previous) == 'function' then return previous(t, name) end
  if type(previous) == 'table' then return previous[name] end
  return nil
end

return setmetatable(core, mt)
