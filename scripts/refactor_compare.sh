#!/usr/bin/env bash
# Before/after a change on the GPU: a baseline build and this tree's, timed in interleaved rounds, then `kluabench compare`.
#
# Benchmark sweeps timed with the cold protocol and with do_bench by a baseline
# build (an earlier commit: its binary, stdlib and scripts) and by this tree's, in
# interleaved rounds (before, after, before, ...) so that each side has ROUNDS
# sessions of every point and a drift of the machine spreads over both; then
# `kluabench compare` per protocol, and the gpu-tagged specs on the new tree. A
# refactor expects the verdict printed last: no FASTER and no SLOWER point (SAME or
# UNSURE only), and the specs pass. A change meant to be faster is judged by its
# own rule from compare-P.txt; there "CHANGED" is expected.
#
# Prepare the baseline (a second build, inside build/ so that one folder holds both):
#   git worktree add --detach /tmp/kb-baseline BASE_COMMIT && make -C /tmp/kb-baseline -j2
#   mkdir -p build/baseline/build && cp /tmp/kb-baseline/build/kluabench build/baseline/build/ &&
#     strip build/baseline/build/kluabench && cp -r /tmp/kb-baseline/stdlib /tmp/kb-baseline/scripts build/baseline/
# (strip: build/ is carried whole, and the carry holds at most 64 MiB.)
# Run on the GPU machine from the repository root (--help prints this text):
#   bash scripts/refactor_compare.sh
# Without a GPU (nvidia-smi -L lists none) it refuses to run, with exit status 2, unless
# BACKEND=cpu: a dry run on the cpu backend, e.g. with this tree as its own baseline:
#   BASE=. BACKEND=cpu SWEEP_ARGS="--hidden 64 --seq 64,128" REP_MS=5 ROUNDS=2 SPECS=0 \
#     bash scripts/refactor_compare.sh
# On exit, and on SIGINT or SIGTERM, it stops the step still running.
#
# Out ($OUT, default a new temporary folder; 3 files):
#   summary.md   the verdict table, each protocol's compare summary line, versions and clocks
#   log.txt      everything printed, the compare tables included
#   raw.tar.gz   raw/: before-P-rN.jsonl / after-P-rN.jsonl with their .samples.jsonl (the
#                evidence the records name), before-P.jsonl / after-P.jsonl (the rounds
#                joined), compare-P.txt, gpu-specs.txt
# Knobs: BASE (build/baseline), KB (build/kluabench), ROUNDS (3), PROTOCOLS ("cold do_bench"),
#   SCRIPTS ("llama4_rope": scripts/NAME.lua of each side, space-separated), SWEEP_GROUPS (the
#   sweep options, groups separated by ';', each run by every script; default SWEEP_ARGS, else
#   "--sweep all --mode all --provider fused"), SPEC_FILES (spec files for the gpu specs; empty:
#   all), REP_MS (400, do_bench's), BACKEND
#   (unset: the binaries' default; cpu for a dry run), CEILINGS (a ceilings.json of this kind of
#   card: records then carry throughput and the between-session noise; without it the copy
#   ceiling is measured first, CEILING=0 skips that), SPECS (1: the gpu-tagged specs, last),
#   BUDGET_S (400: each step's time-box is cut to what is left of it, and a step with less
#   than 5 s left is skipped and says so, so an overrun costs the specs first).
# Exit status: 0 when every step ran and no point is FASTER or SLOWER, 1 otherwise; 2 without
# a GPU; 130 or 143 when interrupted by SIGINT or SIGTERM.
set -u
case "${1:-}" in -h | --help) sed -n '2,/^[^#]/{/^#/s/^# \{0,1\}//p}' "$0"; exit 0 ;; esac
cd "$(dirname "$0")/.." || exit 1
if [ "${BACKEND:-}" != cpu ] && ! nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
    echo "refactor_compare.sh: no GPU here (nvidia-smi -L lists none); run it on a GPU machine, or BACKEND=cpu for a dry run" >&2
    exit 2
fi
OUT=${OUT:-$(mktemp -d "${TMPDIR:-/tmp}/refactor_compare.XXXXXX")}
BASE=${BASE:-build/baseline}
KB=${KB:-build/kluabench}
ROUNDS=${ROUNDS:-3}
PROTOCOLS=${PROTOCOLS:-cold do_bench}
REP_MS=${REP_MS:-400}
BUDGET_S=${BUDGET_S:-400}
RAW="$OUT/raw"
mkdir -p "$RAW" || exit 1
export KLUABENCH_CACHE=${KLUABENCH_CACHE:-$OUT/cache}
mkdir -p "$KLUABENCH_CACHE" || exit 1
SCRIPTS=${SCRIPTS:-llama4_rope}
SWEEP_GROUPS=${SWEEP_GROUPS:-${SWEEP_ARGS:---sweep all --mode all --provider fused}}
SPEC_FILES=${SPEC_FILES:-}
HOST=()
[ -n "${BACKEND:-}" ] && HOST=(--backend "$BACKEND")
T0=$(date +%s)
STATUS=()   # lines of the summary: step and how it ended
FAILED=0
CHILD= # the time-boxed step running now: its timeout process, which passes a signal on to its command
exec > >(trap '' INT TERM; exec tee "$OUT/log.txt") 2>&1
exec 5>&1 # the log, for what the traps say while a step's output goes elsewhere
# On every exit the step still running is stopped (tee, ignoring the signals, logs it).
stop_child() {
    [ -n "$CHILD" ] || return 0
    kill -TERM "$CHILD" 2>/dev/null
    wait "$CHILD" 2>/dev/null
    echo "stopped the running step (pid $CHILD)" >&5
}
trap stop_child EXIT
trap 'echo "interrupted (SIGINT)" >&5; exit 130' INT
trap 'echo "interrupted (SIGTERM)" >&5; exit 143' TERM

