#!/usr/bin/env bash
# Installs the build into a scratch prefix, then compiles and runs the README
# example against it with pkg-config: the install target and the .pc file work.
#   install_check.sh BUILD_DIR
set -euo pipefail
build="$1"
prefix="$build/install-check"
rm -rf "$prefix"
cmake --install "$build" --prefix "$prefix" > /dev/null
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
flags=$(pkg-config --cflags --libs wgtensor)
cc -std=c11 -Wall -Werror "$build/generated/readme_example.c" $flags -Wl,-rpath,"$prefix/lib" -o "$prefix/example"
"$prefix/example"
echo "installed library, header and pkg-config file work: 1 passed, 0 failed"
