#include "tuner/worker.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>

#include "core/json_text.h"
#include "ktune/compiler.h"
#include "ktune/device.h"
#include "ktune/error.h"
#include "runtime/cuda_check.h"
#include "runtime/driver.h"
#include "tuner/json_io.h"
#include "tuner/op_runner.h"
#include "runtime/timing.h"

namespace ktune {

// ---------------------------------------------------------------- parent side

namespace {

// The process groups of the live workers. A worker runs in its own group (start()), so a Ctrl-C
// at the terminal reaches the tuner but not the worker: the tuner's handler below kills the
// groups, then dies of the signal as it would have. Slots are plain atomics, as a handler may
// read them at any moment.
constexpr int kMaxWorkers = 256;
std::atomic<pid_t> g_worker_groups[kMaxWorkers];

extern "C" void kill_workers_and_die(int sig) {
  kill_all_workers(); // lock-free atomics and kill(): async-signal-safe
  signal(sig, SIG_DFL);
  raise(sig);
}

// Installed once, and only over the default disposition: an application that handles these
// signals itself (Python's KeyboardInterrupt, a server's shutdown) keeps its handler and ends the
// workers through WorkerProcess's destructor.
void forward_termination_signals() {
  static const bool done = [] {
    for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) {
      struct sigaction old{};
      if (sigaction(sig, nullptr, &old) == 0 && old.sa_handler == SIG_DFL && !(old.sa_flags & SA_SIGINFO)) {
        struct sigaction sa{};
        sa.sa_handler = kill_workers_and_die;
        sigemptyset(&sa.sa_mask);
        sigaction(sig, &sa, nullptr);
      }
    }
    return true;
  }();
  (void)done;
}

void remember_group(pid_t pg) {
  for (auto& g : g_worker_groups) {
    pid_t free = 0;
    if (g.compare_exchange_strong(free, pg)) return;
  }
  // More live workers than slots: this one is still killed by stop(), only not by a Ctrl-C.
}

void forget_group(pid_t pg) {
  for (auto& g : g_worker_groups) {
    pid_t mine = pg;
    if (g.compare_exchange_strong(mine, 0)) return;
  }
}

} // namespace

void kill_all_workers() {
  static_assert(std::atomic<pid_t>::is_always_lock_free, "a signal handler reads the groups");
  for (auto& g : g_worker_groups) {
    const pid_t pg = g.exchange(0, std::memory_order_relaxed);
    if (pg > 0) kill(-pg, SIGKILL);
  }
}

WorkerProcess::WorkerProcess(std::vector<std::string> argv) : argv_(std::move(argv)) {
  // A write to a dead child must come back as EPIPE, not kill the tuner.
  signal(SIGPIPE, SIG_IGN);
  forward_termination_signals();
}

WorkerProcess::~WorkerProcess() { stop(); }

void WorkerProcess::start() {
  // Close-on-exec: workers are started from several threads at once (a GPU's lane, the compile
  // pool's threads), and a child that inherited another worker's pipe ends would keep that worker's
  // stdout open past its death (its crash seen only as a timeout) and its stdin open past ours.
  // dup2 onto 0 and 1 clears the flag for the child's own two.
  int in[2] = {-1, -1}, out[2] = {-1, -1};
  auto close_all = [&] {
    for (int fd : {in[0], in[1], out[0], out[1]})
      if (fd >= 0) close(fd);
  };
  if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0) {
    const int err = errno;
    close_all();
    throw Error(std::string("pipe failed starting the worker: ") + std::strerror(err));
  }
  std::vector<char*> args;
  for (auto& a : argv_) args.push_back(a.data());
  args.push_back(nullptr);
  const pid_t pid = fork();
  if (pid < 0) {
    const int err = errno;
    close_all();
    throw Error(std::string("fork failed starting the worker: ") + std::strerror(err));
  }
  if (pid == 0) {
    // Its own process group, so that killing the worker kills whatever it started too (a shell's
    // children, a wrapper's tool): an orphan left holding the parent's stderr would keep whoever
    // reads it (ctest, a pipe) waiting until it exits.
    setpgid(0, 0);
    dup2(in[0], 0);
    dup2(out[1], 1);
    fcntl(0, F_SETFD, 0); // dup2 of a descriptor onto itself keeps its close-on-exec flag
    fcntl(1, F_SETFD, 0);
    close(in[0]), close(in[1]), close(out[0]), close(out[1]);
    execv(args[0], args.data());
    std::fprintf(stderr, "ktune: cannot start worker %s: %s\n", args[0], std::strerror(errno));
    _exit(127);
  }
  setpgid(pid, pid); // as the child does: whichever runs first, the group exists before a kill
  remember_group(pid);
  close(in[0]);
  close(out[1]);
  pid_ = pid;
  to_child_ = in[1];
  from_child_ = out[0];
  pending_.clear();
  ++starts_;
}

