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

constexpr int kStreamUnroll = 4;

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
  const GlobalRow<DT, VEC> src{x_row<DT>(p, row)};

  Stats<OP> st = empty_stats<Stats<OP>>();
  fold_vectors<OP, VEC, THREADS, U>(st, src, 0, nvec, k);
  const Stats<OP> all = block_allreduce<THREADS / 32>(st, red, k.c);
  with_affine<OP>(p, SecondPass<OP, DT, VEC, THREADS, U, GlobalRow<DT, VEC>>{
                         out_ptrs<DT>(p, y_row<DT>(p, row), 0), src, nvec, all, finish_from_row<OP>(all, p, k), k});
}
