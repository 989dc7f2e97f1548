#!/usr/bin/env bash
# Sixth session, probe 4 (H200): the GPT attention's tile knobs, which were chosen on an H100: the fused
# backward's 16-key blocks (WGT_ATTENTION_FUSED_TILE) and the quad forward's rows and keys a workgroup
# (WGT_ATTENTION_TILES rows,keys,...; default 64 rows, 16 keys) and rows a quad; then the training step for
# the candidates, alternated with the defaults.
#   source scripts/device-env.sh; bash bench/results/h200-2026-11-28f/p4.sh
set -u
W=build-bench/bin/wgt
o=$OUT/p4; mkdir -p $o
ab() { env "$@" $W bench --only attn_ 2>&1 | grep "attn_fb_gpt_256 \|attn_f_gpt_256 " | sed "s/^/$* : /" | tee -a $o/attn.txt; }
ab X=default
ab WGT_ATTENTION_FUSED_TILE=16
for t in 128,16 32,16 64,32 128,32 64,8 32,32; do ab WGT_ATTENTION_TILES=$t,128,16,8; done
ab WGT_ATTENTION_QUAD_ROWS=4
ab X=default
st() { env "$@" $W train --preset shakespeare --data data/tinyshakespeare.txt --max-iters 100 --bench --out /tmp/wb --quiet 2>&1 | grep "bench:" | sed "s/^/$* : /" | tee -a $o/step.txt; }
for i in 1 2; do st X=default; st WGT_ATTENTION_TILES=128,16,128,16,8; st WGT_ATTENTION_TILES=32,16,128,16,8; done
