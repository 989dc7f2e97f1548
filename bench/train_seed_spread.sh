#!/usr/bin/env bash
# Is a val-loss gap between `wgt train` and bench/train_torch_ref.py larger than
# the spread between seeds? (On one GPU; the shakespeare preset.)
#
# bench/train_step_check.py shows that from the same weights, batches and
# dropout masks both take the same steps (to float32 rounding). Two full runs
# still differ: their initial weights and dropout masks are different random
# numbers (Philox in wgt, torch's generator in PyTorch). One run of each is one
# sample of that noise; the evaluations of one run are not independent samples
# (each is the same trajectory a few hundred steps later). This script runs
# both with several seeds (a seed also fixes the batches, the same for both
# with the same seed) and prints the best val loss of each run, the mean and
# spread per implementation, and the paired differences.
#
#   bench/train_seed_spread.sh [SEEDS] [ITERS] [OUTDIR]
#   default: "1337 1 2", 2000 (the best val loss comes near step 1750; the
#   schedule stays the 5000-step one), bench-results/seed_spread
# Cost on an H100 (bench/results/h100-2026-11-24-s3): wgt ~43 ms/step, PyTorch f32
# ~34 ms/step, plus 8 evaluations of 2 x 200 batches each; the two side by side
# take ~3.5 minutes per seed.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
seeds="${1:-1337 1 2}"
iters="${2:-2000}"
out="${3:-bench-results/seed_spread}"
wgt="$root/build/bin/wgt"
mkdir -p "$out"
# The two implementations run at the same time on the GPU (nothing is timed
# here, and the GPU has room for both): each as its own sequence over seeds.
(for s in $seeds; do
  "$wgt" train --preset shakespeare --data "$root/data/tinyshakespeare.txt" --seed "$s" --max-iters "$iters" \
    --lr-decay-iters 5000 --checkpoint-interval 0 --sample 0 --out "$out/wgt_$s" --quiet > "$out/wgt_$s.txt" 2>&1
done) &
for s in $seeds; do
  python3 "$root/bench/train_torch_ref.py" --seed "$s" --max-iters "$iters" --lr-decay-iters 5000 \
    --csv "$out/torch_$s.csv" 2>&1 | grep -E "val loss|done" > "$out/torch_$s.txt"
done
wait
python3 - "$out" $seeds <<'PY'
import csv, math, os, sys
out, seeds = sys.argv[1], sys.argv[2:]
def best(path):
    vals = [float(r["val_eval"]) for r in csv.DictReader(open(path)) if r["val_eval"]]
    return min(vals)
w = [best(os.path.join(out, f"wgt_{s}", "log.csv")) for s in seeds]
t = [best(os.path.join(out, f"torch_{s}.csv")) for s in seeds]
def stats(x):
    m = sum(x) / len(x)
    sd = math.sqrt(sum((v - m) ** 2 for v in x) / (len(x) - 1)) if len(x) > 1 else float("nan")
    return m, sd
print("\n| seed | wgt best val | PyTorch best val | wgt - PyTorch |\n|---|---|---|---|")
for s, a, b in zip(seeds, w, t):
    print(f"| {s} | {a:.4f} | {b:.4f} | {a - b:+.4f} |")
(mw, sw), (mt, st), (md, sd) = stats(w), stats(t), stats([a - b for a, b in zip(w, t)])
print(f"\nwgt {mw:.4f} +- {sw:.4f}, PyTorch {mt:.4f} +- {st:.4f} (mean +- sd over {len(seeds)} seeds)")
print(f"paired difference {md:+.4f} +- {sd:.4f}; standard error of the mean difference "
      f"{sd / math.sqrt(len(seeds)):.4f}")
PY
