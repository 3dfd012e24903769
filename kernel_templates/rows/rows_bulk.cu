// rows_bulk (sm_90): the row (or, with a cluster of CL > 1 CTAs, a CTA's slice of it) comes into
// shared memory through 1D bulk copies (TMA without a tensor map), PIECES copies issued at once
// by one thread, each completing on its own mbarrier; every thread folds each piece into its
// statistics as soon as that piece has landed, the block (and the cluster, by pushes into every
// CTA's slots: ClusterStats in rows_common.cuh) reduces them, and pass 2 reads the row back from
// shared memory and writes y.
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
//            clusters, cluster c takes rows c, c + G, c + 2G, ... (G clusters), so a grid of at
//            most one wave of clusters has no part-empty last wave. Measured, that wave is not
//            where time goes: at CL 8, 128 threads, 99 to 1024 rows of 128256 bf16 took 6.8 us +
//            17.4 us per 99 rows (one wave of clusters), 512 rows (5.2 waves) on the line
//            (docs/runs/2026-11-25-h100-s15-softmax-waves.txt); RPC > 1 has not won a shape.
//   STAGES   slice buffers (1, 2): with 2 the next row's copies are in flight while this row is
//            reduced and written (RPC > 1 only)
//   STORE    0: pass 2 stores y from registers; 1: pass 2 writes the results over the slice in
//            shared memory, piece by piece, and one thread bulk-stores each piece (the CTA's
//            stores leave as a few large async copies, and it needs no store slots while they drain)
//
// The slice: per = ceil(cols / CL) rounded up to 32 * VEC elements (a warp's sweep, a multiple of
// 64 bytes), CTA rank r takes columns [r * per, min(cols, (r + 1) * per)); its pieces are runs of
// ceil(span / PIECES) buffer positions rounded up the same way (the last ones may be short or
// empty; span = the slice plus its offset into its first 16-byte line, SliceLayout below).
//
// Host rules (besides rows_common.cuh's): sm_90; grid = ceil(rows / RPC) * CL x 1 x 1 (<= 2^31 - 1),
// block = THREADS, dynamic shared memory = STAGES * per * sizeof(element) bytes where every row is
// whole 16-byte lines (x 16-byte aligned, ldx * sizeof(element) and cols * sizeof(element)
// multiples of 16), STAGES * (per * sizeof(element) + 16) otherwise (<= the device's opt-in limit
// less the static few hundred bytes). Rows off 16-byte lines: softmax only (VEC * sizeof(element)
// <= 16; y any alignment); the norms keep VEC's rule for y, weight and bias and whole lines.
// STORE = 1: whole lines, and y's rows too (y 16-byte aligned, ldy * sizeof(element) a multiple of 16).
#include "ktune_async.cuh"
#include "rows_common.cuh"

constexpr int kBulkUnroll = 4;

