// Family attention_wgmma: prefill attention in the FlashAttention-3 style for sm_90a.
//
// A block is one producer warpgroup and CWG consumer warpgroups; a tile is BM = 64 CWG query rows of
// one (batch, head), 64 a consumer warpgroup, whose keys it walks BN at a time. A block owns one
// tile, or with PERSIST walks many (below). The producer's one elected thread loads a tile's Q and
// its K and V tiles into a ring of STAGES buffers by TMA (tensor maps
// over the caller's strides; rows past a sequence's end arrive as zeros), each tile completing on
// its own mbarrier (K and V apart, so S = Q K^T starts before V lands), and reuses a stage once
// every consumer warpgroup has released it. The producer gives its registers up (setmaxnreg) so
// the consumers can hold S, P and O: per key tile a consumer warpgroup computes S with wgmma from
// shared memory (Q and K both K-major, 128-byte swizzled 64-column blocks), masks it (past the
// sequence; causal, bottom-right aligned), folds it into the online softmax in log2 units, keeps
// P in registers as the A operand of O += P V (wgmma with A from registers; V is the MN-major B
// operand as stored, no transpose pass), and releases the stage. O / l goes through the warpgroup's
// own rows of the Q buffer to 16-byte stores (with PERSIST, straight from registers); the
// log-sum-exp as in attention_fa2.cu. OVERLAP 1
// pipelines a warpgroup's own work as FlashAttention-3 does: S of tile n + 1 is issued before P V of
// tile n, and the softmax of tile n + 1 runs while that P V does (S of tile n + 1 lives beside the
// packed P of tile n).
// PINGPONG 1 (two or three consumers) orders the consumers' GEMMs round robin through named
// barriers, as FlashAttention-3's warp scheduler barriers do: a consumer issues its GEMMs of a step
// only after the one before it issued its own, so while one consumer's GEMMs hold the tensor cores
// the others run their softmax (left to the warp schedulers, the consumers issue together and then
// all wait together).
// PERSIST 1: a grid of the blocks resident at once walks the tiles (next_tile); the K/V ring and
// the turns run on from tile to tile, and a q_empty mbarrier hands the Q buffer back to the
// producer once the consumers' last S of a tile is done, so the next tile's Q loads while this
// one's last P V and its O store run.
// OCC 2 (one consumer): registers capped for two blocks an SM (launch bounds), so that short
// sequences, where a tile is little more than its loads and its store, have two blocks' loads in
// flight on an SM instead of one.
// OSTORE 1 (PERSIST, not varlen): O / l goes to a buffer of its own after the K / V ring (the Q
// buffer is the next tile's by then) in the Q tile's layout, and out by TMA (tensor map of o, which
// clips rows past the sequence and columns past DR), one box a consumer and 64-column block; the
// consumer's thread 0 waits for the last store to have read the buffer before it is written again.
// The stores from registers cost a short tile's epilogue 16 predicated 4-byte stores a row pair
// and their addressing.
//
// SPLIT > 1 (one block a tile, not varlen): the key tiles of a query tile split over SPLIT blocks
// (split-KV, as FlashAttention-2's and -3's forward do where the query tiles do not fill the GPU:
// a chunked prefill's 128 queries over 8 k keys are 32 tiles for 132 SMs). Block x of the grid
// takes query block x / nsplit and the x % nsplit-th run of whole key tiles (wgmma_splits), and
// writes its unnormalised O, row max and row sum to the workspace instead of O and the
// log-sum-exp; attention_wgmma_combine merges them (attention_combine.cuh, as attention_decode's
// splits). A run past a causal row block's last visible key writes (-inf, 0) and zeros.
// D is the head dim rounded up to whole 64-column blocks; DR (the kernel's head_dim argument) the
// operands' own: with DR 96, 160 or 224 the tensor maps' boxes reach past it and TMA fills those
// columns with zeros, which add nothing to S, and O's columns past DR are not stored.
// Arguments as attention_fa2.cu's, then the tensor maps of q, k, v and o (LaunchStep::TmaOperand,
// box {1, rows, 1, 64} with rows BM, BN or 64, 128-byte swizzle); attention_wgmma_varlen's as
// attention_fa2_varlen's, its maps 3-D (q, k and v). With varlen, a tile's rows past its sequence
// are the next sequence's tokens, not zeros: the key mask gives them weight 0 (so they must be
// finite: 0 x inf is NaN, the op's contract), and no row past the sequence is stored.
#include "attention_combine.cuh" // SPLIT > 1: the splits' partials and their combine step
#include "attention_mma.cuh"
#include "gemm_wgmma_common.cuh"

