// gemm_simt: the FP32 CUDA-core GEMM family. Every rung of the SGEMM optimisation ladder is a
// parameter value, so the tuner can walk the ladder instead of us hand-picking one kernel.
//
// Template parameters (host code spells them as in the config JSON):
//   BM, BN, BK   block tile: rows of C, columns of C, depth of K per shared-memory stage
//   WM, WN       warp tile; the block has (BM/WM) x (BN/WN) warps
//   TM, TN       thread tile (TN = 1 or TM = 1 is the classic 1D thread tile)
//   LN           lanes of a warp along N (LM = 32 / LN along M); each lane steps over the warp
//                tile WMI x WNI times, so with LN * TN < WN a lane holds WNI separate TN-wide
//                sub-tiles. Sub-tiles keep a quarter-warp's vector reads of shared memory on
//                distinct banks: e.g. 8 x 8 per thread as 2 x 2 sub-tiles of 4 x 4 (LN = 8)
//                reads 8 consecutive float4 where one contiguous 8 x 8 tile would read every
//                other float4 and conflict 2-way
//   VEC          global-memory vector width in floats (1, 2, 4)
//   AT           A kept k-major ("transposed") in shared memory, so a thread reads TM rows of A
//                with one vector load instead of TM scalar loads
//   PAD          floats of padding per shared-memory row, against bank conflicts
//   PIPE         0: single buffer; 1: register-staged double buffer; >= 2: cp.async stages
//   SPLITK       K is cut into SPLITK slices (blockIdx.z); partial sums go to a workspace and
//                gemm_splitk_reduce adds them in a fixed order (deterministic)
//   SWZ          rasterization group: SWZ block-rows walk the N tiles together (L2 reuse)
//   EVEN         no bounds checks; only valid when the tiles divide M, N and K/SPLITK
//   PACK         gemm_pack (gemm_pack.cuh) first copies A and B into the workspace, aligned and
//                zero-padded to whole tiles: vector loads and no bounds checks in the main loop
//                for any shape or alignment (C keeps its own, possibly scalar, stores)
//   A_COL, B_COL layouts from the problem: 1 = column-major (transposed, "T")
#include "gemm_common.cuh"
#include "gemm_pack.cuh"
#include "gemm_splitk.cuh"

namespace ktune_dev {

// One operand tile as it lies in global memory: SR storage rows of SC contiguous floats,
// moved VEC floats at a time by NT threads. SMEM_T stores element (r, c) at smem[c * SLD + r]
// instead of smem[r * SLD + c] (a transpose on the way into shared memory).
template <int SR, int SC, int VEC, int NT, int SLD, bool SMEM_T, bool EVEN>
struct TileMover {
  static constexpr int VPR = SC / VEC;
  static constexpr int NV = SR * VPR;
  static constexpr int ITERS = (NV + NT - 1) / NT;
  static constexpr bool PARTIAL = NV % NT != 0; // some threads idle in the last pass

  float reg[ITERS][VEC];

  __device__ __forceinline__ static int sidx(int r, int c) { return SMEM_T ? c * SLD + r : r * SLD + c; }

  // Which element vector v (of NV) moves: storage row r, first column c. The plain order runs
  // along storage rows (VPR vectors each). A transposing store wants a warp's lanes on distinct
  // banks, which that order defeats: lanes on the same row but different columns land SLD apart,
  // on one bank when SLD is a multiple of 32. So transposed tiles give each warp CPW column
  // vectors (one 32-byte sector) of R = 32 / CPW rows: with PAD = 4 (SLD = 4 mod 32) the lanes
  // of a store fall on 32 distinct banks, and every global sector read is still used whole.
  static constexpr int CPW = 8 / VEC;  // column vectors per 32-byte sector
  static constexpr int RPW = 32 / CPW; // rows a warp covers
  static constexpr bool SECTORED = SMEM_T && NT % 32 == 0 && SR % RPW == 0 && VPR % CPW == 0;
  __device__ __forceinline__ static void coords(int v, int& r, int& c) {
    if constexpr (SECTORED) {
      const int lane = v % 32, q = v / 32;
      r = (q % (SR / RPW)) * RPW + lane / CPW;
      c = ((q / (SR / RPW)) * CPW + lane % CPW) * VEC;
    } else {
      r = v / VPR, c = (v % VPR) * VEC;
    }
  }

