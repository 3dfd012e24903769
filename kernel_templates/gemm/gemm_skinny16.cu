// gemm_skinny16: BF16 / FP16 GEMM for a few rows of C (decode shapes, M = 1 .. 64), FP32
// accumulation. Like gemm_skinny (FP32) the product is a stream over B (K x N halves), read once
// with the widest loads the alignment allows, and memory bandwidth is the limit. Unlike it, the
// sums are done by the tensor cores (mma.sync m16n8k16) for every M: the half operands go to the
// MMA as they are loaded (no conversion to FP32, no FFMA), which keeps up with B's stream whatever
// M is (FFMA would need ~48 TFLOPS at M = 16 and more beyond).
//
// STATUS: compiled by NVRTC for sm_80 and sm_90 in the CPU tests; NOT YET RUN ON A GPU.
// tests/kernels/skinny16_gpu_test.cpp checks it against an FP64 reference.
//
// The product is computed transposed: C^T (N x M) = B^T (N x K) * A^T (K x M). The MMA's "A"
// operand (16 x 16, row-major) is a 16-column strip of B^T, its "B" operand (16 x 8) is A^T for 8
// rows of C (rows beyond M are zeros in shared memory), and its accumulator is a 16 x 8 tile of
// C^T. The order of k inside one MMA is free (the sum runs over all 16), as is the order of the
// 16 columns of C it serves, as long as both operands agree: so each lane builds its fragments
// straight from its own vector loads of B, without shared memory or shuffles:
//
//   B row-major (n contiguous), a warp step is 64 columns x 16 k: lane (g, t) = (lane / 4,
//     lane % 4) loads 8 consecutive columns n = 8g .. 8g + 7 of the four rows k = 4t .. 4t + 3.
//     MMA j (j = 0..3) takes columns 8g + 2j (its fragment row g) and 8g + 2j + 1 (row g + 8);
//     its k pairs (2t, 2t + 1) and (2t + 8, 2t + 9) are rows (4t, 4t + 1) and (4t + 2, 4t + 3),
//     so each fragment register is two halves of two loaded registers (one prmt).
//   B column-major (k contiguous), a warp step is 32 columns x 32 k: lane (g, t) loads 8
//     consecutive k = 8t .. 8t + 7 of columns g, g + 8, g + 16, g + 24; n16 tile T takes columns
//     16T + g (row g) and 16T + g + 8 (row g + 8), in two k16 halves q whose k pairs are
//     (8t + 4q, +1) and (8t + 4q + 2, +3): the loaded registers are the fragment as they are.
//
// A's fragment for the same k is then 4 (row-major B) or 8 (column-major B) consecutive k of row
// g of A, one 8- or 16-byte load from A's chunk in shared memory (halves, rows padded so that a
// warp's loads take the minimum of wavefronts).
//
// Template parameters (host code spells them as in the config JSON):
//   MT      rows of C per block, a multiple of 8 (n8 MMA tiles); blockIdx.y steps over M
//   NT      threads per block: NT / 32 warps = WN warps along N times KG along K
//   KG      warp groups splitting K inside a block; partial sums meet in shared memory
//   VEC     halves per global load of B (1, 2, 4, 8): each lane's 8 halves come in 8 / VEC loads
//   UNROLL  warp steps of B per lane per iteration; two iterations' loads are in flight
//   KC      K depth of A's shared-memory chunk (halves)
//   LDH     loads of B: 0 plain; 1 read-only path, no L1 allocation, 256-byte L2 prefetch
//   SPLITK  K slices (blockIdx.z); FP32 partial sums go to the workspace and
//           gemm_skinny16_reduce adds them and writes C
//   F16     0: bf16 operands and C; 1: fp16 (from the problem's dtype)
//   A_COL, B_COL  layouts from the problem: 1 = column-major
//
// The operands travel as 16-bit words (KtuneGemmArgs' float pointers are reinterpreted); the
// split-K workspace holds floats. beta == 0 never reads C.
#include "gemm_common.cuh"

