// gemm_wgmma's epilogues (gemm_wgmma.cu): C from the accumulators directly (EPI 0), through shared
// memory and TMA stores (EPI 1), staged in halves (EPI 2), by the producer warpgroup's idle warps
// (EPI 3), transposed for SWAP, and the sums of a cluster's K slices (CL) added in distributed
// shared memory before their store.
#pragma once
#include "gemm_half16.cuh"
#include "gemm_wgmma_common.cuh"
#include "ktune_cluster.cuh"

namespace ktune_dev {
namespace wgmma {

// The pair (r, c), (r, c + 1) of the kernel's C (r < M, c < N of the argument block) into the
// problem's C: there, or with SWAP (the kernel computes C^T = B^T A^T: launch_gemm swapped A and B,
// M and N, lda and ldb) at (c, r) and (c + 1, r) of the row-major C, whose leading dimension ldc is
// the problem's. C = alpha * v + beta * C (C read only where beta != 0).
template <int F16, int SWAP>
__device__ __forceinline__ void store_out(const KtuneGemmArgs& p, int r, int c, float v0, float v1) {
  if constexpr (SWAP) {
    unsigned short* const dst = reinterpret_cast<unsigned short*>(p.C) + (long long)c * p.ldc + r;
    half16::store1<F16>(dst, v0, p.alpha, p.beta);
    if (c + 1 < p.N) half16::store1<F16>(dst + p.ldc, v1, p.alpha, p.beta);
  } else {
    half16::store_pair<F16>(p, r, c, v0, v1);
  }
}

// The epilogue both kernels share: C = alpha * acc + beta * C (C read only where beta != 0).
template <int MT, int BN, int F16, int SWAP = 0>
__device__ __forceinline__ void store_c(const KtuneGemmArgs& p, float (&acc)[MT][BN / 2], int row0, int col0, int wtid) {
  for_each_pair<MT, BN>(p, acc, row0, col0, wtid, [&](int r, int c, float v0, float v1) { store_out<F16, SWAP>(p, r, c, v0, v1); });
}

// EPI: a consumer warpgroup's WM x BN part of the tile (columns [8 * J0, 8 * (J0 + JN)) of it: EPI 2
// stages each half on its own), alpha * acc rounded to the dtype, into its staging buffer at `buf`
// as the TMA store reads it: blocks of WM rows by 128 bytes (64 columns), 128B-swizzled (16-byte
// chunk c of row r at chunk c ^ (r % 8)), as tma_load_2d would have written them. A warp's 32
// four-byte stores of one (m, h, j) hit 8 rows at 8 different chunks: 32 different banks.
template <int MT, int BN, int F16, int J0 = 0, int JN = BN / 8>
__device__ __forceinline__ void stage_c(const KtuneGemmArgs& p, float (&acc)[MT][BN / 2], unsigned buf, int wtid) {
  static_assert(J0 % 8 == 0 && JN % 8 == 0 && J0 + JN <= BN / 8, "whole 64-column blocks");
  const int lane = wtid & 31, w = wtid >> 5, g = lane >> 2, t = lane & 3;
  constexpr unsigned BLOCK = MT * 64 * 128; // one 64-column block of the warpgroup's rows
#pragma unroll
  for (int m = 0; m < MT; ++m)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int r = m * 64 + w * 16 + g + h * 8; // r % 8 == g
#pragma unroll
      for (int j = J0; j < J0 + JN; ++j) {
        const unsigned a = buf + ((j - J0) / 8) * BLOCK + r * 128 + (((j % 8) ^ g) << 4) + t * 4;
        const unsigned v = half16::pack2<F16>(p.alpha * acc[m][4 * j + 2 * h], p.alpha * acc[m][4 * j + 2 * h + 1]);
        asm volatile("st.shared.u32 [%0], %1;\n" ::"r"(a), "r"(v) : "memory");
      }
    }
}

// EPI 1 under SWAP: the same part transposed, as C holds it: the warpgroup's WM kernel rows are
// C's columns, its BN kernel columns C's rows. Blocks of 64 of those columns (128-byte lines), each
// BN lines (one per C row), 128B-swizzled: the value of kernel (r, c) at line c, chunk
// (r % 64 / 8) ^ (c % 8), bytes (r % 8) * 2. A warp's 2-byte stores of one (m, h, j, pair half) fill
// 16 bytes of one chunk in each of 4 lines, at 4 different chunks: no bank conflict.
template <int MT, int BN, int F16>
__device__ __forceinline__ void stage_c_transposed(const KtuneGemmArgs& p, float (&acc)[MT][BN / 2], unsigned buf, int wtid) {
  const int lane = wtid & 31, w = wtid >> 5, g = lane >> 2, t = lane & 3;
  constexpr unsigned BLOCK = BN * 128; // one 64-column block of C: BN lines
#pragma unroll
  for (int m = 0; m < MT; ++m)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const unsigned chunk = unsigned(2 * w + h); // (r % 64) / 8 of r = m * 64 + 16 w + 8 h + g
#pragma unroll
      for (int j = 0; j < BN / 8; ++j)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const int c = 8 * j + 2 * t + e; // c % 8 == 2 t + e
          const unsigned a = buf + m * BLOCK + c * 128 + ((chunk ^ unsigned(2 * t + e)) << 4) + g * 2;
          const unsigned short v = half16::from_float<F16>(p.alpha * acc[m][4 * j + 2 * h + e]);
          asm volatile("st.shared.u16 [%0], %1;\n" ::"r"(a), "h"(v) : "memory");
        }
    }
}

