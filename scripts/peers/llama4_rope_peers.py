#!/usr/bin/env python3
"""Times kluabench's peers on the llama4_rope sweep, the way Liger-Kernel's own benchmark does.

Runs on the GPU machine only (it needs torch with CUDA, triton and transformers;
Liger-Kernel is optional: a provider that fails to import or to match Hugging Face
is reported and skipped, the others still run).

Providers
  huggingface    transformers.models.llama4.modeling_llama4.apply_rotary_emb, eager
  liger          Liger-Kernel's liger_llama4_text_rotary_pos_emb (LigerLlama4RopeFunction)
  torch_compile  torch.compile(apply_rotary_emb, dynamic=False): one specialised graph per shape

Protocol (Liger-Kernel's benchmark/scripts/benchmark_llama4_rope.py as it stood until
its April 2026 refactor, the version with this sweep):
  batch 1, 32 q heads, 8 kv heads, head_dim = hidden / 32, bf16;
  hidden sweep {512, 2048, 8192} at seq 2048 (x_name H) and
  seq sweep {1024, 2048, 4096, 8192, 16384} at hidden 8192 (x_name T);
  q, k: randn (1, seq, heads, head_dim), requires_grad; dq, dk: randn upstream gradients;
  freqs_cis = Llama4TextRotaryEmbedding(config)(q, arange(seq)[None]) (complex64, (1, seq, head_dim/2));
  forward:  do_bench(lambda: fwd(q, k, freqs_cis))
  backward: q_out, k_out = fwd(...) once, then
            do_bench(lambda: autograd.grad((q_out, k_out), (q, k), (dq, dk), allow_unused=True, retain_graph=True))
  full:     do_bench(lambda: autograd.grad(fwd(...), (q, k), (dq, dk), allow_unused=True))
  all with grad_to_none=[q, k], rep=400 ms, warmup=25 ms, quantiles (0.5, 0.2, 0.8),
  fresh inputs for every (point, mode, provider). Unlike Liger, inputs are seeded
  (--seed), so every provider sees the same numbers at a point.
  (Liger's main since that refactor sweeps model configs, times rep 10 ms and the backward
  of q_out alone; issue 4's reference numbers and this sweep are the older protocol above.)
Liger's kernel works in place: its forward rotates q and k, its backward dq and dk, as in
Liger's own benchmark; the checks therefore give every provider private copies.

Copy rows (kernel_provider "copy"), the bandwidth yardsticks:
  * per point, kernel_name llama4_rope, same x and config as the point:
      mode "copy":           do_bench (same protocol, L2 flushed) of dst.copy_(src),
                              src and dst bf16 buffers of q+k's element count, so it moves
                              2 * (q+k bytes) (read + write); the RoPE traffic also reads
                              the freqs table, which this copy leaves out;
      mode "copy_cudagraph": the same copy under triton.testing.do_bench_cudagraph
                              (rep 20 ms, triton's default; no L2 flush: the copy of the
                              same bytes in a CUDA graph, as issue 4's target 3 states it).
  * once, kernel_name "copy", x_name "B", x_value = bytes of one buffer (default 2 GiB),
    config {"bytes_moved": 2 * buffer bytes, ...}: metric "speed" (ms, do_bench) and
    metric "bandwidth" (GB/s = bytes_moved / time, 1e9 bytes; y_value_20 is computed from
    the 20th-percentile time, so it is the higher rate). This is the copy-bandwidth ceiling.

Output: Liger-format CSV rows, appended and flushed as each measurement finishes.
Exit status: 0 when every requested provider passed its check and was timed at every
point, 2 when something was skipped (the rows that were measured are still written).
"""

import argparse
import csv
import json
import math
import os
import sys
import time
import traceback
import warnings

# transformers 5.17 warns on every Llama4TextRotaryEmbedding(device=...), which Liger's benchmark passes
warnings.filterwarnings("ignore", message=".*`device` is deprecated.*")

