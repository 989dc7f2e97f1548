#!/usr/bin/env bash
# Tuning probe on the GPU machine (one device call): the new kernels' variants
# side by side, each switched by its environment knob, so defaults are chosen
# from measurements. Writes text files into OUTDIR.
#   bench/h100_probe.sh OUTDIR
set -u
out="$1"
W=build/bin/wgt
mkdir -p "$out"
# profiler rows sorted by total ms (the fourth field from the end; names may have spaces)
by_total() { grep -v "^op " | awk 'NF >= 6 {print $(NF-3) "\t" $0}' | sort -g -r | cut -f2-; }
train() { env $1 "$W" train --preset shakespeare --max-iters 40 --bench --eval-iters 1 --eval-interval 1000 \
  --sample 0 --out /tmp/probe-train --quiet 2>&1 | grep "bench:"; }
for v in "" WGT_SPLITK=0 WGT_SCATTER_SORTED=0 WGT_ATTENTION_BACKWARD=rows; do
  echo "== train ${v:-default}: $(train "$v")"
done > "$out/train.txt"
WGT_PROFILE=1 "$W" train --preset shakespeare --max-iters 40 --bench --eval-iters 1 --eval-interval 1000 \
  --sample 0 --out /tmp/probe-train --quiet > /dev/null 2> /tmp/probe-prof.txt
by_total < /tmp/probe-prof.txt | head -30 > "$out/train_top.txt"
for v in "" WGT_SPLITK=0 WGT_SPLITK_TARGET=132 WGT_SPLITK_TARGET=528; do
  echo "== ${v:-default}"; env $v "$W" bench --only gemm_bwd 2>&1 | grep gemm_bwd
done > "$out/gemm_bwd.txt"
for v in "" WGT_SCATTER_SORTED=0; do
  echo "== ${v:-default}"; env $v "$W" bench --only scatter_add 2>&1 | grep scatter_add
done > "$out/scatter.txt"
for v in WGT_ATTENTION_BACKWARD=rows "" WGT_ATTENTION_DKDV_TILES=32,32 WGT_ATTENTION_DKDV_TILES=64,16; do
  echo "== ${v:-default}"; env $v "$W" bench --only attn_fb 2>&1 | grep attn_fb
done > "$out/attention.txt"
gen() { env $1 "$W" generate --bench --shape llama-3.2-1b --weights "$2" --prompt-tokens 512 --max-tokens 64 2>&1 | tail -2; }
for v in "" "WGT_DECODE_ATTN=0 WGT_GEMV_HALF=0" WGT_BATCH_DISPATCHES=64; do
  echo "== f16 ${v:-default}"; gen "$v" f16
done > "$out/decode.txt"
for w in q8 q4; do echo "== $w"; gen "" $w; done >> "$out/decode.txt"
WGT_PROFILE=1 "$W" generate --bench --shape llama-3.2-1b --weights f16 --prompt-tokens 512 --max-tokens 64 2>&1 >/dev/null |
  by_total | head -16 > "$out/decode_top.txt"
