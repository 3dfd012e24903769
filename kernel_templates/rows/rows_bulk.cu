// rows_bulk (sm_90): the row (or, with a cluster of CL > 1 CTAs, a CTA's slice of it) comes into
// shared memory through 1D bulk copies (TMA without a tensor map), PIECES copies issued at once
// by one thread, each completing on its own mbarrier; every thread folds each piece into its
// statistics as soon as that piece has landed, the block (and the cluster, through DSMEM as in
// rows_cluster) reduces them, and pass 2 reads the row back from shared memory and writes y.
// DRAM sees x once and y once, like the register-cached kernels, but a thread keeps no row in
// registers (~40 of them), so several CTAs share an SM whenever their slices fit its shared
// memory together: while one reduces or writes, the others' copies keep DRAM busy. That is what
// the register-cached kernels lose on rows too long for one block (vocab 32000 and 128256): one
// 1024-thread CTA an SM, idle memory during its barriers.
//
// Template parameters (host code spells them as in the config JSON):
//   OP, DT, VEC  as in rows_warp.cu (VEC: elements per shared-memory read and global store)
//   THREADS  threads per CTA, a multiple of 32 in 64 .. 1024
//   CL       CTAs per cluster sharing one row (1, 2, 4, 8, 16; 16 is a non-portable cluster size,
//            which runtime/module.cpp allows for every kernel compiled with it)
//   PIECES   bulk copies (and mbarriers) a slice arrives in (1, 2, 4, 8)
//
// The slice: per = ceil(cols / CL) rounded up to 32 * VEC elements (a warp's sweep, a multiple of
// 64 bytes), CTA rank r takes columns [r * per, min(cols, (r + 1) * per)); its pieces are
// ceil(n / PIECES) elements rounded up the same way (the last ones may be short or empty).
//
// Host rules (besides rows_common.cuh's): sm_90; grid = rows * CL x 1 x 1 (cluster i serves row i;
// rows * CL <= 2^31 - 1), block = THREADS, dynamic shared memory = per * sizeof(element) bytes
// (<= the device's opt-in limit less the static few hundred bytes); the bulk copies need 16-byte
// granules: x 16-byte aligned, ldx * sizeof(element) and cols * sizeof(element) multiples of 16.
// y, weight and bias follow VEC's rule only.
#include "ktune_async.cuh"
#include "rows_common.cuh"

constexpr int kBulkUnroll = 4;

template <int OP, int DT, int VEC, int THREADS, int CL, int PIECES>
__global__ void __launch_bounds__(THREADS) ROWS_CLUSTER_DIMS(CL, 1, 1) rows_bulk(KtuneRowsArgs p) {
  using namespace ktune_dev::rows;
  namespace as = ktune_dev::async;
  check_params<OP, DT, VEC>();
  static_assert(THREADS % 32 == 0 && THREADS >= 64 && THREADS <= 1024, "THREADS: 64..1024, whole warps");
  static_assert(CL == 1 || CL == 2 || CL == 4 || CL == 8 || CL == 16, "CL in {1, 2, 4, 8, 16}");
  static_assert(PIECES == 1 || PIECES == 2 || PIECES == 4 || PIECES == 8, "PIECES in {1, 2, 4, 8}");
#if __CUDA_ARCH__ >= 900
  constexpr int EB = elem_bytes<DT>();
  constexpr int SWEEP = 32 * VEC;
  constexpr int U = kBulkUnroll;
  extern __shared__ __align__(128) unsigned char slice_smem[];
  __shared__ __align__(8) unsigned long long bar[PIECES];
  __shared__ Stats<OP> red[THREADS / 32];
  __shared__ Stats<OP> slot;

  const long long row = blockIdx.x / CL;
  const int rank = CL > 1 ? static_cast<int>(cluster_rank()) : 0;
  const RowConsts k = row_consts(p);
  const int cols = static_cast<int>(p.cols);
  const int per = ((cols + CL - 1) / CL + SWEEP - 1) / SWEEP * SWEEP;
  const int begin = min(cols, rank * per);
  const int n = min(cols, begin + per) - begin; // elements of this CTA's slice (0 on short rows)
  const int piece = ((n + PIECES - 1) / PIECES + SWEEP - 1) / SWEEP * SWEEP;
  const unsigned smem = as::smem_addr(slice_smem);
  const unsigned bar0 = as::smem_addr(bar);

  if (threadIdx.x == 0) {
#pragma unroll
    for (int q = 0; q < PIECES; ++q) as::mbar_init(bar0 + 8u * q, 1);
    as::fence_mbar_init();
    const char* from = static_cast<const char*>(x_row<DT>(p, row)) + static_cast<long long>(begin) * EB;
#pragma unroll
    for (int q = 0; q < PIECES; ++q) {
      const int b0 = min(n, q * piece), b1 = min(n, b0 + piece);
      const unsigned bytes = static_cast<unsigned>(b1 - b0) * EB;
      if (bytes) {
        as::mbar_expect_tx(bar0 + 8u * q, bytes);
        as::bulk_load(smem + static_cast<unsigned>(b0) * EB, from + static_cast<long long>(b0) * EB, bytes, bar0 + 8u * q);
      } else {
        as::mbar_arrive(bar0 + 8u * q); // an empty piece completes at once
      }
    }
  }
  __syncthreads(); // the mbarriers are initialized before anyone waits on them

  const SmemRow<DT, VEC> src{smem};
  Stats<OP> st = empty_stats<Stats<OP>>();
#pragma unroll
  for (int q = 0; q < PIECES; ++q) {
    const int b0 = min(n, q * piece), b1 = min(n, b0 + piece);
    as::mbar_wait(bar0 + 8u * q, 0);
    fold_vectors<OP, VEC, THREADS, U>(st, src, b0 / VEC, b1 / VEC, k);
  }

  Stats<OP> all = block_allreduce<THREADS / 32>(st, red, k.c);
  if constexpr (CL > 1) all = cluster_allreduce<CL>(all, &slot, k.c);
  with_affine<OP>(p, SecondPass<OP, DT, VEC, THREADS, U, SmemRow<DT, VEC>>{
                         out_ptrs<DT>(p, y_row<DT>(p, row), begin), src, n / VEC, all, finish_from_row<OP>(all, p, k), k});
  if constexpr (CL > 1) cluster_wait(); // no CTA leaves (freeing its slot) while another may still read it
#endif
}