HEADER = [
    "kernel_name", "kernel_provider", "kernel_operation_mode", "metric_name", "metric_unit",
    "x_name", "x_label", "x_value", "y_value_50", "y_value_20", "y_value_80",
    "extra_benchmark_config_str", "gpu_name", "timestamp", "liger_version",
]
QUANTILES = [0.5, 0.2, 0.8]
ALL_PROVIDERS = ["huggingface", "liger", "torch_compile"]
ALL_MODES = ["forward", "backward", "full"]
HIDDEN_SWEEP = [512, 2048, 8192]  # Liger: 32 * 2**i for i in range(4, 10, 2)
SEQ_SWEEP = [1024, 2048, 4096, 8192, 16384]  # Liger: 2**i for i in range(10, 15)
Q_HEADS, KV_HEADS, BATCH = 32, 8, 1
# bf16 outputs: HF rounds an fp32 result once; a peer may round differently by about one
# bf16 ulp (2**-8 relative). Anything beyond this is a wrong kernel, not rounding.
ATOL, RTOL = 1e-2, 1e-2


def say(*parts):
    print(*parts, flush=True)


# --------------------------------------------------------------------------- sweep points

class Point:
    """One x value of one of Liger's two sweeps, with the CSV fields Liger writes for it."""

    def __init__(self, sweep, hidden, seq):
        self.sweep, self.hidden, self.seq = sweep, hidden, seq
        self.head_dim = hidden // Q_HEADS
        if sweep == "hidden":
            self.x_name, self.x_label, self.x_value = "H", "hidden size", hidden
            self.config = {"dtype": "torch.bfloat16", "seq_len": seq,
                           "num_q_heads": Q_HEADS, "num_kv_heads": KV_HEADS}
        else:
            self.x_name, self.x_label, self.x_value = "T", "sequence length", seq
            self.config = {"dtype": "torch.bfloat16", "hidden_size": hidden,
                           "num_q_heads": Q_HEADS, "num_kv_heads": KV_HEADS}
        # json.dumps with default separators, as Liger's CustomEncoder writes it
        self.config_str = json.dumps(self.config)

    @property
    def qk_elems(self):
        return BATCH * self.seq * (Q_HEADS + KV_HEADS) * self.head_dim

    def label(self):
        return f"H={self.hidden} T={self.seq}"


def sweep_points(which, quick):
    hidden = [512] if quick else HIDDEN_SWEEP
    seqs = [4096] if quick else SEQ_SWEEP
    pts = []
    if which in ("hidden", "all"):
        pts += [Point("hidden", h, 2048) for h in hidden]
    if which in ("seq", "all"):
        pts += [Point("seq", 8192, t) for t in seqs]
    return pts


# --------------------------------------------------------------------------- environment

class Env:
    """Imports and versions; everything the timing code needs from the outside."""

    def __init__(self, args):
        import torch
        import transformers
        self.torch = torch
        self.device = args.device
        self.dtype = torch.bfloat16
        self.transformers_version = transformers.__version__
        from transformers.models.llama4 import modeling_llama4
        from transformers.models.llama4.configuration_llama4 import Llama4TextConfig
        self.hf_apply = modeling_llama4.apply_rotary_emb
        self.RotaryEmbedding = modeling_llama4.Llama4TextRotaryEmbedding
        self.Llama4TextConfig = Llama4TextConfig
        self.theta = args.rope_theta
        try:
            import triton
            import triton.testing
            self.triton = triton
        except Exception as e:  # the cpu plumbing mode works without triton
            if self.device == "cuda":
                raise
            say(f"triton unavailable ({e}); cpu timer in use")
            self.triton = None
        if self.device == "cuda":
            self.gpu_name = torch.cuda.get_device_name(torch.cuda.current_device())
        else:
            self.gpu_name = "cpu"
        self.liger_version = package_version("liger-kernel") or "none"

    def versions(self):
        t = self.torch
        return {
            "python": sys.version.split()[0],
            "torch": t.__version__,
            "torch_cuda": t.version.cuda,
            "triton": getattr(self.triton, "__version__", "none"),
            "transformers": self.transformers_version,
            "liger_kernel": self.liger_version,
            "gpu": self.gpu_name,
        }

    def bench(self, fn, grad_to_none, rep_ms, warmup_ms):
        """Median, p20, p80 in ms: triton's do_bench on cuda, a wall-clock twin on cpu."""
        if self.device == "cuda":
            r = self.triton.testing.do_bench(fn, warmup=warmup_ms, rep=rep_ms,
                                             grad_to_none=grad_to_none, quantiles=QUANTILES)
            return tuple(float(v) for v in r)
        return cpu_bench(self.torch, fn, grad_to_none, rep_ms, warmup_ms)

    def bench_graph(self, fn, rep_ms):
        if self.device != "cuda":
            return None
        r = self.triton.testing.do_bench_cudagraph(fn, rep=rep_ms, quantiles=QUANTILES)
        return tuple(float(v) for v in r)


