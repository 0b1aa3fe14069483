#!/usr/bin/env bash
# Validation of kluabench's timing against Nsight Compute, on the GPU machine:
#   scripts/validate_ncu.sh            (from the repository root)
# Uses build/kluabench (built here if absent), times the fused and reference Llama 4 RoPE
# kernels at three sizes in the cold and graph modes (scripts/validate_ncu.lua
# measure), profiles the same kernels on the same inputs with
#   ncu --clock-control none --cache-control none --metrics gpu__time_duration.sum
# (the target flushes the L2 before every call itself, as the cold mode does),
# and prints the comparison (agreement: within max(5 %, 1 us)). Exit status 1
# when a cold median disagrees with ncu.
# Outputs go to $OUT (default /tmp/kluabench-validate): kluabench.jsonl, ncu.csv,
# report.md, validate.log.
# Exit status 2 without a GPU (nvidia-smi -L lists none).
set -euo pipefail
cd "$(dirname "$0")/.."
if ! nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
  echo "validate_ncu.sh: no GPU here (nvidia-smi -L lists none); it checks GPU timings against Nsight Compute, run it on a GPU machine" >&2
  exit 2
fi
OUT=${OUT:-/tmp/kluabench-validate}
mkdir -p "$OUT"
LOG="$OUT/validate.log"
: > "$LOG"
BUILD=${BUILD:-build}
CALLS=${CALLS:-30}
GRAPH_CALLS=${GRAPH_CALLS:-10}
SIZES=${SIZES:-small,medium,large}
NCU=${NCU:-$(command -v ncu || echo /usr/local/cuda/bin/ncu)}

# The GPU machine has no Lua or OpenSSL archives to link with: use the binary
# built on the Debian machine and carried with the run (carry ["build"]).
if [ ! -x "$BUILD/kluabench" ]; then
  echo "== build" | tee -a "$LOG"
  make BUILD="$BUILD" CUDA=1 -j"$(nproc)" >>"$LOG" 2>&1 || { tail -30 "$LOG"; exit 2; }
fi
BIN="$BUILD/kluabench"
{ nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv || true; } >>"$LOG" 2>&1
"$BIN" -e 'local kb=require"kluabench"; local i=kb.device_info(); print(i.name, "L2", i.l2_bytes, "nvml", kb.nvml.available())' | tee -a "$LOG"

echo "== kluabench: cold (interleaved, twice) and graph" | tee -a "$LOG"
"$BIN" scripts/validate_ncu.lua measure --sizes "$SIZES" --out "$OUT/kluabench.jsonl" 2>&1 | tee -a "$LOG"

echo "== ncu" | tee -a "$LOG"
: > "$OUT/ncu.csv"
for size in ${SIZES//,/ }; do
  for impl in fused reference; do
    echo "# $size $impl" >> "$OUT/ncu.csv"
    "$NCU" --clock-control none --cache-control none --metrics gpu__time_duration.sum \
      --kernel-name regex:'rope_(fused|flat)|ref_' --csv --print-units base \
      "$BIN" scripts/ncu_target.lua --size "$size" --impl "$impl" --calls "$CALLS" \
      >> "$OUT/ncu.csv" 2>>"$LOG"
  done
done

echo "== ncu: the graph mode's graphs, profiled whole (--graph-profiling graph)" | tee -a "$LOG"
for size in ${SIZES//,/ }; do
  for impl in fused reference; do
    echo "# $size $impl graph" >> "$OUT/ncu.csv"
    "$NCU" --graph-profiling graph --clock-control none --cache-control none \
      --metrics gpu__time_duration.sum --csv --print-units base \
      "$BIN" scripts/ncu_target.lua --size "$size" --impl "$impl" --graph yes --calls "$GRAPH_CALLS" \
      >> "$OUT/ncu.csv" 2>>"$LOG"
  done
done

echo "== report" | tee -a "$LOG"
set +e
"$BIN" scripts/validate_ncu.lua report --kb "$OUT/kluabench.jsonl" --ncu "$OUT/ncu.csv" --calls "$CALLS" \
  --graph-calls "$GRAPH_CALLS" | tee "$OUT/report.md"
rc=${PIPESTATUS[0]}
exit "$rc"
