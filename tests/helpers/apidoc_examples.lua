-- Runs the examples of docs/API.md (apidoc's entries) on the cpu backend, in
-- the current directory, and prints what failed and a count:
--   kluabench --backend cpu tests/helpers/apidoc_examples.lua
-- tests/help_spec.lua runs it in an empty temporary directory with HOME
-- there too, and checks that no example wrote anything there (only under
-- the system's temporary folder).
local kb = require 'kluabench'
local apidoc = require 'kluabench.cli.apidoc'

local ROOT = package.searchpath('kluabench.cli.apidoc', package.path):match('^(.-)/?stdlib/kluabench/cli/apidoc%.lua$')

-- Examples that are not run here: the GPU's (graphs, user kernels, plugins), and fragments that
-- read files a user has (results.jsonl, Liger's CSV, a Triton build).
local SKIP = {
  ['kb.graph'] = 'gpu', ['g:replay'] = 'gpu', ['g:free'] = 'gpu',
  ['mod:kernel'] = 'gpu', ['mod:cubin'] = 'gpu', ['kern:launch'] = 'gpu', ['kern:launch_repeat'] = 'gpu', ['kern:attributes'] = 'gpu',
  ['kern:occupancy'] = 'gpu', ['kern:info'] = 'gpu', ['plugin:kernel'] = 'a built plugin',
  ['plugin:kernels'] = 'a built plugin', ['plugin:info'] = 'a built plugin', ['pk:call'] = 'a built plugin',
  ['pk:info'] = 'a built plugin', ['triton.load'] = "Triton's files", ['triton.read_metadata'] = "Triton's files",
  ['record.user_implementation'] = 'a user kernel',
  ['compare.read'] = 'a results file', ['compare.compare'] = 'results files', ['compare.session_spread'] = 'a results file',
  ['reader.read'] = 'a results file', ['plot.read'] = 'a results file', ['liger.read'] = "Liger's CSV",
}

-- A bundle of a small measurement, as its JSON text (each example gets a fresh copy), Liger's CSV
-- rows, a bundle of kluabench's earlier record format and a noise figure.
local json = require 'kluabench.io.json'
local BUNDLE_TEXT = (function()
  local x = kb.randn({ 4096 }, 'f32', 1, 'cpu')
  local r = require('kluabench.measure.do_bench').do_bench_protocol { rep_ms = 5 }:run(function() x:add_(1) end)
  return assert(json.encode_line(require('kluabench.record').from_result { kernel = 'add', mode = 'forward',
    provider = 'add_', parameters = { n = 4096 }, dtype = 'f32', result = r }))
end)()
local OLD_TEXT = assert(io.open(ROOT .. '/tests/data/records_before_kernelindex.jsonl')):read('l')

-- What the examples take as given, small and on cpu.
local sink = setmetatable({}, { __index = function(t) return function() return t end end })
local function env()
  local e0, e1 = kb.event('cpu'), kb.event('cpu')
  e0:record(); e1:record()
  local samples = { 0.11, 0.1, 0.13, 0.12, 0.1 }
  local bundles = {}
  local pts = assert(require('kluabench.report.plot').read(ROOT .. '/tests/data/plot/llama4_rope_liger.csv'))
  local t = kb.randn({ 2, 3 }, 'f32', 1, 'cpu')
  local e = {
    kb = kb, stats = require 'kluabench.stats', bench = require 'kluabench.measure.do_bench',
    output = require 'kluabench.report', names = require 'kluabench.record.names',
    progress = require 'kluabench.report.progress', plot = require 'kluabench.report.plot',
    help = function() end, print = function() end,
    io = { write = function() end, open = io.open, stderr = sink, stdout = sink },
    t = t, out = t, ref = t:clone(), gpu_out = t, cpu_out = t, samples = samples,
    result = { samples = samples }, bundles = bundles, points = pts,
    e0 = e0, e1 = e1, start = e0, stop = e1, work = function() end, fn = function() end,
    pt = { label = 'x' }, time_point = function() return 0.1 end, run = function() end,
    fused = function() end, reference = function() end,
    p = require('kluabench.report.progress').new { total = 3, quiet = true }, n = 2, sample = function() end,
    -- no shell, but for the clean-up of what an example made under /tmp
    os = setmetatable({ execute = function(cmd)
      if type(cmd) == 'string' and cmd:match('^rm %-r /tmp/[%w_.%-]+$') then return os.execute(cmd) end
      return true
    end }, { __index = os }),
  }
  e.q = kb.randn({ 1, 8, 4, 16 }, 'bf16', 1, 'cpu')
  e.k = kb.randn({ 1, 8, 2, 16 }, 'bf16', 2, 'cpu')
  e.gq, e.gk = e.q, e.k
  if kb.rope and kb.rope.freqs then e.f = kb.rope.freqs(8, 16, { device = 'cpu' }) end
  for prefix, modname in pairs(apidoc.modules) do
    if e[prefix] == nil then e[prefix] = require(modname) end
  end
  e.s = e.measure.session('hot', e.fn, { stop = e.stopping.count(1) })
  e.bundle = json.decode(BUNDLE_TEXT)
  e.bundles[1] = json.decode(BUNDLE_TEXT)
  e.decoded = json.decode(BUNDLE_TEXT)
  e.text = BUNDLE_TEXT .. '\n'
  e.old_bundle = json.decode(OLD_TEXT)
  e.rows = assert(require('kluabench.record.liger').read(ROOT .. '/tests/data/plot/llama4_rope_liger.csv'))
  e.figure = e.ceilings.noise_figure { { ms = 0.007, sd = 0.015, df = 3 }, { ms = 0.008, sd = 0.02, df = 3 } }
  return setmetatable(e, { __index = _G })
end

local ran, failed = 0, {}
for _, e in ipairs(apidoc.entries) do
  if e.kind ~= 'command' and not SKIP[e.name] and e.section ~= 'rope' then
    local f = assert(load(e.example, '=' .. e.name, 't', env()))
    -- what examples print (help text, progress lines) is not this script's output
    local out, err_stream = io.stdout, io.stderr
    io.stdout, io.stderr = sink, sink ---@diagnostic disable-line
    local ok, err = pcall(f)
    io.stdout, io.stderr = out, err_stream ---@diagnostic disable-line
    ran = ran + 1
    if not ok then failed[#failed + 1] = e.name .. ': ' .. tostring(err):gsub('\n', ' ') end
  end
end
for _, line in ipairs(failed) do print('FAILED ' .. line) end
print(string.format('%d examples ran, %d failed', ran, #failed))
