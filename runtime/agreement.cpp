#include "runtime/agreement.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>

#include "core/half.h"
#include "ktune/error.h"

namespace ktune {

std::string output_disagreement(const GemmProblem& p, const std::vector<unsigned char>& ref,
                                const std::vector<unsigned char>& got) {
  const size_t eb = size_t(element_bytes(p.dtype));
  const size_t need = p.m > 0 && p.n > 0 ? (size_t(p.m - 1) * size_t(p.eff_ldc()) + size_t(p.n)) * eb : 0;
  if (ref.size() < need || got.size() < need)
    throw Error("output_disagreement at " + p.key() + ": " + std::to_string(need) + " bytes of C needed, got " +
                std::to_string(ref.size()) + " and " + std::to_string(got.size()));
  const auto value = [&](const std::vector<unsigned char>& h, size_t i) -> double {
    if (p.dtype == DType::bf16 || p.dtype == DType::f16) {
      uint16_t v;
      std::memcpy(&v, &h[2 * i], 2);
      return p.dtype == DType::bf16 ? half::from_bf16(v) : half::from_f16(v);
    }
    float v;
    std::memcpy(&v, &h[4 * i], 4);
    return v;
  };
  double d2 = 0, r2 = 0;
  for (int64_t i = 0; i < p.m; ++i)
    for (int64_t j = 0; j < p.n; ++j) {
      const size_t at = size_t(i) * size_t(p.eff_ldc()) + size_t(j);
      const double r = value(ref, at), g = value(got, at);
      if (!std::isfinite(g) && std::isfinite(r)) {
        char buf[96];
        std::snprintf(buf, sizeof buf, "wrote %g at (%lld, %lld) where cuBLAS has %g", g, (long long)i, (long long)j, r);
        return buf;
      }
      d2 += (g - r) * (g - r), r2 += r * r;
    }
  const double bound = 2 * (unit_roundoff(p.dtype) + (0.5 * std::sqrt(double(p.k)) + 4) * std::ldexp(1.0, -24));
  const double rel = r2 > 0 ? std::sqrt(d2 / r2) : std::sqrt(d2);
  if (rel <= bound) return "";
  char buf[160];
  std::snprintf(buf, sizeof buf, "disagrees with cuBLAS here (relative difference %.3g, bound %.3g)", rel, bound);
  return buf;
}

} // namespace ktune
