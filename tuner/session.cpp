#include "tuner/session.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstdio>
#include <deque>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <mutex>
#include <set>
#include <thread>

#include "ktune/compiler.h"
#include "ktune/device.h"
#include "ktune/error.h"
#include "jit/load_or_compile.h"
#include "tuner/gemm_op.h"
#include "tuner/json_io.h"
#include "tuner/strategy.h"
#include "tuner/warm_start.h"
#include "tuner/compile_workers.h"
#include "tuner/worker.h"

namespace ktune {
namespace {

// A message's first line, at most n characters (a compile error's NVRTC log follows its first line).
std::string first_line(const std::string& s, size_t n) {
  std::string l = s.substr(0, s.find('\n'));
  if (l.size() > n) l = l.substr(0, n) + "...";
  return l;
}

// A time as the op is judged: a GEMM by its FLOPs, an op that counts none by the bytes it must
// move, a user's kernel by whichever its spec counts, any other problem by its FLOPs where it does
// at least 16 a byte (attention's prefill; its decode, a few FLOPs a byte, by bytes).
std::string rate_text(const Problem& p, double ms) {
  const OpInfo& op = op_info(p.op);
  char buf[64];
  const bool compute = op.baseline == "cublas" || (op.spec && tflops(p, ms) > 0) ||
                       (!op.spec && min_bytes(p) > 0 && flops(p) >= 16 * min_bytes(p));
  if (compute) std::snprintf(buf, sizeof buf, "%.1f TFLOPS", tflops(p, ms));
  else std::snprintf(buf, sizeof buf, "%.2f TB/s", min_bytes(p) / (ms * 1e-3) / 1e12);
  return buf;
}

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }


std::string fmt_duration(double s) {
  char buf[32];
  const int t = int(s + 0.5);
  std::snprintf(buf, sizeof buf, "%d:%02d", t / 60, t % 60);
  return buf;
}

// Cubins travel to the worker as files, written once per cubin: named by their bytes' hash, not by
// the compiler cache key, since two compiles of one key may differ (NVRTC names a kernel templated
// on an internal-linkage function, llama.cpp's k_bin_bcast<op_add>, with a number of its own each
// compile), and each trial's kernel names are its own compile's.
class CubinDir {
 public:
  CubinDir() {
    char tmpl[] = "/tmp/ktune-cubins-XXXXXX";
    if (!mkdtemp(tmpl)) throw Error("mkdtemp failed creating the cubin folder");
    dir_ = tmpl;
  }
  ~CubinDir() {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  std::string put(const CompiledKernel& k) {
    const std::string path =
        dir_ + "/" + fnv1a_hex(std::string(k.cubin.begin(), k.cubin.end())) + "-" + std::to_string(k.cubin.size()) + ".cubin";
    std::lock_guard<std::mutex> lk(mu_); // several GPUs' tuners write here
    if (!std::filesystem::exists(path)) {
      std::ofstream out(path, std::ios::binary);
      out.write(k.cubin.data(), std::streamsize(k.cubin.size()));
      out.close();
      if (!out) throw Error("cannot write cubin file " + path);
    }
    return path;
  }

 private:
  std::string dir_;
  std::mutex mu_;
};

// The live progress line on stderr: one slot a GPU, printed together, since several GPUs' tuners
// report at once. One GPU: its slot alone, as a run on one GPU always printed it.
class ProgressLine {
 public:
  explicit ProgressLine(size_t gpus) : slots_(gpus) {}
  // text: the slot's line ("" clears it); compact: what the slot shows beside others.
  void set(size_t slot, std::string text, std::string compact) {
    std::lock_guard<std::mutex> lk(mu_);
    slots_[slot] = slots_.size() == 1 ? std::move(text) : std::move(compact);
    std::string line;
    for (const auto& t : slots_)
      if (!t.empty()) line += (line.empty() ? "" : " | ") + t;
    std::fprintf(stderr, "\r\033[K%s", line.c_str());
    std::fflush(stderr);
  }

 private:
  std::mutex mu_;
  std::vector<std::string> slots_;
};

// Thrown by a GPU's tuner when its device stops answering (TuneOptions::devices): the GPU is
// retired and its problem goes back to the others.
struct DeviceLost : Error {
  using Error::Error;
};

struct InFlight {
  Candidate cand;           // family index into TuneOptions::families
  Candidate strategy_cand;  // as the strategy proposed it (its family index is into its own list)
  Config config;
  std::string config_hash, template_hash;
  std::future<std::shared_ptr<const CompiledKernel>> compiled;
  std::shared_ptr<const CompiledKernel> ready; // done when prepared (the store's binary cache)
  std::exception_ptr error;                    // a compile that failed at once
  // Raised where the search ends with this job still queued (Compiler::compile_async): a compile
  // not started by then is skipped, leaving the pool to the next family's and problem's.
  Compiler::Cancel cancel = std::make_shared<std::atomic<bool>>(false);
};

// The trial log of TuneOptions::trials_out, shared by the run's GPUs.
struct SharedTrialLog {
  std::ofstream out;
  std::mutex mu;
};

class ProblemTuner {
 public:
  ProblemTuner(const TuneOptions& o, const DeviceInfo& dev, int ordinal, Store& store, Compiler& compiler,
               WorkerProcess& worker, CubinDir& cubins, const WarmStart* warm, SharedTrialLog* trials_out,
               ProgressLine& line, size_t slot, int64_t device_id, size_t index)
      : o_(o), dev_(dev), ordinal_(ordinal), store_(store), compiler_(compiler), worker_(worker), cubins_(cubins),
        warm_(warm), trials_out_(trials_out), line_(line), slot_(slot), device_id_(device_id), index_(index) {}

