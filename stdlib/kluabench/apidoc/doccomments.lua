--- The API reference, read from the comments beside the functions it
-- documents: the `---` comments of the Lua modules and the `/***` comments of
-- the engine's C files (engine/<role>/*.c); help() and docs/API.md take them from
-- here (apidoc/init.lua adds the sections and the commands).
--
-- A documented function has a comment block right above its definition:
--
--   --- One-paragraph summary (up to the first empty comment line).
--   --
--   -- Details: further paragraphs, separated by empty comment lines.
--   --
--   -- @signature stats.quantile(xs, q) -> number
--   -- @example
--   --   print(stats.quantile({4, 1, 3, 2}, 0.2)) --> 1.6
--   function M.quantile(xs, q)
--
-- A block is part of the reference when it has an @example (every entry
-- shows one); other `---` comments are notes for readers of the code. The
-- name is the @signature's up to its "(" (for `function M.f(...)` without a
-- @signature: PREFIX.f(...) with the module's prefix). Optional tags:
-- @section ID (default: the section named like the prefix), @kind (function,
-- method, value; default from the name: "a:b" is a method).
--
-- A C function has the same block in a C comment that opens with `/***`, its
-- lines led by ` * `; @signature and @section are required there (a C
-- definition names no Lua prefix), @kind property or value marks what is
-- not a function (`t.shape`, `kb.version`), and @name gives the name where
-- the signature spells it otherwise (`sqlite:exec` for `db:exec(sql)`):
--
--   /*** The selected backend: what tensors and events use when no device is given.
--    *
--    * @signature kb.backend() -> "cuda" | "cpu"
--    * @section device
--    * @example
--    *   if kb.backend() == "cpu" then print("numbers are CPU times") end
--    */
--   static int l_backend(lua_State *L) {
local M = {}

-- "-- text" -> "text"; "--" -> "".
local function comment_text(line)
  return (((line:match('^%-%-%-? ?(.*)$') or ''):gsub('%s+$', '')))
end

-- The definition a block documents: owner, separator, key, args; or nil.
local function definition(line)
  local owner, sep, key, args = line:match('^function ([%a_][%w_]*)([%.:])([%a_][%w_]*)%s*(%b())')
  if owner then return owner, sep, key, args end
  owner, key = line:match('^([%a_][%w_]*)%.([%a_][%w_]*)%s*=')
  if owner then return owner, '.', key, nil end
  return nil
end

-- Paragraphs of prose lines: each paragraph's lines joined by spaces.
local function paragraphs(lines)
  local out, cur = {}, {}
  local function flush()
    if #cur > 0 then out[#out + 1] = table.concat(cur, ' ') end
    cur = {}
  end
  for _, l in ipairs(lines) do
    if l == '' then flush() else cur[#cur + 1] = l end
  end
  flush()
  return out
end

-- The parts of one block (its comment lines, already stripped): prose
-- paragraphs, tags and the example lines; nil example when it has none.
local function parts_of(texts, file, line_no)
  local prose, tags, example, in_example = {}, {}, nil, false
  for _, t in ipairs(texts) do
    local tag, rest = t:match('^@(%a+)%s*(.*)$')
    -- a tag given twice (a paragraph re-wrapped into one line, say) would
    -- leave its first copy's words in the prose: refuse it
    if tag and (tags[tag] or (tag == 'example' and example)) then
      error(string.format('%s:%d: @%s given twice in one block', file, line_no, tag), 0)
    end
    if tag == 'example' then
      in_example, example = true, {}
      if rest ~= '' then example[1] = rest end
    elseif tag then
      in_example = false
      tags[tag] = rest
    elseif in_example then
      example[#example + 1] = t:gsub('^  ', '')
    else
      prose[#prose + 1] = t
    end
  end
  if example then
    while #example > 0 and example[#example] == '' do example[#example] = nil end
  end
  return paragraphs(prose), tags, example
end

-- An entry of a name, signature, kind, section and the block's parts.
local function entry(name, signature, kind, section, paras, example, source)
  local e = {
    name = name, signature = signature, summary = paras[1] or '', example = table.concat(example, '\n'),
    kind = kind, section = section, source = source,
  }
  if #paras > 1 then e.details = table.concat(paras, '\n', 2) end
  return e
end

local function given(v) return v ~= nil and v ~= '' and v or nil end

-- One block (its comment lines, already stripped) and the definition under
-- it: the entry, or nil when the block is not part of the reference.
local function entry_of(texts, def_line, prefix, file, line_no)
  local paras, tags, example = parts_of(texts, file, line_no)
  if not example then return nil end
  local owner, sep, key, args = definition(def_line)
  local signature = tags.signature
  if (not signature or signature == '') and owner == 'M' and prefix then
    signature = prefix .. '.' .. key .. (args or '')
  end
  if not signature or signature == '' then
    error(string.format('%s:%d: a documented definition needs @signature', file, line_no), 0)
  end
  local name = signature:match('^([%w_.:]+)')
  local kind = given(tags.kind) or (name:find(':', 1, true) and 'method')
    or (args == nil and owner and 'value') or 'function'
  if sep == ':' and not name:find(':', 1, true) then kind = 'method' end
  return entry(name, signature, kind, given(tags.section), paras, example, file .. ':' .. line_no)
end

--- The reference entries of one source text, in file order. prefix names
-- the module's functions (`stats` for `function M.quantile`); file is for
-- messages.
function M.parse(text, prefix, file)
  local out = {}
  local block, block_start = nil, nil
  local n = 0
  for line in (text .. '\n'):gmatch('([^\n]*)\n') do
    n = n + 1
    if line:match('^%-%-%-%-') then
      block = nil -- a rule between sections ends any block
    elseif line:match('^%-%-%-') then
      block, block_start = { comment_text(line) }, n
    elseif block and line:match('^%-%-') then
      block[#block + 1] = comment_text(line)
    else
      if block and line:match('%S') then
        if definition(line) then
          local e = entry_of(block, line, prefix, file or '?', block_start)
          if e then out[#out + 1] = e end
        end
        block = nil
      elseif block and not line:match('%S') then
        block = nil
      end
    end
  end
  return out
end

--- The reference entries of one C source text (engine/<role>/*.c), in file order: its `/***` comment
-- blocks, each with @signature, @section and @example (file is for messages).
function M.parse_c(text, file)
  local out = {}
  local block, block_start = nil, nil
  local n = 0
  for line in (text .. '\n'):gmatch('([^\n]*)\n') do
    n = n + 1
    if block then
      local done = line:match('^%s*%*/%s*$')
      if done then
        local paras, tags, example = parts_of(block, file, block_start)
        local where = string.format('%s:%d', file, block_start)
        if not (example and given(tags.signature) and given(tags.section)) then
          error(where .. ': a /*** block needs @signature, @section and @example', 0)
        end
        local name = given(tags.name) or tags.signature:match('^([%w_.:]+)')
        local kind = given(tags.kind) or (name:find(':', 1, true) and 'method') or 'function'
        out[#out + 1] = entry(name, tags.signature, kind, tags.section, paras, example, where)
        block = nil
      else
        if line:find('*/', 1, true) then error(string.format('%s:%d: a /*** block ends with */ on a line of its own', file, n), 0) end
        block[#block + 1] = ((line:match('^%s*%* ?(.*)$') or line):gsub('%s+$', ''))
      end
    elseif line:match('^/%*%*%*') then
      block, block_start = { (line:match('^/%*%*%* ?(.*)$'):gsub('%s+$', '')) }, n
    end
  end
  if block then error(string.format('%s:%d: a /*** block is not closed', file, block_start), 0) end
  return out
end

--- The entries of every module: modules maps a prefix to a module name, or
-- to a list of module names whose functions it gathers (measure is
-- measure/init.lua and measure/session.lua). Each entry's section defaults to the
-- prefix of its name when sections has one by that id, else to `default`
-- (a table prefix -> section id).
function M.collect(modules, sections, default)
  local known = {}
  for _, s in ipairs(sections or {}) do known[s.id] = true end
  local prefixes = {}
  for prefix in pairs(modules) do prefixes[#prefixes + 1] = prefix end
  table.sort(prefixes)
  local out = {}
  for _, prefix in ipairs(prefixes) do
    local names = modules[prefix]
    if type(names) == 'string' then names = { names } end
    for _, modname in ipairs(names) do
      local path = package.searchpath(modname, package.path)
      local f = path and io.open(path, 'rb')
      if f then
        local text = f:read('a')
        f:close()
        for _, e in ipairs(M.parse(text, prefix, path:match('(stdlib/.*)$') or path)) do
          if not e.section then
            local p = e.name:match('^([%w_]+)')
            e.section = known[p] and p or (default and default[p]) or prefix
          end
          out[#out + 1] = e
        end
      end
    end
  end
  return out
end

return M
