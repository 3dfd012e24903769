#!/usr/bin/env bash
# GPU acceptance checks, run from the repository root on a machine with a GPU and a built tree.
# Logs go to $OUT (or ./gpu-logs). Steps: tests | public | resume (default: all three).
#   tests   every GPU test (names contain "Gpu"; GPU_TESTS=filter for a subset), with the counts
#   public  ktune tune over the public suite, random strategy, 200 configs per problem
#   resume  a tuning run killed with kill -9 part-way, then the same command again
#   table   tune configs/suites/table.json (gemm_simt) and the decode shapes (gemm_skinny), export the
#           shipped table ($out/sm_90.json)
#   runtime the runtime cost benchmark and the example program
#   model   the public suite with the model-guided strategy, 100 configs per problem
#   bench   ktune bench over the public suite (shipped table; TABLE=file adds a table that wins
#           over it), again with --tf32x3 (the shipped gemm_tf32x3 table ahead), and the SGEMM ladder
#   decode  re-tune the shipped table's decode shapes (gemm_skinny) and export the merged table
#   staged  re-tune the decode shapes over gemm_skinny's cp.async stage ring only (ST >= 2,
#           configs/spaces/gemm_skinny.h100-staged.json; $BUDGET configs each, default 300) and
#           export the merged table
#   unaligned  re-tune the shipped table's unaligned shapes over packed gemm_simt configs (PACK = 1)
#           and export the merged table
#   large   re-tune the shipped table's large aligned shapes (M >= 512 in the public suite; PROBLEMS=
#           "MxNxK ..." picks others) with a longer model search ($BUDGET configs each, default 400;
#           at most $TUNE_TIMEOUT s) and export the merged table
#   tf32x3  tune gemm_tf32x3 (FP32-accurate 3xTF32 on the tensor cores) over configs/suites/compute.json
#           ($BUDGET configs each, default 150, model search, configs/spaces/gemm_tf32x3.h100.json,
#           WARM=table seeds it),
#           export its table ($out/sm_90-tf32x3.json) and run ktune bench over the public suite with it
#           winning over the shipped table
#   wgmma-tf32x3  tune gemm_wgmma_tf32x3 (3xTF32 on Hopper's wgmma) over configs/suites/compute.json into a
#           database seeded with the shipped gemm_tf32x3 table (per problem the faster entry stays; $BUDGET
#           configs each, default 120, model search, $SPACE restricts), export the merged table
#           ($out/sm_90-tf32x3.json) and run ktune bench --tf32x3 over the public suite with it
#   profile ncu counters and SASS of the shipped table's kernels at five shapes ($out/profile;
#           SHAPES= picks shapes, LADDERS="file ..." adds the kernels of ladder files)
#   replay  an exhaustive run over configs/suites/replay.json, exported as a trial log for simulate
#   models  ktune bench over the generalization suite configs/suites/models.json (shapes in no
#           shipped table) with the shipped tables only, then with --tf32x3
#   models-tune  ktune tune over configs/suites/models.json without --family into a fresh database
#           ($BUDGET_S seconds a problem, default 20), then ktune bench with it; TF32X3=1 tunes
#           gemm_tf32x3 in as well (--tf32x3). Trials go to $out/models_tune[_tf32x3]_trials.csv
#   half    tune the public suite in bf16 and f16 ($DTYPES, default "bf16 f16") with every family that serves
#           them (gemm_tc16, gemm_skinny16), $BUDGET_S seconds a problem (default 20, $STRATEGY default model;
#           the second dtype warm-starts from the first's winners, $BUDGET2_S seconds a problem),
#           into a database seeded with configs/tables/sm_90.json; export the merged table ($out/sm_90.json),
#           the trials ($out/half_trials.csv), then ktune bench --dtype for each dtype with that table
#   sanitize  compute-sanitizer memcheck, racecheck and synccheck over the GPU tests of gemm_wgmma
#           (WgmmaGpu, shapes up to 2^30 MNK: KTUNE_SANITIZER_SAMPLE) and the row kernels (RowsGpu) ($SANITIZE_TESTS to
#           change the filter); a tool's log ends in its error summary
#   rows    tune configs/suites/rows.json (softmax, LayerNorm, RMSNorm; $BUDGET_S s a problem, default 30),
#           export $out/sm_90-rows.json, ktune bench over it (TB/s, % of copy) and bench/rows_vs_torch.py
#   ab      A/B of two builds (bench/ab_builds.py): ktune bench of $PREV (another ktune binary, required)
#           and ./build/ktune, alternating, $PAIRS pairs (default 2) over $SUITES (default "models") in
#           $DTYPES (default bf16), no user database (shipped tables only), --json per run; per problem
#           the builds' median times and B / A, and each run's geometric means against cuBLAS
#           ($out/ab_summary.txt).
# Every step runs even when one before it failed; the script then exits 1, listing what failed (a
# GPU test, a tune, an export, a bench, ...). No GPU seen by ktune devices is a failure too: every
# GPU test would skip.
set -uo pipefail
out=${OUT:-gpu-logs}
mkdir -p "$out"
steps=${*:-tests public resume}
failed=()
fail() { # what, exit status: recorded for the end
  echo "gpu-check: $1 failed (exit $2)"
  failed+=("$1 (exit $2)")
}
check() { [ "$2" = 0 ] || fail "$1" "$2"; } # what, exit status
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv >"$out/smi.txt" 2>&1
./build/ktune devices 2>&1 | tee "$out/devices.txt" || fail "ktune devices" $?

