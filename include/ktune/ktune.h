/* ktune C API: a BLAS-like SGEMM that runs the tuned kernel for the problem (or cuBLAS where it
 * was faster). Every call returns a status; ktune_last_error() says why a call failed.
 *
 *   ktune_handle_t h;
 *   if (ktune_create(&h, NULL) != KTUNE_SUCCESS) fprintf(stderr, "%s\n", ktune_last_error());
 *   ktune_sgemm(h, KTUNE_ROW_MAJOR, KTUNE_OP_N, KTUNE_OP_N, m, n, k, 1.0f, A, k, B, n, 0.0f, C, n, stream);
 *
 * Threads: one handle may be shared by any number of threads calling ktune_sgemm at once, each
 * on its own stream or the same one (it wraps one ktune::Runtime; see runtime.h). Create and
 * destroy it outside those calls: ktune_destroy while another thread still uses the handle is
 * undefined. ktune_last_error() is per thread. A test runs one handle from four threads
 * (tests/runtime/thread_gpu_test.cpp).
 *   ktune_destroy(h);
 */
#ifndef KTUNE_KTUNE_H
#define KTUNE_KTUNE_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ktune_handle_s* ktune_handle_t;

typedef enum {
  KTUNE_SUCCESS = 0,
  KTUNE_INVALID_VALUE = 1,  /* a null pointer, a negative size, a leading dimension too small */
  KTUNE_NO_DEVICE = 2,      /* no usable GPU */
  KTUNE_CUDA_ERROR = 3,     /* a CUDA, NVRTC or cuBLAS call failed */
  KTUNE_INTERNAL_ERROR = 4
} ktune_status_t;

typedef enum { KTUNE_ROW_MAJOR = 0, KTUNE_COL_MAJOR = 1 } ktune_order_t; /* storage order of all three matrices */
typedef enum { KTUNE_OP_N = 0, KTUNE_OP_T = 1 } ktune_op_t;

/* db_path: a ktune database to read tuned configs from; NULL uses $KTUNE_DB or the default
 * (~/.cache/ktune/ktune.db) if it exists. The shipped tables are always consulted. Device 0.
 * Kernels compiled on first use are kept for later processes in ~/.cache/ktune/cubins.db
 * ($KTUNE_CUBIN_CACHE names another file; set empty, no cache), at most 512 MB of them, the least
 * recently used going first ($KTUNE_CUBIN_CACHE_MAX_MB changes the limit; 0: none). */
ktune_status_t ktune_create(ktune_handle_t* handle, const char* db_path);
/* As ktune_create, with flags (0 or an OR of these; anything else is KTUNE_INVALID_VALUE):
 * KTUNE_FLAG_TF32X3 also consults the shipped 3xTF32 table (gemm_tf32x3, and gemm_wgmma_tf32x3 on sm_90):
 * FP32 GEMM on the TF32 tensor cores
 * with an error at or below cuBLAS SGEMM's on finite inputs, not bit-identical to FFMA, NaN for
 * infinite inputs (docs/TEMPLATES.md). */
enum { KTUNE_FLAG_TF32X3 = 1 };
ktune_status_t ktune_create_ex(ktune_handle_t* handle, const char* db_path, unsigned flags);
ktune_status_t ktune_destroy(ktune_handle_t handle);

/* C = alpha * op(A) * op(B) + beta * C, with op(A) m x k, op(B) k x n and C m x n, as in
 * cblas_sgemm. A, B and C are device pointers; stream is a CUstream / cudaStream_t (NULL: the
 * default stream). BLAS semantics: beta == 0 never reads C; alpha == 0 or k == 0 reads neither A
 * nor B (they may be NULL) and gives C = beta * C; m == 0 or n == 0 does nothing. The first call
 * on a shape nobody tuned may time a few candidate kernels against cuBLAS on `stream` and wait
 * for them (runtime.h, RuntimeOptions::measure_untuned). */
ktune_status_t ktune_sgemm(ktune_handle_t handle, ktune_order_t order, ktune_op_t transa, ktune_op_t transb, int m, int n,
                           int k, float alpha, const float* A, int lda, const float* B, int ldb, float beta, float* C,
                           int ldc, void* stream);

/* Element types of ktune_gemm_ex, numbered as cudaDataType_t numbers them (CUDA_R_32F = 0,
 * CUDA_R_64F = 1, CUDA_R_16F = 2, CUDA_R_16BF = 14), so a cudaDataType_t value may be passed as it
 * is. KTUNE_R_64F: user kernels only (ktune_kernel_launch of a spec that takes f64 problems). */
