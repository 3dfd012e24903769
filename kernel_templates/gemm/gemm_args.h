// The one argument block every GEMM kernel takes, by value. This header is compiled twice: by the
// host compiler (runtime/ packs it) and by NVRTC (embedded with the templates), so it must stay
// plain C++ with no includes and no CUDA-only keywords; both sides then agree on its layout.
#pragma once

struct KtuneGemmArgs {
  const float* A;   // M x K, row-major (layout N) or column-major (layout T), leading dim lda
  const float* B;   // K x N, likewise with ldb
  float* C;         // M x N, always row-major, leading dim ldc
  float* workspace; // the plan's scratch (split-K partial sums: splits x M x ws_ld floats, then packed or split operands); null when it needs none
  long long lda, ldb, ldc;
  long long ws_ld;  // workspace row stride: ktune::gemm_workspace_ld(N) (see gemm_families.h)
  int M, N, K;
  float alpha, beta; // beta == 0 means C is never read (it may hold NaN)
};

// A CUDA tensor map (CUtensorMap: 128 opaque bytes, 128-byte aligned), spelled without cuda.h so
// that NVRTC can compile this header; the host static_asserts that the two agree (gemm_launch.cpp).
struct alignas(128) KtuneTensorMap {
  unsigned long long opaque[16];
};

// The argument block of the kernels that load A and B with the bulk tensor copy engine (TMA,
// sm_90): the usual block plus tensor maps of A and B, encoded by launch_gemm for the pointers and
// sizes of each launch (LaunchStep::tma). Passed by value as a __grid_constant__ parameter, so the
// maps stay in the parameter space where cp.async.bulk.tensor reads them.
struct KtuneGemmTmaArgs {
  KtuneGemmArgs g;
  KtuneTensorMap a, b;
  KtuneTensorMap c; // kernels that store C with TMA (gemm_wgmma's EPI = 1); else unset
};

// Columns of C that each thread of gemm_splitk_reduce adds (the host sizes the grid with it).
#define KTUNE_SPLITK_REDUCE_VEC 4

// gemm_wgmma's stream-K (SK > 0): the workspace's header before the partial-sum slots (bytes), one
// 4-byte flag per block of the main grid (a part parked), zeroed by gemm_wgmma_sk_clear each launch.
#define KTUNE_SK_HEADER_BYTES 1024
