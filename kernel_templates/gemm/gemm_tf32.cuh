// The big / small split of an FP32 value into two TF32 halves ("3xTF32"), shared by the FP32
// tensor-core GEMMs: gemm_tf32x3 (mma.sync, split as fragments are loaded) and gemm_wgmma_tf32x3
// (wgmma, split once by gemm_tf32x3_split into workspace copies).
#pragma once

namespace ktune_dev {

// tf32 with round-to-nearest (ties away), as a b32 whose low 13 bits are zero.
__device__ __forceinline__ unsigned to_tf32(float x) {
  unsigned r;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
  return r;
}

// x = big + small, big a tf32. CVT = 1: both halves rounded with cvt.rna.tf32.f32, which sm_90
// has no instruction for (ptxas emits ~9 integer and compare instructions per conversion).
// CVT = 0: big rounded by adding half a tf32 ulp to the bits and masking (2 instructions; it
// carries into the exponent as rounding should), small = x - big exactly, and small handed to the
// MMA unrounded: the tensor cores read a tf32 operand's top 19 bits, which truncates small, an
// error of at most 2^-10 of small, i.e. 2^-21 of x, as often up as down since big was rounded to
// nearest. Non-finite x stays non-finite: small = x - big is then NaN (NaN - big, inf - inf).
template <int CVT>
__device__ __forceinline__ void split_tf32(float x, unsigned& big, unsigned& small) {
  if constexpr (CVT) {
    big = to_tf32(x);
    small = to_tf32(x - __uint_as_float(big));
  } else {
    big = (__float_as_uint(x) + 0x1000u) & 0xffffe000u;
    small = __float_as_uint(x - __uint_as_float(big));
  }
}

} // namespace ktune_dev
