// Verification of attention kernels (tuner/attention_op.cpp), all on the GPU: the inputs' fill
// (and, after the kernel ran, the same fill recomputed to count changed input elements), the guard
// bytes, writes between the output's elements, and the FP64 reference compared with the kernel's
// O and log-sum-exp element by element under the bound of the error analysis below.
//
// Error analysis (docs/ADDING_AN_OP.md, "attention"). Let s_j = scale q . k_j, A_j = |scale| sum_d
// |q_d k_jd|, u = 2^-23 (FP32 accumulation by tensor cores may truncate: twice the round-to-nearest
// unit), n the row's visible keys. A kernel computes s_j with an error of at most gamma_D A_j, scales
// and shifts it (a few roundings of |s_j| and |s_j - max|), and takes exp2 within 2^-21: each
// weight p_j carries a relative error of at most
//     e_j = gamma_D A_j + 4 u (|s_j| + |s_max|) + 2^-21.
// With E = max_j e_j, the weights rounded to the input type (unit roundoff u_p) for the PV product,
// and both sums (numerator and denominator) over n terms accumulated in FP32 (gamma_(n+16)),
//     |O~_d - O_d| <= u_out |O_d| + (2 E + u_p + 2 gamma_(n+16)) (1 + 8u) M_d + 2^-25 (1 + n 2^-101)
// where M_d = sum_j p_j |v_jd| / sum_j p_j (the magnitude of the terms) and u_out the output type's
// unit roundoff; and the log-sum-exp L = s_max + ln sum_j exp(s_j - s_max), from the same weights
// in FP32,
//     |L~ - L| <= (E + gamma_(n+16)) (1 + 8u) + 4 u (|L| + |s_max| + 2 |L - s_max|) + 2^-21.
// A row with no visible key must have O = 0 and L = +inf (FlashAttention's convention).
#include "ktune_random.cuh"

struct KtuneAttnSums {
  double err2, ref2, allow2;
  unsigned long long worst_ratio; // the bits of a non-negative double
  unsigned long long violations, nonfinite;
  long long first_violation, first_nonfinite; // the least such offset; LLONG_MAX when none
};
// What one check adds up: O's sums, the log-sum-exp's, then the byte and element counters.
struct KtuneAttnCheck {
  KtuneAttnSums o, lse;
  unsigned long long guard_bytes, input_elements, stray_elements;
};

namespace {
#define kInf __longlong_as_double(0x7ff0000000000000ll) // NVRTC has no math.h
__device__ __forceinline__ long long first_index() { return blockIdx.x * (long long)blockDim.x + threadIdx.x; }
__device__ __forceinline__ long long grid_stride() { return (long long)gridDim.x * blockDim.x; }
__device__ __forceinline__ unsigned short fill_value(unsigned long long seed, long long i, double lo, double hi, int f16) {
  return ktune_to_half((float)(lo + (hi - lo) * ktune_uniform01(seed, i)), f16);
}
} // namespace

// x[0, n) as 16-bit words of uniform values in [lo, hi) from seed; with `changed` non-null, counts
// the elements that differ from that fill instead (an input the kernel wrote).
extern "C" __global__ void ktune_attn_fill(unsigned short* x, long long n, int f16, double lo, double hi,
                                           unsigned long long seed, unsigned long long* changed) {
  unsigned long long c = 0;
  for (long long i = first_index(); i < n; i += grid_stride()) {
    const unsigned short w = fill_value(seed, i, lo, hi, f16);
    if (changed) c += x[i] != w;
    else x[i] = w;
  }
  if (!changed) return;
  for (int o = 16; o > 0; o /= 2) c += __shfl_xor_sync(0xffffffffu, c, o);
  if ((threadIdx.x & 31) == 0 && c) atomicAdd(changed, c);
}

// x[0, n) as int32 of uniform integers in [lo, hi] from seed (attention_paged's block table and
// sequence lengths); with `changed` non-null, counts the elements that differ from that fill.
extern "C" __global__ void ktune_attn_fill_int(int* x, long long n, long long lo, long long hi, unsigned long long seed,
                                               unsigned long long* changed) {
  unsigned long long c = 0;
  for (long long i = first_index(); i < n; i += grid_stride()) {
    long long w = lo + (long long)(ktune_uniform01(seed, i) * (double)(hi - lo + 1));
    if (w > hi) w = hi;
    if (changed) c += x[i] != (int)w;
    else x[i] = (int)w;
  }
  if (!changed) return;
  for (int o = 16; o > 0; o /= 2) c += __shfl_xor_sync(0xffffffffu, c, o);
  if ((threadIdx.x & 31) == 0 && c) atomicAdd(changed, c);
}

