#!/usr/bin/env bash
# The Python package on a GPU machine without network or pip (PyTorch, pybind11 and pytest already
# installed): builds the module ktune._ktune with plain CMake into the build tree $BUILD (default
# build; the module and the ktune program are built there; a fresh directory such as /tmp/pybuild
# avoids reconfiguring a tree carried from another machine), then runs pytest over python/tests with the
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
if [ -n "${PREBUILT:-}" ]; then
  # A GPU machine without the library's build dependencies (nlohmann/json, SQLite and CLI11 headers):
  # compile only the bindings against a tree built elsewhere ($PREBUILT: libktune.a and the ktune
  # program), with the two headers they need beyond pybind11's copied into $PREBUILT/deps/include
  # (cp -r /usr/include/nlohmann /usr/local/cuda/include/cuda.h build/deps/include/).
  build=$(realpath "$PREBUILT")
  version=$(sed -n 's/^project(ktune VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)
  suffix=$("$pyexe" -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')
  libdirs=$(find / -xdev \( -name 'libnvrtc.so.13' -o -name 'libcublas.so.13' -o -name 'libcublasLt.so.13' \) -printf '-L%h -Wl,-rpath,%h\n' 2>/dev/null | sort -u | tr '\n' ' ')
  mkdir -p "$build/python/ktune"
  # shellcheck disable=SC2046,SC2086
  g++ -O2 -std=c++20 -shared -fPIC -I. -Iinclude -Ikernel_templates -I"$build/deps/include" \
      $("$pyexe" -m pybind11 --includes) -DKTUNE_VERSION="\"$version\"" -DKTUNE_BUILD_CLI="\"$build/ktune\"" \
      python/bindings.cpp "$build/libktune.a" $libdirs -l:libnvrtc.so.13 -l:libcublas.so.13 -l:libcublasLt.so.13 -l:libsqlite3.so.0 \
      -L"$build/lib" -l:libmuparser.so.2 -Wl,-rpath,"$build/lib" -ldl -lpthread \
      -o "$build/python/ktune/_ktune$suffix" >"$out/python-cmake.txt" 2>&1 || { cat "$out/python-cmake.txt"; exit 1; }
  # ktune._torch_ext against this PyTorch, by the builder users run after `pip install .`
  # (KTUNE_TORCH_EXT=OFF: not built).
  rm -f "$build/python/ktune/_torch_ext"*
  if [ "${KTUNE_TORCH_EXT:-AUTO}" != OFF ]; then
    PYTHONPATH=$PWD/python:$build/python "$pyexe" -m ktune.build_torch_ext --out "$build/python/ktune" \
        >>"$out/python-cmake.txt" 2>&1 || { cat "$out/python-cmake.txt"; exit 1; }
    export KTUNE_EXPECT_TORCH_EXT=1  # built: the tests fail where it is not used
  fi
else
  pybind11_dir=$("$pyexe" -m pybind11 --cmakedir) # fails here, saying so, where pybind11 is not importable
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DKTUNE_PYTHON=ON -DPython_EXECUTABLE="$pyexe" \
        -Dpybind11_DIR="$pybind11_dir" >"$out/python-cmake.txt"
  # ktune_python: _ktune, and _torch_ext where this Python imports torch (python/CMakeLists.txt)
  cmake --build "$build" --target ktune_python ktune_cli -j "$(nproc)" >>"$out/python-cmake.txt"
  if compgen -G "$build/python/ktune/_torch_ext*" >/dev/null; then export KTUNE_EXPECT_TORCH_EXT=1; fi
fi
export PYTHONPATH=$PWD/python:$build/python${PYTHONPATH:+:$PYTHONPATH}
export KTUNE_CLI=$build/ktune
"$pyexe" -c 'import ktune, torch; print("ktune", ktune.__version__, "torch", torch.__version__, "cuda", torch.version.cuda, "gpu", torch.cuda.is_available() and torch.cuda.get_device_name(), "fast path", ktune.torch_fast_path())' \
  | tee "$out/python-pytest.txt"
# Without a GPU every GPU case would skip and pytest pass: a GPU check there fails instead.
"$pyexe" - <<'PY' 2>&1 | tee -a "$out/python-pytest.txt"
import sys
import ktune, torch
gpus = ktune.devices()  # raises where the driver is installed but broken
if not gpus or not torch.cuda.is_available():
    sys.exit("python-gpu-check: no GPU to check on (ktune sees %d, PyTorch %s)" % (len(gpus), torch.cuda.is_available()))
PY
set +e
"$pyexe" -m pytest -v -rs -p no:cacheprovider python/tests "$@" 2>&1 | tee -a "$out/python-pytest.txt"
rc=${PIPESTATUS[0]}
echo "pytest exit $rc" | tee -a "$out/python-pytest.txt"
exit "$rc"
