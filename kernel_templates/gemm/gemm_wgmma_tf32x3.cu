// gemm_wgmma_tf32x3: FP32 GEMM on Hopper's TF32 wgmma with FP32 accuracy ("3xTF32", issue 16):
// C = alpha * A * B + beta * C, A, B and C FP32, opt-in as gemm_tf32x3 (RuntimeOptions::tf32x3).
// Each product a * b is accumulated as a_small * b_big + a_big * b_small + a_big * b_big, where
// big = x rounded to tf32 and small = x - big rounded to tf32 (split_tf32<1>, gemm_tf32.cuh); the
// dropped a_small * b_small is ~2^-22 of a product. Not bit-identical to FFMA, and not for inputs
// near FP32's range limits (gemm_tf32x3.cu's header says why).
//
// Two kernels, launched in this order:
//   gemm_tf32x3_split  splits A and B once into the workspace: A' = 2M rows of kp floats (row i:
//                      the big halves of A's row i; row M + i: the small halves), B' = 2N rows
//                      (row j: big halves of B's column j; N + j: small), kp = K rounded up to 4
//                      (16-byte rows for TMA). Both K-major whatever the problem's layouts: TF32
//                      wgmma reads only K-major operands from shared memory (no transpose mode),
//                      so this pass is also the transpose that B of NN and A of TN need, and the
//                      packing that makes unaligned shapes and leading dimensions TMA-readable.
//                      Traffic: 12 bytes moved per element of A and B (read 4, write 8): ~160 us
//                      of 4096^3's ~1.6 ms at the H100's bandwidth.
//   gemm_wgmma_tf32x3  warp-specialized like gemm_wgmma_tma: one producer warpgroup (one thread)
//                      issues four TMA copies per stage (A big, A small, B big, B small: boxes of BK
//                      floats x BM or BN rows of A' and B', whose maps span 2M and 2N rows), WG
//                      consumer warpgroups wait on the stage's mbarrier and issue 3 wgmma
//                      m64nBNk8 tf32 per k8 step and m64 tile. Rows of a big box past M or N read
//                      small rows (and past 2M or 2N zeros): they only reach rows or columns of C
//                      outside the problem, which are never stored. Columns past K are TMA's zeros.
//   (gemm_splitk_reduce, the FP32 split-K epilogue of gemm_splitk.cuh, adds SPLITK > 1 slices.)
//
// Template parameters (host code spells them as in the config JSON):
//   BM, BN   block tile (rows, columns of C)
//   BK       K per stage, 32 (128-byte lines, 128B swizzle) or 16 (64-byte lines, 64B swizzle:
//            half the bytes a stage, so twice the stages fit)
//   WG       consumer warpgroups, BM / WG rows each (a multiple of 64)
//   ST       stages in the mbarrier ring
//   FOLD     K tiles the tensor cores sum (from zero) before the sum is added to the FP32
//            accumulators with FADD (the consumer's comment says why)
//   SWZ      rasterization group (raster() in gemm_common.cuh)
//   SPLITK   K slices (blockIdx.z), FP32 partial sums into the workspace (before A' and B')
// Stage layout: A big (BM lines), A small (BM), B big (BN), B small (BN), one line = BK floats of
// one row (K-major), its 16-byte chunks permuted by the hardware's swizzle (128B: chunk c of line
// L at c ^ (L % 8); 64B: at c ^ ((L / 2) % 4)); the pattern repeats every 8 lines (1024 or 512
// bytes), every tile is a multiple of 64 lines, and the stage ring is 1024-byte aligned.
// Descriptor: start + 32 bytes a k8 step (8 floats), SBO = 8 lines.
#include "gemm_splitk.cuh" // SPLITK > 1: gemm_splitk_reduce is kernel 1
#include "gemm_tf32.cuh"   // split_tf32
#include "gemm_wgmma_common.cuh"

