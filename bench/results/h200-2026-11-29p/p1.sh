# p1: chain_probe (dependent GEMV chain: a dispatch a stage / a dispatch a layer / one dispatch) on the H200
set -x
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv
for pf in 0 8 16; do timeout 120 build-bench/bin/chain_probe 40 $pf 16; done
timeout 120 build-bench/bin/chain_probe 40 8 16
