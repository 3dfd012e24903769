// gemm_wgmma's mainloop (gemm_wgmma.cu): the operand loads into the swizzled stages (cp.async
// chunks for TMA = 0, TMA tile copies, multicast to a cluster pair for MC) and one K tile of a
// warpgroup's wgmma from the stages (A through a descriptor, or from registers for AR = 1).
#pragma once
#include "gemm_half16.cuh"
#include "gemm_wgmma_common.cuh"

namespace ktune_dev {
namespace wgmma {

template <int N, int F16, int TA, int TB>
__device__ __forceinline__ void mma(float (&d)[N / 2], unsigned long long da, unsigned long long db) {
  wgmma_m64k16<N, TA, TB>(d, da, db, IsF16<F16>{});
}

__device__ __forceinline__ void cp_async16(unsigned dst, const void* src, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(valid ? 16 : 0));
}

// One operand's tile loader: MN rows or columns of the tile along M (A) or N (B), 64 along K, NT
// threads, one 16-byte chunk each per step. Thread t always copies chunk t % 8 of lines t / 8 + i * RS
// (RS = NT / 8, a divisor of 64): chunk i's shared offset is chunk 0's + i * RS * 128 bytes, with
// the same swizzle (RS % 8 == 0). KMAJOR: line = a tile row (M or N), K contiguous; else line = k
// of a 64-wide block, MN contiguous.
template <int MN, int KMAJOR, int NT>
struct Loader {
  static constexpr int RS = NT / 8, PER = MN * 8 / NT;
  static_assert(MN % 64 == 0 && (MN * 8) % NT == 0 && 64 % RS == 0, "whole chunks per thread (descriptor)");
  const unsigned short* g; // this thread's chunk 0 in the next K tile
  long long ld;
  int line0, c8;   // first line, chunk column (halves)
  int mn0, ext;    // tile origin along M or N, and the operand's extent there
  int k0, kdim;    // K origin of the next tile, K
  unsigned soff;   // this thread's chunk 0 within a tile (bytes, swizzled)

