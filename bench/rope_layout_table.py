#!/usr/bin/env python3
"""The table and verdict of bench/rope_layout_gpu.sh (issue 25: in place or out of place).

    python3 bench/rope_layout_table.py RAW_DIR > layout.md

RAW_DIR holds, for each point P (H2048_T2048, H8192_T1024):
  ncu_ours_P_out.csv, ncu_ours_P_in.csv   ncu of `rope_tune --point P --rows prod --layout out|in
                                          --samples 10`: per rope row (neox forward, then
                                          backward) a reference launch, the check's, 3 warm-ups and
                                          10 samples; then the floor's row (the check, 3 warm-ups,
                                          10 samples). The last 10 of each row are its samples.
  ncu_liger_P_forward.csv, ncu_liger_P_backward.csv
                                          ncu of rope_peers_graph.py --what ncu --calls 10 for one
                                          cell: the last 10 launches are the calls.
  tune_P_out.csv, tune_P_in.csv           the same rows' event times (reported).

The rule (docs/perf-notes.md, "In place or out of place", registered before the run), on the
medians of the 10 kernel times, per cell (point x {forward, backward}), with r_in = ours in place /
Liger and r_out = ours out of place / Liger:
  LAYOUT  r_in <= 1.00 at all four cells: writing in place is what A' misses there;
  PART    otherwise, in place <= 0.99 x out of place at 3 or 4 cells: it is part of it;
  NONE    otherwise: the layout is not it.
"""
import csv
import io
import os
import statistics
import sys

POINTS = ["H2048_T2048", "H8192_T1024"]
MODES = ["forward", "backward"]
SAMPLES = 10
# launches per row of `rope_tune --rows prod --samples 10`, in order
OURS_ROWS = [("forward", 15), ("backward", 15), ("floor", 14)]


def launches(path):
    """[(kernel name, µs)] in launch order, from an ncu --csv file (its other lines skipped)."""
    lines = [l for l in open(path) if l.startswith('"')]
    by_id = {}
    for r in csv.DictReader(io.StringIO("".join(lines))):
        if r["Metric Name"] == "gpu__time_duration.sum":
            by_id[int(r["ID"])] = (r["Kernel Name"], float(r["Metric Value"].replace(",", "")) / 1e3)
    return [by_id[i] for i in sorted(by_id)]


def ours(path):
    """{row: median µs of its samples} of one rope_tune process."""
    got = launches(path)
    want = sum(n for _, n in OURS_ROWS)
    if len(got) != want:
        raise SystemExit(f"{path}: {len(got)} rope launches, expected {want} (rope_tune --rows prod --samples {SAMPLES})")
    out, i = {}, 0
    for row, n in OURS_ROWS:
        block = got[i:i + n]
        if len({name for name, _ in block[n - SAMPLES:]}) != 1:
            raise SystemExit(f"{path}: the samples of row {row} are not one kernel")
        out[row] = statistics.median(t for _, t in block[n - SAMPLES:])
        i += n
    return out


def liger(path):
    got = launches(path)
    if len(got) < SAMPLES:
        raise SystemExit(f"{path}: {len(got)} launches, expected at least {SAMPLES}")
    return statistics.median(t for _, t in got[-SAMPLES:])


def event_times(path):
    """{variant, mode: median µs} of a rope_tune CSV, or {} when it is missing. The CSV is not
    quoted, and the variants of c0f591e's harness held a comma ("fused prod, in place"), so a
    line is read from both ends: point, style, mode first, the four numbers and the check last."""
    if not os.path.exists(path):
        return {}
    out = {}
    for line in open(path).read().splitlines()[1:]:
        f = line.split(",")
        if len(f) >= 8:
            out[(",".join(f[3:-4]), f[2])] = float(f[-4])
    return out


def verdict(cells):
    """cells: [(r_in, r_out, in/out)] of the four cells."""
    if all(r_in <= 1.00 for r_in, _, _ in cells):
        return "LAYOUT"
    if sum(1 for _, _, io_ in cells if io_ <= 0.99) >= 3:
        return "PART"
    return "NONE"


def main(raw):
    print("| point | mode | ours out of place µs | ours in place µs | Liger µs | out / Liger | in / Liger | in / out |"
          " event µs out | event µs in |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    cells, floors = [], []
    for p in POINTS:
        o = ours(os.path.join(raw, f"ncu_ours_{p}_out.csv"))
        i = ours(os.path.join(raw, f"ncu_ours_{p}_in.csv"))
        eo = event_times(os.path.join(raw, f"tune_{p}_out.csv"))
        ei = event_times(os.path.join(raw, f"tune_{p}_in.csv"))
        for m in MODES:
            lg = liger(os.path.join(raw, f"ncu_liger_{p}_{m}.csv"))
            r_in, r_out, io_ = i[m] / lg, o[m] / lg, i[m] / o[m]
            cells.append((r_in, r_out, io_))
            e_o = eo.get(("fused prod, out of place", m), eo.get(("fused prod out of place", m)))
            e_i = ei.get(("fused prod, in place", m), ei.get(("fused prod in place", m)))
            print(f"| {p} | {m} | {o[m]:.2f} | {i[m]:.2f} | {lg:.2f} | {r_out:.3f} | {r_in:.3f} | {io_:.3f} |"
                  f" {e_o if e_o is not None else '-'} | {e_i if e_i is not None else '-'} |")
        floors.append((p, o["floor"], i["floor"]))
    print()
    print("| point | floor out of place µs | floor in place µs | in / out |")
    print("|---|---:|---:|---:|")
    for p, fo, fi in floors:
        print(f"| {p} | {fo:.2f} | {fi:.2f} | {fi / fo:.3f} |")
    print()
    print(f"verdict: {verdict(cells)} (LAYOUT: in place <= 1.00 x Liger at all four cells; PART: in place"
          f" <= 0.99 x out of place at 3 or 4; NONE otherwise)")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.stderr.write("usage: python3 bench/rope_layout_table.py RAW_DIR\n")
        sys.exit(2)
    main(sys.argv[1])
