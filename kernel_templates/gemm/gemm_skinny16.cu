// gemm_skinny16: BF16 / FP16 GEMM for a few rows of C (decode shapes, M = 1 .. 64), FP32
// accumulation. The product is a stream over B (K x N halves), read once with the widest loads
// the alignment allows, and memory bandwidth is the limit. The sums are done by the tensor cores
// (mma.sync m16n8k16) for every M: the half operands go to the MMA as they are loaded (no
// conversion, no FFMA), which keeps up with B's stream whatever M is.
//
// STATUS: this version (register ring, A from global memory, cluster reduction) passes
// Skinny16Gpu.* (tests/kernels/skinny16_gpu_test.cpp: sampled configs against an FP64 reference)
// on an H100 (docs/runs/2026-11-24-h100-s6-gpu-tests.txt.gz) and is in the shipped half table;
// its decode figures against the read floor are in docs/PERFORMANCE.md ("The read floor").
//
// ---- Bandwidth model (what the structure is designed for; H100 SXM, 132 SMs) ----
// B is the whole cost: 1x4096x4096 is 32 MB of B, 11 us at ~3 TB/s. Little's law with ~1 us of
// loaded DRAM latency wants >= 3 MB of B loads in flight device-wide (~24 KB per SM), all the
// time, from the first microsecond to the last. The measured first version reached ~50 % of copy
// bandwidth because (a) each K chunk of A was staged through shared memory behind two
// __syncthreads with a dependent global load in between, so every block stalled on A's latency
// every 1-2 iterations with only one iteration of B in flight, (b) only two iterations of B
// were ever in flight (ping-pong), and (c) split-K added a second launch and FP32 partial-sum
// traffic to an ~11 us kernel. This version:
//   * keeps no operand in shared memory and has no barrier in the K loop: every warp streams its
//     own K steps independently through a ring of DEPTH register slots; step i + DEPTH - 1 is
//     issued before step i is computed, so DEPTH - 1 steps (64 bytes of B a lane each) are
//     always in flight: NT * (DEPTH - 1) * 64 bytes a block (128 threads, DEPTH 4: 24 KB).
//   * loads A's fragments from global memory (L2 / L1 hits: A is tiny and shared by every block)
//     into the same ring, issued together with B's loads of the same step, so their latency is
//     hidden like B's. Rows beyond M are zeros without a load (M = 1: one lane row loads A).
//   * cuts K three ways without a second kernel on sm_90: inside the warp (none: a warp step is
//     16 or 32 k), across the KG warp groups of a block (shared-memory reduction after the loop,
//     float4 per lane, conflict-free), and across the CL blocks of a thread block cluster
//     (distributed shared memory reduction, rank order, deterministic). SPLITK (FP32 workspace +
//     gemm_splitk_reduce16, a programmatic dependent launch) remains for sm_80 and for grids that
//     need more slices than a cluster holds.
//   * sizes the grid so that it runs in one wave (defaults() below: a cluster grid that needs a
//     second wave of clusters runs at half speed, as gemm_skinny measured) with >= ~2 blocks per
//     SM and >= 3-4.5 MB in flight; registers per thread ~ acc + DEPTH * (16 + A words) + 48
//     (+32 with column-major B), capped through __launch_bounds__(NT, MINB).
// Targets: 1x4096x4096 NN: 64 column strips x CL 4 = 256 blocks of 128 threads (3 per SM fit),
// DEPTH 4-6: ~6 MB in flight, expected ~11 us of streaming + ~1 us ramp + ~0.3 us cluster
// epilogue, i.e. >= 80 % of copy bandwidth. M = 16: the same with two n8 tiles of A (8 MMAs per
// 2 KB of B, far below the tensor-core rate).
//
// ---- The mapping ----
// The product is computed transposed: C^T (N x M) = B^T (N x K) * A^T (K x M). The MMA's "A"
// operand (16 x 16, row-major) is a 16-column strip of B^T, its "B" operand (16 x 8) is A^T for 8
// rows of C (rows beyond M are zeros), and its accumulator is a 16 x 8 tile of C^T. The order of
// k inside one MMA is free (the sum runs over all 16), as is the order of the 16 columns of C it
// serves, as long as both operands agree: so each lane builds its fragments straight from its
// own vector loads of B, without shared memory or shuffles:
//
//   B row-major (n contiguous), a warp step is 64 columns x 16 k: lane (g, t) = (lane / 4,
//     lane % 4) loads 8 consecutive columns n = 8g .. 8g + 7 of the four rows k = 4t .. 4t + 3.
//     MMA j (j = 0..3) takes columns 8g + 2j (its fragment row g) and 8g + 2j + 1 (row g + 8);
//     its k pairs (2t, 2t + 1) and (2t + 8, 2t + 9) are rows (4t, 4t + 1) and (4t + 2, 4t + 3),
//     so each fragment register is two halves of two loaded registers (one prmt). A's fragment:
//     the 4 consecutive k = 4t .. 4t + 3 of row g (one 8-byte load).
//   B column-major (k contiguous), a warp step is 32 columns x 32 k: lane (g, t) loads 8
//     consecutive k = 8t .. 8t + 7 of columns g, g + 8, g + 16, g + 24; n16 tile T takes columns
//     16T + g (row g) and 16T + g + 8 (row g + 8), in two k16 halves q whose k pairs are
//     (8t + 4q, +1) and (8t + 4q + 2, +3): the loaded registers are the fragment as they are.
//     A's fragment: the 8 consecutive k = 8t .. 8t + 7 of row g (one 16-byte load).
//
// Template parameters (host code spells them as in the config JSON):
//   MT      rows of C per block: 8, 16 or 32 (n8 MMA tiles; 64 would spill); blockIdx.y steps over M
//   NT      threads per block: NT / 32 warps = WN warps along N times KG along K
//   KG      warp groups splitting the block's K slice (steps interleaved: group kg takes steps
//           kg, kg + KG, ...); partial sums meet in shared memory after the loop
//   VEC     halves per global load of B (1, 2, 4, 8): each lane's 8 halves come in 8 / VEC loads
//   DEPTH   register ring of warp steps: DEPTH - 1 steps of B (and A) in flight per lane
//   LDH     loads of B: 0 plain; 1 ld.global.nc.L1::no_allocate.L2::256B; 2 the same without
//           the L2 prefetch hint
//   CL      K slices per thread block cluster (sm_90; 1 = no cluster): the CL blocks of a
//           cluster add their partial sums through distributed shared memory
//   SPLITK  cluster-level K slices through the FP32 workspace (1 = none); gemm_splitk_reduce16
//           adds them. The grid has CL * SPLITK K slices along blockIdx.z
//   MINB    blocks per SM asked of ptxas (__launch_bounds__' second argument; 1 passes 0)
//   AV      from the problem: 1 when A is row-major and aligned for 8-byte (B row-major) or
//           16-byte (B column-major) fragment loads; 0 loads A's halves one by one
//   F16     0: bf16 operands and C; 1: fp16 (from the problem's dtype)
//   A_COL, B_COL  layouts from the problem: 1 = column-major
//
// The operands travel as 16-bit words (KtuneGemmArgs' float pointers are reinterpreted); the
// split-K workspace holds floats. beta == 0 never reads C.
#include "gemm_common.cuh"
#include "gemm_half16.cuh" // the MMA and the half <-> FP32 conversions of every half family
#include "ktune_cluster.cuh" // CL > 1: the K slices of a cluster add up in distributed shared memory

