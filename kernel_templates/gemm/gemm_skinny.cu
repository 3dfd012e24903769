// gemm_skinny: GEMM for a few rows of C (decode shapes, M = 1 .. 64). There the product is a
// stream over B (K x N) and the limit is memory bandwidth, not FLOPs: each element of B is
// loaded once, with the widest vector the layout allows, and meets all MT rows of A while it is
// in registers. A block owns a strip of columns of C, MT rows and one K slice; its piece of A
// (MT x KC at a time) sits in shared memory, where every lane reads it without conflicts.
//
// Template parameters (host code spells them as in the config JSON):
//   MT      rows of C per block; blockIdx.y steps over M in MT-row tiles (each re-reads B)
//   NT      threads per block
//   VEC     floats per load of B (1, 2, 4): along N when B is row-major, along K otherwise
//   KG      B row-major only: thread groups that split each K chunk between them; their partial
//           sums meet in shared memory at the end (1 when B is column-major)
//   NC      B column-major only: columns of C per warp; the 32 lanes run along K and a warp
//           shuffle adds their partial sums (1 when B is row-major)
//   UNROLL  loads of B per step (x4 rows when B is row-major); two steps are in flight
//   KC      depth of K of each shared-memory chunk of A
//   LDH     loads of B: 0 plain; 1 read-only path, no L1 allocation, 256-byte L2 prefetch
//   CL      1: the K slices of a tile run in thread block clusters of up to 8 (sm_90) that add
//           their partial sums through distributed shared memory: with SPLITK <= 8 no workspace
//           and no reduce kernel; beyond, SPLITK / 8 slices go through the workspace
//   SPLITK  K slices (blockIdx.z); partial sums go to the workspace, gemm_splitk_reduce adds them
//   ST      B row-major only: 0 streams B through registers (two steps in flight, above); >= 2 a
//           ring of ST shared-memory stages filled with cp.async, each KC deep (A's MT x KC and
//           B's KC x block columns), ST - 1 of them in flight while one is computed: the bytes in
//           flight no longer cost registers, so fewer, longer K slices keep DRAM busy
//   MINB    blocks per SM asked of ptxas (__launch_bounds__' second argument): caps registers so
//           that a grid of clusters fits the device in one wave (1: no cap beyond NT's; passed
//           as 0, "no minimum", because an explicit 1 changes ptxas's register allocation)
//   A_COL, B_COL  layouts from the problem: 1 = column-major (transposed, "T")
#include "gemm_common.cuh"
#include "gemm_splitk.cuh"
#include "ktune_cluster.cuh"

namespace ktune_dev {

// A load of B, which every block reads once: with LDH = 1 through the non-coherent path
// without allocating in L1 and asking L2 to fetch 256-byte runs (the stream's next sectors).
template <int VEC, int LDH>
__device__ __forceinline__ void load_stream(float* d, const float* src) {
  if constexpr (LDH == 0) {
    copy_vec<VEC>(d, src);
  } else if constexpr (VEC == 4) {
    asm("ld.global.nc.L1::no_allocate.L2::256B.v4.f32 {%0, %1, %2, %3}, [%4];"
                 : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3]) : "l"(src));
  } else if constexpr (VEC == 2) {
    asm("ld.global.nc.L1::no_allocate.L2::256B.v2.f32 {%0, %1}, [%2];" : "=f"(d[0]), "=f"(d[1]) : "l"(src));
  } else {
    asm("ld.global.nc.L1::no_allocate.L2::256B.f32 %0, [%1];" : "=f"(d[0]) : "l"(src));
  }
}

// VEC floats of B starting at src, or zeros where !(i < limit) for element i.
template <int VEC, int LDH>
__device__ __forceinline__ void load_guarded(float* dst, const float* src, int limit) {
  if (VEC <= limit) {
    load_stream<VEC, LDH>(dst, src);
  } else {
#pragma unroll
    for (int e = 0; e < VEC; ++e) dst[e] = e < limit ? src[e] : 0.0f;
  }
}

// Writes VEC values of row `row` at column col: to C (alpha and beta applied) when SPLITK is 1,
// else to workspace slice `slice` of SPLITK partial products that gemm_splitk_reduce adds.
template <int VEC, int SPLITK>
__device__ __forceinline__ void store_row(const KtuneGemmArgs& p, int row, int col, const float* v, int slice) {
  float* const out = SPLITK == 1 ? p.C : p.workspace + slice * (long long)p.M * p.ws_ld;
  store_out<VEC, SPLITK == 1, false>(p, out + row * (long long)(SPLITK == 1 ? p.ldc : p.ws_ld) + col, col, v);
}