namespace ktune_attn_wg {

using namespace ktune_dev::wgmma;
using ktune_attn::exp2_approx;
using ktune_attn::inf_f;
using ktune_attn::log2_approx;
using ktune_attn::pack2;
using ktune_attn::rcp_approx;
using ktune_dev::async::bulk_commit;
using ktune_dev::async::bulk_wait_read;
using ktune_dev::async::smem_addr;

// A box of a 4-D tensor map over an operand (batch, sequence, head, head_dim): its coordinates
// innermost first, i.e. head_dim, head, sequence, batch.
__device__ __forceinline__ void tma_load_4d(unsigned dst, const KtuneTensorMap* map, int d0, int s0, int h, int b,
                                            unsigned bar) {
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4, %5}], [%6];\n" ::"r"(dst),
      "l"(reinterpret_cast<unsigned long long>(map)), "r"(d0), "r"(h), "r"(s0), "r"(b), "r"(bar)
      : "memory");
}
// A box of a 3-D tensor map over a packed varlen operand (token, head, head_dim).
__device__ __forceinline__ void tma_load_3d(unsigned dst, const KtuneTensorMap* map, int d0, int token, int h,
                                            unsigned bar) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], [%5];\n" ::"r"(dst),
      "l"(reinterpret_cast<unsigned long long>(map)), "r"(d0), "r"(h), "r"(token), "r"(bar)
      : "memory");
}
// Rows [s0, s0 + box) of sequence b's head h from column d0: the op attention's 4-D map, or the
// varlen op's 3-D one from the sequence's first token.
template <int VARLEN>
__device__ __forceinline__ void tma_load_rows(unsigned dst, const KtuneTensorMap* map, int d0, long long first,
                                              long long s0, long long h, long long b, unsigned bar) {
  if constexpr (VARLEN) tma_load_3d(dst, map, d0, int(first + s0), int(h), bar);
  else tma_load_4d(dst, map, d0, int(s0), int(h), int(b), bar);
}
// The runs of whole BN-key tiles SPLIT blocks take of skv keys: ceil(tiles / SPLIT) tiles each,
// so fewer than SPLIT runs where the tiles do not divide that way (the family's host code,
// wgmma_splits in attention.cpp, counts them the same).
template <int BN, int SPLIT>
__host__ __device__ __forceinline__ long long wgmma_splits(long long skv, long long& tiles_a_split) {
  const long long tiles = (skv + BN - 1) / BN;
  tiles_a_split = (tiles + SPLIT - 1) / SPLIT;
  return tiles_a_split > 0 ? (tiles + tiles_a_split - 1) / tiles_a_split : 1;
}

// One box from shared memory at src (laid out as tma_load_4d writes it) to the tensor at
// (b, s0, h, d0), clipped at its edges; tracked by the issuing thread's bulk groups.
__device__ __forceinline__ void tma_store_4d(const KtuneTensorMap* map, int d0, int s0, int h, int b, unsigned src) {
  asm volatile("cp.async.bulk.tensor.4d.global.shared::cta.bulk_group [%0, {%1, %2, %3, %4}], [%5];\n" ::"l"(
                   reinterpret_cast<unsigned long long>(map)),
               "r"(d0), "r"(h), "r"(s0), "r"(b), "r"(src)
               : "memory");
}

// The online softmax of one key tile for a consumer thread's two rows (row_base, row_base + 8):
// register 4 j + 2 r + e of sc holds row r's score of column 8 j + 2 t + e of the tile. MASK: set
// the columns at or past `keys` (the sequence's end) and, causal, past each row's diagonal (column
// diag0 for row 0, diag0 + 8 for row 1) to -inf first. The scale is positive here (a negative one
// negated S), so the max is taken over the raw scores and P = 2^(s scale_log2 - max) is one FFMA
// before the exp, as FlashAttention-3 does. Leaves P in sc and the factor O must be scaled by in corr.
template <int BN, bool MASK, int CAUSAL>
__device__ __forceinline__ void softmax_tile(float (&sc)[BN / 2], float (&corr)[2], float (&row_max)[2],
                                             float (&row_sum)[2], int keys, long long diag0, int t, float scale_log2) {
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    float mx = -inf_f();
    int last = BN; // the row's last visible column (causal)
    if constexpr (MASK && CAUSAL) {
      const long long d = diag0 + 8 * r;
      last = int(d < -1 ? -1 : d > BN ? BN : d);
    }
#pragma unroll
    for (int j = 0; j < BN / 8; ++j)
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        if constexpr (MASK) {
          const int col = 8 * j + 2 * t + e;
          if (col >= keys || (CAUSAL && col > last)) sc[4 * j + 2 * r + e] = -inf_f();
        }
        mx = fmaxf(mx, sc[4 * j + 2 * r + e]);
      }
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
    mx *= scale_log2; // -inf stays -inf
    const float m_new = fmaxf(row_max[r], mx);
    const float m_use = m_new == -inf_f() ? 0.f : m_new;
    corr[r] = exp2_approx(row_max[r] - m_use);
    row_max[r] = m_new;
    float sum = 0.f;
#pragma unroll
    for (int j = 0; j < BN / 8; ++j)
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const float p = exp2_approx(fmaf(sc[4 * j + 2 * r + e], scale_log2, -m_use));
        sc[4 * j + 2 * r + e] = p;
        sum += p;
      }
    row_sum[r] = row_sum[r] * corr[r] + sum;
  }
}

} // namespace ktune_attn_wg

