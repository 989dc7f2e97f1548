#!/usr/bin/env python3
"""The PyTorch side of `wgt bench`: the same case names and sizes, timed with CUDA
events (median of 5 batches after warm-up), written as the same JSON.

    python3 bench/torch_ref.py --json torch.json [--only NAME]
TF32 is off so f32 GEMM is true f32, as WGSL computes it."""
import argparse
import json

import torch

import bench_timing  # this folder: the scripts run as bench/<name>.py

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
dev = "cuda"


def randn(*shape, dtype=torch.float32):
    return torch.randn(*shape, device=dev, dtype=dtype)


def norm_fb(kind, rows, d):
    """(make, fn, bytes, flops, reps) of a layer/rms norm forward + backward."""
    def make():
        return (randn(rows, d).requires_grad_(), torch.ones(d, device=dev, requires_grad=True),
                torch.zeros(d, device=dev, requires_grad=True), randn(rows, d))

    def fn(x, w, b, dy):
        x.grad = w.grad = b.grad = None
        if kind == "layer":
            y = torch.nn.functional.layer_norm(x, (d,), w, b, 1e-5)
        elif hasattr(torch.nn.functional, "rms_norm"):  # PyTorch >= 2.4
            y = torch.nn.functional.rms_norm(x, (d,), w, 1e-5)
        else:  # what older PyTorch users write
            y = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5) * w
        y.backward(dy)
    return (make, fn, 5 * 4 * rows * d, 0, 20)


def xent_make():
    return (randn(8192, 50304).requires_grad_(), torch.randint(0, 50304, (8192,), device=dev))


def xent_fb(logits, targets):
    logits.grad = None
    torch.nn.functional.cross_entropy(logits, targets).backward()


def attn_make():
    shape = (8, 12, 1024, 64)
    return tuple(randn(*shape).requires_grad_() for _ in range(3)) + (randn(*shape),)


def attn_fb(q, k, v, dout):
    q.grad = k.grad = v.grad = None
    torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True).backward(dout)


def attn_gpt_make():
    shape = (64, 6, 256, 64)
    return tuple(randn(*shape).requires_grad_() for _ in range(3)) + (randn(*shape),)


def attn_gpt_fb(q, k, v, dout):
    q.grad = k.grad = v.grad = None
    torch.nn.functional.scaled_dot_product_attention(q, k, v, dropout_p=0.2, is_causal=True).backward(dout)


def attn_gpt_fb_nodrop(q, k, v, dout):
    q.grad = k.grad = v.grad = None
    torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True).backward(dout)


def attn_gpt_f(dropout):
    def run(q, k, v, dout):
        with torch.no_grad():
            return torch.nn.functional.scaled_dot_product_attention(q, k, v, dropout_p=dropout, is_causal=True)
    return run


def attn_prefill_make():
    """An LLM prefill's attention (wgt bench's attn_prefill_f16_512): q the 32 heads of a [512, 2048] f16
    projection, k and v the first 512 positions of [1, 8, 1024, 64] f16 caches (grouped-query)."""
    q = randn(1, 512, 32, 64, dtype=torch.float16).permute(0, 2, 1, 3)
    cache = randn(2, 8, 1024, 64, dtype=torch.float16)
    return q, cache[0:1, :, :512], cache[1:2, :, :512]


def attn_prefill(q, k, v):
    with torch.no_grad():
        return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)


def linear_make():
    return (randn(4096, 4096), randn(4096, 4096), randn(4096))


def gpt2_param_shapes(C=768, V=50257, L=12, ctx=1024):
    """GPT-2 small's parameters in wgt bench's order (bench_models.c)."""
    shapes = [(V, C), (ctx, C)]
    for _ in range(L):
        shapes += [(C,), (C,), (3 * C, C), (3 * C,), (C, C), (C,), (C,), (C,), (4 * C, C), (4 * C,), (C, 4 * C), (C,)]
    return shapes + [(C,), (C,)]


def adamw_make():
    params = [torch.nn.Parameter(randn(*s) * 0.02) for s in gpt2_param_shapes()]
    for p in params:
        p.grad = randn(*p.shape)
    return (torch.optim.AdamW(params, lr=6e-4, weight_decay=0.1, fused=True),)


