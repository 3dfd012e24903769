// The split-K epilogue shared by the GEMM families that cut K across blocks: each block writes
// its partial product to slice blockIdx.z of a workspace (leading dimension ws_ld, see
// gemm_workspace_ld) and this kernel adds the slices.
#pragma once
#include "gemm_common.cuh"

// What every split-K reduce (this one, gemm_splitk16.cuh's for a 16-bit C) does before its
// store: waits for the main kernel's grid (launched as its programmatic dependent on sm_90, its
// blocks may be resident before the main kernel ends), finds the thread's row of C and first of
// its V columns, and adds the SPLITK partial products of the workspace in slice order (so the
// result is bit-for-bit repeatable). False for a thread past the last row.
template <int SPLITK, int V>
__device__ __forceinline__ bool splitk_sum(const KtuneGemmArgs& p, long long& row, int& col, float (&sum)[V]) {
  using namespace ktune_dev;
  wait_for_previous_grid();
  const int groups = (p.N + V - 1) / V;
  const long long idx = blockIdx.x * 256ll + threadIdx.x;
  if (idx >= (long long)p.M * groups) return false;
  row = idx / groups;
  col = int(idx % groups) * V;
  const long long slice = (long long)p.M * p.ws_ld;
  const float* w = p.workspace + row * p.ws_ld + col;
#pragma unroll
  for (int e = 0; e < V; ++e) sum[e] = 0.0f;
#pragma unroll
  for (int z = 0; z < SPLITK; ++z) {
    float v[V];
    copy_vec<V>(v, w + z * slice);
#pragma unroll
    for (int e = 0; e < V; ++e) sum[e] += v[e];
  }
  return true;
}

// The sum, with alpha and beta, into an FP32 C. One thread per 4 consecutive elements of a row of
// C: workspace rows (ws_ld a multiple of 4) always take float4 loads; C takes a float4 store where
// the thread's 4 elements are 16-byte aligned, else 4 single ones, so the one cubin serves every
// alignment of C.
template <int SPLITK>
__global__ void __launch_bounds__(256) gemm_splitk_reduce(KtuneGemmArgs p) {
  using namespace ktune_dev;
  constexpr int V = KTUNE_SPLITK_REDUCE_VEC;
  long long row;
  int col;
  float sum[V];
  if (!splitk_sum<SPLITK, V>(p, row, col, sum)) return;
  float* const c = p.C + row * p.ldc + col;
  if (reinterpret_cast<unsigned long long>(c) % (V * sizeof(float)) == 0) {
    store_out<V, true, false>(p, c, col, sum);
  } else {
#pragma unroll
    for (int e = 0; e < V; ++e) store_out<1, true, false>(p, c + e, col + e, sum + e);
  }
}
