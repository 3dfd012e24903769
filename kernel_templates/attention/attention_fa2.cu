// Family attention_fa2: prefill attention in the FlashAttention-2 style on mma.sync (sm_80+).
//
// A block owns BM query rows of one (batch, head) and walks the key/value sequence BN keys at a
// time. Its WARPS warps split the rows (BM / WARPS each, MT = that / 16 MMA row tiles), never
// the keys, so the online softmax of a row stays inside one warp (a quad of lanes holds each
// row). Per key tile: S = Q K^T from shared memory (ldmatrix; Q and K rows hold the head dimension
// contiguous, so K is the MMA's column-major B as stored), scaled into log2 units, masked where a
// key is past the sequence or (causal) past the row's diagonal, the running max and sum updated,
// and P = exp2(S - max) rounded to the input type becomes the A operand of O += P V straight from
// the S accumulators (the m16n8 accumulator layout of two adjacent tiles is the m16k16 A
// layout), V read with ldmatrix.trans. STAGES 1 overlaps the V load with QK^T and the next K
// load with the softmax and PV (FlashAttention-2's order, one buffer each); STAGES 2 double-buffers
// K and V and prefetches the whole next tile. O is normalised by the row sum, staged through the
// Q tile's shared memory and written with 16-byte stores; the log-sum-exp (natural log, +inf for a
// row with no key) goes to lse[(b * H + h) * SQ + i].
//
// Kernel arguments follow the op of plain buffers (docs/ADDING_AN_OP.md): q, k, v, o, lse; the
// dimensions B, H, HKV, SQ, SKV, D; the strides of q, k, v and o (batch, sequence, head; the
// head dimension is contiguous); the scale (0: 1 / sqrt(D)). Causal is bottom-right aligned as
// FlashAttention's: key j is visible to query i when j <= i + SKV - SQ. Query head h reads key /
// value head h / (H / HKV) (GQA, MQA). attention_fa2_varlen serves the op attention_varlen
// (packed sequences, attention_seq.cuh): the same body, each block's rows and keys those of its
// sequence.
#include "attention_mma.cuh"

namespace ktune_attn_fa2 {

using namespace ktune_attn;

// The online softmax of one key tile (keys j0 to j0 + 8 NT - 1) in log2 units for a thread's rows
// row0 + 16 mt + 8 r: S scaled, the running max and sum updated, P = exp2(S - max) left in s and O
// rescaled. MASK: keys at or past SKV and (causal) past a row's diagonal (key j visible to row i
// when j <= i + off) set to -inf first. Masked and unmasked tiles are two instantiations: written as
// one loop with a run-time test, ptxas if-converts the test and masks every tile (an FSEL, 64-bit
// compares and predicates for each score; measured on attention_wgmma.cu's twin).
template <int MT, int NT, int DT, bool MASK, int CAUSAL>
__device__ __forceinline__ void softmax_tile(float (&s)[MT][NT][4], float (&acc)[MT][DT][4], float (&row_max)[MT][2],
                                             float (&row_sum)[MT][2], long long row0, long long j0, long long SKV,
                                             long long off, int t, float scale_log2) {
#pragma unroll
  for (int mt = 0; mt < MT; ++mt) {
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const long long i = row0 + mt * 16 + 8 * r;
      float mx = -inf_f();
#pragma unroll
      for (int nt = 0; nt < NT; ++nt)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          float x = s[mt][nt][2 * r + e] * scale_log2;
          if constexpr (MASK) {
            const long long j = j0 + nt * 8 + 2 * t + e;
            if (j >= SKV || (CAUSAL && j > i + off)) x = -inf_f();
          }
          s[mt][nt][2 * r + e] = x;
          mx = fmaxf(mx, x);
        }
      mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
      mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
      const float m_new = fmaxf(row_max[mt][r], mx);
      const float m_use = m_new == -inf_f() ? 0.f : m_new; // a row with no key yet: exp2(-inf) = 0
      const float corr = exp2_approx(row_max[mt][r] - m_use);
      row_max[mt][r] = m_new;
      float sum = 0.f;
#pragma unroll
      for (int nt = 0; nt < NT; ++nt)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const float p = exp2_approx(s[mt][nt][2 * r + e] - m_use);
          s[mt][nt][2 * r + e] = p;
          sum += p;
        }
      row_sum[mt][r] = row_sum[mt][r] * corr + sum;
#pragma unroll
      for (int dt = 0; dt < DT; ++dt) acc[mt][dt][2 * r] *= corr, acc[mt][dt][2 * r + 1] *= corr;
    }
  }
}

} // namespace ktune_attn_fa2

