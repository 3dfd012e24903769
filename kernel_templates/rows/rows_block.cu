// rows_block: one block per row, the row cached in registers, a block reduction (warp shuffles,
// then the warps' results through shared memory; one barrier). For rows too long for one warp's
// registers (f32 vocab rows of 32000, hidden 8192 and up) but short enough for one SM.
//
// Template parameters (host code spells them as in the config JSON):
//   OP, DT, VEC  as in rows_warp.cu
//   CHUNKS   vectors each thread caches: thread t holds columns (k * THREADS + t) * VEC ..
//            + VEC - 1, k < CHUNKS (one coalesced block-wide sweep per k)
//   THREADS  threads per block, a multiple of 32 in 64 .. 1024
//   SHIFT    as in rows_warp.cu (rows not made of whole vectors)
//
// Host rules (besides rows_common.cuh's): grid = rows x 1 x 1 (one block per row, no grid-stride
// loop: a long row per block keeps enough bytes in flight, and rows <= 2^31 - 1 fits grid.x),
// block = THREADS, no dynamic shared memory (static: THREADS / 32 stats, <= 384 bytes);
// cols <= THREADS * VEC * CHUNKS (SHIFT: cols + VEC - 1 <=).
// Registers: see the table in rows_common.cuh (F = CHUNKS * VEC cached floats; F <= 64, and
// F <= 48 at 512 threads and F <= 16 at 1024, from __launch_bounds__'s register caps).
#include "rows_common.cuh"

template <int OP, int DT, int VEC, int CHUNKS, int THREADS, int SHIFT>
__global__ void __launch_bounds__(THREADS, 1) rows_block(KtuneRowsArgs p) {
  using namespace ktune_dev::rows;
  check_params<OP, DT, VEC>();
  static_assert(CHUNKS >= 1 && THREADS % 32 == 0 && THREADS >= 64 && THREADS <= 1024, "THREADS: 64..1024, whole warps");
  constexpr int STRIDE = THREADS * VEC;
  __shared__ Stats<OP> red[THREADS / 32];

  const long long row = blockIdx.x;
  const RowConsts k = row_consts(p);
  const int col0 = threadIdx.x * VEC, end = static_cast<int>(p.cols);

  float v[CHUNKS][VEC];
  const void* xr = x_row<DT>(p, row);
  const Span<SHIFT != 0, VEC, STRIDE, CHUNKS> span{col0 - (SHIFT ? row_offset<DT, VEC>(xr) : 0), end};
  load_row<OP, DT, VEC, CHUNKS>(v, advance<DT>(xr, span.first), span, k, x_extent<DT>(p));
  const Stats<OP> mine = local_stats<OP, VEC, CHUNKS>(v, span, k);
  const Stats<OP> all = block_allreduce<THREADS / 32>(mine, red, k.c);
  store_row<OP, DT, VEC, CHUNKS>(p, y_row<DT>(p, row), v, span, finish<OP>(mine, all, p, k));
}
