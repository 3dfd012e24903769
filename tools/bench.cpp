#include "tools/bench.h"

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <vector>

#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "ktune/error.h"
#include "runtime/cuda_check.h"
#include "runtime/driver.h"
#include "tuner/gemm_op.h"
#include "tuner/op_runner.h"
#include "tuner/json_io.h"
#include "core/json_text.h"
#include "core/text_file.h"
#include "ktune/gemm_problem.h"

namespace ktune {
namespace {

struct Bench {
  // Untimed cuBLAS before a problem's timings, and the turns each timed series gets (run()).
  static constexpr double kHeatMs = 200;
  static constexpr int kRounds = 3;
  const BenchOptions& o;
  DeviceInfo dev;
  Runtime rt;
  Compiler compiler{1};
  // Declared before the buffers' owners so that the context outlives them.
  std::unique_ptr<CudaContext> ctx;
  std::unique_ptr<GemmOp> op;
  std::unique_ptr<Timer> timer;

  explicit Bench(const BenchOptions& opts) : o(opts), rt(opts.runtime) {
    dev = device_by_ordinal(o.runtime.device);
    ctx = std::make_unique<CudaContext>(dev.ordinal); // the primary context, shared with the runtime
    op = std::make_unique<GemmOp>(compiler, dev);
    timer = std::make_unique<Timer>(dev.l2_bytes);
  }

  // cuMemcpyDtoD of 256 MiB (or `bytes`), timed like a kernel: the bandwidth a memory-bound GEMM
  // or row op is held against, counting bytes read and written.
  double copy_tb_s(size_t bytes = size_t(256) << 20) { return timer->copy_tb_s(bytes, o.timing); }

  // The error rule a selection's kernel is held to: its family's numerics (cuBLAS: standard).
  static Numerics numerics_of(const Selection& s) {
    if (s.provenance == Provenance::cublas || s.family.empty()) return Numerics::standard;
    try {
      return find_family(s.family).numerics();
    } catch (const UsageError&) { // not a shipped family: judged as standard
      return Numerics::standard;
    }
  }

  // cuBLAS is not held to the gate's per-element rule (some of its half kernels round split-K
  // partials or the product to the output type: docs/TEMPLATES.md, "Verification"); where the
  // runtime hands a call to it, its result must be finite, leave C's padding alone and be within
  // 2x the norm bound.
  static bool baseline_acceptable(const VerifyResult& v) {
    return v.nonfinite == 0 && v.stray_writes == 0 && v.input_writes == 0 && v.guard_writes == 0 &&
           v.rel_error <= 2 * v.norm_bound;
  }