def package_version(dist):
    try:
        from importlib.metadata import version
        return version(dist)
    except Exception:
        return None


def cpu_bench(torch, fn, grad_to_none, rep_ms, warmup_ms):
    """do_bench's iteration arithmetic with perf_counter; only for testing the plumbing."""
    fn()
    t0 = time.perf_counter()
    for _ in range(5):
        fn()
    est = max((time.perf_counter() - t0) * 1e3 / 5, 1e-6)
    for _ in range(max(1, int(warmup_ms / est))):
        fn()
    times = []
    for _ in range(max(1, int(rep_ms / est))):
        for x in grad_to_none or []:
            x.grad = None
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    q = torch.quantile(torch.tensor(times, dtype=torch.float64), torch.tensor(QUANTILES, dtype=torch.float64))
    return tuple(float(v) for v in q.tolist())


# --------------------------------------------------------------------------- providers

def load_liger():
    """The entry point Liger's benchmark calls; the autograd Function itself as a fallback."""
    errors = []
    try:
        from liger_kernel.transformers.llama4_rope import liger_llama4_text_rotary_pos_emb as fn
        return fn, "liger_kernel.transformers.llama4_rope.liger_llama4_text_rotary_pos_emb"
    except Exception as e:
        errors.append(f"liger_kernel.transformers.llama4_rope: {type(e).__name__}: {e}")
    try:
        from liger_kernel.ops.llama4_rope import LigerLlama4RopeFunction
        return (lambda q, k, f: LigerLlama4RopeFunction.apply(q, k, f),
                "liger_kernel.ops.llama4_rope.LigerLlama4RopeFunction.apply")
    except Exception as e:
        errors.append(f"liger_kernel.ops.llama4_rope: {type(e).__name__}: {e}")
    raise ImportError("; ".join(errors))


def build_providers(env, names):
    """name -> callable(q, k, freqs_cis) -> (q_out, k_out); failures reported, not raised."""
    torch = env.torch
    providers, skipped = {}, {}
    for name in names:
        try:
            if name == "huggingface":
                providers[name] = env.hf_apply
                say(f"provider huggingface: {env.hf_apply.__module__}.apply_rotary_emb (eager)")
            elif name == "liger":
                fn, where = load_liger()
                providers[name] = fn
                say(f"provider liger: {where} (liger-kernel {env.liger_version})")
            elif name == "torch_compile":
                dyn = torch._dynamo.config
                for knob in ("recompile_limit", "cache_size_limit"):
                    if hasattr(dyn, knob):
                        setattr(dyn, knob, max(64, getattr(dyn, knob)))
                providers[name] = torch.compile(env.hf_apply, dynamic=False)
                say("provider torch_compile: torch.compile(apply_rotary_emb, dynamic=False), default mode")
            else:
                raise ValueError(f"unknown provider {name!r} (known: {', '.join(ALL_PROVIDERS)})")
        except Exception as e:
            skipped[name] = f"unavailable: {type(e).__name__}: {e}"
            say(f"SKIP provider {name}: {skipped[name]}")
    return providers, skipped


