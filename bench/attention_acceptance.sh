#!/usr/bin/env bash
# Attention's acceptance bars in one job, or in a few where a job has a time limit per command.
# Steps:
#   public      bench/attention_vs_torch.py on the public suite, the shipped tables
#   floor       the public suite's decode rows timed as bench/read_floor times its reads (`ktune bench`,
#               the C++ timer), beside read_floor at their K and V bytes (the programs of
#               $KTUNE_BUILD, default build)
#   paged       bench/attention_paged.py (paged against contiguous: as served, then every input cold)
#   NAME        configs/suites/attention-NAME.json, a suite of shapes nobody tuned, with no table at
#               all (--untuned: defaults, lending from nothing, first use)
#   NAME:tables the same suite with the shipped tables there to lend from, as a user's install has them
# each with its own empty database; then bench/attention_acceptance.py over what ran
# (OUT_DIR/acceptance.txt). Every step logs its table beside its JSON (the same name, .txt), and
# its outcome to OUT_DIR/steps.txt (the summary says "not measured" for a step whose last run failed,
# was skipped or left no JSON). A step that would start with less than 60 s of LIMIT (seconds,
# default 540) left is skipped, saying so: run it in a later call with the same OUT_DIR. Where each
# call gets a fresh folder, copy the calls' folders into one, concatenating their steps.txt in call
# order, and run bench/attention_acceptance.py over it.
# Needs the Python package importable (tools/python-gpu-check.sh builds it; PYTHONPATH as it sets).
# Usage: [LIMIT=540] [KTUNE_BUILD=build] bench/attention_acceptance.sh OUT_DIR [STEP ...]
#        (default steps: public floor paged prefill-check prefill-other d64-full full-d128 cross chunked
#         decode-check decode-mha decode-small decode-pad probe2 probe2:tables)
set -uo pipefail
out=${1:?usage: bench/attention_acceptance.sh OUT_DIR [STEP ...]}
shift
# Before the cd below: the paths as the caller named them.
out=$(realpath -m "$out")
bin=$(realpath -m "${KTUNE_BUILD:-build}")
cd "$(dirname "$0")/.." || exit 2

steps=("$@")
[ ${#steps[@]} -gt 0 ] || steps=(public floor paged prefill-check prefill-other d64-full full-d128 cross chunked
                                 decode-check decode-mha decode-small decode-pad probe2 probe2:tables)
for s in "${steps[@]}"; do
  case "$s" in
    public | paged | floor) ;;
    *) [ -f "configs/suites/attention-${s%:tables}.json" ] ||
         { echo "attention_acceptance: no suite configs/suites/attention-${s%:tables}.json" >&2; exit 2; } ;;
  esac
done
mkdir -p "$out" || exit 2

# The JSON files a step leaves (the summary's names for them).
outputs() {
  case "$1" in
    public | paged) echo "$out/$1.json" ;;
    floor) echo "$out/floor-bench.json $out/floor-read.json" ;;
    *:tables) echo "$out/tables-${1%:tables}.json" ;;
    *) echo "$out/untuned-$1.json" ;;
  esac
}

# The public suite's decode rows (q_len <= 64, fewer queries than keys) timed by `ktune bench`, then
# bench/read_floor at their K and V bytes (MiB, rounded up), within $1 seconds in all. read_floor
# runs even where a row failed in the bench (the summary names that row); the step's status is
# the first failure.
floor_step() {
  local until=$(($(date +%s) + $1)) mib rc left
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
    >"$out/floor.txt" 2>&1
  rc=$?
  left=$((until - $(date +%s)))
  [ "$left" -gt 0 ] || return 124
  timeout "$left" "$bin/bench/read_floor" --sizes-mb "$mib" --json "$out/floor-read.json" >>"$out/floor.txt" 2>&1 || return
  return "$rc"
}

# bench/attention_paged.py as a decode step serves it (q, seq_lens and the block table in L2, K and V
# cold: paged.json, the bar; the step's status), then with every input cold (paged-cold.json, shown
# beside the bar, not judged: where it fails or finds no time, this says so and the bar stands),
# within $1 seconds in all.
paged_step() {
  local until=$(($(date +%s) + $1)) left rc
  timeout "$1" python3 bench/attention_paged.py --warm-small-inputs --json "$out/paged.json" >"$out/paged.txt" 2>&1 || return
  left=$((until - $(date +%s)))
  rm -f "$out/paged-cold.json"
  if [ "$left" -lt 30 ]; then
    echo "attention_acceptance: paged, every input cold: skipped ($left s left)"
    return 0
  fi
  timeout "$left" python3 bench/attention_paged.py --json "$out/paged-cold.json" >"$out/paged-cold.txt" 2>&1
  rc=$?
  [ "$rc" -eq 0 ] || { echo "attention_acceptance: paged, every input cold: exit $rc (see paged-cold.txt)"; rm -f "$out/paged-cold.json"; }
  return 0
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
  # A step that fails leaves no earlier run's results to be read as its own.
  # shellcheck disable=SC2046
  rm -f $(outputs "$s")
  name=${s/:/-}
  db="$out/db-$name/none.db" # a database that does not exist: none
  rm -rf "$out/db-$name" && mkdir -p "$out/db-$name"
  t=$(date +%s)
  case "$s" in
    public) KTUNE_DB=$db timeout "$left" python3 bench/attention_vs_torch.py --explain --json "$out/public.json" >"$out/public.txt" 2>&1 ;;
    paged) KTUNE_DB=$db paged_step "$left" ;;
    floor) KTUNE_DB=$db floor_step "$left" ;;
    *) json=$(outputs "$s") untuned=--untuned
       [ "$s" = "${s%:tables}" ] || untuned=
       # shellcheck disable=SC2086
       KTUNE_DB=$db timeout "$left" python3 bench/attention_vs_torch.py --suite "configs/suites/attention-${s%:tables}.json" \
         $untuned --explain --json "$json" >"${json%.json}.txt" 2>&1 ;;
  esac
  rc=$?
  echo "attention_acceptance: $s exit $rc in $(($(date +%s) - t)) s"
  printf '%s\texit %s\t%s\n' "$s" "$rc" "$(outputs "$s")" >>"$out/steps.txt"
done
python3 bench/attention_acceptance.py "$out" | tee "$out/acceptance.txt"
