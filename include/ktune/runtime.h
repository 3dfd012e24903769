// What applications link against: the best config for a problem, and a GEMM that launches it.
//
//   ktune::Runtime rt;                                   // user's store + shipped tables
//   auto sel = rt.best_config(ktune::GemmProblem::parse("4096x4096x4096"));
//   rt.gemm(problem, dA, dB, dC, 1.0f, 0.0f, stream);    // tuned kernel, or cuBLAS if it won
//
// Thread-safety: one Runtime may serve any number of threads at once, each on its own stream or
// a shared one. Lookups read an index built at construction and never changed; selections,
// compiled modules, per-stream workspaces and the cuBLAS handle are behind mutexes; a first-use
// measurement of an untuned problem runs once (one at a time: concurrent ones would skew each
// other's timings) while other threads keep launching problems already prepared. Construction
// and destruction must not race with calls. Launches are asynchronous on the caller's stream;
// the same stream from two threads orders their launches as the driver receives them. Tested
// from four threads (tests/runtime/thread_gpu_test.cpp).
//
// Problems nobody tuned: the configs tuned for other problems (db/lending.h ranks them) are
// candidates, never a promise. On the first gemm() of such a problem the best-ranked few and
// cuBLAS are timed at the problem itself, and the fastest runs from then on (cuBLAS unless a
// kernel wins by RuntimeOptions::measure_margin): the runtime is never knowingly slower than
// cuBLAS. Row ops (softmax, LayerNorm, RMSNorm: no baseline library) time the nearest tuned config
// of each family and each family's default against each other on their first rows() call and keep
// the fastest. best_config() says what was chosen and why.
#pragma once
#include <cuda.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ktune/config.h"
#include "ktune/gemm_problem.h"
#include "ktune/problem.h"

