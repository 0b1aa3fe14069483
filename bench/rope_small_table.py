#!/usr/bin/env python3
"""Judges issue 25's targets from the raw outputs of bench/rope_small.sh, one call or several.

  python3 bench/rope_small_table.py DIR [DIR ...] [--out FILE]

Each DIR holds one call's outputs (ours_llama4_rope.jsonl, ours_rope.jsonl, ours_graph.jsonl,
peers.csv, peers_graph.csv, kernel_times.csv, ncu_ours.csv, ncu_liger.csv, ncu_ours_flush.csv,
ncu_liger_flush.csv, compare_*.txt).
Only the standard library is used (it reads the files with scripts/peers/merge.py's readers).

The rule (written before the runs that it judges; a cell is a kernel, point and mode):
  A  ours <= 1.00 x Liger: in every call, at every cell of both sweeps of both benchmarks
     (llama4_rope, rope) and every mode, the do_bench median of ours (provider fused) is at most
     the do_bench median of Liger measured in the same call. Met when it holds in every call;
     the table gives the worst ratio of each cell and its spread over calls.
  A' the same in kernel time at the launch-bound points (hidden 512 and 2048 at seq 2048,
     hidden 8192 at seq 1024): the median ncu gpu__time_duration.sum of ours (the sum over the
     kernels of one call) at most Liger's.
  A'f the same as A' with both sides' kernels timed after Nsight Compute's own flush and
     invalidation of the caches (ncu --cache-control all: ncu_ours_flush.csv,
     ncu_liger_flush.csv), so that both start from one cache state. Added 2026-12-04 (fourth
     session) before the calls it judges; A' is judged as before beside it.
  B  ours <= 1.05 x the floor: in every call, at every cell, the do_bench median of fused over
     the do_bench median of provider floor (kb.rope.floor / floor_fwd_bwd, same call) <= 1.05.
  C  the full mode in one launch: kb.trace counts 1 kernel per call of fused full at the
     launch-bound points (kernel_times.csv, kernels_per_call), else B's ratio <= 1.10 for full.
  D  no regression at the large shapes: `kluabench compare` of the main build's fused sweep
     (--runs 3) against ours (--runs 3), hidden 8192 at seq 4096, 8192, 16384, all modes, same
     call: no cell SLOWER (compare_*.txt; its exit status 1 means a regression).
Graph mode and HF eager / torch.compile are reported, not judged.
"""

import argparse
import csv
import os
import re
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts", "peers"))
import merge  # noqa: E402

KERNELS = ["llama4_rope", "rope"]
MODES = ["forward", "backward", "full"]
POINTS = [("hidden", 512, 2048), ("hidden", 2048, 2048), ("hidden", 8192, 2048),
          ("seq", 8192, 1024), ("seq", 8192, 2048), ("seq", 8192, 4096), ("seq", 8192, 8192),
          ("seq", 8192, 16384)]
LAUNCH_BOUND = [(512, 2048), (2048, 2048), (8192, 1024)]
LIGER_KERNELS = {"llama4_rope": "_llama4_rope_kernel", "rope": "_triton_rope"}


def read_results(d):
    recs = []
    for name in ("ours_llama4_rope.jsonl", "ours_rope.jsonl", "ours_graph.jsonl", "peers.csv"):
        p = os.path.join(d, name)
        if os.path.exists(p) and os.path.getsize(p) > 0:
            recs += merge.read_any(p)
    return merge.Results(recs)


def ms(res, kernel, provider, mode, hidden, seq, sweep):
    r = res.get(kernel, provider, mode, hidden, seq, sweep)
    return r["ms50"] if r else None


def read_rows(path):
    if not os.path.exists(path):
        return []
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def read_ncu(path):
    """ncu --csv rows -> {(kernel name, call index): ns}; the calls in launch order."""
    out = []
    if not os.path.exists(path):
        return out
    with open(path, newline="") as f:
        lines = [l for l in f if l.startswith('"')]
    for row in csv.DictReader(lines):
        if row.get("Metric Name") == "gpu__time_duration.sum":
            try:
                out.append((row.get("Kernel Name", ""), float(row["Metric Value"].replace(",", ""))))
            except (KeyError, ValueError):
                pass
    return out


def fmt(x, digits=2):
    return "-" if x is None else f"{x:.{digits}f}"


