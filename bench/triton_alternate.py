"""Issue 26's E5: the Triton RoPE kernel of bench/triton_rope.py timed by
Python's triton.testing.do_bench and, as the same cubin loaded by kb.triton,
by kluabench's kb.bench.do_bench, alternated in rounds at a launch-bound and a
bandwidth-bound size.

    python3 bench/triton_alternate.py --out DIR [--seqs 256,16384] [--rounds 5]
        [--kluabench build/kluabench] [--dry-run]

For each size the kernel is compiled and its cubin dumped into DIR/seq<S>;
kluabench checks it against kb.rope.llama4_fwd once (bench/triton_cubin.lua,
round 0). Then, each round, for each size: Python's do_bench median in this
process and kluabench's (build/kluabench bench/triton_cubin.lua DIR --once, a
process of its own), the order swapped every other round. Every timing goes to
DIR/triton_rounds.csv; the table printed last gives per size the ratio
kluabench / Python per round, its median and range, and the verdict of the
pre-registered rule (docs/MEASUREMENT.md, E5): within [0.90, 1.10] at the
launch-bound size and [0.97, 1.03] at the bandwidth-bound one, at the median
and at both ends of the range. --dry-run fakes both timings (no torch or
triton needed; kluabench is still called) to try the script anywhere.
"""
import argparse
import csv
import json
import os
import statistics
import subprocess
import sys

# The pre-registered bounds (docs/MEASUREMENT.md, E5): by size, the interval the
# ratio kluabench / Python must stay in at the median and at both ends.
BOUNDS = {256: (0.90, 1.10), 16384: (0.97, 1.03)}


def kb_median(kluabench, folder, dry):
    """kluabench's median of one kb.bench.do_bench, in its own process."""
    if dry:
        cmd = [kluabench, "-e", 'print(\'{"median_ms": 0.0101, "mean_ms": 0.0102}\')']
    else:
        cmd = [kluabench, "bench/triton_cubin.lua", folder, "--once"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError("%s: exit %d: %s" % (" ".join(cmd), r.returncode, r.stderr.strip()[-500:]))
    return json.loads(r.stdout.strip().splitlines()[-1])["median_ms"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--seqs", default="256,16384")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--kluabench", default="build/kluabench")
    ap.add_argument("--dry-run", action="store_true")
    a = ap.parse_args()
    if a.rounds < 5:
        ap.error("--rounds must be at least 5 (the pre-registered rule), got %d" % a.rounds)
    seqs = [int(s) for s in a.seqs.split(",")]
    os.makedirs(a.out, exist_ok=True)

    timers = {}
    for seq in seqs:
        folder = os.path.join(a.out, "seq%d" % seq)
        if a.dry_run:
            timers[seq] = (folder, lambda: 0.0100)
            continue
        import triton  # only where the GPU is
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import triton_rope
        both, info = triton_rope.prepare(seq, folder)
        info["do_bench_median_ms"] = triton.testing.do_bench(both, return_mode="median")
        info["do_bench_mean_ms"] = triton.testing.do_bench(both)
        with open(os.path.join(folder, "python.json"), "w") as f:
            json.dump(info, f, indent=1)
        # round 0: kluabench loads the cubin and checks it against its own RoPE
        r = subprocess.run([a.kluabench, "bench/triton_cubin.lua", folder], capture_output=True, text=True)
        print(r.stdout.strip())
        if r.returncode != 0:
            raise SystemExit("seq %d: bench/triton_cubin.lua failed (exit %d): %s" % (seq, r.returncode,
                                                                                     r.stderr.strip()[-800:]))
        timers[seq] = (folder, (lambda b: (lambda: triton.testing.do_bench(b, return_mode="median")))(both))

    rows = []
    for rnd in range(1, a.rounds + 1):
        for seq in seqs:
            folder, py = timers[seq]
            order = ["python", "kluabench"] if rnd % 2 else ["kluabench", "python"]
            got = {}
            for side in order:
                got[side] = py() if side == "python" else kb_median(a.kluabench, folder, a.dry_run)
                rows.append({"seq": seq, "round": rnd, "side": side, "median_ms": got[side]})
            print("round %d seq %d: python %.5f ms, kluabench %.5f ms (%s first)" % (
                rnd, seq, got["python"], got["kluabench"], order[0]), flush=True)

    with open(os.path.join(a.out, "triton_rounds.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=["seq", "round", "side", "median_ms"])
        w.writeheader()
        w.writerows(rows)

    print("\n| seq | rounds | python median ms | kluabench median ms | ratio (median) | ratio range | bounds | verdict |")
    print("|---:|---:|---:|---:|---:|---:|---:|---|")
    all_pass = True
    for seq in seqs:
        py = {r["round"]: r["median_ms"] for r in rows if r["seq"] == seq and r["side"] == "python"}
        kb = {r["round"]: r["median_ms"] for r in rows if r["seq"] == seq and r["side"] == "kluabench"}
        ratios = [kb[r] / py[r] for r in sorted(py)]
        lo, hi = BOUNDS.get(seq, (0.90, 1.10))
        med = statistics.median(ratios)
        ok = lo <= min(ratios) and max(ratios) <= hi and lo <= med <= hi
        all_pass = all_pass and ok
        print("| %d | %d | %.5f | %.5f | %.3f | %.3f..%.3f | [%.2f, %.2f] | %s |" % (
            seq, len(ratios), statistics.median(py.values()), statistics.median(kb.values()), med, min(ratios),
            max(ratios), lo, hi, ("PASS" if ok else "FAIL") + (" (dry run)" if a.dry_run else "")))
    print("\nTriton cubin vs Python do_bench: %s" % ("PASS" if all_pass else "FAIL"))
    return 0 if all_pass else 1


if __name__ == "__main__":
    sys.exit(main())
