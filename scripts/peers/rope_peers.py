#!/usr/bin/env python3
"""Times kluabench's peers on Liger-Kernel's RoPE benchmarks (llama4_rope, rope) the way Liger's own benchmarks do.

Runs on the GPU machine only (it needs torch with CUDA, triton and transformers;
Liger-Kernel is optional: a provider that fails to import or to match Hugging Face
is reported and skipped, the others still run). --plan prints what a run would time
without importing torch, so it runs anywhere.

Kernels (--kernel, a comma list; the CSV's kernel_name)
  llama4_rope  Liger's benchmark_llama4_rope.py, Llama 4's rotation of adjacent pairs:
    huggingface    transformers.models.llama4.modeling_llama4.apply_rotary_emb, eager
    liger          liger_kernel.transformers.llama4_rope.liger_llama4_text_rotary_pos_emb
    torch_compile  torch.compile(apply_rotary_emb, dynamic=False)
    q, k: randn (1, seq, heads, head_dim), requires_grad;
    freqs_cis = Llama4TextRotaryEmbedding(config)(q, arange(seq)[None]) (complex64, (1, seq, head_dim/2))
  rope         Liger's benchmark_rope.py, the rotate-half rotation of Llama and Qwen:
    huggingface    transformers.models.llama.modeling_llama.apply_rotary_pos_emb, eager
    liger          liger_kernel.transformers.rope.liger_rotary_pos_emb
    torch_compile  torch.compile(apply_rotary_pos_emb, dynamic=False)
    q, k: randn (1, seq, heads, head_dim), requires_grad, seen through .transpose(1, 2) as
    (1, heads, seq, head_dim), as Liger's benchmark passes them;
    cos, sin = LlamaRotaryEmbedding(config)(k, arange(seq)[None]) (bf16, (1, seq, head_dim) each).
    Liger's benchmark also passes position_ids to liger_rotary_pos_emb, which ignores them;
    they are left out here.
  torch.compile specialises one graph per shape (dynamic=False).

Protocol (both kernels; Liger-Kernel's benchmark scripts as they stood until their April 2026
refactor, the versions with this sweep):
  batch 1, 32 q heads, 8 kv heads, head_dim = hidden / 32, bf16;
  hidden sweep {512, 2048, 8192} at seq 2048 (x_name H) and
  seq sweep {1024, 2048, 4096, 8192, 16384} at hidden 8192 (x_name T);
  dq, dk: randn_like(q), randn_like(k), the upstream gradients;
  forward:  do_bench(lambda: fwd(q, k, table))
  backward: q_out, k_out = fwd(...) once, then
            do_bench(lambda: autograd.grad((q_out, k_out), (q, k), (dq, dk), allow_unused=True, retain_graph=True))
  full:     do_bench(lambda: autograd.grad(fwd(...), (q, k), (dq, dk), allow_unused=True))
  all with grad_to_none=[q, k], rep=400 ms, warmup=25 ms, quantiles (0.5, 0.2, 0.8),
  fresh inputs for every (point, mode, provider). Unlike Liger, inputs are seeded
  (--seed), so every provider sees the same numbers at a point.
  (Liger's main since that refactor sweeps model configs, times rep 10 ms and the backward
  of q_out alone; issue 4's reference numbers and this sweep are the older protocol above.)
Liger's kernels work in place: their forward rotates q and k, their backward dq and dk, as in
Liger's own benchmarks; the checks therefore give every provider private copies.

Checks: before any timing, every provider's forward outputs and gradients are compared with
HF eager's on the same inputs at every point (within atol + 1e-2 |ref|, bf16; atol 1e-2 for
llama4_rope, whose HF function rounds once; 1e-1 for rope, whose HF function rounds every
op, as Liger's own test allows); a provider that fails anywhere is not timed.

Copy rows (kernel_provider "copy"), the bandwidth yardsticks:
  * per point, kernel_name of the point, same x and config as the point:
      mode "copy":           do_bench (same protocol, L2 flushed) of dst.copy_(src),
                              src and dst bf16 buffers of q+k's element count, so it moves
                              2 * (q+k bytes) (read + write); the RoPE traffic also reads
                              the frequency table, which this copy leaves out;
      mode "copy_cudagraph": the same copy under triton.testing.do_bench_cudagraph
                              (rep 20 ms, triton's default; no L2 flush: the copy of the
                              same bytes in a CUDA graph, as issue 4's target 3 states it).
  * once per run, kernel_name "copy", x_name "B", x_value = bytes of one buffer (default
    2 GiB), config {"bytes_moved": 2 * buffer bytes, ...}: metric "speed" (ms, do_bench) and
    metric "bandwidth" (GB/s = bytes_moved / time, 1e9 bytes; y_value_20 is computed from
    the 20th-percentile time, so it is the higher rate). This is the copy-bandwidth ceiling.

Output: Liger-format CSV rows, appended and flushed as each measurement finishes (--append
adds to an existing CSV of this header, e.g. a second kernel's run).
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

# transformers 5.17 warns on every *RotaryEmbedding(device=...), which Liger's benchmarks pass
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
RTOL = 1e-2


def say(*parts):
    print(*parts, flush=True)


# --------------------------------------------------------------------------- the kernels

# Where Hugging Face's and Liger-Kernel's functions are, and how their inputs are laid out: the same as the
# peers kluabench times itself (stdlib/kluabench/benchmarks/rope_providers.py, through kb.python), read from
# there so that both call the same functions.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "stdlib", "kluabench",
                                "benchmarks"))
from rope_providers import KERNELS  # noqa: E402  (imports nothing beyond the standard library)
from rope_providers import rotary_embedding as _rotary_embedding  # noqa: E402


# --------------------------------------------------------------------------- sweep points

class Point:
    """One x value of one of Liger's two sweeps of one kernel, with the CSV fields Liger writes for it."""

    def __init__(self, kernel, sweep, hidden, seq):
        self.kernel, self.sweep, self.hidden, self.seq = kernel, sweep, hidden, seq
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


