#!/usr/bin/env bash
# The device calls for issues 25 and 26 (prepared 2026-12-04, third session), from the repository
# root with build/ carried (`bash bench/make_carry.sh`, then in the call
# `tar -xzf build/carry.tgz -C build`); the rules were committed before the first:
#   part 1 (about 4.5 minutes; ran as call 1 of evidence/2026-12-04-s32-h200):
#     issue 26, E4b (docs/MEASUREMENT.md): bench/e4b_gpu.sh, seeds 11-13; then issue 25, the flat
#     kernel's second rule (docs/perf-notes.md): bench/refactor_compare_gpu.sh, build/baseline
#     (main at fcd5b7b) against this build, llama4_rope and rope, fused, forward and full, hidden
#     2048 / seq 2048 and hidden 8192 / seq 1024, 2048, 4096, cold, 3 rounds a side, then the
#     rope gpu specs; judged afterwards from compare-cold.txt
#   part 2 (about 5 minutes): E4b's second call (seeds 14-16), then every gpu spec (the second
#     rule's part 1 before the merge)
#   part 3 (about 5.5 minutes, carry ["build/carry.tgz", ".whl"]): bench/rope_small.sh (A' and the
#     peers in one call, with the flat kernel adopted)
#   part 4 (about 3 minutes, carry as part 3): the kernel times again, ncu now naming the flat
#     kernel (part 3's ncu filter left rope_flat out, so its ncu column is void): rope_small.sh
#     with STEPS="ncu trace", then bench/rope_bytes_gpu.sh (bytes or rate, with the flat kernel)
#   part 5 (about 4 minutes, carry as part 3): the rope gpu specs, then rope_small.sh with
#     STEPS="ncu trace graph" (a second reading of the kernel times; the peers' CUDA graphs, whose
#     backward failed in part 3, captured on the stream their forward ran on)
#   part 6 (about 2 minutes, carry as part 1 with build/baseline = 6479055): the flat kernel's third
#     rule (docs/perf-notes.md): the before/after compare at hidden 512 / seq 2048, both benchmarks,
#     forward and full, cold, 3 rounds a side, then the gpu specs of rope_fwd_bwd, rope and trace
#   part 7 (about 2 minutes, as part 6): the third rule corrected (docs/perf-notes.md), its
#     fresh run: hidden 512 / seq 2048, forward, backward and full
#   part 8 (about 9 minutes, carry ["build/carry.tgz", ".whl"]; prepared 2026-12-04, fourth
#     session): one of the three calls of issue 25's table (docs/perf-notes.md, "Three calls of the
#     table"): rope_small.sh with the sweeps, the peers, ncu without and with ncu's flush and
#     kb.trace (graph mode left out: reported in part 5), BUDGET_S 545, each sweep time-boxed at
#     160 s
#   part 9 (about 4 minutes, carry ["build/carry.tgz", ".whl"], build/bench/rope_tune built here):
#     the token kernel (docs/perf-notes.md, "The token kernel"): two processes of rope_tune
#     --points small --samples 200, judged by rope_flat_judge.lua --family token; then
#     rope_bytes_gpu.sh with launch metrics (Liger's registers, waves and instructions)
#   part 10 (about 3 minutes, as part 9): the token kernel held to 64 registers (docs/perf-notes.md;
#     reported, not judged): part 9's two rope_tune processes with its rows, then the kernel
#     times after ncu's flush at rope hidden 8192 / seq 1024 forward of the token variants, the
#     production flat kernel and Liger's _triton_rope (ncu-summary.txt)
#   part 11 (as part 10, the harness rebuilt): the token kernel under three register bounds (the
#     default, 72 and 64; docs/perf-notes.md, reported only), the same steps as part 10 (whose
#     ncu filter named the one entry point that the harness then had)
#   part 12 (about 1 minute, as part 9): the machine code to read here, where there is no GPU:
#     Liger's kernels as Triton compiled them for the H200 (its cache after rope_peers_graph.py
#     ran rope at hidden 2048 / seq 2048 and hidden 8192 / seq 1024, forward), and rope_tune's
#     and kluabench's kernels, through cuobjdump -sass (sass.tar.gz)
#   part 13 (about 1 minute, carry ["build/carry.tgz"]): where a sweep's bundle spends its host
#     time at the large shapes (bench/host_time_probe.lua around one rope bundle, fused forward,
#     hidden 8192 at seq 8192 and 16384; reported): probe-T8192.txt, probe-T16384.txt
#   part 14 (about 3 minutes, carry ["build/carry.tgz"] with build/prev = aecb6ee): the
#     comparisons through the pinned staging buffers: the gpu specs of the files that compare
#     tensors, bench/compare_speed.lua with aecb6ee's build (whole tensors through pageable
#     memory) and this one in turns, twice, then part 13's probe at seq 16384 (gpu_specs.txt,
#     compare_speed.txt, probe-T16384.txt)
#   part 15 (about 2 minutes, as part 14): host copies through the staging buffer too (t:to('cpu'),
#     t:digest(), copy_ across devices): the gpu specs of the files that copy or compare tensors,
#     compare_speed.lua (now with to('cpu') and digest rows) with aecb6ee's build and this one, and
#     the probe at seq 16384
#   part 16 (about 5 minutes, carry ["build/carry.tgz"] with build/prev = 16cf678; prepared
#     2026-12-04, fifth session): the staging buffers sized to the operands and t:digest slice by
#     slice: the gpu specs of part 15's files, compare_speed.lua with 16cf678's build and this one,
#     the probe at seq 16384; then bench/launch_affinity_gpu.sh (issue 26, reported only: does
#     binding the process to one CPU steady kernel:launch's ratio to the C loop)
#   part 17 (about 5 minutes, carry ["build/carry.tgz"]): E4b again (docs/MEASUREMENT.md, "E4b
#     again, with the host line"), seeds 41-43, then every gpu spec
#   part 18 (about 1 minute, as part 17): E4b again, seeds 44-46
#   part 19 (about 4 minutes, carry ["build/carry.tgz", ".whl"], build/bench/rope_tune built here):
#     in place or out of place (docs/perf-notes.md): bench/rope_layout_gpu.sh
#   part 20 (as part 19): the same with CACHE=none, in the cache state that A' is judged in
#   part 21 (about 6 minutes, carry ["build/carry.tgz"], build/bench/rope_tune built here): E5 again
#     (docs/MEASUREMENT.md): bench/triton_alternate.py --rounds 5, twice; then rope_tune --rows prod
#     in both layouts at the two medium points (event times, the refactored harness's checks)
#   device run, timeout_s 600:  bash bench/device_next.sh PART
# Out ($OUT): part 1 e4b.tar.gz, flat2-raw.tar.gz, flat2-summary.md, log.txt; part 2 e4b.tar.gz,
# gpu_specs.txt, log.txt; parts 3 and 8 rope_small_raw.tar.gz, table.md, log.txt; part 4 those of
# part 3 and rope_bytes_raw.tar.gz, bytes.md; part 9 tune-1.csv, tune-2.csv, token-verdict.txt,
# rope_bytes_raw.tar.gz, bytes.md, log.txt; part 10 tune-1.csv, tune-2.csv, token-verdict.txt,
# ncu_tune.csv, ncu_liger.csv, ncu-summary.txt, log.txt; part 11 those of part 10; part 12
# sass.tar.gz, log.txt; part 13 probe-T8192.txt, probe-T16384.txt, log.txt; part 14 gpu_specs.txt,
# compare_speed.txt, probe-T16384.txt, log.txt; part 15 those of part 14; part 16 those of part 14,
# host.txt and affinity.tar.gz; part 17 e4b.tar.gz, gpu_specs.txt, log.txt; part 18 e4b.tar.gz, log.txt;
# parts 19 and 20 layout.md, layout_raw.tar.gz, log.txt; part 21 e5.tar.gz, tune-layout.csv, log.txt.
set -u
cd "$(dirname "$0")/.." || exit 1
PART=${1:-1}
OUT=${OUT:-$(mktemp -d)}
LOG=$OUT/log.txt
T0=$(date +%s)
say() { echo "==== $* (+$(($(date +%s) - T0)) s)" | tee -a "$LOG"; }
# in_folder NAME CAP FILES SCRIPT: runs bench/SCRIPT with OUT=$OUT/NAME under `timeout CAP` (the
# caller's variables, e.g. STEPS and BUDGET_S, exported before it), moves FILES (space-separated)
# up to $OUT and appends the script's log to log.txt
in_folder() {
    OUT=$OUT/$1 timeout "$2" bash "bench/$4" >/dev/null 2>&1
    echo "$4: exit $?" | tee -a "$LOG"
    for f in $3; do mv "$OUT/$1/$f" "$OUT/" 2>/dev/null; done
    cat "$OUT/$1/log.txt" >>"$LOG" 2>/dev/null
    rm -rf "${OUT:?}/$1"
}
# flat_compare NAME SWEEP_GROUPS SPEC_FILES BUDGET_S: bench/refactor_compare_gpu.sh, build/baseline
# against this build, llama4_rope and rope, cold, 3 rounds a side; out NAME-raw.tar.gz,
# NAME-summary.md, and its log appended to log.txt
flat_compare() {
    mkdir -p "$OUT/$1"
    OUT=$OUT/$1 SCRIPTS="llama4_rope rope" PROTOCOLS=cold ROUNDS=3 CEILING=0 SWEEP_GROUPS=$2 \
        SPEC_FILES=$3 BUDGET_S=$4 bash bench/refactor_compare_gpu.sh >/dev/null 2>&1
    echo "refactor_compare_gpu.sh: exit $?" | tee -a "$LOG"
    mv "$OUT/$1/raw.tar.gz" "$OUT/$1-raw.tar.gz" 2>/dev/null
    mv "$OUT/$1/summary.md" "$OUT/$1-summary.md" 2>/dev/null
    cat "$OUT/$1/log.txt" >>"$LOG" 2>/dev/null
    rm -rf "${OUT:?}/$1"
}
# token_tune: two processes of rope_tune --points small, judged by the token kernel's rule
token_tune() {
    say "1 the token kernel: two processes of rope_tune"
    for i in 1 2; do
        timeout 150 build/bench/rope_tune --points small --samples 200 >"$OUT/tune-$i.csv" 2>>"$LOG"
        echo "rope_tune $i: exit $?" | tee -a "$LOG"
    done
    build/kluabench bench/rope_flat_judge.lua --family token --limit 0.98 --styles neox "$OUT/tune-1.csv" \
        "$OUT/tune-2.csv" >"$OUT/token-verdict.txt" 2>&1
    echo "judge: exit $?, $(tail -n 1 "$OUT/token-verdict.txt")" | tee -a "$LOG"
}
# token_run: token_tune (the verdict reported), then the kernel times after ncu's flush at rope hidden 8192 / seq 1024 forward of the neox forward token
# kernels at K = 5 (both entry points), the production flat kernel and Liger's _triton_rope
token_run() {
    token_tune
    say "2 kernel times after ncu's flush, rope hidden 8192 / seq 1024 forward"
    NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
    SITE=$(mktemp -d)
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$SITE" .whl/*.whl
    M=gpu__time_duration.sum,launch__registers_per_thread,launch__grid_size,launch__waves_per_multiprocessor
    timeout -k 5 120 "$NCU" --clock-control none --cache-control all --metrics "$M" --kernel-name-base mangled \
        --kernel-name regex:'tune_token_kernel[_a-z]*ILi1ELi0ELi5|rope_flat_kernelIL8kb_dtype0ELi8ELi1ELi0ELi1E' --csv \
        --print-units base build/bench/rope_tune --point H8192_T1024 --samples 10 --no-flat >"$OUT/ncu_tune.csv" 2>>"$LOG"
    echo "ncu rope_tune: exit $?" | tee -a "$LOG"
    PYTHONPATH=$SITE timeout -k 5 120 "$NCU" --clock-control none --cache-control all --metrics "$M" \
        --kernel-name regex:'rope' --csv --print-units base python3 scripts/peers/rope_peers_graph.py --what ncu \
        --providers liger --kernel rope --points H8192_T1024 --modes forward --calls 10 >"$OUT/ncu_liger.csv" 2>>"$LOG"
    echo "ncu liger: exit $?" | tee -a "$LOG"
    python3 - "$OUT/ncu_tune.csv" "$OUT/ncu_liger.csv" >"$OUT/ncu-summary.txt" 2>&1 <<'PY'
import collections, csv, io, statistics, sys
for path in sys.argv[1:]:
    rows = list(csv.DictReader(io.StringIO("".join(l for l in open(path) if l.startswith('"')))))
    by = collections.defaultdict(lambda: collections.defaultdict(dict))
    for r in rows:
        by[r["Kernel Name"]][r["ID"]][r["Metric Name"]] = r["Metric Value"].replace(",", "")
    for name, launches in by.items():
        groups = collections.defaultdict(list)
        for m in launches.values():
            groups[(m.get("launch__grid_size"), m.get("launch__registers_per_thread"), m.get("launch__waves_per_multiprocessor"))].append(float(m["gpu__time_duration.sum"]))
        for (grid, regs, waves), t in sorted(groups.items()):
            t = t[1:] or t
            print(f"{name[:70]:70} grid {grid:>6} regs {regs:>3} waves {waves:>5} n {len(t):3} median {statistics.median(t) / 1e3:.3f} us")
PY
    cat "$OUT/ncu-summary.txt" | tee -a "$LOG"
    rm -rf "$SITE"
}
# probe SEQ: bench/host_time_probe.lua around one rope bundle, fused forward, hidden 8192 at SEQ
probe() {
    timeout 120 build/kluabench bench/host_time_probe.lua --top 60 scripts/rope.lua --hidden 8192 --seq "$1" \
        --mode forward --provider fused --format jsonl --out "$(mktemp -d)/probe.jsonl" >"$OUT/probe-T$1.txt" 2>&1
    echo "probe seq $1: exit $?, $(grep -m1 '^wall' "$OUT/probe-T$1.txt")" | tee -a "$LOG"
}
# host_reads ROUNDS SPEC_FILES...: the gpu specs of SPEC_FILES; bench/compare_speed.lua with build/prev's
# build (build/prev) and this one in turns, ROUNDS times; then the probe at seq 16384
host_reads() {
    local rounds=$1 round bin
    shift
    say "1 the gpu specs of the files that copy or compare tensors"
    timeout 300 build/kluabench tests/run.lua --tags=gpu "$@" >"$OUT/gpu_specs.txt" 2>&1 </dev/null
    echo "gpu specs: exit $?, $(tail -n 1 "$OUT/gpu_specs.txt")" | tee -a "$LOG"
    say "2 host reads, build/prev ($(build/prev/build/kluabench -e 'io.write(kb.git_commit:sub(1, 7))')) and this build in turns"
    for round in $(seq "$rounds"); do
        for bin in build/prev/build/kluabench build/kluabench; do
            echo "== round $round: $bin" >>"$OUT/compare_speed.txt"
            timeout 120 "$bin" bench/compare_speed.lua >>"$OUT/compare_speed.txt" 2>&1
        done
    done
    cat "$OUT/compare_speed.txt" | tee -a "$LOG"
    say "3 a bundle's host time by function at seq 16384"
    probe 16384
}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv | tee -a "$LOG"
echo "kluabench $(build/kluabench -e 'io.write(kb.git_commit)')" | tee -a "$LOG"
case $PART in
1)
    say "1 E4b"
    OUT=$OUT timeout 120 bash bench/e4b_gpu.sh >/dev/null 2>&1
    echo "e4b_gpu.sh: exit $?" | tee -a "$LOG"
    say "2 the flat kernel, second rule"
    flat_compare flat2 "--hidden 2048 --seq 2048 --mode forward,full --provider fused;--hidden 8192 --seq 1024,2048,4096 --mode forward,full --provider fused" \
        "tests/rope_fwd_bwd_spec.lua tests/rope_spec.lua" $((560 - ($(date +%s) - T0)))
    ;;