namespace ktune_dev {

// Bytes of {b, a} picked by SEL (prmt.b32): 0x5410 = low halves (a.lo | b.lo << 16), 0x7632 =
// high halves (a.hi | b.hi << 16).
template <unsigned SEL>
__device__ __forceinline__ unsigned sk16_prmt(unsigned a, unsigned b) {
  unsigned d;
  asm("prmt.b32 %0, %1, %2, %3;\n" : "=r"(d) : "r"(a), "r"(b), "n"(SEL));
  return d;
}

// One load of B: VEC halves (VEC * 2 bytes, aligned to that) into r as 32-bit words (VEC = 1:
// the half zero-extended into r[0]). LDH 1/2: read-only path without L1 allocation (B is read
// once), 1 with the 256-byte L2 prefetch hint.
template <int VEC, int LDH>
__device__ __forceinline__ void sk16_load_b(unsigned* r, const unsigned short* src) {
  if constexpr (VEC == 8) {
    if constexpr (LDH == 1)
      asm("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0, %1, %2, %3}, [%4];\n"
          : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "l"(src));
    else if constexpr (LDH == 2)
      asm("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];\n"
          : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "l"(src));
    else {
      const uint4 v = *reinterpret_cast<const uint4*>(src);
      r[0] = v.x, r[1] = v.y, r[2] = v.z, r[3] = v.w;
    }
  } else if constexpr (VEC == 4) {
    if constexpr (LDH == 1)
      asm("ld.global.nc.L1::no_allocate.L2::256B.v2.u32 {%0, %1}, [%2];\n" : "=r"(r[0]), "=r"(r[1]) : "l"(src));
    else if constexpr (LDH == 2)
      asm("ld.global.nc.L1::no_allocate.v2.u32 {%0, %1}, [%2];\n" : "=r"(r[0]), "=r"(r[1]) : "l"(src));
    else {
      const uint2 v = *reinterpret_cast<const uint2*>(src);
      r[0] = v.x, r[1] = v.y;
    }
  } else if constexpr (VEC == 2) {
    if constexpr (LDH == 1)
      asm("ld.global.nc.L1::no_allocate.L2::256B.u32 %0, [%1];\n" : "=r"(r[0]) : "l"(src));
    else if constexpr (LDH == 2)
      asm("ld.global.nc.L1::no_allocate.u32 %0, [%1];\n" : "=r"(r[0]) : "l"(src));
    else
      r[0] = *reinterpret_cast<const unsigned*>(src);
  } else {
    unsigned short h;
    if constexpr (LDH == 1)
      asm("ld.global.nc.L1::no_allocate.L2::256B.u16 %0, [%1];\n" : "=h"(h) : "l"(src));
    else if constexpr (LDH == 2)
      asm("ld.global.nc.L1::no_allocate.u16 %0, [%1];\n" : "=h"(h) : "l"(src));
    else
      h = *src;
    r[0] = h;
  }
}

// A lane's 8 consecutive halves of B at src into its ring slot w: VEC >= 2 as 4 words (element 2i
// in the low half of w[i]), VEC = 1 as 8 zero-extended halves (packed when computed, so that no
// instruction waits for a load when it is issued). Elements e >= limit are zeros and not read
// (edge steps only; with VEC >= 2 those are packed at once, as they are rare).
template <int VEC, int LDH>
__device__ __forceinline__ void sk16_load8(unsigned* w, const unsigned short* src, int limit) {
  if (limit >= 8) {
    if constexpr (VEC >= 2) {
#pragma unroll
      for (int i = 0; i < 8; i += VEC) sk16_load_b<VEC, LDH>(w + i / 2, src + i);
    } else {
#pragma unroll
      for (int i = 0; i < 8; ++i) sk16_load_b<1, LDH>(w + i, src + i);
    }
  } else if constexpr (VEC >= 2) {
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const unsigned lo = 2 * i < limit ? src[2 * i] : 0u;
      const unsigned hi = 2 * i + 1 < limit ? src[2 * i + 1] : 0u;
      w[i] = lo | hi << 16;
    }
  } else {
#pragma unroll
    for (int i = 0; i < 8; ++i) w[i] = i < limit ? unsigned(src[i]) : 0u;
  }
}