def sweep_points(kernel, which, quick):
    hidden = [512] if quick else HIDDEN_SWEEP
    seqs = [4096] if quick else SEQ_SWEEP
    pts = []
    if which in ("hidden", "all"):
        pts += [Point(kernel, "hidden", h, 2048) for h in hidden]
    if which in ("seq", "all"):
        pts += [Point(kernel, "seq", 8192, t) for t in seqs]
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

    def sync(self):
        if self.device == "cuda":
            self.torch.cuda.synchronize()

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

def build_providers(env, kernel, names):
    """name -> callable(q, k, *table) -> (q_out, k_out); failures reported, not raised."""
    torch = env.torch
    providers, skipped = {}, {}
    for name in names:
        try:
            if name == "huggingface":
                providers[name] = kernel.hf
                say(f"provider {kernel.name} huggingface: {kernel.hf_where} (eager)")
            elif name == "liger":
                fn, where = kernel.load_liger()
                providers[name] = fn
                say(f"provider {kernel.name} liger: {where} (liger-kernel {env.liger_version})")
            elif name == "torch_compile":
                dyn = torch._dynamo.config
                for knob in ("recompile_limit", "cache_size_limit"):
                    if hasattr(dyn, knob):
                        setattr(dyn, knob, max(64, getattr(dyn, knob)))
                providers[name] = torch.compile(kernel.hf, dynamic=False)
                say(f"provider {kernel.name} torch_compile: torch.compile({kernel.hf_name}, dynamic=False), default mode")
            else:
                raise ValueError(f"unknown provider {name!r} (known: {', '.join(ALL_PROVIDERS)})")
        except Exception as e:
            skipped[f"{kernel.name}/{name}"] = f"unavailable: {type(e).__name__}: {e}"
            say(f"SKIP provider {kernel.name} {name}: {skipped[f'{kernel.name}/{name}']}")
    return providers, skipped