namespace ktune {

class Module;      // runtime/module.h
struct LaunchPlan; // ktune/family.h

enum class Provenance {
  exact,          // tuned for exactly this problem
  nearest,        // a config tuned for another problem (a lender), measured faster than cuBLAS here
                  // at first use, or predicted much faster where it could not be measured
  default_config, // nothing tuned of this dtype and layout: a family default, measured faster than cuBLAS
  cublas,         // cuBLAS: it beat the tuned kernel, or no lender is predicted or measured faster
};
const char* to_string(Provenance p);

// A tuned config the runtime may run for a problem nobody tuned (db/lending.h ranks them).
struct CandidateConfig {
  std::string family;
  Config config;
  std::string source;                // the table or database it came from
  std::string tuned;                 // key of the problem it was tuned for
  double distance = 0;               // log distance between the problems (plus an alignment penalty)
  double home_ratio = 1;             // cuBLAS time / kernel time recorded at the tuned problem
  double score = 0;                  // predicted speedup over cuBLAS here: home_ratio * exp(-0.4 distance)
  bool generalized = false;          // a general form of the tuned config (Family::generalized)
  bool neighbour = false;            // a neighbour of that config (Family::neighbors_of): no score,
                                     // no recorded times; first use's measurement alone decides
  std::optional<double> time_ms, cublas_ms; // recorded at the tuned problem (not for a neighbour)
  std::optional<double> measured_ms; // timed at this problem at first use
};

struct Selection {
  Provenance provenance = Provenance::default_config;
  std::string family; // the kernel family (also set for cublas where a kernel was considered)
  Config config;
  std::string source;                // "store PATH", "table PATH", "shipped table sm_90", "default"
  std::optional<std::string> tuned;  // key of the tuned problem the config came from
  double distance = 0;               // nearest: log distance to the tuned problem (db/lending.h)
  bool generalized = false;          // the tuned config was specialised to its shape (e.g. EVEN);
                                     // config is a general form of it (Family::generalized)
  std::optional<double> time_ms, cublas_ms; // recorded for the tuned problem (of the candidate shown)
  // For a problem nobody tuned: the lenders worth measuring, best predicted first. gemm() times
  // each and cuBLAS at the problem the first time it sees it, and runs the fastest (cuBLAS unless
  // a kernel is at least RuntimeOptions::measure_margin faster); rows() times each (for row ops
  // also each family's default) and runs the fastest.
  std::vector<CandidateConfig> candidates;
  bool measure_pending = false;              // candidates not measured yet (no gemm() call so far)
  bool measured = false;                     // the choice was measured at this problem
  std::optional<double> measured_cublas_ms;  // cuBLAS at this problem, timed at first use
  std::string why;                           // one line: why this choice
};

// RuntimeOptions::cubin_cache's default: the per-user cache file (resolved at construction).
inline constexpr const char* kDefaultCubinCache = "<default>";
// RuntimeOptions::cubin_cache_max_mb's default: $KTUNE_CUBIN_CACHE_MAX_MB if set, else 512 MB.
inline constexpr int64_t kDefaultCubinCacheLimit = -1;

struct RuntimeOptions {
  std::string db_path;             // "" or a missing file: no store; opened read-only otherwise
  std::vector<std::string> tables; // more table files (ktune.table/1), after the store
  bool shipped_tables = true;      // the tables embedded in the library, last
  // Opt-in: also the shipped 3xTF32 table of the arch (tables/<arch>-tf32x3.json: gemm_tf32x3 and,
  // on sm_90, gemm_wgmma_tf32x3 entries). Its
  // entries only add candidates: for a tuned problem the fastest recorded entry wins, for an
  // untuned one its lenders are measured beside the others. Both families compute FP32 GEMM on
  // the TF32 tensor cores with a big/small split of every operand: its error against FP64 is at
  // or below cuBLAS SGEMM's on finite inputs of ordinary range, but results are not
  // bit-identical to FFMA, and an infinite input, or one within 2^-11 of FLT_MAX, gives NaN
  // (docs/TEMPLATES.md). Off by default, as cuBLAS keeps TF32 off unless asked. Only sm_90 ships
  // such a table so far; elsewhere the option changes nothing (best_config's `source` names the
  // table each answer came from).
  bool tf32x3 = false;
  // For a problem nobody tuned, time the best-scored lenders and cuBLAS on the first gemm() call
  // (on the caller's stream, into a scratch C; the call then blocks until they finish) and keep
  // the fastest for the life of the Runtime. Off, or when the stream is being captured into a
  // graph, a lender runs only when predicted kTrustUnmeasured (1.15x) faster than cuBLAS. Row ops
  // likewise time their candidates on the first rows() call (into a scratch y); off, or inside a
  // capture, the first candidate (the nearest lender, else a family default) runs.
  bool measure_untuned = true;
  double measure_margin = 0.03; // a kernel must beat cuBLAS by this fraction to be chosen (first use and tuned entries)
  // With measure_untuned: first use also times the neighbours (Family::neighbors: configs one choice
  // away from a family's default or lender, up to 9 a family) beside them. Off, only the lenders and
  // defaults: fewer kernels to compile and time the first time a shape comes (and an A/B of what the
  // neighbours win, bench/attention_vs_torch.py --no-neighbours).
  bool time_neighbours = true;
  // Where the cubins this runtime compiles are kept for later processes: a ktune database file
  // (its binaries table), created on the first write. A later Runtime loads a kept cubin in ~2 ms
  // where NVRTC takes 25 ms to ~1 s a kernel; the first use of a half-precision shape nobody
  // tuned compiles up to 22 candidates: four lenders and up to nine neighbours of each lending
  // family's best one (docs/PERFORMANCE.md, "Runtime cost"). "" keeps compiled
  // kernels in this Runtime's memory only. kDefaultCubinCache stands for $KTUNE_CUBIN_CACHE if
  // set (set but empty: off), else $XDG_CACHE_HOME/ktune/cubins.db, else ~/.cache/ktune/cubins.db.
  // A cache that cannot be opened or written is reported once on stderr and then not used.
  std::string cubin_cache = kDefaultCubinCache;
  // The most bytes of cubins the cache holds, in MB (10^6 bytes; 0: no limit). Past it, a runtime
  // that keeps a new cubin deletes the least recently used ones (loaded or kept by any runtime)
  // down to 3/4 of it; a kernel whose cubin went is compiled again when next needed. A cubin is
  // ~0.1-0.3 MB, so the default 512 holds a few thousand. `ktune cache` shows the cache and trims it.
  int64_t cubin_cache_max_mb = kDefaultCubinCacheLimit;
  std::string arch;                // "" = the arch of `device` (needs a GPU)
  int device = 0;
};

class Runtime;

// A problem fixed once and launched many times with new pointers: what a framework binding keeps
// per call site (python/bindings.cpp keeps one per shape). Runtime::gemm_ex and rows look the
// problem up by its key on every call; a handle does that once per alignment class the pointers
// fall in, and a later call costs a few comparisons and the driver's launch. Semantics are those
// of gemm_ex / rows (first-use measurement included). Made by Runtime::gemm_call / rows_call;
// valid while that Runtime lives; may be called from several threads at once.
class GemmCall {
 public:
  GemmCall(const GemmCall&) = delete;
  GemmCall& operator=(const GemmCall&) = delete;
  // C = alpha * A * B + beta * C on stream (Runtime::gemm_ex with the handle's problem).
  void operator()(const void* A, const void* B, void* C, float alpha, float beta, CUstream stream = nullptr) const;
  // Whether a call with these arguments finds its launch prepared: nothing to look up, compile or
  // measure on the way, only the launch. A binding may then call without releasing its
  // interpreter lock (python/bindings.cpp), as a framework's own ops do.
  bool ready(const void* A, const void* B, const void* C, float alpha) const;
  const GemmProblem& problem() const { return p_; }

