--- The API reference of the Lua modules, read from the `---` comments beside
-- their functions (help() and docs/API.md take them from here; the engine's
-- C functions and the commands are described in cli/apidoc.lua).
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

-- One block (its comment lines, already stripped) and the definition under
-- it: the entry, or nil when the block is not part of the reference.
local function entry_of(texts, def_line, prefix, file, line_no)
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
  if not example then return nil end
  while #example > 0 and example[#example] == '' do example[#example] = nil end
  local owner, sep, key, args = definition(def_line)
  local signature = tags.signature
  if (not signature or signature == '') and owner == 'M' and prefix then
    signature = prefix .. '.' .. key .. (args or '')
  end
  if not signature or signature == '' then
    error(string.format('%s:%d: a documented definition needs @signature', file, line_no), 0)
  end
  local name = signature:match('^([%w_.:]+)')
  local paras = paragraphs(prose)
  local e = {
    name = name, signature = signature, summary = paras[1] or '', example = table.concat(example, '\n'),
    kind = tags.kind ~= nil and tags.kind ~= '' and tags.kind or (name:find(':', 1, true) and 'method')
      or (args == nil and owner and 'value') or 'function',
    section = tags.section ~= nil and tags.section ~= '' and tags.section or nil,
    source = file .. ':' .. line_no,
  }
  if #paras > 1 then e.details = table.concat(paras, '\n', 2) end
  if sep == ':' and not name:find(':', 1, true) then e.kind = 'method' end
  return e
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

--- The entries of every module: modules maps a prefix to a module name, or
-- to a list of module names whose functions it gathers (kb.report is
-- io/json, files, csv and report/table). Each entry's section defaults to the
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