  ProblemResult run(const Problem& p) {
    const auto t0 = Clock::now();
    ProblemResult r;
    r.problem = p;
    const int64_t pid = store_.problem_id(p);
    auto tb = Clock::now();
    r.cublas = baseline(p, pid);
    r.baseline_s += seconds_since(tb);
    // --budget-seconds is the problem's whole wall time: the families' searches end early enough
    // for the baseline's second reading after them, estimated by the first's timing (at least
    // 0.25 s), not by its compile (a user kernel's baseline under heavy headers takes seconds to
    // compile, once a worker, and would otherwise be counted twice, leaving the search no time).
    const double reserve = std::max(0.25, baseline_reading_s_.value_or(seconds_since(t0)));
    // Without --budget-evals: exhaustive means every valid config; a sampling strategy draws 200
    // (or, under a time budget alone, enough that time runs out first).
    const size_t budget =
        o_.budget_evals.value_or(o_.strategy == "exhaustive" ? SIZE_MAX : (o_.budget_seconds ? 20000 : 200));
    // The families that can serve p at all (e.g. gemm_skinny only up to M = 64): the first valid
    // config is enough to know.
    std::vector<size_t> serving;
    for (size_t i = 0; i < o_.families.size(); ++i) {
      bool any = false;
      o_.families[i].enumerate(p, dev_, [&](const Config&) { return !(any = true); });
      if (any) serving.push_back(i);
    }
    if (serving.empty() && !o_.quiet)
      std::fprintf(stderr, "ktune: no family of this run can serve %s\n", p.key().c_str());
    // The problem's budget is shared: each family gets an equal part of what is left when its
    // turn comes, so that one whose space runs out early leaves its share to the next.
    size_t used = 0;
    for (size_t j = 0; j < serving.size(); ++j) {
      const size_t left_families = serving.size() - j;
      const size_t evals = budget == SIZE_MAX ? SIZE_MAX : (budget - used) / left_families;
      std::optional<Clock::time_point> deadline;
      if (o_.budget_seconds) {
        const double left = *o_.budget_seconds - reserve - seconds_since(t0);
        deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                      std::chrono::duration<double>(std::max(0.0, left) / double(left_families)));
      }
      used += search(p, pid, serving[j], evals, deadline, r);
    }
    tb = Clock::now();
    r.cublas = rebaseline(p, pid, r.cublas);
    r.baseline_s += seconds_since(tb);
    r.best = store_.best(dev_.arch, p.key());
    r.wall_s = seconds_since(t0);
    if (o_.progress && !o_.quiet) line_.set(slot_, "", "");
    return r;
  }

 private:
  // One JSON line per recorded trial, flushed at once: a reader following the file sees every
  // trial as soon as the database has it.
  void log_trial(const Problem& p, const TrialRecord& t) {
    if (!trials_out_) return;
    nlohmann::json j = {{"problem", p.key()},
                        {"family", t.family},
                        {"config", nlohmann::json::parse(t.config_json)},
                        {"status", to_string(t.status)},
                        {"device", dev_.name},
                        {"arch", dev_.arch}};
    if (t.status == TrialStatus::ok) {
      j["time_ms"] = t.timing.median_ms;
      j["tflops"] = t.tflops;
      j["reps"] = t.timing.reps;
      j["rel_error"] = t.rel_error;
    }
    if (!t.error.empty()) j["error"] = t.error.substr(0, 2000);
    j["compile_s"] = t.compile_s;
    j["bench_s"] = t.bench_s;
    std::lock_guard<std::mutex> lk(trials_out_->mu);
    trials_out_->out << j.dump() << '\n' << std::flush;
    if (!trials_out_->out) throw Error("cannot write the trial log " + o_.trials_out);
  }

