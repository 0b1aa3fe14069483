#!/usr/bin/env bash
# A device call for issues 25 and 26 (prepared 2026-12-04, third session), from the repository
# root with build/ carried (`bash bench/make_carry.sh`, then in the call
# `tar -xzf build/carry.tgz -C build`); both rules were committed before it:
#   1. issue 26, E4b (docs/MEASUREMENT.md): bench/e4b_gpu.sh with SEEDS (default "11 12 13")
#   2. issue 25, the flat kernel's second rule (docs/perf-notes.md): bench/refactor_compare_gpu.sh,
#      build/baseline (main at fcd5b7b) against this build, llama4_rope and rope, fused, forward
#      and full, hidden 2048 / seq 2048 and hidden 8192 / seq 1024, 2048, 4096, cold, 3 rounds a
#      side, then the rope gpu specs; judged afterwards from compare-cold.txt
# About 9 minutes: device run, timeout_s 600. Out ($OUT): e4b.tar.gz, flat2-raw.tar.gz,
# flat2-summary.md, log.txt.
set -u
cd "$(dirname "$0")/.." || exit 1
OUT=${OUT:-$(mktemp -d)}
LOG=$OUT/log.txt
T0=$(date +%s)
say() { echo "==== $* (+$(($(date +%s) - T0)) s)" | tee -a "$LOG"; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv | tee -a "$LOG"
say "1 E4b"
OUT=$OUT timeout 120 bash bench/e4b_gpu.sh >/dev/null 2>&1
echo "e4b_gpu.sh: exit $?" | tee -a "$LOG"
say "2 the flat kernel, second rule"
mkdir -p "$OUT/flat2"
OUT=$OUT/flat2 SCRIPTS="llama4_rope rope" PROTOCOLS=cold ROUNDS=3 CEILING=0 \
    SWEEP_GROUPS="--hidden 2048 --seq 2048 --mode forward,full --provider fused;--hidden 8192 --seq 1024,2048,4096 --mode forward,full --provider fused" \
    SPEC_FILES="tests/rope_fwd_bwd_spec.lua tests/rope_spec.lua" BUDGET_S=$((560 - ($(date +%s) - T0))) \
    bash bench/refactor_compare_gpu.sh >/dev/null 2>&1
echo "refactor_compare_gpu.sh: exit $?" | tee -a "$LOG"
mv "$OUT/flat2/raw.tar.gz" "$OUT/flat2-raw.tar.gz" 2>/dev/null
mv "$OUT/flat2/summary.md" "$OUT/flat2-summary.md" 2>/dev/null
cat "$OUT/flat2/log.txt" >>"$LOG" 2>/dev/null
rm -rf "$OUT/flat2"
say "done"
