#!/usr/bin/env bash
# GPU checks of the kernelindex records and what merged with them (carry ["build"]):
# the gpu specs (RoPE, tensors, tensor arithmetic and files, user kernels, the engine's
# reliability classes), both RoPE benchmarks on the H200 written as records and checked
# by verify, the real history sequence (bench/history_sequence.sh), and the first gpu
# specs again under compute-sanitizer memcheck. Outputs in $OUT: h200_records.log,
# records.tar.gz (the results files with their samples files, and the sequence's
# database, results and report), memcheck.txt.
set -u
cd "$(dirname "$0")/.." || exit 1
OUT=${OUT:-/tmp/kluabench-records}
mkdir -p "$OUT/records"
BIN=build/kluabench
R="$OUT/records"
main() {
echo "== gpu specs"; timeout 240 $BIN tests/run.lua --tags=gpu 2>&1 | tail -n 40
echo "== llama4_rope and rope on the H200, as records"
timeout 60 $BIN --quiet scripts/llama4_rope.lua --sweep hidden --mode forward --rep-ms 50 --format jsonl \
  --out "$R/llama4_rope.jsonl" 2>&1 | tail -n 5
timeout 60 $BIN --quiet scripts/rope.lua --hidden 512 --mode all --provider all --protocol cold --format jsonl \
  --out "$R/rope_cold.jsonl" 2>&1 | tail -n 5
timeout 60 $BIN verify --quiet "$R/llama4_rope.jsonl" "$R/rope_cold.jsonl"
echo "== history sequence (cold, 3 sessions, +5 % bytes from commit 6)"
timeout 200 bash bench/history_sequence.sh "$R/sequence" 2>&1 | tail -n 25
echo "== memcheck of the tensor arithmetic and RoPE gpu specs (full report in memcheck.txt)"
timeout 100 compute-sanitizer --tool memcheck --print-limit 20 $BIN tests/run.lua --tags=gpu \
  tests/tensor_math_spec.lua tests/rope_spec.lua >"$OUT/memcheck.txt" 2>&1
echo "exit status $?"
grep -E '^========= (Program hit|Invalid|ERROR SUMMARY|Error)' "$OUT/memcheck.txt" | head -10
}
main 2>&1 | tee "$OUT/h200_records.log"
rm -rf "$R/sequence/repo/.git"
tar czf "$OUT/records.tar.gz" -C "$OUT" records && rm -rf "$R"
