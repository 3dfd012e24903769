#!/usr/bin/env bash
# Tunes every example user kernel (examples/kernels/*/*.json) on the GPU with the model strategy
# and a time budget, as docs/KERNEL_SPEC.md and docs/PERFORMANCE.md report it: one `ktune tune`
# per example (its summary: best config, time, trials, compile and bench seconds), then the table
# of all of them exported (configs/tables/examples/) and each one's throughput in configs a second.
# Usage: bench/kernel_specs.sh OUT_DIR [SECONDS]   (the ktune program: ./build/ktune; KERNELS="a b"
# tunes only those examples, SMALL=0 leaves out the throughput runs and Kernel Tuner)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: bench/kernel_specs.sh OUT_DIR [SECONDS]}
secs=${2:-30}
mkdir -p "$out"
db="$out/examples.db"
rm -f "$db"
declare -A shapes=([transpose]="8192x8192" [reduction]="67108864" [conv2d]="4096x4096" [bias_gelu]="16384x4096" [l2norm]="67108864" [jacobi]="4096x4096x100")
kernels=()
for name in ${KERNELS:-transpose reduction conv2d bias_gelu l2norm jacobi}; do
  spec=examples/kernels/$name/$name.json
  kernels+=(--kernel "$spec")
  start=$(date +%s.%N)
  ./build/ktune tune --kernel "$spec" --problem "${shapes[$name]}" --db "$db" --strategy model --budget-seconds "$secs" \
      --json --trials-out "$out/$name-trials.jsonl" > "$out/$name-tune.json" 2> "$out/$name-tune.err"
  end=$(date +%s.%N)
  python3 - "$out/$name-tune.json" "$name" "$start" "$end" <<'PY' | tee -a "$out/summary.txt"
import json, sys
r = json.load(open(sys.argv[1])); name = sys.argv[2]; wall = float(sys.argv[4]) - float(sys.argv[3])
p = r["problems"][0]; n = sum(p["trials"].values())
print("%-10s %-40s best %.4f ms  %s  trials %d (%s) in %.1f s: %.1f configs/s; compile %.1f s, bench %.1f s, compiled %d"
      % (name, p["problem"], p.get("time_ms", float("nan")), json.dumps(p.get("config")), n, json.dumps(p["trials"]),
         wall, n / wall, r["compile_s"], r["bench_s"], r["compiled"]))
PY
done
./build/ktune export "${kernels[@]}" --db "$db" -o "$out/examples-table.json"
echo "device: $(./build/ktune devices 2>/dev/null | head -3 | tr '\n' ' ')" | tee -a "$out/summary.txt"
# Throughput on small kernels (compile-bound): every config of the transpose at 1024 x 1024, and
# 200 configs of the 2D convolution at 1024 x 1024; where the time goes (NVRTC's CPU seconds, the
# worker's checks and timing, the repetitions the race left).
small() { # NAME SPEC PROBLEM EVALS
  local name=$1 spec=$2 problem=$3 evals=$4
  local start end
  start=$(date +%s.%N)
  ./build/ktune tune --kernel "$spec" --problem "$problem" --db "$out/small-$name.db" --strategy exhaustive \
      --budget-evals "$evals" --json --trials-out "$out/small-$name-trials.jsonl" > "$out/small-$name.json" 2> "$out/small-$name.err"
  end=$(date +%s.%N)
  python3 - "$out/small-$name.json" "$start" "$end" "$out/small-$name-trials.jsonl" <<'PY' | tee -a "$out/summary.txt"
import json, os, sys
r = json.load(open(sys.argv[1])); wall = float(sys.argv[3]) - float(sys.argv[2])
trials = [json.loads(l) for l in open(sys.argv[4]) if l.strip()]
p = r["problems"][0]; n = sum(p["trials"].values()); cores = os.cpu_count()
reps = sorted(t.get("reps", 0) for t in trials if t.get("status") == "ok")
full = sum(1 for x in reps if x >= 200)
print("small kernel: %s, %d configs in %.2f s of wall (%.1f configs/s); NVRTC %.2f s of CPU over %d compiles "
      "(%.3f s each: a %d-core floor of %.0f configs/s); the worker %.2f s (%.1f ms a config: two checks and the "
      "timing); repetitions timed: median %d, %d of %d configs timed in full (the rest stopped by the race)"
      % (p["problem"], n, wall, n / wall, r["compile_s"], r["compiled"], r["compile_s"] / max(r["compiled"], 1),
         cores, cores * max(r["compiled"], 1) / max(r["compile_s"], 1e-9), r["bench_s"], 1e3 * r["bench_s"] / max(n, 1),
         reps[len(reps) // 2] if reps else 0, full, len(reps)))
PY
}
[ "${SMALL:-1}" = 0 ] && exit 0
small transpose examples/kernels/transpose/transpose.json 1024x1024 40
small conv2d examples/kernels/conv2d/conv2d.json 1024x1024 200
# Kernel Tuner beside it, on the transpose's kernel and space (where it can be imported).
python3 bench/kernel_tuner_beside.py 1024 1024 2>&1 | tee -a "$out/summary.txt" || true