# Re-tunes some shapes of the shipped table: the table goes into a fresh database (per problem the
# faster entry wins), the search is seeded with its configs, and the merged table is exported
# ($out/sm_90.json). Arguments: a name for the logs, then ktune tune's options.
retune() {
  local name=$1; shift
  rm -f "$out/$name.db"*
  ./build/ktune import configs/tables/sm_90.json --db "$out/$name.db" || fail "$name: import" $?
  local start rc
  start=$(date +%s)
  timeout "${TUNE_TIMEOUT:-100000}" ./build/ktune tune "$@" --warm-start configs/tables/sm_90.json --db "$out/$name.db" \
    >"$out/tune_$name.txt" 2>"$out/tune_$name.err"
  rc=$?
  echo "$name: exit $rc, wall $(( $(date +%s) - start )) s"; cat "$out/tune_$name.txt"
  tune_check "$name" $rc
  ./build/ktune export --db "$out/$name.db" --arch sm_90 -o "$out/sm_90.json" || fail "$name: export" $?
  trials_csv "$out/$name.db" "$out/${name}_trials.csv"
  rm -f "$out/$name.db"*
}

# A tune run's exit status: 124 is the $TUNE_TIMEOUT/$TABLE_TIMEOUT bound asked for (the trials
# so far are kept), anything else but 0 a failure.
tune_check() { # what, exit status
  if [ "$2" = 124 ]; then echo "$1: stopped at its time limit"; else check "$1" "$2"; fi
}

trials_csv() { # db csv: every trial without the cubins, for the record
  python3 - "$1" "$2" <<'PY'
import csv, sqlite3, sys
db = sqlite3.connect(sys.argv[1])
cur = db.execute("SELECT p.key, t.family, t.config, t.status, t.error, t.median_ms, t.min_ms, t.p20_ms, t.p80_ms, t.reps, "
                 "t.tflops, t.rel_error, t.registers, t.smem_bytes, t.spill_bytes, t.compile_s, t.bench_s, t.created_at "
                 "FROM trials t JOIN problems p ON p.id = t.problem_id ORDER BY t.id")
with open(sys.argv[2], "w", newline="") as f:
    w = csv.writer(f)
    w.writerow([d[0] for d in cur.description])
    w.writerows(cur)
PY
}

