#!/usr/bin/env bash
# Runs every test binary of a build directly, for machines where the CTest
# files' absolute paths do not exist (a copy of the tree on a GPU machine):
#   scripts/run-tests-direct.sh [build dir (build)] [jobs (1)] [seconds a test (600)]
# test_parity runs in its four parts, as CTest runs it. Each test's output goes
# to <build>/direct-tests/<name>.txt; the last line of each, then every FAIL
# line, is printed; the exit status is 0 only when every test passed. On the
# lent H200 (bench/results/h200-2026-11-28g p8) this is how the tests first ran
# on a real GPU: two checks that had only met lavapipe failed there.
set -u
cd "$(dirname "$0")/.."
build=${1:-build}
jobs=${2:-1}
limit=${3:-600}
out=$build/direct-tests
mkdir -p "$out"
{
  for t in "$build"/bin/test_*; do
    [ "$(basename "$t")" = test_parity ] && continue
    echo "$t"
  done
  [ -x "$build/bin/test_parity" ] && for p in 1 2 3 4; do echo "$build/bin/test_parity --part $p/4"; done
} | xargs -P "$jobs" -I{} sh -c '
  cmd="{}"; name=$(echo "$cmd" | sed "s|.*/||; s| --part |_|; s|/4||")
  timeout '"$limit"' $cmd > '"$out"'/$name.txt 2>&1
  rc=$?
  echo "$name rc=$rc $(tail -1 '"$out"'/$name.txt)"
  [ $rc -eq 0 ]' | sort
status=${PIPESTATUS[1]}
grep -h "^FAIL" "$out"/*.txt | head -40
[ "$status" -eq 0 ] && echo "all passed" || echo "some failed (outputs in $out)"
exit "$status"
