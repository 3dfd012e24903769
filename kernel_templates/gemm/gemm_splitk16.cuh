// Split-K epilogue of the half-precision GEMM kernels: each block of the main kernel writes its FP32
// partial product to slice blockIdx.z of the workspace (leading dimension ws_ld, see
// gemm_workspace_ld); this kernel adds the slices as gemm_splitk_reduce does (splitk_sum), applies
// alpha and beta and rounds once to C's bf16 / fp16. Launched exactly like gemm_splitk_reduce
// (add_splitk_reduce: KTUNE_SPLITK_REDUCE_VEC columns a thread, 256 threads a block, a programmatic
// dependent of the main kernel on sm_90).
#pragma once
#include "gemm_half16.cuh"
#include "gemm_splitk.cuh"

// One thread per 4 consecutive elements of a row of C: C takes one 8-byte access where the
// thread's 4 halves are inside N and 8-byte aligned, else 4 single ones, so the one cubin serves
// every N, ldc and alignment of C. beta == 0 never reads C.
template <int SPLITK, int F16>
__global__ void __launch_bounds__(256) gemm_splitk_reduce16(KtuneGemmArgs p) {
  using namespace ktune_dev;
  using namespace ktune_dev::half16;
  constexpr int V = KTUNE_SPLITK_REDUCE_VEC;
  static_assert(V == 4, "four halves are one 8-byte access");
  long long row;
  int col;
  float sum[V];
  if (!splitk_sum<SPLITK, V>(p, row, col, sum)) return;
  unsigned short* const c = reinterpret_cast<unsigned short*>(p.C) + row * p.ldc + col;
  if (col + V <= p.N && reinterpret_cast<unsigned long long>(c) % 8 == 0) {
    float r[V];
#pragma unroll
    for (int e = 0; e < V; ++e) r[e] = p.alpha * sum[e];
    if (p.beta != 0.0f) {
      const uint2 old = *reinterpret_cast<const uint2*>(c);
      r[0] += p.beta * to_float<F16>(static_cast<unsigned short>(old.x & 0xffffu));
      r[1] += p.beta * to_float<F16>(static_cast<unsigned short>(old.x >> 16));
      r[2] += p.beta * to_float<F16>(static_cast<unsigned short>(old.y & 0xffffu));
      r[3] += p.beta * to_float<F16>(static_cast<unsigned short>(old.y >> 16));
    }
    *reinterpret_cast<uint2*>(c) = make_uint2(pack2<F16>(r[0], r[1]), pack2<F16>(r[2], r[3]));
  } else {
#pragma unroll
    for (int e = 0; e < V; ++e)
      if (col + e < p.N) store1<F16>(c + e, sum[e], p.alpha, p.beta);
  }
}