def judge(dirs):
    calls = [read_results(d) for d in dirs]
    lines, verdict = [], {}
    a_cells, b_cells = {}, {}
    for k in KERNELS:
        for sweep, h, s in POINTS:
            for m in MODES:
                ra, rb = [], []
                for res in calls:
                    ours, liger = ms(res, k, "fused", m, h, s, sweep), ms(res, k, "liger", m, h, s, sweep)
                    floor = ms(res, k, "floor", m, h, s, sweep)
                    ra.append(ours / liger if ours and liger else None)
                    rb.append(ours / floor if ours and floor else None)
                a_cells[(k, sweep, h, s, m)] = ra
                b_cells[(k, sweep, h, s, m)] = rb

    def worst(vals):
        v = [x for x in vals if x is not None]
        return max(v) if v else None

    def spread(vals):
        v = [x for x in vals if x is not None]
        return f"{min(v):.3f}-{max(v):.3f}" if v else "-"

    n = len(dirs)
    lines.append(f"# Issue 25 targets over {n} call(s): {', '.join(os.path.basename(os.path.normpath(d)) for d in dirs)}")
    lines.append("")
    lines.append("Ratios of do_bench medians in the same call; worst over calls, then the spread (min-max).")
    lines.append("")
    lines.append("| kernel | sweep | H | T | mode | ours us | Liger us | floor us | ours/Liger | spread | ours/floor | spread | HF us | compile us |")
    lines.append("|---|---|---:|---:|---|---:|---:|---:|---:|---|---:|---|---:|---:|")
    a_ok = b_ok = True
    a_missing = b_missing = 0
    for key in a_cells:
        k, sweep, h, s, m = key
        last = calls[-1]
        wa, wb = worst(a_cells[key]), worst(b_cells[key])
        if wa is None or any(x is None for x in a_cells[key]):
            a_missing += 1
        elif wa > 1.00:
            a_ok = False
        if wb is None or any(x is None for x in b_cells[key]):
            b_missing += 1
        elif wb > 1.05:
            b_ok = False
        us = lambda p: fmt((ms(last, k, p, m, h, s, sweep) or 0) * 1e3 or None, 1)
        mark_a = "" if wa is None or wa <= 1.00 else " **x**"
        mark_b = "" if wb is None or wb <= 1.05 else " **x**"
        lines.append(f"| {k} | {sweep[0].upper()} | {h} | {s} | {m} | {us('fused')} | {us('liger')} | {us('floor')} "
                     f"| {fmt(wa, 3)}{mark_a} | {spread(a_cells[key])} | {fmt(wb, 3)}{mark_b} | {spread(b_cells[key])} "
                     f"| {us('huggingface')} | {us('torch_compile')} |")
    verdict["A"] = ("met" if a_ok and not a_missing else "NOT MET") + (f" ({a_missing} cells missing)" if a_missing else "")
    verdict["B"] = ("met" if b_ok and not b_missing else "NOT MET") + (f" ({b_missing} cells missing)" if b_missing else "")

    # C: kernels per call of fused full, from kb.trace
    c_ok, c_seen = True, 0
    kt_lines = []
    for d in dirs:
        for row in read_rows(os.path.join(d, "kernel_times.csv")):
            if row["provider"] == "fused" and row["mode"] == "full":
                c_seen += 1
                c_ok = c_ok and float(row["kernels_per_call"]) == 1.0
    verdict["C"] = ("met" if c_ok and c_seen else "NOT MET") + f" ({c_seen} traced cells)"
    last_kt = read_rows(os.path.join(dirs[-1], "kernel_times.csv"))

    # A' and A'f: ncu kernel times at the launch-bound points, without and with ncu's flush
    def a_prime(suffix):
        per_call = []
        for d in dirs:
            ours_ncu = read_ncu(os.path.join(d, f"ncu_ours{suffix}.csv"))
            liger_ncu = read_ncu(os.path.join(d, f"ncu_liger{suffix}.csv"))
            per_call.append(ncu_compare(ours_ncu, liger_ncu))
        ok, seen = True, 0
        for cells in per_call:
            for o, l in cells.values():
                if o is not None and l is not None:
                    seen += 1
                    ok = ok and o <= l
        text = ("not measured (no ncu rows of ours and Liger)" if not seen
                else ("met" if ok else "NOT MET") + f" ({seen} cells)")
        return per_call, text

    a2, verdict["A'"] = a_prime("")
    a2f, verdict["A'f"] = a_prime("_flush")

    # D: compare
    d_ok, d_seen = True, 0
    for d in dirs:
        for name in ("compare_llama4_rope.txt", "compare_rope.txt"):
            p = os.path.join(d, name)
            if os.path.exists(p):
                d_seen += 1
                text = open(p).read()
                if re.search(r"\bSLOWER\b", text):
                    d_ok = False
    verdict["D"] = ("not run here (bench/rope_large_compare.sh writes compare_*.txt)" if not d_seen
                    else ("met" if d_ok else "NOT MET") + f" ({d_seen} compares)")

    lines.append("")
    lines.append("Kernel time at the launch-bound points (last call): kb.trace (CUPTI) and ncu gpu__time_duration, us")
    lines.append("")
    lines.append("| kernel | point | mode | fused event | fused CUPTI | floor CUPTI | kernels/call | ncu ours | ncu Liger "
                 "| ncu flush ours | ncu flush Liger |")
    lines.append("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    last_a2 = a2[-1] if a2 else {}
    last_a2f = a2f[-1] if a2f else {}
    for k in KERNELS:
        for h, s in LAUNCH_BOUND:
            for m in MODES:
                pt = f"H{h}_T{s}"
                fu = next((r for r in last_kt if r["kernel"] == k and r["point"] == pt and r["mode"] == m and r["provider"] == "fused"), None)
                fl = next((r for r in last_kt if r["kernel"] == k and r["point"] == pt and r["mode"] == m and r["provider"] == "floor"), None)
                o, l = last_a2.get((k, pt, m), (None, None))
                of, lf = last_a2f.get((k, pt, m), (None, None))
                lines.append(f"| {k} | {pt} | {m} | {fu['event_median_us'] if fu else '-'} | {fu['kernel_median_us'] if fu else '-'} "
                             f"| {fl['kernel_median_us'] if fl else '-'} | {fu['kernels_per_call'] if fu else '-'} | {fmt(o and o / 1e3)} | {fmt(l and l / 1e3)} "
                             f"| {fmt(of and of / 1e3)} | {fmt(lf and lf / 1e3)} |")

    lines.append("")
    lines.append("Graph mode at the launch-bound points (last call): per-call us, ours (kluabench --protocol graph) and the peers in torch.cuda graphs")
    lines.append("")
    lines.append("| kernel | point | mode | ours fused | ours floor | Liger | HF eager |")
    lines.append("|---|---|---|---:|---:|---:|---:|")
    pg = read_rows(os.path.join(dirs[-1], "peers_graph.csv"))
    for k in KERNELS:
        for h, s in LAUNCH_BOUND:
            sweep = "hidden" if s == 2048 else "seq"
            for m in MODES:
                pt = f"H{h}_T{s}"
                g = lambda prov: next((r["per_call_us"] for r in pg if r["kernel"] == k and r["point"] == pt and r["mode"] == m and r["provider"] == prov), "-")
                of = ms(calls[-1], k, "fused", m + "_cudagraph", h, s, None)
                ofl = ms(calls[-1], k, "floor", m + "_cudagraph", h, s, None)
                lines.append(f"| {k} | {pt} | {m} | {fmt(of and of * 1e3)} | {fmt(ofl and ofl * 1e3)} | {g('liger')} | {g('huggingface')} |")

    lines.append("")
    lines.append("Verdicts (rule in bench/rope_small_table.py):")
    for key in ("A", "A'", "A'f", "B", "C", "D"):
        lines.append(f"- {key}: {verdict[key]}")
    return "\n".join(lines) + "\n"


def ncu_compare(ours, liger):
    """{(kernel, point, mode): (ours ns, Liger ns)}: medians per call. ours: bench/rope_kernel_times.lua
    ncu's launch order (kernels x points x modes x (fused, floor), a warm-up then 5 calls, one
    kernel per call, full too); Liger: rope_peers_graph.py --what ncu's order
    (kernels x points x modes, a warm-up then 5 calls; forward 1 kernel, backward 1
    after the forward its autograd graph needs, full 2)."""
    out = {}
    ours_r = [v for n, v in ours if "rope_fused" in n or "rope_flat" in n or "rope_floor" in n]
    i = 0
    for k in KERNELS:
        for h, s in LAUNCH_BOUND:
            for m in MODES:
                for prov in ("fused", "floor"):
                    chunk = ours_r[i + 1:i + 6]  # after the warm-up
                    i += 6
                    if prov == "fused" and len(chunk) == 5:
                        out[(k, f"H{h}_T{s}", m)] = [statistics.median(chunk), None]
    lig = [v for n, v in liger if "rope" in n]
    j = 0
    for k in KERNELS:
        for h, s in LAUNCH_BOUND:
            for m in MODES:
                per = 2 if m == "full" else 1
                calls = []
                # the warm-up call; backward also made its forward once first
                j += per + (1 if m == "backward" else 0)
                for _ in range(5):
                    chunk = lig[j:j + per]
                    j += per
                    if len(chunk) == per:
                        calls.append(sum(chunk))
                key = (k, f"H{h}_T{s}", m)
                if key in out and calls:
                    out[key][1] = statistics.median(calls)
    return {key: tuple(v) for key, v in out.items()}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__.split("\n\n", 1)[1])
    p.add_argument("dirs", nargs="+")
    p.add_argument("--out")
    a = p.parse_args()
    text = judge(a.dirs)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
