// Fault isolation. The GPU work of tuning runs in a child process (`ktune worker`) that owns the
// CUDA context. A kernel that crashes the process, leaves a sticky CUDA error (illegal address,
// trap) or hangs costs only that child: the parent records the trial and starts a new one.
//
// Protocol: one JSON object per line, request on the child's stdin, reply on its stdout.
//   {"op":"eval", "problem":{...}, "seed":N, "timed_seed":M, "cubin":PATH, "names":[...], "plan":{...}, "timing":{...}}
//     -> {"status":"ok"|"wrong_result"|"launch_error", "error":..., "sticky":bool, "timing":{...},
//         "rel_error":x, "registers":n, "smem":n, "local":n, "bench_s":x}
//     (seed: the inputs of the check as served; timed_seed, the problem's, those of the check as
//     timed and of the timing, the same for every config; absent: seed)
//   {"op":"baseline", "problem":{...}, "seed":M, "timing":{...}} -> {"status":"ok", "timing":{...}, "timing_s":S}
//     (timing_s: the seconds of the reading itself, its compile and inputs not counted)
//   {"op":"load", "problem":{...}} -> {"status":"ok", "load_s":S}
//     (what the problem's checks and baseline run besides the config, compiled and loaded ahead of
//     its trials: a user kernel's reference under heavy headers takes tens of seconds of NVRTC,
//     which the session's limit for this request allows and a trial's does not)
//   {"op":"ping"} -> {"status":"ok", "device":NAME} (the CUDA context made or alive)
#pragma once
#include <sys/types.h>

#include <cstdio>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace ktune {

class WorkerProcess {
 public:
  enum class Outcome { replied, died, timed_out };
  struct Reply {
    Outcome outcome = Outcome::died;
    nlohmann::json body;  // when replied
    std::string detail;   // when died or timed out: exit status or signal, or the limit
  };

  // argv[0] is the executable. The child is started on the first request and again after it died.
  explicit WorkerProcess(std::vector<std::string> argv);
  ~WorkerProcess();
  WorkerProcess(const WorkerProcess&) = delete;
  WorkerProcess& operator=(const WorkerProcess&) = delete;

  // Sends one request and waits up to timeout_s for the reply line. On a timeout the child is
  // killed (SIGKILL): a kernel stuck in a loop cannot be interrupted any other way.
  Reply request(const nlohmann::json& req, double timeout_s);
  void stop(); // kills the child if running
  int restarts() const { return starts_ > 0 ? starts_ - 1 : 0; }
  // Whether the child is alive now; starts(): how many were started, the live one included. A
  // fresh child (the next request starts one when none is alive) has loaded nothing.
  bool running() const { return pid_ > 0; }
  int starts() const { return starts_; }

 private:
  void start();
  std::string reap(); // waits for the child; describes how it ended

  std::vector<std::string> argv_;
  pid_t pid_ = -1;
  int to_child_ = -1, from_child_ = -1;
  std::string pending_;
  int starts_ = 0;
};

// Kills every live worker's process group (SIGKILL), for a process about to end without running
// the WorkerProcess destructors (exit_leaving_compiles).
void kill_all_workers();

// The child's side of a line protocol (this worker's, the compile worker's, the replay worker's):
// takes this process's stdout for the replies and sends everything else printed to stderr, so
// that no library's output can corrupt a reply. `who` names the process in its error messages.
class ProtocolOut {
 public:
  explicit ProtocolOut(const char* who);
  ProtocolOut(const ProtocolOut&) = delete;
  ProtocolOut& operator=(const ProtocolOut&) = delete;
  ~ProtocolOut();
  bool ok() const { return out_ != nullptr; } // false: stdout could not be taken (said on stderr)
  // One reply line, flushed; false (said on stderr) when it could not be written: the parent
  // cannot hear this process any more, which should end.
  bool reply(const nlohmann::json& j);

 private:
  const char* who_;
  FILE* out_ = nullptr;
};

// The child's side: serves requests on stdin/stdout for device `ordinal` until stdin closes.
// Returns the process exit status (3 after a sticky CUDA error, when the context is unusable).
int worker_main(int ordinal);

} // namespace ktune
