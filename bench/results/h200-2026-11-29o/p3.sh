#!/usr/bin/env bash
# Probe p3 of the fifteenth session (2026-11-29), one call on the lent H200:
#   source scripts/device-env.sh; bash bench/results/h200-2026-11-29o/p3.sh
# Tree: 96ccf65 + the attention forward reading f16 q, k, v in place (attention_load_f16.wgsl;
# WGT_ATTENTION_F16_COPIES=1 restores the three f32 copies) + wgt bench's attn_prefill_f16_512.
# 1. the prefill's attention alone (wgt bench --only attn_prefill): copies / in place alternated, three rounds;
#    in place with 16 and 32 query rows a workgroup (WGT_ATTENTION_TILES); PyTorch's SDPA on the same case;
# 2. the 512-token prefill end to end, f16 / q4, copies / in place alternated, two rounds;
# 3. the attention tests and the parity suite on the NVIDIA adapter (the quad kernel's f16 path).
set -u
o=$OUT/p3; mkdir -p $o
t0=$(date +%s)
W=build-bench/bin/wgt
for r in 1 2 3; do
  for c in 1 0; do
    echo "r$r copies=$c: $(WGT_ATTENTION_F16_COPIES=$c $W bench --only attn_prefill 2>&1 | grep attn_prefill)" | tee -a $o/attn.txt
  done
done
for tiles in 16,16,128,16,8 32,16,128,16,8 64,32,128,16,8; do
  echo "tiles $tiles: $(WGT_ATTENTION_TILES=$tiles $W bench --only attn_prefill 2>&1 | grep attn_prefill)" | tee -a $o/attn.txt
done
env LD_LIBRARY_PATH=$WGT_NO_MPI_LD_LIBRARY_PATH python3 bench/torch_ref.py --json $o/torch_attn.json --only attn_prefill \
  2>&1 | tail -1 | tee -a $o/attn.txt
echo "bench: $(( $(date +%s) - t0 )) s"
for r in 1 2; do
  for w in f16 q4; do
    for c in 1 0; do
      echo "prefill r$r copies=$c $w: $(WGT_ATTENTION_F16_COPIES=$c $W generate --bench --shape llama-3.2-1b --weights $w \
        --prompt-tokens 512 --max-tokens 8 2>&1 | grep -E 'prefill' | sed 's/.*: prefill/prefill/')" | tee -a $o/generate.txt
    done
  done
done
echo "generate: $(( $(date +%s) - t0 )) s"
l=/tmp/logs; mkdir -p $l
for t in test_attention test_decode_attention test_llama test_attention_linear; do
  (timeout 300 build-bench/bin/$t > $l/$t.log 2>&1; echo "$t: rc $? $(tail -1 $l/$t.log) $(grep -E 'FAIL' $l/$t.log | head -3)") &
done > $o/tests.txt 2>&1
wait
timeout 300 build-bench/bin/test_parity > $l/test_parity.log 2>&1; echo "test_parity: rc $? $(tail -1 $l/test_parity.log)" >> $o/tests.txt
tar czf $o/test_logs.tar.gz -C /tmp logs
cat $o/tests.txt
echo "total: $(( $(date +%s) - t0 )) s"
