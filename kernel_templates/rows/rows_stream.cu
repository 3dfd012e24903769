// rows_stream: one block per row, any cols, nothing cached. Pass 1 reads the row once and keeps
// running statistics (softmax: online max and rescaled sum; LayerNorm: Chan et al.'s merge of
// each group's two-pass (count, mean, M2); RMSNorm: sum of squares); one block reduction; pass 2
// reads the row again (from L2 when the rows in flight fit it: ~50 MB on an H100) and writes y.
// The fallback for rows beyond every cached config, and a candidate wherever 1.5x the reads is
// cheaper than holding the row in registers (few rows: more blocks resident per SM).
//
// Template parameters (host code spells them as in the config JSON):
//   OP, DT, VEC  as in rows_warp.cu
//   THREADS  threads per block, a multiple of 32 in 64 .. 1024
// Each thread keeps kStreamUnroll (4) vector loads in flight per iteration in both passes
// (16 bytes x 4 a thread with the widest vectors), vector i of the row going to thread
// i % THREADS; a tail of fewer than 4 * THREADS vectors goes one vector at a time.
//
// Host rules (besides rows_common.cuh's): grid = rows x 1 x 1 (one block per row), block =
// THREADS, no dynamic shared memory (static: THREADS / 32 stats, <= 384 bytes); any cols >= 1.
// Registers: 32..86 whatever the row length (no cache; table in rows_common.cuh).
#include "rows_common.cuh"

namespace ktune_dev {
namespace rows {

constexpr int kStreamUnroll = 4;

// Pass 2 on N vectors starting at vector i, THREADS apart: softmax first turns x into
// exp((xs - M) * |scale|) against the row's max M.
template <int OP, int DT, int VEC, int N, int THREADS, bool W, bool B>
__device__ __forceinline__ void write_group(const OutPtrs& o, const void* xrow, int i, const Stats<OP>& all,
                                            const Finish& f, const RowConsts& k) {
  float g[N][VEC];
#pragma unroll
  for (int u = 0; u < N; ++u) load_vec<DT, VEC, kLoadStream>(g[u], xrow, static_cast<long long>(i + u * THREADS) * VEC);
#pragma unroll
  for (int u = 0; u < N; ++u) {
    if constexpr (OP == KTUNE_ROWS_SOFTMAX) {
#pragma unroll
      for (int e = 0; e < VEC; ++e) g[u][e] = ex2((g[u][e] * k.sgn - all.m) * k.c);
    }
    store_out<OP, DT, VEC, W, B>(o, static_cast<long long>(i + u * THREADS) * VEC, g[u], f);
  }
}

// Pass 2 over the whole row (with_affine picks W and B once).
template <int OP, int DT, int VEC, int THREADS>
struct StreamStores {
  OutPtrs o; // at the row's first column
  const void* xrow;
  int nvec;
  const Stats<OP>& all;
  Finish f;
  RowConsts k;
  template <bool W, bool B>
  __device__ __forceinline__ void run() const {
    constexpr int U = kStreamUnroll;
    int i = threadIdx.x;
    for (; i + (U - 1) * THREADS < nvec; i += U * THREADS)
      write_group<OP, DT, VEC, U, THREADS, W, B>(o, xrow, i, all, f, k);
    for (; i < nvec; i += THREADS) write_group<OP, DT, VEC, 1, THREADS, W, B>(o, xrow, i, all, f, k);
  }
};

} // namespace rows
} // namespace ktune_dev

template <int OP, int DT, int VEC, int THREADS>
__global__ void __launch_bounds__(THREADS, 1) rows_stream(KtuneRowsArgs p) {
  using namespace ktune_dev::rows;
  check_params<OP, DT, VEC>();
  static_assert(THREADS % 32 == 0 && THREADS >= 64 && THREADS <= 1024, "THREADS: 64..1024, whole warps");
  constexpr int U = kStreamUnroll;
  __shared__ Stats<OP> red[THREADS / 32];

  const long long row = blockIdx.x;
  const RowConsts k = row_consts(p);
  const int nvec = static_cast<int>(p.cols / VEC);
  const void* const xrow = x_row<DT>(p, row);
  void* const yrow = y_row<DT>(p, row);

  Stats<OP> st = empty_stats<Stats<OP>>();
  int i = threadIdx.x;
  for (; i + (U - 1) * THREADS < nvec; i += U * THREADS) {
    float g[U][VEC];
#pragma unroll
    for (int u = 0; u < U; ++u)
      load_vec<DT, VEC, kLoadStream>(g[u], xrow, static_cast<long long>(i + u * THREADS) * VEC);
    accumulate<OP, U, VEC>(st, g, k);
  }
  for (; i < nvec; i += THREADS) {
    float g[1][VEC];
    load_vec<DT, VEC, kLoadStream>(g[0], xrow, static_cast<long long>(i) * VEC);
    accumulate<OP, 1, VEC>(st, g, k);
  }

  const Stats<OP> all = block_allreduce<THREADS / 32>(st, red, k.c);
  Finish f;
  if constexpr (OP == KTUNE_ROWS_SOFTMAX)
    f = Finish{0.0f, __fdividef(1.0f, all.s)}; // S = 0 (all -inf): inf, times exp(NaN) below: NaN like PyTorch
  else
    f = finish<OP>(all, all, p, k);

  with_affine<OP>(p, StreamStores<OP, DT, VEC, THREADS>{out_ptrs<DT>(p, yrow, 0), xrow, nvec, all, f, k});
}
