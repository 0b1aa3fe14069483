#!/usr/bin/env python3
"""Merges kluabench's RoPE results (llama4_rope, rope) with the peers' into markdown tables.

Inputs
  --ours FILE     kluabench's results: Liger-format CSV (--format liger-csv) or JSON Lines /
                  JSON of kernelindex bundles (--format jsonl / kernelindex); repeatable
  --peers FILE    scripts/peers/rope_peers.py's CSV; repeatable
  --ceiling FILE  kluabench scripts/ceilings.lua --json's output, measured in the same run
Output
  markdown on stdout, or --out FILE: one section per kernel read (llama4_rope, then rope;
  --kernel picks), each with two tables.

Per point (hidden, seq) and mode the first table shows the medians of ours (fused,
reference and our copy provider), Liger, HF eager, torch.compile and torch's copy of q+k's
bytes at that point, the ratios of fused to Liger, HF eager and torch.compile, and issue 4's
target 2 (fused <= 0.5 x Liger and <= 0.2 x HF). The second shows the bandwidth of each
(GB/s) and its share of the copy ceiling: the --ceiling file's when given, else the peers'
large copy (--copy-gbps overrides both). For llama4_rope, target 3 (hidden 512, seq 2048,
backward: fused <= 0.010 ms under do_bench, and its CUDA-graph time within 1.5 x the copy of
the same bytes in a CUDA graph) follows.

Ideal bytes of one pass (forward or backward): read q and k, write q and k, read the
frequency table once (4 bytes per element of a head: complex64 pairs for Llama 4, bf16 cos
and sin for rope, an f32 (cos, sin) table for kluabench: the same count); full = two passes.
At hidden 8192, seq 16384, bf16 that is 688 MB. A copy's bandwidth counts the bytes it moves.

Only the standard library is used, so this runs anywhere.
"""

import argparse
import csv
import hashlib
import json
import os
import re
import sys

