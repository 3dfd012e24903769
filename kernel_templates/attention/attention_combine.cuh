// The split-KV layout and its merge, shared by the families that split a row's keys over blocks
// (attention_decode's combine step, attention_wgmma's SPLIT): each split writes its unnormalised O
// (rescaled to its own row max), its row max m_s and its row sum l_s (log2 units of the scaled
// scores, as the online softmax keeps them) to the workspace, and a block a row merges them:
// O = sum_s 2^(m_s - M) O_s / sum_s 2^(m_s - M) l_s, lse = M + log2 sum_s 2^(m_s - M) l_s (the same
// rescale the online softmax makes a tile, made once more). A split that saw no key of a row
// writes (-inf, 0) and a zero O, which weigh nothing.
#pragma once
#include "attention_mma.cuh"

namespace ktune_attn {

// Where split s of row `row` (of B * H * SQ, in (b, h, i) order) keeps its partial results.
__device__ __forceinline__ float* partial_o(float* ws, long long split, long long rows, long long row, int d) {
  return ws + (split * rows + row) * d;
}
__device__ __forceinline__ float2* partial_ml(float* ws, long long nsplit, long long split, long long rows, long long row,
                                              int d) {
  return reinterpret_cast<float2*>(ws + nsplit * rows * d) + split * rows + row;
}

// The splits' partials merged: a block of 4 warps a (b, h, i) row. Thread s reads split s's
// (m_s, l_s) (at most 128 splits, the families' limit), the block reduces them to the row's max and
// sum, and each warp sums every fourth split's O_s (4 elements of the head dimension a lane), the
// warps' sums added in warp order. Each lane's O_s of its first PRE splits are loaded beside
// (m_s, l_s), before the reductions need them: the step is a chain of global reads from L2, and
// this takes one round trip out of it (at 16 splits, all of them).
template <int F16, int D, int PAD>
__device__ __forceinline__ void combine_splits(unsigned short* __restrict__ o, float* __restrict__ lse, long long B,
                                               long long H, long long SQ, long long nsplit, long long DR, long long ob,
                                               long long os, long long oh, float* __restrict__ ws) {
  constexpr int DI = (D + 127) / 128; // a lane's float4 columns: d = lane * 4 + 128 * di
  constexpr int PRE = 4;              // splits a warp loads early (every fourth: warp, warp + 4, ...)
  __shared__ float weight[128];
  __shared__ float reduce[2][4];
  __shared__ float4 part[4][D / 4];
#if __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory"); // the split step's partials are complete
#endif
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const long long rows = B * H * SQ, row = blockIdx.x;
  const float2 ml = tid < nsplit ? *partial_ml(ws, nsplit, tid, rows, row, D) : make_float2(-inf_f(), 0.f);
  float4 early[PRE][DI];
#pragma unroll
  for (int j = 0; j < PRE; ++j)
#pragma unroll
    for (int di = 0; di < DI; ++di) {
      const long long s = warp + 4 * j;
      const int d = lane * 4 + 128 * di;
      early[j][di] = s < nsplit && d < D ? *reinterpret_cast<const float4*>(partial_o(ws, s, rows, row, D) + d)
                                         : make_float4(0.f, 0.f, 0.f, 0.f);
    }
  float m = ml.x;
#pragma unroll
  for (int x = 16; x > 0; x >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, x));
  if (lane == 0) reduce[0][warp] = m;
  __syncthreads();
  m = fmaxf(fmaxf(reduce[0][0], reduce[0][1]), fmaxf(reduce[0][2], reduce[0][3]));
  const float m_use = m == -inf_f() ? 0.f : m;
  const float e = tid < nsplit ? exp2_approx(ml.x - m_use) : 0.f;
  float l = ml.y * e;
#pragma unroll
  for (int x = 16; x > 0; x >>= 1) l += __shfl_xor_sync(0xffffffffu, l, x);
  if (lane == 0) reduce[1][warp] = l;
  __syncthreads();
  l = (reduce[1][0] + reduce[1][1]) + (reduce[1][2] + reduce[1][3]);
  const float inv = l > 0.f ? 1.f / l : 0.f;
  if (tid < nsplit) weight[tid] = e * inv;
  __syncthreads();
#pragma unroll
  for (int di = 0; di < DI; ++di) {
    const int d = lane * 4 + 128 * di;
    if (d >= D) continue;
    float4 sum = make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll
    for (int j = 0; j < PRE; ++j) {
      const long long s = warp + 4 * j;
      const float w = s < nsplit ? weight[s] : 0.f;
      const float4 x = early[j][di];
      sum.x += w * x.x, sum.y += w * x.y, sum.z += w * x.z, sum.w += w * x.w;
    }
#pragma unroll 4
    for (long long s = warp + 4 * PRE; s < nsplit; s += 4) {
      const float w = weight[s];
      const float4 x = *reinterpret_cast<const float4*>(partial_o(ws, s, rows, row, D) + d);
      sum.x += w * x.x, sum.y += w * x.y, sum.z += w * x.z, sum.w += w * x.w;
    }
    part[warp][d / 4] = sum;
  }
  __syncthreads();
  const long long i = row % SQ, h = (row / SQ) % H, b = row / (SQ * H);
  for (int c = tid; c < D / 4; c += 128) {
    if (PAD && 4 * c >= DR) continue; // a zero column of the tiles'
    const float4 a = part[0][c], b1 = part[1][c], c2 = part[2][c], d3 = part[3][c];
    uint2 out;
    out.x = pack2<F16>((a.x + b1.x) + (c2.x + d3.x), (a.y + b1.y) + (c2.y + d3.y));
    out.y = pack2<F16>((a.z + b1.z) + (c2.z + d3.z), (a.w + b1.w) + (c2.w + d3.w));
    *reinterpret_cast<uint2*>(o + b * ob + i * os + h * oh + 4 * c) = out;
  }
  if (tid == 0) lse[row] = l > 0.f ? (m_use + log2_approx(l)) * 0.6931471805599453f : inf_f();
}

} // namespace ktune_attn
