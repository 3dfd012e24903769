// GEMM's problem, the typed view its families, its op and the GEMM entry points use. It converts
// to Problem (op "gemm", dims {m, n, k}, layout "NN".."TT", ld {lda, ldb, ldc}) implicitly, so it
// goes wherever a Problem does; Problem converts back with GemmProblem::from.
#pragma once
#include <cstdint>
#include <string>

#include "ktune/problem.h"

namespace ktune {

// GEMM's operands in the op's order (LaunchStep::TmaOperand::operand).
enum GemmOperand : int { gemm_a = 0, gemm_b = 1, gemm_c = 2 };

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
  // Canonical key, e.g. gemm/f32/NN/4096x4096x4096/a16 (Problem::key of the same problem).
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

  // The op-generic problem (alpha and beta as its scalars; batch stays here).
  operator Problem() const;
  // Throws Error when p is not a GEMM problem; batch takes its default.
  static GemmProblem from(const Problem& p);
};

// GEMM's OpInfo (kernel_templates/gemm/gemm_problem.cpp).
OpInfo gemm_op_info();

} // namespace ktune