for step in $steps; do
  case $step in
    tests)
      ./build/tests/ktune_tests --gtest_filter="${GPU_TESTS:-*Gpu*}" >"$out/gpu_tests.txt" 2>&1
      rc=$?
      echo "gpu tests: exit $rc"; check "gpu tests" $rc; grep -E "^\[ ktune|PASSED|FAILED|SKIPPED|tests? ran" "$out/gpu_tests.txt" | grep -v "^\[  FAILED  \].*ms)$" ;;
    public)
      rm -f "$out/public.db"*
      start=$(date +%s)
      KTUNE_DB="$out/public.db" ./build/ktune tune --family gemm_simt --suite configs/suites/public.json \
        --strategy random --budget-evals 200 >"$out/tune_public.txt" 2>"$out/tune_public.err"
      rc=$?
      echo "public suite: exit $rc, wall $(( $(date +%s) - start )) s"; cat "$out/tune_public.txt"; check "public suite" $rc
      trials_csv "$out/public.db" "$out/public_trials.csv"
      echo "trials in the database: $(python3 -c "import sqlite3;print(sqlite3.connect('$out/public.db').execute('select count(*) from trials').fetchone()[0])")" ;;
    resume)
      rm -f "$out/resume.db"*
      cmd=(./build/ktune tune --family gemm_simt --suite configs/suites/quick.json --strategy random --budget-evals 60 --db "$out/resume.db")
      count() { python3 -c "import sqlite3;print(sqlite3.connect('$out/resume.db', timeout=30).execute('select count(*) from trials').fetchone()[0])" 2>/dev/null || echo 0; }
      "${cmd[@]}" >"$out/resume1.txt" 2>&1 &
      pid=$!
      # Kill it part-way: once 70 of the 180 trials are in, mid-way through the second problem.
      while kill -0 "$pid" 2>/dev/null && [ "$(count)" -lt 70 ]; do sleep 0.2; done
      kill -9 "$pid"; wait "$pid" 2>/dev/null
      before=$(count)
      echo "killed with kill -9: $before trials recorded before the kill"
      "${cmd[@]}" >"$out/resume2.txt" 2>&1
      rc=$?
      echo "second run: exit $rc"; cat "$out/resume2.txt"; check "resume: second run" $rc
      after=$(python3 -c "import sqlite3;print(sqlite3.connect('$out/resume.db').execute('select count(*) from trials').fetchone()[0])")
      echo "trials after the second run: $after (expected 3 x 60 = 180; the second run skipped $before)"
      [ "$after" = 180 ] || fail "resume: $after trials, not 180" 1 ;;
    table)
      # gemm_simt over its H100 region with the model strategy, then gemm_skinny on the decode
      # shapes, into one database. TABLE_DB=path RESUME=1 continues an interrupted run (recorded
      # trials are skipped and fed to the strategy); TABLE_TIMEOUT bounds the gemm_simt part;
      # WARM=table.json seeds every search with the configs of that table's nearest entries.
      db=${TABLE_DB:-$out/table.db}
      [ "${RESUME:-0}" = 1 ] || rm -f "$db"*
      warm=(); [ -n "${WARM:-}" ] && warm=(--warm-start "$WARM")
      start=$(date +%s)
      timeout "${TABLE_TIMEOUT:-100000}" ./build/ktune tune --family gemm_simt --restrict configs/spaces/gemm_simt.h100.json \
        --suite configs/suites/table.json --strategy model --budget-evals 250 "${warm[@]}" --db "$db" >"$out/tune_table.txt" 2>"$out/tune_table.err"
      rc=$?
      echo "table suite, gemm_simt: exit $rc, wall $(( $(date +%s) - start )) s"; cat "$out/tune_table.txt"; tune_check "table suite, gemm_simt" $rc
      start=$(date +%s)
      ./build/ktune tune --family gemm_skinny --suite configs/suites/decode.json --strategy random --budget-evals 500 \
        "${warm[@]}" --db "$db" >"$out/tune_decode.txt" 2>"$out/tune_decode.err"
      rc=$?
      echo "decode shapes, gemm_skinny: exit $rc, wall $(( $(date +%s) - start )) s"; cat "$out/tune_decode.txt"; check "decode shapes, gemm_skinny" $rc
      ./build/ktune export --db "$db" --arch sm_90 -o "$out/sm_90.json" || fail "table: export" $?
      trials_csv "$db" "$out/table_trials.csv" ;;
    model)
      rm -f "$out/model.db"*
      start=$(date +%s)
      ./build/ktune tune --family gemm_simt --suite configs/suites/public.json --strategy model --budget-evals 100 \
        --db "$out/model.db" >"$out/tune_model.txt" 2>"$out/tune_model.err"
      rc=$?
      echo "public suite, model strategy: exit $rc, wall $(( $(date +%s) - start )) s"; cat "$out/tune_model.txt"; check "public suite, model strategy" $rc
      trials_csv "$out/model.db" "$out/model_trials.csv" ;;
    bench)
      table=(); [ -n "${TABLE:-}" ] && table=(--table "$TABLE")
      ./build/ktune bench --suite configs/suites/public.json --db /nonexistent.db "${table[@]}" --json "$out/bench_public.json" 2>&1 | tee "$out/bench_public.txt" || fail "bench public" $?
      ./build/ktune bench --suite configs/suites/public.json --db /nonexistent.db "${table[@]}" --tf32x3 --json "$out/bench_public_tf32x3.json" 2>&1 | tee "$out/bench_public_tf32x3.txt" || fail "bench public --tf32x3" $?
      ./build/ktune bench --ladder configs/ladder.json --db /nonexistent.db --json "$out/bench_ladder.json" 2>&1 | tee "$out/bench_ladder.txt" || fail "bench ladder" $? ;;
    decode)
      retune decode --family gemm_skinny --suite configs/suites/decode.json --strategy random --budget-evals 500 ;;
    staged)
      retune staged --family gemm_skinny --suite configs/suites/decode.json --restrict configs/spaces/gemm_skinny.h100-staged.json \
        --strategy random --budget-evals "${BUDGET:-300}" ;;
    unaligned)
      retune unaligned --family gemm_simt --suite configs/suites/unaligned.json --restrict configs/spaces/gemm_simt.h100-packed.json \
        --strategy model --budget-evals "${BUDGET:-300}" ;;
    large)
      problems=()
      for shape in ${PROBLEMS:-2048x2048x2048 4096x4096x4096 2048x4096x4096 2048x11008x4096 2048x4096x11008 512x512x32768}; do
        problems+=(--problem "$shape")
      done
      retune large --family gemm_simt --restrict configs/spaces/gemm_simt.h100.json --strategy model --budget-evals "${BUDGET:-400}" \
        "${problems[@]}" ;;
    tf32x3)
      rm -f "$out/tf32x3.db"*
      start=$(date +%s)
      warm=(); [ -n "${WARM:-}" ] && warm=(--warm-start "$WARM")
      ./build/ktune tune --family gemm_tf32x3 --suite configs/suites/compute.json --restrict configs/spaces/gemm_tf32x3.h100.json \
        --strategy model --budget-evals "${BUDGET:-150}" "${warm[@]}" --db "$out/tf32x3.db" >"$out/tune_tf32x3.txt" 2>"$out/tune_tf32x3.err"
      rc=$?
      echo "tf32x3: exit $rc, wall $(( $(date +%s) - start )) s"; cat "$out/tune_tf32x3.txt"; check "tf32x3" $rc
      ./build/ktune export --db "$out/tf32x3.db" --arch sm_90 -o "$out/sm_90-tf32x3.json" || fail "tf32x3: export" $?
      trials_csv "$out/tf32x3.db" "$out/tf32x3_trials.csv"
      rm -f "$out/tf32x3.db"*
      ./build/ktune bench --suite configs/suites/public.json --db /nonexistent.db --table "$out/sm_90-tf32x3.json" \
        --json "$out/bench_public_tf32x3.json" 2>&1 | tee "$out/bench_public_tf32x3.txt" || fail "tf32x3: bench" $? ;;
    wgmma-tf32x3)
      rm -f "$out/wgmma_tf32x3.db"*
      ./build/ktune import configs/tables/sm_90-tf32x3.json --db "$out/wgmma_tf32x3.db" || fail "wgmma-tf32x3: import" $?
      start=$(date +%s)
      restrict=(); [ -n "${SPACE:-}" ] && restrict=(--restrict "$SPACE")
      timeout "${TUNE_TIMEOUT:-100000}" ./build/ktune tune --family gemm_wgmma_tf32x3 --suite "${SUITE:-configs/suites/compute.json}" \
        "${restrict[@]}" --strategy model --budget-evals "${BUDGET:-120}" --db "$out/wgmma_tf32x3.db" \
        >"$out/tune_wgmma_tf32x3.txt" 2>"$out/tune_wgmma_tf32x3.err"
      rc=$?
      echo "wgmma-tf32x3: exit $rc, wall $(( $(date +%s) - start )) s"; cat "$out/tune_wgmma_tf32x3.txt"; tune_check "wgmma-tf32x3" $rc
      ./build/ktune export --db "$out/wgmma_tf32x3.db" --arch sm_90 -o "$out/sm_90-tf32x3.json" || fail "wgmma-tf32x3: export" $?
      trials_csv "$out/wgmma_tf32x3.db" "$out/wgmma_tf32x3_trials.csv"
      ./build/ktune bench --suite configs/suites/public.json --db /nonexistent.db --tf32x3 --table "$out/sm_90-tf32x3.json" \
        --json "$out/bench_public_wgmma_tf32x3.json" 2>&1 | tee "$out/bench_public_wgmma_tf32x3.txt" || fail "wgmma-tf32x3: bench" $? ;;
    profile)
      # Nsight Compute counters (clocks left alone) and SASS for the shipped table's kernels at the
      # shapes docs/PERFORMANCE.md discusses, beside cuBLAS's kernels in the same process.
      mkdir -p "$out/profile"
      metrics=dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed
      metrics=$metrics,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum
      metrics=$metrics,smsp__inst_executed.sum,smsp__sass_thread_inst_executed_op_ffma_pred_on.sum,launch__registers_per_thread
      metrics=$metrics,sm__inst_executed_pipe_fma.avg.pct_of_peak_sustained_active,smsp__issue_active.avg.pct_of_peak_sustained_active
      metrics=$metrics,sm__warps_active.avg.pct_of_peak_sustained_active
      # Every timed run is preceded by the timer's L2 flush kernel: leave it out of the launch count.
      not_flush='regex:^(?!ktune_l2_flush)'
      for st in barrier long_scoreboard short_scoreboard mio_throttle math_pipe_throttle not_selected wait dispatch_stall \
                lg_throttle no_instruction selected; do
        metrics=$metrics,smsp__average_warps_issue_stalled_${st}_per_issue_active.ratio
      done
      ncu_ladder() { # ladder file, name: ncu counters of its kernels and of cuBLAS's in the same bench
        ncu --clock-control none --print-summary per-kernel --launch-count 60 --kernel-name "$not_flush" --metrics "$metrics" \
          ./build/ktune bench --ladder "$1" --db /nonexistent.db >"$out/profile/ncu_$2.txt" 2>&1
        local rc=$?
        echo "profile $2: ncu exit $rc"; check "profile $2: ncu" $rc
      }
      for shape in ${SHAPES:-4096x4096x4096 2999x2999x2999 512x512x32768 16x4096x4096 1x4096x4096}; do
        python3 - "$shape" "$out/profile" <<'PY'
