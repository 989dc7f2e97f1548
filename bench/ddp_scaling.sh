#!/usr/bin/env bash
# Issue 15: data-parallel scaling of `wgt train` on one machine with several
# GPUs (docs/distributed.md has the cost model it is compared with), next to
# PyTorch DDP (bench/ddp_torch_ref.py, NCCL) on the same model and batches.
#   bench/ddp_scaling.sh [OUTDIR] [GPU COUNTS...]      (default bench-results/ddp, 1 2 4 8)
#   MODELS="shakespeare gpt2" (the default) picks the models:
#     shakespeare  the preset (6 x 384, block 256), 64 sequences per GPU
#     gpt2         GPT-2 small's blocks (12 layers, 12 heads, 768, block 1024,
#                  dropout 0) on the character data, 8 sequences per GPU
#   STEPS=60 (the first 10 not timed), LOSS_STEPS=40 (the loss comparison), LOSS_CHECK=0 skips it.
# Weak scaling: a fixed batch per GPU, so the global batch grows with N. For
# wgt, N ranks also run with --ddp-no-overlap: the difference in ms/step is the
# communication that overlapping with backward hides. Efficiency is
# tokens/s(N) / (N x tokens/s(1)). Then, per N > 1, the loss check: N ranks
# against one process with the same global batch, dropout 0 (each rank draws
# its own dropout masks), LOSS_STEPS steps, the largest difference of any
# logged loss (log.csv, every 10 steps).
# Needs mpirun (scripts/setup-deps.sh; on the lent GPU machine
# scripts/device-env.sh unpacks Debian's Open MPI from .gl/mpi) and, for the
# reference, PyTorch with CUDA and torchrun. WGT_NO_MPI_LD_LIBRARY_PATH (set by
# device-env.sh) is the library path without Open MPI's, for torchrun.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="${1:-bench-results/ddp}"
shift || true
counts=("$@")
[ ${#counts[@]} -gt 0 ] || counts=(1 2 4 8)
read -r -a models <<< "${MODELS:-shakespeare gpt2}"
steps="${STEPS:-60}"
loss_steps="${LOSS_STEPS:-40}"
wgt="${WGT:-$root/build/bin/wgt}"  # WGT: another binary (an A/B of two builds)
mkdir -p "$out"
mpi="mpirun --allow-run-as-root --oversubscribe --bind-to none"
adapters() { seq -s, 0 $(($1 - 1)); }  # rank i on adapter i
torch_env() { env LD_LIBRARY_PATH="${WGT_NO_MPI_LD_LIBRARY_PATH-${LD_LIBRARY_PATH:-}}" "$@"; }
for model in "${models[@]}"; do
  case "$model" in
    shakespeare) per_gpu=64; shape=() ;;
    gpt2) per_gpu=8; shape=(--n-layer 12 --n-head 12 --n-embd 768 --block-size 1024 --dropout 0) ;;
    *) echo "ddp_scaling.sh: unknown model $model (shakespeare, gpt2)" >&2; exit 2 ;;
  esac
  for n in "${counts[@]}"; do
    args=(train --preset shakespeare "${shape[@]}" --backend webgpu --batch-size $((per_gpu * n)) --max-iters "$steps"
          --bench-warmup 10 --bench --quiet --sample 0 --out "$out/run_${model}_$n")
    if [ "$n" = 1 ]; then
      "$wgt" "${args[@]}" --adapter 0 | tee "$out/${model}_wgt_$n.txt"
    else
      $mpi -np "$n" "$wgt" "${args[@]}" --adapter "$(adapters "$n")" | tee "$out/${model}_wgt_$n.txt"
      $mpi -np "$n" "$wgt" "${args[@]}" --adapter "$(adapters "$n")" --ddp-no-overlap |
        tee "$out/${model}_wgt_${n}_no_overlap.txt"
    fi
    torch_env torchrun --standalone --nproc_per_node "$n" "$root/bench/ddp_torch_ref.py" --batch-size "$per_gpu" \
      --max-iters "$steps" "${shape[@]}" | tee "$out/${model}_torch_$n.txt"
  done
  # the loss check: N ranks against one process, same global batch, no dropout
  for n in "${counts[@]}"; do
    [ "$n" = 1 ] || [ "${LOSS_CHECK:-1}" = 0 ] && continue
    largs=(train --preset shakespeare "${shape[@]}" --dropout 0 --backend webgpu --batch-size $((per_gpu * n))
           --max-iters "$loss_steps" --log-interval 10 --eval-interval 100000 --eval-iters 1 --sample 0 --quiet)
    "$wgt" "${largs[@]}" --adapter 0 --out "$out/loss_${model}_1x$n" > /dev/null
    $mpi -np "$n" "$wgt" "${largs[@]}" --adapter "$(adapters "$n")" --out "$out/loss_${model}_$n" > /dev/null
    python3 - "$out/loss_${model}_1x$n/log.csv" "$out/loss_${model}_$n/log.csv" "$model" "$n" <<'PY' |
