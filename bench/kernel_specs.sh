#!/usr/bin/env bash
# Tunes every example user kernel (examples/kernels/*/*.json) on the GPU with the model strategy
# and a time budget, as docs/KERNEL_SPEC.md and docs/PERFORMANCE.md report it: one `ktune tune`
# per example (its summary: best config, time, trials, compile and bench seconds), then the table
# of all of them exported (configs/tables/examples/) and each one's throughput in configs a second.
# Usage: bench/kernel_specs.sh OUT_DIR [SECONDS]   (the ktune program: ./build/ktune)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: bench/kernel_specs.sh OUT_DIR [SECONDS]}
secs=${2:-30}
mkdir -p "$out"
db="$out/examples.db"
rm -f "$db"
declare -A shapes=([transpose]="8192x8192" [reduction]="67108864" [conv2d]="4096x4096" [bias_gelu]="16384x4096")
kernels=()
for name in transpose reduction conv2d bias_gelu; do
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
# Throughput on a small kernel (compile-bound): every config of the transpose at 1024 x 1024.
start=$(date +%s.%N)
./build/ktune tune --kernel examples/kernels/transpose/transpose.json --problem 1024x1024 --db "$out/small.db" \
    --strategy exhaustive --budget-evals 40 --json > "$out/small-tune.json" 2> "$out/small-tune.err"
end=$(date +%s.%N)
python3 - "$out/small-tune.json" "$start" "$end" <<'PY' | tee -a "$out/summary.txt"
import json, sys
r = json.load(open(sys.argv[1])); wall = float(sys.argv[3]) - float(sys.argv[2])
p = r["problems"][0]; n = sum(p["trials"].values())
print("small kernel: %s, %d configs in %.2f s of wall (%.1f configs/s); NVRTC %.2f s of CPU over %d compiles "
      "(%.3f s each: a %d-core floor of %.0f configs/s), benchmark %.2f s in the worker"
      % (p["problem"], n, wall, n / wall, r["compile_s"], r["compiled"], r["compile_s"] / max(r["compiled"], 1),
         __import__("os").cpu_count(), __import__("os").cpu_count() * max(r["compiled"], 1) / max(r["compile_s"], 1e-9),
         r["bench_s"]))
PY