// Adds one quad of k (four rows of B, VEC columns each) into the MT x VEC accumulators: row m of
// A's chunk (KC floats, k contiguous) gives the float4 at k = 4q .., whose four terms are added in
// k order. Both ways of bringing B in (registers or the stage ring) end here.
template <int MT, int VEC, int KC>
__device__ __forceinline__ void add_quad(float (&acc)[MT][VEC], const float* a_chunk, int q, const float (&b)[4][VEC]) {
#pragma unroll
  for (int m = 0; m < MT; ++m) {
    const float4 a = *reinterpret_cast<const float4*>(a_chunk + m * KC + q * 4);
#pragma unroll
    for (int v = 0; v < VEC; ++v) {
      float t = acc[m][v];
      t = fmaf(a.x, b[0][v], t);
      t = fmaf(a.y, b[1][v], t);
      t = fmaf(a.z, b[2][v], t);
      t = fmaf(a.w, b[3][v], t);
      acc[m][v] = t;
    }
  }
}

// The chunk loop of both B layouts. For each KC-deep chunk of the block's K slice: stage A's
// chunk in shared memory, then stream B through two register buffers (ping-pong), so that while
// one step computes, the next step's loads are in flight. The first step's loads go out before
// the barrier that stages A, so they overlap it. The chunk holds ceil(len / UNIT) items (quads of
// k, or vectors along k); this thread takes the steps at items first, first + STEP, ...; load and
// compute are called as (buffer, kc, len, first item of the step).
template <int KC, int UNIT, int STEP, class Buf, class StageA, class Load, class Compute>
__device__ __forceinline__ void stream_chunks(int k_begin, int k_end, int first, const StageA& stage_a, const Load& load,
                                              const Compute& compute) {
  Buf b0, b1;
  for (int kc = k_begin; kc < k_end; kc += KC) {
    const int len = min(KC, k_end - kc), items = (len + UNIT - 1) / UNIT;
    load(b0, kc, len, first);
    __syncthreads(); // everyone is done reading the previous chunk
    stage_a(kc, len);
    __syncthreads();
    for (int i = first; i < items; i += 2 * STEP) {
      if (i + STEP < items) load(b1, kc, len, i + STEP);
      compute(b0, kc, len, i);
      if (i + 2 * STEP < items) load(b0, kc, len, i + 2 * STEP);
      if (i + STEP < items) compute(b1, kc, len, i + STEP);
    }
  }
}

