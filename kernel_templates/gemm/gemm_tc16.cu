// gemm_tc16: BF16 / FP16 GEMM on the tensor cores (mma.sync m16n8k16, FP32 accumulation), the
// first half-precision family. C = alpha * A * B + beta * C with A, B and C in the
// problem's dtype and the sums in FP32.
//
// Verification: every path (row- and column-major A and B, packed operands, split-K, element loads
// and stores, and every SMEM x LDM x CPA combination of the ladder) passes
// tests/kernels/tc16_gpu_test.cpp on an H100, within the error rule cuBLAS is held to.
//
// Main loop design (SASS-counted, then measured on the H100). A straightforward main loop on sm_90
// (4096^3 bf16 default 331 TFLOPS vs cuBLAS 787, 0.42x) is bound by instruction issue: Nsight put
// it at 240 registers, 8 warps/SM, tensor pipe 57 %, ~2.1 of 4.76 cycles per issued instruction
// "stall wait" on integer/address arithmetic, ~4.2 issued instructions per MMA (CUTLASS sm80-style
// mainloops: ~1.3-1.6). So the loop keeps everything but the MMAs and their loads out of it:
//  1. Addresses out of the K loop: each thread's cp.async chunks lie in one column and rows RS
//     apart (Tile), so chunk i's shared address is a compile-time offset from chunk 0's and its
//     global address a chained 64-bit add; the global pointer moves by a constant per K tile
//     (Loader). ldmatrix addresses are one 32-bit shared address per operand plus compile-time
//     offsets per (i, j, k16 step) plus the stage's byte offset. A stage holds A's tile then B's,
//     so one offset serves both; the ring index is increment-and-wrap, the write stage is the
//     previous read stage. No divisions or modulos in the loop.
//  2. Bounds checks only where needed: the main loop is emitted twice, a copy with unconditional
//     cp.async for the tiles wholly inside A and B (every tile when PACK = 1; in MODE 1 every
//     tile ending within K of a block inside M and N) and a checked copy (zero fill) for the rest.
//     Not a per-tile runtime branch: ptxas if-converts it and issues both paths under predicates
//     (~100 instructions per tile).
//  3. ldmatrix fragments double-buffered in registers across the k16 steps and across the stage
//     boundary (the last step waits and passes the barrier before loading the next stage's first
//     fragments, as CUTLASS's multistage mainloop): ldmatrix latency hides behind the MMAs.
//  4. MMAs in serpentine order over j (consecutive MMAs share a fragment). __launch_bounds__ asks
//     for 128-thread blocks: they get 2 blocks/SM at <= 255 registers, and 256-thread blocks would
//     need <= 128 registers for a second block (spills with 64x64 warp tiles).
//  SASS (nvcc 13.0 -arch=sm_90, bf16 NN, aligned MODE 1, instructions in the fast main loop per
//  MMA, against the loop without 1-4): 128x128 w64x64 bk32 st4 1.92 against 3.59 (123 against 230
//  per 64 MMAs; 234 registers against 238, no spills); 128x256 w64x64 bk32 st3 1.81 against 3.75
//  (116 against 240; 230 registers against 226). What is left per 64 MMAs: 16 ldmatrix, 6-8
//  cp.async with 2 integer adds each (64-bit, runtime ld), the barrier, cp.async group bookkeeping
//  and the ring/loop counters.
//  5. gemm_pack16 reads 16, 8 or 4 bytes at a time as the source row's alignment allows.
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
//   LDM          1: fragments loaded with ldmatrix.x4; 0: each fragment register read by its own lane
//                (one 32-bit or two 16-bit shared loads), the ladder's naive tensor-core rung
//   LAY          shared-memory rows (config key SMEM): 0 plain, 1 padded by 8 halves, 2 XOR-swizzled
//                16-byte chunks (Tile below says why each is or is not free of bank conflicts)
//   CPA          1: 16-byte cp.async into the stage ring; 0: the same 16-byte loads into registers,
//                then stored to shared memory (the warp waits for them; ST = 2 in the descriptor)
//   CP16         from the problem (not tuned): 1 when every 16-byte chunk of A and B is aligned and
//                wholly inside or outside the operand (or PACK): loads are 16-byte cp.async,
//                zero-filled beyond M, N and K; 0: loads by element, bounds-checked, into registers
//                and then shared memory (any shape, leading dimension and alignment: the form that
//                serves problems whose packed copies would not fit the workspace)
//   F16          0: bf16 operands and C; 1: fp16 (from the problem's dtype)
//   A_COL, B_COL layouts from the problem: 1 = column-major
//
// Shared memory: ST stages, each A's tile then B's, each tile in its global storage order (A
// row-major [BM][BK], column-major [BK][BM]; B row-major [BK][BN], column-major [BN][BK]), rows
// padded by 8 halves (LAY 1) or chunk-swizzled (LAY 2) so that ldmatrix's eight 16-byte row
// reads of a warp fall in distinct bank groups, or plain (LAY 0). Fragments come from ldmatrix.x4: A row-major plain, A column-major .trans (its tile
// is K-major, the MMA wants A "row"); B row-major .trans, B column-major plain (the MMA wants B
// "col"). Fragment layouts: PTX ISA, "Matrix Fragments for mma.m16n8k16 with floating point type".
// C is written with bounds checks on rows and columns, in 32-bit pairs where the pair lies inside N
// and its address is 4-byte aligned, else by element: any N, ldc and alignment of C.
#include "gemm_half16.cuh"
#include "gemm_pack16.cuh"
#include "gemm_splitk16.cuh"