MODES = ["forward", "backward", "full"]
TARGET2_LIGER, TARGET2_HF = 0.5, 0.2
TARGET3_MS, TARGET3_GRAPH = 0.010, 1.5
SMALL_POINT = (512, 2048, "backward")
TARGET3_KERNEL = "llama4_rope"  # issue 4's target 3 is set for it
KERNEL_ORDER = ["llama4_rope", "rope"]
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
    base = dict(kernel="", provider="", mode="", metric="speed", unit="ms",
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


def evidence_of(b, base_dir):
    """The run's evidence entry (stdlib/kluabench/record/evidence.lua): the line of the samples
    file its run.spec.evidence.rawSamples names ("x.samples.jsonl#L3", relative to the records
    file, or file:///abs#L3), checked against its digest; {} when there is none."""
    ref = ((b["run"]["spec"].get("evidence") or {}).get("rawSamples")) or {}
    uri, digest = ref.get("uri", ""), ref.get("digest", "")
    if not uri:
        return {}
    target, _, frag = uri.partition("#")
    path = target[len("file://"):] if target.startswith("file://") else os.path.join(base_dir, target)
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except OSError:
        return {}
    want = digest[len("sha256:"):]
    order = [int(frag[1:]) - 1] if frag.startswith("L") and frag[1:].isdigit() else []
    for i in order + list(range(len(lines))):
        if 0 <= i < len(lines) and hashlib.sha256(lines[i].encode("utf-8")).hexdigest() == want:
            return json.loads(lines[i])
    return {}


def bundle_to_record(b, base_dir="."):
    """A kernelindex bundle (stdlib/kluabench/record/init.lua) -> record. The one place that knows
    the bundle's layout: run.spec.sourceNative.{metrics, benchmark, externalId} (the provider and
    the case key "hidden512-kv_heads8-q_heads32-seq2048-bf16" are parts of externalId:
    kernel/mode/provider/gpu/case/time), workload.spec.axes, and the annotations the RoPE
    declarations (stdlib/kluabench/benchmarks/rope.lua) leave in the run's evidence entry
    (liger_x_name: H or T, the sweep; liger_gpu_name). A protocol whose metadata.name mentions
    'graph' marks a CUDA-graph time: its mode becomes '<mode>_cudagraph'."""
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
    notes = evidence_of(b, base_dir).get("annotations") or (workload.get("metadata") or {}).get("annotations") or {}
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
    base = os.path.dirname(os.path.abspath(path))
    return [bundle_to_record(d, base) for d in docs]


def read_any(path):
    with open(path) as f:
        head = f.read(1).lstrip()
    return read_bundles(path) if head in ("{", "[") else read_csv(path)


# --------------------------------------------------------------------------- the tables

class Results:
    def __init__(self, recs):
        self.recs = [r for r in recs if r["metric"] in ("speed", "") and r["ms50"] is not None]
        self.all = recs

    def get(self, kernel, provider, mode, hidden, seq, sweep=None):
        """The record of (kernel, provider, mode, shape), preferring the one of the same sweep."""
        hits = [r for r in self.recs if r["kernel"] == kernel and r["provider"] == provider
                and r["mode"] == mode and r["hidden"] == hidden and r["seq"] == seq]
        same = [r for r in hits if r["sweep"] == sweep]
        return (same or hits or [None])[-1]

    def kernels(self):
        """The kernels with sweep points, Liger's RoPE benchmarks first."""
        found = {r["kernel"] for r in self.recs if r["kernel"] != "copy" and r["hidden"] and r["seq"]}
        return [k for k in KERNEL_ORDER if k in found] + sorted(found - set(KERNEL_ORDER))

    def points(self, kernel):
        """(sweep, hidden, seq, q_heads, kv_heads, dtype) in Liger's order: hidden sweep, then seq."""
        seen = {}
        for r in self.recs:
            if r["kernel"] == kernel and r["hidden"] and r["seq"]:
                sweep = r["sweep"] or ("hidden" if r["seq"] == 2048 and r["hidden"] != 8192 else "seq")
                seen[(sweep, r["hidden"], r["seq"], r["q_heads"], r["kv_heads"], r["dtype"])] = True
        order = {"hidden": 0, "seq": 1}
        return sorted(seen, key=lambda p: (order.get(p[0], 2), p[1], p[2]))

    def copy_rate(self):
        """(bytes moved, bytes/s) of the largest ceiling copy (kernel 'copy', metric speed), or None."""
        best = None
        for r in self.recs:
            if r["kernel"] == "copy" and r["provider"] == "copy":
                moved = as_float(r["extra"].get("bytes_moved")) or 2 * as_float(r["extra"].get("x_value") or 0)
                if moved and (best is None or moved > best[0]):
                    best = (moved, moved / (r["ms50"] * 1e-3))
        return best


def read_ceiling(path):
    """scripts/ceilings.lua --json's output -> (bytes per copy, bytes/s, device); the
    object is the first one that starts a line, so lines before it (a 'device:' line, an
    env.txt around it) are passed over."""
    with open(path) as f:
        text = f.read()
    m = re.search(r"^\{", text, re.M)
    if not m:
        raise ValueError("no JSON object in it (none starts a line)")
    doc, _ = json.JSONDecoder().raw_decode(text[m.start():])
    gbps = as_float(doc.get("copy_gbps"))
    if not gbps or gbps <= 0:
        raise ValueError("no positive copy_gbps in it")
    return as_float(doc.get("bytes_per_copy")), gbps * 1e9, doc.get("device", "")


def qk_bytes(hidden, seq, q_heads, kv_heads, dtype):
    return seq * (q_heads + kv_heads) * (hidden // q_heads) * ELEM_BYTES.get(dtype, 2)


def ideal_bytes(point, mode):
    """Read q, k and the frequency table once, write q and k once; full = two passes."""
    _, hidden, seq, q_heads, kv_heads, dtype = point
    one = 2 * qk_bytes(hidden, seq, q_heads, kv_heads, dtype) + seq * (hidden // q_heads) * 4
    return one * (2 if mode == "full" else 1)


def copy_bytes(point, mode, which):
    """Bytes a copy row moves: q+k's bytes read and written; our copy provider copies
    twice for full, the peers' per-point copy is one copy whatever the mode."""
    _, hidden, seq, q_heads, kv_heads, dtype = point
    n = 2 * qk_bytes(hidden, seq, q_heads, kv_heads, dtype)
    return n * (2 if which == "ours" and mode == "full" else 1)


def ms(r):
    return f"{r['ms50']:.4f}" if r else "—"


def ratio(a, b):
    return a["ms50"] / b["ms50"] if a and b and b["ms50"] else None


def fmt_ratio(x):
    return f"{x:.2f}" if x is not None else "—"


def bandwidth(r, nbytes, rate):
    """'GB/s (% of the ceiling)' of nbytes in r's median."""
    if not r:
        return "—"
    gbps = nbytes / (r["ms50"] * 1e-3) / 1e9
    text = f"{gbps:.0f}" if gbps >= 100 else f"{gbps:.3g}"
    if not rate:
        return text
    pct = 100 * gbps * 1e9 / rate
    return f"{text} ({pct:.0f} %)" if round(pct, 1) >= 10 else f"{text} ({pct:.1f} %)"


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


def graph_time(ours, args, kernel, hidden, seq, mode):
    """Our fused provider's CUDA-graph time at a point, wherever kluabench puts it."""
    for prov in (args.fused,) + tuple(args.fused + s for s in GRAPH_SUFFIXES):
        for m in tuple(mode + s for s in GRAPH_SUFFIXES) + ((mode,) if prov != args.fused else ()):
            r = ours.get(kernel, prov, m, hidden, seq)
            if r:
                return r
    return None


def ceiling_of(ours, peers, args):
    """(bytes/s used for the % columns, the notes' lines about it)."""
    torch_copy = peers.copy_rate() or ours.copy_rate()
    ours_copy = args.ceiling_info
    notes = []
    if ours_copy:
        notes.append(f"{ours_copy[1] / 1e9:.0f} GB/s by kluabench's scripts/ceilings.lua "
                     f"({ours_copy[0] / 2**30:.2f} GiB read + written per copy)" if ours_copy[0] else
                     f"{ours_copy[1] / 1e9:.0f} GB/s by kluabench's scripts/ceilings.lua")
    if torch_copy:
        notes.append(f"{torch_copy[1] / 1e9:.0f} GB/s by torch copy_ under do_bench "
                     f"({torch_copy[0] / 2**30:.2f} GiB read + written)")
    if args.copy_gbps:
        return args.copy_gbps * 1e9, [f"{args.copy_gbps:.0f} GB/s, given with --copy-gbps"] + \
            [f"(measured: {n})" for n in notes]
    rate = (ours_copy or torch_copy or (None, None))[1]
    if not rate:
        return None, ["not measured (no --ceiling file and no `copy` rows); % left out"]
    notes[0] += " — the one the % columns use"
    return rate, notes


def build_markdown(ours, peers, args):
    both = Results(ours.all + peers.all)
    rate, ceiling_notes = ceiling_of(ours, peers, args)
    gpus = sorted({r["gpu"] for r in both.all if r["gpu"]})
    libs = sorted({r["version"] for r in peers.all if r["version"]})
    # Liger's CSV writes "2026-12-02 14:00:00", the bundles ISO 8601 UTC: one form to sort
    stamps = sorted(re.sub(r"(\d)T(\d\d:\d\d:\d\d).*", r"\1 \2", r["timestamp"])
                    for r in both.all if r["timestamp"])
    kernels = [k for k in both.kernels() if not args.kernels or k in args.kernels]
    lines = [f"# {', '.join(kernels) or 'RoPE'}: kluabench against its peers", ""]
    lines.append(f"- GPU: {', '.join(gpus) or 'unknown'}; measured {stamps[0] if stamps else '?'} "
                 f"to {stamps[-1] if stamps else '?'}; liger-kernel {', '.join(libs) or 'unknown'}")
    lines.append("- copy-bandwidth ceiling: " + "; ".join(ceiling_notes))
    lines.append(f"- medians in ms under {args.protocol}; sweep H = hidden sweep at seq 2048, "
                 "T = sequence sweep at hidden 8192; bf16, 32 q heads, 8 kv heads")
    lines.append("- ours copy = kluabench's copy provider (q+k's bytes copied device to device, twice for full); "
                 "torch copy = one dst.copy_(src) of q+k's bytes (both leave the frequency table out)")
    lines.append(f"- target 2 = issue 4's bar: fused ≤ {TARGET2_LIGER} × Liger and ≤ {TARGET2_HF} × HF eager "
                 "(set for llama4_rope, applied to every kernel)")
    lines.append("- GB/s = ideal bytes / median: q and k read and written once plus the frequency table "
                 "read once (4 bytes per element of a head: complex64 pairs or bf16 cos and sin), two passes "
                 "for full; for the copies the bytes they move; (%) = of the ceiling above")
    if len(gpus) > 1:
        lines.append(f"- **warning: the rows come from {len(gpus)} different GPUs**; the ratios compare across them")
    if not kernels:
        lines += ["", "No sweep rows were read."]
    for kernel in kernels:
        lines += [""] + kernel_section(kernel, ours, peers, both, args, rate)
    return "\n".join(lines) + "\n"


def cells_at(kernel, ours, peers, args, point, mode):
    """The rows of one point and mode: fused, reference, ours copy, Liger, HF, compile, torch copy."""
    sweep, h, t = point[:3]
    return (ours.get(kernel, args.fused, mode, h, t, sweep),
            ours.get(kernel, args.reference, mode, h, t, sweep),
            ours.get(kernel, "copy", mode, h, t, sweep),
            peers.get(kernel, "liger", mode, h, t, sweep),
            peers.get(kernel, "huggingface", mode, h, t, sweep),
            peers.get(kernel, "torch_compile", mode, h, t, sweep),
            peers.get(kernel, "copy", "copy", h, t, sweep))


def kernel_section(kernel, ours, peers, both, args, rate):
    head = ["sweep", "H", "T", "mode", "ours fused", "ours reference", "ours copy", "Liger", "HF eager",
            "torch.compile", "torch copy", "fused/Liger", "fused/HF", "fused/compile", "target 2"]
    bw_head = ["sweep", "H", "T", "mode", "ours fused", "ours reference", "ours copy", "Liger", "HF eager",
               "torch.compile", "torch copy"]
    times = [f"## {kernel}", "", "Medians in ms; the ratios are ours fused over the peer.", "",
             "| " + " | ".join(head) + " |",
             "|" + "|".join(":---" if c in ("sweep", "mode", "target 2") else "---:" for c in head) + "|"]
    bws = ["", "GB/s (% of the ceiling):", "", "| " + " | ".join(bw_head) + " |",
           "|" + "|".join(":---" if c in ("sweep", "mode") else "---:" for c in bw_head) + "|"]
    passed = total = 0
    worst = None
    for point in both.points(kernel):
        sweep, h, t = point[:3]
        for mode in args.modes:
            f, ref, oc, li, hf, tc, pc = cells_at(kernel, ours, peers, args, point, mode)
            if not any((f, ref, oc, li, hf, tc)):
                continue
            verdict, ok = target2(f, li, hf)
            if ok is not None:
                total += 1
                passed += ok
                over = max(ratio(f, li) / TARGET2_LIGER, ratio(f, hf) / TARGET2_HF)
                if worst is None or over > worst[0]:
                    worst = (over, h, t, mode)
            key = [{"hidden": "H", "seq": "T"}.get(sweep, "?"), str(h), str(t), mode]
            times.append("| " + " | ".join(key + [ms(f), ms(ref), ms(oc), ms(li), ms(hf), ms(tc), ms(pc),
                                                  fmt_ratio(ratio(f, li)), fmt_ratio(ratio(f, hf)),
                                                  fmt_ratio(ratio(f, tc)), verdict]) + " |")
            ideal = ideal_bytes(point, mode)
            bw = [bandwidth(r, ideal, rate) for r in (f, ref)] + [bandwidth(oc, copy_bytes(point, mode, "ours"), rate)]
            bw += [bandwidth(r, ideal, rate) for r in (li, hf, tc)] + [bandwidth(pc, copy_bytes(point, mode, "torch"), rate)]
            bws.append("| " + " | ".join(key + bw) + " |")
    out = times + bws + [""]
    if total:
        w = f"; worst H={worst[1]} T={worst[2]} {worst[3]} at {worst[0]:.2f}× the allowed time" if worst else ""
        out.append(f"**Target 2** ({kernel}): {passed} of {total} point×mode cells pass{w}.")
    else:
        out.append(f"**Target 2** ({kernel}): n/a (needs ours fused, Liger and HF eager at the same points).")
    if kernel == TARGET3_KERNEL:
        out += [""] + target3_lines(ours, peers, args)
    return out


def target3_lines(ours, peers, args):
    h, t, mode = SMALL_POINT
    kernel = TARGET3_KERNEL
    f = ours.get(kernel, args.fused, mode, h, t, "hidden")
    g = graph_time(ours, args, kernel, h, t, mode)
    # the copy of the same bytes under the same protocol as ours (kluabench's copy provider,
    # rotated cold inputs) when the run has it; else the peers' copy in torch's CUDA graph
    cg = (ours.get(kernel, "copy", mode + "_cudagraph", h, t, "hidden")
          or peers.get(kernel, "copy", "copy_cudagraph", h, t, "hidden")
          or ours.get(kernel, "copy", "copy_cudagraph", h, t, "hidden"))
    out = [f"**Target 3** ({kernel}, H={h}, T={t}, {mode}):"]
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
    p.add_argument("--peers", action="append", default=[], help="rope_peers.py CSV")
    p.add_argument("--ceiling", help="scripts/ceilings.lua --json output: the ceiling for the %% columns")
    p.add_argument("--kernel", default="", help="comma list of kernels to tabulate (default every one read)")
    p.add_argument("--out", help="markdown file (default stdout)")
    p.add_argument("--fused", default="fused", help="our fused provider's name (default fused)")
    p.add_argument("--reference", default="reference", help="our reference provider's name (default reference)")
    p.add_argument("--modes", default=",".join(MODES), help="modes, in table order")
    p.add_argument("--require-fused", action="store_true",
                   help="exit 3 (after writing the tables) when no row of our fused provider was read")
    p.add_argument("--protocol", default="do_bench (rep 400 ms, L2 flushed, quantiles 0.5/0.2/0.8)",
                   help="how the medians were measured, for the tables' notes")
    p.add_argument("--copy-gbps", type=float, help="ceiling in GB/s, instead of the measured ones")
    a = p.parse_args(argv)
    a.modes = [m for m in a.modes.split(",") if m]
    a.kernels = [k for k in a.kernel.split(",") if k]
    if not a.ours and not a.peers:
        p.error("give --ours and/or --peers")
    a.ceiling_info = None
    if a.ceiling:
        try:
            a.ceiling_info = read_ceiling(a.ceiling)
        except (OSError, ValueError) as e:
            print(f"merge.py: --ceiling {a.ceiling} left out: {type(e).__name__}: {e}", file=sys.stderr)
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