template <int F16, int D, int BN, int CWG, int STAGES, int OVERLAP, int PINGPONG, int CAUSAL, int PERSIST, int OCC,
          int OSTORE, int SPLIT, int VARLEN>
__device__ __forceinline__ void attention_wgmma_body(unsigned short* __restrict__ o, float* __restrict__ lse, long long B,
                                                     long long H, long long HKV, long long SQ_MAX, long long SKV_MAX,
                                                     long long DR, long long TQ, long long ob, long long os, long long oh,
                                                     float scale_arg, const KtuneTensorMap* mq, const KtuneTensorMap* mk,
                                                     const KtuneTensorMap* mv, const KtuneTensorMap* mo,
                                                     const int* __restrict__ cu_q,
                                                     const int* __restrict__ cu_k, float* __restrict__ ws) {
  using namespace ktune_attn_wg;
  constexpr int BM = 64 * CWG, DB = D / 64; // 64-column blocks of a row
  constexpr unsigned Q_BLOCK = BM * 128, KV_BLOCK = BN * 128, KV_TILE = KV_BLOCK * DB;
  static_assert(D % 64 == 0 && BN % 16 == 0 && BN <= 256 && CWG >= 1 && CWG <= 3, "tile shapes");
  static_assert(!PINGPONG || CWG >= 2, "ping-pong needs two consumers");
  static_assert(OCC == 1 || (OCC == 2 && CWG == 1), "two blocks an SM: one consumer");
  static_assert(!OSTORE || (PERSIST && !VARLEN), "O by TMA: persistent blocks over the 4-D maps");
  static_assert(SPLIT >= 1 && (SPLIT == 1 || (!PERSIST && !VARLEN)), "split-KV: one block a tile, not varlen");

  extern __shared__ __align__(1024) unsigned char attn_smem[];
  // q_full, q_empty, k_full[], v_full[], k_empty[], v_empty[]
  __shared__ __align__(8) unsigned long long bars[2 + 4 * STAGES];
  const unsigned base = (smem_addr(attn_smem) + 1023u) & ~1023u; // 128-byte swizzle: 1024-byte aligned tiles
  const unsigned sQ = base, sK = sQ + Q_BLOCK * DB, sV = sK + KV_TILE * STAGES, sO = sV + KV_TILE * STAGES;
  const unsigned bar0 = smem_addr(bars);
  const unsigned q_full = bar0, q_empty = bar0 + 8u;
  auto k_full = [&](int s) { return bar0 + 8u * (2 + s); };
  auto v_full = [&](int s) { return bar0 + 8u * (2 + STAGES + s); };
  auto k_empty = [&](int s) { return bar0 + 8u * (2 + 2 * STAGES + s); };
  auto v_empty = [&](int s) { return bar0 + 8u * (2 + 3 * STAGES + s); };

  // A work tile: BM query rows of one (batch, head) and the n_end key tiles from n0 they see: all
  // of them, or (causal) up to the last row's diagonal; with SPLIT, of split `split`'s run only.
  struct Tile {
    // 32-bit (lengths below 2^31 - 256: the TMA restriction, varlen's validation), fewer registers
    // held across a persistent block's tiles
    int m0, h, b, hk, n0, n_end, split;
    ktune_attn::Seq seq;
  };
  long long split_tiles = 0; // SPLIT: key tiles a split (the last split's run may be shorter)
  const long long nsplit = SPLIT > 1 ? wgmma_splits<BN, SPLIT>(SKV_MAX, split_tiles) : 1;
  // The walk's arithmetic is 32-bit: a persistent grid's tile count is restricted to INT32_MAX (the
  // family's x extent), and heads and batch fit the grid's y and z. In 64 bits each division was a
  // 32-bit path and a 64-bit fallback behind a branch, about 80 instructions a warp a tile.
  const unsigned H32 = unsigned(H), HB = unsigned(H * B), group = unsigned(H / HKV);
  auto tile_at = [&](unsigned m_block, unsigned h, unsigned b, unsigned split, Tile& T) {
    T.m0 = int(m_block * BM), T.h = int(h), T.b = int(b), T.hk = int(h / group), T.split = int(split);
    T.seq = ktune_attn::seq_of<VARLEN>(b, h, H, SQ_MAX, SKV_MAX, TQ, cu_q, cu_k);
    const long long SQ = T.seq.sq, SKV = T.seq.skv;
    long long n_end = (SKV + BN - 1) / BN;
    if (CAUSAL) {
      const long long last = (T.m0 + BM < SQ ? T.m0 + BM : SQ) - 1 + SKV - SQ;
      n_end = last < 0 ? 0 : (last / BN + 1 < n_end ? last / BN + 1 : n_end);
    }
    long long n0 = 0;
    if constexpr (SPLIT > 1) {
      n0 = split * split_tiles;
      n_end = n_end < n0 ? 0 : (n_end - n0 < split_tiles ? n_end - n0 : split_tiles);
    }
    T.n0 = int(n0), T.n_end = int(n_end);
    return !VARLEN || T.m0 < SQ; // varlen: a sequence shorter than the longest has nothing past its end
  };
  // The block's tiles, the same walk for the producer and the consumers: next_tile(w, T) sets T to
  // the block's next tile from walk position w (0 at the start) and returns false when none is
  // left. One block a tile: the grid's (query block, head, batch), longest rows first (causal).
  // PERSIST: a grid of the blocks the GPU holds at once walks the tiles in waves of gridDim.x,
  // block k taking the k-th tile of each wave in even waves and the k-th from the end in odd ones.
  // Causal: heaviest first (query blocks outermost, latest first; heads, then batches, inside, so
  // neighbours share GQA's key heads), so that the snake pairs a heavy tile with a lighter one;
  // dealt in the grid's order (query blocks innermost), causal tiles left blocks unbalanced (0.68x
  // the one-block-a-tile grid's speed at 16k keys and 16 heads, H200). Full: every tile costs the
  // same, and the grid's order keeps the blocks at work on few heads, whose keys stay in L2 (query
  // blocks outermost there: 0.94x at 16k keys and 16 heads).
  const unsigned MB = unsigned(SQ_MAX > BM ? (SQ_MAX + BM - 1) / BM : 1), tiles = MB * HB;
  auto next_tile = [&](unsigned& w, Tile& T) {
    if constexpr (!PERSIST) {
      const unsigned x = gridDim.x - 1 - blockIdx.x; // (query block, split), the last query block first
      return w++ == 0 && tile_at(x / unsigned(nsplit), blockIdx.y, blockIdx.z, x % unsigned(nsplit), T);
    } else {
      const unsigned G = gridDim.x; // w G stays below tiles + G: no wrap
      while (w * G < tiles) {
        const unsigned L = w * G + (w & 1 ? G - 1 - blockIdx.x : blockIdx.x);
        ++w;
        if (L >= tiles) return false;
        const unsigned m_block = CAUSAL ? MB - 1 - L / HB : L % MB, hb = CAUSAL ? L % HB : L / MB;
        if (tile_at(m_block, hb % H32, hb / H32, 0, T)) return true;
      }
      return false;
    }
  };

  const int tid = threadIdx.x, wg = warp_uniform(tid / 128);
  if (tid == 0) {
    mbar_init(q_full, 1), mbar_init(q_empty, CWG);
    for (int s = 0; s < STAGES; ++s) {
      mbar_init(k_full(s), 1), mbar_init(v_full(s), 1);
      mbar_init(k_empty(s), CWG), mbar_init(v_empty(s), CWG);
    }
    ktune_dev::async::fence_mbar_init();
  }
  __syncthreads();

  // The K / V ring runs on across a block's tiles: a tile's key tile n uses stage (s0 + n) % STAGES
  // in phase ph0 ^ ((s0 + n) / STAGES) & 1, where (s0, ph0) is where the block's previous tile left
  // the ring (advance); the Q buffer holds the block's i-th tile in phase i & 1. The producer and
  // the consumers both go through ring_stage and ring_phase, so that they agree.
  auto ring_stage = [](int s0, long long n) { return int((s0 + n) % STAGES); };
  auto ring_phase = [](int s0, unsigned ph0, long long n) { return ph0 ^ (unsigned((s0 + n) / STAGES) & 1u); };
  auto advance = [](int& s0, unsigned& ph0, int n_end) {
    const int at = s0 + n_end;
    s0 = at % STAGES, ph0 ^= unsigned(at / STAGES) & 1u;
  };
  if (wg == 0) { // producer
    setmaxnreg_dec<CWG == 3 ? 32 : 24>();
    if (tid == 0) {
      int s0 = 0;
      unsigned ph0 = 0, i = 0;
      unsigned walk = 0;
      Tile T;
      while (next_tile(walk, T)) {
        auto load = [&](int n, bool is_v) { // key tile n's K or V
          const int s = ring_stage(s0, n);
          const unsigned phase = ring_phase(s0, ph0, n);
          const unsigned full = is_v ? v_full(s) : k_full(s), dst = (is_v ? sV : sK) + s * KV_TILE;
          mbar_wait(is_v ? v_empty(s) : k_empty(s), phase ^ 1u);
          mbar_expect_tx(full, KV_TILE);
#pragma unroll
          for (int db = 0; db < DB; ++db)
            tma_load_rows<VARLEN>(dst + db * KV_BLOCK, is_v ? mv : mk, db * 64, T.seq.k_first, (T.n0 + n) * BN, T.hk,
                                  T.b, full);
        };
        // The first K before the Q: with PERSIST the ring has room for it while the consumers
        // finish the last tile, whose Q they still read; the first S needs both, the first P V
        // its V only after them.
        if (T.n_end > 0) load(0, false);
        mbar_wait(q_empty, (i & 1u) ^ 1u); // the consumers are done with the last tile's Q
        mbar_expect_tx(q_full, Q_BLOCK * DB);
#pragma unroll
        for (int db = 0; db < DB; ++db)
          tma_load_rows<VARLEN>(sQ + db * Q_BLOCK, mq, db * 64, T.seq.q_first, T.m0, T.h, T.b, q_full);
        if (T.n_end > 0) load(0, true);
        for (int n = 1; n < T.n_end; ++n) load(n, false), load(n, true);
        advance(s0, ph0, T.n_end), ++i;
      }
    }
    return;
  }

  // OCC 2: the block was launched with 128 registers a thread; the producer's 104 more go to its one
  // consumer (24 + 232 = 2 x 128). ptxas allocates the whole kernel to the launch bounds' 128, so
  // the consumer's code fits in those (no spill at the tiles the family allows).
  setmaxnreg_inc<CWG == 3 ? 160 : OCC == 2 ? 232 : 240>();
  const int c = wg - 1, wtid = tid & 127, lane = tid & 31, w = wtid >> 5, g = lane >> 2, t = lane & 3;
  const float scale = scale_arg != 0.f ? scale_arg : 1.f / sqrtf((float)DR);
  const float scale_log2 = fabsf(scale) * 1.4426950408889634f;
  // Descriptors built once from warp-uniform addresses and moved by adds to their low word
  // (Desc128): no per-wgmma AND / shift / OR, the words stay in uniform registers.
  const Desc128 q_base(sQ + c * 8192, 8192, 1024), k_base(sK, 8192, 1024), v_base(sV, KV_BLOCK, 1024);
  auto at_stage = [](Desc128 d, int s) { // the descriptor of the same tile in stage s
    d.lo += unsigned(s) * (KV_TILE >> 4);
    return d;
  };
  auto q_desc = [&](int kd) { return q_base.plus((kd / 4) * Q_BLOCK + (kd % 4) * 32); };
  auto k_desc = [&](const Desc128& ks, int kd) { return ks.plus((kd / 4) * KV_BLOCK + (kd % 4) * 32); };
  // PINGPONG: consumer c's turn to issue GEMMs is named barrier 4 + c (1 to 3 are the epilogue's),
  // complete when c's 128 threads wait on it and the consumer before c (round robin) has arrived
  // after issuing its own. Every consumer of a block walks the same tiles and key tiles, so the
  // turns match, across tiles too; the last arrival of a block is left pending on consumer 0's
  // barrier at exit.
  auto turn_wait = [&] {
    if constexpr (PINGPONG) named_sync(4 + c, 256);
  };
  auto turn_pass = [&] {
    if constexpr (PINGPONG) named_arrive(4 + (c + 1) % CWG, 256);
  };
  if constexpr (PINGPONG) // consumer 0 goes first: the last one's arrival stands for a step before the loop
    if (c == CWG - 1) named_arrive(4, 256);

  int s0 = 0;
  unsigned ph0 = 0, i = 0;
  unsigned walk = 0;
  Tile T;
  while (next_tile(walk, T)) {
    const long long SQ = T.seq.sq, SKV = T.seq.skv, m0 = T.m0, off = SKV - SQ, n0 = T.n0, n_end = T.n_end;
    const long long row_base = m0 + c * 64 + w * 16 + g; // this thread's rows: row_base and row_base + 8

    float acc[D / 2];
#pragma unroll
    for (int x = 0; x < D / 2; ++x) acc[x] = 0.f;
    float row_max[2] = {-inf_f(), -inf_f()}, row_sum[2] = {0.f, 0.f};

    // The steps of one key tile n. qk issues S = Q K^T into sc (one wgmma group, not waited for);
    // softmax masks sc, turns it into P in place and updates the row statistics, leaving the factor
    // O must be scaled by in corr; pv issues O += P V from the packed P (one group).
    // The first k-step's scale-d 0 starts S afresh, so its registers need no zeroing (BN / 2
    // instructions a tile). With a negative scale S is computed negated (wgmma's imm-scale-b -1,
    // free), so that the softmax below always sees a positive one.
    auto stage = [&](long long n) { return ring_stage(s0, n); };
    auto phase = [&](long long n) { return ring_phase(s0, ph0, n); };
    auto qk = [&](long long n, float (&sc)[BN / 2]) {
      const Desc128 ks = at_stage(k_base, stage(n));
      mbar_wait(k_full(stage(n)), phase(n));
      fence_regs(sc);
      wgmma_fence();
      if (!(scale_arg < 0.f)) { // a kernel parameter, read again where needed rather than held in a register
#pragma unroll
        for (int kd = 0; kd < D / 16; ++kd)
          wgmma_m64k16<BN, 0, 0, 1>(sc, q_desc(kd), k_desc(ks, kd), IsF16<F16>{}, kd == 0 ? 0 : 1);
      } else {
#pragma unroll
        for (int kd = 0; kd < D / 16; ++kd)
          wgmma_m64k16<BN, 0, 0, -1>(sc, q_desc(kd), k_desc(ks, kd), IsF16<F16>{}, kd == 0 ? 0 : 1);
      }
      wgmma_commit();
    };
    // Register 4 j + 2 r + e of sc holds row row_base + 8 r, key (n0 + n) BN + 8 j + 2 t + e. A tile that
    // reaches past the sequence's keys or (causal) past a row's diagonal is masked (softmax_tile's
    // MASK); the two are instantiations behind a warp-uniform branch: written as one loop with a
    // run-time test, ptxas if-converted the test away and masked every tile (an FSEL, 64-bit
    // compares and predicates kept in registers for each score: about a third of the kernel's
    // instructions, Nsight Compute at 16k non-causal).
    auto needs_mask = [&](long long n) {
      const long long j0 = (n0 + n) * BN;
      return j0 + BN > SKV || (CAUSAL && j0 + BN - 1 > m0 + off);
    };
    auto softmax = [&](long long n, float (&sc)[BN / 2], float (&corr)[2]) {
      const long long j0 = (n0 + n) * BN;
      if (needs_mask(n))
        softmax_tile<BN, true, CAUSAL>(sc, corr, row_max, row_sum, int(SKV - j0 < BN ? SKV - j0 : BN),
                                       row_base + off - j0, t, scale_log2);
      else
        softmax_tile<BN, false, CAUSAL>(sc, corr, row_max, row_sum, BN, 0, t, scale_log2);
    };
    auto rescale = [&](const float (&corr)[2]) {
#pragma unroll
      for (int j = 0; j < D / 8; ++j)
#pragma unroll
        for (int r = 0; r < 2; ++r) acc[4 * j + 2 * r] *= corr[r], acc[4 * j + 2 * r + 1] *= corr[r];
    };
    // P as the A operand: k16 step kk is the n8 tiles 2 kk and 2 kk + 1 (mma.sync's A fragment per warp).
    unsigned pa[BN / 16][4];
    auto pack = [&](const float (&sc)[BN / 2]) {
#pragma unroll
      for (int kk = 0; kk < BN / 16; ++kk) {
        pa[kk][0] = pack2<F16>(sc[8 * kk + 0], sc[8 * kk + 1]);
        pa[kk][1] = pack2<F16>(sc[8 * kk + 2], sc[8 * kk + 3]);
        pa[kk][2] = pack2<F16>(sc[8 * kk + 4], sc[8 * kk + 5]);
        pa[kk][3] = pack2<F16>(sc[8 * kk + 6], sc[8 * kk + 7]);
      }
    };
    // The register form of wgmma reads pa while it runs: pin it until the group is waited for.
    auto hold_pa = [&] {
#pragma unroll
      for (int kk = 0; kk < BN / 16; ++kk)
#pragma unroll
        for (int x = 0; x < 4; ++x) asm volatile("" : "+r"(pa[kk][x])::"memory");
    };
    auto pv = [&](long long n) {
      const Desc128 vstage = at_stage(v_base, stage(n));
      mbar_wait(v_full(stage(n)), phase(n));
      fence_regs(acc);
      wgmma_fence();
#pragma unroll
      for (int kk = 0; kk < BN / 16; ++kk) {
        // V: BN key lines of 128 bytes per 64-column block (MN-major B), blocks KV_BLOCK apart.
        const unsigned long long dv = vstage.plus(kk * 2048);
        wgmma_m64k16_rs<D, 1>(acc, pa[kk], dv, IsF16<F16>{});
      }
      wgmma_commit();
    };
    // With PERSIST, the S of the tile's last key tile is the last read of its Q: from then on the
    // producer may load the next tile's Q (the epilogue and the last P V run meanwhile).
    auto free_k = [&](long long n) {
      if (wtid == 0) mbar_arrive(k_empty(stage(n)));
      if (PERSIST && n == n_end - 1 && wtid == 0) mbar_arrive(q_empty);
    };
    auto free_v = [&](long long n) {
      if (wtid == 0) mbar_arrive(v_empty(stage(n)));
    };

    mbar_wait(q_full, i & 1u);
    float sa[BN / 2], corr[2];
    if constexpr (!OVERLAP) {
      // A turn is P V of tile n - 1, issued and waited for, then the issue of S of tile n (as
      // FlashAttention-3 orders it); the softmax runs outside it.
      turn_wait();
      for (long long n = 0; n < n_end; ++n) {
        qk(n, sa);
        turn_pass();
        wgmma_wait<0>();
        fence_regs(sa);
        free_k(n);
        softmax(n, sa, corr);
        rescale(corr);
        pack(sa);
        turn_wait();
        pv(n);
        wgmma_wait<0>();
        fence_regs(acc);
        hold_pa();
        free_v(n);
      }
      turn_pass();
    } else if (n_end > 0) {
      // FlashAttention-3's intra-warpgroup pipeline: S of tile n is computed while P V of tile n - 1
      // runs, and the softmax of tile n overlaps that P V; O takes tile n's rescale once P V is done.
      float sb[BN / 2];
      qk(0, sa);
      wgmma_wait<0>();
      fence_regs(sa);
      free_k(0);
      softmax(0, sa, corr);
      pack(sa);
      auto step = [&](long long n, float (&next)[BN / 2]) {
        turn_wait(); // a turn: S of tile n and P V of tile n - 1
        qk(n, next);
        pv(n - 1);
        turn_pass();
        wgmma_wait<1>(); // S of tile n is in
        fence_regs(next);
        free_k(n);
        softmax(n, next, corr);
        wgmma_wait<0>(); // P V of tile n - 1 is in
        fence_regs(acc);
        hold_pa();
        free_v(n - 1);
        rescale(corr);
        pack(next);
      };
      long long n = 1;
      while (n < n_end) {
        step(n++, sb);
        if (n >= n_end) break;
        step(n++, sa);
      }
      pv(n_end - 1);
      wgmma_wait<0>();
      fence_regs(acc);
      hold_pa();
      free_v(n_end - 1);
    }
    advance(s0, ph0, T.n_end), ++i;

    if constexpr (SPLIT > 1) { // this split's partials, for the combine step
      const long long rows = B * H * SQ;
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        float l = row_sum[r];
        l += __shfl_xor_sync(0xffffffffu, l, 1);
        l += __shfl_xor_sync(0xffffffffu, l, 2);
        const long long row = row_base + 8 * r;
        if (row >= SQ) continue;
        const long long at = (T.b * H + T.h) * SQ + row;
        if (t == 0) *ktune_attn::partial_ml(ws, nsplit, T.split, rows, at, D) = make_float2(row_max[r], l);
        float* dst = ktune_attn::partial_o(ws, T.split, rows, at, D) + 2 * t;
#pragma unroll
        for (int j = 0; j < D / 8; ++j)
          *reinterpret_cast<float2*>(dst + 8 * j) = make_float2(acc[4 * j + 2 * r], acc[4 * j + 2 * r + 1]);
      }
      continue;
    }

    unsigned short* obase = o + T.b * ob + T.seq.q_first * os + T.h * oh;
    float inv[2];
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      float l = row_sum[r];
      l += __shfl_xor_sync(0xffffffffu, l, 1);
      l += __shfl_xor_sync(0xffffffffu, l, 2);
      inv[r] = l > 0.f ? rcp_approx(l) : 0.f; // O is rounded to 16 bits: 1 ulp of FP32 is far below it
      const long long row = row_base + 8 * r;
      if (t == 0 && row < SQ)
        lse[T.seq.lse0 + row] = l > 0.f ? (row_max[r] + log2_approx(l)) * 0.6931471805599453f : inf_f();
    }
    // O / l into this warpgroup's 64 rows of a tile laid out as the Q buffer (64-column blocks
    // Q_BLOCK apart, 128-byte rows, chunk c of row r at c ^ (r & 7): a warp's words of one step fall
    // in 32 banks), at buf.
    auto stage_o = [&](unsigned buf) {
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        const int row = c * 64 + w * 16 + g + 8 * r; // in the block's BM rows
#pragma unroll
        for (int j = 0; j < D / 8; ++j) {
          const unsigned word = pack2<F16>(acc[4 * j + 2 * r] * inv[r], acc[4 * j + 2 * r + 1] * inv[r]);
          const int col = 8 * j + 2 * t, blk = col / 64, chunk = (col % 64) / 8;
          const unsigned at = buf + blk * Q_BLOCK + row * 128 + ((chunk ^ (row & 7)) << 4) + (col % 8) * 2;
          asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(at), "r"(word) : "memory");
        }
      }
    };
    if constexpr (PERSIST) {
      // O goes out while the producer loads the next tile's Q. A tile with no key releases its Q
      // here, once all four warps have seen q_full: with keys, the first S's wgmma cannot complete
      // until every warp issued it, but here a warp still polling for this phase after warp 0
      // released the buffer would see the next Q's phase complete, take the wrong parity and hang.
      if (n_end == 0) {
        named_sync(1 + c, 128);
        if (wtid == 0) mbar_arrive(q_empty);
      }
      if constexpr (OSTORE) {
        if (wtid == 0) bulk_wait_read(); // the last tile's store has read the buffer
        named_sync(1 + c, 128);
        stage_o(sO);
        fence_proxy_async(); // the generic-proxy writes, before the TMA (async proxy) reads them
        named_sync(1 + c, 128);
        if (wtid == 0) {
#pragma unroll
          for (int db = 0; db < DB; ++db) tma_store_4d(mo, db * 64, int(m0) + c * 64, T.h, T.b, sO + db * Q_BLOCK + c * 8192);
          bulk_commit();
        }
      } else {
        // From registers: a quad of lanes writes a row's 16 bytes of each 8-column step.
        const int dr = int(DR); // 32-bit compares: the column tests are one instruction each
#pragma unroll
        for (int r = 0; r < 2; ++r) {
          const long long row = row_base + 8 * r;
          if (row >= SQ) continue;
          unsigned short* orow = obase + row * os + 2 * t;
#pragma unroll
          for (int j = 0; j < D / 8; ++j)
            if (8 * j < dr) // a padded head dim's zero columns are not stored
              *reinterpret_cast<unsigned*>(orow + 8 * j) =
                  pack2<F16>(acc[4 * j + 2 * r] * inv[r], acc[4 * j + 2 * r + 1] * inv[r]);
        }
      }
    } else {
      // Through this warpgroup's rows of the Q buffer (no other warpgroup reads them), then out in
      // 16-byte stores.
      stage_o(sQ);
      named_sync(1 + c, 128);
      for (int x = wtid; x < 64 * (D / 8); x += 128) {
        const int r = x / (D / 8), ch = x % (D / 8), row = c * 64 + r;
        const long long q_row = m0 + row;
        if (q_row >= SQ || ch * 8 >= DR) continue; // past the rows, or a padded head dim's zeros
        const unsigned at = sQ + (ch / 8) * Q_BLOCK + row * 128 + (((ch % 8) ^ (row & 7)) << 4);
        uint4 val;
        asm volatile("ld.shared.v4.b32 {%0, %1, %2, %3}, [%4];\n"
                     : "=r"(val.x), "=r"(val.y), "=r"(val.z), "=r"(val.w)
                     : "r"(at));
        *reinterpret_cast<uint4*>(obase + q_row * os + ch * 8) = val;
      }
    }
  }
  if constexpr (OSTORE)
    if (wtid == 0) bulk_wait_read(); // the block's shared memory outlives its last store's reads
}

