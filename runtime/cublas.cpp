#include "runtime/cublas.h"

#include <cublas_v2.h>

#include <string>

#include "ktune/error.h"
#include "ktune/gemm_problem.h"

namespace ktune {
namespace {

[[noreturn]] void fail(cublasStatus_t s, const char* call, const std::string& context) {
  throw Error(std::string(call) + " failed: " + cublasGetStatusName(s) + ": " + cublasGetStatusString(s) + " (" + context + ")");
}

void check_cublas(cublasStatus_t s, const char* call, const std::string& context) {
  if (s != CUBLAS_STATUS_SUCCESS) fail(s, call, context);
}

// The same on the serving path (every gemm the runtime hands to cuBLAS): the problem's key is
// built only when the call failed.
void check_cublas(cublasStatus_t s, const char* call, const GemmProblem& p) {
  if (s != CUBLAS_STATUS_SUCCESS) fail(s, call, p.key());
}

// Row-major C = A * B is column-major C^T = B^T * A^T: swap the operands and the M/N roles. An
// operand stored row-major is, seen column-major, its own transpose: no transpose flag.
struct ColumnMajorView {
  cublasOperation_t op_first, op_second;
  int m, n, k;
};

ColumnMajorView view(const GemmProblem& p) {
  return {p.b == Layout::row ? CUBLAS_OP_N : CUBLAS_OP_T, p.a == Layout::row ? CUBLAS_OP_N : CUBLAS_OP_T, int(p.n),
          int(p.m), int(p.k)};
}

} // namespace

Cublas::Cublas() {
  check_cublas(cublasCreate(&handle_), "cublasCreate", "creating the cuBLAS handle");
  check_cublas(cublasSetMathMode(handle_, CUBLAS_DEFAULT_MATH), "cublasSetMathMode", "FP32 without TF32");
}

Cublas::~Cublas() {
  if (handle_) cublasDestroy(handle_);
}

void Cublas::sgemm(const GemmProblem& p, const KtuneGemmArgs& a, CUstream stream) {
  check_cublas(cublasSetStream(handle_, reinterpret_cast<cudaStream_t>(stream)), "cublasSetStream", p);
  const ColumnMajorView v = view(p);
  check_cublas(cublasSgemm(handle_, v.op_first, v.op_second, v.m, v.n, v.k, &a.alpha, a.B, int(a.ldb), a.A, int(a.lda),
                           &a.beta, a.C, int(a.ldc)),
               "cublasSgemm", p);
}

void Cublas::gemm_half(const GemmProblem& p, const KtuneGemmArgs& a, CUstream stream) {
  if (p.dtype != DType::bf16 && p.dtype != DType::f16)
    throw UsageError("Cublas::gemm_half takes bf16 or f16 problems, not " + p.key());
  check_cublas(cublasSetStream(handle_, reinterpret_cast<cudaStream_t>(stream)), "cublasSetStream", p);
  const cudaDataType t = p.dtype == DType::bf16 ? CUDA_R_16BF : CUDA_R_16F;
  const ColumnMajorView v = view(p);
  check_cublas(cublasGemmEx(handle_, v.op_first, v.op_second, v.m, v.n, v.k, &a.alpha, a.B, t, int(a.ldb), a.A, t,
                            int(a.lda), &a.beta, a.C, t, int(a.ldc), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
               "cublasGemmEx", p);
}

void Cublas::gemm(const GemmProblem& p, const KtuneGemmArgs& a, CUstream stream) {
  switch (p.dtype) {
    case DType::f32: return sgemm(p, a, stream);
    case DType::bf16:
    case DType::f16: return gemm_half(p, a, stream);
    case DType::tf32: break;
  }
  throw UsageError("no cuBLAS baseline for " + p.key());
}

void Cublas::dgemm(const GemmProblem& p, const double* A, const double* B, double* C, CUstream stream) {
  check_cublas(cublasSetStream(handle_, reinterpret_cast<cudaStream_t>(stream)), "cublasSetStream", p.key());
  const ColumnMajorView v = view(p);
  const double alpha = p.alpha, beta = p.beta;
  check_cublas(cublasDgemm(handle_, v.op_first, v.op_second, v.m, v.n, v.k, &alpha, B, int(p.eff_ldb()), A,
                           int(p.eff_lda()), &beta, C, int(p.eff_ldc())),
               "cublasDgemm", p.key() + " (FP64 reference)");
}

} // namespace ktune
