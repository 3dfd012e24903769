// cuBLAS, for the two things ktune needs it for: the FP32 baseline every tuned kernel is
// compared with, and the FP64 reference product every kernel is verified against.
#pragma once
#include <cuda.h>

#include "gemm/gemm_args.h"
#include "ktune/problem.h"

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
  // The same product in FP64 on widened copies of the operands; C has leading dimension ldc.
  void dgemm(const GemmProblem& p, const double* A, const double* B, double* C, CUstream stream);

 private:
  cublasContext* handle_ = nullptr;
};

} // namespace ktune