  // One family's search on p within evals proposals and the deadline; returns the proposals made.
  size_t search(const Problem& p, int64_t pid, size_t fi, size_t evals,
                std::optional<Clock::time_point> deadline, ProblemResult& r) {
    const auto started = Clock::now();
    const Family& family = o_.families[fi];
    std::vector<Config> seeds;
    if (warm_) seeds = warm_->configs(family, p);
    auto strategy = make_strategy(o_.strategy, {family}, p, dev_, evals, o_.seed, seeds, deadline);
    std::deque<InFlight> queue;
    // However the search ends (its time, its space, a lost device's exception), the compiles still
    // queued are abandoned: those running finish on the pool (into the compiler's cache, where a
    // later family or problem may find them); those not started are skipped. Left queued, a
    // family's pool's worth of them (2 x threads + 2) ran before the next family's first compile:
    // on 16 cores, with threads, row-op problems at 4 s each got no trial at all (docs/SCALING.md).
    struct Abandon {
      std::deque<InFlight>& q;
      ~Abandon() {
        for (InFlight& job : q) job.cancel->store(true);
      }
    } abandon{queue};
    size_t issued = 0;
    // Adaptive strategies learn from each result: keep fewer proposals in flight so that they
    // see results sooner; list strategies keep the pool busier.
    const bool adaptive = o_.strategy != "exhaustive" && o_.strategy != "random";
    const size_t ahead = adaptive ? compiler_.threads() + 1 : 2 * compiler_.threads() + 2;
    bool exhausted = false;
    auto out_of_time = [&] { return deadline && Clock::now() >= *deadline; };
    for (;;) {
      // Keep the compile pool `ahead` configs in front of the GPU.
      while (!exhausted && queue.size() < ahead && issued < evals && !out_of_time()) {
        auto c = strategy->next();
        if (!c) {
          exhausted = true;
          break;
        }
        ++issued;
        Candidate cand{fi, c->config};
        InFlight job = prepare(cand, p, r);
        if (const auto done =
                store_.recorded_outcome(device_id_, pid, family.name(), job.template_hash, job.config_hash)) {
          // Measured by an earlier run: not again, but the strategy learns from it as before, so
          // a resumed search continues where the killed one was instead of starting blind.
          job.cancel->store(true); // its compile (a cubin not in the store) is not needed
          strategy->observe(*c, done->status, done->median_ms);
          ++r.skipped;
          if (done->status == TrialStatus::ok && (!best_ms_ || done->median_ms < *best_ms_)) best_ms_ = done->median_ms;
          continue;
        }
        job.strategy_cand = *c;
        queue.push_back(std::move(job));
      }
      if (queue.empty() || out_of_time()) break;
      // A compile still running may outlast the family's share (NVRTC takes seconds for a large
      // tile, longer when the pool is busy): wait for it no longer than the deadline, so that the
      // next family gets its time.
      if (deadline && queue.front().compiled.valid() &&
          queue.front().compiled.wait_until(*deadline) == std::future_status::timeout)
        break;
      InFlight job = std::move(queue.front());
      queue.pop_front();
      const TrialRecord t = evaluate(job, p, r);
      store_.record_trial(device_id_, pid, dev_.arch, t);
      log_trial(p, t);
      if (t.status == TrialStatus::crash || t.status == TrialStatus::timeout) check_device(t);
      strategy->observe(job.strategy_cand, t.status, t.timing.median_ms);
      ++r.by_status[t.status];
      if (t.status != TrialStatus::ok && r.first_failure.empty())
        r.first_failure = std::string(to_string(t.status)) + ", " + family.name() + " " + t.config_json + ": " +
                          (t.error.empty() ? "(no message)" : t.error);
      if (t.status == TrialStatus::ok && (!best_ms_ || t.timing.median_ms < *best_ms_)) {
        best_ms_ = t.timing.median_ms;
        best_family_ = family.name();
      }
      progress(p, family, r, issued - queue.size(), evals, deadline, started);
    }
    return issued;
  }

  // After a trial that killed its worker: whether the GPU still answers a fresh worker (two tries,
  // a new worker each). A kernel's fault leaves the device usable; a GPU that fell off the bus or
  // whose driver is wedged does not, and would otherwise record a crash for every config left.
  void check_device(const TrialRecord& t) {
    std::string why;
    for (int attempt = 0; attempt < 2; ++attempt) {
      const auto rep = worker_.request({{"op", "ping"}}, o_.timeout_s);
      if (rep.outcome == WorkerProcess::Outcome::replied && rep.body.value("status", "") == "ok") return;
      why = rep.outcome == WorkerProcess::Outcome::replied ? rep.body.value("error", "") : rep.detail;
    }
    throw DeviceLost("GPU " + std::to_string(ordinal_) + " (" + dev_.name + ") no longer answers after " +
                     to_string(t.status) + " of " + t.family + " " + t.config_json + ": " + why);
  }

