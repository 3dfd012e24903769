// Device helpers shared by the Hopper wgmma GEMM kernels (gemm_wgmma.cu, gemm_wgmma_tf32x3.cu):
// wgmma fences and groups, shared-memory matrix descriptors, TMA tile loads, register
// reallocation, and the walk over a warpgroup's accumulators. sm_90a only.
#pragma once
#include "gemm_common.cuh"
#include "gemm_wgmma_ops.cuh"
#include "ktune_async.cuh"

namespace ktune_dev {
namespace wgmma {

using async::fence_proxy_async;
__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
// Pins accumulator registers in place around asynchronous wgmma (CUTLASS's warpgroup_fence_operand):
// the compiler must not move or copy them while an instruction that writes them is in flight.
template <int R>
__device__ __forceinline__ void fence_regs(float (&d)[R]) {
#pragma unroll
  for (int i = 0; i < R; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

// v, which is the same in every lane of the warp (e.g. threadIdx.x / 128), as the compiler can see
// that it is: lane 0's by a shuffle (every lane converged here), so what is derived from it may live
// in uniform registers (CUTLASS's canonical_warp_group_idx does the same).
__device__ __forceinline__ int warp_uniform(int v) { return __shfl_sync(0xffffffffu, v, 0); }

// Shared-memory matrix descriptor (PTX ISA "Matrix Descriptor Format"): start address, leading and
// stride byte offsets, and the swizzle mode in bits 62-63 (1: 128-byte, 2: 64-byte, 3: 32-byte).
template <int SWIZZLE_BYTES>
__device__ __forceinline__ unsigned long long desc_swizzled(unsigned addr, unsigned lbo, unsigned sbo) {
  static_assert(SWIZZLE_BYTES == 128 || SWIZZLE_BYTES == 64 || SWIZZLE_BYTES == 32, "a swizzle mode of the descriptor");
  constexpr unsigned long long mode = SWIZZLE_BYTES == 128 ? 1 : SWIZZLE_BYTES == 64 ? 2 : 3;
  return (unsigned long long)((addr & 0x3FFFFu) >> 4) | (unsigned long long)((lbo & 0x3FFFFu) >> 4) << 16 |
         (unsigned long long)((sbo & 0x3FFFFu) >> 4) << 32 | mode << 62;
}
__device__ __forceinline__ unsigned long long desc128(unsigned addr, unsigned lbo, unsigned sbo) {
  return desc_swizzled<128>(addr, lbo, sbo);
}
// A 128-byte-swizzle descriptor split in its two words, to be moved along a stage: plus(bytes) is
// the descriptor of addr + bytes, one 32-bit add to the low word (the address field holds any
// shared address, bits 0-13 in 16-byte units, so the sum never carries into the LBO above it).
// Built once per K tile from a warp-uniform address, the words stay in uniform registers: the
// per-wgmma AND / shift / OR and the move into uniform registers (R2UR) that desc128 of a
// per-thread address cost are gone (Nsight Compute at 4096^3: 25.2 M instructions against
// cuBLAS's 16.9 M, most of the difference those).
struct Desc128 {
  unsigned lo, hi;
  __device__ __forceinline__ Desc128(unsigned addr, unsigned lbo, unsigned sbo) {
    const unsigned long long d = desc128(addr, lbo, sbo);
    lo = static_cast<unsigned>(d), hi = static_cast<unsigned>(d >> 32);
  }
  __device__ __forceinline__ unsigned long long plus(unsigned bytes) const {
    return static_cast<unsigned long long>(hi) << 32 | (lo + (bytes >> 4));
  }
};

// mbarriers (shared::cta, 64-bit: common/ktune_async.cuh) and TMA.
using async::mbar_arrive;
using async::mbar_expect_tx;
using async::mbar_init;
using async::mbar_wait;

// The K tiles [first, first + count) of K slice z of `slices` (split-K along blockIdx.z):
// ceil(tiles / slices) each, the last slices fewer or none. K = 0: none.
struct KRange {
  int first, count;
};
__device__ __forceinline__ KRange k_slice(int K, int bk, int slices, int z) {
  const int tiles = (K + bk - 1) / bk, per = (tiles + slices - 1) / slices;
  if (slices == 1) return {0, tiles};
  return {z * per, max(0, min(per, tiles - z * per))};
}

// The stage ring's mbarriers, initialized by one thread (the block synchronizes after):
// full[s] completes on the producer's arrive with the stage's bytes, empty[s] on one arrive per
// consumer warpgroup; 8 bytes apart from full0 and empty0.
template <int ST>
__device__ __forceinline__ void init_ring(unsigned full0, unsigned empty0, unsigned consumers) {
  for (int s = 0; s < ST; ++s) {
    mbar_init(full0 + s * 8, 1);
    mbar_init(empty0 + s * 8, consumers);
  }
  async::fence_mbar_init(); // visible to the async proxy
}

// One 2D box of a tensor map (coordinates: contiguous dimension first) into shared memory at dst,
// completing `bytes` on the mbarrier.
__device__ __forceinline__ void tma_load_2d(unsigned dst, const KtuneTensorMap* map, int c0, int c1, unsigned bar) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\n" ::"r"(dst),
      "l"(reinterpret_cast<unsigned long long>(map)), "r"(c0), "r"(c1), "r"(bar)
      : "memory");
}
// The same box into the same shared offset (dst, and the mbarrier at bar) of every CTA of the
// cluster whose bit is set in cta_mask: one L2 read feeds several CTAs (TMA multicast, sm_90a).
__device__ __forceinline__ void tma_load_2d_multicast(unsigned dst, const KtuneTensorMap* map, int c0, int c1, unsigned bar,
                                                      unsigned short cta_mask) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster [%0], [%1, {%2, %3}], [%4], %5;\n" ::"r"(dst),
      "l"(reinterpret_cast<unsigned long long>(map)), "r"(c0), "r"(c1), "r"(bar), "h"(cta_mask)
      : "memory");
}
// One 2D box from shared memory at src (laid out as tma_load_2d writes it) to the tensor at
// (c0, c1), clipped at the tensor's edges; tracked by the issuing thread's bulk groups (commit,
// then wait before src is written again).
__device__ __forceinline__ void tma_store_2d(const KtuneTensorMap* map, int c0, int c1, unsigned src) {
  asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];\n" ::"l"(
                   reinterpret_cast<unsigned long long>(map)),
               "r"(c0), "r"(c1), "r"(src)
               : "memory");
}
// Named barrier `id` (1..15; 0 is __syncthreads') over `threads` threads, whole warps: the consumer
// warpgroups synchronizing among themselves while the producer runs on.
__device__ __forceinline__ void named_sync(unsigned id, unsigned threads) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}
// Arrives on named barrier `id` without waiting: the other side's named_sync(id, threads) waits for it.
__device__ __forceinline__ void named_arrive(unsigned id, unsigned threads) {
  asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}
