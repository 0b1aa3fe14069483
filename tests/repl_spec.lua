-- The REPL as a person sees it: each case starts kluabench in a tmux pane
-- (its own server socket), types keys with send-keys and reads the screen
-- with capture-pane. Skipped (pending) where tmux is not installed.

local util = require 'helpers.util'
local BIN = util.bin()
local HAS_TMUX = os.execute('command -v tmux > /dev/null 2>&1') == true
local TIMEOUT_S = 10

local q = util.q

local slurp = util.slurp

local function sleep(s) os.execute('sleep ' .. s) end

local function shell(cmd)
  local p = io.popen(cmd .. ' 2>/dev/null')
  local out = p:read('a')
  p:close()
  return out
end

local sessions = 0

--- A kluabench REPL in a detached tmux pane. The pane's command prints
-- "[exited N]" when the REPL ends, and stays a while so that the screen can
-- be read (r.stop() ends it; the sleep bounds a server that a crash left).
local function start(history)
  sessions = sessions + 1
  local r = { socket = string.format('kluabench-test-%d-%d-%d', os.time(), math.random(1e6), sessions) }
  local cmd = string.format(
    'env -u LUA_INIT -u LUA_INIT_5_4 -u KLUABENCH_BACKEND KLUABENCH_HISTORY=%s %s --backend cpu; '
      .. 'echo "[exited $?]"; sleep 120', q(history), q(BIN))
  os.execute(string.format('tmux -L %s -f /dev/null new-session -d -s repl -x 160 -y 50 %s',
    q(r.socket), q(cmd)))

  function r.tmux(args) return shell('tmux -L ' .. q(r.socket) .. ' ' .. args) end
  --- Types text literally (tmux would read "end" as the End key otherwise).
  function r.type(text) r.tmux('send-keys -t repl -l ' .. q(text)) end
  --- Presses keys by tmux name: Enter, Tab, C-c, C-d, C-u, Up.
  function r.keys(...) r.tmux('send-keys -t repl ' .. table.concat({ ... }, ' ')) end
  function r.line(text) r.type(text); r.keys('Enter') end
  -- (-J keeps trailing blanks, which redisplay may leave: dropped here)
  function r.screen()
    return (r.tmux('capture-pane -p -J -t repl -S -500'):gsub(' +\n', '\n'))
  end
  --- Waits until the screen matches `pattern` (plain text unless `lua`);
  -- returns the screen, or fails showing it.
  function r.wait_for(pattern, lua)
    local deadline = os.time() + TIMEOUT_S
    local screen
    repeat
      screen = r.screen()
      if screen:find(pattern, 1, not lua) then return screen end
      sleep(0.05)
    until os.time() > deadline
    error(string.format('timed out waiting for %q; the screen:\n%s', pattern, screen), 2)
  end
  function r.stop()
    os.execute('tmux -L ' .. q(r.socket) .. ' kill-server 2> /dev/null')
    if r.socket_path ~= '' then os.remove(r.socket_path) end
  end
  r.socket_path = r.tmux("display-message -p '#{socket_path}'"):gsub('\n$', '')
  local ok, err = pcall(r.wait_for, '\n>\n') -- the first prompt (its blank is stripped)
  if not ok then
    r.stop()
    error(err, 2)
  end
  return r
end

