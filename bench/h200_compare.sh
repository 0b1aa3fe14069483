#!/usr/bin/env bash
# Issue 4's side-by-side comparison in one run on the GPU machine: our llama4_rope sweep,
# the peers' sweep (HF eager, Liger-Kernel, torch.compile) and one merged markdown table.
#
# Run from the repository root with the built binary and the wheels carried:
#   device run, carry ["build", ".whl"], timeout_s 600:  bash bench/h200_compare.sh
# It builds nothing; it installs the carried wheels (liger-kernel) into /tmp/site.
# Everything lands in $OUT (at most 8 files come back):
#   ours.jsonl  kluabench's bundles, one a line (the raw results to commit)
#   ours.csv    only when the bundles could not be merged (a second run, Liger's CSV)
#   peers.csv   scripts/peers/llama4_rope_peers.py, Liger's CSV plus `copy` rows
#   table.md    scripts/peers/merge.py's table (printed last)
#   env.txt     versions, clocks before and after
#   log.txt     everything printed
# Knobs (environment): REP_MS (400), OURS_TIMEOUT (200 s), PEERS_TIMEOUT (330 s),
# PEERS_ARGS (extra arguments for the peers script, e.g. "--quick"), OURS_ARGS (extra
# arguments for scripts/llama4_rope.lua), SKIP_OURS=1 / SKIP_PEERS=1.
# Expected wall time about 4 to 5 minutes; the timeouts cap it at about 9.

set -u
cd "$(dirname "$0")/.." || exit 1
OUT=${OUT:-/tmp/kluabench-compare}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
REP_MS=${REP_MS:-400}
OURS_TIMEOUT=${OURS_TIMEOUT:-200}
PEERS_TIMEOUT=${PEERS_TIMEOUT:-330}
T0=$(date +%s)
step() { printf '\n==== %s (+%ss)\n' "$*" "$(( $(date +%s) - T0 ))"; }

main() {

step "wheels"
if ls .whl/*.whl >/dev/null 2>&1; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
        --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH} \
        || echo "wheel install failed: the liger provider will be skipped"
else
    echo "no .whl/*.whl carried: the liger provider will be skipped"
fi

clocks() {
    nvidia-smi --query-gpu=name,driver_version,pstate,clocks.sm,clocks.max.sm,clocks.mem,clocks.max.mem,temperature.gpu,power.draw,power.limit \
        --format=csv 2>&1
}
step "versions and clocks"
{
    date -u '+date %Y-%m-%dT%H:%M:%SZ'
    echo "commit $(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)"
    python3 - <<'EOF'
import importlib.metadata as md, sys
print("python", sys.version.split()[0])
for dist in ("torch", "triton", "transformers", "liger-kernel", "numpy"):
    try:
        print(dist, md.version(dist))
    except md.PackageNotFoundError:
        print(dist, "not installed")
try:
    import torch
    print("torch.cuda", torch.version.cuda, "|", torch.cuda.get_device_name(0))
except Exception as e:
    print("torch cuda check failed:", e)
EOF
    [ -x build/kluabench ] && timeout 10 build/kluabench -v </dev/null 2>&1 | head -3
    if [ -x build/kluabench ] && [ -f scripts/ceilings.lua ]; then
        echo "kluabench's own copy ceiling (scripts/ceilings.lua --force --json):"
        timeout 60 build/kluabench scripts/ceilings.lua --force --json </dev/null 2>&1 | head -30
    fi
    echo "clocks before:"
    clocks
    nvidia-smi -q -d CLOCK 2>&1 | sed -n '/Clocks$/,/Default Applications Clocks/p' | head -24
} | tee "$OUT/env.txt"

OURS=()
if [ "${SKIP_OURS:-0}" != 1 ]; then
    step "our sweep: build/kluabench scripts/llama4_rope.lua (jsonl)"
    if [ -x build/kluabench ] && [ -f scripts/llama4_rope.lua ]; then
        # shellcheck disable=SC2086
        timeout "$OURS_TIMEOUT" build/kluabench scripts/llama4_rope.lua --sweep all --mode all --provider all \
            --rep-ms "$REP_MS" --format jsonl --out "$OUT/ours.jsonl" ${OURS_ARGS:-}
        echo "kluabench exit status $?"
        # target 3: the small point in a CUDA graph (rotated inputs, so caches stay cold)
        timeout 60 build/kluabench scripts/llama4_rope.lua --hidden 512 --seq 2048 --mode backward \
            --provider fused --protocol graph --format jsonl --out "$OUT/ours.jsonl"
        echo "kluabench (graph) exit status $?"
        [ -s "$OUT/ours.jsonl" ] && OURS=(--ours "$OUT/ours.jsonl")
    else
        echo "build/kluabench or scripts/llama4_rope.lua missing: our sweep skipped"
    fi
fi

if [ "${SKIP_PEERS:-0}" != 1 ]; then
    step "peers' sweep: scripts/peers/llama4_rope_peers.py"
    # shellcheck disable=SC2086
    timeout "$PEERS_TIMEOUT" python3 scripts/peers/llama4_rope_peers.py --out "$OUT/peers.csv" \
        --rep-ms "$REP_MS" ${PEERS_ARGS:-}
    echo "peers exit status $? (0 all ran, 2 something skipped: see 'problems' above, 124 timed out)"
fi

step "merge"
PEERS=()
[ -s "$OUT/peers.csv" ] && PEERS=(--peers "$OUT/peers.csv")
PROTO="do_bench (rep $REP_MS ms, L2 flushed, quantiles 0.5/0.2/0.8)"
python3 scripts/peers/merge.py "${OURS[@]}" "${PEERS[@]}" --protocol "$PROTO" --require-fused --out "$OUT/table.md"
rc=$?
if [ "$rc" = 3 ] && [ -x build/kluabench ] && [ -f scripts/llama4_rope.lua ] && [ "${SKIP_OURS:-0}" != 1 ]; then
    step "our bundles gave no fused rows: our sweep again as Liger's CSV"
    # shellcheck disable=SC2086
    timeout "$OURS_TIMEOUT" build/kluabench scripts/llama4_rope.lua --sweep all --mode all --provider all \
        --rep-ms "$REP_MS" --format liger-csv --out "$OUT/ours.csv" ${OURS_ARGS:-}
    echo "kluabench exit status $?"
    python3 scripts/peers/merge.py --ours "$OUT/ours.csv" "${PEERS[@]}" --protocol "$PROTO" --out "$OUT/table.md"
fi

{ echo "clocks after:"; clocks; } | tee -a "$OUT/env.txt"
step "done; files in $OUT: $(cd "$OUT" && ls | tr '\n' ' ')"
echo
cat "$OUT/table.md" 2>/dev/null || echo "no table"
}

main 2>&1 | tee "$OUT/log.txt"
