-- An A/B experiment for `kluabench compare`: the fused llama4_rope forward, and with --slow PCT the same kernel followed by a spin of PCT % of its time.
--
--   kluabench scripts/ab_spin.lua [--slow PCT] [--sessions N] [--protocol cold|hot|do_bench]
--       [--hidden LIST] [--seq LIST] [--out PATH]
--
-- The points are Llama 4 RoPE's hidden sweep (512, 2048, 8192 at seq 2048)
-- and two of its seq points (4096, 16384 at hidden 8192), bf16, forward,
-- provider "fused" in both arms, so that compare matches the arms point by
-- point (same workload digest and provider). With --slow PCT the timed
-- function is the kernel then kb.spin(PCT % of the kernel's median, as
-- measured at the start of the run with a short hot-mode pass): a real,
-- known slow-down (the spin is one extra kernel launch, so on small points
-- it adds its launch time too; the report's change column says how much it
-- was). On the cpu backend kb.spin does nothing: both arms are the same.
-- Each point is measured in N sessions (default 1), interleaved (session
-- loop outside the point loop), with fresh inputs every session; one
-- bundle per session, appended to --out (JSON Lines; the raw samples in the
-- samples file beside it), as the harness's --runs N does; without --out the
-- bundles go to stdout and their samples to a samples file in a temporary
-- folder, named on stderr. This is a plain kb.measure script, not the harness, so
-- that the experiment does not wait for it.
local kb = require 'kluabench'
local record = require 'kluabench.record'
local json = require 'kluabench.util.json'
local cli = require 'kluabench.util.args'

local USAGE = 'usage: kluabench scripts/ab_spin.lua [--slow PCT] [--sessions N] '
  .. '[--protocol cold|hot|do_bench] [--hidden LIST] [--seq LIST] [--out PATH]\n'

local opts, fail = cli.script_options('ab_spin.lua', USAGE, arg, { slow = 'value', sessions = 'value', protocol = 'value',
  hidden = 'value', seq = 'value', out = 'value' })
local slow = tonumber(opts.slow or '0')
if not slow or slow < 0 or slow > 1000 then fail("--slow must be a percentage in [0, 1000], got '%s'", opts.slow) end
local sessions = math.tointeger(tonumber(opts.sessions or '1'))
if not sessions or sessions < 1 then fail("--sessions must be a positive integer, got '%s'", opts.sessions) end
local protocol_name = opts.protocol or 'cold'
if kb.backend() ~= 'cuda' then -- meaningless on the cpu backend: refuse, as a usage error
  io.stderr:write('ab_spin.lua: needs a GPU (the cuda backend; this is ', kb.backend(), '): it plants a GPU spin for the A/B test of compare; '
    .. 'run it on a GPU machine\n')
  os.exit(2)
end
local samples_file
if not opts.out then
  -- in a directory of its own, made exclusively (kb.mkdir fails on a name that exists): never a
  -- predictable name beside a random one in /tmp
  local dir = os.tmpname()
  os.remove(dir)
  assert(kb.mkdir(dir))
  samples_file = dir .. '/run.samples.jsonl'
  io.stderr:write('ab_spin.lua: the raw samples of the bundles on stdout go to ', samples_file, '\n')
end
if protocol_name ~= 'cold' and protocol_name ~= 'hot' and protocol_name ~= 'do_bench' then
  fail("--protocol must be cold, hot or do_bench, got '%s'", protocol_name)
end

local function ints(s, name)
  local out = {}
  for v in s:gmatch('[^,]+') do
    local n = math.tointeger(tonumber(v))
    if not n or n <= 0 or n % 64 ~= 0 then fail("--%s must list positive multiples of 64, got '%s'", name, v) end
    out[#out + 1] = n
  end
  return out
end

local Q_HEADS, KV_HEADS, THETA, DTYPE = 32, 8, 10000, 'bf16'
local points = {}
if opts.hidden or opts.seq then
  for _, h in ipairs(ints(opts.hidden or '512', 'hidden')) do
    for _, s in ipairs(ints(opts.seq or '2048', 'seq')) do points[#points + 1] = { hidden = h, seq = s } end
  end
else
  for _, h in ipairs { 512, 2048, 8192 } do points[#points + 1] = { hidden = h, seq = 2048 } end
  for _, s in ipairs { 4096, 16384 } do points[#points + 1] = { hidden = 8192, seq = s } end
end

local protocol
if protocol_name == 'do_bench' then
  protocol = kb.do_bench.do_bench_protocol { rep_ms = 400, quantiles = { 0.5, 0.2, 0.8 } }
else
  protocol = kb.measure.protocol(protocol_name, { quantiles = { 0.5, 0.2, 0.8 } })
end
local environment = require('kluabench.record.env').capture()

local function inputs(p)
  local d = p.hidden // Q_HEADS
  return kb.randn({ 1, p.seq, Q_HEADS, d }, DTYPE, 1), kb.randn({ 1, p.seq, KV_HEADS, d }, DTYPE, 2),
    kb.rope.freqs(p.seq, d, { theta = THETA })
end

-- The spin of each point: slow % of the kernel's hot median, measured once.
local spin_ns = {}
if slow > 0 then
  for i, p in ipairs(points) do
    local q, k, f = inputs(p)
    local o = { impl = 'fused', inplace = true }
    local r = kb.measure.run('hot', function() kb.rope.llama4_fwd(q, k, f, o) end,
      { stop = kb.stopping.count(200) })
    spin_ns[i] = math.floor(r.summary.median * 1e6 * slow / 100 + 0.5)
    q:free() k:free() f:free()
    io.stderr:write(string.format('hidden %d seq %d: kernel %.2f us, spin %d ns (%g %%)\n', p.hidden, p.seq,
      r.summary.median * 1000, spin_ns[i], slow))
  end
end

for s = 1, sessions do
  for i, p in ipairs(points) do
    local q, k, f = inputs(p)
    local o = { impl = 'fused', inplace = true }
    local ns = spin_ns[i]
    local fn = ns and function() kb.rope.llama4_fwd(q, k, f, o); kb.spin(ns) end
      or function() kb.rope.llama4_fwd(q, k, f, o) end
    local result = protocol:run(fn)
    q:free() k:free() f:free()
    local bundle = record.from_result {
      kernel = 'llama4_rope', mode = 'forward', provider = 'fused',
      parameters = { hidden = p.hidden, seq = p.seq, q_heads = Q_HEADS, kv_heads = KV_HEADS },
      dtype = DTYPE, result = result, protocol = protocol, environment = environment,
      timed = 'the forward pass (kb.rope.llama4_fwd of q and k, in place)'
        .. (ns and string.format(', then kb.spin(%d ns): an A/B slow-down of %g %%', ns, slow) or ''),
      session = { index = s, count = sessions }, execution = { abSlowPercent = slow },
    }
    -- the bundle, its raw samples first into the samples file beside --out (or
    -- the samples file of bundles on stdout: OUT.samples.jsonl in the results folder)
    local ok, err = require('kluabench.record.writer').append(opts.out or '-', bundle,
      not opts.out and samples_file or nil)
    if not ok then io.stderr:write('ab_spin.lua: cannot write ', tostring(err), '\n') os.exit(1) end
    io.stderr:write(string.format('session %d/%d hidden %d seq %d: median %.2f us (%d samples)\n', s, sessions,
      p.hidden, p.seq, result.summary.median * 1000, #result.samples))
  end
end
