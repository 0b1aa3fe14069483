-- Reading results back: load record bundles, check their digests, tabulate them, compute speedups and draw a chart.
--
--   kluabench examples/read_results.lua [RESULTS.jsonl|- [chart.svg]]
--
-- With no file (or "-") it first measures a tiny fused/reference pair into
-- a temporary file, so that it runs anywhere. Results files are what
-- scripts/llama4_rope.lua writes (results/*.jsonl) or `kluabench
-- import-liger` makes: one bundle per line.
local kb = require 'kluabench'
local output = require 'kluabench.report'
local record = require 'kluabench.record'
local plot = require 'kluabench.report.plot'

local path, chart = arg[1], arg[2]

-- A tiny results file, so the example runs without one.
local function make_results(file)
  local bench = require 'kluabench.measure.do_bench'
  local q = kb.randn({ 1, 256, 32, 16 }, 'bf16', 1)
  local k = kb.randn({ 1, 256, 8, 16 }, 'bf16', 2)
  local freqs = kb.rope.freqs(256, 16)
  local protocol = bench.do_bench_protocol { warmup_ms = 1, rep_ms = 5 }
  for _, impl in ipairs { 'fused', 'reference' } do
    local r = protocol:run(function() kb.rope.llama4_fwd(q, k, freqs, { impl = impl, inplace = true }) end)
    assert(output.append_jsonl(file, record.from_result {
      kernel = 'llama4_rope', mode = 'forward', provider = impl, dtype = 'bf16',
      parameters = { hidden = 512, seq = 256, q_heads = 32, kv_heads = 8 }, result = r }))
  end
end

local made = not path or path == '-'
if made then
  path = os.tmpname()
  make_results(path)
end

-- 1. Read: one JSON value per line.
local bundles = {}
local n = 0
for line in io.lines(path) do
  n = n + 1
  if line:match('%S') then
    local b, err = output.decode(line)
    if not b then error(string.format('%s:%d: %s', path, n, err)) end
    bundles[#bundles + 1] = b
  end
end
print(string.format('%d bundles in %s', #bundles, path))

-- 2. Check: recompute the four digests of each bundle (what `kluabench verify` does).
for i, b in ipairs(bundles) do
  local problems = record.check(b)
  if #problems > 0 then print(string.format('bundle %d: %d digest problem(s)', i, #problems)) end
end

-- 3. Tabulate.
io.write(output.results_table(bundles))

-- 4. Speedup of each provider over the baseline (our reference path, or
-- Liger's huggingface), per workload and mode.
local BASELINES = { 'reference', 'huggingface' }
local by_point = {}
for _, b in ipairs(bundles) do
  local ws, timing = b.workload.spec, b.run.spec.timing
  if timing then -- latency records (a memory record has measurements only)
    local key = ws.operation .. ' ' .. kb.names.workload_slug(ws.parameters, ws.dtype)
    by_point[key] = by_point[key] or {}
    by_point[key][b.implementation.spec.provider] = timing.latencyNs.median
  end
end
local keys = {}
for key in pairs(by_point) do keys[#keys + 1] = key end
table.sort(keys)
for _, key in ipairs(keys) do
  local providers = by_point[key]
  local base
  for _, b in ipairs(BASELINES) do base = base or (providers[b] and b) end
  for provider, ns in pairs(providers) do
    if base and provider ~= base then
      print(string.format('%s: %s is %.2fx the speed of %s', key, provider, providers[base] / ns, base))
    end
  end
end

-- 5. Chart: one line per provider over the parameter that varies (bars
-- when there is a single point), as `kluabench plot` draws it.
if chart then
  local svg, why = plot.chart(assert(plot.read(path)), { by = 'provider' })
  if svg then
    local f = assert(io.open(chart, 'w'))
    f:write(svg)
    f:close()
    print('wrote ' .. chart)
  else
    print('no chart: ' .. why)
  end
end
if made then os.remove(path) end
