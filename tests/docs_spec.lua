-- The documentation's own rules: every markdown table has a header row and a
-- rule row (GitHub renders a table without them as plain text); the docs
-- cite the example record at its path in the repository; the README's
-- package list names every Debian package that `make deps` installs.
local sub = require 'helpers.subprocess'
local util = require 'helpers.util'
local ROOT = sub.root()

local function markdown_files()
  local p = assert(io.popen('cd ' .. util.q(ROOT) .. " && ls README.md docs/*.md"))
  local out = {}
  for line in p:lines() do out[#out + 1] = line end
  p:close()
  return out
end

-- Lines of text, code blocks (``` fenced) blanked out.
local function prose_lines(text)
  local out, fenced = {}, false
  for line in (text .. '\n'):gmatch('([^\n]*)\n') do
    if line:match('^%s*```') then fenced = not fenced; line = '' end
    out[#out + 1] = fenced and '' or line
  end
  return out
end

describe('docs', function()
  it('give every markdown table a header row and a rule row', function()
    local bad = {}
    for _, name in ipairs(markdown_files()) do
      local lines = prose_lines(assert(util.slurp(ROOT .. '/' .. name)))
      local i = 1
      while i <= #lines do
        if lines[i]:match('^%s*|') then
          -- the first line of a table block: its second line must be the rule
          local rule = lines[i + 1] or ''
          if not rule:match('^%s*|[%s:|-]*-[%s:|-]*$') then
            bad[#bad + 1] = string.format('%s:%d: %s', name, i, lines[i]:sub(1, 60))
          end
          while i <= #lines and lines[i]:match('^%s*|') do i = i + 1 end
        else
          i = i + 1
        end
      end
    end
    assert.same({}, bad)
  end)

  it('cite the example record where the repository has it', function()
    assert.is_string(util.slurp(ROOT .. '/tests/data/kernelindex-record-example.json'))
    local p = assert(io.popen('cd ' .. util.q(ROOT) .. ' && grep -rln "shared/reference" '
      .. 'README.md docs stdlib tests scripts examples bench 2>/dev/null'))
    local citing = {}
    for line in p:lines() do
      -- (schema_spec compares the vendored schemas with the reference copy when that is there)
      if line ~= 'tests/docs_spec.lua' and line ~= 'tests/schema_spec.lua' then citing[#citing + 1] = line end
    end
    p:close()
    assert.same({}, citing)
  end)

  it("list in the README every package of the Makefile's DEPS", function()
    local make = assert(util.slurp(ROOT .. '/Makefile'))
    local deps = make:gsub('\\\n', ' '):match('\nDEPS%s*[:?]?=%s*([^\n]+)')
    assert.is_string(deps, 'no DEPS line in the Makefile')
    local readme = assert(util.slurp(ROOT .. '/README.md')):gsub('%s+', ' ')
    local missing = {}
    for pkg in deps:gmatch('%S+') do
      -- the whole name: lua5.4 is not found inside liblua5.4-dev
      local pat = '%f[%w%.%-]' .. pkg:gsub('%p', '%%%0') .. '%f[^%w%.%-]'
      if not readme:find(pat) then missing[#missing + 1] = pkg end
    end
    assert.same({}, missing)
  end)
end)