import csv, sys
one, many = ([r for r in csv.DictReader(open(p)) if r["loss"]] for p in sys.argv[1:3])
steps = [r["step"] for r in one]
diffs = [abs(float(a["loss"]) - float(b["loss"])) for a, b in zip(one, many)]
print(f"loss check {sys.argv[3]}: {sys.argv[4]} ranks vs 1 process, same global batch: steps {','.join(steps)}; "
      f"1 process {one[-1]['loss']}, {sys.argv[4]} ranks {many[-1]['loss']}; largest difference {max(diffs):.2e}"
      f" over {len(diffs)} logged losses" if diffs and len(one) == len(many) else "loss check: the logs differ in length")
PY
      tee "$out/${model}_loss_check_$n.txt"
  done
done
python3 - "$out" "${counts[*]}" "${models[@]}" <<'PY' | tee "$out/summary.md"
import re, sys
out, counts, models = sys.argv[1], [int(c) for c in sys.argv[2].split()], sys.argv[3:]
def read(name):
    try:
        return open(f"{out}/{name}").read()
    except OSError:
        return ""
def rate(name):
    m = re.search(r"([0-9.]+) ms/step, ([0-9]+) tokens/s", read(name))
    return (float(m.group(1)), float(m.group(2))) if m else None
def peak(name):
    m = re.search(r"peak device memory ([0-9.]+) MiB", read(name))
    return m.group(1) if m else "-"
for model in models:
    base = {k: rate(f"{model}_{k}_1.txt") for k in ("wgt", "torch")}
    print(f"\n{model}\n")
    print("| GPUs | wgt ms/step | wgt tokens/s | wgt efficiency | wgt no-overlap ms/step | hidden by overlap ms | "
          "wgt peak MiB (rank 0) | torch DDP ms/step | torch tokens/s | torch efficiency | torch peak MiB (rank 0) |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for n in counts:
        w, t, wn = rate(f"{model}_wgt_{n}.txt"), rate(f"{model}_torch_{n}.txt"), rate(f"{model}_wgt_{n}_no_overlap.txt")
        eff = lambda r, b: f"{r[1] / (n * b[1]):.3f}" if r and b else "-"
        hidden = f"{wn[0] - w[0]:.1f}" if w and wn else "-"
        print(f"| {n} | {w[0] if w else '-'} | {w[1] if w else '-'} | {eff(w, base['wgt'])} | {wn[0] if wn else '-'} | "
              f"{hidden} | {peak(f'{model}_wgt_{n}.txt')} | {t[0] if t else '-'} | {t[1] if t else '-'} | "
              f"{eff(t, base['torch'])} | {peak(f'{model}_torch_{n}.txt')} |")
    for n in counts:
        line = read(f"{model}_loss_check_{n}.txt").strip()
        if line:
            print(f"\n{line}")
PY
