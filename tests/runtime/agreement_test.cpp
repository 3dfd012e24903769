// The check a lent config must pass at first use before it serves a shape it was not verified at:
// correct results within rounding pass, planted wrong ones fail.
#include "runtime/agreement.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "core/half.h"
#include "ktune/error.h"
#include "ktune/gemm_problem.h"

using namespace ktune;

namespace {

// C = A B (A M x K, B K x N, random in [-1, 1]) over the first k_used steps, in double, stored as
// p's dtype with p's ldc; `pad` fills the row padding.
std::vector<unsigned char> product(const GemmProblem& p, int64_t k_used, uint32_t seed, float pad = 0) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> a(size_t(p.m * p.k)), b(size_t(p.k * p.n));
  for (auto& x : a) x = u(g);
  for (auto& x : b) x = u(g);
  const size_t eb = size_t(element_bytes(p.dtype)), ldc = size_t(p.eff_ldc());
  std::vector<unsigned char> c(size_t(p.m) * ldc * eb);
  auto put = [&](size_t at, double v) {
    if (p.dtype == DType::f32) {
      const float f = float(v);
      std::memcpy(&c[4 * at], &f, 4);
    } else {
      const uint16_t h = p.dtype == DType::bf16 ? half::to_bf16(float(v)) : half::to_f16(float(v));
      std::memcpy(&c[2 * at], &h, 2);
    }
  };
  for (int64_t i = 0; i < p.m; ++i) {
    for (int64_t j = 0; j < p.n; ++j) {
      double s = 0;
      for (int64_t k = 0; k < k_used; ++k) s += double(a[size_t(i * p.k + k)]) * double(b[size_t(k * p.n + j)]);
      put(size_t(i) * ldc + size_t(j), s);
    }
    for (size_t j = size_t(p.n); j < ldc; ++j) put(size_t(i) * ldc + j, pad);
  }
  return c;
}

} // namespace

TEST(Agreement, CorrectResultsPassAndPlantedWrongOnesFail) {
  for (const DType dt : {DType::f32, DType::bf16, DType::f16}) {
    GemmProblem p = GemmProblem::parse("120x72x999");
    p.dtype = dt;
    p.ldc = 80; // padded: what lies past n is not C
    const auto ref = product(p, p.k, 1);
    EXPECT_EQ(output_disagreement(p, ref, ref), "") << to_string(dt);
    EXPECT_EQ(output_disagreement(p, ref, product(p, p.k, 1, /*pad=*/1e30f)), "") << to_string(dt) << ": padding read";
    // The same product summed in float, in another order: rounding only, within the bound.
    {
      std::vector<unsigned char> got = ref;
      if (dt == DType::f32) {
        for (size_t at = 0; at < got.size() / 4; at += 3) {
          float f;
          std::memcpy(&f, &got[4 * at], 4);
          f = std::nextafter(f, 2 * f); // one ulp off in a third of the elements
          std::memcpy(&got[4 * at], &f, 4);
        }
        EXPECT_EQ(output_disagreement(p, ref, got), "");
      }
    }
    // The last 7 K steps skipped (an unaligned K tail dropped), a 16 x 16 tile never written,
    // one NaN.
    EXPECT_NE(output_disagreement(p, ref, product(p, p.k - 7, 1)), "") << to_string(dt);
    std::vector<unsigned char> tile = ref;
    const size_t eb = size_t(element_bytes(dt));
    for (int64_t i = 32; i < 48; ++i) std::memset(&tile[(size_t(i) * size_t(p.ldc) + 16) * eb], 0, 16 * eb);
    const std::string why = output_disagreement(p, ref, tile);
    EXPECT_NE(why.find("disagrees with cuBLAS here"), std::string::npos) << to_string(dt) << ": " << why;
    std::vector<unsigned char> nan = ref;
    if (dt == DType::f32) {
      const float q = std::nanf("");
      std::memcpy(&nan[4 * 81], &q, 4);
    } else {
      const uint16_t q = dt == DType::bf16 ? 0x7fc0 : 0x7e00;
      std::memcpy(&nan[2 * 81], &q, 2);
    }
    EXPECT_NE(output_disagreement(p, ref, nan).find("at (1, 1)"), std::string::npos) << output_disagreement(p, ref, nan);
  }
}

TEST(Agreement, ABufferShorterThanCIsAnErrorNotARead) {
  const GemmProblem p = GemmProblem::parse("16x16x16");
  const std::vector<unsigned char> ok(16 * 16 * 4), short_one(100);
  EXPECT_THROW(output_disagreement(p, ok, short_one), Error);
}
