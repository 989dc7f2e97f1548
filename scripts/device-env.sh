# Sourced at the start of a command on the lent NVIDIA machine (see
# docs/performance.md): unpacks the Vulkan loader into / (as the device notes
# say) and the CPU runtime libraries (OpenBLAS, cairo for the plots) into
# /tmp/wgt-libs, and points at the
# NVIDIA Vulkan driver. The .gl folder is carried with the call (git-ignored).
# Where .gl/mpi holds Debian's Open MPI packages (scripts/fetch-device-debs.sh),
# they are unpacked into /tmp/wgt-mpi and used from there (OPAL_PREFIX
# relocates Open MPI): the image has no mpirun, and `wgt` links libmpi.
# WGT_NO_MPI_LD_LIBRARY_PATH keeps the path without them, for PyTorch.
for f in .gl/*.deb; do dpkg -x "$f" /; done
ldconfig
mkdir -p /tmp/wgt-libs
for f in .gl/extra/*.deb; do dpkg -x "$f" /tmp/wgt-libs; done
export LD_LIBRARY_PATH=/tmp/wgt-libs/usr/lib/x86_64-linux-gnu/openblas-pthread:/tmp/wgt-libs/usr/lib/x86_64-linux-gnu:/tmp/wgt-libs/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export __EGL_VENDOR_LIBRARY_FILENAMES=/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json
export WGT_NO_MPI_LD_LIBRARY_PATH="$LD_LIBRARY_PATH"
if ls .gl/mpi/*.deb > /dev/null 2>&1; then
  mkdir -p /tmp/wgt-mpi
  for f in .gl/mpi/*.deb; do dpkg -x "$f" /tmp/wgt-mpi; done
  export OPAL_PREFIX=/tmp/wgt-mpi/usr PATH=/tmp/wgt-mpi/usr/bin:$PATH
  export LD_LIBRARY_PATH=/tmp/wgt-mpi/usr/lib/x86_64-linux-gnu/openmpi/lib:/tmp/wgt-mpi/usr/lib/x86_64-linux-gnu:/tmp/wgt-mpi/lib/x86_64-linux-gnu:$LD_LIBRARY_PATH
  [ -e /tmp/wgt-mpi/usr/bin/mpirun ] || ln -s orterun /tmp/wgt-mpi/usr/bin/mpirun
fi
