#!/usr/bin/env python3
"""Ratio table: wgtensor throughput / reference throughput per case (time ratio
ref_ms / wgt_ms), from the JSON of `wgt bench` and bench/torch_ref.py measured
in the same run on the same GPU, or of `wgt bench --cpu` and bench/numpy_ref.py
(--cpu: NumPy targets).

    python3 bench/compare.py wgt.json torch.json [--markdown] [--cpu]"""
import json
import sys

TARGETS = {
    "add_f32": 0.95, "copy_f32": 0.95, "exp_f32": 0.95, "fused3_f32": 1.0,
    "sum_f32": 0.90, "rowsum_f32": 0.90, "softmax_f32": 1.0, "transpose_f32": 0.90,
    "gemm_f32_1024": 0.60, "gemm_f32_2048": 0.80, "gemm_f32_4096": 0.80, "gemm_f32_8192": 0.80,
    "gemv_f32": 0.90, "small_ops_10000": 1 / 0.7,
    "layernorm_fb_768": 1.0, "layernorm_fb_4096": 1.0, "rmsnorm_fb_768": 1.0, "rmsnorm_fb_4096": 1.0,
    "xent_fb_50304": 1.0,
}


# CPU backend against NumPy: elementwise and reductions >= 1.0, GEMM >= 0.9.
CPU_TARGETS = {
    "add_f32": 1.0, "copy_f32": 1.0, "exp_f32": 1.0, "fused3_f32": 1.0, "sum_f32": 1.0, "rowsum_f32": 1.0,
    "softmax_f32": 1.0, "transpose_f32": 1.0, "gemm_f32_1024": 0.9, "gemm_f32_2048": 0.9, "gemv_f32": 0.9,
}


def main():
    if len(sys.argv) < 3:
        print(__doc__)
        return 2
    ours, theirs = (json.load(open(p)) for p in sys.argv[1:3])
    md = "--markdown" in sys.argv
    targets = CPU_TARGETS if "--cpu" in sys.argv else TARGETS
    ref_name = "NumPy " + theirs.get("numpy", "") if theirs.get("tool") == "numpy" else "PyTorch " + theirs.get("torch", "")
    ref = {c["case"]: c for c in theirs["cases"]}
    print(f"wgtensor on {ours['adapter']} ({ours.get('backend', '')}, driver {ours.get('driver', '')}) "
          f"vs {ref_name} on {theirs['adapter']}")
    rows = []
    for c in ours["cases"]:
        r = ref.get(c["case"])
        if not r or c["ms"] <= 0:
            continue
        ratio = r["ms"] / c["ms"]
        target = targets.get(c["case"])
        met = "" if target is None else ("met" if ratio >= target else "NOT met")
        rows.append((c["case"], c["shape"], c["ms"], r["ms"], ratio, target, met))
    if md:
        print(f"| case | shape | wgtensor ms | {ref_name.split()[0]} ms | ratio | target | |")
        print("|---|---|---:|---:|---:|---:|---|")
        for name, shape, a, b, ratio, target, met in rows:
            t = "-" if target is None else (f"{target:.2f}" if name != "small_ops_10000" else "per-op time <= 0.7x")
            print(f"| {name} | {shape} | {a:.4f} | {b:.4f} | {ratio:.2f} | {t} | {met} |")
    else:
        print(f"{'case':18} {'wgt ms':>10} {'ref ms':>10} {'ratio':>7} {'target':>7}")
        for name, shape, a, b, ratio, target, met in rows:
            t = "" if target is None else f"{target:.2f}"
            print(f"{name:18} {a:10.4f} {b:10.4f} {ratio:7.2f} {t:>7} {met}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
