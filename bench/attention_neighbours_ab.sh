#!/usr/bin/env bash
# What first use's neighbours (Family::neighbors) win at attention shapes nobody tuned:
# bench/attention_vs_torch.py over each suite with them and without them (--no-neighbours), in
# ROUNDS alternating rounds (with, without, with, ...), each run with an empty database and a fresh
# cubin cache of its own under OUT, so that every run's first use compiles and times its candidates
# alike. Then, per suite and run, ktune's geomean and min against the best SDPA backend.
# Needs the Python package importable (tools/python-gpu-check.sh builds it; PYTHONPATH as it sets).
# Usage: [UNTUNED=1] [ROUNDS=1] bench/attention_neighbours_ab.sh OUT_DIR SUITE.json ...
#        UNTUNED=1: without the shipped tables too (--untuned), every row served by first use.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: bench/attention_neighbours_ab.sh OUT_DIR SUITE.json ...}
shift
[ $# -gt 0 ] || { echo "usage: bench/attention_neighbours_ab.sh OUT_DIR SUITE.json ..." >&2; exit 2; }
mkdir -p "$out"
extra=()
[ -n "${UNTUNED:-}" ] && extra+=(--untuned)
status=0
for suite in "$@"; do
  [ -f "$suite" ] || { echo "no suite file $suite" >&2; exit 2; }
  name=$(basename "$suite" .json)
  for round in $(seq 1 "${ROUNDS:-1}"); do
    for run in with without; do
      flag=()
      [ $run = without ] && flag=(--no-neighbours)
      tag="$out/$name-$run-$round"
      rm -f "$tag".db "$tag".db-* "$tag".cubins.db "$tag".cubins.db-*
      if ! KTUNE_DB="$tag.db" KTUNE_CUBIN_CACHE="$tag.cubins.db" python3 -u bench/attention_vs_torch.py --suite "$suite" \
          "${extra[@]}" "${flag[@]}" --json "$tag.json" > "$tag.txt" 2>&1; then
        echo "$name $run round $round failed: $tag.txt" >&2
        status=1
      fi
      rm -f "$tag".db "$tag".db-* "$tag".cubins.db "$tag".cubins.db-*
      echo "$name $run $round: $(grep '^ktune vs best' "$tag.txt" || echo 'no result')"
    done
  done
done
exit $status