import json, subprocess, sys
shape, d = sys.argv[1], sys.argv[2]
m, n, k = map(int, shape.split("x"))
e = next(e for e in json.load(open("configs/tables/sm_90.json"))["entries"] if (e["m"], e["n"], e["k"]) == (m, n, k))
json.dump({"about": "one shipped-table kernel", "problem": {"m": m, "n": n, "k": k},
           "rungs": [{"name": shape, "family": e["family"], "config": e["config"]}]}, open(f"{d}/{shape}.json", "w"))
subprocess.run(["./build/ktune", "compile", "--family", e["family"], "--problem", shape, "--config", json.dumps(e["config"]),
                "-o", f"{d}/{shape}.cubin"], check=True, stdout=subprocess.DEVNULL)
PY
        check "profile $shape: compile" $?
        cuobjdump --dump-sass "$out/profile/$shape.cubin" >"$out/profile/$shape.sass" 2>&1
        ncu_ladder "$out/profile/$shape.json" "$shape"
        rm -f "$out/profile/$shape.cubin"
      done
      # LADDERS="a.json b.json": also profile these ladder files' kernels (configs not in the table).
      for ladder in ${LADDERS:-}; do
        ncu_ladder "$ladder" "$(basename "$ladder" .json)"
      done
      python3 tools/profile_summary.py "$out/profile" | tee "$out/profile/summary.txt" ;;
    replay)
      rm -f "$out/replay.db"*
      start=$(date +%s)
      ./build/ktune tune --family gemm_simt --suite configs/suites/replay.json --restrict configs/spaces/gemm_simt.replay.json \
        --strategy exhaustive --db "$out/replay.db" >"$out/tune_replay.txt" 2>"$out/tune_replay.err"
      rc=$?
      echo "replay suite: exit $rc, wall $(( $(date +%s) - start )) s"; cat "$out/tune_replay.txt"; check "replay suite" $rc
      ./build/ktune export --trials --db "$out/replay.db" --arch sm_90 -o "$out/replay_trials.json" || fail "replay: export" $? ;;
    runtime)
      ./build/bench/runtime_cost --json "$out/runtime_cost.json" 2>&1 | tee "$out/runtime_cost.txt" || fail "runtime_cost" $?
      ./build/examples/gemm_example 2>&1 | tee "$out/example.txt" || fail "gemm_example" $? ;;
    models)
      ./build/ktune bench --suite configs/suites/models.json --db /nonexistent.db --json "$out/bench_models.json" 2>&1 | tee "$out/bench_models.txt" || fail "bench models" $?
      ./build/ktune bench --suite configs/suites/models.json --db /nonexistent.db --tf32x3 --json "$out/bench_models_tf32x3.json" 2>&1 | tee "$out/bench_models_tf32x3.txt" || fail "bench models --tf32x3" $? ;;
    models-tune)
      name=models_tune; flag=(); [ -n "${TF32X3:-}" ] && name=models_tune_tf32x3 && flag=(--tf32x3)
      rm -f "$out/$name.db"*
      start=$(date +%s)
      ./build/ktune tune --suite configs/suites/models.json --budget-seconds "${BUDGET_S:-20}" "${flag[@]}" --db "$out/$name.db" \
        >"$out/tune_$name.txt" 2>"$out/tune_$name.err"
      rc=$?
      echo "$name: exit $rc, wall $(( $(date +%s) - start )) s"; cat "$out/tune_$name.txt"; check "$name" $rc
      trials_csv "$out/$name.db" "$out/${name}_trials.csv"
      ./build/ktune bench --suite configs/suites/models.json --db "$out/$name.db" --json "$out/bench_$name.json" 2>&1 | tee "$out/bench_$name.txt" || fail "$name: bench" $? ;;
    half)
      rm -f "$out/half.db"*
      ./build/ktune import configs/tables/sm_90.json --db "$out/half.db" || fail "half: import" $?
      warm=shipped; budget=${BUDGET_S:-20}
      for dt in ${DTYPES:-bf16 f16}; do
        start=$(date +%s)
        ./build/ktune tune --dtype "$dt" --suite configs/suites/public.json --strategy "${STRATEGY:-model}" \
          --budget-seconds "$budget" --warm-start "$warm" --db "$out/half.db" >"$out/tune_half_$dt.txt" 2>"$out/tune_half_$dt.err"
        rc=$?
        echo "half $dt: exit $rc, wall $(( $(date +%s) - start )) s"; cat "$out/tune_half_$dt.txt"; check "half $dt" $rc
        # The next dtype starts from this one's winners (bf16 and f16 lend to each other), on
        # $BUDGET2_S seconds a problem (default: the same budget).
        rm -f "$out/half-seeds.db"*
        python3 -c 'import sqlite3, sys; sqlite3.connect(sys.argv[1]).backup(sqlite3.connect(sys.argv[2]))' \
          "$out/half.db" "$out/half-seeds.db"
        warm="$out/half-seeds.db"; budget=${BUDGET2_S:-$budget}
      done
      ./build/ktune export --db "$out/half.db" --arch sm_90 -o "$out/sm_90.json" || fail "half: export" $?
      trials_csv "$out/half.db" "$out/half_trials.csv"
      rm -f "$out/half.db"* "$out/half-seeds.db"*
      for dt in ${DTYPES:-bf16 f16}; do
        ./build/ktune bench --dtype "$dt" --suite configs/suites/public.json --db /nonexistent.db --table "$out/sm_90.json" \
          --json "$out/bench_public_$dt.json" 2>&1 | tee "$out/bench_public_$dt.txt" || fail "half: bench $dt" $?
      done ;;
    sanitize)
      for tool in memcheck racecheck synccheck; do
        KTUNE_SANITIZER_SAMPLE=1 timeout "${SANITIZE_TIMEOUT:-300}" compute-sanitizer --tool "$tool" --error-exitcode 9 \
          ./build/tests/ktune_tests --gtest_filter="${SANITIZE_TESTS:-WgmmaGpu.*:RowsGpu.*}" >"$out/sanitize_$tool.txt" 2>&1
        rc=$?
        echo "compute-sanitizer $tool: exit $rc"; check "compute-sanitizer $tool" $rc; grep -E "ERROR SUMMARY|PASSED|FAILED" "$out/sanitize_$tool.txt" | tail -3
      done ;;
    rows)
      # Tune the row-op suite into a fresh database ($BUDGET_S seconds a problem, default 30,
      # warm-started from the shipped sm_90-rows table), export it ($out/sm_90-rows.json), bench it
      # (ktune bench: TB/s against the copy), and time it beside PyTorch (bench/rows_vs_torch.py,
      # where torch and the Python module are at hand: PYTHONPATH must reach ktune).
      rm -f "$out/rows.db"*
      start=$(date +%s)
      ./build/ktune tune --suite configs/suites/rows.json --strategy "${STRATEGY:-model}" --budget-seconds "${BUDGET_S:-30}" \
        --warm-start shipped --db "$out/rows.db" >"$out/tune_rows.txt" 2>"$out/tune_rows.err"
      rc=$?
      echo "rows: exit $rc, wall $(( $(date +%s) - start )) s"; cat "$out/tune_rows.txt"; check "rows" $rc
      ./build/ktune export --db "$out/rows.db" --arch sm_90 -o "$out/sm_90-rows.json" || fail "rows: export" $?
      trials_csv "$out/rows.db" "$out/rows_trials.csv"
      rm -f "$out/rows.db"*
      ./build/ktune bench --suite configs/suites/rows.json --db /nonexistent.db --table "$out/sm_90-rows.json" \
        --json "$out/bench_rows.json" 2>&1 | tee "$out/bench_rows.txt" || fail "rows: bench" $?
      if python3 -c 'import torch, ktune' 2>/dev/null; then
        python3 bench/rows_vs_torch.py --table "$out/sm_90-rows.json" --json "$out/rows_vs_torch.json" 2>&1 | tee "$out/rows_vs_torch.txt" \
          || fail "rows: rows_vs_torch.py" $?
      else
        echo "rows: PyTorch or the ktune module is not importable; bench/rows_vs_torch.py skipped"
      fi ;;
    ab)
      # The same suites with the previous build and this one, alternating (bench/ab_builds.py):
      # per-problem medians, B / A, and each run's ratio to cuBLAS.
      [ -x "${PREV:-}" ] || { echo "ab: PREV must name the other ktune binary" >&2; exit 2; }
      for suite in ${SUITES:-models}; do
        for dt in ${DTYPES:-bf16}; do
          python3 bench/ab_builds.py --a "$PREV" --b ./build/ktune --suite "configs/suites/$suite.json" --dtype "$dt" \
            --rounds "${PAIRS:-2}" --out "$out" --label "ab_${suite}_${dt}_" --fresh-db | tee -a "$out/ab_summary.txt"
          check "ab_${suite}_${dt}" "${PIPESTATUS[0]}"
        done
      done
      ;;
    *) echo "unknown step $step" >&2; exit 2 ;;
  esac
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "gpu-check: ${#failed[@]} failed:"
  printf '  %s\n' "${failed[@]}"
  exit 1
fi
echo "gpu-check: every step passed ($steps)"
