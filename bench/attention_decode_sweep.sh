#!/usr/bin/env bash
# Every valid attention_decode config at every row of a suite (default configs/suites/attention-decode-rule.json:
# the decode rows of attention.json and eleven of other models), measured on the GPU into OUT/sweep.db,
# and the trials written out as OUT/sweep-trials.csv (problem, config, status, median ms): the data
# the family's default rule (kernel_templates/attention/attention.cpp) is fit on, and checked on
# with configs/suites/attention-decode-check.json (shapes it was not fit on).
# Usage: bench/attention_decode_sweep.sh OUT_DIR [SUITE]
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: bench/attention_decode_sweep.sh OUT_DIR [SUITE]}
suite=${2:-configs/suites/attention-decode-rule.json}
mkdir -p "$out"
./build/ktune tune --suite "$suite" --db "$out/sweep.db" --family attention_decode \
  --strategy exhaustive | tee "$out/sweep-tune.txt"
python3 - "$out/sweep.db" "$out/sweep-trials.csv" <<'PY'
import csv, sqlite3, sys
db = sqlite3.connect(sys.argv[1])
rows = db.execute("SELECT p.key, d.name, t.family, t.config, t.status, t.median_ms FROM trials t "
                  "JOIN problems p ON p.id = t.problem_id JOIN devices d ON d.id = t.device_id ORDER BY p.key, t.median_ms")
with open(sys.argv[2], "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["problem", "device", "family", "config", "status", "median_ms"])
    n = 0
    for r in rows:
        w.writerow(r)
        n += 1
print("%d trials written to %s" % (n, sys.argv[2]))
PY
