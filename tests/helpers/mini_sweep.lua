-- A stand-in for a harness script (kluabench.suite's contract) in the specs of
-- run-all, slurm and merge: it honours --list-points, --shard I/N, --runs N
-- and --format jsonl --out PATH, and writes real sealed bundles without
-- timing anything (the samples are made up; nothing here is a measurement).
--   --seq LIST         the points (default 128,256,384,512,640)
--   --provider LIST    default a,b        --mode LIST   default forward,backward
--   --fail-at ID       exit 1 with a message when point ID comes up
--   --sleep-ms MS      pause after every bundle (to interrupt a run)
--   --label TEXT       put TEXT into environment.spec.hardware.product
--                      (makes environments differ, for merge's mixed check)
--   --plain-list       --list-points without providers=, modes=, sessions=
--   --status P:M:S     bundles of provider P, mode M get status S (a failed
--                      run as the harness writes it: its reason in the evidence)
local kb = require 'kluabench'
local names = require 'kluabench.record.names'
local record = require 'kluabench.record'
local shard = require 'kluabench.dist.split'

local NAME = 'mini_sweep'

local function fail(code, fmt, ...)
  io.stderr:write(NAME, ': ', string.format(fmt, ...), '\n')
  os.exit(code)
end

local function list(s)
  local out = {}
  for w in s:gmatch('[^,]+') do out[#out + 1] = w end
  return out
end

local spec = { seq = 'value', provider = 'value', mode = 'value', shard = 'value', ['list-points'] = 'flag',
  format = 'value', out = 'value', runs = 'value', ['fail-at'] = 'value', ['sleep-ms'] = 'value', label = 'value',
  ['rep-ms'] = 'value', ['plain-list'] = 'flag', status = 'value' }
local o, rest = require('kluabench.commands').parse_args({ ... }, spec)
if not o then fail(2, '%s', rest) end
if #rest > 0 then fail(2, "unexpected argument '%s'", rest[1]) end
if o.format and o.format ~= 'jsonl' then fail(2, "--format %s: only jsonl here", o.format) end

local providers = list(o.provider or 'a,b')
local modes = list(o.mode or 'forward,backward')
local runs = math.tointeger(tonumber(o.runs or '1')) or fail(2, 'bad --runs %s', o.runs)

local points = {}
for _, s in ipairs(list(o.seq or '128,256,384,512,640')) do
  local seq = math.tointeger(tonumber(s)) or fail(2, "bad --seq value '%s'", s)
  local p = { params = { seq = seq }, dtype = 'f32' }
  p.id = names.workload_slug(p.params, p.dtype)
  p.cost = seq * 1000 * #providers * #modes
  points[#points + 1] = p
end
if o.shard then
  local i, n = shard.parse(o.shard)
  if not i then fail(2, "option '--shard': %s", n) end
  points = shard.select(points, i, n)
end
if o['list-points'] then
  -- as the harness lists them, with the bundles each point will have; --plain-list leaves those out (a
  -- script of an earlier kluabench, whose manifest merge must infer from)
  for _, p in ipairs(points) do
    local expect = o['plain-list'] and '' or string.format('\tproviders=%s\tmodes=%s\tsessions=%d',
      table.concat(providers, ','), table.concat(modes, ','), runs)
    io.stdout:write(string.format('%s\t%.0f\t%s x {%s} x {%s}%s\n', p.id, p.cost, NAME,
      table.concat(providers, ','), table.concat(modes, ','), expect))
  end
  os.exit(0)
end

-- what run-all's specs check about the pinning of a child
local host = package.loaded['kluabench.host'] or {}
io.stderr:write(string.format('%s: CUDA_VISIBLE_DEVICES=%s --device=%s\n', NAME,
  os.getenv('CUDA_VISIBLE_DEVICES') or '(unset)', host.device_option or '(none)'))

local environment = kb.env.capture()
if o.label then
  environment.spec.hardware.product = o.label
end
local protocol = kb.do_bench.do_bench_protocol { warmup_ms = 1, rep_ms = 1 }
local failing = {} -- "provider:mode" -> status (--status)
for w in (o.status or ''):gmatch('[^,]+') do
  local pm, st = w:match('^([^:]+:[^:]+):(.+)$')
  if not pm then fail(2, "bad --status '%s': expected PROVIDER:MODE:STATUS", w) end
  failing[pm] = st
end
local sleep_ms = tonumber(o['sleep-ms'] or '0')
local total = #points * #providers * #modes * runs
local done = 0
kb.defer_interrupts(true)
for run = 1, runs do
  for _, p in ipairs(points) do
    if p.id == o['fail-at'] then fail(1, 'failing at point %s as asked (--fail-at)', p.id) end
    for _, provider in ipairs(providers) do
      for _, mode in ipairs(modes) do
        local base = p.params.seq / 1e5
        local status = failing[provider .. ':' .. mode]
        local b = record.from_result {
          status = status, reasons = status and { 'made to fail as asked (--status)' } or nil,
          kernel = NAME, mode = mode, provider = provider, parameters = p.params, dtype = p.dtype,
          result = { samples = { base, base * 1.1, base * 0.9 }, protocol = protocol },
          environment = environment, session = { index = run, count = runs },
        }
        if o.out then
          local ok, err = require('kluabench.record.writer').append(o.out, b)
          if not ok then fail(1, 'cannot write --out %s', tostring(err)) end
        end
        done = done + 1
        io.stderr:write(string.format('[%d/%d] %s %s %s\n', done, total, p.id, provider, mode))
        if sleep_ms > 0 then kb.process.sleep(sleep_ms) end
        local stopped, sig = kb.interrupted()
        if stopped then
          io.stderr:write(string.format('%s: interrupted by %s after %d of %d\n', NAME, sig, done, total))
          os.exit(sig == 'SIGTERM' and 143 or 130)
        end
      end
    end
  end
end
