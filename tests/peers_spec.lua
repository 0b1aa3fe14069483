-- The GPU comparison's plumbing, on the CPU: scripts/peers/merge.py's tables
-- for both RoPE kernels (our bundles from the cpu backend, the peers' CSV and
-- the ceiling from tests/fixtures/peers), rope_peers.py's plan and option errors
-- (they need no torch), and scripts/gpu_compare.sh's steps, budget, files and
-- signals with a stub kluabench, a stub peers script and a stub nvidia-smi.
-- Needs python3 and bash; the timing itself needs the GPU machine
-- (scripts/gpu_compare.sh runs it there).
local sub = require 'helpers.subprocess'
local util = require 'helpers.util'

local ROOT = sub.root()
local q = sub.q
local DATA = ROOT .. '/tests/fixtures/peers'
local HAVE_PY = select(2, util.run('python3 -c "import sys; sys.exit(sys.version_info < (3, 8))" 2>/dev/null')) == 0

-- Runs a shell command in the repository root; returns stdout+stderr and the exit code.
local function sh(cmd)
  return util.run('cd ' .. q(ROOT) .. ' && ' .. cmd .. ' 2>&1')
end

-- The line of text that starts with prefix (a literal), or nil.
local function line_of(text, prefix)
  for l in text:gmatch('[^\n]+') do
    if l:sub(1, #prefix) == prefix then return l end
  end
end

-- The cells of a markdown table row.
local function cells(row)
  local out = {}
  for c in row:gmatch('([^|]+)') do
    local t = c:match('^%s*(.-)%s*$')
    if t ~= '' then out[#out + 1] = t end
  end
  return out
end

-- Our bundles for hidden 512, seq 256 (every mode and provider), made once.
local ours = {}
local function our_bundles(script)
  if not ours[script] then
    local dir = sub.tmpdir()
    local path = dir .. '/' .. script:gsub('%.lua$', '') .. '.jsonl'
    local r = sub.run({ '--backend', 'cpu', '--quiet', ROOT .. '/scripts/' .. script, '--hidden', '512',
      '--seq', '256', '--mode', 'all', '--provider', 'all', '--rep-ms', '1', '--warmup-ms', '1',
      '--format', 'jsonl', '--out', path })
    assert(r.code == 0, r.err)
    ours[script] = path
  end
  return ours[script]
end

local function merge(args)
  return sh('python3 scripts/peers/merge.py ' .. args)
end

describe('scripts/peers/merge.py', function()
  if not HAVE_PY then
    pending('python3 (3.8 or later) is not installed')
    return
  end

  local function both(extra)
    return merge(table.concat({ '--ours', q(our_bundles('llama4_rope.lua')), '--ours', q(our_bundles('rope.lua')),
      '--peers', q(DATA .. '/peers.csv'), extra or '' }, ' '))
  end

  it('makes one section per kernel, llama4_rope first, with target 3 only under llama4_rope', function()
    local text, code = both('--ceiling ' .. q(DATA .. '/ceiling.json'))
    assert.are.equal(0, code, text)
    local l4, rope = text:find('\n## llama4_rope\n', 1, true), text:find('\n## rope\n', 1, true)
    assert.truthy(l4, text)
    assert.truthy(rope, text)
    assert.is_true(l4 < rope)
    local t3 = text:find('**Target 3** (llama4_rope', 1, true)
    assert.truthy(t3 and t3 > l4 and t3 < rope, text)
    assert.truthy(text:find('**Target 2** (rope): 0 of 3', 1, true), text)
  end)

  it('puts ours and the peers of the same point, mode and kernel in one row, with their ratios', function()
    local text = both()
    local rope = text:sub((text:find('\n## rope\n', 1, true)))
    local row = cells(assert(line_of(rope, '| H | 512 | 256 | forward |'), rope))
    -- sweep H T mode | fused reference ours-copy | Liger HF compile torch-copy | ratios | target
    assert.are.equal(15, #row)
    assert.are.equal('0.0336', row[8]) -- Liger: 20 GB/s of 671744 bytes (the fixture)
    assert.are.equal('0.0672', row[9])
    assert.are.equal('0.0655', row[11])
    local fused = tonumber(row[5])
    assert.is_true(fused > 0)
    -- the ratio is computed from the unrounded medians: within the rounding of the cells
    assert.is_true(math.abs(tonumber(row[12]) - fused / 0.0335872) <= 0.01 + fused / 0.0335872 * 0.002, row[12])
    assert.matches('fail', row[15])
  end)

  it('reports GB/s and % of the --ceiling file, else of the peers\' large copy', function()
    local text = both('--ceiling ' .. q(DATA .. '/ceiling.json'))
    assert.truthy(text:find('50 GB/s by kluabench\'s scripts/ceilings.lua', 1, true), text)
    assert.truthy(text:find('the one the % columns use', 1, true), text)
    local rope = text:sub((text:find('\n## rope\n', 1, true)))
    local bw = rope:sub((rope:find('GB/s (% of the ceiling)', 1, true)))
    local row = cells(assert(line_of(bw, '| H | 512 | 256 | forward |'), bw))
    -- Liger 20 GB/s of a 50 GB/s ceiling; torch's copy 10 GB/s
    assert.are.equal('20 (40 %)', row[8])
    assert.are.equal('10 (20 %)', row[11])
    text = both()
    assert.truthy(text:find('100 GB/s by torch copy_ under do_bench (0.50 GiB read + written) — the one the % columns use',
      1, true), text)
    bw = text:sub((text:find('\n## rope\n', 1, true)))
    bw = bw:sub((bw:find('GB/s (% of the ceiling)', 1, true)))
    assert.are.equal('20 (20 %)', cells(line_of(bw, '| H | 512 | 256 | forward |'))[8])
  end)

  it('tabulates only the kernels --kernel names', function()
    local text, code = both('--kernel rope')
    assert.are.equal(0, code, text)
    assert.falsy(text:find('## llama4_rope', 1, true))
    assert.truthy(text:find('## rope', 1, true))
  end)

  it('leaves out an unreadable --ceiling file and says so', function()
    local text, code = both('--ceiling ' .. q(DATA .. '/peers.csv'))
    assert.are.equal(0, code, text)
    assert.truthy(text:find('--ceiling ' .. DATA .. '/peers.csv left out: ValueError: no JSON object in it (none starts a line)', 1, true), text)
  end)
end)

describe('scripts/peers/rope_peers.py without torch', function()
  if not HAVE_PY then
    pending('python3 (3.8 or later) is not installed')
    return
  end

  it('plans both kernels: 8 points x 3 modes x 3 providers each', function()
    local text, code = sh('python3 scripts/peers/rope_peers.py --plan --kernel all')
    assert.are.equal(0, code, text)
    assert.truthy(text:find('llama4_rope: 8 points', 1, true), text)
    assert.truthy(text:find('rope: 8 points', 1, true), text)
    assert.truthy(text:find('total: 144 timings, 16 point copies, 1 ceiling copy', 1, true), text)
    text = sh('python3 scripts/peers/rope_peers.py --plan --kernel rope --sweep hidden --modes forward --no-copy')
    assert.truthy(text:find('total: 9 timings, 0 point copies, 0 ceiling copy', 1, true), text)
  end)

  it('names the option and the value it rejects', function()
    local text, code = sh('python3 scripts/peers/rope_peers.py --plan --kernel rope,nope')
    assert.are.equal(2, code)
    assert.truthy(text:find("--kernel: unknown kernel 'nope' (known: llama4_rope, rope, all)", 1, true), text)
    text, code = sh('python3 scripts/peers/rope_peers.py --plan --providers liger,triton')
    assert.are.equal(2, code)
    assert.truthy(text:find("--providers: unknown provider 'triton'", 1, true), text)
    text, code = sh('python3 scripts/peers/rope_peers.py --kernel rope')
    assert.are.equal(2, code)
    assert.truthy(text:find('--out is required', 1, true), text)
  end)

  it('refuses to --append to a file that is not Liger\'s CSV', function()
    local dir = sub.tmpdir()
    sub.spit(dir .. '/x.csv', 'a,b\n1,2\n')
    local text, code = sh('python3 scripts/peers/rope_peers.py --plan --append --out ' .. q(dir .. '/x.csv'))
    assert.are.equal(2, code)
    assert.truthy(text:find('--append: ' .. dir .. '/x.csv does not start with the header of Liger\'s CSV', 1, true),
      text)
    text, code = sh('python3 scripts/peers/rope_peers.py --plan --append --out ' .. q(DATA .. '/peers.csv'))
    assert.are.equal(0, code, text)
  end)
end)

-- A stub kluabench: version, the ceiling from the fixture, a sweep appends
-- the prepared bundles to --out (nothing for the graph protocol), compare is
-- the real one; every call is logged.
local STUB_KB = [[#!/bin/sh
echo "kluabench $*" >> "$STUB_LOG"
case "$1" in
  -v) echo "kluabench stub"; exit 0 ;;
  scripts/ceilings.lua) if [ -n "${STUB_HANG:-}" ]; then echo $$ > "$STUB_HANG"; exec sleep 60; fi ;;
esac
case "$1" in
  compare) shift; exec "$REAL_KB" compare "$@" ;;
  scripts/ceilings.lua) echo "device: stub" >&2; cat "$STUB_DATA/ceiling.json"; exit 0 ;;
esac
script=$1; out=; proto=
while [ $# -gt 0 ]; do
  case "$1" in --out) out=$2; shift ;; --protocol) proto=$2; shift ;; esac
  shift