// EPI: part PART of PARTS (column ranges) of a consumer warpgroup's rows of the tile through its
// staging buffer `buf`: once the previous store has read the buffer (issued by this warpgroup's
// thread 0, as this one is), stage the part, fence it to the async proxy, and store it with TMA in
// 64-column boxes (one bulk group). Named barrier 2 + cw: the warpgroup's own. SWAP (EPI 1, one
// part): staged transposed, the boxes 64 of C's columns (the warpgroup's rows) by BN of its rows.
template <int PART, int PARTS, int MT, int BN, int F16, int SWAP = 0>
__device__ __forceinline__ void store_c_tma(const KtuneGemmArgs& p, const KtuneTensorMap* c_map, float (&acc)[MT][BN / 2], unsigned buf,
                                            int wtid, int cw, int row0, int col0) {
  constexpr int PCOLS = BN / PARTS, WM = MT * 64;
  static_assert(SWAP == 0 || PARTS == 1, "SWAP: EPI 1 only");
  if (wtid == 0) async::bulk_wait_read();
  named_sync(2 + cw, 128);
  if constexpr (SWAP) stage_c_transposed<MT, BN, F16>(p, acc, buf, wtid);
  else stage_c<MT, BN, F16, PART * PCOLS / 8, PCOLS / 8>(p, acc, buf, wtid);
  fence_proxy_async(); // the generic-proxy writes, before the TMA (async proxy) reads them
  named_sync(2 + cw, 128);
  if (wtid == 0) {
    if constexpr (SWAP) {
#pragma unroll
      for (int b = 0; b < MT; ++b) tma_store_2d(c_map, row0 + b * 64, col0, buf + b * (BN * 128));
    } else {
#pragma unroll
      for (int b = 0; b < PCOLS / 64; ++b) tma_store_2d(c_map, col0 + PART * PCOLS + b * 64, row0, buf + b * (WM * 128));
    }
    async::bulk_commit();
  }
}