std::string WorkerProcess::reap() {
  if (to_child_ >= 0) close(to_child_);
  if (from_child_ >= 0) close(from_child_);
  to_child_ = from_child_ = -1;
  int st = 0;
  std::string how = "worker ended";
  if (pid_ > 0 && waitpid(pid_, &st, 0) == pid_) {
    if (WIFSIGNALED(st)) how = std::string("worker killed by signal ") + strsignal(WTERMSIG(st));
    else if (WIFEXITED(st)) how = "worker exited with status " + std::to_string(WEXITSTATUS(st));
  }
  if (pid_ > 0) forget_group(pid_);
  pid_ = -1;
  return how;
}

void WorkerProcess::stop() {
  if (pid_ > 0) {
    kill(-pid_, SIGKILL); // the group: the worker and anything it started
    kill(pid_, SIGKILL);
    reap();
  }
}

WorkerProcess::Reply WorkerProcess::request(const nlohmann::json& req, double timeout_s) {
  if (pid_ < 0) start();
  Reply r;
  const std::string line = req.dump() + "\n";
  for (size_t off = 0; off < line.size();) {
    const ssize_t n = write(to_child_, line.data() + off, line.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      r.detail = reap();
      return r;
    }
    off += size_t(n);
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  for (;;) {
    const size_t nl = pending_.find('\n');
    if (nl != std::string::npos) {
      const std::string reply = pending_.substr(0, nl);
      pending_.erase(0, nl + 1);
      try {
        check_json_depth(reply, "worker reply");
        r.body = nlohmann::json::parse(reply);
        r.outcome = Outcome::replied;
      } catch (const std::exception& e) {
        stop();
        r.detail = "worker sent an unreadable reply: " + reply.substr(0, 200);
        return r;
      }
      // After a sticky error the worker exits on its own; wait for it here, or the next request
      // would meet the dying process and blame its death on the next config.
      if (r.body.is_object() && r.body.value("sticky", false)) reap();
      return r;
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      stop();
      r.outcome = Outcome::timed_out;
      char buf[96];
      std::snprintf(buf, sizeof buf, "no reply within %.1f s; worker killed", timeout_s);
      r.detail = buf;
      return r;
    }
    pollfd pfd{from_child_, POLLIN, 0};
    const int pr = poll(&pfd, 1, int(std::min<int64_t>(left.count(), 1000)));
    if (pr < 0 && errno != EINTR) throw Error(std::string("poll on the worker pipe failed: ") + std::strerror(errno));
    if (pr <= 0) continue;
    char buf[65536];
    const ssize_t n = read(from_child_, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      r.detail = reap();
      return r;
    }
    pending_.append(buf, size_t(n));
  }
}

// ---------------------------------------------------------------- child side

namespace {

std::vector<char> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("worker cannot open cubin " + path);
  std::vector<char> data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad() || data.empty()) throw Error("worker cannot read cubin " + path);
  return data;
}

struct WorkerState {
  DeviceInfo dev;
  CudaContext ctx;
  Compiler compiler{1};
  Timer timer;
  std::map<std::string, std::unique_ptr<OpRunner>> runners; // one per op, made on first use
  explicit WorkerState(const DeviceInfo& d) : dev(d), ctx(d.ordinal), timer(d.l2_bytes) {}
  OpRunner& runner(const std::string& op) {
    auto& r = runners[op];
    if (!r) r = make_op_runner(op, compiler, dev);
    return *r;
  }
};

