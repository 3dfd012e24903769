// Verification kernels for the GEMM op: random fill, widening to FP64 (the reference product and
// the magnitude product |alpha| |A| |B| + |beta| |C0| are cuBLAS DGEMM), the per-element error
// check against the bound of docs/TEMPLATES.md ("Verification"), and the checks that a kernel left
// its inputs and everything around its buffers alone. They run on the GPU because an FP64 product
// of 4096^3 on the host would cost minutes per check; they are plain on purpose, to be easy to trust.
#include "gemm_args.h"
#include "ktune_random.cuh"

#define KTUNE_GRID_STRIDE(i, n) \
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < (n); i += (long long)gridDim.x * blockDim.x)

extern "C" __global__ void ktune_fill_uniform(float* x, long long n, unsigned long long seed) {
  KTUNE_GRID_STRIDE(i, n) x[i] = (float)ktune_uniform(seed, i);
}

// The same uniform values as ktune_fill_uniform, rounded to the half type: the kernel under test,
// cuBLAS and the reference all see these rounded inputs.
extern "C" __global__ void ktune_fill_uniform_half(unsigned short* x, long long n, unsigned long long seed, int f16) {
  KTUNE_GRID_STRIDE(i, n) x[i] = ktune_to_half((float)ktune_uniform(seed, i), f16);
}

// counts[0] += elements of x that are no longer what the fill of (seed, n) wrote: the kernel under
// test wrote into an input. The generator is counter-based, so no pristine copy is needed.
extern "C" __global__ void ktune_count_changed_inputs(const void* x, long long n, unsigned long long seed, int half, int f16,
                                                      unsigned long long* counts) {
  unsigned long long changed = 0;
  KTUNE_GRID_STRIDE(i, n) {
    const float v = (float)ktune_uniform(seed, i);
    if (half) changed += ((const unsigned short*)x)[i] != ktune_to_half(v, f16);
    else changed += __float_as_uint(((const float*)x)[i]) != __float_as_uint(v);
  }
  if (changed) atomicAdd(&counts[0], changed);
}

// counts[0] += bytes of a guard region that no longer hold `pattern`: written out of bounds.
extern "C" __global__ void ktune_count_changed_bytes(const unsigned char* x, long long n, int pattern, unsigned long long* counts) {
  unsigned long long changed = 0;
  KTUNE_GRID_STRIDE(i, n) changed += x[i] != (unsigned char)pattern;
  if (changed) atomicAdd(&counts[0], changed);
}

// Widens an operand to FP64 for cuBLAS DGEMM, element for element, so leading dimensions and
// padding stay as they are; take_abs: |x| (the magnitude product).
extern "C" __global__ void ktune_f32_to_f64(const float* x, double* y, long long n, int take_abs) {
  KTUNE_GRID_STRIDE(i, n) y[i] = take_abs ? fabs((double)x[i]) : (double)x[i];
}
extern "C" __global__ void ktune_half_to_f64(const unsigned short* x, double* y, long long n, int f16, int take_abs) {
  KTUNE_GRID_STRIDE(i, n) {
    const double v = ktune_half_value(x[i], f16);
    y[i] = take_abs ? fabs(v) : v;
  }
}
extern "C" __global__ void ktune_abs_f64(double* y, long long n) {
  KTUNE_GRID_STRIDE(i, n) y[i] = fabs(y[i]);
}

// An element of C as a number, and its bits: the padding is compared bitwise (NaN poison must stay
// the same NaN). F16 only matters for 16-bit C.
__device__ __forceinline__ double ktune_c_value(float c, int) { return (double)c; }
__device__ __forceinline__ double ktune_c_value(unsigned short c, int f16) { return ktune_half_value(c, f16); }
__device__ __forceinline__ unsigned ktune_c_bits(float c) { return __float_as_uint(c); }
__device__ __forceinline__ unsigned ktune_c_bits(unsigned short c) { return c; }

// The rule of one element (GemmOp::rule): |c - ref| <= u_out |ref| + u_prod |ref - beta c0| +
// gamma mag + tiny. u_prod allows an epilogue that rounds alpha A B to the output type before it
// adds beta C (cuBLAS's half GEMMs do): 0 where beta is 0.
struct KtuneElementRule {
  double u_out, gamma, tiny, u_prod, beta;
};

// ref, mag: FP64, M x ldc like C (mag = |alpha| |A| |B| + |beta| |C0|, the sum of magnitudes the
// rounding errors scale with). sums[0] += (c - ref)^2, sums[1] += ref^2, sums[2] += (ref - beta
// c0)^2 (the product's part, where beta != 0: the norm bound's second rounding); counts[0]: non-finite
// results; counts[1]: elements of C's row padding (columns N..ldc-1) that differ from C0, i.e.
// written out of bounds; counts[2]: elements over their bound; counts[3]: the largest ratio of
// error to bound, as the bits of a non-negative double (ordered as integers); counts[4]: the
// index of an element over its bound (the largest index), for the message.
template <class T>
__device__ void ktune_compare(const T* C, const T* C0, const double* ref, const double* mag, int M, int N, long long ldc,
                              KtuneElementRule rule, double* sums, unsigned long long* counts, int f16) {
  double d2 = 0.0, r2 = 0.0, p2 = 0.0, worst = 0.0;
  unsigned long long bad = 0, stray = 0, over = 0, where = 0;
  const long long total = (long long)M * ldc;
  KTUNE_GRID_STRIDE(i, total) {
    const long long col = i % ldc;
    if (col >= N) {
      if (ktune_c_bits(C[i]) != ktune_c_bits(C0[i])) ++stray;
      continue;
    }
    const double c = ktune_c_value(C[i], f16), r = ref[i];
    if (!isfinite(c)) { ++bad; continue; }
    const double d = c - r;
    d2 += d * d;
    r2 += r * r;
    const double prod = rule.beta != 0.0 ? r - rule.beta * ktune_c_value(C0[i], f16) : 0.0;
    p2 += prod * prod;
    const double bound = rule.u_out * fabs(r) + rule.u_prod * fabs(prod) + rule.gamma * mag[i] + rule.tiny;
    const double ratio = fabs(d) / bound;
    if (ratio > worst) worst = ratio;
    if (fabs(d) > bound) {
      ++over;
      where = (unsigned long long)i;
    }
  }
  atomicAdd(&sums[0], d2);
  atomicAdd(&sums[1], r2);
  atomicAdd(&sums[2], p2);
  if (bad) atomicAdd(&counts[0], bad);
  if (stray) atomicAdd(&counts[1], stray);
  if (over) {
    atomicAdd(&counts[2], over);
    atomicMax(&counts[4], where);
  }
  atomicMax(&counts[3], (unsigned long long)__double_as_longlong(worst));
}

extern "C" __global__ void ktune_gemm_compare(const float* C, const float* C0, const double* ref, const double* mag, int M, int N,
                                              long long ldc, KtuneElementRule rule, double* sums, unsigned long long* counts) {
  ktune_compare(C, C0, ref, mag, M, N, ldc, rule, sums, counts, 0);
}

// The same for a half-precision C (16-bit words); f16: 1 for IEEE half, 0 for bfloat16.
extern "C" __global__ void ktune_gemm_compare_half(const unsigned short* C, const unsigned short* C0, const double* ref,
                                                   const double* mag, int M, int N, long long ldc, KtuneElementRule rule,
                                                   double* sums, unsigned long long* counts, int f16) {
  ktune_compare(C, C0, ref, mag, M, N, ldc, rule, sums, counts, f16);
}
