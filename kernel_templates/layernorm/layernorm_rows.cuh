// LayerNorm's math on a row, for the row kernels (rows/rows_common.cuh declares RowMath and says
// what a specialization provides; rows_families.cpp appends this header to every layernorm
// family's source).
//
// Semantics: mean = sum_j x_j / cols; var = sum_j (x_j - mean)^2 / cols (biased);
// y_j = (x_j - mean) / sqrt(var + eps) * w_j + b_j, with w_j = 1 where weight is null and b_j = 0
// where bias is null (elementwise_affine off / no bias).
//
// Numerics: (count, mean, M2) triples merge with Chan et al.'s parallel formula (each lane's, or
// each group's, triple computed two-pass from registers): one reduction round, and sound for any
// offset of the data. The float counts are exact to 2^24 columns.
#pragma once
#include "layernorm_check.h" // the op's code
#include "rows_common.cuh"

namespace ktune_dev {
namespace rows {

// Count, mean and sum of squared deviations from it (Chan et al.).
struct NormStats {
  float n, mean, m2;
};

template <>
__device__ __forceinline__ NormStats empty_stats<NormStats>() {
  return {0.0f, 0.0f, 0.0f};
}

// Symmetric bit for bit (products and sums commute; the _rn intrinsics keep the compiler from
// contracting one side into an FMA).
__device__ __forceinline__ NormStats combine(NormStats a, NormStats b, float) {
  if (a.n == 0.0f) return b;
  if (b.n == 0.0f) return a;
  const float n = __fadd_rn(a.n, b.n);
  const float mean = __fdividef(__fadd_rn(__fmul_rn(a.n, a.mean), __fmul_rn(b.n, b.mean)), n);
  const float d = __fadd_rn(b.mean, -a.mean); // d * d does not depend on the order
  const float w = __fdividef(__fmul_rn(a.n, b.n), n);
  return {n, mean, __fadd_rn(__fadd_rn(a.m2, b.m2), __fmul_rn(__fmul_rn(d, d), w))};
}

template <>
struct RowMath<KTUNE_ROWS_LAYERNORM> : RowMathDefaults<KTUNE_ROWS_LAYERNORM> {
  using Stats = NormStats;
  static constexpr bool kWeight = true, kBias = true;

  // N vectors of the row (all in it) as one triple, two-pass, merged into st.
  template <int N, int VEC>
  __device__ __forceinline__ static void accumulate(Stats& st, float (&g)[N][VEC], const RowConsts&) {
    float sum = 0.0f;
#pragma unroll
    for (int u = 0; u < N; ++u)
#pragma unroll
      for (int e = 0; e < VEC; ++e) sum += g[u][e];
    const float mean = sum * (1.0f / (N * VEC));
    float m2 = 0.0f;
#pragma unroll
    for (int u = 0; u < N; ++u)
#pragma unroll
      for (int e = 0; e < VEC; ++e) m2 = fmaf(g[u][e] - mean, g[u][e] - mean, m2);
    st = combine(st, NormStats{float(N * VEC), mean, m2}, 0.0f);
  }

  // Two passes over the registers: the lane's mean, then squared deviations from it.
  template <int VEC, int CHUNKS, class SP>
  __device__ __forceinline__ static Stats local_stats(float (&v)[CHUNKS][VEC], const SP& span, const RowConsts&) {
    const int count = span.count();
    float part[VEC];
#pragma unroll
    for (int e = 0; e < VEC; ++e) part[e] = 0.0f;
#pragma unroll
    for (int ch = 0; ch < CHUNKS; ++ch)
#pragma unroll
      for (int e = 0; e < VEC; ++e) part[e] += v[ch][e]; // 0 out of the row
    float sum = 0.0f;
#pragma unroll
    for (int e = 0; e < VEC; ++e) sum += part[e];
    const float n = float(count);
    const float mean = count > 0 ? __fdividef(sum, n) : 0.0f;
#pragma unroll
    for (int e = 0; e < VEC; ++e) part[e] = 0.0f;
#pragma unroll
    for (int ch = 0; ch < CHUNKS; ++ch) {
#pragma unroll
      for (int e = 0; e < VEC; ++e) {
        const float d = span.in(ch, e) ? v[ch][e] - mean : 0.0f;
        part[e] = fmaf(d, d, part[e]);
      }
    }
    float m2 = 0.0f;
#pragma unroll
    for (int e = 0; e < VEC; ++e) m2 += part[e];
    return {n, mean, m2};
  }

  __device__ __forceinline__ static Finish finish(const Stats&, const Stats& all, const KtuneRowsArgs& p, const RowConsts&) {
    return {all.mean, rsqrtf(__fdividef(all.m2, all.n) + p.eps)};
  }
};

} // namespace rows
} // namespace ktune_dev
