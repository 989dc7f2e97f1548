#!/usr/bin/env python3
"""PyTorch (cuBLAS, f32, TF32 off) on the GEMM cases of `wgt bench --only gemm_bwd` and `--only linear_gpt`:
the products of one GPT training step (shakespeare preset, B T = 16384), the same operands and layouts as
tools/wgt/bench.c builds. Median ms of 20 after a warm-up of at least 0.5 s, one line per case:
    python3 bench/gemm_torch_ref.py"""
import time
import torch

torch.backends.cuda.matmul.allow_tf32 = False
dev = torch.device("cuda")
g = torch.Generator(device=dev).manual_seed(0)


def randn(*shape):
    return torch.randn(*shape, device=dev, generator=g)


def cases():
    rows = 16384
    for n, m in [(384, 384), (1152, 384), (1536, 384), (384, 1536), (65, 384)]:   # dW = dy^T x
        dy, x = randn(rows, n), randn(rows, m)
        yield f"gemm_bwd_dw_{n}x{m}", 2 * n * m * rows, lambda dy=dy, x=x: dy.t() @ x
    for a, b in [(1536, 384), (384, 1536), (1152, 384), (384, 384)]:              # dx = dy W
        dy, w = randn(rows, a), randn(a, b)
        yield f"gemm_bwd_dx_{a}to{b}", 2 * rows * a * b, lambda dy=dy, w=w: dy @ w
    for name, k, n in [("qkv", 384, 1152), ("proj", 384, 384), ("fc", 384, 1536), ("fcproj", 1536, 384),
                       ("head", 384, 65)]:                                          # x W^T + b
        x, w, bias = randn(rows, k), randn(n, k), randn(n)
        yield f"linear_gpt_{name}", 2 * rows * k * n, lambda x=x, w=w, bias=bias: torch.nn.functional.linear(x, w, bias)


def median_ms(fn):
    t0 = time.time()
    while time.time() - t0 < 0.5:
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(20):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        torch.cuda.synchronize()
        times.append(a.elapsed_time(b))
    return sorted(times)[len(times) // 2]


print(f"torch {torch.__version__} on {torch.cuda.get_device_name()}, f32, TF32 off")
for name, flops, fn in cases():
    ms = median_ms(fn)
    print(f"{name:<24} {ms:9.4f} ms {flops / ms / 1e9:10.1f} GFLOP/s")
