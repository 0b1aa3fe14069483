#!/usr/bin/env bash
# The session's last GPU call (2026-12-03), from the repository root with
# build/ carried (build/baseline: the binary, stdlib/ and scripts/ of the
# commit before issues 22 and 21 were merged, af9e106):
#   1. bench/trust_gpu.sh's spec and honest-kernel parts (issue 21): the
#      exploit corpus's gpu spec; the built-in, example, NVRTC, Triton and
#      plugin kernels through every protocol, none flagged. Its own cost part
#      is left out (no baseline named): step 2 measures the same points.
#   2. bench/refactor_compare_gpu.sh against build/baseline (issues 22 and 21
#      together): the llama4_rope sweep, cold and do_bench, 3 interleaved
#      rounds a side, kluabench compare per protocol; then every gpu-tagged
#      spec of this tree.
#   3. bench/trust_cost.lua on step 2's joined files: issue 21's cost targets
#      (<= 2 % at hidden 8192 / seq 4096, <= 1 us at hidden 512 / seq 2048).
# Out ($OUT, 7 files): trust_summary.md, trust_raw.tar.gz, refactor/summary.md,
# refactor/log.txt, refactor/raw.tar.gz, cost.md and final_log.txt (what the
# steps printed). Each part is time-boxed (SPEC_S, HONEST_S, BUDGET_S) so the
# call stays under 10 minutes.
set -u
cd "$(dirname "$0")/.." || exit 1
OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT/refactor"
LOG=$OUT/final_log.txt
: > "$LOG"
OUT=$OUT SPEC_S=${SPEC_S:-60} HONEST_S=${HONEST_S:-150} COST_S=1 BASELINE=/nonexistent \
  bash bench/trust_gpu.sh >> "$LOG" 2>&1
echo "trust_gpu.sh: exit $?" | tee -a "$LOG"
OUT=$OUT/refactor BASE=build/baseline BUDGET_S=${BUDGET_S:-300} bash bench/refactor_compare_gpu.sh >> "$LOG" 2>&1
echo "refactor_compare_gpu.sh: exit $?" | tee -a "$LOG"
rc_dir=$(mktemp -d)
tar -xzf "$OUT/refactor/raw.tar.gz" -C "$rc_dir" 2>/dev/null
: > "$OUT/cost.md"
for p in cold do_bench; do
  b=$(ls "$rc_dir"/*/before-$p.jsonl 2>/dev/null | head -n 1)
  a=$(ls "$rc_dir"/*/after-$p.jsonl 2>/dev/null | head -n 1)
  echo "## $p" >> "$OUT/cost.md"
  if [ -n "$b" ] && [ -n "$a" ]; then
    build/kluabench bench/trust_cost.lua "$b" "$a" >> "$OUT/cost.md" 2>&1
    echo "trust_cost $p: exit $?" | tee -a "$OUT/cost.md"
  else
    echo "trust_cost $p: no joined before/after files" | tee -a "$OUT/cost.md"
  fi
done
grep -E '^\| llama4_rope .*(hidden8192-kv_heads8-q_heads32-seq4096|hidden512-kv_heads8-q_heads32-seq2048)' "$OUT/cost.md"
grep -A4 '^| part | verdict | files |$' "$LOG" | tail -n 4
tail -n 6 "$OUT/refactor/summary.md" 2>/dev/null
grep -E 'passed, [0-9]+ failed' "$LOG" | tail -n 3
