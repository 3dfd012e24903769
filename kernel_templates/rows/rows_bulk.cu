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

namespace ktune_dev {
namespace rows {

constexpr int kBulkUnroll = 4;

// VEC elements at element index i of a shared-memory array of DT.
template <int DT, int VEC>
__device__ __forceinline__ void load_smem_vec(float (&v)[VEC], unsigned base, int i) {
  constexpr int B = VEC * elem_bytes<DT>();
  unsigned w[raw_words<B>()];
  const unsigned a = base + static_cast<unsigned>(i) * elem_bytes<DT>();
  if constexpr (B == 16)
    asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(w[0]), "=r"(w[1]), "=r"(w[2]), "=r"(w[3]) : "r"(a));
  else if constexpr (B == 8)
    asm volatile("ld.shared.v2.u32 {%0, %1}, [%2];" : "=r"(w[0]), "=r"(w[1]) : "r"(a));
  else if constexpr (B == 4)
    asm volatile("ld.shared.u32 %0, [%1];" : "=r"(w[0]) : "r"(a));
  else {
    unsigned short h;
    asm volatile("ld.shared.u16 %0, [%1];" : "=h"(h) : "r"(a));
    w[0] = h;
  }
  unpack<DT, VEC>(v, w);
}

// Pass 2 over the slice's n / VEC vectors in shared memory (with_affine picks W and B once).
template <int OP, int DT, int VEC, int THREADS>
struct BulkStores {
  OutPtrs o; // at the slice's first column
  unsigned smem;
  int nvec;
  const Stats<OP>& all;
  Finish f;
  RowConsts k;
  template <bool W, bool B>
  __device__ __forceinline__ void run() const {
    constexpr int U = kBulkUnroll;
    int i = threadIdx.x;
    for (; i + (U - 1) * THREADS < nvec; i += U * THREADS) {
      float g[U][VEC];
#pragma unroll
      for (int u = 0; u < U; ++u) load_smem_vec<DT, VEC>(g[u], smem, (i + u * THREADS) * VEC);
#pragma unroll
      for (int u = 0; u < U; ++u) {
        if constexpr (OP == KTUNE_ROWS_SOFTMAX) {
#pragma unroll
          for (int e = 0; e < VEC; ++e) g[u][e] = ex2((g[u][e] * k.sgn - all.m) * k.c);
        }
        store_out<OP, DT, VEC, W, B>(o, static_cast<long long>(i + u * THREADS) * VEC, g[u], f);
      }
    }
    for (; i < nvec; i += THREADS) {
      float g[VEC];
      load_smem_vec<DT, VEC>(g, smem, i * VEC);
      if constexpr (OP == KTUNE_ROWS_SOFTMAX) {
#pragma unroll
        for (int e = 0; e < VEC; ++e) g[e] = ex2((g[e] * k.sgn - all.m) * k.c);
      }
      store_out<OP, DT, VEC, W, B>(o, static_cast<long long>(i) * VEC, g, f);
    }
  }
};

} // namespace rows
} // namespace ktune_dev

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
    const char* src = static_cast<const char*>(x_row<DT>(p, row)) + static_cast<long long>(begin) * EB;
#pragma unroll
    for (int q = 0; q < PIECES; ++q) {
      const int b0 = min(n, q * piece), b1 = min(n, b0 + piece);
      const unsigned bytes = static_cast<unsigned>(b1 - b0) * EB;
      if (bytes) {
        as::mbar_expect_tx(bar0 + 8u * q, bytes);
        as::bulk_load(smem + static_cast<unsigned>(b0) * EB, src + static_cast<long long>(b0) * EB, bytes, bar0 + 8u * q);
      } else {
        as::mbar_arrive(bar0 + 8u * q); // an empty piece completes at once
      }
    }
  }
  __syncthreads(); // the mbarriers are initialized before anyone waits on them

  Stats<OP> st = empty_stats<Stats<OP>>();
#pragma unroll
  for (int q = 0; q < PIECES; ++q) {
    const int v0 = min(n, q * piece) / VEC, v1 = min(n, min(n, q * piece) + piece) / VEC;
    as::mbar_wait(bar0 + 8u * q, 0);
    int i = v0 + static_cast<int>(threadIdx.x);
    for (; i + (U - 1) * THREADS < v1; i += U * THREADS) {
      float g[U][VEC];
#pragma unroll
      for (int u = 0; u < U; ++u) load_smem_vec<DT, VEC>(g[u], smem, (i + u * THREADS) * VEC);
      accumulate<OP, U, VEC>(st, g, k);
    }
    for (; i < v1; i += THREADS) {
      float g[1][VEC];
      load_smem_vec<DT, VEC>(g[0], smem, i * VEC);
      accumulate<OP, 1, VEC>(st, g, k);
    }
  }

  Stats<OP> all = block_allreduce<THREADS / 32>(st, red, k.c);
  if constexpr (CL > 1) all = cluster_allreduce<CL>(all, &slot, k.c);
  Finish f;
  if constexpr (OP == KTUNE_ROWS_SOFTMAX)
    f = Finish{0.0f, __fdividef(1.0f, all.s)}; // S = 0 (all -inf): inf, times exp(NaN) below: NaN like PyTorch
  else
    f = finish<OP>(all, all, p, k);

  with_affine<OP>(p, BulkStores<OP, DT, VEC, THREADS>{out_ptrs<DT>(p, y_row<DT>(p, row), begin), smem, n / VEC, all, f, k});
  if constexpr (CL > 1) cluster_wait(); // no CTA leaves (freeing its slot) while another may still read it
#endif
}
