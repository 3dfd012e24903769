// The tuning loop. For each problem: time the cuBLAS baseline, ask the strategy for configs,
// compile them ahead on every CPU core, evaluate each in the worker (verify, then time), and
// record every trial in the store as it finishes. A re-run skips trials already recorded.
//
// Several GPUs (TuneOptions::devices): one worker process and one store connection a GPU, one
// compile pool for all; each GPU takes the next problem not yet taken as it finishes one, so a
// problem's trials all come from one GPU and are recorded under that device, as in a run on it
// alone. GPUs of different models are refused unless allowed. After a trial that crashed or timed
// out the GPU's worker is asked whether the device still answers; a GPU that does not (twice) is
// retired with a line on stderr, and its problem goes back to the others.
#pragma once
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "db/store.h"
#include "ktune/family.h"
#include "runtime/timing.h"

namespace ktune {

struct TuneOptions {
  std::vector<Family> families;
  std::vector<Problem> problems;
  std::string strategy = "random";
  std::optional<size_t> budget_evals;   // per problem; counts trials recorded earlier too
  std::optional<double> budget_seconds; // per problem, wall time of this run
  uint64_t seed = 1;
  std::string warm_start; // table file or database whose nearest best configs are tried first
  // Appends one JSON object a line (problem, family, config, status, times, error) for every
  // trial as it is recorded, for tools that follow a run; "" for none. Trials a resumed run
  // skips are not written again.
  std::string trials_out;
  std::string db_path;
  int device = 0;
  // GPUs to tune on at once (ordinals, no repeats); empty: `device` alone.
  std::vector<int> devices;
  // Tune on GPUs of different models in one run (each trial is still recorded under its own
  // device); otherwise such a run is refused.
  bool allow_mixed_devices = false;
  // Use this description instead of asking the driver: lets tests drive the whole loop with a
  // scripted worker on a machine without a GPU. device_infos: one a GPU of `devices`, in order.
  std::optional<DeviceInfo> device_info;
  std::vector<DeviceInfo> device_infos;
  double timeout_s = 30; // watchdog for one evaluation in the worker
  // Watchdog for a problem's one-time work in the worker, before its first trial and after a
  // restart: the CUDA context and what its checks and baseline compile (a user kernel's reference
  // under heavy headers: tens of seconds of NVRTC), which timeout_s does not count.
  double load_timeout_s = 600;
  std::vector<std::string> worker_argv; // the worker command; the session appends --device
  // NVRTC in worker processes of this command (one a core: tuner/compile_workers.h) instead of
  // threads of this process; empty: threads.
  std::vector<std::string> compile_argv;
  // For a caller that ends its process as soon as tune() returns (the CLI): compiles still running
  // when the run is over (abandoned by a time budget; NVRTC cannot be stopped, and a spec with heavy
  // headers compiles for 10-30 s) are not waited for. Their Compiler, and its compile processes, are
  // left alive; TuneResult::compiles_left_running counts them, and the caller must then end the
  // process through exit_leaving_compiles().
  bool leave_running_compiles = false;
  TimingOptions timing;
  bool quiet = false;
  bool progress = true; // live line on stderr (the CLI sets it when stderr is a terminal)
};

struct ProblemResult {
  Problem problem;
  int device = 0; // the ordinal of the GPU that tuned it
  std::optional<BestRecord> best;
  std::optional<Timing> cublas;
  std::map<TrialStatus, int> by_status; // trials evaluated in this run
  std::string first_failure;            // the first of them that failed: its status, config and error
  int skipped = 0;                      // already recorded: not evaluated again
  // bench_s: the worker's time answering evaluations; baseline_s: its time timing the baseline
  // library (a reading before the trials and one after).
  double compile_s = 0, bench_s = 0, baseline_s = 0, wall_s = 0;
  size_t store_reused = 0;
};

struct TuneResult {
  std::vector<ProblemResult> problems; // in the order of TuneOptions::problems
  DeviceInfo device;                   // the first GPU's
  std::vector<DeviceInfo> devices;     // every GPU of the run
  std::vector<std::string> retired;    // a line for each GPU retired during the run
  double wall_s = 0, compile_s = 0, bench_s = 0, baseline_s = 0;
  int worker_restarts = 0;
  size_t compiled = 0;       // NVRTC compiles this run
  size_t compile_reused = 0; // configs served by a compile of an earlier problem (memory cache)
  size_t store_reused = 0;   // cubins read from the database's binary cache instead
  unsigned compiles_left_running = 0; // TuneOptions::leave_running_compiles
};

// Throws Error (no GPU, bad device ordinal) or UsageError before any trial is run.
TuneResult tune(const TuneOptions& o);

// The order in which several GPUs take problems: the longest first (longest-processing-time order),
// so that a run ends on short problems and no GPU idles while another finishes a large one: a run
// takes problems whole, and in suite order a suite that ends on a large problem leaves the other
// GPUs idle meanwhile. A problem's length is estimated as its kernel's least time, the larger of its
// FLOPs at a tensor-core rate and its bytes at an HBM rate; ties keep the suite's order.
std::vector<size_t> longest_first(const std::vector<Problem>& problems);

// Ends the process after a run that left compiles running (TuneResult::compiles_left_running):
// flushes stdout and stderr, kills the compile processes (their process groups), and exits with
// `status` without running destructors, which would wait for the compiles.
[[noreturn]] void exit_leaving_compiles(int status);

// The end-of-run table: problem, best config, TFLOPS, cuBLAS TFLOPS, ratio, trials by status.
std::string format_summary(const TuneResult& r);

} // namespace ktune
