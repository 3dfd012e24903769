#!/usr/bin/env bash
# Attention on the GPU as docs/PERFORMANCE.md reports it: every prefill row (q_len = kv_len) of
# configs/suites/attention.json tuned exhaustively over the prefill families into OUT/attention.db,
# then bench/attention_vs_torch.py over the whole suite with that database (untuned rows, the decode
# ones, served by the runtime's first use), beside every PyTorch SDPA backend in one process.
# Needs the Python package importable (tools/python-gpu-check.sh builds it; PYTHONPATH as it sets).
# Usage: bench/attention.sh OUT_DIR [FAMILY ...]   (default families: attention_wgmma attention_fa2)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: bench/attention.sh OUT_DIR [FAMILY ...]}
shift
families=("$@")
[ ${#families[@]} -gt 0 ] || families=(attention_wgmma attention_fa2)
mkdir -p "$out"
python3 - "$out/prefill.json" <<'PY'
import json, sys
d = json.load(open("configs/suites/attention.json"))
d["problems"] = [p for p in d["problems"] if p["q_len"] == p["kv_len"]]
json.dump(d, open(sys.argv[1], "w"))
PY
args=()
for f in "${families[@]}"; do args+=(--family "$f"); done
./build/ktune tune --suite "$out/prefill.json" --db "$out/attention.db" "${args[@]}" --strategy exhaustive | tee "$out/tune.txt"
KTUNE_DB="$out/attention.db" python3 bench/attention_vs_torch.py --json "$out/attention-vs-torch.json" | tee "$out/attention-vs-torch.txt"
