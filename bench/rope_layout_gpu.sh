#!/usr/bin/env bash
# Is the layout of the outputs what A' misses at the medium rope points? (issue 25; the rule is in
# docs/perf-notes.md, "In place or out of place", registered before the run.) Liger's _triton_rope
# writes each output over its input; kluabench's providers write new tensors. Our production
# kernel, the same bits, is timed both ways by bench/rope_tune.cu --rows prod --layout in|out, and
# Liger's kernel beside it, all in kernel time after ncu's own flush (--cache-control all), at rope
# hidden 2048 / seq 2048 and hidden 8192 / seq 1024, forward and backward. Event times of the same
# rows (the harness's memset flush) are reported beside them.
# From the repository root with build/ carried (build/bench/rope_tune built here) and the
# liger-kernel wheel under .whl/:
#   device run:  bash bench/rope_layout_gpu.sh
# About 3 minutes. Out ($OUT): layout.md (the table and the verdict), layout_raw.tar.gz (every ncu
# CSV and rope_tune CSV), log.txt.
# CACHE (default all) is ncu's --cache-control for every ncu run: none leaves each process's
# cache as its own flush left it (the harness's memset, Liger's script's zero_), as A' does.
set -u
cd "$(dirname "$0")/.." || exit 1
CACHE=${CACHE:-all}
OUT=${OUT:-$(mktemp -d)}
LOG=$OUT/log.txt
RAW=$OUT/layout_raw
mkdir -p "$RAW" || exit 1
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
SITE=$(mktemp -d)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$SITE" .whl/*.whl 2>>"$LOG"
POINTS="H2048_T2048 H8192_T1024"
for p in $POINTS; do
    for layout in out in; do
        timeout 120 build/bench/rope_tune --point "$p" --rows prod --layout "$layout" --samples 200 \
            >"$RAW/tune_${p}_$layout.csv" 2>>"$LOG"
        echo "rope_tune $p $layout: exit $?" | tee -a "$LOG"
        timeout -k 5 120 "$NCU" --clock-control none --cache-control "$CACHE" --metrics gpu__time_duration.sum \
            --kernel-name regex:'rope_(fused|flat|floor)' --csv --print-units base \
            build/bench/rope_tune --point "$p" --rows prod --layout "$layout" --samples 10 \
            >"$RAW/ncu_ours_${p}_$layout.csv" 2>>"$LOG"
        echo "ncu ours $p $layout: exit $?" | tee -a "$LOG"
    done
    for mode in forward backward; do
        PYTHONPATH=$SITE timeout -k 5 150 "$NCU" --clock-control none --cache-control "$CACHE" \
            --metrics gpu__time_duration.sum --kernel-name regex:'rope' --csv --print-units base \
            python3 scripts/peers/rope_peers_graph.py --what ncu --providers liger --kernel rope --points "$p" \
            --modes "$mode" --calls 10 >"$RAW/ncu_liger_${p}_$mode.csv" 2>>"$LOG"
        echo "ncu liger $p $mode: exit $?" | tee -a "$LOG"
    done
done
rm -rf "$SITE"
python3 bench/rope_layout_table.py "$RAW" >"$OUT/layout.md" 2>>"$LOG"
echo "rope_layout_table.py: exit $?" | tee -a "$LOG"
cat "$OUT/layout.md" | tee -a "$LOG"
tar -czf "$OUT/layout_raw.tar.gz" -C "$OUT" layout_raw && rm -rf "$RAW"
