#!/usr/bin/env bash
# Winograd F(4x4, 3x3) against the implicit GEMM (WGT_CONV_WINOGRAD=0), alternated in one run, beside
# cuDNN (issue 13): per-dispatch trace of one step of the 64- and 128-channel layers, every conv_fb_*
# layer twice each way, the ResNet-18 step twice each way, then bench/cnn_torch_ref.py.
#   bench/conv_winograd_ab.sh > out.txt        (on the lent machine: source scripts/device-env.sh first,
#                                               WGT=<binary> to time another build)
# Raw output of 2026-11-27: bench/results/h200-2026-11-27/winograd_call4.txt
set -u
cd "$(dirname "$0")/.."
W="${WGT:-build/bin/wgt}"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for c in conv_fb_64_64 conv_fb_128_128; do
  WGT_PROFILE_TRACE=/tmp/t_$c.json $W bench --only $c > /dev/null 2>&1
  echo "== $c winograd"; python3 bench/trace_tail.py /tmp/t_$c.json 16
done
for i in 1 2; do
  echo "-- winograd"; $W bench --only conv_fb_ 2>&1 | tail -7
  echo "-- implicit gemm"; WGT_CONV_WINOGRAD=0 $W bench --only conv_fb_ 2>&1 | tail -7
done
echo "-- resnet18 winograd / off / winograd / off"
$W bench --only resnet18 2>&1 | tail -1; WGT_CONV_WINOGRAD=0 $W bench --only resnet18 2>&1 | tail -1
$W bench --only resnet18 2>&1 | tail -1; WGT_CONV_WINOGRAD=0 $W bench --only resnet18 2>&1 | tail -1
export LD_LIBRARY_PATH=$WGT_NO_MPI_LD_LIBRARY_PATH
python3 bench/cnn_torch_ref.py --json /tmp/cnn_torch.json 2>&1 | tail -12
