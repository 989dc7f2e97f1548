#!/usr/bin/env bash
# Closing measurements of the fifteenth session (2026-11-29), one call on the lent H200:
#   source scripts/device-env.sh; bash bench/results/h200-2026-11-29o/close.sh
# build-bench: the session's final tree (in the docs); build-base: 3753ba8 (the last stop's tree), bin/wgt and its
# lib only. Issue 12: wgt generate --bench, Llama-3.2-1B shape, random weights, 512-token prompt, 128 decoded tokens:
# f16 / q8 / q4 two rounds, base and new alternated; the f16 decode's per-dispatch profile at fusion levels 5 and 6
# (new library); transformers f16 (bench/llm_torch_ref.py: eager prefill, static-cache decode); the GPU tests this
# session's kernels touch.
set -u
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
[ -e build-base/lib/libwgpu_native.so ] || { rm -f build-base/lib/libwgpu_native.so; cp build-bench/lib/libwgpu_native.so build-base/lib/; }
o=$OUT/close; mkdir -p $o
TORCH="env LD_LIBRARY_PATH=$WGT_NO_MPI_LD_LIBRARY_PATH python3"
t0=$(date +%s)
g() {  # label wgt weights [extra args]
  local label=$1 W=$2 w=$3; shift 3
  echo "$label $w $*: $($W generate --bench --shape llama-3.2-1b --weights $w --prompt-tokens 512 --max-tokens 128 "$@" \
    2>&1 | grep -E 'prefill' | sed 's/.*: prefill/prefill/')" | tee -a $o/generate.txt
}
for r in 1 2; do
  for w in f16 q8 q4; do
    g base build-base/bin/wgt $w
    g new build-bench/bin/wgt $w
  done
done
for lv in 5 6; do
  echo "== profile new f16 level $lv" >> $o/profile.txt
  WGT_LLAMA_DECODE_FUSE=$lv WGT_PROFILE_TRACE=/tmp/t.json build-bench/bin/wgt generate --bench --shape llama-3.2-1b \
    --weights f16 --prompt-tokens 512 --max-tokens 16 --sequential > /dev/null 2>&1
  python3 bench/decode_kernels.py /tmp/t.json 600 >> $o/profile.txt
done
echo "generate: $(( $(date +%s) - t0 )) s"
$TORCH bench/llm_torch_ref.py --json $o/torch512.json 2>&1 | tail -1 | tee $o/torch512.txt
l=/tmp/logs; mkdir -p $l
for t in test_llama test_attention test_decode_attention; do
  (timeout 240 build-bench/bin/$t > $l/$t.log 2>&1; echo "$t: rc $? $(tail -1 $l/$t.log) $(grep -E 'FAIL' $l/$t.log | head -3)") &
done > $o/tests.txt 2>&1
wait
tar czf $o/test_logs.tar.gz -C /tmp logs
cat $o/tests.txt $o/profile.txt
echo "total: $(( $(date +%s) - t0 )) s"
