#!/usr/bin/env bash
# Builds ktune and runs the tests (the slow label too with KTUNE_TEST_SLOW=1). Only GPU tests (names contain "Gpu") may skip, and only on a
# machine without a GPU; a suite that cannot run (no Python interpreter to build the package with,
# no pytest, no Chromium, no PyPI for the pip install) fails.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup-deps.sh
# The Python package (python/) is built into the same tree and its pytest suite runs under ctest
# (Python.*), with an interpreter that has pybind11, its headers and pytest (tools/find-python.sh
# picks one or makes one work, and fails where it cannot).
pyexe=$(bash tools/find-python.sh)
# Kernel Tuner, a test-only dependency: python/tests/test_kernel_specs.py compares the example
# specs' valid-config counts with its search space.
if ! "$pyexe" -c "import kernel_tuner" 2>/dev/null; then
  "$pyexe" -m pip install --quiet kernel_tuner 2>/dev/null || "$pyexe" -m pip install --quiet --break-system-packages kernel_tuner
fi
# Ray, for the slow label's Python.ray (python/tests/test_ray.py: tuning across a local Ray cluster):
# installed from PyPI like Kernel Tuner, and required there, so that it fails rather than skips.
if [ "${KTUNE_TEST_SLOW:-0}" = 1 ]; then
  if ! "$pyexe" -c "import ray" 2>/dev/null; then
    "$pyexe" -m pip install --quiet ray 2>/dev/null || "$pyexe" -m pip install --quiet --break-system-packages ray
  fi
  export KTUNE_REQUIRE_RAY=1
fi
py=(-DKTUNE_PYTHON=ON "-DPython_EXECUTABLE=$pyexe" "-Dpybind11_DIR=$("$pyexe" -m pybind11 --cmakedir)")
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release "${py[@]}" >/dev/null
cmake --build build -j "$(nproc)"
# The slow label (the NVRTC sweeps and the pip install from PyPI, tests/CMakeLists.txt) runs only
# with KTUNE_TEST_SLOW=1, as CI does.
slow=(-LE slow)
[ "${KTUNE_TEST_SLOW:-0}" = 1 ] && slow=()
start=$(date +%s)
ctest --test-dir build --output-on-failure -j "$(nproc)" "${slow[@]}" | tee build/ctest-output.txt
echo "test.sh: ctest took $(( $(date +%s) - start )) s after the build${slow:+ (label slow left out: KTUNE_TEST_SLOW=1 runs it)}"

# The Python suite's own report (ctest shows a passing test's output nowhere else): its skips and
# its count. No count means pytest did not run its tests.
pytest_out=$(awk '/^[0-9]+\/[0-9]+ Test: Python\.pytest$/ { on = 1; next }
                  on && /^<end of output>$/ { exit }
                  on && body { print }
                  on && /^-+$/ { body = 1 }' build/Testing/Temporary/LastTest.log)
echo "Python suite (ctest Python.pytest, $pyexe):"
printf '%s\n' "$pytest_out"
if ! grep -qE '^[0-9]+ passed' <<<"$pytest_out"; then
  echo "test.sh: no pytest summary with passed tests in the Python suite's output: it did not run" >&2
  exit 1
fi

# Skipped ctest tests: GPU tests where there is no GPU, nothing else.
skipped=$(sed -n 's/^[[:space:]]*[0-9]* - \(.*\) (\(Skipped\|Disabled\|Not Run\))$/\1/p' build/ctest-output.txt)
if [ -n "$skipped" ] && ! ./build/ktune devices >/dev/null 2>&1; then
  not_gpu=$(grep -v 'Gpu' <<<"$skipped" || true)
  if [ -n "$not_gpu" ]; then
    echo "test.sh: these tests did not run, and only GPU tests may skip on a machine without a GPU:" >&2
    echo "$not_gpu" >&2
    exit 1
  fi
  echo "test.sh: $(wc -l <<<"$skipped") GPU tests skipped: this machine has no GPU ($(./build/ktune devices 2>&1 | head -1))"
fi
