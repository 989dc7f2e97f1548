#!/usr/bin/env python3
"""Golden values from PyTorch for tests/test_conv_golden.c (issue 13).

Two files next to this script:
  conv.safetensors        every convolution-family op on awkward configurations:
                          for case NAME the inputs ("NAME.x", "NAME.w", "NAME.b",
                          running statistics "NAME.running_mean/var"), a fixed
                          upstream gradient "NAME.r", the output "NAME.y" and the
                          gradients "NAME.dx", "NAME.dw", "NAME.db" of sum(y * r);
                          batch norm in training mode also the running statistics
                          after the call ("NAME.running_mean_after", ...)
  digits_cnn.safetensors  one training step of the digits CNN
                          (src/models/digits_cnn.h) on the first 16 images of
                          data/digits.csv.gz: "input.x", "input.y", the parameters
                          "param.<name>", the loss "loss0", every gradient
                          "grad.<name>", and after one SGD step (lr 0.05,
                          momentum 0.9) the parameters "final.<name>" and the batch
                          norm running statistics "final.bn1.running_mean", ...

The case list below must match CASES in tests/test_conv_golden.c (same names,
same hyperparameters); each file's metadata names the script and PyTorch version.
f32 on the CPU with deterministic algorithms (so the numbers do not depend on the
GPU that ran the script; max-pool ties follow PyTorch's CPU kernel: the first
element of the window in row-major order). Written by hand like make_golden.py
(8-byte header length, JSON header, raw little-endian data).

Run (PyTorch >= 2.0, from the repository root):
    python3 tests/golden/make_conv_golden.py
then commit tests/golden/conv.safetensors and tests/golden/digits_cnn.safetensors.
"""
import gzip
import json
import os
import struct

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
torch.use_deterministic_algorithms(True)
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False