  // p's one-time work in the worker (OpRunner::load) under load_timeout_s, before the first request
  // that would otherwise do it inside its own limit (p's baseline reading or first trial), and
  // again when the worker was restarted (a crash or a timeout leaves the next trial a fresh one). One that fails
  // is said once and not tried again for p: its trials then meet the same error (or the same
  // compile, under their own limit) as they would without it.
  void ensure_loaded(const Problem& p) {
    if (loaded_ == p.key() && (load_failed_ || (worker_.running() && worker_.starts() == loaded_starts_))) return;
    const auto rep = worker_.request({{"op", "load"}, {"problem", problem_to_json(p)}}, o_.load_timeout_s);
    loaded_ = p.key();
    loaded_starts_ = worker_.starts();
    load_failed_ = rep.outcome != WorkerProcess::Outcome::replied || rep.body.value("status", "") != "ok";
    if (load_failed_) {
      const std::string why = rep.outcome == WorkerProcess::Outcome::replied ? rep.body.value("error", "") : rep.detail;
      std::fprintf(stderr, "ktune: GPU %d: preparing the checks of %s failed: %s\n", ordinal_, p.key().c_str(), why.c_str());
    }
  }

  // The seed of the inputs every config of p and its baseline are timed on (each config's own seed
  // serves its served check): a kernel whose speed follows its data is compared on the same data.
  uint64_t timed_seed(const Problem& p) const { return o_.seed * 1000003 + std::hash<std::string>()(p.key()); }

  // The op's baseline library (cuBLAS for GEMM; none for an op without one), timed by the worker
  // with the full timing (no cutoff: that is for candidates) and recorded where it is faster than
  // `held` (or nothing is held); returns the faster of the two. A failed measurement is reported
  // and leaves `held`.
  std::optional<Timing> measure_baseline(const Problem& p, int64_t pid, const std::string& library,
                                         std::optional<Timing> held) {
    nlohmann::json req = {{"op", "baseline"}, {"problem", problem_to_json(p)}, {"seed", timed_seed(p)},
                          {"timing", timing_options_to_json(o_.timing)}};
    ensure_loaded(p);
    const auto rep = worker_.request(req, o_.timeout_s);
    if (rep.outcome != WorkerProcess::Outcome::replied || rep.body.value("status", "") != "ok") {
      const std::string why = rep.outcome == WorkerProcess::Outcome::replied ? rep.body.value("error", "") : rep.detail;
      std::fprintf(stderr, "ktune: %s baseline failed for %s: %s\n", library.c_str(), p.key().c_str(), why.c_str());
      return held;
    }
    const Timing t = timing_from_json(rep.body["timing"]);
    if (rep.body.contains("timing_s")) baseline_reading_s_ = rep.body["timing_s"].get<double>();
    if (held && held->median_ms <= t.median_ms) return held;
    store_.record_baseline(device_id_, pid, library, t, tflops(p, t.median_ms));
    return t;
  }

  // Once per device and problem: the stored reading, else a measurement.
  std::optional<Timing> baseline(const Problem& p, int64_t pid) {
    const std::string library = op_info(p.op).baseline;
    if (library.empty()) return std::nullopt;
    if (auto b = store_.baseline(device_id_, pid, library)) return b;
    return measure_baseline(p, pid, library, std::nullopt);
  }

  // The baseline once more after the problem's trials, the faster reading kept and stored. One
  // reading can be ~10 % slow (an H100 tune timed cuBLAS at 685 TFLOPS at bf16 2048x4096x4096 where
  // a bench within the hour measured 752-759), and a slow baseline inflates the lead the table
  // records for the tuned kernel, which the runtime trusts when it chooses between the two.
  std::optional<Timing> rebaseline(const Problem& p, int64_t pid, std::optional<Timing> first) {
    const std::string library = op_info(p.op).baseline;
    if (library.empty() || !first) return first;
    return measure_baseline(p, pid, library, first);
  }

  // Candidates more than 1.5x slower than the best so far get one timed repetition only, and
  // those more than 1.1x slower after min_reps repetitions no more (TimingOptions::race_ms).
  nlohmann::json timing_json() const {
    TimingOptions t = o_.timing;
    t.cutoff_ms = best_ms_ ? 1.5 * *best_ms_ : 0.0;
    t.race_ms = best_ms_ ? 1.1 * *best_ms_ : 0.0;
    return timing_options_to_json(t);
  }

  InFlight prepare(const Candidate& c, const Problem& p, ProblemResult& r) {
    const Family& f = o_.families[c.family];
    InFlight job;
    job.cand = c;
    job.config = c.config;
    job.config_hash = c.config.hash();
    job.template_hash = template_hash(f.source());
    job.compiled = load_or_compile({&store_}, compiler_, compile_request(f, c.config, p, dev_.arch), job.cancel);
    if (job.compiled.wait_for(std::chrono::seconds(0)) == std::future_status::ready) {
      // Ready at once: a cubin from the database (a compile cannot finish this fast, and an
      // NVRTC failure surfaces in evaluate()).
      try {
        job.ready = job.compiled.get();
        if (job.ready->from_cache) ++r.store_reused;
      } catch (...) {
        job.compiled = {};
        job.error = std::current_exception();
      }
    }
    return job;
  }

