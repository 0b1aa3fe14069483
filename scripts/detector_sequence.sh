#!/usr/bin/env bash
# Real sequences for the regression detector: COMMITS runs of scripts/planted_copy.lua, each in its own process, as
# CI would measure successive commits of unchanged code (docs/HISTORY.md, "Measured on real sequences").
#
#   bash scripts/detector_sequence.sh OUT_DIR [COMMITS] [PREFIX]
#   MIB=4,64 RUNS=3 PROTOCOL=cold bash scripts/detector_sequence.sh /tmp/seq 20 h100-a
#
# Writes OUT_DIR/PREFIX-NNN.jsonl (and its samples file) per commit; judge them with
# `kluabench scripts/history_real.lua OUT_DIR/PREFIX-[0-9][0-9][0-9].jsonl` (the names sort in commit order).
set -euo pipefail
case "${1:-}" in -h | --help | '') sed -n '2,/^[^#]/{/^#/s/^# \{0,1\}//p}' "$0"; [ -n "${1:-}" ]; exit $? ;; esac
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
OUT="$1"
COMMITS="${2:-20}"
PREFIX="${3:-seq}"
mkdir -p "$OUT"
for i in $(seq -f '%03g' 1 "$COMMITS"); do
  "$ROOT/build/kluabench" --quiet "$ROOT/scripts/planted_copy.lua" --mib "${MIB:-4,64}" --provider all \
    --runs "${RUNS:-3}" --protocol "${PROTOCOL:-cold}" --format jsonl --out "$OUT/$PREFIX-$i.jsonl"
done