typedef enum { KTUNE_R_32F = 0, KTUNE_R_64F = 1, KTUNE_R_16F = 2, KTUNE_R_16BF = 14 } ktune_datatype_t;
/* How products are summed: FP32 (the only compute type so far; half inputs are multiplied exactly
 * and accumulated in FP32, as cublasGemmEx's CUBLAS_COMPUTE_32F). */
typedef enum { KTUNE_COMPUTE_32F = 0 } ktune_compute_t;

/* ktune_sgemm for any element type, in the style of cublasGemmEx: A, B and C hold elements of
 * a_type, b_type and c_type, which must be equal so far (KTUNE_INVALID_VALUE otherwise, naming
 * the mix): FP32, FP16 (__half) or BF16 (__nv_bfloat16). alpha and beta are FP32; C is rounded to
 * nearest. Same semantics, layouts and leading-dimension rules as ktune_sgemm. */
ktune_status_t ktune_gemm_ex(ktune_handle_t handle, ktune_order_t order, ktune_op_t transa, ktune_op_t transb, int m, int n,
                             int k, float alpha, const void* A, ktune_datatype_t a_type, int lda, const void* B,
                             ktune_datatype_t b_type, int ldb, float beta, void* C, ktune_datatype_t c_type, int ldc,
                             ktune_compute_t compute, void* stream);

/* Row operators on a rows x cols matrix stored row-major (row strides ldx, ldy >= cols, in
 * elements), x, y, weight and bias all of `type`, FP32 math, launched on stream:
 *   ktune_softmax    y = softmax(scale * x) along each row (torch.softmax(x * scale, -1))
 *   ktune_layernorm  y = (x - mean) / sqrt(var + eps) * weight + bias (F.layer_norm; weight or
 *                    bias NULL: none)
 *   ktune_rmsnorm    y = x / sqrt(mean(x^2) + eps) * weight (F.rms_norm; weight NULL: none)
 * rows or cols of 0 do nothing. The tuned config for the shape, else the nearest tuned one, else a
 * default; y may be x when ldx == ldy. */
ktune_status_t ktune_softmax(ktune_handle_t handle, ktune_datatype_t type, int rows, int cols, const void* x, int ldx, void* y,
                             int ldy, float scale, void* stream);
ktune_status_t ktune_layernorm(ktune_handle_t handle, ktune_datatype_t type, int rows, int cols, const void* x, int ldx, void* y,
                               int ldy, const void* weight, const void* bias, float eps, void* stream);
ktune_status_t ktune_rmsnorm(ktune_handle_t handle, ktune_datatype_t type, int rows, int cols, const void* x, int ldx, void* y,
                             int ldy, const void* weight, float eps, void* stream);

/* Any op by its name (`ktune ops` lists them; ops of plain buffers such as scale_add are served
 * only here and by Python's ktune.run), elements of `type`:
 *   dims      ndims sizes, the op's dimensions in its order (gemm m, n, k; row ops rows, cols;
 *             scale_add n); operands contiguous at their smallest leading dimensions (GEMM NN)
 *   buffers   nbuffers device pointers in the op's order (gemm A, B, C; row ops x, y, weight,
 *             bias, NULL where none; scale_add x, y, out)
 *   scalars   nscalars values of the op's scalars in its order (gemm alpha, beta; softmax scale;
 *             norms eps; scale_add alpha, beta); those not given take the op's defaults
 * Launched on stream as the typed entry points launch; a wrong count of dims, buffers or scalars
 * is KTUNE_INVALID_VALUE naming the op's. */
ktune_status_t ktune_run(ktune_handle_t handle, const char* op, ktune_datatype_t type, const long long* dims, int ndims,
                         void* const* buffers, int nbuffers, const double* scalars, int nscalars, void* stream);

/* ktune_run with the operands' strides in elements (nstrides of them, `ktune ops` names them in
 * order: GEMM lda, ldb, ldc; row ops ldx, ldy; an op of N-dimensional operands every stride but
 * the innermost of each, e.g. q.batch, q.seq, q.heads). nstrides 0: packed, as ktune_run. A
 * wrong count, overlapping elements or a stride out of range is KTUNE_INVALID_VALUE. */