  TrialRecord evaluate(InFlight& job, const Problem& p, ProblemResult& r) {
    const Family& f = o_.families[job.cand.family];
    TrialRecord t;
    t.family = f.name();
    t.config_json = job.config.to_json();
    t.config_hash = job.config_hash;
    t.template_hash = job.template_hash;
    std::shared_ptr<const CompiledKernel> k = job.ready;
    try {
      if (job.error) std::rethrow_exception(job.error);
      if (!k) k = job.compiled.get();
      if (!k->from_cache) store_.put_binary(k->cache_key, dev_.arch, k->cubin, k->lowered_names);
    } catch (const CompileError& e) {
      t.status = TrialStatus::compile_error;
      t.error = e.log().substr(0, 4000);
      return t;
    }
    t.compile_s = k->compile_seconds;
    r.compile_s += t.compile_s;
    LaunchPlan plan;
    try {
      plan = f.launch_plan(job.config, p);
    } catch (const UsageError& e) { // this config's launch at this problem (a user kernel's round past a limit)
      t.status = TrialStatus::launch_error;
      t.error = std::string("the launch plan: ") + e.what();
      return t;
    }
    nlohmann::json req = {{"op", "eval"},
                          {"problem", problem_to_json(p)},
                          {"family", f.name()},
                          {"config", nlohmann::json::parse(t.config_json)},
                          {"seed", o_.seed * 1000003 + std::hash<std::string>()(t.config_hash)},
                          {"timed_seed", timed_seed(p)},
                          {"cubin", cubins_.put(*k)},
                          {"names", k->lowered_names},
                          {"plan", plan_to_json(plan)},
                          {"numerics", to_string(f.numerics())},
                          {"timing", timing_json()},
                          {"context", f.name() + " " + t.config_json + " on " + p.key()}};
    ensure_loaded(p);
    const auto t0 = Clock::now();
    const auto rep = worker_.request(req, o_.timeout_s);
    t.bench_s = seconds_since(t0);
    r.bench_s += t.bench_s;
    switch (rep.outcome) {
      case WorkerProcess::Outcome::timed_out:
        t.status = TrialStatus::timeout;
        t.error = rep.detail;
        return t;
      case WorkerProcess::Outcome::died:
        t.status = TrialStatus::crash;
        t.error = rep.detail;
        return t;
      case WorkerProcess::Outcome::replied: break;
    }
    const auto& b = rep.body;
    t.status = parse_trial_status(b.value("status", "launch_error"));
    t.error = b.value("error", "");
    t.registers = b.value("registers", 0);
    t.smem_bytes = b.value("smem", 0);
    t.spill_bytes = b.value("local", 0);
    t.rel_error = b.value("rel_error", -1.0);
    if (t.status == TrialStatus::ok) {
      t.timing = timing_from_json(b.at("timing"));
      t.tflops = tflops(p, t.timing.median_ms);
    }
    return t;
  }

  // "[3/20] gemm/f32/NN/...  gemm_skinny 12/100  best 9.1 TFLOPS (1.52x cuBLAS, gemm_skinny)  ETA 0:07"
  // done and evals count this family's proposals; the ETA is to the end of its share.
  void progress(const Problem& p, const Family& family, const ProblemResult& r, size_t done, size_t evals,
                std::optional<Clock::time_point> deadline, Clock::time_point started) {
    if (!o_.progress || o_.quiet) return;
    std::string best = "best -";
    if (best_ms_) {
      char buf[128];
      const OpInfo& op = op_info(p.op);
      best = "best " + rate_text(p, *best_ms_);
      if (r.cublas) {
        std::snprintf(buf, sizeof buf, " (%.2fx %s, %s)", r.cublas->median_ms / *best_ms_, op.baseline.c_str(), best_family_.c_str());
      } else {
        std::snprintf(buf, sizeof buf, " (%s)", best_family_.c_str());
      }
      best += buf;
    }
    double eta = done > 0 && evals != SIZE_MAX ? seconds_since(started) / double(done) * double(evals - done) : 0;
    if (deadline) eta = std::min(eta > 0 ? eta : 1e9, std::chrono::duration<double>(*deadline - Clock::now()).count());
    const std::string total = evals == SIZE_MAX ? "?" : std::to_string(evals);
    char text[1024], compact[256];
    std::snprintf(text, sizeof text, "[%zu/%zu] %s  %s %zu/%s  %s  ETA %s", index_ + 1, o_.problems.size(),
                  p.key().c_str(), family.name().c_str(), done, total.c_str(), best.c_str(),
                  fmt_duration(std::max(0.0, eta)).c_str());
    // Beside the other GPUs: which GPU, which problem, how far, the best so far.
    std::snprintf(compact, sizeof compact, "GPU %d [%zu/%zu] %s %zu/%s %s", ordinal_, index_ + 1, o_.problems.size(),
                  family.name().c_str(), done, total.c_str(), best_ms_ ? rate_text(p, *best_ms_).c_str() : "-");
    line_.set(slot_, text, compact);
  }