  __device__ __forceinline__ void init(const unsigned short* base, long long ld_, int mn0_, int ext_, int kdim_, int tid) {
    ld = ld_, mn0 = mn0_, ext = ext_, k0 = 0, kdim = kdim_;
    line0 = tid / 8, c8 = (tid % 8) * 8;
    g = KMAJOR ? base + (long long)(mn0 + line0) * ld + c8 : base + (long long)line0 * ld + mn0 + c8;
    soff = line0 * 128 + (((tid % 8) ^ (line0 % 8)) << 4);
  }
  // Chunk i of the next tile into the tile at shared address s; chunks outside A or B are zero-filled
  // (their source is then the operand's chunk 0 of the thread, never read).
  __device__ __forceinline__ void load(unsigned s) const {
#pragma unroll
    for (int i = 0; i < PER; ++i) {
      const int line = i * RS; // relative to line0
      bool ok;
      const unsigned short* src;
      if constexpr (KMAJOR) {
        ok = mn0 + line0 + line < ext && k0 + c8 < kdim;
        src = g + (long long)line * ld + k0;
      } else {
        const int kk = line % 64, blk = line / 64; // compile-time after unrolling
        ok = k0 + line0 + kk < kdim && mn0 + blk * 64 + c8 < ext;
        src = g + (long long)(k0 + kk) * ld + blk * 64;
      }
      cp_async16(s + soff + i * RS * 128, ok ? src : g, ok);
    }
  }
};


// One operand's tile of K-tile kt into shared memory at dst by TMA: MN rows or columns of the tile
// from mn0. K-major (box 64 x MN): one copy, lines = tile rows. MN-major (box 64 x 64): MN / 64
// copies, each a block of 64 k-lines, 8192 bytes apart: the layouts the descriptors describe.
template <int MN, int KMAJOR>
__device__ __forceinline__ void tma_tile(unsigned dst, const KtuneTensorMap* map, int mn0, int k0, unsigned bar) {
  if constexpr (KMAJOR) {
    tma_load_2d(dst, map, k0, mn0, bar);
  } else {
#pragma unroll
    for (int b = 0; b < MN / 64; ++b) tma_load_2d(dst + b * 8192, map, mn0 + b * 64, k0, bar);
  }
}


// MC > 0: half of one operand's tile, the half of CTA `rank` of the pair, multicast into both CTAs of
// the cluster at the same offsets (the other CTA loads the other half): K-major, rows [rank * MN / 2,
// (rank + 1) * MN / 2) in one box of 64 x MN / 2 (4096 bytes or more: the swizzle pattern's 1024-byte
// alignment holds); MN-major, every other 64 x 64 block from block `rank` (MN = 192: rank 0 blocks
// 0 and 2, rank 1 block 1), or with MN = 64 (one block) its K lines
// [rank * 32, rank * 32 + 32) in one box of 64 x 32 (4096 bytes, 1024-byte aligned as well): the
// 64 x 64 tiles of M = 128 share B this way (cuBLAS's 2 x 1 cluster there).
template <int MN, int KMAJOR>
__device__ __forceinline__ void tma_tile_shared(unsigned dst, const KtuneTensorMap* map, int mn0, int k0, unsigned bar,
                                                unsigned rank) {
  if constexpr (KMAJOR) {
    tma_load_2d_multicast(dst + rank * (MN / 2) * 128, map, k0, mn0 + int(rank) * (MN / 2), bar, 0x3);
  } else if constexpr (MN == 64) {
    tma_load_2d_multicast(dst + rank * 32 * 128, map, mn0, k0 + int(rank) * 32, bar, 0x3);
  } else {
#pragma unroll
    for (int b = 0; b < MN / 64; ++b)
      if (b % 2 == int(rank)) tma_load_2d_multicast(dst + b * 8192, map, mn0 + b * 64, k0, bar, 0x3);
  }
}


// One K tile (64 deep) of a warpgroup's wgmma from stage buffers sa (A) and sb (B), committed as
// one group; the caller waits. a_wg: the warpgroup's first row of A inside the stage. All three
// warp-uniform (a_wg from warp_uniform()), so the descriptors are computed in uniform registers.
// AR = 1: A from registers. Each warp loads its 16 rows of each of the warpgroup's m64 blocks, all
// four k16 steps (16 registers a block), with ldmatrix.x4 from the swizzled stage (.trans where A
// is MN-major), then issues the register form of wgmma; only B is read through a descriptor. The
// registers are rewritten by the next K tile's loads, so the caller waits for this group (wait 0)
// before the next call.
template <int MT, int BN, int F16, int A_COL, int B_COL, int AR = 0>
__device__ __forceinline__ void mma_tile(float (&acc)[MT][BN / 2], unsigned sa, unsigned sb, unsigned a_wg) {
  constexpr unsigned A_KSTEP = A_COL ? 2048 : 32, B_KSTEP = B_COL ? 32 : 2048;
  [[maybe_unused]] unsigned af[AR ? MT : 1][4][4]; // AR: the warp's A fragments, [m64 block][k16 step]
  if constexpr (AR) {
    // ldmatrix.x4: lanes 8j..8j+7 address matrix j's eight 16-byte rows; matrix j is rows
    // (j & 1) * 8.. of the warp's 16, k (j >> 1) * 8.. of the k16 step (mma.sync's A fragment,
    // which is what wgmma's register A is per warp). Line L's 16-byte chunk c sits at c ^ (L % 8).
    const unsigned lane = threadIdx.x & 31u, w = (threadIdx.x >> 5) & 3u, j = lane >> 3, r8 = lane & 7u;
#pragma unroll
    for (int m = 0; m < MT; ++m)
#pragma unroll
      for (unsigned ks = 0; ks < 4; ++ks) {
        const unsigned blk = sa + a_wg + unsigned(m) * 8192u;
        if constexpr (A_COL == 0) { // K-major: line = the row, its 64 k values in 8 chunks
          const unsigned line = w * 16u + (j & 1u) * 8u + r8, chunk = 2u * ks + (j >> 1);
          half16::ldmatrix_x4_s(af[m][ks], blk + line * 128u + ((chunk ^ r8) << 4));
        } else { // MN-major: line = k, its 64 rows in 8 chunks; transposed on the way in
          const unsigned line = ks * 16u + (j >> 1) * 8u + r8, chunk = w * 2u + (j & 1u);
          half16::ldmatrix_x4_trans_s(af[m][ks], blk + line * 128u + ((chunk ^ r8) << 4));
        }
      }
  }
#pragma unroll
  for (int m = 0; m < MT; ++m) fence_regs(acc[m]);
  wgmma_fence(); // AR: also orders the registers ldmatrix wrote before the wgmma that read them
  const Desc128 a0(sa + a_wg, 8192, 1024), b0(sb, 8192, 1024);
#pragma unroll
  for (int ks = 0; ks < 4; ++ks) {
    const unsigned long long db = b0.plus(ks * B_KSTEP);
#pragma unroll
    for (int m = 0; m < MT; ++m) {
      if constexpr (AR) wgmma_m64k16_rs<BN, !B_COL>(acc[m], af[m][ks], db, IsF16<F16>{});
      else mma<BN, F16, A_COL, !B_COL>(acc[m], a0.plus(m * 8192 + ks * A_KSTEP), db);
    }
  }
  wgmma_commit();
#pragma unroll
  for (int m = 0; m < MT; ++m) fence_regs(acc[m]);
}

} // namespace wgmma
} // namespace ktune_dev
