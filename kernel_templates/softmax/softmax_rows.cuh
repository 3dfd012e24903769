// softmax's math on a row, for the row kernels (rows/rows_common.cuh declares RowMath and says
// what a specialization provides; rows_families.cpp appends this header to every softmax family's
// source).
//
// Semantics: z_j = scale * x_j; m = max_j z_j; y_j = exp(z_j - m) / sum_k exp(z_k - m). A row of all
// -inf (or holding +inf or NaN) gives NaN everywhere, as in PyTorch. Known deviation: scale == 0
// and a lane (warp/block/cluster kernels) or row (stream) whose inputs are all -inf give 0 (or
// 1/n) where FP64 gives NaN (0 * -inf); any finite non-zero scale, negative included, follows
// PyTorch.
//
// Numerics: softmax never forms scale * x. With s = sign(scale) (1 for 0) its max runs over
// xs = s * x (exact) and gives M; every exp is 2^(x * cs - ref(M)) with cs = scale * log2(e) and
// ref(M) = M * |scale| * log2(e) rounded once, as one FMA: x * cs exact inside it, one rounding of
// the difference, so exp's argument carries one rounding relative to itself, not to |x| (ref's
// own rounding is common to every term and rescale, so it cancels in y). A lane's or a chunk
// group's elements are summed against their own max m, and partial (m, sum) pairs merge with
// rescaling (the online-softmax combine), so one reduction round suffices and each element needs
// one exp. The per-row constants (sgn, c, cs, flip) are RowConsts's.
#pragma once
#include "softmax_check.h" // the op's code
#include "rows_common.cuh"

namespace ktune_dev {
namespace rows {

// The exponent a sum of exp terms is taken against, for the max m: ref = m * c rounded once.
// Every term is ex2(fma(x, cs, -ref)) (x * cs exact in the FMA, one rounding: no extra error from
// ref's own rounding, which every term and every rescale shares), one instruction an element where
// ex2((xs - m) * c) took two. Whoever rescales a sum or takes exp against the row's max uses the
// same ref (rescale, the second pass), so the sums agree bit for bit in meaning. __fmul_rn: never
// contracted into a neighbouring add.
__device__ __forceinline__ float ref(float m, float c) { return __fmul_rn(m, c); }

// Max m of xs over the elements seen (-inf: none seen, or all -inf) and the sum of
// 2^(xs * c - ref(m, c)) = exp((xs - m) * |scale|) over them.
struct SoftmaxStats {
  float m, s;
};

template <>
__device__ __forceinline__ SoftmaxStats empty_stats<SoftmaxStats>() {
  return {neg_inf(), 0.0f};
}

// 2^(ref(m) - ref(M)) as the weight of a partial sum taken against max m once the max is M (ref
// is monotonic: the exponent is <= 0 when m <= M); a partial of no (or only -inf) elements weighs 0
// (its sum is 0; this also keeps -inf - -inf and scale == 0 from making a NaN out of nothing).
__device__ __forceinline__ float rescale(float m, float M, float c) {
  return m == neg_inf() ? 0.0f : ex2(__fsub_rn(ref(m, c), ref(M, c)));
}

// Symmetric bit for bit (max_nan is symmetric, products and sums commute, and the _rn intrinsics
// keep the compiler from contracting one side of the sum into an FMA).
__device__ __forceinline__ SoftmaxStats combine(SoftmaxStats a, SoftmaxStats b, float c) {
  const float M = max_nan(a.m, b.m);
  return {M, __fadd_rn(__fmul_rn(a.s, rescale(a.m, M, c)), __fmul_rn(b.s, rescale(b.m, M, c)))};
}

template <>
struct RowMath<KTUNE_ROWS_SOFTMAX> : RowMathDefaults<KTUNE_ROWS_SOFTMAX> {
  using Stats = SoftmaxStats;
  static constexpr bool kWeight = false, kBias = false;
  static constexpr bool kZeroOutside = false; // loaded() puts -inf there

  // The cached chunks as xs = sgn * x; columns out of the row -inf.
  template <int VEC, int CHUNKS, class SP>
  __device__ __forceinline__ static void loaded(float (&v)[CHUNKS][VEC], const SP& span, const RowConsts& k) {
#pragma unroll
    for (int ch = 0; ch < CHUNKS; ++ch)
#pragma unroll
      for (int e = 0; e < VEC; ++e) v[ch][e] = span.in(ch, e) ? v[ch][e] * k.sgn : neg_inf();
  }