// EPI 3: the storer warps (the producer warpgroup's warps 1-3, 96 threads, st = their index) copy
// one consumer warpgroup's staged rows (stage_c's layout: BN / 64 blocks of WM rows x 128 bytes,
// 16-byte chunk c of row r at chunk c ^ (r % 8)) to C rows row0.., columns col0.., with plain
// stores: a warp a row of 64 columns at a time, each lane two halves (its 4 bytes of the row's 128
// in shared memory: no bank conflict). C may be only 2-byte aligned (a row's alignment is the
// warp's: one 4-byte store a lane, or two 2-byte ones); rows and columns past M and N are skipped.
template <int WM, int BN>
__device__ __forceinline__ void store_staged(const KtuneGemmArgs& p, unsigned buf, int st, int row0, int col0) {
  const int lane = st & 31;
  unsigned short* const c = reinterpret_cast<unsigned short*>(p.C);
  for (int x = st >> 5; x < WM * (BN / 64); x += 3) {
    const int b = x / WM, r = x % WM, gr = row0 + r;
    if (gr >= p.M) continue;
    unsigned v;
    asm volatile("ld.shared.u32 %0, [%1];\n" : "=r"(v) : "r"(buf + b * (WM * 128) + r * 128 + ((((lane >> 2) ^ r) & 7) << 4) + (lane & 3) * 4));
    const int gc = col0 + b * 64 + 2 * lane;
    unsigned short* const dst = c + (long long)gr * p.ldc + gc;
    if (gc + 1 < p.N && reinterpret_cast<unsigned long long>(dst) % 4 == 0) {
      *reinterpret_cast<unsigned*>(dst) = v;
    } else {
      if (gc < p.N) dst[0] = static_cast<unsigned short>(v & 0xffffu);
      if (gc + 1 < p.N) dst[1] = static_cast<unsigned short>(v >> 16);
    }
  }
}

// CL > 1: the CL CTAs of a cluster (blockIdx.z = their K slices) hold partial sums of one tile.
// Consumer thread ct (of NC) leaves pair i of its accumulators (for_each_pair's order: m, h, j) at
// float2 index i * NC + ct of its CTA's stage ring, free by then (consecutive threads write
// consecutive 8 bytes: no bank conflict); after a cluster barrier, rank q adds the pairs
// i = q, q + CL, ... over every rank's ring, in rank order (deterministic), and stores them to C.
// No global workspace and no second kernel, where SPLITK pays for both.
template <int MT, int BN, int NC>
__device__ __forceinline__ void park_pairs(float (&acc)[MT][BN / 2], float2* buf, int ct) {
#pragma unroll
  for (int m = 0; m < MT; ++m)
#pragma unroll
    for (int h = 0; h < 2; ++h)
#pragma unroll
      for (int j = 0; j < BN / 8; ++j)
        buf[((m * 2 + h) * (BN / 8) + j) * NC + ct] = make_float2(acc[m][4 * j + 2 * h], acc[m][4 * j + 2 * h + 1]);
}
// The element (row, col) of the tile that pair i of consumer thread ct holds, as park_pairs left it
// (WM rows a consumer warpgroup, for_each_pair's order): whoever adds parked pairs stores them there.
template <int BN, int WM>
__device__ __forceinline__ void parked_pair_at(int i, int ct, int& row, int& col) {
  const int cw = ct / 128, wtid = ct % 128, lane = wtid & 31, w = wtid >> 5, g = lane >> 2, t = lane & 3;
  const int m = i / (2 * (BN / 8)), h = i / (BN / 8) % 2, j = i % (BN / 8);
  row = cw * WM + m * 64 + w * 16 + g + h * 8, col = j * 8 + 2 * t;
}
template <int MT, int BN, int NC, int WM, int CL, int F16, int SWAP>
__device__ __forceinline__ void cluster_store_c(const KtuneGemmArgs& p, const float2* buf, int row0, int col0, int ct) {
  unsigned from[CL];
#pragma unroll
  for (int q = 0; q < CL; ++q) from[q] = cluster::remote(buf + ct, unsigned(q));
  constexpr int PAIRS = MT * 2 * (BN / 8);
  for (int i = int(cluster::rank()); i < PAIRS; i += CL) {
    int r, c;
    parked_pair_at<BN, WM>(i, ct, r, c);
    r += row0, c += col0;
    float2 s = cluster::load_v2(from[0] + unsigned(i) * NC * 8);
#pragma unroll
    for (int q = 1; q < CL; ++q) {
      const float2 x = cluster::load_v2(from[q] + unsigned(i) * NC * 8);
      s.x += x.x, s.y += x.y;
    }
    if (r < p.M && c < p.N) store_out<F16, SWAP>(p, r, c, s.x, s.y);
  }
}

} // namespace wgmma
} // namespace ktune_dev
