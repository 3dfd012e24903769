// gemm_smem: square TILE x TILE shared-memory tiles of A and B, one thread per element of C.
// The second rung: each global element is read TILE times less often than in gemm_naive.
#include "gemm_common.cuh"

template <int TILE, int A_COL, int B_COL>
__global__ void __launch_bounds__(TILE * TILE) gemm_smem(KtuneGemmArgs p) {
  using ktune_dev::offset;
  // +1 column: the column reads of As would otherwise hit one bank TILE times.
  __shared__ float As[TILE][TILE + 1];
  __shared__ float Bs[TILE][TILE + 1];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int row = blockIdx.y * TILE + ty, col = blockIdx.x * TILE + tx;
  float acc = 0.0f;
  for (int k0 = 0; k0 < p.K; k0 += TILE) {
    // Column-major operands load with the thread roles swapped, to stay coalesced.
    const int ar = A_COL ? blockIdx.y * TILE + tx : row, ac = A_COL ? k0 + ty : k0 + tx;
    const int br = B_COL ? k0 + tx : k0 + ty, bc = B_COL ? blockIdx.x * TILE + ty : col;
    const float a = (ar < p.M && ac < p.K) ? p.A[offset<A_COL>(ar, ac, p.lda)] : 0.0f;
    const float b = (br < p.K && bc < p.N) ? p.B[offset<B_COL>(br, bc, p.ldb)] : 0.0f;
    if (A_COL) As[tx][ty] = a; else As[ty][tx] = a;
    if (B_COL) Bs[tx][ty] = b; else Bs[ty][tx] = b;
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < TILE; ++kk) acc = fmaf(As[ty][kk], Bs[kk][tx], acc);
    __syncthreads();
  }
  if (row < p.M && col < p.N) {
    float* c = p.C + row * p.ldc + col;
    *c = ktune_dev::axpby(p.alpha, acc, p.beta, c);
  }
}
