#!/usr/bin/env bash
# The GPU checks that back the docs, in one call on the GPU machine (from the repository
# root, carry ["build"]): the gpu-tagged specs, issue 4's targets 1 and 3, the validation of
# the timing modes against Nsight Compute (with CUPTI kernel traces), and compute-sanitizer
# memcheck (leak check) and racecheck over every gpu spec. With SOAK_MINUTES set, it then
# starts the soak (scripts/soak.lua) in its own session, writing /tmp/soak.txt and
# /tmp/soak.rc, for bench/h200_soak_wait.sh to collect in the next call.
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
ldd $BIN
$BIN -e 'local kb = require "kluabench"; print("kb.trace.available()", kb.trace.available())'

step "gpu specs: $BIN tests/run.lua --tags=gpu"
timeout 200 $BIN tests/run.lua --tags=gpu >"$OUT/gpu_specs.txt" 2>&1
echo "exit status $?"; grep -E -A12 '^(Failure|Error) ->' "$OUT/gpu_specs.txt" | head -60; tail -n 3 "$OUT/gpu_specs.txt"

step "target 3: the small point under do_bench and in a CUDA graph, fused and copy"
for proto in do_bench graph; do
  timeout 60 $BIN scripts/llama4_rope.lua --hidden 512 --seq 2048 --mode backward --provider all \
    --protocol $proto --format jsonl --out "$OUT/target3.jsonl" </dev/null 2>&1 | tail -n 4
done
python3 scripts/peers/merge.py --ours "$OUT/target3.jsonl" 2>&1 | tail -n 4

step "target 1: bench/target1.lua"
timeout 120 $BIN bench/target1.lua --rep-ms 100 >"$OUT/target1.md" 2>&1
echo "exit status $?"; cat "$OUT/target1.md"

step "does kernel tracing change what it traces? bench/trace_overhead.lua"
timeout 60 $BIN bench/trace_overhead.lua 40
timeout 30 $BIN bench/trace_overhead.lua 200 512 2048

step "validation against Nsight Compute: scripts/validate_ncu.sh"
mkdir -p /tmp/validate
OUT=/tmp/validate CALLS=${CALLS:-20} timeout 240 bash scripts/validate_ncu.sh
echo "exit status $?"
cp /tmp/validate/report.md "$OUT/validate_report.md" 2>/dev/null
cp /tmp/validate/kluabench.jsonl "$OUT/validate.jsonl" 2>/dev/null
cp /tmp/validate/ncu.csv "$OUT/ncu.csv" 2>/dev/null
tail -n 40 /tmp/validate/validate.log 2>/dev/null

step "compute-sanitizer memcheck (leak check) and racecheck over every gpu spec"
# application-only: the sticky-error spec's child process faults on purpose.
# --report-api-errors no: the out-of-memory spec's failed cudaMalloc is deliberate.
# Left out: #timing specs (they assert durations, which instrumentation stretches) and
# #cupti ones (the sanitizer is itself CUPTI's one client, so kb.trace is unavailable).
{
  for tool in "memcheck --leak-check full --report-api-errors no" racecheck; do
    echo "== compute-sanitizer --tool $tool --target-processes application-only"
    # shellcheck disable=SC2086 # tool and its options
    timeout 200 compute-sanitizer --tool $tool --target-processes application-only --error-exitcode 9 \
      $BIN tests/run.lua --tags=gpu --exclude-tags=timing,cupti 2>&1 | grep -v -E '^\+*$' | tail -n 40
    echo "exit status ${PIPESTATUS[0]}"
  done
} >"$OUT/sanitizer.txt" 2>&1
grep -E '^== |ERROR SUMMARY|LEAK SUMMARY|RACECHECK SUMMARY|passed|exit status' "$OUT/sanitizer.txt"

if [ -n "${SOAK_MINUTES:-}" ]; then
  step "soak: $SOAK_MINUTES minutes, started in its own session (collect with bench/h200_soak_wait.sh)"
  rm -f /tmp/soak.txt /tmp/soak.rc
  setsid nohup bash -c "$BIN scripts/soak.lua --minutes $SOAK_MINUTES --sweep all --rep-ms 100 \
    >/tmp/soak.txt 2>&1; echo \$? >/tmp/soak.rc" </dev/null >/dev/null 2>&1 &
  sleep 2; head -n 5 /tmp/soak.txt
fi
step "done"
}

main 2>&1 | tee "$OUT/checks.log"
