#!/usr/bin/env bash
# Runs every test binary in build/bin directly (for machines where the CTest
# files' absolute paths do not exist, e.g. a copy of the tree on a GPU machine).
set -u
cd "$(dirname "$0")/.."
pass=0
fail=0
for t in build/bin/test_*; do
  echo "=== $t"
  if "$t"; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "*** $t FAILED"; fi
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