step() { printf '\n==== %s (+%ss)\n' "$*" "$(($(date +%s) - T0))"; }
note() { STATUS+=("$1"); echo "$1"; }

# timed NAME CAP COMMAND...: COMMAND under a time-box of min(CAP, what is left of the
# budget); notes how it ended; returns its exit status (125: not started, out of budget).
timed() {
    local name=$1 cap=$2 left limit rc
    shift 2
    left=$((T0 + BUDGET_S - $(date +%s)))
    limit=$((cap < left ? cap : left))
    if [ "$limit" -lt 5 ]; then
        note "$name: SKIPPED, out of the ${BUDGET_S} s budget"
        FAILED=1
        return 125
    fi
    # in the background and waited for, so that a signal to this script runs its trap at once
    timeout -k 5 "$limit" "$@" </dev/null 5>&- &
    CHILD=$!
    wait "$CHILD"
    rc=$?
    CHILD=
    case $rc in
        0) ;;
        124 | 137) note "$name: TIMED OUT after $limit s"; FAILED=1 ;;
        *) note "$name: exit status $rc"; FAILED=1 ;;
    esac
    return $rc
}

# sweep before|after PROTOCOL ROUND: one run of each script over each sweep group into
# raw/SIDE-PROTOCOL-rROUND.jsonl (a file per script and group, joined)
sweep() {
    local side=$1 proto=$2 round=$3 bin=$KB dir=scripts extra=() script group g out all
    if [ "$side" = before ]; then
        bin=$BASE/build/kluabench
        dir=$BASE/scripts
    fi
    [ "$proto" = do_bench ] && extra=(--rep-ms "$REP_MS")
    all="$RAW/$side-$proto-r$round.jsonl"
    : >"$all"
    for script in $SCRIPTS; do
        g=0
        while IFS= read -r group; do
            g=$((g + 1))
            read -r -a SWEEP <<<"$group"
            out="$RAW/$side-$proto-r$round-$script-$g.jsonl"
            timed "$side $proto round $round $script $g" 150 "$bin" "${HOST[@]}" --quiet "$dir/$script.lua" \
                "${SWEEP[@]}" --protocol "$proto" "${extra[@]}" --format jsonl --out "$out"
            [ -s "$out" ] && cat "$out" >>"$all"
        done <<<"${SWEEP_GROUPS//;/$'\n'}"
    done
    echo "$side $proto round $round: $(wc -l <"$all") bundle(s)"
}

step "versions and clocks"
{
    date -u '+date %Y-%m-%dT%H:%M:%SZ'
    echo "tree $(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)$(git diff --quiet 2>/dev/null || echo ' (dirty)')"
    echo "after:  $("$KB" -v 2>&1 | head -n 1) $("$KB" -e 'io.write(kb.git_commit, " ", kb.backend())' 2>&1)"
    echo "before: $("$BASE/build/kluabench" -v 2>&1 | head -n 1) $("$BASE/build/kluabench" -e 'io.write(kb.git_commit, " ", kb.backend())' 2>&1)"
    nvidia-smi --query-gpu=name,driver_version,pstate,clocks.sm,clocks.max.sm,temperature.gpu,power.draw \
        --format=csv 2>&1 | head -n 3
} | tee "$OUT/env.txt"
if [ ! -x "$BASE/build/kluabench" ] || [ ! -f "$BASE/scripts/llama4_rope.lua" ] || [ ! -d "$BASE/stdlib" ]; then
    note "baseline: MISSING ($BASE/build/kluabench, $BASE/stdlib and $BASE/scripts are needed; see the header)"
    FAILED=1
fi
[ -x "$KB" ] || { note "after: MISSING $KB"; FAILED=1; }

step "copy ceiling"
if [ -n "${CEILINGS:-}" ]; then
    if cp "$CEILINGS" "$KLUABENCH_CACHE/ceilings.json"; then echo "ceilings from $CEILINGS"
    else note "ceilings: cannot copy $CEILINGS"; FAILED=1; fi
elif [ "${CEILING:-1}" = 1 ] && [ -x "$KB" ]; then
    timed "copy ceiling" 60 "$KB" "${HOST[@]}" scripts/ceilings.lua --force
else
    echo "skipped (CEILING=0)"
fi

