// cuBLAS, for the things ktune needs it for: the baseline every tuned kernel is compared with,
// the runtime's answer where no kernel beats it, and the FP64 reference product every kernel is
// verified against.
#pragma once
#include <cuda.h>

#include <cstdint>
#include <map>
#include <memory>
#include <tuple>

#include "gemm/gemm_args.h"
#include "ktune/gemm_problem.h"

struct cublasContext;
struct cublasLtContext;

namespace ktune {

class Cublas {
 public:
  Cublas(); // needs a current CUDA context (the device's primary context)
  ~Cublas();
  Cublas(const Cublas&) = delete;
  Cublas& operator=(const Cublas&) = delete;

  // C = alpha * A * B + beta * C in FP32 with the problem's layouts (default math mode: no TF32).
  void sgemm(const GemmProblem& p, const KtuneGemmArgs& a, CUstream stream);
  // The same for half-precision operands (p.dtype bf16 or f16: A, B and C of that type; the
  // pointers of a are reinterpreted), FP32 compute (cublasGemmEx, CUBLAS_COMPUTE_32F): the
  // baseline a half-precision kernel is held against. Throws UsageError for another dtype.
  void gemm_half(const GemmProblem& p, const KtuneGemmArgs& a, CUstream stream);
  // The baseline of p's dtype: sgemm for f32, gemm_half for bf16 and f16.
  void gemm(const GemmProblem& p, const KtuneGemmArgs& a, CUstream stream);
  // The same product in FP64 on widened copies of the operands; C has leading dimension ldc.
  void dgemm(const GemmProblem& p, const double* A, const double* B, double* C, CUstream stream);

  // The runtime's serving path: gemm()'s product (same compute type, same semantics, beta == 0
  // leaves C unread) through cuBLASLt with a plan kept per problem (sizes, leading dimensions,
  // layouts, dtype, alignment class): the descriptors and the heuristic's first algorithm for
  // kServeWorkspaceBytes of workspace are made once, so a call costs cublasLtMatmul's launch
  // alone where cublasGemmEx runs its heuristic on every call (bench/rows_call_overhead.py:
  // several microseconds of host time a call). workspace: at least kServeWorkspaceBytes on stream.
  // A problem the heuristic has no algorithm for goes through gemm().
  static constexpr size_t kServeWorkspaceBytes = size_t(32) << 20;
  void serve(const GemmProblem& p, const KtuneGemmArgs& a, CUstream stream, void* workspace);

 private:
  struct LtPlan;
  using PlanKey = std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int, int, int, int>;
  const LtPlan* plan(const GemmProblem& p);

  cublasContext* handle_ = nullptr;
  cublasLtContext* lt_ = nullptr;
  std::map<PlanKey, std::unique_ptr<LtPlan>> plans_;
};

} // namespace ktune
