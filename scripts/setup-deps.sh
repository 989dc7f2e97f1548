#!/usr/bin/env bash
# Installs everything wgtensor needs, from Debian's archive and PyPI only, at the
# versions pinned in deps/versions.env. Safe to run again: it does only what is missing.
#   .deps/wgpu-native/{include,lib}  wgpu-native from the `wgpu` wheel (ignored by git)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
# shellcheck source=../deps/versions.env
source "$root/deps/versions.env"

# The libFuzzer targets (tests/fuzz, cmake -DWGT_FUZZ=ON with CC=clang) need
# clang and its fuzzer runtime; installed only when asked: setup-deps.sh --fuzz
if [ "${1:-}" = "--fuzz" ]; then DEBIAN_PACKAGES="$DEBIAN_PACKAGES clang libclang-rt-14-dev"; fi
# The web build (make web, docs/web.md) needs emscripten; its browser test
# (make test-web) Chromium, its driver and Selenium: setup-deps.sh --web
if [ "${1:-}" = "--web" ]; then DEBIAN_PACKAGES="$DEBIAN_PACKAGES $WEB_DEBIAN_PACKAGES"; fi

missing=()
for p in $DEBIAN_PACKAGES; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup-deps: installing Debian packages: ${missing[*]}"
  if [ "$(id -u)" -ne 0 ]; then sudo=sudo; else sudo=; fi
  $sudo apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

dest="$root/.deps/wgpu-native"
stamp="$dest/.version"
if [ -n "${WGPU_NATIVE_DIR:-}" ]; then
  echo "setup-deps: using WGPU_NATIVE_DIR=$WGPU_NATIVE_DIR"
elif [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$WGPU_WHEEL_VERSION" ]; then
  dl="$root/.deps/download"
  mkdir -p "$dl"
  if [ ! -f "$dl/$WGPU_WHEEL_FILE" ]; then
    echo "setup-deps: downloading wgpu==$WGPU_WHEEL_VERSION from PyPI"
    python3 -m pip download -q --no-deps --only-binary=:all: \
      --platform manylinux_2_28_x86_64 --python-version 3.11 \
      -d "$dl" "wgpu==$WGPU_WHEEL_VERSION"
  fi
  echo "$WGPU_WHEEL_SHA256  $dl/$WGPU_WHEEL_FILE" | sha256sum -c --quiet -
  rm -rf "$dest"; mkdir -p "$dest/include" "$dest/lib"
  python3 - "$dl/$WGPU_WHEEL_FILE" "$dest" <<'PY'
import sys, zipfile, os
whl, dest = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(whl) as z:
    for name, target in [("wgpu/resources/webgpu.h", "include/webgpu.h"),
                         ("wgpu/resources/wgpu.h", "include/wgpu.h"),
                         ("wgpu/resources/libwgpu_native-release.so", "lib/libwgpu_native.so")]:
        with z.open(name) as src, open(os.path.join(dest, target), "wb") as out:
            out.write(src.read())
PY
  echo "$WGPU_WHEEL_VERSION" > "$stamp"
  echo "setup-deps: wgpu-native extracted to $dest"
fi

# NumPy for tests/numpy_diff.py, into .deps/python (the test puts it on sys.path).
pydest="$root/.deps/python"
if [ "$(cat "$pydest/.version" 2>/dev/null)" != "$NUMPY_VERSION" ]; then
  echo "setup-deps: installing numpy==$NUMPY_VERSION from PyPI into $pydest"
  rm -rf "$pydest"
  python3 -m pip install -q --disable-pip-version-check --no-deps --only-binary=:all: \
    --target "$pydest" "numpy==$NUMPY_VERSION"
  echo "$NUMPY_VERSION" > "$pydest/.version"
fi

# tokenizers for tests/llm/make_tokenizer.py --check, into .deps/python-tokenizers.
tokdest="$root/.deps/python-tokenizers"
if [ "$(cat "$tokdest/.version" 2>/dev/null)" != "$TOKENIZERS_VERSION" ]; then
  echo "setup-deps: installing tokenizers==$TOKENIZERS_VERSION from PyPI into $tokdest"
  rm -rf "$tokdest"
  python3 -m pip install -q --disable-pip-version-check --no-deps --only-binary=:all: \
    --target "$tokdest" "tokenizers==$TOKENIZERS_VERSION"
  echo "$TOKENIZERS_VERSION" > "$tokdest/.version"
fi