template <int F16, int D, int BM, int BN, int WARPS, int STAGES, int CAUSAL, int VARLEN>
__device__ __forceinline__ void attention_fa2_body(
    const unsigned short* __restrict__ q, const unsigned short* __restrict__ k, const unsigned short* __restrict__ v,
    unsigned short* __restrict__ o, float* __restrict__ lse, long long H, long long HKV, long long SQ_MAX,
    long long SKV_MAX, long long TQ, long long qb, long long qs, long long qh, long long kb, long long ks,
    long long kh, long long vb, long long vs, long long vh, long long ob, long long os, long long oh, float scale_arg,
    const int* __restrict__ cu_q, const int* __restrict__ cu_k) {
  using namespace ktune_attn;
  constexpr int THREADS = WARPS * 32;
  constexpr int MT = BM / (WARPS * 16); // MMA row tiles per warp
  constexpr int NT = BN / 8;            // n8 tiles of S
  constexpr int DT = D / 8;             // n8 tiles of O
  constexpr int CH = D / 8;             // 16-byte chunks of a row
  static_assert(MT >= 1 && MT * WARPS * 16 == BM, "BM is whole row tiles of every warp");
  static_assert(BN % 16 == 0 && D % 64 == 0, "tile shapes");

  extern __shared__ __align__(128) unsigned char attn_smem[];
  unsigned short* sQ = reinterpret_cast<unsigned short*>(attn_smem);
  unsigned short* sK = sQ + BM * D;
  unsigned short* sV = sK + STAGES * BN * D;

  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int m_block = gridDim.x - 1 - blockIdx.x; // causal: the longest rows first
  const long long h = blockIdx.y, b = blockIdx.z, hk = h / (H / HKV);
  const Seq seq = seq_of<VARLEN>(b, h, H, SQ_MAX, SKV_MAX, TQ, cu_q, cu_k);
  const long long SQ = seq.sq, SKV = seq.skv; // this sequence's
  const long long m0 = (long long)m_block * BM, off = SKV - SQ;
  if (VARLEN && m0 >= SQ) return; // a shorter sequence than the longest: the whole block is past it
  const float scale = scale_arg != 0.f ? scale_arg : 1.f / sqrtf((float)D);
  const float scale_log2 = scale * 1.4426950408889634f;

  const unsigned short* qbase = q + b * qb + seq.q_first * qs + h * qh;
  const unsigned short* kbase = k + b * kb + seq.k_first * ks + hk * kh;
  const unsigned short* vbase = v + b * vb + seq.k_first * vs + hk * vh;

  // Key tiles [0, n_end): all of them, or (causal) up to the last row's diagonal.
  long long n_end = (SKV + BN - 1) / BN;
  if (CAUSAL) {
    const long long last = (m0 + BM < SQ ? m0 + BM : SQ) - 1 + off; // the last visible key of the block
    n_end = last < 0 ? 0 : (last / BN + 1 < n_end ? last / BN + 1 : n_end);
  }

  auto load_rows = [&](unsigned short* dst, const unsigned short* base, long long stride, long long row0, long long rows,
                       int count) {
    for (int c = tid; c < count * CH; c += THREADS) {
      const int r = c / CH, ch = c % CH;
      const bool ok = row0 + r < rows;
      cp_async16(smem_u32(dst + swizzled<D>(r, ch)), base + (ok ? (row0 + r) * stride : 0) + ch * 8, ok);
    }
  };

  load_rows(sQ, qbase, qs, m0, SQ, BM);
  if (n_end > 0) {
    load_rows(sK, kbase, ks, 0, SKV, BN);
    if (STAGES == 2) load_rows(sV, vbase, vs, 0, SKV, BN);
  }
  cp_async_commit();

  float acc[MT][DT][4];
  float row_max[MT][2], row_sum[MT][2];
#pragma unroll
  for (int mt = 0; mt < MT; ++mt) {
#pragma unroll
    for (int dt = 0; dt < DT; ++dt) acc[mt][dt][0] = acc[mt][dt][1] = acc[mt][dt][2] = acc[mt][dt][3] = 0.f;
    row_max[mt][0] = row_max[mt][1] = -inf_f();
    row_sum[mt][0] = row_sum[mt][1] = 0.f;
  }

  const int wrow0 = warp * MT * 16; // the warp's first row in the block
  const int g = lane >> 2, t = lane & 3;

  for (long long n = 0; n < n_end; ++n) {
    const int st = STAGES == 2 ? int(n & 1) : 0;
    const unsigned short* tK = sK + st * BN * D;
    const unsigned short* tV = sV + st * BN * D;
    if (STAGES == 1) {
      cp_async_wait<0>();
      __syncthreads(); // K(n) landed; every warp is done with V(n-1)
      load_rows(sV, vbase, vs, n * BN, SKV, BN);
      cp_async_commit();
    } else {
      if (n + 1 < n_end) {
        load_rows(sK + (st ^ 1) * BN * D, kbase, ks, (n + 1) * BN, SKV, BN);
        load_rows(sV + (st ^ 1) * BN * D, vbase, vs, (n + 1) * BN, SKV, BN);
      }
      cp_async_commit();
      cp_async_wait<1>();
      __syncthreads(); // tile n landed
    }

    // S = Q K^T
    float s[MT][NT][4];
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
      for (int nt = 0; nt < NT; ++nt) s[mt][nt][0] = s[mt][nt][1] = s[mt][nt][2] = s[mt][nt][3] = 0.f;
#pragma unroll
    for (int kd = 0; kd < D / 16; ++kd) {
      unsigned a[MT][4];
#pragma unroll
      for (int mt = 0; mt < MT; ++mt)
        ldmatrix_x4(a[mt], smem_u32(sQ + swizzled<D>(wrow0 + mt * 16 + (lane & 15), kd * 2 + (lane >> 4))));
#pragma unroll
      for (int np = 0; np < NT / 2; ++np) {
        unsigned bf[4];
        ldmatrix_x4(bf, smem_u32(tK + swizzled<D>(np * 16 + (lane & 7) + ((lane >> 4) << 3), kd * 2 + ((lane >> 3) & 1))));
#pragma unroll
        for (int mt = 0; mt < MT; ++mt) {
          mma16816<F16>(s[mt][2 * np], a[mt], bf[0], bf[1]);
          mma16816<F16>(s[mt][2 * np + 1], a[mt], bf[2], bf[3]);
        }
      }
    }

    // Mask, then the online softmax in log2 units (softmax_tile): a tile past the sequence's end or
    // (causal) past a row's diagonal masked, the others not, two instantiations behind a
    // warp-uniform branch.
    const long long j0 = n * BN;
    if (j0 + BN > SKV || (CAUSAL && j0 + BN - 1 > m0 + off))
      ktune_attn_fa2::softmax_tile<MT, NT, DT, true, CAUSAL>(s, acc, row_max, row_sum, m0 + wrow0 + g, j0, SKV, off, t,
                                                              scale_log2);
    else
      ktune_attn_fa2::softmax_tile<MT, NT, DT, false, CAUSAL>(s, acc, row_max, row_sum, m0 + wrow0 + g, j0, SKV, off, t,
                                                               scale_log2);

    if (STAGES == 1) {
      cp_async_wait<0>();
      __syncthreads(); // V(n) landed; every warp is done with K(n)
      if (n + 1 < n_end) load_rows(sK, kbase, ks, (n + 1) * BN, SKV, BN);
      cp_async_commit();
    }

    // O += P V
#pragma unroll
    for (int kk = 0; kk < BN / 16; ++kk) {
      unsigned a[MT][4];
#pragma unroll
      for (int mt = 0; mt < MT; ++mt) {
        a[mt][0] = pack2<F16>(s[mt][2 * kk][0], s[mt][2 * kk][1]);
        a[mt][1] = pack2<F16>(s[mt][2 * kk][2], s[mt][2 * kk][3]);
        a[mt][2] = pack2<F16>(s[mt][2 * kk + 1][0], s[mt][2 * kk + 1][1]);
        a[mt][3] = pack2<F16>(s[mt][2 * kk + 1][2], s[mt][2 * kk + 1][3]);
      }
#pragma unroll
      for (int dp = 0; dp < DT / 2; ++dp) {
        unsigned bf[4];
        ldmatrix_x4_trans(bf, smem_u32(tV + swizzled<D>(kk * 16 + (lane & 7) + ((lane >> 3) & 1) * 8, dp * 2 + (lane >> 4))));
#pragma unroll
        for (int mt = 0; mt < MT; ++mt) {
          mma16816<F16>(acc[mt][2 * dp], a[mt], bf[0], bf[1]);
          mma16816<F16>(acc[mt][2 * dp + 1], a[mt], bf[2], bf[3]);
        }
      }
    }
    if (STAGES == 2) __syncthreads(); // every warp is done with this stage before it is loaded again
  }
  cp_async_wait<0>();
  // Q's rows were loaded by every thread of the block, and a warp waited only for its own copies:
  // where no key tile ran (causal, q_len > kv_len) no barrier inside the loop ordered them, and
  // another thread's Q could land on O's rows after this warp wrote them.
  __syncthreads();

  // O / l into the warp's own rows of the Q tile (only this warp read them), then 16-byte stores.
#pragma unroll
  for (int mt = 0; mt < MT; ++mt) {
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      float l = row_sum[mt][r];
      l += __shfl_xor_sync(0xffffffffu, l, 1);
      l += __shfl_xor_sync(0xffffffffu, l, 2);
      const float inv = l > 0.f ? 1.f / l : 0.f;
      const int row = wrow0 + mt * 16 + g + 8 * r;
#pragma unroll
      for (int dt = 0; dt < DT; ++dt) {
        const unsigned w = pack2<F16>(acc[mt][dt][2 * r] * inv, acc[mt][dt][2 * r + 1] * inv);
        *reinterpret_cast<unsigned*>(sQ + swizzled<D>(row, dt) + 2 * t) = w;
      }
      const long long i = m0 + row;
      if (t == 0 && i < SQ)
        lse[seq.lse0 + i] = l > 0.f ? (row_max[mt][r] + log2_approx(l)) * 0.6931471805599453f : inf_f();
    }
  }
  __syncwarp();
  unsigned short* obase = o + b * ob + seq.q_first * os + h * oh;
  for (int c = lane; c < MT * 16 * CH; c += 32) {
    const int r = c / CH, ch = c % CH;
    const long long i = m0 + wrow0 + r;
    if (i < SQ)
      *reinterpret_cast<uint4*>(obase + i * os + ch * 8) = *reinterpret_cast<const uint4*>(sQ + swizzled<D>(wrow0 + r, ch));
  }
}

