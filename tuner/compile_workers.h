// NVRTC in worker processes. Threads of one process stop scaling on small compiles: on 16 cores a
// row-op family's configs (0.2 s each) compiled at 26 a second on 16 threads and at 57 in 16
// processes, while GEMM and attention compiles (about 1 s) scaled alike either way
// (docs/runs/2026-11-29-compile-cost.md). So the tuner can hand its compiles to processes: each a
// `ktune compile-worker`, which compiles one request at a time with its own NVRTC state. The
// Compiler's thread pool still schedules (a thread waits on a process) and its cache still
// answers repeats, so only where the compile runs changes.
//
// Protocol (one JSON object a line, WorkerProcess's):
//   {"op":"compile", "source":..., "source_name":..., "names":[...], "arch":..., "options":[...],
//    "context":...}
//     -> {"status":"ok", "cubin":BASE64, "lowered":[...], "log":...}
//      | {"status":"compile_error", "error":..., "log":...}   (NVRTC rejected the source)
//      | {"status":"error", "error":...}                     (anything else)
#pragma once
#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "ktune/compiler.h"

namespace ktune {

class WorkerProcess;

class CompileProcesses {
 public:
  // argv: the worker command (e.g. {"/path/ktune", "compile-worker"}); n processes (0: one a core),
  // each started at its first compile and again after it died.
  CompileProcesses(std::vector<std::string> argv, unsigned n);
  ~CompileProcesses();
  CompileProcesses(const CompileProcesses&) = delete;
  CompileProcesses& operator=(const CompileProcesses&) = delete;

  // Blocks until a process is free and has compiled req. Throws CompileError when NVRTC rejects
  // the source or the process dies, hangs past timeout_s or answers nonsense on it (restarted for
  // the next), Error for any other failure (an NVRTC call, a reply that cannot be a result): every
  // message names req.context.
  std::shared_ptr<CompiledKernel> compile(const CompileRequest& req);

  // For a run that leaves its compiles running (TuneOptions::leave_running_compiles): no process is
  // started again, and a compile whose process dies fails at once instead of being retried, so
  // that killing the processes (kill_all_workers) ends them for good.
  void close() { closed_ = true; }

  unsigned size() const { return unsigned(procs_.size()); }
  double timeout_s = 600; // one compile; the largest take seconds

 private:
  std::vector<std::unique_ptr<WorkerProcess>> procs_;
  std::vector<size_t> free_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::atomic<bool> closed_{false};
};

// The child's side: serves compile requests on stdin/stdout until stdin closes. Returns the exit
// status.
int compile_worker_main();

} // namespace ktune
