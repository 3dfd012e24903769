// Verification kernels for the GEMM op: random fill, widening to FP64 (the reference product
// itself is cuBLAS DGEMM) and the error reduction. They run on the GPU because an FP64 product of
// 4096^3 on the host would cost minutes per check; they are plain on purpose, to be easy to trust.
#include "gemm_args.h"
#include "ktune_random.cuh"

extern "C" __global__ void ktune_fill_uniform(float* x, long long n, unsigned long long seed) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
    x[i] = (float)ktune_uniform(seed, i);
  }
}

// The same uniform values as ktune_fill_uniform, rounded to the half type: the kernel under test,
// cuBLAS and the reference all see these rounded inputs.
extern "C" __global__ void ktune_fill_uniform_half(unsigned short* x, long long n, unsigned long long seed, int f16) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
    x[i] = ktune_to_half((float)ktune_uniform(seed, i), f16);
  }
}

extern "C" __global__ void ktune_half_to_f64(const unsigned short* x, double* y, long long n, int f16) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
    y[i] = ktune_half_value(x[i], f16);
}

// Widens an operand to FP64 for the reference product (cuBLAS DGEMM), element for element, so
// leading dimensions and padding stay as they are.
extern "C" __global__ void ktune_f32_to_f64(const float* x, double* y, long long n) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
    y[i] = (double)x[i];
}

// An element of C as a number, and its bits: the padding is compared bitwise (NaN poison must stay
// the same NaN). F16 only matters for 16-bit C.
__device__ __forceinline__ double ktune_c_value(float c, int) { return (double)c; }
__device__ __forceinline__ double ktune_c_value(unsigned short c, int f16) { return ktune_half_value(c, f16); }
__device__ __forceinline__ unsigned ktune_c_bits(float c) { return __float_as_uint(c); }
__device__ __forceinline__ unsigned ktune_c_bits(unsigned short c) { return c; }

// ref: FP64, M x ldc like C. sums[0] += (c - ref)^2, sums[1] += ref^2; counts[0]: non-finite results; counts[1]: elements
// of C's row padding (columns N..ldc-1) that differ from C0, i.e. written out of bounds.
template <class T>
__device__ void ktune_compare(const T* C, const T* C0, const double* ref, int M, int N, long long ldc, double* sums,
                              unsigned long long* counts, int f16) {
  double d2 = 0.0, r2 = 0.0;
  unsigned long long bad = 0, stray = 0;
  const long long total = (long long)M * ldc;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < total; i += (long long)gridDim.x * blockDim.x) {
    const long long col = i % ldc;
    if (col >= N) {
      if (ktune_c_bits(C[i]) != ktune_c_bits(C0[i])) ++stray;
      continue;
    }
    const double c = ktune_c_value(C[i], f16), r = ref[i]; // ref has C's shape and leading dimension
    if (!isfinite(c)) { ++bad; continue; }
    d2 += (c - r) * (c - r);
    r2 += r * r;
  }
  atomicAdd(&sums[0], d2);
  atomicAdd(&sums[1], r2);
  if (bad) atomicAdd(&counts[0], bad);
  if (stray) atomicAdd(&counts[1], stray);
}

extern "C" __global__ void ktune_gemm_compare(const float* C, const float* C0, const double* ref, int M, int N,
                                              long long ldc, double* sums, unsigned long long* counts) {
  ktune_compare(C, C0, ref, M, N, ldc, sums, counts, 0);
}

// The same for a half-precision C (16-bit words); f16: 1 for IEEE half, 0 for bfloat16.
extern "C" __global__ void ktune_gemm_compare_half(const unsigned short* C, const unsigned short* C0, const double* ref, int M,
                                                   int N, long long ldc, double* sums, unsigned long long* counts, int f16) {
  ktune_compare(C, C0, ref, M, N, ldc, sums, counts, f16);
}
