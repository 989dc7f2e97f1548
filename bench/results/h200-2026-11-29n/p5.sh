#!/usr/bin/env bash
# Fourteenth session, fifth H200 call (after close):
#   source scripts/device-env.sh; bash bench/results/h200-2026-11-29n/p5.sh
# build-bench: the decode attention's first pass with half its workgroup memory (o_part two rows at a time:
# 7 KiB a workgroup instead of 11; hypothesis: at 8192 keys its 1,024 workgroups of 64 invocations ran five
# an SM, ~1.5 waves, and nine fit); build-base: c712d98.
# 1. the attention tests on the NVIDIA adapter; 2. wgt bench --only attn_decode, base and new alternated;
# 3. wgt generate q4 and f16 at 8192 keys and q4 at 512, base and new alternated.
set -u
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
[ -e build-base/lib/libwgpu_native.so ] || { rm -f build-base/lib/libwgpu_native.so; cp build-bench/lib/libwgpu_native.so build-base/lib/; }
o=$OUT/p5; mkdir -p $o
t0=$(date +%s)
for t in test_decode_attention test_attention_linear test_kv_q8 test_llama_kv_q8; do
  timeout 120 build-bench/bin/$t > /tmp/$t.log 2>&1; echo "$t: rc $? $(tail -1 /tmp/$t.log) $(grep FAIL /tmp/$t.log | head -3)"
done | tee $o/tests.txt
for r in 1 2; do
  for b in base new; do
    W=build-base/bin/wgt; [ $b = new ] && W=build-bench/bin/wgt
    echo "== $b" >> $o/attn.txt
    $W bench --only attn_decode 2>&1 | grep attn_decode >> $o/attn.txt
  done
done
cat $o/attn.txt
g() {  # label wgt weights prompt
  echo "$1 $3 $4: $($2 generate --bench --shape llama-3.2-1b --weights $3 --prompt-tokens $4 --max-tokens 128 2>&1 \
    | grep -E 'prefill' | sed 's/.*: prefill/prefill/')" | tee -a $o/generate.txt
}
for r in 1 2; do
  for w in q4 f16; do
    g base build-base/bin/wgt $w 8192
    g new build-bench/bin/wgt $w 8192
  done
  g base build-base/bin/wgt q4 512
  g new build-bench/bin/wgt q4 512
done
echo "total: $(( $(date +%s) - t0 )) s"
