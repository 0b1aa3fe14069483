-- The requires of a Lua source, as tests/layout_spec.lua checks them: every
-- call of require whose argument is a string literal (at the top of a file or
-- inside a function: a lazy require counts the same), `pcall(require, 'x')`
-- included, with its line; and the requires whose argument is computed at
-- run time. Comments and the insides of strings are skipped, so a require
-- quoted in a doc comment or a message is not one.
local M = {}

-- The code of text with comments removed and every string literal replaced
-- by a placeholder \1N\1 (N: its index in the returned list), newlines kept.
local function tokens(text)
  local code, strings = {}, {}
  local i, n = 1, #text
  local function long_close(at)
    local eq = text:match('^%[(=*)%[', at)
    return eq and (']' .. eq .. ']') or nil
  end
  local function newlines(s)
    local _, k = s:gsub('\n', '')
    return string.rep('\n', k)
  end
  while i <= n do
    local c = text:sub(i, i)
    if c == '-' and text:sub(i + 1, i + 1) == '-' then
      local close = long_close(i + 2)
      if close then
        local e = select(2, text:find(close, i + 2, true)) or n
        code[#code + 1] = newlines(text:sub(i, e))
        i = e + 1
      else
        i = text:find('\n', i, true) or n + 1
      end
    elseif c == '"' or c == "'" then
      local j, buf = i + 1, {}
      while j <= n do
        local d = text:sub(j, j)
        if d == '\\' then
          buf[#buf + 1] = text:sub(j, j + 1)
          j = j + 2
        elseif d == c or d == '\n' then
          break
        else
          buf[#buf + 1] = d
          j = j + 1
        end
      end
      strings[#strings + 1] = table.concat(buf)
      code[#code + 1] = ' \1' .. #strings .. '\1 '
      i = j + 1
    elseif c == '[' and long_close(i) then
      local close = long_close(i)
      local e = select(2, text:find(close, i, true)) or n
      strings[#strings + 1] = text:sub(i, e)
      code[#code + 1] = ' \1' .. #strings .. '\1 ' .. newlines(text:sub(i, e))
      i = e + 1
    else
      code[#code + 1] = c
      i = i + 1
    end
  end
  return table.concat(code), strings
end

--- literal: {{name, line}, ...}; computed: {{line, text}, ...}.
function M.scan(text)
  local code, strings = tokens(text)
  local literal, computed = {}, {}
  for at, rest in code:gmatch('()%f[%w_]require%f[^%w_]([^\n]*)') do
    local line = select(2, code:sub(1, at):gsub('\n', '')) + 1
    -- require 'x', require('x'), require "x", pcall(require, 'x')
    local arg = rest:gsub('^%s*,%s*', '(', 1)
    local idx, after = arg:match('^%s*%(?%s*\1(%d+)\1%s*(.?.?)')
    if idx and after ~= '..' then
      literal[#literal + 1] = { name = strings[tonumber(idx)], line = line }
    elseif not rest:match('^%s*[=%)]') then -- not `local require = ...` or `(require)`
      computed[#computed + 1] = { line = line, text = (rest:gsub('\1(%d+)\1', function(k)
        return "'" .. strings[tonumber(k)] .. "'"
      end)):sub(1, 80) }
    end
  end
  return literal, computed
end

return M
