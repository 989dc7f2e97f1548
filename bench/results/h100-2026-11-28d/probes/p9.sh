#!/usr/bin/env bash
# session 4 probe 9: window destinations (attention gradients written into the qkv gradient) on the H100;
# the GPU tests that cover the changed kernels and the engine
set -u
W=build-bench/bin/wgt
for r in 1 2; do
  for w in 0 1; do
    echo "train window_dest=$w: $(WGT_AUTOGRAD_WINDOW_DEST=$w $W train --preset shakespeare --data data/tinyshakespeare.txt --max-iters 60 --bench --out /tmp/wb --quiet 2>&1 | grep 'bench:')"
  done
done
WGT_PROFILE_TRACE=/tmp/t2.json $W train --preset shakespeare --data data/tinyshakespeare.txt --max-iters 20 --bench --out /tmp/wb3 --quiet > /dev/null 2>&1
python3 bench/trace_by_kernel.py /tmp/t2.json 20 24
cd build-bench
for t in test_autograd test_attention test_train_reference test_gpt_train test_gpt_model; do
  echo "$t: $(timeout 300 bin/$t 2>&1 | tail -1)"
done
