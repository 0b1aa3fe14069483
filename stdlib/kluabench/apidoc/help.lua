--- help(x): the API documentation at the prompt, from the entries of
-- kluabench.apidoc (the same source as docs/API.md).
--
--   help()                      an overview: every section and its names
--   help(kb.rope.llama4_fwd)    a function, found by identity
--   help("llama4_fwd")          a name: full ("kb.rope.llama4_fwd"), short
--   help("t:to")                ("llama4_fwd"), a method ("t:to",
--   help("verify")              "Tensor:to") or a command ("verify")
--   help(kb.rope), help(t)      a group: a module table, a tensor, "stats"
--
-- An unknown name lists the entries whose names contain it. The REPL turns
-- `?name` into help("name"); `require('kluabench.apidoc.help').install()` sets
-- the global `help` anywhere else.
local apidoc = require 'kluabench.apidoc'

local M = {}
local args = require 'kluabench.util.args'
local commands = require 'kluabench.commands.helpers'

local WIDTH = 78

---------------------------------------------------------------------------
-- Resolving entries to the values they document
---------------------------------------------------------------------------

local function load_module(name)
  local loaded = package.loaded[name]
  if loaded ~= nil then return loaded end
  local ok, mod = pcall(require, name)
  if ok then return mod end
  return nil
end

-- The table holding the methods of an object (an entry of apidoc.objects).
local function find_methods(obj)
  if obj.metatable then
    local mt = debug.getregistry()[obj.metatable]
    if type(mt) ~= 'table' then
      load_module('kluabench') -- the metatables exist once the engine is open
      mt = debug.getregistry()[obj.metatable]
    end
    if type(mt) ~= 'table' then return nil end
    if type(mt.methods) == 'table' then return mt.methods end
    if type(mt.__index) == 'table' then return mt.__index end
    return nil
  end
  if obj.field then
    local mod = load_module(obj.module)
    return type(mod) == 'table' and mod[obj.field] or nil
  end
  local ok, instance = pcall(obj.make)
  local mt = ok and getmetatable(instance)
  return type(mt) == 'table' and type(mt.__index) == 'table' and mt.__index or nil
end

-- Method tables found so far, so that objects made to find them (a
-- measurement session, a clock monitor) are made once.
local methods_of = {}

local function method_table(obj)
  local m = methods_of[obj]
  if m == nil then
    m = find_methods(obj)
    if m ~= nil then methods_of[obj] = m end
  end
  return m
end

--- The methods of an object prefix of the documentation ("t", "ev", "session", ...).
--
-- @signature help.methods(prefix) -> table | nil
-- @example
--   for name in pairs(require("kluabench.apidoc.help").methods("t")) do print(name) end
function M.methods(prefix)
  args.check('help.methods', 1, prefix, 'string', 'object prefix ("t", "ev", ...)')
  local obj = apidoc.objects[prefix]
  return obj and method_table(obj) or nil
end

