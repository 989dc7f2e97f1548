#!/usr/bin/env bash
# Eighth session, probe 8, one call on the lent H200:
#   source scripts/device-env.sh; bash bench/results/h200-2026-11-28h/p8.sh
# rand's word picked by selects, not a run-time vector index (the working tree): dropout_add against 27.5 us a call and
# the engine's kernels against 802.5 us a step in p4 (profile), the step against PyTorch eager f32 (alternated).
set -u
W=build-bench/bin/wgt
o=$OUT/p8; mkdir -p $o
$W bench --only attn_ 2>&1 | grep -E "^attn_f(b)?_gpt_256 " | tee $o/attn.txt
st() { $W train --preset shakespeare --data data/tinyshakespeare.txt --max-iters 100 --bench --out /tmp/wb --quiet 2>&1 | grep "bench:"; }
for r in 1 2; do
  st | sed "s/^/wgt r$r: /" | tee -a $o/step.txt
  (export LD_LIBRARY_PATH=$WGT_NO_MPI_LD_LIBRARY_PATH
   python3 bench/train_torch_ref.py --max-iters 100 --bench 2>&1 | grep "bench:" | sed "s/^/torch f32 r$r: /") | tee -a $o/step.txt
done
WGT_PROFILE_TRACE=$o/trace.json $W train --preset shakespeare --data data/tinyshakespeare.txt --max-iters 20 --bench \
  --out /tmp/wb3 --quiet > /dev/null 2>&1
python3 bench/trace_by_kernel.py $o/trace.json 20 90 > $o/by_kernel.txt
grep -E "dropout|wgt_backward#1|^all" $o/by_kernel.txt
gzip -f $o/trace.json