// The K slice of a row-major B through a ring of ST shared-memory stages (ST >= 2). Stage s holds
// A's MT x KC and B's KC x COLS at k = k_begin + s * KC, copied with cp.async by all threads
// (zeros beyond M, N and the slice, so the compute needs no guards); ST - 1 stages are in flight
// while one is computed. Thread (tx, group g) adds quads g, g + KG, ... of every stage into its
// MT x VEC accumulators: its VEC columns of four rows of B meet one float4 of each row of A (a
// broadcast: the warp is in one group). One barrier a stage: after it, stage s has landed for
// every thread and stage s - 1 (the slot the next copy reuses) is no longer read.
template <int MT, int NT, int VEC, int KG, int KC, int LDH, int COLS, int ST, int A_COL>
__device__ __forceinline__ void stream_stages(const KtuneGemmArgs& p, float* ring, float (&acc)[MT][VEC], int m0, int k_begin,
                                              int k_end, int tx, int g) {
  constexpr int STAGE = MT * KC + KC * COLS;
  const int stages = k_end > k_begin ? (k_end - k_begin + KC - 1) / KC : 0;
  const int n0 = blockIdx.x * COLS;
  // Each thread copies the same columns of every stage, so what does not change from stage to
  // stage (source pointers, destinations, column guards) is worked out once here: the issue of a
  // stage is then a pointer step and a row check per copy. B: RV vectors a row, NT = KG * RV, so
  // one pass of the block copies KG rows and a thread copies rows bk, bk + KG, ... at column bc.
  constexpr int RV = COLS / VEC, B_PASSES = KC / KG;
  static_assert(NT == KG * RV && KC % KG == 0, "the block copies whole rows of B's stage");
  const int bk = threadIdx.x / RV, bc = threadIdx.x % RV * VEC;
  const int b_bytes = max(0, min(VEC, p.N - n0 - bc)) * 4; // 0: this thread's columns lie beyond N
  const float* b_src = p.B + (long long)(k_begin + bk) * p.ldb + n0 + bc;
  const long long b_row_step = (long long)KG * p.ldb;
  // A row-major: AV vectors a row of A's chunk; where AV divides NT a thread copies rows am,
  // am + NT / AV, ... at column ak (else the general loop below).
  constexpr int AV = KC / VEC, A_ROWS = NT % AV == 0 ? NT / AV : 1, A_PASSES = (MT + A_ROWS - 1) / A_ROWS;
  const int am = threadIdx.x / AV, ak = threadIdx.x % AV * VEC;
  auto issue = [&](int s) {
    if (s < stages) {
      float* const sa = ring + (s % ST) * STAGE;
      float* const sb = sa + MT * KC;
      const int kc = k_begin + s * KC;
      if constexpr (A_COL == 0 && NT % AV == 0) {
#pragma unroll
        for (int j = 0; j < A_PASSES; ++j) {
          const int m = am + j * A_ROWS;
          if (A_PASSES * A_ROWS == MT || m < MT) {
            const int valid = m0 + m < p.M ? max(0, min(VEC, k_end - kc - ak)) : 0;
            cp_async<VEC * 4, LDH>(sa + m * KC + ak, valid ? p.A + (long long)(m0 + m) * p.lda + kc + ak : p.A, valid * 4);
          }
        }
      } else if constexpr (A_COL == 0) {
        for (int i = threadIdx.x; i < MT * KC / VEC; i += NT) {
          const int m = i / AV, k = i % AV * VEC;
          const int valid = m0 + m < p.M ? max(0, min(VEC, k_end - kc - k)) : 0;
          cp_async<VEC * 4, LDH>(sa + m * KC + k, valid ? p.A + (long long)(m0 + m) * p.lda + kc + k : p.A, valid * 4);
        }
      } else {
        for (int i = threadIdx.x; i < MT * KC; i += NT) {
          const int m = i / KC, k = i % KC;
          const bool ok = m0 + m < p.M && kc + k < k_end;
          cp_async<4, LDH>(sa + i, ok ? p.A + (long long)(kc + k) * p.lda + m0 + m : p.A, ok ? 4 : 0);
        }
      }
      const float* src = b_src + (long long)s * KC * p.ldb;
      float* const dst = sb + bk * COLS + bc;
#pragma unroll
      for (int j = 0; j < B_PASSES; ++j) {
        const bool ok = b_bytes && kc + bk + j * KG < k_end;
        cp_async<VEC * 4, LDH>(dst + j * KG * COLS, ok ? src : p.B, ok ? b_bytes : 0);
        src += b_row_step;
      }
    }
    cp_async_commit(); // empty groups too, so that "ST - 2 pending" always means "stage s landed"
  };
  for (int s = 0; s < ST - 1; ++s) issue(s);
  for (int s = 0; s < stages; ++s) {
    cp_async_wait<ST - 2>();
    __syncthreads();
    issue(s + ST - 1);
    const float* const sa = ring + (s % ST) * STAGE;
    const float* const sb = sa + MT * KC + tx * VEC;
#pragma unroll
    for (int j = 0; j < KC / 4 / KG; ++j) {
      const int q = g + j * KG;
      float b[4][VEC];
#pragma unroll
      for (int r = 0; r < 4; ++r) copy_vec<VEC>(b[r], sb + (q * 4 + r) * COLS);
      add_quad<MT, VEC, KC>(acc, sa, q, b);
    }
  }
}

// CL = 1: the CS CTAs of a cluster (consecutive blockIdx.z, one per K slice) each left their
// block's partial products in part[MT x COLS]; every rank adds a share of the outputs over all
// ranks, in rank order (deterministic), and writes C, or (SPLITK > CS) the cluster's slice of the
// workspace for gemm_splitk_reduce<SPLITK / CS>.
template <int MT, int COLS, int NT, int CS, int SPLITK>
__device__ __forceinline__ void cluster_reduce(const KtuneGemmArgs& p, const float* part, int m0, int col0) {
  cluster::sync(); // every rank's part is written
  const int rank = int(cluster::rank());
  for (int o = rank * NT + int(threadIdx.x); o < MT * COLS; o += NT * CS) {
    float sum = 0.0f;
#pragma unroll
    for (int r = 0; r < CS; ++r) sum += cluster::load_f32(cluster::remote(part + o, unsigned(r)));
    const int m = o / COLS, col = col0 + o % COLS;
    if (m0 + m < p.M && col < p.N) store_row<1, SPLITK / CS>(p, m0 + m, col, &sum, int(blockIdx.z) / CS);
  }
  cluster::sync(); // no CTA leaves (freeing its shared memory) while others still read it
}

} // namespace ktune_dev

// CTAs per cluster: with CL = 1 the K slices of a tile, at most 8 (the portable cluster size).
__host__ __device__ constexpr int skinny_cluster_size(int cl, int splitk) { return cl ? (splitk < 8 ? splitk : 8) : 1; }

