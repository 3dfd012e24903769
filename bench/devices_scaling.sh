#!/usr/bin/env bash
# Trials a second of `ktune tune --devices all` against one GPU, on one machine (docs/SCALING.md).
#   bash bench/devices_scaling.sh OUT [SUITE] [FAMILY] [EVALS] [DTYPE]
# Defaults: configs/suites/public.json, gemm_wgmma, 12 evaluations a problem, bf16; no warm start
# (every run searches the same configs: same seed, same strategy). Steps, each a fresh database:
#   cold1   one GPU, nothing compiled (NVRTC's own cache off: CUDA_CACHE_DISABLE=1)
#   warmA2  every GPU, the cubins cold1 compiled copied in (trials, best and baselines deleted)
#   warmA1  GPU 0 alone, the same
#   warmB2, warmB1 (GPU 1 alone): the pair again, the other order
# A warm run is measurement-bound: its trials/s is the figure the issue's 1.8x is about. Writes
# OUT/NAME.json (the run's --json summary) and OUT/NAME.err, and one line a run on stdout.
set -u
out=${1:?usage: devices_scaling.sh OUT [SUITE] [FAMILY] [EVALS] [DTYPE]}
suite=${2:-configs/suites/public.json}
family=${3:-gemm_wgmma}
evals=${4:-12}
dtype=${5:-bf16}
ktune=${KTUNE:-./build/ktune}
mkdir -p "$out"
export CUDA_CACHE_DISABLE=1
args=(--suite "$suite" --dtype "$dtype" --family "$family" --budget-evals "$evals" --warm-start none --json)
nvidia-smi -L > "$out/device.txt" 2>&1 || { echo "devices_scaling: nvidia-smi failed; a GPU machine is needed" >&2; exit 1; }
cat "$out/device.txt"

run() { # NAME ARGS...: one tune, timed; prints trials/s
  local n=$1; shift
  local t0 t1 rc
  t0=$(date +%s.%N)
  "$ktune" tune "${args[@]}" "$@" > "$out/$n.json" 2> "$out/$n.err"; rc=$?
  t1=$(date +%s.%N)
  python3 - "$out/$n.json" "$n" "$rc" "$t0" "$t1" <<'PY'
import json, sys
path, name, rc, t0, t1 = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4]), float(sys.argv[5])
try:
    d = json.load(open(path))
except Exception as e:
    sys.exit("%s: exit %s, no summary (%s); see %s" % (name, rc, e, path.replace(".json", ".err")))
trials = sum(sum(p["trials"].values()) for p in d["problems"])
# Per GPU: problems taken and the seconds spent in them (the rest of a GPU's wall is its start and idling).
per_gpu = {}
for p in d["problems"]:
    n, s = per_gpu.get(p.get("device", 0), (0, 0.0))
    per_gpu[p.get("device", 0)] = (n + 1, s + p["wall_s"])
print("%-7s exit %s  wall %6.1f s  trials %4d  %6.2f trials/s  compiled %d, cubins from the database %d  "
      "evaluations %.1f s, baseline %.1f s  | %s"
      % (name, rc, t1 - t0, trials, trials / (t1 - t0), d["compiled"], d["store_reused"], d["bench_s"],
         d.get("baseline_s", 0.0),
         ", ".join("GPU %s: %d problems %.1f s" % (g, n, s) for g, (n, s) in sorted(per_gpu.items()))))
PY
}

warm_copy() { # FROM TO: the database with its cubins and nothing measured
  python3 - "$1" "$2" <<'PY'
import shutil, sqlite3, sys
shutil.copy(sys.argv[1], sys.argv[2])
c = sqlite3.connect(sys.argv[2])
for table in ("best", "trials", "baselines"):
    c.execute("DELETE FROM " + table)
c.commit()
PY
}

run cold1 --device 0 --db "$out/cold1.db" || exit 1
for n in warmA2 warmA1 warmB2 warmB1; do warm_copy "$out/cold1.db" "$out/$n.db"; done
run warmA2 --devices all --db "$out/warmA2.db"
run warmA1 --device 0 --db "$out/warmA1.db"
run warmB2 --devices all --db "$out/warmB2.db"
run warmB1 --device 1 --db "$out/warmB1.db"
