#!/bin/sh
# The entry point on a machine that has nothing but git (e.g. a fresh Debian 12):
#   ./wgt.sh run    install what is missing, build, train a character-level GPT on
#                   data/tinyshakespeare.txt with the preset that fits the adapter,
#                   sample from it, and say where the checkpoint and the loss plot are
#   ./wgt.sh test   install what is missing, build, run the whole test suite
# Anything else is passed to make (./wgt.sh test-asan, ./wgt.sh build).
# POSIX sh on purpose: make, cmake and a compiler may not exist yet.
set -eu
cd "$(dirname "$0")"

missing=""
for tool in make cmake cc pkg-config python3; do
  command -v "$tool" >/dev/null 2>&1 || missing="$missing $tool"
done
if [ -n "$missing" ]; then
  echo "wgt.sh: missing:$missing; installing the build tools with apt-get" \
       "(build-essential cmake pkg-config python3 python3-pip)"
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null 2>&1 || { echo "wgt.sh: run as root or install sudo" >&2; exit 1; }
    sudo=sudo
  else
    sudo=
  fi
  $sudo apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends \
    build-essential cmake pkg-config python3 python3-pip ca-certificates
fi
# The rest (Vulkan/lavapipe, OpenBLAS, cairo, the pinned wgpu-native from PyPI,
# NumPy for one test) is installed by scripts/setup-deps.sh, which make calls.
echo "wgt.sh: make ${*:-run}"
exec make "${@:-run}"
