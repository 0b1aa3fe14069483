#!/usr/bin/env python3
"""Merges kluabench's llama4_rope results with the peers' into one markdown table.

Inputs
  --ours FILE    kluabench's results: Liger-format CSV (--format liger-csv) or JSON Lines /
                 JSON of kernelindex bundles (--format jsonl / kernelindex); repeatable
  --peers FILE   scripts/peers/llama4_rope_peers.py's CSV; repeatable
Output
  markdown on stdout, or --out FILE

Per point (hidden, seq) and mode the table shows the medians of ours (fused), ours
(reference), Liger, HF eager and torch.compile, the copy of q+k's bytes at that point, the
ratios fused/Liger and fused/HF, the share of the copy bandwidth that fused and Liger reach
(ideal bytes / time / ceiling rate, the ceiling being the peers' large copy), and issue 4's
target 2 (fused <= 0.5 x Liger and <= 0.2 x HF). Target 3 (hidden 512, seq 2048, backward:
fused <= 0.010 ms under do_bench, and its CUDA-graph time within 1.5 x the copy of the same
bytes in a CUDA graph) follows the table.

Ideal bytes of one pass (forward or backward): read q and k, write q and k, read the
frequency table once as complex64 (8 bytes per rotated pair: HF's and Liger's form);
full = two passes. At hidden 8192, seq 16384, bf16 that is 688 MB.

Only the standard library is used, so this runs anywhere.
"""

import argparse
import csv
import json
import re
import sys

MODES = ["forward", "backward", "full"]
TARGET2_LIGER, TARGET2_HF = 0.5, 0.2
TARGET3_MS, TARGET3_GRAPH = 0.010, 1.5
SMALL_POINT = (512, 2048, "backward")
PEER_NAMES = {"liger": "Liger", "huggingface": "HF eager", "torch_compile": "torch.compile"}
GRAPH_SUFFIXES = ("_cudagraph", "-cudagraph", "_graph", "-graph")
DTYPES = {"torch.bfloat16": "bf16", "bfloat16": "bf16", "bf16": "bf16",
          "torch.float16": "f16", "float16": "f16", "f16": "f16", "fp16": "f16",
          "torch.float32": "f32", "float32": "f32", "f32": "f32", "fp32": "f32"}
ELEM_BYTES = {"bf16": 2, "f16": 2, "f32": 4}
KEYS = {  # our name -> the names it goes by in Liger's CSV, kluabench's CSV and slugs
    "hidden": ("hidden_size", "hidden", "H"),
    "seq": ("seq_len", "seq", "T"),
    "q_heads": ("num_q_heads", "q_heads", "num_attention_heads"),
    "kv_heads": ("num_kv_heads", "kv_heads", "num_key_value_heads"),
    "dtype": ("dtype",),
}
SWEEP_OF_X = {"H": "hidden", "hidden": "hidden", "hidden_size": "hidden",
              "T": "seq", "seq": "seq", "seq_len": "seq"}


# --------------------------------------------------------------------------- records

def record(**kw):
    """One measurement: kernel, provider, mode, metric, shape, ms50/20/80, sweep or None."""
    base = dict(kernel="llama4_rope", provider="", mode="", metric="speed", unit="ms",
                hidden=None, seq=None, q_heads=32, kv_heads=8, dtype="bf16", sweep=None,
                ms50=None, ms20=None, ms80=None, gpu="", timestamp="", version="", extra={})
    base.update(kw)
    return base


def pick(d, name):
    for key in KEYS[name]:
        if key in d and d[key] not in (None, ""):
            return d[key]
    return None


def as_int(v):
    return int(float(v)) if v not in (None, "") else None


def as_float(v):
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


