#!/usr/bin/env bash
# Installs what building and testing knudsen needs on a Debian machine, only where missing:
# HDF5 (C library, for the hdf5 crate), lavapipe (software Vulkan) and llvmpipe's EGL/GL for
# the wgpu tests, ParaView (pvpython) for the reader test and,
# for the XDMF test, Python with vtk and h5py in a
# virtual environment under target/test-venv (Debian's own Python refuses system-wide pip),
# plus NVRTC from PyPI there for the CUDA compile test, and OpenMPI for the `mpi` feature.
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then
    SUDO="sudo"
  else
    SUDO="needs-root"
  fi
fi

need=()
dpkg -s libhdf5-dev >/dev/null 2>&1 || need+=(libhdf5-dev)
command -v pkg-config >/dev/null 2>&1 || need+=(pkg-config)
command -v python3 >/dev/null 2>&1 || need+=(python3)
python3 -c "import venv, ensurepip" >/dev/null 2>&1 || need+=(python3-venv)
# Shared libraries the vtk wheel links against even for file readers.
dpkg -s libgl1 >/dev/null 2>&1 || need+=(libgl1)
dpkg -s libxrender1 >/dev/null 2>&1 || need+=(libxrender1)
# lavapipe, the software Vulkan driver the wgpu tests run on when there is no GPU.
dpkg -s mesa-vulkan-drivers >/dev/null 2>&1 || need+=(mesa-vulkan-drivers)
dpkg -s libvulkan1 >/dev/null 2>&1 || need+=(libvulkan1)
# llvmpipe through EGL for the GL-backend test (tests/gpu_gl.rs): the EGL loader and Mesa's
# EGL and GL drivers.
dpkg -s libegl1 >/dev/null 2>&1 || need+=(libegl1)
dpkg -s libegl-mesa0 >/dev/null 2>&1 || need+=(libegl-mesa0)
dpkg -s libgl1-mesa-dri >/dev/null 2>&1 || need+=(libgl1-mesa-dri)
# ParaView itself (pvpython) with h5py and numpy for its Python, for tests/paraview.rs.
command -v pvpython >/dev/null 2>&1 || need+=(paraview)
dpkg -s python3-h5py >/dev/null 2>&1 || need+=(python3-h5py)
dpkg -s python3-numpy >/dev/null 2>&1 || need+=(python3-numpy)
# MPI for the `mpi` feature and its tests (tests/mpi.rs): OpenMPI's headers, library and
# mpirun, and libclang for rsmpi's generated bindings.
dpkg -s libopenmpi-dev >/dev/null 2>&1 || need+=(libopenmpi-dev)
command -v mpirun >/dev/null 2>&1 || need+=(openmpi-bin)
dpkg -s libclang-dev >/dev/null 2>&1 || need+=(libclang-dev)
if [ ${#need[@]} -gt 0 ]; then
  if [ "$SUDO" = "needs-root" ]; then
    echo "deps: missing Debian packages: ${need[*]}; run tests/deps.sh as root (or install sudo)" >&2
    exit 1
  fi
  echo "deps: installing Debian packages: ${need[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}" >/dev/null
fi

VENV=target/test-venv
if ! "$VENV/bin/python3" -c "import vtkmodules.vtkIOXdmf2, h5py, numpy, matplotlib" >/dev/null 2>&1; then
  echo "deps: creating $VENV with vtk, h5py, numpy, matplotlib (docs/validation/report.py)"
  mkdir -p target
  python3 -m venv "$VENV"
  "$VENV/bin/python3" -m pip install -q --upgrade pip
  "$VENV/bin/python3" -m pip install -q vtk h5py numpy matplotlib
fi
# NVRTC (no GPU needed) for the CUDA kernels' compile test (tests/cuda_nvrtc.rs).
if ! ls "$VENV"/lib/python3*/site-packages/nvidia/cu13/lib/libnvrtc.so.13 >/dev/null 2>&1; then
  echo "deps: installing nvidia-cuda-nvrtc 13.0 into $VENV"
  "$VENV/bin/python3" -m pip install -q "nvidia-cuda-nvrtc==13.0.*"
fi
# NVRTC 11.8, the last that targets Kepler (compute_35, the Tesla K40), for the same test.
if ! ls "$VENV"/lib/python3*/site-packages/nvidia/cuda_nvrtc/lib/libnvrtc.so.11.2 >/dev/null 2>&1; then
  echo "deps: installing nvidia-cuda-nvrtc-cu11 11.8 into $VENV"
  "$VENV/bin/python3" -m pip install -q "nvidia-cuda-nvrtc-cu11==11.8.*"
fi
