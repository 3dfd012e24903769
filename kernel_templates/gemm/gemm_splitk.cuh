// The split-K epilogue shared by the GEMM families that cut K across blocks: each block writes
// its partial product to slice blockIdx.z of a workspace (leading dimension ws_ld, see
// gemm_workspace_ld) and this kernel adds the slices.
#pragma once
#include "gemm_common.cuh"

// Adds the SPLITK partial products in slice order (so the result is bit-for-bit repeatable)
// and applies alpha and beta. One thread per element of C.
template <int SPLITK>
__global__ void __launch_bounds__(256) gemm_splitk_reduce(KtuneGemmArgs p) {
  const long long idx = blockIdx.x * 256ll + threadIdx.x;
  if (idx >= (long long)p.M * p.N) return;
  const long long row = idx / p.N, col = idx % p.N;
  const long long slice = (long long)p.M * p.ws_ld;
  const float* w = p.workspace + row * p.ws_ld + col;
  float sum = 0.0f;
#pragma unroll
  for (int z = 0; z < SPLITK; ++z) sum += w[z * slice];
  float* c = p.C + row * p.ldc + col;
  *c = ktune_dev::axpby(p.alpha, sum, p.beta, c);
}

namespace ktune_dev {

// Split-K without a second kernel (FIX = 1): every K slice of an output tile has written its
// partial product to its workspace slice; the slice that arrives last (an atomic count per tile
// in p.counters) adds all of them in slice order, exactly as gemm_splitk_reduce does (so the two
// give the same bits), writes C and resets its counter for the next launch. The tile is rows x
// cols at (m0, col0), the counter the block's (blockIdx.x, blockIdx.y). The fences make each
// slice's stores visible before its arrival is counted, and the last one reads past L1.
template <int SPLITK, int NT>
__device__ __forceinline__ void splitk_fixup(const KtuneGemmArgs& p, int m0, int rows, int col0, int cols) {
  __shared__ unsigned last;
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) {
    unsigned* const ctr = p.counters + (blockIdx.y * gridDim.x + blockIdx.x);
    last = atomicAdd(ctr, 1u) == SPLITK - 1;
    if (last) atomicExch(ctr, 0u); // every slice has arrived: zero again for the next launch
  }
  __syncthreads();
  if (!last) return;
  __threadfence();
  const long long slice = (long long)p.M * p.ws_ld;
  for (int o = threadIdx.x; o < rows * cols; o += NT) {
    const int m = m0 + o / cols, col = col0 + o % cols;
    if (m >= p.M || col >= p.N) continue;
    const float* const w = p.workspace + m * p.ws_ld + col;
    float sum = 0.0f;
#pragma unroll
    for (int z = 0; z < SPLITK; ++z) sum += __ldcg(w + z * slice);
    float* const c = p.C + m * (long long)p.ldc + col;
    *c = axpby(p.alpha, sum, p.beta, c);
  }
}

} // namespace ktune_dev
