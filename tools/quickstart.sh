#!/usr/bin/env bash
# The main job: build ktune, then tune a small suite on the first GPU and print the result table.
# Without a GPU it says so and shows what works offline: the search space of the main family.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
# Only what this script runs: the ktune program (the tests, benches and examples are tools/test.sh's).
cmake --build build --target ktune_cli -j "$(nproc)"
if ! ./build/ktune devices; then
  echo
  echo "quickstart: no GPU here, so nothing can be tuned. What works without one:"
  echo
  ./build/ktune space --family gemm_simt --arch sm_90
  echo
  echo "quickstart: what the shipped H100 table (configs/tables/sm_90.json) picks for two shapes:"
  ./build/ktune query --arch sm_90 --problem 4096x4096x4096
  ./build/ktune query --arch sm_90 --problem 16x4096x4096
  echo
  echo "quickstart: and with the opt-in FP32-on-tensor-cores table (configs/tables/sm_90-tf32x3.json):"
  ./build/ktune query --arch sm_90 --problem 4096x4096x4096 --tf32x3
  echo
  echo "quickstart: and in BF16, from the shipped half-precision tables (configs/tables/sm_90-half*.json; the answer names its table):"
  ./build/ktune query --arch sm_90 --problem 2999x2999x2999 --dtype bf16
  exit 0
fi
echo
# 40 random configs per shape from a narrowed space: about a minute on a recent GPU. The results
# land in the default database (~/.cache/ktune/ktune.db, or $KTUNE_DB); a second run resumes.
./build/ktune tune --family gemm_simt --suite configs/suites/quick.json \
  --restrict configs/spaces/gemm_simt.quick.json --strategy random --budget-evals 40
