#!/bin/sh
# Issue 9, defect 4: on a headless machine `wgt devices` writes nothing to
# stderr (Mesa's Vulkan device-select layer and the EGL probe used to print
# "XDG_RUNTIME_DIR is invalid or not set" four times). $1: the wgt binary.
err=$(env -u XDG_RUNTIME_DIR -u WAYLAND_DISPLAY -u DISPLAY -u NODEVICE_SELECT "$1" devices 2>&1 >/dev/null)
if [ -n "$err" ]; then
    echo "wgt devices wrote to stderr on a headless machine:"
    echo "$err"
    echo "0 passed, 1 failed"
    exit 1
fi
echo "1 passed, 0 failed"