def read_csv(path):
    out = []
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            try:
                cfg = json.loads(row.get("extra_benchmark_config_str") or "{}")
            except json.JSONDecodeError:
                cfg = {}
            x_name = row.get("x_name", "")
            sweep = SWEEP_OF_X.get(x_name)
            shape = {n: pick(cfg, n) for n in KEYS}
            if sweep:
                shape[sweep] = row.get("x_value")
            out.append(record(
                kernel=row.get("kernel_name", ""), provider=row.get("kernel_provider", ""),
                mode=row.get("kernel_operation_mode", ""), metric=row.get("metric_name", ""),
                unit=row.get("metric_unit", ""), sweep=sweep,
                hidden=as_int(shape["hidden"]), seq=as_int(shape["seq"]),
                q_heads=as_int(shape["q_heads"]) or 32, kv_heads=as_int(shape["kv_heads"]) or 8,
                dtype=DTYPES.get(str(shape["dtype"] or "bf16"), str(shape["dtype"])),
                ms50=as_float(row.get("y_value_50")), ms20=as_float(row.get("y_value_20")),
                ms80=as_float(row.get("y_value_80")), gpu=row.get("gpu_name", ""),
                timestamp=row.get("timestamp", ""), version=row.get("liger_version", ""),
                extra=dict(cfg, x_name=x_name, x_value=row.get("x_value"))))
    return out


def find_key(tree, names):
    """Depth-first search of nested dicts for the first of names with a scalar value."""
    if isinstance(tree, dict):
        for n in names:
            if n in tree and not isinstance(tree[n], (dict, list)):
                return tree[n]
        for v in tree.values():
            got = find_key(v, names)
            if got is not None:
                return got
    elif isinstance(tree, list):
        for v in tree:
            got = find_key(v, names)
            if got is not None:
                return got
    return None


def slug_shape(slug):
    """'hidden512-kv_heads8-q_heads32-seq2048-bf16' -> {'hidden': 512, ..., 'dtype': 'bf16'}."""
    shape = {}
    for tok in slug.split("-"):
        m = re.fullmatch(r"([a-z_]+?)(\d+)", tok)
        if m and m.group(1) in ("hidden", "seq", "q_heads", "kv_heads"):
            shape[m.group(1)] = int(m.group(2))
        elif tok in DTYPES:
            shape["dtype"] = DTYPES[tok]
    return shape


def bundle_to_record(b):
    """A kernelindex bundle (stdlib/kluabench/record.lua) -> record. The one place that knows
    the bundle's layout: run.spec.sourceNative.{metrics, benchmark, externalId},
    implementation.spec.provider, workload.spec.{parameters, dtype} (falling back to the
    workload slug inside externalId: kernel/mode/provider/gpu/workload/time), and the
    annotations scripts/llama4_rope.lua leaves on the workload (liger_x_name: H or T, the
    sweep; liger_gpu_name). A protocol whose metadata.name mentions 'graph' marks a
    CUDA-graph time: its mode becomes '<mode>_cudagraph'."""
    run = b["run"]["spec"]
    native = run["sourceNative"]
    metrics = native["metrics"]
    kernel, _, mode = native["benchmark"].partition("/")
    ext = native.get("externalId", "").split("/")
    impl = (b.get("implementation") or {}).get("spec") or {}
    provider = impl.get("provider") or (ext[2] if len(ext) > 2 else "")
    if isinstance(provider, dict):
        provider = provider.get("name", "")
    workload = b.get("workload") or {}
    work = workload.get("spec") or {}
    notes = (workload.get("metadata") or {}).get("annotations") or {}
    shape = slug_shape(ext[4]) if len(ext) > 4 else {}
    for name in ("hidden", "seq", "q_heads", "kv_heads", "dtype"):
        v = find_key(work, KEYS[name] + (name,))
        if v is not None:
            shape[name] = DTYPES.get(str(v), v) if name == "dtype" else int(v)
    proto_name = str(((b.get("protocol") or {}).get("metadata") or {}).get("name", "")).lower()
    if "graph" in proto_name and not mode.endswith(GRAPH_SUFFIXES):
        mode += "_cudagraph"
    sweep = notes.get("liger_x_name") or find_key(work, ("sweep",))
    env = (b.get("environment") or {}).get("spec") or {}
    gpu = notes.get("liger_gpu_name") or find_key(env.get("hardware") or {}, ("product",)) or ""
    return record(kernel=kernel, provider=str(provider), mode=mode,
                  hidden=shape.get("hidden"), seq=shape.get("seq"),
                  q_heads=shape.get("q_heads", 32), kv_heads=shape.get("kv_heads", 8),
                  dtype=shape.get("dtype", "bf16"), sweep=SWEEP_OF_X.get(str(sweep), sweep),
                  ms50=metrics.get("ms_50"), ms20=metrics.get("ms_20"), ms80=metrics.get("ms_80"),
                  gpu=gpu,
                  timestamp=run.get("observedAt", ""))


