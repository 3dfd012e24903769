// gemm_tc16: BF16 / FP16 GEMM on the tensor cores (mma.sync m16n8k16, FP32 accumulation), the
// first half-precision family (issue 15). C = alpha * A * B + beta * C with A, B and C in the
// problem's dtype and the sums in FP32.
//
// STATUS: compiled by NVRTC for sm_80 and sm_90 in the CPU tests; NOT YET RUN ON A GPU (written
// when the session's device time had run out). tests/kernels/tc16_gpu_test.cpp checks it against
// an FP64 reference; nothing selects it until that has passed (ktune refuses to tune or run
// bf16/f16 problems for now).
//
// Template parameters (host code spells them as in the config JSON):
//   BM, BN, BK   block tile (rows of C, columns of C, K depth of one shared-memory stage)
//   WM, WN       warp tile: (WM / 16) x (WN / 8) m16n8 MMA tiles per warp, k16 steps
//   ST           cp.async stages in the shared-memory ring (ST - 1 tiles in flight)
//   SWZ          rasterization group (raster() in gemm_common.cuh)
//   F16          0: bf16 operands and C; 1: fp16 (from the problem's dtype)
//   A_COL, B_COL layouts from the problem; this first version serves A and B row-major only
//
// The operands travel as 16-bit words (KtuneGemmArgs' float pointers are reinterpreted: the
// argument block predates half precision). Tiles are copied with 16-byte cp.async, zero-filled
// beyond M, N and K, so K and N must be multiples of 8 (the descriptor's constraints). Shared
// memory rows are padded by 8 halves (16 bytes): ldmatrix's eight 16-byte row reads of a warp then
// fall in distinct bank groups for both A ([BM][BK + 8], BK * 2 bytes a row) and B ([BK][BN + 8]).
// A fragments come from ldmatrix.x4, B fragments from ldmatrix.x4.trans (B is K-major in shared
// memory; the MMA wants it "col"). Fragment layouts: PTX ISA, "Matrix Fragments for
// mma.m16n8k16 with floating point type".
#include "gemm_common.cuh"

namespace ktune_dev {

__device__ __forceinline__ unsigned smem_u32(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

// 16 bytes from global to shared memory, zero-filled when !valid (src is then not read):
// gemm_common.cuh's cp_async, which speaks in floats.
__device__ __forceinline__ void cp_async16(unsigned short* dst, const unsigned short* src, bool valid) {
  cp_async<16>(reinterpret_cast<float*>(dst), reinterpret_cast<const float*>(src), valid ? 16 : 0);
}

__device__ __forceinline__ void ldmatrix_x4(unsigned (&r)[4], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_u32(p)));
}
__device__ __forceinline__ void ldmatrix_x4_trans(unsigned (&r)[4], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_u32(p)));
}

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

// Two FP32 values rounded to nearest into one 32-bit word of halves (lo in the low 16 bits).
template <int F16>
__device__ __forceinline__ unsigned pack2(float lo, float hi) {
  unsigned r;
  if constexpr (F16)
    asm("cvt.rn.f16x2.f32 %0, %1, %2;\n" : "=r"(r) : "f"(hi), "f"(lo));
  else
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;\n" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}

template <int F16>
__device__ __forceinline__ float half_to_float(unsigned short h) {
  if constexpr (F16) {
    float f;
    asm("cvt.f32.f16 %0, %1;\n" : "=f"(f) : "h"(h));
    return f;
  } else {
    return __uint_as_float(unsigned(h) << 16);
  }
}

} // namespace ktune_dev

