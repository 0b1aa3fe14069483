#!/usr/bin/env bash
# Issue 25, finding 6's experiment (docs/perf-notes.md, "The flat kernel: registered before the
# run"): the flat RoPE kernel of bench/rope_tune.cu (registers or cp.async staging, VPT units a
# thread) against the production plans, at the three launch-bound points, in event time (two
# processes, for the spread) and in Nsight Compute kernel time (one process). Liger's kernel
# times at the same points come from bench/rope_small.sh (ncu_liger.csv), run in the same call
# when the rule's third part is judged.
#
# Builds bench/rope_tune.cu with the device's nvcc (about 40 s). From the repository root:
#   device run, timeout_s 420:  bash bench/rope_flat_gpu.sh
# Judged here by bench/rope_flat_judge.lua tune-1.csv tune-2.csv (the registered rule).
# Outputs in $OUT: rope_flat_raw.tar.gz (tune-1.csv, tune-2.csv, ncu.csv, log.txt) and
# log.txt. Knobs: OUT (/tmp/rope-flat), SAMPLES (100), NCU (ncu).
set -u
cd "$(dirname "$0")/.." || exit 1
OUT=${OUT:-/tmp/rope-flat}
RAW="$OUT/raw"
mkdir -p "$RAW" build/bench || exit 1
NCU=${NCU:-$(command -v ncu || echo /usr/local/cuda/bin/ncu)}
SAMPLES=${SAMPLES:-100}
exec > >(tee "$RAW/log.txt") 2>&1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv
nvcc --version | tail -n 2
t=$(date +%s)
nvcc -O3 -std=c++17 -gencode arch=compute_90,code=sm_90 -o build/bench/rope_tune bench/rope_tune.cu || exit 1
echo "built in $(( $(date +%s) - t )) s"
for i in 1 2; do
    t=$(date +%s)
    timeout -k 5 120 build/bench/rope_tune --points small --samples "$SAMPLES" >"$RAW/tune-$i.csv"
    echo "tune process $i: exit $?, $(( $(date +%s) - t )) s, $(grep -c WRONG "$RAW/tune-$i.csv") rows WRONG"
done
t=$(date +%s)
# kernel time of every launch of the fused, floor and flat kernels (3 timed samples a variant)
timeout -k 5 150 "$NCU" --clock-control none --cache-control none --metrics gpu__time_duration.sum \
    --kernel-name regex:'rope_(flat|fused|floor)' --csv build/bench/rope_tune --points small --samples 3 \
    >"$RAW/ncu.csv" 2>"$RAW/ncu.err"
echo "ncu: exit $?, $(( $(date +%s) - t )) s"
tar -czf "$OUT/rope_flat_raw.tar.gz" -C "$RAW" .
cp "$RAW/log.txt" "$OUT/log.txt"
