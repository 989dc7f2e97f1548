#!/usr/bin/env bash
# session 4 probe 11: the step after the window destinations and the uncopied attention dout
set -u
W=build-bench/bin/wgt
for r in 1 2; do
  echo "train: $($W train --preset shakespeare --data data/tinyshakespeare.txt --max-iters 60 --bench --out /tmp/wb --quiet 2>&1 | grep 'bench:')"
done
(export LD_LIBRARY_PATH=$WGT_NO_MPI_LD_LIBRARY_PATH; python3 bench/train_torch_ref.py --max-iters 60 --bench 2>&1 | grep "bench:")
WGT_PROFILE_TRACE=/tmp/t2.json $W train --preset shakespeare --data data/tinyshakespeare.txt --max-iters 20 --bench --out /tmp/wb3 --quiet > /dev/null 2>&1
python3 bench/trace_by_kernel.py /tmp/t2.json 20 40
