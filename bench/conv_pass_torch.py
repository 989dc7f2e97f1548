#!/usr/bin/env python3
"""cuDNN's time for each pass of a convolution layer alone: forward, input
gradient, weight gradient (aten.convolution_backward with one output asked
for), at the shapes of wgt bench's conv_fb_* cases (batch 32, padding k // 2),
f32 with TF32 off, cudnn.benchmark on; timed as the other reference scripts
(bench_timing.cuda_ms: CUDA events, median of 5 batches of 16 after warm-up). Shows which pass cuDNN wins on, to set against wgtensor's
per-dispatch trace (WGT_PROFILE_TRACE) of the same layer.

    python3 bench/conv_pass_torch.py [--layers 2,3]
"""
import argparse

import torch
import torch.nn.functional as F

import bench_timing  # this folder: the scripts run as bench/<name>.py

torch.backends.cudnn.benchmark = True
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False

LAYERS = [(3, 64, 7, 2, 224), (64, 64, 3, 1, 56), (128, 128, 3, 1, 28), (256, 256, 3, 1, 14),
          (512, 512, 3, 1, 7), (256, 64, 1, 1, 56), (1024, 256, 1, 1, 14)]


def timed(fn, reps=16):
    return bench_timing.cuda_ms(lambda: (), fn, reps)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--layers", default=",".join(str(i) for i in range(len(LAYERS))))
    args = ap.parse_args()
    print(f"{'layer':<28} {'fwd ms':>8} {'dx ms':>8} {'dw ms':>8} {'sum':>8} {'fb ms':>8}")
    for i in (int(s) for s in args.layers.split(",")):
        cin, cout, k, s, h = LAYERS[i]
        p = k // 2
        oh = (h + 2 * p - k) // s + 1
        x = torch.randn(32, cin, h, h, device="cuda", requires_grad=True)
        w = torch.randn(cout, cin, k, k, device="cuda", requires_grad=True)
        dy = torch.randn(32, cout, oh, oh, device="cuda")
        conv_bw = torch.ops.aten.convolution_backward
        fwd = timed(lambda: F.conv2d(x, w, None, s, p))
        dx = timed(lambda: conv_bw(dy, x, w, None, [s, s], [p, p], [1, 1], False, [0, 0], 1, [True, False, False]))
        dw = timed(lambda: conv_bw(dy, x, w, None, [s, s], [p, p], [1, 1], False, [0, 0], 1, [False, True, False]))

        def fb():
            x.grad = w.grad = None
            F.conv2d(x, w, None, s, p).backward(dy)
        both = timed(fb)
        name = f"conv_fb_{cin}_{cout}_k{k}_s{s}_{h}"
        print(f"{name:<28} {fwd:8.4f} {dx:8.4f} {dw:8.4f} {fwd + dx + dw:8.4f} {both:8.4f}")


if __name__ == "__main__":
    main()
