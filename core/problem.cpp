#include "ktune/problem.h"

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <regex>

#include "ktune/error.h"

namespace ktune {

const char* to_string(DType d) {
  switch (d) {
    case DType::f32: return "f32";
    case DType::tf32: return "tf32";
    case DType::f16: return "f16";
    case DType::bf16: return "bf16";
  }
  return "?";
}

DType parse_dtype(const std::string& s) {
  for (DType d : {DType::f32, DType::tf32, DType::f16, DType::bf16})
    if (s == to_string(d)) return d;
  throw UsageError("unknown dtype '" + s + "' (expected f32, tf32, f16 or bf16)");
}

int element_bytes(DType d) { return is_half(d) ? 2 : 4; }

std::string GemmProblem::layout_string() const {
  const char s[3] = {a == Layout::row ? 'N' : 'T', b == Layout::row ? 'N' : 'T', '\0'};
  return s;
}

std::string GemmProblem::shape_string() const {
  char buf[96];
  std::snprintf(buf, sizeof buf, "%" PRId64 "x%" PRId64 "x%" PRId64, m, n, k);
  return buf;
}

std::string GemmProblem::key() const {
  return std::string("gemm/") + to_string(dtype) + "/" + layout_string() + "/" + shape_string() + "/a" +
         std::to_string(align);
}

void GemmProblem::validate() const {
  auto fail = [&](const std::string& why) { throw UsageError("invalid GEMM problem " + key() + ": " + why); };
  if (m < 1 || n < 1) fail("M and N must be >= 1");
  if (k < 0) fail("K must be >= 0");
  // Kernels index with 32-bit row/column counters; leading dimensions are 64-bit.
  if (m > INT32_MAX || n > INT32_MAX || k > INT32_MAX) fail("M, N and K must each fit in 32 bits");
  if (eff_lda() < std::max<int64_t>(1, min_lda())) fail("lda " + std::to_string(eff_lda()) + " < minimum " + std::to_string(min_lda()));
  if (eff_ldb() < std::max<int64_t>(1, min_ldb())) fail("ldb " + std::to_string(eff_ldb()) + " < minimum " + std::to_string(min_ldb()));
  if (eff_ldc() < min_ldc()) fail("ldc " + std::to_string(eff_ldc()) + " < minimum " + std::to_string(min_ldc()));
  const int eb = element_bytes(dtype);
  if (align != 16 && align != 8 && align != 4 && !(align == 2 && eb == 2))
    fail(eb == 2 ? "alignment class must be 2, 4, 8 or 16 bytes" : "alignment class must be 4, 8 or 16 bytes");
  if (align > alignment_of(eff_lda(), eff_ldb(), eff_ldc(), eb)) fail("alignment class larger than the leading dimensions allow");
  if (batch < 1) fail("batch must be >= 1");
}

int GemmProblem::alignment_of(int64_t lda, int64_t ldb, int64_t ldc, int element_bytes) {
  for (int a : {16, 8, 4}) {
    if (a <= element_bytes) break;
    if ((lda * element_bytes) % a == 0 && (ldb * element_bytes) % a == 0 && (ldc * element_bytes) % a == 0) return a;
  }
  return element_bytes;
}

int GemmProblem::alignment_with_pointers(int align, const void* a, const void* b, const void* c) {
  for (const void* p : {a, b, c})
    while (align > 2 && reinterpret_cast<uintptr_t>(p) % align != 0) align /= 2; // f32 pointers stop at 4
  return align;
}

double tflops(const GemmProblem& p, double ms) { return ms > 0 ? p.flops() / (ms * 1e-3) / 1e12 : 0; }

double log_distance(const GemmProblem& a, const GemmProblem& b) {
  auto d = [](int64_t x, int64_t y) {
    return std::log(double(std::max<int64_t>(x, 1))) - std::log(double(std::max<int64_t>(y, 1)));
  };
  return std::sqrt(d(a.m, b.m) * d(a.m, b.m) + d(a.n, b.n) * d(a.n, b.n) + d(a.k, b.k) * d(a.k, b.k));
}

GemmProblem GemmProblem::make(int64_t m, int64_t n, int64_t k, const std::string& layout, DType dtype) {
  static const std::regex re("^[NT][NT]$");
  if (!std::regex_match(layout, re)) throw UsageError("unknown layout '" + layout + "' (expected NN, NT, TN or TT)");
  GemmProblem p;
  p.m = m, p.n = n, p.k = k, p.dtype = dtype;
  p.a = layout[0] == 'N' ? Layout::row : Layout::col;
  p.b = layout[1] == 'N' ? Layout::row : Layout::col;
  // K = 0 has a zero minimum leading dimension for some layouts; keep ld >= 1 so pointers
  // arithmetic stays defined.
  p.lda = std::max<int64_t>(1, p.min_lda());
  p.ldb = std::max<int64_t>(1, p.min_ldb());
  p.ldc = p.min_ldc();
  p.align = alignment_of(p.lda, p.ldb, p.ldc, element_bytes(dtype));
  return p;
}

GemmProblem GemmProblem::parse(const std::string& shape, const std::string& layout, DType dtype) {
  static const std::regex re("^([0-9]{1,10})x([0-9]{1,10})x([0-9]{1,10})$");
  std::smatch mt;
  if (!std::regex_match(shape, mt, re))
    throw UsageError("bad problem shape '" + shape + "' (expected MxNxK, e.g. 4096x4096x4096)");
  GemmProblem p = make(std::stoll(mt[1]), std::stoll(mt[2]), std::stoll(mt[3]), layout, dtype);
  p.validate();
  return p;
}

} // namespace ktune
