#!/usr/bin/env bash
# session 5 probe 3: the training step with the "narrow" rule against without, and PyTorch
set -u
W=build-bench/bin/wgt
TORCH="env LD_LIBRARY_PATH=$WGT_NO_MPI_LD_LIBRARY_PATH python3"
st() { $W train --preset shakespeare --data data/tinyshakespeare.txt --max-iters 100 --bench --out /tmp/wb --quiet 2>&1 | grep 'bench:'; }
for i in 1 2; do
  echo "without narrow: $(WGT_MATMUL_SHAPE_RULES=layout,waves,pad st)"
  echo "default:        $(st)"
  echo "torch f32:      $($TORCH bench/train_torch_ref.py --max-iters 100 --bench 2>&1 | grep 'bench:')"
done
