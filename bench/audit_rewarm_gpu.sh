#!/usr/bin/env bash
# Do the harness's audits slow the samples after them (issue 21; docs/TRUST.md, "the audits at
# hidden 8192 / seq 16384")? llama4_rope fused forward, cold, hidden 8192, seq 16384, in ROUNDS
# interleaved rounds of three sessions: PREV (a build without the warm-up after an audit), this
# build with its default audits, and this build with --audits 0. Then `kluabench compare` of each
# audited side against --audits 0, and where in each session the samples after an audit lie
# (bench/audit_positions.lua).
#
# From the repository root on the GPU machine, with build/ carried and the previous build at
# $PREV (its binary at $PREV/build/kluabench, its scripts/ and stdlib/ beside):
#   OUT=/tmp/x bash bench/audit_rewarm_gpu.sh
# Out ($OUT/rewarm): the three JSON Lines files with their samples, compare-*.txt, positions.txt,
# log.txt. Knobs: ROUNDS (3), PREV (build/prev), ARGS (the point), SESSION_S (40: each session's
# time-box).
set -u
cd "$(dirname "$0")/.." || exit 1
OUT=${OUT:-$(mktemp -d)}/rewarm
ROUNDS=${ROUNDS:-3}
PREV=${PREV:-build/prev}
KB=build/kluabench
read -r -a ARGS <<<"${ARGS:---hidden 8192 --seq 16384 --mode forward --provider fused --protocol cold}"
mkdir -p "$OUT" || exit 1
export KLUABENCH_RESULTS=$OUT/results KLUABENCH_CACHE=$OUT/cache
exec > >(tee "$OUT/log.txt") 2>&1
for r in $(seq "$ROUNDS"); do
    for side in prev audited none; do
        case $side in
            prev) cmd=("$PREV/build/kluabench" "$PREV/scripts/llama4_rope.lua") ;;
            audited) cmd=("$KB" scripts/llama4_rope.lua) ;;
            none) cmd=("$KB" scripts/llama4_rope.lua --audits 0) ;;
        esac
        t0=$(date +%s)
        timeout "${SESSION_S:-40}" "${cmd[@]}" "${ARGS[@]}" --format jsonl --out "$OUT/$side.jsonl" </dev/null \
            >>"$OUT/$side.txt" 2>&1
        rc=$?
        echo "round $r $side: exit $rc, $(($(date +%s) - t0)) s"
    done
done
for side in prev audited; do
    "$KB" compare "$OUT/none.jsonl" "$OUT/$side.jsonl" >"$OUT/compare-$side.txt" 2>&1
    echo "compare none -> $side: exit $?"
    tail -n 12 "$OUT/compare-$side.txt"
done
"$KB" bench/audit_positions.lua "$OUT"/prev.samples.jsonl "$OUT"/audited.samples.jsonl "$OUT"/none.samples.jsonl \
    >"$OUT/positions.txt" 2>&1
cat "$OUT/positions.txt"
rm -rf "$OUT/cache"
