#include "ktune/runtime.h"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>
#include <mutex>
#include <unordered_map>

#include "db/store.h"
#include "db/lending.h"
#include "db/table.h"
#include "gemm/gemm_families.h"
#include "jit/load_or_compile.h"
#include "ktune/compiler.h"
#include "ktune/device.h"
#include "ktune/error.h"
#include "runtime/cuda_check.h"
#include "runtime/driver.h"
#include "core/embedded.h"
#include "runtime/gemm_launch.h"
#include "runtime/module.h"
#include "runtime/rows_launch.h"
#include "runtime/agreement.h"
#include "runtime/cublas.h"
#include "runtime/l2_flush.h"
#include "ktune/gemm_problem.h"

namespace ktune {

const char* to_string(Provenance p) {
  switch (p) {
    case Provenance::exact: return "exact";
    case Provenance::nearest: return "nearest";
    case Provenance::default_config: return "default";
    case Provenance::cublas: return "cublas";
  }
  return "?";
}

namespace {

// The launch-ready form of a selection for one problem: cached per problem key.
struct Prepared {
  Selection sel;
  std::shared_ptr<Module> module; // null when the selection is cuBLAS
  LaunchPlan plan;
};

CandidateConfig candidate_of(const Lent& l) {
  CandidateConfig c;
  c.family = l.from->entry.family;
  c.config = l.config;
  c.source = l.from->source;
  c.tuned = l.from->entry.problem.key();
  c.distance = l.distance;
  c.home_ratio = l.home_ratio;
  c.score = l.score;
  c.generalized = l.generalized;
  c.time_ms = l.from->entry.time_ms;
  c.cublas_ms = l.from->entry.cublas_ms;
  return c;
}

std::string fmt(const char* f, double a, double b = 0, double c = 0) {
  char buf[160];
  std::snprintf(buf, sizeof buf, f, a, b, c);
  return buf;
}

// s runs candidate c: its config and what was recorded at the problem it was tuned for.
void adopt(Selection& s, const CandidateConfig& c) {
  s.family = c.family;
  s.config = c.config;
  s.source = c.source;
  if (!c.tuned.empty()) s.tuned = c.tuned;
  s.distance = c.distance;
  s.generalized = c.generalized;
  s.time_ms = c.time_ms, s.cublas_ms = c.cublas_ms; // recorded at the lender's own problem
}

// Most candidates first use measures: each costs a compile (once per process) and a few launches.
constexpr size_t kMaxCandidates = 4;
constexpr size_t kCandidatesPerFamily = 2;
// Beside the lenders, the neighbours (Family::neighbors_of) of each family's best-scored lender,
// where the family declares some: its config with the choices that most often decide a shape it
// was not tuned for (gemm_wgmma: the tiling that fills the shape's waves best, TMA multicast for
// short K, a persistent grid with stream-K of the last wave; gemm_skinny16: the streaming form
// with the K split refitted). At the untuned shapes of session 13 the last wgmma forms ran
// 1.16-1.3x the lent configs themselves (3072^3: PT 0 SK 3; 5000x3000x1000: MC; docs/PERFORMANCE.md,
// "Shapes in no table"). They carry no prediction of their own, so they are only ever chosen by
// first use's measurement. Nine a family: past a wave gemm_wgmma offers two retiled forms in each
// orientation before the lender's own MC and stream-K forms, and with seven 3072^3 lost the
// stream-K ones that ran fastest there (docs/PERFORMANCE.md, session 19). Each costs a compile (in
// parallel) and a few launches at the first call only.
constexpr size_t kMaxNeighbours = 9;
// Row ops: the nearest lender of each family and each family's default (five families an op).
constexpr size_t kMaxRowCandidates = 8;

} // namespace

struct Runtime::Impl {
  RuntimeOptions opts;
  std::string arch;
  DeviceInfo device; // limits used for validity: the real device when there is one
  std::unique_ptr<Store> store;
  std::mutex store_mu; // the store's and the cubin cache's connections serve one thread at a time
  // The cubin cache (RuntimeOptions::cubin_cache), opened on first need; closed for good after a
  // failure, which is reported once.
  std::unique_ptr<Store> cubins;
  bool cubins_opened = false;
  std::unique_ptr<TunedIndex> index;

  // Process-wide caches of this runtime; each behind its own mutex.
  mutable std::mutex sel_mu;
  mutable std::unordered_map<std::string, Selection> selections; // measured choices replace predictions
  std::mutex mod_mu;
  std::unordered_map<std::string, std::shared_ptr<Module>> modules; // compile cache key -> module
  std::unordered_map<std::string, std::shared_ptr<Prepared>> prepared; // by problem key (+ selection)
  std::mutex ws_mu;
  std::map<CUstream, std::shared_ptr<DeviceBuffer>> workspaces;
  std::mutex gpu_mu; // context creation, cuBLAS handle (not safe for concurrent use)
  std::mutex measure_mu; // one first-use measurement at a time: concurrent ones would skew each other
  std::unique_ptr<CudaContext> ctx;
  std::unique_ptr<Cublas> cublas;
  std::unique_ptr<Compiler> compiler;

  const Family* family(const std::string& name) const { return index->family(name); }

  void add(Table t, const std::string& source, SourceTier tier) {
    // An entry that passed only an older verification gate (core/trial.h) was never checked
    // under the conditions it would be served in (alpha, beta, least-aligned pointers): not
    // served. Said once per source, with the way out.
    const auto older = std::stable_partition(t.entries.begin(), t.entries.end(),
                                             [](const TableEntry& e) { return e.gate >= kGateVersion; });
    if (const size_t n = size_t(t.entries.end() - older)) {
      std::fprintf(stderr,
                   "ktune: %zu entr%s of %s passed only an older verification gate (%d; this ktune's is %d) and %s not "
                   "served (first: %s %s); re-run `ktune tune` on %s to verify %s again\n",
                   n, n == 1 ? "y" : "ies", source.c_str(), older->gate, kGateVersion, n == 1 ? "is" : "are",
                   older->problem.key().c_str(), older->family.c_str(), n == 1 ? "its problem" : "their problems",
                   n == 1 ? "it" : "them");
      t.entries.erase(older, t.entries.end());
    }
    std::vector<std::string> skipped;
    index->add(t, source, tier, &skipped);
    // A database or table written by another ktune may hold entries this one cannot run: say so
    // once per source and go on without them.
    if (!skipped.empty())
      std::fprintf(stderr, "ktune: skipped %zu invalid entr%s of %s (first: %s)\n", skipped.size(),
                   skipped.size() == 1 ? "y" : "ies", source.c_str(), skipped.front().c_str());
  }

