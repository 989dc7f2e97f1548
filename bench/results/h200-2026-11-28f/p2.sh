#!/usr/bin/env bash
# Sixth session, probe 2 (H200): the attention's keep bits (forward stores them, the fused backward reads them)
# against drawing Philox again (WGT_ATTENTION_DROPOUT_MASK=0), in the attention bench and in the training step
# (alternated); then the 8-bit KV cache with its fused decode (one dispatch a layer more) against the f16 cache.
#   source scripts/device-env.sh; bash bench/results/h200-2026-11-28f/p2.sh
set -u
W=build-bench/bin/wgt
o=$OUT/p2; mkdir -p $o
st() { $W train --preset shakespeare --data data/tinyshakespeare.txt --max-iters 100 --bench --out /tmp/wb --quiet 2>&1 | grep "bench:"; }
for m in 1 0 1 0; do
  WGT_ATTENTION_DROPOUT_MASK=$m $W bench --only attn_ 2>&1 | grep "attn_fb_gpt\|attn_f_gpt" | sed "s/^/mask $m: /" | tee -a $o/attn.txt
done
for m in 1 0 1 0 1 0; do
  WGT_ATTENTION_DROPOUT_MASK=$m st | sed "s/^/mask $m: /" | tee -a $o/step.txt
done
for kv in default q8 default q8; do
  $W generate --bench --shape llama-3.2-1b --weights f16 --prompt-tokens 512 --max-tokens 128 --kv-cache $kv 2>&1 | grep "prefill\|per decode" | tee -a $o/kv.txt
done
$W bench --only attn_decode 2>&1 | grep attn_decode | tee $o/attn_decode.txt