def read_bundles(path):
    with open(path) as f:
        text = f.read()
    try:  # one JSON document: a bundle or a list of bundles
        doc = json.loads(text)
        docs = doc if isinstance(doc, list) else [doc]
    except json.JSONDecodeError:  # JSON Lines
        docs = [json.loads(line) for line in text.splitlines() if line.strip()]
    return [bundle_to_record(d) for d in docs]


def read_any(path):
    with open(path) as f:
        head = f.read(1).lstrip()
    return read_bundles(path) if head in ("{", "[") else read_csv(path)


# --------------------------------------------------------------------------- the table

class Results:
    def __init__(self, recs):
        self.recs = [r for r in recs if r["metric"] in ("speed", "") and r["ms50"] is not None]
        self.all = recs

    def get(self, provider, mode, hidden, seq, sweep=None, kernel="llama4_rope"):
        """The record of (provider, mode, shape), preferring the one of the same sweep."""
        hits = [r for r in self.recs if r["kernel"] == kernel and r["provider"] == provider
                and r["mode"] == mode and r["hidden"] == hidden and r["seq"] == seq]
        same = [r for r in hits if r["sweep"] == sweep]
        return (same or hits or [None])[-1]

    def points(self):
        """(sweep, hidden, seq, q_heads, kv_heads, dtype) in Liger's order: hidden sweep, then seq."""
        seen = {}
        for r in self.recs:
            if r["kernel"] == "llama4_rope" and r["hidden"] and r["seq"]:
                sweep = r["sweep"] or ("hidden" if r["seq"] == 2048 and r["hidden"] != 8192 else "seq")
                seen[(sweep, r["hidden"], r["seq"], r["q_heads"], r["kv_heads"], r["dtype"])] = True
        order = {"hidden": 0, "seq": 1}
        return sorted(seen, key=lambda p: (order.get(p[0], 2), p[1], p[2]))

    def copy_rate(self):
        """Bytes/s of the largest ceiling copy (kernel 'copy', metric speed), or None."""
        best = None
        for r in self.recs:
            if r["kernel"] == "copy" and r["provider"] == "copy":
                moved = as_float(r["extra"].get("bytes_moved")) or 2 * as_float(r["extra"].get("x_value") or 0)
                if moved and (best is None or moved > best[0]):
                    best = (moved, moved / (r["ms50"] * 1e-3))
        return best