namespace ktune_dev {
namespace half16 {

// One operand tile of a stage, in its global storage order: SR rows of SC contiguous halves,
// filled by NT threads a 16-byte chunk at a time. NT is a multiple of the chunks per row (both
// powers of two, NT >= 64, CPR <= 32), so thread t's chunks all lie in one column cc = (t % CPR)
// * 8, in rows r = t / CPR + i * RS (RS = NT / CPR): chunk i's global address is chunk 0's plus
// i * RS * ld (one 64-bit add each, chained). KROW: K runs along the storage rows (A
// column-major, B row-major), else along the columns.
//
// LAY, the rows in shared memory (a tuning choice; the ladder shows all three):
//   0  unpadded (row stride SC): ldmatrix's eight 16-byte row reads of a phase hit the same bank
//      group (rows of 64-512 bytes), an 8-way conflict wherever SC * 2 is a multiple of 128
//   1  padded by 8 halves (row stride SC + 8): consecutive rows start 16 bytes apart in the bank
//      pattern, so the eight reads fall in distinct bank groups; costs 16 bytes a row
//   2  unpadded, 16-byte chunk c of row r stored at chunk c ^ f(r): f(r) takes the eight values
//      0..7 over any eight consecutive rows of one 128-byte bank pattern, so the eight reads are
//      again conflict-free with no padding (CPR >= 8: f = r % 8; CPR = 4, two rows a 128-byte
//      line: f = (r / 2) % 4, the line's half separating the rest). f has period 8, so offsets of
//      whole 16-row MMA tiles along the rows never change it.
template <int SR, int SC, int NT, int LAY>
struct Tile {
  static constexpr int ROWS = SR, COLS = SC;
  static constexpr int LD = SC + (LAY == 1 ? 8 : 0);
  static constexpr bool SWIZZLED = LAY == 2;
  static constexpr int SIZE = SR * LD;
  static constexpr int CPR = SC / 8;          // chunks per row
  static constexpr int CHUNKS = SR * CPR;
  static constexpr int PER = CHUNKS / NT;     // chunks per thread
  static constexpr int RS = NT / CPR;         // rows between a thread's chunks
  static_assert(SC % 8 == 0 && CHUNKS % NT == 0 && NT % CPR == 0, "whole 16-byte chunks, whole chunks per thread (descriptor)");
  static_assert(LAY != 2 || CPR >= 4, "the swizzle's bank spread needs rows of >= 64 bytes");

  __device__ __forceinline__ static int swz(int r) { return CPR >= 8 ? (r & 7) : ((r >> 1) & (CPR - 1)); }
  // Byte offset in the tile of storage row r, column c (c even: a 32-bit pair stays in its chunk).
  __device__ __forceinline__ static unsigned byte_off(int r, int c) {
    if constexpr (SWIZZLED) return unsigned(r * LD * 2 + ((((c >> 3) ^ swz(r)) << 4) | ((c & 7) << 1)));
    else return unsigned((r * LD + c) * 2);
  }

