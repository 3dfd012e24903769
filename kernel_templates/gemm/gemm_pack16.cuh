// Operand packing for the half-precision GEMM kernels (gemm_pack.cuh's 16-bit twin; that one,
// which the FP32 families use, is unchanged): gemm_pack16 copies A and B into the workspace in
// their own storage order (A_COL / B_COL), each storage row padded to a multiple of 8 halves (16
// bytes) and each dimension zero-padded up to a multiple of the main kernel's tile (MQ, NQ, KQ),
// so that the main kernel loads whole 16-byte chunks with no bounds checks whatever the problem's
// shape, leading dimensions and pointers. The zeros add nothing to the products; only C keeps the
// true shape. The packed copies follow the split-K slices in the workspace (SLICES slices of
// M x ws_ld floats; 0 when K is not split), so a split-K reduction still finds its slices at the
// start; a slice is a multiple of 16 bytes (ws_ld is a multiple of 4), so A' starts 16-byte
// aligned, and B' does too (A' is a whole number of 8-half rows). Host side: gemm_pack16_* in
// gemm_pack.cpp, which sizes the workspace with the same arithmetic.
#pragma once
#include "gemm_common.cuh"

namespace ktune_dev {
namespace half16 {

__device__ __forceinline__ long long round_up16(long long x, long long q) { return (x + q - 1) / q * q; }

// Where the packed operands lie. MQ, NQ and KQ are multiples of 8 (tiles of 16-byte chunks).
template <int MQ, int NQ, int KQ, int SLICES, int A_COL, int B_COL>
struct PackedLayout {
  static_assert(MQ % 8 == 0 && NQ % 8 == 0 && KQ % 8 == 0, "packed rows are whole 16-byte chunks");
  long long mp, np, kp;   // padded sizes
  long long a_rows, a_ld; // A' storage: a_rows rows of a_ld halves
  long long b_rows, b_ld;
  unsigned short* a;
  unsigned short* b;

  __device__ __forceinline__ explicit PackedLayout(const KtuneGemmArgs& p) {
    mp = round_up16(p.M, MQ), np = round_up16(p.N, NQ), kp = round_up16(p.K, KQ);
    a_rows = A_COL ? kp : mp, a_ld = A_COL ? mp : kp;
    b_rows = B_COL ? np : kp, b_ld = B_COL ? kp : np;
    a = reinterpret_cast<unsigned short*>(p.workspace + SLICES * (long long)p.M * p.ws_ld);
    b = a + a_rows * a_ld;
  }

  // p as the main kernel should see it: the packed operands and the padded K. M and N stay
  // true, so the epilogue writes only C's own elements.
  __device__ __forceinline__ KtuneGemmArgs apply(KtuneGemmArgs p) const {
    p.A = reinterpret_cast<const float*>(a), p.B = reinterpret_cast<const float*>(b);
    p.lda = a_ld, p.ldb = b_ld, p.K = static_cast<int>(kp);
    return p;
  }
};

} // namespace half16
} // namespace ktune_dev

// blockIdx.z = 0 packs A, 1 packs B, in 16-byte chunks (8 halves; a packed row is a whole number
// of them) through pack_chunks. Reads are vectorized as the source chunk's alignment allows (it
// may start at any element: odd leading dimensions give rows of different alignments): one
// 16-byte load when 16-byte aligned, two
// 8-byte or four 4-byte loads when 8- or 4-byte aligned, and when only 2-byte aligned one half,
// three aligned 4-byte words and one half (never a byte outside the chunk); chunks that reach past
// the source row, or rows past its end, are read by element with bounds checks (zeros beyond).
// The first version read 2 bytes at a time (~10 % of 2999^3's time by estimate).
template <int MQ, int NQ, int KQ, int SLICES, int A_COL, int B_COL>
__global__ void __launch_bounds__(256) gemm_pack16(KtuneGemmArgs p) {
  ktune_dev::let_next_grid_launch(); // the main kernel waits for this grid before it reads the copies
  const ktune_dev::half16::PackedLayout<MQ, NQ, KQ, SLICES, A_COL, B_COL> q(p);
  const bool is_a = blockIdx.z == 0;
  const unsigned short* const src = reinterpret_cast<const unsigned short*>(is_a ? p.A : p.B);
  const long long src_ld = is_a ? p.lda : p.ldb;
  const long long src_rows = is_a ? (A_COL ? p.K : p.M) : (B_COL ? p.N : p.K);
  const long long src_cols = is_a ? (A_COL ? p.M : p.K) : (B_COL ? p.K : p.N);
  const long long rows = is_a ? q.a_rows : q.b_rows, ld = is_a ? q.a_ld : q.b_ld;
  ktune_dev::pack_chunks(unsigned(rows), unsigned(ld / 8), reinterpret_cast<uint4*>(is_a ? q.a : q.b), [&](unsigned r, unsigned j) {
    const long long c = 8ll * j;
    uint4 w = make_uint4(0u, 0u, 0u, 0u);
    if (r < src_rows && c < src_cols) {
      const unsigned short* const s = src + r * src_ld + c;
      const unsigned long long addr = reinterpret_cast<unsigned long long>(s);
      if (c + 8 <= src_cols) {
        if (addr % 16 == 0) {
          w = *reinterpret_cast<const uint4*>(s);
        } else if (addr % 8 == 0) {
          const uint2 x = reinterpret_cast<const uint2*>(s)[0], y = reinterpret_cast<const uint2*>(s)[1];
          w = make_uint4(x.x, x.y, y.x, y.y);
        } else if (addr % 4 == 0) {
          const unsigned* const u = reinterpret_cast<const unsigned*>(s);
          w = make_uint4(u[0], u[1], u[2], u[3]);
        } else {
          // Halves 0 and 7 alone, 1-6 as three aligned words: shift the eight halves into place.
          const unsigned* const u = reinterpret_cast<const unsigned*>(s + 1);
          const unsigned h0 = s[0], h7 = s[7], u0 = u[0], u1 = u[1], u2 = u[2];
          w = make_uint4(h0 | u0 << 16, u0 >> 16 | u1 << 16, u1 >> 16 | u2 << 16, u2 >> 16 | h7 << 16);
        }
      } else {
        unsigned e[4];
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          const long long c0 = c + 2 * i;
          const unsigned lo = c0 < src_cols ? s[2 * i] : 0u;
          const unsigned hi = c0 + 1 < src_cols ? s[2 * i + 1] : 0u;
          e[i] = lo | hi << 16;
        }
        w = make_uint4(e[0], e[1], e[2], e[3]);
      }
    }
    return w;
  });
}