2 | 17)
    say "1 E4b"
    seeds="14 15 16"
    [ "$PART" = 17 ] && seeds="41 42 43"
    OUT=$OUT SEEDS=$seeds timeout 120 bash bench/e4b_gpu.sh >/dev/null 2>&1
    echo "e4b_gpu.sh: exit $?" | tee -a "$LOG"
    say "2 every gpu spec"
    timeout 420 build/kluabench tests/run.lua --tags=gpu >"$OUT/gpu_specs.txt" 2>&1 </dev/null
    echo "gpu specs: exit $?, $(tail -n 1 "$OUT/gpu_specs.txt")" | tee -a "$LOG"
    ;;
18)
    say "1 E4b"
    OUT=$OUT SEEDS="44 45 46" timeout 120 bash bench/e4b_gpu.sh >/dev/null 2>&1
    echo "e4b_gpu.sh: exit $?" | tee -a "$LOG"
    ;;
3)
    say "1 rope_small.sh"
    BUDGET_S=330 in_folder small 400 "rope_small_raw.tar.gz table.md" rope_small.sh
    ;;
4)
    say "1 rope_small.sh, kernel times only"
    STEPS="ncu trace" BUDGET_S=120 in_folder small 150 "rope_small_raw.tar.gz table.md" rope_small.sh
    say "2 bytes or rate, again"
    in_folder bytes 150 "rope_bytes_raw.tar.gz bytes.md" rope_bytes_gpu.sh
    ;;
