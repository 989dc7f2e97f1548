#!/usr/bin/env bash
# Issue 12's 8-bit KV cache on the H200 (sixth session): the decode attention kernel over an f16 and an
# 8-bit cache (wgt bench), then wgt generate --bench (Llama-3.2-1B shape, random weights) with the default
# (f16) and the 8-bit cache at a 512- and an 8192-token prompt, f16 and q4 weights, alternated. Also the
# attention fwd+bwd of the GPT preset with and without dropout (issue 11: what Philox costs there).
#   source scripts/device-env.sh; bash bench/results/h200-2026-11-28f/kv.sh
set -u
W=build-bench/bin/wgt
mkdir -p $OUT/kv
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
$W bench --only attn_decode 2>&1 | tail -5 | tee $OUT/kv/attn_decode.txt
$W bench --only attn_fb_gpt 2>&1 | tail -2 | tee $OUT/kv/attn_fb.txt
$W bench --only attn_f_gpt 2>&1 | tail -2 | tee -a $OUT/kv/attn_fb.txt
for P in 512 8192; do
  for w in f16 q4; do
    for kv in default q8 default q8; do
      $W generate --bench --shape llama-3.2-1b --weights $w --prompt-tokens $P --max-tokens 128 --kv-cache $kv \
        --json $OUT/kv/gen_${w}_${P}_${kv}.json 2>&1 | grep "prefill" | tee -a $OUT/kv/generate.txt
    done
  done
done
