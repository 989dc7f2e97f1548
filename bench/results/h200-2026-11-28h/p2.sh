#!/usr/bin/env bash
# Eighth session, probe 2, one call on the lent H200:
#   source scripts/device-env.sh; bash bench/results/h200-2026-11-28h/p2.sh
# The tree at c89ff60 against 65101e5 (its libwgtensor.so.0 carried as .scratch/s8/old) and its own knobs:
#   - dq partial rows as vec4s (47e1dcd): attention fwd+bwd, new against old;
#   - the norms' fold of the residual gradient sum (a59d4be): WGT_AUTOGRAD_FOLD=0 against on;
#   - Philox with 64-bit products (c89ff60): WGT_PHILOX_INT64=0 against on.
# Alternated processes (three rounds of the step), then the per-dispatch profile of the new step, PyTorch eager f32.
set -u
W=build-bench/bin/wgt
OLD="env LD_LIBRARY_PATH=$PWD/.scratch/s8/old:${LD_LIBRARY_PATH:-}"
o=$OUT/p2; mkdir -p $o
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
$W devices | head -3
for r in 1 2; do
  for v in new old mul16; do
    pre=""; [ $v = old ] && pre="$OLD"; [ $v = mul16 ] && pre="env WGT_PHILOX_INT64=0"
    $pre $W bench --only attn_ 2>&1 | grep -E "^attn_f(b)?_gpt" | sed "s/^/$v r$r /" | tee -a $o/attn.txt
  done
done
st() { $W train --preset shakespeare --data data/tinyshakespeare.txt --max-iters 100 --bench --out /tmp/wb --quiet 2>&1 | grep "bench:"; }
for r in 1 2 3; do
  st | sed "s/^/new r$r: /" | tee -a $o/step.txt
  $OLD $W train --preset shakespeare --data data/tinyshakespeare.txt --max-iters 100 --bench --out /tmp/wb --quiet 2>&1 \
    | grep "bench:" | sed "s/^/old r$r: /" | tee -a $o/step.txt
  WGT_AUTOGRAD_FOLD=0 st | sed "s/^/nofold r$r: /" | tee -a $o/step.txt
  WGT_PHILOX_INT64=0 st | sed "s/^/mul16 r$r: /" | tee -a $o/step.txt
done
(export LD_LIBRARY_PATH=$WGT_NO_MPI_LD_LIBRARY_PATH
 for r in 1 2; do python3 bench/train_torch_ref.py --max-iters 100 --bench 2>&1 | grep "bench:" | sed "s/^/torch f32 r$r: /"; done) \
  | tee -a $o/step.txt
WGT_PROFILE_TRACE=$o/trace.json $W train --preset shakespeare --data data/tinyshakespeare.txt --max-iters 20 --bench \
  --out /tmp/wb3 --quiet > /dev/null 2>&1
python3 bench/trace_by_kernel.py $o/trace.json 20 90 > $o/by_kernel.txt
head -40 $o/by_kernel.txt
gzip -f $o/trace.json
