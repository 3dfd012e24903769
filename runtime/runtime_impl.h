// Runtime::Impl, the state one ktune::Runtime keeps, shared by the files that do its jobs:
//   runtime.cpp     construction: options, the device, the tuned index from store and tables
//   selection.cpp   what serves a problem before any measurement (exact entry, lenders and their
//                   neighbours, family defaults, cuBLAS) and why
//   modules.cpp     the CUDA context, compiled and cached modules (NVRTC, the store's binaries, the
//                   cubin cache), workspaces, cuBLAS
//   first_use.cpp   timing the candidates of a problem nobody tuned against cuBLAS (or each other)
//                   at its first call (with the tuner's Timer), and the agreement check before a
//                   lent kernel serves
//   serve.cpp       the entry points that launch: gemm, gemm_ex, the row ops, run (any op; the
//                   ops of plain buffers), prepared launches
//   calls.cpp       GemmCall and RowsCall handles over them
// Private to runtime/.
#pragma once
#include <atomic>
#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "db/lending.h"
#include "db/store.h"
#include "db/table.h"
#include "ktune/compiler.h"
#include "ktune/error.h"
#include "ktune/gemm_problem.h"
#include "ktune/runtime.h"
#include "runtime/cublas.h"
#include "runtime/module.h"
#include "runtime/timing.h"

namespace ktune {

// The launch-ready form of a selection for one problem: cached per problem key.
struct Prepared {
  Selection sel;
  std::shared_ptr<Module> module; // null when the selection is cuBLAS
  LaunchPlan plan;
};

// Most candidates first use measures: each costs a compile (once per process) and a few launches.
constexpr size_t kMaxCandidates = 4;
constexpr size_t kCandidatesPerFamily = 2;
// Beside the lenders, the neighbours (Family::neighbors_of) of each family's best-scored lender,
// where the family declares some: its config with the choices that most often decide a shape it
// was not tuned for (gemm_wgmma: the tiling that fills the shape's waves best, TMA multicast for
// short K, a persistent grid with stream-K of the last wave; gemm_skinny16: the streaming form
// with the K split refitted). At untuned shapes the last wgmma forms ran 1.16-1.3x the lent
// configs themselves (3072^3: PT 0 SK 3; 5000x3000x1000: MC; docs/runs/performance-log-2026-11.md,
// "Shapes in no table"). They carry no prediction of their own, so they are only ever chosen by
// first use's measurement. Nine a family: past a wave gemm_wgmma offers two retiled forms in each
// orientation before the lender's own MC and stream-K forms, and with seven 3072^3 lost the
// stream-K ones that ran fastest there (docs/runs/performance-log-2026-11.md, "the swapped tiling's
// persistent multicast form"). Each costs a compile (in parallel) and a few launches at the first call only.
constexpr size_t kMaxNeighbours = 9;
// Row ops and ops of plain buffers: the nearest lender of each family and each family's default
// (five families an op), then where a family declares neighbours (attention_decode) those of its
// default and of its lender, kMaxNeighbours of them.
constexpr size_t kMaxRowCandidates = 8;

// BLAS's quick returns. M or N of 0: nothing to do. alpha of 0 or K of 0: C = beta * C without
// reading A or B (which may then be anything, even null): cuBLAS keeps exactly these semantics,
// and the case is bandwidth-bound scaling that no tuned GEMM kernel would do better.
inline bool blas_quick_path(const GemmProblem& p) { return p.m == 0 || p.n == 0 || p.alpha == 0.0f || p.k == 0; }

// The GEMM entry points take storage dtypes: tf32 names a compute mode. `entry` names the caller.
inline void require_storage(const GemmProblem& p, const char* entry) {
  if (p.dtype == DType::tf32)
    throw UsageError(std::string(entry) + ": " + p.key() +
                     ": tf32 is not a storage type (f32 operands with RuntimeOptions::tf32x3 run on the tensor cores)");
}

// A row-op problem with no rows or no columns: nothing to compute (rows() and RowsCall return).
inline bool rows_empty(const Problem& p) { return p.dims.size() == 2 && (p.dims[0] == 0 || p.dims[1] == 0); }

// printf-style formatting of up to three numbers into a why line.
inline std::string fmt(const char* f, double a, double b = 0, double c = 0) {
  char buf[160];
  std::snprintf(buf, sizeof buf, f, a, b, c);
  return buf;
}

// s runs candidate c: its config and what was recorded at the problem it was tuned for.
inline void adopt(Selection& s, const CandidateConfig& c) {
  s.family = c.family;
  s.config = c.config;
  s.source = c.source;
  if (!c.tuned.empty()) s.tuned = c.tuned;
  s.distance = c.distance;
  s.generalized = c.generalized;
  s.time_ms = c.time_ms, s.cublas_ms = c.cublas_ms; // recorded at the lender's own problem
}

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
  std::atomic<size_t> index_ops{0}; // ops().size() when the index was built: a spec loaded since needs a rebuild
  void build_index();
  // build_index() again where ops were registered since (once, under store_mu).
  void refresh_index() {
    std::lock_guard<std::mutex> lk(store_mu);
    if (index_ops != ops().size()) build_index();
  }