  const TuneOptions& o_;
  const DeviceInfo& dev_;
  int ordinal_;
  Store& store_;
  Compiler& compiler_;
  WorkerProcess& worker_;
  std::string loaded_; // the problem the worker last loaded (ensure_loaded)
  int loaded_starts_ = 0;
  bool load_failed_ = false;
  CubinDir& cubins_;
  const WarmStart* warm_; // null: no warm start
  SharedTrialLog* trials_out_;  // null: no trial log
  ProgressLine& line_;
  size_t slot_;
  int64_t device_id_;
  size_t index_;
  std::optional<double> best_ms_;
  std::optional<double> baseline_reading_s_; // the worker's time timing the baseline, when measured
  std::string best_family_ = "recorded";
};

// One GPU of the run: its worker and its own connection to the store.
struct Lane {
  int ordinal = 0;
  DeviceInfo info;
  std::unique_ptr<Store> store;
  int64_t device_id = 0;
  std::unique_ptr<WorkerProcess> worker;
  std::optional<WarmStart> warm;
};

} // namespace

std::vector<size_t> longest_first(const std::vector<Problem>& problems) {
  std::vector<double> est(problems.size());
  for (size_t i = 0; i < est.size(); ++i)
    est[i] = std::max(flops(problems[i]) / 500e12, min_bytes(problems[i]) / 3e12);
  std::vector<size_t> order(problems.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return est[a] > est[b]; });
  return order;
}