namespace ktune_dev {
namespace tf32x3 {

// Where gemm_tf32x3_split writes A' and B': after SLICES split-K slices of M x ws_ld floats (a
// multiple of 16 bytes), so both start 16-byte aligned (host: split_ld and the launch plan's
// offsets in gemm_wgmma_tf32x3.cpp).
template <int SLICES>
struct SplitLayout {
  long long kp;
  float* a;
  float* b;
  __device__ __forceinline__ explicit SplitLayout(const KtuneGemmArgs& p) {
    kp = (p.K + 3) / 4 * 4;
    a = p.workspace + SLICES * (long long)p.M * p.ws_ld;
    b = a + 2ll * p.M * kp;
  }
};

// C = alpha * v + beta * C for columns c and c + 1 of row r (c + 1 may be past N) through
// store_out (gemm_common.cuh): one 8-byte access where C's pair is 8-byte aligned, else element by
// element, as gemm_splitk_reduce picks its width; beta == 0 never reads C.
__device__ __forceinline__ void store_pair(const KtuneGemmArgs& p, int r, int c, float v0, float v1) {
  float* const dst = p.C + (long long)r * p.ldc + c;
  const float v[2] = {v0, v1};
  if (reinterpret_cast<unsigned long long>(dst) % 8 == 0) {
    store_out<2, true, false>(p, dst, c, v);
  } else {
    store_out<1, true, false>(p, dst, c, v);
    store_out<1, true, false>(p, dst + 1, c + 1, v + 1);
  }
}

template <int N>
__device__ __forceinline__ void mma(float (&d)[N / 2], unsigned long long da, unsigned long long db, int scale_d) {
  if constexpr (N == 64) wgmma::wgmma_m64n64k8_tf32(d, da, db, scale_d);
  else if constexpr (N == 128) wgmma::wgmma_m64n128k8_tf32(d, da, db, scale_d);
  else wgmma::wgmma_m64n256k8_tf32(d, da, db, scale_d);
}

} // namespace tf32x3
} // namespace ktune_dev

// blockIdx.z = 0 splits A, 1 splits B. A block moves tiles of 32 k x 32 rows (of A) or columns (of
// B) through shared memory, blockIdx.x over K's tiles, blockIdx.y over the rows' tiles, gridDim.y
// at a time. Each thread reads 4 consecutive elements along the source's contiguous dimension (one
// 16-byte load where the source rows are 16-byte aligned and the 4 lie inside it, else 4 checked
// loads) and writes 4 consecutive k of one row, big and small (16-byte stores: rows of A' and B'
// are kp floats, 16-byte aligned, and a chunk that starts below K ends below kp). The pad columns
// [K, kp) get zeros; the main kernel's maps end at K anyway.
template <int SLICES, int A_COL, int B_COL>
__global__ void __launch_bounds__(256) gemm_tf32x3_split(KtuneGemmArgs p) {
  using namespace ktune_dev;
  // +1: element (i, j) at bank (i + j) % 32, so both directions' accesses below hit 32 banks.
  __shared__ float tile[32][33];
  const bool is_a = blockIdx.z == 0;
  const int rows = is_a ? p.M : p.N;
  const bool kmajor = is_a ? !A_COL : B_COL; // the source's contiguous dimension is K
  const float* const src = is_a ? p.A : p.B;
  const long long ld = is_a ? p.lda : p.ldb;
  const bool vec = ld % 4 == 0 && reinterpret_cast<unsigned long long>(src) % 16 == 0;
  const tf32x3::SplitLayout<SLICES> q(p);
  float* const dst = is_a ? q.a : q.b;
  const int k0 = blockIdx.x * 32, t = threadIdx.x;
  const int line = t / 8, c4 = (t % 8) * 4; // 32 lines of 8 chunks of 4
  if (k0 >= p.K) return;                    // K = 0 (alpha = 0 or an empty product): nothing to split
  for (int r0 = blockIdx.y * 32; r0 < rows; r0 += gridDim.y * 32) {
    // Load: K-major, line = row r0 + line, chunk = k0 + c4 ..; MN-major, line = k0 + line, chunk =
    // rows r0 + c4 ..
    const int outer = kmajor ? r0 + line : k0 + line, inner = kmajor ? k0 + c4 : r0 + c4;
    const int outer_n = kmajor ? rows : p.K, inner_n = kmajor ? p.K : rows;
    float v[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    if (outer < outer_n) {
      const float* const s = src + (long long)outer * ld + inner;
      if (vec && inner + 4 <= inner_n) {
        const float4 x = *reinterpret_cast<const float4*>(s);
        v[0] = x.x, v[1] = x.y, v[2] = x.z, v[3] = x.w;
      } else {
#pragma unroll
        for (int e = 0; e < 4; ++e)
          if (inner + e < inner_n) v[e] = s[e];
      }
    }
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      if (kmajor) tile[line][c4 + e] = v[e];
      else tile[c4 + e][line] = v[e];
    }
    __syncthreads();
    const int r = r0 + line, k = k0 + c4;
    if (r < rows && k < p.K) {
      unsigned big[4], small[4];
#pragma unroll
      for (int e = 0; e < 4; ++e) split_tf32<1>(tile[line][c4 + e], big[e], small[e]);
      *reinterpret_cast<uint4*>(dst + (long long)r * q.kp + k) = make_uint4(big[0], big[1], big[2], big[3]);
      *reinterpret_cast<uint4*>(dst + (long long)(rows + r) * q.kp + k) = make_uint4(small[0], small[1], small[2], small[3]);
    }
    __syncthreads(); // the tile is refilled for the next rows
  }
}

