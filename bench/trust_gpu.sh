#!/usr/bin/env bash
# Issue 21 on the GPU in one call (docs/TRUST.md): the exploit corpus's gpu
# spec, the honest kernels through every protocol (none may be flagged), and
# what the defences cost, before/after in the same call.
#
# From the repository root on the GPU machine, with these carried:
#   build/kluabench build/lua build/lib build/plugins build/exploits build/usercode .baseline
#   OUT=/tmp/trust bash bench/trust_gpu.sh
# .baseline: the commit before the defences, built (`git archive <commit> | tar -x -C .baseline`,
# then `make build/kluabench` there; the binary with its stdlib/ and scripts/ beside it).
#
# Parts (each time-boxed; a failing part is reported and the rest still runs):
#   1 spec     build/kluabench tests/run.lua --tags=gpu tests/exploits_gpu_spec.lua
#   2 honest   the built-in RoPE benchmarks (llama4_rope: every provider and mode; rope: fused),
#              examples/vector_add_benchmark.lua, examples/copy_benchmark.lua, bench/trust_honest.lua
#              (a plugin, NVRTC copy and RoPE, Triton's RoPE cubin) under do_bench, cold, hot and
#              graph, and the scripts that time on their own (examples/user_plugin.lua,
#              user_kernel_rope.lua, user_cubin.lua, bench/user_copy.lua, bench/triton_cubin.lua):
#              every bundle must say passed, every script exit 0
#   3 cost     llama4_rope fused, forward and backward, at hidden 8192 seq 4096 and at the
#              launch-bound hidden 512 seq 2048, do_bench and cold, 3 sessions a side
#              interleaved (before, after, ...); kluabench compare and bench/trust_cost.lua
#              (targets: <= 2 % at 8192/4096, <= 1 us at 512/2048)
# Out ($OUT, default a new temporary folder): trust_summary.md (the verdicts and tables) and
# trust_raw.tar.gz (every log, JSON Lines file and compare output). The verdict table is
# printed last. TRUST_CPU=1 runs parts 2 and 3 on the cpu backend at small sizes (a dry run;
# part 1 then only checks that the gpu spec is skipped cleanly). Knobs: SPEC_S, HONEST_S, COST_S
# (each part's seconds), BASELINE (.baseline), RUNS (3), PARTS ("spec honest cost": the parts to
# run; one left out is reported as NOT RUN).
set -u
cd "$(dirname "$0")/.." || exit 1
OUT=${OUT:-$(mktemp -d)}
BASE=${BASELINE:-.baseline}
RUNS=${RUNS:-3}
SPEC_S=${SPEC_S:-120}
HONEST_S=${HONEST_S:-170}
COST_S=${COST_S:-100}
PARTS=" ${PARTS:-spec honest cost} "
wants() { case "$PARTS" in *" $1 "*) return 0 ;; esac; return 1; }
KB=build/kluabench
mkdir -p "$OUT" || exit 1
WORK=$OUT/trust_raw
rm -rf "$WORK"
mkdir -p "$WORK/honest" "$WORK/cost" || exit 1
export KLUABENCH_RESULTS=$WORK/results KLUABENCH_CACHE=$WORK/cache
T0=$(date +%s)
LOG=$WORK/log.txt
say() { printf '==== %s (+%ss)\n' "$*" "$(($(date +%s) - T0))" | tee -a "$LOG"; }
VERDICT=()
verdict() { VERDICT+=("$(printf '| %s | %s | %s |' "$1" "$2" "$3")"); }
deadline() { echo $(($(date +%s) + $1)); }
left() { local d=$(($1 - $(date +%s))); [ "$d" -gt 0 ] && echo "$d" || echo 1; }

if [ -n "${TRUST_CPU:-}" ]; then
    export KLUABENCH_BACKEND=cpu
    ROPE_BIG=(--hidden 1024 --seq 256) ROPE_SMALL=(--hidden 512 --seq 128) MI=1 MIB=4 SEQ=64 REP=20
else
    export KLUABENCH_BACKEND=cuda
    ROPE_BIG=(--hidden 8192 --seq 4096) ROPE_SMALL=(--hidden 512 --seq 2048) MI=16 MIB=64 SEQ=2048 REP=100
fi
[ -x "$KB" ] || { echo "no $KB: carry build/kluabench"; exit 2; }