  Selection from_exact(const Lent& l) const {
    const TableEntry& e = l.from->entry;
    Selection s;
    s.provenance = Provenance::exact;
    s.family = e.family;
    s.config = l.config;
    s.generalized = l.generalized;
    s.source = l.from->source;
    s.tuned = e.problem.key();
    s.time_ms = e.time_ms;
    s.cublas_ms = e.cublas_ms;
    // The kernel must have beaten cuBLAS by the margin first use demands (measure_margin): a
    // recorded lead smaller than that is within the noise of two timings taken minutes apart (an
    // H100 tune recorded gemm_wgmma 1.8 % ahead at f16 2048x4096x4096 where a bench of the same
    // day measured it 13 % behind), and cuBLAS is the promise.
    if (s.cublas_ms && *s.time_ms >= *s.cublas_ms * (1.0 - opts.measure_margin)) {
      s.provenance = Provenance::cublas;
      s.why = (*s.cublas_ms < *s.time_ms ? "tuned for this problem, but cuBLAS was faster there"
                                         : "tuned for this problem, but not faster than cuBLAS there by the margin") +
              fmt(" (%.4f ms against %.4f ms, margin %.0f %%)", *s.cublas_ms, *s.time_ms, 100 * opts.measure_margin);
    } else {
      s.why = "tuned for this problem" +
              (s.cublas_ms ? fmt(" (%.4f ms, cuBLAS %.4f ms)", *s.time_ms, *s.cublas_ms) : std::string());
      // Recorded on another device model of this arch, by a lead that may not carry over: the
      // entry's config is timed against cuBLAS here at first use (one candidate).
      const std::string& there = l.from->device_name;
      if (s.cublas_ms && opts.arch.empty() /* a real device, not a nominal one */ && !there.empty() && there != device.name &&
          *s.cublas_ms < *s.time_ms * kTrustOtherDevice && opts.measure_untuned) {
        s.candidates.push_back(candidate_of(l));
        s.measure_pending = true;
        s.why = "tuned for this problem on " + there + fmt(" (%.2fx cuBLAS there)", *s.cublas_ms / *s.time_ms) +
                ": timed against cuBLAS on " + device.name + " at first use";
      }
    }
    return s;
  }

  // Appends to cands (lenders, best score first) the neighbours of the first lender of each family
  // that has any, those valid for p and not already there, up to kMaxNeighbours a family. Each
  // keeps its lender's provenance (source, tuned problem, distance) but no score or recorded
  // times: those were measured for the lender's config, not for this one. Every family, not only
  // the best-scored one: at decode shapes gemm_skinny16 and gemm_wgmma both lend, and when the
  // decode family came first its neighbours alone cost 32x6144x4096 the swapped wgmma form that
  // was its fastest kernel (66.2 against 68.9 TFLOPS; docs/PERFORMANCE.md, session 22).
  void add_neighbours(std::vector<CandidateConfig>& cands, const Problem& p) const {
    std::set<std::string> done;
    const size_t lenders = cands.size();
    for (size_t i = 0; i < lenders; ++i) {
      if (!done.insert(cands[i].family).second) continue; // the family's best lender only
      const Family* f = family(cands[i].family);
      if (!f) continue;
      const std::vector<Config> near = f->neighbors_of(cands[i].config, p, device);
      const CandidateConfig lender = cands[i];
      size_t added = 0;
      for (const Config& n : near) {
        if (added == kMaxNeighbours) break;
        if (!f->valid(n, p, device)) continue;
        const bool seen = std::any_of(cands.begin(), cands.end(), [&](const CandidateConfig& c) {
          return c.family == lender.family && c.config == n;
        });
        if (seen) continue;
        CandidateConfig d = lender;
        d.config = n;
        d.neighbour = true;
        d.score = 0;
        d.home_ratio = 1;
        d.time_ms.reset();
        d.cublas_ms.reset();
        cands.push_back(std::move(d));
        ++added;
      }
    }
  }

  // The choice before any measurement at p.
  Selection select(const GemmProblem& p) const {
    // tf32 names a compute mode (RuntimeOptions::tf32x3), not what A, B and C hold.
    if (p.dtype == DType::tf32)
      throw UsageError("no kernel family can serve " + p.key() + ": tf32 is not a storage type (f32 problems opt in to the "
                       "tensor cores with RuntimeOptions::tf32x3)");
    if (const auto ex = index->exact(p); !ex.empty()) return from_exact(ex.front());
    Selection s;
    s.provenance = Provenance::cublas;
    for (const Lent& l : index->lenders(p, kCandidatesPerFamily)) {
      if (l.score < kMeasureFloor || s.candidates.size() == kMaxCandidates) continue;
      s.candidates.push_back(candidate_of(l));
    }
    add_neighbours(s.candidates, p);
    if (s.candidates.empty() && !index->has_group(p)) {
      // Nothing of this dtype is tuned on this arch (a GPU nobody tuned): the families' defaults
      // are the only kernels there are, and first use measures them against cuBLAS like lenders.
      for (const auto& f : index->families()) {
        if (!f.has_default() || f.op() != "gemm") continue;
        Config c = f.default_config(p, device);
        if (!f.valid(c, p, device)) continue;
        CandidateConfig d;
        d.family = f.name();
        d.config = std::move(c);
        d.source = "default";
        s.candidates.push_back(std::move(d));
        if (s.candidates.size() == kCandidatesPerFamily) break;
      }
      if (!s.candidates.empty()) s.provenance = Provenance::default_config;
    }
    if (s.candidates.empty()) {
      const auto all = index->lenders(p, 1);
      s.why = all.empty() ? "no tuned config can serve this problem: cuBLAS"
                          : "no tuned config is predicted within reach of cuBLAS here (best: " + all.front().from->entry.family +
                                " tuned for " + all.front().from->entry.problem.key() +
                                fmt(", %.2fx cuBLAS there, log distance %.2f, predicted %.2fx here): cuBLAS",
                                    all.front().home_ratio, all.front().distance, all.front().score);
      return s;
    }
    if (s.provenance == Provenance::cublas) s.provenance = Provenance::nearest;
    const CandidateConfig& top = s.candidates.front();
    adopt(s, top);
    s.measure_pending = true;
    s.why = top.tuned.empty()
                ? "nothing of this dtype is tuned here: " + std::to_string(s.candidates.size()) +
                      " family default(s) to time against cuBLAS at first use"
                : std::to_string(s.candidates.size()) + " candidate(s) to time against cuBLAS at first use (best predicted: " +
                      top.family + " tuned for " + top.tuned +
                      fmt(", %.2fx cuBLAS there, %.2fx predicted here)", top.home_ratio, top.score);
    if (!opts.measure_untuned) return unmeasured(std::move(s), "measuring is off");
    return s;
  }