namespace ktune_dev {

template <int F16>
__device__ __forceinline__ void sk16_mma(float (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
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

// Bytes of {b, a} picked by SEL (prmt.b32): 0x5410 = low halves (a.lo | b.lo << 16), 0x7632 =
// high halves (a.hi | b.hi << 16).
template <unsigned SEL>
__device__ __forceinline__ unsigned sk16_prmt(unsigned a, unsigned b) {
  unsigned d;
  asm("prmt.b32 %0, %1, %2, %3;\n" : "=r"(d) : "r"(a), "r"(b), "n"(SEL));
  return d;
}

template <int F16>
__device__ __forceinline__ float sk16_to_float(unsigned short h) {
  if constexpr (F16) {
    float f;
    asm("cvt.f32.f16 %0, %1;\n" : "=f"(f) : "h"(h));
    return f;
  } else {
    return __uint_as_float(unsigned(h) << 16);
  }
}

template <int F16>
__device__ __forceinline__ unsigned short sk16_from_float(float f) {
  unsigned short h;
  if constexpr (F16)
    asm("cvt.rn.f16.f32 %0, %1;\n" : "=h"(h) : "f"(f));
  else
    asm("cvt.rn.bf16.f32 %0, %1;\n" : "=h"(h) : "f"(f));
  return h;
}

// One load of VEC halves (VEC * 2 bytes, aligned to that) into r, as 32-bit words (VEC = 1: the
// low half of r[0]).
template <int VEC, int LDH>
__device__ __forceinline__ void sk16_load_vec(unsigned* r, const unsigned short* src) {
  if constexpr (VEC == 8) {
    if constexpr (LDH) {
      asm("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0, %1, %2, %3}, [%4];\n"
          : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "l"(src));
    } else {
      const uint4 v = *reinterpret_cast<const uint4*>(src);
      r[0] = v.x, r[1] = v.y, r[2] = v.z, r[3] = v.w;
    }
  } else if constexpr (VEC == 4) {
    if constexpr (LDH) {
      asm("ld.global.nc.L1::no_allocate.L2::256B.v2.u32 {%0, %1}, [%2];\n" : "=r"(r[0]), "=r"(r[1]) : "l"(src));
    } else {
      const uint2 v = *reinterpret_cast<const uint2*>(src);
      r[0] = v.x, r[1] = v.y;
    }
  } else if constexpr (VEC == 2) {
    if constexpr (LDH)
      asm("ld.global.nc.L1::no_allocate.L2::256B.u32 %0, [%1];\n" : "=r"(r[0]) : "l"(src));
    else
      r[0] = *reinterpret_cast<const unsigned*>(src);
  } else {
    unsigned short h;
    if constexpr (LDH)
      asm("ld.global.nc.L1::no_allocate.L2::256B.u16 %0, [%1];\n" : "=h"(h) : "l"(src));
    else
      h = *src;
    r[0] = h;
  }
}

// Eight consecutive halves at src into r (element 2i in the low half of r[i], 2i + 1 in the high
// half), VEC halves per load; elements e >= limit are zeros and are not read.
template <int VEC, int LDH>
__device__ __forceinline__ void sk16_load8(unsigned (&r)[4], const unsigned short* src, int limit) {
  if (limit >= 8) {
    if constexpr (VEC >= 2) {
#pragma unroll
      for (int i = 0; i < 8; i += VEC) sk16_load_vec<VEC, LDH>(r + i / 2, src + i);
    } else {
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        unsigned lo, hi;
        sk16_load_vec<1, LDH>(&lo, src + 2 * i);
        sk16_load_vec<1, LDH>(&hi, src + 2 * i + 1);
        r[i] = lo | hi << 16;
      }
    }
  } else {
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const unsigned lo = 2 * i < limit ? src[2 * i] : 0u;
      const unsigned hi = 2 * i + 1 < limit ? src[2 * i + 1] : 0u;
      r[i] = lo | hi << 16;
    }
  }
}

} // namespace ktune_dev

