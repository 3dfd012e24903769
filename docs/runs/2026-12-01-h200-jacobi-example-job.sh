#!/usr/bin/env bash
# Job 6: the jacobi example (a loop of launches) tuned as the other examples' tables were
# (bench/kernel_specs.sh, model strategy, 40 s), its table exported; the spec GPU tests with it.
set -uo pipefail
ln -sfn build-gpu build
export LD_LIBRARY_PATH=$PWD/build-gpu/lib
gunzip -f build-gpu/*.gz build-gpu/tests/ktune_tests.gz
chmod +x build-gpu/ktune build-gpu/tests/ktune_tests
L=$OUT/logs; mkdir -p $L
nvidia-smi --query-gpu=name,uuid,driver_version --format=csv > $L/device.txt 2>&1
cat $L/device.txt
KERNELS=jacobi SMALL=0 timeout 200 bash bench/kernel_specs.sh $L/bench 40 > $L/bench.txt 2>&1
cat $L/bench.txt | cut -c1-400
cp $L/bench/examples-table.json $OUT/jacobi-table.json
(time timeout 200 ./build/tests/ktune_tests --gtest_filter='KernelSpecGpu.*') > $L/gtest.txt 2>&1
grep -E "FAILED|PASSED|SKIPPED|jacobi" $L/gtest.txt | tail -8 | cut -c1-300
tar czf $OUT/logs.tgz -C $OUT logs