 private:
  friend class Runtime;
  GemmCall(Runtime& rt, const GemmProblem& p);
  Runtime& rt_;
  GemmProblem p_;
  // The prepared launch of each alignment class (16, 8, 4, 2 bytes), set at its first call. The
  // runtime owns what they point to for its life.
  mutable std::array<std::atomic<const void*>, 4> prepared_{};
};

class RowsCall {
 public:
  RowsCall(const RowsCall&) = delete;
  RowsCall& operator=(const RowsCall&) = delete;
  // y = op(x) (Runtime::rows with the handle's problem); weight and bias as rows takes them.
  void operator()(const void* x, void* y, const void* weight, const void* bias, CUstream stream = nullptr) const;
  bool ready(const void* x, const void* y, const void* weight, const void* bias) const;
  const Problem& problem() const { return p_; }

 private:
  friend class Runtime;
  RowsCall(Runtime& rt, const Problem& p);
  Runtime& rt_;
  Problem p_;
  mutable std::array<std::atomic<const void*>, 4> prepared_{};
};

// The same for an op of plain buffers (Runtime::run: attention, scale_add, a user's kernel): a
// call passes one device pointer per operand (OpInfo::operands order).
class BuffersCall {
 public:
  BuffersCall(const BuffersCall&) = delete;
  BuffersCall& operator=(const BuffersCall&) = delete;
  // Runtime::run with the handle's problem; n must be the op's number of operands.
  void operator()(const void* const* buffers, size_t n, CUstream stream = nullptr) const;
  bool ready(const void* const* buffers, size_t n) const;
  const Problem& problem() const { return p_; }

