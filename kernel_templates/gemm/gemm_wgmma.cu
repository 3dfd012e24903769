// gemm_wgmma: BF16 / FP16 GEMM on Hopper's warpgroup tensor-core instructions (wgmma.mma_async,
// sm_90a), FP32 accumulation. C = alpha * A * B + beta * C with A, B and C in
// the problem's dtype.
//
// Two kernels (the config's TMA):
//   gemm_wgmma      (TMA = 0) every thread loads 16-byte cp.async chunks into 128-byte-swizzled
//                   stages and every warpgroup computes. Verified on an H100 (docs/runs).
//   gemm_wgmma_tma  (TMA = 1) warp-specialized: a producer warpgroup (one thread) loads each stage
//                   with TMA (cp.async.bulk.tensor, 128B swizzle, mbarrier full / empty ring), WG
//                   consumer warpgroups compute; setmaxnreg moves registers to the consumers.
//                   Verified on an H100 (WgmmaGpu, every layout) and in the tuner; faster than
//                   TMA = 0 at every tiling measured (docs/runs/2026-11-23-h100-wgmma-tune-tma.txt).
// Every form the template parameters below select is checked by WgmmaGpu on an H100
// (tests/kernels/wgmma_gpu_test.cpp, which lists the cases that have run on a GPU); PP, PT = 0,
// SK 1-3, EPI 2 and 3, ST 8 / 10 / 13, MC on 64-wide tiles and MC with SPLITK also under
// compute-sanitizer (docs/runs). The shipped table (configs/tables/sm_90-half-wgmma.json) holds
// only forms that won a tuned shape: EPI 1 (C by TMA stores), EPI 2 (C staged in halves, a fourth
// stage for 128 x 256 tiles), EPI 3 (C stored by the producer warpgroup's idle warps, any
// alignment: the unaligned entries, 2999^3 3.9x cuBLAS), PT 0 / 2 / 4, MC 1 and 2, SK 2 (only the
// last partial wave cut, the owner block adding the parts), SPLITK and ST 3 to 8. CL (split-K in a
// cluster), PP (ping-pong consumers), SK 1 and SK 3 are in no shipped entry: they beat no shipped
// config where they were tuned (docs/runs/2026-11-24-h100-s6-wgmma-{cluster,persistent}-tune.txt;
// docs/runs/performance-log-2026-11.md says why); the tuner keeps them as choices. Tiles of 192
// (WG 3), BN in 16s, SWAP 1 and AR 1 are in no shipped table either: the runtime offers the first
// three to shapes in no table as neighbours (gemm_wgmma.cpp; docs/runs/2026-11-25-h100-s17-*).
// Descriptors are built from warp-uniform addresses (Desc128): a third fewer instructions.
//
// Template parameters (host code spells them as in the config JSON):
//   BM, BN       block tile (rows, columns of C): BM a multiple of 64 up to 256, BN of 16 from 64 to 256
//                (of 64 where B is MN-major: its 64-column blocks; gemm_wgmma: BN 64, 128 or 256); K goes 64
//                at a time (BK = 64 halves = 128 bytes, one 128-byte swizzle atom wide, fixed)
//   WG           warpgroups (128 threads each); warpgroup w computes rows [w * BM / WG, (w + 1) * BM / WG)
//                of the tile, BM / WG / 64 wgmma m64nBNk16 per k16 step (PP = 1: all BM rows of its own tiles).
//                gemm_wgmma_tma: 1 to 3 consumer warpgroups (3: 192-row tiles, 152 registers each)
//   ST           stages in the shared-memory ring: ST - 2 tiles are loaded ahead, one stage is read by
//                the wgmma still in flight, one by the wgmma being issued
//   SWZ          rasterization group (raster() in gemm_common.cuh)
//   SPLITK       (gemm_wgmma_tma only) K slices (blockIdx.z), ceil(K tiles / SPLITK) 64-wide K tiles
//                each: FP32 partial sums into the workspace, added, scaled and rounded to C by
//                gemm_splitk_reduce16 (gemm_splitk16.cuh); 1: C written here. For grids too small
//                for the GPU (M = 128 rows, 512 x 512 x 32768).
//   CL           (gemm_wgmma_tma only; SPLITK = 1) K slices in a thread block cluster of CL CTAs
//                (blockIdx.z, __cluster_dims__(1, 1, CL)): each CTA parks its FP32 partial sums in
//                its own stage ring after the main loop, and the cluster adds them through
//                distributed shared memory (cluster_store_c) and writes C: split-K without the
//                workspace's traffic or a second kernel, for grids of few tiles (M <= 128, long K).
//   PT           (gemm_wgmma_tma only; no K slices) output tiles per block: a grid of
//                ceil(tiles / PT) blocks, block b computing tiles b, b + grid, ... (raster order),
//                their K tiles through one stage ring: the producer loads the next tile while the
//                consumers store this one, and a block's set-up is paid once. 1: one tile a block.
//                0: persistent, the launch caps the grid at the blocks the device holds at once
//                (LaunchStep::persistent), each striding over the tiles; the kernel reads only gridDim.
//   PP           (gemm_wgmma_tma only; WG = 2, PT != 1, no K slices, no MC) ping-pong consumers: the two
//                consumer warpgroups take the block's tiles in turn, each computing a whole BM x BN
//                tile, so one's epilogue (and its last wgmma's drain) overlaps the other's main loop;
//                the turn passes at the end of a main loop (two named barriers). 0: the consumers
//                share each tile, BM / WG rows each.
//   MC           (gemm_wgmma_tma only; no CL) TMA multicast in a cluster of 2 CTAs along x:
//                0 none; 1 the pair computes two M tiles and shares B's tile; 2 two N tiles sharing
//                A's. Each CTA reads its half of the shared tile from L2 for both. Under SPLITK the
//                pair shares blockIdx.z: one K slice of its two tiles.
//   EPI          (gemm_wgmma_tma only; no K slices) 1: C through a shared-memory staging buffer and
//                TMA stores (args.c), asynchronously; 2: the same in two column halves through a
//                buffer of half the size; 3: staged as 1, stored by the producer warpgroup's warps
//                1-3 with plain stores (store_staged: any C alignment; no SK or PP). beta != 0 at
//                run time takes the plain epilogue.
//   SK           (gemm_wgmma_tma only; PT = 0, no K slices, MC or PP) stream-K: SkSplit's full waves of
//                units whole, the rest cut into runs of K tiles per block (1: equal runs over the last
//                one or two waves; 2: the last partial wave's units each split in K into as many equal
//                parts as the idle blocks allow; 3: SK 2's cut, every part's block adding and storing
//                its share). SK 1, 2: the block that computes a cut tile's first K tile adds the other
//                blocks' FP32 sums (parked in the workspace) and stores the tile. SK 3: every block of a
//                cut tile parks its sums, waits for the tile's other parts, adds 1 / s of the tile's
//                pairs over all s parts and stores them: the fix-up's reads spread over s SMs instead
//                of one (with s = 16, one block would read 15 parked 128 x 256 tiles, ~2 MB, alone).
//                gemm_wgmma_sk_clear (kernel 1, launched first) zeroes the flags that say a part
//                is parked.
//   SWAP         (gemm_wgmma_tma only; EPI 0 or 1, no SPLITK) 1: the kernel computes C^T = B^T A^T: launch_gemm
//                hands it B as its A and A as its B (M and N, lda and ldb swapped; A_COL and B_COL are
//                of those), and it stores C transposed (store_out, or EPI 1 staged transposed and stored
//                by TMA in boxes of 64 of C's columns by BN rows). The tile's rows then run along N
//                and its columns, the wgmma N (any multiple of 16 where A is row-major), along M: the
//                sizes that fill the waves of LLM shapes, whose M (tokens) is the odd dimension.
//                cuBLAS's Hopper kernels tile that way (192 x 96 at 3072x768x3072, N x M).
//   AR           (gemm_wgmma_tma only) 1: each consumer warpgroup's A from registers (ldmatrix.x4 from the
//                stage, .trans for an MN-major A; wgmma's register form), B from shared memory; every K
//                tile then waits for its own wgmma (the registers are rewritten by the next tile's
//                loads). 0: both operands from shared memory through descriptors.
//   F16          0: bf16, 1: fp16 (from the problem)
//   A_COL, B_COL layouts from the problem: 1 = column-major
//
// Shared memory: ST stages, each A's tile then B's, 1024-byte aligned (the 128-byte swizzle pattern
// repeats every 1024 bytes and the descriptors' base offset is 0). An operand tile is a stack of
// 128-byte lines, 16-byte chunk c of line L stored at chunk c ^ (L % 8) (the hardware's 128B swizzle):
//   K-major operand (A row-major, B column-major): line r = the 64 K values of tile row r;
//     descriptor: start + 32 bytes per k16 step, SBO = 1024 (8 rows), LBO unused.
//   MN-major operand (A column-major, B row-major): blocks of 64 rows/columns of the tile, each 64
//     lines (one per k) of those 64 values, 8192 bytes; descriptor: start + 2048 bytes per k16 step
//     (16 lines), LBO = 8192 (next 64 along M or N), SBO = 1024 (next 8 k), transpose bit set.
// In both forms line L of the tile sits at byte L * 128, so one loader serves both.
//
// Requirements (the descriptor's constraints): every 16-byte chunk of A and B aligned and wholly
// inside or outside the operand (16-byte aligned pointers, leading dimensions and contiguous extents
// multiples of 8 halves); M, N, K otherwise arbitrary (chunks outside are zero-filled). C: any.
#include "gemm_half16.cuh"
#include "gemm_pack16.cuh"   // PACK = 1: gemm_pack16 is one of this module's kernels
#include "gemm_splitk16.cuh" // SPLITK > 1: gemm_splitk_reduce16 is kernel 1
#include "gemm_wgmma_common.cuh" // wgmma, descriptors, TMA tile loads, the accumulator walk
#include "ktune_cluster.cuh" // CL > 1: the K slices of a cluster add up in distributed shared memory
#include "gemm_wgmma_mainloop.cuh" // operand loads into the stages, one K tile of wgmma
#include "gemm_wgmma_schedule.cuh" // units, tiles, the persistent walk, stream-K's split
#include "gemm_wgmma_epilogue.cuh" // C from the accumulators: direct, TMA, staged, by the producer, clusters
#include "gemm_wgmma_streamk.cuh"  // stream-K parts parked, gathered, shared