  // MODE 2 (element loads, CP16 = 0): each chunk bounds-checked by element into registers, then
  // one 16-byte shared store. The slow general form; the origin is storage row r0, column c0 of
  // an operand of rows x cols halves (row stride ld).
  __device__ __forceinline__ static void load_elements(unsigned short* s, const unsigned short* g, long long ld, int r0,
                                                       int c0, int rows, int cols, int tid) {
#pragma unroll
    for (int i = 0; i < PER; ++i) {
      const int c = tid + i * NT;
      const int r = c / CPR, cc = (c % CPR) * 8;
      const int gr = r0 + r, gc = c0 + cc;
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
      *reinterpret_cast<uint4*>(reinterpret_cast<char*>(s) + byte_off(r, cc)) = make_uint4(w[0], w[1], w[2], w[3]);
    }
  }
};

// 16 bytes from global to shared memory (a 32-bit shared address); zero-filled when !valid.
__device__ __forceinline__ void cp_async16_s(unsigned dst, const void* src) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(src));
}
__device__ __forceinline__ void cp_async16_zfill(unsigned dst, const void* src, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(valid ? 16 : 0));
}

// 16 bytes through registers (CPA = 0): a plain global load, zero where !valid (src not read).
__device__ __forceinline__ uint4 ld_global16(const void* src, bool valid) {
  return valid ? *reinterpret_cast<const uint4*>(src) : make_uint4(0u, 0u, 0u, 0u);
}
__device__ __forceinline__ void st_shared16(unsigned dst, uint4 v) {
  asm volatile("st.shared.v4.b32 [%0], {%1, %2, %3, %4};\n" ::"r"(dst), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w));
}

// The loader of one operand (MODE 0: packed, MODE 1: 16-byte chunks, zero-filled outside): all
// address arithmetic done once. `g` points at the thread's chunk 0 of the next K tile to load
// and moves by `kstep` bytes a tile; `rs` is the bytes between its chunks (RS rows). The checked
// form (edge tiles of MODE 1 only) knows the thread's coordinates: storage row rt and column ct
// within the tile, the operand's extent along the non-K dimension left from the tile's origin
// (`ext`) and the K coordinate of the next tile's origin (`k0`, K extent `kdim`).
// CPA = 1: cp.async (the copies land while the warp computes); 0: every chunk loaded into
// registers, then stored to shared memory, so the warp waits for global memory at the store
// (the ladder's rung before the asynchronous pipeline).
template <class T, int KROW, int CPA>
struct Loader {
  const char* g;
  long long rs, kstep;
  int rt, ct, ext, k0, kdim;
  unsigned d0; // byte offset of chunk 0 in the tile

  __device__ __forceinline__ void init(const unsigned short* base, long long ld, int r0, int c0, int tid, int ext_,
                                       int k0_, int kdim_) {
    rt = tid / T::CPR, ct = (tid % T::CPR) * 8;
    g = reinterpret_cast<const char*>(base + (long long)(r0 + rt) * ld + (c0 + ct));
    rs = (long long)T::RS * ld * 2;
    kstep = KROW ? (long long)ld * (2 * (long long)T::ROWS) : 2 * T::COLS; // BK rows, or BK columns
    ext = ext_, k0 = k0_, kdim = kdim_;
    d0 = T::byte_off(rt, ct);
  }
  // Byte offset of chunk i in the tile: a compile-time step from chunk 0's unless the swizzle
  // pattern (period 8 rows) changes between a thread's chunks (RS not a multiple of 8).
  __device__ __forceinline__ unsigned dst(int i) const {
    if constexpr (!T::SWIZZLED || T::RS % 8 == 0) return d0 + i * T::RS * T::LD * 2;
    else return T::byte_off(rt + i * T::RS, ct);
  }
  // Every chunk inside: unconditional copies (s: the tile's shared address in the target stage).
  __device__ __forceinline__ void fast(unsigned s) {
    const char* p = g;
    if constexpr (CPA) {
#pragma unroll
      for (int i = 0; i < T::PER; ++i) {
        cp_async16_s(s + dst(i), p);
        if (i + 1 < T::PER) p += rs;
      }
    } else {
      uint4 v[T::PER];
#pragma unroll
      for (int i = 0; i < T::PER; ++i) {
        v[i] = ld_global16(p, true);
        if (i + 1 < T::PER) p += rs;
      }
#pragma unroll
      for (int i = 0; i < T::PER; ++i) st_shared16(s + dst(i), v[i]);
    }
  }
  // Edge tile: each chunk checked (non-K coordinate against ext, K against kdim - k0); outside
  // chunks are zero-filled and read nothing (their source is the operand's base, `safe`).
  __device__ __forceinline__ void checked(unsigned s, const void* safe) {
    const int krem = kdim - k0;
    const char* p = g;
    uint4 v[CPA ? 1 : T::PER];
#pragma unroll
    for (int i = 0; i < T::PER; ++i) {
      const int r = rt + i * T::RS;
      const bool ok = KROW ? (ct < ext && r < krem) : (r < ext && ct < krem);
      if constexpr (CPA) cp_async16_zfill(s + dst(i), ok ? static_cast<const void*>(p) : safe, ok);
      else v[i] = ld_global16(p, ok);
      if (i + 1 < T::PER) p += rs;
    }
    if constexpr (!CPA) {
#pragma unroll
      for (int i = 0; i < T::PER; ++i) st_shared16(s + dst(i), v[i]);
    }
  }
  // Whether the next tile lies wholly inside the operand (then fast() serves it).
  __device__ __forceinline__ bool full() const {
    return KROW ? (ext >= T::COLS && kdim - k0 >= T::ROWS) : (ext >= T::ROWS && kdim - k0 >= T::COLS);
  }
  __device__ __forceinline__ void advance() { g += kstep, k0 += KROW ? T::ROWS : T::COLS; }
};

} // namespace half16
} // namespace ktune_dev

