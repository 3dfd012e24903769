// The Euclidean norm of n floats into out[0], in two passes that always add in the same order
// (the same input gives the same bits, run after run, which atomics do not promise):
// l2norm_partials writes one sum of squares a block into `partials`, a buffer of one float a
// block, so its size follows the config; l2norm_finish adds them up in FP64 in one block and
// takes the root. Each pass takes its own arguments (the spec's launch[i].args), and the second
// gets the partials' count, a scalar the spec computes from the config.

template <int WIDTH, class T>
__device__ __forceinline__ T warp_sum(T v) {
#pragma unroll
  for (int o = WIDTH / 2; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
  return v;
}

// A block's threads' values summed into thread 0's (T: float or double).
template <int BLOCK, class T>
__device__ __forceinline__ T block_sum(T v) {
  __shared__ T warp_sums[BLOCK / 32];
  v = warp_sum<32>(v);
  if (threadIdx.x % 32 == 0) warp_sums[threadIdx.x / 32] = v;
  __syncthreads();
  if (threadIdx.x < 32) {
    v = threadIdx.x < BLOCK / 32 ? warp_sums[threadIdx.x] : T(0);
    v = warp_sum<32>(v);
  }
  return v;
}

template <int VEC>
struct alignas(4 * VEC) FloatVec {
  float v[VEC];
};

// Block b squares and sums elements [b * BLOCK * ITEMS * VEC, (b + 1) * BLOCK * ITEMS * VEC):
// ITEMS loads of VEC floats in flight a thread, neighbouring threads on neighbouring vectors.
template <int BLOCK, int ITEMS, int VEC>
__global__ void __launch_bounds__(BLOCK) l2norm_partials(const float* __restrict__ x, float* __restrict__ partials, long long n) {
  const long long first = static_cast<long long>(blockIdx.x) * BLOCK * ITEMS * VEC;
  FloatVec<VEC> in[ITEMS];
#pragma unroll
  for (int i = 0; i < ITEMS; ++i) {
    const long long at = first + (static_cast<long long>(i) * BLOCK + threadIdx.x) * VEC;
    if (at + VEC <= n) {
      in[i] = *reinterpret_cast<const FloatVec<VEC>*>(x + at);
    } else {
#pragma unroll
      for (int e = 0; e < VEC; ++e) in[i].v[e] = at + e < n ? x[at + e] : 0.0f;
    }
  }
  float acc = 0.0f;
#pragma unroll
  for (int i = 0; i < ITEMS; ++i)
#pragma unroll
    for (int e = 0; e < VEC; ++e) acc = fmaf(in[i].v[e], in[i].v[e], acc);
  acc = block_sum<BLOCK>(acc);
  if (threadIdx.x == 0) partials[blockIdx.x] = acc;
}

// One block of FINAL threads adds the parts partial sums in FP64 (the FP32 error is the first
// pass's alone) and writes the root.
template <int FINAL>
__global__ void __launch_bounds__(FINAL) l2norm_finish(const float* __restrict__ partials, int parts, float* __restrict__ out) {
  double acc = 0.0;
  for (int i = threadIdx.x; i < parts; i += FINAL) acc += partials[i];
  acc = block_sum<FINAL>(acc);
  if (threadIdx.x == 0) out[0] = static_cast<float>(sqrt(acc));
}

// The reference: one block of 1024 threads, every square summed in FP64.
extern "C" __global__ void l2norm_reference(const float* x, float* out, long long n) {
  __shared__ double s[1024];
  double acc = 0.0;
  for (long long j = threadIdx.x; j < n; j += blockDim.x) acc += static_cast<double>(x[j]) * x[j];
  s[threadIdx.x] = acc;
  __syncthreads();
  for (int w = blockDim.x / 2; w > 0; w >>= 1) {
    if (threadIdx.x < w) s[threadIdx.x] += s[threadIdx.x + w];
    __syncthreads();
  }
  if (threadIdx.x == 0) out[0] = static_cast<float>(sqrt(s[0]));
}