template <int F16, int D, int BN, int CWG, int STAGES, int OVERLAP, int PINGPONG, int CAUSAL, int PERSIST, int OCC,
          int OSTORE, int SPLIT>
__global__ void __launch_bounds__(128 * (CWG + 1), OCC) attention_wgmma(
    const unsigned short* __restrict__ /*q*/, const unsigned short* __restrict__ /*k*/,
    const unsigned short* __restrict__ /*v*/, unsigned short* __restrict__ o, float* __restrict__ lse, long long B,
    long long H, long long HKV, long long SQ, long long SKV, long long DR, long long /*qb*/, long long /*qs*/,
    long long /*qh*/, long long /*kb*/, long long /*ks*/, long long /*kh*/, long long /*vb*/, long long /*vs*/,
    long long /*vh*/, long long ob, long long os, long long oh, float scale_arg, const __grid_constant__ KtuneTensorMap mq,
    const __grid_constant__ KtuneTensorMap mk, const __grid_constant__ KtuneTensorMap mv,
    const __grid_constant__ KtuneTensorMap mo, float* __restrict__ ws) {
  attention_wgmma_body<F16, D, BN, CWG, STAGES, OVERLAP, PINGPONG, CAUSAL, PERSIST, OCC, OSTORE, SPLIT, 0>(
      o, lse, B, H, HKV, SQ, SKV, DR, 0, ob, os, oh, scale_arg, &mq, &mk, &mv, &mo, nullptr, nullptr, ws);
}

