// gemm_tc16: BF16 / FP16 GEMM on the tensor cores (mma.sync m16n8k16, FP32 accumulation), the
// first half-precision family (issue 15). C = alpha * A * B + beta * C with A, B and C in the
// problem's dtype and the sums in FP32.
//
// STATUS: the first version (row-major A and B, 16-byte aligned, K and N multiples of 8, SPLITK = 1,
// PACK = 0) was verified on an H100 by tests/kernels/tc16_gpu_test.cpp, both dtypes (errors equal
// to cuBLAS's). The later paths -- column-major A and B, packed operands (PACK = 1), split-K
// (SPLITK > 1, gemm_splitk_reduce16), element loads (CP16 = 0) and element stores of C -- are
// compiled by NVRTC for sm_80 and sm_90 in the CPU tests and covered by the same GPU test, but
// have NOT YET RUN ON A GPU.
//
// Template parameters (host code spells them as in the config JSON):
//   BM, BN, BK   block tile (rows of C, columns of C, K depth of one shared-memory stage)
//   WM, WN       warp tile: (WM / 16) x (WN / 8) m16n8 MMA tiles per warp, k16 steps
//   ST           stages in the shared-memory ring (ST - 1 tiles in flight)
//   SWZ          rasterization group (raster() in gemm_common.cuh)
//   SPLITK       K slices (blockIdx.z): FP32 partial sums into the workspace, added, scaled and
//                rounded to C by gemm_splitk_reduce16 (gemm_splitk16.cuh); 1: C written here
//   PACK         1: gemm_pack16 (gemm_pack16.cuh) first copies A and B into the workspace, 16-byte
//                aligned and zero-padded to whole tiles (K to BK * SPLITK), and this kernel loads
//                them with no bounds checks
//   CP16         from the problem (not tuned): 1 when every 16-byte chunk of A and B is aligned and
//                wholly inside or outside the operand (or PACK): loads are 16-byte cp.async,
//                zero-filled beyond M, N and K; 0: loads by element, bounds-checked, into registers
//                and then shared memory (any shape, leading dimension and alignment: the form that
//                serves problems whose packed copies would not fit the workspace)
//   F16          0: bf16 operands and C; 1: fp16 (from the problem's dtype)
//   A_COL, B_COL layouts from the problem: 1 = column-major
//
// Shared memory keeps each operand tile in its global storage order, rows padded by 8 halves
// (16 bytes), so that ldmatrix's eight 16-byte row reads of a warp fall in distinct bank groups:
// A row-major [BM][BK + 8], column-major [BK][BM + 8]; B row-major [BK][BN + 8], column-major
// [BN][BK + 8]. Fragments come from ldmatrix.x4: A row-major plain, A column-major .trans (its tile
// is K-major, the MMA wants A "row"); B row-major .trans, B column-major plain (the MMA wants B
// "col"). Fragment layouts: PTX ISA, "Matrix Fragments for mma.m16n8k16 with floating point type".
// C is written with bounds checks on rows and columns, in 32-bit pairs where the pair lies inside N
// and its address is 4-byte aligned, else by element: any N, ldc and alignment of C.
#include "gemm_half16.cuh"
#include "gemm_pack16.cuh"
#include "gemm_splitk16.cuh"

namespace ktune_dev {
namespace half16 {

template <int F16>
__device__ __forceinline__ void mma16816(float (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
  if constexpr (F16) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
                 "{%0, %1, %2, %3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  } else {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
                 "{%0, %1, %2, %3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
}

// One operand tile of a stage, in its global storage order: SR rows of SC contiguous halves (row
// stride LD = SC + 8), filled by NT threads a 16-byte chunk at a time. The tile's origin is
// storage row r0, column c0 of an operand of rows x cols halves (row stride ld).
//   MODE 0: cp.async, no bounds checks (packed operands: every chunk exists)
//   MODE 1: cp.async, a chunk zero-filled when outside (cols is a multiple of 8: no chunk straddles)
//   MODE 2: element loads, each bounds-checked, into registers, then one 16-byte shared store
template <int SR, int SC, int NT>
struct Tile {
  static constexpr int LD = SC + 8;
  static constexpr int SIZE = SR * LD;
  static constexpr int CPR = SC / 8;          // chunks per row
  static constexpr int CHUNKS = SR * CPR;
  static_assert(SC % 8 == 0 && CHUNKS % NT == 0, "whole 16-byte chunks, whole chunks per thread (descriptor)");

  template <int MODE>
  __device__ __forceinline__ static void load(unsigned short* s, const unsigned short* g, long long ld, int r0, int c0,
                                              int rows, int cols, int tid) {
    // The tile's origin, then each chunk at r * ld + cc from it (r * ld does not change from
    // stage to stage: the compiler keeps it).
    const unsigned short* const base = g + (long long)r0 * ld + c0;
#pragma unroll
    for (int i = 0; i < CHUNKS / NT; ++i) {
      const int c = tid + i * NT;
      const int r = c / CPR, cc = (c % CPR) * 8;
      const int gr = r0 + r, gc = c0 + cc;
      if constexpr (MODE == 0) {
        cp_async16(s + r * LD + cc, base + (long long)r * ld + cc, true);
      } else if constexpr (MODE == 1) {
        const bool ok = gr < rows && gc < cols;
        cp_async16(s + r * LD + cc, ok ? base + (long long)r * ld + cc : g, ok);
      } else {
        unsigned w[4] = {0u, 0u, 0u, 0u};
        if (gr < rows) {
          const unsigned short* const src = g + (long long)gr * ld + gc;
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            const unsigned lo = gc + 2 * e < cols ? src[2 * e] : 0u;
            const unsigned hi = gc + 2 * e + 1 < cols ? src[2 * e + 1] : 0u;
            w[e] = lo | hi << 16;
          }
        }
        *reinterpret_cast<uint4*>(s + r * LD + cc) = make_uint4(w[0], w[1], w[2], w[3]);
      }
    }
  }
};

} // namespace half16
} // namespace ktune_dev

