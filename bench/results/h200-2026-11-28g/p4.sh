#!/usr/bin/env bash
# Seventh session, probe 4, one call on the lent H200:
#   source scripts/device-env.sh; bash bench/results/h200-2026-11-28g/p4.sh
# Where the training step's time goes now (attention order on): wgt per dispatch (WGT_PROFILE_TRACE, grouped by
# bench/trace_by_kernel.py) and PyTorch eager f32 per CUDA kernel (torch.profiler, torch_prof.py).
set -u
W=build-bench/bin/wgt
o=$OUT/p4; mkdir -p $o
$W train --preset shakespeare --data data/tinyshakespeare.txt --max-iters 100 --bench --out /tmp/wb --quiet 2>&1 | grep "bench:"
WGT_PROFILE_TRACE=$o/trace.json $W train --preset shakespeare --data data/tinyshakespeare.txt --max-iters 20 --bench \
  --out /tmp/wb3 --quiet > /dev/null 2>&1
python3 bench/trace_by_kernel.py $o/trace.json 20 90 > $o/by_kernel.txt
head -60 $o/by_kernel.txt
gzip -f $o/trace.json
(export LD_LIBRARY_PATH=$WGT_NO_MPI_LD_LIBRARY_PATH
 python3 bench/train_torch_ref.py --max-iters 100 --bench 2>&1 | grep "bench:"
 python3 bench/results/h200-2026-11-28g/torch_prof.py 2>&1 | tail -50) | tee $o/torch_prof.txt
