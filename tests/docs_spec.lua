-- The documentation's own rules: every markdown table has a header row and a
-- rule row (GitHub renders a table without them as plain text); the docs
-- cite the example record at its path in the repository, and raw results in
-- evidence/ where they are; the README's package list names every Debian
-- package that `make deps` installs.
local sub = require 'helpers.subprocess'
local util = require 'helpers.util'
local ROOT = sub.root()

local function markdown_files()
  local p = assert(io.popen('cd ' .. util.q(ROOT) .. " && ls README.md docs/*.md evidence/*.md"))
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

  it('cite raw results in evidence/, where each cited path exists, and the README links it', function()
    local missing, cited = {}, 0
    local function exists(path)
      local f = io.open(ROOT .. '/' .. path, 'rb')
      if f then f:close() return true end
      return os.execute('test -d ' .. util.q(ROOT .. '/' .. path)) == true
    end
    local p = assert(io.popen('cd ' .. util.q(ROOT) .. ' && ls README.md docs/*.md evidence/*.md bench/*.sh bench/*.lua '
      .. 'stdlib/kluabench/apidoc/init.lua'))
    for name in p:lines() do
      local text = assert(util.slurp(ROOT .. '/' .. name))
      local n = 0
      for line in (text .. '\n'):gmatch('([^\n]*)\n') do
        n = n + 1
        -- "evidence/RUN/FILE", also as a link (../evidence/...); a glob (-s2*) names its folder's prefix
        for path in line:gmatch('%f[%w%./]%.?%.?/?(evidence/[%w%._%-/]*[%w_/%-])') do
          path = path:gsub('%*.*$', '')
          if path ~= 'evidence/' then
            cited = cited + 1
            if not exists(path) then missing[#missing + 1] = string.format('%s:%d: %s', name, n, path) end
          end
        end
        -- (a line may say where they went: "bench/results/ ... evidence/")
        if line:find('bench/results', 1, true) and not line:find('/shared/bench/results', 1, true)
            and not line:find('evidence/', 1, true) then
          missing[#missing + 1] = string.format('%s:%d: cites bench/results (now evidence/)', name, n)
        end
      end
    end
    p:close()
    assert.same({}, missing)
    assert.is_true(cited > 40, cited .. ' citations')
    assert.is_truthy(assert(util.slurp(ROOT .. '/README.md')):find('(evidence/)', 1, true), 'README links evidence/')
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
