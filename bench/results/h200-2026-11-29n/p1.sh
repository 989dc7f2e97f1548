#!/usr/bin/env bash
# Fourteenth session, first H200 call:
#   source scripts/device-env.sh; bash bench/results/h200-2026-11-29n/p1.sh
# build-bench: tree 9c0282f (decode kernels waiting on fewer rounds of memory latency: the GEMV norm
# prologues load the norm weight with the row, the o projection's attention merge loads four chunks at a
# time, one-row norms take a workgroup, reductions split to 8 elements a thread); build-base: c712d98
# (the tree before; bin/wgt and its lib only, carried beside).
# 1. GPU tests of the change (NVIDIA adapter).
# 2. wgt generate --bench, Llama-3.2-1B shape, 512-token prompt, 128 tokens: base and new alternated,
#    f16 and q4 three rounds, q8 two; the host recording line kept.
# 3. per-dispatch GPU times (WGT_PROFILE_TRACE, --sequential), q4 and f16, base and new: every kind of
#    dispatch of the last 600 events (bench/decode_kernels.py).
set -u
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
o=$OUT/p1; mkdir -p $o
# build-base/lib/libwgpu_native.so links to build-bench's (one copy carried)
[ -e build-base/lib/libwgpu_native.so ] || { rm -f build-base/lib/libwgpu_native.so; cp build-bench/lib/libwgpu_native.so build-base/lib/; }
ldd build-base/bin/wgt | grep -E "wgtensor|wgpu"
t0=$(date +%s)
for t in test_quant test_quant_int8 test_nn_ops test_attention_linear test_llama test_webgpu_reduce; do
  (timeout 200 build-bench/bin/$t > $o/$t.log 2>&1; echo "$t: rc $? $(tail -1 $o/$t.log) $(grep -E 'FAIL' $o/$t.log | head -3)") &
done > $o/tests.txt 2>&1
wait
cat $o/tests.txt
echo "tests: $(( $(date +%s) - t0 )) s"
g() {  # label wgt weights
  local label=$1 W=$2 w=$3
  echo "$label $w: $($W generate --bench --shape llama-3.2-1b --weights $w --prompt-tokens 512 --max-tokens 128 2>&1 \
    | grep -E 'prefill|host recording' | sed 's/.*: //' | tr '\n' ' ')" | tee -a $o/generate.txt
}
for r in 1 2 3; do
  for w in q4 f16 q8; do
    [ $w = q8 ] && [ $r = 3 ] && continue
    g base build-base/bin/wgt $w
    g new build-bench/bin/wgt $w
  done
done
echo "generate: $(( $(date +%s) - t0 )) s"
for w in q4 f16; do
  for b in base new; do
    W=build-base/bin/wgt; [ $b = new ] && W=build-bench/bin/wgt
    echo "== profile $b $w" | tee -a $o/profile.txt
    WGT_PROFILE_TRACE=/tmp/t.json $W generate --bench --shape llama-3.2-1b --weights $w --prompt-tokens 512 \
      --max-tokens 16 --sequential > /dev/null 2>&1
    python3 bench/decode_kernels.py /tmp/t.json 600 | tee -a $o/profile.txt
  done
done
echo "total: $(( $(date +%s) - t0 )) s"
