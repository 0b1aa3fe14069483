#!/usr/bin/env bash
# E4b (docs/MEASUREMENT.md, registered before its run): the launch overhead with the C loop's and
# kernel:launch's batches interleaved in turns, three processes a call, each followed by one of
# E4's block design with the same seed (reported, not judged). From the repository root with
# build/ carried:
#   device run:  SEEDS="11 12 13" bash bench/e4b_gpu.sh     (the second call: SEEDS="14 15 16")
# About 2 minutes. Out ($OUT, default a new temporary folder): e4b.tar.gz (every batch as CSV and
# each process's table) and log.txt, which ends with the count of --interleave batch processes
# that met both targets. Exit status 0 when all of them did.
set -u
cd "$(dirname "$0")/.." || exit 1
OUT=${OUT:-$(mktemp -d)}
SEEDS=${SEEDS:-11 12 13}
KB=${KB:-build/kluabench}
LOG=$OUT/log.txt
DIR=$OUT/e4b
mkdir -p "$DIR" || exit 1
met=0 n=0
for seed in $SEEDS; do
    for design in batch block; do
        name=$design-$seed
        timeout 90 "$KB" bench/launch_overhead_user.lua --interleave "$design" --seed "$seed" \
            --out "$DIR/$name.csv" </dev/null >"$DIR/$name.txt" 2>&1
        rc=$?
        {
            echo "== --interleave $design --seed $seed: exit $rc"
            grep -E '^\| (kernel:launch|C loop|the packing)|^targets|^host:' "$DIR/$name.txt"
        } | tee -a "$LOG"
        if [ "$design" = batch ]; then
            n=$((n + 1))
            grep -q '^targets (the median and the largest round ratio): met' "$DIR/$name.txt" && met=$((met + 1))
        fi
    done
done
tar -czf "$OUT/e4b.tar.gz" -C "$OUT" e4b && rm -rf "$DIR"
echo "E4b: $met of $n --interleave batch processes met both targets (seeds $SEEDS)" | tee -a "$LOG"
[ "$met" -eq "$n" ]
