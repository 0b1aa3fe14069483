#!/usr/bin/env bash
# Our RoPE sweeps beside Liger-Kernel, HF eager and torch.compile on one GPU, and before/after a change when a baseline build is given.
#
# Liger-Kernel's two RoPE benchmarks in one run on a GPU machine (an H100 or an H200): our
# sweeps (llama4_rope, rope), the peers' (HF eager, Liger-Kernel, torch.compile), the
# before/after comparison of llama4_rope when a baseline build is in .baseline/, and the
# merged markdown tables.
#
# Run from the repository root, with build/kluabench built and the liger-kernel wheel in .whl/:
#   bash scripts/gpu_compare.sh            (--help prints this text)
# It builds nothing; it installs the wheels of .whl/ (liger-kernel) into a scratch folder.
# Without a GPU (nvidia-smi -L lists none) it refuses to run, with exit status 2. On exit, and
# on SIGINT or SIGTERM, it stops the step still running (its time-box and what that runs).
# Steps, each time-boxed (`timeout`), so a hang in one does not lose the others:
#   a. versions, clocks, kluabench's copy ceiling (scripts/ceilings.lua --force --json; it also
#      caches it, so our records carry % of the ceiling)
#   b. when .baseline/ holds a build of the pre-refactor commit (.baseline/build/kluabench,
#      .baseline/stdlib, .baseline/scripts): its llama4_rope sweep (before.jsonl), then ours
#      (ours_llama4_rope.jsonl), once each in that order (no interleaving: a drift over the
#      ~3 minutes between them reads as a change), then `kluabench compare` of the two
#      (table in the log); without a baseline, only ours. Then the small point in a CUDA graph
#      (its time with the launch gaps taken out), appended to ours_llama4_rope.jsonl after the compare.
#   c. our rope sweep (ours_rope.jsonl)
#   d. the peers: scripts/peers/rope_peers.py --kernel llama4_rope, then --kernel rope
#      (--append; the ceiling copy only once), into peers.csv
#   e. scripts/peers/merge.py: one table pair per kernel into table.md
# Everything lands in $OUT (at most 8 files come back; these are 7):
#   env.txt                 versions, clocks before and after, kluabench's copy ceiling
#   log.txt                 everything printed, the compare table and the summary included
#   before.jsonl            the baseline's llama4_rope bundles (only with .baseline/)
#   ours_llama4_rope.jsonl  our llama4_rope bundles (sweep, then the CUDA-graph point)
#   ours_rope.jsonl         our rope bundles
#   peers.csv               Liger's CSV of both kernels' peers plus the `copy` rows
#   table.md                the merged tables (printed before the summary)
# Time plan (from a run on an H200: the llama4_rope sweep of 48
# points took 67 s, 24 s of it in do_bench (0.5 s a point at rep 400 ms) and the rest in setup
# and the cpu reference checks; the CUDA-graph point 1 s; the peers 76 s, 41 s of it imports,
# checks and torch.compile's compilation, 35 s timing 72 cells and the copies): wheels and
# versions ~10 s, ceiling ~10 s, before ~80 s and ours ~80 s (72 points each: `--provider all`
# includes copy in both), compare and the graph point ~5 s, rope ~80 s, peers 2 x ~80 s: about
# 7.5 minutes at do_bench's rep 400 ms (Liger's), kept. REP_MS=200 would save about 80 s.
# The whole run is held to BUDGET_S (510 s = 8.5 min): each step's time-box is the smaller of
# its cap and what is left of the budget (less RESERVE_S for the merge and the summary); a
# step with under 5 s left is skipped and says so, so an overrun costs the last steps first
# (the rope peers).
# Knobs (environment):
#   OUT (/tmp/kluabench-compare), REP_MS (400; 200 halves the do_bench time), BUDGET_S (510),
#   RESERVE_S (20), BASELINE (.baseline), KLUABENCH (build/kluabench), PYTHON (python3);
#   caps in seconds: CEILING_TIMEOUT (60), BEFORE_TIMEOUT (110), OURS_TIMEOUT (120, each of
#   our sweeps), GRAPH_TIMEOUT (40), COMPARE_TIMEOUT (60), PEERS_TIMEOUT (130, each kernel);
#   SKIP_CEILING=1, SKIP_BEFORE=1, SKIP_OURS=1 (all of ours), SKIP_OURS_LLAMA4=1,
#   SKIP_GRAPH=1, SKIP_OURS_ROPE=1, SKIP_PEERS=1 (both), SKIP_PEERS_LLAMA4=1, SKIP_PEERS_ROPE=1;
#   OURS_ARGS, PEERS_ARGS: extra arguments for our scripts / rope_peers.py (e.g. "--quick").
# Exit status: 0 when every step that ran ended well (0; compare's 1, a regression, and the
# peers' 2, a provider skipped, count as well: the tables show them), 1 when one failed, timed
# out or was cut by the budget; the summary says which; 2 without a GPU; 130 or 143 when
# interrupted by SIGINT or SIGTERM.

