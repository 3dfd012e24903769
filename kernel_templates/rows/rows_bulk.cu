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
//   RPC      rows a cluster serves, one after another (1, 2, 4, 8, 16): grid = ceil(rows / RPC)
//            clusters, cluster c takes rows c, c + G, c + 2G, ... (G clusters). Rows in waves of
//            equal clusters leave the last wave part-empty (512 rows of 128256 bf16 at CL 8: six
//            32 KB CTAs an SM, 99 clusters at once, 5.2 waves -> 86 % of the time busy); a grid
//            of G <= one wave of clusters that each serve RPC rows has no such tail.
//   STAGES   slice buffers (1, 2): with 2 the next row's copies are in flight while this row is
//            reduced and written (RPC > 1 only)
//   STORE    0: pass 2 stores y from registers; 1: pass 2 writes the results over the slice in
//            shared memory, piece by piece, and one thread bulk-stores each piece (the CTA's
//            stores leave as a few large async copies, and it needs no store slots while they drain)
//
// The slice: per = ceil(cols / CL) rounded up to 32 * VEC elements (a warp's sweep, a multiple of
// 64 bytes), CTA rank r takes columns [r * per, min(cols, (r + 1) * per)); its pieces are
// ceil(n / PIECES) elements rounded up the same way (the last ones may be short or empty).
//
// Host rules (besides rows_common.cuh's): sm_90; grid = ceil(rows / RPC) * CL x 1 x 1 (<= 2^31 - 1),
// block = THREADS, dynamic shared memory = STAGES * per * sizeof(element) bytes (<= the device's
// opt-in limit less the static few hundred bytes); the bulk copies need 16-byte
// granules: x 16-byte aligned, ldx * sizeof(element) and cols * sizeof(element) multiples of 16
// (and with STORE = 1 the same for y and ldy). y, weight and bias follow VEC's rule otherwise.
#include "ktune_async.cuh"
#include "rows_common.cuh"

constexpr int kBulkUnroll = 4;