template <int F16, int D, int BM, int BN, int WARPS, int STAGES, int CAUSAL>
__global__ void __launch_bounds__(WARPS * 32) attention_fa2(
    const unsigned short* __restrict__ q, const unsigned short* __restrict__ k, const unsigned short* __restrict__ v,
    unsigned short* __restrict__ o, float* __restrict__ lse, long long /*B*/, long long H, long long HKV, long long SQ,
    long long SKV, long long /*D, fixed by the template*/, long long qb, long long qs, long long qh, long long kb,
    long long ks, long long kh, long long vb, long long vs, long long vh, long long ob, long long os, long long oh,
    float scale_arg) {
  attention_fa2_body<F16, D, BM, BN, WARPS, STAGES, CAUSAL, 0>(q, k, v, o, lse, H, HKV, SQ, SKV, 0, qb, qs, qh, kb, ks,
                                                               kh, vb, vs, vh, ob, os, oh, scale_arg, nullptr, nullptr);
}

// The op attention_varlen: SQ and SKV the longest sequence's, TQ and TKV the packed tokens.
template <int F16, int D, int BM, int BN, int WARPS, int STAGES, int CAUSAL>
__global__ void __launch_bounds__(WARPS * 32) attention_fa2_varlen(
    const unsigned short* __restrict__ q, const unsigned short* __restrict__ k, const unsigned short* __restrict__ v,
    const int* __restrict__ cu_q, const int* __restrict__ cu_k, unsigned short* __restrict__ o, float* __restrict__ lse,
    long long /*B*/, long long H, long long HKV, long long SQ, long long SKV, long long /*D*/, long long TQ,
    long long /*TKV*/, long long qs, long long qh, long long ks, long long kh, long long vs, long long vh, long long os,
    long long oh, float scale_arg) {
  attention_fa2_body<F16, D, BM, BN, WARPS, STAGES, CAUSAL, 1>(q, k, v, o, lse, H, HKV, SQ, SKV, TQ, 0, qs, qh, 0, ks,
                                                               kh, 0, vs, vh, 0, os, oh, scale_arg, cu_q, cu_k);
}
