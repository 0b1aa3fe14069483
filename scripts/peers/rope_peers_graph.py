#!/usr/bin/env python3
"""The peers of kluabench's RoPE benchmarks at the launch-bound points, in CUDA graphs and under Nsight Compute.

Runs on the GPU machine only (torch with CUDA, transformers; Liger-Kernel optional). It reuses
scripts/peers/rope_peers.py for the kernels, their inputs and providers (HF eager and Liger;
torch.compile is left out: its own CUDA-graph mode is a different program).

Points: hidden 512 and 2048 at seq 2048, hidden 8192 at seq 1024 (bf16, 32 q heads, 8 kv heads),
modes forward, backward, full, as rope_peers.py times them (backward: autograd.grad of a forward
made once; full: the forward and autograd.grad).

--what graph (default): per (kernel, point, mode, provider) a torch.cuda.CUDAGraph that calls the
  step once on each of R input sets, R chosen so that the sets' bytes exceed 2 x the L2 (as
  kluabench's graph mode rotates its inputs, so caches stay cold), the launches repeated to at
  least 20; replayed 20 times between CUDA events after 3 warm replays. Per-call time = replay
  time / launches; median, p20, p80 over the replays. CSV on --out:
    kernel,point,mode,provider,per_call_us,p20_us,p80_us,sets,launches
--what ncu: the same steps, --calls of each after an L2 flush (a 256 MB zero_), for
    ncu --clock-control none --cache-control none --metrics gpu__time_duration.sum \\
        --kernel-name regex:'rope' python3 scripts/peers/rope_peers_graph.py --what ncu
  (Liger's kernels are _triton_rope and _llama4_rope_kernel; HF eager launches many small
  elementwise kernels, so ncu is asked for Liger only).
Exit status 0, or 2 when a provider or a cell failed (its error is printed; the others run).
"""

import argparse
import csv
import os
import sys
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rope_peers as rp  # noqa: E402

POINTS = [("hidden", 512, 2048), ("hidden", 2048, 2048), ("seq", 8192, 1024)]
MODES = ["forward", "backward", "full"]


def step_of(torch, fn, mode, q, k, dq, dk, table):
    """The step rope_peers.py times, on one input set."""
    if mode == "forward":
        return lambda: fn(q, k, *table)
    if mode == "backward":
        q_out, k_out = fn(q, k, *table)
        return lambda: torch.autograd.grad((q_out, k_out), (q, k), (dq, dk), allow_unused=True, retain_graph=True)

    def full():
        q_out, k_out = fn(q, k, *table)
        return torch.autograd.grad((q_out, k_out), (q, k), (dq, dk), allow_unused=True)
    return full


def graph_time(env, kernel, pt, fn, mode, l2_bytes):
    torch = env.torch
    one = 2 * pt.qk_elems * 2  # q, k, dq, dk in bf16
    sets = max(2, -(-2 * l2_bytes // one) + 1)
    launches = -(-max(20, sets) // sets) * sets
    # Autograd runs a backward on the stream its forward ran on. So the forward that backward's
    # step differentiates is made on the stream the graph is captured on, not on the default
    # stream: a backward queued on the default (legacy) stream during a capture is an error
    # (cudaErrorStreamCaptureImplicit), and a failed capture leaves torch's generator state
    # broken for every later cell.
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    steps = []
    with torch.cuda.stream(side):
        for i in range(sets):
            q, k, dq, dk, table = rp.make_inputs(env, kernel, pt, i)
            steps.append(step_of(torch, fn, mode, q, k, dq, dk, table))
        for s in steps:
            for _ in range(2):
                s()
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g, stream=side):
        for i in range(launches):
            steps[i % sets]()
    for _ in range(3):
        g.replay()
    torch.cuda.synchronize()
    times = []
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for _ in range(20):
        a.record()
        g.replay()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) * 1e3 / launches)
    times.sort()
    n = len(times)
    del g, steps
    torch.cuda.empty_cache()
    return times[n // 2], times[n // 5], times[(4 * n) // 5], sets, launches


def ncu_calls(env, kernel, pt, fn, mode, calls, flush):
    q, k, dq, dk, table = rp.make_inputs(env, kernel, pt, 0)
    s = step_of(env.torch, fn, mode, q, k, dq, dk, table)
    s()
    for _ in range(calls):
        flush.zero_()
        s()
    env.torch.cuda.synchronize()


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog=__doc__.split("\n\n", 1)[1])
    p.add_argument("--what", choices=["graph", "ncu"], default="graph")
    p.add_argument("--out", help="CSV for --what graph (default stdout)")
    p.add_argument("--kernel", default="llama4_rope,rope")
    p.add_argument("--providers", default="huggingface,liger")
    p.add_argument("--calls", type=int, default=5, help="calls per cell under --what ncu")
    p.add_argument("--points", help="only these points, e.g. H2048_T2048,H8192_T1024 (default all)")
    p.add_argument("--modes", help="only these modes, e.g. forward (default all)")
    a = p.parse_args(argv)
    labels = [f"H{h}_T{t}" for _, h, t in POINTS]
    points = a.points.split(",") if a.points else labels
    modes = a.modes.split(",") if a.modes else MODES
    for name, given, known in (("--points", points, labels), ("--modes", modes, MODES)):
        for v in given:
            if v not in known:
                p.error(f"{name}: unknown {v!r} (known: {', '.join(known)})")
    env = rp.Env(argparse.Namespace(device="cuda", rope_theta="10000"))
    env.theta = 10000.0
    torch = env.torch
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    out = open(a.out, "w", newline="") if a.out else sys.stdout
    w = csv.writer(out)
    if a.what == "graph":
        w.writerow(["kernel", "point", "mode", "provider", "per_call_us", "p20_us", "p80_us", "sets", "launches"])
    flush = torch.empty(256 * 2**20 // 4, device="cuda", dtype=torch.float32) if a.what == "ncu" else None
    failed = False
    for kname in a.kernel.split(","):
        kernel = rp.KERNELS[kname].load()
        providers, skipped = rp.build_providers(env, kernel, a.providers.split(","))
        for key, why in skipped.items():
            print(f"skipped {key}: {why}", file=sys.stderr)
            failed = True
        for sweep, hidden, seq in POINTS:
            if f"H{hidden}_T{seq}" not in points:
                continue
            pt = rp.Point(kname, sweep, hidden, seq)
            for mode in modes:
                for name, fn in providers.items():
                    try:
                        if a.what == "ncu":
                            ncu_calls(env, kernel, pt, fn, mode, a.calls, flush)
                            print(f"ncu calls: {kname} {pt.label()} {mode} {name}", file=sys.stderr)
                            continue
                        med, p20, p80, sets, launches = graph_time(env, kernel, pt, fn, mode, l2)
                        w.writerow([kname, f"H{hidden}_T{seq}", mode, name, f"{med:.3f}", f"{p20:.3f}",
                                    f"{p80:.3f}", sets, launches])
                        out.flush()
                        print(f"graph {kname} {pt.label()} {mode} {name}: {med:.2f} us per call", file=sys.stderr)
                    except Exception as e:  # a cell that cannot be captured is reported, the rest run
                        failed = True
                        print(f"ERROR {kname} {pt.label()} {mode} {name}: {type(e).__name__}: {e}", file=sys.stderr)
                        traceback.print_exc()
                        torch.cuda.synchronize()
    if a.out:
        out.close()
    return 2 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
