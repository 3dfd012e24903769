// The one argument block every GEMM kernel takes, by value. This header is compiled twice: by the
// host compiler (runtime/ packs it) and by NVRTC (embedded with the templates), so it must stay
// plain C++ with no includes and no CUDA-only keywords; both sides then agree on its layout.
#pragma once

struct KtuneGemmArgs {
  const float* A;   // M x K, row-major (layout N) or column-major (layout T), leading dim lda
  const float* B;   // K x N, likewise with ldb
  float* C;         // M x N, always row-major, leading dim ldc
  float* workspace; // split-K partial sums: splits x M x ws_ld floats; null when not split
  long long lda, ldb, ldc;
  long long ws_ld;  // workspace row stride: ktune::gemm_workspace_ld(N) (see gemm_families.h)
  int M, N, K;
  float alpha, beta; // beta == 0 means C is never read (it may hold NaN)
};

// Columns of C that each thread of gemm_splitk_reduce adds (the host sizes the grid with it).
#define KTUNE_SPLITK_REDUCE_VEC 4
