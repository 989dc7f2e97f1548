#!/usr/bin/env bash
# Probe p6 of the sixteenth session (2026-11-29), one call on the lent H200:
#   source scripts/device-env.sh; bash bench/results/h200-2026-11-29p/p6.sh
# Tree: f66468a. The GPT training step's GEMM shapes (wgt bench --only linear_gpt / gemm_bwd: forward x W^T, dx, dW)
# with the default choice and with the 4x4 block-fetch configs forced (WGT_MATMUL_CONFIG), two rounds: does the
# block fetch that sped up the f16 prefill's x W^T pay in f32 training too?
set -u
o=$OUT/p6; mkdir -p $o
t0=$(date +%s)
W=build-bench/bin/wgt
for r in 1 2; do
  for c in default tile128x128k8b tile128x64k8b tile64x64k16b tile128x128k16b tile128x128k8w8b tile64x64k16; do
    echo "== r$r $c" >> $o/gemm.txt
    if [ $c = default ]; then E=X=1; else E=WGT_MATMUL_CONFIG=$c; fi
    env $E $W bench --only linear_gpt 2>&1 | grep -E "^(linear|gemm)" >> $o/gemm.txt
    env $E $W bench --only gemm_bwd 2>&1 | grep -E "^(linear|gemm)" >> $o/gemm.txt
  done
done
python3 - $o/gemm.txt <<'PY'
import sys, collections
cur = None; t = collections.defaultdict(list)
for line in open(sys.argv[1]):
    if line.startswith('=='): cur = line.split(' ', 2)[2].strip(); continue
    f = line.split()
    try: t[(cur, f[0])].append(float(f[-3]))
    except ValueError: pass
shapes = list(dict.fromkeys(k[1] for k in t))
cfgs = list(dict.fromkeys(k[0] for k in t))
print('%-28s' % 'shape', ' '.join('%16s' % c[:16] for c in cfgs))
for s in shapes:
    print('%-28s' % s[:28], ' '.join('%16.4f' % min(t[(c, s)]) if t[(c, s)] else '%16s' % '-' for c in cfgs))
PY
echo "total: $(( $(date +%s) - t0 )) s"