-- Splits a name into its parts: "kb.rope.freqs" -> "kb", {"rope", "freqs"}, ".";
-- "t:to" -> "t", {"to"}, ":"; "kluabench plot" -> "kluabench", {"plot"}, " ".
local function split(name)
  local head, sep, rest = name:match('^([%w_]+)([%.: ])(.+)$')
  if not head then return name, {}, nil end
  local path = {}
  for part in rest:gmatch('[^%.]+') do path[#path + 1] = part end
  return head, path, sep
end

--- The value an entry documents (nil for properties and commands).
--
-- The value an entry documents (a function, a table, a number...), or nil for properties and
-- commands (see M.exists) or when it cannot be found.
--
-- @signature help.resolve(entry) -> value | nil
-- @example
--   local h = require("kluabench.apidoc.help")
--   assert(h.resolve(h.find("kb.randn")[1]) == kb.randn)
function M.resolve(entry)
  args.check('help.resolve', 1, entry, 'table', 'apidoc entry')
  local head, path, sep = split(entry.name)
  local v
  local obj = apidoc.objects[head]
  if entry.path then
    v = load_module(entry.path[1])
    path = table.move(entry.path, 2, #entry.path, 1, {})
  elseif sep == '.' and obj and obj.functions and entry.kind ~= 'property' then
    v = load_module(obj.functions) -- session.new: a function of the object's module
  elseif sep == ':' or (sep == '.' and obj) then
    if entry.kind == 'property' then return nil end
    v = method_table(apidoc.objects[head] or {})
  elseif sep == '.' and apidoc.modules[head] then
    v = load_module(apidoc.modules[head])
  else
    return nil
  end
  for _, k in ipairs(path) do
    if type(v) ~= 'table' then return nil end
    v = rawget(v, k)
  end
  return v
end

--- The module that holds a command: "kluabench plot" -> kluabench.charts.plot_command.
--
-- @signature help.command_module(entry) -> module name
-- @example
--   print(require("kluabench.apidoc.help").command_module({name = "kluabench import-liger"}))
function M.command_module(entry)
  args.check('help.command_module', 1, entry, 'table', 'apidoc entry')
  local cmd = entry.name:match('^kluabench ([%w%-]+)')
  local c = cmd and commands.find(cmd)
  return c and c.module and (c.module) or nil
end

--- Whether what an entry documents exists in this build.
--
-- Properties are read from a small cpu tensor; a command exists when the CLI knows it and its
-- module is there.
--
-- @signature help.exists(entry) -> boolean
-- @example
--   local h = require("kluabench.apidoc.help")
--   for _, e in ipairs(require("kluabench.apidoc").entries) do assert(h.exists(e), e.name) end
function M.exists(entry)
  args.check('help.exists', 1, entry, 'table', 'apidoc entry')
  if entry.kind == 'property' then
    local kb = load_module('kluabench')
    if not kb or not kb.empty then return false end
    local t = kb.empty({ 1 }, 'f32', 'cpu')
    local prop = entry.name:match('%.([%w_]+)$')
    local ok, v = pcall(function() return t[prop] end)
    t:free()
    return ok and v ~= nil
  end
  if entry.kind == 'command' then
    local cmd = entry.name:match('^kluabench ([%w%-]+)')
    local helpers = load_module('kluabench.commands.helpers')
    local c = type(helpers) == 'table' and helpers.find and helpers.find(cmd)
    if not c then return false end
    if not c.module then return true end -- built into the CLI (help)
    return package.searchpath(c.module, package.path) ~= nil
  end
  return M.resolve(entry) ~= nil
end

---------------------------------------------------------------------------
-- Finding entries
---------------------------------------------------------------------------

-- Object prefixes by their titles: "Tensor" -> "t".
local function object_by_title()
  local map = {}
  for prefix, obj in pairs(apidoc.objects) do
    map[obj.title:lower()] = prefix
    map[obj.title:match('^%S+'):lower()] = prefix -- "Session (kluabench.measure)" -> "session"
    map[prefix] = prefix
  end
  return map
end

-- The spellings a query may stand for: "kluabench.stats.median" is also
-- "stats.median"; "kluabench.rope.freqs" is "kb.rope.freqs"; "Tensor:to"
-- and "tensor.to" are "t:to".
local function spellings(q)
  local out = { q }
  local rest = q:match('^kluabench%.(.+)$')
  if rest then
    out[#out + 1] = 'kb.' .. rest
    out[#out + 1] = rest
  end
  -- a stdlib module as kb reaches it: "kb.suite.main" is "suite.main"
  local field, member = q:match('^kb%.([%a_][%w_]*)(.*)$')
  if field and field ~= 'kb' and apidoc.modules[field] then out[#out + 1] = field .. member end
  -- a stdlib module by its full name: "kluabench.charts.plot" is "plot"
  for prefix, modname in pairs(apidoc.modules) do
    if q == modname then out[#out + 1] = prefix
    elseif q:sub(1, #modname + 1) == modname .. '.' then out[#out + 1] = prefix .. q:sub(#modname + 1) end
  end
  local obj, sep, member = q:match('^([%a_]+)([%.:])([%w_]+)$')
  if obj then
    local prefix = object_by_title()[obj:lower()]
    if prefix then
      out[#out + 1] = prefix .. ':' .. member
      out[#out + 1] = prefix .. '.' .. member
    end
  end
  if q:match('^[%w%-]+$') then out[#out + 1] = 'kluabench ' .. q end
  return out
end

local function short_name(name) return name:match('[%.: ]([^%.: ]+)$') or name end

--- The entries a name stands for: the exact name, else those whose last component is the name.
--
-- Returns a list.
--
-- @signature help.find(name) -> entries
-- @example
--   for _, e in ipairs(require("kluabench.apidoc.help").find("free")) do print(e.name) end
function M.find(name)
  args.check('help.find', 1, name, 'string', 'name')
  local found = {}
  for _, q in ipairs(spellings(name)) do
    for _, e in ipairs(apidoc.entries) do
      if e.name == q then found[#found + 1] = e end
    end
    if #found > 0 then return found end
  end
  for _, e in ipairs(apidoc.entries) do
    if short_name(e.name) == name or e.name:sub(-#name - 1) == '.' .. name then
      found[#found + 1] = e
    end
  end
  return found
end

--- The entries of a section ("timing"), a module prefix ("kb.rope", "stats") or an object
-- ("Tensor").
--
-- @signature help.group(name) -> entries, title
-- @example
--   local list = require("kluabench.apidoc.help").group("kb.jcs")
function M.group(name)
  args.check('help.group', 1, name, 'string|table|userdata', 'name, module table or tensor')
  local list = {}
  local lower = name:lower()
  for _, s in ipairs(apidoc.sections) do
    if s.id == lower or s.title:lower() == lower then
      for _, e in ipairs(apidoc.entries) do
        if e.section == s.id then list[#list + 1] = e end
      end
      return list, s.title
    end
  end
  local prefixes = {}
  for _, q in ipairs(spellings(name)) do prefixes[#prefixes + 1] = q end
  local obj = object_by_title()[lower]
  if obj then prefixes[#prefixes + 1] = obj end
  for _, p in ipairs(prefixes) do
    for _, e in ipairs(apidoc.entries) do
      local n = e.name
      if n:sub(1, #p + 1) == p .. '.' or n:sub(1, #p + 1) == p .. ':' then list[#list + 1] = e end
    end
    if #list > 0 then
      local o = apidoc.objects[p]
      if o then return list, o.title .. ' (' .. p .. ') methods and properties' end
      for _, s in ipairs(apidoc.sections) do
        if s.id == list[1].section then return list, s.title end
      end
      return list, p
    end
  end
  return list
end

-- Whether the characters of q appear in s in order ("rnd" in "randn").
local function subsequence(q, s)
  local pos = 1
  for c in q:gmatch('.') do
    pos = s:find(c, pos, true)
    if not pos then return false end
    pos = pos + 1
  end
  return true
end

--- Entries whose name, else summary, contains s; else whose short name holds its letters in order.
--
-- Entries whose name contains s, ignoring case; failing that, those whose summary contains it;
-- failing that, those whose last name component holds its letters in order ("rnd" finds kb.randn).
--
-- @signature help.search(s) -> entries
-- @example
--   local near = require("kluabench.apidoc.help").search("rnd") --> kb.randn
function M.search(s)
  args.check('help.search', 1, s, 'string', 'text')
  local q = s:lower()
  local tests = {
    function(e) return e.name:lower():find(q, 1, true) end,
    function(e) return e.summary:lower():find(q, 1, true) end,
    function(e) return #q >= 2 and subsequence(q, short_name(e.name):lower()) end,
  }
  for _, test in ipairs(tests) do
    local out = {}
    for _, e in ipairs(apidoc.entries) do
      if test(e) then out[#out + 1] = e end
    end
    if #out > 0 then return out end
  end
  return {}
end

-- The group a table or userdata stands for: the kb module or one of its
-- sub-tables, a stdlib module, or an object with a documented metatable.
local function group_of_value(x)
  if type(x) == 'userdata' then
    local mt = getmetatable(x)
    local mtname = type(mt) == 'table' and rawget(mt, '__name')
    for prefix, obj in pairs(apidoc.objects) do
      if obj.metatable and obj.metatable == mtname then return prefix end
    end
    return nil
  end
  for prefix, modname in pairs(apidoc.modules) do
    local mod = package.loaded[modname]
    if rawequal(mod, x) then return prefix end
    if type(mod) == 'table' then
      for k, v in pairs(mod) do
        if rawequal(v, x) and type(k) == 'string' then return prefix .. '.' .. k end
      end
    end
  end
  for prefix, obj in pairs(apidoc.objects) do
    if rawequal(method_table(obj), x) then return prefix end
  end
  return nil
end

--- The entries documenting a value, found by identity.
--
-- @signature help.find_value(x) -> entries
-- @example
--   print(require("kluabench.apidoc.help").find_value(kb.randn)[1].name) --> kb.randn
function M.find_value(x)
  local found = {}
  for _, e in ipairs(apidoc.entries) do
    if e.kind ~= 'property' and e.kind ~= 'command' then
      local v = M.resolve(e)
      if v ~= nil and rawequal(v, x) then found[#found + 1] = e end
    end
  end
  return found
end

---------------------------------------------------------------------------
-- Text
---------------------------------------------------------------------------

-- Wraps text to WIDTH with an indent; "\n" separates paragraphs.
local function wrap(text, indent)
  local out = {}
  for para in (text .. '\n'):gmatch('(.-)\n') do
    local line = indent
    for word in para:gmatch('%S+') do
      if #line > #indent and #line + 1 + #word > WIDTH then
        out[#out + 1] = line
        line = indent .. word
      else
        line = line .. (#line > #indent and ' ' or '') .. word
      end
    end
    out[#out + 1] = line
  end
  return table.concat(out, '\n')
end

-- Every non-empty line indented.
local function indent_block(text, indent)
  return (text:gsub('[^\n]+', function(line) return indent .. line end))
end

--- The text of one entry.
--
-- The full text of one entry: signature, summary, details, example.
--
-- @signature help.format(entry) -> text
-- @example
--   print(require("kluabench.apidoc.help").format(require("kluabench.apidoc").entries[1]))
function M.format(entry)
  args.check('help.format', 1, entry, 'table', 'apidoc entry')
  local parts = { entry.signature or entry.name, '', wrap(entry.summary, '  ') }
  if entry.details then
    parts[#parts + 1] = ''
    parts[#parts + 1] = entry.preformatted and indent_block(entry.details, '  ') or wrap(entry.details, '  ')
  end
  if entry.example then
    parts[#parts + 1] = ''
    parts[#parts + 1] = '  Example:'
    parts[#parts + 1] = indent_block(entry.example, '    ')
  end
  return table.concat(parts, '\n') .. '\n'
end

-- One entry per line: name and summary, the summary wrapped under itself.
local function listing(list, title)
  local w = 0
  for _, e in ipairs(list) do w = math.max(w, #e.name) end
  w = math.min(w, 24)
  local out = { title and (title .. '\n') or nil }
  local hang = string.rep(' ', w + 4)
  for _, e in ipairs(list) do
    local name = e.name
    local text = wrap(e.summary, hang):sub(#hang + 1)
    if #name > w then
      out[#out + 1] = '  ' .. name .. '\n' .. hang .. text .. '\n'
    else
      out[#out + 1] = '  ' .. name .. string.rep(' ', w - #name) .. '  ' .. text .. '\n'
    end
  end
  out[#out + 1] = '\nhelp("name") shows one of them.\n'
  return table.concat(out)
end

-- Words wrapped to WIDTH, separated by sep.
local function wrap_words(words, indent, sep)
  local lines, line = {}, indent
  for _, word in ipairs(words) do
    if #line > #indent and #line + #sep + #word > WIDTH then
      lines[#lines + 1] = line
      line = indent .. word
    else
      line = line .. (#line > #indent and sep or '') .. word
    end
  end
  lines[#lines + 1] = line
  return table.concat(lines, '\n')
end

--- What help() prints: every section with its names.
--
-- The overview: each section with the names it documents.
--
-- @signature help.overview() -> text
-- @example
--   io.write(require("kluabench.apidoc.help").overview())
function M.overview()
  local kb = package.loaded['kluabench']
  local version = type(kb) == 'table' and kb.version and (' ' .. kb.version) or ''
  local out = { 'kluabench' .. version .. ' API. help(x) documents a function, method or command: '
    .. 'help(kb.rope.llama4_fwd), help("t:to"), ?verify; help(kb.rope) or help("stats") a '
    .. 'group. docs/API.md has it all.\n' }
  out[1] = wrap(out[1], '')
  for _, s in ipairs(apidoc.sections) do
    local names = {}
    for _, e in ipairs(apidoc.entries) do
      if e.section == s.id then names[#names + 1] = e.name end
    end
    if #names > 0 then
      out[#out + 1] = '\n' .. s.title .. '  (help("' .. s.id .. '"))\n'
      out[#out + 1] = wrap_words(names, '  ', '  ') .. '\n'
    end
  end
  return table.concat(out)
end

local function not_found(what)
  local near = M.search(what)
  if #near == 0 then
    return string.format('no documentation for %q; help() lists everything\n', what)
  end
  local names = {}
  for i = 1, math.min(#near, 12) do names[i] = near[i].name end
  return string.format('no documentation for %q; did you mean: %s%s\n', what,
    table.concat(names, ', '), #near > 12 and ', ...' or '')
end

local function format_all(list)
  local texts = {}
  for i, e in ipairs(list) do texts[i] = M.format(e) end
  return table.concat(texts, '\n')
end

--- What help(x) prints, as a string.
--
-- @signature help.text([x]) -> text
-- @example
--   local s = require("kluabench.apidoc.help").text("verify")
function M.text(...)
  if select('#', ...) == 0 then return M.overview() end
  local x = ...
  if type(x) == 'string' then
    local name = x:match('^%s*(.-)%s*$'):gsub('%(%)$', '')
    if name == '' then return M.overview() end
    local list = M.find(name)
    if #list > 0 then return format_all(list) end
    local group, title = M.group(name)
    if #group > 0 then return listing(group, title) end
    return not_found(name)
  end
  if type(x) == 'function' then
    local list = M.find_value(x)
    if #list > 0 then return format_all(list) end
    local info = debug.getinfo(x, 'S')
    local where = info.what == 'C' and 'a C function' or (info.short_src .. ':' .. info.linedefined)
    return string.format('no documentation for this function (%s)\n', where)
  end
  if type(x) == 'table' or type(x) == 'userdata' then
    local g = group_of_value(x)
    if g == 'kb' then return M.overview() end
    if g then
      local list = M.find(g)
      if #list > 0 then return format_all(list) end
      local group, title = M.group(g)
      if #group > 0 then return listing(group, title) end
    end
  end
  return string.format('no documentation for %s %s; help() lists everything\n', type(x), tostring(x))
end

--- The function the global `help` is.
--
-- Prints the documentation of x (see the top of this file). Returns nothing, so the REPL prints
-- nothing more.
--
-- @signature help.help([x])
-- @example
--   require("kluabench.apidoc.help").help("kb.randn")
function M.help(...)
  io.stdout:write(M.text(...))
  io.stdout:flush()
end

--- Sets the global `help` (the REPL does this itself).
--
-- @signature help.install() -> help
-- @example
--   require("kluabench.apidoc.help").install()
function M.install()
  rawset(_G, 'help', M.help)
  return M.help
end

-- help(x) with the module as with the global the REPL installs: `local help = require
-- 'kluabench.apidoc.help'` and `help(kb.randn)` print the same, and help.text stays reachable.
return setmetatable(M, { __call = function(_, ...) return M.help(...) end })