template <int BM, int BN, int WG, int ST, int SWZ, int F16, int A_COL, int B_COL>
__global__ void __launch_bounds__(WG * 128, 1) gemm_wgmma(KtuneGemmArgs p) {
  using namespace ktune_dev;
  using namespace ktune_dev::wgmma;
  constexpr int NT = WG * 128, WM = BM / WG, MT = WM / 64;
  static_assert(WM % 64 == 0 && (BN == 64 || BN == 128 || BN == 256) && ST >= 3 && WG <= 2, "tile shapes (descriptor, loader)");
  constexpr unsigned A_BYTES = BM * 128, STAGE = (BM + BN) * 128;

  extern __shared__ __align__(1024) unsigned char smem_raw[];
  // The launch adds 1024 bytes of slack: dynamic shared memory is only guaranteed 16-byte aligned.
  const unsigned sbase = (half16::smem_u32(smem_raw) + 1023u) & ~1023u;

  const int tiles_m = (p.M + BM - 1) / BM, tiles_n = (p.N + BN - 1) / BN;
  int tm, tn;
  raster<SWZ>(blockIdx.x, tiles_m, tiles_n, tm, tn);
  const int row0 = tm * BM, col0 = tn * BN;
  const int tid = threadIdx.x, wg = tid / 128;
  const int nk = (p.K + 63) / 64; // K = 0: nothing loaded, C = beta * C

  Loader<BM, !A_COL, NT> la;
  Loader<BN, B_COL, NT> lb;
  la.init(reinterpret_cast<const unsigned short*>(p.A), p.lda, row0, p.M, p.K, tid);
  lb.init(reinterpret_cast<const unsigned short*>(p.B), p.ldb, col0, p.N, p.K, tid);
  auto load_tile = [&](int kt) {
    const unsigned s = sbase + unsigned(kt % ST) * STAGE;
    la.k0 = lb.k0 = kt * 64;
    la.load(s);
    lb.load(s + A_BYTES);
  };

  float acc[MT][BN / 2];
#pragma unroll
  for (int m = 0; m < MT; ++m)
#pragma unroll
    for (int j = 0; j < BN / 2; ++j) acc[m][j] = 0.0f;

  // Descriptor pieces that do not change along K. A: this warpgroup's rows; K-major lines are rows
  // (64 rows = 8192 bytes), MN-major 64-row blocks are 8192 bytes too.
  const unsigned a_wg = unsigned(warp_uniform(wg) * WM) * 128;

#pragma unroll
  for (int s = 0; s < ST - 2; ++s) {
    if (s < nk) load_tile(s);
    cp_async_commit();
  }
  for (int kt = 0; kt < nk; ++kt) {
    // Tile kt landed (this thread's copies), made visible to the async proxy that wgmma reads
    // through, then everyone's. The barrier also means every warpgroup has passed the
    // wgmma_wait<1> of step kt - 1, so tile kt - 2's stage is free for tile kt + ST - 2.
    cp_async_wait<ST - 3>();
    fence_proxy_async();
    __syncthreads();
    if (kt + ST - 2 < nk) load_tile(kt + ST - 2);
    cp_async_commit();

    const unsigned sa = sbase + unsigned(kt % ST) * STAGE;
    mma_tile<MT, BN, F16, A_COL, B_COL>(acc, sa, sa + A_BYTES, a_wg);
    wgmma_wait<1>(); // step kt - 1's wgmma done: its stage may be overwritten after the next barrier
  }
  wgmma_wait<0>();
#pragma unroll
  for (int m = 0; m < MT; ++m) fence_regs(acc[m]);
  cp_async_wait<0>(); // nothing may be in flight into shared memory when the block exits

  store_c<MT, BN, F16>(p, acc, row0 + wg * WM, col0, tid & 127);
}