TuneResult tune(const TuneOptions& o) {
  if (o.families.empty()) throw UsageError("no family to tune");
  if (o.problems.empty()) throw UsageError("no problem to tune");
  if (o.worker_argv.empty()) throw UsageError("no worker command");
  const std::vector<int> ordinals = o.devices.empty() ? std::vector<int>{o.device} : o.devices;
  if (std::set<int>(ordinals.begin(), ordinals.end()).size() != ordinals.size())
    throw UsageError("a GPU is named twice in the run's devices");
  std::vector<DeviceInfo> infos;
  if (!o.device_infos.empty()) {
    if (o.device_infos.size() != ordinals.size())
      throw UsageError("device_infos describes " + std::to_string(o.device_infos.size()) + " GPUs for " +
                       std::to_string(ordinals.size()) + " devices");
    infos = o.device_infos;
  } else if (o.device_info && ordinals.size() == 1) {
    infos = {*o.device_info};
  } else {
    for (int d : ordinals) infos.push_back(device_by_ordinal(d));
  }
  // A table's entries are keyed by arch, and the runtime trusts them on every GPU of it: a run
  // that mixed an H100's and an H200's measurements in one problem's search would record a best
  // neither of them measured alone.
  if (!o.allow_mixed_devices)
    for (size_t i = 1; i < infos.size(); ++i)
      if (infos[i].name != infos[0].name)
        throw UsageError("the run's GPUs are of different models (GPU " + std::to_string(ordinals[0]) + ": " +
                         infos[0].name + ", GPU " + std::to_string(ordinals[i]) + ": " + infos[i].name +
                         "): tune each model in its own run, or allow mixing them (--allow-mixed-devices)");
  TuneResult result;
  result.device = infos[0];
  result.devices = infos;
  std::vector<Lane> lanes(ordinals.size());
  for (size_t i = 0; i < lanes.size(); ++i) {
    Lane& l = lanes[i];
    l.ordinal = ordinals[i];
    l.info = infos[i];
    l.store = std::make_unique<Store>(o.db_path); // WAL and a busy timeout: the GPUs write in turn
    l.device_id = l.store->device_id(l.info);
    std::vector<std::string> argv = o.worker_argv;
    argv.push_back("--device");
    argv.push_back(std::to_string(l.ordinal));
    l.worker = std::make_unique<WorkerProcess>(argv);
    // Read once for the whole run: every family of every problem draws its seeds from it.
    if (!o.warm_start.empty()) l.warm.emplace(o.warm_start, l.info);
  }
  // Declared before the Compiler, so that it outlives the compiles the Compiler's pool still runs.
  std::unique_ptr<CompileProcesses> compile_processes;
  if (!o.compile_argv.empty()) compile_processes = std::make_unique<CompileProcesses>(o.compile_argv, 0);
  auto compiler_owned = std::make_unique<Compiler>();
  Compiler& compiler = *compiler_owned;
  if (compile_processes)
    compiler.set_backend([&p = *compile_processes](const CompileRequest& r) { return p.compile(r); });
  CubinDir cubins;
  std::unique_ptr<SharedTrialLog> trials_out;
  if (!o.trials_out.empty()) {
    trials_out = std::make_unique<SharedTrialLog>();
    trials_out->out.open(o.trials_out, std::ios::app);
    if (!trials_out->out) throw UsageError("cannot open the trial log " + o.trials_out + " for appending");
  }
  ProgressLine line(lanes.size());
  const auto t0 = Clock::now();
  // The problems not yet taken, in order; a retired GPU's problem goes back to the front. With
  // several GPUs a problem some GPU already holds trials of (a resumed run) is left to that GPU,
  // where they count (trials are kept per device, so another GPU would measure them again): a
  // GPU takes its own first, then those nobody holds. A retired GPU's problems are anybody's.
  std::mutex mu;
  std::deque<size_t> todo;
  if (lanes.size() > 1) { // the longest first, so that no GPU is left with a long one at the end
    const std::vector<size_t> order = longest_first(o.problems);
    todo.assign(order.begin(), order.end());
  } else {
    for (size_t i = 0; i < o.problems.size(); ++i) todo.push_back(i);
  }
  std::vector<int> holder(o.problems.size(), -1); // lane index
  if (lanes.size() > 1)
    for (size_t i = 0; i < o.problems.size(); ++i) {
      int64_t most = 0;
      for (size_t li = 0; li < lanes.size(); ++li) {
        const int64_t n = lanes[li].store->count_trials(lanes[li].device_id, lanes[li].store->problem_id(o.problems[i]));
        if (n > most) most = n, holder[i] = int(li);
      }
    }
  auto take = [&](size_t li) -> std::optional<size_t> { // under mu
    for (int pass = 0; pass < 2; ++pass)
      for (auto it = todo.begin(); it != todo.end(); ++it)
        if (holder[*it] == (pass == 0 ? int(li) : -1)) {
          const size_t i = *it;
          todo.erase(it);
          return i;
        }
    return std::nullopt; // what is left is another GPU's
  };
  std::vector<bool> retired(lanes.size(), false);
  std::vector<std::optional<ProblemResult>> done(o.problems.size());
  std::exception_ptr failure; // the first error that is not a lost GPU: the run stops
  auto run_lane = [&](size_t li) {
    Lane& l = lanes[li];
    for (;;) {
      size_t i;
      {
        std::lock_guard<std::mutex> lk(mu);
        if (failure) return;
        const auto next = take(li);
        if (!next) return;
        i = *next;
      }
      try {
        ProblemTuner pt(o, l.info, l.ordinal, *l.store, compiler, *l.worker, cubins, l.warm ? &*l.warm : nullptr,
                        trials_out.get(), line, li, l.device_id, i);
        ProblemResult r = pt.run(o.problems[i]);
        r.device = l.ordinal;
        if (!o.quiet && !o.progress) {
          const std::string on = lanes.size() > 1 ? " on GPU " + std::to_string(l.ordinal) : "";
          if (r.best) {
            // Configs that failed beside the best: how many, and the first (a launch limit, a
            // kernel's own fault at some shapes) is worth a look without opening the database.
            int failed = 0;
            for (const auto& [status, n] : r.by_status) failed += status == TrialStatus::ok ? 0 : n;
            const std::string also =
                failed ? "; " + std::to_string(failed) + " config" + (failed > 1 ? "s" : "") + " failed, the first: " +
                             first_line(r.first_failure, 300)
                       : "";
            std::fprintf(stderr, "[%zu/%zu] %s done%s: best %s%s\n", i + 1, o.problems.size(), r.problem.key().c_str(),
                         on.c_str(), rate_text(r.problem, r.best->time_ms).c_str(), also.c_str());
          } else
            std::fprintf(stderr, "[%zu/%zu] %s done%s: no correct config%s%s\n", i + 1, o.problems.size(),
                         r.problem.key().c_str(), on.c_str(), r.first_failure.empty() ? "" : "; the first failure: ",
                         first_line(r.first_failure, 400).c_str());
        }
        std::lock_guard<std::mutex> lk(mu);
        done[i] = std::move(r);
      } catch (const DeviceLost& e) {
        std::lock_guard<std::mutex> lk(mu);
        const std::string why = std::string(e.what()) + "; retired" +
                                (lanes.size() > 1 ? ", " + o.problems[i].key() + " goes back to the other GPUs" : "");
        std::fprintf(stderr, "\nktune: %s\n", why.c_str());
        result.retired.push_back(why);
        retired[li] = true;
        for (int& h : holder) // i's among them, if this GPU held it
          if (h == int(li)) h = -1;
        todo.push_front(i);
        return;
      } catch (...) {
        std::lock_guard<std::mutex> lk(mu);
        if (!failure) failure = std::current_exception();
        return;
      }
    }
  };
  // Rounds: a GPU's round ends when nothing left is its to take; a GPU retired in a round leaves
  // its problems to the next round's GPUs.
  for (;;) {
    std::vector<size_t> live;
    for (size_t li = 0; li < lanes.size(); ++li)
      if (!retired[li]) live.push_back(li);
    const size_t before = todo.size(), retired_before = result.retired.size();
    if (todo.empty() || failure || live.empty()) break;
    if (live.size() == 1) {
      run_lane(live[0]);
    } else {
      std::vector<std::thread> threads;
      for (size_t li : live) threads.emplace_back(run_lane, li);
      for (auto& t : threads) t.join();
    }
    if (todo.size() == before && result.retired.size() == retired_before) break; // no progress (cannot happen)
  }
  if (failure) std::rethrow_exception(failure);
  if (!todo.empty())
    throw Error(std::string(result.retired.size() == lanes.size() ? "every GPU of the run was retired; "
                                                                   : "the run's GPUs stopped taking problems; ") +
                std::to_string(todo.size()) + " problem(s) not tuned (first: " + o.problems[todo.front()].key() + ")" +
                (result.retired.empty() ? "" : ": " + result.retired.back()));
  for (auto& r : done) {
    result.compile_s += r->compile_s;
    result.bench_s += r->bench_s;
    result.baseline_s += r->baseline_s;
    result.store_reused += r->store_reused;
    result.problems.push_back(std::move(*r));
  }
  result.wall_s = seconds_since(t0);
  for (const Lane& l : lanes) result.worker_restarts += l.worker->restarts();
  result.compiled = compiler.cache_size();
  result.compile_reused = compiler.cache_hits();
  if (o.leave_running_compiles) {
    compiler.drop_queued(); // nothing queued starts after the running ones
    if (compile_processes) compile_processes->close();
    // Never destroyed while compiles run: they write into the Compiler's cache and wait on its
    // processes until the caller ends the process (exit_leaving_compiles).
    if ((result.compiles_left_running = compiler.running())) {
      (void)compiler_owned.release();
      (void)compile_processes.release();
    }
  }
  return result;
}

