// A fused bias + GELU (tanh form) over a rows x cols bf16 matrix: out[r][c] = gelu(x[r][c] +
// bias[c]), FP32 math, as transformer MLPs apply after their first GEMM. A block takes ROWS rows;
// its BLOCK threads stride over a row VEC elements at a time (one 2 * VEC-byte load of x, of bias
// and one store), so cols must be a multiple of VEC and the rows VEC-aligned (the constraints).
#include <cuda_bf16.h>

__device__ __forceinline__ float gelu_tanh(float v) {
  const float k = 0.7978845608028654f; // sqrt(2 / pi)
  return 0.5f * v * (1.0f + tanhf(k * (v + 0.044715f * v * v * v)));
}

template <int VEC>
struct alignas(2 * VEC) Bf16Vec {
  __nv_bfloat16 v[VEC];
};

template <int VEC, int BLOCK, int ROWS>
__global__ void __launch_bounds__(BLOCK) bias_gelu(const __nv_bfloat16* __restrict__ x, const __nv_bfloat16* __restrict__ bias,
                                                   __nv_bfloat16* __restrict__ out, int rows, int cols) {
  const int vectors = cols / VEC;
  for (int rr = 0; rr < ROWS; ++rr) {
    const int r = blockIdx.x * ROWS + rr;
    if (r >= rows) return;
    const Bf16Vec<VEC>* xr = reinterpret_cast<const Bf16Vec<VEC>*>(x + static_cast<long long>(r) * cols);
    const Bf16Vec<VEC>* br = reinterpret_cast<const Bf16Vec<VEC>*>(bias);
    Bf16Vec<VEC>* outr = reinterpret_cast<Bf16Vec<VEC>*>(out + static_cast<long long>(r) * cols);
    for (int c = threadIdx.x; c < vectors; c += BLOCK) {
      const Bf16Vec<VEC> a = xr[c], b = br[c];
      Bf16Vec<VEC> o;
#pragma unroll
      for (int e = 0; e < VEC; ++e) o.v[e] = __float2bfloat16(gelu_tanh(__bfloat162float(a.v[e]) + __bfloat162float(b.v[e])));
      outr[c] = o;
    }
  }
}

// The reference: one thread an element, in FP64.
__global__ void bias_gelu_reference(const __nv_bfloat16* x, const __nv_bfloat16* bias, __nv_bfloat16* out, int rows, int cols) {
  const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= static_cast<long long>(rows) * cols) return;
  const double v = double(__bfloat162float(x[i])) + double(__bfloat162float(bias[i % cols]));
  const double g = 0.5 * v * (1.0 + tanh(0.7978845608028654 * (v + 0.044715 * v * v * v)));
  out[i] = __float2bfloat16(static_cast<float>(g));
}
