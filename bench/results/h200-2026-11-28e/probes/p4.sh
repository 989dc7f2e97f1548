#!/usr/bin/env bash
# session 5 probe 4: the step at b0b6697 (narrow tiles, GELU separate) against f0ac176 (GELU in the fc GEMM's epilogue); trace
set -u
W=build-bench/bin/wgt
P=.scratch/prev/bin/wgt
TORCH="env LD_LIBRARY_PATH=$WGT_NO_MPI_LD_LIBRARY_PATH python3"
st() { $1 train --preset shakespeare --data data/tinyshakespeare.txt --max-iters 80 --bench --out /tmp/wb --quiet 2>&1 | grep 'bench:'; }
for i in 1 2; do
  echo "b0b6697: $(st $P)"
  echo "current: $(st $W)"
  echo "torch f32: $($TORCH bench/train_torch_ref.py --max-iters 100 --bench 2>&1 | grep 'bench:')"
done
WGT_PROFILE_TRACE=$OUT/trace.json $W train --preset shakespeare --data data/tinyshakespeare.txt --max-iters 20 --bench --out /tmp/wb3 --quiet > /dev/null 2>&1
python3 bench/trace_by_kernel.py $OUT/trace.json 20 45 > $OUT/by_kernel.txt
rm -f $OUT/trace.json
head -25 $OUT/by_kernel.txt
