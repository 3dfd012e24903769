#!/usr/bin/env bash
# The main job: build ktune, then tune a small suite on the first GPU and print the result table.
# Without a GPU it says so and shows what works offline: the search space of the main family.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j "$(nproc)"
if ! ./build/ktune devices; then
  echo
  echo "quickstart: no GPU here, so nothing can be tuned. What works without one:"
  echo
  ./build/ktune space --family gemm_simt --arch sm_90
  exit 0
fi
echo
./build/ktune space --family gemm_simt --arch "$(./build/ktune devices | sed -n 's/^0: .*  \(sm_[0-9a]*\)  .*/\1/p')" --count