template <int MT, int NT, int KG, int VEC, int UNROLL, int KC, int LDH, int SPLITK, int F16, int A_COL, int B_COL>
__global__ void __launch_bounds__(NT) gemm_skinny16(KtuneGemmArgs p) {
  using namespace ktune_dev;
  constexpr int WARPS = NT / 32, WN = WARPS / KG;
  constexpr int WCOLS = B_COL ? 32 : 64; // columns of C per warp
  constexpr int COLS = WN * WCOLS;       // columns of C per block
  constexpr int SK = B_COL ? 32 : 16;    // K of one warp step
  constexpr int MTILES = MT / 8;         // n8 MMA tiles along M
  constexpr int NJ = B_COL ? 2 : 4;      // accumulator tiles (m16 along N) per warp and M tile
  constexpr int AS = KC + (B_COL ? 32 : 16); // A's shared row stride in halves (see the header)
  constexpr int IPC = KC / (SK * KG * UNROLL); // iterations per chunk of A
  static_assert(MT % 8 == 0 && WARPS % KG == 0 && WN >= 1, "whole n8 tiles, whole warp groups");
  static_assert(IPC >= 1 && KC % (SK * KG * UNROLL) == 0, "a chunk of A holds whole iterations of every group");
  static_assert(8 % VEC == 0, "VEC divides a lane's 8 halves");

  // gemm_skinny16_reduce, when it follows, may be scheduled now: it waits for this grid's results.
  if constexpr (SPLITK > 1) let_next_grid_launch();
  extern __shared__ __align__(16) unsigned char sk16_smem[];
  unsigned short* const As = reinterpret_cast<unsigned short*>(sk16_smem); // As[m * AS + k]
  float* const red = reinterpret_cast<float*>(sk16_smem);                  // after the K loop

  const unsigned short* const A = reinterpret_cast<const unsigned short*>(p.A);
  const unsigned short* const B = reinterpret_cast<const unsigned short*>(p.B);

  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int wn = warp % WN, kg = warp / WN;
  const int g = lane >> 2, t = lane & 3;
  const int m0 = blockIdx.y * MT;
  const int nw = blockIdx.x * COLS + wn * WCOLS; // the warp's first column
  // This block's K slice, a multiple of 32 long so that every chunk, step and lane's 8 halves of k
  // start aligned to the vector width.
  const int k_per = ((p.K + SPLITK - 1) / SPLITK + 31) / 32 * 32;
  const int k_begin = min(p.K, int(blockIdx.z) * k_per);
  const int k_end = min(p.K, k_begin + k_per);
  const int chunks = (k_end - k_begin + KC - 1) / KC;
  const int iters = chunks * IPC; // block-uniform: the barriers of stage_a are reached by all

  // Vector copies of A when it is row-major and its rows start 16-byte aligned.
  const bool a_vec = !A_COL && p.lda % 8 == 0 && (reinterpret_cast<unsigned long long>(A) & 15) == 0;
  // A's MT x KC chunk at k_begin + c * KC into shared memory, zeros beyond M and beyond the slice.
  auto stage_a = [&](int c) {
    __syncthreads(); // every warp is done with the previous chunk
    const int kc = k_begin + c * KC, len = min(KC, k_end - kc);
    if (a_vec) {
      for (int i = tid; i < MT * (KC / 8); i += NT) {
        const int m = i / (KC / 8), k = i % (KC / 8) * 8;
        uint4 v;
        v.x = v.y = v.z = v.w = 0u;
        if (m0 + m < p.M && k < len) {
          const unsigned short* src = A + (long long)(m0 + m) * p.lda + kc + k;
          if (k + 8 <= len) {
            v = *reinterpret_cast<const uint4*>(src);
          } else {
            unsigned w[4];
#pragma unroll
            for (int e = 0; e < 4; ++e)
              w[e] = (k + 2 * e < len ? unsigned(src[2 * e]) : 0u) | (k + 2 * e + 1 < len ? unsigned(src[2 * e + 1]) : 0u) << 16;
            v.x = w[0], v.y = w[1], v.z = w[2], v.w = w[3];
          }
        }
        *reinterpret_cast<uint4*>(As + m * AS + k) = v;
      }
    } else {
      // Consecutive threads take consecutive elements in memory (k for row-major A, m otherwise).
      for (int i = tid; i < MT * KC; i += NT) {
        const int m = A_COL ? i % MT : i / KC, k = A_COL ? i / MT : i % KC;
        As[m * AS + k] = (m0 + m < p.M && k < len) ? A[offset<A_COL>(m0 + m, kc + k, p.lda)] : (unsigned short)0;
      }
    }
    __syncthreads();
  };

  // Iteration it: chunk it / IPC; group kg's steps kg + KG * (u + UNROLL * (it % IPC)), u < UNROLL.
  using Buf = unsigned[UNROLL][4][4];
  auto step_k = [&](int it, int u) { return (kg + KG * (u + UNROLL * (it % IPC))) * SK; }; // k in the chunk
  auto load = [&](Buf& b, int it) {
    const int kc = k_begin + it / IPC * KC;
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
      const int k0 = kc + step_k(it, u);
#pragma unroll
      for (int r = 0; r < 4; ++r) {
        bool ok;
        const unsigned short* src;
        int limit;
        if constexpr (B_COL == 0) {
          const int k = k0 + 4 * t + r, n = nw + 8 * g;
          ok = k < k_end && n < p.N;
          src = B + (long long)k * p.ldb + n;
          limit = p.N - n;
        } else {
          const int n = nw + 16 * (r >> 1) + 8 * (r & 1) + g, k = k0 + 8 * t;
          ok = n < p.N && k < k_end;
          src = B + (long long)n * p.ldb + k;
          limit = k_end - k;
        }
        if (ok) {
          sk16_load8<VEC, LDH>(b[u][r], src, limit);
        } else {
#pragma unroll
          for (int e = 0; e < 4; ++e) b[u][r][e] = 0u;
        }
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

  auto compute = [&](const Buf& b, int it) {
    const int kc = k_begin + it / IPC * KC;
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
      const int kk = step_k(it, u);
      if (kc + kk >= k_end) break; // warp-uniform: the rest of this iteration lies beyond the slice
      if constexpr (B_COL == 0) {
        unsigned af[MTILES][2];
#pragma unroll
        for (int mt = 0; mt < MTILES; ++mt) {
          const uint2 v = *reinterpret_cast<const uint2*>(As + (mt * 8 + g) * AS + kk + 4 * t);
          af[mt][0] = v.x, af[mt][1] = v.y;
        }
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          const unsigned a[4] = {sk16_prmt<0x5410>(b[u][0][j], b[u][1][j]), sk16_prmt<0x7632>(b[u][0][j], b[u][1][j]),
                                 sk16_prmt<0x5410>(b[u][2][j], b[u][3][j]), sk16_prmt<0x7632>(b[u][2][j], b[u][3][j])};
#pragma unroll
          for (int mt = 0; mt < MTILES; ++mt) sk16_mma<F16>(acc[mt][j], a, af[mt][0], af[mt][1]);
        }
      } else {
        unsigned af[MTILES][4];
#pragma unroll
        for (int mt = 0; mt < MTILES; ++mt) {
          const uint4 v = *reinterpret_cast<const uint4*>(As + (mt * 8 + g) * AS + kk + 8 * t);
          af[mt][0] = v.x, af[mt][1] = v.y, af[mt][2] = v.z, af[mt][3] = v.w;
        }
#pragma unroll
        for (int T = 0; T < 2; ++T)
#pragma unroll
          for (int q = 0; q < 2; ++q) {
            const unsigned a[4] = {b[u][2 * T][2 * q], b[u][2 * T + 1][2 * q], b[u][2 * T][2 * q + 1], b[u][2 * T + 1][2 * q + 1]};
#pragma unroll
            for (int mt = 0; mt < MTILES; ++mt) sk16_mma<F16>(acc[mt][T], a, af[mt][2 * q], af[mt][2 * q + 1]);
          }
      }
    }
  };

  // Two iterations' loads in flight (ping-pong): the next one's are issued before this one is
  // computed, and before the barriers that stage a new chunk of A, so they overlap them.
  Buf b0, b1;
  if (iters > 0) load(b0, 0);
  for (int it = 0; it < iters; it += 2) {
    if (it + 1 < iters) load(b1, it + 1);
    if (it % IPC == 0) stage_a(it / IPC);
    compute(b0, it);
    if (it + 1 < iters) {
      if (it + 2 < iters) load(b0, it + 2);
      if ((it + 1) % IPC == 0) stage_a((it + 1) / IPC);
      compute(b1, it + 1);
    }
  }

  // Every group's sums into shared memory (over A's chunk), red[kg][m][column in block]; then each
  // thread adds the KG partial sums of some outputs in group order and writes them, consecutive
  // threads along consecutive columns.
  __syncthreads();
#pragma unroll
  for (int mt = 0; mt < MTILES; ++mt)
#pragma unroll
    for (int j = 0; j < NJ; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        // Accumulator element e: fragment row g (e < 2) or g + 8, column 2t + (e & 1).
        const int m = mt * 8 + 2 * t + (e & 1);
        const int col = wn * WCOLS + (B_COL ? 16 * j + g + 8 * (e >> 1) : 8 * g + 2 * j + (e >> 1));
        red[(kg * MT + m) * COLS + col] = acc[mt][j][e];
      }
  __syncthreads();
  for (int o = tid; o < MT * COLS; o += NT) {
    const int m = o / COLS, j = o % COLS;
    const int row = m0 + m, col = blockIdx.x * COLS + j;
    if (row >= p.M || col >= p.N) continue;
    float sum = 0.0f;
#pragma unroll
    for (int h = 0; h < KG; ++h) sum += red[(h * MT + m) * COLS + j];
    if constexpr (SPLITK == 1) {
      unsigned short* const c = reinterpret_cast<unsigned short*>(p.C) + (long long)row * p.ldc + col;
      float v = p.alpha * sum;
      if (p.beta != 0.0f) v += p.beta * sk16_to_float<F16>(*c); // beta == 0 never reads C
      *c = sk16_from_float<F16>(v);
    } else {
      p.workspace[blockIdx.z * (long long)p.M * p.ws_ld + (long long)row * p.ws_ld + col] = sum;
    }
  }
}

