// What is computed. One Problem type per op; GEMM is the first op.
#pragma once
#include <cstdint>
#include <string>

namespace ktune {

enum class DType { f32, tf32, f16, bf16 };
// Storage order of an operand. C is always row-major; A and B are row-major ('N') or
// column-major ('T', i.e. the transposed matrix stored row-major), as BLAS names them.
enum class Layout { row, col };

const char* to_string(DType d);
DType parse_dtype(const std::string& s); // throws UsageError
// Bytes of one element of A, B and C: 4 for f32 (and tf32, stored as f32), 2 for f16 and bf16.
int element_bytes(DType d);
inline bool is_half(DType d) { return d == DType::f16 || d == DType::bf16; }

// C (M x N, row-major) = alpha * A (M x K) * B (K x N) + beta * C.
struct GemmProblem {
  int64_t m = 0, n = 0, k = 0;
  DType dtype = DType::f32;
  Layout a = Layout::row, b = Layout::row;
  int64_t lda = 0, ldb = 0, ldc = 0; // 0 means the minimum for the layout
  float alpha = 1.0f, beta = 0.0f;
  int batch = 1;
  // Alignment class in bytes (16, 8, 4, or 2 for 2-byte elements): the largest that divides every
  // pointer's address and every leading dimension in bytes. Vector widths are chosen against it.
  int align = 16;

  int64_t min_lda() const { return a == Layout::row ? k : m; }
  int64_t min_ldb() const { return b == Layout::row ? n : k; }
  int64_t min_ldc() const { return n; }
  int64_t eff_lda() const { return lda ? lda : min_lda(); }
  int64_t eff_ldb() const { return ldb ? ldb : min_ldb(); }
  int64_t eff_ldc() const { return ldc ? ldc : min_ldc(); }

  std::string layout_string() const; // "NN", "NT", "TN", "TT"
  std::string shape_string() const;  // "4096x4096x4096"
  // Canonical key, e.g. gemm/f32/NN/4096x4096x4096/a16.
  std::string key() const;
  double flops() const { return 2.0 * double(m) * double(n) * double(k); }

  // Throws UsageError naming the offending field (sizes, leading dimensions, alignment, batch).
  void validate() const;

  // Alignment class from the leading dimensions alone (pointers from cudaMalloc are 256-byte
  // aligned); with_pointers narrows it further by the actual addresses. Never below the element
  // size (4 for f32, 2 for f16/bf16).
  static int alignment_of(int64_t lda, int64_t ldb, int64_t ldc, int element_bytes = 4);
  static int alignment_with_pointers(int align, const void* a, const void* b, const void* c);

  // "MxNxK" with an optional layout ("NN", "NT", "TN", "TT"); leading dimensions at their minimum
  // and the alignment class derived from them.
  static GemmProblem make(int64_t m, int64_t n, int64_t k, const std::string& layout = "NN",
                          DType dtype = DType::f32);
  static GemmProblem parse(const std::string& shape, const std::string& layout = "NN", DType dtype = DType::f32);
};

// TFLOPS of p done in ms milliseconds (0 for ms <= 0).
double tflops(const GemmProblem& p, double ms);

// How far apart two problems are for lending configs: the Euclidean distance over log M, log N,
// log K (a K of 0 counts as 1). Used by the runtime's nearest lookup and by warm starts.
double log_distance(const GemmProblem& a, const GemmProblem& b);

} // namespace ktune
