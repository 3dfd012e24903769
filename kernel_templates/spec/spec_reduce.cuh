// The whole-buffer reads of a user kernel's loop condition (max_of, min_of, sum_of; docs/
// KERNEL_SPEC.md, "Loops") reduced on the GPU, so that a round's test reads 8 bytes back rather
// than the buffer (a pagerank's 4 MB of differences a round, copied and reduced on the host, took
// longer than the round's kernels). A spec whose conditions have such reads gets this appended to
// its source (KernelSpec::whole_reads); the launcher runs it in the round's test
// (runtime/buffers_launch.cpp). Every name carries ktune_: it compiles beside the user's code, and
// under their -D macros.
#pragma once
#include "spec_elem.cuh"

// op (SpecWhile::Read): 1 max, 2 min, 3 sum, in double; a NaN anywhere gives NaN (the launcher
// fails the call on it, as the host's read did). Each block reduces its grid-stride share into
// ktune_partials[blockIdx.x]; the last block to arrive (ktune_arrived, zeroed before the launch)
// reduces those into ktune_out[0]. blockDim.x is 256.
extern "C" __global__ void ktune_spec_reduce(const void* ktune_x, long long ktune_n, int ktune_t, int ktune_op,
                                             double* ktune_partials, unsigned* ktune_arrived, double* ktune_out) {
  __shared__ double ktune_s[256];
  __shared__ bool ktune_last;
  const double ktune_none = ktune_op == 1 ? -__longlong_as_double(0x7ff0000000000000ll)
                            : ktune_op == 2 ? __longlong_as_double(0x7ff0000000000000ll) : 0.0;
  auto ktune_join = [&](double a, double b) {
    if (a != a || b != b) return a + b; // NaN stays
    return ktune_op == 1 ? fmax(a, b) : ktune_op == 2 ? fmin(a, b) : a + b;
  };
  double ktune_v = ktune_none;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < ktune_n; i += (long long)gridDim.x * blockDim.x)
    ktune_v = ktune_join(ktune_v, ktune_spec_load(ktune_x, i, ktune_t));
  ktune_s[threadIdx.x] = ktune_v;
  __syncthreads();
  for (unsigned w = blockDim.x / 2; w > 0; w >>= 1) {
    if (threadIdx.x < w) ktune_s[threadIdx.x] = ktune_join(ktune_s[threadIdx.x], ktune_s[threadIdx.x + w]);
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    ktune_partials[blockIdx.x] = ktune_s[0];
    __threadfence();
    ktune_last = atomicAdd(ktune_arrived, 1u) == gridDim.x - 1;
  }
  __syncthreads();
  if (!ktune_last) return;
  __threadfence();
  ktune_v = ktune_none;
  for (unsigned b = threadIdx.x; b < gridDim.x; b += blockDim.x)
    ktune_v = ktune_join(ktune_v, ((volatile double*)ktune_partials)[b]);
  ktune_s[threadIdx.x] = ktune_v;
  __syncthreads();
  for (unsigned w = blockDim.x / 2; w > 0; w >>= 1) {
    if (threadIdx.x < w) ktune_s[threadIdx.x] = ktune_join(ktune_s[threadIdx.x], ktune_s[threadIdx.x + w]);
    __syncthreads();
  }
  if (threadIdx.x == 0) ktune_out[0] = ktune_s[0];
}
