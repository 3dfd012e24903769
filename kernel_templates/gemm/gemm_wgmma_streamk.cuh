// gemm_wgmma's stream-K across blocks (SK, gemm_wgmma.cu): a block parks its part of a cut unit
// and raises its flag; the unit's owner (SK 1, 2) gathers the parts and stores, or (SK 3) the
// parts are added by whoever finishes them.
#pragma once
#include "gemm_wgmma_epilogue.cuh"
#include "gemm_wgmma_schedule.cuh"

namespace ktune_dev {
namespace wgmma {

// SK: a block's part of a cut unit (SK 1, 2: one it does not own, its range starting past the
// unit's first K tile; SK 3: any): the NC consumer threads park their sums in the block's slot, then
// one of them raises the block's flag (release, after the barrier: the whole slot is visible to
// whoever acquires it). Named barrier 1 (CL's, which SK excludes).
template <int MT, int BN, int BM, int NC>
__device__ __forceinline__ void sk_park(const KtuneGemmArgs& p, float (&acc)[MT][BN / 2], int ct) {
  park_pairs<MT, BN, NC>(acc, sk_slot<BM, BN>(p, int(blockIdx.x)), ct);
  named_sync(1, NC);
  if (ct == 0) {
    ktune_dev::wait_for_previous_grid(); // gemm_wgmma_sk_clear has zeroed the flags (PDL: it may still run)
    __threadfence();
    asm volatile("st.release.gpu.global.u32 [%0], %1;\n" ::"l"(sk_flag(p, int(blockIdx.x))), "r"(1u) : "memory");
  }
}
// SK: spins until block r's flag says its part is parked (acquire: the part is then visible to this
// thread, and through the named barrier that follows to the block). After wait_for_previous_grid.
__device__ __forceinline__ void sk_wait_parked(const KtuneGemmArgs& p, int r) {
  unsigned f = 0;
  do asm volatile("ld.acquire.gpu.global.u32 %0, [%1];\n" : "=r"(f) : "l"(sk_flag(p, r)) : "memory");
  while (f == 0);
}
// SK: the owner of cut unit u (its range holds the unit's first K tile and ends inside it) waits
// for the blocks after it whose ranges start inside the unit, and adds their parked sums to its own,
// in block order (the same sum every run), before it stores the tile as a whole one.
template <int SK, int MT, int BN, int BM, int NC>
__device__ __forceinline__ void sk_gather(const KtuneGemmArgs& p, float (&acc)[MT][BN / 2], const SkSplit<SK>& sk, int u, int ct) {
  const long long u_end = (long long)(u + 1) * sk.nkw;
  int last = int(blockIdx.x);
  while (last + 1 < sk.G && sk.first(last + 1) < u_end) ++last;
  if (ct == 0) {
    ktune_dev::wait_for_previous_grid();
    for (int r = int(blockIdx.x) + 1; r <= last; ++r) sk_wait_parked(p, r);
  }
  named_sync(1, NC);
  for (int r = int(blockIdx.x) + 1; r <= last; ++r) {
    const float2* part = sk_slot<BM, BN>(p, r) + ct;
#pragma unroll
    for (int m = 0; m < MT; ++m)
#pragma unroll
      for (int h = 0; h < 2; ++h)
#pragma unroll
        for (int j = 0; j < BN / 8; ++j) {
          const float2 x = __ldcg(part + ((m * 2 + h) * (BN / 8) + j) * NC);
          acc[m][4 * j + 2 * h] += x.x, acc[m][4 * j + 2 * h + 1] += x.y;
        }
  }
}
// SK 3: block q0 + q (part q of the s parts of a cut unit, blocks [q0, q0 + s), SK 2's split) parks its
// sums and raises its flag (sk_park), waits for the other s - 1 flags, then adds pairs
// [q * PAIRS / s, (q + 1) * PAIRS / s) of park_pairs' order over the s parked parts in block order
// (the same sum whichever block adds it) and stores them where parked_pair_at says. Each block
// reads one tile's worth instead of the owner reading s - 1 tiles. Its own part is read back
// from the slot too: the accumulators die at the park, so the adding loop (a run-time loop, not
// unrolled) keeps the main loop's register allocation and code as SK 2's. Every block of the
// group is resident (the grid is), so the wait ends. Named barrier 1.
template <int MT, int BN, int BM, int NC, int WM, int F16, int SWAP>
__device__ __forceinline__ void sk_share(const KtuneGemmArgs& p, float (&acc)[MT][BN / 2], const SkSplit<3>& sk, int row0, int col0, int ct) {
  const int self = int(blockIdx.x), q0 = self - self % sk.s, q = self - q0;
  sk_park<MT, BN, BM, NC>(p, acc, ct);
  if (ct == 0)
    for (int r = q0; r < q0 + sk.s; ++r)
      if (r != self) sk_wait_parked(p, r);
  named_sync(1, NC);
  constexpr int PAIRS = MT * 2 * (BN / 8), CH = 8;
  const int i1 = (q + 1) * PAIRS / sk.s;
  const float2* const part0 = sk_slot<BM, BN>(p, q0) + ct;
  // CH pairs at a time, every part's loads of them issued before any store: a load, add and store
  // per pair would wait out an L2 round trip each (the stores may alias the loads for the compiler).
#pragma unroll 1
  for (int i = q * PAIRS / sk.s; i < i1; i += CH) {
    float2 sum[CH];
#pragma unroll
    for (int c = 0; c < CH; ++c) sum[c] = make_float2(0.0f, 0.0f);
    for (int r = 0; r < sk.s; ++r) {
      const float2* const part = part0 + size_t(r) * (BM * BN / 2) + size_t(i) * NC;
#pragma unroll
      for (int c = 0; c < CH; ++c)
        if (i + c < i1) {
          const float2 x = __ldcg(part + c * NC);
          sum[c].x += x.x, sum[c].y += x.y;
        }
    }
#pragma unroll
    for (int c = 0; c < CH; ++c) {
      int row, col;
      parked_pair_at<BN, WM>(i + c, ct, row, col);
      row += row0, col += col0;
      if (i + c < i1 && row < p.M && col < p.N) store_out<F16, SWAP>(p, row, col, sum[c].x, sum[c].y);
    }
  }
}

} // namespace wgmma
} // namespace ktune_dev
