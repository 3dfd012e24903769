// Device helpers shared by the row-operator templates (rows_warp.cu, rows_block.cu,
// rows_stream.cu, rows_cluster.cu, rows_bulk.cu): element loads and stores for f32 / bf16 / f16,
// warp / block / cluster all-reductions of any op's statistics, the register-cached row that three
// of the kernels share, the two passes of the other two, and RowMath: what each row op's math
// provides, in the op's own folder. NVRTC compiles this with no standard
// headers; 16-bit elements travel as raw bit patterns converted with cvt (no <cuda_bf16.h>).
//
// ---- Semantics (PyTorch's; the FP64 references, reference_row and rows_check.h, compute this) ----
// Per row r, over the columns j < cols, with x = x[r * ldx + j] widened to FP64 and the result
// rounded to nearest-even into DT (y[r * ldy + j]): what the op's header says
// (kernel_templates/<op>/<op>_rows.cuh: softmax, layernorm, rmsnorm, each a RowMath below).
// Every kernel does all arithmetic in FP32 (exp as ex2.approx, 1/sqrt as rsqrt.approx, both
// ~2 ulp) and rounds the result to nearest-even once: the verification holds every element to
// that (rows_check.h: the correctly rounded reference's error plus twice a bound on the FP32 math's).
//
// ---- Numerics ----
// Each op's statistics (softmax's (max, sum), LayerNorm's (count, mean, M2), RMSNorm's sum of
// squares) are computed per lane or per group and merged by the op's combine, so one reduction
// round suffices. The combines are written symmetric in their two operands, bit for bit (no FMA
// contraction: __fmul_rn / __fadd_rn), so an xor-butterfly leaves the identical result in every
// lane and every CTA.
//
// ---- Host rules common to all four kernels ----
// * VEC > 1: x, y, weight, bias aligned to VEC elements, ldx and ldy multiples of VEC and
//   cols % VEC == 0 (the templates check whole vectors only), except in rows_warp's and
//   rows_block's SHIFT form and rows_bulk's any-alignment softmax, which take any.
//   VEC * sizeof(element) <= 16.
// * sm_80 or later (max.NaN, cvt.rn.bf16x2); rows_cluster sm_90.
// * cols < 2^31 (LayerNorm's float counts are exact to 2^24 columns); rows > 0. With rows == 0
//   or cols == 0 there is nothing to write: launch nothing (the kernels would store nothing).
// * y may alias x (in-place) when ldx == ldy: every element is read (through the non-coherent
//   path) only before the same thread writes it, and rows never overlap. weight / bias must not
//   alias y.
// * No dynamic shared memory; static shared memory is a few hundred bytes at most.
//
// ---- Registers (ptxas, CUDA 13.0, sm_90; all OPs x DTs x VEC; F = CHUNKS * VEC cached floats) ----
// Highest count over the ops (LayerNorm with weight and bias is the heaviest, softmax next):
//     F       <= 8   12   16   24   32   48   64
//     regs      40   48   64   96   96  128  168
// __launch_bounds__(threads, 1) caps a thread at min(255, 65536 / threads): 64 at 1024 threads,
// 128 at 512. No spills when regs(F) <= that cap; the descriptors should require it:
// 1024 threads (rows_warp WARPS = 32, rows_block / rows_cluster THREADS = 1024): F <= 16;
// 512 threads: F <= 48; 256 threads or fewer: F <= 64. (Measured spills beyond: F = 24..32 at
// 1024 threads, F = 64 at 512, for some ops.) rows_stream: 32..86 registers (VEC 4, f32: 86;
// capped to 64 at 1024 threads without spills).
#pragma once
#include "rows_args.h"

#include "ktune_async.cuh"   // rows_cluster, rows_bulk: the cluster all-reduce's mbarriers (async::)
#include "ktune_cluster.cuh" // rows_cluster, rows_bulk: the cluster all-reduce (KTUNE_CLUSTER_DIMS, cluster::)

