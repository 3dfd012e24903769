// gemm_tf32x3: FP32 GEMM on the tensor cores with FP32-level accuracy ("3xTF32"). Each operand
// element x is split into big, x rounded to tf32, and small = x - big (split_tf32), and a * b is
// accumulated as a_small * b_big + a_big * b_small + a_big * b_big with mma.sync m16n8k8, short
// sums of which are added to FP32 accumulators with FADD (see FOLD for why); the dropped
// a_small * b_small term is ~2^-22 of a product. The TF32 tensor cores' peak is ~7x FFMA's on
// sm_90 (~495 against 67 TFLOPS), so three MMAs per product still leave room above FFMA: this
// family is for FP32 results where FP32 CUDA-core GEMM is compute bound.
// Not bit-identical to FP32 FFMA, and not for inputs near FP32's range limits: a value within
// 2^-11 of FLT_MAX rounds to infinity in tf32, and an infinite input gives NaN (inf - inf in the
// split) where FFMA would give an infinity. The family's description says so (gemm_tf32x3.cpp),
// and the runtime uses it only when asked (RuntimeOptions::tf32x3).
//
// Template parameters (host code spells them as in the config JSON):
//   BM, BN, BK   block tile (rows of C, columns of C, K depth of one shared-memory stage)
//   WM, WN       warp tile, in m16n8 MMA tiles: (WM/16) x (WN/8) per warp per k8 step
//   ST           cp.async stages in the shared-memory ring (ST - 1 tiles in flight)
//   KU           1: the BK / 8 k8 steps of a stage unrolled; 0: a loop (fewer live registers)
//   FOLD         k8 steps the tensor cores sum from zero before the sum is added to the FP32
//                accumulators (1, or a divisor of BK / 8 with a second set of accumulators)
//   CVT          how operands are split into big and small halves (split_tf32)
//   SPLITK       K slices (blockIdx.z) into the workspace, added by gemm_splitk_reduce
//   SWZ          rasterization group (raster() in gemm_common.cuh)
//   PACK         gemm_pack copies A and B first (aligned, zero-padded to whole tiles): without
//                it the problem must be 16-byte aligned and the tiles must divide it
//   A_COL, B_COL layouts from the problem: 1 = column-major
// Shared memory keeps each operand tile in its global storage order (whole 16-byte cp.async
// copies); rows are padded so that a warp's fragment reads hit 32 distinct banks: by 4 floats
// where K is the contiguous dimension (strides 12, 20, 36: lanes g * stride + t) and by 8 where M
// or N is (strides 8 mod 32: lanes t * stride + g). Fragment layouts: PTX ISA, "Matrix Fragments
// for mma.m16n8k8".
#include "gemm_common.cuh"
#include "gemm_pack.cuh"
#include "gemm_splitk.cuh"
#include "gemm_tf32.cuh" // split_tf32

namespace ktune_dev {

// d += a * b for one m16n8k8 tile (a: 4 registers, b: 2, d: 4).
__device__ __forceinline__ void mma_tf32(float* d, const unsigned* a, const unsigned* b) {
#if __CUDA_ARCH__ >= 800
  asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#endif
}

// Accumulator tiles of a warp: I x J MMA tiles of 4 floats a thread.
template <int I, int J>
__device__ __forceinline__ void fill_zero(float (&x)[I][J][4]) {
#pragma unroll
  for (int i = 0; i < I; ++i)
#pragma unroll
    for (int j = 0; j < J; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) x[i][j][e] = 0.0f;
}
template <int I, int J>
__device__ __forceinline__ void add_tiles(float (&to)[I][J][4], const float (&from)[I][J][4]) {
#pragma unroll
  for (int i = 0; i < I; ++i)
#pragma unroll
    for (int j = 0; j < J; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) to[i][j][e] += from[i][j][e];
}

// One operand tile in shared memory, in its global storage order: SR rows of SC contiguous
// floats (row stride SC + PAD), filled by NT threads with 16-byte cp.async copies.
template <int SR, int SC, int PAD, int NT>
struct StageTile {
  static constexpr int LD = SC + PAD;
  static constexpr int SIZE = SR * LD;
  static constexpr int VPR = SC / 4;  // 16-byte vectors per row
  static constexpr int NV = SR * VPR; // vectors per tile
  static constexpr int ITERS = (NV + NT - 1) / NT;