// The TMA form (TMA = 1 in the config): warp-specialized. Warpgroup 0 is the producer: one thread
// issues the TMA copies of each K tile into the ring (completing on the stage's `full` mbarrier)
// once the consumers have released the stage (its `empty` mbarrier); its registers go to the
// consumers (setmaxnreg). Warpgroups 1..WG are consumers, BM / WG rows each, as in gemm_wgmma:
// wait for a stage, issue its wgmma, keep one group in flight, release the stage before it.
// PP = 1: consumer c computes the block's tiles c, c + 2, ... whole; the ring's stages then belong
// to one consumer each (`empty` counts one), in the order the producer fills them, and the consumers
// enter their main loops in turn: the parity wait on a stage is only sound one use ahead, and a
// consumer running ahead of the other could be more.
// Launched with KtuneGemmTmaArgs (launch plan: LaunchStep::tma; boxes 64 x BM or 64 x 64 for A,
// 64 x BN or 64 x 64 for B, as tma_tile reads them; the shared operand's K-major box is half as
// tall under MC).
// MC > 0 (TMA multicast, a cluster of 2 CTAs along x): the pair's CTAs compute two tiles that share
// one operand's tile (MC 1: B, two M tiles; MC 2: A, two N tiles). Each producer loads its own
// other operand and half of the shared one, multicast into both CTAs, so the pair reads the shared
// tile from L2 once. Each CTA's `full` barrier still expects the whole stage's bytes (both halves
// land in both CTAs), and each `empty` barrier counts the consumers of both CTAs, since either
// producer writes into both rings.
// EPI = 1 (C's rows 16-byte aligned; beta == 0 at run time, else the plain epilogue): each consumer
// warpgroup writes its part of the tile into its own staging buffer after the ring, and one thread
// stores it with TMA (box 64 x WM, args.c), asynchronously: the warpgroup goes on to its next tile
// (PT > 1) or leaves, and waits for the store to have read the buffer only before writing it again.
// EPI = 3 (any C; beta == 0 at run time, else the plain epilogue): the same staging, but the producer
// warpgroup's warps 1-3 (idle under TMA) store it with plain stores (store_staged), following the
// block's tiles in order: a consumer arrives on its `staged` barrier after writing its buffer and
// waits on its `drained` barrier (the storers' arrivals) before writing it again. Where C's rows
// are not 16-byte aligned (no tensor map of C), this keeps the stores off the consumers' path: the
// shipped 2999^3 config (128 x 128, persistent, MC 2) takes 127.6 us with it and 151.8 with the
// plain epilogue (H100, docs/runs/2026-11-25-h100-s13-epi3-retune-trials.jsonl.gz).
template <int BM, int BN, int WG, int ST, int SWZ, int SPLITK, int CL, int PT, int MC, int EPI, int PP, int SK, int SWAP, int AR, int F16, int A_COL, int B_COL>
__global__ void __launch_bounds__((WG + 1) * 128, 1) KTUNE_CLUSTER_DIMS(MC ? 2 : 1, 1, CL)
    gemm_wgmma_tma(const __grid_constant__ KtuneGemmTmaArgs args) {
  using namespace ktune_dev;
  using namespace ktune_dev::wgmma;
  static_assert(SPLITK >= 1 && CL >= 1 && CL <= 8 && (SPLITK == 1 || CL == 1), "K slices: SPLITK or a portable cluster");
  static_assert(CL == 1 || BM * BN * 4 <= ST * (BM + BN) * 128, "CL > 1: the tile's FP32 partial sums fit the stage ring");
  static_assert(PT >= 0 && (PT == 1 || SPLITK * CL == 1), "PT != 1: whole tiles (no K slices)");
  static_assert(PP == 0 || (PP == 1 && WG == 2 && PT != 1 && MC == 0), "PP = 1: two consumers, several tiles a block, no MC");
  static_assert(SK == 0 || ((SK >= 1 && SK <= 3) && PT == 0 && SPLITK * CL == 1 && MC == 0 && PP == 0), "SK: a persistent grid, no K slices, MC or PP");
  static_assert(MC >= 0 && MC <= 2 && (MC == 0 || CL == 1), "MC > 0: a pair of tiles (of one K slice under SPLITK), no CL");
  static_assert(EPI == 0 || ((EPI == 1 || EPI == 3 || (EPI == 2 && BN % 128 == 0)) && (BN % 64 == 0 || SWAP) && SPLITK * CL == 1),
                "EPI: whole tiles (no K slices) staged in 64-column blocks; EPI 2 halves of them");
  static_assert(EPI != 3 || (SK == 0 && PP == 0), "EPI 3: the storers follow the block's tiles in order (no SK, no PP)");
  constexpr int SLICES = SPLITK * CL; // along blockIdx.z
  // Registers per thread after setmaxnreg (multiples of 8; the SM's 64 K registers shared by the
  // block's (WG + 1) * 128 threads): the producer keeps 40, the consumers take the rest, 232 of them
  // with two consumer warpgroups, 152 with three (128 * 40 + 384 * 152 = 63488).
  constexpr int PRODUCER_REGS = 40, CONSUMER_REGS = WG == 2 ? 232 : 152;
  if constexpr (SPLITK > 1) let_next_grid_launch(); // the reduction's blocks may queue behind ours
  constexpr int WM = PP ? BM : BM / WG, MT = WM / 64; // a consumer's rows of a tile
  static_assert(WM % 64 == 0 && BN % 16 == 0 && BN >= 64 && BN <= 256 && (B_COL || BN % 64 == 0) && ST >= 2 && WG >= 1 && WG <= 3,
                "tile shapes (descriptor: an MN-major B in 64-column blocks)");
  static_assert(SWAP == 0 || (EPI <= 1 && SPLITK == 1), "SWAP: C stored transposed, plainly or staged (EPI 1); no split-K workspace");
  constexpr unsigned A_BYTES = BM * 128, STAGE = (BM + BN) * 128;
  const KtuneGemmArgs& p = args.g;

  extern __shared__ __align__(1024) unsigned char smem_raw[];
  // full[ST], then empty[ST]; EPI 3: staged[WG], then drained[WG] (a consumer's staging buffer
  // written, and read by the storers).
  __shared__ __align__(8) unsigned long long bars[2 * ST + (EPI == 3 ? 2 * WG : 0)];
  const unsigned sbase = (half16::smem_u32(smem_raw) + 1023u) & ~1023u;
  const unsigned full0 = half16::smem_u32(bars), empty0 = full0 + ST * 8;
  const unsigned staged0 = empty0 + ST * 8, drained0 = staged0 + WG * 8;
  // EPI: consumer c's staging buffer, after the ring (EPI 2: its rows by half the columns).
  auto staging = [&](int c) { return sbase + ST * STAGE + unsigned(c) * (WM * (BN / (EPI == 2 ? 2 : 1)) * 2); };

  // Tiles of this block: blockIdx.x, + gridDim.x, ... (PT = 1: the grid has one block a tile, and
  // the loops below run once). PT > 1 (a grid of ceil(tiles / PT) blocks, all resident when it is
  // at most the SM count): the K tiles of consecutive output tiles run through one stage ring, so
  // the producer loads the next tile's first stages while the consumers store this tile's C, and
  // the block's set-up is paid once.
  // Work units (Units): tiles, or pairs of tiles under MC; a block's first unit and its stride.
  const Units<SWZ, MC> grid((p.M + BM - 1) / BM, (p.N + BN - 1) / BN);
  const int units = grid.count();
  const int unit0 = MC ? int(blockIdx.x) / 2 : int(blockIdx.x);
  const int stride = PT != 1 ? (MC ? int(gridDim.x) / 2 : int(gridDim.x)) : units;
  const unsigned rank = MC ? cluster::rank() : 0u, peer = rank ^ 1u;
  const int tid = threadIdx.x, wg = tid / 128;
  // Each tile's K tiles: [k0, k0 + nk). K = 0: nothing loaded (the maps are then not encoded),
  // C = beta * C. A slice past K's last tile (none when the descriptor's rule holds) adds zeros.
  const KRange slice = k_slice(p.K, 64, SLICES, int(blockIdx.z));
  const int k0 = slice.first, nk = slice.count, nkw = nk > 0 ? nk : 1;

  if (tid == 0) {
    init_ring<ST>(full0, empty0, PP ? 1 : MC ? 2 * WG : WG);
    if constexpr (EPI == 3)
      for (int c = 0; c < WG; ++c) mbar_init(staged0 + c * 8, 128), mbar_init(drained0 + c * 8, 96);
  }
  // MC: the partner's barriers are initialized before anything is multicast to it or arrives on them.
  if constexpr (MC > 0) cluster::sync();
  else __syncthreads();
  // A consumer warpgroup is done with stage s: every producer that writes into this CTA's ring may
  // refill it (its own, and the partner's under MC).
  auto release = [&](int s) {
    mbar_arrive(empty0 + s * 8);
    if constexpr (MC > 0) cluster::mbar_arrive(empty0 + s * 8, peer);
  };

  // The roles are the two branches of one if / else: what setmaxnreg needs to take effect (with
  // the register cap at entry that __launch_bounds__(..., 1) gives). One consumer warpgroup has
  // 255 registers per thread already (256 threads): no reallocation then.
  // `it` counts the block's K tiles over all its output tiles: stage it % ST, use it / ST.
  if (wg == 0) {
    if constexpr (WG > 1) setmaxnreg_dec<PRODUCER_REGS>();
    if (tid == 0) {
      // PACK: this kernel is gemm_pack16's programmatic dependent (its set-up overlaps the copy's
      // tail); the copies are complete and visible only after this wait. Without a dependent
      // launch it returns at once. SK's kernel 1 is waited for only before the flags (sk_park).
      if constexpr (SK == 0) wait_for_previous_grid();
      int it = 0, u, kb, ke;
      for (Work<SK> work(units, nkw, unit0, stride); work.next(u, kb, ke);) {
        int tm, tn;
        grid.tile(u, rank, tm, tn);
        const int row0 = tm * BM, col0 = tn * BN;
        for (int kt = kb; kt < min(ke, nk); ++kt, ++it) {
          const int s = it % ST;
          if (it >= ST) mbar_wait(empty0 + s * 8, ((it / ST) & 1) ^ 1); // released use it / ST - 1
          const unsigned full = full0 + s * 8, dst = sbase + s * STAGE;
          const int kc = (k0 + kt) * 64;
          mbar_expect_tx(full, STAGE);
          if constexpr (MC == 2) tma_tile_shared<BM, !A_COL>(dst, &args.a, row0, kc, full, rank);
          else tma_tile<BM, !A_COL>(dst, &args.a, row0, kc, full);
          if constexpr (MC == 1) tma_tile_shared<BN, B_COL>(dst + A_BYTES, &args.b, col0, kc, full, rank);
          else tma_tile<BN, B_COL>(dst + A_BYTES, &args.b, col0, kc, full);
        }
      }
    }
    // EPI 3 (beta == 0, as the consumers decide): warps 1-3 store the consumers' staged tiles, in
    // the block's order of tiles and consumers, while the consumers go on to their next tile.
    if constexpr (EPI == 3) {
      if (tid >= 32 && p.beta == 0.0f) {
        int u, kb, ke;
        Work<SK> work(units, nkw, unit0, stride);
        for (int j = 0; work.next(u, kb, ke); ++j) {
          int tm, tn;
          grid.tile(u, rank, tm, tn);
#pragma unroll 1
          for (int c = 0; c < WG; ++c) {
            mbar_wait(staged0 + c * 8, j & 1);
            store_staged<WM, BN>(p, staging(c), tid - 32, tm * BM + c * WM, tn * BN);
            mbar_arrive(drained0 + c * 8);
          }
        }
      }
    }
    // Nothing else for the producer: the consumers wait for every copy it issued. CL > 1 and MC:
    // the cluster barriers below count every thread of the cluster, the producer's included.
    if constexpr (CL > 1) cluster::sync(), cluster::sync();
    if constexpr (MC > 0) cluster::sync();
  } else {
    if constexpr (WG > 1) setmaxnreg_inc<CONSUMER_REGS>();
    const int cw = warp_uniform(wg - 1); // consumer index
    const int wrow = PP ? 0 : cw * WM;  // its first row in a tile
    const unsigned a_wg = unsigned(wrow) * 128;
    // PP: the named barrier on which consumer c waits for its turn (the other one's arrive).
    constexpr unsigned TURN = 4;
    // When a consumer releases a stage. By default one K tile late: after issuing K tile it, it
    // waits until at most one group is pending (K tile it - 1's) and releases that one's stage, so
    // two of its groups stay queued on the tensor pipe and the producer's lead is ST - 2 stages.
    // RELEASE_NOW (rings of three stages; no PP, no SK): it waits for K tile it's own group and
    // releases its stage at once, which gives the producer ST - 1 stages of lead. A clock64 trace on
    // the H100 (docs/runs/performance-log-2026-11.md, "where 2048^3 does not lose") had three-stage
    // consumers waiting ~270 cycles a K tile for data. The shipped three-stage entries, both builds
    // alternating three times: 2048^3
    // +1.4 %, f16 2048x4096x11008 (PT 2) +1.7 %, 8192^3 (PT 4) +0.6 %, 4095x4097x4093 (256 x 128,
    // PT 4, EPI 3, packed) +5.6 %; the stream-K one (SK 2, 2048x11008x4096) lost 1.1-1.5 %, so SK
    // keeps the default, as do rings of four or more stages (no gain in the same runs).
    // AR: the next K tile's ldmatrix rewrite the A registers this tile's wgmma read, so every
    // consumer waits for its own group (wait 0) and releases the stage then.
    constexpr bool RELEASE_NOW = (ST <= 3 && PP == 0 && SK == 0) || AR;
    int it = 0, u, kb, ke;
    Work<SK> work(units, nkw, unit0, stride);
    for (int j = 0; work.next(u, kb, ke); ++j) { // j: the block's segment index
      const int kn = max(0, min(ke, nk) - kb);          // K tiles loaded (none when K = 0)
      if (PP && j % 2 != cw) {
        it += kn;
        continue;
      }
      if (PP && j > 0) named_sync(TURN + cw, 256); // the other consumer has waited for its last stage
      int tm, tn;
      grid.tile(u, rank, tm, tn);
      const int row0 = tm * BM, col0 = tn * BN;
      float acc[MT][BN / 2];
#pragma unroll
      for (int m = 0; m < MT; ++m)
#pragma unroll
        for (int j = 0; j < BN / 2; ++j) acc[m][j] = 0.0f;

      for (int kt = 0; kt < kn; ++kt, ++it) {
        const unsigned s = unsigned(it) % ST; // it >= 0: unsigned, so no signed-remainder fix-ups
        mbar_wait(full0 + s * 8, (unsigned(it) / ST) & 1);
        const unsigned sa = sbase + s * STAGE;
        mma_tile<MT, BN, F16, A_COL, B_COL, AR>(acc, sa, sa + A_BYTES, a_wg);
        if constexpr (RELEASE_NOW) {
          wgmma_wait<0>(); // this K tile's wgmma have read their stage: release it now
          if (tid % 128 == 0) release(int(s));
        } else {
          wgmma_wait<1>(); // K tile it - 1's wgmma have read their stage: release it to the producer
          if (kt > 0 && tid % 128 == 0) release(int(unsigned(it - 1) % ST));
        }
      }
      // PP: every stage of this tile has been waited for; the other consumer's turn (if it has a next tile).
      if (PP && work.more()) named_arrive(TURN + (1 - cw), 256);
      wgmma_wait<0>();
      // The tile's last stage, for the next tile's loads (PT = 1: nobody waits for it).
      if (!RELEASE_NOW && PT != 1 && kn > 0 && tid % 128 == 0) release((it - 1) % ST);
#pragma unroll
      for (int m = 0; m < MT; ++m) fence_regs(acc[m]);
      if constexpr (SK == 3) {
        if (kb > 0 || ke < nkw) { // a part of a cut unit: this block adds and stores its share of it
          sk_share<MT, BN, BM, WG * 128, WM, F16, SWAP>(p, acc, work.split(), row0, col0, tid - 128);
          continue;
        }
      } else if constexpr (SK > 0) {
        if (kb > 0) { // a part of a unit another block owns: parked for it, nothing stored here
          sk_park<MT, BN, BM, WG * 128>(p, acc, tid - 128);
          continue;
        }
        if (ke < nkw) sk_gather<SK, MT, BN, BM, WG * 128>(p, acc, work.split(), u, tid - 128);
      }
      if constexpr (SPLITK > 1) {
        store_partial<MT, BN>(p, acc, row0 + wrow, col0, tid & 127, int(blockIdx.z));
      } else if constexpr (CL > 1) {
        constexpr int NC = WG * 128;
        // Every consumer warpgroup's wgmma have read the ring (and every TMA copy into it has
        // landed: each was waited for) before any partial sum overwrites it.
        named_sync(1, NC);
        float2* const buf = reinterpret_cast<float2*>(smem_raw + (sbase - half16::smem_u32(smem_raw)));
        park_pairs<MT, BN, NC>(acc, buf, tid - 128);
        cluster::sync(); // every rank's partial sums are in its ring
        cluster_store_c<MT, BN, NC, WM, CL, F16, SWAP>(p, buf, row0, col0, tid - 128);
        cluster::sync(); // no CTA leaves (freeing its ring) while another still reads it
      } else if (EPI == 3 && p.beta == 0.0f) {
        // The storers have read this warpgroup's buffer (its previous tile) before it is written
        // again; the 128 arrivals on `staged` release the writes to them. (if constexpr: staging
        // needs whole 64-column blocks, which tiles without EPI need not have.)
        if constexpr (EPI == 3) {
          if (j > 0) mbar_wait(drained0 + cw * 8, (j - 1) & 1);
          stage_c<MT, BN, F16>(p, acc, staging(cw), tid & 127);
          mbar_arrive(staged0 + cw * 8);
        }
      } else if ((EPI == 1 || EPI == 2) && p.beta == 0.0f) {
        // EPI 2: the columns in two halves through a buffer of half the size (what lets 128 x 256
        // tiles keep 4 stages); the second half waits for the first's store to have read it.
        if constexpr (EPI == 1 || EPI == 2) {
          constexpr int PARTS = EPI == 2 ? 2 : 1;
          store_c_tma<0, PARTS, MT, BN, F16, SWAP>(p, &args.c, acc, staging(cw), tid & 127, cw, row0 + wrow, col0);
          if constexpr (PARTS == 2) store_c_tma<1, PARTS, MT, BN, F16, SWAP>(p, &args.c, acc, staging(cw), tid & 127, cw, row0 + wrow, col0);
        }
      } else {
        store_c<MT, BN, F16, SWAP>(p, acc, row0 + wrow, col0, tid & 127);
      }
    }
    // EPI: shared memory stays allocated until the last store has read it.
    if ((EPI == 1 || EPI == 2) && (tid & 127) == 0) async::bulk_wait_read();
    // MC: the partner may still arrive on this CTA's `empty` barriers (its consumers release the
    // last stages); neither CTA leaves, freeing its shared memory, before both are done.
    if constexpr (MC > 0) cluster::sync();
  }
}

// SK, kernel 1, launched before gemm_wgmma_tma (which is its programmatic dependent, and waits for
// it only before its first flag): zeroes the flags of the workspace's header, which other plans'
// kernels (split-K sums, packed copies) share. One block; the main kernel may start at once.
__global__ void __launch_bounds__(256) gemm_wgmma_sk_clear(KtuneGemmArgs p) {
  ktune_dev::let_next_grid_launch();
  for (int i = int(threadIdx.x); i < KTUNE_SK_HEADER_BYTES / 4; i += 256) reinterpret_cast<unsigned*>(p.workspace)[i] = 0u;
}