  // An op without a baseline library (the row ops): its exact entry, else candidates timed against
  // each other at first use: the nearest lender of each family that serves p (best ranked first;
  // home speedups are unknown, so the score ranks by distance) and each family's default that is
  // valid for p. Which family wins moves with the row length (on the H100 a bulk config lent from
  // 16384x4096 ran a row op at 8192x2048 at 71 % of the copy rate where the one-warp-per-row
  // default reaches 98 %: docs/PERFORMANCE.md, "Row ops at shapes no table holds"), so distance
  // alone is not a rule worth trusting. Until measured, the first candidate runs.
  Selection select_generic(const Problem& p) const {
    if (const auto ex = index->exact(p); !ex.empty()) return from_exact(ex.front());
    Selection s;
    std::set<std::string> seen; // family + config: a default equal to a lender is offered once
    for (const Lent& l : index->lenders(p, 1)) {
      if (s.candidates.size() == kMaxRowCandidates) break;
      CandidateConfig c = candidate_of(l);
      if (seen.insert(c.family + c.config.to_json()).second) s.candidates.push_back(std::move(c));
    }
    const bool lent = !s.candidates.empty();
    for (const auto& f : index->families()) {
      if (s.candidates.size() == kMaxRowCandidates) break;
      if (f.op() != p.op || !f.has_default()) continue;
      Config c = f.default_config(p, device);
      if (!f.valid(c, p, device) || !seen.insert(f.name() + f.canonical(c).to_json()).second) continue;
      CandidateConfig d;
      d.family = f.name();
      d.config = f.canonical(c);
      d.source = "default";
      s.candidates.push_back(std::move(d));
    }
    if (s.candidates.empty()) throw UsageError("no kernel family can serve " + p.key());
    s.provenance = lent ? Provenance::nearest : Provenance::default_config;
    adopt(s, s.candidates.front());
    s.measure_pending = s.candidates.size() > 1 && opts.measure_untuned;
    const std::string first = lent ? "nearest tuned problem " + *s.tuned + fmt(" (log distance %.2f)", s.distance)
                                   : "nothing of this op and dtype is tuned near: " + s.family + "'s default";
    s.why = s.measure_pending ? std::to_string(s.candidates.size()) +
                                    " candidates (lenders and family defaults) to time at first use; until then " + first
                              : first;
    return s;
  }

  // Where no measurement can be made: the best lender only if predicted clearly faster.
  static Selection unmeasured(Selection s, const std::string& reason) {
    s.measure_pending = false;
    // An exact entry waiting for its first-use check (recorded on another device, kTrustOtherDevice)
    // runs as recorded, as it did before that check existed.
    if (s.provenance == Provenance::exact) {
      s.why = reason + ": the tuned entry as recorded" +
              (s.cublas_ms && s.time_ms ? fmt(" (%.2fx cuBLAS there)", *s.cublas_ms / *s.time_ms) : std::string());
      return s;
    }
    if (s.candidates.empty() || s.candidates.front().score < kTrustUnmeasured) {
      s.provenance = Provenance::cublas;
      s.why = reason + ": cuBLAS, since no candidate is predicted " + fmt("%.2fx", kTrustUnmeasured) +
              " faster than cuBLAS" + (s.candidates.empty() ? "" : fmt(" (best %.2fx)", s.candidates.front().score));
    } else {
      s.why = reason + ": " + s.family + fmt(" predicted %.2fx cuBLAS", s.candidates.front().score);
    }
    return s;
  }

  // The device's primary context, created once and made current on the calling thread when it
  // has none (an application thread that never touched CUDA may call gemm()).
  void ensure_context() {
    if (device.ordinal < 0) throw Error("ktune::Runtime::gemm: this runtime was made for arch " + arch + " without a GPU");
    {
      std::lock_guard<std::mutex> lk(gpu_mu);
      if (!ctx) ctx = std::make_unique<CudaContext>(device.ordinal);
    }
    CUcontext cur = nullptr;
    check_cu(driver().cuCtxGetCurrent(&cur), "cuCtxGetCurrent", "ktune::gemm");
    if (!cur) ctx->make_current();
  }

  Compiler& the_compiler() {
    std::lock_guard<std::mutex> lk(gpu_mu);
    // A few threads: first use of an untuned problem compiles its candidates side by side.
    if (!compiler) compiler = std::make_unique<Compiler>(unsigned(kMaxCandidates + kMaxNeighbours));
    return *compiler;
  }