  // N vectors of the row (all in it) folded into st; g is turned into xs on the way.
  template <int N, int VEC>
  __device__ __forceinline__ static void accumulate(Stats& st, float (&g)[N][VEC], const RowConsts& k) {
    float gm = neg_inf();
#pragma unroll
    for (int u = 0; u < N; ++u)
#pragma unroll
      for (int e = 0; e < VEC; ++e) {
        g[u][e] *= k.sgn;
        gm = max_nan(gm, g[u][e]);
      }
    const float m = max_nan(st.m, gm);
    if (m != neg_inf()) { // else nothing but -inf so far: the stats stay empty
      const float r = ref(m, k.c);
      float s = 0.0f;
#pragma unroll
      for (int u = 0; u < N; ++u)
#pragma unroll
        for (int e = 0; e < VEC; ++e) s += ex2_ftz(fmaf(g[u][e], k.c, -r)); // the group's max contributes ~1
      st.s = st.s * rescale(st.m, m, k.c) + s;
      st.m = m;
    }
  }

  // The thread's (m, sum); each cached xs becomes 2^(xs * c - ref(m, c)) against the thread's own
  // max m (0 out of the row), which is what the stores scale; out-of-row elements are masked
  // explicitly (scale == 0 would make NaN of them).
  template <int VEC, int CHUNKS, class SP>
  __device__ __forceinline__ static Stats local_stats(float (&v)[CHUNKS][VEC], const SP& span, const RowConsts& k) {
    float m = neg_inf();
#pragma unroll
    for (int ch = 0; ch < CHUNKS; ++ch)
#pragma unroll
      for (int e = 0; e < VEC; ++e) m = max_nan(m, v[ch][e]);
    float part[VEC];
#pragma unroll
    for (int e = 0; e < VEC; ++e) part[e] = 0.0f;
    const bool any = m != neg_inf();
    const float r = ref(m, k.c);
#pragma unroll
    for (int ch = 0; ch < CHUNKS; ++ch) {
#pragma unroll
      for (int e = 0; e < VEC; ++e) {
        v[ch][e] = any && span.in(ch, e) ? ex2(fmaf(v[ch][e], k.c, -r)) : 0.0f;
        part[e] += v[ch][e];
      }
    }
    float s = 0.0f;
#pragma unroll
    for (int e = 0; e < VEC; ++e) s += part[e];
    return {m, s};
  }

  // v holds 2^(xs * c - ref(m)) against the thread's own max m = mine.m, so mult = rescale(m, M) / S;
  // a row of all -inf has S = 0 and gets NaN (0/0) like PyTorch.
  __device__ __forceinline__ static Finish finish(const Stats& mine, const Stats& all, const KtuneRowsArgs&,
                                                  const RowConsts& k) {
    return {0.0f, __fdividef(rescale(mine.m, all.m, k.c), all.s)};
  }

  template <int VEC>
  __device__ __forceinline__ static void finished(float (&y)[VEC], const float (&v)[VEC], const Finish& f) {
#pragma unroll
    for (int e = 0; e < VEC; ++e) y[e] = v[e] * f.mult;
  }

  // Pass 1 on 16-bit pairs (VEC >= 2) runs the max over the raw pairs: one xor of sign(scale) into
  // a word and one packed max (max.NaN.bf16x2 / f16x2) for two elements, where unpacked floats
  // took an FMUL by sgn and a max each; the exp terms then read x itself (x * cs = xs * c).
  template <int VEC, int THREADS, int N, class S, class Src>
  __device__ __forceinline__ static void fold_group(S& st, const Src& src, int i, const RowConsts& k) {
    constexpr int DT = Src::DT;
    if constexpr (DT != 0 && VEC >= 2) {
      constexpr int W = VEC / 2;
      unsigned w[N][W];
#pragma unroll
      for (int u = 0; u < N; ++u) src.words(w[u], i + u * THREADS);
      unsigned mx = w[0][0] ^ k.flip;
#pragma unroll
      for (int u = 0; u < N; ++u)
#pragma unroll
        for (int j = 0; j < W; ++j)
          if (u > 0 || j > 0) mx = max2_nan<DT>(mx, w[u][j] ^ k.flip);
      float h[2];
      unpack<DT, 2>(h, &mx);
      const float m = max_nan(st.m, max_nan(h[0], h[1]));
      if (m != neg_inf()) { // else nothing but -inf so far: the stats stay empty
        const float r = ref(m, k.c);
        float s = 0.0f;
#pragma unroll
        for (int u = 0; u < N; ++u) {
          float v[VEC];
          unpack<DT, VEC>(v, w[u]);
#pragma unroll
          for (int e = 0; e < VEC; ++e) s += ex2_ftz(fmaf(v[e], k.cs, -r)); // the group's max contributes ~1
        }
        st.s = st.s * rescale(st.m, m, k.c) + s;
        st.m = m;
      }
    } else {
      RowMathDefaults::fold_group<VEC, THREADS, N>(st, src, i, k);
    }
  }