 private:
  friend class Runtime;
  BuffersCall(Runtime& rt, const Problem& p);
  int align_of(const void* const* buffers, size_t n) const;
  Runtime& rt_;
  Problem p_;
  bool empty_ = false; // every output empty: nothing to launch
  mutable std::array<std::atomic<const void*>, 4> prepared_{};
};

class BuffersLauncher;

// A user's kernel (docs/KERNEL_SPEC.md), loaded from its spec by Runtime::kernel: launches the best
// config for each call's dimensions, as Runtime::run serves any op (exact entry; else lent from
// tuned neighbours, timed at the first call against the spec's default; cubins cached).
class Kernel {
 public:
  // args: one entry per argument the caller passes, in the spec's order: a buffer's device
  // pointer, or a pointer to a scalar's value (of the spec's dtype for it: int32_t, float, ...;
  // a scalar of "dtype" the problem's: a __half at f16, a double at f64).
  // Arguments the spec computes (a scalar's "value") and its temporaries are not passed. dtype:
  // the problem dtype, of those the spec takes (default: its first). Throws UsageError for a wrong
  // number of arguments, dimensions or a dtype the spec does not take.
  void launch(const std::vector<int64_t>& dims, const std::vector<const void*>& args, CUstream stream = nullptr,
              std::optional<DType> dtype = std::nullopt) const;
  // What launch runs for these dimensions (and alignment class), and why.
  Selection best_config(const std::vector<int64_t>& dims, std::optional<DType> dtype = std::nullopt, int align = 16) const;
  // The problem of a call: the op, dims, dtype and the scalars from args (args may be empty: the
  // spec's defaults).
  Problem problem(const std::vector<int64_t>& dims, const std::vector<const void*>& args = {},
                  std::optional<DType> dtype = std::nullopt) const;
  const std::string& op() const { return op_; } // "name@version"

 private:
  friend class Runtime;
  Kernel(Runtime& rt, std::string op) : rt_(&rt), op_(std::move(op)) {}
  Runtime* rt_;
  std::string op_;
};

class Runtime {
 public:
  explicit Runtime(RuntimeOptions o = {});
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  const std::string& arch() const;
  size_t entries() const; // tuned problems known to the index

  // What gemm() runs for p: an exact entry, cuBLAS, or for a problem nobody tuned the
  // candidates first use will measure (measure_pending), and after a gemm() call on p, what that
  // measurement chose. Throws UsageError for an invalid problem.
  Selection best_config(const GemmProblem& p) const;

  // C = alpha * A * B + beta * C on stream, with the layouts, sizes and leading dimensions of p
  // (its alpha and beta are replaced by these). The alignment class is narrowed to what the
  // pointers allow before the lookup. Throws Error on CUDA, NVRTC or cuBLAS failure.
  void gemm(const GemmProblem& p, const float* A, const float* B, float* C, float alpha, float beta,
            CUstream stream = nullptr);

  // The same with a given selection (e.g. a pinned config, or a kernel that the recorded
  // cuBLAS time beat, forced by setting provenance to anything but cublas). The config must be
  // valid for p; throws UsageError otherwise.
  void gemm(const GemmProblem& p, const Selection& s, const float* A, const float* B, float* C, float alpha, float beta,
            CUstream stream = nullptr);

  // gemm for any storage dtype: A, B and C hold p.dtype elements (f32; bf16 or f16, i.e.
  // __nv_bfloat16 / __half, with FP32 accumulation and C rounded to nearest). gemm() is this for f32.
  void gemm_ex(const GemmProblem& p, const void* A, const void* B, void* C, float alpha, float beta,
               CUstream stream = nullptr);
  void gemm_ex(const GemmProblem& p, const Selection& s, const void* A, const void* B, void* C, float alpha, float beta,
               CUstream stream = nullptr);

  // Any op's choice: GEMM problems go to best_config(GemmProblem); an op without a baseline
  // library (the row ops) gets its exact entry, else the nearest tuned problem's config, else a
  // family default. Throws UsageError for an invalid problem.
  Selection best_config(const Problem& p) const;

  // The row ops (softmax, layernorm, rmsnorm): y = op(x) along each row of p's rows x cols, with
  // p's leading dimensions and scalars (softmax: scale; norms: eps). weight (cols elements) for
  // LayerNorm and RMSNorm, bias for LayerNorm (null: none); all of p.dtype (float,
  // __nv_bfloat16 or __half). Launched on stream without synchronizing. The alignment class is
  // narrowed to what the pointers allow. Throws UsageError on bad input, Error on CUDA or NVRTC
  // failure.
  void rows(const Problem& p, const void* x, void* y, const void* weight, const void* bias, CUstream stream = nullptr);
  // The same, spelled out (ld 0: cols). softmax computes softmax(scale * x) (torch.softmax);
  // layernorm F.layer_norm with weight and bias (either may be null); rmsnorm F.rms_norm.
  void softmax(DType dt, int64_t rows, int64_t cols, const void* x, int64_t ldx, void* y, int64_t ldy, float scale = 1.0f,
               CUstream stream = nullptr);
  void layernorm(DType dt, int64_t rows, int64_t cols, const void* x, int64_t ldx, void* y, int64_t ldy, const void* weight,
                 const void* bias, float eps = 1e-5f, CUstream stream = nullptr);
  void rmsnorm(DType dt, int64_t rows, int64_t cols, const void* x, int64_t ldx, void* y, int64_t ldy, const void* weight,
               float eps = 1e-6f, CUstream stream = nullptr);

