#!/usr/bin/env bash
# Issue 15: data-parallel scaling of `wgt train` on one machine with several
# GPUs (docs/distributed.md has the cost model it is compared with), next to
# PyTorch DDP (bench/ddp_torch_ref.py, NCCL) on the same model and batches.
#   bench/ddp_scaling.sh [OUTDIR] [GPU COUNTS...]      (default bench-results/ddp, 1 2 4 8)
# Weak scaling: 64 sequences per GPU (the shakespeare preset's batch), so the
# global batch is 64 x N. Each run: 60 steps, the first 10 not timed (--bench).
# For wgt, N ranks also run with --ddp-no-overlap: the difference in ms/step is
# the communication that overlapping with backward hides. Efficiency is
# tokens/s(N) / (N x tokens/s(1)). Needs mpirun (scripts/setup-deps.sh) and,
# for the reference, PyTorch with CUDA and torchrun.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="${1:-bench-results/ddp}"
shift || true
counts=("$@")
[ ${#counts[@]} -gt 0 ] || counts=(1 2 4 8)
wgt="$root/build/bin/wgt"
mkdir -p "$out"
mpi="mpirun --allow-run-as-root --oversubscribe --bind-to none"
adapters() { seq -s, 0 $(($1 - 1)); }  # rank i on adapter i
for n in "${counts[@]}"; do
  args=(train --preset shakespeare --backend webgpu --batch-size $((64 * n)) --max-iters 60 --bench-warmup 10 --bench
        --quiet --out "$out/wgt_$n")
  if [ "$n" = 1 ]; then
    "$wgt" "${args[@]}" --adapter 0 | tee "$out/wgt_$n.txt"
  else
    $mpi -np "$n" "$wgt" "${args[@]}" --adapter "$(adapters "$n")" | tee "$out/wgt_$n.txt"
    $mpi -np "$n" "$wgt" "${args[@]}" --adapter "$(adapters "$n")" --ddp-no-overlap | tee "$out/wgt_${n}_no_overlap.txt"
  fi
  torchrun --standalone --nproc_per_node "$n" "$root/bench/ddp_torch_ref.py" --batch-size 64 | tee "$out/torch_$n.txt"
done
python3 - "$out" "${counts[@]}" <<'PY'
import re, sys
out, counts = sys.argv[1], [int(c) for c in sys.argv[2:]]
def rate(name):
    try:
        m = re.search(r"([0-9.]+) ms/step, ([0-9]+) tokens/s", open(f"{out}/{name}").read())
        return (float(m.group(1)), float(m.group(2))) if m else None
    except OSError:
        return None
base = {k: rate(f"{k}_1.txt") for k in ("wgt", "torch")}
print("| GPUs | wgt ms/step | wgt tokens/s | wgt efficiency | wgt no-overlap ms/step | torch DDP tokens/s | torch efficiency |")
print("|---:|---:|---:|---:|---:|---:|---:|")
for n in counts:
    w, t, wn = rate(f"wgt_{n}.txt"), rate(f"torch_{n}.txt"), rate(f"wgt_{n}_no_overlap.txt")
    eff = lambda r, b: f"{100 * r[1] / (n * b[1]):.0f}%" if r and b else "-"
    print(f"| {n} | {w[0] if w else '-'} | {w[1] if w else '-'} | {eff(w, base['wgt'])} | {wn[0] if wn else '-'} | "
          f"{t[1] if t else '-'} | {eff(t, base['torch'])} |")
PY
