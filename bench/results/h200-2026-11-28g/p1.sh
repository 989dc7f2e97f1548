#!/usr/bin/env bash
# Seventh session, probe 1, one call on the lent H200:
#   source scripts/device-env.sh; bash bench/results/h200-2026-11-28g/p1.sh
# - the touched tests on the NVIDIA adapter (the decode attention merged by the last workgroup of a head
#   block through an atomic arrival counter: cross-workgroup visibility is what lavapipe cannot show);
# - WGT_DECODE_COMBINE=split (two dispatches) against the default (last workgroup, up to 32 chunks) and
#   =last at 8192 keys: kernels (wgt bench --only attn_decode) and wgt generate, alternated;
set -u
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
W=build-bench/bin/wgt
o=$OUT/p1; mkdir -p $o
for t in test_decode_attention test_kv_q8 test_llama_kv_q8 test_attention; do
  timeout 300 build-bench/bin/$t > $o/$t.txt 2>&1; echo "$t rc=$? $(tail -1 $o/$t.txt)"
done
for r in 1 2; do
  for c in split auto last; do
    WGT_DECODE_COMBINE=$c $W bench --only attn_decode 2>&1 | grep "^attn_decode" | sed "s/^/$c r$r /" | tee -a $o/attn_decode.txt
  done
done
for r in 1 2; do
  for c in split auto; do
    for w in f16 q4; do
      WGT_DECODE_COMBINE=$c $W generate --bench --shape llama-3.2-1b --weights $w --prompt-tokens 512 --max-tokens 128 \
        2>&1 | grep "prefill" | sed "s/^/$c r$r /" | tee -a $o/generate.txt
    done
  done
done
for c in split auto; do
  WGT_DECODE_COMBINE=$c $W generate --bench --shape llama-3.2-1b --weights q4 --prompt-tokens 512 --max-tokens 128 \
    --kv-cache q8 2>&1 | grep "prefill" | sed "s/^/$c /" | tee -a $o/generate.txt
done
for r in 1 2; do
  for c in split last; do
    WGT_DECODE_COMBINE=$c $W generate --bench --shape llama-3.2-1b --weights f16 --prompt-tokens 8192 --max-tokens 64 \
      2>&1 | grep "prefill" | sed "s/^/$c 8192 r$r /" | tee -a $o/generate.txt
  done
done
