// scale_add: out = alpha * x + beta * y over n contiguous elements, f32 / bf16 / f16 in and out,
// FP32 math. The worked example of docs/ADDING_AN_OP.md: an op of plain buffers, whose kernels
// take (x, y, out) in OpInfo::operands order, then n (a long long), then alpha and beta (floats).
// DT: 0 f32, 1 bf16, 2 f16; 16-bit elements travel as their bit patterns (NVRTC gets no
// <cuda_bf16.h>) and are converted with cvt.

template <int DT>
struct ScaleAddElem {
  using T = unsigned short;
};
template <>
struct ScaleAddElem<0> {
  using T = float;
};

__device__ __forceinline__ float scale_add_to_float(float v) { return v; }
template <int DT>
__device__ __forceinline__ float scale_add_to_float(unsigned short h) {
  if (DT == 1) return __uint_as_float(static_cast<unsigned>(h) << 16);
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
  return f;
}

template <int DT>
__device__ __forceinline__ typename ScaleAddElem<DT>::T scale_add_from_float(float f) {
  if constexpr (DT == 0) {
    return f;
  } else {
    unsigned short h;
    if (DT == 1) asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(f));
    else asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
    return h;
  }
}

// One element: beta * y rounded, then one fma (the two FP32 roundings OpInfo::roundings declares).
template <int DT>
__device__ __forceinline__ typename ScaleAddElem<DT>::T scale_add_one(typename ScaleAddElem<DT>::T x,
                                                                      typename ScaleAddElem<DT>::T y, float alpha,
                                                                      float beta) {
  float fx, fy;
  if constexpr (DT == 0) fx = x, fy = y;
  else fx = scale_add_to_float<DT>(x), fy = scale_add_to_float<DT>(y);
  return scale_add_from_float<DT>(fmaf(alpha, fx, beta * fy));
}

// Family scale_add_simple: ITEMS elements a thread, BLOCK apart, one block per BLOCK * ITEMS.
template <int DT, int BLOCK, int ITEMS>
__global__ void __launch_bounds__(BLOCK)
    scale_add_simple(const typename ScaleAddElem<DT>::T* __restrict__ x, const typename ScaleAddElem<DT>::T* __restrict__ y,
                     typename ScaleAddElem<DT>::T* __restrict__ out, long long n, float alpha, float beta) {
  const long long base = static_cast<long long>(blockIdx.x) * (BLOCK * ITEMS) + threadIdx.x;
#pragma unroll
  for (int i = 0; i < ITEMS; ++i) {
    const long long j = base + static_cast<long long>(i) * BLOCK;
    if (j < n) out[j] = scale_add_one<DT>(x[j], y[j], alpha, beta);
  }
}

// Family scale_add_vec: VEC elements per load and store (VEC * element size bytes, which the
// problem's alignment class admits), UNROLL vectors a thread per step, a persistent grid striding
// over the vectors; the n % VEC elements past the last whole vector by the first block.
template <class T, int VEC>
struct alignas(VEC * sizeof(T)) ScaleAddPack {
  T e[VEC];
};

template <int DT, int BLOCK, int VEC, int UNROLL>
__global__ void __launch_bounds__(BLOCK)
    scale_add_vec(const typename ScaleAddElem<DT>::T* __restrict__ x, const typename ScaleAddElem<DT>::T* __restrict__ y,
                  typename ScaleAddElem<DT>::T* __restrict__ out, long long n, float alpha, float beta) {
  using T = typename ScaleAddElem<DT>::T;
  using Pack = ScaleAddPack<T, VEC>;
  const long long vectors = n / VEC;
  const Pack* xv = reinterpret_cast<const Pack*>(x);
  const Pack* yv = reinterpret_cast<const Pack*>(y);
  Pack* ov = reinterpret_cast<Pack*>(out);
  const long long stride = static_cast<long long>(gridDim.x) * BLOCK * UNROLL;
  for (long long v0 = static_cast<long long>(blockIdx.x) * BLOCK * UNROLL + threadIdx.x; v0 < vectors; v0 += stride) {
    Pack a[UNROLL], b[UNROLL];
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
      const long long v = v0 + static_cast<long long>(u) * BLOCK;
      if (v < vectors) a[u] = xv[v], b[u] = yv[v];
    }
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
      const long long v = v0 + static_cast<long long>(u) * BLOCK;
      if (v < vectors) {
        Pack r;
#pragma unroll
        for (int e = 0; e < VEC; ++e) r.e[e] = scale_add_one<DT>(a[u].e[e], b[u].e[e], alpha, beta);
        ov[v] = r;
      }
    }
  }
  if (blockIdx.x == 0)
    for (long long j = vectors * VEC + threadIdx.x; j < n; j += BLOCK) out[j] = scale_add_one<DT>(x[j], y[j], alpha, beta);
}