  // Process-wide caches of this runtime; each behind its own mutex.
  mutable std::mutex sel_mu;
  mutable std::unordered_map<std::string, Selection> selections; // measured choices replace predictions
  std::mutex mod_mu;
  std::unordered_map<std::string, std::shared_ptr<Module>> modules;    // compile cache key -> module
  std::unordered_map<std::string, std::shared_ptr<Prepared>> prepared; // by problem key (+ selection)
  std::mutex ws_mu;
  std::map<CUstream, std::shared_ptr<DeviceBuffer>> workspaces;
  std::mutex gpu_mu;     // context creation, cuBLAS handle (not safe for concurrent use)
  std::mutex measure_mu; // one first-use measurement at a time: concurrent ones would skew each other
  std::unique_ptr<CudaContext> ctx;
  std::unique_ptr<Cublas> cublas;
  std::unique_ptr<Compiler> compiler;

  const Family* family(const std::string& name) const { return index->family(name); }

  // selection.cpp
  void add(Table t, const std::string& source, SourceTier tier);
  Selection from_exact(const Lent& l) const;
  void add_neighbours(std::vector<CandidateConfig>& cands, const Problem& p, const std::vector<size_t>& from) const;
  Selection select(const GemmProblem& p) const;
  Selection select_generic(const Problem& p) const;
  static Selection unmeasured(Selection s, const std::string& reason);

  // modules.cpp
  void ensure_context();
  // The hot path's half of ensure_context: the context exists (a prepared launch made it); only
  // the calling thread may not have it current.
  void make_context_current();
  // The prepared launch kept for key, or null.
  const Prepared* find_prepared(const std::string& key);
  Compiler& the_compiler();
  Store* cubin_cache();
  void close_cubin_cache(const Error& e);
  void keep_cubin(const CompiledKernel& k);
  void stamp_loaded();
  void loaded_from_cache(const std::string& key);
  std::function<std::shared_ptr<Module>()> module_async(const Family& f, const Config& c, const Problem& p);
  std::shared_ptr<DeviceBuffer> workspace(CUstream stream, size_t bytes, const GemmProblem& p) {
    return workspace(stream, bytes, p.key());
  }
  std::shared_ptr<DeviceBuffer> workspace(CUstream stream, size_t bytes, const std::string& problem_key);
  std::shared_ptr<DeviceBuffer> candidate_workspace(CUstream stream, size_t bytes, const std::string& problem_key,
                                                    const CandidateConfig& c, std::vector<std::string>& left_out);
  void run_cublas(const GemmProblem& p, const KtuneGemmArgs& a, CUstream stream);
  void scale_with_cublas(const GemmProblem& p, const KtuneGemmArgs& a, CUstream stream);
  ~Impl();
  std::vector<std::string> unstamped; // cubins loaded from the cache, not stamped as used yet

  // first_use.cpp
  // before (if set) runs ahead of every run, untimed: each run then goes alone.
  static double time_on(CUstream stream, const std::function<void()>& f, const std::string& what,
                        const std::function<void()>& before = {});

  // What times a launch at first use: the tuner's Timer, L2 cold, where its flush buffer (twice
  // the L2) can be had; back to back with L2 warm otherwise (time_on, saying so in `note`).
  struct FirstUseClock {
    std::unique_ptr<Timer> cold;
    std::string note;
    CUstream stream = nullptr;
    // Run untimed ahead of every timed run (and warm-up): puts back what a run must start from
    // (a user's kernel's inout buffers, from the caller's data). Empty: nothing.
    std::function<void()> before;
    double operator()(const std::function<void()>& f, const std::string& what) const;
  };
  FirstUseClock first_use_clock(CUstream stream) const;

  // Given a candidate, its module and plan: the launch to time, or nullopt (with the reason added
  // to `failed`) when it cannot run here.
  using CandidateRun = std::function<std::optional<std::function<void()>>(
      const CandidateConfig&, Module&, const LaunchPlan&, std::vector<std::string>& failed)>;

  std::optional<size_t> time_candidates(const Problem& p, std::vector<CandidateConfig>& cands,
                                        const FirstUseClock& clock, const CandidateRun& run,
                                        std::vector<std::string>& failed);
  std::string agreement_with_cublas(const GemmProblem& p, const KtuneGemmArgs& a, const DeviceBuffer& out,
                                    const std::function<void()>& launch, CUstream stream);
  Selection measure(const GemmProblem& p, Selection s, const void* A, const void* B, CUstream stream);
  Selection measure_rows(const Problem& p, Selection s, const void* x, const void* weight, const void* bias,
                         CUstream stream);
  Selection measure_buffers(const Problem& p, Selection s, const std::vector<void*>& buffers, CUstream stream);
  // The end of every first-use measurement: s takes the fastest candidate (best), its why line
  // lists what ran and what was left out.
  Selection measured_choice(Selection s, std::optional<size_t> best, const std::vector<std::string>& failed,
                            const FirstUseClock& clock) const;
  Selection resolve_first_use(const std::string& key, CUstream stream, const std::function<Selection()>& current,
                              const std::function<Selection(Selection)>& captured,
                              const std::function<Selection(Selection)>& measure_it);
  Selection resolve(const GemmProblem& p, const void* A, const void* B, CUstream stream, const Runtime& rt);
  Selection resolve_rows(const Problem& p, const void* x, const void* weight, const void* bias, CUstream stream,
                         const Runtime& rt);
  Selection resolve_buffers(const Problem& p, const std::vector<void*>& buffers, CUstream stream, const Runtime& rt);
};

} // namespace ktune
