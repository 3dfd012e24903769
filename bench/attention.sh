#!/usr/bin/env bash
# Attention on the GPU as docs/PERFORMANCE.md reports it: the rows of configs/suites/attention.json
# tuned into OUT/attention.db (prefill rows, q_len = kv_len, exhaustively over the prefill families;
# decode rows, q_len < kv_len, over attention_decode with DECODE_EVALS configs each), then
# bench/attention_vs_torch.py over the whole suite with that database, beside every PyTorch SDPA
# backend in one process. ROWS=decode (or prefill) tunes only those rows; the others are served by
# the runtime's first use.
# Needs the Python package importable (tools/python-gpu-check.sh builds it; PYTHONPATH as it sets).
# Usage: [ROWS=all|prefill|decode] [DECODE_EVALS=60] bench/attention.sh OUT_DIR [FAMILY ...]
#        (default prefill families: attention_wgmma attention_fa2)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: bench/attention.sh OUT_DIR [FAMILY ...]}
shift
rows=${ROWS:-all}
families=("$@")
[ ${#families[@]} -gt 0 ] || families=(attention_wgmma attention_fa2)
mkdir -p "$out"
python3 - "$out" <<'PY'
import json, sys
d = json.load(open("configs/suites/attention.json"))
for name, keep in (("prefill", lambda p: p["q_len"] == p["kv_len"]), ("decode", lambda p: p["q_len"] < p["kv_len"])):
    json.dump(dict(d, problems=[p for p in d["problems"] if keep(p)]), open(sys.argv[1] + "/" + name + ".json", "w"))
PY
if [ "$rows" != decode ]; then
  args=()
  for f in "${families[@]}"; do args+=(--family "$f"); done
  ./build/ktune tune --suite "$out/prefill.json" --db "$out/attention.db" "${args[@]}" --strategy exhaustive | tee "$out/tune.txt"
fi
if [ "$rows" != prefill ]; then
  ./build/ktune tune --suite "$out/decode.json" --db "$out/attention.db" --family attention_decode \
    --budget-evals "${DECODE_EVALS:-60}" | tee "$out/tune-decode.txt"
fi
KTUNE_DB="$out/attention.db" python3 bench/attention_vs_torch.py --json "$out/attention-vs-torch.json" | tee "$out/attention-vs-torch.txt"
