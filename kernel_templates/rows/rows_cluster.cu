// rows_cluster (sm_90): a thread block cluster of CL CTAs shares one row, for rows too long for
// one SM's registers (vocab 128256 in f32 is 501 KB) and for few long rows that would otherwise
// leave most SMs idle. Each CTA caches a contiguous slice of the row in registers, reduces it
// over its block, and the CL partial statistics meet through distributed shared memory: every
// CTA pushes its 4..12 bytes into every CTA's slots and waits on its own mbarrier
// (ClusterStats in rows_common.cuh). The row is read from DRAM once and written once.
//
// Template parameters (host code spells them as in the config JSON):
//   OP, DT, VEC  as in rows_warp.cu
//   CHUNKS   vectors each thread caches of its CTA's slice: thread t holds slice columns
//            (k * THREADS + t) * VEC .. + VEC - 1, k < CHUNKS
//   THREADS  threads per CTA, a multiple of 32 in 64 .. 1024
//   CL       CTAs per cluster (2, 4, 8, 16)
//
// The slices: per = ceil(cols / CL) rounded up to a warp's sweep (32 * VEC elements, so every
// warp's accesses start on the same 128-byte boundaries as the row), CTA rank r takes columns
// [r * per, min(cols, (r + 1) * per)); the last ranks may get less, or nothing, on short rows.
// Since 32 * VEC divides THREADS * VEC * CHUNKS, cols <= CL * THREADS * VEC * CHUNKS is enough
// for every slice to fit.
//
// Host rules (besides rows_common.cuh's): sm_90 or later (the body is empty before it); grid =
// rows * CL x 1 x 1 (cluster i = blockIdx.x / CL serves row i; rows * CL <= 2^31 - 1), block =
// THREADS, cluster dims (CL, 1, 1) are compiled in (__cluster_dims__), so a plain launch works;
// CL = 16 needs CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED = 1 on the function before
// launch, and every CL needs cudaOccupancyMaxActiveClusters > 0 for the config (CL CTAs of
// THREADS threads and their registers co-resident in one GPC). No dynamic shared memory.
// cols <= CL * THREADS * VEC * CHUNKS.
// Registers: as rows_block (table in rows_common.cuh).
#include "rows_common.cuh"

template <int OP, int DT, int VEC, int CHUNKS, int THREADS, int CL>
__global__ void __launch_bounds__(THREADS, 1) KTUNE_CLUSTER_DIMS(CL, 1, 1) rows_cluster(KtuneRowsArgs p) {
  using namespace ktune_dev::rows;
  check_params<OP, DT, VEC>();
  static_assert(CHUNKS >= 1 && THREADS % 32 == 0 && THREADS >= 64 && THREADS <= 1024, "THREADS: 64..1024, whole warps");
  static_assert(CL == 2 || CL == 4 || CL == 8 || CL == 16, "CL in {2, 4, 8, 16}");
#if __CUDA_ARCH__ >= 900
  constexpr int STRIDE = THREADS * VEC;
  constexpr int SWEEP = 32 * VEC;
  __shared__ Stats<OP> red[THREADS / 32];
  __shared__ ClusterStats<CL, Stats<OP>> cs;

  if (threadIdx.x == 0) cs.init();
  __syncthreads();
  cs.open();

  const long long row = blockIdx.x / CL;
  const int rank = static_cast<int>(ktune_dev::cluster::rank());
  const RowConsts k = row_consts(p);
  const int cols = static_cast<int>(p.cols);
  const int per = ((cols + CL - 1) / CL + SWEEP - 1) / SWEEP * SWEEP;
  const int begin = rank * per;
  const int end = min(cols, begin + per);
  const int col0 = begin + static_cast<int>(threadIdx.x) * VEC;

  float v[CHUNKS][VEC];
  const Span<false, VEC, STRIDE, CHUNKS> span{col0, end}; // whole vectors (the host's rules)
  load_row<OP, DT, VEC, CHUNKS>(v, advance<DT>(x_row<DT>(p, row), col0), span, k);
  const Stats<OP> mine = local_stats<OP, VEC, CHUNKS>(v, span, k);
  const Stats<OP> cta = block_allreduce<THREADS / 32>(mine, red, k.c);
  const Stats<OP> all = cs.allreduce(cta, 0, k.c);
  store_row<OP, DT, VEC, CHUNKS>(p, y_row<DT>(p, row), v, span, finish<OP>(mine, all, p, k));
#endif
}
