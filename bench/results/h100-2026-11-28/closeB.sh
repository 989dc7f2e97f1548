#!/usr/bin/env bash
# closing B: training throughput and memory against PyTorch (same call), sampling, attention
set -u
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
W=build-bench/bin/wgt
o=$OUT/train; mkdir -p $o
for i in 1 2; do
  $W train --preset shakespeare --data data/tinyshakespeare.txt --max-iters 300 --bench --out /tmp/wb --quiet 2>&1 | grep "bench:" | tee -a $o/wgt.txt
done
$W sample --checkpoint /tmp/wb/ckpt.safetensors --tokens 500 > /dev/null 2> $o/wgt_sample.txt; tail -1 $o/wgt_sample.txt
$W bench --only attn_ 2>&1 | grep attn_ | tee $o/wgt_attn.txt
(
export LD_LIBRARY_PATH=$WGT_NO_MPI_LD_LIBRARY_PATH
R=bench/train_torch_ref.py
python3 $R --max-iters 300 --bench --sample-bench 500 2>&1 | grep -E "bench:|sample" | tee $o/torch_f32.txt
python3 $R --max-iters 300 --bench --tf32 2>&1 | grep "bench:" | tee $o/torch_tf32.txt
python3 $R --max-iters 300 --bench --bf16 2>&1 | grep "bench:" | tee $o/torch_bf16.txt
timeout 150 python3 $R --max-iters 300 --bench --bf16 --compile 2>&1 | grep "bench:" | tee $o/torch_bf16_compile.txt
python3 bench/torch_ref.py --only attn_ --json /tmp/ta.json 2>&1 | tail -6 | tee $o/torch_attn.txt
)
