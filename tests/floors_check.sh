#!/usr/bin/env bash
# The floors stay one-way: no file under src/ includes a header of a floor
# above its own (docs/design.md, "Layers"). Floors, bottom to top:
#   core (its backend.h is the seam) < cpu, webgpu, webgpu_web < runtime < ops
#   < autograd < nn < distributed, models
# Exit 1 naming each include that runs back up.
set -u
root="${1:-$(cd "$(dirname "$0")/.." && pwd)}"
floor() {
  case "$1" in
    core/*) echo 0 ;;
    cpu/*|webgpu/*|webgpu_web/*) echo 1 ;;
    runtime/*) echo 2 ;;
    ops/*) echo 3 ;;
    autograd/*) echo 4 ;;
    nn/*) echo 5 ;;
    distributed/*|models/*) echo 6 ;;
    *) echo -1 ;;
  esac
}
bad=0
cd "$root/src" || exit 1
while IFS= read -r file; do
  own=$(floor "$file")
  while IFS= read -r inc; do
    [ -f "$inc" ] || continue           # system or public headers
    theirs=$(floor "$inc")
    if [ "$own" -ge 0 ] && [ "$theirs" -gt "$own" ]; then
      echo "floors: src/$file (floor $own) includes $inc (floor $theirs)"
      bad=1
    fi
  done < <(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$file")
done < <(find . -name '*.[ch]' | sed 's|^\./||')
[ $bad -eq 0 ] && echo "floors: every include in src/ points to its own floor or below"
exit $bad
