#!/usr/bin/env bash
# session 4 probe 1: where the training step's time goes, wgt (per op) and PyTorch (per kernel)
set -u
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
W=build-bench/bin/wgt
$W train --preset shakespeare --data data/tinyshakespeare.txt --max-iters 60 --bench --out /tmp/wb --quiet 2>&1 | grep "bench:"
WGT_PROFILE=1 $W train --preset shakespeare --data data/tinyshakespeare.txt --max-iters 20 --bench --out /tmp/wb2 --quiet > $OUT/wgt_profile.txt 2>&1
WGT_PROFILE_TRACE=$OUT/trace.json $W train --preset shakespeare --data data/tinyshakespeare.txt --max-iters 20 --bench --out /tmp/wb3 --quiet > /dev/null 2>&1
python3 bench/trace_by_kernel.py $OUT/trace.json 20 70 > $OUT/by_kernel.txt
head -75 $OUT/by_kernel.txt
head -60 $OUT/wgt_profile.txt
$W bench --only gemm_bwd 2>&1 | grep gemm_
$W bench --only linear_gpt 2>&1 | grep linear_
(export LD_LIBRARY_PATH=$WGT_NO_MPI_LD_LIBRARY_PATH
 python3 bench/train_torch_ref.py --max-iters 60 --bench 2>&1 | grep "bench:"
 python3 .scratch/s4/torch_prof.py 2>&1 | tail -50)
gzip -f $OUT/trace.json