nlohmann::json eval(WorkerState& w, const nlohmann::json& req) {
  const auto t0 = std::chrono::steady_clock::now();
  const Problem p = problem_from_json(req.at("problem"), "eval request");
  OpRunner& op = w.runner(p.op);
  const LaunchPlan plan = plan_from_json(req.at("plan"));
  const std::vector<std::string> names = req.at("names").get<std::vector<std::string>>();
  nlohmann::json out;
  Module m(read_file(req.at("cubin").get<std::string>()), names, req.value("context", std::string("eval")));
  const KernelAttributes at = m.attributes(0);
  out["registers"] = at.registers;
  out["smem"] = at.static_smem + int(plan.steps.empty() ? 0 : m.dynamic_smem(plan.main_step()));
  out["local"] = at.local_bytes;
  op.ensure_workspace(plan.workspace_bytes);
  const Numerics numerics = parse_numerics(req.value("numerics", std::string("standard")));
  // The config's seed for the served check; the problem's (every config's) for the timed one.
  const uint64_t seed = req.at("seed").get<uint64_t>();
  const VerifyResult v = check_as_served_and_timed(op, p, seed, req.value("timed_seed", seed), numerics,
                                                   [&](CUstream s) { op.launch(m, plan, s); });
  out["rel_error"] = v.rel_error;
  if (!v.pass) {
    out["status"] = "wrong_result";
    out["error"] = v.summary();
  } else {
    const Timing t = w.timer.time([&](CUstream s) { op.launch(m, plan, s); }, nullptr,
                                  timing_options_from_json(req.value("timing", nlohmann::json())), "timing",
                                  [&](CUstream s) { op.restore(s); });
    out["status"] = "ok";
    out["timing"] = timing_to_json(t);
  }
  out["bench_s"] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

nlohmann::json baseline(WorkerState& w, const nlohmann::json& req) {
  const Problem p = problem_from_json(req.at("problem"), "baseline request");
  OpRunner& op = w.runner(p.op);
  op.prepare(p, req.at("seed").get<uint64_t>());
  op.load_baseline();
  // timing_s: the reading alone (no compile, no inputs made), which the session budgets a second
  // reading of the problem's by.
  const auto t0 = std::chrono::steady_clock::now();
  const Timing t = w.timer.time([&](CUstream s) { op.run_baseline(s); }, nullptr,
                                timing_options_from_json(req.value("timing", nlohmann::json())), "timing the baseline",
                                [&](CUstream s) { op.restore(s); });
  return {{"status", "ok"},
          {"timing", timing_to_json(t)},
          {"timing_s", std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()}};
}

// A problem's one-time work: the context (made with the worker state), then what its checks and
// baseline compile (OpRunner::load).
nlohmann::json load(WorkerState& w, const nlohmann::json& req) {
  const auto t0 = std::chrono::steady_clock::now();
  const Problem p = problem_from_json(req.at("problem"), "load request");
  w.runner(p.op).load(p);
  return {{"status", "ok"}, {"load_s", std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()}};
}

} // namespace

ProtocolOut::ProtocolOut(const char* who) : who_(who) {
  const int fd = dup(1);
  if (fd < 0 || dup2(2, 1) < 0) {
    std::fprintf(stderr, "%s: dup of stdout failed: %s\n", who_, std::strerror(errno));
    if (fd >= 0) close(fd);
    return;
  }
  out_ = fdopen(fd, "w");
  if (!out_) {
    std::fprintf(stderr, "%s: fdopen of stdout failed: %s\n", who_, std::strerror(errno));
    close(fd);
  }
}

ProtocolOut::~ProtocolOut() {
  if (out_) std::fclose(out_);
}

bool ProtocolOut::reply(const nlohmann::json& j) {
  // Invalid UTF-8 (a compiler log, an error text) is replaced rather than thrown on.
  const std::string s = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  if (std::fwrite(s.data(), 1, s.size(), out_) == s.size() && std::fflush(out_) == 0) return true;
  std::fprintf(stderr, "%s: writing a reply failed: %s\n", who_, std::strerror(errno));
  return false;
}

int worker_main(int ordinal) {
  ProtocolOut proto("ktune worker");
  if (!proto.ok()) return 1;
  std::unique_ptr<WorkerState> w;
  std::string line;
  while (std::getline(std::cin, line)) {
    nlohmann::json req, out;
    bool sticky = false;
    try {
      check_json_depth(line, "worker request");
      req = nlohmann::json::parse(line);
      if (!w) {
        w = std::make_unique<WorkerState>(device_by_ordinal(ordinal));
      }
      const std::string op = req.at("op").get<std::string>();
      if (op == "eval") out = eval(*w, req);
      else if (op == "baseline") out = baseline(*w, req);
      else if (op == "load") out = load(*w, req);
      // Whether the device still answers (the context above was made or is alive): asked after
      // a crash, to tell a kernel's fault from a GPU's.
      else if (op == "ping") out = {{"status", "ok"}, {"device", w->dev.name}};
      else throw Error("unknown worker op '" + op + "'");
    } catch (const CudaError& e) {
      sticky = e.is_sticky();
      out = {{"status", "launch_error"}, {"error", e.what()}, {"sticky", sticky}};
    } catch (const std::exception& e) {
      out = {{"status", "launch_error"}, {"error", e.what()}, {"sticky", false}};
    }
    if (!proto.reply(out)) return 1;
    if (sticky) return 3; // the context is unusable; the parent starts a fresh worker
  }
  return 0;
}

} // namespace ktune