# --------------------------------------------------------------------------- inputs

def rotary_embedding(env, kernel, pt):
    """HF's rotary embedding module for the point, built as Liger's benchmark builds it."""
    return _rotary_embedding(kernel, pt.hidden, pt.seq, Q_HEADS, KV_HEADS, env.theta, env.device)


def make_inputs(env, kernel, pt, seed):
    """q, k (in the kernel's layout), dq, dk and the table arguments: (freqs_cis,) or (cos, sin)."""
    torch = env.torch
    dev, dt = env.device, env.dtype
    torch.manual_seed(seed)
    q = kernel.layout(torch.randn((BATCH, pt.seq, Q_HEADS, pt.head_dim), device=dev, dtype=dt, requires_grad=True))
    k = kernel.layout(torch.randn((BATCH, pt.seq, KV_HEADS, pt.head_dim), device=dev, dtype=dt, requires_grad=True))
    dq = torch.randn_like(q)
    dk = torch.randn_like(k)
    pos_ids = torch.arange(pt.seq, device=dev, dtype=torch.long).unsqueeze(0)
    table = rotary_embedding(env, kernel, pt)(q if kernel.embed_input == "q" else k, pos_ids)
    return q, k, dq, dk, (tuple(table) if isinstance(table, (tuple, list)) else (table,))


def fresh_leaf(t):
    """A private leaf copy with t's strides (clone keeps a transposed layout)."""
    return t.detach().clone().requires_grad_(True)


# --------------------------------------------------------------------------- check

def run_once(fn, q, k, dq, dk, table):
    """Forward and backward on private copies (Liger rotates q, k, dq and dk in place)."""
    import torch
    q1, k1 = fresh_leaf(q), fresh_leaf(k)
    q_out, k_out = fn(q1, k1, *table)
    fwd = (q_out.detach().clone(), k_out.detach().clone())
    gq, gk = torch.autograd.grad((q_out, k_out), (q1, k1), (dq.clone(), dk.clone()), allow_unused=True)
    return fwd, (gq, gk)


def compare(name, got, ref, atol):
    """Max abs diff, and whether every element is within atol + RTOL * |ref|."""
    import torch
    if got is None:
        return math.inf, False, f"{name}: missing"
    if got.shape != ref.shape or got.dtype != ref.dtype:
        return math.inf, False, f"{name}: got {tuple(got.shape)} {got.dtype}, want {tuple(ref.shape)} {ref.dtype}"
    g, r = got.float(), ref.float()
    if not torch.isfinite(g).all():
        return math.inf, False, f"{name}: non-finite values"
    diff = (g - r).abs()
    ok = bool((diff <= atol + RTOL * r.abs()).all())
    return float(diff.max()), ok, ""


def check_point(env, kernel, pt, providers, seed):
    """Each provider against HF eager on the same inputs; returns {name: (ok, text)}."""
    q, k, dq, dk, table = make_inputs(env, kernel, pt, seed)
    (rq, rk), (rgq, rgk) = run_once(kernel.hf, q, k, dq, dk, table)
    out = {}
    for name, fn in providers.items():
        t0 = time.perf_counter()
        try:
            (oq, ok_), (gq, gk) = run_once(fn, q, k, dq, dk, table)
            parts, all_ok, worst = [], True, 0.0
            for label, got, ref in (("q_out", oq, rq), ("k_out", ok_, rk), ("dq", gq, rgq), ("dk", gk, rgk)):
                d, ok, why = compare(label, got, ref, kernel.atol)
                all_ok &= ok
                worst = max(worst, d)
                parts.append(why or f"{label} {d:.3g}")
            env.sync()
            dt = time.perf_counter() - t0
            out[name] = (all_ok, f"max|diff| {worst:.3g} ({', '.join(parts)}) [{dt:.1f} s]")
        except Exception as e:
            out[name] = (False, f"error {type(e).__name__}: {e}")
            traceback.print_exc(file=sys.stdout)
        verdict = "ok  " if out[name][0] else "FAIL"
        say(f"  check {kernel.name:<11} {pt.label():<16} {name:<14} {verdict} {out[name][1]}")
    del q, k, dq, dk, table
    return out