5)
    say "1 the rope gpu specs (same_as_cpu shared by two specs)"
    timeout 120 build/kluabench tests/run.lua --tags=gpu tests/rope_fwd_bwd_spec.lua tests/rope_spec.lua \
        >"$OUT/gpu_specs.txt" 2>&1 </dev/null
    echo "gpu specs: exit $?, $(tail -n 1 "$OUT/gpu_specs.txt")" | tee -a "$LOG"
    say "2 rope_small.sh: kernel times and graph mode, the peers' graphs on the capture stream"
    STEPS="ncu trace graph" BUDGET_S=240 in_folder small 270 "rope_small_raw.tar.gz table.md" rope_small.sh
    ;;
6)
    say "1 the flat kernel, third rule"
    flat_compare flat3 "--hidden 512 --seq 2048 --mode forward,full --provider fused" \
        "tests/rope_fwd_bwd_spec.lua tests/rope_spec.lua tests/trace_spec.lua" 300
    ;;
7)
    say "1 the flat kernel, the third rule corrected"
    flat_compare flat3b "--hidden 512 --seq 2048 --mode forward,backward,full --provider fused" \
        "tests/rope_fwd_bwd_spec.lua tests/rope_spec.lua tests/trace_spec.lua" 300
    ;;
8)
    say "1 rope_small.sh, one call of the table"
    STEPS="sweeps peers ncu ncuflush trace" BUDGET_S=545 SWEEP_S=160 \
        in_folder small 570 "rope_small_raw.tar.gz table.md" rope_small.sh
    ;;
