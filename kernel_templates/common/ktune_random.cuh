// Device-side test data for every op's verification kernels (gemm/gemm_reference.cu,
// rows/rows_reference.cu): a counter-based generator, so any element's value depends only on
// (seed, index) and a fill of gigabytes costs a kernel launch, and the half conversions written
// out in integer arithmetic and plain PTX, so reference modules need no CUDA headers and compile
// for any arch.
#pragma once

// splitmix64.
__device__ __forceinline__ unsigned long long ktune_mix(unsigned long long z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// Element i of stream `seed`, uniform in [-1, 1).
__device__ __forceinline__ double ktune_uniform(unsigned long long seed, long long i) {
  const unsigned long long r = ktune_mix(seed ^ ktune_mix((unsigned long long)i));
  return (double)(r >> 11) * (2.0 / 9007199254740992.0) - 1.0;
}

// Element i of stream `seed`, uniform in [0, 1): the host's twin is core/spec_op.cpp's uniform01
// (a spec's buffer filled on either side holds the same values).
__device__ __forceinline__ double ktune_uniform01(unsigned long long seed, long long i) {
  return (double)(ktune_mix(seed ^ ktune_mix((unsigned long long)i)) >> 11) * (1.0 / 9007199254740992.0);
}

// Half precision (bf16 / f16) travels as 16-bit words. F16: 1 for IEEE half, 0 for bfloat16.
__device__ __forceinline__ unsigned short ktune_to_half(float f, int f16) {
  if (f16) {
    unsigned short h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
    return h;
  }
  const unsigned u = __float_as_uint(f); // round to nearest even on the 16 bits dropped (inputs are finite)
  return (unsigned short)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
__device__ __forceinline__ double ktune_half_value(unsigned short h, int f16) {
  if (f16) {
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
    return (double)f;
  }
  return (double)__uint_as_float((unsigned)h << 16);
}
