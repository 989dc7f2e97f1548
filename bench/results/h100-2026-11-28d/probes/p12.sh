#!/usr/bin/env bash
# session 4 probe 12: the final tree on the H100: GPU tests of the changed paths, the step once more
set -u
W=build-bench/bin/wgt
for i in 1 2; do
  echo "wgt: $($W train --preset shakespeare --data data/tinyshakespeare.txt --max-iters 60 --bench --out /tmp/wb --quiet 2>&1 | grep 'bench:')"
  echo "torch f32: $(env LD_LIBRARY_PATH=$WGT_NO_MPI_LD_LIBRARY_PATH python3 bench/train_torch_ref.py --max-iters 60 --bench 2>&1 | grep 'bench:')"
done
cd build-bench
for t in test_autograd test_attention test_train_reference test_gpt_train test_training test_faults; do
  echo "$t: $(timeout 200 bin/$t 2>&1 | tail -1)"
done