template <int MT, int NT, int VEC, int KG, int NC, int UNROLL, int KC, int LDH, int CL, int SPLITK, int ST, int MINB, int A_COL,
          int B_COL>
__global__ void __launch_bounds__(NT, MINB > 1 ? MINB : 0) KTUNE_CLUSTER_DIMS(1, 1, skinny_cluster_size(CL, SPLITK)) gemm_skinny(KtuneGemmArgs p) {
  using namespace ktune_dev;
  static_assert(KC % 4 == 0, "chunks hold whole float4 of A");
  // gemm_splitk_reduce, when it follows, may be scheduled now: it waits for this grid's results.
  if constexpr (SPLITK / skinny_cluster_size(CL, SPLITK) > 1) let_next_grid_launch();
  extern __shared__ float4 smem_raw[];
  float* const As = reinterpret_cast<float*>(smem_raw); // As[m * KC + k]: k contiguous

  const int tid = threadIdx.x;
  const int m0 = blockIdx.y * MT;
  // This block's K slice, a multiple of 4 long so that chunks start 16-byte aligned in A's
  // shared copy and (B column-major) in B.
  const int k_per = ((p.K + SPLITK - 1) / SPLITK + 3) / 4 * 4;
  const int k_begin = blockIdx.z * k_per;
  const int k_end = min(p.K, k_begin + k_per);

  // CL = 1: this block's partial products, MT x (its columns), after A's chunk (or the ST-stage
  // ring) and the KG sums. Mirrors smem_bytes in gemm_skinny.cpp.
  constexpr int COLS = B_COL ? (NT / 32) * NC : (NT / KG) * VEC;
  constexpr int STAGE = MT * KC + KC * COLS; // floats of one cp.async stage (ST >= 2)
  constexpr int FIRST = ST ? ST * STAGE : MT * KC;
  constexpr int RED = B_COL || KG == 1 ? 0 : MT * NT * VEC;
  constexpr int PART_AT = FIRST > RED ? FIRST : RED;
  static_assert(ST == 0 || (B_COL == 0 && ST >= 2 && KC % (4 * KG) == 0 && NT / KG >= 32),
                "cp.async stages: row-major B, whole quads per group, one group per warp");
  float* const part = As + PART_AT;
  // Where output (m, block column j) goes: C (or the split-K workspace), or part[] for the
  // cluster's reduction.
  auto emit = [&](int m, int j, float v) {
    if constexpr (CL) {
      part[m * COLS + j] = v;
    } else {
      const int col = blockIdx.x * COLS + j;
      if (m0 + m < p.M && col < p.N) store_row<1, SPLITK>(p, m0 + m, col, &v, blockIdx.z);
    }
  };

  // A's MT x len chunk at kc into shared memory, zero beyond M and beyond the chunk. Consecutive
  // threads take consecutive k: coalesced when A is row-major, and A is small next to B.
  auto stage_a = [&](int kc, int len) {
    for (int i = tid; i < MT * KC; i += NT) {
      const int m = i / KC, k = i % KC;
      As[i] = (m0 + m < p.M && k < len) ? p.A[offset<A_COL>(m0 + m, kc + k, p.lda)] : 0.0f;
    }
  };

  if constexpr (B_COL == 0) {
    // Threads along N (TX of them, VEC columns each) times KG groups along K. Group g takes the
    // quads (4 consecutive k) g, g + KG, ... of each chunk: one float4 of A per row of C meets
    // four loads of B. A step is UNROLL quads; two steps' loads are in flight (ping-pong).
    constexpr int TX = NT / KG, STEP = KG * UNROLL;
    const int tx = tid % TX, g = tid / TX;
    const int n = (blockIdx.x * TX + tx) * VEC;
    const int cols = p.N - n;
    float acc[MT][VEC];
#pragma unroll
    for (int m = 0; m < MT; ++m)
#pragma unroll
      for (int v = 0; v < VEC; ++v) acc[m][v] = 0.0f;

    if constexpr (ST == 0) {
      using Buf = float[UNROLL][4][VEC];
      auto load = [&](Buf& b, int kc, int len, int q0) {
        const float* const bcol = p.B + (long long)kc * p.ldb + n;
#pragma unroll
        for (int u = 0; u < UNROLL; ++u)
#pragma unroll
          for (int j = 0; j < 4; ++j) {
            const int k = (q0 + u * KG) * 4 + j;
            if (k < len) {
              load_guarded<VEC, LDH>(b[u][j], bcol + (long long)k * p.ldb, cols);
            } else {
#pragma unroll
              for (int v = 0; v < VEC; ++v) b[u][j][v] = 0.0f;
            }
          }
      };
      auto compute = [&](const Buf& b, int, int len, int q0) {
        const int nq = (len + 3) / 4;
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
          const int q = q0 + u * KG;
          if (q >= nq) break;
          add_quad<MT, VEC, KC>(acc, As, q, b[u]);
        }
      };

      stream_chunks<KC, 4, STEP, Buf>(k_begin, k_end, g, stage_a, load, compute);
    } else {
      stream_stages<MT, NT, VEC, KG, KC, LDH, COLS, ST, A_COL>(p, As, acc, m0, k_begin, k_end, tx, g);
    }

    if constexpr (KG > 1) {
      // Every group leaves its sums in shared memory (reusing A's chunk); then each thread adds
      // the KG partial sums of some outputs, in group order, and stores them: the sum is spread
      // over the whole block and the stores run along consecutive columns.
      constexpr int OUT = MT * TX * VEC; // outputs of the block
      float* const red = As;             // [KG][MT][TX * VEC]
      __syncthreads();
#pragma unroll
      for (int m = 0; m < MT; ++m) copy_vec<VEC>(red + (g * MT + m) * (TX * VEC) + tx * VEC, acc[m]);
      __syncthreads();
      for (int o = tid; o < OUT; o += NT) {
        float sum = 0.0f;
#pragma unroll
        for (int h = 0; h < KG; ++h) sum += red[h * OUT + o];
        emit(o / (TX * VEC), o % (TX * VEC), sum);
      }
    } else if constexpr (CL) {
#pragma unroll
      for (int m = 0; m < MT; ++m) copy_vec<VEC>(part + m * COLS + tx * VEC, acc[m]);
    } else if (n < p.N) {
#pragma unroll
      for (int m = 0; m < MT; ++m)
        if (m0 + m < p.M) store_row<VEC, SPLITK>(p, m0 + m, n, acc[m], blockIdx.z);
    }
  } else {
    // Each warp owns NC columns; its lanes walk K VEC floats at a time, 32 * VEC apart, so a
    // warp's loads of one column are one contiguous 32 * VEC-float run.
    constexpr int W = NT / 32;
    const int warp = tid / 32, lane = tid % 32;
    const int n0 = (blockIdx.x * W + warp) * NC;
    float acc[MT][NC];
#pragma unroll
    for (int m = 0; m < MT; ++m)
#pragma unroll
      for (int c = 0; c < NC; ++c) acc[m][c] = 0.0f;

    using Buf = float[UNROLL][NC][VEC];
    auto load = [&](Buf& b, int kc, int len, int v0) {
#pragma unroll
      for (int u = 0; u < UNROLL; ++u)
#pragma unroll
        for (int c = 0; c < NC; ++c) {
          const int k = (v0 + 32 * u) * VEC;
          if (n0 + c < p.N && k < len) {
            load_guarded<VEC, LDH>(b[u][c], p.B + (long long)(n0 + c) * p.ldb + kc + k, len - k);
          } else {
#pragma unroll
            for (int v = 0; v < VEC; ++v) b[u][c][v] = 0.0f;
          }
        }
    };
    auto compute = [&](const Buf& b, int, int len, int v0) {
#pragma unroll
      for (int u = 0; u < UNROLL; ++u) {
        const int k = (v0 + 32 * u) * VEC;
        if (k >= len) break;
#pragma unroll
        for (int m = 0; m < MT; ++m) {
          float a[VEC];
          copy_vec<VEC>(a, As + m * KC + k);
#pragma unroll
          for (int c = 0; c < NC; ++c)
#pragma unroll
            for (int v = 0; v < VEC; ++v) acc[m][c] = fmaf(a[v], b[u][c][v], acc[m][c]);
        }
      }
    };

    // A step is UNROLL vectors per lane, 32 * VEC floats apart.
    stream_chunks<KC, VEC, 32 * UNROLL, Buf>(k_begin, k_end, lane, stage_a, load, compute);
    // Butterfly sums: every lane ends with the warp's total, and lane (m * NC + c) % 32 writes
    // element (m, c), so the stores spread over the lanes.
#pragma unroll
    for (int m = 0; m < MT; ++m)
#pragma unroll
      for (int c = 0; c < NC; ++c) {
        float s = acc[m][c];
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
        if (lane == (m * NC + c) % 32) emit(m, warp * NC + c, s);
      }
  }
  if constexpr (CL) cluster_reduce<MT, COLS, NT, skinny_cluster_size(CL, SPLITK), SPLITK>(p, part, m0, blockIdx.x * COLS);
}