def check_kernel(env, kernel, points, providers, seed, problems):
    """Checks every provider at every point; drops (and reports) the ones that fail."""
    failed = set()
    for pt in points:
        for name, (ok, text) in check_point(env, kernel, pt, providers, seed).items():
            if not ok:
                failed.add(name)
                problems[f"{kernel.name}/{name}"] = f"check failed at {pt.label()}: {text}"
    for name in sorted(failed):
        say(f"FAIL provider {kernel.name} {name}: {problems[f'{kernel.name}/{name}']} -- not timed")
        providers.pop(name)


# --------------------------------------------------------------------------- timing

def time_provider(env, pt, fn, mode, args, kernel):
    torch = env.torch
    q, k, dq, dk, table = make_inputs(env, kernel, pt, args.seed)
    if mode == "forward":
        def step():
            return fn(q, k, *table)
    elif mode == "backward":
        q_out, k_out = fn(q, k, *table)

        def step():
            return torch.autograd.grad((q_out, k_out), (q, k), (dq, dk), allow_unused=True, retain_graph=True)
    elif mode == "full":
        def step():
            q_out, k_out = fn(q, k, *table)
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

def has_rows(path):
    """Whether path is a non-empty file; raises ValueError when its first row is not HEADER."""
    if not (os.path.exists(path) and os.path.getsize(path) > 0):
        return False
    with open(path, newline="") as f:
        first = next(csv.reader(f), None)
    if first != HEADER:
        raise ValueError(f"{path} does not start with the header of Liger's CSV (its first row: {first!r})")
    return True


class CsvOut:
    def __init__(self, path, env, append=False):
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        old = append and has_rows(path)
        self.f = open(path, "a" if old else "w", newline="")
        self.w = csv.writer(self.f)
        if not old:
            self.w.writerow(HEADER)
            self.f.flush()
        self.env = env

    def row(self, kernel, provider, mode, metric, unit, x_name, x_label, x_value, ys, config_str):
        self.w.writerow([kernel, provider, mode, metric, unit, x_name, x_label, x_value,
                         ys[0], ys[1], ys[2], config_str, self.env.gpu_name,
                         time.strftime("%Y-%m-%d %H:%M:%S"), self.env.liger_version])
        self.f.flush()

    def point(self, pt, provider, mode, ys):
        self.row(pt.kernel, provider, mode, "speed", "ms", pt.x_name, pt.x_label, pt.x_value, ys, pt.config_str)


def ideal_bytes(pt, mode):
    """Read q, k and the frequency table (complex64, or cos and sin in bf16: 4 bytes per
    element of a head) once, write q and k once; full = two passes."""
    one = 2 * pt.qk_elems * 2 + pt.seq * pt.head_dim * 4
    return one * (2 if mode == "full" else 1)


