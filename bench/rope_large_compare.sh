#!/usr/bin/env bash
# No regression at the large shapes (issue 25, target D): the fused provider of both RoPE
# benchmarks at hidden 8192, seq 4096, 8192 and 16384, every mode, --runs 3 sessions each,
# measured by a baseline build (.baseline/build/kluabench with its .baseline/stdlib and
# .baseline/scripts, e.g. `git archive <commit>` built with make) and by ours in the same call,
# then `kluabench compare before after` per benchmark (exit status 1: a regression).
# Builds nothing. From the repository root on the GPU machine (carry build, .baseline):
#   OUT=/tmp/rope-large bash bench/rope_large_compare.sh
# Outputs in $OUT: before_K.jsonl, after_K.jsonl, compare_K.txt for K in llama4_rope, rope.
# Knobs: OUT, BASELINE (.baseline), REP_MS (100), SEQS (4096,8192,16384), STEP_S (120: the
# time-box of each of the four sweeps).
set -u
cd "$(dirname "$0")/.." || exit 1
OUT=${OUT:-/tmp/rope-large}
BASE=${BASELINE:-.baseline}
REP_MS=${REP_MS:-100}
SEQS=${SEQS:-4096,8192,16384}
STEP_S=${STEP_S:-120}
mkdir -p "$OUT" || exit 1
if [ ! -x "$BASE/build/kluabench" ]; then
    echo "no baseline build at $BASE/build/kluabench" >&2
    exit 2
fi
ARGS=(--hidden 8192 --seq "$SEQS" --mode all --provider fused --runs 3 --rep-ms "$REP_MS" --format jsonl)
status=0
for k in llama4_rope rope; do
    rm -f "$OUT/before_$k.jsonl" "$OUT/after_$k.jsonl"
    timeout "$STEP_S" "$BASE/build/kluabench" "$BASE/scripts/$k.lua" "${ARGS[@]}" --out "$OUT/before_$k.jsonl" </dev/null >/dev/null || status=1
    timeout "$STEP_S" build/kluabench scripts/$k.lua "${ARGS[@]}" --out "$OUT/after_$k.jsonl" </dev/null >/dev/null || status=1
    timeout 60 build/kluabench compare "$OUT/before_$k.jsonl" "$OUT/after_$k.jsonl" </dev/null >"$OUT/compare_$k.txt" 2>&1
    rc=$?
    echo "compare $k: exit $rc"
    cat "$OUT/compare_$k.txt"
    [ "$rc" -le 1 ] || status=1
    [ "$rc" = 1 ] && status=1
done
exit "$status"