  // Verifies the runtime's choice for p (pinned: this selection instead) against FP64, then
  // times it and cuBLAS on the same inputs. The runtime's choice goes through gemm() as an
  // application calls it, so an untuned problem is measured at first use (the untimed first
  // launch) exactly as it would be there.
  BenchRow run(const std::string& name, const GemmProblem& p, const std::optional<Selection>& pinned, uint64_t seed) {
    BenchRow r;
    r.name = name;
    r.problem = p;
    try {
      op->prepare(p, seed);
      const KtuneGemmArgs a = op->args();
      auto launch_sel = [&](const Selection& s, CUstream st) { rt.gemm_ex(p, s, a.A, a.B, a.C, p.alpha, p.beta, st); };
      auto launch = [&](CUstream st) {
        if (pinned) launch_sel(*pinned, st);
        else rt.gemm_ex(p, a.A, a.B, a.C, p.alpha, p.beta, st);
      };
      launch(nullptr);
      check_cu(driver().cuStreamSynchronize(nullptr), "cuStreamSynchronize", "bench " + name);
      r.selection = pinned ? *pinned : rt.best_config(p);
      const VerifyResult v = op->verify(nullptr, numerics_of(r.selection));
      r.rel_error = v.rel_error;
      if (!v.pass && !(r.selection.provenance == Provenance::cublas && baseline_acceptable(v))) {
        r.error = "wrong result: " + v.summary();
        return r;
      }
      // A copy of the problem's own A+B+C bytes (half read, half written): what a memory-bound
      // (decode) row is held against besides the 256 MiB copy, since it pays the same launch and
      // ramp as a kernel of its size.
      r.same_size_copy_tb_s = copy_tb_s(size_t(GemmOp::min_bytes(p) / 2));
      // cuBLAS's own error on the same inputs, beside ktune's (the rule holds both).
      auto cublas = [&](CUstream st) { op->cublas().gemm(p, a, st); };
      op->reset_c(nullptr);
      cublas(nullptr);
      check_cu(driver().cuStreamSynchronize(nullptr), "cuStreamSynchronize", "bench " + name + " (cuBLAS)");
      r.cublas_rel_error = op->verify(nullptr).rel_error;
      // Where cuBLAS was chosen, ktune's own best kernel is timed too (the tuned one it beat, or
      // the fastest candidate first use measured), so that the report shows the kernels as well
      // as the dispatch; it must pass verification first.
      const Selection& sel = r.selection;
      std::optional<Selection> k;
      if (sel.provenance == Provenance::cublas) {
        if (sel.tuned && sel.time_ms && sel.candidates.empty()) {
          k = sel;
        } else {
          const CandidateConfig* best = nullptr;
          for (const auto& c : sel.candidates)
            if (c.measured_ms && (!best || *c.measured_ms < *best->measured_ms)) best = &c;
          if (best) {
            k = sel;
            k->family = best->family, k->config = best->config, k->tuned = best->tuned;
          }
        }
        if (k) {
          k->provenance = Provenance::exact;
          r.kernel_family = k->family;
          r.kernel_config = k->config;
          op->reset_c(nullptr);
          launch_sel(*k, nullptr);
          check_cu(driver().cuStreamSynchronize(nullptr), "cuStreamSynchronize", "bench " + name);
          if (!op->verify(nullptr, numerics_of(*k)).pass) k.reset();
        }
      }
      // Clocks drift while a heavy kernel runs for seconds: an H100 at 8192^3 bf16 measured the
      // same cuBLAS call 12 % apart, first against second, and with cuBLAS timed before and after
      // ktune (the earlier method) the runtime's choice, that same cuBLAS call, came out 0.93x
      // cuBLAS there (docs/runs/2026-11-25-h100-s15-final2-public-*.txt). So the GPU first runs
      // cuBLAS untimed for kHeatMs (clocks settle under this load), then every timed series gets
      // kRounds turns in rotated order (cuBLAS, ktune, kernel; ktune, kernel, cuBLAS; ...) and
      // keeps the median of its turns' medians: none is always first.
      TimingOptions heat = o.timing;
      heat.min_reps = 1, heat.max_reps = 1 << 20, heat.min_total_ms = kHeatMs, heat.max_total_ms = kHeatMs, heat.cutoff_ms = 0;
      timer->time(cublas, nullptr, heat);
      std::vector<std::function<void(CUstream)>> series = {cublas, launch};
      if (k) series.push_back([&](CUstream st) { launch_sel(*k, st); });
      std::vector<std::vector<double>> turns(series.size());
      for (int round = 0; round < kRounds; ++round)
        for (size_t j = 0; j < series.size(); ++j) {
          const size_t i = (j + size_t(round)) % series.size();
          turns[i].push_back(timer->time(series[i], nullptr, o.timing).median_ms);
        }
      r.cublas_ms = median(turns[0]);
      r.ktune_ms = median(turns[1]);
      if (sel.provenance != Provenance::cublas) r.kernel_ms = r.ktune_ms;
      else if (k) r.kernel_ms = median(turns[2]);
    } catch (const std::exception& e) {
      r.error = e.what();
    }
    return r;
  }
};

} // namespace


BandwidthReport bench_bandwidth(const std::vector<Problem>& problems, const BenchOptions& o) {
  Bench b(o);
  BandwidthReport rep;
  rep.copy_tb_s = b.copy_tb_s();
  std::map<std::string, std::unique_ptr<OpRunner>> runners;
  uint64_t seed = o.seed;
  for (const auto& p : problems) {
    BandwidthRow r;
    r.problem = p;
    try {
      auto& runner = runners[p.op];
      if (!runner) runner = make_op_runner(p.op, b.compiler, b.dev);
      runner->prepare(p, ++seed);
      runner->run_runtime(b.rt, nullptr); // first use compiles or loads the config
      const VerifyResult v = runner->verify(nullptr);
      r.rel_error = v.rel_error;
      r.selection = b.rt.best_config(p);
      if (!v.pass) {
        r.error = "wrong result: " + v.summary();
      } else {
        r.ms = b.timer->time([&](CUstream st) { runner->run_runtime(b.rt, st); }, nullptr, o.timing, "timing",
                             [&](CUstream st) { runner->restore(st); })
                   .median_ms;
        r.tb_s = min_bytes(p) / (r.ms * 1e-3) / 1e12;
        // A copy of the op's own bytes (half read, half written): small problems pay the same
        // launch and ramp as any kernel, which the 256 MiB copy hides.
        r.same_size_copy_tb_s = b.copy_tb_s(size_t(min_bytes(p) / 2));
      }
    } catch (const std::exception& e) {
      r.error = e.what();
    }
    rep.rows.push_back(std::move(r));
  }
  return rep;
}

std::string format_bandwidth(const BandwidthReport& rep, const std::string& device) {
  std::string s = device + "\n";
  char buf[512];
  std::snprintf(buf, sizeof buf, "device-to-device copy: %.3f TB/s (bytes read + written)\n", rep.copy_tb_s);
  s += buf;
  std::snprintf(buf, sizeof buf, "%-34s %10s %8s %6s %7s %9s  %s\n", "problem", "ms", "TB/s", "%copy", "%same", "err",
                "choice (TB/s = the op's minimum bytes over the median time; %copy against the copy above; "
                "%same against a copy of the op's own bytes)");
  s += buf;
  double log_sum = 0;
  int n = 0;
  for (const auto& r : rep.rows) {
    if (!r.error.empty()) {
      s += r.problem.key() + "  FAILED: " + r.error + "\n";
      continue;
    }
    const double frac = rep.copy_tb_s > 0 ? r.tb_s / rep.copy_tb_s : 0;
    const double same = r.same_size_copy_tb_s > 0 ? r.tb_s / r.same_size_copy_tb_s : 0;
    std::snprintf(buf, sizeof buf, "%-34s %10.4f %8.3f %5.1f%% %6.1f%% %9.2e  %s %s:%s\n", r.problem.key().c_str(), r.ms,
                  r.tb_s, 100 * frac, 100 * same, r.rel_error, to_string(r.selection.provenance), r.selection.family.c_str(),
                  r.selection.config.short_string().c_str());
    s += buf;
    if (frac > 0) log_sum += std::log(frac), ++n;
  }
  if (n) {
    std::snprintf(buf, sizeof buf, "geometric mean of %%copy: %.1f%% over %d rows\n", 100 * std::exp(log_sum / n), n);
    s += buf;
  }
  return s;
}

std::string bandwidth_json(const BandwidthReport& rep, const std::string& device, const std::string& command) {
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (const auto& r : rep.rows) {
    nlohmann::ordered_json j = {{"problem", r.problem.key()}, {"provenance", to_string(r.selection.provenance)},
                                {"family", r.selection.family}, {"config", nlohmann::ordered_json::parse(r.selection.config.size() ? r.selection.config.to_json() : "{}")},
                                {"ms", r.ms}, {"min_bytes", min_bytes(r.problem)}, {"tb_s", r.tb_s},
                                {"copy_fraction", rep.copy_tb_s > 0 ? r.tb_s / rep.copy_tb_s : 0},
                                {"same_size_copy_tb_s", r.same_size_copy_tb_s},
                                {"same_size_copy_fraction", r.same_size_copy_tb_s > 0 ? r.tb_s / r.same_size_copy_tb_s : 0},
                                {"rel_error", r.rel_error}};
    if (!r.error.empty()) j["error"] = r.error;
    rows.push_back(j);
  }
  nlohmann::ordered_json out = {{"device", device}, {"command", command}, {"copy_tb_s", rep.copy_tb_s}, {"rows", rows}};
  return out.dump(2) + "\n";
}

BenchReport bench_problems(const std::vector<GemmProblem>& problems, const BenchOptions& o) {
  Bench b(o);
  BenchReport rep;
  rep.copy_tb_s = b.copy_tb_s();
  uint64_t seed = o.seed;
  for (const auto& p : problems) rep.rows.push_back(b.run(p.key(), p, std::nullopt, ++seed));
  return rep;
}

BenchReport bench_ladder(const std::string& ladder_file, const BenchOptions& o) {
  const std::string text = read_text_file(ladder_file, "ladder file");
  check_json_depth(text, ladder_file);
  nlohmann::ordered_json j;
  try {
    j = nlohmann::ordered_json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw UsageError(ladder_file + ": not valid JSON: " + e.what());
  }
  const GemmProblem p = GemmProblem::from(problem_from_json(j.at("problem"), ladder_file + " problem"));
  Bench b(o);
  BenchReport rep;
  rep.copy_tb_s = b.copy_tb_s();
  uint64_t seed = o.seed;
  for (const auto& rung : j.at("rungs")) {
    const std::string name = rung.at("name").get<std::string>(), fam = rung.at("family").get<std::string>();
    std::optional<Selection> s;
    if (fam.empty()) {
      s = b.rt.best_config(p);
      if (s->provenance == Provenance::cublas) {
        if (!s->tuned) throw UsageError(ladder_file + ": rung '" + name + "' asks for the tuned kernel, but nothing is tuned for " + p.key());
        s->provenance = Provenance::exact; // the tuned kernel itself
      }
    } else {
      const Family f = find_family(fam);
      s.emplace();
      s->family = fam;
      s->config = f.canonical(Config::from_json(rung.at("config").dump()));
      s->provenance = Provenance::exact;
      s->source = ladder_file;
    }
    rep.rows.push_back(b.run(name, p, s, ++seed));
  }
  return rep;
}

double geomean_ratio(const std::vector<BenchRow>& rows, bool kernel_only) {
  double sum = 0;
  int n = 0;
  for (const auto& r : rows) {
    const double t = kernel_only ? r.kernel_ms : r.ktune_ms;
    if (!r.error.empty() || t <= 0 || r.cublas_ms <= 0) continue;
    sum += std::log(r.cublas_ms / t);
    ++n;
  }
  return n ? std::exp(sum / n) : 0;
}

// Bandwidth of a GEMM that took ms, counting its minimum bytes, as a fraction of the copy's.
double copy_fraction(const GemmProblem& p, double ms, double copy_tb_s) {
  return ms > 0 && copy_tb_s > 0 ? GemmOp::min_bytes(p) / (ms * 1e-3) / 1e12 / copy_tb_s : 0;
}

std::string format_bench(const BenchReport& rep, const std::string& device, bool ladder) {
  const auto& rows = rep.rows;
  std::string s = device + "\n";
  char buf[512];
  std::snprintf(buf, sizeof buf, "device-to-device copy: %.3f TB/s (bytes read + written)\n", rep.copy_tb_s);
  s += buf;
  std::snprintf(buf, sizeof buf, "%-34s %9s %9s %7s %9s %7s %6s %6s %8s %8s  %s\n", ladder ? "rung" : "problem", "ktune", "cuBLAS",
                "ratio", "kernel", "ratio", "%copy", "%same", "err", "cuBLASerr",
                "provenance (TFLOPS; ratio = cuBLAS time / ktune time; %copy = kernel's A+B+C bytes/s over the copy's; "
                "%same = the same over a copy of A+B+C's own bytes; "
                "err = relative error against FP64, ktune's choice and cuBLAS on the same inputs)");
  s += buf;
  for (const auto& r : rows) {
    if (!r.error.empty()) {
      std::snprintf(buf, sizeof buf, "%-34s FAILED: %s\n", r.name.c_str(), r.error.substr(0, 300).c_str());
    } else {
      const std::string chosen = std::string(to_string(r.selection.provenance)) +
                                 (r.selection.provenance == Provenance::cublas ? "" : " " + r.selection.family) +
                                 (r.selection.measured ? " (measured)" : "");
      if (r.kernel_ms > 0)
        std::snprintf(buf, sizeof buf, "%-34s %9.2f %9.2f %7.3f %9.2f %7.3f %5.1f%% %5.1f%% %8.2e %8.2e  %s\n", r.name.c_str(),
                      tflops(r.problem, r.ktune_ms), tflops(r.problem, r.cublas_ms), r.cublas_ms / r.ktune_ms,
                      tflops(r.problem, r.kernel_ms), r.cublas_ms / r.kernel_ms,
                      100 * copy_fraction(r.problem, r.kernel_ms, rep.copy_tb_s),
                      100 * copy_fraction(r.problem, r.kernel_ms, r.same_size_copy_tb_s), r.rel_error, r.cublas_rel_error,
                      chosen.c_str());
      else // no kernel was considered: cuBLAS alone
        std::snprintf(buf, sizeof buf, "%-34s %9.2f %9.2f %7.3f %9s %7s %6s %6s %8.2e %8.2e  %s\n", r.name.c_str(),
                      tflops(r.problem, r.ktune_ms), tflops(r.problem, r.cublas_ms), r.cublas_ms / r.ktune_ms, "-", "-",
                      "-", "-", r.rel_error, r.cublas_rel_error, chosen.c_str());
    }
    s += buf;
  }
  size_t with_kernel = 0, ok = 0, below = 0;
  double worst = 0;
  for (const auto& r : rows) {
    if (!r.error.empty() || r.ktune_ms <= 0) continue;
    ++ok;
    with_kernel += r.kernel_ms > 0;
    const double ratio = r.cublas_ms / r.ktune_ms;
    below += ratio < 0.97;
    worst = ok == 1 ? ratio : std::min(worst, ratio);
  }
  std::snprintf(buf, sizeof buf,
                "geometric mean of the ratios: %.3f (runtime's choice; lowest row %.3f, %zu below 0.97), %.3f (ktune kernels "
                "alone, %zu of %zu rows)\n",
                geomean_ratio(rows, false), worst, below, geomean_ratio(rows, true), with_kernel, ok);
  s += buf;
  return s;
}

std::string bench_json(const BenchReport& rep, const std::string& device, const std::string& command) {
  const auto& rows = rep.rows;
  nlohmann::ordered_json out;
  out["device"] = device;
  out["command"] = command;
  out["copy_tb_s"] = rep.copy_tb_s;
  nlohmann::ordered_json arr = nlohmann::ordered_json::array();
  for (const auto& r : rows) {
    nlohmann::ordered_json j;
    j["name"] = r.name;
    j["problem"] = r.problem.key();
    j["provenance"] = to_string(r.selection.provenance);
    j["family"] = r.selection.family;
    j["measured"] = r.selection.measured;
    j["why"] = r.selection.why;
    if (!r.kernel_family.empty()) {
      j["kernel_family"] = r.kernel_family;
      j["kernel_config"] = nlohmann::ordered_json::parse(r.kernel_config.to_json());
    }
    // What first use timed at an untuned problem: which candidate won the kernel column, and by
    // how much (the neighbour rules are judged from these).
    if (!r.selection.candidates.empty()) {
      nlohmann::ordered_json cands = nlohmann::ordered_json::array();
      for (const auto& c : r.selection.candidates) {
        nlohmann::ordered_json cj = {{"family", c.family}, {"config", nlohmann::ordered_json::parse(c.config.to_json())},
                                     {"neighbour", c.neighbour}};
        if (c.measured_ms) cj["measured_ms"] = *c.measured_ms;
        cands.push_back(cj);
      }
      j["candidates"] = cands;
    }
    j["config"] = nlohmann::ordered_json::parse(r.selection.config.size() ? r.selection.config.to_json() : "{}");
    if (!r.error.empty()) j["error"] = r.error;
    j["ktune_ms"] = r.ktune_ms;
    j["kernel_ms"] = r.kernel_ms;
    j["cublas_ms"] = r.cublas_ms;
    j["ktune_tflops"] = tflops(r.problem, r.ktune_ms);
    j["kernel_tflops"] = tflops(r.problem, r.kernel_ms);
    j["cublas_tflops"] = tflops(r.problem, r.cublas_ms);
    j["ratio"] = r.ktune_ms > 0 ? r.cublas_ms / r.ktune_ms : 0;
    j["kernel_ratio"] = r.kernel_ms > 0 ? r.cublas_ms / r.kernel_ms : 0;
    j["min_bytes"] = GemmOp::min_bytes(r.problem);
    j["kernel_tb_s"] = r.kernel_ms > 0 ? GemmOp::min_bytes(r.problem) / (r.kernel_ms * 1e-3) / 1e12 : 0;
    j["kernel_copy_fraction"] = copy_fraction(r.problem, r.kernel_ms, rep.copy_tb_s);
    j["cublas_copy_fraction"] = copy_fraction(r.problem, r.cublas_ms, rep.copy_tb_s);
    j["same_size_copy_tb_s"] = r.same_size_copy_tb_s;
    j["kernel_same_size_copy_fraction"] = copy_fraction(r.problem, r.kernel_ms, r.same_size_copy_tb_s);
    j["cublas_same_size_copy_fraction"] = copy_fraction(r.problem, r.cublas_ms, r.same_size_copy_tb_s);
    j["rel_error"] = r.rel_error;
    j["cublas_rel_error"] = r.cublas_rel_error;
    j["tolerance"] = GemmOp::tolerance(r.problem);
    arr.push_back(j);
  }
  out["rows"] = arr;
  out["geomean_ratio"] = geomean_ratio(rows, false);
  out["geomean_kernel_ratio"] = geomean_ratio(rows, true);
  return out.dump(2) + "\n";
}

} // namespace ktune
