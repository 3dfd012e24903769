// Verification kernels for the GEMM op: random fill, an FP64 reference product and
// the error reduction. They run on the GPU because an FP64 product of 4096^3 on the host would
// cost minutes per check; they are plain and untuned on purpose, so that they are easy to trust.
#include "gemm_args.h"

// splitmix64: a counter-based generator, so any element's value depends only on (seed, index).
__device__ __forceinline__ unsigned long long ktune_mix(unsigned long long z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

extern "C" __global__ void ktune_fill_uniform(float* x, long long n, unsigned long long seed) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
    const unsigned long long r = ktune_mix(seed ^ ktune_mix(i));
    x[i] = (float)((double)(r >> 11) * (2.0 / 9007199254740992.0) - 1.0); // uniform in [-1, 1)
  }
}

// ref = alpha * A * B + beta * C0 in FP64 (beta == 0: C0 is not read). 16 x 16 tiles.
// a_col / b_col: 1 when the operand is column-major. ref is dense M x N.
extern "C" __global__ void ktune_gemm_reference(KtuneGemmArgs p, const float* C0, int a_col, int b_col, double* ref) {
  __shared__ double As[16][17];
  __shared__ double Bs[16][17];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int row = blockIdx.y * 16 + ty, col = blockIdx.x * 16 + tx;
  double acc = 0.0;
  for (int k0 = 0; k0 < p.K; k0 += 16) {
    const int ak = k0 + tx, bk = k0 + ty;
    const long long ai = a_col ? ak * p.lda + row : row * p.lda + ak;
    const long long bi = b_col ? col * p.ldb + bk : bk * p.ldb + col;
    As[ty][tx] = (row < p.M && ak < p.K) ? (double)p.A[ai] : 0.0;
    Bs[ty][tx] = (bk < p.K && col < p.N) ? (double)p.B[bi] : 0.0;
    __syncthreads();
    for (int kk = 0; kk < 16; ++kk) acc += As[ty][kk] * Bs[kk][tx];
    __syncthreads();
  }
  if (row < p.M && col < p.N) {
    double v = (double)p.alpha * acc;
    if (p.beta != 0.0f) v += (double)p.beta * (double)C0[row * p.ldc + col];
    ref[row * (long long)p.N + col] = v;
  }
}

// sums[0] += (c - ref)^2, sums[1] += ref^2; counts[0]: non-finite results; counts[1]: elements
// of C's row padding (columns N..ldc-1) that differ from C0, i.e. written out of bounds.
extern "C" __global__ void ktune_gemm_compare(const float* C, const float* C0, const double* ref, int M, int N,
                                              long long ldc, double* sums, unsigned long long* counts) {
  double d2 = 0.0, r2 = 0.0;
  unsigned long long bad = 0, stray = 0;
  const long long total = (long long)M * ldc;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < total; i += (long long)gridDim.x * blockDim.x) {
    const long long row = i / ldc, col = i % ldc;
    const float c = C[i];
    if (col >= N) {
      // Bitwise compare: NaN poison in the padding must stay the same NaN.
      if (__float_as_uint(c) != __float_as_uint(C0[i])) ++stray;
      continue;
    }
    const double r = ref[row * N + col];
    if (!isfinite(c)) { ++bad; continue; }
    d2 += (c - r) * (c - r);
    r2 += r * r;
  }
  atomicAdd(&sums[0], d2);
  atomicAdd(&sums[1], r2);
  if (bad) atomicAdd(&counts[0], bad);
  if (stray) atomicAdd(&counts[1], stray);
}
