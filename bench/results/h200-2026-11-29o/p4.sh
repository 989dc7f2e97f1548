#!/usr/bin/env bash
# Probe p4 of the fifteenth session (2026-11-29), one call on the lent H200:
#   source scripts/device-env.sh; bash bench/results/h200-2026-11-29o/p4.sh
# Tree: p3's + attention_forward_quad with one row a quad (WGT_ATTENTION_QUAD_ROWS=1; default 2).
# The prefill's attention (attn_prefill_f16_512: 32 heads, one sequence: 256 workgroups of 64 rows, ~8 warps an
# SM) and the GPT training's (attn_f_gpt_256_nodrop), rows a quad 2 / 1 alternated with tiles (rows, keys);
# then the 512-token prefill end to end, f16 / q4, QR 2 / 1 alternated, two rounds.
set -u
o=$OUT/p4; mkdir -p $o
t0=$(date +%s)
W=build-bench/bin/wgt
for r in 1 2; do
  for tiles in 64,16 64,32 32,16 32,32 128,16 16,16; do
    for qr in 2 1; do
      echo "r$r tiles $tiles QR $qr: $(WGT_ATTENTION_TILES=$tiles,128,16,8 WGT_ATTENTION_QUAD_ROWS=$qr $W bench \
        --only attn_prefill 2>&1 | grep attn_prefill | cut -c1-22,80-)" | tee -a $o/attn.txt
    done
  done
done
for r in 1 2; do
  for qr in 2 1; do
    echo "r$r gpt QR $qr: $(WGT_ATTENTION_QUAD_ROWS=$qr $W bench --only attn_f_gpt_256_nodrop 2>&1 | grep attn_f | cut -c1-22,80-)" \
      | tee -a $o/attn.txt
  done
done
echo "bench: $(( $(date +%s) - t0 )) s"
for r in 1 2; do
  for w in f16 q4; do
    for qr in 2 1; do
      echo "prefill r$r QR $qr $w: $(WGT_ATTENTION_QUAD_ROWS=$qr $W generate --bench --shape llama-3.2-1b --weights $w \
        --prompt-tokens 512 --max-tokens 8 2>&1 | grep -E 'prefill' | sed 's/.*: prefill/prefill/')" | tee -a $o/generate.txt
    done
  done
done
WGT_ATTENTION_QUAD_ROWS=1 timeout 300 build-bench/bin/test_attention > /tmp/ta.log 2>&1; echo "test_attention QR 1: rc $? $(tail -1 /tmp/ta.log)" | tee $o/tests.txt
echo "total: $(( $(date +%s) - t0 )) s"
