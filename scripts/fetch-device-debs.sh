#!/usr/bin/env bash
# Downloads (here, on the CPU machine) the amd64 Debian packages the lent GPU
# machine lacks into .gl/ (git-ignored, carried with each device call and
# unpacked there by scripts/device-env.sh):
#   .gl/        the Vulkan loader and the GL dispatch libraries
#   .gl/extra/  OpenBLAS and the GCC runtime the CPU backend links, cairo (wgt's loss plots)
#   .gl/mpi/    Open MPI 4.1 and what it loads (ddp_scaling.sh's mpirun; wgt links libmpi)
set -euo pipefail
cd "$(dirname "$0")/.."
grep -qx '/.gl/' .git/info/exclude 2>/dev/null || echo /.gl/ >> .git/info/exclude
mkdir -p .gl/extra .gl/mpi /tmp/amd64/partial
o=(-oAPT::Architecture=amd64 -oAPT::Architectures=amd64 -oDir::State::Lists=/tmp/amd64)
apt-get "${o[@]}" update > /dev/null
(cd .gl && apt-get "${o[@]}" download libvulkan1 libegl1 libglvnd0 libopengl0 libgl1 libglx0 libgles2)
(cd .gl/extra && apt-get "${o[@]}" download libopenblas0-pthread libgfortran5 libquadmath0 libgomp1 \
  libcairo2 libpixman-1-0 libpng16-16 libfontconfig1 libfreetype6 libx11-6 libxcb1 libxcb-render0 libxcb-shm0 \
  libxext6 libxrender1 libxau6 libxdmcp6 libbsd0 libmd0 libbrotli1 fontconfig-config)
(cd .gl/mpi && apt-get "${o[@]}" download openmpi-bin openmpi-common libopenmpi3 libhwloc15 libevent-core-2.1-7 \
  libevent-pthreads-2.1-7 libpmix2 libfabric1 libucx0 libibverbs1 ibverbs-providers librdmacm1 libpsm2-2 \
  libpsm-infinipath1 libnl-3-200 libnl-route-3-200 libnuma1 libmunge2 libcap-ng0 libltdl7)
du -sh .gl
