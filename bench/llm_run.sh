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
python3 "$root/bench/llm_torch_ref.py" --json "$out/torch.json" | tee "$out/torch.txt"
python3 - "$out" <<'PY'
import json, sys, os
out = sys.argv[1]
t = json.load(open(os.path.join(out, "torch.json")))
print(f"| weights | wgt prefill tok/s | torch f16 eager prefill | ratio | wgt decode tok/s | torch f16 static-cache decode | ratio |")
print("|---|---|---|---|---|---|---|")
for w in ["f16", "q8", "q4", "f32"]:
    r = json.load(open(os.path.join(out, f"wgt_{w}.json")))
    print(f"| {w} | {r['prefill_tokens_per_s']:.0f} | {t['prefill_tokens_per_s']:.0f} | "
          f"{r['prefill_tokens_per_s'] / t['prefill_tokens_per_s']:.2f} | {r['decode_tokens_per_s']:.1f} | "
          f"{t['decode_tokens_per_s']:.1f} | {r['decode_tokens_per_s'] / t['decode_tokens_per_s']:.2f} |")
PY
