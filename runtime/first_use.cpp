// First use of a problem nobody tuned: its candidates (lenders, their neighbours, family defaults)
// compiled side by side and timed on the caller's stream and inputs, with L2 cold as the tuner
// times, against cuBLAS for GEMM (the winner timed twice and checked against cuBLAS's result
// before it serves) or against each other for the row ops; once per problem, never inside a
// stream capture.
#include <algorithm>
#include <cstdio>
#include <tuple>

#include "gemm/gemm_families.h"
#include "ktune/error.h"
#include "runtime/agreement.h"
#include "runtime/cuda_check.h"
#include "runtime/driver.h"
#include "core/kernel_spec.h"
#include "runtime/buffers_launch.h"
#include "runtime/gemm_launch.h"
#include "runtime/rows_launch.h"
#include "runtime/runtime_impl.h"
#include "runtime/timing.h"

namespace ktune {

// Time of one run of f on stream: the median over 5 batches of back-to-back runs, each batch
// preceded by an untimed run that keeps the GPU busy while the host queues the timed ones, so
// that neither the host's launch overhead (cuBLAS's is several microseconds) nor an idle GPU at
// the first event counts, as it would not where the application queues its work ahead. A
// batch is about 2 ms of GPU time (1 to 50 runs).
double Runtime::Impl::time_on(CUstream stream, const std::function<void()>& f, const std::string& what,
                              const std::function<void()>& before) {
  CUevent e0 = nullptr, e1 = nullptr;
  check_cu(driver().cuEventCreate(&e0, CU_EVENT_DEFAULT), "cuEventCreate", what);
  std::unique_ptr<CUevent_st, void (*)(CUevent)> g0(e0, [](CUevent e) { driver().cuEventDestroy(e); });
  check_cu(driver().cuEventCreate(&e1, CU_EVENT_DEFAULT), "cuEventCreate", what);
  std::unique_ptr<CUevent_st, void (*)(CUevent)> g1(e1, [](CUevent e) { driver().cuEventDestroy(e); });
  auto batch = [&](int runs) {
    if (before) before();
    f(); // untimed: the GPU works on it while the timed runs are queued
    if (before) before();
    check_cu(driver().cuEventRecord(e0, stream), "cuEventRecord", what);
    for (int i = 0; i < runs; ++i) f();
    check_cu(driver().cuEventRecord(e1, stream), "cuEventRecord", what);
    check_cu(driver().cuEventSynchronize(e1), "cuEventSynchronize", what);
    float ms = 0;
    check_cu(driver().cuEventElapsedTime(&ms, e0, e1), "cuEventElapsedTime", what);
    return double(ms) / runs;
  };
  const double first = batch(1); // also loads whatever the first call loads
  const int runs = before ? 1 : std::clamp(int(2.0 / std::max(first, 1e-3)), 1, 50);
  std::vector<double> t;
  for (int i = 0; i < 5; ++i) t.push_back(batch(runs));
  std::nth_element(t.begin(), t.begin() + 2, t.end());
  return t[2];
}

Runtime::Impl::FirstUseClock Runtime::Impl::first_use_clock(CUstream stream) const {
  FirstUseClock c;
  c.stream = stream;
  try {
    c.cold = std::make_unique<Timer>(device.l2_bytes);
  } catch (const CudaError& e) {
    c.note = std::string("; timed back to back, L2 warm (no memory for the L2 flush: ") + e.what() + ")";
  }
  return c;
}

// One run of f with L2 cold, as the tuner and ktune bench time kernels (runtime/timing.h): L2
// flushed before each run and the stream held while the run is queued; the median of 7 runs after
// an untimed one. Back-to-back runs (time_on) keep operands that fit in L2 resident: an H100 timed
// the f16 decode kernel 1x4096x4096 (32 MB of B, 50 MB of L2) at 1.24x cuBLAS that way and at
// 0.94x with L2 flushed, and an application's weights are not in L2 when its GEMM runs.
double Runtime::Impl::FirstUseClock::operator()(const std::function<void()>& f, const std::string& what) const {
  if (!cold) return time_on(stream, f, what, before);
  TimingOptions o;
  o.warmup = 1, o.min_reps = 7, o.max_reps = 7, o.min_total_ms = 0, o.max_total_ms = 1e9, o.launch_lead_us = 100;
  std::function<void(CUstream)> b;
  if (before) b = [this](CUstream) { before(); };
  return cold->time([&](CUstream) { f(); }, stream, o, what, b).median_ms;
}

// Times every candidate at p (compiled side by side first) and returns the fastest that ran;
// each that ran gets its measured_ms, each that did not a line in `failed`.
std::optional<size_t> Runtime::Impl::time_candidates(const Problem& p, std::vector<CandidateConfig>& cands,
                                                     const FirstUseClock& clock, const CandidateRun& run,
                                                     std::vector<std::string>& failed) {
  std::vector<std::function<std::shared_ptr<Module>()>> mods(cands.size());
  for (size_t i = 0; i < cands.size(); ++i) {
    try {
      const Family& f = *family(cands[i].family);
      mods[i] = module_async(f, f.canonical(cands[i].config), p);
    } catch (const Error& e) {
      failed.push_back(cands[i].family + ": " + e.what());
    }
  }
  std::optional<size_t> best;
  for (size_t i = 0; i < cands.size(); ++i) {
    if (!mods[i]) continue;
    CandidateConfig& c = cands[i];
    try {
      const auto mod = mods[i]();
      const Family& f = *family(c.family);
      const auto launch = run(c, *mod, f.launch_plan(f.canonical(c.config), p), failed);
      if (!launch) continue;
      c.measured_ms = clock(*launch, "timing " + c.family + " " + c.config.to_json() + " at " + p.key());
      if (!best || *c.measured_ms < *cands[*best].measured_ms) best = i;
    } catch (const CompileError& e) {
      failed.push_back(c.family + " " + c.config.to_json() + ": does not compile");
    }
  }
  return best;
}

// "" when launch (one run of a candidate into `out`) agrees with cuBLAS at p on a's inputs, else
// why not (runtime/agreement.h). Both write into a zeroed C, so beta's term is 0 and the result is
// alpha A B alone. Costs two launches and two copies of C to the host, once per problem.
std::string Runtime::Impl::agreement_with_cublas(const GemmProblem& p, const KtuneGemmArgs& a, const DeviceBuffer& out,
                                                 const std::function<void()>& launch, CUstream stream) {
  const size_t bytes = out.bytes();
  const auto fetch = [&](const std::function<void()>& f, std::vector<unsigned char>& host) {
    check_cu(driver().cuMemsetD8Async(out.ptr(), 0, bytes, stream), "cuMemsetD8Async", "scratch C at " + p.key());
    f();
    host.resize(bytes);
    check_cu(driver().cuStreamSynchronize(stream), "cuStreamSynchronize", "checking a candidate at " + p.key());
    check_cu(driver().cuMemcpyDtoH(host.data(), out.ptr(), bytes), "cuMemcpyDtoH", "scratch C at " + p.key());
  };
  std::vector<unsigned char> ref, got;
  try {
    fetch([&] { run_cublas(p, a, stream); }, ref);
    fetch(launch, got);
  } catch (const std::bad_alloc&) {
    return "could not be checked against cuBLAS here (no host memory for two copies of C)";
  }
  return output_disagreement(p, ref, got);
}

// The stream's workspace of `bytes` for candidate c at first use; null, with the reason in left_out,
// when it cannot be allocated: that candidate is left out, not the caller's call.
std::shared_ptr<DeviceBuffer> Runtime::Impl::candidate_workspace(CUstream stream, size_t bytes, const std::string& key,
                                                                 const CandidateConfig& c,
                                                                 std::vector<std::string>& left_out) {
  try {
    return workspace(stream, bytes, key);
  } catch (const Error& e) {
    left_out.push_back(c.family + " " + c.config.to_json() + ": its " + std::to_string(bytes) +
                       "-byte workspace could not be allocated (" + e.what() + ")");
    return nullptr;
  }
}

// First use of an untuned problem: time every candidate and cuBLAS at p on the caller's stream
// (after whatever it already holds, so A and B are ready), into a scratch C, and keep the
// fastest. A candidate that fails to compile or launch is left out with its reason in `why`.
Selection Runtime::Impl::measure(const GemmProblem& p, Selection s, const void* A, const void* B, CUstream stream) {
  std::vector<std::string> failed;
  const size_t bytes = size_t(p.m) * size_t(p.eff_ldc()) * size_t(element_bytes(p.dtype));
  DeviceBuffer scratch;
  try {
    scratch = DeviceBuffer(bytes, "scratch C for measuring candidates at " + p.key());
  } catch (const CudaError& e) {
    return unmeasured(std::move(s), std::string("no memory for a scratch C (") + e.what() + "), not measured");
  }
  // Zero bits are 0.0 in every dtype: a beta != 0 candidate reads finite values.
  check_cu(driver().cuMemsetD8Async(scratch.ptr(), 0, bytes, stream), "cuMemsetD8Async", "scratch C at " + p.key());
  KtuneGemmArgs a =
      gemm_args(p, static_cast<const float*>(A), static_cast<const float*>(B), scratch.as<float>(), nullptr);
  const FirstUseClock clock = first_use_clock(stream);
  s.measured_cublas_ms = clock([&] { run_cublas(p, a, stream); }, "timing cuBLAS at " + p.key());
  const CandidateRun run = [&](const CandidateConfig& c, Module& mod, const LaunchPlan& plan,
                               std::vector<std::string>& left_out) -> std::optional<std::function<void()>> {
    KtuneGemmArgs ca = a;
    if (plan.workspace_bytes) {
      // A lent config's workspace may not fit beside the caller's data (gemm_wgmma_tf32x3's
      // split copies are twice A and B): such a candidate is left out, not the caller's error.
      const auto ws = candidate_workspace(stream, plan.workspace_bytes, p.key(), c, left_out);
      if (!ws) return std::nullopt;
      ca.workspace = ws->as<float>();
    }
    return [&mod, plan, ca, stream] { launch_gemm(mod, plan, ca, stream); };
  };
  const auto best = time_candidates(p, s.candidates, clock, run, failed);
  // cuBLAS again, after the candidates, and the faster reading kept (as ktune tune does for its
  // baseline): what is timed first at first use can read several % slow (at 4096x4096x1024 on an
  // H100, cuBLAS 55.6 us first against 51.1 in the bench that followed, where the kernel chosen
  // over it ran 53.5; docs/runs/performance-log-2026-11.md, "cuBLAS timed twice at first use"), and a
  // slow cuBLAS reading is what could make the runtime choose a kernel slower than cuBLAS.
  s.measured_cublas_ms =
      std::min(*s.measured_cublas_ms, clock([&] { run_cublas(p, a, stream); }, "timing cuBLAS again at " + p.key()));
  const double cu = *s.measured_cublas_ms;
  const auto kernel_wins = [&] { return best && *s.candidates[*best].measured_ms < cu * (1 - opts.measure_margin); };
  // A kernel that beats cuBLAS must do it twice: the winner is timed again, last, and its slower
  // reading counts. A form that reads fast in first use's short series and slower later (at
  // 777x3584x18944 on an H100 one did, by 5-15 %; docs/runs/performance-log-2026-11.md, "the swapped
  // tiling's persistent multicast form") would otherwise be trusted on one reading.
  //
  // A config lent from another shape was verified there, not here: before it serves p, its
  // result at p must agree with cuBLAS's on the same inputs (a problem nobody tuned must never
  // get a wrong kernel). Where that cannot be checked, cuBLAS serves.
  std::string disagreement;
  if (kernel_wins()) {
    CandidateConfig& c = s.candidates[*best];
    const Family& f = *family(c.family);
    const Config cc = f.canonical(c.config);
    std::vector<std::string> unused;
    const auto mod = module_async(f, cc, p)(); // loaded when it was timed
    const auto launch = run(c, *mod, f.launch_plan(cc, p), unused);
    if (launch)
      c.measured_ms = std::max(
          *c.measured_ms, clock(*launch, "timing " + c.family + " " + c.config.to_json() + " again at " + p.key()));
    if (kernel_wins()) {
      disagreement = launch ? agreement_with_cublas(p, a, scratch, *launch, stream)
                            : std::string("its launch could not be set up again");
      if (!disagreement.empty()) disagreement = c.family + " " + c.config.to_json() + " " + disagreement;
    }
  }
  s.measure_pending = false;
  s.measured = true;
  if (kernel_wins() && disagreement.empty()) {
    const CandidateConfig& c = s.candidates[*best];
    s.family = c.family, s.config = c.config, s.source = c.source, s.distance = c.distance,
    s.generalized = c.generalized, s.time_ms = c.time_ms, s.cublas_ms = c.cublas_ms;
    s.tuned = c.tuned.empty() ? std::nullopt : std::optional<std::string>(c.tuned);
    if (s.provenance == Provenance::cublas) s.provenance = Provenance::nearest;
    s.why = "measured here at first use: " + c.family +
            fmt(" %.4f ms, cuBLAS %.4f ms (%.2fx)", *c.measured_ms, cu, cu / *c.measured_ms);
  } else if (kernel_wins()) {
    s.provenance = Provenance::cublas;
    s.why = "measured here at first use: cuBLAS " + fmt("%.4f ms", cu) + ", the faster " + disagreement;
  } else {
    s.provenance = Provenance::cublas;
    s.why = "measured here at first use: cuBLAS " + fmt("%.4f ms", cu) +
            (best ? ", best candidate " + s.candidates[*best].family +
                        fmt(" %.4f ms (%.2fx; a kernel must win by %.0f %%)", *s.candidates[*best].measured_ms,
                            cu / *s.candidates[*best].measured_ms, 100 * opts.measure_margin)
                  : std::string(", no candidate ran"));
  }
  if (!failed.empty()) s.why += "; left out: " + failed.front();
  s.why += clock.note;
  return s;
}

// First use of an untuned row-op problem: every candidate timed on the caller's x (and weight,
// bias) into a scratch y (y may alias x), the fastest kept. Nothing to compare against: the
// measurement only picks among kernels.
Selection Runtime::Impl::measure_rows(const Problem& p, Selection s, const void* x, const void* weight,
                                      const void* bias, CUstream stream) {
  std::vector<std::string> failed;
  const size_t bytes =
      size_t(p.dims[0] - 1) * size_t(p.ld[1]) * element_bytes(p.dtype) + size_t(p.dims[1]) * element_bytes(p.dtype);
  DeviceBuffer scratch;
  try {
    scratch = DeviceBuffer(bytes, "scratch y for measuring candidates at " + p.key());
  } catch (const CudaError& e) {
    s.measure_pending = false;
    s.why += std::string("; not measured: no memory for a scratch y (") + e.what() + ")";
    return s;
  }
  const KtuneRowsArgs a = rows_args(p, x, reinterpret_cast<void*>(scratch.ptr()), weight, bias);
  const FirstUseClock clock = first_use_clock(stream);
  const auto best = time_candidates(
      p, s.candidates, clock,
      [&](const CandidateConfig&, Module& mod, const LaunchPlan& plan,
          std::vector<std::string>&) -> std::optional<std::function<void()>> {
        return [&mod, plan, a, stream] { launch_rows(mod, plan, a, stream); };
      },
      failed);
  return measured_choice(std::move(s), best, failed, clock);
}

Selection Runtime::Impl::measured_choice(Selection s, std::optional<size_t> best, const std::vector<std::string>& failed,
                                         const FirstUseClock& clock) const {
  s.measure_pending = false;
  if (best) {
    s.measured = true;
    const CandidateConfig& c = s.candidates[*best];
    adopt(s, c);
    if (c.source == "default") s.tuned.reset();
    s.provenance = c.source == "default" ? Provenance::default_config : Provenance::nearest;
    std::string all;
    for (const auto& k : s.candidates)
      if (k.measured_ms) all += (all.empty() ? "" : ", ") + k.family + fmt(" %.4f", *k.measured_ms);
    // A neighbour (Family::neighbors_of) carries its source's provenance: the why says whose.
    const std::string origin = c.source == "default" ? c.family + "'s default" : c.family + " tuned for " + c.tuned;
    s.why = "measured here at first use: " + (c.neighbour ? "a neighbour of " + origin : origin) +
            fmt(" %.4f ms, the fastest of %.0f (", *c.measured_ms, double(s.candidates.size())) + all + " ms)";
  } else {
    s.why += "; no candidate ran at first use";
  }
  if (!failed.empty()) s.why += "; left out: " + failed.front();
  s.why += clock.note;
  return s;
}

// An op of plain buffers: the candidates write scratch outputs, since the caller's may alias an
// input (out = x), which repeated launches would change.
Selection Runtime::Impl::measure_buffers(const Problem& p, Selection s, const std::vector<void*>& buffers,
                                         CUstream stream) {
  const OpInfo& info = op_info(p.op);
  std::vector<const void*> ptrs(buffers.begin(), buffers.end());
  std::vector<DeviceBuffer> scratch;
  // The candidates write scratch copies: the caller's outputs are written once, by the choice, and
  // a user's kernel's inout buffers (updated in place) start from the caller's data: those it
  // restores (SpecArg::restore) before every run, the others once.
  std::vector<size_t> inout, restored;
  if (info.spec) {
    size_t k = 0;
    for (const SpecArg& a : info.spec->args)
      if (a.caller_passes() && a.buffer) {
        if (a.intent == SpecArg::inout) inout.push_back(k);
        if (a.intent == SpecArg::inout && a.restore) restored.push_back(k);
        ++k;
      }
  }
  std::vector<std::tuple<CUdeviceptr, CUdeviceptr, size_t, std::string>> restores; // to, from, bytes, name
  try {
    for (size_t i = 0; i < info.operands.size() && i < ptrs.size(); ++i) {
      const bool copy = std::find(inout.begin(), inout.end(), i) != inout.end();
      if (!info.operands[i].output && !copy) continue;
      const size_t bytes = std::max<size_t>(1, size_t(operand_elements(p, i)) * size_t(operand_element_bytes(p, i)));
      scratch.emplace_back(bytes, "scratch " + info.operands[i].name + " for measuring candidates at " + p.key());
      if (copy)
        check_cu(driver().cuMemcpyDtoDAsync(scratch.back().ptr(), reinterpret_cast<CUdeviceptr>(ptrs[i]), bytes, stream),
                 "cuMemcpyDtoDAsync", "copying " + info.operands[i].name + " for measuring candidates at " + p.key());
      if (std::find(restored.begin(), restored.end(), i) != restored.end())
        restores.emplace_back(scratch.back().ptr(), reinterpret_cast<CUdeviceptr>(ptrs[i]), bytes, info.operands[i].name);
      ptrs[i] = reinterpret_cast<const void*>(scratch.back().ptr());
    }
  } catch (const CudaError& e) {
    s.measure_pending = false;
    s.why += std::string("; not measured: no memory for scratch outputs (") + e.what() + ")";
    return s;
  }
  BufferArgs a(p, ptrs);
  std::vector<std::string> failed;
  FirstUseClock clock = first_use_clock(stream);
  if (!restores.empty())
    clock.before = [&restores, &p, stream] {
      for (const auto& [to, from, bytes, name] : restores)
        check_cu(driver().cuMemcpyDtoDAsync(to, from, bytes, stream), "cuMemcpyDtoDAsync",
                 "putting " + name + " back as the caller passed it before a timed run at " + p.key());
    };
  const auto best = time_candidates(
      p, s.candidates, clock,
      [&](const CandidateConfig& c, Module& mod, const LaunchPlan& plan,
          std::vector<std::string>& left_out) -> std::optional<std::function<void()>> {
        if (!plan.workspace_bytes) return [&mod, plan, &a, stream] { launch_buffers(mod, plan, a, stream); };
        // The plan's workspace (attention_decode's split partials, a user kernel's temporaries,
        // whose size may follow the config): the stream's, as served.
        const auto ws = candidate_workspace(stream, plan.workspace_bytes, p.key(), c, left_out);
        if (!ws) return std::nullopt;
        auto args = std::make_shared<BufferArgs>(p, ptrs, ws->ptr());
        return [&mod, plan, args, ws, stream] { launch_buffers(mod, plan, *args, stream); };
      },
      failed);
  return measured_choice(std::move(s), best, failed, clock);
}

// The choice for the problem of `key` as its launch makes it: measured on first use where the
// selection asks for it, once (another thread may have measured it meanwhile), and never on a
// stream being captured: nothing can be timed (or waited for) there, `captured` decides, and the
// next call outside a capture measures.
Selection Runtime::Impl::resolve_first_use(const std::string& key, CUstream stream,
                                           const std::function<Selection()>& current,
                                           const std::function<Selection(Selection)>& captured,
                                           const std::function<Selection(Selection)>& measure_it) {
  Selection s = current();
  if (!s.measure_pending) return s;
  std::lock_guard<std::mutex> lk(measure_mu);
  s = current();
  if (!s.measure_pending) return s;
  CUstreamCaptureStatus cap = CU_STREAM_CAPTURE_STATUS_NONE;
  check_cu(driver().cuStreamIsCapturing(stream, &cap), "cuStreamIsCapturing", "first use of " + key);
  if (cap != CU_STREAM_CAPTURE_STATUS_NONE) return captured(std::move(s));
  s = measure_it(std::move(s));
  std::lock_guard<std::mutex> sl(sel_mu);
  selections[key] = s;
  return s;
}

// gemm(): a capture runs the prediction (unmeasured: a lender only where predicted clearly
// faster than cuBLAS).
Selection Runtime::Impl::resolve(const GemmProblem& p, const void* A, const void* B, CUstream stream,
                                 const Runtime& rt) {
  return resolve_first_use(
      p.key(), stream, [&] { return rt.best_config(p); },
      [&](Selection s) { return unmeasured(std::move(s), "stream being captured, not measured"); },
      [&](Selection s) { return measure(p, std::move(s), A, B, stream); });
}

// rows(): a capture leaves the selection pending (the caller runs its first candidate).
Selection Runtime::Impl::resolve_rows(const Problem& p, const void* x, const void* weight, const void* bias,
                                      CUstream stream, const Runtime& rt) {
  return resolve_first_use(
      p.key(), stream, [&] { return rt.best_config(p); }, [](Selection s) { return s; },
      [&](Selection s) { return measure_rows(p, std::move(s), x, weight, bias, stream); });
}

// run() of an op of plain buffers: as rows().
Selection Runtime::Impl::resolve_buffers(const Problem& p, const std::vector<void*>& buffers, CUstream stream,
                                         const Runtime& rt) {
  // Measured with the caller's problem and buffers, kept for the problem that serves it.
  return resolve_first_use(
      serving_key(p), stream, [&] { return rt.best_config(p); }, [](Selection s) { return s; },
      [&](Selection s) { return measure_buffers(p, std::move(s), buffers, stream); });
}

} // namespace ktune
