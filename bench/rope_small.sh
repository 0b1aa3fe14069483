#!/usr/bin/env bash
# Issue 25 in one call: our two RoPE sweeps (llama4_rope, rope; providers fused and floor) and
# the peers (Liger-Kernel, HF eager, torch.compile) timed in the same call under do_bench, kernel
# times at the launch-bound points (CUPTI via kb.trace, and Nsight Compute for ours and Liger),
# and graph mode there (ours --protocol graph, the peers in torch.cuda graphs); then the table
# of bench/rope_small_table.py, which judges the targets by the rule written in it.
#
# Builds nothing: it runs the carried build/kluabench (and installs the carried liger-kernel
# wheel from .whl/ into a scratch folder). From the repository root on the GPU machine:
#   device run, carry ["build", ".whl"], timeout_s 360:  bash bench/rope_small.sh
# Outputs in $OUT (the device tool returns 8 files at most: these are 3, and a combined call that
# leaves more of its own under $OUT must keep the total at 8, or the tar may be the one left out):
#   rope_small_raw.tar.gz   raw/: ours_llama4_rope.jsonl, ours_rope.jsonl (bundles with raw
#                           samples), ours_graph.jsonl, kernel_times.csv (kb.trace),
#                           ncu_ours.csv, ncu_liger.csv, ncu_ours_flush.csv, ncu_liger_flush.csv,
#                           peers.csv (Liger's CSV format),
#                           peers_graph.csv, env.txt, log.txt
#   table.md                the verdicts and the short tables (printed last)
#   log.txt                 everything printed
# Steps, each time-boxed; the whole held to BUDGET_S (default 300 s: 5 minutes), in order
# of what the targets need (a short budget cuts the last, reported-only steps first):
#   env (versions, clocks), ours do_bench sweeps, the peers' do_bench sweep, ncu of ours and of
#   Liger (the caches as each process's flush leaves them, then after ncu's own flush), kb.trace
#   kernel times, ours in graph mode, the peers in CUDA graphs, the table.
# Knobs: OUT (/tmp/rope-small), REP_MS (100), BUDGET_S (300), SWEEP_S (80: the time-box of each of
#   our two sweeps), KLUABENCH (build/kluabench),
#   PYTHON (python3), NCU (ncu), PEERS ("huggingface,liger,torch_compile"), STEPS (the steps to
#   run, of "sweeps peers ncu ncuflush trace graph"; default all: a call that repeats only the kernel
#   times gives STEPS="ncu trace", and the table then judges what those steps give).
set -u
cd "$(dirname "$0")/.." || exit 1
OUT=${OUT:-/tmp/rope-small}
RAW="$OUT/raw"
mkdir -p "$RAW" || exit 1
rm -f "$RAW"/* "$OUT/table.md" "$OUT/rope_small_raw.tar.gz"
SCRATCH=$(mktemp -d "${TMPDIR:-/tmp}/rope_small.XXXXXX") || exit 1
export PYTHONUNBUFFERED=1
KB=${KLUABENCH:-build/kluabench}
PY=${PYTHON:-python3}
NCU=${NCU:-$(command -v ncu || echo /usr/local/cuda/bin/ncu)}
REP_MS=${REP_MS:-100}
BUDGET_S=${BUDGET_S:-300}
SWEEP_S=${SWEEP_S:-80}
PEERS=${PEERS:-huggingface,liger,torch_compile}
STEPS=" ${STEPS:-sweeps peers ncu ncuflush trace graph} "
want() { [[ $STEPS == *" $1 "* ]]; }
T0=$(date +%s)
SUMMARY=()

# timed NAME CAP COMMAND...: COMMAND under min(CAP, what is left of the budget less 12 s for
# the table), stdin closed; its status and time go to the summary. Skipped when under 5 s remain.
timed() {
    local name=$1 cap=$2 left limit t rc
    shift 2
    left=$(( T0 + BUDGET_S - 12 - $(date +%s) ))
    limit=$(( cap < left ? cap : left ))
    if [ "$limit" -lt 5 ]; then
        SUMMARY+=("$(printf '%-22s skipped: out of the %s s budget' "$name" "$BUDGET_S")")
        return 125
    fi
    printf '\n==== %s (+%ss, time-box %ss)\n' "$name" "$(( $(date +%s) - T0 ))" "$limit" >&2
    t=$(date +%s)
    timeout -k 5 "$limit" "$@" </dev/null
    rc=$?
    SUMMARY+=("$(printf '%-22s exit %-3s %4s s' "$name" "$rc" "$(( $(date +%s) - t ))")")
    return $rc
}

# ncu_times CACHE SUFFIX CAP_OURS CAP_LIGER: the kernel times at the launch-bound points of ours
# (bench/rope_kernel_times.lua) and of Liger, ncu --cache-control CACHE, into ncu_ours$SUFFIX.csv and
# ncu_liger$SUFFIX.csv
ncu_times() {
    local cache=$1 suffix=$2 tag=${2:+ ${2#_}}
    timed "ncu ours$tag" "$3" "$NCU" --clock-control none --cache-control "$cache" --metrics gpu__time_duration.sum \
        --kernel-name regex:'rope_(fused|flat|floor)' --csv --print-units base \
        "$KB" bench/rope_kernel_times.lua ncu 5 >"$RAW/ncu_ours$suffix.csv"
    timed "ncu liger$tag" "$4" "$NCU" --clock-control none --cache-control "$cache" --metrics gpu__time_duration.sum \
        --kernel-name regex:'rope' --csv --print-units base \
        "$PY" scripts/peers/rope_peers_graph.py --what ncu --providers liger >"$RAW/ncu_liger$suffix.csv"
}

env_info() {
    date -u '+date %Y-%m-%dT%H:%M:%SZ'
    # a staged copy (no .git of its own) carries its commit in COMMIT
    echo "commit $(cat COMMIT 2>/dev/null || git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)"
    "$KB" -v 2>&1 | head -2
    "$PY" -c 'import importlib.metadata as m
for d in ("torch", "triton", "transformers", "liger-kernel"):
    try: print(d, m.version(d))
    except m.PackageNotFoundError: print(d, "not installed")'
    nvidia-smi --query-gpu=name,driver_version,pstate,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv
}

main() {
    if ls .whl/*.whl >/dev/null 2>&1 &&
        "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$SCRATCH/site" .whl/*.whl; then
        export PYTHONPATH="$SCRATCH/site${PYTHONPATH:+:$PYTHONPATH}"
    else
        echo "no liger-kernel wheel installed from .whl/: the liger provider will be skipped"
    fi
    env_info | tee "$RAW/env.txt"
    # in order of what the targets need, so that a short budget cuts the reported-only steps
    want sweeps && for k in llama4_rope rope; do
        # 48 bundles a sweep; 2026-12-04 (call 3) it wrote 40-41 in 80 s, seq 16384 not reached
        timed "ours $k" "$SWEEP_S" "$KB" scripts/$k.lua --sweep all --mode all --provider fused,floor \
            --rep-ms "$REP_MS" --format jsonl --out "$RAW/ours_$k.jsonl"
    done
    want peers && timed "peers" 90 "$PY" scripts/peers/rope_peers.py --kernel llama4_rope,rope --providers "$PEERS" \
        --rep-ms "$REP_MS" --no-copy --out "$RAW/peers.csv"
    want ncu && ncu_times none "" 25 35
    # the same kernel times with every kernel after ncu's own flush and invalidation of the caches
    # (--cache-control all), so that ours and Liger's start from one cache state, not from the
    # state that each process's flush kernel leaves (A'f of bench/rope_small_table.py)
    want ncuflush && ncu_times all _flush 40 45
    want trace && timed "kb.trace" 15 "$KB" bench/rope_kernel_times.lua trace 100 >"$RAW/kernel_times.csv"
    want graph && for k in llama4_rope rope; do
        timed "ours $k graph" 20 "$KB" scripts/$k.lua --hidden 512,2048 --seq 2048 --mode all \
            --provider fused,floor --protocol graph --format jsonl --out "$RAW/ours_graph.jsonl"
        timed "ours $k graph T1024" 12 "$KB" scripts/$k.lua --hidden 8192 --seq 1024 --mode all \
            --provider fused,floor --protocol graph --format jsonl --out "$RAW/ours_graph.jsonl"
    done
    want graph && timed "peers graph" 60 "$PY" scripts/peers/rope_peers_graph.py --what graph --out "$RAW/peers_graph.csv"
    nvidia-smi --query-gpu=clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv | sed 's/^/after: /' >>"$RAW/env.txt"
    printf '\n==== steps\n'
    printf '%s\n' "${SUMMARY[@]}"
    echo "wall time $(( $(date +%s) - T0 )) s of the ${BUDGET_S} s budget"
}

main 2>&1 | tee "$RAW/log.txt"
"$PY" bench/rope_small_table.py "$RAW" --out "$OUT/table.md" >/dev/null 2>"$SCRATCH/table.err" ||
    cat "$SCRATCH/table.err"
cp "$RAW/log.txt" "$OUT/log.txt"
tar -C "$OUT" -czf "$OUT/rope_small_raw.tar.gz" raw
rm -rf "$SCRATCH"
echo
cat "$OUT/table.md" 2>/dev/null || echo "no table"
