#!/usr/bin/env bash
# The GPU checks that back the docs, in one call on the GPU machine (from the repository
# root, carry ["build"]): the gpu-tagged specs, issue 4's targets 1 and 3, the validation of
# the timing modes against Nsight Compute, and compute-sanitizer over the GPU specs.
# Outputs in $OUT (8 files at most come back): checks.log, gpu_specs.txt, target1.md,
# target3.jsonl, sanitizer.txt, validate_report.md, validate.jsonl, ncu.csv.
set -u
cd "$(dirname "$0")/.." || exit 1
OUT=${OUT:-/tmp/kluabench-checks}
mkdir -p "$OUT"
BIN=build/kluabench
T0=$(date +%s)
step() { printf '\n==== %s (+%ss)\n' "$*" "$(( $(date +%s) - T0 ))"; }

main() {
step "device"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw --format=csv
$BIN -v </dev/null

step "gpu specs: $BIN tests/run.lua --tags=gpu"
timeout 150 $BIN tests/run.lua --tags=gpu >"$OUT/gpu_specs.txt" 2>&1
echo "exit status $?"; tail -n 3 "$OUT/gpu_specs.txt"

step "target 3: the small point under do_bench and in a CUDA graph, fused and copy"
for proto in do_bench graph; do
  timeout 60 $BIN scripts/llama4_rope.lua --hidden 512 --seq 2048 --mode backward --provider all \
    --protocol $proto --format jsonl --out "$OUT/target3.jsonl" </dev/null 2>&1 | tail -n 4
done
python3 scripts/peers/merge.py --ours "$OUT/target3.jsonl" 2>&1 | tail -n 4

step "target 1: bench/target1.lua"
timeout 120 $BIN bench/target1.lua --rep-ms 100 >"$OUT/target1.md" 2>&1
echo "exit status $?"; cat "$OUT/target1.md"

step "validation against Nsight Compute: scripts/validate_ncu.sh"
mkdir -p /tmp/validate
OUT=/tmp/validate CALLS=${CALLS:-20} timeout 170 bash scripts/validate_ncu.sh
echo "exit status $?"
cp /tmp/validate/report.md "$OUT/validate_report.md" 2>/dev/null
cp /tmp/validate/kluabench.jsonl "$OUT/validate.jsonl" 2>/dev/null
cp /tmp/validate/ncu.csv "$OUT/ncu.csv" 2>/dev/null
tail -n 40 /tmp/validate/validate.log 2>/dev/null

step "compute-sanitizer memcheck and racecheck over the GPU specs of the kernels"
{
  for tool in memcheck racecheck; do
    echo "== compute-sanitizer --tool $tool"
    timeout 100 compute-sanitizer --tool $tool --error-exitcode 9 $BIN tests/run.lua --tags=gpu \
      tests/rope_spec.lua tests/tensor_spec.lua tests/timing_spec.lua 2>&1 | tail -n 25
    echo "exit status ${PIPESTATUS[0]}"
  done
} >"$OUT/sanitizer.txt" 2>&1
cat "$OUT/sanitizer.txt" | grep -E '==|ERROR SUMMARY|passed|exit status'
step "done"
}

main 2>&1 | tee "$OUT/checks.log"
