#!/usr/bin/env bash
# Builds ktune and runs every test. GPU tests (names contain "Gpu") skip without a GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup-deps.sh
# The Python package (python/) is built into the same tree and its pytest suite runs under ctest
# (Python.*) where python3 has pybind11 and its headers (tools/setup-deps.sh installs them).
py=(-DKTUNE_PYTHON=OFF)
if command -v python3 >/dev/null 2>&1 && python3 -c 'import os, sysconfig, pybind11; assert os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h"))' 2>/dev/null; then
  py=(-DKTUNE_PYTHON=ON "-DPython_EXECUTABLE=$(python3 -c 'import sys; print(sys.executable)')" "-Dpybind11_DIR=$(python3 -m pybind11 --cmakedir)")
else
  echo "test.sh: python3 with pybind11 and Python.h not found: the Python package is neither built nor tested"
fi
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release "${py[@]}" >/dev/null
cmake --build build -j "$(nproc)"
ctest --test-dir build --output-on-failure -j "$(nproc)"
