#!/bin/sh
# Compiles a Triton Llama 4 RoPE kernel, times it with triton.testing.do_bench
# in Python, dumps its cubin + metadata, then times the same cubin loaded by
# kluabench (bench/triton_cubin.lua). Run from the repository root after make,
# on a GPU machine with triton and torch:  bench/triton_cubin.sh [SEQ]
set -eu
SEQ=${1:-2048}
OUT=${OUT:-build/triton_rope}
python3 bench/triton_rope.py --out "$OUT" --seq "$SEQ"
build/kluabench bench/triton_cubin.lua "$OUT"