9)
    token_tune
    say "2 the launch shapes of Liger's kernel and ours, after ncu's flush"
    METRICS=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sectors_op_read.sum,lts__t_sectors_op_write.sum,sm__warps_active.avg.pct_of_peak_sustained_active,launch__registers_per_thread,launch__occupancy_limit_registers,launch__waves_per_multiprocessor,launch__grid_size,launch__block_size,smsp__inst_executed.sum \
        in_folder bytes 150 "rope_bytes_raw.tar.gz bytes.md" rope_bytes_gpu.sh
    ;;
10|11)
    token_run
    ;;
12)
    say "1 Liger's kernels as Triton compiled them, and ours, as SASS"
    SITE=$(mktemp -d)
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$SITE" .whl/*.whl
    mkdir -p "$OUT/sass/triton-cache"
    TRITON_CACHE_DIR=$OUT/sass/triton-cache PYTHONPATH=$SITE timeout 120 python3 scripts/peers/rope_peers_graph.py \
        --what ncu --providers liger --kernel rope --points H2048_T2048,H8192_T1024 --modes forward --calls 1 \
        >/dev/null 2>>"$LOG"
    echo "rope_peers_graph.py: exit $?" | tee -a "$LOG"
    find "$OUT/sass/triton-cache" -name '*.cubin' | while read -r c; do
        cuobjdump -sass "$c" >"$c.sass" 2>>"$LOG"
    done
    cuobjdump -sass build/bench/rope_tune >"$OUT/sass/rope_tune.sass" 2>>"$LOG"
    echo "cuobjdump: $(find "$OUT/sass" -name '*.sass' | wc -l) listings" | tee -a "$LOG"
    tar -czf "$OUT/sass.tar.gz" -C "$OUT" sass && rm -rf "$OUT/sass"
    rm -rf "$SITE"
    ;;