  // Pass 2 from the row's stats alone (the elements are re-read, not cached against a thread's own
  // max): shift = -log2(S), which pass 2 adds to exp's argument instead of multiplying by 1/S
  // afterwards (one instruction an element less; lg2's 2^-22 absolute error is a relative error of
  // 2^-22 ln 2 in every output). S = 0 (all -inf): the arguments are NaN already; S NaN (an inf or
  // NaN in the row): NaN everywhere, like PyTorch.
  template <class S>
  __device__ __forceinline__ static Finish finish_from_row(const S& all, const KtuneRowsArgs&, const RowConsts&) {
    return Finish{-lg2(all.s), 1.0f};
  }

  // Pass 2's exponent for x: t = fma(x, cs, a) + b. EXACT: a = -ref(M), b = -log2 S (+ 64 for
  // 16-bit results, see second_pass_vector), two roundings of which the first has no cancellation
  // error. FOLDED (16-bit results, |a + b| < 256): one FMA with a = the sum rounded (b unused);
  // that rounding shifts every exponent by the same <= 2^-17, a relative error of <= 2^-17 ln 2
  // (5.3e-6) in every result, against the final rounding's 2^-8 (bf16) and 2^-11 (f16) (per row:
  // uniform branch).
  enum { kExact = 0, kFolded = 1 };
  template <bool W, bool B, class Pass>
  __device__ __forceinline__ static void run_second_pass(const Pass& pass) {
    constexpr int DT = Pass::DT_;
    const float a = -ref(pass.all.m, pass.k.c), b = DT == 0 ? pass.f.shift : pass.f.shift + 64.0f;
    const float folded = __fadd_rn(a, b);
    if (DT != 0 && fabsf(folded) < 256.0f)
      pass.template sweep<W, B, kFolded>(folded, 0.0f);
    else
      pass.template sweep<W, B, kExact>(a, b);
  }

  // x * cs - ref(M) = xs * c - ref(M): the exponent pass 1's terms took, less log2 S.
  template <int DT, int VEC, bool W, bool B, bool GENERIC, int FORM>
  __device__ __forceinline__ static void second_pass_vector(const OutPtrs& o, int vec, float (&g)[VEC], const Finish&,
                                                            const RowConsts& k, float a, float b) {
    if constexpr (DT == 0) {
#pragma unroll
      for (int e = 0; e < VEC; ++e) g[e] = ex2(fmaf(g[e], k.cs, a) + b);
    } else {
      // 16-bit results: 2^(t + 64) flushing to zero, times 2^-64 (an FMUL, which keeps
      // subnormals): two instructions where ex2 wraps MUFU.EX2 in more for subnormal results.
      // Exact for t in [-190, 64] (t <= 0 here; below -190 the result rounds to 0 in bf16 and f16
      // anyway: their least subnormals are 2^-133 and 2^-24); the argument's extra rounding at 64
      // (2^-18 relative) is far below bf16's and f16's 2^-8 and 2^-11.
#pragma unroll
      for (int e = 0; e < VEC; ++e) {
        const float t = FORM == kFolded ? fmaf(g[e], k.cs, a) : fmaf(g[e], k.cs, a) + b;
        g[e] = ex2_ftz(t) * 0x1p-64f;
      }
    }
    store_vec<DT, VEC, GENERIC>(o.y, static_cast<long long>(vec) * VEC, g);
  }
};

} // namespace rows
} // namespace ktune_dev