for proto in $PROTOCOLS; do
    for round in $(seq 1 "$ROUNDS"); do
        step "$proto, round $round of $ROUNDS"
        [ -x "$BASE/build/kluabench" ] && sweep before "$proto" "$round"
        [ -x "$KB" ] && sweep after "$proto" "$round"
    done
done

ROWS=()
for proto in $PROTOCOLS; do
    step "compare $proto"
    for side in before after; do
        : >"$RAW/$side-$proto.jsonl"
        for round in $(seq 1 "$ROUNDS"); do
            [ -s "$RAW/$side-$proto-r$round.jsonl" ] && cat "$RAW/$side-$proto-r$round.jsonl" >>"$RAW/$side-$proto.jsonl"
        done
    done
    nb=$(wc -l <"$RAW/before-$proto.jsonl")
    na=$(wc -l <"$RAW/after-$proto.jsonl")
    if [ "$nb" -eq 0 ] || [ "$na" -eq 0 ]; then
        note "compare $proto: not run (before $nb, after $na bundles)"
        FAILED=1
        ROWS+=("$(printf '| %-8s | %6s | %5s | %4s | %6s | %6s | %6s | %-7s | %-7s |' "$proto" "$nb" "$na" - - - - "-" "MISSING")")
        continue
    fi
    # (the samples files the records name resolve against the records' folder, raw/)
    timeout 120 "$KB" compare "$RAW/before-$proto.jsonl" "$RAW/after-$proto.jsonl" >"$RAW/compare-$proto.txt" 2>&1 </dev/null
    rc=$?
    cat "$RAW/compare-$proto.txt"
    line=$(grep 'point(s):' "$RAW/compare-$proto.txt" | tail -n 1)
    count() { echo "$line" | grep -o "[0-9]* $1" | grep -o '^[0-9]*' || echo 0; }
    same=$(count SAME) unsure=$(count UNSURE) faster=$(count FASTER) slower=$(count SLOWER)
    verdict=PASS
    if [ -z "$line" ] || [ "$rc" -gt 1 ]; then verdict=ERROR; FAILED=1; note "compare $proto: exit $rc, no summary line"
    elif [ "${faster:-0}" -gt 0 ] || [ "${slower:-0}" -gt 0 ]; then verdict=CHANGED; FAILED=1; fi
    STATUS+=("compare $proto: ${line:-no summary} (exit $rc)")
    ROWS+=("$(printf '| %-8s | %6s | %5s | %4s | %6s | %6s | %6s | %-7s | %-7s |' "$proto" "$nb" "$na" \
        "${same:-0}" "${unsure:-0}" "${faster:-0}" "${slower:-0}" "$rc" "$verdict")")
done

SPEC_LINE="not run (SPECS=0)"
if [ "${SPECS:-1}" = 1 ]; then
    step "gpu-tagged specs on this tree"
    # shellcheck disable=SC2086 # SPEC_FILES is a list of paths
    timed "gpu specs" 200 "$KB" tests/run.lua --tags=gpu $SPEC_FILES >"$RAW/gpu-specs.txt" 2>&1
    SPEC_LINE=$(tail -n 1 "$RAW/gpu-specs.txt" 2>/dev/null)
    case "$SPEC_LINE" in *" 0 failed"*) ;; *) FAILED=1 ;; esac
    grep -A12 '^Failure\|^Error' "$RAW/gpu-specs.txt" | head -n 60
fi

step "pack"
rm -rf "$KLUABENCH_CACHE/nvrtc"
cp "$OUT/env.txt" "$RAW/env.txt" 2>/dev/null
if tar -czf "$OUT/raw.tar.gz" -C "$OUT" raw; then echo "raw.tar.gz: $(du -h "$OUT/raw.tar.gz" | cut -f1)"
else note "pack: tar failed"; FAILED=1; fi

TABLE=$(
    echo "| protocol | before | after | SAME | UNSURE | FASTER | SLOWER | compare | verdict |"
    echo "|---|---|---|---|---|---|---|---|---|"
    for r in "${ROWS[@]}"; do echo "$r"; done
)
{
    echo "# Before/after (${SCRIPTS}, ${ROUNDS} interleaved rounds a side)"
    echo
    cat "$OUT/env.txt"
    echo
    echo "Sweep: scripts/{${SCRIPTS// /,}}.lua with each of: ${SWEEP_GROUPS} --protocol P (do_bench: --rep-ms $REP_MS)${HOST[*]:+, ${HOST[*]}}"
    echo "Wall time: $(($(date +%s) - T0)) s."
    echo
    for s in "${STATUS[@]}"; do echo "- $s"; done
    echo "- gpu specs: $SPEC_LINE"
    echo
    echo "$TABLE"
} >"$OUT/summary.md"
rm -rf "$RAW" "$OUT/env.txt" "$KLUABENCH_CACHE"

step "verdict (PASS: no FASTER or SLOWER point; files in $OUT: summary.md, log.txt, raw.tar.gz)"
echo "gpu specs: $SPEC_LINE"
echo "$TABLE"
[ "$FAILED" = 0 ] && echo "overall: PASS" || echo "overall: FAIL (see the lines above and summary.md)"
exit "$FAILED"
