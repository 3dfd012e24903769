// The C API over ktune::Runtime. No exception crosses it: each becomes a status code and a
// thread-local message.
#include "ktune/ktune.h"

#include <cmath>
#include <cstring>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "db/store.h"
#include "ktune/error.h"
#include "ktune/runtime.h"
#include "runtime/cuda_check.h"
#include "ktune/gemm_problem.h"

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

namespace {

// The one implementation behind ktune_sgemm and ktune_gemm_ex; fn names the entry point in errors.
ktune_status_t gemm_any(const char* fn, ktune::DType dtype, ktune_handle_t handle, ktune_order_t order, ktune_op_t transa,
                        ktune_op_t transb, int m, int n, int k, float alpha, const void* A, int lda, const void* B, int ldb,
                        float beta, void* C, int ldc, void* stream) {
  auto bad = [&](const std::string& why) { return fail(KTUNE_INVALID_VALUE, std::string(fn) + ": " + why); };
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
  return guarded(fn, [&] {
    // ktune's problems are row-major C. A column-major C is the row-major C^T = op(B)^T op(A)^T:
    // swap the operands and M with N. A column-major op(X) read row-major is op(X)^T, so each
    // operand keeps its N/T flag.
    ktune::GemmProblem p;
    const bool a_t = transa == KTUNE_OP_T, b_t = transb == KTUNE_OP_T;
    if (row) {
      p = ktune::GemmProblem::make(m, n, k, std::string(a_t ? "T" : "N") + (b_t ? "T" : "N"), dtype);
      p.lda = lda, p.ldb = ldb, p.ldc = ldc;
    } else {
      p = ktune::GemmProblem::make(n, m, k, std::string(b_t ? "T" : "N") + (a_t ? "T" : "N"), dtype);
      p.lda = ldb, p.ldb = lda, p.ldc = ldc;
      std::swap(A, B);
    }
    p.align = ktune::GemmProblem::alignment_of(p.lda, p.ldb, p.ldc, ktune::element_bytes(dtype));
    handle->rt->gemm_ex(p, A, B, C, alpha, beta, static_cast<CUstream>(stream));
    return KTUNE_SUCCESS;
  });
}

const char* type_name(ktune_datatype_t t) {
  switch (t) {
    case KTUNE_R_32F: return "KTUNE_R_32F";
    case KTUNE_R_16F: return "KTUNE_R_16F";
    case KTUNE_R_16BF: return "KTUNE_R_16BF";
  }
  return nullptr;
}

// Why t is refused (type_name(t) is null).
std::string unknown_type(ktune_datatype_t t) {
  if (t == KTUNE_R_64F) return "element type KTUNE_R_64F is for user kernels only (ktune_kernel_launch)";
  return "unknown element type " + std::to_string(int(t)) + " (KTUNE_R_32F, KTUNE_R_16F or KTUNE_R_16BF)";
}

// The dtype of a type type_name knows.
ktune::DType dtype_of(ktune_datatype_t t) {
  return t == KTUNE_R_32F ? ktune::DType::f32 : t == KTUNE_R_16F ? ktune::DType::f16 : t == KTUNE_R_64F ? ktune::DType::f64 : ktune::DType::bf16;
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
  return gemm_any("ktune_sgemm", ktune::DType::f32, handle, order, transa, transb, m, n, k, alpha, A, lda, B, ldb, beta, C,
                  ldc, stream);
}

ktune_status_t ktune_gemm_ex(ktune_handle_t handle, ktune_order_t order, ktune_op_t transa, ktune_op_t transb, int m, int n,
                             int k, float alpha, const void* A, ktune_datatype_t a_type, int lda, const void* B,
                             ktune_datatype_t b_type, int ldb, float beta, void* C, ktune_datatype_t c_type, int ldc,
                             ktune_compute_t compute, void* stream) {
  auto bad = [](const std::string& why) { return fail(KTUNE_INVALID_VALUE, "ktune_gemm_ex: " + why); };
  for (ktune_datatype_t t : {a_type, b_type, c_type})
    if (!type_name(t)) return bad(unknown_type(t));
  if (a_type != b_type || b_type != c_type)
    return bad(std::string("mixed element types are not served (A ") + type_name(a_type) + ", B " + type_name(b_type) + ", C " +
               type_name(c_type) + "): A, B and C must be of one type");
  if (compute != KTUNE_COMPUTE_32F) return bad("unknown compute type " + std::to_string(int(compute)) + " (KTUNE_COMPUTE_32F)");
  return gemm_any("ktune_gemm_ex", dtype_of(a_type), handle, order, transa, transb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc, stream);
}

namespace {

// The checks every row entry point makes, then run (the runtime's typed entry point) on the
// element type.
ktune_status_t rows_any(const char* fn, ktune_handle_t handle, ktune_datatype_t type, int rows, int cols, const void* x, int ldx,
                        void* y, int ldy, const char* scalar, float value,
                        const std::function<void(ktune::Runtime&, ktune::DType)>& run) {
  auto bad = [&](const std::string& why) { return fail(KTUNE_INVALID_VALUE, std::string(fn) + ": " + why); };
  if (!type_name(type)) return bad(unknown_type(type));
  if (rows < 0 || cols < 0) return bad("negative size (rows = " + std::to_string(rows) + ", cols = " + std::to_string(cols) + ")");
  if (ldx < std::max(1, cols) || ldy < std::max(1, cols))
    return bad("ldx = " + std::to_string(ldx) + ", ldy = " + std::to_string(ldy) + ": both must be >= cols = " + std::to_string(cols));
  if (!handle) return bad("handle is NULL");
  if (rows == 0 || cols == 0) return KTUNE_SUCCESS;
  if (!x || !y) return bad("x or y is NULL");
  if (!std::isfinite(value)) return bad(std::string(scalar) + " must be finite");
  return guarded(fn, [&] {
    run(*handle->rt, dtype_of(type));
    return KTUNE_SUCCESS;
  });
}

} // namespace

ktune_status_t ktune_softmax(ktune_handle_t handle, ktune_datatype_t type, int rows, int cols, const void* x, int ldx, void* y,
                             int ldy, float scale, void* stream) {
  return rows_any("ktune_softmax", handle, type, rows, cols, x, ldx, y, ldy, "scale", scale, [&](ktune::Runtime& rt, ktune::DType d) {
    rt.softmax(d, rows, cols, x, ldx, y, ldy, scale, static_cast<CUstream>(stream));
  });
}

ktune_status_t ktune_layernorm(ktune_handle_t handle, ktune_datatype_t type, int rows, int cols, const void* x, int ldx, void* y,
                               int ldy, const void* weight, const void* bias, float eps, void* stream) {
  return rows_any("ktune_layernorm", handle, type, rows, cols, x, ldx, y, ldy, "eps", eps, [&](ktune::Runtime& rt, ktune::DType d) {
    rt.layernorm(d, rows, cols, x, ldx, y, ldy, weight, bias, eps, static_cast<CUstream>(stream));
  });
}

ktune_status_t ktune_rmsnorm(ktune_handle_t handle, ktune_datatype_t type, int rows, int cols, const void* x, int ldx, void* y,
                             int ldy, const void* weight, float eps, void* stream) {
  return rows_any("ktune_rmsnorm", handle, type, rows, cols, x, ldx, y, ldy, "eps", eps, [&](ktune::Runtime& rt, ktune::DType d) {
    rt.rmsnorm(d, rows, cols, x, ldx, y, ldy, weight, eps, static_cast<CUstream>(stream));
  });
}

ktune_status_t ktune_run(ktune_handle_t handle, const char* op, ktune_datatype_t type, const long long* dims, int ndims,
                         void* const* buffers, int nbuffers, const double* scalars, int nscalars, void* stream) {
  return ktune_run_strided(handle, op, type, dims, ndims, nullptr, 0, buffers, nbuffers, scalars, nscalars, stream);
}

ktune_status_t ktune_run_strided(ktune_handle_t handle, const char* op, ktune_datatype_t type, const long long* dims,
                                 int ndims, const long long* strides, int nstrides, void* const* buffers, int nbuffers,
                                 const double* scalars, int nscalars, void* stream) {
  auto bad = [&](const std::string& why) { return fail(KTUNE_INVALID_VALUE, "ktune_run: " + why); };
  if (!handle) return bad("handle is NULL");
  if (!op) return bad("op is NULL");
  if (!type_name(type)) return bad(unknown_type(type));
  if (ndims < 0 || nstrides < 0 || nbuffers < 0 || nscalars < 0)
    return bad("negative count of dims, strides, buffers or scalars");
  if ((ndims && !dims) || (nstrides && !strides) || (nbuffers && !buffers) || (nscalars && !scalars))
    return bad("dims, strides, buffers or scalars is NULL");
  return guarded("ktune_run", [&] {
    const ktune::OpInfo& info = ktune::op_info(op); // an unknown op: UsageError naming the known ones
    if (size_t(nscalars) > info.scalars.size())
      throw ktune::UsageError(std::to_string(nscalars) + " scalars given, op " + info.name + " has " +
                              std::to_string(info.scalars.size()));
    ktune::Problem p = ktune::Problem::make(info.name, std::vector<int64_t>(dims, dims + ndims),
                                            info.default_layout(), dtype_of(type));
    for (int i = 0; i < nscalars; ++i) p.scalars[info.scalars[size_t(i)].first] = scalars[i];
    if (nstrides) {
      if (size_t(nstrides) != p.ld.size())
        throw ktune::UsageError(std::to_string(nstrides) + " strides given, op " + info.name + " has " +
                                std::to_string(p.ld.size()));
      p.ld.assign(strides, strides + nstrides);
    }
    handle->rt->run(p, std::vector<void*>(buffers, buffers + nbuffers), static_cast<CUstream>(stream));
    return KTUNE_SUCCESS;
  });
}

namespace {

// The checks every typed attention entry point makes (the handle, the element type), its nstrides
// strides read (none where NULL: packed), then run (the runtime's typed entry point), guarded.
ktune_status_t attention_any(
    const char* name, ktune_handle_t handle, ktune_datatype_t type, const long long* strides, int nstrides,
    const std::function<void(ktune::Runtime&, ktune::DType, const std::vector<int64_t>&)>& run) {
  if (!handle) return fail(KTUNE_INVALID_VALUE, std::string(name) + ": handle is NULL");
  if (!type_name(type)) return fail(KTUNE_INVALID_VALUE, std::string(name) + ": " + unknown_type(type));
  return guarded(name, [&] {
    std::vector<int64_t> st;
    if (strides) st.assign(strides, strides + nstrides);
    run(*handle->rt, dtype_of(type), st);
    return KTUNE_SUCCESS;
  });
}

} // namespace

ktune_status_t ktune_attention(ktune_handle_t handle, ktune_datatype_t type, long long batch, long long heads,
                               long long kv_heads, long long q_len, long long kv_len, long long head_dim, int causal,
                               const void* q, const void* k, const void* v, void* o, float* lse,
                               const long long* strides, float scale, void* stream) {
  return attention_any("ktune_attention", handle, type, strides, 12,
                       [&](ktune::Runtime& rt, ktune::DType dt, const std::vector<int64_t>& st) {
                         rt.attention(dt, batch, heads, kv_heads, q_len, kv_len, head_dim, causal != 0, q, k, v, o, lse,
                                      st, scale, static_cast<CUstream>(stream));
                       });
}

ktune_status_t ktune_attention_varlen(ktune_handle_t handle, ktune_datatype_t type, long long batch, long long heads,
                                      long long kv_heads, long long q_len, long long kv_len, long long head_dim,
                                      long long total_q, long long total_kv, int causal, const void* q, const void* k,
                                      const void* v, const int* cu_q, const int* cu_k, void* o, float* lse,
                                      const long long* strides, float scale, void* stream) {
  return attention_any("ktune_attention_varlen", handle, type, strides, 8,
                       [&](ktune::Runtime& rt, ktune::DType dt, const std::vector<int64_t>& st) {
                         rt.attention_varlen(dt, batch, heads, kv_heads, q_len, kv_len, head_dim, total_q, total_kv,
                                             causal != 0, q, k, v, cu_q, cu_k, o, lse, st, scale,
                                             static_cast<CUstream>(stream));
                       });
}

ktune_status_t ktune_attention_paged(ktune_handle_t handle, ktune_datatype_t type, long long batch, long long heads,
                                     long long kv_heads, long long q_len, long long head_dim, long long page_size,
                                     long long pages, long long pages_per_seq, int causal, const void* q,
                                     const void* k_cache, const void* v_cache, const int* block_table,
                                     const int* seq_lens, void* o, float* lse, const long long* strides, float scale,
                                     void* stream) {
  return attention_any("ktune_attention_paged", handle, type, strides, 12,
                       [&](ktune::Runtime& rt, ktune::DType dt, const std::vector<int64_t>& st) {
                         rt.attention_paged(dt, batch, heads, kv_heads, q_len, head_dim, page_size, pages,
                                            pages_per_seq, causal != 0, q, k_cache, v_cache, block_table, seq_lens, o,
                                            lse, st, scale, static_cast<CUstream>(stream));
                       });
}

ktune_status_t ktune_kernel_load(ktune_handle_t handle, const char* spec_path, char* op_name, size_t op_size) {
  auto bad = [&](const std::string& why) { return fail(KTUNE_INVALID_VALUE, "ktune_kernel_load: " + why); };
  if (!handle) return bad("handle is NULL");
  if (!spec_path) return bad("spec_path is NULL");
  if (!op_name || op_size == 0) return bad("op_name is NULL or op_size is 0");
  return guarded("ktune_kernel_load", [&] {
    const std::string op = handle->rt->kernel(spec_path).op();
    if (op.size() + 1 > op_size)
      throw ktune::UsageError("op_name holds " + std::to_string(op_size) + " bytes, the op's name '" + op + "' needs " +
                              std::to_string(op.size() + 1));
    std::memcpy(op_name, op.c_str(), op.size() + 1);
    return KTUNE_SUCCESS;
  });
}

ktune_status_t ktune_kernel_launch(ktune_handle_t handle, const char* op_name, ktune_datatype_t type, const long long* dims,
                                   int ndims, const void* const* args, int nargs, void* stream) {
  auto bad = [&](const std::string& why) { return fail(KTUNE_INVALID_VALUE, "ktune_kernel_launch: " + why); };
  if (!handle) return bad("handle is NULL");
  if (!op_name) return bad("op_name is NULL");
  if (!type_name(type) && type != KTUNE_R_64F) return bad(unknown_type(type)); // a spec may take f64 problems
  if (ndims < 0 || nargs < 0) return bad("negative count of dims or args");
  if ((ndims && !dims) || (nargs && !args)) return bad("dims or args is NULL");
  return guarded("ktune_kernel_launch", [&] {
    if (!ktune::op_info(op_name).spec) throw ktune::UsageError(std::string("op ") + op_name + " is not a user's kernel (load its spec)");
    handle->rt->loaded_kernel(op_name).launch(std::vector<int64_t>(dims, dims + ndims),
                                              std::vector<const void*>(args, args + nargs), static_cast<CUstream>(stream),
                                              dtype_of(type));
    return KTUNE_SUCCESS;
  });
}

const char* ktune_last_error(void) { return last_error.c_str(); }

} // extern "C"
