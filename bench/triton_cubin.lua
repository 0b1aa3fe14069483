-- A Triton RoPE kernel's cubin (dumped by bench/triton_rope.py) loaded with kb.triton and timed in kluabench beside Python's do_bench.
--
--   bench/triton_cubin.sh [SEQ]        (runs triton_rope.py, then this)
--   build/kluabench bench/triton_cubin.lua DIR [--once]
--
-- The kernel is checked against kb.rope.llama4_fwd on fresh seeds (kb.check)
-- and timed by kb.do_bench.do_bench (mean and median, as triton's do_bench
-- reports them); Python's numbers come from DIR/python.json. With --once (one
-- round of bench/triton_alternate.py, which checked the kernel in its first
-- round) only the median of one kb.do_bench.do_bench is printed, as a JSON line
-- {"median_ms": ..., "mean_ms": ...}.
local kb = require 'kluabench'
local check = require 'kluabench.kernels.check'
local record = require 'kluabench.record'

local dir = arg[1] or 'build/triton_rope'
local once = arg[2] == '--once'
if arg[2] and not once then
  io.stderr:write("triton_cubin.lua: unknown option '", arg[2], "' (usage: triton_cubin.lua DIR [--once])\n")
  os.exit(2)
end
local f = assert(io.open(dir .. '/python.json'), 'no ' .. dir .. '/python.json: run bench/triton_rope.py first')
local py = kb.jcs.decode(f:read('a'))
f:close()

-- The kernel's six runtime parameters (HALF and BLOCK_ROWS are constexpr,
-- compiled away); if this Triton version compiled them differently, the
-- signature is read from the PTX instead.
local json = dir .. '/' .. py.kernel .. '.json'
local loaded, tk = pcall(kb.triton.load, json, 'ptr, ptr, ptr, i32, i32, i32')
if not loaded then
  io.stderr:write('triton_cubin.lua: ', tostring(tk), '; reading the signature from the PTX\n')
  tk = kb.triton.load(json)
end
if not once then print('signature: ' .. tk.kernel:info().signature .. ' (hidden: ' .. table.concat(tk.hidden, ', ') .. ')') end
local seq, dim, block_rows = py.seq, py.head_dim, py.block_rows
local freqs = kb.rope.freqs(seq, dim, { theta = 500000 })

local function launch(x, out, heads)
  local rows = x:numel() // dim
  tk:launch((rows + block_rows - 1) // block_rows, { x, out, freqs, rows, seq, heads })
end

if once then
  local q = kb.randn({ 1, seq, py.q_heads, dim }, 'bf16', 1)
  local k = kb.randn({ 1, seq, py.kv_heads, dim }, 'bf16', 2)
  local qo, ko = kb.empty(q.shape, 'bf16'), kb.empty(k.shape, 'bf16')
  local fn = function() launch(q, qo, py.q_heads); launch(k, ko, py.kv_heads) end
  local median = kb.do_bench.do_bench(fn, { return_mode = 'median' })
  local mean = kb.do_bench.do_bench(fn)
  print(string.format('{"median_ms": %.9g, "mean_ms": %.9g}', median, mean))
  os.exit(0)
end

local c = check.new {
  inputs = function(seed)
    local q = kb.randn({ 1, seq, py.q_heads, dim }, 'bf16', seed)
    local k = kb.randn({ 1, seq, py.kv_heads, dim }, 'bf16', seed + 1000)
    return { q = q, k = k, qo = kb.empty(q.shape, 'bf16'), ko = kb.empty(k.shape, 'bf16') }
  end,
  run = function(s) launch(s.q, s.qo, py.q_heads); launch(s.k, s.ko, py.kv_heads) end,
  outputs = function(s) return { s.qo, s.ko } end,
  reference = function(s) return { kb.rope.llama4_fwd(s.q, s.k, freqs) } end,
}
local ok, report = c:verify()
print('check against kb.rope.llama4_fwd: ' .. report.message)

local s = c.state
local fn = function() c.run(s) end
local mean = kb.do_bench.do_bench(fn)
local median = kb.do_bench.do_bench(fn, { return_mode = 'median' })
local builtin = kb.do_bench.do_bench(function() kb.rope.llama4_fwd(s.q, s.k, freqs) end, { return_mode = 'median' })
local after_ok, after = c:recheck()
print('recheck: ' .. after.message)
local a = tk.kernel:attributes()
print(string.format('%s: Triton %s, num_warps %d, shared %d B, %d registers', py.kernel, py.triton_version,
  tk.metadata.num_warps, tk.shared, a.registers))
print(string.format('\n| seq %d, %s | mean ms | median ms |', seq, py.device))
print('|---|---:|---:|')
print(string.format('| triton.testing.do_bench (Python) | %.4f | %.4f |', py.do_bench_mean_ms, py.do_bench_median_ms))
print(string.format('| kb.do_bench.do_bench, cubin via kb.triton | %.4f | %.4f |', mean, median))
print(string.format('| kb.rope.llama4_fwd (built-in, fused) | | %.4f |', builtin))
print('\nimplementation digest: ' .. record.digest(record.user_implementation {
  provider = 'triton', kernel = 'llama4_rope', info = tk:info() }))
if not (ok and after_ok) then os.exit(1) end