set -u
case "${1:-}" in -h | --help) sed -n '2,/^[^#]/{/^#/s/^# \{0,1\}//p}' "$0"; exit 0 ;; esac
cd "$(dirname "$0")/.." || exit 1
if ! nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
    echo "gpu_compare.sh: no GPU here (nvidia-smi -L lists none); it times kernels on a GPU, run it on a GPU machine" >&2
    exit 2
fi
OUT=${OUT:-/tmp/kluabench-compare}
mkdir -p "$OUT" || exit 1
SCRATCH=$(mktemp -d "${TMPDIR:-/tmp}/gpu_compare.XXXXXX") || exit 1
export PYTHONUNBUFFERED=1
KB=${KLUABENCH:-build/kluabench}
PY=${PYTHON:-python3}
BASE=${BASELINE:-.baseline}
REP_MS=${REP_MS:-400}
BUDGET_S=${BUDGET_S:-510}
RESERVE_S=${RESERVE_S:-20}
T0=$(date +%s)
SWEEP=(--sweep all --mode all --provider all --rep-ms "$REP_MS" --format jsonl)
# our extra arguments and the peers', split on blanks as a shell would
read -r -a OURS_EXTRA <<<"${OURS_ARGS:-}"
read -r -a PEERS_EXTRA <<<"${PEERS_ARGS:-}"
SUMMARY=()
FAILED=0
CHILD= # the time-boxed step running now: its timeout process, which passes a signal on to its command

step() { printf '\n==== %s (+%ss)\n' "$*" "$(( $(date +%s) - T0 ))"; }
skipped() { SUMMARY+=("$(printf '%-26s %s' "$1" "skipped: $2")"); echo "skipped $1: $2"; }
want() { [ "${!1:-0}" != 1 ]; }  # want SKIP_X: true unless SKIP_X=1

# timed NAME CAP COMMAND...: runs COMMAND under a time-box of min(CAP, budget left), stdin
# closed; records its status and duration for the summary (a status outside OK_CODES, default
# "0", or no time left to start it, fails the run); returns its exit status (125 when it did
# not start). Its own lines go to stderr, so COMMAND's stdout can be redirected alone.
timed() {
    local name=$1 cap=$2 left limit t rc status
    shift 2
    left=$(( T0 + BUDGET_S - RESERVE_S - $(date +%s) ))
    limit=$(( cap < left ? cap : left ))
    if [ "$limit" -lt 5 ]; then
        skipped "$name" "out of the ${BUDGET_S} s budget" >&2
        FAILED=1
        return 125
    fi
    step "$name (time-box ${limit} s): $*" >&2
    t=$(date +%s)
    # in the background and waited for, so that a signal to this script runs its trap at once
    timeout -k 5 "$limit" "$@" </dev/null 3>&- 4>&- 5>&- &
    CHILD=$!
    wait "$CHILD"
    rc=$?
    CHILD=
    case $rc in
        0) status=ok ;;
        124 | 137) status="TIMED OUT after ${limit} s (what it wrote is kept)" ;;
        *) status="exit status $rc" ;;
    esac
    case " ${OK_CODES:-0} " in
        *" $rc "*) ;;
        *) FAILED=1 status="$status, FAILED" ;;
    esac
    echo "$name: $status" >&2
    SUMMARY+=("$(printf '%-26s %-50s %4s s' "$name" "$status" "$(( $(date +%s) - t ))")")
    return $rc
}

# rows FILE: its line count, or "missing"
rows() { if [ -s "$1" ]; then wc -l <"$1" | tr -d ' '; else echo missing; fi; }