# --------------------------------------------------------------------------- inputs

def rotary_embedding(env, pt):
    """HF's Llama4TextRotaryEmbedding for the point, built as Liger's benchmark builds it."""
    cfg = env.Llama4TextConfig(hidden_size=pt.hidden, num_attention_heads=Q_HEADS,
                               num_key_value_heads=KV_HEADS, head_dim=pt.head_dim,
                               max_position_embeddings=pt.seq)
    if env.theta is not None:  # None: the config's default (500000 for Llama 4), as Liger gets
        rp = getattr(cfg, "rope_parameters", None)
        if isinstance(rp, dict):
            rp["rope_theta"] = env.theta  # transformers 5
        else:
            cfg.rope_theta = env.theta  # transformers 4
    try:
        emb = env.RotaryEmbedding(config=cfg, device=env.device)
    except TypeError:  # the device argument is deprecated in transformers 5.18
        emb = env.RotaryEmbedding(config=cfg)
    return emb.to(env.device)


def make_inputs(env, pt, seed):
    torch = env.torch
    dev, dt = env.device, env.dtype
    torch.manual_seed(seed)
    q = torch.randn((BATCH, pt.seq, Q_HEADS, pt.head_dim), device=dev, dtype=dt, requires_grad=True)
    k = torch.randn((BATCH, pt.seq, KV_HEADS, pt.head_dim), device=dev, dtype=dt, requires_grad=True)
    dq = torch.randn_like(q)
    dk = torch.randn_like(k)
    pos_ids = torch.arange(pt.seq, device=dev, dtype=torch.long).unsqueeze(0)
    freqs_cis = rotary_embedding(env, pt)(q, pos_ids)
    return q, k, dq, dk, freqs_cis


def fresh_leaf(t):
    return t.detach().clone().requires_grad_(True)


# --------------------------------------------------------------------------- check

def run_once(fn, q, k, dq, dk, freqs):
    """Forward and backward on private copies (Liger rotates q, k, dq and dk in place)."""
    import torch
    q1, k1 = fresh_leaf(q), fresh_leaf(k)
    q_out, k_out = fn(q1, k1, freqs)
    fwd = (q_out.detach().clone(), k_out.detach().clone())
    gq, gk = torch.autograd.grad((q_out, k_out), (q1, k1), (dq.clone(), dk.clone()), allow_unused=True)
    return fwd, (gq, gk)


def compare(name, got, ref):
    """Max abs diff, and whether every element is within ATOL + RTOL * |ref|."""
    import torch
    if got is None:
        return math.inf, False, f"{name}: missing"
    if got.shape != ref.shape or got.dtype != ref.dtype:
        return math.inf, False, f"{name}: got {tuple(got.shape)} {got.dtype}, want {tuple(ref.shape)} {ref.dtype}"
    g, r = got.float(), ref.float()
    if not torch.isfinite(g).all():
        return math.inf, False, f"{name}: non-finite values"
    diff = (g - r).abs()
    ok = bool((diff <= ATOL + RTOL * r.abs()).all())
    return float(diff.max()), ok, ""


def check_point(env, pt, providers, seed):
    """Each provider against HF eager on the same inputs; returns {name: (ok, text)}."""
    q, k, dq, dk, freqs = make_inputs(env, pt, seed)
    (rq, rk), (rgq, rgk) = run_once(env.hf_apply, q, k, dq, dk, freqs)
    out = {}
    for name, fn in providers.items():
        t0 = time.perf_counter()
        try:
            (oq, ok_), (gq, gk) = run_once(fn, q, k, dq, dk, freqs)
            parts, all_ok, worst = [], True, 0.0
            for label, got, ref in (("q_out", oq, rq), ("k_out", ok_, rk), ("dq", gq, rgq), ("dk", gk, rgk)):
                d, ok, why = compare(label, got, ref)
                all_ok &= ok
                worst = max(worst, d)
                parts.append(why or f"{label} {d:.3g}")
            if env.device == "cuda":
                env.torch.cuda.synchronize()
            dt = time.perf_counter() - t0
            text = f"max|diff| {worst:.3g} ({', '.join(parts)}) [{dt:.1f} s]"
            out[name] = (all_ok, text)
        except Exception as e:
            out[name] = (False, f"error {type(e).__name__}: {e}")
            traceback.print_exc(file=sys.stdout)
        verdict = "ok  " if out[name][0] else "FAIL"
        say(f"  check {pt.label():<16} {name:<14} {verdict} {out[name][1]}")
    del q, k, dq, dk, freqs
    return out


