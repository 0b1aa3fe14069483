--- kluabench.trust.census: what ran besides the timed call. Threads of the
-- process still busy after it returned (work handed to a plugin's thread),
-- kernels on streams other than the engine's while it ran (work queued on a
-- stream of the plugin's own), and the persisting-L2 state (an access-policy
-- window that keeps a kernel's data in L2 through the harness's flush).
local args = require 'kluabench.util.args'
local M = {}

local core = require 'kluabench.core'
-- bound before the user's script (trust.integrity)
local threads, sleep, clock_ns = core.trust.threads, core.process.sleep, core.clock_ns
local l2_state = core.trust.l2_state

--- How long a census watches at least (ms), and the share of it a thread must run to count as busy.
M.WINDOW_MS = 3
M.BUSY_SHARE = 0.25

local function by_tid(list)
  local t = {}
  for _, x in ipairs(list or {}) do t[x.tid] = x end
  return t
end

--- Starts a thread census: the threads now (call it right after the timed call returns). A token
-- for census.busy, or nil and a message when the census cannot be taken (no /proc).
--
-- @signature census.start() -> token | nil, message
-- @example
--   local token = require("kluabench.trust.census").start()
function M.start()
  local a, me = threads()
  if not a then return nil, me end
  return { before = a, me = me, t0 = clock_ns() }
end

--- The threads of the process, other than the caller's, that ran for at least BUSY_SHARE x
-- WINDOW_MS ms between census.start() and now (at least WINDOW_MS ms after it: the rest is waited
-- out): {{tid, name, ran_ns, new}} (empty when none), or nil and a message.
--
-- Where the kernel has no schedstat a thread counts as busy when it is running (state R) at the
-- start and at the end of the window.
--
-- @signature census.busy(token [, window_ms]) -> list | nil, message
-- @example
--   local census = require("kluabench.trust.census")
--   print(#census.busy(census.start()))
function M.busy(token, window_ms)
  args.check('census.busy', 1, token, 'table', 'token of census.start')
  args.check('census.busy', 2, window_ms, 'number|nil', 'window in ms')
  window_ms = window_ms or M.WINDOW_MS
  local left = window_ms - (clock_ns() - token.t0) / 1e6
  if left > 0 then sleep(left) end
  local elapsed_ns = clock_ns() - token.t0
  local b = threads()
  if not b then return nil, 'the thread census failed at the end of its window' end
  local before, busy = by_tid(token.before), {}
  for _, t in ipairs(b) do
    if t.tid ~= token.me then
      local was = before[t.tid]
      local ran
      if t.run_ns then
        ran = t.run_ns - (was and was.run_ns or 0)
      elseif was and was.state == 'R' and t.state == 'R' then
        ran = elapsed_ns
      end
      if ran and ran >= M.BUSY_SHARE * window_ms * 1e6 then
        busy[#busy + 1] = { tid = t.tid, name = t.name, ran_ns = ran, new = was == nil }
      end
    end
  end
  return busy, nil, elapsed_ns
end

--- The stream the engine's own marker kernel ran on (the first record flagged internal), or nil.
--
-- @signature census.engine_stream(records) -> id | nil
-- @example
--   local id = require("kluabench.trust.census").engine_stream(kb.trace.stop())
function M.engine_stream(records)
  args.check('census.engine_stream', 1, records, 'table', 'list of kb.trace records')
  for _, r in ipairs(records) do
    if r.internal and r.kind == 'kernel' then return r.stream end
  end
  return nil
end

--- The kernels and copies of a trace that ran on another stream than `stream`: {{name, stream,
-- count, ns}} by name and stream.
--
-- @signature census.foreign(records, stream) -> list
-- @example
--   local others = require("kluabench.trust.census").foreign({}, 13)
function M.foreign(records, stream)
  args.check('census.foreign', 1, records, 'table', 'list of kb.trace records')
  local groups, out = {}, {}
  for _, r in ipairs(records) do
    if r.stream ~= stream then
      local key = tostring(r.name) .. '\0' .. tostring(r.stream)
      local g = groups[key]
      if not g then
        g = { name = r.name, stream = r.stream, count = 0, ns = 0 }
        groups[key] = g
        out[#out + 1] = g
      end
      g.count, g.ns = g.count + 1, g.ns + (r.ns or 0)
    end
  end
  return out
end

--- The device time of a trace's work (kernels and copies, not kluabench's own spin), in ns.
--
-- @signature census.work_ns(records) -> ns
-- @example
--   print(require("kluabench.trust.census").work_ns(kb.trace.stop()))
function M.work_ns(records)
  args.check('census.work_ns', 1, records, 'table', 'list of kb.trace records')
  local ns = 0
  for _, r in ipairs(records) do
    if not r.internal then ns = ns + (r.ns or 0) end
  end
  return ns
end

--- What is wrong with the persisting-L2 state after a timed call, or nil: a set-aside or an
-- access-policy window on the engine's stream means a kernel asked for its data to stay in L2.
--
-- @signature census.l2_finding([device]) -> message | nil
-- @example
--   print(require("kluabench.trust.census").l2_finding())
function M.l2_finding(device)
  args.check('census.l2_finding', 1, device, 'string|nil', 'device')
  local s = l2_state(device)
  if not s.supported then return nil end
  local parts = {}
  if s.persisting_limit > 0 then
    parts[#parts + 1] = string.format('the persisting-L2 set-aside is %d bytes (cudaLimitPersistingL2CacheSize)',
      s.persisting_limit)
  end
  if s.window_bytes > 0 then
    parts[#parts + 1] = string.format("the engine's stream has an access-policy window of %d bytes (hit ratio %.2f)",
      s.window_bytes, s.hit_ratio)
  end
  if #parts == 0 then return nil end
  return table.concat(parts, ' and ') .. ': the kernel keeps its data in L2 through the flush between samples'
end

return M
