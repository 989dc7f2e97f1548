#!/usr/bin/env bash
# session 5 probe 1: clocks and power during wgt's and torch's steps; torch's in-step GEMM kernels; data-scale effect
set -u
W=build-bench/bin/wgt
TORCH="env LD_LIBRARY_PATH=$WGT_NO_MPI_LD_LIBRARY_PATH python3"
mon() { nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.active --format=csv,noheader -lms 250 > $1 & echo $!; }
summ() { python3 - "$1" <<'PY'
import sys
rows=[l.strip().split(", ") for l in open(sys.argv[1]) if l.strip()]
rows=[r for r in rows if len(r)>=4]
busy=[r for r in rows if float(r[1].split()[0])>200]
if not busy: print("  no busy samples"); sys.exit()
import collections
clk=[float(r[0].split()[0]) for r in busy]; pw=[float(r[1].split()[0]) for r in busy]
rs=collections.Counter(r[3] for r in busy)
print(f"  {len(busy)} busy samples: sm clock mean {sum(clk)/len(clk):.0f} MHz (min {min(clk):.0f}), power mean {sum(pw)/len(pw):.0f} W (max {max(pw):.0f}); reasons {dict(rs)}")
PY
}
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader
for i in 1 2; do
  pid=$(mon /tmp/mw$i.csv)
  echo "wgt: $($W train --preset shakespeare --data data/tinyshakespeare.txt --max-iters 200 --bench --out /tmp/wb --quiet 2>&1 | grep 'bench:')"
  kill $pid; summ /tmp/mw$i.csv
  pid=$(mon /tmp/mt$i.csv)
  echo "torch f32: $($TORCH bench/train_torch_ref.py --max-iters 200 --bench 2>&1 | grep 'bench:')"
  kill $pid; summ /tmp/mt$i.csv
done
pid=$(mon /tmp/mg.csv)
$TORCH .scratch/s5/torch_gemm_order.py 2>&1 | tail -90
kill $pid; summ /tmp/mg.csv
pid=$(mon /tmp/mb.csv)
$W bench --only linear_gpt 2>&1 | grep linear_
$W bench --only gemm_bwd 2>&1 | grep gemm_
kill $pid; summ /tmp/mb.csv