def write_safetensors(path, tensors, metadata):
    header, blobs, offset = {"__metadata__": metadata}, [], 0
    for name, t in tensors.items():
        t = t.detach().cpu().contiguous()
        dtype = {torch.float32: "F32", torch.int32: "I32"}[t.dtype]
        data = t.numpy().tobytes()
        header[name] = {"dtype": dtype, "shape": list(t.shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for b in blobs:
            f.write(b)
    print("wrote", path, len(tensors), "tensors")


# name, op, x shape, w shape (None: no weight), bias, options
#   conv2d: stride (h, w), padding (top, bottom, left, right), dilation, groups
#   conv_transpose2d: stride, padding (h, w) symmetric, dilation, groups, output_padding
#   max/avg pool: kernel, stride, padding, dilation (max), ceil_mode, count_include_pad (avg), values
#   adaptive: output size
#   batch_norm: affine, training
#   group_norm: groups (always with weight and bias)
CASES = [
    ("conv_perside", "conv2d", (2, 3, 7, 9), (5, 3, 3, 2), True, dict(stride=(2, 1), padding=(1, 0, 2, 1), dilation=(1, 2), groups=1)),
    ("conv_depthwise", "conv2d", (2, 4, 6, 5), (8, 1, 3, 3), False, dict(stride=(1, 1), padding=(1, 1, 1, 1), dilation=(1, 1), groups=4)),
    ("conv_groups_1x1", "conv2d", (1, 6, 5, 7), (4, 3, 1, 1), True, dict(stride=(1, 1), padding=(0, 0, 0, 0), dilation=(1, 1), groups=2)),
    ("conv_pointwise", "conv2d", (3, 5, 5, 6), (7, 5, 1, 1), True, dict(stride=(1, 1), padding=(0, 0, 0, 0), dilation=(1, 1), groups=1)),
    ("conv_batch1_70ch", "conv2d", (1, 3, 13, 11), (70, 3, 5, 5), True, dict(stride=(2, 2), padding=(2, 2, 2, 2), dilation=(1, 1), groups=1)),
    ("convt_stride2_outpad", "conv_transpose2d", (2, 4, 5, 4), (4, 3, 3, 3), True, dict(stride=(2, 2), padding=(1, 1), dilation=(1, 1), groups=1, output_padding=(1, 1))),
    ("convt_groups_dilated", "conv_transpose2d", (1, 4, 4, 5), (4, 3, 2, 3), False, dict(stride=(1, 3), padding=(0, 1), dilation=(2, 2), groups=2, output_padding=(0, 2))),
    ("maxpool_ceil", "max_pool2d", (2, 3, 9, 8), None, False, dict(kernel=(3, 3), stride=(2, 2), padding=(1, 1), dilation=(1, 1), ceil_mode=True, values="random")),
    ("maxpool_dilated", "max_pool2d", (1, 5, 7, 9), None, False, dict(kernel=(2, 3), stride=(1, 2), padding=(0, 1), dilation=(2, 1), ceil_mode=False, values="random")),
    ("maxpool_ties", "max_pool2d", (2, 2, 6, 6), None, False, dict(kernel=(3, 3), stride=(1, 1), padding=(1, 1), dilation=(1, 1), ceil_mode=False, values="ties")),
    ("avgpool_ceil_pad", "avg_pool2d", (2, 3, 7, 8), None, False, dict(kernel=(3, 3), stride=(2, 2), padding=(1, 1), ceil_mode=True, count_include_pad=True)),
    ("avgpool_exclude_pad", "avg_pool2d", (1, 5, 6, 5), None, False, dict(kernel=(3, 2), stride=(2, 1), padding=(1, 1), ceil_mode=False, count_include_pad=False)),
    ("adaptive_3x2", "adaptive_avg_pool2d", (2, 3, 7, 5), None, False, dict(output=(3, 2))),
    ("adaptive_global", "adaptive_avg_pool2d", (3, 5, 4, 6), None, False, dict(output=(1, 1))),
    ("bn_train_affine", "batch_norm", (3, 5, 7, 6), None, False, dict(affine=True, training=True)),
    ("bn_eval_affine", "batch_norm", (2, 4, 5, 3), None, False, dict(affine=True, training=False)),
    ("bn_train_plain", "batch_norm", (2, 3, 1, 9), None, False, dict(affine=False, training=True)),
    ("gn_affine", "group_norm", (2, 6, 4, 3), None, False, dict(groups=3)),
]


def run_case(name, op, xs, ws, bias, o, gen):
    out = {}
    x = torch.rand(xs, generator=gen) * 2 - 1
    if op == "max_pool2d" and o["values"] == "ties":
        x = torch.randint(0, 3, xs, generator=gen).float()
    if op == "batch_norm":
        x = x * 2 + 0.5
    x.requires_grad_(True)
    out[name + ".x"] = x
    w = b = None
    if ws is not None:
        w = (torch.rand(ws, generator=gen) * 2 - 1).requires_grad_(True)
        out[name + ".w"] = w
    if op == "conv2d":
        if bias:
            b = (torch.rand(ws[0], generator=gen) * 2 - 1).requires_grad_(True)
            out[name + ".b"] = b
        t, bo, l, r = o["padding"]
        y = F.conv2d(F.pad(x, (l, r, t, bo)), w, b, o["stride"], 0, o["dilation"], o["groups"])
    elif op == "conv_transpose2d":
        if bias:
            b = (torch.rand(ws[1] * o["groups"], generator=gen) * 2 - 1).requires_grad_(True)
            out[name + ".b"] = b
        y = F.conv_transpose2d(x, w, b, o["stride"], o["padding"], o["output_padding"], o["groups"], o["dilation"])
    elif op == "max_pool2d":
        y = F.max_pool2d(x, o["kernel"], o["stride"], o["padding"], o["dilation"], o["ceil_mode"])
    elif op == "avg_pool2d":
        y = F.avg_pool2d(x, o["kernel"], o["stride"], o["padding"], o["ceil_mode"], o["count_include_pad"])
    elif op == "adaptive_avg_pool2d":
        y = F.adaptive_avg_pool2d(x, o["output"])
    elif op == "group_norm":
        c = xs[1]
        w = (torch.rand(c, generator=gen) + 0.5).requires_grad_(True)
        b = (torch.rand(c, generator=gen) * 2 - 1).requires_grad_(True)
        out[name + ".w"], out[name + ".b"] = w, b
        y = F.group_norm(x, o["groups"], w, b, 1e-5)
    else:
        c = xs[1]
        rm = torch.rand(c, generator=gen) - 0.5
        rv = torch.rand(c, generator=gen) + 0.5
        out[name + ".running_mean"] = rm.clone()
        out[name + ".running_var"] = rv.clone()
        if o["affine"]:
            w = (torch.rand(c, generator=gen) + 0.5).requires_grad_(True)
            b = (torch.rand(c, generator=gen) * 2 - 1).requires_grad_(True)
            out[name + ".w"], out[name + ".b"] = w, b
        y = F.batch_norm(x, rm, rv, w, b, o["training"], 0.1, 1e-5)
        if o["training"]:
            out[name + ".running_mean_after"] = rm
            out[name + ".running_var_after"] = rv
    r = torch.rand(y.shape, generator=gen) * 2 - 1
    (y * r).sum().backward()
    out[name + ".r"] = r
    out[name + ".y"] = y
    out[name + ".dx"] = x.grad
    if w is not None:
        out[name + ".dw"] = w.grad
    if b is not None:
        out[name + ".db"] = b.grad
    return out


def conv_fixtures():
    gen = torch.Generator().manual_seed(1234)
    tensors = {}
    for case in CASES:
        tensors.update(run_case(*case, gen))
    write_safetensors(os.path.join(HERE, "conv.safetensors"), tensors,
                      {"script": "tests/golden/make_conv_golden.py", "torch": torch.__version__,
                       "cases": ",".join(c[0] for c in CASES)})


NAMES = ["conv1.weight", "conv1.bias", "bn1.weight", "bn1.bias", "conv2.weight", "conv2.bias", "bn2.weight",
         "bn2.bias", "fc.weight", "fc.bias"]


def digits_fixture():
    rows = []
    with gzip.open(os.path.join(ROOT, "data", "digits.csv.gz"), "rt") as f:
        for line in f:
            if line.strip():
                rows.append([int(v) for v in line.split(",")])
            if len(rows) == 16:
                break
    data = torch.tensor(rows, dtype=torch.float32)
    x = (data[:, :64] / 16.0).reshape(16, 1, 8, 8)
    y = data[:, 64].to(torch.int64)
    gen = torch.Generator().manual_seed(99)

    def uniform(shape, fan_in):
        bound = 1 / fan_in ** 0.5
        return (torch.rand(shape, generator=gen) * 2 - 1) * bound

    params = {
        "conv1.weight": uniform((16, 1, 3, 3), 9), "conv1.bias": uniform((16,), 9),
        "bn1.weight": torch.rand(16, generator=gen) + 0.5, "bn1.bias": torch.rand(16, generator=gen) - 0.5,
        "conv2.weight": uniform((32, 16, 3, 3), 144), "conv2.bias": uniform((32,), 144),
        "bn2.weight": torch.rand(32, generator=gen) + 0.5, "bn2.bias": torch.rand(32, generator=gen) - 0.5,
        "fc.weight": uniform((10, 128), 128), "fc.bias": uniform((10,), 128),
    }
    params = {k: v.clone().requires_grad_(True) for k, v in params.items()}
    buffers = {"bn1.running_mean": torch.zeros(16), "bn1.running_var": torch.ones(16),
               "bn2.running_mean": torch.zeros(32), "bn2.running_var": torch.ones(32)}
    tensors = {"input.x": x, "input.y": y.to(torch.int32)}
    tensors.update({"param." + k: v.detach().clone() for k, v in params.items()})
    p = params

    def stage(h, i, bn):
        h = F.conv2d(h, p[f"conv{i}.weight"], p[f"conv{i}.bias"], 1, 1)
        h = F.batch_norm(h, buffers[f"{bn}.running_mean"], buffers[f"{bn}.running_var"], p[f"{bn}.weight"],
                         p[f"{bn}.bias"], True, 0.1, 1e-5)
        return F.max_pool2d(F.relu(h), 2)

    h = stage(stage(x, 1, "bn1"), 2, "bn2")
    logits = F.linear(h.reshape(16, 128), p["fc.weight"], p["fc.bias"])
    loss = F.cross_entropy(logits, y)
    loss.backward()
    tensors["loss0"] = loss.detach().reshape(())
    tensors.update({"grad." + k: v.grad for k, v in params.items()})
    opt = torch.optim.SGD(list(params.values()), lr=0.05, momentum=0.9)
    opt.step()
    tensors.update({"final." + k: v.detach().clone() for k, v in params.items()})
    tensors.update({"final." + k: v.clone() for k, v in buffers.items()})
    write_safetensors(os.path.join(HERE, "digits_cnn.safetensors"), tensors,
                      {"script": "tests/golden/make_conv_golden.py", "torch": torch.__version__,
                       "step": "SGD lr 0.05 momentum 0.9, batch norm momentum 0.1 eps 1e-5"})


if __name__ == "__main__":
    assert [n for n in NAMES] == list(NAMES)
    conv_fixtures()
    digits_fixture()