void exit_leaving_compiles(int status) {
  std::cout.flush();
  std::fflush(stdout);
  std::fflush(stderr);
  kill_all_workers();
  std::_Exit(status);
}

std::string format_summary(const TuneResult& r) {
  std::string s;
  char buf[512];
  std::snprintf(buf, sizeof buf, "%s (%s, %d SMs)%s\n", r.device.name.c_str(), r.device.arch.c_str(), r.device.sm_count,
                r.devices.size() > 1 ? (" x " + std::to_string(r.devices.size())).c_str() : "");
  s += buf;
  std::snprintf(buf, sizeof buf, "%-34s %-46s %8s %6s %-16s  %s\n", "problem", "best config", "TFLOPS", "TB/s", "vs baseline",
                "trials (ok/compile/launch/wrong/timeout/crash, skipped)");
  s += buf;
  for (const auto& p : r.problems) {
    auto n = [&](TrialStatus st) {
      auto it = p.by_status.find(st);
      return it == p.by_status.end() ? 0 : it->second;
    };
    std::string cfg = p.best ? p.best->family + ":" + Config::from_json(p.best->config_json).short_string() : "-";
    if (cfg.size() > 46) cfg = cfg.substr(0, 43) + "...";
    // Bytes the problem must move over the best time: how the memory-bound ops are judged.
    const double tb_s = p.best && p.best->time_ms > 0 ? min_bytes(p.problem) / (p.best->time_ms * 1e-3) / 1e12 : 0.0;
    // The best's speed-up over the op's baseline (cuBLAS for GEMM, a spec's "baseline"); "-" where
    // there is none (the op has none in C++, or its measurement failed).
    char vs[48] = "-";
    if (p.best && p.cublas)
      std::snprintf(vs, sizeof vs, "%.3fx %s", p.cublas->median_ms / p.best->time_ms,
                    op_info(p.problem.op).baseline == "cublas" ? "cuBLAS" : op_info(p.problem.op).baseline.c_str());
    std::snprintf(buf, sizeof buf, "%-34s %-46s %8.2f %6.2f %-16s  %d/%d/%d/%d/%d/%d, %d\n", p.problem.key().c_str(),
                  cfg.c_str(), p.best ? p.best->tflops : 0.0, tb_s, vs, n(TrialStatus::ok),
                  n(TrialStatus::compile_error), n(TrialStatus::launch_error), n(TrialStatus::wrong_result),
                  n(TrialStatus::timeout), n(TrialStatus::crash), p.skipped);
    s += buf;
  }
  std::snprintf(buf, sizeof buf, "wall %.1f s; compile %.1f s (CPU, summed over the pool); benchmark %.1f s (GPU); worker restarts %d\n",
                r.wall_s, r.compile_s, r.bench_s, r.worker_restarts);
  s += buf;
  std::snprintf(buf, sizeof buf, "compiled %zu configs with NVRTC; %zu reused a compile from another problem; %zu cubins came from the database\n",
                r.compiled, r.compile_reused, r.store_reused);
  s += buf;
  if (r.devices.size() > 1) {
    std::map<int, int> per;
    for (const auto& p : r.problems) ++per[p.device];
    s += "problems per GPU:";
    for (const auto& [d, n] : per) s += " " + std::to_string(d) + ": " + std::to_string(n);
    s += "\n";
  }
  for (const auto& why : r.retired) s += "retired: " + why + "\n";
  return s;
}

} // namespace ktune