template <int OP, int DT, int VEC, int THREADS, int CL, int PIECES, int RPC, int STAGES, int STORE>
__global__ void __launch_bounds__(THREADS) KTUNE_CLUSTER_DIMS(CL, 1, 1) rows_bulk(KtuneRowsArgs p) {
  using namespace ktune_dev::rows;
  namespace as = ktune_dev::async;
  check_params<OP, DT, VEC>();
  static_assert(THREADS % 32 == 0 && THREADS >= 64 && THREADS <= 1024, "THREADS: 64..1024, whole warps");
  static_assert(CL == 1 || CL == 2 || CL == 4 || CL == 8 || CL == 16, "CL in {1, 2, 4, 8, 16}");
  static_assert(PIECES == 1 || PIECES == 2 || PIECES == 4 || PIECES == 8, "PIECES in {1, 2, 4, 8}");
  static_assert(RPC >= 1 && (STAGES == 1 || STAGES == 2), "RPC >= 1, STAGES in {1, 2}");
  static_assert(STORE == 0 || STORE == 1, "STORE in {0, 1}");
#if __CUDA_ARCH__ >= 900
  constexpr int EB = elem_bytes<DT>();
  constexpr int SWEEP = 32 * VEC;
  constexpr int U = kBulkUnroll;
  extern __shared__ __align__(128) unsigned char slice_smem[];
  __shared__ __align__(8) unsigned long long bar[STAGES * PIECES];
  __shared__ Stats<OP> red[THREADS / 32];
  __shared__ Stats<OP> slot;

  const long long cluster = blockIdx.x / CL, clusters = gridDim.x / CL;
  const int rank = CL > 1 ? static_cast<int>(ktune_dev::cluster::rank()) : 0;
  const RowConsts k = row_consts(p);
  const int cols = static_cast<int>(p.cols);
  const int per = ((cols + CL - 1) / CL + SWEEP - 1) / SWEEP * SWEEP;
  const int begin = min(cols, rank * per);
  const int n = min(cols, begin + per) - begin; // elements of this CTA's slice (0 on short rows)
  const int piece = ((n + PIECES - 1) / PIECES + SWEEP - 1) / SWEEP * SWEEP;
  const unsigned smem = as::smem_addr(slice_smem);
  const unsigned bar0 = as::smem_addr(bar);
  // The i-th row this cluster serves, and where its slice lands: buffer (and barriers) i % STAGES.
  auto row_of = [&](int i) { return cluster + i * clusters; };
  auto buffer = [&](int i) { return smem + static_cast<unsigned>((i % STAGES) * per * EB); };
  auto barrier = [&](int i, int q) { return bar0 + 8u * static_cast<unsigned>((i % STAGES) * PIECES + q); };

  // One thread issues the i-th row's copies (if the cluster has an i-th row).
  auto issue = [&](int i) {
    if (i >= RPC || row_of(i) >= p.rows) return;
    const char* from = static_cast<const char*>(x_row<DT>(p, row_of(i))) + static_cast<long long>(begin) * EB;
#pragma unroll
    for (int q = 0; q < PIECES; ++q) {
      const int b0 = min(n, q * piece), b1 = min(n, b0 + piece);
      const unsigned bytes = static_cast<unsigned>(b1 - b0) * EB;
      if (bytes) {
        as::mbar_expect_tx(barrier(i, q), bytes);
        as::bulk_load(buffer(i) + static_cast<unsigned>(b0) * EB, from + static_cast<long long>(b0) * EB, bytes, barrier(i, q));
      } else {
        as::mbar_arrive(barrier(i, q)); // an empty piece completes at once
      }
    }
  };

  if (threadIdx.x == 0) {
#pragma unroll
    for (int q = 0; q < STAGES * PIECES; ++q) as::mbar_init(bar0 + 8u * q, 1);
    as::fence_mbar_init();
#pragma unroll
    for (int i = 0; i < STAGES; ++i) issue(i);
  }
  __syncthreads(); // the mbarriers are initialized before anyone waits on them

  // Every CTA of a cluster serves the same rows, so all of them leave the loop together and the
  // cluster barriers inside stay matched.
  for (int i = 0; i < RPC && row_of(i) < p.rows; ++i) {
    const long long row = row_of(i);
    const unsigned parity = static_cast<unsigned>((i / STAGES) & 1);
    const SmemRow<DT, VEC> src{buffer(i)};
    Stats<OP> st = empty_stats<Stats<OP>>();
#pragma unroll
    for (int q = 0; q < PIECES; ++q) {
      const int b0 = min(n, q * piece), b1 = min(n, b0 + piece);
      as::mbar_wait(barrier(i, q), parity);
      fold_vectors<OP, VEC, THREADS, U>(st, src, b0 / VEC, b1 / VEC, k);
    }

    Stats<OP> all = block_allreduce<THREADS / 32>(st, red, k.c);
    if constexpr (CL > 1) all = cluster_allreduce<CL>(all, &slot, k.c);
    const Finish f = finish_from_row<OP>(all, p, k);
    if constexpr (STORE == 0) {
      with_affine<OP>(p, SecondPass<OP, DT, VEC, THREADS, U, SmemRow<DT, VEC>>{out_ptrs<DT>(p, y_row<DT>(p, row), begin),
                                                                               src, n / VEC, all, f, k});
    } else {
      char* y = static_cast<char*>(y_row<DT>(p, row)) + static_cast<long long>(begin) * EB;
      char* staged = reinterpret_cast<char*>(slice_smem) + (i % STAGES) * per * EB; // the slice's generic address: results in place
#pragma unroll
      for (int q = 0; q < PIECES; ++q) {
        const int b0 = min(n, q * piece), b1 = min(n, b0 + piece);
        if (b1 == b0) continue;
        OutPtrs o = out_ptrs<DT>(p, y_row<DT>(p, row), begin + b0);
        o.y = staged + b0 * EB;
        with_affine<OP>(p, SecondPass<OP, DT, VEC, THREADS, U, SmemRow<DT, VEC>, true>{
                               o, SmemRow<DT, VEC>{src.base + static_cast<unsigned>(b0) * EB}, (b1 - b0) / VEC, all, f, k});
        as::fence_proxy_async(); // this thread's results, visible to the bulk copy
        __syncthreads();         // ... and every thread's
        if (threadIdx.x == 0) {
          as::bulk_store(y + static_cast<long long>(b0) * EB, buffer(i) + static_cast<unsigned>(b0) * EB,
                         static_cast<unsigned>(b1 - b0) * EB);
          as::bulk_commit();
        }
      }
    }
    // No CTA rewrites (or, leaving, frees) its slot while another may still read it.
    if constexpr (CL > 1) ktune_dev::cluster::wait();
    if (i + 1 < RPC) {
      // Every thread is done reading red[] before the next row's reduction writes it, and buffer
      // i % STAGES before the copies of the row that reuses it may land (the generic-proxy reads
      // ordered before the async-proxy writes by the fence).
      __syncthreads();
      if (threadIdx.x == 0 && i + STAGES < RPC) {
        if constexpr (STORE == 1) as::bulk_wait_read(); // the bulk stores are done with the buffer
        as::fence_proxy_async();
        issue(i + STAGES);
      }
    }
  }
  // Shared memory stays allocated until the bulk stores have read it.
  if constexpr (STORE == 1)
    if (threadIdx.x == 0) as::bulk_wait_read();
#endif
}
