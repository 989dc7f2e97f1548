#!/usr/bin/env bash
# One command for the whole comparison on a machine with a GPU and PyTorch:
# wgt tune (GEMM tiles for this adapter, into $WGT_TUNE_CACHE or the default
# cache), wgt bench, bench/torch_ref.py, then the ratio table.
#   bench/run.sh [OUTDIR]   (default: bench-results)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="${1:-bench-results}"
mkdir -p "$out"
"$root/build/bin/wgt" tune > "$out/tune.txt"
"$root/build/bin/wgt" bench --json "$out/wgt.json" | tee "$out/wgt.txt"
python3 "$root/bench/torch_ref.py" --json "$out/torch.json" | tee "$out/torch.txt"
python3 "$root/bench/compare.py" "$out/wgt.json" "$out/torch.json" --markdown | tee "$out/compare.md"