13)
    say "1 a bundle's host time by function, rope hidden 8192"
    probe 8192
    probe 16384
    ;;
14)
    host_reads 2 tests/check_spec.lua tests/tensor_spec.lua tests/tensor_math_spec.lua tests/rope_spec.lua \
        tests/rope_fwd_bwd_spec.lua tests/usercode_gpu_spec.lua
    ;;
15)
    host_reads 1 tests/tensor_spec.lua tests/check_spec.lua tests/tensor_math_spec.lua tests/rope_spec.lua \
        tests/rope_fwd_bwd_spec.lua tests/usercode_gpu_spec.lua tests/tensor_io_spec.lua tests/digest_spec.lua
    ;;
16)
    host_reads 1 tests/tensor_spec.lua tests/check_spec.lua tests/tensor_math_spec.lua tests/rope_spec.lua \
        tests/rope_fwd_bwd_spec.lua tests/usercode_gpu_spec.lua tests/tensor_io_spec.lua tests/digest_spec.lua
    say "4 kernel:launch's overhead, free and bound to one CPU"
    in_folder affinity 300 "host.txt affinity.tar.gz" launch_affinity_gpu.sh
    ;;
19 | 20)
    say "1 in place or out of place, rope hidden 2048 / seq 2048 and hidden 8192 / seq 1024"
    [ "$PART" = 20 ] && export CACHE=none
    in_folder layout 540 "layout.md layout_raw.tar.gz" rope_layout_gpu.sh
    ;;
