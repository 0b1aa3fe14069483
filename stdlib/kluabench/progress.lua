--- Progress of a sweep on stderr (never stdout, which stays machine-readable): on a terminal one
-- status line redrawn in place, elsewhere one line per finished point, nothing when quiet (--quiet,
-- KLUABENCH_QUIET=1). The time left is the wall time per finished point so far times the points left.
local args = require 'kluabench.util.args'

local M = {}

local Progress = {}
Progress.__index = Progress

local CLEAR_LINE = '\r\27[2K'

--- True when KLUABENCH_QUIET (the host sets it for --quiet) is set to anything but "" or "0".
-- @signature progress.quiet_from_env() -> boolean
-- @example
--   if progress.quiet_from_env() then print("quiet") end
function M.quiet_from_env()
  local q = os.getenv('KLUABENCH_QUIET')
  return q ~= nil and q ~= '' and q ~= '0'
end

--- Whether the stream (default io.stderr) is a terminal (the host's isatty, else busted's term).
-- @signature progress.is_tty([stream]) -> boolean
-- @example
--   print(progress.is_tty(io.stderr))
function M.is_tty(stream)
  args.check('progress.is_tty', 1, stream, 'userdata|table|nil', 'file or stream')
  stream = stream or io.stderr
  local fd = (stream == io.stderr and 2) or (stream == io.stdout and 1) or nil
  local host = package.loaded['kluabench.host']
  if fd and type(host) == 'table' and host.isatty then return host.isatty(fd) and true or false end
  if io.type(stream) == 'file' then
    local ok, term = pcall(require, 'term')
    if ok and type(term) == 'table' and term.isatty then
      local ok2, r = pcall(term.isatty, stream)
      if ok2 then return r and true or false end
    end
  end
  -- without the host's isatty or busted's term nothing tells: not a terminal (no shell is asked)
  return false
end

--- A function returning seconds: the engine's monotonic kb.clock_ns / 1e9, else os.time().
-- @signature progress.default_clock() -> function
-- @example
--   local now = progress.default_clock()
--   print(now())
function M.default_clock()
  local core = package.loaded['kluabench.core'] or package.loaded['kluabench']
  if type(core) == 'table' and type(core.clock_ns) == 'function' then
    local f = core.clock_ns
    return function() return f() / 1e9 end
  end
  return function() return os.time() end
end

local function term_width()
  local c = tonumber(os.getenv('COLUMNS') or '')
  return (c and c >= 20) and math.floor(c) or 80
end

