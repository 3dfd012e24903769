// gemm_naive: one thread per element of C, the first rung of the ladder and the baseline every
// other family is measured against. BX x BY threads per block; each thread walks all of K.
#include "gemm_common.cuh"

template <int BX, int BY, int A_COL, int B_COL>
__global__ void __launch_bounds__(BX * BY) gemm_naive(KtuneGemmArgs p) {
  using ktune_dev::offset;
  // x runs along N so that a warp's loads of B (row-major) and stores of C are coalesced.
  const int col = blockIdx.x * BX + threadIdx.x;
  const int row = blockIdx.y * BY + threadIdx.y;
  if (row >= p.M || col >= p.N) return;
  float acc = 0.0f;
  for (int k = 0; k < p.K; ++k) acc = fmaf(p.A[offset<A_COL>(row, k, p.lda)], p.B[offset<B_COL>(k, col, p.ldb)], acc);
  float* c = p.C + row * p.ldc + col;
  *c = ktune_dev::axpby(p.alpha, acc, p.beta, c);
}