install_wheels() {
    if ! ls .whl/*.whl >/dev/null 2>&1; then
        echo "no .whl/*.whl carried: the liger provider will be skipped"
        return
    fi
    if "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
        --target "$SCRATCH/site" .whl/*.whl; then
        export PYTHONPATH="$SCRATCH/site${PYTHONPATH:+:$PYTHONPATH}"
    else
        echo "wheel install failed: the liger provider will be skipped"
    fi
}

clocks() {
    nvidia-smi --query-gpu=name,driver_version,pstate,clocks.sm,clocks.max.sm,clocks.mem,clocks.max.mem,temperature.gpu,power.draw,power.limit \
        --format=csv 2>&1
}

versions() {
    date -u '+date %Y-%m-%dT%H:%M:%SZ'
    echo "commit $(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)"
    "$PY" - <<'EOF'
import importlib.metadata as md, sys
print("python", sys.version.split()[0])
for dist in ("torch", "triton", "transformers", "liger-kernel", "numpy"):
    try:
        print(dist, md.version(dist))
    except md.PackageNotFoundError:
        print(dist, "not installed")
try:
    import torch
    print("torch.cuda", torch.version.cuda, "|", torch.cuda.get_device_name(0))
except Exception as e:
    print("torch cuda check failed:", e)
EOF
    [ -x "$KB" ] && timeout 10 "$KB" -v </dev/null 2>&1 | head -3
    if [ -x "$BASE/build/kluabench" ]; then
        echo "baseline: $BASE/build/kluabench $(timeout 10 "$BASE/build/kluabench" -v </dev/null 2>&1 | head -1)"
    fi
    echo "clocks before:"
    clocks
    nvidia-smi -q -d CLOCK 2>&1 | sed -n '/Clocks$/,/Default Applications Clocks/p' | head -24
}

# a. the environment and kluabench's copy ceiling
environment() {
    step "wheels"
    install_wheels
    step "versions and clocks"
    versions | tee "$OUT/env.txt"
    if want SKIP_CEILING && [ -x "$KB" ]; then
        timed "copy ceiling" "${CEILING_TIMEOUT:-60}" "$KB" scripts/ceilings.lua --force --json >"$SCRATCH/ceiling.json"
        { echo "kluabench's copy ceiling (scripts/ceilings.lua --force --json):"; cat "$SCRATCH/ceiling.json"; } |
            tee -a "$OUT/env.txt"
    else
        skipped "copy ceiling" "SKIP_CEILING=1 or no $KB"
    fi
    # the between-session noise of this device, cached beside the ceiling:
    # compare widens a side measured in one session by it (docs/MEASUREMENT.md)
    if want SKIP_NOISE && [ -x "$KB" ]; then
        timed "session noise" "${NOISE_TIMEOUT:-90}" "$KB" scripts/run_noise.lua --sessions 5
    else
        skipped "session noise" "SKIP_NOISE=1 or no $KB"
    fi
}

# b. before and after the refactor (llama4_rope), then the CUDA-graph point
ours_llama4() {
    local have_base=0
    [ -x "$BASE/build/kluabench" ] && [ -f "$BASE/scripts/llama4_rope.lua" ] && have_base=1
    if [ "$have_base" = 1 ] && want SKIP_BEFORE; then
        timed "before: baseline llama4" "${BEFORE_TIMEOUT:-110}" "$BASE/build/kluabench" "$BASE/scripts/llama4_rope.lua" \
            "${SWEEP[@]}" --out "$OUT/before.jsonl" "${OURS_EXTRA[@]}"
    else
        skipped "before: baseline llama4" "no $BASE/build/kluabench with $BASE/scripts/llama4_rope.lua, or SKIP_BEFORE=1"
    fi
    if ! { want SKIP_OURS && want SKIP_OURS_LLAMA4 && [ -x "$KB" ]; }; then
        skipped "ours llama4_rope" "SKIP_OURS=1, SKIP_OURS_LLAMA4=1 or no $KB"
        return
    fi
    timed "ours llama4_rope" "${OURS_TIMEOUT:-120}" "$KB" scripts/llama4_rope.lua \
        "${SWEEP[@]}" --out "$OUT/ours_llama4_rope.jsonl" "${OURS_EXTRA[@]}"
    if [ -s "$OUT/before.jsonl" ] && [ -s "$OUT/ours_llama4_rope.jsonl" ]; then
        # exit status 1 = a regression beyond 5 %, which the table shows: not a failure of the run
        OK_CODES="0 1" timed "compare before/after" "${COMPARE_TIMEOUT:-60}" "$KB" compare "$OUT/before.jsonl" "$OUT/ours_llama4_rope.jsonl"
    else
        skipped "compare before/after" "before.jsonl or ours_llama4_rope.jsonl missing"
    fi
    if want SKIP_GRAPH; then
        # target 3: the small point in a CUDA graph (rotated inputs, so caches stay cold), fused and copy
        timed "ours llama4 graph point" "${GRAPH_TIMEOUT:-40}" "$KB" scripts/llama4_rope.lua --hidden 512 --seq 2048 \
            --mode backward --provider all --protocol graph --format jsonl --out "$OUT/ours_llama4_rope.jsonl"
    else
        skipped "ours llama4 graph point" "SKIP_GRAPH=1"
    fi
}

# c. our rope sweep
ours_rope() {
    if want SKIP_OURS && want SKIP_OURS_ROPE && [ -x "$KB" ]; then
        timed "ours rope" "${OURS_TIMEOUT:-120}" "$KB" scripts/rope.lua \
            "${SWEEP[@]}" --out "$OUT/ours_rope.jsonl" "${OURS_EXTRA[@]}"
    else
        skipped "ours rope" "SKIP_OURS=1, SKIP_OURS_ROPE=1 or no $KB"
    fi
}

# d. the peers, one process a kernel; the ceiling copy in the first that runs
peers() {
    local kernel knob args
    for kernel in llama4_rope rope; do
        knob=SKIP_PEERS_LLAMA4
        [ "$kernel" = rope ] && knob=SKIP_PEERS_ROPE
        if ! { want SKIP_PEERS && want "$knob"; }; then
            skipped "peers $kernel" "SKIP_PEERS=1 or $knob=1"
            continue
        fi
        args=(--kernel "$kernel" --out "$OUT/peers.csv" --rep-ms "$REP_MS" --append)
        grep -q '^copy,copy,copy,speed,' "$OUT/peers.csv" 2>/dev/null && args+=(--copy-big-gib 0)
        # exit 2 = a provider skipped (see its 'problems' lines); the rows measured are kept
        OK_CODES="0 2" timed "peers $kernel" "${PEERS_TIMEOUT:-130}" "$PY" scripts/peers/rope_peers.py "${args[@]}" "${PEERS_EXTRA[@]}"
    done
}

# e. the merged tables
merge() {
    local inputs=() f
    for f in "$OUT/ours_llama4_rope.jsonl" "$OUT/ours_rope.jsonl"; do
        [ -s "$f" ] && inputs+=(--ours "$f")
    done
    [ -s "$OUT/peers.csv" ] && inputs+=(--peers "$OUT/peers.csv")
    [ -s "$SCRATCH/ceiling.json" ] && inputs+=(--ceiling "$SCRATCH/ceiling.json")
    if [ "${#inputs[@]}" = 0 ]; then
        skipped "merge" "no results to merge"
        return
    fi
    RESERVE_S=0 timed "merge" 30 "$PY" scripts/peers/merge.py "${inputs[@]}" \
        --protocol "do_bench (rep $REP_MS ms, L2 flushed, quantiles 0.5/0.2/0.8)" --out "$OUT/table.md"
}

summary() {
    step "summary"
    printf '%-26s %-50s %6s\n' "step" "status" "time"
    printf '%s\n' "${SUMMARY[@]}"
    echo
    echo "rows: before.jsonl $(rows "$OUT/before.jsonl"), ours_llama4_rope.jsonl $(rows "$OUT/ours_llama4_rope.jsonl"), ours_rope.jsonl $(rows "$OUT/ours_rope.jsonl"), peers.csv $(rows "$OUT/peers.csv") (with its header)"
    [ -s "$OUT/table.md" ] && grep -E '^\*\*Target [23]\*\*|^- (fused|CUDA-graph)' "$OUT/table.md"
    echo "files in $OUT: $(cd "$OUT" && echo *)"
    echo "wall time $(( $(date +%s) - T0 )) s of the ${BUDGET_S} s budget"
}

main() {
    # a rerun into the same folder must not append to the last run's files
    rm -f "$OUT/env.txt" "$OUT/before.jsonl" "$OUT/ours_llama4_rope.jsonl" "$OUT/ours_rope.jsonl" \
        "$OUT/peers.csv" "$OUT/table.md"
    environment
    ours_llama4 || true
    ours_rope || true
    peers
    merge
    { echo "clocks after:"; clocks; } | tee -a "$OUT/env.txt"
    echo
    cat "$OUT/table.md" 2>/dev/null || echo "no table"
    summary
    return "$FAILED"
}

# finish: on every exit, the step still running is stopped and the scratch folder removed; the
# log (tee ignores the signals, so it keeps what an interrupted run printed) is waited for on a
# normal end only: after a signal, a redirection the signal cut short may still hold its pipe
# until this shell is gone, and tee ends then
finish() {
    if [ -n "$CHILD" ]; then
        kill -TERM "$CHILD" 2>/dev/null
        wait "$CHILD" 2>/dev/null
        echo "stopped the running step (pid $CHILD)" >&5
    fi
    rm -rf "$SCRATCH"
    exec 1>&3 2>&4 5>&-
    [ -n "$SIGNALLED" ] || wait "$TEE" 2>/dev/null
}
SIGNALLED=
exec 3>&1 4>&2
exec > >(trap '' INT TERM; exec tee "$OUT/log.txt") 2>&1
TEE=$!
exec 5>&1 # the log, for what the traps say while a step's output goes elsewhere
trap finish EXIT
trap 'SIGNALLED=INT; echo "interrupted (SIGINT)" >&5; exit 130' INT
trap 'SIGNALLED=TERM; echo "interrupted (SIGTERM)" >&5; exit 143' TERM
main
