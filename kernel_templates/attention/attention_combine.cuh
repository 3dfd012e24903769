// The split-KV layout and its merge, shared by the families that split a row's keys over blocks
// (attention_decode's combine step, attention_wgmma's SPLIT): each split writes its unnormalised O
// (rescaled to its own row max), its row max m_s and its row sum l_s (log2 units of the scaled
// scores, as the online softmax keeps them) to the workspace, and the combine step merges them:
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

// How the combine step deals its rows: each warp of a block (as many as the launch gives it) merges
// 32 / LPR rows of LPR lanes (LPR = min(32, D / 4): a lane holds 4 columns of the head dimension,
// or 8 at D > 128). The host code sizes the grid by the same count (add_combine_step in
// attention.cpp).
constexpr int kCombineMaxSplits = 128; // the families' limit (the (m_s, l_s) a lane holds: 128 / LPR)

// The splits' partials merged, a row to LPR lanes of a warp, no block barrier: the step is a chain
// of reads from L2, and prefill splits tens of thousands of (b, h, i) rows, where a block of 128
// threads a row with three block barriers (the step's first form) left SPLIT 2 at 3.2-3.7x the
// unsplit kernel's time at 140-192 tiles (H200, docs/runs/2026-12-05-h200-attention-neighbours.md
// section 3). Lane r of a row's segment reads (m_s, l_s) of splits r, r + LPR, ... and, beside
// them, its columns of the first PRE splits' O_s (up to 16: attention_decode's rule splits batch 1
// 16 ways): one round trip before the reductions, which are shuffles inside the segment. Each
// split's weight 2^(m_s - M) / L is then shuffled from the lane that holds it, and O is summed over
// the splits in split order. MAXS is the most splits the caller launches (attention_wgmma's SPLIT;
// kCombineMaxSplits for attention_decode).
template <int F16, int D, int PAD, int MAXS>
__device__ __forceinline__ void combine_splits(unsigned short* __restrict__ o, float* __restrict__ lse, long long B,
                                               long long H, long long SQ, long long nsplit, long long DR, long long ob,
                                               long long os, long long oh, float* __restrict__ ws) {
  constexpr int C4 = D / 4;                  // float4 columns of a row
  constexpr int LPR = C4 < 32 ? C4 : 32;     // lanes a row (a power of two: D is a multiple of 64)
  constexpr int DI = (C4 + LPR - 1) / LPR;   // a lane's float4 columns: c = r + LPR * di
  constexpr int SJ = (MAXS + LPR - 1) / LPR; // a lane's (m_s, l_s): s = r + LPR * j
  constexpr int PRE = MAXS < 16 ? MAXS : 16;  // splits whose O_s a lane loads before the reductions
  static_assert(C4 % 16 == 0 && 32 % LPR == 0, "head dims of whole 64-column blocks");
  static_assert(MAXS >= 1 && MAXS <= kCombineMaxSplits, "the families' split limit");
#if __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory"); // the split step's partials are complete
#endif
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, seg = lane / LPR, r = lane % LPR;
  const long long rows = B * H * SQ;
  const long long row = ((long long)blockIdx.x * (blockDim.x >> 5) + warp) * (32 / LPR) + seg;
  const bool live = row < rows; // a row past the end still takes part in its warp's shuffles
  const int ns = int(nsplit);
  float2 ml[SJ];
#pragma unroll
  for (int j = 0; j < SJ; ++j) {
    const int s = r + LPR * j;
    ml[j] = live && s < ns ? *partial_ml(ws, nsplit, s, rows, row, D) : make_float2(-inf_f(), 0.f);
  }
  float4 early[PRE][DI];
#pragma unroll
  for (int s = 0; s < PRE; ++s)
#pragma unroll
    for (int di = 0; di < DI; ++di) {
      const int c = r + LPR * di;
      early[s][di] = live && s < ns && c < C4 ? *reinterpret_cast<const float4*>(partial_o(ws, s, rows, row, D) + 4 * c)
                                              : make_float4(0.f, 0.f, 0.f, 0.f);
    }
  float m = -inf_f();
#pragma unroll
  for (int j = 0; j < SJ; ++j) m = fmaxf(m, ml[j].x);
#pragma unroll
  for (int x = LPR / 2; x > 0; x >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, x));
  const float m_use = m == -inf_f() ? 0.f : m;
  float e[SJ], l = 0.f;
#pragma unroll
  for (int j = 0; j < SJ; ++j) {
    e[j] = r + LPR * j < ns ? exp2_approx(ml[j].x - m_use) : 0.f;
    l += ml[j].y * e[j];
  }
#pragma unroll
  for (int x = LPR / 2; x > 0; x >>= 1) l += __shfl_xor_sync(0xffffffffu, l, x);
  const float inv = l > 0.f ? 1.f / l : 0.f;
  const int lane0 = seg * LPR; // split s's weight: e[s / LPR] of lane lane0 + s % LPR
  float4 sum[DI];
#pragma unroll
  for (int di = 0; di < DI; ++di) sum[di] = make_float4(0.f, 0.f, 0.f, 0.f);
  auto add = [&](float w, const float4& x, float4& acc) {
    acc.x += w * x.x, acc.y += w * x.y, acc.z += w * x.z, acc.w += w * x.w;
  };
#pragma unroll
  for (int s = 0; s < PRE; ++s) {
    const float w = __shfl_sync(0xffffffffu, e[s / LPR], lane0 + s % LPR) * inv; // 0 past the last split
#pragma unroll
    for (int di = 0; di < DI; ++di) add(w, early[s][di], sum[di]);
  }
  // Splits past the early loads (nsplit is the grid's: the loop is uniform over the warp).
#pragma unroll
  for (int j = 0; j < SJ; ++j) {
    const int first = PRE <= LPR * j ? 0 : PRE - LPR * j < LPR ? PRE - LPR * j : LPR; // past the early ones
    if (LPR * j + first >= ns) break; // every split left is past the last
#pragma unroll 4
    for (int i = first; i < LPR && LPR * j + i < ns; ++i) {
      const float w = __shfl_sync(0xffffffffu, e[j], lane0 + i) * inv;
#pragma unroll
      for (int di = 0; di < DI; ++di) {
        const int c = r + LPR * di;
        if (live && c < C4) add(w, *reinterpret_cast<const float4*>(partial_o(ws, LPR * j + i, rows, row, D) + 4 * c), sum[di]);
      }
    }
  }
  if (!live) return;
  const long long i = row % SQ, h = (row / SQ) % H, b = row / (SQ * H);
#pragma unroll
  for (int di = 0; di < DI; ++di) {
    const int c = r + LPR * di;
    if (c >= C4 || (PAD && 4 * c >= DR)) continue; // past the tiles', or (PAD) the operands' head dim
    uint2 out;
    out.x = pack2<F16>(sum[di].x, sum[di].y);
    out.y = pack2<F16>(sum[di].z, sum[di].w);
    *reinterpret_cast<uint2*>(o + b * ob + i * os + h * oh + 4 * c) = out;
  }
  if (r == 0) lse[row] = l > 0.f ? (m_use + log2_approx(l)) * 0.6931471805599453f : inf_f();
}

} // namespace ktune_attn
