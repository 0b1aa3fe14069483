-- A sweep over axes of your own (head_dim x kv_heads, GQA ratios), with a progress display and a markdown table.
--
--   kluabench examples/sweep_axes.lua [SEQ [SAMPLES]] > table.md
--
-- The table goes to stdout, progress to stderr (silent with --quiet or
-- KLUABENCH_QUIET=1), so the output can be redirected as is.
local kb = require 'kluabench'
local measure = require 'kluabench.measure'
local stopping = require 'kluabench.measure.stopping'
local progress = require 'kluabench.progress'
local results = require 'kluabench.table'

local seq = tonumber(arg[1]) or 2048
local samples = tonumber(arg[2]) or 20
local axes = { head_dim = { 64, 128 }, kv_heads = { 1, 8, 32 } }
local q_heads = 32

local points = {}
for _, d in ipairs(axes.head_dim) do
  for _, kv in ipairs(axes.kv_heads) do points[#points + 1] = { head_dim = d, kv_heads = kv } end
end

local rows = {}
local p = progress.new { total = #points }
for _, pt in ipairs(points) do
  local label = string.format('head_dim=%d kv_heads=%d', pt.head_dim, pt.kv_heads)
  p:start(label)
  local q = kb.randn({ 1, seq, q_heads, pt.head_dim }, 'bf16', 1)
  local k = kb.randn({ 1, seq, pt.kv_heads, pt.head_dim }, 'bf16', 2)
  local freqs = kb.rope.freqs(seq, pt.head_dim)
  local r = measure.run('cold', function() kb.rope.llama4_fwd(q, k, freqs, { inplace = true }) end,
    { stop = stopping.count(samples) })
  local bytes = 2 * (q:nbytes() + k:nbytes()) + freqs:nbytes() -- read and write q, k; read freqs
  rows[#rows + 1] = { head_dim = pt.head_dim, kv_heads = pt.kv_heads, gqa = q_heads // pt.kv_heads,
    median_us = r.summary.median * 1e3, gbps = bytes / (r.summary.median * 1e6) }
  p:finish(label, string.format('%.2f us', r.summary.median * 1e3))
  q:free(); k:free(); freqs:free()
end
p:close()

io.write(results.format_markdown({
  { key = 'head_dim', align = 'right' }, { key = 'kv_heads', align = 'right' },
  { key = 'gqa', title = 'q/kv heads', align = 'right' },
  { key = 'median_us', title = 'median us', align = 'right', format = '%.2f' },
  { key = 'gbps', title = 'GB/s', align = 'right', format = '%.1f' },
}, rows))