  // The cubin cache, opened (created) on the first call; null when there is none or it failed.
  // Call with store_mu held.
  Store* cubin_cache() {
    if (!cubins_opened) {
      cubins_opened = true;
      if (!opts.cubin_cache.empty()) {
        try {
          cubins = std::make_unique<Store>(opts.cubin_cache);
          // A put runs inside a gemm() call: it does not wait out another process's long write
          // (ktune cache --clear's VACUUM) but fails, which closes the cache for this runtime.
          cubins->set_busy_timeout(1000);
          // Its writes (a kept cubin, a load's use stamp) run inside gemm(): no flush to disk
          // each (a lost stamp or cubin after a power cut only costs a compile).
          cubins->set_durable(false);
        } catch (const Error& e) {
          std::fprintf(stderr, "ktune: cubin cache %s not used (%s): kernels compile in every process\n", opts.cubin_cache.c_str(),
                       e.what());
        }
      }
    }
    return cubins.get();
  }
  // A write to the cache failed: reported once, and the cache is closed for this runtime.
  void close_cubin_cache(const Error& e) {
    std::fprintf(stderr, "ktune: cubin cache %s not written (%s): no longer used by this runtime\n", opts.cubin_cache.c_str(),
                 e.what());
    cubins.reset();
  }
  // Keeps a cubin NVRTC made for later processes (the cache's first failure closes it).
  void keep_cubin(const CompiledKernel& k) {
    std::lock_guard<std::mutex> lk(store_mu);
    stamp_loaded();
    Store* cache = cubin_cache();
    if (!cache) return;
    try {
      cache->put_binary(k.cache_key, arch, k.cubin, k.lowered_names);
      // Past the limit, the least recently used cubins go, down to 3/4 of it: a trim every
      // quarter of the limit's worth of new kernels, not at every put.
      if (opts.cubin_cache_max_mb > 0) {
        const int64_t limit = opts.cubin_cache_max_mb * 1000000;
        cache->trim_binaries(limit, limit / 4 * 3);
      }
    } catch (const Error& e) {
      close_cubin_cache(e);
    }
  }

  // A cubin loaded from the cache is stamped as used, so that trims keep it over older ones (an
  // entry of the tuner's store is not in the cache: nothing changes). The stamps wait for the next
  // write (a kept cubin) or the Runtime's end and go in one transaction: a write each on the load
  // path cost ~0.4 ms a kernel (bf16 first use from the cache, 9 kernels: 38-39 ms against 35;
  // H100 machine, docs/PERFORMANCE.md "Runtime cost"). Call with store_mu held.
  std::vector<std::string> unstamped;
  void stamp_loaded() {
    Store* cache = cubin_cache();
    if (!cache || unstamped.empty()) return;
    try {
      cache->touch_binaries(unstamped);
    } catch (const Error& e) {
      close_cubin_cache(e);
    }
    unstamped.clear();
  }
  void loaded_from_cache(const std::string& key) {
    std::lock_guard<std::mutex> lk(store_mu);
    unstamped.push_back(key);
  }
  ~Impl() {
    std::lock_guard<std::mutex> lk(store_mu);
    stamp_loaded();
  }

  // The loaded module of config c of family f for p: the runtime's cache, else the store's
  // binaries or the cubin cache's, else NVRTC (started asynchronously: call get() on the result;
  // what NVRTC made goes into the cubin cache). A cached cubin the driver refuses (a damaged
  // file) is compiled again.
  std::function<std::shared_ptr<Module>()> module_async(const Family& f, const Config& c, const Problem& p) {
    const CompileRequest req = compile_request(f, c, p, arch); // validates c for p
    const std::string ck = req.cache_key();
    {
      std::lock_guard<std::mutex> lk(mod_mu);
      if (auto it = modules.find(ck); it != modules.end()) return [mod = it->second] { return mod; };
    }
    auto fut = [&] {
      std::lock_guard<std::mutex> lk(store_mu);
      return std::make_shared<std::future<std::shared_ptr<const CompiledKernel>>>(
          load_or_compile({store.get(), cubin_cache()}, the_compiler(), req));
    }();
    return [this, fut, ck, req] {
      auto k = fut->get();
      std::shared_ptr<Module> mod;
      try {
        mod = std::make_shared<Module>(k->cubin, k->lowered_names, req.context);
      } catch (const Error& e) {
        if (!k->from_cache) throw;
        std::fprintf(stderr, "ktune: a cached cubin of %s did not load (%s): compiling it again\n", req.context.c_str(), e.what());
        k = the_compiler().compile(req);
        mod = std::make_shared<Module>(k->cubin, k->lowered_names, req.context);
      }
      if (k->from_cache) loaded_from_cache(ck);
      else keep_cubin(*k);
      std::lock_guard<std::mutex> lk(mod_mu);
      return modules.emplace(ck, mod).first->second;
    };
  }

  std::shared_ptr<DeviceBuffer> workspace(CUstream stream, size_t bytes, const GemmProblem& p) {
    // One workspace per stream: launches on one stream are ordered, so they may share it.
    std::lock_guard<std::mutex> lk(ws_mu);
    auto& slot = workspaces[stream];
    if (!slot || slot->bytes() < bytes)
      slot = std::make_shared<DeviceBuffer>(bytes, "workspace (split-K sums, packed operands) for " + p.key());
    return slot;
  }

  // cuBLAS as the runtime serves and times it: through a kept cuBLASLt plan (Cublas::serve), with
  // the stream's workspace.
  void run_cublas(const GemmProblem& p, const KtuneGemmArgs& a, CUstream stream) {
    const std::shared_ptr<DeviceBuffer> ws = workspace(stream, Cublas::kServeWorkspaceBytes, p);
    std::lock_guard<std::mutex> lk(gpu_mu);
    if (!cublas) cublas = std::make_unique<Cublas>();
    cublas->serve(p, a, stream, ws->as<void>());
  }
  // C = beta * C (BLAS's quick returns): cublasGemmEx / Sgemm with alpha = 0, no plan kept for it.
  void scale_with_cublas(const GemmProblem& p, const KtuneGemmArgs& a, CUstream stream) {
    std::lock_guard<std::mutex> lk(gpu_mu);
    if (!cublas) cublas = std::make_unique<Cublas>();
    cublas->gemm(p, a, stream);
  }