namespace ktune_dev {
namespace rows {

constexpr unsigned kFullMask = 0xffffffffu;
constexpr float kLog2e = 1.4426950408889634f;

__device__ __forceinline__ float neg_inf() { return __int_as_float(0xff800000); }

template <int DT>
__host__ __device__ constexpr int elem_bytes() {
  return DT == 0 ? 4 : 2;
}

__host__ __device__ constexpr int pow2_ceil(int n) {
  int p = 1;
  while (p < n) p *= 2;
  return p;
}

// max that propagates NaN (max.NaN, sm_80+): a NaN input must make its row NaN (as PyTorch's
// max does), not vanish from the max as with fmaxf.
__device__ __forceinline__ float max_nan(float a, float b) {
  float r;
  asm("max.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  return r;
}
// The same on two 16-bit elements at once (DT 1: bf16x2, 2: f16x2; one HMNMX2 for two elements).
template <int DT>
__device__ __forceinline__ unsigned max2_nan(unsigned a, unsigned b) {
  unsigned r;
  if constexpr (DT == 1)
    asm("max.NaN.bf16x2 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
  else
    asm("max.NaN.f16x2 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
  return r;
}

// 2^x (MUFU.EX2). Without .ftz so that tiny probabilities stay subnormal, as expf gives them.
__device__ __forceinline__ float ex2(float x) {
  float r;
  asm("ex2.approx.f32 %0, %1;" : "=f"(r) : "f"(x));
  return r;
}

// 2^x flushing subnormal results to 0: one MUFU.EX2, where ex2 adds the scaling ptxas wraps around
// it for subnormals. Only for terms of a sum that holds a term of 1 (exp(0) of the max): a term
// below 2^-126 changes nothing there.
__device__ __forceinline__ float ex2_ftz(float x) {
  float r;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
  return r;
}

// log2(x) (MUFU.LG2, about 2^-22 absolute error).
__device__ __forceinline__ float lg2(float x) {
  float r;
  asm("lg2.approx.f32 %0, %1;" : "=f"(r) : "f"(x));
  return r;
}

// ---------------------------------------------------------------------------------------------
// Global memory. x is read once per pass: the non-coherent path without L1 allocation (it would
// only evict weight / bias, which every row reuses and which take the normal cached path). The
// x loads are volatile so that they stay in program order with the stores (in-place use).
// ---------------------------------------------------------------------------------------------
enum { kLoadStream = 0, kLoadKeep = 1 };

template <int BYTES>
__host__ __device__ constexpr int raw_words() {
  return BYTES >= 4 ? BYTES / 4 : 1;
}

// Predicated loads and stores (`@p ld` / `@p st` inside the asm): a chunk that may lie outside
// the row costs no branch. With a branch around each load, the compiler put the unpacking of the
// loaded words inside it too, so every load waited for its data before the next one issued (the
// chunks' latencies added up instead of overlapping). A load with !in yields zeros.

template <int BYTES, int HINT>
__device__ __forceinline__ void load_raw(unsigned* w, const void* a, bool in = true) {
  static_assert(BYTES == 2 || BYTES == 4 || BYTES == 8 || BYTES == 16, "vector loads of 2..16 bytes");
  const int pr = in ? 1 : 0;
  if constexpr (BYTES == 16) {
    // %0..%3 the words, %4 the address, %5 the predicate.
    if constexpr (HINT == kLoadStream)
      asm volatile(
          "{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %5, 0;\n\tmov.b32 %0, 0;\n\tmov.b32 %1, 0;\n\tmov.b32 %2, 0;\n\t"
          "mov.b32 %3, 0;\n\t@p ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];\n\t}"
          : "=r"(w[0]), "=r"(w[1]), "=r"(w[2]), "=r"(w[3])
          : "l"(a), "r"(pr));
    else
      asm("{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %5, 0;\n\tmov.b32 %0, 0;\n\tmov.b32 %1, 0;\n\tmov.b32 %2, 0;\n\t"
          "mov.b32 %3, 0;\n\t@p ld.global.nc.v4.u32 {%0, %1, %2, %3}, [%4];\n\t}"
          : "=r"(w[0]), "=r"(w[1]), "=r"(w[2]), "=r"(w[3])
          : "l"(a), "r"(pr));
  } else if constexpr (BYTES == 8) {
    if constexpr (HINT == kLoadStream)
      asm volatile(
          "{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %3, 0;\n\tmov.b32 %0, 0;\n\tmov.b32 %1, 0;\n\t"
          "@p ld.global.nc.L1::no_allocate.v2.u32 {%0, %1}, [%2];\n\t}"
          : "=r"(w[0]), "=r"(w[1])
          : "l"(a), "r"(pr));
    else
      asm("{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %3, 0;\n\tmov.b32 %0, 0;\n\tmov.b32 %1, 0;\n\t"
          "@p ld.global.nc.v2.u32 {%0, %1}, [%2];\n\t}"
          : "=r"(w[0]), "=r"(w[1])
          : "l"(a), "r"(pr));
  } else if constexpr (BYTES == 4) {
    if constexpr (HINT == kLoadStream)
      asm volatile(
          "{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %2, 0;\n\tmov.b32 %0, 0;\n\t"
          "@p ld.global.nc.L1::no_allocate.u32 %0, [%1];\n\t}"
          : "=r"(w[0])
          : "l"(a), "r"(pr));
    else
      asm("{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %2, 0;\n\tmov.b32 %0, 0;\n\t@p ld.global.nc.u32 %0, [%1];\n\t}"
          : "=r"(w[0])
          : "l"(a), "r"(pr));
  } else {
    unsigned short h;
    if constexpr (HINT == kLoadStream)
      asm volatile(
          "{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %2, 0;\n\tmov.b16 %0, 0;\n\t"
          "@p ld.global.nc.L1::no_allocate.u16 %0, [%1];\n\t}"
          : "=h"(h)
          : "l"(a), "r"(pr));
    else
      asm("{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %2, 0;\n\tmov.b16 %0, 0;\n\t@p ld.global.nc.u16 %0, [%1];\n\t}"
          : "=h"(h)
          : "l"(a), "r"(pr));
    w[0] = h;
  }
}

template <int BYTES, bool GENERIC = false>
__device__ __forceinline__ void store_raw(void* a, const unsigned* w, bool in = true) {
  const int pr = in ? 1 : 0;
  if constexpr (GENERIC) { // a shared-memory staging buffer (rows_bulk's STORE = 1): generic stores
    if (!in) return;
    if constexpr (BYTES == 16)
      asm volatile("st.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(a), "r"(w[0]), "r"(w[1]), "r"(w[2]), "r"(w[3]) : "memory");
    else if constexpr (BYTES == 8)
      asm volatile("st.v2.u32 [%0], {%1, %2};" ::"l"(a), "r"(w[0]), "r"(w[1]) : "memory");
    else if constexpr (BYTES == 4)
      asm volatile("st.u32 [%0], %1;" ::"l"(a), "r"(w[0]) : "memory");
    else
      asm volatile("st.u16 [%0], %1;" ::"l"(a), "h"(static_cast<unsigned short>(w[0])) : "memory");
  } else if constexpr (BYTES == 16)
    asm volatile(
        "{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %5, 0;\n\t@p st.global.v4.u32 [%0], {%1, %2, %3, %4};\n\t}" ::"l"(a),
        "r"(w[0]), "r"(w[1]), "r"(w[2]), "r"(w[3]), "r"(pr));
  else if constexpr (BYTES == 8)
    asm volatile("{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %3, 0;\n\t@p st.global.v2.u32 [%0], {%1, %2};\n\t}" ::"l"(a),
                 "r"(w[0]), "r"(w[1]), "r"(pr));
  else if constexpr (BYTES == 4)
    asm volatile("{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %2, 0;\n\t@p st.global.u32 [%0], %1;\n\t}" ::"l"(a), "r"(w[0]),
                 "r"(pr));
  else
    asm volatile("{\n\t.reg .pred p;\n\tsetp.ne.b32 p, %2, 0;\n\t@p st.global.u16 [%0], %1;\n\t}" ::"l"(a),
                 "h"(static_cast<unsigned short>(w[0])), "r"(pr));
}

// Raw words to VEC floats: f32 as is, bf16 by a shift (it is the high half of an f32), f16
// through cvt. Element e of a 16-bit vector is half e % 2 of word e / 2 (little-endian).
template <int DT, int VEC>
__device__ __forceinline__ void unpack(float (&v)[VEC], const unsigned* w) {
#pragma unroll
  for (int e = 0; e < VEC; ++e) {
    if constexpr (DT == 0) {
      v[e] = __uint_as_float(w[e]);
    } else {
      const unsigned word = w[e / 2];
      if constexpr (DT == 1) {
        v[e] = __uint_as_float(e % 2 ? word & 0xffff0000u : word << 16);
      } else {
        const unsigned short h = static_cast<unsigned short>(e % 2 ? word >> 16 : word);
        asm("cvt.f32.f16 %0, %1;" : "=f"(v[e]) : "h"(h));
      }
    }
  }
}

// VEC floats to raw words, rounded to nearest-even (pairs of 16-bit results in one cvt).
template <int DT, int VEC>
__device__ __forceinline__ void pack(unsigned* w, const float (&v)[VEC]) {
  if constexpr (DT == 0) {
#pragma unroll
    for (int e = 0; e < VEC; ++e) w[e] = __float_as_uint(v[e]);
  } else if constexpr (VEC == 1) {
    unsigned short h;
    if constexpr (DT == 1)
      asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(v[0]));
    else
      asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(v[0]));
    w[0] = h;
  } else {
#pragma unroll
    for (int e = 0; e < VEC; e += 2) {
      if constexpr (DT == 1)
        asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(w[e / 2]) : "f"(v[e + 1]), "f"(v[e]));
      else
        asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(w[e / 2]) : "f"(v[e + 1]), "f"(v[e]));
    }
  }
}

// VEC elements starting at element index i of base.
template <int DT, int VEC, int HINT>
__device__ __forceinline__ void load_vec(float (&v)[VEC], const void* base, long long i, bool in = true) {
  constexpr int B = VEC * elem_bytes<DT>();
  static_assert(B <= 16, "VEC * sizeof(element) <= 16 bytes");
  unsigned w[raw_words<B>()];
  load_raw<B, HINT>(w, static_cast<const char*>(base) + i * elem_bytes<DT>(), in);
  unpack<DT, VEC>(v, w);
}

template <int DT, int VEC, bool GENERIC = false>
__device__ __forceinline__ void store_vec(void* base, long long i, const float (&v)[VEC], bool in = true) {
  constexpr int B = VEC * elem_bytes<DT>();
  unsigned w[raw_words<B>()];
  pack<DT, VEC>(w, v);
  store_raw<B, GENERIC>(static_cast<char*>(base) + i * elem_bytes<DT>(), w, in);
}

// ---------------------------------------------------------------------------------------------
// Per-row constants and statistics.
// ---------------------------------------------------------------------------------------------
// The constants every row of a launch shares, made once by row_consts and handed to the op's math
// (and, as c, to every combine). Only softmax's scale needs any today (softmax_rows.cuh: ref,
// rescale); the norms leave them unused, and the compiler drops them.
struct RowConsts {
  float sgn;     // softmax: sign(scale) (1 for 0): xs = sgn * x is what the max runs over
  float c;       // softmax: |scale| * log2(e): exp(scale * x - max) = ex2(xs * c - ref(M, c))
  float cs;      // softmax: sgn * c = scale * log2(e): xs * c = x * cs, so the sums read x as it is
  unsigned flip; // softmax, 16-bit x: the sign bits that turn a pair of x into a pair of xs (xor)
};

__device__ __forceinline__ RowConsts row_consts(const KtuneRowsArgs& p) {
  RowConsts k;
  k.sgn = p.scale < 0.0f ? -1.0f : 1.0f;
  k.c = fabsf(p.scale) * kLog2e;
  k.cs = k.sgn * k.c;
  k.flip = p.scale < 0.0f ? 0x80008000u : 0u;
  return k;
}

// An op's math on a row: its statistics (Stats), how the kernels fold elements into them and
// turn them into the stored results. Each row op specializes RowMath in its own folder
// (kernel_templates/<op>/<op>_rows.cuh, deriving from RowMathDefaults below for what it does not
// do its own way); rows_families.cpp appends that header to each of the op's kernel sources.
// What a specialization provides (static, __device__ __forceinline__):
//   Stats                       the per-row statistics, a struct of floats, with empty_stats<Stats>()
//                               and combine(Stats, Stats, float c) beside it (symmetric bit for bit)
//   kWeight, kBias              whether the op reads weight / bias (with_affine's combinations)
//   kZeroOutside                SHIFT rows: columns outside the row read as 0 (else loaded() masks them)
//   loaded<VEC, CHUNKS>         a cached row's chunks just loaded: the op's own transform, if any
//   accumulate<N, VEC>          N vectors of a row seen a group at a time folded into Stats
//   local_stats<VEC, CHUNKS>    a thread's statistics of its cached chunks
//   finish                      what the stores apply, from the thread's and the row's statistics
//   finished<VEC>, fold_group, finish_from_row, run_second_pass, second_pass_vector
//                               a vector's results before weight and bias, and the two-pass
//                               kernels' steps (RowMathDefaults has the plain ones)
template <int OP>
struct RowMath;
template <int OP>
using Stats = typename RowMath<OP>::Stats;
template <class S>
__device__ __forceinline__ S empty_stats();

template <class S>
__device__ __forceinline__ S shfl_xor(S s, int mask) {
  constexpr int N = sizeof(S) / sizeof(float);
  float* f = reinterpret_cast<float*>(&s);
#pragma unroll
  for (int i = 0; i < N; ++i) f[i] = __shfl_xor_sync(kFullMask, f[i], mask);
  return s;
}

// All-reduce over aligned groups of WIDTH lanes (a power of two <= 32): every lane of a group
// ends with the same bits.
template <int WIDTH, class S>
__device__ __forceinline__ S warp_allreduce(S s, float c) {
  static_assert(WIDTH >= 1 && WIDTH <= 32 && (WIDTH & (WIDTH - 1)) == 0, "power-of-two lane groups");
#pragma unroll
  for (int m = 1; m < WIDTH; m *= 2) s = combine(s, shfl_xor(s, m), c);
  return s;
}

// All-reduce over the block's WARPS warps through red[WARPS] (static shared memory; no barrier
// after the reads: a caller that reduces again, as rows_bulk's RPC loop does per row, syncs the
// block before the next call writes red[]). Every warp combines the
// warps' results itself, in the same butterfly, instead of waiting for one warp to broadcast.
template <int WARPS, class S>
__device__ __forceinline__ S block_allreduce(S s, S* red, float c) {
  s = warp_allreduce<32>(s, c);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) red[warp] = s;
  __syncthreads();
  constexpr int P = pow2_ceil(WARPS);
  static_assert(P <= 32, "at most 32 warps");
  const int i = lane % P;
  const S t = i < WARPS ? red[i] : empty_stats<S>();
  return warp_allreduce<P>(t, c);
}

// ---------------------------------------------------------------------------------------------
// Thread block clusters (sm_90; rows_cluster, rows_bulk): common/ktune_cluster.cuh.
// ---------------------------------------------------------------------------------------------
// All-reduce of the CTAs' (block-reduced, identical in all threads) stats over a cluster of CL
// CTAs by pushes: thread r < CL of every CTA stores the CTA's stats into CTA r's slot for its rank
// (st.async into distributed shared memory, completing on CTA r's mbarrier), and every CTA waits
// on its own mbarrier for the CL pushes of the row. No cluster barrier a row: Nsight Compute put a
// third of rows_bulk's stall samples at the barrier pair that a slot read by the other CTAs
// (arrive.release, wait, read, arrive) needed, much of it in the releases' ERRBAR, and the CTA
// then also waited at the end for the others to be done with its slot. Rows alternate between two
// slot sets: a CTA pushes row i + 2's stats into set i % 2 only after every CTA's push of row i + 1
// has reached it, and each CTA pushes row i + 1 after it has read row i's set. A CTA that has
// waited for its last row receives nothing more, so it may exit at once.
template <int CL, class S>
struct ClusterStats {
  S slot[2][CL];             // slot[i % 2][r]: rank r's stats of the cluster's i-th row
  unsigned long long bar[2]; // bar[i % 2]: the CL pushes of row i landed (parity (i / 2) % 2)
  static constexpr int N = sizeof(S) / sizeof(float);

