#!/usr/bin/env python3
"""Judges issue 25's "Bytes or rate" (docs/perf-notes.md) from bench/rope_bytes_gpu.sh's ncu CSVs.

  python3 bench/rope_bytes_table.py RAW_DIR

Per point (ncu_ours_POINT.csv, ncu_liger_POINT.csv) and kernel (our rope_fused_kernel and
rope_floor_kernel, Liger's _triton_rope): the median over its launches, the first of each
kernel dropped (the warm-up), of each metric. The rule, per point: D = dram__bytes_read.sum +
dram__bytes_write.sum. If Liger's time is not below our floor's under --cache-control all, the
gap seen before came from the cache state ("cache"). Else, if Liger's D is at least 3 % below
the floor's, the gap is "bytes"; else it is "rate".
"""
import csv
import io
import os
import statistics
import sys
from collections import defaultdict


def read(path):
    lines = [l for l in open(path, encoding="utf-8", errors="replace") if l.startswith('"')]
    rows = list(csv.DictReader(io.StringIO("".join(lines))))
    by = defaultdict(lambda: defaultdict(list))  # kernel -> metric -> [value per launch]
    for r in rows:
        name = r["Kernel Name"]
        # our fused call runs rope_fused or (the medium regime, since the flat kernel) rope_flat
        kind = ("floor" if "rope_floor" in name else "fused" if "rope_fused" in name or "rope_flat" in name
                else "liger" if "_triton_rope" in name else None)
        if kind is None:
            continue
        by[kind][r["Metric Name"]].append(float(r["Metric Value"].replace(",", "")))
    out = {}
    for kind, metrics in by.items():
        out[kind] = {m: statistics.median(v[1:] or v) for m, v in metrics.items()}
        out[kind]["launches"] = max(len(v) for v in metrics.values())
    return out


def main(argv):
    if len(argv) != 2:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    raw = argv[1]
    verdicts = []
    print("| point | kernel | launches | time us | DRAM read MB | DRAM write MB | L2 read MB | L2 write MB | warps active % |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for pt in ("H2048_T2048", "H8192_T1024"):
        k = {}
        for side in ("ours", "liger"):
            path = os.path.join(raw, f"ncu_{side}_{pt}.csv")
            if os.path.exists(path):
                k.update(read(path))
        for kind in ("fused", "floor", "liger"):
            m = k.get(kind)
            if not m:
                print(f"| {pt} | {kind} | 0 | - | - | - | - | - | - |")
                continue
            g = lambda n: m.get(n, float("nan"))
            print(f"| {pt} | {kind} | {m['launches']} | {g('gpu__time_duration.sum') / 1e3:.2f} | "
                  f"{g('dram__bytes_read.sum') / 1e6:.2f} | {g('dram__bytes_write.sum') / 1e6:.2f} | "
                  f"{g('lts__t_sectors_op_read.sum') * 32 / 1e6:.2f} | {g('lts__t_sectors_op_write.sum') * 32 / 1e6:.2f} | "
                  f"{g('sm__warps_active.avg.pct_of_peak_sustained_active'):.1f} |")
        if "floor" not in k or "liger" not in k:
            verdicts.append(f"{pt}: not measured")
            continue
        fl, li = k["floor"], k["liger"]
        d = lambda m: m.get("dram__bytes_read.sum", 0) + m.get("dram__bytes_write.sum", 0)
        if any(n not in m for m in (fl, li) for n in ("gpu__time_duration.sum", "dram__bytes_read.sum",
                                                           "dram__bytes_write.sum")):
            verdicts.append(f"{pt}: not measured (a metric is missing)")
            continue
        if li["gpu__time_duration.sum"] >= fl["gpu__time_duration.sum"]:
            v = "cache"
        elif d(li) <= 0.97 * d(fl):
            v = "bytes"
        else:
            v = "rate"
        verdicts.append(f"{pt}: {v} (Liger {li['gpu__time_duration.sum'] / 1e3:.2f} us, {d(li) / 1e6:.2f} MB; "
                        f"floor {fl['gpu__time_duration.sum'] / 1e3:.2f} us, {d(fl) / 1e6:.2f} MB)")
    print()
    for v in verdicts:
        print("- " + v)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
