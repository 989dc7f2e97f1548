#!/usr/bin/env python3
"""The NumPy side of `wgt bench --cpu`: the same case names at the CPU sizes,
timed as the median of 5 batches after warm-up, written as the same JSON.

    python3 bench/numpy_ref.py --json numpy.json"""
import argparse
import json

import numpy as np

import bench_timing  # this folder: the scripts run as bench/<name>.py

rng = np.random.default_rng(0)


def randn(*shape):
    return rng.standard_normal(shape, dtype=np.float32)


def case_list():
    n = 1 << 24
    return [
        ("add_f32", lambda: (randn(n), randn(n)), lambda a, b: a + b, 20),
        ("copy_f32", lambda: (randn(n),), lambda a: a.copy(), 20),
        ("exp_f32", lambda: (randn(n),), np.exp, 20),
        ("fused3_f32", lambda: (randn(n), randn(n), randn(n)), lambda a, b, c: np.sqrt(np.abs(a * b + c)), 20),
        ("sum_f32", lambda: (randn(n),), lambda a: a.sum(), 20),
        ("rowsum_f32", lambda: (randn(4096, 4096),), lambda a: a.sum(axis=1), 20),
        ("softmax_f32", lambda: (randn(1024, 8192),), softmax, 20),
        ("transpose_f32", lambda: (randn(4096, 4096),), lambda a: np.ascontiguousarray(a.T), 20),
        ("gemm_f32_1024", lambda: (randn(1024, 1024), randn(1024, 1024)), np.matmul, 20),
        ("gemm_f32_2048", lambda: (randn(2048, 2048), randn(2048, 2048)), np.matmul, 10),
        ("gemv_f32", lambda: (randn(11008, 4096), randn(4096)), np.matmul, 50),
    ]


def softmax(a):
    e = np.exp(a - a.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", required=True)
    args = ap.parse_args()
    out = {"tool": "numpy", "adapter": "cpu", "numpy": np.__version__, "cases": []}
    for name, make, fn, reps in case_list():
        ms = bench_timing.host_ms(make, fn, reps)
        print(f"{name:18} {ms:12.4f}", flush=True)
        out["cases"].append({"case": name, "ms": ms})
    with open(args.json, "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
