#!/usr/bin/env bash
# The build tree's wgtensor.pc works before any install (issue 8: it pointed at
# build/../../lib): compiles and runs the README example with it.
#   build_tree_pc_check.sh BUILD_DIR
set -euo pipefail
build="$(cd "$1" && pwd)"
export PKG_CONFIG_PATH="$build"
flags=$(pkg-config --cflags --libs wgtensor)
cc -std=c11 -Wall -Werror "$build/generated/readme_example.c" $flags -Wl,-rpath,"$build/lib" -o "$build/pc-build-tree-example"
"$build/pc-build-tree-example"
echo "build-tree pkg-config file works: 1 passed, 0 failed"