template <int BM, int BN, int BK, int WM, int WN, int ST, int SWZ, int SPLITK, int PACK, int CP16, int F16, int A_COL,
          int B_COL>
__global__ void __launch_bounds__((BM / WM) * (BN / WN) * 32) gemm_tc16(KtuneGemmArgs args) {
  using namespace ktune_dev;
  using namespace ktune_dev::half16;
  static_assert(WM % 16 == 0 && WN % 16 == 0 && BK % 16 == 0, "MMA tiles are m16 x n8 (loaded in pairs) x k16");
  static_assert(!PACK || CP16, "packed operands are loaded 16 bytes at a time");
  if constexpr (SPLITK > 1) let_next_grid_launch(); // the reduction's blocks may queue behind ours
  const KtuneGemmArgs p =
      PACK ? half16::PackedLayout<BM, BN, BK * SPLITK, (SPLITK > 1 ? SPLITK : 0), A_COL, B_COL>(args).apply(args) : args;
  constexpr int MODE = PACK ? 0 : (CP16 ? 1 : 2);
  constexpr int WARPS_N = BN / WN;
  constexpr int THREADS = (BM / WM) * WARPS_N * 32;
  constexpr int MI = WM / 16, NI = WN / 8;
  // A is (m, k): row-major storage is BM rows of BK; column-major BK rows of BM. B likewise.
  using TileA = Tile<A_COL ? BK : BM, A_COL ? BM : BK, THREADS>;
  using TileB = Tile<B_COL ? BN : BK, B_COL ? BK : BN, THREADS>;

  extern __shared__ __align__(16) unsigned short smem[];
  unsigned short* const As = smem;
  unsigned short* const Bs = smem + ST * TileA::SIZE;

  const unsigned short* const A = reinterpret_cast<const unsigned short*>(p.A);
  const unsigned short* const B = reinterpret_cast<const unsigned short*>(p.B);

  const int tiles_m = (p.M + BM - 1) / BM, tiles_n = (p.N + BN - 1) / BN;
  int tm, tn;
  raster<SWZ>(blockIdx.x, tiles_m, tiles_n, tm, tn);
  const int row0 = tm * BM, col0 = tn * BN;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int wm = (warp / WARPS_N) * WM, wn = (warp % WARPS_N) * WN;

  // This block's K slice: `per` BK tiles from kt0 (the last slice may have fewer; the descriptor
  // makes every slice reach real K). Packed, K is a multiple of BK * SPLITK and slices are equal.
  // K = 0: nothing is loaded and C = beta * C.
  const int tiles_k = (p.K + BK - 1) / BK;
  const int per = (tiles_k + SPLITK - 1) / SPLITK;
  const int kt0 = SPLITK > 1 ? int(blockIdx.z) * per : 0;
  const int nk = max(0, min(per, tiles_k - kt0));

  auto load_stage = [&](int s, int kt) {
    const int k0 = (kt0 + kt) * BK;
    TileA::template load<MODE>(As + s * TileA::SIZE, A, p.lda, A_COL ? k0 : row0, A_COL ? row0 : k0, A_COL ? p.K : p.M,
                               A_COL ? p.M : p.K, tid);
    TileB::template load<MODE>(Bs + s * TileB::SIZE, B, p.ldb, B_COL ? col0 : k0, B_COL ? k0 : col0, B_COL ? p.N : p.K,
                               B_COL ? p.K : p.N, tid);
  };

  float acc[MI][NI][4];
#pragma unroll
  for (int i = 0; i < MI; ++i)
#pragma unroll
    for (int j = 0; j < NI; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.0f;

  // Prologue: ST - 1 stages in flight (empty commit groups past the end keep the count uniform;
  // with MODE 2 the groups are empty and the stores are plain).
#pragma unroll
  for (int s = 0; s < ST - 1; ++s) {
    if (s < nk) load_stage(s, s);
    cp_async_commit();
  }

  for (int kt = 0; kt < nk; ++kt) {
    cp_async_wait<ST - 2>(); // this thread's copies of stage kt have landed
    __syncthreads();         // ...and everyone's; stage kt - 1 is free to refill
    const int next = kt + ST - 1;
    if (next < nk) load_stage(next % ST, next);
    cp_async_commit();

    const unsigned short* const as = As + (kt % ST) * TileA::SIZE;
    const unsigned short* const bs = Bs + (kt % ST) * TileB::SIZE;
#pragma unroll
    for (int kk = 0; kk < BK; kk += 16) {
      unsigned a[MI][4];
#pragma unroll
      for (int i = 0; i < MI; ++i) {
        if constexpr (!A_COL) {
          // Lanes 0-15 address rows 0-15 at k 0-7, lanes 16-31 the same rows at k 8-15: registers
          // 0-3 are then a0 (rows 0-7, k 0-7), a1 (rows 8-15), a2 (k 8-15), a3.
          ldmatrix_x4(a[i], as + (wm + i * 16 + (lane & 15)) * TileA::LD + kk + (lane >> 4) * 8);
        } else {
          // K-major tile: lanes 8q..8q+7 address k rows of matrix q = (m half q & 1, k half q >> 1);
          // transposed, each register holds the same (row, k pair) as in the row-major case.
          const int q = lane >> 3;
          ldmatrix_x4_trans(a[i], as + (kk + (q >> 1) * 8 + (lane & 7)) * TileA::LD + wm + i * 16 + (q & 1) * 8);
        }
      }
      unsigned b[NI][2];
#pragma unroll
      for (int j = 0; j < NI; j += 2) {
        unsigned r[4];
        if constexpr (!B_COL) {
          // Lanes 0-15 address k rows 0-15 of columns n..n+7, lanes 16-31 those of n+8..n+15:
          // transposed, registers 0-1 are b0, b1 of the first n8 tile, 2-3 of the second.
          ldmatrix_x4_trans(r, bs + (kk + (lane & 15)) * TileB::LD + wn + j * 8 + (lane >> 4) * 8);
        } else {
          // N-major tile (rows n, k contiguous): lanes 8q..8q+7 address n rows of matrix q =
          // (k half q & 1, n half q >> 1); untransposed, a lane holds (n = g, k = 2t, 2t + 1).
          const int q = lane >> 3;
          ldmatrix_x4(r, bs + (wn + j * 8 + (q >> 1) * 8 + (lane & 7)) * TileB::LD + kk + (q & 1) * 8);
        }
        b[j][0] = r[0], b[j][1] = r[1], b[j + 1][0] = r[2], b[j + 1][1] = r[3];
      }
#pragma unroll
      for (int i = 0; i < MI; ++i)
#pragma unroll
        for (int j = 0; j < NI; ++j) mma16816<F16>(acc[i][j], a[i], b[j][0], b[j][1]);
    }
  }
  cp_async_wait<0>(); // nothing may be in flight into shared memory when the block exits

  // Epilogue: lane (g, t) = (lane / 4, lane % 4) holds rows g and g + 8 of each m16 tile, columns
  // 2t and 2t + 1 of each n8 tile. Split-K: the raw FP32 pair into this slice of the workspace
  // (ws_ld is a multiple of 4 and the column even, so the pair is 8-byte aligned and inside the
  // row even where column 2t + 1 is beyond N). Else C = alpha * acc + beta * C in C's dtype: one
  // 32-bit word where both columns are inside N and the word is aligned, else by element.
  const int g = lane >> 2, t = lane & 3;
#pragma unroll
  for (int i = 0; i < MI; ++i)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int r = row0 + wm + i * 16 + g + h * 8;
      if (r >= p.M) continue;
#pragma unroll
      for (int j = 0; j < NI; ++j) {
        const int c = col0 + wn + j * 8 + 2 * t;
        if (c >= p.N) continue;
        const float v0 = acc[i][j][2 * h], v1 = acc[i][j][2 * h + 1];
        if constexpr (SPLITK > 1) {
          float* const w = p.workspace + blockIdx.z * (long long)p.M * p.ws_ld + (long long)r * p.ws_ld + c;
          *reinterpret_cast<float2*>(w) = make_float2(v0, v1);
        } else {
          unsigned short* const dst = reinterpret_cast<unsigned short*>(p.C) + (long long)r * p.ldc + c;
          if (c + 1 < p.N && reinterpret_cast<unsigned long long>(dst) % 4 == 0) {
            unsigned* const d2 = reinterpret_cast<unsigned*>(dst);
            float o0 = p.alpha * v0, o1 = p.alpha * v1;
            if (p.beta != 0.0f) { // beta == 0 never reads C
              const unsigned old = *d2;
              o0 += p.beta * to_float<F16>(static_cast<unsigned short>(old & 0xffffu));
              o1 += p.beta * to_float<F16>(static_cast<unsigned short>(old >> 16));
            }
            *d2 = pack2<F16>(o0, o1);
          } else {
            store1<F16>(dst, v0, p.alpha, p.beta);
            if (c + 1 < p.N) store1<F16>(dst + 1, v1, p.alpha, p.beta);
          }
        }
      }
    }
}
