#!/usr/bin/env bash
# Whether two builds of the ktune program compile the same machine code for a family's configs:
# the check that a change to kernel templates is code motion only (the same SASS is the same
# speed and the same results, with no GPU to ask). For every family, problem and dtype named, a
# sample of the family's valid configs (ktune space --sample, seeded: both builds draw the same)
# is compiled by each program (ktune compile -o) and the cubins' SASS (cuobjdump --dump-sass)
# compared. Exit 0 when all agree, 1 when any differs (the first difference is shown), 2 on
# bad usage.
#   bash tools/same-sass.sh OLD_KTUNE NEW_KTUNE "FAMILY ..." "PROBLEM ..." ["DTYPE ..."] [SAMPLE]
#   bash tools/same-sass.sh /tmp/ktune-before build/ktune "softmax_warp rmsnorm_bulk" "4096x1001 64x4096" "bf16 f32" 4
set -uo pipefail
if [ $# -lt 4 ]; then
  sed -n 2,10p "$0" | sed 's/^# \{0,1\}//'
  exit 2
fi
old=$1 new=$2 families=$3 problems=$4 dtypes=${5:-"f32 bf16 f16"} sample=${6:-4} arch=${ARCH:-sm_90}
for b in "$old" "$new"; do [ -x "$b" ] || { echo "same-sass: $b is not an executable ktune program" >&2; exit 2; }; done
# Without cuobjdump (a toolkit without it) the cubins themselves are compared: stricter (the same
# bytes are the same SASS), and what a difference means is then for cuobjdump elsewhere to say.
export PATH=$PATH:/usr/local/cuda/bin
if command -v cuobjdump >/dev/null; then
  sass() { cuobjdump --dump-sass "$1" | grep -v -E '^\s*$|Fatbin|code for sm_|\.target'; }
else
  echo "same-sass: no cuobjdump here; comparing the cubins byte for byte" >&2
  sass() { od -An -tx1 -v "$1"; }
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
same=0 differ=0 none=0
for fam in $families; do
  for prob in $problems; do
    for dt in $dtypes; do
      configs=$("$old" space --family "$fam" --problem "$prob" --dtype "$dt" --arch "$arch" --sample "$sample" 2>/dev/null |
                sed -n 's/^  \({.*}\)  .*threads.*/\1/p')
      if [ -z "$configs" ]; then
        none=$((none + 1))
        continue
      fi
      while IFS= read -r cfg; do
        what="$fam $prob $dt $cfg"
        for side in old new; do
          bin=$old
          [ $side = new ] && bin=$new
          if ! "$bin" compile --family "$fam" --problem "$prob" --dtype "$dt" --arch "$arch" --config "$cfg" \
               -o "$work/$side.cubin" >"$work/$side.log" 2>&1; then
            echo "same-sass: $side build failed to compile $what:" >&2
            tail -5 "$work/$side.log" >&2
            exit 1
          fi
          sass "$work/$side.cubin" >"$work/$side.sass" || { echo "same-sass: cannot read $side's cubin of $what" >&2; exit 2; }
        done
        if cmp -s "$work/old.sass" "$work/new.sass"; then
          same=$((same + 1))
        else
          differ=$((differ + 1))
          echo "DIFFERS: $what"
          diff "$work/old.sass" "$work/new.sass" | head -10
        fi
      done <<<"$configs"
    done
  done
done
echo "same-sass: $same configs compile to the same SASS, $differ differ ($none family/problem/dtype with no valid config)"
[ "$differ" -eq 0 ] && [ "$same" -gt 0 ]
