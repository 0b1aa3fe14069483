#!/usr/bin/env bash
# A real sequence for `kluabench history check`: a slowdown injected at a known commit, measured and checked.
#
# Ten commits of a small benchmark in a throwaway git repository, each measured for real, with a
# slowdown injected at a known commit, and the check run after every commit
# as CI would run it.
#
# The code under test is bench.lua in that repository: a provider "user"
# copies a tensor (on cuda: a CUDA kernel compiled by NVRTC; on cpu: the
# engine's copy), and from commit SLOW_AT on it moves 5 % more bytes than
# before (the point's declared cost does not change: a real regression). The
# provider "copy" (the engine's copy of the nominal size, unchanged) is
# measured in the same sessions: the sentinel. After each commit: the sweep
# (--runs 3 sessions), `history add`, `history check`. At the end it prints
# the first commit whose check failed and the commit it named, and writes an
# HTML report (kluabench report --db).
#
#   bash scripts/history_sequence.sh [OUT_DIR]            (default: a temporary folder)
#   COMMITS=10 SLOW_AT=6 MIB=64 PROTOCOL=cold SWEEP_ARGS="..." bash scripts/history_sequence.sh
#   KLUABENCH_BACKEND=cpu MIB=16 EXTRA=0.5 bash scripts/history_sequence.sh
#                 (the cpu backend: a shared CPU's timing wanders by several
#                 per cent between sessions, so here the slow commits move
#                 50 % more bytes; tests/history_sequence_spec.lua runs this)
#
# Exit status 0 when the check failed first at SLOW_AT or the commit after
# it, named SLOW_AT, and passed before; 1 otherwise. On the H200 it takes
# about a minute (within the 4 minutes it is allowed).
set -euo pipefail
case "${1:-}" in -h | --help) sed -n '2,/^[^#]/{/^#/s/^# \{0,1\}//p}' "$0"; exit 0 ;; esac
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BIN="$ROOT/build/kluabench"
COMMITS="${COMMITS:-10}"
SLOW_AT="${SLOW_AT:-6}"
MIB="${MIB:-64}"
EXTRA="${EXTRA:-0.05}" # the share of bytes the slow commits move in excess
OUT="${1:-$(mktemp -d)}"
mkdir -p "$OUT"
REPO="$OUT/repo"
DB="$OUT/history.db"
rm -rf "$REPO" "$DB"
mkdir -p "$REPO"
cd "$REPO"
git init -q -b main .
git config user.name "history sequence"
git config user.email "history@example.invalid"

# The benchmark of the code under test; EXTRA is what the commits change.
cat > bench.lua <<'EOF'
-- The code under test of scripts/history_sequence.sh: "user" copies n * (1 + EXTRA) floats.
local kb = require 'kluabench'
local EXTRA = 0.00
local SRC = [[
extern "C" __global__ void user_copy(float *__restrict__ dst, const float *__restrict__ src, long long n) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
    dst[i] = src[i];
}
]]
local kernel
kb.suite.main {
  name = 'sequence_copy',
  summary = 'the code under test: a copy that may move more bytes than it should',
  axes = { { name = 'mib', default = 64, max = 4096, help = 'tensor size in MiB' } },
  dtypes = { 'f32' },
  modes = { 'forward' },
  providers = { 'user', 'copy' },
  -- the workload is a copy of mib MiB, whatever buffers the code allocates
  -- (the slowdown is in the code under test, not in the workload)
  operation = { name = 'sequence-copy', family = 'copy', title = 'Copy of mib MiB of f32',
    inputs = { { name = 'src', shape = { 'n' }, dtype = 'cfg' } },
    outputs = { { name = 'dst', shape = { 'n' }, dtype = 'cfg' } },
    derived = { n = 'mib * 262144' } },
  setup = function(p)
    local n = p.mib * (1 << 20) // 4
    local m = math.floor(n * (1 + EXTRA))
    return { m = m, usrc = kb.randn({ m }, 'f32', 1), udst = kb.zeros({ m }, 'f32'),
      nsrc = kb.randn({ n }, 'f32', 1), ndst = kb.zeros({ n }, 'f32') }
  end,
  run = function(p, provider, mode, t)
    if provider == 'copy' then return function() t.ndst:copy_(t.nsrc) end end
    if kb.backend() == 'cuda' then
      kernel = kernel or kb.cuda.compile(SRC, { name = 'user_copy.cu' }):kernel('user_copy', 'ptr, ptr, i64')
      local opts = { grid = kb.device_info().sm_count * 8, block = 256, args = { t.udst, t.usrc, t.m } }
      return function() kernel:launch(opts) end
    end
    return function() t.udst:copy_(t.usrc) end
  end,
  check = function(p, provider, t)
    return { reference = 'none: the sequence times a copy whose result it does not need', passed = true }
  end,
  cost = function(p) return 2 * p.mib * (1 << 20), 0 end,
}
EOF

status=0
first_fail=""
named=""
for i in $(seq 1 "$COMMITS"); do
  if [ "$i" -ge "$SLOW_AT" ]; then sed -i "s/^local EXTRA = .*/local EXTRA = $EXTRA/" bench.lua; fi
  git add bench.lua
  git commit -q --allow-empty -m "commit $i$([ "$i" -ge "$SLOW_AT" ] && echo ": the copy moves $EXTRA more of its bytes")"
  sha=$(git rev-parse HEAD)
  "$BIN" bench.lua --mib "$MIB" --provider user,copy --runs "${RUNS:-3}" --protocol "${PROTOCOL:-cold}" ${SWEEP_ARGS:-} --format jsonl --out "$OUT/c$i.jsonl" \
    > /dev/null 2> "$OUT/c$i.log"
  "$BIN" history add "$OUT/c$i.jsonl" --db "$DB" 2>> "$OUT/c$i.log"
  set +e
  "$BIN" history check --db "$DB" --provider user > "$OUT/check$i.txt"
  rc=$?
  set -e
  line=$(grep '^REGRESSION:' "$OUT/check$i.txt" || true)
  echo "commit $i ${sha:0:12}: history check exit $rc${line:+: $line}"
  if [ "$rc" = 1 ] && [ -z "$first_fail" ]; then
    first_fail=$i
    named=$(echo "$line" | sed -n 's/.*stepped at commit \([0-9a-f]*\).*/\1/p')
  fi
done
"$BIN" history trend --db "$DB" --provider user
"$BIN" report --db "$DB" --max-trends 2 -o "$OUT/report.html"
slow_sha=$(git rev-list --reverse HEAD | sed -n "${SLOW_AT}p")
echo "slowdown injected at commit $SLOW_AT (${slow_sha:0:12}); first failed check: ${first_fail:-none}, naming ${named:0:12}"
if [ "$first_fail" != "" ] && [ "$first_fail" -ge "$SLOW_AT" ] && [ "$first_fail" -le $((SLOW_AT + 1)) ] \
   && [ "$named" = "$slow_sha" ]; then
  echo "history_sequence: found at the commit that slowed down"
else
  echo "history_sequence: NOT found as expected"
  status=1
fi
echo "results, database and report in $OUT"
exit $status