template <int BM, int BN, int BK, int WM, int WN, int ST, int SWZ, int F16, int A_COL, int B_COL>
__global__ void __launch_bounds__((BM / WM) * (BN / WN) * 32) gemm_tc16(KtuneGemmArgs p) {
  using namespace ktune_dev;
  static_assert(!A_COL && !B_COL, "gemm_tc16 serves row-major A and B only (the descriptor's constraint)");
  static_assert(WM % 16 == 0 && WN % 16 == 0 && BK % 16 == 0, "MMA tiles are m16 x n8 (loaded in pairs) x k16");
  constexpr int WARPS_N = BN / WN;
  constexpr int THREADS = (BM / WM) * WARPS_N * 32;
  constexpr int MI = WM / 16, NI = WN / 8;
  constexpr int AS = BK + 8, BS = BN + 8; // padded row strides, in halves
  constexpr int A_STAGE = BM * AS, B_STAGE = BK * BS;
  constexpr int A_CHUNKS = BM * BK / 8, B_CHUNKS = BK * BN / 8; // 16-byte copies per stage
  static_assert(A_CHUNKS % THREADS == 0 && B_CHUNKS % THREADS == 0, "whole copies per thread (descriptor)");

  extern __shared__ __align__(16) unsigned short smem[];
  unsigned short* As = smem;
  unsigned short* Bs = smem + ST * A_STAGE;

  const unsigned short* A = reinterpret_cast<const unsigned short*>(p.A);
  const unsigned short* B = reinterpret_cast<const unsigned short*>(p.B);
  unsigned short* C = reinterpret_cast<unsigned short*>(p.C);

  const int tiles_m = (p.M + BM - 1) / BM, tiles_n = (p.N + BN - 1) / BN;
  int tm, tn;
  raster<SWZ>(blockIdx.x, tiles_m, tiles_n, tm, tn);
  const int row0 = tm * BM, col0 = tn * BN;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int wm = (warp / WARPS_N) * WM, wn = (warp % WARPS_N) * WN;
  const int nk = (p.K + BK - 1) / BK; // 0 when K is 0: nothing is loaded, C = beta * C

  // Stage s <- k tile kt: rows beyond M, columns beyond N and k beyond K are zero-filled
  // (N and K are multiples of 8, so a 16-byte chunk is wholly inside or wholly outside).
  auto load_stage = [&](int s, int kt) {
    const int k0 = kt * BK;
#pragma unroll
    for (int i = 0; i < A_CHUNKS / THREADS; ++i) {
      const int c = tid + i * THREADS;
      const int r = c / (BK / 8), kc = (c % (BK / 8)) * 8;
      const bool ok = row0 + r < p.M && k0 + kc < p.K;
      const unsigned short* src = ok ? A + (long long)(row0 + r) * p.lda + k0 + kc : A;
      cp_async16(As + s * A_STAGE + r * AS + kc, src, ok);
    }
#pragma unroll
    for (int i = 0; i < B_CHUNKS / THREADS; ++i) {
      const int c = tid + i * THREADS;
      const int r = c / (BN / 8), nc = (c % (BN / 8)) * 8;
      const bool ok = k0 + r < p.K && col0 + nc < p.N;
      const unsigned short* src = ok ? B + (long long)(k0 + r) * p.ldb + col0 + nc : B;
      cp_async16(Bs + s * B_STAGE + r * BS + nc, src, ok);
    }
  };

  float acc[MI][NI][4];
#pragma unroll
  for (int i = 0; i < MI; ++i)
#pragma unroll
    for (int j = 0; j < NI; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.0f;

  // Prologue: ST - 1 stages in flight (empty commit groups past the end keep the count uniform).
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

    const unsigned short* as = As + (kt % ST) * A_STAGE;
    const unsigned short* bs = Bs + (kt % ST) * B_STAGE;
#pragma unroll
    for (int kk = 0; kk < BK; kk += 16) {
      unsigned a[MI][4];
#pragma unroll
      for (int i = 0; i < MI; ++i)
        // Lanes 0-15 address rows 0-15 at k 0-7, lanes 16-31 the same rows at k 8-15: registers
        // 0-3 are then a0 (rows 0-7, k 0-7), a1 (rows 8-15), a2 (k 8-15), a3.
        ldmatrix_x4(a[i], as + (wm + i * 16 + (lane & 15)) * AS + kk + (lane >> 4) * 8);
      unsigned b[NI][2];
#pragma unroll
      for (int j = 0; j < NI; j += 2) {
        // Lanes 0-15 address k rows 0-15 of columns n..n+7, lanes 16-31 those of n+8..n+15:
        // transposed, registers 0-1 are b0, b1 of the first n8 tile, 2-3 of the second.
        unsigned r[4];
        ldmatrix_x4_trans(r, bs + (kk + (lane & 15)) * BS + wn + j * 8 + (lane >> 4) * 8);
        b[j][0] = r[0], b[j][1] = r[1], b[j + 1][0] = r[2], b[j + 1][1] = r[3];
      }
#pragma unroll
      for (int i = 0; i < MI; ++i)
#pragma unroll
        for (int j = 0; j < NI; ++j) mma16816<F16>(acc[i][j], a[i], b[j][0], b[j][1]);
    }
  }
  cp_async_wait<0>();

  // Epilogue: lane (g, t) = (lane / 4, lane % 4) holds rows g and g + 8 of each m16 tile, columns
  // 2t and 2t + 1 of each n8 tile: one 32-bit word of C each (N is a multiple of 8, so both
  // columns are inside C or neither).
  const int g = lane >> 2, t = lane & 3;
#pragma unroll
  for (int i = 0; i < MI; ++i)
#pragma unroll
    for (int j = 0; j < NI; ++j)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int r = row0 + wm + i * 16 + g + h * 8, c = col0 + wn + j * 8 + 2 * t;
        if (r >= p.M || c >= p.N) continue;
        unsigned* dst = reinterpret_cast<unsigned*>(C + (long long)r * p.ldc + c);
        float v0 = p.alpha * acc[i][j][2 * h], v1 = p.alpha * acc[i][j][2 * h + 1];
        if (p.beta != 0.0f) { // beta == 0 never reads C
          const unsigned old = *dst;
          v0 += p.beta * half_to_float<F16>(static_cast<unsigned short>(old & 0xffffu));
          v1 += p.beta * half_to_float<F16>(static_cast<unsigned short>(old >> 16));
        }
        *dst = pack2<F16>(v0, v1);
      }
}
