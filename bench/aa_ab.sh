#!/usr/bin/env bash
# Issue 13's experiment on the GPU: does `kluabench compare` call an A/A run a change, and
# does it find a real one?
#
# Run from the repository root with the built binary carried:
#   device run, carry ["build"], timeout_s 600:  bash bench/aa_ab.sh
# It builds nothing. Everything lands in $OUT (default ./out), for the lead to commit:
#   cache/ceilings.json   the between-session noise figure measured first (step 1), which
#                         every record and every compare below uses (KLUABENCH_CACHE)
#   noise-s*.jsonl        the calibration sessions (step 1)
#   aa<i>-a.jsonl, aa<i>-b.jsonl, aa<i>.txt, aa<i>-naive.txt
#                         A/A pair i (the same sweep twice, back to back), compare's report,
#                         and what compare said before issue 13 (no between-session noise:
#                         --between 0, one point at a time: --per-point)
#   ab-base.jsonl, ab-slow.jsonl, ab.txt
#                         the A/B: bench/ab_spin.lua, then the same with --slow $AB_SLOW
#   summary.txt           the verdict counts of every comparison (printed last)
# Knobs (environment): NOISE_SESSIONS (4: sweeps of step 1), AA_PAIRS (3), RUNS (unset:
# one session per point; with the harness's --runs, e.g. RUNS=3, each file holds RUNS
# sessions), SWEEP_ARGS (default "--sweep all --mode forward --provider all --protocol cold"),
# AB_SLOW (3: percent), AB_SESSIONS (3), AB_ARGS (extra arguments for bench/ab_spin.lua),
# SKIP_NOISE=1 (use the cache as it is), SKIP_AB=1.
# Wall time: NOISE_SESSIONS + 2 x AA_PAIRS sweeps (10 by default, about 40 s each for the
# 21-point cold sweep) plus the A/B (about a minute): 7 to 9 minutes. Where that is too long
# for one call: KLUABENCH_CACHE=/tmp/kb-cache AA_PAIRS=0 SKIP_AB=1 bash bench/aa_ab.sh, then
# KLUABENCH_CACHE=/tmp/kb-cache SKIP_NOISE=1 bash bench/aa_ab.sh on the same machine.
# Expected: every aa<i>.txt has only SAME and UNSURE and exits 0 (the naive reports may show
# FASTER/SLOWER: that is the bug this fixes); ab.txt shows SLOWER where the slow-down
# exceeds the noise, and no FASTER.

set -u
cd "$(dirname "$0")/.." || exit 1
OUT=${OUT:-./out}
# the noise figure lives in this cache; keep KLUABENCH_CACHE set to one folder (e.g.
# /tmp/kb-cache) to split the experiment over several calls on one machine
export KLUABENCH_CACHE=${KLUABENCH_CACHE:-$OUT/cache}
mkdir -p "$OUT/cache" "$KLUABENCH_CACHE"
KB=${KB:-build/kluabench}
SWEEP_ARGS=${SWEEP_ARGS:---sweep all --mode forward --provider all --protocol cold}
NOISE_SESSIONS=${NOISE_SESSIONS:-4}
AA_PAIRS=${AA_PAIRS:-3}
AB_SLOW=${AB_SLOW:-3}
AB_SESSIONS=${AB_SESSIONS:-3}
AB_ARGS=${AB_ARGS:-}
RUNS_ARG=${RUNS:+--runs $RUNS}
T0=$(date +%s)
step() { printf '\n==== %s (+%ss)\n' "$*" "$(( $(date +%s) - T0 ))"; }

# One sweep into a fresh file: sweep FILE
sweep() {
    rm -f "$1"
    # shellcheck disable=SC2086
    "$KB" --quiet scripts/llama4_rope.lua $SWEEP_ARGS $RUNS_ARG --format jsonl --out "$1" > /dev/null
}

# compare BASE NEW REPORT [extra options]: the report to REPORT and stdout, its exit status kept
compare() {
    local base=$1 new=$2 report=$3
    shift 3
    "$KB" compare "$base" "$new" "$@" > "$report" 2>&1
    local rc=$?
    cat "$report"
    printf '%s: exit %d: %s\n' "$(basename "$report")" "$rc" \
        "$(grep -m1 'point(s):' "$report" | cut -d. -f1-2)" >> "$OUT/summary.txt"
}

main() {
    : > "$OUT/summary.txt"
    "$KB" env 2>&1 | head -n 20

    if [ "${SKIP_NOISE:-0}" != 1 ]; then
        step "1. between-session noise: the sweep $NOISE_SESSIONS times, then scripts/run_noise.lua --from"
        local from=()
        for s in $(seq 1 "$NOISE_SESSIONS"); do
            sweep "$OUT/noise-s$s.jsonl" && from+=(--from "$OUT/noise-s$s.jsonl")
        done
        "$KB" scripts/run_noise.lua "${from[@]}"
    fi

    for i in $(seq 1 "$AA_PAIRS"); do
        step "2. A/A pair $i: the same sweep twice, back to back"
        sweep "$OUT/aa$i-a.jsonl"
        sweep "$OUT/aa$i-b.jsonl"
        compare "$OUT/aa$i-a.jsonl" "$OUT/aa$i-b.jsonl" "$OUT/aa$i.txt"
        compare "$OUT/aa$i-a.jsonl" "$OUT/aa$i-b.jsonl" "$OUT/aa$i-naive.txt" --between 0 --per-point
    done

    if [ "${SKIP_AB:-0}" != 1 ]; then
    step "3. A/B: bench/ab_spin.lua, then with --slow $AB_SLOW ($AB_SESSIONS sessions each)"
    rm -f "$OUT/ab-base.jsonl" "$OUT/ab-slow.jsonl"
    # shellcheck disable=SC2086
    "$KB" --quiet bench/ab_spin.lua --sessions "$AB_SESSIONS" $AB_ARGS --out "$OUT/ab-base.jsonl"
    # shellcheck disable=SC2086
    "$KB" --quiet bench/ab_spin.lua --sessions "$AB_SESSIONS" --slow "$AB_SLOW" $AB_ARGS --out "$OUT/ab-slow.jsonl"
    compare "$OUT/ab-base.jsonl" "$OUT/ab-slow.jsonl" "$OUT/ab.txt"
    fi

    [ "$KLUABENCH_CACHE" != "$OUT/cache" ] && cp "$KLUABENCH_CACHE/ceilings.json" "$OUT/cache/" 2>/dev/null

    step "summary"
    cat "$OUT/summary.txt"
    if grep -q 'FASTER\|SLOWER' "$OUT"/aa[0-9].txt "$OUT"/aa[0-9][0-9].txt 2>/dev/null; then
        echo "A/A: FAILED (a FASTER or SLOWER verdict in an A/A comparison)"
    else
        echo "A/A: ok (only SAME and UNSURE)"
    fi
}

main 2>&1 | tee "$OUT/log.txt"
