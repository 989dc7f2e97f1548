#!/usr/bin/env python3
"""The PyTorch side of wgt bench's convolutional cases (tools/wgt/bench_cnn.c):
the same case names and sizes, timed like bench/torch_ref.py (CUDA events,
median of 5 batches after warm-up). torch_ref.py includes these cases, so
bench/run.sh runs them with everything else; alone:

    python3 bench/cnn_torch_ref.py --json cnn_torch.json [--only NAME]

Settings: torch.backends.cudnn.benchmark = True (cuDNN picks its fastest
algorithm per shape), f32 with TF32 off for the cases wgt bench also runs
(conv_fb_*, resnet18_train_f32). Two more rows, without a wgt counterpart and
without a target, show what PyTorch users often run: resnet18_train_tf32 (TF32
on) and resnet18_train_bf16_cl (bf16 autocast, channels-last). Each case sets
its own TF32 flags around its step, so their order does not matter.

ResNet-18 is torchvision's architecture written out here (no torchvision
needed): 7x7/2 stem, 3x3/2 max pool, [2, 2, 2, 2] basic blocks of 64, 128,
256, 512 channels with 1x1/2 downsampling, global average pool, 1000-way
linear; batch norm in training mode; cross-entropy; SGD lr 0.1, momentum
0.9, weight decay 1e-4; batch 64 at 224 x 224. images/s = 64 / (ms / 1000).
"""
import argparse
import json

import torch
import torch.nn as nn
import torch.nn.functional as F

import bench_timing  # this folder: the scripts run as bench/<name>.py

torch.backends.cudnn.benchmark = True
dev = "cuda"

# (Cin, Cout, k, stride, H), padding k // 2, batch 32: the ResNet-50 table
CONV_LAYERS = [(3, 64, 7, 2, 224), (64, 64, 3, 1, 56), (128, 128, 3, 1, 28), (256, 256, 3, 1, 14),
               (512, 512, 3, 1, 7), (256, 64, 1, 1, 56), (1024, 256, 1, 1, 14)]


def set_tf32(on):
    torch.backends.cuda.matmul.allow_tf32 = on
    torch.backends.cudnn.allow_tf32 = on


def conv_case(cin, cout, k, s, h):
    name = f"conv_fb_{cin}_{cout}_k{k}_s{s}_{h}"
    oh = (h + 2 * (k // 2) - k) // s + 1

    def make():
        x = torch.randn(32, cin, h, h, device=dev, requires_grad=True)
        w = torch.randn(cout, cin, k, k, device=dev, requires_grad=True)
        return (x, w, torch.randn(32, cout, oh, oh, device=dev))

    def fn(x, w, dy):
        set_tf32(False)
        x.grad = w.grad = None
        F.conv2d(x, w, None, s, k // 2).backward(dy)
    flops = 3 * 2 * 32 * cout * cin * k * k * oh * oh  # forward, dx, dw
    return (name, make, fn, 0, flops, 5)


class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.down = None
        if stride != 1 or cin != cout:
            self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return F.relu(y + (self.down(x) if self.down is not None else x))


class ResNet18(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        blocks, cin = [], 64
        for i, w in enumerate([64, 128, 256, 512]):
            for b in range(2):
                blocks.append(BasicBlock(cin, w, 2 if b == 0 and i > 0 else 1))
                cin = w
        self.blocks = nn.Sequential(*blocks)
        self.fc = nn.Linear(512, 1000)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn1(self.conv1(x))), 3, 2, 1)
        x = self.blocks(x)
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


def resnet_case(name, tf32, bf16_channels_last):
    def make():
        model = ResNet18().to(dev)
        x = torch.randn(64, 3, 224, 224, device=dev)
        if bf16_channels_last:
            model = model.to(memory_format=torch.channels_last)
            x = x.to(memory_format=torch.channels_last)
        y = torch.arange(64, device=dev) * 7919 % 1000
        opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
        return (model, x, y, opt)

    def fn(model, x, y, opt):
        set_tf32(tf32)
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=bf16_channels_last):
            loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
    return (name, make, fn, 0, 0, 3)


def case_list():
    cases = [conv_case(*layer) for layer in CONV_LAYERS]
    cases.append(resnet_case("resnet18_train_f32", False, False))
    cases.append(resnet_case("resnet18_train_tf32", True, False))
    cases.append(resnet_case("resnet18_train_bf16_cl", False, True))
    return cases


def time_case(make, fn, reps):
    ms = bench_timing.cuda_ms(make, fn, reps)
    set_tf32(False)  # a case that turned TF32 on must not leave it on for the next
    return ms


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", required=True)
    ap.add_argument("--only")
    args = ap.parse_args()
    out = {"tool": "pytorch", "adapter": torch.cuda.get_device_name(), "torch": torch.__version__,
           "cuda": torch.version.cuda, "cudnn": torch.backends.cudnn.version(), "cases": []}
    print(f"{'case':28} {'median ms':>12} {'TFLOP/s':>10} {'images/s':>10}")
    for name, make, fn, nbytes, flops, reps in case_list():
        if args.only and args.only not in name:
            continue
        ms = time_case(make, fn, reps)
        ips = 64 / (ms / 1000) if name.startswith("resnet18") else 0
        print(f"{name:28} {ms:12.4f} {flops / (ms * 1e9):10.2f} {ips:10.0f}", flush=True)
        out["cases"].append({"case": name, "ms": ms, "gbps": 0, "gflops": flops / (ms * 1e6)})
    with open(args.json, "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
