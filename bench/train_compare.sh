#!/usr/bin/env bash
# Issue 11's benchmark, side by side on one GPU: `wgt train` and PyTorch eager
# (bench/train_torch_ref.py) on the `shakespeare` preset (nanoGPT's
# train_shakespeare_char: same model, data pipeline, init scheme and
# hyper-parameters), then KV-cache sampling speed of both.
#   bench/train_compare.sh [ITERS] [OUTDIR]        (default 300, bench-results/train)
# Training throughput is tokens/s after 10 warm-up steps; peak memory is
# wgt's peak_bytes_in_use and PyTorch's max_memory_allocated. PyTorch runs in
# f32 with TF32 off (the target), then with TF32, bf16 autocast, and bf16 +
# torch.compile (for the table, no target).
# The quality run (5000 steps, val loss <= 1.47): ITERS=5000 and --full:
#   bench/train_compare.sh 5000 bench-results/train --full
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
iters="${1:-300}"
out="${2:-bench-results/train}"
full="${3:-}"
wgt="$root/build/bin/wgt"
mkdir -p "$out"
if [ "$full" = "--full" ]; then
  # whole runs with evaluation: both loss logs (CSV) for the plot
  "$wgt" train --preset shakespeare --data "$root/data/tinyshakespeare.txt" --max-iters "$iters" --out "$out/wgt" | tee "$out/wgt_full.txt"
  python3 "$root/bench/train_torch_ref.py" --max-iters "$iters" --csv "$out/torch_log.csv" | tee "$out/torch_full.txt"
  "$wgt" plot "$out/loss_both.png" wgt="$out/wgt/log.csv" pytorch="$out/torch_log.csv" \
    --title "shakespeare preset, $iters steps: wgt train vs PyTorch eager f32"
  exit 0
fi
"$wgt" train --preset shakespeare --data "$root/data/tinyshakespeare.txt" --max-iters "$iters" --bench --out "$out/wgt" | tee "$out/wgt.txt"
"$wgt" sample --checkpoint "$out/wgt/ckpt.safetensors" --tokens 500 > /dev/null 2> "$out/wgt_sample.txt"
cat "$out/wgt_sample.txt"
ref="$root/bench/train_torch_ref.py"
python3 "$ref" --max-iters "$iters" --bench --sample-bench 500 | tee "$out/torch_f32.txt"
python3 "$ref" --max-iters "$iters" --bench --tf32 | tee "$out/torch_tf32.txt"
python3 "$ref" --max-iters "$iters" --bench --bf16 | tee "$out/torch_bf16.txt"
python3 "$ref" --max-iters "$iters" --bench --bf16 --compile | tee "$out/torch_bf16_compile.txt"
python3 - "$out" <<'PY'
import re, sys, os
out = sys.argv[1]
def grab(name, pattern):
    try:
        m = re.search(pattern, open(os.path.join(out, name)).read())
        return float(m.group(1)) if m else None
    except OSError:
        return None
tok = r"([0-9.]+) tokens/s,"
mem = r"peak device memory ([0-9.]+) MiB"
wgt_tok, wgt_mem = grab("wgt.txt", tok), grab("wgt.txt", mem)
print("\n| run | tokens/s | ratio wgt/run | peak MiB |\n|---|---|---|---|")
print(f"| wgt (WebGPU, f32) | {wgt_tok:.0f} | 1.00 | {wgt_mem:.0f} |" if wgt_tok else "| wgt | missing | | |")
for name, label in [("torch_f32.txt", "PyTorch eager f32, TF32 off"), ("torch_tf32.txt", "PyTorch TF32"),
                    ("torch_bf16.txt", "PyTorch bf16 autocast"), ("torch_bf16_compile.txt", "PyTorch bf16 + compile")]:
    t, m = grab(name, tok), grab(name, mem)
    if t:
        print(f"| {label} | {t:.0f} | {wgt_tok / t:.2f} | {m:.0f} |" if wgt_tok else f"| {label} | {t:.0f} | | {m:.0f} |")
s_w = grab("wgt_sample.txt", r"\(([0-9.]+) tokens/s")
s_t = grab("torch_f32.txt", r"sample: .*\(([0-9.]+) tokens/s")
if s_w and s_t:
    print(f"\nsampling (KV cache, batch 1): wgt {s_w:.1f} tokens/s, PyTorch {s_t:.1f} tokens/s, ratio {s_w / s_t:.2f}")
PY