# ---- 1: the gpu spec of the exploit corpus -----------------------------------------------------
if wants spec; then
say "1 spec: tests/exploits_gpu_spec.lua"
# (the dry run leaves --tags out: on the cpu backend the gpu-tagged specs are then excluded)
TAGS=(--tags=gpu)
[ -n "${TRUST_CPU:-}" ] && TAGS=()
timeout "$SPEC_S" "$KB" tests/run.lua "${TAGS[@]}" tests/exploits_gpu_spec.lua </dev/null >"$WORK/exploits_gpu_spec.txt" 2>&1
rc=$?
tail -n 3 "$WORK/exploits_gpu_spec.txt" | tee -a "$LOG"
summary_line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$WORK/exploits_gpu_spec.txt" | tail -n 1)
if [ "$rc" = 124 ]; then verdict "exploits caught (gpu spec)" "TIMEOUT after ${SPEC_S}s" "exploits_gpu_spec.txt"
elif [ "$rc" = 0 ]; then verdict "exploits caught (gpu spec)" "PASS: ${summary_line:-?}" "exploits_gpu_spec.txt"
else verdict "exploits caught (gpu spec)" "FAIL (exit $rc): ${summary_line:-?}" "exploits_gpu_spec.txt"; fi

else verdict "exploits caught (gpu spec)" "NOT RUN (PARTS)" "-"; : > "$WORK/exploits_gpu_spec.txt"; fi

# ---- 2: honest kernels through every protocol --------------------------------------------------
if wants honest; then
say "2 honest kernels"
END=$(deadline "$HONEST_S")
TRITON_DIR=$WORK/triton
if [ -z "${TRUST_CPU:-}" ] && command -v python3 >/dev/null; then
    timeout 45 python3 bench/triton_rope.py --out "$TRITON_DIR" --seq "$SEQ" </dev/null >"$WORK/triton_rope_py.txt" 2>&1 \
        || echo "triton_rope.py failed (exit $?): the triton_rope provider will fail" | tee -a "$LOG"
fi
export TRITON_DIR
honest_fail=0 honest_runs=0
# harness NAME SCRIPT ARGS...: one sweep per protocol, bundles to honest/NAME_P.jsonl
harness() {
    local name=$1 script=$2
    shift 2
    local p
    for p in do_bench cold hot graph; do
        honest_runs=$((honest_runs + 1))
        timeout "$(left "$END")" "$KB" "$script" "$@" --protocol "$p" --rep-ms "$REP" --format jsonl \
            --out "$WORK/honest/${name}_$p.jsonl" </dev/null >"$WORK/honest/${name}_$p.txt" 2>&1
        local rc=$?
        if [ "$rc" != 0 ]; then
            honest_fail=$((honest_fail + 1))
            echo "honest $name $p: exit $rc: $(grep -E '^check:|: (policy_violation|suspected_reward_hack|incorrect_numerical|runtime_error|timeout):' "$WORK/honest/${name}_$p.txt" | head -n 3)" | tee -a "$LOG"
        fi
    done
}
harness llama4_rope scripts/llama4_rope.lua --mode all --provider all "${ROPE_SMALL[@]}"
harness rope scripts/rope.lua --mode all --provider fused "${ROPE_SMALL[@]}"
harness vector_add examples/vector_add_benchmark.lua --mi "$MI"
harness copy examples/copy_benchmark.lua --mib "$MIB"
if [ -n "${TRUST_CPU:-}" ]; then
    harness trust_honest bench/trust_honest.lua --provider plugin_scale_add --seq "$SEQ"
else
    harness trust_honest bench/trust_honest.lua --provider all --seq "$SEQ"
fi
# scripts that check (kluabench.check) and time on their own
standalone() {
    local name=$1
    shift
    honest_runs=$((honest_runs + 1))
    timeout "$(left "$END")" "$KB" "$@" </dev/null >"$WORK/honest/$name.txt" 2>&1
    local rc=$?
    if [ "$rc" != 0 ]; then
        honest_fail=$((honest_fail + 1))
        echo "honest $name: exit $rc: $(tail -n 2 "$WORK/honest/$name.txt" | tr '\n' ' ')" | tee -a "$LOG"
    fi
}
standalone user_plugin examples/user_plugin.lua
standalone user_kernel_rope examples/user_kernel_rope.lua
if [ -z "${TRUST_CPU:-}" ]; then
    standalone user_cubin examples/user_cubin.lua
    standalone user_copy bench/user_copy.lua 256
    standalone triton_cubin bench/triton_cubin.lua "$TRITON_DIR"