  // g: the tile's origin in global memory (storage rows ld apart).
  __device__ __forceinline__ static void load(float* s, const float* g, long long ld, int tid) {
#pragma unroll
    for (int it = 0; it < ITERS; ++it) {
      const int v = it * NT + tid;
      if (NV % NT != 0 && v >= NV) break;
      const int r = v / VPR, c = (v % VPR) * 4;
      cp_async<16>(s + r * LD + c, g + r * ld + c, 16);
    }
  }
};

} // namespace ktune_dev

template <int BM, int BN, int BK, int WM, int WN, int ST, int KU, int FOLD, int CVT, int SPLITK, int SWZ, int PACK, int A_COL, int B_COL>
__global__ void __launch_bounds__(32 * (BM / WM) * (BN / WN)) gemm_tf32x3(KtuneGemmArgs args) {
  using namespace ktune_dev;
  if constexpr (SPLITK > 1) let_next_grid_launch();
  const KtuneGemmArgs p = PACK ? PackedLayout<BM, BN, BK * SPLITK, (SPLITK > 1 ? SPLITK : 0), A_COL, B_COL>(args).apply(args) : args;
  constexpr int NT = 32 * (BM / WM) * (BN / WN);
  constexpr int MI = WM / 16, NI = WN / 8; // MMA tiles per warp per k8 step
  // A is (m, k): row-major storage is BM rows of BK; column-major is BK rows of BM. B likewise.
  using TileA = StageTile<A_COL ? BK : BM, A_COL ? BM : BK, A_COL ? 8 : 4, NT>;
  using TileB = StageTile<B_COL ? BN : BK, B_COL ? BK : BN, B_COL ? 4 : 8, NT>;
  constexpr int STAGE = TileA::SIZE + TileB::SIZE;

  extern __shared__ float4 smem_raw[];
  float* const smem = reinterpret_cast<float*>(smem_raw);

  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const int g = lane / 4, t = lane % 4; // fragment coordinates: group and thread in group
  const int warp_m = (warp / (BN / WN)) * WM, warp_n = (warp % (BN / WN)) * WN;

  const int tiles_m = (p.M + BM - 1) / BM, tiles_n = (p.N + BN - 1) / BN;
  int tile_m, tile_n;
  raster<SWZ>(blockIdx.x, tiles_m, tiles_n, tile_m, tile_n);
  const int m0 = tile_m * BM, n0 = tile_n * BN;

  // This block's K slice in whole BK tiles (K divides into BK * SPLITK: the tiles divide the
  // problem, or PACK padded it).
  const int nk = p.K / (BK * SPLITK);
  const int k_begin = blockIdx.z * nk * BK;
  const float* a_src = p.A + offset<A_COL>(m0, k_begin, p.lda);
  const float* b_src = p.B + offset<B_COL>(k_begin, n0, p.ldb);
  const long long a_step = A_COL ? BK * p.lda : BK, b_step = B_COL ? BK : BK * p.ldb;

  auto load_stage = [&](int s) {
    float* const base = smem + s * STAGE;
    TileA::load(base, a_src, p.lda, tid);
    TileB::load(base + TileA::SIZE, b_src, p.ldb, tid);
    a_src += a_step, b_src += b_step;
  };

  // The tensor cores add into their FP32 accumulator with truncation, so a running sum kept
  // there drifts toward zero by ~2^-23 of its size at every MMA, and its relative error grows
  // with K (measured: 7e-6 at K = 1024 where cuBLAS SGEMM has 6e-7). So the MMAs sum FOLD k8
  // steps at a time from zero (FOLD = 1: a transient per MMA tile; more: a second set of
  // accumulators, `fold`) and those sums are added to `acc` with round-to-nearest FADDs.
  float acc[MI][NI][4], fold[MI][NI][4]; // fold is dead code when FOLD == 1
  fill_zero(acc);

  // Ring of ST stages, one barrier per tile: at tile kt the barrier also proves every warp has
  // finished tile kt - 1, whose stage the copies of tile kt + ST - 1 then overwrite. A group is
  // committed for every tile slot (empty past the end), so wait_group<ST - 2> always means
  // "tile kt has landed".
#pragma unroll
  for (int s = 0; s < ST - 1; ++s) {
    if (s < nk) load_stage(s);
    cp_async_commit();
  }
  for (int kt = 0; kt < nk; ++kt) {
    cp_async_wait<ST - 2>();
    __syncthreads();
    if (kt + ST - 1 < nk) load_stage((kt + ST - 1) % ST);
    cp_async_commit();

    const float* const As = smem + (kt % ST) * STAGE;
    const float* const Bs = As + TileA::SIZE;
#pragma unroll(KU ? BK / 8 : 1)
    for (int kk = 0; kk < BK; kk += 8) {
      // A's fragments for the whole warp tile, B's one n8 tile at a time (registers: the split
      // doubles every fragment, beside up to 128 accumulators).
      unsigned a_big[MI][4], a_small[MI][4];
#pragma unroll
      for (int i = 0; i < MI; ++i)
#pragma unroll
        for (int r = 0; r < 4; ++r) {
          const int m = warp_m + i * 16 + g + 8 * (r % 2), k = kk + t + 4 * (r / 2);
          split_tf32<CVT>(As[A_COL ? k * TileA::LD + m : m * TileA::LD + k], a_big[i][r], a_small[i][r]);
        }
      if constexpr (FOLD > 1) {
        if (kk % (8 * FOLD) == 0) fill_zero(fold);
      }
#pragma unroll
      for (int j = 0; j < NI; ++j) {
        unsigned b_big[2], b_small[2];
#pragma unroll
        for (int r = 0; r < 2; ++r) {
          const int n = warp_n + j * 8 + g, k = kk + t + 4 * r;
          split_tf32<CVT>(Bs[B_COL ? n * TileB::LD + k : k * TileB::LD + n], b_big[r], b_small[r]);
        }
        // Small terms first (the least significant), into a sum that starts from zero every
        // FOLD k8 steps (see FOLD above).
#pragma unroll
        for (int i = 0; i < MI; ++i) {
          float d[4] = {0.0f, 0.0f, 0.0f, 0.0f};
          float* const sum = FOLD > 1 ? fold[i][j] : d;
          mma_tf32(sum, a_small[i], b_big);
          mma_tf32(sum, a_big[i], b_small);
          mma_tf32(sum, a_big[i], b_big);
          if constexpr (FOLD == 1) {
#pragma unroll
            for (int e = 0; e < 4; ++e) acc[i][j][e] += d[e];
          }
        }
      }
      if constexpr (FOLD > 1) {
        if ((kk / 8) % FOLD == FOLD - 1) add_tiles(acc, fold);
      }
    }
  }
  cp_async_wait<0>(); // nothing may be in flight into shared memory when the block exits

  // Epilogue: a thread holds 2 adjacent columns of rows g and g + 8 of each MMA tile. Split-K
  // slices go raw to the workspace (ws_ld is a multiple of 4: pairs are aligned); C gets alpha
  // and beta, in pairs where it is 8-byte aligned by the problem's class (no PACK), else by element.
  float* const out = SPLITK == 1 ? p.C : p.workspace + blockIdx.z * (long long)p.M * p.ws_ld;
  const long long out_ld = SPLITK == 1 ? p.ldc : p.ws_ld;
#pragma unroll
  for (int i = 0; i < MI; ++i)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int row = m0 + warp_m + i * 16 + g + 8 * h;
      if (PACK && row >= p.M) continue;
#pragma unroll
      for (int j = 0; j < NI; ++j) {
        const int col = n0 + warp_n + j * 8 + 2 * t;
        float* const dst = out + row * out_ld + col;
        const float* const v = &acc[i][j][2 * h];
        if (PACK && SPLITK == 1) {
          store_out<1, true, false>(p, dst, col, v);
          store_out<1, true, false>(p, dst + 1, col + 1, v + 1);
        } else {
          store_out<2, SPLITK == 1, PACK == 0>(p, dst, col, v);
        }
      }
    }
}