// count += the bytes of a[0, n) that are not `byte` (guards).
extern "C" __global__ void ktune_attn_guard(const unsigned char* a, long long n, unsigned byte, unsigned long long* count) {
  unsigned long long c = 0;
  for (long long i = first_index(); i < n; i += grid_stride()) c += a[i] != (unsigned char)byte;
  for (int o = 16; o > 0; o /= 2) c += __shfl_xor_sync(0xffffffffu, c, o);
  if ((threadIdx.x & 31) == 0 && c) atomicAdd(count, c);
}

// count += the 16-bit elements of o's span [0, span) outside the operand's view that are no longer
// the poison 0xffff. e and s: the view's four extents and strides, ordered by decreasing stride
// (each stride at least the span of the axes after it, as validate() requires), innermost 1.
extern "C" __global__ void ktune_attn_stray(const unsigned short* o, long long span, long long e0, long long e1,
                                            long long e2, long long e3, long long s0, long long s1, long long s2,
                                            long long s3, unsigned long long* count) {
  unsigned long long c = 0;
  for (long long i = first_index(); i < span; i += grid_stride()) {
    long long r = i;
    const long long i0 = r / s0; r -= i0 * s0;
    const long long i1 = r / s1; r -= i1 * s1;
    const long long i2 = r / s2; r -= i2 * s2;
    const long long i3 = r / s3;
    const bool in_view = i0 < e0 && i1 < e1 && i2 < e2 && i3 < e3 && r - i3 * s3 == 0;
    if (!in_view) c += o[i] != 0xffffu;
  }
  for (int o2 = 16; o2 > 0; o2 /= 2) c += __shfl_xor_sync(0xffffffffu, c, o2);
  if ((threadIdx.x & 31) == 0 && c) atomicAdd(count, c);
}

namespace {
constexpr int kRefWarps = 8, kRefRows = 4, kRefKeys = 32, kRefPer = 8; // rows a warp, keys a tile, D / 32 <= 8

__device__ void add_sums(KtuneAttnSums* s, double err2, double ref2, double allow2, double worst,
                         unsigned long long bad, unsigned long long nonfinite, long long first_bad,
                         long long first_nonfinite) {
  for (int o = 16; o > 0; o /= 2) {
    err2 += __shfl_xor_sync(0xffffffffu, err2, o);
    ref2 += __shfl_xor_sync(0xffffffffu, ref2, o);
    allow2 += __shfl_xor_sync(0xffffffffu, allow2, o);
    worst = fmax(worst, __shfl_xor_sync(0xffffffffu, worst, o));
    bad += __shfl_xor_sync(0xffffffffu, bad, o);
    nonfinite += __shfl_xor_sync(0xffffffffu, nonfinite, o);
    first_bad = min(first_bad, __shfl_xor_sync(0xffffffffu, first_bad, o));
    first_nonfinite = min(first_nonfinite, __shfl_xor_sync(0xffffffffu, first_nonfinite, o));
  }
  if ((threadIdx.x & 31) != 0) return;
  if (err2 != 0) atomicAdd(&s->err2, err2);
  if (ref2 != 0) atomicAdd(&s->ref2, ref2);
  if (allow2 != 0) atomicAdd(&s->allow2, allow2);
  if (worst > 0) atomicMax(&s->worst_ratio, (unsigned long long)__double_as_longlong(worst));
  if (bad) atomicAdd(&s->violations, bad), atomicMin(&s->first_violation, first_bad);
  if (nonfinite) atomicAdd(&s->nonfinite, nonfinite), atomicMin(&s->first_nonfinite, first_nonfinite);
}

__device__ __forceinline__ double warp_max(double x) {
  for (int o = 16; o > 0; o /= 2) x = fmax(x, __shfl_xor_sync(0xffffffffu, x, o));
  return x;
}
__device__ __forceinline__ double warp_sum(double x) {
  for (int o = 16; o > 0; o /= 2) x += __shfl_xor_sync(0xffffffffu, x, o);
  return x;
}
} // namespace