// SPLIT > 1: the splits merged, a warp a (b, h, i) row or two (a programmatic dependent of the
// split step: it waits for the partials in griddepcontrol.wait); at most SPLIT splits, each O_s
// loaded beside the (m_s, l_s). The op's arguments as the split step's,
// without its tensor maps.
template <int F16, int D, int BN, int SPLIT, int PAD>
__global__ void __launch_bounds__(128) attention_wgmma_combine(
    const unsigned short* __restrict__, const unsigned short* __restrict__, const unsigned short* __restrict__,
    unsigned short* __restrict__ o, float* __restrict__ lse, long long B, long long H, long long, long long SQ,
    long long SKV, long long DR, long long, long long, long long, long long, long long, long long, long long, long long,
    long long, long long ob, long long os, long long oh, float, float* __restrict__ ws) {
  long long tiles_a_split;
  ktune_attn::combine_splits<F16, D, PAD, SPLIT>(o, lse, B, H, SQ, ktune_attn_wg::wgmma_splits<BN, SPLIT>(SKV, tiles_a_split), DR,
                                          ob, os, oh, ws);
}

// The op attention_varlen (attention_seq.cuh): 3-D maps over the packed (token, head, head_dim)
// operands, box {BM or BN, 1, 64}.
template <int F16, int D, int BN, int CWG, int STAGES, int OVERLAP, int PINGPONG, int CAUSAL, int PERSIST, int OCC,
          int OSTORE, int SPLIT>
__global__ void __launch_bounds__(128 * (CWG + 1), OCC) attention_wgmma_varlen(
    const unsigned short* __restrict__ /*q*/, const unsigned short* __restrict__ /*k*/,
    const unsigned short* __restrict__ /*v*/, const int* __restrict__ cu_q, const int* __restrict__ cu_k,
    unsigned short* __restrict__ o, float* __restrict__ lse, long long B, long long H, long long HKV, long long SQ,
    long long SKV, long long DR, long long TQ, long long /*TKV*/, long long /*qs*/, long long /*qh*/,
    long long /*ks*/, long long /*kh*/, long long /*vs*/, long long /*vh*/, long long os, long long oh, float scale_arg,
    const __grid_constant__ KtuneTensorMap mq, const __grid_constant__ KtuneTensorMap mk,
    const __grid_constant__ KtuneTensorMap mv) {
  attention_wgmma_body<F16, D, BN, CWG, STAGES, OVERLAP, PINGPONG, CAUSAL, PERSIST, OCC, OSTORE, SPLIT, 1>(
      o, lse, B, H, HKV, SQ, SKV, DR, TQ, 0, os, oh, scale_arg, &mq, &mk, &mv, nullptr, cu_q, cu_k, nullptr);
}