def ideal_bytes(hidden, seq, q_heads, kv_heads, dtype, mode):
    head_dim = hidden // q_heads
    qk = seq * (q_heads + kv_heads) * head_dim * ELEM_BYTES.get(dtype, 2)
    one = 2 * qk + seq * (head_dim // 2) * 8
    return one * (2 if mode == "full" else 1)


def ms(r):
    return f"{r['ms50']:.4f}" if r else "—"


def ratio(a, b):
    return a["ms50"] / b["ms50"] if a and b and b["ms50"] else None


def fmt_ratio(x):
    return f"{x:.2f}" if x is not None else "—"


def pct_bw(r, point, mode, rate):
    if not r or not rate:
        return "—"
    _, h, t, qh, kvh, dt = point
    return f"{100 * ideal_bytes(h, t, qh, kvh, dt, mode) / (r['ms50'] * 1e-3) / rate:.0f} %"


def target2(fused, liger, hf):
    rl, rh = ratio(fused, liger), ratio(fused, hf)
    if rl is None or rh is None:
        return "n/a", None
    over = max(rl / TARGET2_LIGER, rh / TARGET2_HF)
    if over <= 1.0:
        return "pass", True
    why = []
    if rl > TARGET2_LIGER:
        why.append(f"{rl:.2f}×Liger")
    if rh > TARGET2_HF:
        why.append(f"{rh:.2f}×HF")
    return f"**fail** ({', '.join(why)}; {over:.2f}× too slow)", False


def graph_time(ours, args, hidden, seq, mode):
    """Our fused provider's CUDA-graph time at a point, wherever kluabench puts it."""
    for prov in (args.fused,) + tuple(args.fused + s for s in GRAPH_SUFFIXES):
        for m in tuple(mode + s for s in GRAPH_SUFFIXES) + ((mode,) if prov != args.fused else ()):
            r = ours.get(prov, m, hidden, seq)
            if r:
                return r
    return None


def build_markdown(ours, peers, args):
    both = Results(ours.all + peers.all)
    rate_info = None if args.copy_gbps else peers.copy_rate() or ours.copy_rate()
    rate = args.copy_gbps * 1e9 if args.copy_gbps else (rate_info[1] if rate_info else None)
    gpus = sorted({r["gpu"] for r in both.all if r["gpu"]})
    libs = sorted({r["version"] for r in peers.all if r["version"]})
    # Liger's CSV writes "2026-12-02 14:00:00", the bundles ISO 8601 UTC: one form to sort
    stamps = sorted(re.sub(r"(\d)T(\d\d:\d\d:\d\d).*", r"\1 \2", r["timestamp"])
                    for r in both.all if r["timestamp"])
    lines = ["# llama4_rope: kluabench against its peers", ""]
    lines.append(f"- GPU: {', '.join(gpus) or 'unknown'}; measured {stamps[0] if stamps else '?'} "
                 f"to {stamps[-1] if stamps else '?'}; liger-kernel {', '.join(libs) or 'unknown'}")
    if rate:
        src = (f"{rate_info[0] / 2**30:.2f} GiB moved (read + write) by torch copy_"
               if rate_info else "given with --copy-gbps")
        lines.append(f"- copy-bandwidth ceiling: {rate / 1e9:.0f} GB/s ({src})")
    else:
        lines.append("- copy-bandwidth ceiling: not measured (no `copy` rows); % columns left empty")
    lines.append(f"- medians in ms under {args.protocol}; "
                 "copy = one dst.copy_(src) of q+k's bytes (read + write, the freqs table left out); "
                 "sweep H = hidden sweep at seq 2048, T = sequence sweep at hidden 8192; %BW = ideal bytes / time / ceiling; "
                 f"target 2 = fused ≤ {TARGET2_LIGER} × Liger and ≤ {TARGET2_HF} × HF eager")
    if len(gpus) > 1:
        lines.append(f"- **warning: the rows come from {len(gpus)} different GPUs**; the ratios compare across them")
    lines.append("")
    head = ["sweep", "H", "T", "mode", "ours fused", "ours reference", "Liger", "HF eager", "torch.compile",
            "copy", "fused/Liger", "fused/HF", "fused %BW", "Liger %BW", "target 2"]
    lines.append("| " + " | ".join(head) + " |")
    lines.append("|" + "|".join(":---" if c in ("sweep", "mode", "target 2") else "---:" for c in head) + "|")
    passed = total = 0
    worst = None
    for point in both.points():
        sweep, h, t = point[:3]
        for mode in args.modes:
            f = ours.get(args.fused, mode, h, t, sweep)
            ref = ours.get(args.reference, mode, h, t, sweep)
            li = peers.get("liger", mode, h, t, sweep)
            hf = peers.get("huggingface", mode, h, t, sweep)
            tc = peers.get("torch_compile", mode, h, t, sweep)
            cp = peers.get("copy", "copy", h, t, sweep) or ours.get("copy", "copy", h, t, sweep)
            if not any((f, ref, li, hf, tc)):
                continue
            verdict, ok = target2(f, li, hf)
            if ok is not None:
                total += 1
                passed += ok
                over = max(ratio(f, li) / TARGET2_LIGER, ratio(f, hf) / TARGET2_HF)
                if worst is None or over > worst[0]:
                    worst = (over, h, t, mode)
            cells = [{"hidden": "H", "seq": "T"}.get(sweep, "?"), str(h), str(t), mode, ms(f), ms(ref), ms(li), ms(hf), ms(tc), ms(cp),
                     fmt_ratio(ratio(f, li)), fmt_ratio(ratio(f, hf)),
                     pct_bw(f, point, mode, rate), pct_bw(li, point, mode, rate), verdict]
            lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    if total:
        w = f"; worst H={worst[1]} T={worst[2]} {worst[3]} at {worst[0]:.2f}× the allowed time" if worst else ""
        lines.append(f"**Target 2**: {passed} of {total} point×mode cells pass{w}.")
    else:
        lines.append("**Target 2**: n/a (needs ours fused, Liger and HF eager at the same points).")
    lines.append("")
    lines.extend(target3_lines(ours, peers, args))
    return "\n".join(lines) + "\n"


def target3_lines(ours, peers, args):
    h, t, mode = SMALL_POINT
    f = ours.get(args.fused, mode, h, t, "hidden")
    g = graph_time(ours, args, h, t, mode)
    # the copy of the same bytes under the same protocol as ours (kluabench's copy provider,
    # rotated cold inputs) when the run has it; else the peers' copy in torch's CUDA graph
    cg = (ours.get("copy", mode + "_cudagraph", h, t, "hidden")
          or peers.get("copy", "copy_cudagraph", h, t, "hidden")
          or ours.get("copy", "copy_cudagraph", h, t, "hidden"))
    out = [f"**Target 3** (H={h}, T={t}, {mode}):"]
    if f:
        ok = f["ms50"] <= TARGET3_MS
        out.append(f"- fused median under do_bench {f['ms50']:.4f} ms, limit {TARGET3_MS:.3f} ms: "
                   + ("pass" if ok else f"**fail** ({f['ms50'] / TARGET3_MS:.2f}× the limit)"))
    else:
        out.append("- fused median under do_bench: n/a (no row)")
    if g and cg:
        x = g["ms50"] / cg["ms50"]
        out.append(f"- fused in a CUDA graph {g['ms50']:.4f} ms vs copy of the same bytes in a CUDA graph "
                   f"{cg['ms50']:.4f} ms = {x:.2f}×, limit {TARGET3_GRAPH}×: "
                   + ("pass" if x <= TARGET3_GRAPH else f"**fail** ({x / TARGET3_GRAPH:.2f}× over)"))
    else:
        have = [n for n, r in (("ours in a CUDA graph", g), ("copy in a CUDA graph", cg)) if not r]
        out.append(f"- CUDA-graph comparison: n/a (missing {' and '.join(have)})")
    return out


# --------------------------------------------------------------------------- main

def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog=__doc__.split("\n\n", 1)[1])
    p.add_argument("--ours", action="append", default=[], help="kluabench results: CSV, JSON Lines or JSON")
    p.add_argument("--peers", action="append", default=[], help="llama4_rope_peers.py CSV")
    p.add_argument("--out", help="markdown file (default stdout)")
    p.add_argument("--fused", default="fused", help="our fused provider's name (default fused)")
    p.add_argument("--reference", default="reference", help="our reference provider's name (default reference)")
    p.add_argument("--modes", default=",".join(MODES), help="modes, in table order")
    p.add_argument("--require-fused", action="store_true",
                   help="exit 3 (after writing the table) when no row of our fused provider was read")
    p.add_argument("--protocol", default="do_bench (rep 400 ms, L2 flushed, quantiles 0.5/0.2/0.8)",
                   help="how the medians were measured, for the table's notes")
    p.add_argument("--copy-gbps", type=float, help="ceiling in GB/s, instead of the measured large copy")
    a = p.parse_args(argv)
    a.modes = [m for m in a.modes.split(",") if m]
    if not a.ours and not a.peers:
        p.error("give --ours and/or --peers")
    return a


def load(paths, label):
    recs = []
    for path in paths:
        try:
            got = read_any(path)
        except (OSError, ValueError, KeyError, TypeError) as e:
            print(f"merge.py: skipping {label} file {path}: {type(e).__name__}: {e}", file=sys.stderr)
            continue
        print(f"merge.py: {len(got)} rows from {path}", file=sys.stderr)
        recs += got
    return Results(recs)


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    ours, peers = load(args.ours, "ours"), load(args.peers, "peers")
    text = build_markdown(ours, peers, args)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    if args.require_fused and not any(r["provider"] == args.fused for r in ours.recs):
        print(f"merge.py: no '{args.fused}' rows among --ours", file=sys.stderr)
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(main())