done
[ "$proto" = graph ] && exit 0
case "$script" in
  *llama4_rope.lua) cat "$STUB_L4" >> "$out" ;;
  *rope.lua) cat "$STUB_ROPE" >> "$out" ;;
esac
]]

-- A stub python3: rope_peers.py appends the fixture's rows of its --kernel
-- (and the ceiling copy unless --copy-big-gib 0); anything else is python3.
local STUB_PY = [[#!/bin/sh
if [ "$1" != scripts/peers/rope_peers.py ]; then exec python3 "$@"; fi
shift
echo "rope_peers $*" >> "$STUB_LOG"
kernel=; out=; big=1
while [ $# -gt 0 ]; do
  case "$1" in --kernel) kernel=$2; shift ;; --out) out=$2; shift ;; --copy-big-gib) [ "$2" = 0 ] && big=0; shift ;; esac
  shift
done
[ -s "$out" ] || head -n 1 "$STUB_DATA/peers.csv" > "$out"
[ "$big" = 1 ] && grep '^copy,' "$STUB_DATA/peers.csv" >> "$out"
grep "^$kernel," "$STUB_DATA/peers.csv" >> "$out"
exit 0
]]

-- A stub nvidia-smi that lists one GPU, and one that finds none (as on a machine without a driver).
local STUB_SMI = [[#!/bin/sh
case "$1" in -L) echo "GPU 0: stub GPU (UUID: GPU-00000000-0000-0000-0000-000000000000)" ;; *) echo "stub nvidia-smi $*" ;; esac
]]
local STUB_NO_SMI = [[#!/bin/sh
echo "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver." >&2
exit 9
]]

