-- kb.process: starting children, waiting for them in any order, signals,
-- and the errors of each step (a program that cannot start, a file that
-- cannot be opened, a process that is gone).
local kb = require 'kluabench'
local util = require 'helpers.util'
local process = kb.process

local wait = require('kluabench.dist.shards').wait -- process.wait, resumed after EINTR

describe('kb.process', function()
  local dir
  before_each(function() dir = util.tmpdir() end)
  after_each(function() os.execute('rm -rf ' .. util.q(dir)) end)

  it('starts a program with arguments and environment, and reports its exit code', function()
    local out = dir .. '/out.txt'
    local pid = assert(process.spawn({ 'sh', '-c', 'echo "$1 $KB_X ${HOME:-nohome}"; exit 3', 'sh', 'arg one' },
      { env = { KB_X = 'x=1', HOME = false }, stdout = out }))
    assert.is_true(math.type(pid) == 'integer' and pid > 0)
    assert.same({ pid, 'exit', 3 }, { wait(pid) })
    assert.equal('arg one x=1 nohome\n', util.slurp(out))
  end)

  it('sends stdout and stderr to files, appending when asked, and reads stdin from a file', function()
    local log, input = dir .. '/log', dir .. '/in'
    util.spit(input, 'from stdin\n')
    util.spit(log, 'before\n')
    local pid = assert(process.spawn({ 'sh', '-c', 'cat; echo err >&2' },
      { stdin = input, stdout = log, stderr = log, append = true }))
    assert.same({ 'exit', 0 }, { select(2, wait(pid)) })
    assert.equal('before\nfrom stdin\nerr\n', util.slurp(log))
  end)

  it('waits for any child without blocking, then in the order they end', function()
    local slow = assert(process.spawn({ 'sleep', '0.4' }))
    local fast = assert(process.spawn({ 'sh', '-c', 'exit 7' }))
    local seen = {}
    local deadline = kb.clock_ns() + 10e9
    while #seen < 2 and kb.clock_ns() < deadline do
      local pid, how, code = process.wait(nil, false)
      if pid == fast or pid == slow then
        seen[#seen + 1] = { pid, how, code }
      elseif not pid then
        process.sleep(20)
      end -- (another spec's child: not ours)
    end
    assert.same({ { fast, 'exit', 7 }, { slow, 'exit', 0 } }, seen)
    local none, msg, code = process.wait(slow, false)
    assert.is_nil(none)
    assert.equal('ECHILD', code)
    assert.matches('waitpid', msg)
  end)

  it('sends signals by name and reports the signal that ended a child', function()
    local pid = assert(process.spawn({ 'sleep', '30' }))
    assert.is_nil(process.wait(pid, false)) -- still running
    assert.is_true(process.kill(pid, 'TERM'))
    assert.same({ pid, 'signal', 'SIGTERM' }, { wait(pid) })
    local ok, msg, code = process.kill(pid, 'SIGINT')
    assert.is_nil(ok)
    assert.equal('ESRCH', code)
    assert.matches('kill ' .. pid, msg, 1, true)
  end)

  it('puts a child in its own process group: a Ctrl-C on the terminal reaches only kluabench', function()
    local out = dir .. '/pgid'
    local pid = assert(process.spawn({ 'sh', '-c', 'cut -d" " -f5 /proc/$$/stat' }, { stdout = out }))
    wait(pid)
    assert.equal(tostring(pid), (util.slurp(out) or ''):match('%d+'))
  end)

  it('returns nil, message, code when the program or a file cannot be used', function()
    local ok, msg, code = process.spawn({ dir .. '/no-such-program' })
    assert.is_nil(ok)
    assert.equal('ENOENT', code)
    assert.equal('exec ' .. dir .. '/no-such-program: No such file or directory', msg)
    ok, msg = process.spawn({ 'true' }, { stdout = dir .. '/no/such/dir/out' })
    assert.is_nil(ok)
    assert.matches('^open stdout .*/no/such/dir/out: No such file or directory$', msg)
    ok, msg = process.spawn({ 'true' }, { cwd = dir .. '/nowhere' })
    assert.is_nil(ok)
    assert.matches('^chdir .*/nowhere: No such file or directory$', msg)
  end)

  it('rejects bad arguments by name', function()
    assert.has_error(function() process.spawn({}) end,
      "bad argument #1 to 'spawn' (non-empty list of strings expected (the program and its arguments))")
    assert.has_error(function() process.spawn({ 'true', 3 }) end,
      "bad argument #1 to 'spawn' (element 2 is number, string expected)")
    assert.has_error(function() process.spawn({ 'true' }, { stdot = 'x' }) end,
      "bad argument #2 to 'spawn' (unknown option 'stdot' (expected env, stdin, stdout, stderr, append, cwd, group))")
    assert.has_error(function() process.spawn({ 'true' }, { env = { A = 1 } }) end,
      "bad argument #2 to 'spawn' (opts.env.A must be a string or false)")
    assert.has_error(function() process.kill(-1, 'TERM') end, "bad argument #1 to 'kill' (process id > 0 expected)")
    assert.has_error(function() process.kill(0, 'TERM') end, "bad argument #1 to 'kill' (process id > 0 expected)")
    assert.has_error(function() process.kill(1, 'NOPE') end,
      "bad argument #2 to 'kill' (unknown signal 'NOPE' (expected SIGINT, SIGTERM, SIGKILL, ...))")
    assert.has_error(function() process.kill(1, 9) end,
      "bad argument #2 to 'kill' (unknown signal '9' (expected SIGINT, SIGTERM, SIGKILL, ...))")
    assert.has_error(function() process.wait(nil, 1) end, "bad argument #2 to 'wait' (boolean expected, got number)")
    assert.has_error(function() process.wait(0) end,
      "bad argument #1 to 'wait' (process id > 0 expected (nil waits for any child))")
    assert.has_error(function() process.sleep(-1) end, "bad argument #1 to 'sleep' (milliseconds between 0 and 86400000 expected)")
  end)

  it('sleeps', function()
    local t0 = kb.clock_ns()
    assert.is_true(process.sleep(50))
    assert.is_true(kb.clock_ns() - t0 >= 45e6)
    assert.equal(tonumber(util.slurp('/proc/self/stat'):match('^(%d+)')), process.getpid())
  end)
end)