// Adds the SPLITK FP32 partial products of gemm_skinny16 in slice order (bit-for-bit repeatable),
// applies alpha and beta and writes C in the half dtype. The geometry of gemm_splitk_reduce
// (add_splitk_reduce on the host): one thread per KTUNE_SPLITK_REDUCE_VEC consecutive columns of
// a row, 256 threads a block; a programmatic dependent of the main kernel that waits for its grid
// before reading the workspace.
template <int SPLITK, int F16>
__global__ void __launch_bounds__(256) gemm_skinny16_reduce(KtuneGemmArgs p) {
  using namespace ktune_dev;
  constexpr int V = KTUNE_SPLITK_REDUCE_VEC;
  wait_for_previous_grid();
  const int groups = (p.N + V - 1) / V;
  const long long idx = blockIdx.x * 256ll + threadIdx.x;
  if (idx >= (long long)p.M * groups) return;
  const long long row = idx / groups;
  const int col = int(idx % groups) * V;
  const long long slice = (long long)p.M * p.ws_ld;
  const float* w = p.workspace + row * p.ws_ld + col;
  float sum[V];
#pragma unroll
  for (int e = 0; e < V; ++e) sum[e] = 0.0f;
#pragma unroll
  for (int z = 0; z < SPLITK; ++z) {
    float v[V];
    copy_vec<V>(v, w + z * slice);
#pragma unroll
    for (int e = 0; e < V; ++e) sum[e] += v[e];
  }
  unsigned short* const c = reinterpret_cast<unsigned short*>(p.C) + row * p.ldc + col;
#pragma unroll
  for (int e = 0; e < V; ++e)
    if (col + e < p.N) {
      float v = p.alpha * sum[e];
      if (p.beta != 0.0f) v += p.beta * sk16_to_float<F16>(c[e]);
      c[e] = sk16_from_float<F16>(v);
    }
}
