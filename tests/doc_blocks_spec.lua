-- Every code block of README.md and docs/*.md (docs/API.md has its own test
-- in help_spec) either runs or says it is a fragment:
--   * a block whose first line holds "(fragment" is one (it is not run);
--   * a lua block is run on the cpu backend in a temporary folder (HOME,
--     the cache and the results folder temporary too, so that no example
--     writes outside one); a block of REPL lines ("> ...") is fed to
--     `kluabench -i`; "(gpu" in the first line: run only on the cuda backend;
--   * a sh (bash, shell) block runs with `bash -e` on the cpu backend, under a
--     time limit, in a temporary folder that links the checkout's top-level
--     entries (so build/kluabench and scripts/x.lua resolve as from the root of
--     a checkout, and what it writes stays in the folder), with `kluabench` on
--     the PATH and $ROOT the checkout; a block that cannot run here says why
--     in a comment line of its own, `# needs: gpu` (or slurm, server, make:
--     CI runs the make targets itself), and is skipped; every kluabench
--     invocation in a sh block must also name a command or a file of the
--     checkout, with options that the command or script's --help lists;
--   * a block of another language (c, cuda, python, yaml) must be marked a
--     fragment; blocks without a language are output, layouts and JSON.
local sub = require 'helpers.subprocess'
local util = require 'helpers.util'
local kb = require 'kluabench'
local ROOT = sub.root()

local function files()
  local out = { 'README.md' }
  local p = assert(io.popen('cd ' .. util.q(ROOT) .. ' && ls docs/*.md'))
  for line in p:lines() do if line ~= 'docs/API.md' then out[#out + 1] = line end end
  p:close()
  return out
end

-- {file, line, lang, text} of every fenced block.
local function blocks()
  local out = {}
  for _, name in ipairs(files()) do
    local text = assert(util.slurp(ROOT .. '/' .. name))
    local n, open = 0, nil
    for line in (text .. '\n'):gmatch('([^\n]*)\n') do
      n = n + 1
      local fence = line:match('^```(.*)$')
      if fence and not open then
        open = { file = name, line = n, lang = fence:match('^(%w*)'), lines = {} }
      elseif line:match('^```%s*$') and open then
        open.text = table.concat(open.lines, '\n') .. '\n'
        out[#out + 1] = open
        open = nil
      elseif open then
        open.lines[#open.lines + 1] = line
      end
    end
  end
  return out
end

local function where(b) return b.file .. ':' .. b.line end
local SHELLS = { sh = true, bash = true, shell = true }
local function first_line(b) return b.lines[1] or '' end
local function fragment(b) return first_line(b):find('(fragment', 1, true) ~= nil end

-- Runs a lua block (a script, or REPL lines) in a fresh temporary folder.
local function run_lua(b)
  local dir = util.tmpdir()
  local env = { HOME = dir, KLUABENCH_CACHE = dir .. '/cache', KLUABENCH_RESULTS = dir .. '/results',
    KLUABENCH_HISTORY = dir .. '/repl_history', KLUABENCH_BACKEND = 'cpu' }
  local repl = b.lines[1] and b.lines[1]:match('^> ') ~= nil
  local r
  if repl then
    local lines = {}
    for _, l in ipairs(b.lines) do
      if l:match('^> ') then lines[#lines + 1] = l:sub(3) end
    end
    r = sub.run({ '-i' }, { stdin = table.concat(lines, '\n') .. '\n', env = env, cwd = dir })
  else
    util.spit(dir .. '/block.lua', b.text)
    r = sub.run({ dir .. '/block.lua' }, { env = env, cwd = dir })
  end
  os.execute('rm -rf ' .. util.q(dir))
  return r, repl
end

local SCRIPTS_WITH_HELP = {} -- path -> help text (benchmark scripts of the harness)
local COMMAND_HELP = {}

local function help_of(word)
  local cache = COMMAND_HELP
  if not cache[word] then
    local r = sub.run({ word, '--help' })
    cache[word] = r.out .. r.err
  end
  return cache[word]
end

-- The kluabench invocations of a shell block: lists of words (quotes kept
-- simple: the docs quote no spaces), continuation lines joined, comments cut.
local function invocations(text)
  text = text:gsub('\\\n%s*', ' ')
  local out = {}
  for line in text:gmatch('[^\n]+') do
    line = line:gsub('%s+#.*$', ''):gsub('^#.*$', '')
    for seg in (line .. '&&'):gmatch('(.-)%s*[;&|]+') do
      local words = {}
      for w in seg:gmatch('%S+') do words[#words + 1] = w end
      -- the binary as the docs spell it: build/kluabench or kluabench (on the PATH)
      for i, w in ipairs(words) do
        if w == 'kluabench' or w:match('/kluabench$') and not w:match('^%$') then
          out[#out + 1] = table.move(words, i + 1, #words, 1, {})
          break
        end
      end
    end
  end
  return out
end

-- What is wrong with one invocation (its words after the binary), or nil.
local invocation_problem
function invocation_problem(words)
  local i = 1
  -- the host's own options before the command or script
  while words[i] and words[i]:match('^%-') do
    if words[i] == '--device' or words[i] == '--backend' then i = i + 1 end
    i = i + 1
  end
  local target = words[i]
  if not target then return nil end -- the REPL
  local help
  local commands = require('kluabench.commands').COMMANDS
  -- run, run-all and slurm take a script: what follows it is the script's own options
  if target == 'run' or target == 'run-all' or target == 'slurm' then
    for j = i + 1, #words do
      if words[j]:match('%.lua$') then
        local why = invocation_problem(table.move(words, j, #words, 1, {}))
        if why then return why end
        words = table.move(words, 1, j - 1, 1, {})
        break
      end
    end
  end
  local is_command = false
  for _, c in ipairs(commands) do if c.name == target then is_command = true end end
  if is_command then
    help = help_of(target)
  else
    local path = ROOT .. '/' .. target
    if not io.open(path) then return string.format("'%s' is no command and no file of the checkout", target) end
    if not (target:match('^scripts/') or target:match('^examples/')) or target:match('ceilings') then return nil end
    if not SCRIPTS_WITH_HELP[target] then
      local r = sub.run({ path, '--help' })
      SCRIPTS_WITH_HELP[target] = r.code == 0 and (r.out .. r.err) or false
    end
    help = SCRIPTS_WITH_HELP[target] or nil
  end
  if not help then return nil end
  for j = i + 1, #words do
    local opt = words[j]:match('^(%-%-[%w-]+)')
    if opt and opt ~= '--' and not help:find(opt, 1, true) then
      return string.format("%s: option '%s' is not in its --help", target, opt)
    end
  end
  return nil
end

describe('the code blocks of README.md and docs/*.md', function()
  local all = blocks()

  it('are there to check (a sanity check of the reader)', function()
    local langs = {}
    for _, b in ipairs(all) do langs[b.lang] = (langs[b.lang] or 0) + 1 end
    assert.is_true((langs.lua or 0) >= 10, 'lua blocks found: ' .. tostring(langs.lua))
    assert.is_true((langs.sh or 0) >= 10, 'sh blocks found: ' .. tostring(langs.sh))
  end)

  it('of languages kluabench does not run are marked fragments', function()
    local bad = {}
    for _, b in ipairs(all) do
      if b.lang ~= '' and b.lang ~= 'text' and b.lang ~= 'lua' and not SHELLS[b.lang] and not fragment(b) then
        bad[#bad + 1] = where(b) .. ' (' .. b.lang .. '): ' .. first_line(b)
      end
    end
    assert.same({}, bad)
  end)

  it('in lua run as written on the cpu backend, writing only under temporary folders', function()
    local bad, ran = {}, 0
    for _, b in ipairs(all) do
      if b.lang == 'lua' and not fragment(b) and not first_line(b):find('(gpu', 1, true) then
        local r, repl = run_lua(b)
        ran = ran + 1
        local failed = r.code ~= 0 or (r.out .. r.err):find('stack traceback', 1, true)
          or (repl and (r.out .. r.err):find('kluabench: stdin:', 1, true))
        if failed then bad[#bad + 1] = string.format('%s: exit %d: %s', where(b), r.code, (r.err .. r.out):sub(1, 400)) end
      end
    end
    assert.same({}, bad)
    assert.is_true(ran >= 5, 'lua blocks run: ' .. ran)
  end)

  it('that say they are a whole file of the checkout are that file', function()
    local n = 0
    for _, b in ipairs(all) do
      local path = first_line(b):match('^%-%- (%S+%.lua) %(the whole')
      if path then
        n = n + 1
        local file = assert(util.slurp(ROOT .. '/' .. path), path)
        local code = file:sub((assert(file:find("local kb = require 'kluabench'", 1, true), path)))
        assert.equal(code, table.concat(b.lines, '\n', 2) .. '\n', where(b))
      end
    end
    assert.is_true(n >= 1)
  end)

  it('in sh name kluabench commands and files that exist, with options their --help lists', function()
    local bad, seen = {}, 0
    for _, b in ipairs(all) do
      if SHELLS[b.lang] and not fragment(b) then
        for _, words in ipairs(invocations(b.text)) do
          seen = seen + 1
          local why = invocation_problem(words)
          if why then bad[#bad + 1] = where(b) .. ': ' .. why end
        end
      end
    end
    assert.same({}, bad)
    assert.is_true(seen >= 20, 'kluabench invocations found: ' .. seen)
  end)
end)

-- What a shell block says it needs, from its comment line "# needs: gpu" (words from NEEDS), or nil.
local NEEDS = { gpu = true, slurm = true, server = true, make = true }
local function needs(b)
  for _, l in ipairs(b.lines) do
    local what = l:match('^%s*#%s*needs:%s*(.-)%s*$')
    if what then return what end
  end
  return nil
end

-- Seconds a shell block may take (a CPU finishes the docs' sizes in seconds; ASan and valgrind are slower).
local SHELL_TIMEOUT = tonumber(os.getenv('KLUABENCH_DOC_TIMEOUT') or '') or 120

-- Runs a shell block with bash -e in a fresh temporary folder that links the checkout's top-level entries:
-- {code, out} (out: stdout and stderr).
local function run_shell(b)
  local dir = util.tmpdir()
  local home = dir .. '/.doc-block'
  os.execute('mkdir -p ' .. util.q(home .. '/bin'))
  local p = assert(io.popen('ls -A ' .. util.q(ROOT)))
  for name in p:lines() do
    if name ~= 'results' then -- .git too: history add files runs under git HEAD of the current directory
      os.execute('ln -s ' .. util.q(ROOT .. '/' .. name) .. ' ' .. util.q(dir .. '/' .. name))
    end
  end
  p:close()
  os.execute('ln -s ' .. util.q(util.bin()) .. ' ' .. util.q(home .. '/bin/kluabench'))
  util.spit(home .. '/block.sh', b.text)
  local env = { HOME = home, KLUABENCH_CACHE = home .. '/cache', KLUABENCH_RESULTS = dir .. '/results',
    KLUABENCH_HISTORY = home .. '/repl_history', KLUABENCH_BACKEND = 'cpu', ROOT = ROOT,
    PATH = home .. '/bin:' .. (os.getenv('PATH') or '/usr/bin:/bin') }
  local words = { 'cd', util.q(dir), '&&', 'env', '-u', 'KLUABENCH_DEVICE', '-u', 'KLUABENCH_QUIET', '-u', 'LUA_INIT' }
  for k, v in pairs(env) do words[#words + 1] = util.q(k .. '=' .. v) end
  for _, w in ipairs { 'timeout', '-k', '5', tostring(SHELL_TIMEOUT), 'bash', '-e', util.q(home .. '/block.sh'),
    '</dev/null', '2>&1' } do words[#words + 1] = w end
  local out, code = util.run(table.concat(words, ' '))
  os.execute('rm -rf ' .. util.q(dir))
  return code, out
end

describe('the shell blocks of README.md and docs/*.md', function()
  local all = blocks()

  it('say what they need with words the runner knows', function()
    local bad = {}
    for _, b in ipairs(all) do
      local what = SHELLS[b.lang] and needs(b)
      if what then
        for word in (what:match('^[^(]*') .. ','):gmatch('%s*([^,%s]*)%s*,') do
          if not NEEDS[word] then bad[#bad + 1] = where(b) .. ": '" .. word .. "' in # needs: " .. what end
        end
      end
    end
    assert.same({}, bad)
  end)

  it('run with bash -e on the cpu backend in seconds, unless they say they need a GPU, Slurm, a server or make', function()
    local bad, ran, skipped = {}, 0, {}
    for _, b in ipairs(all) do
      if SHELLS[b.lang] and not fragment(b) then
        if needs(b) then
          skipped[#skipped + 1] = where(b) .. ' (needs ' .. needs(b) .. ')'
        else
          local code, out = run_shell(b)
          ran = ran + 1
          if code ~= 0 then
            bad[#bad + 1] = string.format('%s: exit %d%s:\n%s', where(b), code,
              (code == 124 or code == 137) and (' (past ' .. SHELL_TIMEOUT .. ' s)') or '', out:sub(-1500))
          end
        end
      end
    end
    assert.same({}, bad)
    assert.is_true(ran >= 5, 'shell blocks run: ' .. ran .. '; skipped: ' .. table.concat(skipped, ', '))
  end)
end)

describe('the code blocks that need a GPU #gpu', function()
  it('run as written on the cuda backend', function()
    if kb.backend() ~= 'cuda' then return pending('no CUDA device') end
    local bad = {}
    for _, b in ipairs(blocks()) do
      if b.lang == 'lua' and first_line(b):find('(gpu', 1, true) then
        local dir = util.tmpdir()
        util.spit(dir .. '/block.lua', b.text)
        local r = sub.run({ dir .. '/block.lua' }, { env = { HOME = dir, KLUABENCH_CACHE = dir .. '/cache' }, cwd = dir })
        if r.code ~= 0 then bad[#bad + 1] = where(b) .. ': ' .. r.err:sub(1, 400) end
        os.execute('rm -rf ' .. util.q(dir))
      end
    end
    assert.same({}, bad)
  end)
end)
