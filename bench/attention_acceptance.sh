#!/usr/bin/env bash
# Attention's acceptance bars in one job (or a few, each under the device's per-command limit):
# bench/attention_vs_torch.py on the public suite with the shipped tables ("public"),
# bench/attention_paged.py ("paged"), the public suite's decode rows timed as bench/read_floor times
# its reads (`ktune bench`, the C++ timer) beside read_floor at their K and V bytes ("floor"; the
# programs of $KTUNE_BUILD, default build), and each suite of shapes nobody tuned with no table at all
# (NAME: configs/suites/attention-NAME.json, --untuned), each its own empty database, then
# bench/attention_acceptance.py over what ran (OUT_DIR/acceptance.txt). Every step logs its table to
# OUT_DIR/NAME.txt and its JSON beside it, and its outcome to OUT_DIR/steps.txt (the summary says
# "not measured" for a step whose last run failed or was skipped). A step that would start with
# less than 60 s of LIMIT (seconds, default 540) left is skipped, saying so: run the rest in a later
# call with the same OUT_DIR (the summary reads every JSON there; where each call gets a fresh
# folder, as on a lent device machine, copy the calls' folders into one and run
# bench/attention_acceptance.py over it).
# Needs the Python package importable (tools/python-gpu-check.sh builds it; PYTHONPATH as it sets).
# Usage: [LIMIT=540] bench/attention_acceptance.sh OUT_DIR [STEP ...]
#        (default steps: public floor paged prefill-check prefill-other d64-full full-d128 chunked
#         decode-check decode-mha decode-small)
set -uo pipefail
out=${1:?usage: bench/attention_acceptance.sh OUT_DIR [STEP ...]}
shift
out=$(realpath -m "$out") # before the cd below: OUT_DIR as the caller named it
cd "$(dirname "$0")/.."

steps=("$@")
[ ${#steps[@]} -gt 0 ] || steps=(public floor paged prefill-check prefill-other d64-full full-d128 chunked decode-check decode-mha decode-small)
for s in "${steps[@]}"; do
  case "$s" in
    public | paged | floor) ;;
    *) [ -f "configs/suites/attention-$s.json" ] || { echo "attention_acceptance: no suite configs/suites/attention-$s.json" >&2; exit 2; } ;;
  esac
done
mkdir -p "$out" || exit 2
bin=$(realpath -m "${KTUNE_BUILD:-build}")
# The public suite's decode rows (q_len <= 64, fewer queries than keys) timed by `ktune bench`, then
# bench/read_floor at their K and V bytes (MiB, rounded up), within $1 seconds in all.
floor_step() {
  local until=$(($(date +%s) + $1)) mib
  mib=$(python3 - "$out/decode-rows.json" <<'PY'
import json, sys
d = json.load(open("configs/suites/attention.json"))
rows = [p for p in d["problems"] if p["q_len"] <= 64 and p["q_len"] < p["kv_len"]]
json.dump(dict(d, problems=rows), open(sys.argv[1], "w"), indent=1)
kv = {-(-2 * p["batch"] * p["kv_heads"] * p["kv_len"] * p["head_dim"] * 2 // (1 << 20)) for p in rows}
print(",".join(str(m) for m in sorted(kv)))
PY
  ) || return 2
  timeout "$1" "$bin/ktune" bench --suite "$out/decode-rows.json" --op attention --json "$out/floor-bench.json" \
    >"$out/floor.txt" 2>&1 || return
  local left=$((until - $(date +%s)))
  [ "$left" -gt 0 ] || return 124
  timeout "$left" "$bin/bench/read_floor" --sizes-mb "$mib" --json "$out/floor-read.json" >>"$out/floor.txt" 2>&1
}
limit=${LIMIT:-540}
start=$(date +%s)
for s in "${steps[@]}"; do
  left=$((limit - ($(date +%s) - start)))
  if [ "$left" -lt 60 ]; then
    echo "attention_acceptance: $s skipped, $left s of $limit left"
    printf '%s\tskipped (%s s of %s left)\n' "$s" "$left" "$limit" >>"$out/steps.txt"
    continue
  fi
  case "$s" in # a step that fails leaves no earlier run's results to be read as its own
    public | paged) rm -f "$out/$s.json" ;;
    floor) rm -f "$out/floor-bench.json" "$out/floor-read.json" ;;
    *) rm -f "$out/untuned-$s.json" ;;
  esac
  db="$out/db-$s/none.db" # a database that does not exist: none
  rm -rf "$out/db-$s" && mkdir -p "$out/db-$s"
  t=$(date +%s)
  case "$s" in
    public) KTUNE_DB=$db timeout "$left" python3 bench/attention_vs_torch.py --explain --json "$out/public.json" >"$out/public.txt" 2>&1 ;;
    paged) KTUNE_DB=$db timeout "$left" python3 bench/attention_paged.py --json "$out/paged.json" >"$out/paged.txt" 2>&1 ;;
    floor) KTUNE_DB=$db floor_step "$left" ;;
    *) KTUNE_DB=$db timeout "$left" python3 bench/attention_vs_torch.py --suite "configs/suites/attention-$s.json" --untuned \
         --explain --json "$out/untuned-$s.json" >"$out/untuned-$s.txt" 2>&1 ;;
  esac
  rc=$?
  echo "attention_acceptance: $s exit $rc in $(($(date +%s) - t)) s"
  printf '%s\texit %s\n' "$s" "$rc" >>"$out/steps.txt"
done
python3 bench/attention_acceptance.py "$out" | tee "$out/acceptance.txt"
