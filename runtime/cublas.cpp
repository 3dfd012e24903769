#include "runtime/cublas.h"

#include <cublasLt.h>
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

struct Cublas::LtPlan {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t first = nullptr, second = nullptr, c = nullptr;
  cublasLtMatmulAlgo_t algo{};
  bool found = false; // the heuristic returned an algorithm; otherwise gemm() serves
  ~LtPlan() {
    if (c) cublasLtMatrixLayoutDestroy(c);
    if (second) cublasLtMatrixLayoutDestroy(second);
    if (first) cublasLtMatrixLayoutDestroy(first);
    if (op) cublasLtMatmulDescDestroy(op);
  }
};

Cublas::~Cublas() {
  plans_.clear();
  if (lt_) cublasLtDestroy(lt_);
  if (handle_) cublasDestroy(handle_);
}

const Cublas::LtPlan* Cublas::plan(const GemmProblem& p) {
  const PlanKey key{p.m, p.n, p.k, p.eff_lda(), p.eff_ldb(), p.eff_ldc(), int(p.dtype), int(p.a), int(p.b), p.align};
  if (auto it = plans_.find(key); it != plans_.end()) return it->second.get();
  if (!lt_) check_cublas(cublasLtCreate(&lt_), "cublasLtCreate", p);
  auto pl = std::make_unique<LtPlan>();
  // The column-major view cuBLAS sees (view()): C^T (n x m) = op(B) (n x k) * op(A) (k x m).
  const ColumnMajorView v = view(p);
  const cudaDataType t = p.dtype == DType::bf16 ? CUDA_R_16BF : p.dtype == DType::f16 ? CUDA_R_16F : CUDA_R_32F;
  // FP32 compute for every dtype: no TF32 for f32 (cublasSgemm's default math), FP32
  // accumulation for the half types (gemm_half's CUBLAS_COMPUTE_32F).
  check_cublas(cublasLtMatmulDescCreate(&pl->op, CUBLAS_COMPUTE_32F, CUDA_R_32F), "cublasLtMatmulDescCreate", p);
  check_cublas(cublasLtMatmulDescSetAttribute(pl->op, CUBLASLT_MATMUL_DESC_TRANSA, &v.op_first, sizeof v.op_first),
               "cublasLtMatmulDescSetAttribute(TRANSA)", p);
  check_cublas(cublasLtMatmulDescSetAttribute(pl->op, CUBLASLT_MATMUL_DESC_TRANSB, &v.op_second, sizeof v.op_second),
               "cublasLtMatmulDescSetAttribute(TRANSB)", p);
  const bool first_n = v.op_first == CUBLAS_OP_N, second_n = v.op_second == CUBLAS_OP_N;
  check_cublas(cublasLtMatrixLayoutCreate(&pl->first, t, first_n ? v.m : v.k, first_n ? v.k : v.m, p.eff_ldb()),
               "cublasLtMatrixLayoutCreate(B)", p);
  check_cublas(cublasLtMatrixLayoutCreate(&pl->second, t, second_n ? v.k : v.n, second_n ? v.n : v.k, p.eff_lda()),
               "cublasLtMatrixLayoutCreate(A)", p);
  check_cublas(cublasLtMatrixLayoutCreate(&pl->c, t, v.m, v.n, p.eff_ldc()), "cublasLtMatrixLayoutCreate(C)", p);
  cublasLtMatmulPreference_t pref = nullptr;
  check_cublas(cublasLtMatmulPreferenceCreate(&pref), "cublasLtMatmulPreferenceCreate", p);
  const uint64_t ws = kServeWorkspaceBytes;
  const uint32_t align = uint32_t(p.align);
  cublasStatus_t st = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws);
  for (auto at : {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
                  CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES})
    if (st == CUBLAS_STATUS_SUCCESS) st = cublasLtMatmulPreferenceSetAttribute(pref, at, &align, sizeof align);
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  if (st == CUBLAS_STATUS_SUCCESS)
    st = cublasLtMatmulAlgoGetHeuristic(lt_, pl->op, pl->first, pl->second, pl->c, pl->c, pref, 1, &result, &found);
  cublasLtMatmulPreferenceDestroy(pref);
  // No algorithm for this problem (CUBLAS_STATUS_NOT_SUPPORTED): gemm() serves it instead.
  if (st != CUBLAS_STATUS_NOT_SUPPORTED) check_cublas(st, "cublasLtMatmulAlgoGetHeuristic", p);
  pl->found = st == CUBLAS_STATUS_SUCCESS && found > 0;
  if (pl->found) pl->algo = result.algo;
  return plans_.emplace(key, std::move(pl)).first->second.get();
}

void Cublas::serve(const GemmProblem& p, const KtuneGemmArgs& a, CUstream stream, void* workspace) {
  const LtPlan* pl = plan(p);
  if (!pl->found) return gemm(p, a, stream);
  check_cublas(cublasLtMatmul(lt_, pl->op, &a.alpha, a.B, pl->first, a.A, pl->second, &a.beta, a.C, pl->c, a.C, pl->c,
                              &pl->algo, workspace, kServeWorkspaceBytes, reinterpret_cast<cudaStream_t>(stream)),
               "cublasLtMatmul", p);
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
    case DType::tf32:
    case DType::f64: break; // f64: user kernels only (validate refuses it for GEMM)
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
