// The C API over ktune::Runtime. No exception crosses it: each becomes a status code and a
// thread-local message.
#include "ktune/ktune.h"

#include <filesystem>
#include <string>

#include "db/store.h"
#include "ktune/error.h"
#include "ktune/runtime.h"
#include "runtime/cuda_check.h"

struct ktune_handle_s {
  std::unique_ptr<ktune::Runtime> rt;
};

namespace {

thread_local std::string last_error;

ktune_status_t fail(ktune_status_t s, std::string msg) {
  last_error = std::move(msg);
  return s;
}

template <class F>
ktune_status_t guarded(const char* fn, F&& f) {
  try {
    last_error.clear();
    return f();
  } catch (const ktune::UsageError& e) {
    return fail(KTUNE_INVALID_VALUE, std::string(fn) + ": " + e.what());
  } catch (const ktune::CudaError& e) {
    return fail(KTUNE_CUDA_ERROR, std::string(fn) + ": " + e.what());
  } catch (const ktune::Error& e) {
    const std::string m = e.what();
    return fail(m.find("no GPU") != std::string::npos || m.find("no NVIDIA driver") != std::string::npos ? KTUNE_NO_DEVICE
                                                                                                         : KTUNE_CUDA_ERROR,
                std::string(fn) + ": " + m);
  } catch (const std::exception& e) {
    return fail(KTUNE_INTERNAL_ERROR, std::string(fn) + ": " + e.what());
  }
}

} // namespace

extern "C" {

ktune_status_t ktune_create(ktune_handle_t* handle, const char* db_path) { return ktune_create_ex(handle, db_path, 0); }

ktune_status_t ktune_create_ex(ktune_handle_t* handle, const char* db_path, unsigned flags) {
  if (!handle) return fail(KTUNE_INVALID_VALUE, "ktune_create: handle is NULL");
  *handle = nullptr;
  if (flags & ~unsigned(KTUNE_FLAG_TF32X3))
    return fail(KTUNE_INVALID_VALUE, "ktune_create_ex: unknown flags " + std::to_string(flags & ~unsigned(KTUNE_FLAG_TF32X3)));
  return guarded("ktune_create", [&] {
    ktune::RuntimeOptions o;
    o.db_path = db_path ? db_path : ktune::default_db_path();
    o.tf32x3 = (flags & KTUNE_FLAG_TF32X3) != 0;
    auto h = std::make_unique<ktune_handle_s>();
    h->rt = std::make_unique<ktune::Runtime>(o);
    *handle = h.release();
    return KTUNE_SUCCESS;
  });
}

ktune_status_t ktune_destroy(ktune_handle_t handle) {
  if (!handle) return fail(KTUNE_INVALID_VALUE, "ktune_destroy: handle is NULL");
  delete handle;
  return KTUNE_SUCCESS;
}

ktune_status_t ktune_sgemm(ktune_handle_t handle, ktune_order_t order, ktune_op_t transa, ktune_op_t transb, int m, int n,
                           int k, float alpha, const float* A, int lda, const float* B, int ldb, float beta, float* C,
                           int ldc, void* stream) {
  auto bad = [](const std::string& why) { return fail(KTUNE_INVALID_VALUE, "ktune_sgemm: " + why); };
  if (order != KTUNE_ROW_MAJOR && order != KTUNE_COL_MAJOR) return bad("order must be KTUNE_ROW_MAJOR or KTUNE_COL_MAJOR");
  if ((transa != KTUNE_OP_N && transa != KTUNE_OP_T) || (transb != KTUNE_OP_N && transb != KTUNE_OP_T))
    return bad("transa and transb must be KTUNE_OP_N or KTUNE_OP_T");
  if (m < 0 || n < 0 || k < 0)
    return bad("negative size (m = " + std::to_string(m) + ", n = " + std::to_string(n) + ", k = " + std::to_string(k) + ")");
  // Minimum leading dimensions as in cblas_sgemm: rows of the stored matrix in column-major
  // order, columns in row-major order.
  const bool row = order == KTUNE_ROW_MAJOR;
  const int a_min = std::max(1, (row == (transa == KTUNE_OP_N)) ? k : m);
  const int b_min = std::max(1, (row == (transb == KTUNE_OP_N)) ? n : k);
  const int c_min = std::max(1, row ? n : m);
  if (lda < a_min) return bad("lda = " + std::to_string(lda) + " < " + std::to_string(a_min) + " required");
  if (ldb < b_min) return bad("ldb = " + std::to_string(ldb) + " < " + std::to_string(b_min) + " required");
  if (ldc < c_min) return bad("ldc = " + std::to_string(ldc) + " < " + std::to_string(c_min) + " required");
  if (!handle) return bad("handle is NULL");
  if (m == 0 || n == 0) return KTUNE_SUCCESS; // nothing to compute, as in BLAS
  if (!C) return bad("C is NULL");
  if (k > 0 && alpha != 0.0f && (!A || !B)) return bad("A or B is NULL"); // BLAS reads neither when alpha or k is 0
  return guarded("ktune_sgemm", [&] {
    // ktune's problems are row-major C. A column-major C is the row-major C^T = op(B)^T op(A)^T:
    // swap the operands and M with N. A column-major op(X) read row-major is op(X)^T, so each
    // operand keeps its N/T flag.
    ktune::GemmProblem p;
    const bool a_t = transa == KTUNE_OP_T, b_t = transb == KTUNE_OP_T;
    if (row) {
      p = ktune::GemmProblem::make(m, n, k, std::string(a_t ? "T" : "N") + (b_t ? "T" : "N"));
      p.lda = lda, p.ldb = ldb, p.ldc = ldc;
    } else {
      p = ktune::GemmProblem::make(n, m, k, std::string(b_t ? "T" : "N") + (a_t ? "T" : "N"));
      p.lda = ldb, p.ldb = lda, p.ldc = ldc;
      std::swap(A, B);
    }
    p.align = ktune::GemmProblem::alignment_of(p.lda, p.ldb, p.ldc);
    handle->rt->gemm(p, A, B, C, alpha, beta, static_cast<CUstream>(stream));
    return KTUNE_SUCCESS;
  });
}

const char* ktune_last_error(void) { return last_error.c_str(); }

} // extern "C"
