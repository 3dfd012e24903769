// The split-K epilogue shared by the GEMM families that cut K across blocks: each block writes
// its partial product to slice blockIdx.z of a workspace (leading dimension ws_ld, see
// gemm_workspace_ld) and this kernel adds the slices.
#pragma once
#include "gemm_common.cuh"

// Adds the SPLITK partial products in slice order (so the result is bit-for-bit repeatable)
// and applies alpha and beta. One thread per 4 consecutive elements of a row of C: workspace
// rows (ws_ld a multiple of 4) always take float4 loads; C takes a float4 store where the
// thread's 4 elements are 16-byte aligned, else 4 single ones, so the one cubin serves every
// alignment of C. Launched as a programmatic dependent of the main kernel (sm_90), its blocks may
// be resident before the main kernel ends: it waits for that grid's results before reading any.
template <int SPLITK>
__global__ void __launch_bounds__(256) gemm_splitk_reduce(KtuneGemmArgs p) {
  using namespace ktune_dev;
  constexpr int V = KTUNE_SPLITK_REDUCE_VEC;
  wait_for_previous_grid();
  const int groups = (p.N + V - 1) / V;
  const long long idx = blockIdx.x * 256ll + threadIdx.x;
  if (idx >= (long long)p.M * groups) return;
  const long long row = idx / groups;
  const int col = int(idx % groups) * V;
  const long long slice = (long long)p.M * p.ws_ld;
  const float* w = p.workspace + row * p.ws_ld + col;
  float sum[V];
#pragma unroll
  for (int e = 0; e < V; ++e) sum[e] = 0.0f;
#pragma unroll
  for (int z = 0; z < SPLITK; ++z) {
    float v[V];
    copy_vec<V>(v, w + z * slice);
#pragma unroll
    for (int e = 0; e < V; ++e) sum[e] += v[e];
  }
  float* const c = p.C + row * p.ldc + col;
  if (reinterpret_cast<unsigned long long>(c) % (V * sizeof(float)) == 0) {
    store_out<V, true, false>(p, c, col, sum);
  } else {
#pragma unroll
    for (int e = 0; e < V; ++e) store_out<1, true, false>(p, c + e, col + e, sum + e);
  }
}
