// The entry points that launch: gemm and gemm_ex (BLAS's quick returns, the prepared launch of a
// problem found by key or resolved, compiled and kept), the row ops, run (any op by its buffers;
// the ops of plain buffers), and the prepared launches the call handles (calls.cpp) keep.
#include <algorithm>
#include <cstdint>
#include <functional>

#include "gemm/gemm_families.h"
#include "ktune/error.h"
#include "runtime/buffers_launch.h"
#include "runtime/op_launcher.h"
#include "runtime/cuda_check.h"
#include "runtime/driver.h"
#include "runtime/gemm_launch.h"
#include "runtime/rows_launch.h"
#include "runtime/runtime_impl.h"

namespace ktune {

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

const void* Runtime::prepare(const std::string& key, const Problem& p, const Selection& sel) {
  Impl& m = *impl_;
  m.ensure_context();
  if (const Prepared* known = m.find_prepared(key)) return known;
  auto prep = std::make_shared<Prepared>();
  prep->sel = sel;
  if (sel.provenance != Provenance::cublas) {
    const Family* f = m.family(sel.family);
    if (!f) throw UsageError("ktune::Runtime: unknown family '" + sel.family + "'");
    const Config c = f->canonical(sel.config);
    prep->module = m.module_async(*f, c, p)();
    prep->plan = f->launch_plan(c, p);
  }
  std::lock_guard<std::mutex> lk(m.mod_mu);
  return m.prepared.emplace(key, prep).first->second.get();
}

const void* Runtime::prepared_gemm(const GemmProblem& p, const void* A, const void* B, CUstream stream) {
  const std::string key = p.key();
  if (const Prepared* known = impl_->find_prepared(key)) return known;
  p.validate();
  impl_->ensure_context();
  return prepare(key, p, impl_->resolve(p, A, B, stream, *this));
}

void Runtime::launch(const void* prepared, const GemmProblem& p, const void* A, const void* B, void* C,
                     CUstream stream) {
  Impl& m = *impl_;
  const auto* prep = static_cast<const Prepared*>(prepared);
  m.make_context_current();
  // Half-precision operands travel in the float pointers of the argument block (gemm_args.h).
  KtuneGemmArgs a =
      gemm_args(p, static_cast<const float*>(A), static_cast<const float*>(B), static_cast<float*>(C), nullptr);
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

// gemm() takes float pointers: a problem of another dtype is a caller's mistake, whatever path
// (kernel, cuBLAS, quick return) it would take. gemm_ex takes any storage dtype.
void require_f32(const GemmProblem& p) {
  if (p.dtype != DType::f32)
    throw UsageError("ktune::Runtime::gemm takes f32 operands; " + p.key() + " is " + to_string(p.dtype) +
                     " (use gemm_ex)");
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

void Runtime::gemm(const GemmProblem& problem, const Selection& s, const float* A, const float* B, float* C,
                   float alpha, float beta, CUstream stream) {
  require_f32(problem);
  gemm_ex(problem, s, A, B, C, alpha, beta, stream);
}

void Runtime::gemm_ex(const GemmProblem& problem, const void* A, const void* B, void* C, float alpha, float beta,
                      CUstream stream) {
  require_storage(problem, "ktune::Runtime::gemm_ex");
  GemmProblem p = problem;
  p.alpha = alpha, p.beta = beta;
  if (blas_quick_path(p)) return scale_only(p, C, stream);
  p = launched(problem, A, B, C, alpha, beta);
  launch(prepared_gemm(p, A, B, stream), p, A, B, C, stream);
}

void Runtime::gemm_ex(const GemmProblem& problem, const Selection& s, const void* A, const void* B, void* C,
                      float alpha, float beta, CUstream stream) {
  require_storage(problem, "ktune::Runtime::gemm_ex");
  GemmProblem p = problem;
  p.alpha = alpha, p.beta = beta;
  if (blas_quick_path(p)) return scale_only(p, C, stream);
  p = launched(problem, A, B, C, alpha, beta);
  // Keyed apart from the per-problem cache of the plain gemm().
  const std::string key =
      p.key() + "|" + (s.provenance == Provenance::cublas ? "cublas" : s.family + s.config.to_json());
  launch(prepare(key, p, s), p, A, B, C, stream);
}

void Runtime::rows(const Problem& problem, const void* x, void* y, const void* weight, const void* bias,
                   CUstream stream) {
  if (problem.op == "gemm") throw UsageError("ktune::Runtime::rows: " + problem.key() + " is a GEMM (use gemm_ex)");
  if (rows_empty(problem)) return;
  Problem p = problem;
  if (!x || !y) throw UsageError("ktune::Runtime::rows: x or y is null for " + p.key());
  // The alignment class the pointers allow (weight and bias are read with the same vectors).
  p.align = Problem::alignment_with_pointers(Problem::alignment_of(p.ld, element_bytes(p.dtype)), {x, y, weight, bias},
                                             element_bytes(p.dtype));
  if (const void* prep = prepared_rows(p, x, y, weight, bias, stream))
    launch_prepared_rows(prep, p, x, y, weight, bias, stream);
}

// The prepared launch of a problem that best_config(Problem) serves (row ops, ops of plain buffers)
// and that its caller did not find under key: resolved (first use measures through `resolve`) and
// prepared. Inside a stream capture, where nothing can be timed, the first candidate runs through
// `run_once` without being kept, so that a later call outside the capture measures; null then.
// The callers look the key up first, so that a call already prepared builds no std::function.
const void* Runtime::prepared_generic(const std::string& key, const Problem& p, const char* entry,
                                      const std::function<Selection()>& resolve,
                                      const std::function<void(Module&, const LaunchPlan&)>& run_once) {
  Impl& m = *impl_;
  Selection sel = best_config(p); // validates
  m.ensure_context();
  if (sel.measure_pending) {
    sel = resolve();
    if (sel.measure_pending) {
      const Family* f = m.family(sel.family);
      if (!f) throw UsageError(std::string(entry) + ": unknown family '" + sel.family + "'");
      const Config c = f->canonical(sel.config);
      run_once(*m.module_async(*f, c, p)(), f->launch_plan(c, p));
      return nullptr;
    }
  }
  return prepare(key, p, sel);
}

const void* Runtime::prepared_rows(const Problem& p, const void* x, void* y, const void* weight, const void* bias,
                                   CUstream stream) {
  const std::string key = p.key();
  if (const Prepared* known = impl_->find_prepared(key)) return known;
  return prepared_generic(
      key, p, "ktune::Runtime::rows", [&] { return impl_->resolve_rows(p, x, weight, bias, stream, *this); },
      [&](Module& mod, const LaunchPlan& plan) { ::ktune::launch_rows(mod, plan, rows_args(p, x, y, weight, bias), stream); });
}

void Runtime::launch_prepared_rows(const void* prepared, const Problem& p, const void* x, void* y, const void* weight,
                                   const void* bias, CUstream stream) {
  const auto* prep = static_cast<const Prepared*>(prepared);
  impl_->make_context_current();
  ::ktune::launch_rows(*prep->module, prep->plan, rows_args(p, x, y, weight, bias), stream);
}

void Runtime::run(const Problem& problem, const std::vector<void*>& buffers, CUstream stream) {
  op_launcher(op_info(problem.op)).run(*this, problem, buffers, stream);
}

void Runtime::run_buffers(const Problem& problem, const std::vector<void*>& buffers, CUstream stream) {
  // Nothing to write (every output empty): nothing to look up or launch, whatever the op's own
  // checks say of an empty problem; negative sizes are still an error.
  if (std::any_of(problem.dims.begin(), problem.dims.end(), [](int64_t d) { return d < 0; })) validate(problem);
  const std::vector<const void*> ptrs(buffers.begin(), buffers.end());
  if (BufferArgs(problem, ptrs).empty()) return; // checks the count and the pointers
  validate(problem);
  Problem p = problem;
  p.align = Problem::alignment_of(p.ld, element_bytes(p.dtype));
  p.align = operands_alignment(p, p.align, ptrs.data(), ptrs.size());
  const auto* prep = prepared_buffers(p, buffers, stream);
  if (!prep) return;
  launch_prepared_buffers(prep, p, ptrs, stream);
}

void Runtime::launch_prepared_buffers(const void* prepared, const Problem& p, const std::vector<const void*>& buffers,
                                      CUstream stream) {
  const auto* prep = static_cast<const Prepared*>(prepared);
  impl_->make_context_current();
  BufferArgs args(p, buffers, buffers_workspace(p, prep->plan, stream));
  launch_buffers(*prep->module, prep->plan, args, stream);
}

CUdeviceptr Runtime::buffers_workspace(const Problem& p, const LaunchPlan& plan, CUstream stream) {
  // Named by the op only: this runs on every call, and a key is a string to build.
  return plan.workspace_bytes ? impl_->workspace(stream, plan.workspace_bytes, "op " + p.op)->ptr() : 0;
}

const void* Runtime::prepared_buffers(const Problem& p, const std::vector<void*>& buffers, CUstream stream) {
  const std::string key = serving_key(p); // its kernel and plan serve p (OpInfo::serve_as)
  if (const Prepared* known = impl_->find_prepared(key)) return known;
  return prepared_generic(
      key, p, "ktune::Runtime::run", [&] { return impl_->resolve_buffers(p, buffers, stream, *this); },
      [&](Module& mod, const LaunchPlan& plan) {
        BufferArgs a(p, std::vector<const void*>(buffers.begin(), buffers.end()), buffers_workspace(p, plan, stream));
        launch_buffers(mod, plan, a, stream);
      });
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

void Runtime::softmax(DType dt, int64_t rows_, int64_t cols, const void* x, int64_t ldx, void* y, int64_t ldy,
                      float scale, CUstream stream) {
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

namespace {
// An attention op's problem as Runtime::attention and attention_varlen take it: strides empty for
// packed, else as many as the op's operands have (`which` names them in the error).
Problem attention_problem(const char* op, std::vector<int64_t> dims, bool causal, DType dtype,
                          const std::vector<int64_t>& strides, float scale, const char* which) {
  Problem p = Problem::make(op, std::move(dims), causal ? "causal" : "full", dtype);
  if (!strides.empty()) {
    if (strides.size() != p.ld.size())
      throw UsageError(std::string("ktune::Runtime::") + op + ": " + std::to_string(strides.size()) +
                       " strides given, it takes " + std::to_string(p.ld.size()) + " (" + which + " of q, k, v and o)");
    p.ld = strides;
  }
  p.scalars["scale"] = scale;
  return p;
}
} // namespace

void Runtime::attention(DType dtype, int64_t batch, int64_t heads, int64_t kv_heads, int64_t q_len, int64_t kv_len,
                        int64_t head_dim, bool causal, const void* q, const void* k, const void* v, void* o, float* lse,
                        const std::vector<int64_t>& strides, float scale, CUstream stream) {
  run(attention_problem("attention", {batch, heads, kv_heads, q_len, kv_len, head_dim}, causal, dtype, strides, scale,
                        "batch, sequence and head"),
      {const_cast<void*>(q), const_cast<void*>(k), const_cast<void*>(v), o, lse}, stream);
}

void Runtime::attention_varlen(DType dtype, int64_t batch, int64_t heads, int64_t kv_heads, int64_t q_len,
                               int64_t kv_len, int64_t head_dim, int64_t total_q, int64_t total_kv, bool causal,
                               const void* q, const void* k, const void* v, const int32_t* cu_q, const int32_t* cu_k,
                               void* o, float* lse, const std::vector<int64_t>& strides, float scale, CUstream stream) {
  run(attention_problem("attention_varlen", {batch, heads, kv_heads, q_len, kv_len, head_dim, total_q, total_kv}, causal,
                        dtype, strides, scale, "token and head"),
      {const_cast<void*>(q), const_cast<void*>(k), const_cast<void*>(v), const_cast<int32_t*>(cu_q),
       const_cast<int32_t*>(cu_k), o, lse},
      stream);
}

void Runtime::attention_paged(DType dtype, int64_t batch, int64_t heads, int64_t kv_heads, int64_t q_len,
                              int64_t head_dim, int64_t page_size, int64_t pages, int64_t pages_per_seq, bool causal,
                              const void* q, const void* k_cache, const void* v_cache, const int32_t* block_table,
                              const int32_t* seq_lens, void* o, float* lse, const std::vector<int64_t>& strides,
                              float scale, CUstream stream) {
  // The op's kv_len is a sequence's capacity; the product is checked here, the rest by the op.
  if (page_size < 1 || pages_per_seq < 1 || pages_per_seq > INT32_MAX / page_size)
    throw UsageError("ktune::Runtime::attention_paged: page_size (" + std::to_string(page_size) +
                     ") and pages_per_seq (" + std::to_string(pages_per_seq) +
                     ") must be positive, a sequence's capacity (their product) at most 2^31 - 1 keys");
  run(attention_problem("attention_paged",
                        {batch, heads, kv_heads, q_len, page_size * pages_per_seq, head_dim, page_size, pages}, causal,
                        dtype, strides, scale, "batch / page, sequence / slot and head"),
      {const_cast<void*>(q), const_cast<void*>(k_cache), const_cast<void*>(v_cache),
       const_cast<int32_t*>(block_table), const_cast<int32_t*>(seq_lens), o, lse},
      stream);
}

} // namespace ktune
