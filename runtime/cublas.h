// cuBLAS, for the two things ktune needs it for: the FP32 baseline every tuned kernel is
// compared with, and the FP64 reference product every kernel is verified against.
#pragma once
#include <cuda.h>

#include "gemm/gemm_args.h"
#include "ktune/gemm_problem.h"

struct cublasContext;

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

 private:
  cublasContext* handle_ = nullptr;
};

} // namespace ktune
