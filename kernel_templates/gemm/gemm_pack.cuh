// Operand packing, for the GEMM families whose fast path needs 16-byte-aligned rows and whole
// tiles: gemm_pack copies A and B into the workspace, each row padded to a multiple of 4 floats
// and each dimension zero-padded up to a multiple of the kernel's tile (MQ, NQ, KQ), so that the
// main kernel loads whole vectors with no bounds checks whatever the problem's shape, leading
// dimensions and pointers. The zeros add nothing to the products; only C keeps the true shape.
// The packed copies follow the split-K slices in the workspace (SLICES of M x ws_ld floats; 0 when
// the kernel does not split K), so gemm_splitk_reduce still finds its slices at the start.
// Host side: gemm_pack.cpp, which sizes the workspace with the same arithmetic.
#pragma once
#include "gemm_common.cuh"

namespace ktune_dev {

__device__ __forceinline__ long long round_up(long long x, long long q) { return (x + q - 1) / q * q; }

// Where the packed operands lie, in the storage order of the originals (A_COL / B_COL).
template <int MQ, int NQ, int KQ, int SLICES, int A_COL, int B_COL>
struct PackedLayout {
  long long mp, np, kp;     // padded sizes
  long long a_rows, a_ld;   // A' storage: a_rows rows of a_ld floats
  long long b_rows, b_ld;
  float* a;
  float* b;

  __device__ __forceinline__ explicit PackedLayout(const KtuneGemmArgs& p) {
    mp = round_up(p.M, MQ), np = round_up(p.N, NQ), kp = round_up(p.K, KQ);
    a_rows = A_COL ? kp : mp, a_ld = A_COL ? mp : kp;
    b_rows = B_COL ? np : kp, b_ld = B_COL ? kp : np;
    a = p.workspace + SLICES * (long long)p.M * p.ws_ld;
    b = a + a_rows * a_ld;
  }

  // p as the main kernel should see it: the packed operands and the padded K. M and N stay
  // true, so the epilogue writes only C's own elements.
  __device__ __forceinline__ KtuneGemmArgs apply(KtuneGemmArgs p) const {
    p.A = a, p.B = b, p.lda = a_ld, p.ldb = b_ld, p.K = static_cast<int>(kp);
    return p;
  }
};

} // namespace ktune_dev

// blockIdx.z = 0 packs A, 1 packs B, in 16-byte chunks (4 floats; a packed row is a whole number
// of them) through pack_chunks. Reads are scalar and coalesced: the source rows may start anywhere.
// The main kernel may be launched as this one's programmatic dependent (it waits for this grid
// before it reads the copies): its blocks may take SMs as ours leave.
template <int MQ, int NQ, int KQ, int SLICES, int A_COL, int B_COL>
__global__ void __launch_bounds__(256) gemm_pack(KtuneGemmArgs p) {
  ktune_dev::let_next_grid_launch();
  const ktune_dev::PackedLayout<MQ, NQ, KQ, SLICES, A_COL, B_COL> q(p);
  const bool is_a = blockIdx.z == 0;
  const float* const src = is_a ? p.A : p.B;
  const long long src_ld = is_a ? p.lda : p.ldb;
  const long long src_rows = is_a ? (A_COL ? p.K : p.M) : (B_COL ? p.N : p.K);
  const long long src_cols = is_a ? (A_COL ? p.M : p.K) : (B_COL ? p.K : p.N);
  const long long rows = is_a ? q.a_rows : q.b_rows, ld = is_a ? q.a_ld : q.b_ld;
  ktune_dev::pack_chunks(unsigned(rows), unsigned(ld / 4), reinterpret_cast<uint4*>(is_a ? q.a : q.b), [&](unsigned r, unsigned j) {
    const long long c = 4ll * j;
    unsigned v[4];
#pragma unroll
    for (int e = 0; e < 4; ++e) v[e] = r < src_rows && c + e < src_cols ? __float_as_uint(src[r * src_ld + c + e]) : 0u;
    return make_uint4(v[0], v[1], v[2], v[3]);
  });
}
