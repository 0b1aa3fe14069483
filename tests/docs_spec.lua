-- The documentation's own rules: every markdown table has a header row and a
-- rule row (GitHub renders a table without them as plain text); the docs
-- cite the example record at its path in the repository, and raw results in
-- docs/evidence/ where they are (small, each records file passing `kluabench
-- verify`) or in a commit of the history (`git show 7f5c7f0:evidence/...`),
-- never in the top-level lab folders that are gone; the README's package list
-- names every Debian package that `make deps` installs; the README reads in
-- five minutes (at most 200 lines) and the hand-written docs in one sitting
-- (at most 30,000 words together; docs/API.md is generated).
local sub = require 'helpers.subprocess'
local util = require 'helpers.util'
local ROOT = sub.root()

local function markdown_files()
  local p = assert(io.popen('cd ' .. util.q(ROOT) .. " && ls README.md docs/*.md docs/evidence/README.md"))
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
    assert.is_string(util.slurp(ROOT .. '/tests/fixtures/kernelindex-record-example.json'))
    local p = assert(io.popen('cd ' .. util.q(ROOT) .. ' && grep -rln "shared/reference" '
      .. 'README.md docs stdlib tests scripts examples 2>/dev/null'))
    local citing = {}
    for line in p:lines() do
      -- (schema_spec compares the vendored schemas with the reference copy when that is there)
      if line ~= 'tests/docs_spec.lua' and line ~= 'tests/schema_spec.lua' then citing[#citing + 1] = line end
    end
    p:close()
    assert.same({}, citing)
  end)

  -- The files whose text may cite evidence or scripts: the docs, the scripts, the API's source.
  local function citing_files()
    local p = assert(io.popen('cd ' .. util.q(ROOT) .. ' && ls README.md docs/*.md docs/evidence/README.md '
      .. 'scripts/*.sh scripts/*.lua stdlib/kluabench/apidoc/*.lua'))
    local out = {}
    for name in p:lines() do out[#out + 1] = name end
    p:close()
    return out
  end

  local function exists(path)
    local f = io.open(ROOT .. '/' .. path, 'rb')
    if f then f:close() return true end
    return os.execute('test -d ' .. util.q(ROOT .. '/' .. path)) == true
  end

  it('cite raw results in docs/evidence/, where each cited path exists, and the README links it', function()
    local missing, cited = {}, 0
    for _, name in ipairs(citing_files()) do
      local n = 0
      for line in (assert(util.slurp(ROOT .. '/' .. name)) .. '\n'):gmatch('([^\n]*)\n') do
        n = n + 1
        for path in line:gmatch('%f[%w%./](docs/evidence/[%w%._%-/]*[%w_/%-])') do
          cited = cited + 1
          if not exists(path) then missing[#missing + 1] = string.format('%s:%d: %s', name, n, path) end
        end
      end
    end
    assert.same({}, missing)
    assert.is_true(cited >= 10, cited .. ' citations')
    assert.is_truthy(assert(util.slurp(ROOT .. '/README.md')):find('(docs/evidence/)', 1, true),
      'README links docs/evidence/')
  end)

  it('cite the lab folders that are gone (evidence/, bench/) only through a commit, one that has the path', function()
    local bare, commits = {}, {}
    for _, name in ipairs(citing_files()) do
      local n = 0
      for line in (assert(util.slurp(ROOT .. '/' .. name)) .. '\n'):gmatch('([^\n]*)\n') do
        n = n + 1
        -- a path under evidence/ or a file under bench/, with what stands before it
        for before, path in line:gmatch('()%f[%w%./](%.?%.?/?evidence/[%w%._%-/*]*)') do
          local prefix = line:sub(1, before - 1)
          if not prefix:match('docs/$') and not prefix:match('%x%x%x%x%x%x%x%^?:$') then
            bare[#bare + 1] = string.format('%s:%d: %s', name, n, path)
          end
        end
        for before, path in line:gmatch('()%f[%w%./](bench/[%w_%-]+%.%a+)') do
          local prefix = line:sub(1, before - 1)
          if not prefix:match('%x%x%x%x%x%x%x%^?:$') and not prefix:match('/shared/$') then
            bare[#bare + 1] = string.format('%s:%d: %s', name, n, path)
          end
        end
        for rev, path in line:gmatch('(%x%x%x%x%x%x%x%^?):([%w%._%-/]*[%w_%-/])') do
          if path ~= 'PATH' then -- (the placeholder of "git show 7f5c7f0:PATH")
              commits[#commits + 1] = { rev = rev, path = path:gsub('/$', ''), where = string.format('%s:%d', name, n) }
          end
        end
      end
    end
    assert.same({}, bare)
    assert.is_true(#commits >= 10, #commits .. ' commit citations') -- (a check that finds none checks nothing)
    -- each cited path is in its commit, where the history is here (a shallow clone may lack it)
    local unknown = {}
    for _, c in ipairs(commits) do
      local _, has_rev = util.run('cd ' .. util.q(ROOT) .. ' && git cat-file -e ' .. util.q(c.rev .. '^{commit}')
        .. ' 2>/dev/null')
      if has_rev == 0 then
        local _, code = util.run('cd ' .. util.q(ROOT) .. ' && git cat-file -e ' .. util.q(c.rev .. ':' .. c.path)
          .. ' 2>/dev/null')
        if code ~= 0 then unknown[#unknown + 1] = c.where .. ': ' .. c.rev .. ':' .. c.path end
      end
    end
    assert.same({}, unknown)
  end)

  it('keep docs/evidence/ small, and every records file there passes kluabench verify', function()
    local p = assert(io.popen('cd ' .. util.q(ROOT) .. ' && find docs/evidence -type f | sort'))
    local records, bytes = {}, 0
    for path in p:lines() do
      local f = assert(io.open(ROOT .. '/' .. path, 'rb'))
      bytes = bytes + f:seek('end')
      f:close()
      if (path:match('%.jsonl$') or path:match('%.json$') or path:match('%.ndjson$'))
          and not path:match('%.samples%.jsonl$') then
        records[#records + 1] = path
      end
    end
    p:close()
    assert.is_true(bytes < 1024 * 1024, bytes .. ' bytes under docs/evidence/')
    assert.is_true(#records >= 1, 'no records file under docs/evidence/')
    for _, path in ipairs(records) do
      local r = sub.run({ 'verify', '--quiet', ROOT .. '/' .. path })
      assert.equal(0, r.code, path .. ': ' .. (r.err or '') .. (r.out or ''))
    end
  end)

  it('leave no lab folders at the top, and no test reads data outside tests/fixtures/', function()
    assert.is_false(exists('bench'), 'bench/ is back')
    assert.is_false(exists('evidence'), 'evidence/ is back')
    assert.is_false(exists('tests/data'), 'tests/data/ is tests/fixtures/ now')
    local p = assert(io.popen('cd ' .. util.q(ROOT) .. " && grep -rnE \"(^|[^[:alnum:]_.-])(evidence|bench)/[[:alnum:]_./-]+\\.(jsonl|json|csv|txt|log|md|lua|sh|py)\" "
      .. "tests --include='*.lua' --include='*.sh' --include='*.py' | grep -v '7f5c7f0:' | grep -v 'docs/evidence/' | grep -v '/shared/bench/' | grep -v 'tests/docs_spec.lua'"))
    local reads = {}
    for line in p:lines() do reads[#reads + 1] = line end
    p:close()
    assert.same({}, reads)
  end)

  it('stay short: the README at most 200 lines, the hand-written docs at most 30,000 words', function()
    local readme = assert(util.slurp(ROOT .. '/README.md'))
    local _, lines = readme:gsub('\n', '')
    assert.is_true(lines <= 200, 'README.md has ' .. lines .. ' lines')
    local words, each = 0, {}
    for _, name in ipairs(markdown_files()) do
      if name ~= 'docs/API.md' then
        local _, n = assert(util.slurp(ROOT .. '/' .. name)):gsub('%S+', '') -- words as wc -w counts them
        words, each[#each + 1] = words + n, name .. ' ' .. n
      end
    end
    assert.is_true(words <= 30000, words .. ' words:\n' .. table.concat(each, '\n'))
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
