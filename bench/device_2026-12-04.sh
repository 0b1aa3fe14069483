#!/usr/bin/env bash
# The first device call of 2026-12-04 (issues 26 and 21), from the repository root after
# `tar -xzf build/carry.tgz -C build` (bench/make_carry.sh; build/prev: the binary of 49444e1 with
# this tree's stdlib less the warm-up after an audit; build/base: af9e106, before issue 21):
#   1. E4 again (docs/MEASUREMENT.md): bench/launch_overhead_user.lua, 3 processes per build,
#      alternating build/prev and this build (the pooled Lua allocator)
#   2. bench/trust_gpu.sh part 1: the exploit corpus's gpu spec (sampled_cache rewritten)
#   3. bench/audit_rewarm_gpu.sh: the samples after an audit at hidden 8192 / seq 16384
#   4. bench/trust_gpu.sh part 3: the defences' cost against build/base, do_bench and cold
# Out ($OUT): e4.tar.gz, rewarm.tar.gz, trust_summary.md, trust_raw.tar.gz, log.txt.
set -u
cd "$(dirname "$0")/.." || exit 1
OUT=${OUT:-$(mktemp -d)}
LOG=$OUT/log.txt
T0=$(date +%s)
say() { echo "==== $* (+$(($(date +%s) - T0)) s)" | tee -a "$LOG"; }
say "1 E4"
mkdir -p "$OUT/e4"
for i in 1 2 3; do
    for side in prev new; do
        bin=build/kluabench
        [ "$side" = prev ] && bin=build/prev/build/kluabench
        timeout 60 "$bin" bench/launch_overhead_user.lua --seed "$i" --out "$OUT/e4/$side-$i.csv" </dev/null \
            >"$OUT/e4/$side-$i.txt" 2>&1
        echo "E4 $side process $i: exit $?" | tee -a "$LOG"
        grep -E '^\| kernel:launch|^targets' "$OUT/e4/$side-$i.txt" | tee -a "$LOG"
    done
done
tar -czf "$OUT/e4.tar.gz" -C "$OUT" e4 && rm -rf "$OUT/e4"
say "2 spec"
OUT=$OUT PARTS="spec" SPEC_S=${SPEC_S:-170} bash bench/trust_gpu.sh >>"$LOG" 2>&1
mv "$OUT/trust_summary.md" "$OUT/spec_summary.md"; mv "$OUT/trust_raw.tar.gz" "$OUT/spec_raw.tar.gz"
tail -n 4 "$LOG"
say "3 rewarm"
OUT=$OUT timeout 200 bash bench/audit_rewarm_gpu.sh >>"$LOG" 2>&1
tar -czf "$OUT/rewarm.tar.gz" -C "$OUT" rewarm && rm -rf "$OUT/rewarm"
grep -E '^round|^compare|SLOWER|FASTER|^\| (0|1|2|later|none yet) ' "$LOG" | tail -n 40
say "4 cost"
OUT=$OUT PARTS="cost" BASELINE=build/base COST_S=${COST_S:-170} bash bench/trust_gpu.sh >>"$LOG" 2>&1
grep -E '^\| llama4_rope|^\| cost' "$LOG" | tail -n 12
say "done"
