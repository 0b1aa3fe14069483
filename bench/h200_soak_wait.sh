#!/usr/bin/env bash
# Waits for the soak that bench/h200_checks.sh started (SOAK_MINUTES) and brings its output
# back: $OUT/soak.txt (copied every 5 s, so a cut-off call still returns what there is).
set -u
OUT=${OUT:-/tmp/kluabench-soak}
mkdir -p "$OUT"
[ -f /tmp/soak.txt ] || { echo "no soak running (/tmp/soak.txt absent): the machine is not the one that started it"; exit 2; }
while [ ! -f /tmp/soak.rc ]; do cp /tmp/soak.txt "$OUT/soak.txt"; sleep 5; done
cp /tmp/soak.txt "$OUT/soak.txt"
echo "soak exit status $(cat /tmp/soak.rc)"
tail -n 60 /tmp/soak.txt
