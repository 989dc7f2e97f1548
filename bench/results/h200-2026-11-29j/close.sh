#!/usr/bin/env bash
# Closing measurements of the 2026-11-29 tenth session, one call on the lent H200:
#   source scripts/device-env.sh; bash bench/results/h200-2026-11-29j/close.sh
# issue 11: the training step against PyTorch eager f32 (three processes each, alternated), PyTorch's
# other modes, KV-cache sampling; issue 12: wgt generate --bench (Llama-3.2-1B shape, random weights,
# 512-token prompt) f16 / q8 / q4 and q4 with the 8-bit KV cache, one process of bench/llm_torch_ref.py;
# the GPU tests of the paths changed this session.
set -u
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
echo "tree: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
W=build-bench/bin/wgt
TORCH="env LD_LIBRARY_PATH=$WGT_NO_MPI_LD_LIBRARY_PATH python3"
o=$OUT/close; mkdir -p $o
st() { $W train --preset shakespeare --data data/tinyshakespeare.txt --max-iters 100 --bench --out /tmp/wb --quiet 2>&1 | grep "bench:"; }
for i in 1 2 3; do
  st | sed "s/^/wgt: /" | tee -a $o/step.txt
  $TORCH bench/train_torch_ref.py --max-iters 100 --bench 2>&1 | grep "bench:" | sed "s/^/torch f32: /" | tee -a $o/step.txt
done
WGT_GELU_EPILOGUE=0 st | sed "s/^/wgt, WGT_GELU_EPILOGUE=0: /" | tee -a $o/step.txt
WGT_TRANSPOSE_VEC4=0 st | sed "s/^/wgt, WGT_TRANSPOSE_VEC4=0: /" | tee -a $o/step.txt
$TORCH bench/train_torch_ref.py --max-iters 60 --bench --tf32 2>&1 | grep "bench:" | sed "s/^/torch tf32: /" | tee -a $o/step.txt
$TORCH bench/train_torch_ref.py --max-iters 60 --bench --bf16 2>&1 | grep "bench:" | sed "s/^/torch bf16: /" | tee -a $o/step.txt
timeout 150 $TORCH bench/train_torch_ref.py --max-iters 60 --bench --bf16 --compile 2>&1 | grep "bench:" | sed "s/^/torch bf16 compile: /" | tee -a $o/step.txt
$W sample --checkpoint /tmp/wb/ckpt.safetensors --tokens 500 > /dev/null 2> $o/wgt_sample.txt; tail -1 $o/wgt_sample.txt
$TORCH bench/train_torch_ref.py --max-iters 60 --bench --sample-bench 500 2>&1 | grep -i "sample" | tee $o/torch_sample.txt
for w in f16 q8 q4; do
  $W generate --bench --shape llama-3.2-1b --weights $w --prompt-tokens 512 --max-tokens 128 --json $o/wgt_$w.json \
    2>&1 | grep "prefill" | tee -a $o/generate.txt
done
$W generate --bench --shape llama-3.2-1b --weights q4 --prompt-tokens 512 --max-tokens 128 --kv-cache q8 \
  --json $o/wgt_q4_kvq8.json 2>&1 | grep "prefill" | tee -a $o/generate.txt
$TORCH bench/llm_torch_ref.py --json $o/torch1.json 2>&1 | tail -1 | tee $o/torch1.txt
for t in test_gelu_linear test_webgpu_transpose test_autograd test_webgpu_matmul test_gpt_train test_llama test_rope_linear; do
  echo "$t: $(timeout 200 build-bench/bin/$t 2>&1 | tail -1)"
done