def print_table(kernel, points, modes, names, results, copies, copy_rate):
    cols = names + ["copy", "copy_graph"]
    say("")
    say(f"{kernel}: median ms (do_bench); copy = dst.copy_(src) of q+k bytes; "
        "%bw = ideal bytes / time / big-copy rate")
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
    p.add_argument("--out", help="CSV file to write (Liger's format); required unless --plan or --check-only")
    p.add_argument("--append", action="store_true",
                   help="add the rows to --out when it exists (its header must be Liger's) instead of replacing it")
    p.add_argument("--kernel", default="llama4_rope",
                   help=f"comma list of {','.join(KERNELS)}, or all (default llama4_rope)")
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
                   help="rope theta for the frequency table (default 10000, kluabench's); 'config' keeps "
                        "the config's default (500000 for Llama4TextConfig, which Liger's llama4_rope "
                        "benchmark gets; 10000 for LlamaConfig). Times do not depend on it")
    p.add_argument("--seed", type=int, default=0, help="torch.manual_seed before each point's inputs")
    p.add_argument("--check-only", action="store_true", help="run the checks against HF eager, time nothing")
    p.add_argument("--plan", action="store_true",
                   help="print the kernels, points and timings a run would make, and the least time "
                        "do_bench needs for them; imports nothing, times nothing")
    p.add_argument("--quick", action="store_true", help="smoke test: 2 points a kernel, rep 20 ms, 256 MiB ceiling copy")
    p.add_argument("--device", choices=["cuda", "cpu"], default="cuda",
                   help="cpu only tests the plumbing (wall-clock timer, no liger unless TRITON_INTERPRET=1)")
    a = p.parse_args(argv)
    a.kernels = list(KERNELS) if a.kernel == "all" else [s for s in a.kernel.split(",") if s]
    for kname in a.kernels:
        if kname not in KERNELS:
            p.error(f"--kernel: unknown kernel {kname!r} (known: {', '.join(KERNELS)}, all)")
    a.providers = [s for s in a.providers.split(",") if s]
    for name in a.providers:
        if name not in ALL_PROVIDERS:
            p.error(f"--providers: unknown provider {name!r} (known: {', '.join(ALL_PROVIDERS)})")
    a.modes = [s for s in a.modes.split(",") if s]
    for m in a.modes:
        if m not in ALL_MODES:
            p.error(f"--modes: unknown mode {m!r} (known: {', '.join(ALL_MODES)})")
    if not (a.kernels and a.providers and a.modes):
        p.error("--kernel, --providers and --modes each need at least one name")
    if a.out is None and not (a.plan or a.check_only):
        p.error("--out is required (the CSV to write), unless --plan or --check-only")
    if a.append and a.out:
        try:
            has_rows(a.out)
        except (OSError, ValueError) as e:
            p.error(f"--append: {e}")
    if a.rep_ms is None:
        a.rep_ms = 20.0 if a.quick else 400.0
    if a.copy_big_gib is None:
        a.copy_big_gib = 0.25 if a.quick else 2.0
    if a.rep_ms <= 0 or a.warmup_ms < 0 or a.graph_rep_ms <= 0 or a.copy_big_gib < 0:
        p.error("--rep-ms and --graph-rep-ms must be positive, --warmup-ms and --copy-big-gib not negative")
    a.rope_theta = None if a.rope_theta == "config" else float(a.rope_theta)
    return a


def plan(args):
    """What a run would time, and the least time do_bench spends on it (warm-up + rep per
    timing; checks, compilation and input setup come on top)."""
    timings = copies = graphs = 0
    for kname in args.kernels:
        pts = sweep_points(kname, args.sweep, args.quick)
        n = len(pts) * len(args.modes) * len(args.providers)
        c = 0 if args.no_copy else len(pts)
        say(f"{kname}: {len(pts)} points ({', '.join(p.label() for p in pts)}) x "
            f"{len(args.modes)} modes x {len(args.providers)} providers = {n} timings, {c} point copies")
        timings, copies, graphs = timings + n, copies + c, graphs + c
    big = 0 if args.no_copy or args.copy_big_gib <= 0 else 1
    secs = ((timings + copies + big) * (args.rep_ms + args.warmup_ms) + graphs * args.graph_rep_ms) / 1e3
    say(f"total: {timings} timings, {copies} point copies, {big} ceiling copy; do_bench alone "
        f"at least {secs:.1f} s (rep {args.rep_ms:g} ms, warmup {args.warmup_ms:g} ms)")
    return 0


