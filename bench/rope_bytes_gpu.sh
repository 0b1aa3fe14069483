#!/usr/bin/env bash
# Issue 25, "Bytes or rate" (docs/perf-notes.md, registered before the run): at the neox (rope)
# cells where Liger's kernel is below our floor in ncu time (hidden 2048 / seq 2048 and hidden
# 8192 / seq 1024, forward), the DRAM and L2 traffic of Liger's _triton_rope, our fused kernel and
# our floor, each pass after ncu's own cache flush (--cache-control all), 5 calls a kernel.
# Judged by bench/rope_bytes_table.py (printed last). From the repository root on the GPU machine,
# with build/ carried and the liger-kernel wheel in .whl/ (as bench/rope_small.sh):
#   device run, carry ["build", ".whl"], timeout_s 200:  bash bench/rope_bytes_gpu.sh
# METRICS (ncu --metrics) replaces the list; the table reads the metrics of the default list.
# Outputs in $OUT: rope_bytes_raw.tar.gz (ncu_{ours,liger}_POINT.csv, log.txt) and bytes.md.
set -u
cd "$(dirname "$0")/.." || exit 1
OUT=${OUT:-/tmp/rope-bytes}
RAW="$OUT/raw"
mkdir -p "$RAW" || exit 1
NCU=${NCU:-$(command -v ncu || echo /usr/local/cuda/bin/ncu)}
PY=${PYTHON:-python3}
SCRATCH=$(mktemp -d "${TMPDIR:-/tmp}/rope_bytes.XXXXXX") || exit 1
exec > >(tee "$RAW/log.txt") 2>&1
if ls .whl/*.whl >/dev/null 2>&1 &&
    "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$SCRATCH/site" .whl/*.whl; then
    export PYTHONPATH="$SCRATCH/site${PYTHONPATH:+:$PYTHONPATH}"
fi
METRICS=${METRICS:-gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sectors_op_read.sum,lts__t_sectors_op_write.sum,sm__warps_active.avg.pct_of_peak_sustained_active}
for pt in H2048_T2048 H8192_T1024; do
    timeout -k 5 60 "$NCU" --clock-control none --cache-control all --metrics "$METRICS" \
        --kernel-name regex:'rope_(fused|flat|floor)' --csv --print-units base \
        build/kluabench bench/rope_kernel_times.lua ncu 5 "rope/$pt/forward" >"$RAW/ncu_ours_$pt.csv"
    echo "ncu ours $pt: exit $?"
    timeout -k 5 90 "$NCU" --clock-control none --cache-control all --metrics "$METRICS" \
        --kernel-name regex:'rope' --csv --print-units base \
        "$PY" scripts/peers/rope_peers_graph.py --what ncu --providers liger --kernel rope \
        --points "$pt" --modes forward --calls 5 >"$RAW/ncu_liger_$pt.csv"
    echo "ncu liger $pt: exit $?"
done
"$PY" bench/rope_bytes_table.py "$RAW" | tee "$OUT/bytes.md"
tar -czf "$OUT/rope_bytes_raw.tar.gz" -C "$RAW" .
rm -rf "$SCRATCH"
