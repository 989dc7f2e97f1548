#!/usr/bin/env bash
# the shakespeare preset's full run (5000 steps, evaluations, checkpoint, plot) on this tree (tenth session, H200):
#   source scripts/device-env.sh; bash bench/results/h200-2026-11-29j/full.sh
set -u
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
echo "tree: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
W=build-bench/bin/wgt
mkdir -p $OUT/full
/usr/bin/time -f "wall %e s" $W train --preset shakespeare --data data/tinyshakespeare.txt --out $OUT/full --quiet 2>&1 | tail -15
$W sample --checkpoint $OUT/full/ckpt.safetensors --tokens 500 --seed 1 > $OUT/full/sample.txt 2> $OUT/full/sample_stats.txt
tail -2 $OUT/full/sample_stats.txt
rm -f $OUT/full/ckpt.safetensors
ls $OUT/full