  __device__ __forceinline__ static bool in_bounds(int r, int c, int rows_left, int cols_left) {
    return EVEN || (r < rows_left && c < cols_left);
  }

  // g points at the tile origin; rows_left/cols_left count the in-bounds storage rows/columns.
  __device__ __forceinline__ void fetch(const float* g, long long ld, int rows_left, int cols_left, int tid) {
#pragma unroll
    for (int it = 0; it < ITERS; ++it) {
      const int v = it * NT + tid;
      int r, c;
      coords(v, r, c);
      const float* src = g + r * ld + c;
      if (PARTIAL && v >= NV) continue;
      if (EVEN || (r < rows_left && c + VEC <= cols_left)) {
        copy_vec<VEC>(reg[it], src);
      } else {
#pragma unroll
        for (int e = 0; e < VEC; ++e) reg[it][e] = in_bounds(r, c + e, rows_left, cols_left) ? src[e] : 0.0f;
      }
    }
  }

  __device__ __forceinline__ void store(float* s, int tid) const {
#pragma unroll
    for (int it = 0; it < ITERS; ++it) {
      const int v = it * NT + tid;
      int r, c;
      coords(v, r, c);
      if (PARTIAL && v >= NV) continue;
      if constexpr (!SMEM_T) {
        copy_vec<VEC>(s + sidx(r, c), reg[it]);
      } else {
#pragma unroll
        for (int e = 0; e < VEC; ++e) s[sidx(r, c + e)] = reg[it][e];
      }
    }
  }

  // cp.async straight to shared memory. A transposing store cannot be one vector copy, so it
  // falls back to 4-byte copies; out-of-bounds elements are zero-filled by src_bytes = 0 (the
  // source then points at the always-valid tile origin and is not read).
  __device__ __forceinline__ static void copy_async(float* s, const float* g, long long ld, int rows_left,
                                                    int cols_left, int tid) {
#pragma unroll
    for (int it = 0; it < ITERS; ++it) {
      const int v = it * NT + tid;
      int r, c;
      coords(v, r, c);
      const float* src = g + r * ld + c;
      if (PARTIAL && v >= NV) continue;
      if (!SMEM_T && (EVEN || (r < rows_left && c + VEC <= cols_left))) {
        cp_async<VEC * 4>(s + sidx(r, c), src, VEC * 4);
      } else {
#pragma unroll
        for (int e = 0; e < VEC; ++e) {
          const bool ok = in_bounds(r, c + e, rows_left, cols_left);
          cp_async<4>(s + sidx(r, c + e), ok ? src + e : g, ok ? 4 : 0);
        }
      }
    }
  }
};

} // namespace ktune_dev

template <int BM, int BN, int BK, int WM, int WN, int TM, int TN, int LN, int VEC, int AT, int PAD, int PIPE, int SPLITK,
          int SWZ, int EVEN, int PACK, int A_COL, int B_COL>