  // Time of one run of f on stream: the median over 5 batches of back-to-back runs, each batch
  // preceded by an untimed run that keeps the GPU busy while the host queues the timed ones, so
  // that neither the host's launch overhead (cuBLAS's is several microseconds) nor an idle GPU at
  // the first event counts, as it would not where the application queues its work ahead. A
  // batch is about 2 ms of GPU time (1 to 50 runs).
  static double time_on(CUstream stream, const std::function<void()>& f, const std::string& what) {
    CUevent e0 = nullptr, e1 = nullptr;
    check_cu(driver().cuEventCreate(&e0, CU_EVENT_DEFAULT), "cuEventCreate", what);
    std::unique_ptr<CUevent_st, void (*)(CUevent)> g0(e0, [](CUevent e) { driver().cuEventDestroy(e); });
    check_cu(driver().cuEventCreate(&e1, CU_EVENT_DEFAULT), "cuEventCreate", what);
    std::unique_ptr<CUevent_st, void (*)(CUevent)> g1(e1, [](CUevent e) { driver().cuEventDestroy(e); });
    auto batch = [&](int runs) {
      f(); // untimed: the GPU works on it while the timed runs are queued
      check_cu(driver().cuEventRecord(e0, stream), "cuEventRecord", what);
      for (int i = 0; i < runs; ++i) f();
      check_cu(driver().cuEventRecord(e1, stream), "cuEventRecord", what);
      check_cu(driver().cuEventSynchronize(e1), "cuEventSynchronize", what);
      float ms = 0;
      check_cu(driver().cuEventElapsedTime(&ms, e0, e1), "cuEventElapsedTime", what);
      return double(ms) / runs;
    };
    const double first = batch(1); // also loads whatever the first call loads
    const int runs = std::clamp(int(2.0 / std::max(first, 1e-3)), 1, 50);
    std::vector<double> t;
    for (int i = 0; i < 5; ++i) t.push_back(batch(runs));
    std::nth_element(t.begin(), t.begin() + 2, t.end());
    return t[2];
  }

  // Time of one run of f on stream with L2 cold, as the tuner and ktune bench time kernels: L2 is
  // flushed before each run and the stream held while the run is queued (runtime/l2_flush.h); the
  // median of 7 runs after an untimed one. Back-to-back runs (time_on) keep operands that fit in
  // L2 resident: an H100 timed the f16 decode kernel 1x4096x4096 (32 MB of B, 50 MB of L2) at
  // 1.24x cuBLAS that way and at 0.94x with L2 flushed, and an application's weights are not in
  // L2 when its GEMM runs.
  static double time_cold(L2Flusher& cold, CUstream stream, const std::function<void()>& f, const std::string& what) {
    CUevent e0 = nullptr, e1 = nullptr;
    check_cu(driver().cuEventCreate(&e0, CU_EVENT_DEFAULT), "cuEventCreate", what);
    std::unique_ptr<CUevent_st, void (*)(CUevent)> g0(e0, [](CUevent e) { driver().cuEventDestroy(e); });
    check_cu(driver().cuEventCreate(&e1, CU_EVENT_DEFAULT), "cuEventCreate", what);
    std::unique_ptr<CUevent_st, void (*)(CUevent)> g1(e1, [](CUevent e) { driver().cuEventDestroy(e); });
    f(); // untimed: loads whatever the first call loads
    std::vector<double> t;
    for (int i = 0; i < 7; ++i) {
      cold.flush(stream);
      cold.delay(stream, 100);
      check_cu(driver().cuEventRecord(e0, stream), "cuEventRecord", what);
      f();
      check_cu(driver().cuEventRecord(e1, stream), "cuEventRecord", what);
      check_cu(driver().cuEventSynchronize(e1), "cuEventSynchronize", what);
      float ms = 0;
      check_cu(driver().cuEventElapsedTime(&ms, e0, e1), "cuEventElapsedTime", what);
      t.push_back(ms);
    }
    std::nth_element(t.begin(), t.begin() + 3, t.end());
    return t[3];
  }

  // What times a launch at first use: L2 cold where the flush buffer (twice the L2) can be had
  // (time_cold), back to back with L2 warm otherwise (time_on, saying so in `note`).
  struct FirstUseClock {
    std::unique_ptr<L2Flusher> cold;
    std::string note;
    CUstream stream = nullptr;
    double operator()(const std::function<void()>& f, const std::string& what) const {
      return cold ? time_cold(*cold, stream, f, what) : time_on(stream, f, what);
    }
  };
  FirstUseClock first_use_clock(CUstream stream) const {
    FirstUseClock c;
    c.stream = stream;
    try {
      c.cold = std::make_unique<L2Flusher>(device.l2_bytes);
    } catch (const CudaError& e) {
      c.note = std::string("; timed back to back, L2 warm (no memory for the L2 flush: ") + e.what() + ")";
    }
    return c;
  }

  // Given a candidate, its module and plan: the launch to time, or nullopt (with the reason added
  // to `failed`) when it cannot run here.
  using CandidateRun = std::function<std::optional<std::function<void()>>(const CandidateConfig&, Module&, const LaunchPlan&,
                                                                          std::vector<std::string>& failed)>;