ktune_status_t ktune_run_strided(ktune_handle_t handle, const char* op, ktune_datatype_t type, const long long* dims,
                                 int ndims, const long long* strides, int nstrides, void* const* buffers, int nbuffers,
                                 const double* scalars, int nscalars, void* stream);

/* Attention (Runtime::attention): o = softmax(scale q k^T) v, q (batch, q_len, heads, head_dim), k
 * and v (batch, kv_len, kv_heads, head_dim), o as q, lse (batch, heads, q_len) float, type
 * KTUNE_R_16BF or KTUNE_R_16F; strides: 12 (the batch, sequence and head strides of q, k, v and o in
 * elements) or NULL for packed (B, S, H, D); causal 1: bottom-right aligned; scale 0: 1 / sqrt(head_dim). */
ktune_status_t ktune_attention(ktune_handle_t handle, ktune_datatype_t type, long long batch, long long heads,
                               long long kv_heads, long long q_len, long long kv_len, long long head_dim, int causal,
                               const void* q, const void* k, const void* v, void* o, float* lse, const long long* strides,
                               float scale, void* stream);

/* Attention over packed sequences (Runtime::attention_varlen), as flash_attn_varlen_func: q and o
 * (total_q, heads, head_dim), k and v (total_kv, kv_heads, head_dim), cu_q and cu_k int32 (batch + 1)
 * cumulative lengths in device memory (at most q_len / kv_len tokens a sequence), lse (heads,
 * total_q) float; strides: 8 (the token and head strides of q, k, v and o in elements) or NULL for
 * packed; causal 1: bottom-right aligned to each sequence; scale 0: 1 / sqrt(head_dim). */
ktune_status_t ktune_attention_varlen(ktune_handle_t handle, ktune_datatype_t type, long long batch, long long heads,
                                      long long kv_heads, long long q_len, long long kv_len, long long head_dim,
                                      long long total_q, long long total_kv, int causal, const void* q, const void* k,
                                      const void* v, const int* cu_q, const int* cu_k, void* o, float* lse,
                                      const long long* strides, float scale, void* stream);

/* Attention over a paged KV cache (Runtime::attention_paged), as vLLM and flash_attn_with_kvcache
 * keep it (decode and speculative decoding, q_len <= 64): q and o (batch, q_len, heads, head_dim),
 * k_cache and v_cache (pages, page_size, kv_heads, head_dim), block_table int32 (batch,
 * pages_per_seq) and seq_lens int32 (batch) in device memory, lse (batch, heads, q_len) float;
 * strides: 12 (batch, sequence and head strides of q, page, slot and head strides of k_cache and
 * v_cache, then o's, in elements) or NULL for packed; causal 1: bottom-right aligned to each
 * sequence's length; scale 0: 1 / sqrt(head_dim). */
ktune_status_t ktune_attention_paged(ktune_handle_t handle, ktune_datatype_t type, long long batch, long long heads,
                                     long long kv_heads, long long q_len, long long head_dim, long long page_size,
                                     long long pages, long long pages_per_seq, int causal, const void* q,
                                     const void* k_cache, const void* v_cache, const int* block_table,
                                     const int* seq_lens, void* o, float* lse, const long long* strides, float scale,
                                     void* stream);

/* The message of the calling thread's last failed call ("" if none). Valid until its next call. */
/* A user's kernel (docs/KERNEL_SPEC.md): ktune_kernel_load reads the spec at spec_path and
 * registers its op, whose name ("conv2d@1a2b3c4d") it copies into op_name (op_size bytes, NUL
 * included); KTUNE_INVALID_VALUE with the field named in ktune_last_error for a bad spec.
 * ktune_kernel_launch launches the best config for dims (ndims of them, in the spec's order):
 * args holds one entry per argument the caller passes, in the spec's order, a buffer's device
 * pointer or a pointer to a scalar's value (of the spec's dtype for it; a scalar of "dtype" is of
 * the problem's: 2 bytes at f16 and bf16, a double at f64). */
ktune_status_t ktune_kernel_load(ktune_handle_t handle, const char* spec_path, char* op_name, size_t op_size);
ktune_status_t ktune_kernel_launch(ktune_handle_t handle, const char* op_name, ktune_datatype_t type, const long long* dims,
                                   int ndims, const void* const* args, int nargs, void* stream);

const char* ktune_last_error(void);

#ifdef __cplusplus
}
#endif

#endif /* KTUNE_KTUNE_H */
