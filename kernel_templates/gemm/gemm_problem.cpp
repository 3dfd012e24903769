// GEMM as an op: its typed problem (GemmProblem), the conversions to and from the op-generic
// Problem, and its OpInfo.
#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <regex>

#include "ktune/error.h"
#include "gemm/gemm_families.h"
#include "ktune/gemm_problem.h"

namespace ktune {
namespace {

// GEMM's largest M, N, K and leading dimension (OpInfo::max_dim, max_ld): cuBLAS takes them as
// int (runtime/cublas.cpp, every call the runtime falls back to or times against), and the
// kernels count rows and columns in 32 bits.
constexpr int64_t kGemmMaxDim = INT32_MAX;

} // namespace

std::string GemmProblem::layout_string() const {
  const char s[3] = {a == Layout::row ? 'N' : 'T', b == Layout::row ? 'N' : 'T', '\0'};
  return s;
}

std::string GemmProblem::shape_string() const {
  char buf[96];
  std::snprintf(buf, sizeof buf, "%" PRId64 "x%" PRId64 "x%" PRId64, m, n, k);
  return buf;
}

std::string GemmProblem::key() const { return Problem(*this).key(); }

void GemmProblem::validate() const {
  auto fail = [&](const std::string& why) { throw UsageError("invalid GEMM problem " + key() + ": " + why); };
  if (m < 1 || n < 1) fail("M and N must be >= 1");
  if (k < 0) fail("K must be >= 0");
  for (const auto& [name, v] : {std::pair<const char*, int64_t>{"m", m}, {"n", n}, {"k", k}})
    if (v > kGemmMaxDim)
      fail(std::string(name) + " = " + std::to_string(v) + " is out of range (at most " + std::to_string(kGemmMaxDim) +
           " for gemm)");
  for (const auto& [name, v] :
       {std::pair<const char*, int64_t>{"lda", eff_lda()}, {"ldb", eff_ldb()}, {"ldc", eff_ldc()}})
    if (v > kGemmMaxDim)
      fail(std::string(name) + " = " + std::to_string(v) + " is out of range (at most " + std::to_string(kGemmMaxDim) +
           " for gemm)");
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
  return Problem::alignment_of({lda, ldb, ldc}, element_bytes);
}

int GemmProblem::alignment_with_pointers(int align, const void* a, const void* b, const void* c) {
  return Problem::alignment_with_pointers(align, {a, b, c}); // f32 pointers stop at 4
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
  // One reading of shapes for every op: a number beyond the op's limit is "out of range".
  return from(Problem::parse("gemm", shape, layout, dtype));
}

GemmProblem::operator Problem() const {
  Problem p;
  p.op = "gemm", p.dtype = dtype, p.dims = {m, n, k}, p.layout = layout_string(), p.ld = {eff_lda(), eff_ldb(), eff_ldc()};
  p.align = align;
  p.scalars = {{"alpha", alpha}, {"beta", beta}};
  return p;
}

// C = A * B unless a problem says otherwise.
constexpr double kDefaultAlpha = 1.0, kDefaultBeta = 0.0;

GemmProblem GemmProblem::from(const Problem& p) {
  if (p.op != "gemm" || p.dims.size() != 3 || p.layout.size() != 2 || p.ld.size() != 3)
    throw Error("not a GEMM problem: " + p.key());
  GemmProblem g;
  g.m = p.dims[0], g.n = p.dims[1], g.k = p.dims[2], g.dtype = p.dtype;
  g.a = p.layout[0] == 'T' ? Layout::col : Layout::row;
  g.b = p.layout[1] == 'T' ? Layout::col : Layout::row;
  g.lda = p.ld[0], g.ldb = p.ld[1], g.ldc = p.ld[2], g.align = p.align;
  // Constraints convert their problem on every check: GEMM's own defaults here, not a look-up of
  // the op registry (Problem::scalar) each time.
  g.alpha = float(kDefaultAlpha), g.beta = float(kDefaultBeta);
  if (!p.scalars.empty()) {
    if (const auto it = p.scalars.find("alpha"); it != p.scalars.end()) g.alpha = float(it->second);
    if (const auto it = p.scalars.find("beta"); it != p.scalars.end()) g.beta = float(it->second);
  }
  return g;
}

OpInfo gemm_op_info() {
  OpInfo o;
  o.name = "gemm";
  o.about = "C (M x N, row-major) = alpha * A (M x K) * B (K x N) + beta * C; layouts of A and B: N row-major, T column-major";
  o.dims = {"m", "n", "k"};
  o.layouts = {"NN", "NT", "TN", "TT"};
  o.ld_names = {"lda", "ldb", "ldc"};
  o.max_dim = o.max_ld = kGemmMaxDim;
  o.scalars = {{"alpha", kDefaultAlpha}, {"beta", kDefaultBeta}};
  o.baseline = "cublas";
  o.runner = "gemm";
  o.families = [] {
    return std::vector<Family>{gemm_naive_family(),  gemm_smem_family(), gemm_simt_family(),     gemm_skinny_family(),
                               gemm_tf32x3_family(), gemm_tc16_family(), gemm_skinny16_family(), gemm_wgmma_family(),
                               gemm_wgmma_tf32x3_family()};
  };
  o.min_ld = [](const std::vector<int64_t>& d, const std::string& layout) {
    // K = 0 has a zero minimum leading dimension for some layouts; keep ld >= 1 so pointer
    // arithmetic stays defined.
    const int64_t lda = layout[0] == 'N' ? d[2] : d[0], ldb = layout[1] == 'N' ? d[1] : d[2];
    return std::vector<int64_t>{std::max<int64_t>(1, lda), std::max<int64_t>(1, ldb), d[1]};
  };
  o.validate = [](const Problem& p) { GemmProblem::from(p).validate(); };
  o.flops = [](const Problem& p) { return 2.0 * double(p.dims[0]) * double(p.dims[1]) * double(p.dims[2]); };
  o.min_bytes = [](const Problem& p) {
    const double m = double(p.dims[0]), n = double(p.dims[1]), k = double(p.dims[2]);
    return (m * k + k * n + m * n) * element_bytes(p.dtype);
  };
  return o;
}

} // namespace ktune
