#!/usr/bin/env bash
# Does binding the process to one CPU steady kernel:launch's overhead against the C loop?
# (issue 26; an exploration, reported and not judged: a rule for a judged run comes after it.)
# From the repository root with build/ carried:
#   device run:  bash bench/launch_affinity_gpu.sh
# It writes the host's CPU facts (host.txt: the CPUs allowed, the GPU's NUMA-local CPUs, lscpu,
# nvidia-smi topo), then runs bench/launch_overhead_user.lua --interleave batch --direct in
# PROCS processes (default 8, seeds from SEED0, default 31) in the order free, bound, bound, free
# (repeated), "bound" under `taskset -c CORE`: CORE defaults to the second CPU that is both
# allowed and local to GPU 0 (the first often takes the machine's interrupts). About 3 minutes.
# Out ($OUT): host.txt, affinity.tar.gz (each process's table and batches), log.txt with each
# process's judged rows and host line.
set -u
cd "$(dirname "$0")/.." || exit 1
OUT=${OUT:-$(mktemp -d)}
KB=${KB:-build/kluabench}
PROCS=${PROCS:-8}
SEED0=${SEED0:-31}
LOG=$OUT/log.txt
DIR=$OUT/affinity
mkdir -p "$DIR" || exit 1

# a cpulist such as 0-3,8,10-11 as one number a line
expand() {
    tr ',' '\n' <<<"$1" | while IFS=- read -r a b; do
        [ -n "$a" ] && seq "$a" "${b:-$a}"
    done
}
allowed=$(awk '/^Cpus_allowed_list/ {print $2}' /proc/self/status)
bdf=$(nvidia-smi --query-gpu=pci.bus_id --format=csv,noheader -i 0 2>/dev/null | tr 'A-F' 'a-f' | sed 's/^0000//')
local_list=$(cat "/sys/bus/pci/devices/0000${bdf#0000}/local_cpulist" 2>/dev/null || echo "$allowed")
{
    echo "cpus allowed: $allowed"
    echo "GPU 0 at $bdf, NUMA-local cpus: $local_list"
    echo "nproc: $(nproc)"
    lscpu 2>&1
    nvidia-smi topo -m 2>&1
    for g in /sys/devices/system/cpu/cpu0/cpufreq/scaling_governor /sys/devices/system/cpu/cpu0/cpufreq/scaling_driver; do
        echo "$g: $(cat "$g" 2>&1)"
    done
} >"$OUT/host.txt" 2>&1
if [ -z "${CORE:-}" ]; then
    CORE=$(comm -12 <(expand "$allowed" | sort) <(expand "$local_list" | sort) | sort -n | sed -n 2p)
    CORE=${CORE:-$(expand "$allowed" | sed -n 1p)}
fi
echo "cpus allowed $allowed; GPU-local $local_list; bound runs on cpu $CORE" | tee -a "$LOG"

pattern=(free bound bound free)
for i in $(seq 0 $((PROCS - 1))); do
    seed=$((SEED0 + i))
    how=${pattern[$((i % 4))]}
    name=$how-$seed
    pre=()
    [ "$how" = bound ] && pre=(taskset -c "$CORE")
    timeout 90 "${pre[@]}" "$KB" bench/launch_overhead_user.lua --interleave batch --direct --seed "$seed" \
        --out "$DIR/$name.csv" </dev/null >"$DIR/$name.txt" 2>&1
    rc=$?
    {
        echo "== $how, seed $seed: exit $rc"
        grep -E '^\| (kernel:launch|C loop|the packing)|^targets|^host:' "$DIR/$name.txt"
    } | tee -a "$LOG"
done
tar -czf "$OUT/affinity.tar.gz" -C "$OUT" affinity && rm -rf "$DIR"
