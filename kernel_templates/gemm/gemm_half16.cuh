// Device helpers of the half-precision (bf16 / fp16) GEMM kernels: conversions between FP32 and
// 16-bit words, ldmatrix, 16-byte cp.async on 16-bit words. Operands travel as unsigned short
// (KtuneGemmArgs' float pointers are reinterpreted: the argument block predates half precision).
// F16 = 1: IEEE binary16; F16 = 0: bfloat16. Everything here is in ktune_dev::half16 so that it
// cannot collide with helpers of the FP32 templates (gemm_common.cuh), which it does not change.
#pragma once
#include "gemm_common.cuh"

namespace ktune_dev {
namespace half16 {

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

// The same on a 32-bit shared address (callers add compile-time offsets to a precomputed one).
__device__ __forceinline__ void ldmatrix_x4_s(unsigned (&r)[4], unsigned a) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(a));
}
__device__ __forceinline__ void ldmatrix_x4_trans_s(unsigned (&r)[4], unsigned a) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(a));
}

// Two FP32 values rounded to nearest (even) into one 32-bit word of halves (lo in the low 16 bits).
template <int F16>
__device__ __forceinline__ unsigned pack2(float lo, float hi) {
  unsigned r;
  if constexpr (F16)
    asm("cvt.rn.f16x2.f32 %0, %1, %2;\n" : "=r"(r) : "f"(hi), "f"(lo));
  else
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;\n" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}

// D += A * B on the tensor cores, one m16n8k16 tile in FP32 (A row-major, B column-major in
// registers as ldmatrix leaves them): the MMA of every mma.sync half-precision family.
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

// One FP32 value rounded to nearest (even) into a half.
template <int F16>
__device__ __forceinline__ unsigned short from_float(float x) {
  unsigned short h;
  if constexpr (F16)
    asm("cvt.rn.f16.f32 %0, %1;\n" : "=h"(h) : "f"(x));
  else
    asm("cvt.rn.bf16.f32 %0, %1;\n" : "=h"(h) : "f"(x));
  return h;
}

template <int F16>
__device__ __forceinline__ float to_float(unsigned short h) {
  if constexpr (F16) {
    float f;
    asm("cvt.f32.f16 %0, %1;\n" : "=f"(f) : "h"(h));
    return f;
  } else {
    return __uint_as_float(unsigned(h) << 16);
  }
}

// alpha * acc + beta * old, rounded to a half; old is read (through `c`) only when beta != 0
// (BLAS semantics: with beta == 0, C may hold NaN).
template <int F16>
__device__ __forceinline__ void store1(unsigned short* c, float acc, float alpha, float beta) {
  float v = alpha * acc;
  if (beta != 0.0f) v += beta * to_float<F16>(*c);
  *c = from_float<F16>(v);
}

// The pair of C elements (r, c), (r, c + 1) of an m16n8 accumulator fragment (c even, r < M,
// c < N; c + 1 may be past N): alpha * (v0, v1) + beta * C, one 32-bit store where the pair is
// inside C and 4-byte aligned (ldc even), else one half at a time. The epilogue of the
// tensor-core half GEMMs (gemm_tc16, gemm_wgmma).
template <int F16>
__device__ __forceinline__ void store_pair(const KtuneGemmArgs& p, int r, int c, float v0, float v1) {
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

} // namespace half16
} // namespace ktune_dev