template <int REGS>
__device__ __forceinline__ void setmaxnreg_inc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(REGS));
}
template <int REGS>
__device__ __forceinline__ void setmaxnreg_dec() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(REGS));
}

// The accumulators of one warpgroup's m64 tiles: warp w of the warpgroup holds rows 16 w + g and
// 16 w + g + 8 of each m64 tile (g = lane / 4), columns 8 j + 2 t, + 1 (t = lane % 4) in registers
// 4 j + {0, 1} and 4 j + {2, 3}: the m16n8 fragment layout, BN / 8 times over. Calls
// fn(r, c, v0, v1) for each pair this thread holds inside the problem (r < M, c < N; the pair's
// second column c + 1 may be past N).
template <int MT, int BN, class Fn>
__device__ __forceinline__ void for_each_pair(const KtuneGemmArgs& p, float (&acc)[MT][BN / 2], int row0, int col0, int wtid,
                                              const Fn& fn) {
  const int lane = wtid & 31, w = wtid >> 5, g = lane >> 2, t = lane & 3;
#pragma unroll
  for (int m = 0; m < MT; ++m)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int r = row0 + m * 64 + w * 16 + g + h * 8;
      if (r >= p.M) continue;
#pragma unroll
      for (int j = 0; j < BN / 8; ++j) {
        const int c = col0 + j * 8 + 2 * t;
        if (c >= p.N) continue;
        fn(r, c, acc[m][4 * j + 2 * h], acc[m][4 * j + 2 * h + 1]);
      }
    }
}

// Split-K: the raw FP32 accumulators of for_each_pair's layout into slice `slice` of the workspace
// (row stride ws_ld, a multiple of 4: the even column's pair is 8-byte aligned and inside the row).
template <int MT, int BN>
__device__ __forceinline__ void store_partial(const KtuneGemmArgs& p, float (&acc)[MT][BN / 2], int row0, int col0, int wtid,
                                              int slice) {
  float* const ws = p.workspace + slice * (long long)p.M * p.ws_ld;
  for_each_pair<MT, BN>(p, acc, row0, col0, wtid, [&](int r, int c, float v0, float v1) {
    *reinterpret_cast<float2*>(ws + (long long)r * p.ws_ld + c) = make_float2(v0, v1);
  });
}

} // namespace wgmma
} // namespace ktune_dev
