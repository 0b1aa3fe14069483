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
    local has_help = package.searchpath('kluabench.cli.help', package.path) ~= nil
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