def gpt2_make():
    params = [randn(*s) * 0.02 for s in gpt2_param_shapes()]
    return (params, torch.randint(0, 50257, (8, 1024), device=dev))


@torch.no_grad()
def gpt2_fwd(params, ids):
    """nanoGPT's forward (pre-norm, causal SDPA, tanh GELU, tied head), eager, no autograd."""
    F = torch.nn.functional
    B, T = ids.shape
    C, H = 768, 12
    x = F.embedding(ids, params[0]) + params[1][:T]
    for l in range(12):
        q = params[2 + 12 * l: 14 + 12 * l]
        qkv = F.linear(F.layer_norm(x, (C,), q[0], q[1], 1e-5), q[2], q[3])
        a, k, v = (t.view(B, T, H, C // H).transpose(1, 2) for t in qkv.split(C, dim=2))
        y = F.scaled_dot_product_attention(a, k, v, is_causal=True).transpose(1, 2).reshape(B, T, C)
        x = x + F.linear(y, q[4], q[5])
        x = x + F.linear(F.gelu(F.linear(F.layer_norm(x, (C,), q[6], q[7], 1e-5), q[8], q[9]), approximate="tanh"),
                         q[10], q[11])
    return F.linear(F.layer_norm(x, (C,), params[-2], params[-1], 1e-5), params[0])


def case_list():
    n = 1 << 28
    return [
        ("add_f32", lambda: (randn(n), randn(n)), lambda a, b: a + b, 3 * 4 * n, 0, 20),
        ("copy_f32", lambda: (randn(n),), lambda a: a.clone(), 2 * 4 * n, 0, 20),
        ("exp_f32", lambda: (randn(n),), lambda a: torch.exp(a), 2 * 4 * n, 0, 20),
        # three separate ops in eager PyTorch, as a user writes them
        ("fused3_f32", lambda: (randn(n), randn(n), randn(n)),
         lambda a, b, c: torch.sqrt(torch.abs(a * b + c)), 4 * 4 * n, 0, 20),
        ("sum_f32", lambda: (randn(n),), lambda a: a.sum(), 4 * n, 0, 20),
        ("rowsum_f32", lambda: (randn(8192, 8192),), lambda a: a.sum(dim=1), 4 * 8192 * 8192, 0, 20),
        ("softmax_f32", lambda: (randn(4096, 32768),), lambda a: torch.softmax(a, dim=-1), 8 * 4096 * 32768, 0, 20),
        ("transpose_f32", lambda: (randn(8192, 8192),), lambda a: a.t().contiguous(), 8 * 8192 * 8192, 0, 20),
        ("gemm_f32_1024", lambda: (randn(1024, 1024), randn(1024, 1024)), torch.matmul, 0, 2 * 1024 ** 3, 20),
        ("gemm_f32_2048", lambda: (randn(2048, 2048), randn(2048, 2048)), torch.matmul, 0, 2 * 2048 ** 3, 10),
        ("gemm_f32_4096", lambda: (randn(4096, 4096), randn(4096, 4096)), torch.matmul, 0, 2 * 4096 ** 3, 5),
        ("gemm_f32_8192", lambda: (randn(8192, 8192), randn(8192, 8192)), torch.matmul, 0, 2 * 8192 ** 3, 3),
        ("gemm_f16_4096", lambda: (randn(4096, 4096, dtype=torch.float16), randn(4096, 4096, dtype=torch.float16)),
         torch.matmul, 0, 2 * 4096 ** 3, 5),
        ("gemv_f32", lambda: (randn(11008, 4096), randn(4096)), torch.matmul,
         4 * (11008 * 4096 + 4096 + 11008), 2 * 11008 * 4096, 50),
        # NN ops, forward + backward (x, weight, bias require grad; dy upstream), as wgt bench
        ("layernorm_fb_768",) + norm_fb("layer", 8192, 768),
        ("layernorm_fb_4096",) + norm_fb("layer", 8192, 4096),
        ("rmsnorm_fb_768",) + norm_fb("rms", 8192, 768),
        ("rmsnorm_fb_4096",) + norm_fb("rms", 8192, 4096),
        ("xent_fb_50304", xent_make, xent_fb, 3 * 4 * 8192 * 50304, 0, 10),
        # causal attention fwd+bwd, flash-attention's flop count (as wgt bench)
        ("attn_fb_1024", attn_make, attn_fb, 0, 3.5 * 2 * 8 * 12 * 1024 * 1024 * 64, 10),
        # GPT training's attention (wgt train's model): dropout 0.2 on the weights
        ("attn_fb_gpt_256", attn_gpt_make, attn_gpt_fb, 0, 3.5 * 2 * 64 * 6 * 256 * 256 * 64, 20),
        ("attn_fb_gpt_256_nodrop", attn_gpt_make, attn_gpt_fb_nodrop, 0, 3.5 * 2 * 64 * 6 * 256 * 256 * 64, 20),
        ("attn_f_gpt_256", attn_gpt_make, attn_gpt_f(0.2), 0, 2 * 64 * 6 * 256 * 256 * 64, 20),
        ("attn_f_gpt_256_nodrop", attn_gpt_make, attn_gpt_f(0.0), 0, 2 * 64 * 6 * 256 * 256 * 64, 20),
        ("attn_prefill_f16_512", attn_prefill_make, attn_prefill, 0, 2 * 32 * 512 * 512 * 64, 20),
        # a linear layer's GEMMs: x W^T + b, A B^T, A^T B (A B is gemm_f32_4096)
        ("linear_f32_4096", linear_make, lambda x, w, b: torch.nn.functional.linear(x, w, b), 0, 2 * 4096 ** 3, 5),
        ("gemm_nt_f32_4096", linear_make, lambda a, b, _: a @ b.t(), 0, 2 * 4096 ** 3, 5),
        ("gemm_tn_f32_4096", linear_make, lambda a, b, _: a.t() @ b, 0, 2 * 4096 ** 3, 5),
        # whole models (bench_models.c): AdamW over GPT-2 small's 124M parameters (param, grad,
        # m, v read; param, m, v written), and a GPT-2 small forward pass at B=8, T=1024
        ("adamw_124m", adamw_make, lambda opt: opt.step(),
         28 * sum(torch.Size(s).numel() for s in gpt2_param_shapes()), 0, 10),
        ("gpt2_fwd", gpt2_make, gpt2_fwd, 0, 0, 3),
    ] + cnn_cases()


def cnn_cases():
    """The convolutional cases (bench/cnn_torch_ref.py: cudnn.benchmark on, each case sets its TF32 flags)."""
    import os
    import sys
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import cnn_torch_ref
    return cnn_torch_ref.case_list()


def small_ops():
    """10,000 dependent 1024-element adds, end to end (host wall clock), eager."""
    a, b = torch.zeros(1024, device=dev), torch.ones(1024, device=dev)

    def chain():
        x = a
        for _ in range(10000):
            x = x + b
    return bench_timing.host_ms(lambda: (), chain, 1, sync=torch.cuda.synchronize, warmup=2)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", required=True)
    ap.add_argument("--only")
    args = ap.parse_args()
    out = {"tool": "pytorch", "adapter": torch.cuda.get_device_name(), "torch": torch.__version__,
           "cuda": torch.version.cuda, "cases": []}
    print(f"{'case':18} {'median ms':>12} {'GB/s':>10} {'GFLOP/s':>10}")
    for name, make, fn, nbytes, flops, reps in case_list():
        if args.only and args.only not in name:
            continue
        ms = bench_timing.cuda_ms(make, fn, reps)
        gbps, gflops = nbytes / (ms * 1e6), flops / (ms * 1e6)
        print(f"{name:18} {ms:12.4f} {gbps:10.1f} {gflops:10.1f}", flush=True)
        out["cases"].append({"case": name, "ms": ms, "gbps": gbps, "gflops": gflops})
    if not args.only or args.only in "small_ops_10000":
        ms = small_ops()
        print(f"{'small_ops_10000':18} {ms:12.4f}  ({ms / 10:.2f} us per op)")
        out["cases"].append({"case": "small_ops_10000", "ms": ms, "gbps": 0, "gflops": 0})
    with open(args.json, "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