// The FP64 reference of every row, compared on the spot with the kernel's o and lse. A paged KV
// cache (attention_paged) passes bt and lens: key j of sequence b at page bt[b * pps + j / page],
// row j % page, of lens[b] keys (k's batch stride then steps a page); null for attention. Packed
// sequences (attention_varlen) pass cu_q and cu_k: sequence b's queries are the tokens [cu_q[b],
// cu_q[b + 1]) of q (and o), its keys [cu_k[b], cu_k[b + 1]) of k and v, the batch strides 0, its
// log-sum-exp at h TQ + token; null otherwise. Grid:
// (ceil(SQ / 32), H, B), 256 threads, dynamic shared memory kRefKeys * (2 D + 1) floats + the
// block's q rows. A warp holds kRefRows rows; lane j of a key tile computes the scores of key j
// with each row (FP64 products of the 16-bit values, exact in FP32 shared memory), then every lane
// accumulates the output elements d = lane + 32 x of its rows.
extern "C" __global__ void __launch_bounds__(256) ktune_attn_reference(
    const unsigned short* q, const unsigned short* k, const unsigned short* v, const unsigned short* o, const float* lse,
    long long B, long long H, long long HKV, long long SQ, long long SKV, long long D, long long qb, long long qs,
    long long qh, long long kb, long long ks, long long kh, long long vb, long long vs, long long vh, long long ob,
    long long os, long long oh, double scale, int f16, int causal, double u_p, KtuneAttnCheck* out, const int* bt,
    const int* lens, long long page, long long pps, const int* cu_q, const int* cu_k, long long TQ) {
  extern __shared__ float ref_smem[];
  float* sK = ref_smem;                    // kRefKeys rows of D + 1 (odd: lanes read a column conflict-free)
  float* sV = sK + kRefKeys * (D + 1);     // kRefKeys rows of D
  float* sQ = sV + kRefKeys * D;           // kRefWarps * kRefRows rows of D
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const long long h = blockIdx.y, b = blockIdx.z, hk = h / (H / HKV);
  const long long q_first = cu_q ? cu_q[b] : 0, k_first = cu_k ? cu_k[b] : 0; // the sequence's first tokens
  const long long sq = cu_q ? cu_q[b + 1] - q_first : SQ;                        // and its queries
  const long long len = cu_k ? cu_k[b + 1] - k_first
                             : lens ? (lens[b] < 0 ? 0 : lens[b] < SKV ? lens[b] : SKV) : SKV; // and keys
  const long long off = len - sq;
  const long long row0 = (long long)blockIdx.x * kRefWarps * kRefRows;
  const long long wrow = row0 + warp * kRefRows;
  auto key_row = [&](long long j, long long stride_b, long long stride_s) { // key j's offset, head hk's
    return (bt ? (long long)bt[b * pps + j / page] * stride_b + (j % page) * stride_s
               : b * stride_b + (k_first + j) * stride_s);
  };
  for (long long x = threadIdx.x; x < kRefWarps * kRefRows * D; x += blockDim.x) {
    const long long r = row0 + x / D;
    sQ[x] = r < sq ? (float)ktune_half_value(q[b * qb + (q_first + r) * qs + h * qh + x % D], f16) : 0.f;
  }
  // Keys the block needs: all, or (causal) up to its last row's diagonal.
  long long n_block = len;
  if (causal) {
    const long long last = (row0 + kRefWarps * kRefRows < sq ? row0 + kRefWarps * kRefRows : sq) - 1 + off + 1;
    n_block = last < 0 ? 0 : last < len ? last : len;
  }
  double m[kRefRows], l[kRefRows], e[kRefRows], acc[kRefRows][kRefPer], mag[kRefRows][kRefPer];
  for (int r = 0; r < kRefRows; ++r) {
    m[r] = -kInf, l[r] = 0, e[r] = 0;
    for (int x = 0; x < kRefPer; ++x) acc[r][x] = mag[r][x] = 0;
  }
  const double u = 1.0 / 8388608.0; // 2^-23
  const double gamma_d = D * u / (1 - D * u);
  for (long long j0 = 0; j0 < n_block; j0 += kRefKeys) {
    __syncthreads();
    for (long long x = threadIdx.x; x < kRefKeys * D; x += blockDim.x) {
      const long long j = j0 + x / D, d = x % D;
      const bool ok = j < len;
      sK[(x / D) * (D + 1) + d] = ok ? (float)ktune_half_value(k[key_row(j, kb, ks) + hk * kh + d], f16) : 0.f;
      sV[x] = ok ? (float)ktune_half_value(v[key_row(j, vb, vs) + hk * vh + d], f16) : 0.f;
    }
    __syncthreads();
    const long long j = j0 + lane;
    double sc[kRefRows];
    for (int r = 0; r < kRefRows; ++r) sc[r] = 0;
    float a[kRefRows] = {};
    for (long long d = 0; d < D; ++d) {
      const float kv = sK[lane * (D + 1) + d];
      for (int r = 0; r < kRefRows; ++r) {
        const float qv = sQ[(warp * kRefRows + r) * D + d];
        sc[r] = fma((double)qv, (double)kv, sc[r]);
        a[r] = fmaf(fabsf(qv), fabsf(kv), a[r]);
      }
    }
    for (int r = 0; r < kRefRows; ++r) {
      const long long i = wrow + r;
      const bool visible = i < sq && j < len && (!causal || j <= i + off);
      const double s = visible ? scale * sc[r] : -kInf;
      if (visible) e[r] = fmax(e[r], fabs(scale) * gamma_d * (double)a[r] * (1 + 1e-6) + 4 * u * fabs(s));
      const double m_new = fmax(m[r], warp_max(s));
      const double m_use = m_new == -kInf ? 0.0 : m_new;
      const double corr = exp(m[r] - m_use), p = visible ? exp(s - m_use) : 0.0;
      m[r] = m_new;
      l[r] = l[r] * corr + p;
      for (int x = 0; x < kRefPer; ++x) acc[r][x] *= corr, mag[r][x] *= corr;
      for (int jj = 0; jj < kRefKeys; ++jj) {
        const double pj = __shfl_sync(0xffffffffu, p, jj);
        if (pj == 0) continue;
        for (int x = 0; x < kRefPer; ++x) {
          const long long d = lane + 32 * x;
          if (d < D) {
            const double vv = sV[jj * D + d];
            acc[r][x] = fma(pj, vv, acc[r][x]);
            mag[r][x] = fma(pj, fabs(vv), mag[r][x]);
          }
        }
      }
    }
  }
  // Compare.
  const double u_out = f16 ? 1.0 / 2048 : 1.0 / 256;
  double err2 = 0, ref2 = 0, allow2 = 0, worst = 0, lerr2 = 0, lref2 = 0, lallow2 = 0, lworst = 0;
  unsigned long long bad = 0, nonfinite = 0, lbad = 0, lnonfinite = 0;
  long long first_bad = 9223372036854775807ll, first_nonfinite = first_bad, lfirst_bad = first_bad,
            lfirst_nonfinite = first_bad;
  auto judge = [](double got, double ref, double bound, double& err2, double& ref2, double& allow2, double& worst,
                  unsigned long long& bad, unsigned long long& nonfinite, long long& first_bad, long long& first_nonfinite,
                  long long at) {
    const bool ref_inf = isinf(ref);
    if (ref_inf) { // a row with no key: its log-sum-exp must be this infinity
      if (got != ref) {
        if (bad++ == 0) first_bad = min(first_bad, at);
        worst = fmax(worst, 1e300);
      }
      return;
    }
    if (!isfinite(got)) {
      if (nonfinite++ == 0) first_nonfinite = min(first_nonfinite, at);
      return;
    }
    const double d = got - ref;
    err2 += d * d, ref2 += ref * ref, allow2 += bound * bound;
    const double ratio = fabs(d) / bound;
    worst = fmax(worst, ratio);
    if (ratio > 1 && bad++ == 0) first_bad = min(first_bad, at);
  };
  for (int r = 0; r < kRefRows; ++r) {
    const long long i = wrow + r;
    if (i >= sq) break;
    const double lsum = warp_sum(l[r]);
    const double E = warp_max(e[r]) + 4 * u * fabs(m[r] == -kInf ? 0.0 : m[r]) + 1.0 / 2097152.0; // + 2^-21
    long long nvis = causal ? (i + off + 1 < len ? i + off + 1 : len) : len;
    if (nvis < 0) nvis = 0;
    const double gn = (nvis + 16) * u / (1 - (nvis + 16) * u);
    const double c = (2 * E + u_p + 2 * gn) * (1 + 8 * u);
    const double tiny = 1.0 / 33554432.0 * (1 + nvis * 3.9e-31); // 2^-25 (1 + n 2^-101)
    for (int x = 0; x < kRefPer; ++x) {
      const long long d = lane + 32 * x;
      if (d >= D) continue;
      const double exact = lsum > 0 ? acc[r][x] / lsum : 0.0, mg = lsum > 0 ? mag[r][x] / lsum : 0.0;
      const long long at = b * ob + (q_first + i) * os + h * oh + d;
      const double got = ktune_half_value(o[at], f16);
      judge(got, exact, u_out * fabs(exact) + c * mg + tiny, err2, ref2, allow2, worst, bad, nonfinite, first_bad,
            first_nonfinite, at);
    }
    if (lane == 0) {
      const long long at = cu_q ? h * TQ + q_first + i : (b * H + h) * SQ + i;
      const double L = lsum > 0 ? m[r] + log(lsum) : kInf;
      const double bound = (E + gn) * (1 + 8 * u) + 4 * u * (fabs(L) + fabs(m[r]) + 2 * fabs(log(lsum))) + 1.0 / 2097152.0;
      judge((double)lse[at], L, bound, lerr2, lref2, lallow2, lworst, lbad, lnonfinite, lfirst_bad, lfirst_nonfinite, at);
    }
  }
  add_sums(&out->o, err2, ref2, allow2, worst, bad, nonfinite, first_bad, first_nonfinite);
  add_sums(&out->lse, lerr2, lref2, lallow2, lworst, lbad, lnonfinite, lfirst_bad, lfirst_nonfinite);
}