__global__ void __launch_bounds__(32 * (BM / WM) * (BN / WN)) gemm_simt(KtuneGemmArgs args) {
  using namespace ktune_dev;
  // gemm_splitk_reduce, when it follows, may be scheduled now: it waits for this grid's results.
  if constexpr (SPLITK > 1) let_next_grid_launch();
  // With PACK the operands are gemm_pack's copies and K is padded to whole BK * SPLITK tiles.
  const KtuneGemmArgs p = PACK ? PackedLayout<BM, BN, BK * SPLITK, (SPLITK > 1 ? SPLITK : 0), A_COL, B_COL>(args).apply(args) : args;
  constexpr bool LOAD_EVEN = EVEN != 0 || PACK != 0;
  constexpr int NT = 32 * (BM / WM) * (BN / WN);
  constexpr int LM = 32 / LN; // lanes along M in a warp
  constexpr int WMI = WM / (LM * TM), WNI = WN / (LN * TN);
  constexpr int A_LD = AT ? BM + PAD : BK + PAD; // As is [BK][A_LD] when AT, else [BM][A_LD]
  constexpr int A_SIZE = AT ? BK * A_LD : BM * A_LD;
  constexpr int B_LD = BN + PAD;                 // Bs is [BK][B_LD]
  constexpr int B_SIZE = BK * B_LD;
  constexpr int BUFS = PIPE == 0 ? 1 : (PIPE == 1 ? 2 : PIPE);
  // Storage shape of each operand tile in global memory (rows x contiguous columns).
  using MoverA = TileMover<A_COL ? BK : BM, A_COL ? BM : BK, VEC, NT, A_LD, (AT != 0) != (A_COL != 0), LOAD_EVEN>;
  using MoverB = TileMover<B_COL ? BN : BK, B_COL ? BK : BN, VEC, NT, B_LD, B_COL != 0, LOAD_EVEN>;

  extern __shared__ float4 smem_raw[];
  float* const smem = reinterpret_cast<float*>(smem_raw);

  const int tid = threadIdx.x;
  const int tiles_m = (p.M + BM - 1) / BM, tiles_n = (p.N + BN - 1) / BN;
  int tile_m, tile_n;
  raster<SWZ>(blockIdx.x, tiles_m, tiles_n, tile_m, tile_n);
  const int m0 = tile_m * BM, n0 = tile_n * BN;

  // This block's K slice: whole BK tiles, the last slice possibly short or empty.
  const int k_tiles_total = (p.K + BK - 1) / BK;
  const int k_tiles_per_split = (k_tiles_total + SPLITK - 1) / SPLITK;
  const int k_begin = blockIdx.z * k_tiles_per_split * BK;
  const int k_end = min(p.K, k_begin + k_tiles_per_split * BK);
  const int nk = k_end > k_begin ? (k_end - k_begin + BK - 1) / BK : 0;

  auto a_origin = [&](int k0) { return p.A + offset<A_COL>(m0, k0, p.lda); };
  auto b_origin = [&](int k0) { return p.B + offset<B_COL>(k0, n0, p.ldb); };
  auto a_rows = [&](int k0) { return A_COL ? k_end - k0 : p.M - m0; };
  auto a_cols = [&](int k0) { return A_COL ? p.M - m0 : k_end - k0; };
  auto b_rows = [&](int k0) { return B_COL ? p.N - n0 : k_end - k0; };
  auto b_cols = [&](int k0) { return B_COL ? k_end - k0 : p.N - n0; };
  auto As = [&](int buf) { return smem + buf * A_SIZE; };
  auto Bs = [&](int buf) { return smem + BUFS * A_SIZE + buf * B_SIZE; };

  const int warp = tid / 32, lane = tid % 32;
  const int warp_m = (warp / (BN / WN)) * WM, warp_n = (warp % (BN / WN)) * WN;
  const int lane_m = (lane / LN) * TM, lane_n = (lane % LN) * TN;

  float acc[WMI * TM][WNI * TN];
#pragma unroll
  for (int i = 0; i < WMI * TM; ++i)
#pragma unroll
    for (int j = 0; j < WNI * TN; ++j) acc[i][j] = 0.0f;

  auto compute = [&](const float* as, const float* bs) {
#pragma unroll
    for (int kk = 0; kk < BK; ++kk) {
      float a[WMI * TM], b[WNI * TN];
#pragma unroll
      for (int i = 0; i < WMI; ++i) {
        const int row = warp_m + i * LM * TM + lane_m;
        if constexpr (AT) {
          copy_vec<TM>(a + i * TM, as + kk * A_LD + row);
        } else {
#pragma unroll
          for (int t = 0; t < TM; ++t) a[i * TM + t] = as[(row + t) * A_LD + kk];
        }
      }
#pragma unroll
      for (int j = 0; j < WNI; ++j) copy_vec<TN>(b + j * TN, bs + kk * B_LD + warp_n + j * LN * TN + lane_n);
#pragma unroll
      for (int i = 0; i < WMI * TM; ++i)
#pragma unroll
        for (int j = 0; j < WNI * TN; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
    }
  };

  if constexpr (PIPE == 0) {
    MoverA la;
    MoverB lb;
    for (int t = 0; t < nk; ++t) {
      const int k0 = k_begin + t * BK;
      la.fetch(a_origin(k0), p.lda, a_rows(k0), a_cols(k0), tid);
      lb.fetch(b_origin(k0), p.ldb, b_rows(k0), b_cols(k0), tid);
      la.store(As(0), tid);
      lb.store(Bs(0), tid);
      __syncthreads();
      compute(As(0), Bs(0));
      __syncthreads();
    }
  } else if constexpr (PIPE == 1) {
    // One barrier per tile suffices: the stores of tile t+1 go to the buffer that every thread
    // finished reading before the previous barrier.
    MoverA la;
    MoverB lb;
    if (nk > 0) {
      la.fetch(a_origin(k_begin), p.lda, a_rows(k_begin), a_cols(k_begin), tid);
      lb.fetch(b_origin(k_begin), p.ldb, b_rows(k_begin), b_cols(k_begin), tid);
      la.store(As(0), tid);
      lb.store(Bs(0), tid);
    }
    __syncthreads();
    for (int t = 0; t < nk; ++t) {
      const bool more = t + 1 < nk;
      if (more) {
        const int k0 = k_begin + (t + 1) * BK;
        la.fetch(a_origin(k0), p.lda, a_rows(k0), a_cols(k0), tid);
        lb.fetch(b_origin(k0), p.ldb, b_rows(k0), b_cols(k0), tid);
      }
      compute(As(t & 1), Bs(t & 1));
      if (more) {
        la.store(As((t + 1) & 1), tid);
        lb.store(Bs((t + 1) & 1), tid);
      }
      __syncthreads();
    }
  } else {
    // PIPE stages of cp.async. A group is committed every step, empty or not, so that
    // "wait until at most PIPE-2 groups are pending" always means "tile t has landed".
    auto issue = [&](int t) {
      const int k0 = k_begin + t * BK, buf = t % PIPE;
      MoverA::copy_async(As(buf), a_origin(k0), p.lda, a_rows(k0), a_cols(k0), tid);
      MoverB::copy_async(Bs(buf), b_origin(k0), p.ldb, b_rows(k0), b_cols(k0), tid);
    };
#pragma unroll
    for (int s = 0; s < PIPE - 1; ++s) {
      if (s < nk) issue(s);
      cp_async_commit();
    }
    for (int t = 0; t < nk; ++t) {
      cp_async_wait<PIPE - 2>();
      // Also orders every thread's reads of tile t-1 before tile t+PIPE-1 overwrites its buffer.
      __syncthreads();
      if (t + PIPE - 1 < nk) issue(t + PIPE - 1);
      cp_async_commit();
      compute(As(t % PIPE), Bs(t % PIPE));
    }
  }

  // Epilogue: CW-wide chunks of a thread's row segment; alignment of C (and of the workspace,
  // whose ws_ld is a multiple of 4) to VEC floats is part of the problem's alignment class,
  // except under PACK, where VEC describes the packed operands only: C is then stored by element.
  // This is store_out (gemm_common.cuh) written out: calling it yields the same PTX but a
  // different register allocation from ptxas, so the cubins, which the shipped table's timings
  // were measured on, would change. Call store_out here when the table is next re-tuned.
  constexpr int CW = PACK && SPLITK == 1 ? 1 : (VEC < TN ? VEC : TN);
  float* const out = SPLITK == 1 ? p.C : p.workspace + blockIdx.z * (long long)p.M * p.ws_ld;
  const long long out_ld = SPLITK == 1 ? p.ldc : p.ws_ld;
#pragma unroll
  for (int i = 0; i < WMI; ++i)
#pragma unroll
    for (int ti = 0; ti < TM; ++ti) {
      const int row = m0 + warp_m + i * LM * TM + lane_m + ti;
      if (!EVEN && row >= p.M) continue;
#pragma unroll
      for (int j = 0; j < WNI; ++j)
#pragma unroll
        for (int tj = 0; tj < TN; tj += CW) {
          const int col = n0 + warp_n + j * LN * TN + lane_n + tj;
          const float* v = &acc[i * TM + ti][j * TN + tj];
          float* dst = out + row * out_ld + col;
          if (EVEN || col + CW <= p.N) {
            float r[CW];
            if (SPLITK == 1 && p.beta != 0.0f) {
              copy_vec<CW>(r, dst);
#pragma unroll
              for (int e = 0; e < CW; ++e) r[e] = p.alpha * v[e] + p.beta * r[e];
            } else {
#pragma unroll
              for (int e = 0; e < CW; ++e) r[e] = SPLITK == 1 ? p.alpha * v[e] : v[e];
            }
            copy_vec<CW>(dst, r);
          } else {
#pragma unroll
            for (int e = 0; e < CW; ++e)
              if (col + e < p.N) dst[e] = SPLITK == 1 ? axpby(p.alpha, v[e], p.beta, dst + e) : v[e];
          }
        }
    }
}
