#!/usr/bin/env bash
# Closing measurements of the 2026-11-29 eleventh session, one call on the lent H200:
#   source scripts/device-env.sh; bash bench/results/h200-2026-11-29k/close.sh
# issue 12: wgt generate --bench (Llama-3.2-1B shape, random weights, 512-token prompt, 128 decoded tokens)
# f16 / q8 / q4 at decode fusion level 5 (the attention's combine in the o projection's GEMV: the new default)
# against level 4 (the previous default), three alternated rounds; q4 with the 8-bit KV cache; one process of
# bench/llm_torch_ref.py (transformers f16: eager prefill, static-cache decode); the GPU tests of the paths
# changed this session.
set -u
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
echo "tree: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
W=build-bench/bin/wgt
TORCH="env LD_LIBRARY_PATH=$WGT_NO_MPI_LD_LIBRARY_PATH python3"
o=$OUT/close; mkdir -p $o
g() {  # weights level [extra args]
  local w=$1 l=$2; shift 2
  echo "$w level $l $*: $(WGT_LLAMA_DECODE_FUSE=$l $W generate --bench --shape llama-3.2-1b --weights $w --prompt-tokens 512 \
    --max-tokens 128 --json $o/wgt_${w}_l$l.json "$@" 2>&1 | grep -E 'prefill|per decode' | tr '\n' ' ')" | tee -a $o/generate.txt
}
for r in 1 2 3; do
  for w in f16 q8 q4; do g $w 5; g $w 4; done
done
g q4 5 --kv-cache q8
$TORCH bench/llm_torch_ref.py --json $o/torch1.json 2>&1 | tail -1 | tee $o/torch1.txt
for t in test_attention_linear test_llama test_decode_attention test_quant test_rope_linear test_webgpu_matmul; do
  echo "$t: $(timeout 200 build-bench/bin/$t 2>&1 | tail -1)"
done
