#!/usr/bin/env bash
# Before/after check of a change to the Lua side of a timed path (first use:
# measure/init.lua split into one file per mode), on the GPU, in one call.
# The binary is the same on both sides; only the stdlib differs:
#   before  KLUABENCH_PATH=$BASE (a copy of the previous commit's stdlib/)
#   after   the working tree's stdlib/
#
# Prepare here, then run on the device with build carried:
#   mkdir -p build/baseline-stdlib && git archive HEAD~1 stdlib | tar -x -C build/baseline-stdlib --strip-components=1
#   device run, carry ["build"], timeout_s 600:  bash bench/measure_split.sh
# Out ($OUT, default ./out): gpu-specs.txt (the gpu-tagged specs on the new
# stdlib), {before,after}-{cold,hot,graph}.jsonl, compare-{cold,hot,graph}.txt,
# log.txt. The cold sweep runs ROUNDS (3) times a side, hot and graph
# OTHER_ROUNDS (2), interleaved (before, after, before, ...), so each side
# has several sessions per point and compare sees the run-to-run spread.
# A ceilings cache given as CEILINGS (a ceilings.json of this kind of card)
# gives the records their throughput and between-session noise figure.
# SKIP_SPECS=1 leaves the specs out; SWEEP_ARGS replaces "--sweep all --mode forward".
# Expected: every compare says SAME or UNSURE (exit 0), no FASTER or SLOWER.
set -u
cd "$(dirname "$0")/.." || exit 1
OUT=${OUT:-./out}
KB=${KB:-build/kluabench}
BASE=${BASE:-build/baseline-stdlib}
ROUNDS=${ROUNDS:-3}
OTHER_ROUNDS=${OTHER_ROUNDS:-2}
# shellcheck disable=SC2206 # SWEEP_ARGS is a list of words
SWEEP=(${SWEEP_ARGS:---sweep all --mode forward} --format jsonl)
export KLUABENCH_CACHE=${KLUABENCH_CACHE:-$OUT/cache}
mkdir -p "$OUT" "$KLUABENCH_CACHE"
[ -n "${CEILINGS:-}" ] && cp "$CEILINGS" "$KLUABENCH_CACHE/ceilings.json"
T0=$(date +%s)
exec > >(tee "$OUT/log.txt") 2>&1
step() { printf '\n==== %s (+%ss)\n' "$*" "$(($(date +%s) - T0))"; }

[ -f "$BASE/kluabench/measure/init.lua" ] || { echo "no baseline stdlib in $BASE"; exit 2; }

# side before|after FILE ARGS...: one sweep appended to FILE
side() {
    local which=$1 file=$2
    shift 2
    local tmp="$OUT/.sweep.jsonl"
    rm -f "$tmp"
    if [ "$which" = before ]; then
        KLUABENCH_PATH=$BASE timeout 120 "$KB" --quiet scripts/llama4_rope.lua "${SWEEP[@]}" "$@" --out "$tmp"
    else
        timeout 120 "$KB" --quiet scripts/llama4_rope.lua "${SWEEP[@]}" "$@" --out "$tmp"
    fi
    local rc=$?
    cat "$tmp" >> "$file"
    echo "$which $*: exit $rc, $(wc -l < "$tmp") bundle(s)"
}

step "environment"
"$KB" env 2>&1 | head -n 12
echo "before loads: $(KLUABENCH_PATH=$BASE "$KB" -e 'print(package.searchpath("kluabench.measure", package.path))')"
echo "after loads:  $("$KB" -e 'print(package.searchpath("kluabench.measure", package.path))')"

if [ "${SKIP_SPECS:-0}" != 1 ]; then
    step "gpu-tagged specs on the new stdlib"
    timeout 240 "$KB" tests/run.lua --tags=gpu > "$OUT/gpu-specs.txt" 2>&1
    echo "exit $?: $(tail -n 1 "$OUT/gpu-specs.txt")"
fi

rm -f "$OUT"/before-*.jsonl "$OUT"/after-*.jsonl
for proto in cold hot graph; do
    rounds=$ROUNDS
    [ "$proto" = cold ] || rounds=$OTHER_ROUNDS
    for r in $(seq 1 "$rounds"); do
        step "$proto, round $r of $rounds"
        side before "$OUT/before-$proto.jsonl" --provider fused,copy --protocol "$proto"
        side after "$OUT/after-$proto.jsonl" --provider fused,copy --protocol "$proto"
    done
done

for proto in cold hot graph; do
    step "compare $proto"
    "$KB" compare "$OUT/before-$proto.jsonl" "$OUT/after-$proto.jsonl" > "$OUT/compare-$proto.txt" 2>&1
    echo "compare $proto: exit $?"
    cat "$OUT/compare-$proto.txt"
done
rm -f "$OUT/.sweep.jsonl"
step "done"
