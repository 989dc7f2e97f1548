#!/usr/bin/env bash
# Sixth session, probe 3 (H200): decode attention in one dispatch (SINGLE, default up to 16 chunks of 64 keys)
# against the split form (WGT_DECODE_ATTN_SINGLE=0: first pass + combine), kernel by kernel over cache lengths,
# then in wgt generate --bench (Llama-3.2-1B shape, 512-token prompt) for f16, q4, q8 weights and the 8-bit
# KV cache, alternated; and the GPT's KV-cache sampling (issue 11) after a 100-step training bench.
#   source scripts/device-env.sh; bash bench/results/h200-2026-11-28f/p3.sh
set -u
W=build-bench/bin/wgt
o=$OUT/p3; mkdir -p $o
for m in 16 0 16 0; do
  WGT_DECODE_ATTN_SINGLE=$m $W bench --only attn_decode 2>&1 | grep attn_decode | sed "s/^/single $m: /" | tee -a $o/attn_decode.txt
done
for w in f16 q4 q8; do
  for m in 16 0 16 0; do
    WGT_DECODE_ATTN_SINGLE=$m $W generate --bench --shape llama-3.2-1b --weights $w --prompt-tokens 512 --max-tokens 128 \
      2>&1 | grep "prefill" | sed "s/^/single $m: /" | tee -a $o/generate.txt
  done
done
for m in 16 0; do
  WGT_DECODE_ATTN_SINGLE=$m $W generate --bench --shape llama-3.2-1b --weights f16 --prompt-tokens 512 --max-tokens 128 \
    --kv-cache q8 2>&1 | grep "prefill" | sed "s/^/single $m: /" | tee -a $o/generate.txt
done
$W train --preset shakespeare --data data/tinyshakespeare.txt --max-iters 100 --bench --out /tmp/wb --quiet 2>&1 | grep "bench:" | tee $o/train.txt
for m in 16 0 16 0; do
  WGT_DECODE_ATTN_SINGLE=$m $W sample --checkpoint /tmp/wb/ckpt.safetensors --tokens 500 > /dev/null 2> $o/s.txt
  tail -1 $o/s.txt | sed "s/^/single $m: /" | tee -a $o/sample.txt
done
