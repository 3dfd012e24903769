#!/usr/bin/env bash
# Job 1: the paged read floor beside the paged bench. read_floor's paged kind (each block reads its
# slice's place from a table first) against the best direct read, 2-64 MiB; then
# bench/attention_paged.py over the public decode rows (L2 cold; kernels profiled), and the
# 1 x 32/8 x 1024 row with q, seq_lens and the table warm.
set -uo pipefail
ln -sfn build-gpu build
export LD_LIBRARY_PATH=$PWD/build-gpu/lib
gunzip -f build-gpu/*.gz build-gpu/tests/ktune_tests.gz
chmod +x build-gpu/ktune build-gpu/tests/ktune_tests build-gpu/bench/read_floor
L=$OUT/logs; mkdir -p $L
nvidia-smi --query-gpu=name,uuid,driver_version,clocks.max.sm,clocks.max.mem --format=csv > $L/device.txt 2>&1
cat $L/device.txt
(time ./build/bench/read_floor --sizes-mb 2,4,8,16,32,64) > $L/read_floor.txt 2>&1
grep -E "^ +[0-9]+ |paged" $L/read_floor.txt
OUT=$L/py KTUNE_TORCH_EXT=OFF PREBUILT=build-gpu timeout 200 bash tools/python-gpu-check.sh -k "attention_decode" > $L/py-build.txt 2>&1
tail -2 $L/py-build.txt
export PYTHONPATH=$PWD/python:$PWD/build-gpu/python
KTUNE_DB=/tmp/none1.db timeout 200 python3 -u bench/attention_paged.py --profile --json $L/paged.json > $L/paged.txt 2>&1
grep -v Warn $L/paged.txt | grep -v _warn_once | tail -20
python3 - <<'PY'
import json
rows=[r for r in json.load(open("configs/suites/attention.json"))["problems"] if r["q_len"]==1 and r["batch"]==1 and r["kv_len"]==1024]
json.dump({"problems": rows}, open(".gpu/row1k.json","w"))
PY
KTUNE_DB=/tmp/none2.db timeout 100 python3 -u bench/attention_paged.py --suite .gpu/row1k.json --warm-small-inputs > $L/paged-warm-1k.txt 2>&1
grep -v Warn $L/paged-warm-1k.txt | grep -v _warn_once | tail -6
tar czf $OUT/logs.tgz -C $OUT logs