template <int BM, int BN, int BK, int WM, int WN, int ST, int SWZ, int SPLITK, int PACK, int LDM, int LAY, int CPA,
          int CP16, int F16, int A_COL, int B_COL>
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
  constexpr int MI = WM / 16, NI = WN / 8, KS = BK / 16;
  // A is (m, k): row-major storage is BM rows of BK; column-major BK rows of BM. B likewise.
  using TileA = Tile<A_COL ? BK : BM, A_COL ? BM : BK, THREADS, LAY>;
  using TileB = Tile<B_COL ? BN : BK, B_COL ? BK : BN, THREADS, LAY>;
  // A stage is A's tile then B's (bytes); the ring is ST stages.
  constexpr unsigned A_BYTES = TileA::SIZE * 2, STAGE = (TileA::SIZE + TileB::SIZE) * 2, RING = ST * STAGE;

  extern __shared__ __align__(16) unsigned short smem[];
  const unsigned sbase = smem_u32(smem);

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
  const int kbeg = kt0 * BK;

  // cp.async loaders (MODE 0 and 1): every address computed here, once.
  Loader<TileA, A_COL, CPA> la;
  Loader<TileB, !B_COL, CPA> lb;
  if constexpr (MODE != 2) {
    la.init(A, p.lda, A_COL ? kbeg : row0, A_COL ? row0 : kbeg, tid, p.M - row0, kbeg, p.K);
    lb.init(B, p.ldb, B_COL ? col0 : kbeg, B_COL ? kbeg : col0, tid, p.N - col0, kbeg, p.K);
  }
  const unsigned tile_a = sbase, tile_b = sbase + A_BYTES; // the tiles of stage 0 (loads and fragments)
  int kload = kbeg; // MODE 2: K origin of the next tile to load

  // One K tile into the stage at byte offset `so`, then the loaders move to the next tile.
  // (check is a literal at every call: the inlined lambdas fold it.) check = 0: the caller knows the tile is wholly inside both operands (unconditional copies);
  // 1: each operand's tile is tested and, where it reaches past M, N or K, copied chunk by
  // chunk with zero fill.
  auto load_stage = [&](unsigned so, bool check) {
    if constexpr (MODE == 2) {
      unsigned short* const sa = smem + so / 2;
      unsigned short* const sb = smem + (so + A_BYTES) / 2;
      TileA::load_elements(sa, A, p.lda, A_COL ? kload : row0, A_COL ? row0 : kload, A_COL ? p.K : p.M,
                           A_COL ? p.M : p.K, tid);
      TileB::load_elements(sb, B, p.ldb, B_COL ? col0 : kload, B_COL ? kload : col0, B_COL ? p.N : p.K,
                           B_COL ? p.K : p.N, tid);
      kload += BK;
    } else {
      if (MODE == 0 || !check || la.full()) la.fast(tile_a + so);
      else la.checked(tile_a + so, A);
      if (MODE == 0 || !check || lb.full()) lb.fast(tile_b + so);
      else lb.checked(tile_b + so, B);
      la.advance(), lb.advance();
    }
  };

  // This lane's fragment coordinates in each tile (storage row, column; stage 0, k step 0):
  // the MMA tile i / pair of n8 tiles j and the k step ks move them by whole 16-row or 16-column
  // steps (DR_*, DC_*), so with LAY 0 and 1 every address is one per-lane value plus
  // compile-time offsets, and with the swizzle (LAY 2) the row part is, and the 16-byte chunk
  // index is XORed with the lane's row pattern (16-row steps keep it).
  int ra, ca, rb, cb;
  if constexpr (!A_COL) {
    // Lanes 0-15 address rows 0-15 at k 0-7, lanes 16-31 the same rows at k 8-15: registers 0-3
    // are then a0 (rows 0-7, k 0-7), a1 (rows 8-15), a2 (k 8-15), a3.
    ra = wm + (lane & 15), ca = (lane >> 4) * 8;
  } else {
    // K-major tile: lanes 8q..8q+7 address k rows of matrix q = (m half q & 1, k half q >> 1);
    // transposed, each register holds the same (row, k pair) as in the row-major case.
    const int q = lane >> 3;
    ra = (q >> 1) * 8 + (lane & 7), ca = wm + (q & 1) * 8;
  }
  if constexpr (!B_COL) {
    // Lanes 0-15 address k rows 0-15 of columns n..n+7, lanes 16-31 those of n+8..n+15:
    // transposed, registers 0-1 are b0, b1 of the first n8 tile, 2-3 of the second.
    rb = lane & 15, cb = wn + (lane >> 4) * 8;
  } else {
    // N-major tile (rows n, k contiguous): lanes 8q..8q+7 address n rows of matrix q =
    // (k half q & 1, n half q >> 1); untransposed, a lane holds (n = g, k = 2t, 2t + 1).
    const int q = lane >> 3;
    rb = wn + (q >> 1) * 8 + (lane & 7), cb = (q & 1) * 8;
  }
  // (rows, columns) moved by one m16 tile (i), one k16 step (ks), one pair of n8 tiles (j / 2).
  constexpr int DR_AI = A_COL ? 0 : 16, DC_AI = A_COL ? 16 : 0, DR_AK = A_COL ? 16 : 0, DC_AK = A_COL ? 0 : 16;
  constexpr int DR_BJ = B_COL ? 16 : 0, DC_BJ = B_COL ? 0 : 16, DR_BK = B_COL ? 0 : 16, DC_BK = B_COL ? 16 : 0;

  // Fragments, double-buffered across k16 steps (and across the stage boundary): step ks + 1's
  // loads are issued before step ks's MMAs, so their latency hides behind the MMAs.
  // LDM = 1: ldmatrix.x4, one instruction a 16 x 16 fragment of A or two n8 fragments of B.
  // LDM = 0 (the ladder's naive rung): each fragment register read from shared memory by the lane
  // that holds it, as the PTX ISA's fragment layout of mma.m16n8k16 places it: lane (g, t) =
  // (lane / 4, lane % 4) holds A's (row g [+8], k 2t [+8], +1) and B's (k 2t [+8], +1; column g);
  // a pair contiguous in the tile is one 32-bit load, else two 16-bit loads.
  const int g8 = lane >> 2, t4 = lane & 3;
  auto lds32 = [&](unsigned addr) {
    unsigned v;
    asm volatile("ld.shared.b32 %0, [%1];\n" : "=r"(v) : "r"(addr));
    return v;
  };
  auto lds16x2 = [&](unsigned lo, unsigned hi) {
    unsigned short a, b;
    asm volatile("ld.shared.u16 %0, [%1];\n" : "=h"(a) : "r"(lo));
    asm volatile("ld.shared.u16 %0, [%1];\n" : "=h"(b) : "r"(hi));
    return unsigned(a) | unsigned(b) << 16;
  };
  unsigned fa[2][MI][4], fb[2][NI][2];
  auto load_frags = [&](int buf, unsigned so, int ks) {
    if constexpr (LDM) {
#pragma unroll
      for (int i = 0; i < MI; ++i) {
        const unsigned addr = tile_a + so + TileA::byte_off(ra + i * DR_AI + ks * DR_AK, ca + i * DC_AI + ks * DC_AK);
        if constexpr (!A_COL) ldmatrix_x4_s(fa[buf][i], addr);
        else ldmatrix_x4_trans_s(fa[buf][i], addr);
      }
#pragma unroll
      for (int j = 0; j < NI; j += 2) {
        unsigned r[4];
        const unsigned addr =
            tile_b + so + TileB::byte_off(rb + (j / 2) * DR_BJ + ks * DR_BK, cb + (j / 2) * DC_BJ + ks * DC_BK);
        if constexpr (!B_COL) ldmatrix_x4_trans_s(r, addr);
        else ldmatrix_x4_s(r, addr);
        fb[buf][j][0] = r[0], fb[buf][j][1] = r[1], fb[buf][j + 1][0] = r[2], fb[buf][j + 1][1] = r[3];
      }
    } else {
#pragma unroll
      for (int i = 0; i < MI; ++i)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int m = wm + i * 16 + g8 + (e & 1) * 8, k = ks * 16 + 2 * t4 + (e >> 1) * 8;
          if constexpr (!A_COL) fa[buf][i][e] = lds32(tile_a + so + TileA::byte_off(m, k));
          else fa[buf][i][e] = lds16x2(tile_a + so + TileA::byte_off(k, m), tile_a + so + TileA::byte_off(k + 1, m));
        }
#pragma unroll
      for (int j = 0; j < NI; ++j)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const int n = wn + j * 8 + g8, k = ks * 16 + 2 * t4 + e * 8;
          if constexpr (B_COL) fb[buf][j][e] = lds32(tile_b + so + TileB::byte_off(n, k));
          else fb[buf][j][e] = lds16x2(tile_b + so + TileB::byte_off(k, n), tile_b + so + TileB::byte_off(k + 1, n));
        }
    }
  };

  float acc[MI][NI][4];
