// Family attention_simple: one warp a query row, any head dimension up to 256, any alignment, any
// arch. Lane d % 32 holds the row's elements d of q and of the output; per key the warp adds up
// q . k (FP32, a butterfly over the lanes) and folds it into the online softmax (FP32 P, never
// rounded to 16 bits). It is the family every problem has (the runtime's fallback where no tuned
// config fits, e.g. 2-byte aligned views), not a fast one.
//
// Arguments and semantics as attention_fa2.cu's (attention_simple_varlen: as attention_fa2_varlen's).
#include "attention_seq.cuh"
#include "ktune_random.cuh"

template <int F16, int WARPS, int CAUSAL, int VARLEN>
__device__ __forceinline__ void attention_simple_body(
    const unsigned short* __restrict__ q, const unsigned short* __restrict__ k, const unsigned short* __restrict__ v,
    unsigned short* __restrict__ o, float* __restrict__ lse, long long H, long long HKV, long long SQ_MAX,
    long long SKV_MAX, long long D, long long TQ, long long qb, long long qs, long long qh, long long kb, long long ks,
    long long kh, long long vb, long long vs, long long vh, long long ob, long long os, long long oh, float scale_arg,
    const int* __restrict__ cu_q, const int* __restrict__ cu_k) {
  constexpr int PER = 8; // elements of a row a lane holds: D <= 256
  const int lane = threadIdx.x & 31;
  const long long i = (long long)blockIdx.x * WARPS + (threadIdx.x >> 5);
  const long long h = blockIdx.y, b = blockIdx.z, hk = h / (H / HKV);
  const ktune_attn::Seq seq = ktune_attn::seq_of<VARLEN>(b, h, H, SQ_MAX, SKV_MAX, TQ, cu_q, cu_k);
  const long long SQ = seq.sq, SKV = seq.skv; // this sequence's
  if (i >= SQ) return;
  const float scale = scale_arg != 0.f ? scale_arg : 1.f / sqrtf((float)D);
  const unsigned short* qr = q + b * qb + (seq.q_first + i) * qs + h * qh;
  const unsigned short* kh0 = k + b * kb + seq.k_first * ks + hk * kh;
  const unsigned short* vh0 = v + b * vb + seq.k_first * vs + hk * vh;
  float qv[PER], acc[PER];
#pragma unroll
  for (int x = 0; x < PER; ++x) {
    const long long d = lane + 32 * x;
    qv[x] = d < D ? (float)ktune_half_value(qr[d], F16) : 0.f;
    acc[x] = 0.f;
  }
  long long n = SKV;
  if (CAUSAL) n = i + SKV - SQ + 1 < SKV ? i + SKV - SQ + 1 : SKV;
  float m = -__int_as_float(0x7f800000), l = 0.f;
  for (long long j = 0; j < n; ++j) {
    const unsigned short* kr = kh0 + j * ks;
    float dot = 0.f;
#pragma unroll
    for (int x = 0; x < PER; ++x) {
      const long long d = lane + 32 * x;
      if (d < D) dot = fmaf(qv[x], (float)ktune_half_value(kr[d], F16), dot);
    }
#pragma unroll
    for (int w = 16; w > 0; w /= 2) dot += __shfl_xor_sync(0xffffffffu, dot, w);
    const float s = dot * scale, m_new = fmaxf(m, s);
    const float corr = expf(m - m_new), p = expf(s - m_new);
    l = l * corr + p;
    const unsigned short* vr = vh0 + j * vs;
#pragma unroll
    for (int x = 0; x < PER; ++x) {
      const long long d = lane + 32 * x;
      if (d < D) acc[x] = fmaf(p, (float)ktune_half_value(vr[d], F16), acc[x] * corr);
    }
    m = m_new;
  }
  const float inv = l > 0.f ? 1.f / l : 0.f;
  unsigned short* orow = o + b * ob + (seq.q_first + i) * os + h * oh;
#pragma unroll
  for (int x = 0; x < PER; ++x) {
    const long long d = lane + 32 * x;
    if (d < D) orow[d] = ktune_to_half(acc[x] * inv, F16);
  }
  if (lane == 0) lse[seq.lse0 + i] = l > 0.f ? m + logf(l) : __int_as_float(0x7f800000);
}

template <int F16, int WARPS, int CAUSAL>
__global__ void __launch_bounds__(WARPS * 32) attention_simple(
    const unsigned short* __restrict__ q, const unsigned short* __restrict__ k, const unsigned short* __restrict__ v,
    unsigned short* __restrict__ o, float* __restrict__ lse, long long /*B*/, long long H, long long HKV, long long SQ,
    long long SKV, long long D, long long qb, long long qs, long long qh, long long kb, long long ks, long long kh,
    long long vb, long long vs, long long vh, long long ob, long long os, long long oh, float scale_arg) {
  attention_simple_body<F16, WARPS, CAUSAL, 0>(q, k, v, o, lse, H, HKV, SQ, SKV, D, 0, qb, qs, qh, kb, ks, kh, vb, vs,
                                               vh, ob, os, oh, scale_arg, nullptr, nullptr);
}

template <int F16, int WARPS, int CAUSAL>
__global__ void __launch_bounds__(WARPS * 32) attention_simple_varlen(
    const unsigned short* __restrict__ q, const unsigned short* __restrict__ k, const unsigned short* __restrict__ v,
    const int* __restrict__ cu_q, const int* __restrict__ cu_k, unsigned short* __restrict__ o, float* __restrict__ lse,
    long long /*B*/, long long H, long long HKV, long long SQ, long long SKV, long long D, long long TQ,
    long long /*TKV*/, long long qs, long long qh, long long ks, long long kh, long long vs, long long vh, long long os,
    long long oh, float scale_arg) {
  attention_simple_body<F16, WARPS, CAUSAL, 1>(q, k, v, o, lse, H, HKV, SQ, SKV, D, TQ, 0, qs, qh, 0, ks, kh, 0, vs,
                                               vh, 0, os, oh, scale_arg, cu_q, cu_k);
}
