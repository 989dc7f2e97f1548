#!/usr/bin/env bash
# Issue 12's speed comparison in one command, on a machine with a GPU, PyTorch
# and transformers: `wgt generate --bench` (Llama-3.2-1B shape, random weights,
# f16, q8, q4 and f32) and bench/llm_torch_ref.py, then a ratio table.
#   bench/llm_run.sh [OUTDIR]   (default: bench-results/llm)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="${1:-bench-results/llm}"
mkdir -p "$out"
for w in f16 q8 q4 f32; do
  "$root/build/bin/wgt" generate --bench --shape llama-3.2-1b --weights $w --prompt-tokens 512 --max-tokens 128 \
    --json "$out/wgt_$w.json" | tee "$out/wgt_$w.txt"
done
# PyTorch in two processes: its figures spread between processes (30.5k and
# 44.6k prefill tokens/s in one call on an H100), so both ratios are shown
for i in 1 2; do
  python3 "$root/bench/llm_torch_ref.py" --json "$out/torch$i.json" | tee "$out/torch$i.txt"
done
python3 - "$out" <<'PY'
import json, sys, os
out = sys.argv[1]
ts = [json.load(open(os.path.join(out, f"torch{i}.json"))) for i in (1, 2)]
both = lambda key, digits: " / ".join(f"{t[key]:.{digits}f}" for t in ts)
print("| weights | wgt prefill tok/s | torch f16 eager prefill | ratio | wgt decode tok/s | torch f16 static-cache decode | ratio |")
print("|---|---|---|---|---|---|---|")
for w in ["f16", "q8", "q4", "f32"]:
    r = json.load(open(os.path.join(out, f"wgt_{w}.json")))
    pre = " / ".join(f"{r['prefill_tokens_per_s'] / t['prefill_tokens_per_s']:.2f}" for t in ts)
    dec = " / ".join(f"{r['decode_tokens_per_s'] / t['decode_tokens_per_s']:.2f}" for t in ts)
    print(f"| {w} | {r['prefill_tokens_per_s']:.0f} | {both('prefill_tokens_per_s', 0)} | {pre} | "
          f"{r['decode_tokens_per_s']:.1f} | {both('decode_tokens_per_s', 1)} | {dec} |")
PY
