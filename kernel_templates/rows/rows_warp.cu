// rows_warp: one warp per row, WARPS rows per block, the row cached in registers; for short and
// medium rows (hidden sizes 768 .. 8192 in 16-bit, to ~4096 in f32), where a block per row would
// leave most of its threads idle or wait on block barriers.
//
// Template parameters (host code spells them as in the config JSON):
//   OP      the op's code, KTUNE_ROWS_<OP> (kernel_templates/<op>/<op>_check.h)
//   DT      elements of x, y, weight, bias: 0 f32, 1 bf16, 2 f16 (FP32 math)
//   VEC     elements per load / store (1, 2, 4, 8; VEC * sizeof(element) <= 16)
//   CHUNKS  vectors each lane caches: lane l holds columns (k * 32 + l) * VEC .. + VEC - 1,
//           k < CHUNKS (one coalesced 32-vector sweep per k)
//   WARPS   rows (warps) per block; the block has 32 * WARPS threads
//   SHIFT   1: rows not made of whole vectors (an odd cols, a leading dimension or pointer off a
//           vector; VEC > 1): lane l's chunks are the aligned vectors at (k * 32 + l) * VEC of
//           the row's first aligned vector, the row's two ragged ends an element at a time
//           (rows_common.cuh, Span); 0: the whole-vector rules of rows_common.cuh hold
//
// Host rules (besides rows_common.cuh's): grid = ceil(rows / WARPS) x 1 x 1, block =
// 32 * WARPS, no dynamic shared memory; cols <= 32 * VEC * CHUNKS (SHIFT: cols + VEC - 1 <=). A warp whose row is past the
// end returns at once (no block barrier in this kernel).
// Registers: see the table in rows_common.cuh (F = CHUNKS * VEC cached floats; F <= 64, and
// F <= 16 at WARPS = 32, whose 1024 threads cap a thread at 64 registers).
#include "rows_common.cuh"

template <int OP, int DT, int VEC, int CHUNKS, int WARPS, int SHIFT>
__global__ void __launch_bounds__(32 * WARPS, 1) rows_warp(KtuneRowsArgs p) {
  using namespace ktune_dev::rows;
  check_params<OP, DT, VEC>();
  static_assert(CHUNKS >= 1 && WARPS >= 1 && WARPS <= 32, "1..32 warps a block");
  constexpr int STRIDE = 32 * VEC;

  const long long row = static_cast<long long>(blockIdx.x) * WARPS + (threadIdx.x >> 5);
  if (row >= p.rows) return;
  const RowConsts k = row_consts(p);
  const int col0 = (threadIdx.x & 31) * VEC, end = static_cast<int>(p.cols);

  float v[CHUNKS][VEC];
  const void* xr = x_row<DT>(p, row);
  const Span<SHIFT != 0, VEC, STRIDE, CHUNKS> span{col0 - (SHIFT ? row_offset<DT, VEC>(xr) : 0), end};
  load_row<OP, DT, VEC, CHUNKS>(v, advance<DT>(xr, span.first), span, k, x_extent<DT>(p));
  const Stats<OP> mine = local_stats<OP, VEC, CHUNKS>(v, span, k);
  const Stats<OP> all = warp_allreduce<32>(mine, k.c);
  store_row<OP, DT, VEC, CHUNKS>(p, y_row<DT>(p, row), v, span, finish<OP>(mine, all, p, k));
}