describe('scripts/gpu_compare.sh with stubs', function()
  if not HAVE_PY then
    pending('python3 (3.8 or later) is not installed')
    return
  end

  local dir, env
  setup(function()
    dir = sub.tmpdir()
    os.execute('mkdir -p ' .. q(dir .. '/base/build') .. ' ' .. q(dir .. '/base/scripts') .. ' ' .. q(dir .. '/out')
      .. ' ' .. q(dir .. '/gpu') .. ' ' .. q(dir .. '/nogpu'))
    sub.spit(dir .. '/gpu/nvidia-smi', STUB_SMI)
    sub.spit(dir .. '/nogpu/nvidia-smi', STUB_NO_SMI)
    os.execute('chmod +x ' .. q(dir .. '/gpu/nvidia-smi') .. ' ' .. q(dir .. '/nogpu/nvidia-smi'))
    sub.spit(dir .. '/kluabench', STUB_KB)
    sub.spit(dir .. '/python3', STUB_PY)
    sub.spit(dir .. '/base/scripts/llama4_rope.lua', '-- the baseline\'s script (the stub ignores it)\n')
    os.execute('chmod +x ' .. q(dir .. '/kluabench') .. ' ' .. q(dir .. '/python3')
      .. ' && cp ' .. q(dir .. '/kluabench') .. ' ' .. q(dir .. '/base/build/kluabench'))
    env = table.concat({ 'env', 'PATH=' .. q(dir .. '/gpu') .. ':"$PATH"', 'STUB_LOG=' .. q(dir .. '/calls.log'), 'STUB_DATA=' .. q(DATA),
      'REAL_KB=' .. q(sub.bin()), 'STUB_L4=' .. q(our_bundles('llama4_rope.lua')),
      'STUB_ROPE=' .. q(our_bundles('rope.lua')), 'KLUABENCH=' .. q(dir .. '/kluabench'),
      'PYTHON=' .. q(dir .. '/python3'), 'BASELINE=' .. q(dir .. '/base'), 'OUT=' .. q(dir .. '/out') }, ' ')
  end)

  it('is valid bash', function()
    local text, code = sh('bash -n scripts/gpu_compare.sh')
    assert.are.equal(0, code, text)
  end)

  it('runs every step in order, merges both kernels and names its seven files', function()
    local text, code = sh(env .. ' bash scripts/gpu_compare.sh')
    assert.are.equal(0, code, text)
    local calls = sub.slurp(dir .. '/calls.log')
    local order = {}
    for l in calls:gmatch('[^\n]+') do
      if l:find('ceilings.lua', 1, true) then order[#order + 1] = 'ceiling'
      elseif l:find('/base/scripts/llama4_rope.lua', 1, true) then order[#order + 1] = 'before'
      elseif l:find('kluabench compare', 1, true) then order[#order + 1] = 'compare'
      elseif l:find('--protocol graph', 1, true) then order[#order + 1] = 'graph'
      elseif l:find('scripts/llama4_rope.lua', 1, true) then order[#order + 1] = 'after'
      elseif l:find('scripts/rope.lua', 1, true) then order[#order + 1] = 'rope'
      elseif l:find('rope_peers --kernel llama4_rope', 1, true) then order[#order + 1] = 'peers llama4'
      elseif l:find('rope_peers --kernel rope', 1, true) then order[#order + 1] = 'peers rope' end
    end
    assert.are.same({ 'ceiling', 'before', 'after', 'compare', 'graph', 'rope', 'peers llama4', 'peers rope' }, order)
    -- the second peers run appends and leaves the ceiling copy to the first
    assert.truthy(calls:find('rope_peers %-%-kernel rope [^\n]*%-%-append[^\n]*%-%-copy%-big%-gib 0'), calls)
    assert.falsy(calls:find('rope_peers %-%-kernel llama4_rope [^\n]*%-%-copy%-big%-gib 0'), calls)
    -- the A/A compare of the same bundles finds its points
    assert.truthy(text:find('compare before/after: ok', 1, true), text)
    local table_md = sub.slurp(dir .. '/out/table.md')
    assert.truthy(table_md:find('## llama4_rope', 1, true) and table_md:find('## rope', 1, true), table_md)
    assert.truthy(table_md:find('50 GB/s by kluabench\'s scripts/ceilings.lua', 1, true), table_md)
    local _, copies = sub.slurp(dir .. '/out/peers.csv'):gsub('\ncopy,copy,copy,speed,', '')
    assert.are.equal(1, copies)
    local files = text:match('files in [^\n]-: ([^\n]*)')
    assert.are.equal('before.jsonl env.txt log.txt ours_llama4_rope.jsonl ours_rope.jsonl peers.csv table.md', files)
    assert.truthy(text:find('wall time %d+ s of the 510 s budget'), text)
    assert.truthy(sub.slurp(dir .. '/out/log.txt'):find('==== summary', 1, true))
  end)

  it('skips what its knobs say, and a step the budget leaves no time for, then fails', function()
    os.remove(dir .. '/calls.log')
    local text, code = sh(env .. ' SKIP_BEFORE=1 SKIP_PEERS_ROPE=1 SKIP_GRAPH=1 bash scripts/gpu_compare.sh')
    assert.are.equal(0, code, text)
    local calls = sub.slurp(dir .. '/calls.log')
    assert.falsy(calls:find('/base/', 1, true), calls)
    assert.falsy(calls:find('--kernel rope', 1, true), calls)
    assert.truthy(text:find('before: baseline llama4    skipped:', 1, true), text)
    assert.falsy(io.open(dir .. '/out/before.jsonl'), 'a rerun must not keep the last run\'s files')
    -- a budget smaller than the reserve: nothing starts, the merge still runs, the run fails
    text, code = sh(env .. ' BUDGET_S=10 bash scripts/gpu_compare.sh')
    assert.are.equal(1, code, text)
    assert.truthy(text:find('ours rope                  skipped: out of the 10 s budget', 1, true), text)
    assert.truthy(text:find('no table', 1, true) or text:find('merge: ', 1, true), text)
  end)

  it('refuses to run without a GPU: a clear message, exit status 2, nothing written', function()
    os.remove(dir .. '/calls.log')
    local text, code = sh(env:gsub(q(dir .. '/gpu'), q(dir .. '/nogpu'), 1) .. ' OUT=' .. q(dir .. '/none') .. ' bash scripts/gpu_compare.sh')
    assert.are.equal(2, code, text)
    assert.truthy(text:find('gpu_compare.sh: no GPU here (nvidia-smi -L lists none)', 1, true), text)
    assert.falsy(io.open(dir .. '/calls.log'), 'nothing may run without a GPU')
    assert.falsy(io.open(dir .. '/none/log.txt'), 'nothing may be written without a GPU')
  end)

  it('prints its header with --help', function()
    local text, code = sh('bash scripts/gpu_compare.sh --help')
    assert.are.equal(0, code, text)
    assert.truthy(text:find('^Our RoPE sweeps beside Liger%-Kernel'), text)
    assert.truthy(text:find('SKIP_PEERS_ROPE', 1, true), text)
  end)

  it('stops the step still running when it is interrupted (SIGTERM), and logs it', function()
    local hang = dir .. '/hang.pid'
    os.remove(hang)
    -- the copy-ceiling step hangs (a stub that sleeps a minute); the script is sent SIGTERM once it runs
    local text = sh(string.format('%s STUB_HANG=%s bash scripts/gpu_compare.sh >%s 2>&1 & p=$!; '
      .. 'for i in $(seq 100); do [ -s %s ] && break; sleep 0.1; done; kill -TERM $p; wait $p; echo "status $?"; '
      .. 'c=$(cat %s); sleep 0.3; if kill -0 "$c" 2>/dev/null; then echo "child $c alive"; kill "$c"; else echo "child gone"; fi',
      env, q(hang), q(dir .. '/hang.log'), q(hang), q(hang)))
    assert.truthy(text:find('status 143', 1, true), text)
    assert.truthy(text:find('child gone', 1, true), text)
    -- (tee writes the log's last lines once the script is gone)
    local log
    for _ = 1, 50 do
      log = sub.slurp(dir .. '/out/log.txt') or ''
      if log:find('stopped the running step', 1, true) then break end
      os.execute('sleep 0.1')
    end
    assert.truthy(log:find('interrupted (SIGTERM)', 1, true), log)
    assert.truthy(log:find('stopped the running step', 1, true), log)
  end)
end)