--- A duration for people: "0.4s", "2m05s", "1h02m".
-- @signature progress.format_duration(seconds) -> text
-- @example
--   print(progress.format_duration(125)) --> 2m05s
function M.format_duration(s)
  args.check('progress.format_duration', 1, s, 'number|nil', 'seconds')
  if s == nil or s ~= s or s < 0 then return '?' end
  if s < 60 then return string.format('%.1fs', s) end
  local m = math.floor(s / 60 + 1e-9)
  if m < 60 then return string.format('%dm%02ds', m, math.floor(s - 60 * m)) end
  return string.format('%dh%02dm', m // 60, m % 60)
end

-- s cut to at most n UTF-8 characters, ending in "…".
local function cut(s, n)
  local len = utf8.len(s) or #s
  if len <= n then return s end
  if n <= 1 then return '' end
  local stop = utf8.offset(s, n) or (n + 1)
  return s:sub(1, stop - 1) .. '…'
end

--- A progress display for a sweep of total points; quiet, stream, tty, clock and width have defaults.
-- @signature progress.new{total [, quiet, stream, tty, clock, width, label]} -> Progress
-- @example
--   local p = progress.new{total = 3}
--   for _, n in ipairs({1024, 2048, 4096}) do
--     p:start("n=" .. n)
--     local x = kb.randn({n}, "f32", 1)
--     local r = kb.do_bench.do_bench_protocol{rep_ms = 5}:run(function() x:add_(1) end)
--     p:finish(nil, string.format("%.3f ms", r.summary.median))
--   end
--   p:close()
function M.new(opts)
  opts = opts or {}
  if type(opts) ~= 'table' then error("bad argument #1 to 'new' (table expected, got " .. type(opts) .. ')', 2) end
  local total = opts.total
  if math.type(total) ~= 'integer' and not (type(total) == 'number' and total == math.floor(total)) then
    error("bad argument #1 to 'new' (opts.total must be an integer, got " .. tostring(total) .. ')', 2)
  end
  if total < 0 then error("bad argument #1 to 'new' (opts.total must be >= 0)", 2) end
  local quiet = opts.quiet
  if quiet == nil then quiet = M.quiet_from_env() end
  local stream = opts.stream or io.stderr
  local tty = opts.tty
  if tty == nil and not quiet then tty = M.is_tty(stream) end
  local clock = opts.clock or M.default_clock()
  -- also: last_finish (clock() when the last point finished), current (its label), started
  return setmetatable({ total = math.tointeger(total), done = 0, quiet = quiet and true or false,
    tty = tty and true or false, stream = stream, clock = clock, width = opts.width or term_width(),
    prefix = opts.label, t0 = clock(), closed = false }, Progress)
end

--- Seconds since the display was made.
-- @signature p:elapsed() -> seconds
-- @section progress
-- @example
--   local p = progress.new{total = 16}
--   p:start("hidden=512 fused")
--   print(p:elapsed())
function Progress:elapsed() return self.clock() - self.t0 end

--- Estimated seconds left: the wall time per finished point so far times the points left.
-- @signature p:remaining() -> seconds | nil
-- @section progress
-- @example
--   local p = progress.new{total = 16}
--   p:start("hidden=512 fused")
--   p:finish(nil, "0.137 ms")
--   print(p:remaining())
function Progress:remaining()
  if self.done == 0 then return nil end
  local left = self.total - self.done
  if left <= 0 then return 0 end
  local per_point = (self.last_finish - self.t0) / self.done
  local est = per_point * left - math.min(per_point, self.clock() - self.last_finish)
  return math.max(0, est)
end

-- "[ 3/16]"
local function counter(p, n) return string.format('[%' .. #tostring(p.total) .. 'd/%d]', n, p.total) end

local function times(p)
  local left = p:remaining()
  return 'elapsed ' .. M.format_duration(p:elapsed()) .. (left and (', left ~' .. M.format_duration(left)) or '')
end

local function write(p, s)
  p.stream:write(s)
  if p.stream.flush then p.stream:flush() end
end

-- The status line on a terminal, cut to the width so that "\r" redraws it.
local function draw(p, text)
  if p.prefix then text = p.prefix .. ': ' .. text end
  write(p, CLEAR_LINE .. cut(text, p.width - 1))
end

local function status(p) return string.format('%s %s  (%s)', counter(p, p.done + 1), p.current, times(p)) end

--- A point starts (on a terminal the status line shows it).
-- @signature p:start(label)
-- @section progress
-- @example
--   local p = progress.new{total = 16}
--   p:start("hidden=512 fused")
function Progress:start(label)
  if self.closed then error('progress: start after close', 2) end
  self.current = label and tostring(label) or ''
  self.started = self.clock()
  if self.quiet or not self.tty then return end
  draw(self, status(self))
end

--- Redraws the status line (at most every 0.25 s) so elapsed time moves during a long point.
-- @signature p:tick()
-- @section progress
-- @example
--   local p = progress.new{total = 1}
--   p:start("n=4096")
--   for i = 1, 100 do kb.randn({4096}, "f32", i); p:tick() end
--   p:finish(nil, "100 samples")
function Progress:tick()
  if self.quiet or not self.tty or self.closed or not self.current then return end
  local now = self.clock()
  if self.last_tick and now - self.last_tick < 0.25 then return end
  self.last_tick = now
  draw(self, status(self))
end

--- A point finished; off a terminal one line: "[ 3/16] label: summary (0.8s; elapsed 2.4s, left ~10.4s)".
-- @signature p:finish([label [, summary]])
-- @section progress
-- @example
--   local p = progress.new{total = 16}
--   p:start("hidden=512 fused")
--   p:finish(nil, "0.137 ms")
function Progress:finish(label, summary)
  if self.closed then error('progress: finish after close', 2) end
  local now = self.clock()
  local took = self.started and (now - self.started) or 0
  label = label and tostring(label) or self.current or ''
  self.last_finish = now
  self.done = self.done + 1
  self.current, self.started = nil, nil
  if self.quiet then return end
  local text = string.format('%s %s%s (%s; %s)', counter(self, self.done), label,
    summary and (': ' .. tostring(summary)) or '', M.format_duration(took), times(self))
  if self.tty then
    draw(self, text)
  else
    if self.prefix then text = self.prefix .. ': ' .. text end
    write(self, text .. '\n')
  end
end

--- Writes a message on a line of its own (none when quiet); a terminal's status line is redrawn after it.
-- @signature p:log(text)
-- @section progress
-- @example
--   local p = progress.new{total = 16}
--   p:log("warning: clocks were not locked")
function Progress:log(text)
  if self.quiet then return end
  text = tostring(text):gsub('\n+$', '')
  if self.tty then
    write(self, CLEAR_LINE .. text .. '\n')
    if self.current and not self.closed then draw(self, status(self)) end
  else
    write(self, text .. '\n')
  end
end

--- Ends the display with "done: N/TOTAL points in T"; safe twice, also `<close>`.
-- @signature p:close()
-- @section progress
-- @example
--   local p <close> = progress.new{total = 3}
function Progress:close()
  if self.closed then return end
  self.closed = true
  if self.quiet then return end
  local text = string.format('done: %d/%d points in %s', self.done, self.total, M.format_duration(self:elapsed()))
  if self.prefix then text = self.prefix .. ': ' .. text end
  if self.tty then
    write(self, CLEAR_LINE .. text .. '\n')
  elseif self.done > 0 then
    write(self, text .. '\n')
  end
end

Progress.__close = Progress.close

M.Progress = Progress

return M
