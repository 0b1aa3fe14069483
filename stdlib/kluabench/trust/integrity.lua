-- The timing and statistics functions as before the user's script (the host calls capture() first), and which a
-- script replaced: a policy_violation. The debug library and native code evade it (docs/TRUST.md).
local core = require 'kluabench.core'

local M = {}

-- The Lua modules whose functions decide a time or a check, loaded (and so bound) at capture time.
M.MODULES = {
  'kluabench.stats', 'kluabench.measure', 'kluabench.measure.do_bench', 'kluabench.kernels.check',
  'kluabench.trust', 'kluabench.trust.seeds',
}

-- The modules loaded only when a run asks for them, after the script: verify() checks that every function they hold
-- was defined in their stdlib file.
M.LATE = { 'kluabench.measure.session', 'kluabench.measure.cold', 'kluabench.measure.hot',
  'kluabench.measure.graph', 'kluabench.measure.stopping', 'kluabench.measure.clocks', 'kluabench.stats.inference' }

-- The engine's functions that time, synchronise, make inputs or compare.
M.CORE = {
  'event', 'elapsed_ms', 'synchronize', 'flush_l2', 'clock_ns', 'time_ns', 'spin', 'graph', 'randn', 'empty',
  'zeros', 'max_abs_diff', 'rel_l2', 'compare_elements', 'from_table',
}
M.CORE_TABLES = { 'trace', 'trust', 'process' }
-- The classes whose methods time or move data (registry names).
M.CLASSES = { 'kluabench.Event', 'kluabench.Tensor', 'kluabench.Graph', 'kluabench.PluginKernel', 'kluabench.Kernel' }

local captured -- {entries = {{label, get, value}}, modules = {name = table}}

local function functions_of(t, label, out, get_table)
  for k, v in pairs(t) do
    if type(k) == 'string' and type(v) == 'function' then
      out[#out + 1] = { label = label .. '.' .. k, table_of = get_table, key = k, value = v }
    end
  end
end

local function class_methods(name)
  local mt = debug.getregistry()[name]
  return type(mt) == 'table' and mt or nil
end

-- Takes the references (idempotent): loads the watched modules and records every function they and the engine
-- export, and the methods of the engine's classes. Returns how many are watched.
function M.capture()
  if captured then return #captured.entries end
  local c = { entries = {}, modules = {} }
  for _, name in ipairs(M.CORE) do
    if type(core[name]) == 'function' then
      c.entries[#c.entries + 1] = { label = 'kb.' .. name, table_of = function() return core end, key = name,
        value = core[name] }
    end
  end
  for _, name in ipairs(M.CORE_TABLES) do
    local t = core[name]
    if type(t) == 'table' then
      c.modules['kb.' .. name] = t
      functions_of(t, 'kb.' .. name, c.entries, function() return core[name] end)
    end
  end
  for _, name in ipairs(M.CLASSES) do
    local mt = class_methods(name)
    if mt then
      functions_of(mt, name, c.entries, function() return class_methods(name) end)
      if type(mt.__index) == 'table' then
        functions_of(mt.__index, name, c.entries, function()
          local m = class_methods(name)
          return m and m.__index
        end)
      end
    end
  end
  for _, name in ipairs(M.MODULES) do
    local ok, mod = pcall(require, name)
    if ok and type(mod) == 'table' then
      c.modules[name] = mod
      functions_of(mod, name, c.entries, function() return package.loaded[name] end)
    end
  end
  captured = c
  return #c.entries
end

-- Whether fn is a C function or was defined in file.
local function defined_in(fn, file)
  local info = debug.getinfo(fn, 'S')
  return info.what == 'C' or info.source == '@' .. file
end

function M.captured() return captured ~= nil end

-- The watched functions a script replaced or removed since capture(): a list of {what, message} (empty when none, or
-- when capture() never ran).
function M.verify()
  local out = {}
  if not captured then return out end
  for name, mod in pairs(captured.modules) do
    local now = name:sub(1, 3) == 'kb.' and core[name:sub(4)] or package.loaded[name]
    if now ~= mod then
      out[#out + 1] = { what = name, message = string.format('%s was replaced by the script (the harness times '
        .. 'with the original; a replaced timing or statistics module is not allowed)', name) }
    end
  end
  for _, e in ipairs(captured.entries) do
    local t = e.table_of()
    local now = type(t) == 'table' and rawget(t, e.key) or nil
    if now ~= e.value then
      local where, info = '', type(now) == 'function' and debug.getinfo(now, 'S') or nil
      if info and info.what ~= 'C' then
        where = string.format(' with a function of %s:%d', info.short_src, info.linedefined)
      end
      out[#out + 1] = { what = e.label, message = string.format('%s was %s by the script%s', e.label,
        now == nil and 'removed' or 'replaced', where) }
    end
  end
  for _, name in ipairs(M.LATE) do
    local mod, file = package.loaded[name], package.searchpath(name, package.path)
    if mod ~= nil and (type(mod) ~= 'table' or not file) then
      out[#out + 1] = { what = name, message = name .. ' was replaced by the script (not the stdlib module)' }
    elseif mod ~= nil then
      for k, v in pairs(mod) do
        if type(v) == 'function' and not defined_in(v, file) then
          out[#out + 1] = { what = name .. '.' .. tostring(k), message = string.format('%s.%s was replaced by the '
            .. 'script', name, tostring(k)) }
        end
      end
    end
  end
  table.sort(out, function(a, b) return a.what < b.what end)
  return out
end

return M