#pragma unroll
  for (int i = 0; i < MI; ++i)
#pragma unroll
    for (int j = 0; j < NI; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.0f;

  // Prologue: ST - 1 stages in flight (empty commit groups past the end keep the count uniform;
  // with MODE 2 the groups are empty and the stores are plain), then stage 0 landed and its
  // first fragments loaded.
#pragma unroll
  for (int s = 0; s < ST - 1; ++s) {
    if (s < nk) load_stage(s * STAGE, true);
    cp_async_commit();
  }
  cp_async_wait<ST - 2>();
  __syncthreads();
  unsigned rd = 0, wr = (ST - 1) * STAGE; // stage of tile kt; the free one (tile kt - 1's)
  load_frags(0, rd, 0);

  // Main loop: no divisions, no bounds checks on interior tiles, addresses all precomputed.
  // Tile kt + ST - 1 goes into the stage freed by tile kt - 1 (every warp has read it: the
  // barrier at the end of step kt - 1 follows its last ldmatrix). The last k16 step waits for
  // tile kt + 1, passes the barrier and loads its first fragments before its own MMAs.
  // Two copies of the loop: the first (check = 0) runs while the tile being loaded lies wholly
  // inside A and B (every tile when packed; none in a block on the M or N edge), with
  // unconditional cp.async; the second (check = 1) the rest (the last tiles: partial K tiles, or nothing left
  // to load), with the bounds tests. A runtime-uniform test per tile would be if-converted by
  // ptxas into both paths issued under predicates (~100 instructions per tile, measured in SASS).
  int left = nk - (ST - 1); // tiles still to load
  auto step = [&](bool check) {
#pragma unroll
    for (int ks = 0; ks < KS; ++ks) {
      if (ks == 0) {
        if (!check || left > 0) load_stage(wr, check);
        cp_async_commit();
        --left;
      }
      if (ks == KS - 1) {
        cp_async_wait<ST - 2>(); // this thread's copies of tile kt + 1 have landed
        __syncthreads();         // ...and everyone's; tile kt's stage is free after this
        wr = rd;
        rd = rd + STAGE == RING ? 0u : rd + STAGE;
      }
      load_frags((ks + 1) & 1, rd, (ks + 1) % KS);
      // Serpentine over j: consecutive MMAs share an A or B fragment.
#pragma unroll
      for (int i = 0; i < MI; ++i)
#pragma unroll
        for (int jj = 0; jj < NI; ++jj) {
          const int j = (i & 1) ? NI - 1 - jj : jj;
          mma16816<F16>(acc[i][j], fa[ks & 1][i], fb[ks & 1][j][0], fb[ks & 1][j][1]);
        }
    }
  };
  // Iterations whose load is wholly inside: packed, all that load; else only in blocks inside M
  // and N, those loading tiles that end within K.
  int fast = 0;
  if constexpr (MODE == 0) {
    fast = max(0, left);
  } else if constexpr (MODE == 1) {
    const int whole_k = p.K / BK - kt0; // tiles of this slice that end within K
    if (row0 + BM <= p.M && col0 + BN <= p.N) fast = max(0, min(nk, whole_k) - (ST - 1));
  }
  int kt = 0;
  for (; kt < fast; ++kt) step(false);
  for (; kt < nk; ++kt) step(true);
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
          store_pair<F16>(p, r, c, v0, v1);
        }
      }
    }
}