  // Any op through one entry point (the C API's ktune_run and Python's ktune.run call it), its
  // buffers in the op's order: GEMM's A, B, C (p's layout, leading dimensions, alpha and beta);
  // a row op's x, y, weight, bias (null where none); an op of plain buffers (OpInfo::operands,
  // e.g. scale_add's x, y, out) its operands, with p's scalars. The alignment class is narrowed
  // to what the pointers allow, and a shape nobody tuned is served as rows() serves one (first
  // use times the candidates, into scratch outputs). Throws UsageError on a wrong number of
  // buffers or bad input, Error on CUDA or NVRTC failure. The op's kind (OpInfo::runner) picks
  // how: runtime/op_launcher.h.
  void run(const Problem& p, const std::vector<void*>& buffers, CUstream stream = nullptr);
  // Attention (op "attention", kernel_templates/attention/): o = softmax(scale q k^T) v with q
  // (batch, q_len, heads, head_dim), k and v (batch, kv_len, kv_heads, head_dim), o laid out as q
  // asks, lse (batch, heads, q_len) FP32 contiguous, all but lse of `dtype` (bf16, f16). strides:
  // the batch, sequence and head strides of q, k, v and o in elements (12; empty: packed (B, S, H,
  // D)), so (B, H, S, D) storage is a stride change. causal: bottom-right aligned as FlashAttention's.
  // scale 0: 1 / sqrt(head_dim). run() with p's dims, layout "causal" / "full" and these buffers.
  void attention(DType dtype, int64_t batch, int64_t heads, int64_t kv_heads, int64_t q_len, int64_t kv_len,
                 int64_t head_dim, bool causal, const void* q, const void* k, const void* v, void* o, float* lse,
                 const std::vector<int64_t>& strides = {}, float scale = 0, CUstream stream = nullptr);
  // Attention over packed sequences (op "attention_varlen"), as flash_attn_varlen_func: q and o
  // (total_q, heads, head_dim), k and v (total_kv, kv_heads, head_dim), cu_q and cu_k int32 (batch
  // + 1) cumulative lengths on the device (sequence b the tokens [cu[b], cu[b + 1]), at most q_len /
  // kv_len of them: trusted, as FlashAttention trusts them), lse (heads, total_q) FP32. strides: the
  // token and head strides of q, k, v and o (8; empty: packed). Causal is bottom-right aligned to
  // each sequence's own lengths.
  void attention_varlen(DType dtype, int64_t batch, int64_t heads, int64_t kv_heads, int64_t q_len, int64_t kv_len,
                        int64_t head_dim, int64_t total_q, int64_t total_kv, bool causal, const void* q, const void* k,
                        const void* v, const int32_t* cu_q, const int32_t* cu_k, void* o, float* lse,
                        const std::vector<int64_t>& strides = {}, float scale = 0, CUstream stream = nullptr);
  // Attention over a KV cache kept in pages (op "attention_paged"), as vLLM and
  // flash_attn_with_kvcache keep it: decode and speculative decoding, q_len <= 64. q and o (batch,
  // q_len, heads, head_dim), k_cache and v_cache (pages, page_size, kv_heads, head_dim),
  // block_table int32 (batch, pages_per_seq) on the device, the page of each page_size keys of a
  // sequence (trusted to be pages of the cache, as vLLM trusts them), seq_lens int32 (batch) on the
  // device, the keys sequence b holds (0 to pages_per_seq x page_size), lse (batch, heads, q_len)
  // FP32. A contiguous cache (batch, capacity, kv_heads, head_dim) is page_size = capacity, pages =
  // batch, pages_per_seq 1 and block_table[b] = b. strides: the batch, sequence and head strides of
  // q and o, the page, slot and head strides of the caches (12 in the order q, k_cache, v_cache, o;
  // empty: packed). Causal is bottom-right aligned to each sequence's own length.
  void attention_paged(DType dtype, int64_t batch, int64_t heads, int64_t kv_heads, int64_t q_len, int64_t head_dim,
                       int64_t page_size, int64_t pages, int64_t pages_per_seq, bool causal, const void* q,
                       const void* k_cache, const void* v_cache, const int32_t* block_table, const int32_t* seq_lens,
                       void* o, float* lse, const std::vector<int64_t>& strides = {}, float scale = 0,
                       CUstream stream = nullptr);