namespace ktune_dev {
namespace rows {

// One element of x (EB bytes, at any element-aligned address) into shared memory at dst: the
// ragged ends of a slice that does not start or end on a 16-byte line, which bulk copies cannot move.
template <int EB>
__device__ __forceinline__ void element_to_smem(unsigned dst, const char* src) {
  unsigned w[1];
  load_raw<EB, kLoadStream>(w, src);
  if constexpr (EB == 4)
    asm volatile("st.shared.u32 [%0], %1;" ::"r"(dst), "r"(w[0]) : "memory");
  else
    asm volatile("st.shared.u16 [%0], %1;" ::"r"(dst), "h"(static_cast<unsigned short>(w[0])) : "memory");
}

// Where a CTA's slice of one row lies in its shared-memory buffer. Position q of the buffer holds
// the element at byte address line + q * EB, line = the slice's first element's address rounded
// down to 16 bytes; so the slice's elements sit at positions [lead, lead + n) and every 16-byte
// line of x is a 16-byte line of the buffer. [p0, p1) is the part of whole lines, which bulk
// copies move; the rest (fewer than 16 bytes at each end) the threads copy one element each.
// Vectors (VEC elements at a VEC-aligned position) cover [vlo, vhi); positions [lead, a) and
// [b, lead + n) are the partial vectors at the ends, folded and stored one element at a time.
// A row of whole lines (every row of a 16-byte aligned problem) has lead = 0, p0 = 0, p1 = n and
// no partial vectors: the same copies, folds and stores as before rows could be misaligned.
template <int EB, int VEC>
struct SliceLayout {
  int lead, n, p0, p1, vlo, vhi, a, b;
  __device__ __forceinline__ SliceLayout(const char* first, int n_) : n(n_) {
    constexpr int G = 16 / EB; // elements a 16-byte line
    lead = static_cast<int>((reinterpret_cast<unsigned long long>(first) & 15u) / EB);
    const int e1 = lead + n;
    p0 = min((lead + G - 1) / G * G, e1);
    p1 = max(p0, e1 / G * G);
    vlo = (lead + VEC - 1) / VEC;
    vhi = max(vlo, e1 / VEC);
    a = min(vlo * VEC, e1);
    b = max(a, vhi * VEC);
  }
  __device__ __forceinline__ int end() const { return lead + n; }
  __device__ __forceinline__ int ragged() const { return (p0 - lead) + (end() - p1); }
};

} // namespace rows
} // namespace ktune_dev

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
  __shared__ ClusterStats<CL, Stats<OP>> cs; // CL > 1: the cluster's all-reduce

  const long long cluster = blockIdx.x / CL, clusters = gridDim.x / CL;
  const int rank = CL > 1 ? static_cast<int>(ktune_dev::cluster::rank()) : 0;
  const RowConsts k = row_consts(p);
  const int cols = static_cast<int>(p.cols);
  const int per = ((cols + CL - 1) / CL + SWEEP - 1) / SWEEP * SWEEP;
  const int begin = min(cols, rank * per);
  const int n = min(cols, begin + per) - begin; // elements of this CTA's slice (0 on short rows)
  // Rows of whole 16-byte lines (x 16-byte aligned, rows a multiple of 16 bytes apart and long):
  // a buffer of per elements. Otherwise a slice may start up to 15 bytes into its first line:
  // 16 bytes more a buffer (the host sizes dynamic shared memory by the same rule).
  const bool lines = (reinterpret_cast<unsigned long long>(p.x) & 15u) == 0 && (p.ldx * EB) % 16 == 0 && (p.cols * EB) % 16 == 0;
  const unsigned stride = static_cast<unsigned>(per * EB + (lines ? 0 : 16));
  const unsigned smem = as::smem_addr(slice_smem);
  const unsigned bar0 = as::smem_addr(bar);
  // The i-th row this cluster serves, and where its slice lands: buffer (and barriers) i % STAGES.
  auto row_of = [&](int i) { return cluster + i * clusters; };
  auto buffer = [&](int i) { return smem + static_cast<unsigned>(i % STAGES) * stride; };
  auto barrier = [&](int i, int q) { return bar0 + 8u * static_cast<unsigned>((i % STAGES) * PIECES + q); };
  auto first = [&](int i) { return static_cast<const char*>(x_row<DT>(p, row_of(i))) + static_cast<long long>(begin) * EB; };
  // Positions of the buffer a piece covers: the slice's span cut in PIECES runs of whole sweeps.
  auto piece_of = [&](const SliceLayout<EB, VEC>& L) { return ((L.end() + PIECES - 1) / PIECES + SWEEP - 1) / SWEEP * SWEEP; };

  // One thread issues the i-th row's copies (if the cluster has an i-th row): piece q moves the
  // whole lines among positions [q * piece, (q + 1) * piece).
  auto issue = [&](int i) {
    if (i >= RPC || row_of(i) >= p.rows) return;
    const SliceLayout<EB, VEC> L(first(i), n);
    const int piece = piece_of(L);
    const char* line = first(i) - L.lead * EB;
#pragma unroll
    for (int q = 0; q < PIECES; ++q) {
      const int b0 = max(L.p0, min(L.p1, q * piece)), b1 = max(b0, min(L.p1, (q + 1) * piece));
      const unsigned bytes = static_cast<unsigned>(b1 - b0) * EB;
      if (bytes) {
        as::mbar_expect_tx(barrier(i, q), bytes);
        as::bulk_load(buffer(i) + static_cast<unsigned>(b0) * EB, line + static_cast<long long>(b0) * EB, bytes, barrier(i, q));
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
    if constexpr (CL > 1) cs.init();
  }
  __syncthreads(); // the mbarriers are initialized before anyone waits on them
  if constexpr (CL > 1) cs.open();

  // Every CTA of a cluster serves the same rows, so all of them leave the loop together and the
  // cluster barriers inside stay matched.
  for (int i = 0; i < RPC && row_of(i) < p.rows; ++i) {
    const long long row = row_of(i);
    const unsigned parity = static_cast<unsigned>((i / STAGES) & 1);
    const SliceLayout<EB, VEC> L(first(i), n);
    const int piece = piece_of(L);
    const SmemRow<DT, VEC> src{buffer(i)};
    const SmemRow<DT, 1> one{buffer(i)};
    // The ragged ends: one element a thread, in place before anyone reads the buffer (uniform
    // branch: every thread computes the same layout; none on rows of whole lines).
    if (L.ragged() > 0) {
      const int t = static_cast<int>(threadIdx.x), head = L.p0 - L.lead;
      if (t < L.ragged()) {
        const int q = t < head ? L.lead + t : L.p1 + (t - head);
        element_to_smem<EB>(buffer(i) + static_cast<unsigned>(q) * EB, first(i) + static_cast<long long>(q - L.lead) * EB);
      }
      __syncthreads();
    }
    Stats<OP> st = empty_stats<Stats<OP>>();
    fold_vectors<OP, 1, THREADS, 1>(st, one, L.lead, L.a, k); // partial vectors: thread-copied positions
    fold_vectors<OP, 1, THREADS, 1>(st, one, L.b, L.end(), k);
#pragma unroll
    for (int q = 0; q < PIECES; ++q) {
      const int v0 = max(L.vlo, q * piece / VEC), v1 = max(v0, min(L.vhi, (q + 1) * piece / VEC));
      as::mbar_wait(barrier(i, q), parity);
      fold_vectors<OP, VEC, THREADS, U>(st, src, v0, v1, k);
    }

    Stats<OP> all = block_allreduce<THREADS / 32>(st, red, k.c);
    if constexpr (CL > 1) all = cs.allreduce(all, i, k.c);
    const Finish f = finish_from_row<OP>(all, p, k);
    void* yrow = y_row<DT>(p, row);
    // Column of x (and y, weight, bias) at buffer position q.
    auto col = [&](int q) { return static_cast<long long>(begin) - L.lead + q; };
    if constexpr (STORE == 0) {
      // Vector stores where y's slice sits at the same offset in its vector as x's (always on
      // rows of whole lines); else every element on its own.
      const unsigned long long ys = reinterpret_cast<unsigned long long>(yrow) + static_cast<unsigned long long>(begin) * EB;
      const bool vec_y = ((ys - reinterpret_cast<unsigned long long>(first(i))) % (VEC * EB)) == 0;
      if (vec_y) {
        with_affine<OP>(p, SecondPass<OP, DT, VEC, THREADS, U, SmemRow<DT, VEC>>{
                               out_ptrs<DT>(p, yrow, col(L.vlo * VEC)),
                               SmemRow<DT, VEC>{src.base + static_cast<unsigned>(L.vlo * VEC * EB)}, L.vhi - L.vlo, all, f, k});
        with_affine<OP>(p, SecondPass<OP, DT, 1, THREADS, 1, SmemRow<DT, 1>>{
                               out_ptrs<DT>(p, yrow, col(L.lead)), SmemRow<DT, 1>{one.base + static_cast<unsigned>(L.lead * EB)},
                               L.a - L.lead, all, f, k});
        with_affine<OP>(p, SecondPass<OP, DT, 1, THREADS, 1, SmemRow<DT, 1>>{
                               out_ptrs<DT>(p, yrow, col(L.b)), SmemRow<DT, 1>{one.base + static_cast<unsigned>(L.b * EB)},
                               L.end() - L.b, all, f, k});
      } else {
        with_affine<OP>(p, SecondPass<OP, DT, 1, THREADS, U, SmemRow<DT, 1>>{
                               out_ptrs<DT>(p, yrow, col(L.lead)), SmemRow<DT, 1>{one.base + static_cast<unsigned>(L.lead * EB)}, n,
                               all, f, k});
      }
    } else {
      // Rows of whole lines only (the host's rule): positions are columns of the slice.
      char* y = static_cast<char*>(yrow) + static_cast<long long>(begin) * EB;
      char* staged = reinterpret_cast<char*>(slice_smem) + (i % STAGES) * stride; // the slice's generic address: results in place
#pragma unroll
      for (int q = 0; q < PIECES; ++q) {
        const int b0 = min(n, q * piece), b1 = min(n, b0 + piece);
        if (b1 == b0) continue;
        OutPtrs o = out_ptrs<DT>(p, yrow, begin + b0);
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