describe('the REPL', function()
  local repl, history

  before_each(function()
    if not HAS_TMUX then return end
    history = os.tmpname()
    os.remove(history)
    repl = start(history)
  end)

  after_each(function()
    if repl then repl.stop() end
    repl = nil
    if history then os.remove(history) end
  end)

  local function needs_tmux()
    if HAS_TMUX then return true end
    pending('tmux is not installed: the REPL tests drive a terminal through it')
    return false
  end

  it('shows a banner and prints the values of expressions', function()
    if not needs_tmux() then return end
    local s = repl.screen()
    assert.matches('kluabench %d+%.%d+%.%d+ %(Lua 5%.4', s)
    repl.line('1 + 2')
    repl.wait_for('> 1 + 2\n3\n')
    repl.line('"a", nil, 4')
    repl.wait_for('\na +nil +4\n', true) -- the pane shows tabs as blanks
    repl.line('x = 5')
    repl.line('x * 2')
    repl.wait_for('> x = 5\n> x * 2\n10\n')
  end)

  it('continues a statement over several lines', function()
    if not needs_tmux() then return end
    repl.line('function sq(x)')
    repl.line('return x * x')
    repl.line('end')
    repl.line('sq(12)')
    repl.wait_for('> function sq(x)\n>> return x * x\n>> end\n> sq(12)\n144\n')
  end)

  it('has kb loaded and completes kb.rope. with the kernel names', function()
    if not needs_tmux() then return end
    repl.type('kb.rope.')
    repl.keys('Tab', 'Tab')
    local s = repl.wait_for('kb.rope.llama4_fwd')
    assert.matches('kb.rope.llama4_bwd', s, 1, true)
    repl.keys('C-u')
    repl.type('kb.rope.llama4_f')
    repl.keys('Tab')
    repl.type(' ~= nil')
    repl.keys('Enter')
    repl.wait_for('> kb.rope.llama4_fwd ~= nil\ntrue\n')
  end)

  it('completes globals, and methods after ":" on a tensor', function()
    if not needs_tmux() then return end
    repl.line('t = kb.zeros({2, 3}, "f32")')
    repl.type('t:')
    repl.keys('Tab', 'Tab')
    local s = repl.wait_for('t:totable')
    assert.matches('t:numel', s, 1, true)
    assert.matches('t:clone', s, 1, true)
    repl.keys('C-u')
    repl.type('t:num')
    repl.keys('Tab')
    repl.type('()')
    repl.keys('Enter')
    repl.wait_for('> t:numel()\n6\n')
    repl.type('string.upp')
    repl.keys('Tab')
    repl.type('("ok")')
    repl.keys('Enter')
    repl.wait_for('> string.upper("ok")\nOK\n')
  end)

  it('prints tables as nested views with sorted keys, and shapes as lists', function()
    if not needs_tmux() then return end
    repl.line('t = kb.zeros({2, 1024, 3})')
    repl.line('t.shape')
    repl.wait_for('> t.shape\n[2, 1024, 3]\n')
    repl.line('{b = 1, a = {x = true, [2] = "two"}, [1] = "one"}')
    repl.wait_for('\n{[1] = "one", a = {[2] = "two", x = true}, b = 1}\n')
    repl.line('c = {}; c.me = c; c.list = {10, 20}')
    repl.line('c')
    repl.wait_for('\n{list = [10, 20], me = <cycle: table: 0x')
    repl.line('kb.device_info()')
    local s = repl.wait_for('\n  name = "')
    assert.matches('\n{\n  arch = "', s, 1, true) -- one key a line, sorted
    assert.not_matches('table: 0x', s:match('kb.device_info%(%)(.*)$'), 1, true)
    repl.line('t:sum(2, true).shape, 7, "plain"')
    repl.wait_for('\n%[2, 1, 3%] +7 +plain\n', true) -- the pane shows tabs as blanks
  end)

  it('shows a timing result as torch.utils.benchmark shows a Measurement', function()
    if not needs_tmux() then return end
    repl.line('x = kb.randn({4096})')
    repl.line('kb.measure.run("hot", function() x:add_(1) end, {stop = kb.stopping.count(7)})')
    local s = repl.wait_for('7 samples')
    assert.matches('<kluabench timing result: hot, timer host_monotonic, backend cpu>', s, 1, true)
    assert.matches('\n  Median: [%d.]+ [num]?s\n  IQR:    [%d.]+ [num]?s %([%d.]+ to [%d.]+ [num]?s: the 25th to 75th '
      .. 'percentile%)\n  7 samples', s)
    repl.line('kb.do_bench.do_bench(function() x:mul_(1) end, {rep_ms = 2, warmup_ms = 1})')
    s = repl.wait_for('<kluabench timing result: do_bench')
    s = repl.wait_for('samples')
    -- do_bench's value labelled inside the view, not a bare number above it
    assert.matches('\n<kluabench timing result: do_bench[^\n]*\n  Mean: +[%d.]+ [num]?s %(do_bench\'s return value', s)
  end)

  it('completes the modules kb loads on first use, and tensor properties', function()
    if not needs_tmux() then return end
    repl.type('kb.mea')
    repl.keys('Tab')
    repl.type('.ru')
    repl.keys('Tab')
    repl.type(' ~= nil')
    repl.keys('Enter')
    repl.wait_for('> kb.measure.run ~= nil\ntrue\n')
    repl.type('kb.do_b')
    repl.keys('Tab')
    repl.type('.do_')
    repl.keys('Tab', 'Tab')
    repl.wait_for('kb.do_bench.do_bench_protocol')
    repl.keys('C-u')
    repl.type('kb.sto')
    repl.keys('Tab')
    repl.type('.cou')
    repl.keys('Tab')
    repl.type('(3).name')
    repl.keys('Enter')
    repl.wait_for('> kb.stopping.count(3).name\n')
    repl.line('t = kb.zeros({5})')
    repl.type('t.sh')
    repl.keys('Tab')
    repl.keys('Enter')
    repl.wait_for('> t.shape\n[5]\n')
    repl.type('t:ma')
    repl.keys('Tab', 'Tab')
    local s = repl.wait_for('t:matmul')
    assert.matches('t:max', s, 1, true)
  end)

  it('prints an error with its traceback and goes on', function()
    if not needs_tmux() then return end
    repl.line('error("oops")')
    repl.wait_for('kluabench: stdin:1: oops\nstack traceback:')
    repl.line('40 + 2')
    repl.wait_for('> 40 + 2\n42\n')
  end)

  it('drops the line on Ctrl-C and stops running code on Ctrl-C', function()
    if not needs_tmux() then return end
    -- (keys go at a person's pace around Ctrl-C: the terminal discards
    -- input that is still queued when it turns Ctrl-C into SIGINT)
    repl.type('abc = 1 +')
    repl.wait_for('> abc = 1 +')
    repl.keys('C-c')
    sleep(1.5) -- generous: on a loaded machine the SIGINT can be handled late
    repl.line('7 * 6')
    local s = repl.wait_for('> 7 * 6\n42\n')
    assert.not_matches('syntax', s, 1, true)
    repl.line('function unfinished()')
    repl.type('x = 1')
    repl.wait_for('>> x = 1')
    repl.keys('C-c')
    sleep(1.5)
    repl.line('1 + 1')
    repl.wait_for('1 + 1\n2\n') -- evaluated, so not a line of unfinished()
    repl.line('for i = 1, 1e13 do end')
    sleep(0.3)
    repl.keys('C-c')
    repl.wait_for('interrupted!')
    repl.line('"still here"')
    repl.wait_for('\nstill here\n')
  end)

  it('translates ?name into help("name")', function()
    if not needs_tmux() then return end
    local has_help = package.searchpath('kluabench.apidoc.help', package.path) ~= nil
    repl.line('?kb.rope.llama4_fwd')
    if has_help then
      repl.line('"done"')
      local s = repl.wait_for('\ndone\n')
      assert.not_matches('attempt to call', s, 1, true)
      assert.matches('llama4_fwd', s, 1, true)
    else
      repl.wait_for('help is not available in this build')
    end
  end)

  it('writes the history file at exit and reads it at start', function()
    if not needs_tmux() then return end
    repl.line('history_marker = 1')
    repl.line('function two()')
    repl.line('return 2 end')
    repl.keys('C-d')
    repl.wait_for('[exited 0]')
    local text = assert(slurp(history), 'no history file')
    -- libedit encodes blanks (\040) and newlines (\012) in its file
    assert.matches('history_marker', text, 1, true)
    assert.matches('function\\040two()\\012return\\0402\\040end', text, 1, true)
    repl.stop()
    repl = start(history)
    repl.keys('Up', 'Up')
    repl.wait_for('> history_marker = 1')
  end)

  it('ignores a history file that cannot be written', function()
    if not needs_tmux() then return end
    repl.stop()
    repl = start('/nonexistent-dir/history')
    repl.line('1')
    repl.keys('C-d')
    local s = repl.wait_for('[exited 0]')
    assert.not_matches('nonexistent', s, 1, true)
  end)

  -- issue 14: libedit's write_history chmods and rewrites the file; as root
  -- that turned /dev/null into a plain file. A device made here stands for it.
  it('never hands a history path that is not a regular file to libedit', function()
    if not needs_tmux() then return end
    repl.stop()
    local dir = util.tmpdir()
    local null = dir .. '/null'
    if not os.execute('mknod ' .. q(null) .. ' c 1 3 2> /dev/null') then
      os.execute('rm -rf ' .. q(dir))
      return pending('mknod is not allowed here')
    end
    repl = start(null)
    repl.wait_for('history file ' .. null .. ': not a regular file; history is not kept')
    repl.line('1 + 1')
    repl.keys('C-d')
    repl.wait_for('[exited 0]')
    local p = io.popen('stat -c %F ' .. q(null))
    local kind = p:read('l')
    p:close()
    os.execute('rm -rf ' .. q(dir))
    assert.equal('character special file', kind)
  end)
end)