def run_kernel(env, kernel, args, out, copy_rate, problems):
    """Checks, then times, one kernel's sweep; writes its rows and prints its table."""
    points = sweep_points(kernel.name, args.sweep, args.quick)
    providers, skipped = build_providers(env, kernel, args.providers)
    problems.update(skipped)
    t0 = time.perf_counter()
    say(f"\nchecking {len(providers)} {kernel.name} provider(s) against HF eager at {len(points)} point(s) "
        f"(atol {kernel.atol:g}, rtol {RTOL:g}, bf16); torch.compile compiles here")
    check_kernel(env, kernel, points, providers, args.seed, problems)
    say(f"{kernel.name} checks done in {time.perf_counter() - t0:.1f} s")
    if out is None:
        return
    results, copies = {}, {}
    # Liger's loop order per sweep: mode, provider, x
    for sweep in ("hidden", "seq"):
        pts = [pt for pt in points if pt.sweep == sweep]
        if not pts:
            continue
        say(f"\n{kernel.name} {sweep} sweep")
        for mode in args.modes:
            for name, fn in providers.items():
                for pt in pts:
                    try:
                        r = time_provider(env, pt, fn, mode, args, kernel)
                    except Exception as e:
                        problems[f"{kernel.name}/{name}/{mode}/{pt.label()}"] = f"{type(e).__name__}: {e}"
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
    print_table(kernel.name, points, args.modes, list(providers), results, copies, copy_rate)


def time_ceiling(env, args, out):
    """The ceiling: one large device-to-device copy; its rate in bytes/s."""
    nbytes, r = time_big_copy(env, args)
    moved = 2 * nbytes
    bw = tuple(moved / (t * 1e-3) / 1e9 for t in r)
    cfg = json.dumps({"dtype": "torch.bfloat16", "bytes_moved": moved, "counting": "read+write",
                      "op": "torch.Tensor.copy_"})
    label = "buffer bytes (moved = 2x: read + write)"
    out.row("copy", "copy", "copy", "speed", "ms", "B", label, nbytes, r, cfg)
    out.row("copy", "copy", "copy", "bandwidth", "GB/s", "B", label, nbytes, bw, cfg)
    say(f"\nceiling copy: {nbytes / 2**30:.2f} GiB buffer, {moved / 1e9:.2f} GB moved in {r[0]:.4f} ms "
        f"(p20 {r[1]:.4f}, p80 {r[2]:.4f}) = {bw[0]:.0f} GB/s")
    return moved / (r[0] * 1e-3)


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if args.plan:
        return plan(args)
    t_start = time.perf_counter()
    env = Env(args)
    if env.device == "cuda" and not env.torch.cuda.is_available():
        say("error: CUDA is not available (use --device cpu to test the plumbing)")
        return 1
    for key, val in env.versions().items():
        say(f"{key:>13}: {val}")
    theta = "config default" if args.rope_theta is None else args.rope_theta
    say(f"protocol: do_bench rep {args.rep_ms} ms, warmup {args.warmup_ms} ms, quantiles {QUANTILES}, "
        f"grad_to_none=[q, k]; seed {args.seed}; rope theta {theta}; kernels {', '.join(args.kernels)}")

    problems = {}
    out = None if args.check_only else CsvOut(args.out, env, args.append)
    copy_rate = None
    if out and not args.no_copy and args.copy_big_gib > 0:
        copy_rate = time_ceiling(env, args, out)
    for kname in args.kernels:
        try:
            kernel = KERNELS[kname].load()
        except Exception as e:
            problems[kname] = f"HF side unavailable: {type(e).__name__}: {e}"
            say(f"SKIP kernel {kname}: {problems[kname]}")
            continue
        run_kernel(env, kernel, args, out, copy_rate, problems)
    if out:
        out.f.close()
        say(f"\nwrote {args.out}")
    say(f"total {time.perf_counter() - t_start:.1f} s")
    if problems:
        say("problems:")
        for key, text in problems.items():
            say(f"  {key}: {text}")
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
