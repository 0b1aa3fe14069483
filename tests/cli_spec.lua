-- The kluabench executable as a user runs it: lua-compatible options, the
-- `arg` table, errors and exit statuses, the backend options, the built-in
-- commands and their dispatch rule, and SIGINT/SIGTERM. Every case runs the
-- binary as a subprocess (KLUABENCH_BIN, else the binary running the tests,
-- else build/kluabench).

if not package.searchpath('kluabench.commands', package.path) then
  package.path = 'stdlib/?.lua;stdlib/?/init.lua;' .. package.path
end

local util = require 'helpers.util'
local BIN = util.bin()

local q = util.q

local slurp = util.slurp

local spit = util.spit

local tmpdir = util.tmpdir

-- Variables that would change what the binary does, cleared for each run.
local CLEARED = { 'LUA_INIT', 'LUA_INIT_5_4', 'KLUABENCH_BACKEND', 'KLUABENCH_DEVICE', 'KLUABENCH_QUIET' }

--- Runs the binary with args (a list, quoted here, or a string used as is).
-- opts: stdin (text), env ({NAME = value}), cwd. Returns {out=, err=, code=}.
local function run(args, opts)
  opts = opts or {}
  local words = {}
  if type(args) == 'table' then
    for i, a in ipairs(args) do words[i] = q(a) end
    args = table.concat(words, ' ')
  end
  local env = { 'env' }
  for _, name in ipairs(CLEARED) do env[#env + 1] = '-u ' .. name end
  for k, v in pairs(opts.env or {}) do env[#env + 1] = q(k .. '=' .. v) end
  local errf, inf = os.tmpname(), os.tmpname()
  spit(inf, opts.stdin or '')
  local cmd = string.format('%s%s %s %s < %s 2> %s', opts.cwd and ('cd ' .. q(opts.cwd) .. ' && ') or '',
    table.concat(env, ' '), q(BIN), args, q(inf), q(errf))
  local p = io.popen(cmd, 'r')
  local out = p:read('a')
  local _, how, code = p:close()
  local err = slurp(errf)
  os.remove(errf)
  os.remove(inf)
  return { out = out, err = err, code = how == 'exit' and code or 128 + code }
end

local function default_backend()
  return (run({ '-e', 'io.write(require("kluabench").backend())' }).out)
end

describe('the kluabench host', function()
  local dir

  setup(function() dir = tmpdir() end)
  teardown(function() os.execute('rm -rf ' .. q(dir)) end)

  describe('runs scripts as lua does', function()
    it('puts script arguments in arg and ...', function()
      spit(dir .. '/s.lua', 'print(arg[0], arg[1], arg[2], #arg, select("#", ...), ...)\n')
      local r = run({ dir .. '/s.lua', 'a', 'b c' })
      assert.equal(0, r.code)
      assert.equal(dir .. '/s.lua\ta\tb c\t2\t2\ta\tb c\n', r.out)
    end)

    it('puts the interpreter and the options at negative indices', function()
      spit(dir .. '/neg.lua', 'print(arg[-3], arg[-2], arg[-1])\n')
      local r = run({ '-e', 'x=1', dir .. '/neg.lua' })
      assert.equal(BIN .. '\t-e\tx=1\n', r.out)
    end)

    it('skips a #! line', function()
      spit(dir .. '/bang.lua', '#!/usr/bin/env kluabench\nprint("ran")\n')
      assert.equal('ran\n', run({ dir .. '/bang.lua' }).out)
    end)

    it('runs -e statements in order, before the script', function()
      spit(dir .. '/e.lua', 'print(x + y)\n')
      local r = run({ '-e', 'x = 1', '-ey=2', dir .. '/e.lua' })
      assert.equal(0, r.code)
      assert.equal('3\n', r.out)
    end)

    it('requires -l modules into globals, -l g=mod under another name', function()
      spit(dir .. '/mymod.lua', 'return { answer = 42 }\n')
      local r = run({ '-l', 'mymod', '-l', 'm2=mymod', '-e', 'print(mymod.answer, m2 == mymod)' },
        { cwd = dir })
      assert.equal(0, r.code)
      assert.equal('42\ttrue\n', r.out)
    end)

    it('prints the version with -v', function()
      local r = run({ '-v' })
      assert.equal(0, r.code)
      assert.matches('^kluabench %d+%.%d+%.%d+ %(Lua 5%.4%.%d+%)\n$', r.out)
    end)

    it('runs LUA_INIT_5_4, else LUA_INIT, unless -E', function()
      local env = { LUA_INIT = 'print("init")' }
      assert.equal('init\nmain\n', run({ '-e', 'print("main")' }, { env = env }).out)
      assert.equal('main\n', run({ '-E', '-e', 'print("main")' }, { env = env }).out)
      env.LUA_INIT_5_4 = 'print("init 5.4")'
      assert.equal('init 5.4\nmain\n', run({ '-e', 'print("main")' }, { env = env }).out)
      spit(dir .. '/init.lua', 'print("from file")\n')
      assert.equal('from file\n', run({ '-e', '' }, { env = { LUA_INIT = '@' .. dir .. '/init.lua' } }).out)
    end)

    it('runs stdin for "-", with arguments', function()
      local r = run({ '-', 'a', 'b' }, { stdin = 'print("stdin", ...)\n' })
      assert.equal(0, r.code)
      assert.equal('stdin\ta\tb\n', r.out)
    end)

    it('runs stdin when there is no script and stdin is not a terminal', function()
      assert.equal('piped\n', run({}, { stdin = 'print("piped")\n' }).out)
      assert.equal('after --\n', run({ '--' }, { stdin = 'print("after --")\n' }).out)
    end)

    it('treats what follows -- as a script, even "-x"', function()
      spit(dir .. '/-x', 'print("dash file")\n')
      local r = run({ '--', '-x' }, { cwd = dir })
      assert.equal(0, r.code)
      assert.equal('dash file\n', r.out)
    end)

    it('runs the REPL on piped input with -i', function()
      local r = run({ '-i' }, { stdin = '1 + 1\nfunction f(x)\nreturn x * 3\nend\nf(5)\n' })
      assert.equal(0, r.code)
      assert.matches('^kluabench [^\n]*\n', r.out)
      assert.matches('> 2\n', r.out, 1, true)
      assert.matches('>> > 15\n', r.out, 1, true)
    end)
    it('enters the REPL after the script with -i', function()
      spit(dir .. '/pre.lua', 'greeting = "hello from " .. arg[0]:match("[^/]*$")\n')
      local r = run({ '-i', dir .. '/pre.lua' }, { stdin = 'greeting\n' })
      assert.equal(0, r.code)
      assert.matches('> hello from pre.lua\n', r.out, 1, true)
    end)

    it('turns warnings on with -W', function()
      assert.equal('', run({ '-e', 'warn("quiet")' }).err)
      assert.matches('Lua warning: loud', run({ '-W', '-e', 'warn("loud")' }).err, 1, true)
    end)
  end)

  describe('reports errors', function()
    it('as "kluabench: message" and a traceback, with exit status 1', function()
      local r = run({ '-e', 'error("boom")' })
      assert.equal(1, r.code)
      assert.matches('^kluabench: %(command line%):1: boom\nstack traceback:\n', r.err)
    end)

    it('without a traceback when the stdlib raised it on purpose (KLUABENCH_TRACEBACK=1 shows it)', function()
      -- --history outside a git work tree (GIT_CEILING_DIRECTORIES: whatever holds the temporary folder)
      local script = BIN:match('^(.*)/build[^/]*/[^/]*$') .. '/scripts/llama4_rope.lua'
      local args = { script, '--seq', '64', '--hidden', '64', '--history', dir .. '/h.db' }
      local env = { GIT_CEILING_DIRECTORIES = dir, KLUABENCH_RESULTS = dir .. '/results' }
      local r = run(args, { cwd = dir, env = env })
      assert.equal(1, r.code)
      assert.matches('^kluabench: llama4_rope: %-%-history [^\n]*/h%.db: no git commit in the current directory', r.err)
      assert.no.matches('stack traceback', r.err, 1, true)
      env.KLUABENCH_TRACEBACK = '1'
      r = run(args, { cwd = dir, env = env })
      assert.equal(1, r.code)
      assert.matches('SHA)\nstack traceback:\n', r.err, 1, true)
      assert.matches('suite/init%.lua:%d+: in ', r.err)
      -- error(message, 0) in a script of one's own keeps its traceback: it is the script's line
      spit(dir .. '/mine.lua', 'local function f() error("my own", 0) end\nf()\n')
      r = run({ dir .. '/mine.lua' })
      assert.matches('^kluabench: my own\nstack traceback:\n', r.err)
      assert.matches('mine.lua:2: in main chunk', r.err, 1, true)
      -- also in a folder named kluabench (a clone of the repository): only the stdlib's own are quiet
      assert(os.execute('mkdir -p ' .. dir .. '/kluabench'))
      spit(dir .. '/kluabench/mine.lua', 'local function f() error("my own", 0) end\nf()\n')
      r = run({ dir .. '/kluabench/mine.lua' })
      assert.matches('^kluabench: my own\nstack traceback:\n', r.err)
      assert.matches('kluabench/mine.lua:2: in main chunk', r.err, 1, true)
    end)

    it('as a usage error (exit 2, no traceback) for an --out or --samples that cannot be written', function()
      local script = BIN:match('^(.*)/build[^/]*/[^/]*$') .. '/scripts/llama4_rope.lua'
      local missing = dir .. '/no/such/dir/x.jsonl'
      for _, case in ipairs {
        { { '--out', missing }, 'cannot write --out ' .. missing .. ': cannot write: ' .. dir
          .. '/no/such/dir does not exist' },
        { { '--out', dir .. '/ok.jsonl', '--samples', missing }, 'cannot write --samples ' .. missing
          .. ': cannot write: ' .. dir .. '/no/such/dir does not exist' },
        { { '--format', 'jsonl', '--samples', dir }, "option '--samples' " .. dir .. ' is a directory' },
      } do
        local args = { script, '--seq', '64', '--hidden', '64' }
        for _, a in ipairs(case[1]) do args[#args + 1] = a end
        local r = run(args, { env = { KLUABENCH_TRACEBACK = '1' } })
        assert.equal(2, r.code, r.err)
        assert.equal('llama4_rope: ' .. case[2] .. ' (see --help)\n', r.err)
      end
      assert.is_nil(io.open(dir .. '/ok.jsonl')) -- refused before anything was timed
    end)

    it('with the file and line of each frame for a script', function()
      spit(dir .. '/fail.lua', 'local function inner()\n  error("deep")\nend\ninner()\n')
      local r = run({ dir .. '/fail.lua' })
      assert.equal(1, r.code)
      assert.matches('kluabench: [^\n]*fail.lua:2: deep', r.err)
      assert.matches('fail.lua:4: in main chunk', r.err, 1, true)
    end)

    it('for error objects that are not strings', function()
      local r = run({ '-e', 'error({})' })
      assert.equal(1, r.code)
      assert.matches('kluabench: (error object is a table value)', r.err, 1, true)
      r = run({ '-e', 'error(setmetatable({}, {__tostring = function() return "custom" end}))' })
      assert.matches('kluabench: custom', r.err, 1, true)
    end)

    it('for a script that cannot be opened', function()
      local r = run({ dir .. '/nonexistent.lua' })
      assert.equal(1, r.code)
      assert.matches('kluabench: cannot open ' .. dir .. '/nonexistent.lua', r.err, 1, true)
    end)

    it('for a syntax error', function()
      spit(dir .. '/syntax.lua', 'x = = 1\n')
      local r = run({ dir .. '/syntax.lua' })
      assert.equal(1, r.code)
      assert.matches('syntax.lua:1:', r.err, 1, true)
    end)

    it('stops at the first failing -e', function()
      local r = run({ '-e', 'error("first")', '-e', 'print("second")' })
      assert.equal(1, r.code)
      assert.equal('', r.out)
    end)

    it('passes os.exit statuses through', function()
      assert.equal(7, run({ '-e', 'os.exit(7)' }).code)
    end)
  end)

  describe('usage errors', function()
    local cases = {
      { { '-x' }, "unrecognized option '-x'" },
      { { '--bogus' }, "unrecognized option '--bogus'" },
      { { '-e' }, "'-e' needs argument" },
      { { '-l' }, "'-l' needs argument" },
      { { '-vx' }, "unrecognized option '-vx'" },
      { { '--backend' }, "'--backend' needs argument" },
    }
    for _, case in ipairs(cases) do
      it('exit with status 2 and the usage for ' .. table.concat(case[1], ' '), function()
        local r = run(case[1])
        assert.equal(2, r.code)
        assert.equal('', r.out)
        assert.matches('kluabench: ' .. case[2], r.err, 1, true)
        assert.matches('usage: kluabench [options] [script [args]]', r.err, 1, true)
      end)
    end

    it("name the engine's option a mistyped one most likely meant, and none for a word close to none", function()
      for _, case in ipairs {
        { { '--backnd', 'cpu', 'x.lua' }, "'--backnd' (did you mean '--backend'?)" },
        { { '--backnd=cpu', 'x.lua' }, "'--backnd=cpu' (did you mean '--backend'?)" },
        { { '--quite', 'x.lua' }, "'--quite' (did you mean '--quiet'?)" },
        { { '--devic', '0', 'x.lua' }, "'--devic' (did you mean '--device'?)" },
        { { '--hlep' }, "'--hlep' (did you mean '--help'?)" },
        { { '--back', 'cpu' }, "'--back' (did you mean '--backend'?)" }, -- the start of one
      } do
        local r = run(case[1])
        assert.equal(2, r.code, r.err)
        assert.equal('', r.out)
        assert.matches('kluabench: unrecognized option ' .. case[2] .. '\n', r.err, 1, true)
      end
      for _, a in ipairs { '--bogus', '--qu', '--zzzzzzzz', '--rep-ms', '-o' } do
        local r = run({ a, 'x.lua' })
        assert.equal(2, r.code, r.err)
        -- most likely a script's option, given before the script's name
        assert.matches("kluabench: unrecognized option '" .. a .. "' (a script's or a command's own options go after "
          .. 'its name: kluabench SCRIPT [options])\n', r.err, 1, true)
      end
    end)
  end)

  describe('backend options', function()
    it('--backend cpu selects the cpu backend', function()
      for _, args in ipairs { { '--backend', 'cpu' }, { '--backend=cpu' } } do
        table.insert(args, '-e')
        table.insert(args, 'io.write(require("kluabench").backend())')
        local r = run(args)
        assert.equal(0, r.code)
        assert.equal('cpu', r.out)
      end
    end)

    it('KLUABENCH_BACKEND is the default, and the option wins', function()
      local code = 'io.write(require("kluabench").backend())'
      assert.equal('cpu', run({ '-e', code }, { env = { KLUABENCH_BACKEND = 'cpu' } }).out)
      local r = run({ '--backend', 'cpu', '-e', code }, { env = { KLUABENCH_BACKEND = 'tpu' } })
      assert.equal(0, r.code)
      assert.equal('cpu', r.out)
    end)

    it('rejects a bad --backend, --device or KLUABENCH_BACKEND as a usage error', function()
      local r = run({ '--backend', 'tpu', '-e', 'print(1)' })
      assert.equal(2, r.code)
      assert.matches("invalid value 'tpu' for --backend", r.err, 1, true)
      r = run({ '--device', 'x', '-e', 'print(1)' })
      assert.equal(2, r.code)
      assert.matches("invalid value 'x' for --device", r.err, 1, true)
      r = run({ '--device', '-1', '-e', 'print(1)' })
      assert.equal(2, r.code)
      r = run({ '-e', 'print(1)' }, { env = { KLUABENCH_BACKEND = 'tpu' } })
      assert.equal(2, r.code)
      assert.matches("invalid value 'tpu' for KLUABENCH_BACKEND", r.err, 1, true)
      r = run({ '-E', '-e', 'print(1)' }, { env = { KLUABENCH_BACKEND = 'tpu', KLUABENCH_DEVICE = 'x' } })
      assert.equal(0, r.code) -- -E ignores them
    end)

    it('--backend cuda without a usable device is an error with the reason', function()
      if default_backend() == 'cuda' then
        pending('a CUDA device is usable here')
        return
      end
      local r = run({ '--backend', 'cuda', '-e', 'print("ran")' })
      assert.equal(1, r.code)
      assert.equal('', r.out)
      assert.matches('^kluabench: .*cuda', r.err)
    end)

    it('--quiet sets KLUABENCH_QUIET for scripts', function()
      assert.equal('1', run({ '--quiet', '-e', 'io.write(os.getenv("KLUABENCH_QUIET"))' }).out)
    end)

    it('finds the stdlib relative to the binary and honours KLUABENCH_PATH', function()
      spit(dir .. '/only_here.lua', 'return "override"\n')
      local r = run({ '-e', 'io.write(require("only_here"), " ", package.searchpath("kluabench.commands", package.path))' },
        { env = { KLUABENCH_PATH = dir } })
      assert.equal(0, r.code)
      assert.matches('^override .*/stdlib/kluabench/commands/init%.lua$', r.out)
      r = run({ '-E', '-e', 'io.write(tostring(package.searchpath("only_here", package.path)))' },
        { env = { KLUABENCH_PATH = dir } })
      assert.equal('nil', r.out)
    end)
  end)

  describe('commands', function()
    local cli = require 'kluabench.commands'

    it('are the ones kluabench.commands.registry lists: main.c reads that list and names no command itself', function()
      local main_c = assert(slurp(package.searchpath('kluabench.commands', package.path)
        :gsub('stdlib/kluabench/commands/init%.lua$', 'engine/host/main.c'))):gsub('/%*.-%*/', '')
      for _, c in ipairs(require 'kluabench.commands.registry') do
        -- (--help runs the help command, so main.c knows that one name)
        if c.name ~= 'help' then
          assert.is_nil(main_c:find('"' .. c.name .. '"', 1, true), 'main.c names the command ' .. c.name)
        end
      end
      -- a list on KLUABENCH_PATH with one more command: the binary takes it as a command
      local d = tmpdir()
      os.execute('mkdir -p ' .. q(d .. '/kluabench/commands'))
      spit(d .. '/kluabench/commands/registry.lua', "local list = dofile(" .. string.format('%q',
        package.searchpath('kluabench.commands.registry', package.path)) .. ")\n"
        .. "list[#list + 1] = { name = 'greetings', module = 'greetings', summary = 'says hello', device = false }\n"
        .. "return list\n")
      spit(d .. '/greetings.lua', "return { USAGE = 'kluabench greetings', help = 'Says hello.',\n"
        .. "  run = function(args) io.write('hello ', #args, '\\n') return 3 end }\n")
      local r = run({ 'greetings', 'a', 'b' }, { env = { KLUABENCH_PATH = d } })
      assert.same({ 'hello 2\n', '', 3 }, { r.out, r.err, r.code })
      assert.matches('\n  greetings +says hello\n', run({ '--help' }, { env = { KLUABENCH_PATH = d } }).out)
      -- without it (or with -E, which ignores KLUABENCH_PATH) greetings is a file that is not there
      r = run({ '-E', 'greetings' }, { env = { KLUABENCH_PATH = d } })
      assert.equal(1, r.code)
      assert.matches('cannot open greetings', r.err)
      os.execute('rm -rf ' .. q(d))
    end)

    it('are unknown where the stdlib is not beside the binary, and a word that is no file says so', function()
      local d = tmpdir()
      os.execute('mkdir -p ' .. q(d .. '/bin') .. ' && cp ' .. q(BIN) .. ' ' .. q(d .. '/bin/kluabench'))
      spit(d .. '/script.lua', 'print("ran")\n')
      local function alone(args)
        local p = io.popen(string.format('cd %s && env -u KLUABENCH_PATH bin/kluabench %s 2>&1; echo "rc=$?"', q(d), args))
        local out = p:read('a')
        p:close()
        return out
      end
      assert.equal('ran\nrc=0\n', alone('script.lua'))
      local out = alone('verify x.jsonl')
      assert.matches("^kluabench: 'verify' is no file, and the commands are unknown %(module 'kluabench.commands.registry' not found%)\n", out)
      assert.matches('rc=2\n$', out)
      os.execute('rm -rf ' .. q(d))
    end)

    it('--help lists every option and command, one line each, and the dispatch rule', function()
      for _, flag in ipairs { '--help', '-h', 'help' } do
        local r = run({ flag })
        assert.equal(0, r.code)
        for _, c in ipairs(cli.COMMANDS) do
          assert.matches('\n  ' .. c.name:gsub('%-', '%%-') .. ' +[^\n]+\n', r.out)
        end
        for _, opt in ipairs { '-e stat', '-l mod', '-i', '-v', '-E', '--backend NAME', '--device N', '--quiet' } do
          assert.matches('\n  ' .. opt, r.out, 1, true)
        end
        assert.matches('is a command when it is exactly one', r.out, 1, true)
      end
    end)

    it('COMMAND --help and help COMMAND explain each command', function()
      for _, c in ipairs(cli.COMMANDS) do
        local r = run({ c.name, '--help' })
        assert.equal(0, r.code)
        assert.matches('^usage: kluabench ' .. c.name:gsub('%-', '%%-'), r.out)
        assert.equal(r.out, run({ 'help', c.name }).out)
      end
      local r = run({ 'help', 'nosuch' })
      assert.equal(2, r.code)
      assert.matches("unknown command 'nosuch'", r.err, 1, true)
    end)

    it("takes each command's usage and help from one place, its module", function()
      for _, c in ipairs(cli.COMMANDS) do
        if c.module then
          local mod = require(c.module)
          assert.is_string(mod.USAGE, c.name)
          assert.is_string(mod.help, c.name)
          assert.is_nil(c.usage, c.name .. ': a second usage line in cli.COMMANDS')
          assert.is_nil(c.help, c.name .. ': a second help text in cli.COMMANDS')
          assert.matches('^kluabench ' .. c.name:gsub('%-', '%%-') .. '[ \n]', mod.USAGE)
          local r = run({ c.name, '--help' })
          assert.equal('usage: ' .. mod.USAGE .. '\n\n' .. mod.help:gsub('\n*$', '') .. '\n', r.out)
          -- a usage error shows the same usage line
          r = run({ c.name, '--no-such-option' })
          assert.equal(2, r.code, c.name)
          assert.matches('\nusage: ' .. mod.USAGE .. '\n', r.err, 1, true)
        end
      end
    end)

    it('dispatch: a command name is a command, any path is a script', function()
      spit(dir .. '/list', 'print("the script", arg[0], ...)\n')
      local r = run({ 'list' }, { cwd = dir })
      assert.equal(0, r.code)
      assert.matches('kernels', r.out, 1, true)
      assert.equal('the script\t./list\tx\n', run({ './list', 'x' }, { cwd = dir }).out)
      assert.equal('the script\tlist\tx\n', run({ '--', 'list', 'x' }, { cwd = dir }).out)
      assert.equal('the script\tlist\tx\n', run({ 'run', 'list', 'x' }, { cwd = dir }).out)
      spit(dir .. '/list.lua', 'print("list.lua")\n')
      assert.equal('list.lua\n', run({ 'list.lua' }, { cwd = dir }).out)
    end)

    it('run SCRIPT is the same as SCRIPT, arg table included', function()
      spit(dir .. '/args.lua', 'print(arg[-1] == ' .. string.format('%q', BIN)
        .. ', arg[0], arg[1], arg[2], #arg, ...)\n')
      local direct = run({ dir .. '/args.lua', 'a', 'b' })
      local via_run = run({ 'run', dir .. '/args.lua', 'a', 'b' })
      assert.equal(0, via_run.code)
      assert.equal('true\t' .. dir .. '/args.lua\ta\tb\t2\ta\tb\n', direct.out)
      assert.equal(direct.out, via_run.out)
      spit(dir .. '/bad.lua', 'error("in script")\n')
      local r = run({ 'run', dir .. '/bad.lua' })
      assert.equal(1, r.code)
      assert.matches('kluabench: [^\n]*bad.lua:1: in script\nstack traceback:', r.err)
      r = run({ 'run' })
      assert.equal(2, r.code)
      assert.matches('missing SCRIPT', r.err, 1, true)
      r = run({ 'run', dir .. '/missing.lua' })
      assert.equal(1, r.code)
      assert.matches('cannot open', r.err, 1, true)
    end)

    it('a command whose module is missing says so and exits 1', function()
      local code = [[
        local cli = require 'kluabench.commands'
        cli.COMMANDS[#cli.COMMANDS + 1] = { name = 'ghost', module = 'ghost', summary = 's',
          usage = 'kluabench ghost', help = 'h' }
        os.exit(cli.main('ghost', {}))]]
      local r = run({ '-e', code })
      assert.equal(1, r.code)
      assert.equal("kluabench: command 'ghost' is not available in this build "
        .. "(module ghost not found)\n", r.err)
      -- and through argv, for any built-in command this build lacks
      for _, c in ipairs(cli.COMMANDS) do
        if c.module and not package.searchpath(c.module, package.path) then
          r = run({ c.name })
          assert.equal(1, r.code)
          assert.matches("command '" .. c.name .. "' is not available in this build", r.err, 1, true)
        end
      end
    end)

    it('an unknown option to a command is a usage error', function()
      for _, name in ipairs { 'env', 'list' } do
        local r = run({ name, '--bogus' })
        assert.equal(2, r.code)
        assert.matches("kluabench " .. name .. ": unrecognized option '--bogus'", r.err, 1, true)
      end
    end)

    it('an input FILE that does not exist or is no regular file is a usage error for verify, plot, '
      .. 'compare, submission, report and import-liger, before anything is read or written', function()
      local bad = dir .. '/bad.jsonl' -- readable but no bundle: read first, it would be an error of its own
      spit(bad, 'not json\n')
      local missing = dir .. '/missing.jsonl'
      for _, case in ipairs {
        { { 'verify', bad, missing }, missing .. ': No such file or directory' },
        { { 'verify', bad, dir }, dir .. ': is a directory' },
        { { 'verify', '/dev/null' }, '/dev/null: is a character device, not a regular file (a device or a FIFO may '
          .. 'never end)' },
        { { 'plot', bad, missing, '-o', dir .. '/c.svg' }, missing .. ': No such file or directory' },
        { { 'plot', dir, '-o', dir .. '/c.svg' }, dir .. ': is a directory' },
        { { 'compare', missing, bad }, missing .. ': No such file or directory' },
        { { 'submission', bad, missing, '-o', dir .. '/s.json' }, missing .. ': No such file or directory' },
        { { 'report', bad, dir, '-o', dir .. '/r.html' }, dir .. ': is a directory' },
        { { 'import-liger', bad, missing, '--out', dir .. '/imported' }, missing .. ': No such file or directory' },
      } do
        local r = run(case[1])
        assert.equal(2, r.code, r.err)
        assert.equal('', r.out)
        assert.matches('^kluabench ' .. case[1][1]:gsub('%p', '%%%0') .. ': ' .. case[2]:gsub('%p', '%%%0') .. '\n', r.err)
        assert.no.matches('bad.jsonl', r.err, 1, true) -- the readable file was not read
      end
      assert.is_nil(io.open(dir .. '/c.svg'))
      assert.is_nil(io.open(dir .. '/m.jsonl'))
      for _, f in ipairs { '/s.json', '/r.html', '/imported' } do assert.is_nil(io.open(dir .. f)) end
    end)

    it('env prints the backend and device as a table, or JSON', function()
      local r = run({ '--backend', 'cpu', 'env' })
      assert.equal(0, r.code)
      assert.matches('\nbackend +cpu\n', r.out)
      assert.matches('\ndevice%.name +%S', r.out)
      assert.matches('\nkluabench%.version +%d', r.out)
      r = run({ '--backend', 'cpu', 'env', '--json' })
      assert.equal(0, r.code)
      local env = require('cjson').decode(r.out)
      assert.equal('cpu', env.backend)
      assert.is_string(env.device.name)
      assert.is_string(env.kluabench.version)
      r = run({ '--backend', 'cpu', 'env', '--format', 'markdown' })
      assert.matches('\n| backend ', r.out, 1, true)
    end)

    it('env shows the git commit as hex when built from a git checkout', function()
      local host = package.loaded['kluabench.host']
      local root = host and host.root or '.'
      local _, git = util.run('git -C ' .. q(root) .. ' rev-parse --verify -q HEAD >/dev/null 2>&1')
      if git ~= 0 then return end -- not a checkout: the build says "unknown"
      local hex = '^%x%x%x%x%x%x%x+%-?d?i?r?t?y?$'
      local r = run({ '--backend', 'cpu', 'env', '--json' })
      assert.equal(0, r.code)
      assert.matches(hex, require('cjson').decode(r.out).kluabench.commit)
      assert.matches('\nkluabench%.commit +%x%x%x%x%x%x%x', run({ '--backend', 'cpu', 'env' }).out)
      -- the host's own table carries the same commit as the engine's build info
      r = run({ '-e', 'local h = package.loaded["kluabench.host"]; local kb = require "kluabench"; '
        .. 'io.write(h.commit, " ", kb.build_info().git_commit)' })
      local a, b = r.out:match('^(%S+) (%S+)$')
      assert.matches(hex, a)
      assert.equal(b, a)
    end)

    it('list shows the kernels and the scripts with their first comment line', function()
      local r = run({ 'list' })
      assert.equal(0, r.code)
      assert.matches('kb.rope.llama4_fwd', r.out, 1, true)
      local host = package.loaded['kluabench.host']
      local root = host and host.root or '.'
      local f = io.open(root .. '/scripts/llama4_rope.lua')
      if f then
        f:close()
        assert.matches('scripts/llama4_rope.lua', r.out, 1, true)
      end
      local j = require('cjson').decode(run({ 'list', '--format', 'json' }).out)
      assert.is_table(j.kernels)
    end)

    it('list reads scripts with the bounded reader: a FIFO or a link to /dev/zero is listed, not read (issue 37)',
      function()
      -- list reads <root>/scripts/*.lua (root: the checkout the binary belongs to); list.files takes
      -- the root, so a temporary scripts folder stands in for it. A FIFO used to hang the listing and
      -- /dev/zero to be read until memory ran out: the child runs under a timeout and a memory cap.
      local root = tmpdir()
      finally(function() os.execute('rm -rf ' .. q(root)) end)
      assert(os.execute('mkdir ' .. q(root .. '/scripts') .. ' ' .. q(root .. '/scripts/dir.lua')))
      spit(root .. '/scripts/a.lua', '#!/usr/bin/env kluabench\n\n-- the first script\nprint(1)\n')
      assert(os.execute('mkfifo ' .. q(root .. '/scripts/fifo.lua')))
      assert(os.execute('ln -s /dev/zero ' .. q(root .. '/scripts/zero.lua')))
      spit(root .. '/scripts/z.lua', '-- the last one\n')
      local code = string.format([[
        for _, f in ipairs(require('kluabench.commands.list').files(%q, 'scripts')) do
          print(f.name .. '=' .. f.about)
        end]], root)
      -- (no memory cap under AddressSanitizer, which reserves terabytes of address space for its shadow)
      local asan = (require('kluabench').build_info().cflags or ''):find('sanitize=address', 1, true)
      local out = util.run(string.format('%stimeout -k 5 30 %s -e %s 2>&1', asan and '' or 'ulimit -v 4000000; ',
        q(BIN), q(code)))
      assert.equal('scripts/a.lua=the first script\nscripts/dir.lua=\nscripts/fifo.lua=\nscripts/z.lua=the last one\n'
        .. 'scripts/zero.lua=\n', out)
    end)
  end)

  describe('signals', function()
    -- Runs `script` in the background, waits for it to print "ready", sends
    -- the signals (0.3 s apart) and returns stdout, stderr and the status.
    local function signalled(script, signals)
      spit(dir .. '/sig.lua', script)
      local out, err, rc = dir .. '/sig.out', dir .. '/sig.err', dir .. '/sig.rc'
      os.remove(out)
      local kills = {}
      for i, s in ipairs(signals) do kills[i] = 'kill -' .. s .. ' $pid; sleep 0.3' end
      local sh = string.format([[
        %s %s > %s 2> %s < /dev/null & pid=$!
        n=0; while ! grep -q ready %s 2>/dev/null && [ $n -lt 100 ]; do sleep 0.05; n=$((n+1)); done
        %s
        wait $pid; echo $? > %s]], q(BIN), q(dir .. '/sig.lua'), q(out), q(err), q(out),
        table.concat(kills, '; '), q(rc))
      os.execute(sh)
      return slurp(out), slurp(err), tonumber(slurp(rc))
    end

    local READY = 'print("ready"); io.stdout:flush()\n'

    it('SIGINT stops running Lua code with "interrupted!" and a traceback', function()
      local out, err, code = signalled(READY .. 'while true do end\n', { 'INT' })
      assert.equal('ready\n', out)
      assert.equal(1, code)
      assert.matches('^kluabench: interrupted!\nstack traceback:', err)
    end)

    it('defer_interrupts: the first SIGINT or SIGTERM is a flag, the second stops', function()
      local script = [[
        local kb = require 'kluabench'
        assert(kb.defer_interrupts(true) == false)
        print("ready"); io.stdout:flush()
        repeat local hit, name = kb.interrupted() until hit
        print("stopping after", select(2, kb.interrupted())); io.stdout:flush()
        while true do end
      ]]
      for _, sig in ipairs { 'INT', 'TERM' } do
        local out, err, code = signalled(script, { sig, 'INT' })
        assert.equal('ready\nstopping after\tSIG' .. sig .. '\n', out)
        assert.equal(1, code)
        assert.matches('^kluabench: interrupted!', err)
      end
    end)

    it('defer_interrupts(false) restores the hard stop', function()
      local script = [[
        local kb = require 'kluabench'
        kb.defer_interrupts(true)
        assert(kb.defer_interrupts(false) == true)
        assert(kb.interrupted() == false)
        print("ready"); io.stdout:flush()
        while true do end
      ]]
      local out, err, code = signalled(script, { 'INT' })
      assert.equal('ready\n', out)
      assert.equal(1, code)
      assert.matches('interrupted!', err, 1, true)
    end)
  end)
end)

describe('cli.parse_args', function()
  local cli = require 'kluabench.commands'
  local SPEC = { quiet = 'flag', out = 'value', filter = 'list', aliases = { q = 'quiet', o = 'out' } }

  it('reads flags, values in every spelling, repeated list options and positionals', function()
    local opts, rest = cli.parse_args({ 'a.json', '-q', '--out=x', '--filter', 'k=1', 'b.json',
      '--filter=k=2', '--', '--not-an-option' }, SPEC)
    assert.same({ quiet = true, out = 'x', filter = { 'k=1', 'k=2' } }, opts)
    assert.same({ 'a.json', 'b.json', '--not-an-option' }, rest)
    assert.same({ out = 'y' }, (cli.parse_args({ '-o', 'y' }, SPEC)))
  end)

  it('says what is wrong with an option', function()
    assert.same({ nil, "unrecognized option '--nope'" }, { cli.parse_args({ '--nope' }, SPEC) })
    assert.same({ nil, "unrecognized option '-x'" }, { cli.parse_args({ '-x' }, SPEC) })
    assert.same({ nil, "option '--quiet' takes no value" }, { cli.parse_args({ '--quiet=1' }, SPEC) })
    assert.same({ nil, "option '--filter' needs a value" }, { cli.parse_args({ '--filter' }, SPEC) })
  end)
end)