-- Several REPLs on one history file (issue 24): each keeps its own lines,
-- whatever the order they end in; the file keeps the last 1000 entries.
describe('the REPL history shared by several REPLs', function()
  local function needs_tmux()
    if HAS_TMUX then return true end
    pending('tmux is not installed: the REPL tests drive a terminal through it')
    return false
  end

  -- n REPLs as windows of one tmux server, all on `history`
  local function start_many(n, history)
    local socket = string.format('kluabench-hist-%d-%d', os.time(), math.random(1e6))
    local function tmux(args) return shell('tmux -L ' .. q(socket) .. ' ' .. args) end
    tmux('-f /dev/null new-session -d -s many -x 120 -y 20 ' .. q('sleep 120'))
    for i = 1, n do
      local cmd = string.format('env -u LUA_INIT -u LUA_INIT_5_4 KLUABENCH_HISTORY=%s %s --backend cpu; '
        .. 'echo "[exited $?]"; sleep 120', q(history), q(BIN))
      tmux(string.format('new-window -t many -n w%d %s', i, q(cmd)))
    end
    local m = { tmux = tmux }
    function m.screen(i) return tmux('capture-pane -p -J -t many:w' .. i) end
    function m.wait_for(i, text)
      local deadline = os.time() + TIMEOUT_S
      repeat
        local screen = m.screen(i)
        if screen:find(text, 1, true) then return screen end
        sleep(0.05)
      until os.time() > deadline
      error(string.format('window %d: timed out waiting for %q; the screen:\n%s', i, text, m.screen(i)), 2)
    end
    function m.stop() tmux('kill-server') end
    return m
  end

  it('keeps every line of 8 REPLs that end at the same time', function()
    if not needs_tmux() then return end
    local dir = util.tmpdir()
    local history = dir .. '/history'
    util.spit(history, '_HiStOrY_V2_\nolder\\040line\n')
    local m = start_many(8, history)
    local ok, err = pcall(function()
      for i = 1, 8 do m.wait_for(i, '\n>') end
      for i = 1, 8 do
        m.tmux(string.format('send-keys -t many:w%d -l %s', i, q('marker_' .. i .. ' = ' .. i)))
        m.tmux(string.format('send-keys -t many:w%d Enter', i))
      end
      for i = 1, 8 do m.wait_for(i, '> marker_' .. i .. ' = ' .. i .. '\n>') end
      for i = 1, 8 do m.tmux(string.format('send-keys -t many:w%d C-d', i)) end
      for i = 1, 8 do m.wait_for(i, '[exited 0]') end
    end)
    m.stop()
    local text = slurp(history) or ''
    os.execute('rm -rf ' .. q(dir))
    assert(ok, err)
    local head = '_HiStOrY_V2_\nolder\\040line\n'
    assert.equal(head, text:sub(1, #head))
    for i = 1, 8 do
      assert.matches('\nmarker_' .. i .. '\\040=\\040' .. i .. '\n', text, 1, true)
    end
    local lines = 0
    for _ in text:gmatch('\n') do lines = lines + 1 end
    assert.equal(10, lines) -- the cookie, the older line and eight markers, once each
  end)

  it('trims the file to the last 1000 entries, keeping its first line', function()
    if not needs_tmux() then return end
    local dir = util.tmpdir()
    local history = dir .. '/history'
    local old = { '_HiStOrY_V2_' }
    for i = 1, 1200 do old[#old + 1] = 'old_' .. i end
    util.spit(history, table.concat(old, '\n') .. '\n')
    local m = start_many(1, history)
    local ok, err = pcall(function()
      m.wait_for(1, '\n>')
      m.tmux('send-keys -t many:w1 -l ' .. q('newest = 1'))
      m.tmux('send-keys -t many:w1 Enter')
      m.wait_for(1, '> newest = 1\n>')
      m.tmux('send-keys -t many:w1 C-d')
      m.wait_for(1, '[exited 0]')
    end)
    m.stop()
    local text = slurp(history) or ''
    os.execute('rm -rf ' .. q(dir))
    assert(ok, err)
    local lines = {}
    for line in text:gmatch('[^\n]+') do lines[#lines + 1] = line end
    assert.equal(1001, #lines)
    assert.equal('_HiStOrY_V2_', lines[1])
    assert.equal('old_202', lines[2])
    assert.equal('newest\\040=\\0401', lines[1001])
  end)
end)

-- REPL lines from a pipe (`kluabench -i`), and kb in -e: no terminal needed.
describe('kluabench -i with a pipe, and -e', function()
  local function run(args, stdin)
    local dir = util.tmpdir()
    util.spit(dir .. '/in', stdin or '')
    local out = shell(string.format('%s --backend cpu %s < %s', q(BIN), args, q(dir .. '/in')))
    os.execute('rm -rf ' .. q(dir))
    return out
  end

  it('reads REPL lines and prints results as the terminal REPL does', function()
    local out = run('-i', 'q = kb.randn({1, 2048, 32, 64}, "bf16", 1)\nq.shape\n{z = 1, a = {2, 3}}\n'
      .. 'kb.measure.run("hot", function() end, {stop = kb.stopping.count(3)})\n')
    assert.matches('> > [1, 2048, 32, 64]\n', out, 1, true)
    assert.matches('> {a = [2, 3], z = 1}\n', out, 1, true)
    assert.matches('> <kluabench timing result: hot', out, 1, true)
    assert.matches('\n  3 samples', out, 1, true)
  end)

  it('gives -e the kb global, and keeps "-" a script read from stdin, as lua does', function()
    assert.equal(BIN, run('-e ' .. q('print(kb.executable())')):match('^(.-)\n'))
    assert.equal('[3]\n', run('-e ' .. q('io.write(tostring(kb.zeros({3}).shape[1] == 3 and "[3]\\n"))')))
    -- a script from stdin: a bare expression is a syntax error there
    assert.equal('script\t6\n', run('-', 'print("script", 2 * 3)\n'))
    local text, code = util.run(string.format('echo "1 + 1" | %s --backend cpu - 2>&1', q(BIN)))
    assert.equal(1, code)
    assert.matches("kluabench: stdin:1: unexpected symbol near '1'", text, 1, true)
  end)
end)