  // Handles for many calls of one problem (GemmCall, RowsCall above). Validate p (UsageError);
  // p's alignment class and alpha / beta are ignored (the pointers and the call give them).
  std::unique_ptr<GemmCall> gemm_call(const GemmProblem& p);
  std::unique_ptr<RowsCall> rows_call(const Problem& p);
  // p of an op Runtime::run launches as plain buffers (UsageError for GEMM and the row ops).
  std::unique_ptr<BuffersCall> buffers_call(const Problem& p);

  // A user's kernel from its spec file (ktune::load_kernel_spec: a bad spec is a UsageError
  // naming its field). The Kernel refers to this runtime, which must outlive it. Loading a spec new
  // to the process re-reads the store and tables (its entries): call it before serving calls from
  // other threads, not beside them.
  Kernel kernel(const std::string& spec_path);
  // The Kernel of an op a spec registered before ("name@version"); throws UsageError otherwise.
  Kernel loaded_kernel(const std::string& op);

  struct Impl;

 private:
  friend class GemmCall;
  friend class RowsCall;
  friend class BuffersCall;
  friend class BuffersLauncher;
  // run() of an op of plain buffers (runtime/buffers_launch.cpp's launcher).
  void run_buffers(const Problem& p, const std::vector<void*>& buffers, CUstream stream);
  // Compiles or loads what launching s on p needs, once per key (thread-safe). The result lives
  // as long as the runtime.
  const void* prepare(const std::string& key, const Problem& p, const Selection& s);
  // The prepared launch of p (alpha, beta and alignment class set), found by key or resolved and
  // prepared (first use measures).
  const void* prepared_gemm(const GemmProblem& p, const void* A, const void* B, CUstream stream);
  void launch(const void* prepared, const GemmProblem& p, const void* A, const void* B, void* C, CUstream stream);
  // The same for row ops; null when nothing can be kept yet (a first call inside a stream capture:
  // it ran the first candidate itself, and a later call outside the capture measures).
  const void* prepared_rows(const Problem& p, const void* x, void* y, const void* weight, const void* bias,
                                     CUstream stream);
  void launch_prepared_rows(const void* prepared, const Problem& p, const void* x, void* y, const void* weight, const void* bias,
                            CUstream stream);
  // The same for ops of plain buffers.
  const void* prepared_buffers(const Problem& p, const std::vector<void*>& buffers, CUstream stream);
  void launch_prepared_buffers(const void* prepared, const Problem& p, const std::vector<const void*>& buffers,
                               CUstream stream);
  // The stream's workspace for a plan that asks for one (a user's kernel's temporaries), else 0.
  CUdeviceptr buffers_workspace(const Problem& p, const LaunchPlan& plan, CUstream stream);
  // What both share once key is not found (serve.cpp): resolved and prepared; run_once serves a
  // first call inside a stream capture.
  const void* prepared_generic(const std::string& key, const Problem& p, const char* entry,
                               const std::function<Selection()>& resolve,
                               const std::function<void(Module&, const LaunchPlan&)>& run_once);
  // C = beta * C (alpha == 0 or K == 0; nothing for M or N == 0), reading neither A nor B.
  void scale_only(const GemmProblem& p, void* C, CUstream stream);

  std::unique_ptr<Impl> impl_;
};

} // namespace ktune