# --------------------------------------------------------------------------- timing

def time_provider(env, pt, fn, mode, args):
    torch = env.torch
    q, k, dq, dk, freqs = make_inputs(env, pt, args.seed)
    if mode == "forward":
        def step():
            return fn(q, k, freqs)
    elif mode == "backward":
        q_out, k_out = fn(q, k, freqs)

        def step():
            return torch.autograd.grad((q_out, k_out), (q, k), (dq, dk), allow_unused=True, retain_graph=True)
    elif mode == "full":
        def step():
            q_out, k_out = fn(q, k, freqs)
            return torch.autograd.grad((q_out, k_out), (q, k), (dq, dk), allow_unused=True)
    else:
        raise ValueError(f"unknown mode {mode!r}")
    return env.bench(step, [q, k], args.rep_ms, args.warmup_ms)


def time_point_copy(env, pt, args):
    torch = env.torch
    src = torch.empty(pt.qk_elems, device=env.device, dtype=env.dtype).normal_()
    dst = torch.empty_like(src)
    r = env.bench(lambda: dst.copy_(src), None, args.rep_ms, args.warmup_ms)
    g = env.bench_graph(lambda: dst.copy_(src), args.graph_rep_ms)
    return r, g


def time_big_copy(env, args):
    torch = env.torch
    nbytes = int(args.copy_big_gib * 2**30)
    src = torch.empty(nbytes // 2, device=env.device, dtype=torch.bfloat16).normal_()
    dst = torch.empty_like(src)
    r = env.bench(lambda: dst.copy_(src), None, args.rep_ms, args.warmup_ms)
    return src.numel() * 2, r


# --------------------------------------------------------------------------- output

class CsvOut:
    def __init__(self, path, env):
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        self.f = open(path, "w", newline="")
        self.w = csv.writer(self.f)
        self.w.writerow(HEADER)
        self.f.flush()
        self.env = env

    def row(self, kernel, provider, mode, metric, unit, x_name, x_label, x_value, ys, config_str):
        self.w.writerow([kernel, provider, mode, metric, unit, x_name, x_label, x_value,
                         ys[0], ys[1], ys[2], config_str, self.env.gpu_name,
                         time.strftime("%Y-%m-%d %H:%M:%S"), self.env.liger_version])
        self.f.flush()

    def point(self, pt, provider, mode, ys):
        self.row("llama4_rope", provider, mode, "speed", "ms", pt.x_name, pt.x_label, pt.x_value, ys, pt.config_str)


def ideal_bytes(pt, mode):
    """Read q, k and the complex64 freqs table once, write q and k once; full = two passes."""
    one = 2 * pt.qk_elems * 2 + pt.seq * (pt.head_dim // 2) * 8
    return one * (2 if mode == "full" else 1)


def print_table(points, modes, names, results, copies, copy_rate):
    cols = names + ["copy", "copy_graph"]
    say("")
    say("median ms (do_bench); copy = dst.copy_(src) of q+k bytes; %bw = ideal bytes / time / big-copy rate")
    head = f"{'point':<16} {'mode':<8} " + " ".join(f"{c:>13}" for c in cols)
    if copy_rate:
        head += " " + " ".join(f"{'%bw ' + n[:8]:>13}" for n in names)
    say(head)
    for pt in points:
        for mode in modes:
            cells = []
            for n in names:
                r = results.get((pt.label(), mode, n))
                cells.append(f"{r[0]:13.4f}" if r else f"{'-':>13}")
            c, g = copies.get(pt.label(), (None, None))
            cells.append(f"{c[0]:13.4f}" if c else f"{'-':>13}")
            cells.append(f"{g[0]:13.4f}" if g else f"{'-':>13}")
            line = f"{pt.label():<16} {mode:<8} " + " ".join(cells)
            if copy_rate:
                for n in names:
                    r = results.get((pt.label(), mode, n))
                    pct = 100 * ideal_bytes(pt, mode) / (r[0] * 1e-3) / copy_rate if r else None
                    line += f" {pct:12.1f}%" if pct is not None else f" {'-':>13}"
            say(line)


# --------------------------------------------------------------------------- main

def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog=__doc__.split("\n\n", 1)[1])
    p.add_argument("--out", required=True, help="CSV file to write (Liger's format)")
    p.add_argument("--sweep", choices=["hidden", "seq", "all"], default="all")
    p.add_argument("--providers", default=",".join(ALL_PROVIDERS),
                   help="comma list of huggingface,liger,torch_compile (default all)")
    p.add_argument("--modes", default=",".join(ALL_MODES), help="comma list of forward,backward,full")
    p.add_argument("--rep-ms", type=float, default=None, help="do_bench rep in ms (default 400; 20 with --quick)")
    p.add_argument("--warmup-ms", type=float, default=25.0, help="do_bench warmup in ms (default 25)")
    p.add_argument("--graph-rep-ms", type=float, default=20.0,
                   help="do_bench_cudagraph rep in ms for the copy_cudagraph rows (default 20, triton's)")
    p.add_argument("--copy-big-gib", type=float, default=None,
                   help="size of each buffer of the ceiling copy in GiB (default 2; 0.25 with --quick; 0 skips)")
    p.add_argument("--no-copy", action="store_true", help="skip the per-point and ceiling copies")
    p.add_argument("--rope-theta", default="10000",
                   help="rope theta for freqs_cis (default 10000, kluabench's); 'config' keeps "
                        "Llama4TextConfig's default (500000), which Liger's benchmark gets. Times do not depend on it")
    p.add_argument("--seed", type=int, default=0, help="torch.manual_seed before each point's inputs")
    p.add_argument("--check-only", action="store_true", help="run the checks against HF eager, time nothing")
    p.add_argument("--quick", action="store_true", help="smoke test: 2 points, rep 20 ms, 256 MiB ceiling copy")
    p.add_argument("--device", choices=["cuda", "cpu"], default="cuda",
                   help="cpu only tests the plumbing (wall-clock timer, no liger unless TRITON_INTERPRET=1)")
    a = p.parse_args(argv)
    a.providers = [s for s in a.providers.split(",") if s]
    a.modes = [s for s in a.modes.split(",") if s]
    for m in a.modes:
        if m not in ALL_MODES:
            p.error(f"unknown mode {m!r} (known: {', '.join(ALL_MODES)})")
    if a.rep_ms is None:
        a.rep_ms = 20.0 if a.quick else 400.0
    if a.copy_big_gib is None:
        a.copy_big_gib = 0.25 if a.quick else 2.0
    a.rope_theta = None if a.rope_theta == "config" else float(a.rope_theta)
    return a


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    t_start = time.perf_counter()
    env = Env(args)
    if env.device == "cuda" and not env.torch.cuda.is_available():
        say("error: CUDA is not available (use --device cpu to test the plumbing)")
        return 1
    for key, val in env.versions().items():
        say(f"{key:>13}: {val}")
    theta = "config default" if args.rope_theta is None else args.rope_theta
    say(f"protocol: do_bench rep {args.rep_ms} ms, warmup {args.warmup_ms} ms, quantiles {QUANTILES}, "
        f"grad_to_none=[q, k]; seed {args.seed}; rope theta {theta}")

    points = sweep_points(args.sweep, args.quick)
    providers, skipped = build_providers(env, args.providers)
    problems = dict(skipped)

    # 1. every provider against HF eager, at every point, before any timing
    say(f"\nchecking {len(providers)} provider(s) against HF eager at {len(points)} point(s) "
        f"(atol {ATOL}, rtol {RTOL}, bf16); torch.compile compiles here")
    failed = set()
    for pt in points:
        for name, (ok, text) in check_point(env, pt, providers, args.seed).items():
            if not ok:
                failed.add(name)
                problems[name] = f"check failed at {pt.label()}: {text}"
    for name in sorted(failed):
        say(f"FAIL provider {name}: {problems[name]} -- not timed")
        providers.pop(name)
    say(f"checks done at {time.perf_counter() - t_start:.1f} s")
    if args.check_only:
        return 0 if not problems else 2

    out = CsvOut(args.out, env)
    results, copies, copy_rate = {}, {}, None

    # 2. the ceiling: one large device-to-device copy
    if not args.no_copy and args.copy_big_gib > 0:
        nbytes, r = time_big_copy(env, args)
        moved = 2 * nbytes
        bw = tuple(moved / (t * 1e-3) / 1e9 for t in r)
        copy_rate = moved / (r[0] * 1e-3)
        cfg = json.dumps({"dtype": "torch.bfloat16", "bytes_moved": moved, "counting": "read+write",
                          "op": "torch.Tensor.copy_"})
        label = "buffer bytes (moved = 2x: read + write)"
        out.row("copy", "copy", "copy", "speed", "ms", "B", label, nbytes, r, cfg)
        out.row("copy", "copy", "copy", "bandwidth", "GB/s", "B", label, nbytes, bw, cfg)
        say(f"\nceiling copy: {nbytes / 2**30:.2f} GiB buffer, {moved / 1e9:.2f} GB moved in {r[0]:.4f} ms "
            f"(p20 {r[1]:.4f}, p80 {r[2]:.4f}) = {bw[0]:.0f} GB/s")

    # 3. the sweep, in Liger's loop order per sweep: mode, provider, x
    for sweep in ("hidden", "seq"):
        pts = [pt for pt in points if pt.sweep == sweep]
        if not pts:
            continue
        say(f"\n{sweep} sweep")
        for mode in args.modes:
            for name, fn in providers.items():
                for pt in pts:
                    try:
                        r = time_provider(env, pt, fn, mode, args)
                    except Exception as e:
                        problems[f"{name}/{mode}/{pt.label()}"] = f"{type(e).__name__}: {e}"
                        say(f"  ERROR {pt.label():<16} {mode:<8} {name:<14} {type(e).__name__}: {e}")
                        traceback.print_exc(file=sys.stdout)
                        continue
                    results[(pt.label(), mode, name)] = r
                    out.point(pt, name, mode, r)
                    say(f"  {pt.label():<16} {mode:<8} {name:<14} {r[0]:9.4f} ms  (p20 {r[1]:.4f}, p80 {r[2]:.4f})")
                    if env.device == "cuda":
                        env.torch.cuda.empty_cache()
        if not args.no_copy:
            for pt in pts:
                r, g = time_point_copy(env, pt, args)
                copies[pt.label()] = (r, g)
                out.point(pt, "copy", "copy", r)
                if g:
                    out.point(pt, "copy", "copy_cudagraph", g)
                gtxt = f", in a CUDA graph {g[0]:.4f} ms" if g else ""
                say(f"  {pt.label():<16} copy of {2 * pt.qk_elems * 2 / 1e6:.1f} MB: {r[0]:.4f} ms{gtxt}")

    out.f.close()
    print_table(points, args.modes, list(providers), results, copies, copy_rate)
    say(f"\nwrote {args.out}; total {time.perf_counter() - t_start:.1f} s")
    if problems:
        say("problems:")
        for key, text in problems.items():
            say(f"  {key}: {text}")
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
