# Sourced at the start of a command on the lent NVIDIA machine (see
# docs/performance.md): unpacks the Vulkan loader into / (as the device notes
# say) and the CPU runtime libraries (OpenBLAS, cairo for the plots) into
# /tmp/wgt-libs, and points at the
# NVIDIA Vulkan driver. The .gl folder is carried with the call (git-ignored).
for f in .gl/*.deb; do dpkg -x "$f" /; done
ldconfig
mkdir -p /tmp/wgt-libs
for f in .gl/extra/*.deb; do dpkg -x "$f" /tmp/wgt-libs; done
export LD_LIBRARY_PATH=/tmp/wgt-libs/usr/lib/x86_64-linux-gnu/openblas-pthread:/tmp/wgt-libs/usr/lib/x86_64-linux-gnu:/tmp/wgt-libs/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export __EGL_VENDOR_LIBRARY_FILENAMES=/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json
