#!/usr/bin/env bash
# Installs the Debian 12 packages ktune builds against, where missing. The CUDA 13 toolkit
# (nvcc, NVRTC, cuBLAS) is a prerequisite and is not installed here.
set -euo pipefail
need=()
for pkg in cmake g++ make nlohmann-json3-dev libsqlite3-dev libcli11-dev libgtest-dev libmuparser-dev; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || need+=("$pkg")
done
if [ ${#need[@]} -gt 0 ]; then
  echo "setup-deps: installing ${need[*]}"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${need[@]}" >/dev/null
fi
# Chromium and Python 3 for the browser test of `ktune report` (tests/report/render_check.py, standard
# library only); without them that test fails. Installed without recommends (~80 MB download).
# Python's headers, pybind11, pytest and venv for the Python package (python/; tools/test.sh builds
# it and ctest runs its tests; PyTorch is not needed: its cases skip), NumPy for the test that hands
# it host arrays, pip for Kernel Tuner (the test that counts the example specs' spaces with it).
web=()
for pkg in chromium fonts-liberation python3 python3-dev python3-pybind11 python3-pytest python3-venv python3-numpy python3-pip; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || web+=("$pkg")
done
if [ ${#web[@]} -gt 0 ]; then
  echo "setup-deps: installing ${web[*]}"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  [ ${#need[@]} -gt 0 ] || $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${web[@]}" >/dev/null
fi
if [ ! -e /usr/local/cuda/include/nvrtc.h ] && ! command -v nvcc >/dev/null 2>&1; then
  echo "setup-deps: the CUDA toolkit (12.0 or newer, with NVRTC and cuBLAS) was not found; install it first" >&2
  exit 1
fi
