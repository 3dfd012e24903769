// The sum of n floats into out[0], with preprocessor parameters (the spec's default,
// "params_as": "defines", as Kernel Tuner passes them): BLOCK threads a block, ITEMS vectors in
// flight a thread, VEC floats a vector load. Two launches: reduce_init clears the sum, then
// reduce_sum's blocks stride over the input (a persistent grid) and add one partial sum each.
#ifndef BLOCK
#define BLOCK 256
#endif
#ifndef ITEMS
#define ITEMS 4
#endif
#ifndef VEC
#define VEC 4
#endif

struct alignas(4 * VEC) FloatVec {
  float v[VEC];
};

// Every kernel of a launch takes the spec's arguments, in order.
extern "C" __global__ void reduce_init(const float*, float* out, long long) { out[0] = 0.0f; }

extern "C" __global__ void __launch_bounds__(BLOCK) reduce_sum(const float* __restrict__ x, float* __restrict__ out, long long n) {
  const FloatVec* xv = reinterpret_cast<const FloatVec*>(x);
  const long long vectors = n / VEC;
  const long long stride = static_cast<long long>(gridDim.x) * BLOCK * ITEMS;
  float acc = 0.0f;
  for (long long base = static_cast<long long>(blockIdx.x) * BLOCK * ITEMS + threadIdx.x; base < vectors; base += stride) {
    FloatVec in[ITEMS];
#pragma unroll
    for (int i = 0; i < ITEMS; ++i) {
      const long long v = base + static_cast<long long>(i) * BLOCK;
      if (v < vectors) in[i] = xv[v];
      else
#pragma unroll
        for (int e = 0; e < VEC; ++e) in[i].v[e] = 0.0f;
    }
#pragma unroll
    for (int i = 0; i < ITEMS; ++i)
#pragma unroll
      for (int e = 0; e < VEC; ++e) acc += in[i].v[e];
  }
  if (blockIdx.x == 0) // the n % VEC floats past the last whole vector
    for (long long j = vectors * VEC + threadIdx.x; j < n; j += BLOCK) acc += x[j];
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, o);
  __shared__ float warp_sums[BLOCK / 32];
  if (threadIdx.x % 32 == 0) warp_sums[threadIdx.x / 32] = acc;
  __syncthreads();
  if (threadIdx.x < 32) {
    acc = threadIdx.x < BLOCK / 32 ? warp_sums[threadIdx.x] : 0.0f;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, o);
    if (threadIdx.x == 0) atomicAdd(out, acc);
  }
}

// The reference: one block of 1024 threads summing in FP64.
extern "C" __global__ void reduce_reference(const float* x, float* out, long long n) {
  __shared__ double s[1024];
  double acc = 0;
  for (long long j = threadIdx.x; j < n; j += blockDim.x) acc += x[j];
  s[threadIdx.x] = acc;
  __syncthreads();
  for (int w = blockDim.x / 2; w > 0; w >>= 1) {
    if (threadIdx.x < w) s[threadIdx.x] += s[threadIdx.x + w];
    __syncthreads();
  }
  if (threadIdx.x == 0) out[0] = static_cast<float>(s[0]);
}