fi
# every bundle's status
flagged=$("$KB" - "$WORK"/honest/*.jsonl 2>&1 <<'LUA'
local cjson = require 'cjson'
local bad, n = {}, 0
for _, path in ipairs(arg) do
  -- the bundles, not the samples files beside them
  for line in (path:match('%.samples%.jsonl$') and function() end or io.lines(path)) do
    local b = cjson.decode(line)
    n = n + 1
    local s = b.run.spec.status
    if s ~= 'passed' then bad[#bad + 1] = path:match('[^/]*$') .. ' ' .. b.run.spec.sourceNative.externalId .. ': ' .. s end
  end
end
print(n .. ' bundles, ' .. #bad .. ' not passed')
for _, x in ipairs(bad) do print(x) end
LUA
)
echo "$flagged" | tee "$WORK/honest_status.txt" | tee -a "$LOG"
first=$(echo "$flagged" | head -n 1)
if [ "$honest_fail" = 0 ] && echo "$first" | grep -q ' 0 not passed'; then
    verdict "honest kernels not flagged" "PASS: $honest_runs runs, $first" "honest_status.txt"
else
    verdict "honest kernels not flagged" "FAIL: $honest_fail of $honest_runs runs exited non-zero; $first" "honest_status.txt, log.txt"
fi

else verdict "honest kernels not flagged" "NOT RUN (PARTS)" "-"; : > "$WORK/honest_status.txt"; fi

# ---- 3: the cost, before/after ----------------------------------------------------------------
if wants cost; then
say "3 cost"
END=$(deadline "$COST_S")
if [ ! -x "$BASE/build/kluabench" ]; then
    verdict "cost of the defences" "NOT RUN: no $BASE/build/kluabench" "-"
else
    for p in do_bench cold; do
        for i in $(seq "$RUNS"); do
            for side in before after; do
                if [ "$side" = before ]; then bin=$BASE/build/kluabench script=$BASE/scripts/llama4_rope.lua
                else bin=$KB script=scripts/llama4_rope.lua; fi
                for pt in big small; do
                    if [ "$pt" = big ]; then args=("${ROPE_BIG[@]}"); else args=("${ROPE_SMALL[@]}"); fi
                    timeout "$(left "$END")" "$bin" "$script" "${args[@]}" --provider fused --mode forward,backward \
                        --protocol "$p" --rep-ms "$REP" --format jsonl --out "$WORK/cost/${side}_$p.jsonl" \
                        </dev/null >>"$WORK/cost/${side}_$p.txt" 2>&1 \
                        || echo "cost $side $p $pt session $i: exit $?" | tee -a "$LOG"
                done
            done
        done
        timeout 60 "$KB" compare "$WORK/cost/before_$p.jsonl" "$WORK/cost/after_$p.jsonl" </dev/null \
            >"$WORK/cost/compare_$p.txt" 2>&1
        echo "compare $p: exit $?" >>"$WORK/cost/compare_$p.txt"
        timeout 60 "$KB" bench/trust_cost.lua "$WORK/cost/before_$p.jsonl" "$WORK/cost/after_$p.jsonl" </dev/null \
            >"$WORK/cost/cost_$p.md" 2>&1
        rc=$?
        cat "$WORK/cost/cost_$p.md" | tee -a "$LOG"
        if [ "$rc" = 0 ]; then verdict "cost, $p" "MET (<= 2 % at 8192/4096, <= 1 us at 512/2048)" "cost_$p.md, compare_$p.txt"
        else verdict "cost, $p" "MISSED or incomplete (exit $rc)" "cost_$p.md, compare_$p.txt"; fi
    done
fi

else verdict "cost of the defences" "NOT RUN (PARTS)" "-"; fi

# ---- pack ---------------------------------------------------------------------------------
say "pack"
{
    echo "# Issue 21 on $(${KB} -e 'print(kb.device_info().name)' 2>/dev/null) ($KLUABENCH_BACKEND backend)"
    echo
    echo "| part | verdict | files (in trust_raw.tar.gz) |"
    echo "|---|---|---|"
    printf '%s\n' "${VERDICT[@]}"
    echo
    echo "## gpu spec"
    echo '```'
    grep -E -A6 '^(Failure|Error) ->' "$WORK/exploits_gpu_spec.txt" | head -n 80
    tail -n 1 "$WORK/exploits_gpu_spec.txt"
    echo '```'
    echo "## honest kernels"
    echo '```'
    cat "$WORK/honest_status.txt"
    echo '```'
    for p in do_bench cold; do
        [ -f "$WORK/cost/cost_$p.md" ] && { echo "## cost, $p"; cat "$WORK/cost/cost_$p.md"; echo; echo '```'; cat "$WORK/cost/compare_$p.txt"; echo '```'; }
    done
} >"$OUT/trust_summary.md"
rm -rf "$WORK/cache"
tar -czf "$OUT/trust_raw.tar.gz" -C "$OUT" trust_raw && rm -rf "$WORK"
echo
echo "summary: $OUT/trust_summary.md, raw: $OUT/trust_raw.tar.gz ($(($(date +%s) - T0)) s)"
echo "| part | verdict | files |"
echo "|---|---|---|"
printf '%s\n' "${VERDICT[@]}"
