"""A Llama 4 (interleaved) RoPE kernel in Triton: compiled, timed with
triton.testing.do_bench, and its cubin, PTX and metadata JSON dumped into a
folder for bench/triton_cubin.lua, which times the same binary in kluabench.

    python3 bench/triton_rope.py --out build/triton_rope [--seq 2048]

Writes OUT/rope_llama4_kernel.{cubin,ptx,json} and OUT/python.json (the
Python timing and the shapes). Nothing of Python runs inside kluabench's
timed region: kluabench only loads the cubin.
"""
import argparse
import json
import os

import torch
import triton
import triton.language as tl


@triton.jit
def rope_llama4_kernel(x_ptr, out_ptr, freqs_ptr, rows, seq, heads,
                       HALF: tl.constexpr, BLOCK_ROWS: tl.constexpr):
    # x, out: [rows, 2 * HALF] bf16 (rows = B * S * H); freqs: f32 [S, HALF, 2] (cos, sin)
    pid = tl.program_id(0)
    r = pid * BLOCK_ROWS + tl.arange(0, BLOCK_ROWS)[:, None]
    i = tl.arange(0, HALF)[None, :]
    mask = r < rows
    s = (r // heads) % seq
    base = r.to(tl.int64) * (2 * HALF) + 2 * i
    re = tl.load(x_ptr + base, mask=mask).to(tl.float32)
    im = tl.load(x_ptr + base + 1, mask=mask).to(tl.float32)
    f = (s * HALF + i) * 2
    c = tl.load(freqs_ptr + f, mask=mask)
    sn = tl.load(freqs_ptr + f + 1, mask=mask)
    tl.store(out_ptr + base, (re * c - im * sn).to(tl.bfloat16), mask=mask)
    tl.store(out_ptr + base + 1, (re * sn + im * c).to(tl.bfloat16), mask=mask)


BLOCK_ROWS = 16


def launch(x, out, freqs, seq, heads):
    rows = x.numel() // x.shape[-1]
    grid = (triton.cdiv(rows, BLOCK_ROWS),)
    return rope_llama4_kernel[grid](x, out, freqs, rows, seq, heads,
                                    HALF=x.shape[-1] // 2, BLOCK_ROWS=BLOCK_ROWS)


def prepare(seq, out, q_heads=32, kv_heads=8, head_dim=128):
    """Compiles the kernel for seq, dumps its cubin, PTX and metadata JSON into
    out, and returns (both, info): both() launches it on q and on k (what is
    timed), info the shapes and names (python.json's fields but the timings)."""
    os.makedirs(out, exist_ok=True)
    dev = "cuda"
    q = torch.randn(1, seq, q_heads, head_dim, device=dev, dtype=torch.bfloat16)
    k = torch.randn(1, seq, kv_heads, head_dim, device=dev, dtype=torch.bfloat16)
    ang = torch.arange(seq, device=dev, dtype=torch.float32)[:, None] * \
        (1.0 / 500000.0 ** (torch.arange(0, head_dim, 2, device=dev, dtype=torch.float32) / head_dim))
    freqs = torch.stack([ang.cos(), ang.sin()], dim=-1).contiguous()
    qo, ko = torch.empty_like(q), torch.empty_like(k)

    compiled = launch(q, qo, freqs, seq, q_heads)
    launch(k, ko, freqs, seq, kv_heads)
    torch.cuda.synchronize()

    name = compiled.metadata.name if hasattr(compiled.metadata, "name") else compiled.metadata["name"]
    asm = compiled.asm
    with open(os.path.join(out, name + ".cubin"), "wb") as f:
        f.write(asm["cubin"])
    with open(os.path.join(out, name + ".ptx"), "w") as f:
        f.write(asm["ptx"])
    meta = asm.get("json")
    if meta is None:  # older versions keep it only as metadata
        md = compiled.metadata
        md = md._asdict() if hasattr(md, "_asdict") else dict(md)
        meta = json.dumps(md, default=str)
    elif isinstance(meta, bytes):
        meta = meta.decode()
    with open(os.path.join(out, name + ".json"), "w") as f:
        f.write(meta if isinstance(meta, str) else json.dumps(meta, default=str))

    def both():
        launch(q, qo, freqs, seq, q_heads)
        launch(k, ko, freqs, seq, kv_heads)

    info = {"kernel": name, "triton_version": triton.__version__, "torch_version": torch.__version__,
            "seq": seq, "q_heads": q_heads, "kv_heads": kv_heads, "head_dim": head_dim,
            "block_rows": BLOCK_ROWS, "device": torch.cuda.get_device_name()}
    return both, info


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="build/triton_rope")
    ap.add_argument("--seq", type=int, default=2048)
    ap.add_argument("--q-heads", type=int, default=32)
    ap.add_argument("--kv-heads", type=int, default=8)
    ap.add_argument("--head-dim", type=int, default=128)
    a = ap.parse_args()
    both, info = prepare(a.seq, a.out, a.q_heads, a.kv_heads, a.head_dim)
    info["do_bench_mean_ms"] = triton.testing.do_bench(both)
    info["do_bench_median_ms"] = triton.testing.do_bench(both, return_mode="median")
    with open(os.path.join(a.out, "python.json"), "w") as f:
        json.dump(info, f, indent=1)
    print(json.dumps(info))


if __name__ == "__main__":
    main()
