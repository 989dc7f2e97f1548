#!/usr/bin/env bash
# Probe p3 of the sixteenth session (2026-11-29), one call on the lent H200:
#   source scripts/device-env.sh; bash bench/results/h200-2026-11-29p/p3.sh
# Tree: c838ea8 + quant_matmul_dp4a tiles of 512 invocations (128x128/4x8, 128x128/8x4; WGT_QUANT_DP4A_TILE).
# 1. the prefill's int8 products (wgt bench --only qmatmul_q --precision medium) for every dp4a tile and 1, 2, 4
#    groups a slice;
# 2. the prefill's f16 products (qmatmul_f16, medium: HALF_MATH) with several WGT_MATMUL_CONFIG tiles.
set -u
o=$OUT/p3; mkdir -p $o
t0=$(date +%s)
W=build-bench/bin/wgt
for r in 1 2; do
  for t in 128x128 128x128/4x8 128x128/8x4 128x64 64x128 64x64; do
    for g in 1 2 4; do
      echo "== r$r tile $t gps $g" >> $o/qmatmul.txt
      WGT_QUANT_DP4A_TILE=$t WGT_QUANT_DP4A_GPS=$g $W bench --only qmatmul_q --precision medium 2>&1 | grep qmatmul >> $o/qmatmul.txt
    done
  done
  echo "== r$r default" >> $o/qmatmul.txt
  $W bench --only qmatmul_q --precision medium 2>&1 | grep qmatmul >> $o/qmatmul.txt
done
echo "int8: $(( $(date +%s) - t0 )) s"
for c in default tile64x64k16 tile64x64k16t tile64x64k16b tile128x128k8 tile128x128k16 tile128x64k8 tile64x128k8 tile128x128k8w8 tile128x64k8s tile64x128k8s tile64x64k8s; do
  echo "== f16 config $c" >> $o/f16.txt
  if [ $c = default ]; then $W bench --only qmatmul_f16 --precision medium 2>&1 | grep qmatmul >> $o/f16.txt
  else WGT_MATMUL_CONFIG=$c $W bench --only qmatmul_f16 --precision medium 2>&1 | grep qmatmul >> $o/f16.txt; fi
done
echo "== f16 default again" >> $o/f16.txt
$W bench --only qmatmul_f16 --precision medium 2>&1 | grep qmatmul >> $o/f16.txt
python3 - $o/qmatmul.txt <<'PY'
import sys, collections
cur = None; t = collections.defaultdict(list)
for line in open(sys.argv[1]):
    if line.startswith('=='): cur = line.split(' ', 2)[2].strip(); continue
    f = line.split()
    t[(cur, f[0])].append(float(f[-3]))
shapes = sorted({k[1] for k in t})
print('%-22s' % 'tile/gps', ' '.join('%12s' % s.replace('qmatmul_', '')[:12] for s in shapes))
for cfg in dict.fromkeys(k[0] for k in t):
    print('%-22s' % cfg, ' '.join('%12.4f' % min(t[(cfg, s)]) if t[(cfg, s)] else '%12s' % '-' for s in shapes))
PY
cat $o/f16.txt | cut -c1-110
echo "total: $(( $(date +%s) - t0 )) s"
