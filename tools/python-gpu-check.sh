#!/usr/bin/env bash
# The Python package on a GPU machine without network or pip (PyTorch, pybind11 and pytest already
# installed): builds the module ktune._ktune with plain CMake into the build tree $BUILD (default
# build: only the module is added to an existing tree), then runs pytest over python/tests with the
# GPU cases (ktune.gemm and torch.ops.ktune.gemm against torch.matmul in f32, bf16, f16, torch.compile).
# Log: $OUT/python-pytest.txt (OUT default gpu-logs). Extra arguments go to pytest (e.g. -k compile).
#   bash tools/python-gpu-check.sh
# The same by hand:
#   cmake -S . -B build -DKTUNE_PYTHON=ON -Dpybind11_DIR=$(python3 -m pybind11 --cmakedir) \
#         -DPython_EXECUTABLE=$(python3 -c 'import sys; print(sys.executable)')
#   cmake --build build --target _ktune -j
#   PYTHONPATH=$PWD/python:$PWD/build/python python3 -m pytest -v python/tests
set -euo pipefail
cd "$(dirname "$0")/.."
build=$(realpath -m "${BUILD:-build}")
py=${PYTHON:-python3}
out=${OUT:-gpu-logs}
mkdir -p "$out"
pyexe=$("$py" -c 'import sys; print(sys.executable)')
pybind11_dir=$("$pyexe" -m pybind11 --cmakedir) # fails here, saying so, where pybind11 is not importable
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DKTUNE_PYTHON=ON -DPython_EXECUTABLE="$pyexe" \
      -Dpybind11_DIR="$pybind11_dir" >"$out/python-cmake.txt"
cmake --build "$build" --target _ktune -j "$(nproc)" >>"$out/python-cmake.txt"
export PYTHONPATH=$PWD/python:$build/python${PYTHONPATH:+:$PYTHONPATH}
export KTUNE_CLI=$build/ktune
"$pyexe" -c 'import ktune, torch; print("ktune", ktune.__version__, "torch", torch.__version__, "cuda", torch.version.cuda, "gpu", torch.cuda.is_available() and torch.cuda.get_device_name())' \
  | tee "$out/python-pytest.txt"
set +e
"$pyexe" -m pytest -v -rs -p no:cacheprovider python/tests "$@" 2>&1 | tee -a "$out/python-pytest.txt"
rc=${PIPESTATUS[0]}
echo "pytest exit $rc" | tee -a "$out/python-pytest.txt"
exit "$rc"