// The main kernel. Launched with KtuneGemmTmaArgs whose maps read A' and B' (LaunchStep::tma:
// 4-byte elements, boxes BK x BM and BK x BN, swizzle BK * 4 bytes, 2 stacked copies).
template <int BM, int BN, int BK, int WG, int ST, int FOLD, int SWZ, int SPLITK>
__global__ void __launch_bounds__((WG + 1) * 128, 1) gemm_wgmma_tf32x3(const __grid_constant__ KtuneGemmTmaArgs args) {
  using namespace ktune_dev;
  using namespace ktune_dev::wgmma;
  static_assert(BK == 16 || BK == 32, "one swizzle atom (64 or 128 bytes) of K per stage");
  static_assert(SPLITK >= 1 && ST >= 2 && FOLD >= 1, "slices, stages, chains");
  if constexpr (SPLITK > 1) let_next_grid_launch(); // the reduction's blocks may queue behind ours
  constexpr int WM = BM / WG, MT = WM / 64;
  static_assert(WM % 64 == 0 && (BN == 64 || BN == 128 || BN == 256), "tile shapes (wgmma m64, n 64 / 128 / 256)");
  constexpr unsigned LINE = BK * 4, A_BYTES = BM * LINE, B_BYTES = BN * LINE, STAGE = 2 * (A_BYTES + B_BYTES);
  constexpr unsigned SBO = 8 * LINE; // the swizzle pattern's 8 lines
  const KtuneGemmArgs& p = args.g;

  extern __shared__ __align__(1024) unsigned char smem_raw[];
  __shared__ __align__(8) unsigned long long bars[2 * ST]; // full[ST], then empty[ST]
  const unsigned sbase = (async::smem_addr(smem_raw) + 1023u) & ~1023u;
  const unsigned full0 = async::smem_addr(bars), empty0 = full0 + ST * 8;

  const int tiles_m = (p.M + BM - 1) / BM, tiles_n = (p.N + BN - 1) / BN;
  int tm, tn;
  raster<SWZ>(blockIdx.x, tiles_m, tiles_n, tm, tn);
  const int row0 = tm * BM, col0 = tn * BN;
  const int tid = threadIdx.x, wg = tid / 128;
  // This block's K tiles [kt0, kt0 + nk). K = 0: none (and the maps are not encoded); C = beta * C.
  const KRange slice = k_slice(p.K, BK, SPLITK, int(blockIdx.z));
  const int kt0 = slice.first, nk = slice.count;

  if (tid == 0) init_ring<ST>(full0, empty0, WG);
  __syncthreads();

  if (wg == 0) { // producer: registers go to the consumers (gemm_wgmma.cu says why the branch form)
    if constexpr (WG > 1) setmaxnreg_dec<40>();
    if (tid == 0) {
      for (int kt = 0; kt < nk; ++kt) {
        const int s = kt % ST;
        if (kt >= ST) mbar_wait(empty0 + s * 8, ((kt / ST) & 1) ^ 1); // released use kt / ST - 1
        const unsigned full = full0 + s * 8, dst = sbase + s * STAGE;
        const int k = (kt0 + kt) * BK;
        mbar_expect_tx(full, STAGE);
        tma_load_2d(dst, &args.a, k, row0, full);                                   // A big
        tma_load_2d(dst + A_BYTES, &args.a, k, p.M + row0, full);                   // A small
        tma_load_2d(dst + 2 * A_BYTES, &args.b, k, col0, full);                     // B big
        tma_load_2d(dst + 2 * A_BYTES + B_BYTES, &args.b, k, p.N + col0, full);     // B small
      }
    }
  } else {
    if constexpr (WG > 1) setmaxnreg_inc<232>();
    const int cw = wg - 1;
    const unsigned a_wg = unsigned(cw * WM) * LINE; // this warpgroup's first row within an A tile
    // acc: the FP32 sums; part: the tensor cores' sum of one chain of FOLD K tiles, started from
    // zero (scale-d = 0) and added to acc with FADD once its wgmma are done. Why: the tensor cores
    // do not add into their accumulator with FP32's round-to-nearest, and over a long K the
    // difference builds up (measured on an H100 with all of K in one chain: relative error 7e-6 at
    // K = 1024 and 1.4e-5 at K = 2048, growing with K, 10-25x cuBLAS SGEMM's; gemm_tf32x3's FOLD is
    // the same remedy for mma.sync). Waiting for a chain before adding it idles this warpgroup's
    // wgmma; with two consumer warpgroups the other one's keep the tensor cores busy meanwhile.
    // (Two chain sums, one added while the next one's wgmma run, made ptxas serialize every wgmma:
    // it cannot tell the sum being added from the one being written.)
    float acc[MT][BN / 2], part[MT][BN / 2];
#pragma unroll
    for (int m = 0; m < MT; ++m)
#pragma unroll
      for (int j = 0; j < BN / 2; ++j) acc[m][j] = 0.0f;
    auto fold = [&] {
#pragma unroll
      for (int m = 0; m < MT; ++m) {
        fence_regs(part[m]);
#pragma unroll
        for (int j = 0; j < BN / 2; ++j) acc[m][j] += part[m][j];
      }
    };
    // Stages are released in order, as soon as the wgmma reading them are known to be done (within
    // a chain after wait<1>: the tile before; at a chain's end after wait<0>: every tile so far).
    int released = 0;
    auto release_upto = [&](int done) {
      for (; released < done; ++released)
        if (tid % 128 == 0) mbar_arrive(empty0 + (released % ST) * 8);
    };

    // Waits for K tile kt's stage and issues its wgmma into the chain sum x (one commit group).
    auto issue = [&](float(&x)[MT][BN / 2], int kt, bool first) { // x: the chain sum
      const int s = kt % ST;
      mbar_wait(full0 + s * 8, (kt / ST) & 1);
      const unsigned sab = sbase + s * STAGE, sas = sab + A_BYTES, sbb = sab + 2 * A_BYTES, sbs = sbb + B_BYTES;
#pragma unroll
      for (int m = 0; m < MT; ++m) fence_regs(x[m]);
      wgmma_fence();
#pragma unroll
      for (int ks = 0; ks < BK / 8; ++ks) {
        const unsigned long long db_big = desc_swizzled<LINE>(sbb + ks * 32, 8192, SBO);
        const unsigned long long db_small = desc_swizzled<LINE>(sbs + ks * 32, 8192, SBO);
#pragma unroll
        for (int m = 0; m < MT; ++m) {
          const unsigned off = a_wg + m * 64 * LINE + ks * 32;
          const unsigned long long da_big = desc_swizzled<LINE>(sab + off, 8192, SBO);
          const unsigned long long da_small = desc_swizzled<LINE>(sas + off, 8192, SBO);
          // The small products first, then the big one: the terms meet the sum from the smallest up.
          tf32x3::mma<BN>(x[m], da_small, db_big, first && ks == 0 ? 0 : 1);
          tf32x3::mma<BN>(x[m], da_big, db_small, 1);
          tf32x3::mma<BN>(x[m], da_big, db_big, 1);
        }
      }
      wgmma_commit();
#pragma unroll
      for (int m = 0; m < MT; ++m) fence_regs(x[m]);
    };

    for (int kt = 0; kt < nk; ++kt) {
      issue(part, kt, kt % FOLD == 0);
      if (kt % FOLD == FOLD - 1 || kt == nk - 1) { // the chain's last K tile: add the chain's sum
        wgmma_wait<0>();
        release_upto(kt + 1);
        fold();
      } else {
        wgmma_wait<1>(); // K tile kt - 1's wgmma have read their stage: release it to the producer
        release_upto(kt);
      }
    }
#pragma unroll
    for (int m = 0; m < MT; ++m) fence_regs(acc[m]);
    if constexpr (SPLITK > 1) {
      store_partial<MT, BN>(p, acc, row0 + cw * WM, col0, tid & 127, int(blockIdx.z));
    } else {
      for_each_pair<MT, BN>(p, acc, row0 + cw * WM, col0, tid & 127,
                            [&](int r, int c, float v0, float v1) { tf32x3::store_pair(p, r, c, v0, v1); });
    }
  }
}
