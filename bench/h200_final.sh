#!/usr/bin/env bash
# Last GPU checks of the session (carry ["build"]): what a CUDA event pair and a launch add
# to an interval (bench/event_overhead.lua, and ncu on an empty kernel), the per-call host
# cost from Lua, compute-sanitizer memcheck with its full report, the gpu specs again, and
# a short soak when scripts/soak.lua exists. Outputs in $OUT: final.log, memcheck.txt, soak.txt.
set -u
cd "$(dirname "$0")/.." || exit 1
OUT=${OUT:-/tmp/kluabench-final}
mkdir -p "$OUT"
BIN=build/kluabench
SOAK_S=${SOAK_S:-150}
main() {
echo "== event overhead"; timeout 60 $BIN bench/event_overhead.lua 2000
echo "== ncu: an empty kernel (kb.spin(0)) x 20"
timeout 60 ncu --clock-control none --metrics gpu__time_duration.sum --csv --print-units base \
  $BIN -e 'local kb = require "kluabench"; for i = 1, 20 do kb.spin(0); kb.synchronize() end' 2>&1 \
  | grep -E 'gpu__time_duration' | awk -F'","' '{print $NF}' | tr -d '"' | sort -n | awk '{a[NR]=$1} END {print "ncu empty-kernel gpu__time_duration ns: n", NR, "median", a[int((NR+1)/2)], "min", a[1], "max", a[NR]}'
echo "== launch overhead"; timeout 60 $BIN scripts/launch_overhead.lua
echo "== gpu specs"; timeout 120 $BIN tests/run.lua --tags=gpu 2>&1 | tail -n 3
echo "== memcheck (full report in memcheck.txt)"
timeout 150 compute-sanitizer --tool memcheck --print-limit 20 $BIN tests/run.lua --tags=gpu \
  tests/rope_spec.lua tests/tensor_spec.lua tests/timing_spec.lua >"$OUT/memcheck.txt" 2>&1
echo "exit status $?"
grep -E '^========= (Program hit|Invalid|ERROR SUMMARY|Error)|========= +(at|Saved host backtrace)' "$OUT/memcheck.txt" | head -20
if [ -f scripts/soak.lua ]; then
  echo "== soak ${SOAK_S}s"
  timeout $((SOAK_S + 90)) $BIN scripts/soak.lua --seconds "$SOAK_S" --sweep all --rep-ms 100 >"$OUT/soak.txt" 2>&1
  echo "exit status $?"; tail -n 30 "$OUT/soak.txt"
fi
}
main 2>&1 | tee "$OUT/final.log"
