// gemm_wgmma's tile scheduler (gemm_wgmma.cu): work units and their output tiles (MC pairs), the
// stream-K split of the last wave (SK), the persistent walk over units (PT), and where a stream-K
// block parks its partial sums in the workspace.
#pragma once
#include "gemm_half16.cuh"
#include "gemm_wgmma_common.cuh"

namespace ktune_dev {
namespace wgmma {

// Work units and their output tiles. MC = 0: a unit is a tile (raster order over tiles_m x tiles_n).
// MC = 1: a unit is a pair of M tiles sharing B's tile, CTA `rank` of the cluster taking tile
// 2 * pair + rank along M; MC = 2: a pair of N tiles sharing A's. A pair's second tile may lie past
// the last one (odd tile counts): that CTA still loads its half of the shared operand for its
// partner, and stores nothing. units_m x units_n is the grid of units the raster walks.
template <int SWZ, int MC>
struct Units {
  int units_m, units_n;
  __device__ __forceinline__ Units(int tiles_m, int tiles_n)
      : units_m(MC == 1 ? (tiles_m + 1) / 2 : tiles_m), units_n(MC == 2 ? (tiles_n + 1) / 2 : tiles_n) {}
  __device__ __forceinline__ int count() const { return units_m * units_n; }
  __device__ __forceinline__ void tile(int u, unsigned rank, int& tm, int& tn) const {
    raster<SWZ>(u, units_m, units_n, tm, tn);
    if constexpr (MC == 1) tm = 2 * tm + int(rank);
    if constexpr (MC == 2) tn = 2 * tn + int(rank);
  }
};

// Stream-K over G blocks: the first dp units go whole, G at a time in strides as PT = 0 runs them
// (the blocks then work on one raster window, which L2 serves); the rest is a run of T (unit, K tile)
// iterations from iteration base on, of which block q takes [first(q), first(q + 1)).
// SK = 1: the rest is the last one to two waves of units (all of them under two waves), cut into G
// ranges of equal length: every SM gets the same work whatever the unit count, but the blocks of a
// wave work at different K offsets, so they share no A or B slab in L2 (ncu: 3x the DRAM reads).
// SK = 2 (and 3, which differs only in who adds the parts): the rest is the last partial wave's
// `tail` units only, each cut in K into s equal parts
// (s = G / tail, at most its K tiles), consecutive blocks one part each and the blocks past s * tail
// none: the last wave's SMs share its work, and the s parts of a unit run side by side at the same
// relative K offsets. No cut where the tail is more than half a wave (s = 1: PT = 0's schedule).
// A cut unit's owner (the block whose range holds its first K tile) finds the blocks that hold its
// other parts by the same split: those after it whose ranges start inside the unit.
template <int SK>
struct SkSplit {
  long long dp, base, T;
  int G, nkw, tail, s;
  __device__ __forceinline__ SkSplit(int units, int nkw_, int G_) : G(G_), nkw(nkw_) {
    if constexpr (SK == 1) {
      const int waves = units / G;
      dp = waves >= 2 ? (long long)(waves - 1) * G : 0;
      tail = s = 0;
    } else {
      tail = units % G;
      dp = units - tail;
      s = tail > 0 ? max(1, min(G / tail, nkw)) : 1;
    }
    base = dp * nkw, T = (units - dp) * nkw;
  }
  __device__ __forceinline__ long long first(int q) const {
    if constexpr (SK == 1) return base + q * T / G;
    if (q >= s * tail) return base + T;
    return base + (long long)(q / s) * nkw + (q % s) * nkw / s;
  }
};

// A block's work, segment by segment: K tiles [kb, ke) of unit u (nkw K tiles a unit: 1 when K = 0,
// so that C = beta * C is still written). SK = 0: the units unit0, unit0 + stride, ..., whole. SK:
// SkSplit's whole units of this block, then its range of iterations (split(): the split itself).
template <int SK>
struct Work {
  long long at, end, dp_end, begin, step;
  int nkw;
  SkSplit<SK ? SK : 1> sk;
  __device__ __forceinline__ Work(int units, int nkw_, int unit0, int stride)
      : nkw(nkw_), sk(units, nkw_, int(gridDim.x)) {
    if constexpr (SK) {
      dp_end = sk.base, step = (long long)stride * nkw;
      begin = sk.first(int(blockIdx.x)), end = sk.first(int(blockIdx.x) + 1);
      at = (long long)unit0 * nkw < dp_end ? (long long)unit0 * nkw : begin;
    } else {
      at = unit0, end = units, step = stride, dp_end = begin = 0;
    }
  }
  __device__ __forceinline__ bool more() const { return at < end; }
  __device__ __forceinline__ const SkSplit<SK ? SK : 1>& split() const { return sk; }
  __device__ __forceinline__ bool next(int& u, int& kb, int& ke) {
    if (at >= end) return false;
    if constexpr (SK) {
      if (at < dp_end) {
        u = int(at / nkw), kb = 0, ke = nkw;
        at += step;
        if (at >= dp_end) at = begin;
        return true;
      }
      u = int(at / nkw), kb = int(at % nkw);
      ke = int(min((long long)nkw, kb + (end - at)));
      at += ke - kb;
    } else {
      u = int(at), kb = 0, ke = nkw;
      at += step;
    }
    return true;
  }
};

// SK: the workspace holds one flag per block in its first KTUNE_SK_HEADER_BYTES (nonzero: the block's
// slot holds its parked part; gemm_wgmma_sk_clear zeroes them before each launch), then one slot per
// block of a tile's FP32 partial sums (BM x BN, park_pairs' order). A block parks at most one part:
// a segment that starts past its unit's first K tile is the first segment of the block's range.
__device__ __forceinline__ unsigned* sk_flag(const KtuneGemmArgs& p, int block) { return reinterpret_cast<unsigned*>(p.workspace) + block; }
template <int BM, int BN>
__device__ __forceinline__ float2* sk_slot(const KtuneGemmArgs& p, int block) {
  return reinterpret_cast<float2*>(reinterpret_cast<char*>(p.workspace) + KTUNE_SK_HEADER_BYTES) + size_t(block) * (BM * BN / 2);
}

} // namespace wgmma
} // namespace ktune_dev
