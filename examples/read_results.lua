-- Reading results back: load record bundles, check their digests, tabulate them, compute speedups and draw a chart.
--
--   kluabench examples/read_results.lua [RESULTS.jsonl|- [chart.svg]]
--
-- With no file (or "-") it first measures a tiny fused/reference pair into
-- a temporary file, so that it runs anywhere. Results files are what
-- scripts/llama4_rope.lua writes (results/*.jsonl, their raw samples beside
-- them in results/*.samples.jsonl) or `kluabench import-liger` makes: one
-- bundle per line.
local kb = require 'kluabench'
local results = require 'kluabench.table'
local record = require 'kluabench.record'
local plot = require 'kluabench.charts.plot'
local verify = require 'kluabench.record.verify'

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
    assert(kb.writer.append(file, record.from_result {
      kernel = 'llama4_rope', mode = 'forward', provider = impl, dtype = 'bf16',
      parameters = { hidden = 512, seq = 256, q_heads = 32, kv_heads = 8 }, result = r }))
  end
end

local made = not path or path == '-'
if made then
  -- a directory of our own (made exclusively: kb.mkdir fails on a name that exists), the files in it
  made = os.tmpname()
  os.remove(made)
  assert(kb.mkdir(made))
  path = made .. '/results.jsonl'
  make_results(path)
end

-- 1. Read: the bundles and, from the samples file beside them, each run's raw samples.
local bundles = assert(kb.reader.read(path))
print(string.format('%d bundles in %s', #bundles, path))

-- 2. Check: recompute every digest and check every document against its schema (what
-- `kluabench verify` does).
for i, b in ipairs(bundles) do
  local problems = verify.check(b)
  if #problems > 0 then print(string.format('bundle %d: %d problem(s), the first: %s', i, #problems,
    problems[1].error or problems[1].field)) end
end

-- 3. Tabulate.
io.write(results.results_table(bundles))

-- 4. Speedup of each provider over the baseline (our reference path, or
-- Liger's huggingface), per workload and mode.
local BASELINES = { 'reference', 'huggingface' }
local by_point = {}
for _, b in ipairs(bundles) do
  local p = kb.result.session(b) -- what the bundle says about its point, wherever the schema keeps it
  if p.median_ns then -- latency records (a memory record has measurements only)
    local key = p.mode .. ' ' .. p.id
    by_point[key] = by_point[key] or {}
    by_point[key][p.provider] = p.median_ns
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
if made then
  kb.remove_tree(made)
end