  // Times every candidate at p (compiled side by side first) and returns the fastest that ran;
  // each that ran gets its measured_ms, each that did not a line in `failed`.
  std::optional<size_t> time_candidates(const Problem& p, std::vector<CandidateConfig>& cands, const FirstUseClock& clock,
                                        const CandidateRun& run, std::vector<std::string>& failed) {
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
  std::string agreement_with_cublas(const GemmProblem& p, const KtuneGemmArgs& a, const DeviceBuffer& out,
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

  // First use of an untuned problem: time every candidate and cuBLAS at p on the caller's stream
  // (after whatever it already holds, so A and B are ready), into a scratch C, and keep the
  // fastest. A candidate that fails to compile or launch is left out with its reason in `why`.
  Selection measure(const GemmProblem& p, Selection s, const void* A, const void* B, CUstream stream) {
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
    KtuneGemmArgs a = gemm_args(p, static_cast<const float*>(A), static_cast<const float*>(B), scratch.as<float>(), nullptr);
    const FirstUseClock clock = first_use_clock(stream);
    s.measured_cublas_ms = clock([&] { run_cublas(p, a, stream); }, "timing cuBLAS at " + p.key());
    const CandidateRun run = [&](const CandidateConfig& c, Module& mod, const LaunchPlan& plan,
                                 std::vector<std::string>& left_out) -> std::optional<std::function<void()>> {
      KtuneGemmArgs ca = a;
      if (plan.workspace_bytes) {
        // A lent config's workspace may not fit beside the caller's data (gemm_wgmma_tf32x3's
        // split copies are twice A and B): such a candidate is left out, not the caller's error.
        try {
          ca.workspace = workspace(stream, plan.workspace_bytes, p)->as<float>();
        } catch (const Error& e) {
          left_out.push_back(c.family + " " + c.config.to_json() + ": its " + std::to_string(plan.workspace_bytes) +
                             "-byte workspace could not be allocated (" + e.what() + ")");
          return std::nullopt;
        }
      }
      return [&mod, plan, ca, stream] { launch_gemm(mod, plan, ca, stream); };
    };
    const auto best = time_candidates(p, s.candidates, clock, run, failed);
    // cuBLAS again, after the candidates, and the faster reading kept (as ktune tune does for its
    // baseline): what is timed first at first use can read several % slow (at 4096x4096x1024 on an
    // H100, cuBLAS 55.6 us first against 51.1 in the bench that followed, where the kernel chosen
    // over it ran 53.5; docs/PERFORMANCE.md, session 20), and a slow cuBLAS reading is what could
    // make the runtime choose a kernel slower than cuBLAS.
    s.measured_cublas_ms = std::min(*s.measured_cublas_ms, clock([&] { run_cublas(p, a, stream); }, "timing cuBLAS again at " + p.key()));
    const double cu = *s.measured_cublas_ms;
    const auto kernel_wins = [&] { return best && *s.candidates[*best].measured_ms < cu * (1 - opts.measure_margin); };
    // A kernel that beats cuBLAS must do it twice: the winner is timed again, last, and its slower
    // reading counts. A form that reads fast in first use's short series and slower later (at
    // 777x3584x18944 on an H100 one did, by 5-15 %; docs/PERFORMANCE.md, session 19) would
    // otherwise be trusted on one reading.
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
        c.measured_ms = std::max(*c.measured_ms, clock(*launch, "timing " + c.family + " " + c.config.to_json() + " again at " + p.key()));
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
      s.why = "measured here at first use: " + c.family + fmt(" %.4f ms, cuBLAS %.4f ms (%.2fx)", *c.measured_ms, cu,
                                                               cu / *c.measured_ms);
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
  Selection measure_rows(const Problem& p, Selection s, const void* x, const void* weight, const void* bias, CUstream stream) {
    std::vector<std::string> failed;
    const size_t bytes = size_t(p.dims[0] - 1) * size_t(p.ld[1]) * element_bytes(p.dtype) + size_t(p.dims[1]) * element_bytes(p.dtype);
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
        [&](const CandidateConfig&, Module& mod, const LaunchPlan& plan, std::vector<std::string>&)
            -> std::optional<std::function<void()>> { return [&mod, plan, a, stream] { launch_rows(mod, plan, a, stream); }; },
        failed);
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
      s.why = "measured here at first use: " + c.family + (c.source == "default" ? "'s default" : " tuned for " + c.tuned) +
              fmt(" %.4f ms, the fastest of %.0f (", *c.measured_ms, double(s.candidates.size())) + all + " ms)";
    } else {
      s.why += "; no candidate ran at first use";
    }
    if (!failed.empty()) s.why += "; left out: " + failed.front();
    s.why += clock.note;
    return s;
  }

  // The choice for the problem of `key` as its launch makes it: measured on first use where the
  // selection asks for it, once (another thread may have measured it meanwhile), and never on a
  // stream being captured: nothing can be timed (or waited for) there, `captured` decides, and the
  // next call outside a capture measures.
  Selection resolve_first_use(const std::string& key, CUstream stream, const std::function<Selection()>& current,
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
  Selection resolve(const GemmProblem& p, const void* A, const void* B, CUstream stream, const Runtime& rt) {
    return resolve_first_use(
        p.key(), stream, [&] { return rt.best_config(p); },
        [&](Selection s) { return unmeasured(std::move(s), "stream being captured, not measured"); },
        [&](Selection s) { return measure(p, std::move(s), A, B, stream); });
  }

  // rows(): a capture leaves the selection pending (the caller runs its first candidate).
  Selection resolve_rows(const Problem& p, const void* x, const void* weight, const void* bias, CUstream stream,
                         const Runtime& rt) {
    return resolve_first_use(
        p.key(), stream, [&] { return rt.best_config(p); }, [](Selection s) { return s; },
        [&](Selection s) { return measure_rows(p, std::move(s), x, weight, bias, stream); });
  }
};

Runtime::Runtime(RuntimeOptions o) : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.opts = std::move(o);
  if (m.opts.cubin_cache == kDefaultCubinCache) m.opts.cubin_cache = default_cubin_cache_path();
  if (m.opts.cubin_cache_max_mb == kDefaultCubinCacheLimit) m.opts.cubin_cache_max_mb = default_cubin_cache_max_mb();
  if (m.opts.cubin_cache_max_mb < 0)
    throw UsageError("ktune runtime: cubin_cache_max_mb must be >= 0 (0: no limit) or kDefaultCubinCacheLimit, not " +
                     std::to_string(m.opts.cubin_cache_max_mb));
  if (m.opts.measure_margin < 0 || m.opts.measure_margin >= 1)
    throw UsageError("ktune runtime: measure_margin must be in [0, 1), not " + std::to_string(m.opts.measure_margin));
  if (m.opts.arch.empty()) {
    m.device = device_by_ordinal(m.opts.device);
    m.arch = m.device.arch;
  } else {
    m.device = DeviceInfo::nominal(m.opts.arch);
    m.arch = m.opts.arch;
  }
  m.index = std::make_unique<TunedIndex>(m.device);
  if (!m.opts.db_path.empty() && std::filesystem::exists(m.opts.db_path)) {
    m.store = std::make_unique<Store>(m.opts.db_path, /*read_only=*/true);
    if (const auto archs = m.store->best_archs(); std::find(archs.begin(), archs.end(), m.arch) != archs.end())
      m.add(m.store->export_table(m.arch), "store " + m.opts.db_path, SourceTier::user);
  }
  for (const auto& t : m.opts.tables) m.add(read_table_file(t), "table " + t, SourceTier::user);
  if (m.opts.shipped_tables || m.opts.tf32x3)
    for (auto& [t, source] : shipped_tables(m.arch, m.opts.tf32x3)) {
      const bool tf32x3_table = source.size() > 7 && source.substr(source.size() - 7) == "-tf32x3";
      if (tf32x3_table ? m.opts.tf32x3 : m.opts.shipped_tables) m.add(t, source, SourceTier::shipped);
    }
}

Runtime::~Runtime() = default;

const std::string& Runtime::arch() const { return impl_->arch; }
size_t Runtime::entries() const { return impl_->index->size(); }

Selection Runtime::best_config(const GemmProblem& p) const {
  const std::string key = p.key();
  {
    std::lock_guard<std::mutex> lk(impl_->sel_mu);
    if (auto it = impl_->selections.find(key); it != impl_->selections.end()) return it->second;
  }
  p.validate();
  Selection s = impl_->select(p);
  std::lock_guard<std::mutex> lk(impl_->sel_mu);
  return impl_->selections.emplace(key, std::move(s)).first->second;
}

namespace {

// p with alpha, beta and the alignment class the pointers allow.
GemmProblem launched(const GemmProblem& problem, const void* A, const void* B, void* C, float alpha, float beta) {
  GemmProblem p = problem;
  p.alpha = alpha, p.beta = beta;
  p.align = GemmProblem::alignment_with_pointers(
      GemmProblem::alignment_of(p.eff_lda(), p.eff_ldb(), p.eff_ldc(), element_bytes(p.dtype)), A, B, C);
  return p;
}

} // namespace

const void* Runtime::prepare(const std::string& key, const GemmProblem& p, const Selection& sel) {
  Impl& m = *impl_;
  m.ensure_context();
  {
    std::lock_guard<std::mutex> lk(m.mod_mu);
    if (auto it = m.prepared.find(key); it != m.prepared.end()) return it->second.get();
  }
  auto prep = std::make_shared<Prepared>();
  prep->sel = sel;
  if (sel.provenance != Provenance::cublas) {
    const Family* f = m.family(sel.family);
    if (!f) throw UsageError("ktune::gemm: unknown family '" + sel.family + "'");
    const Config c = f->canonical(sel.config);
    prep->module = m.module_async(*f, c, p)();
    prep->plan = f->launch_plan(c, p);
  }
  std::lock_guard<std::mutex> lk(m.mod_mu);
  return m.prepared.emplace(key, prep).first->second.get();
}

const void* Runtime::prepared_gemm(const GemmProblem& p, const void* A, const void* B, CUstream stream) {
  const std::string key = p.key();
  {
    std::lock_guard<std::mutex> lk(impl_->mod_mu);
    if (auto it = impl_->prepared.find(key); it != impl_->prepared.end()) return it->second.get();
  }
  p.validate();
  impl_->ensure_context();
  return prepare(key, p, impl_->resolve(p, A, B, stream, *this));
}

void Runtime::launch(const void* prepared, const GemmProblem& p, const void* A, const void* B, void* C, CUstream stream) {
  Impl& m = *impl_;
  const auto* prep = static_cast<const Prepared*>(prepared);
  // The hot path: the context exists (prepare made it); only this thread may not have it current.
  CUcontext cur = nullptr;
  check_cu(driver().cuCtxGetCurrent(&cur), "cuCtxGetCurrent", "ktune::gemm");
  if (!cur) m.ctx->make_current();
  // Half-precision operands travel in the float pointers of the argument block (gemm_args.h).
  KtuneGemmArgs a = gemm_args(p, static_cast<const float*>(A), static_cast<const float*>(B), static_cast<float*>(C), nullptr);
  if (!prep->module) {
    m.run_cublas(p, a, stream);
    return;
  }
  std::shared_ptr<DeviceBuffer> ws;
  if (prep->plan.workspace_bytes) {
    ws = m.workspace(stream, prep->plan.workspace_bytes, p);
    a.workspace = ws->as<float>();
  }
  launch_gemm(*prep->module, prep->plan, a, stream);
}

namespace {

// BLAS's quick returns. M or N of 0: nothing to do. alpha of 0 or K of 0: C = beta * C without
// reading A or B (which may then be anything, even null): cuBLAS keeps exactly these semantics,
// and the case is bandwidth-bound scaling that no tuned GEMM kernel would do better. Returns
// whether p was one of them.
bool blas_quick_path(const GemmProblem& p) { return p.m == 0 || p.n == 0 || p.alpha == 0.0f || p.k == 0; }

// gemm() takes float pointers: a problem of another dtype is a caller's mistake, whatever path
// (kernel, cuBLAS, quick return) it would take. gemm_ex takes any storage dtype.
void require_f32(const GemmProblem& p) {
  if (p.dtype != DType::f32)
    throw UsageError("ktune::Runtime::gemm takes f32 operands; " + p.key() + " is " + to_string(p.dtype) + " (use gemm_ex)");
}
void require_storage(const GemmProblem& p) {
  if (p.dtype == DType::tf32)
    throw UsageError("ktune::Runtime::gemm_ex: " + p.key() + ": tf32 is not a storage type (f32 operands with "
                     "RuntimeOptions::tf32x3 run on the tensor cores)");
}

} // namespace

void Runtime::scale_only(const GemmProblem& p, void* C, CUstream stream) {
  Impl& m = *impl_;
  if (p.m == 0 || p.n == 0) return;
  if (p.m < 0 || p.n < 0 || p.k < 0) p.validate(); // throws, naming the size
  if (p.ldc && p.ldc < p.n) p.validate();
  if (!C) throw UsageError("ktune::gemm: C is null for " + p.key());
  m.ensure_context();
  // cuBLAS checks leading dimensions against max(1, rows) even where it reads nothing.
  GemmProblem q = p;
  q.alpha = 0.0f;
  q.k = std::max<int64_t>(p.k, 1);
  q.lda = std::max<int64_t>(p.eff_lda(), q.min_lda());
  q.ldb = std::max<int64_t>(p.eff_ldb(), q.min_ldb());
  // A and B are not read (alpha = 0), and may be null here: hand cuBLAS C in their place, a
  // valid device pointer, so that no argument check of any cuBLAS version can object.
  float* c = static_cast<float*>(C);
  KtuneGemmArgs a = gemm_args(q, c, c, c, nullptr);
  m.scale_with_cublas(q, a, stream);
}

void Runtime::gemm(const GemmProblem& problem, const float* A, const float* B, float* C, float alpha, float beta,
                   CUstream stream) {
  require_f32(problem);
  gemm_ex(problem, A, B, C, alpha, beta, stream);
}

void Runtime::gemm(const GemmProblem& problem, const Selection& s, const float* A, const float* B, float* C, float alpha,
                   float beta, CUstream stream) {
  require_f32(problem);
  gemm_ex(problem, s, A, B, C, alpha, beta, stream);
}

void Runtime::gemm_ex(const GemmProblem& problem, const void* A, const void* B, void* C, float alpha, float beta,
                      CUstream stream) {
  require_storage(problem);
  GemmProblem p = problem;
  p.alpha = alpha, p.beta = beta;
  if (blas_quick_path(p)) return scale_only(p, C, stream);
  p = launched(problem, A, B, C, alpha, beta);
  launch(prepared_gemm(p, A, B, stream), p, A, B, C, stream);
}

void Runtime::gemm_ex(const GemmProblem& problem, const Selection& s, const void* A, const void* B, void* C, float alpha,
                      float beta, CUstream stream) {
  require_storage(problem);
  GemmProblem p = problem;
  p.alpha = alpha, p.beta = beta;
  if (blas_quick_path(p)) return scale_only(p, C, stream);
  p = launched(problem, A, B, C, alpha, beta);
  // Keyed apart from the per-problem cache of the plain gemm().
  const std::string key = p.key() + "|" + (s.provenance == Provenance::cublas ? "cublas" : s.family + s.config.to_json());
  launch(prepare(key, p, s), p, A, B, C, stream);
}

Selection Runtime::best_config(const Problem& p) const {
  if (p.op == "gemm") return best_config(GemmProblem::from(p));
  const std::string key = p.key();
  {
    std::lock_guard<std::mutex> lk(impl_->sel_mu);
    if (auto it = impl_->selections.find(key); it != impl_->selections.end()) return it->second;
  }
  validate(p);
  Selection s = impl_->select_generic(p);
  std::lock_guard<std::mutex> lk(impl_->sel_mu);
  return impl_->selections.emplace(key, std::move(s)).first->second;
}

void Runtime::rows(const Problem& problem, const void* x, void* y, const void* weight, const void* bias, CUstream stream) {
  if (problem.op == "gemm") throw UsageError("ktune::Runtime::rows: " + problem.key() + " is a GEMM (use gemm_ex)");
  Problem p = problem;
  if (p.dims.size() == 2 && (p.dims[0] == 0 || p.dims[1] == 0)) return; // nothing to compute
  if (!x || !y) throw UsageError("ktune::Runtime::rows: x or y is null for " + p.key());
  // The alignment class the pointers allow (weight and bias are read with the same vectors).
  p.align = Problem::alignment_with_pointers(Problem::alignment_of(p.ld, element_bytes(p.dtype)), {x, y, weight, bias},
                                            element_bytes(p.dtype));
  if (const void* prep = prepared_rows(p, x, y, weight, bias, stream)) launch_prepared_rows(prep, p, x, y, weight, bias, stream);
}

const void* Runtime::prepared_rows(const Problem& p, const void* x, void* y, const void* weight, const void* bias,
                                   CUstream stream) {
  const std::string key = p.key();
  Impl& m = *impl_;
  {
    std::lock_guard<std::mutex> lk(m.mod_mu);
    if (auto it = m.prepared.find(key); it != m.prepared.end()) return it->second.get();
  }
  Selection sel = best_config(p); // validates
  m.ensure_context();
  if (sel.measure_pending) {
    sel = m.resolve_rows(p, x, weight, bias, stream, *this);
    // Still pending: inside a stream capture, where nothing can be timed. Run the first
    // candidate without keeping it, so that a later call outside the capture measures.
    if (sel.measure_pending) {
      const Family* f = m.family(sel.family);
      if (!f) throw UsageError("ktune::Runtime::rows: unknown family '" + sel.family + "'");
      const Config c = f->canonical(sel.config);
      ::ktune::launch_rows(*m.module_async(*f, c, p)(), f->launch_plan(c, p), rows_args(p, x, y, weight, bias), stream);
      return nullptr;
    }
  }
  const Family* f = m.family(sel.family);
  if (!f) throw UsageError("ktune::Runtime::rows: unknown family '" + sel.family + "'");
  auto fresh = std::make_shared<Prepared>();
  fresh->sel = sel;
  const Config c = f->canonical(sel.config);
  fresh->module = m.module_async(*f, c, p)();
  fresh->plan = f->launch_plan(c, p);
  std::lock_guard<std::mutex> lk(m.mod_mu);
  return m.prepared.emplace(key, fresh).first->second.get();
}

void Runtime::launch_prepared_rows(const void* prepared, const Problem& p, const void* x, void* y, const void* weight,
                          const void* bias, CUstream stream) {
  const auto* prep = static_cast<const Prepared*>(prepared);
  CUcontext cur = nullptr;
  check_cu(driver().cuCtxGetCurrent(&cur), "cuCtxGetCurrent", "ktune::Runtime::rows");
  if (!cur) impl_->ctx->make_current();
  ::ktune::launch_rows(*prep->module, prep->plan, rows_args(p, x, y, weight, bias), stream);
}

namespace {
Problem rows_problem(const char* op, DType dt, int64_t rows, int64_t cols, int64_t ldx, int64_t ldy, const char* scalar,
                     double value) {
  Problem p = Problem::make(op, {rows, cols}, "", dt);
  p.ld = {ldx ? ldx : cols, ldy ? ldy : cols};
  p.scalars[scalar] = value;
  return p;
}
} // namespace

void Runtime::softmax(DType dt, int64_t rows_, int64_t cols, const void* x, int64_t ldx, void* y, int64_t ldy, float scale,
                      CUstream stream) {
  rows(rows_problem("softmax", dt, rows_, cols, ldx, ldy, "scale", scale), x, y, nullptr, nullptr, stream);
}

void Runtime::layernorm(DType dt, int64_t rows_, int64_t cols, const void* x, int64_t ldx, void* y, int64_t ldy,
                        const void* weight, const void* bias, float eps, CUstream stream) {
  rows(rows_problem("layernorm", dt, rows_, cols, ldx, ldy, "eps", eps), x, y, weight, bias, stream);
}

void Runtime::rmsnorm(DType dt, int64_t rows_, int64_t cols, const void* x, int64_t ldx, void* y, int64_t ldy,
                      const void* weight, float eps, CUstream stream) {
  rows(rows_problem("rmsnorm", dt, rows_, cols, ldx, ldy, "eps", eps), x, y, weight, nullptr, stream);
}

} // namespace ktune
