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
