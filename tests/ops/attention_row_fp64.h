// FP64 attention of one query row, the reference the host-checked attention tests compare with.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace ktune::testing {

struct AttentionRowFp64 {
  std::vector<double> o; // softmax(scale q k^T) v, d values
  double lse;            // natural log-sum-exp of the scaled scores
};

// Over keys 0..n-1: q(x), k(j, x) and v(j, x) give the operands' values. A row that sees no key
// (n = 0) has O = 0 and lse = +inf, the op's convention.
template <class Q, class K, class V>
AttentionRowFp64 attention_row_fp64(int64_t n, int64_t d, double scale, Q q, K k, V v) {
  AttentionRowFp64 r{std::vector<double>(d, 0.0), INFINITY};
  if (n <= 0) return r;
  std::vector<double> s(n);
  double mx = -INFINITY;
  for (int64_t j = 0; j < n; ++j) {
    double t = 0;
    for (int64_t x = 0; x < d; ++x) t += q(x) * k(j, x);
    s[j] = t * scale;
    mx = std::max(mx, s[j]);
  }
  double sum = 0;
  for (int64_t j = 0; j < n; ++j) {
    const double e = std::exp(s[j] - mx);
    sum += e;
    for (int64_t x = 0; x < d; ++x) r.o[x] += e * v(j, x);
  }
  for (double& x : r.o) x /= sum;
  r.lse = mx + std::log(sum);
  return r;
}

} // namespace ktune::testing