// Word i (halves 2i, 2i + 1) of a lane's 8 loaded halves (see sk16_load8).
template <int VEC>
__device__ __forceinline__ unsigned sk16_word(const unsigned* w, int i) {
  if constexpr (VEC >= 2)
    return w[i];
  else
    return sk16_prmt<0x5410>(w[2 * i], w[2 * i + 1]);
}

// A fragment words straight from global memory (read-only, L1-allocating: A is shared by every
// warp and block).
__device__ __forceinline__ void sk16_load_a2(unsigned* r, const unsigned short* src) {
  asm("ld.global.nc.v2.u32 {%0, %1}, [%2];\n" : "=r"(r[0]), "=r"(r[1]) : "l"(src));
}
__device__ __forceinline__ void sk16_load_a4(unsigned* r, const unsigned short* src) {
  asm("ld.global.nc.v4.u32 {%0, %1, %2, %3}, [%4];\n" : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "l"(src));
}

} // namespace ktune_dev

template <int MT, int NT, int KG, int VEC, int DEPTH, int LDH, int CL, int SPLITK, int MINB, int AV, int F16, int A_COL, int B_COL>
__global__ void __launch_bounds__(NT, MINB > 1 ? MINB : 0) KTUNE_CLUSTER_DIMS(1, 1, CL) gemm_skinny16(KtuneGemmArgs p) {
  using namespace ktune_dev;
  constexpr int WARPS = NT / 32, WN = WARPS / KG;
  constexpr int WCOLS = B_COL ? 32 : 64; // columns of C per warp
  constexpr int COLS = WN * WCOLS;       // columns of C per block
  constexpr int SK = B_COL ? 32 : 16;    // K of one warp step
  constexpr int MTILES = MT / 8;         // n8 MMA tiles along M
  constexpr int NJ = B_COL ? 2 : 4;      // accumulator tiles (m16 along N) per warp and M tile
  constexpr int AH = B_COL ? 8 : 4;      // halves of A per lane, step and M tile
  constexpr int AW = AV ? AH / 2 : AH;   // ring words for them (AV = 0: one half a word)
  constexpr int BW = VEC >= 2 ? 4 : 8;   // ring words per loaded run of 8 halves of B
  constexpr int SLICES = CL * SPLITK;    // K slices along blockIdx.z
  constexpr int P = WN * MTILES * NJ * 32; // float4 accumulator positions per warp group
  static_assert(MT % 8 == 0 && WARPS % KG == 0 && WN >= 1, "whole n8 tiles, whole warp groups");
  static_assert(8 % VEC == 0, "VEC divides a lane's 8 halves");
  static_assert(DEPTH >= 2, "at least one step in flight while one is computed");
  static_assert(CL >= 1 && CL <= 8, "portable cluster sizes");

  // gemm_splitk_reduce16, when it follows, may be scheduled now: it waits for this grid's results.
  if constexpr (SPLITK > 1) let_next_grid_launch();
  extern __shared__ __align__(16) unsigned char sk16_smem[];
  float4* const red = reinterpret_cast<float4*>(sk16_smem); // red[kg * P + position], after the loop

  const unsigned short* const A = reinterpret_cast<const unsigned short*>(p.A);
  const unsigned short* const B = reinterpret_cast<const unsigned short*>(p.B);

  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int wn = warp % WN, kg = warp / WN;
  const int g = lane >> 2, t = lane & 3;
  const int m0 = blockIdx.y * MT;
  const int nw = blockIdx.x * COLS + wn * WCOLS; // the warp's first column
  // This block's K slice, a multiple of 32 long so that every step and every lane's 8 halves of
  // k start aligned to the vector width.
  const int k_per = ((p.K + SLICES - 1) / SLICES + 31) / 32 * 32;
  const int k_begin = min(p.K, int(blockIdx.z) * k_per);
  const int k_end = min(p.K, k_begin + k_per);
  const int nsteps = (k_end - k_begin + SK - 1) / SK;            // the block's warp steps
  const int my_steps = nsteps > kg ? (nsteps - kg + KG - 1) / KG : 0; // this warp's: kg, kg + KG, ...
  const bool cols_in = nw + WCOLS <= p.N;                         // warp-uniform: no column guards

  // Per-lane bases. B row-major: rows k_begin + kg * SK + 4t (+ r), columns nw + 8g; B
  // column-major: columns nw + g (+ 8r), k from k_begin + kg * SK + 8t. Step i adds
  // i * KG * SK rows (row-major) or k (column-major).
  const int lane_n = B_COL ? nw + g : nw + 8 * g;
  const int lane_k = k_begin + kg * SK + (B_COL ? 8 * t : 4 * t); // first k of the lane in step 0
  const unsigned short* const b_lane =
      B + (B_COL ? (long long)lane_n * p.ldb + lane_k : (long long)lane_k * p.ldb + lane_n);
  const long long b_step = B_COL ? (long long)KG * SK : (long long)KG * SK * p.ldb;
  const long long b_r = B_COL ? 8 * p.ldb : p.ldb; // between the lane's 4 runs of 8 halves

  unsigned bq[DEPTH][4][BW];        // ring of B: [slot][run][words]
  unsigned aq[DEPTH][MTILES][AW];   // ring of A's fragments: [slot][n8 tile][words]

  // Step i of this warp into ring slot (bs, as).
  auto load = [&](unsigned (&bs)[4][BW], unsigned (&as)[MTILES][AW], int i) {
    const int k0 = k_begin + (kg + KG * i) * SK; // the step's first k
    const bool k_in = k0 + SK <= k_end;
    const unsigned short* const src = b_lane + i * b_step;
    if (k_in && cols_in) {
#pragma unroll
      for (int r = 0; r < 4; ++r) sk16_load8<VEC, LDH>(bs[r], src + r * b_r, 8);
    } else {
#pragma unroll
      for (int r = 0; r < 4; ++r) {
        bool ok;
        int limit;
        if constexpr (B_COL == 0) {
          const int k = lane_k + KG * SK * i + r;
          ok = k < k_end && lane_n < p.N;
          limit = p.N - lane_n;
        } else {
          const int n = lane_n + 8 * r, k = lane_k + KG * SK * i;
          ok = n < p.N && k < k_end;
          limit = k_end - k;
        }
        if (ok) {
          sk16_load8<VEC, LDH>(bs[r], src + r * b_r, limit);
        } else {
#pragma unroll
          for (int e = 0; e < BW; ++e) bs[r][e] = 0u;
        }
      }
    }
    // A: row m0 + 8 mt + g, AH consecutive k from the lane's first k of the step.
    const int ka = lane_k + KG * SK * i;
#pragma unroll
    for (int mt = 0; mt < MTILES; ++mt) {
      const int m = m0 + mt * 8 + g;
      if (m < p.M) {
        if constexpr (AV) {
          const unsigned short* const a_src = A + (long long)m * p.lda + ka;
          if (k_in) {
            if constexpr (B_COL)
              sk16_load_a4(as[mt], a_src);
            else
              sk16_load_a2(as[mt], a_src);
          } else {
#pragma unroll
            for (int e = 0; e < AW; ++e) {
              const unsigned lo = ka + 2 * e < k_end ? unsigned(a_src[2 * e]) : 0u;
              const unsigned hi = ka + 2 * e + 1 < k_end ? unsigned(a_src[2 * e + 1]) : 0u;
              as[mt][e] = lo | hi << 16;
            }
          }
        } else {
#pragma unroll
          for (int e = 0; e < AH; ++e) as[mt][e] = ka + e < k_end ? unsigned(A[offset<A_COL>(m, ka + e, p.lda)]) : 0u;
        }
      } else {
#pragma unroll
        for (int e = 0; e < AW; ++e) as[mt][e] = 0u;
      }
    }
  };

  float acc[MTILES][NJ][4];
#pragma unroll
  for (int i = 0; i < MTILES; ++i)
#pragma unroll
    for (int j = 0; j < NJ; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.0f;

  auto compute = [&](const unsigned (&bs)[4][BW], const unsigned (&as)[MTILES][AW]) {
    // A's fragment words: 2 (B row-major) or 4 (column-major) per n8 tile.
    unsigned af[MTILES][AH / 2];
#pragma unroll
    for (int mt = 0; mt < MTILES; ++mt)
#pragma unroll
      for (int e = 0; e < AH / 2; ++e) {
        if constexpr (AV)
          af[mt][e] = as[mt][e];
        else
          af[mt][e] = sk16_prmt<0x5410>(as[mt][2 * e], as[mt][2 * e + 1]); // halves packed now, not at the load
      }
    if constexpr (B_COL == 0) {
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const unsigned w0 = sk16_word<VEC>(bs[0], j), w1 = sk16_word<VEC>(bs[1], j);
        const unsigned w2 = sk16_word<VEC>(bs[2], j), w3 = sk16_word<VEC>(bs[3], j);
        const unsigned a[4] = {sk16_prmt<0x5410>(w0, w1), sk16_prmt<0x7632>(w0, w1), sk16_prmt<0x5410>(w2, w3),
                               sk16_prmt<0x7632>(w2, w3)};
#pragma unroll
        for (int mt = 0; mt < MTILES; ++mt) half16::mma16816<F16>(acc[mt][j], a, af[mt][0], af[mt][1]);
      }
    } else {
#pragma unroll
      for (int T = 0; T < 2; ++T)
#pragma unroll
        for (int q = 0; q < 2; ++q) {
          const unsigned a[4] = {sk16_word<VEC>(bs[2 * T], 2 * q), sk16_word<VEC>(bs[2 * T + 1], 2 * q),
                                 sk16_word<VEC>(bs[2 * T], 2 * q + 1), sk16_word<VEC>(bs[2 * T + 1], 2 * q + 1)};
#pragma unroll
          for (int mt = 0; mt < MTILES; ++mt) half16::mma16816<F16>(acc[mt][T], a, af[mt][2 * q], af[mt][2 * q + 1]);
        }
    }
  };

  // The ring: DEPTH - 1 steps are issued ahead; each turn issues step i + DEPTH - 1 into the slot
  // step i - 1 freed, then computes step i. The unrolled inner loop keeps every slot index a
  // constant (registers, no local memory); no barrier anywhere in the loop.
#pragma unroll
  for (int d = 0; d < DEPTH - 1; ++d)
    if (d < my_steps) load(bq[d], aq[d], d);
  for (int i0 = 0; i0 < my_steps; i0 += DEPTH) {
#pragma unroll
    for (int d = 0; d < DEPTH; ++d) {
      const int i = i0 + d;
      if (i + DEPTH - 1 < my_steps) load(bq[(d + DEPTH - 1) % DEPTH], aq[(d + DEPTH - 1) % DEPTH], i + DEPTH - 1);
      if (i < my_steps) compute(bq[d], aq[d]);
    }
  }

  // Every group's sums into shared memory as float4 per lane and tile (consecutive lanes,
  // consecutive 16 bytes: conflict-free), then each thread adds the KG partial sums of some
  // positions in group order.
  const int my_pos = wn * MTILES * NJ * 32 + lane; // + (mt * NJ + j) * 32
#pragma unroll
  for (int mt = 0; mt < MTILES; ++mt)
#pragma unroll
    for (int j = 0; j < NJ; ++j)
      red[kg * P + my_pos + (mt * NJ + j) * 32] = make_float4(acc[mt][j][0], acc[mt][j][1], acc[mt][j][2], acc[mt][j][3]);
  __syncthreads();

  // Writes position pos's four sums: to C (alpha, beta) or to the workspace slice.
  auto store = [&](int pos, const float4& s) {
    const int pl = pos & 31, pj = (pos >> 5) % NJ, pmt = (pos >> 5) / NJ % MTILES, pwn = (pos >> 5) / (NJ * MTILES);
    const int pg = pl >> 2, pt = pl & 3;
    const float v[4] = {s.x, s.y, s.z, s.w};
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      // Accumulator element e: fragment row pg (e < 2) or pg + 8, column 2 pt + (e & 1).
      const int row = m0 + pmt * 8 + 2 * pt + (e & 1);
      const int col = blockIdx.x * COLS + pwn * WCOLS + (B_COL ? 16 * pj + pg + 8 * (e >> 1) : 8 * pg + 2 * pj + (e >> 1));
      if (row >= p.M || col >= p.N) continue;
      if constexpr (SPLITK == 1) {
        unsigned short* const c = reinterpret_cast<unsigned short*>(p.C) + (long long)row * p.ldc + col;
        float out = p.alpha * v[e];
        if (p.beta != 0.0f) out += p.beta * half16::to_float<F16>(*c); // beta == 0 never reads C
        *c = half16::from_float<F16>(out);
      } else {
        p.workspace[int(blockIdx.z) / CL * (long long)p.M * p.ws_ld + (long long)row * p.ws_ld + col] = v[e];
      }
    }
  };

  for (int pos = tid; pos < P; pos += NT) {
    float4 s = red[pos];
#pragma unroll
    for (int h = 1; h < KG; ++h) {
      const float4 x = red[h * P + pos];
      s.x += x.x, s.y += x.y, s.z += x.z, s.w += x.w;
    }
    if constexpr (CL == 1)
      store(pos, s);
    else
      red[pos] = s; // the block's sums, read by every rank of the cluster
  }
  if constexpr (CL > 1) {
    // Every rank adds a share of the positions over all ranks, in rank order (deterministic).
    cluster::sync(); // every rank's sums are written
    const int rank = int(cluster::rank());
    for (int pos = rank * NT + tid; pos < P; pos += NT * CL) {
      float4 s = cluster::load_v4(cluster::remote(red + pos, 0u));
#pragma unroll
      for (int r = 1; r < CL; ++r) {
        const float4 x = cluster::load_v4(cluster::remote(red + pos, unsigned(r)));
        s.x += x.x, s.y += x.y, s.z += x.z, s.w += x.w;
      }
      store(pos, s);
    }
    cluster::sync(); // no CTA leaves (freeing its shared memory) while others still read it
  }
}

// SPLITK > 1: the FP32 slices in the workspace are added, scaled and written to C by the half
// GEMMs' shared split-K reduction (gemm_splitk16.cuh's gemm_splitk_reduce16), a programmatic
// dependent of this kernel.
#include "gemm_splitk16.cuh"
