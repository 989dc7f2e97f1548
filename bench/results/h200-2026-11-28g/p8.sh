#!/usr/bin/env bash
# Seventh session, probe 8, one call on the lent H200:
#   source scripts/device-env.sh; bash bench/results/h200-2026-11-28g/p8.sh
# The test binaries (Release build, build-bench) on the NVIDIA adapter: two tests that had only run on lavapipe
# failed there this session (p1, close); this runs all of them, six at a time, 90 s each, and NumPy's webgpu cases.
set -u
echo "pwd $PWD"
[ -e /work/main ] || { mkdir -p /work && ln -s "$PWD" /work/main; }   # the binaries' compiled-in source paths
o=$OUT/p8; mkdir -p $o
ls build-bench/bin/test_* | grep -v test_soak | xargs -P 6 -I{} sh -c \
  't=$(basename {}); timeout 90 {} > '"$o"'/$t.txt 2>&1; echo "$t rc=$? $(tail -1 '"$o"'/$t.txt)"' | sort | tee $o/summary.txt
grep -h FAIL $o/*.txt | head -40
timeout 120 python3 tests/numpy_diff.py --lib build-bench/lib/libwgtensor.so.0.1.0 --backend webgpu --seeds 1-12 2>&1 | tail -3
