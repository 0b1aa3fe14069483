#!/usr/bin/env bash
# A device call for issues 25 and 26 (prepared 2026-12-04 without device time; it ran as call 1 of
# evidence/2026-12-04-s31-h200, where the flat part stopped on a harness bug since fixed), from the
# repository root with build/ carried (`bash bench/make_carry.sh`, then in the call
# `tar -xzf build/carry.tgz -C build`); both experiments' rules were committed before it:
#   1. issue 25: bench/rope_flat_gpu.sh, the flat kernel against the production plans (rule:
#      docs/perf-notes.md "The flat kernel"; judged here afterwards by bench/rope_flat_judge.lua)
#   2. issue 26: E4 with the packing alone beside it (docs/MEASUREMENT.md "Where the rest goes"):
#      bench/launch_overhead_user.lua, 3 processes (seeds 1-3, 7 rounds each)
# About 5 minutes: device run, timeout_s 480. Out ($OUT): rope_flat_raw.tar.gz, e4.tar.gz, log.txt.
set -u
cd "$(dirname "$0")/.." || exit 1
OUT=${OUT:-$(mktemp -d)}
LOG=$OUT/log.txt
T0=$(date +%s)
say() { echo "==== $* (+$(($(date +%s) - T0)) s)" | tee -a "$LOG"; }
say "1 flat kernel"
OUT=$OUT/flat timeout 330 bash bench/rope_flat_gpu.sh >>"$LOG" 2>&1
echo "rope_flat_gpu.sh: exit $?" | tee -a "$LOG"
mv "$OUT/flat/rope_flat_raw.tar.gz" "$OUT/" 2>/dev/null
rm -rf "$OUT/flat"
say "2 E4 with the packing alone"
mkdir -p "$OUT/e4"
for i in 1 2 3; do
    timeout 60 build/kluabench bench/launch_overhead_user.lua --seed "$i" --out "$OUT/e4/new-$i.csv" </dev/null \
        >"$OUT/e4/new-$i.txt" 2>&1
    echo "E4 process $i: exit $?" | tee -a "$LOG"
    grep -E '^\| (kernel:launch|C loop|the packing)|^targets' "$OUT/e4/new-$i.txt" | tee -a "$LOG"
done
tar -czf "$OUT/e4.tar.gz" -C "$OUT" e4 && rm -rf "$OUT/e4"
say "done"