21)
    for run in 1 2; do
        say "$run E5 again, run $run"
        mkdir -p "$OUT/e5/run$run"
        timeout 240 python3 bench/triton_alternate.py --out "$OUT/e5/run$run" --rounds 5 --kluabench build/kluabench \
            >"$OUT/e5/run$run/out.txt" 2>&1
        echo "triton_alternate.py run $run: exit $?" | tee -a "$LOG"
        grep -E '^\| [0-9]+ \||Triton cubin vs|skipped' "$OUT/e5/run$run/out.txt" | tee -a "$LOG"
        rm -f "$OUT/e5/run$run"/seq*/*.cubin
    done
    tar -czf "$OUT/e5.tar.gz" -C "$OUT" e5 && rm -rf "$OUT/e5"
    say "3 rope_tune --rows prod, both layouts"
    for p in H2048_T2048 H8192_T1024; do
        for layout in out in; do
            timeout 60 build/bench/rope_tune --point "$p" --rows prod --layout "$layout" --samples 200 \
                | grep -v '^H0_T0' >>"$OUT/tune-layout.csv"
        done
    done
    tee -a "$LOG" <"$OUT/tune-layout.csv"
    ;;
*) echo "usage: bash bench/device_next.sh 1|2|3|4|5|6|7|8|9|10|11|12|13|14|15|16|17|18|19|20|21" >&2; exit 2 ;;
esac
say "done"
