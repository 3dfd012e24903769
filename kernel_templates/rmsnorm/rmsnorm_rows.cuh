// RMSNorm's math on a row, for the row kernels (rows/rows_common.cuh declares RowMath and says
// what a specialization provides; rows_families.cpp appends this header to every rmsnorm family's
// source).
//
// Semantics: ms = sum_j x_j^2 / cols; y_j = x_j / sqrt(ms + eps) * w_j, with w_j = 1 where weight
// is null.
#pragma once
#include "rmsnorm_check.h" // the op's code
#include "rows_common.cuh"

namespace ktune_dev {
namespace rows {

// Sum of squares.
struct SumStats {
  float ss;
};

template <>
__device__ __forceinline__ SumStats empty_stats<SumStats>() {
  return {0.0f};
}

__device__ __forceinline__ SumStats combine(SumStats a, SumStats b, float) { return {__fadd_rn(a.ss, b.ss)}; }

template <>
struct RowMath<KTUNE_ROWS_RMSNORM> : RowMathDefaults<KTUNE_ROWS_RMSNORM> {
  using Stats = SumStats;
  static constexpr bool kWeight = true, kBias = false;

  template <int N, int VEC>
  __device__ __forceinline__ static void accumulate(Stats& st, float (&g)[N][VEC], const RowConsts&) {
#pragma unroll
    for (int u = 0; u < N; ++u)
#pragma unroll
      for (int e = 0; e < VEC; ++e) st.ss = fmaf(g[u][e], g[u][e], st.ss);
  }

  template <int VEC, int CHUNKS, class SP>
  __device__ __forceinline__ static Stats local_stats(float (&v)[CHUNKS][VEC], const SP&, const RowConsts&) {
    float part[VEC];
#pragma unroll
    for (int e = 0; e < VEC; ++e) part[e] = 0.0f;
#pragma unroll
    for (int ch = 0; ch < CHUNKS; ++ch)
#pragma unroll
      for (int e = 0; e < VEC; ++e) part[e] = fmaf(v[ch][e], v[ch][e], part[e]); // 0 out of the row
    float ss = 0.0f;
#pragma unroll
    for (int e = 0; e < VEC; ++e) ss += part[e];
    return {ss};
  }

  __device__ __forceinline__ static Finish finish(const Stats&, const Stats& all, const KtuneRowsArgs& p, const RowConsts&) {
    return {0.0f, rsqrtf(__fdividef(all.ss, float(p.cols)) + p.eps)};
  }
};

} // namespace rows
} // namespace ktune_dev