  // Thread 0, before the block's first __syncthreads.
  __device__ __forceinline__ void init() {
    async::mbar_init(async::smem_addr(&bar[0]), 1);
    async::mbar_init(async::smem_addr(&bar[1]), 1);
    async::fence_mbar_init(); // visible to the cluster before the arrive below
  }
  // Every thread, after that __syncthreads: the other CTAs may push once they have waited for this
  // (the first allreduce waits), so the barrier's latency hides behind the first row's pass 1.
  __device__ __forceinline__ void open() const { cluster::arrive_relaxed(); }

  // The cluster's stats of its i-th row (i = 0, 1, ... in every CTA alike).
  __device__ __forceinline__ S allreduce(S s, int i, float c) {
    const int b = i & 1;
    const unsigned mine = async::smem_addr(&bar[b]);
    if (i == 0) cluster::wait(); // every CTA's mbarriers are initialized
    if (threadIdx.x == 0) async::mbar_expect_tx(mine, CL * N * 4u);
    if (threadIdx.x < CL) {
      const unsigned r = threadIdx.x;
      const unsigned to = cluster::remote(&slot[b][cluster::rank()], r), at = cluster::remote_at(mine, r);
      const float* f = reinterpret_cast<const float*>(&s);
#pragma unroll
      for (int n = 0; n < N; ++n) cluster::store_async_f32(to + 4u * n, f[n], at);
    }
    // Acquire at cluster scope, what the pushes' release (st.async's complete_tx) pairs with.
    // ptxas adds an L1 invalidation (CCTL.IVALL) for it; a build with the CTA-scope wait measured
    // the same (docs/runs/2026-11-25-h100-s15-cluster-wait-scope-ab.txt), so the sound form stays.
    async::mbar_wait_cluster(mine, static_cast<unsigned>((i >> 1) & 1));
    // Each group of CL lanes reads all ranks and runs the same butterfly: the same bits everywhere.
    return warp_allreduce<CL>(slot[b][(threadIdx.x & 31) % CL], c);
  }
};

// ---------------------------------------------------------------------------------------------
// The register-cached row (rows_warp, rows_block, rows_cluster). A thread holds CHUNKS vectors
// of VEC elements: chunk k covers columns first + k * STRIDE .. + VEC - 1 (STRIDE = VEC times the
// threads sharing the slice, so each chunk is one coalesced sweep); Span says which of them are in
// the row. The helpers take the thread's own element pointers (x, y, weight, bias at column
// `first`), so that every chunk's address is one base plus a compile-time offset: no per-chunk
// 64-bit address arithmetic.
// ---------------------------------------------------------------------------------------------

// SHIFT false (the host's whole-vector rules hold): first = col0 >= 0 is a multiple of VEC, and a
//   chunk is in the row, whole, when first + k * STRIDE < end.
// SHIFT true (rows_warp, rows_block: any cols, leading dimensions and pointers, e.g. rows of an
//   odd number of 16-bit elements, where no row after the first starts on a 16-byte line): the
//   chunks are the VEC-aligned vectors of memory that overlap the row, first = col0 - o with o the
//   row's offset in such a vector (0 .. VEC - 1; row_offset), so the row's first and last chunk may
//   hold columns outside it (< 0 or >= end: a neighbouring row's, or past the tensor). Whole chunks
//   are loaded and stored as vectors; the two partial ones (at most) an element at a time, never
//   touching a column outside the row. Before this, such rows ran VEC 1 kernels: one 2-byte load a
//   column, 28-57 % of the copy rate on the unseen suite's odd norms.
// SHIFT also relies on the family's rules (the chunks cover the row plus VEC - 1 columns, and every
// chunk reaches the row): then only chunk 0 (the row's head, in its first thread) and chunk
// CHUNKS - 1 (its tail) can hold columns outside the row, and the chunks between are whole in every
// thread. Taking that as given (interior) keeps per-column tests, and their registers, out of
// them (softmax bf16 rows_warp VEC 8 CHUNKS 8: 160 registers with them, 127 without). whole()
// stays a test: unpredicated, the interior weight / bias loads were all hoisted ahead of the
// stores, and LayerNorm went from 102 registers to 128 and spills (f32 rows_block, 512 threads).
template <bool SHIFT_, int VEC, int STRIDE, int CHUNKS>
struct Span {
  static constexpr bool SHIFT = SHIFT_;
  static constexpr int STRIDE_ = STRIDE;
  int first, end;
  __device__ __forceinline__ int at(int ch) const { return first + ch * STRIDE; }
  __device__ __forceinline__ static constexpr bool interior(int ch) { return SHIFT && ch > 0 && ch < CHUNKS - 1; }
  // Every column of chunk ch in the row (so: one vector load / store).
  __device__ __forceinline__ bool whole(int ch) const {
    if constexpr (SHIFT)
      return at(ch) >= 0 && at(ch) + VEC <= end;
    else
      return at(ch) < end;
  }
  // Column e of chunk ch in the row.
  __device__ __forceinline__ bool in(int ch, int e) const {
    if constexpr (SHIFT)
      return interior(ch) || static_cast<unsigned>(at(ch) + e) < static_cast<unsigned>(end);
    else
      return at(ch) < end;
  }
  // Some column of chunk ch in the row.
  __device__ __forceinline__ bool any(int ch) const { return interior(ch) || (at(ch) < end && at(ch) + VEC > 0); }
  // Some columns of chunk ch in the row, not all (SHIFT only: the row's ends).
  __device__ __forceinline__ bool partial(int ch) const {
    if constexpr (SHIFT)
      return !interior(ch) && at(ch) < end && at(ch) + VEC > 0 && !whole(ch);
    else
      return false;
  }
  // The thread's columns in the row over its CHUNKS chunks (LayerNorm's count).
  __device__ __forceinline__ int count() const {
    if constexpr (SHIFT) {
      int n = (CHUNKS > 2 ? CHUNKS - 2 : 0) * VEC;
#pragma unroll
      for (int ch = 0; ch < CHUNKS; ++ch)
        if (!interior(ch)) n += max(0, min(end, at(ch) + VEC) - max(0, at(ch)));
      return n;
    } else {
      const int limit = end - first;
      return limit <= 0 ? 0 : min(CHUNKS, (limit + STRIDE - 1) / STRIDE) * VEC;
    }
  }
};

// The offset (in elements, 0 .. VEC - 1) of an element pointer in its VEC-aligned vector.
template <int DT, int VEC>
__device__ __forceinline__ int row_offset(const void* a) {
  return static_cast<int>((reinterpret_cast<unsigned long long>(a) / elem_bytes<DT>()) % VEC);
}

// `base` advanced by `elems` elements of DT.
template <int DT>
__device__ __forceinline__ const void* advance(const void* base, long long elems) {
  return static_cast<const char*>(base) + elems * elem_bytes<DT>();
}
template <int DT>
__device__ __forceinline__ void* advance(void* base, long long elems) {
  return static_cast<char*>(base) + elems * elem_bytes<DT>();
}

// SHIFT: the chunks that may be partial, or need a column-at-a-time fallback next to the row's
// ends. With the family's rules (the chunks cover the row plus VEC - 1 columns, and every chunk
// reaches the row) the row's head is in chunk 0 (of its first thread) and its tail in chunk
// CHUNKS - 1; load_affine's aligned pair can reach past the row's end from chunk CHUNKS - 2 on.
template <int CHUNKS>
__device__ __forceinline__ constexpr bool edge_chunk(int ch) {
  return ch == 0 || ch >= CHUNKS - 2;
}

// SHIFT: the bytes of x (all rows), which a partial chunk's vector may read beyond its row.
struct Extent {
  const char *lo, *hi;
};
template <int DT>
__device__ __forceinline__ Extent x_extent(const KtuneRowsArgs& p) {
  const char* lo = static_cast<const char*>(p.x);
  return {lo, lo + ((p.rows - 1) * p.ldx + p.cols) * elem_bytes<DT>()};
}

// Loads the chunks (and lets the op transform them: RowMath::loaded); x is the thread's chunk 0.
// Columns out of the row hold 0, or what the op's loaded() puts there. All vector loads are issued before any of their data is used
// (predicated, no branches). SHIFT: a partial chunk's vector is loaded whole where it lies inside x
// (every row's ends but the tensor's own two: the bytes beyond a row are its neighbour's or the
// padding, read and discarded), and only at the tensor's first and last byte by columns, in a
// branch. Columns one at a time at every row's ends, predicated or in a branch, cost the whole
// warp their wait or the registers for their own destinations (softmax 3000x1001: 41 % of the
// copy rate against 46 % for VEC 1; spills at 512 threads).
template <int OP, int DT, int VEC, int CHUNKS, class SP>
__device__ __forceinline__ void load_row(float (&v)[CHUNKS][VEC], const void* x, const SP& span, const RowConsts& k,
                                         Extent ext = {}) {
  constexpr int STRIDE = SP::STRIDE_;
  constexpr int B = VEC * elem_bytes<DT>();
  bool inside[CHUNKS];
#pragma unroll
  for (int ch = 0; ch < CHUNKS; ++ch) {
    inside[ch] = span.whole(ch);
    if constexpr (SP::SHIFT)
      if (ch == 0 || ch == CHUNKS - 1) { // (unrolled: decided at compile time)
        const char* a = static_cast<const char*>(advance<DT>(x, ch * STRIDE));
        inside[ch] = inside[ch] || (span.any(ch) && a >= ext.lo && a + B <= ext.hi);
      }
    load_vec<DT, VEC, kLoadStream>(v[ch], x, ch * STRIDE, inside[ch]);
  }
  if constexpr (SP::SHIFT) {
#pragma unroll
    for (int ch = 0; ch < CHUNKS; ++ch) {
      if (ch != 0 && ch != CHUNKS - 1) continue;
      if (span.any(ch) && !inside[ch]) { // the tensor's first or last vector, partly outside it
#pragma unroll
        for (int e = 0; e < VEC; ++e) {
          float t[1];
          load_vec<DT, 1, kLoadStream>(t, x, ch * STRIDE + e, span.in(ch, e));
          v[ch][e] = t[0];
        }
      }
      if constexpr (RowMath<OP>::kZeroOutside) // a neighbour's columns out (else loaded() masks them)
#pragma unroll
        for (int e = 0; e < VEC; ++e) v[ch][e] = span.in(ch, e) ? v[ch][e] : 0.0f;
    }
  }
  RowMath<OP>::template loaded<VEC, CHUNKS>(v, span, k); // elsewhere the predicated-off loads gave 0
}

// This thread's statistics of its chunks (the op's local_stats; out-of-row elements are masked by it).
template <int OP, int VEC, int CHUNKS, class SP>
__device__ __forceinline__ Stats<OP> local_stats(float (&v)[CHUNKS][VEC], const SP& span, const RowConsts& k) {
  return RowMath<OP>::template local_stats<VEC, CHUNKS>(v, span, k);
}

// What the stores apply: y = (v - shift) * mult (* w + b for the norms). Softmax's second pass
// (finish_from_row) instead adds shift = -log2 S to exp's argument and leaves mult at 1; the
// register-cached kernels' softmax (finish) scales by mult.
struct Finish {
  float shift, mult;
};

// From the thread's statistics `mine` and the row's `all` (the op's finish).
template <int OP>
__device__ __forceinline__ Finish finish(const Stats<OP>& mine, const Stats<OP>& all, const KtuneRowsArgs& p,
                                         const RowConsts& k) {
  return RowMath<OP>::finish(mine, all, p, k);
}

// The thread's pointers at its first column: y, and weight / bias where the op uses them.
struct OutPtrs {
  void* y;
  const void* w;
  const void* b;
};

template <int DT>
__device__ __forceinline__ OutPtrs out_ptrs(const KtuneRowsArgs& p, void* yrow, long long col) {
  OutPtrs o;
  o.y = advance<DT>(yrow, col);
  o.w = p.weight != nullptr ? advance<DT>(p.weight, col) : nullptr;
  o.b = p.bias != nullptr ? advance<DT>(p.bias, col) : nullptr;
  return o;
}

// The results of a vector before weight and bias (the op's finished).
template <int OP, int VEC>
__device__ __forceinline__ void finished(float (&y)[VEC], const float (&v)[VEC], const Finish& f) {
  RowMath<OP>::template finished<VEC>(y, v, f);
}

// Writes one vector of results `at` elements past the pointers: finished() times weight (W) plus
// bias (B), loaded per vector (reused by every row: cached path).
template <int OP, int DT, int VEC, bool W, bool B, bool GENERIC = false>
__device__ __forceinline__ void store_out(const OutPtrs& o, long long at, const float (&v)[VEC], const Finish& f,
                                          bool in = true) {
  float y[VEC];
  finished<OP>(y, v, f);
  if constexpr (W) {
    float w[VEC];
    load_vec<DT, VEC, kLoadKeep>(w, o.w, at, in);
#pragma unroll
    for (int e = 0; e < VEC; ++e) y[e] *= w[e];
  }
  if constexpr (B) {
    float b[VEC];
    load_vec<DT, VEC, kLoadKeep>(b, o.b, at, in);
#pragma unroll
    for (int e = 0; e < VEC; ++e) y[e] += b[e];
  }
  store_vec<DT, VEC, GENERIC>(o.y, at, y, in);
}

// Calls fn.template run<W, B>() with W = weight present, B = bias present (as far as the op reads
// them: RowMath::kWeight, kBias), so that the store loops are compiled once per combination with
// no null test inside them (tests per vector made ptxas spill around the branches).
template <int OP, class Fn>
__device__ __forceinline__ void with_affine(const KtuneRowsArgs& p, const Fn& fn) {
  static_assert(RowMath<OP>::kWeight || !RowMath<OP>::kBias, "an op with a bias reads a weight too");
  if constexpr (!RowMath<OP>::kWeight) {
    fn.template run<false, false>();
  } else if constexpr (!RowMath<OP>::kBias) {
    if (p.weight != nullptr)
      fn.template run<true, false>();
    else
      fn.template run<false, false>();
  } else {
    if (p.weight != nullptr) {
      if (p.bias != nullptr)
        fn.template run<true, true>();
      else
        fn.template run<true, false>();
    } else {
      if (p.bias != nullptr)
        fn.template run<false, true>();
      else
        fn.template run<false, false>();
    }
  }
}

// Elements s .. s + VEC - 1 of the 2 * VEC elements lo ++ hi (raw words; element e of a 16-bit
// vector is half e % 2 of word e / 2), for a run-time s in 0 .. VEC - 1: a barrel shifter of word
// selects (one stage a bit of s's whole words), then, for 16-bit elements and an odd s, one byte
// permute a word. s is the same for a whole row, so the selects do not diverge.
template <int DT, int VEC>
__device__ __forceinline__ void funnel(unsigned* out, const unsigned* lo, const unsigned* hi, int s) {
  constexpr int W = raw_words<VEC * elem_bytes<DT>()>();
  constexpr int PER = DT == 0 ? 1 : 2; // elements a word
  unsigned u[2 * W];
#pragma unroll
  for (int i = 0; i < W; ++i) u[i] = lo[i], u[W + i] = hi[i];
  const int q = s / PER; // whole words, 0 .. W - 1
#pragma unroll
  for (int b = W / 2; b >= 1; b /= 2)
#pragma unroll
    for (int i = 0; i + b < 2 * W; ++i) u[i] = (q & b) ? u[i + b] : u[i]; // reads u[i + b] before it moves
  if constexpr (PER == 2) {
    const unsigned sel = (s & 1) ? 0x5432u : 0x3210u; // the high half of u[m], the low half of u[m + 1]
#pragma unroll
    for (int m = 0; m < W; ++m) out[m] = __byte_perm(u[m], u[m + 1], sel);
  } else {
#pragma unroll
    for (int m = 0; m < W; ++m) out[m] = u[m];
  }
}

// SHIFT: weight or bias (a: at column span.first, s: its offset in a VEC-aligned vector, the same
// for every chunk of the row) at chunk ch's columns. A whole chunk takes the two aligned vectors
// that hold its columns, when both lie in [0, end), and shifts them into place; a partial chunk, and
// a whole one next to the row's ends whose vectors would reach past them, loads its columns one at a
// time (so nothing outside weight / bias is read). Columns out of the row get 0.
// The fallback is a branch in the edge chunks only (edge_chunk: the others always take the
// vectors); its loads hit L1 / L2 (weight and bias serve every row). Predicated loads ORed into the
// funnel's words instead, with no branch, kept more registers live and spilled at 512 threads.
template <int DT, int VEC, int CHUNKS, class SP>
__device__ __forceinline__ void load_affine(float (&w)[VEC], const void* a, int ch, int s, const SP& span) {
  constexpr int B = VEC * elem_bytes<DT>(), W = raw_words<B>();
  const int at = span.at(ch);
  const bool fast = span.whole(ch) && at - s >= 0 && (s == 0 || at - s + 2 * VEC <= span.end);
  const long long off = static_cast<long long>(ch) * SP::STRIDE_ - s;
  unsigned lo[W], hi[W], out[W];
  load_raw<B, kLoadKeep>(lo, advance<DT>(a, off), fast);
  load_raw<B, kLoadKeep>(hi, advance<DT>(a, off + VEC), fast && s != 0);
  funnel<DT, VEC>(out, lo, hi, s);
  unpack<DT, VEC>(w, out);
  if (edge_chunk<CHUNKS>(ch) && !fast && span.any(ch)) {
#pragma unroll
    for (int e = 0; e < VEC; ++e) {
      float t[1];
      load_vec<DT, 1, kLoadKeep>(t, a, static_cast<long long>(ch) * SP::STRIDE_ + e, span.in(ch, e));
      w[e] = t[0];
    }
  }
}

template <int OP, int DT, int VEC, int CHUNKS, class SP>
struct RowStores {
  OutPtrs o;
  const float (&v)[CHUNKS][VEC];
  SP span;
  Finish f;
  template <bool W, bool B>
  __device__ __forceinline__ void run() const {
    constexpr int STRIDE = SP::STRIDE_;
    if constexpr (!SP::SHIFT) {
#pragma unroll
      for (int ch = 0; ch < CHUNKS; ++ch) store_out<OP, DT, VEC, W, B>(o, ch * STRIDE, v[ch], f, span.whole(ch));
    } else {
      const int sw = W ? row_offset<DT, VEC>(o.w) : 0, sb = B ? row_offset<DT, VEC>(o.b) : 0;
      // y's row sits in aligned vectors as x's does (the same offset; always where both have the
      // same alignment and leading dimension): whole chunks are stored as vectors, else every
      // column alone.
      const bool yvec = row_offset<DT, VEC>(o.y) == 0;
#pragma unroll
      for (int ch = 0; ch < CHUNKS; ++ch) {
        float y[VEC];
        finished<OP>(y, v[ch], f);
        if constexpr (W) {
          float w[VEC];
          load_affine<DT, VEC, CHUNKS>(w, o.w, ch, sw, span);
#pragma unroll
          for (int e = 0; e < VEC; ++e) y[e] *= w[e];
        }
        if constexpr (B) {
          float b[VEC];
          load_affine<DT, VEC, CHUNKS>(b, o.b, ch, sb, span);
#pragma unroll
          for (int e = 0; e < VEC; ++e) y[e] += b[e];
        }
        const bool vec = yvec && span.whole(ch);
        store_vec<DT, VEC>(o.y, static_cast<long long>(ch) * STRIDE, y, vec);
        // Columns alone: the partial chunks (predicated, no branch), and every chunk where y's
        // rows sit off x's vectors (a branch the whole row takes alike).
        if (ch == 0 || ch == CHUNKS - 1 || !yvec) {
#pragma unroll
          for (int e = 0; e < VEC; ++e) {
            const float t[1] = {y[e]};
            store_vec<DT, 1>(o.y, static_cast<long long>(ch) * STRIDE + e, t, !vec && span.in(ch, e));
          }
        }
      }
    }
  }
};

// Stores the cached row of a thread (yrow: the row's first element; the thread's chunks where span
// says).
template <int OP, int DT, int VEC, int CHUNKS, class SP>
__device__ __forceinline__ void store_row(const KtuneRowsArgs& p, void* yrow, const float (&v)[CHUNKS][VEC], const SP& span,
                                          const Finish& f) {
  with_affine<OP>(p, RowStores<OP, DT, VEC, CHUNKS, SP>{out_ptrs<DT>(p, yrow, span.first), v, span, f});
}

// ---------------------------------------------------------------------------------------------
// The two passes of the kernels that keep statistics, not the row, in registers (rows_stream:
// the row read twice from global memory; rows_bulk: from shared memory). A source gives vector i
// (VEC elements) of the row: GlobalRow or SmemRow. Vector i goes to thread i % THREADS, U vectors
// in flight a thread per iteration, a tail one at a time.
// ---------------------------------------------------------------------------------------------
// The raw words of a vector of VEC elements of DT (a 16-bit element alone: the low half of one).
template <int DT, int VEC>
__host__ __device__ constexpr int vec_words() {
  return raw_words<VEC * elem_bytes<DT>()>();
}

template <int DT_, int VEC>
struct GlobalRow {
  static constexpr int DT = DT_;
  const void* x; // the row's (or slice's) first element
  __device__ __forceinline__ void words(unsigned (&w)[vec_words<DT, VEC>()], int i) const {
    load_raw<VEC * elem_bytes<DT>(), kLoadStream>(w, static_cast<const char*>(x) + static_cast<long long>(i) * VEC * elem_bytes<DT>());
  }
  __device__ __forceinline__ void load(float (&v)[VEC], int i) const {
    unsigned w[vec_words<DT, VEC>()];
    words(w, i);
    unpack<DT, VEC>(v, w);
  }
};

template <int DT_, int VEC>
struct SmemRow {
  static constexpr int DT = DT_;
  unsigned base; // shared-window address of the first element
  __device__ __forceinline__ void load(float (&v)[VEC], int i) const {
    unsigned w[vec_words<DT, VEC>()];
    words(w, i);
    unpack<DT, VEC>(v, w);
  }
  __device__ __forceinline__ void words(unsigned (&w)[vec_words<DT, VEC>()], int i) const {
    constexpr int B = VEC * elem_bytes<DT>();
    const unsigned a = base + static_cast<unsigned>(i) * B;
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
  }
};

// Pass 1: N vectors of a source taken at i, i + THREADS, ... folded into st (the op's fold_group;
// RowMathDefaults loads them and calls the op's accumulate).
template <int OP, int VEC, int THREADS, int N, class Src>
__device__ __forceinline__ void fold_group(Stats<OP>& st, const Src& src, int i, const RowConsts& k) {
  RowMath<OP>::template fold_group<VEC, THREADS, N>(st, src, i, k);
}

// Pass 1: vectors [v0, v1) of the source folded into st.
template <int OP, int VEC, int THREADS, int U, class Src>
__device__ __forceinline__ void fold_vectors(Stats<OP>& st, const Src& src, int v0, int v1, const RowConsts& k) {
  int i = v0 + static_cast<int>(threadIdx.x);
  for (; i + (U - 1) * THREADS < v1; i += U * THREADS) fold_group<OP, VEC, THREADS, U>(st, src, i, k);
  for (; i < v1; i += THREADS) fold_group<OP, VEC, THREADS, 1>(st, src, i, k);
}

// The scaling pass 2 applies, from the row's statistics alone (the op's finish_from_row;
// RowMathDefaults: finish() with the row's statistics for the thread's).
template <int OP>
__device__ __forceinline__ Finish finish_from_row(const Stats<OP>& all, const KtuneRowsArgs& p, const RowConsts& k) {
  return RowMath<OP>::finish_from_row(all, p, k);
}

// Pass 2: the source's nvec vectors to y; with_affine picks W and B once. The op's
// run_second_pass picks the form of the sweep (RowMathDefaults: one, with a = b = 0) and its
// second_pass_vector turns a loaded vector into results and stores them (RowMathDefaults: as the
// register-cached kernels do, store_out). GENERIC: o.y is a generic address (rows_bulk writes the
// results into its shared-memory slice in place, for a bulk store).
template <int OP, int DT, int VEC, int THREADS, int U, class Src, bool GENERIC = false>
struct SecondPass {
  static constexpr int DT_ = DT;
  OutPtrs o; // at the source's first column
  Src src;
  int nvec;
  Stats<OP> all;
  Finish f;
  RowConsts k;
  template <bool W, bool B>
  __device__ __forceinline__ void run() const {
    RowMath<OP>::template run_second_pass<W, B>(*this);
  }
  template <bool W, bool B, int FORM>
  __device__ __forceinline__ void sweep(float a, float b) const {
    int i = threadIdx.x;
    for (; i + (U - 1) * THREADS < nvec; i += U * THREADS) group<U, W, B, FORM>(i, a, b);
    for (; i < nvec; i += THREADS) group<1, W, B, FORM>(i, a, b);
  }
  template <int N, bool W, bool B, int FORM>
  __device__ __forceinline__ void group(int i, float a, float b) const {
    float g[N][VEC];
#pragma unroll
    for (int u = 0; u < N; ++u) src.load(g[u], i + u * THREADS);
#pragma unroll
    for (int u = 0; u < N; ++u)
      RowMath<OP>::template second_pass_vector<DT, VEC, W, B, GENERIC, FORM>(o, i + u * THREADS, g[u], f, k, a, b);
  }
};

// What an op's RowMath inherits where it has nothing of its own: the plain steps of the two-pass
// kernels. Stats types come in as template arguments (RowMath<OP> is still being defined when this
// base is).
template <int OP>
struct RowMathDefaults {
  static constexpr bool kZeroOutside = true;
  // y = (v - shift) * mult, as Finish says.
  template <int VEC>
  __device__ __forceinline__ static void finished(float (&y)[VEC], const float (&v)[VEC], const Finish& f) {
#pragma unroll
    for (int e = 0; e < VEC; ++e) y[e] = (v[e] - f.shift) * f.mult;
  }
  template <int VEC, int CHUNKS, class SP>
  __device__ __forceinline__ static void loaded(float (&)[CHUNKS][VEC], const SP&, const RowConsts&) {}
  template <int VEC, int THREADS, int N, class S, class Src>
  __device__ __forceinline__ static void fold_group(S& st, const Src& src, int i, const RowConsts& k) {
    float g[N][VEC];
#pragma unroll
    for (int u = 0; u < N; ++u) src.load(g[u], i + u * THREADS);
    RowMath<OP>::template accumulate<N, VEC>(st, g, k);
  }
  template <class S>
  __device__ __forceinline__ static Finish finish_from_row(const S& all, const KtuneRowsArgs& p, const RowConsts& k) {
    return RowMath<OP>::finish(all, all, p, k);
  }
  template <bool W, bool B, class Pass>
  __device__ __forceinline__ static void run_second_pass(const Pass& pass) {
    pass.template sweep<W, B, 0>(0.0f, 0.0f);
  }
  // Vector `vec` of the row (its first element at vec * VEC).
  template <int DT, int VEC, bool W, bool B, bool GENERIC, int FORM>
  __device__ __forceinline__ static void second_pass_vector(const OutPtrs& o, int vec, float (&g)[VEC], const Finish& f,
                                                            const RowConsts&, float, float) {
    store_out<OP, DT, VEC, W, B, GENERIC>(o, static_cast<long long>(vec) * VEC, g, f);
  }
};

// Row r's first element of x / y.
template <int DT>
__device__ __forceinline__ const void* x_row(const KtuneRowsArgs& p, long long r) {
  return advance<DT>(p.x, r * p.ldx);
}
template <int DT>
__device__ __forceinline__ void* y_row(const KtuneRowsArgs& p, long long r) {
  return advance<DT>(p.y, r * p.ldy);
}

template <int OP, int DT, int VEC>
__device__ __forceinline__ void check_params() {
  static_assert(sizeof(Stats<OP>) % sizeof(float) == 0, "an op's statistics are floats (shfl_xor moves them so)");
  static_assert(DT >= 0 && DT <= 2, "DT: 0 f32, 1 bf16, 2 f16");
  static_assert(VEC == 1 || VEC == 2 || VEC == 4 || VEC == 8, "VEC in {1, 2, 4, 8}");
  static_assert(VEC * elem_bytes<DT>() <= 16, "VEC * sizeof(element) <= 16 bytes");
}

} // namespace rows
} // namespace ktune_dev
