// Family attention_decode: flash-decoding on mma.sync (sm_80+), for few query rows (decode, and
// speculative decoding's q_len up to 64) over a long key / value sequence. Its speed is the speed
// of reading K and V, so every design choice serves the memory system:
//
// - GQA heads packed into the MMA's M: a block owns one (batch, kv head) and ROWS of its
//   q_len x (heads / kv_heads) query rows (row r is query r / G of head kv_head * G + r % G), so K
//   and V are read once for all the heads that share them, not once a head.
// - The key sequence split across blocks (split-KV): block x of the grid walks the keys
//   [x * CHUNK, (x + 1) * CHUNK) (CHUNK 0: all of them; with ILV 1 the row block's splits take
//   turns along the whole sequence instead, attention_decode_body below), writes its
//   unnormalised O, its row max and its row sum (log2 units) to the workspace, and
//   attention_decode_combine merges the splits
//   (attention_combine.cuh, which attention_wgmma's splits share). With one split the block
//   writes O and the log-sum-exp itself and there is no combine step. On sm_90 the splits of a
//   row block may instead form one thread block cluster (the _cl entry points) and merge the same
//   way from each other's shared memory: no workspace, no second launch (cluster_merge below).
// - Inside a block, the keys split again over its WARPS warps (tile t of BN keys goes to warp
//   t % WARPS, so the warps read neighbouring memory): each warp keeps its own online softmax, its
//   own STAGES-deep cp.async ring and needs no block barrier in its loop; the warps' results are
//   merged through shared memory at the end, in warp order (deterministic).
//
// Kernel arguments follow the op of plain buffers (docs/ADDING_AN_OP.md): q, k, v, o, lse; the
// dimensions B, H, HKV, SQ, SKV, head_dim (DR below); the strides of q, k, v and o (batch,
// sequence, head); the scale (0: 1 / sqrt(head_dim)); then the workspace the plan asks for (FP32:
// O_s of every split, then (m_s, l_s) pairs). The template's D is the tiles' head dim, whole
// 64-column blocks; with PAD 1 the operands' own (DR, a multiple of 8) is less, and the columns
// past it load as zeros (cp.async's zero fill, from a valid address, nothing read), add nothing to
// S, and are not stored. Causal is bottom-right aligned: key j is visible to query i when
// j <= i + SKV - SQ.
//
// attention_decode_paged serves the op attention_paged, a KV cache in pages as vLLM keeps it: q,
// k_cache and v_cache (pages, page_size, kv_heads, head_dim), block_table (int32, batch x
// kv_len / page_size: the page of each page_size keys of a sequence), seq_lens (int32, batch: the
// keys sequence b holds, at most kv_len), o, lse; the dimensions B, H, HKV, SQ, SKV (the capacity
// of a sequence), D, PAGE, PAGES; the same strides (k's and v's first one steps a page). Key j of
// sequence b lies in page block_table[b][j / PAGE] at row j % PAGE; causal is bottom-right aligned
// to the sequence's own length. The table's entries must be pages of the cache (the kernel trusts
// them, as vLLM's does).
#include "attention_combine.cuh" // the splits' partials and the combine step
#include "ktune_cluster.cuh" // CL > 1: the splits of a row block merge in distributed shared memory

namespace ktune_attn_decode {

// Row r's (max, sum) over the block: its WARPS warps' pairs in sML merged, the sum rescaled to
// the block's max (a row no warp saw a key of: (-inf, 0)).
template <int WARPS, int ROWS>
__device__ __forceinline__ float2 block_row_ml(const float* sML, int r) {
  using namespace ktune_attn;
  float m = -inf_f(), l = 0.f;
  for (int w = 0; w < WARPS; ++w) m = fmaxf(m, sML[(w * ROWS + r) * 2]);
  const float m_use = m == -inf_f() ? 0.f : m;
  for (int w = 0; w < WARPS; ++w) l += sML[(w * ROWS + r) * 2 + 1] * exp2_approx(sML[(w * ROWS + r) * 2] - m_use);
  return make_float2(m, l);
}

// The sum of N warps' slots of 4 floats at p, p + stride, ...: how the block's warps' O are added
// (in a slot of the first warp before a cluster merge, or where the output is stored).
template <int N>
__device__ __forceinline__ float4 sum_slots(const float* p, int stride) {
  float4 x = *reinterpret_cast<const float4*>(p);
#pragma unroll
  for (int w = 1; w < N; ++w) {
    const float4 y = *reinterpret_cast<const float4*>(p + w * stride);
    x.x += y.x, x.y += y.y, x.z += y.z, x.w += y.w;
  }
  return x;
}

// CL > 1: the CL splits of a row block, one thread block cluster, merged as the combine step
// merges them, but from each other's shared memory. Each block holds its split's O (rescaled to
// its own row max, not normalised) in sO (ROWS rows of D + 8 floats) and its warps' (max, sum)
// per row in sML; it adds its (m_s, l_s) per row after sML, then the cluster's CL x WARPS x 32
// threads share the row block's ROWS x D / 4 groups of 4 outputs: a group's O is
// sum_s 2^(m_s - M) O_s / sum_s 2^(m_s - M) l_s over the CL blocks' shared memory, the lse from
// its first group. The cluster syncs twice: before the reads (every split written) and after
// them (no block leaves while another still reads its shared memory), the second split into its
// arrive after the reads and its wait before the block leaves where a thread's groups fit its
// registers.
template <int F16, int D, int ROWS, int WARPS, int PAD, int CL>
__device__ __forceinline__ void cluster_merge(const float* sO, float* sML, unsigned short* __restrict__ o,
                                              float* __restrict__ lse, long long H, long long SQ, unsigned row0,
                                              unsigned R, unsigned G, unsigned hk, long long b, long long DR,
                                              long long ob, long long os, long long oh) {
  using namespace ktune_attn;
  namespace cluster = ktune_dev::cluster;
  constexpr int THREADS = WARPS * 32, OS = D + 8, C4 = D / 4;
  static_assert(CL >= 2 && CL <= 16, "2 to 16 splits a cluster");
  const int tid = threadIdx.x;
  float2* block_ml = reinterpret_cast<float2*>(sML + WARPS * ROWS * 2); // this split's (m_s, l_s) a row
  if (tid < ROWS) block_ml[tid] = block_row_ml<WARPS, ROWS>(sML, tid);
  cluster::sync();
  const unsigned rank = cluster::rank();
  // One group of 4 outputs: O's address and value, and the lse's where the group is a row's first.
  struct Out {
    long long o_at, lse_at;
    uint2 v;
    float lse;
    bool has_o = false, has_lse = false;
  };
  auto merge = [&](int item) {
    Out out;
    const int lr = item / C4, c4 = item % C4;
    const unsigned row = row0 + lr;
    if (item >= ROWS * C4 || row >= R) return out;
    float2 ml[CL];
    float m = -inf_f();
#pragma unroll
    for (int s = 0; s < CL; ++s) {
      ml[s] = cluster::load_v2(cluster::remote(block_ml + lr, s));
      m = fmaxf(m, ml[s].x);
    }
    const float m_use = m == -inf_f() ? 0.f : m;
    float l = 0.f;
    float4 sum = make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll
    for (int s = 0; s < CL; ++s) {
      const float w = exp2_approx(ml[s].x - m_use);
      const float4 x = cluster::load_v4(cluster::remote(sO + lr * OS + 4 * c4, s));
      l += ml[s].y * w;
      sum.x += w * x.x, sum.y += w * x.y, sum.z += w * x.z, sum.w += w * x.w;
    }
    const float inv = l > 0.f ? 1.f / l : 0.f;
    const unsigned i = row / G, h = hk * G + row % G;
    if (!PAD || 4 * c4 < DR) { // past the operands' head dim: a zero column of the tiles'
      out.has_o = true, out.o_at = b * ob + i * os + h * oh + 4 * c4;
      out.v.x = pack2<F16>(sum.x * inv, sum.y * inv);
      out.v.y = pack2<F16>(sum.z * inv, sum.w * inv);
    }
    if (c4 == 0) {
      out.has_lse = true, out.lse_at = (b * H + h) * SQ + i;
      out.lse = l > 0.f ? (m_use + log2_approx(l)) * 0.6931471805599453f : inf_f();
    }
    return out;
  };
  auto store = [&](const Out& out) {
    if (out.has_o) *reinterpret_cast<uint2*>(o + out.o_at) = out.v;
    if (out.has_lse) lse[out.lse_at] = out.lse;
  };
  constexpr int ITEMS = (ROWS * C4 + CL * THREADS - 1) / (CL * THREADS); // groups a thread
  const int item0 = int(rank) * THREADS + tid;                             // this thread's first
  if constexpr (ITEMS <= 4) {
    // The groups held in registers: the cluster's second barrier is arrived at once the reads of
    // the others' shared memory are done, before the global stores, so that its release does not
    // wait for them (a fence that drains them took a seventh of the 1 x 32/8 x 1024 kernel's
    // sampled warp time, ncu, H100), and is waited on only before the block leaves.
    Out out[ITEMS];
#pragma unroll
    for (int j = 0; j < ITEMS; ++j) out[j] = merge(item0 + j * CL * THREADS);
    cluster::arrive();
#pragma unroll
    for (int j = 0; j < ITEMS; ++j) store(out[j]);
    cluster::wait();
  } else {
    for (int item = item0; item < ROWS * C4; item += CL * THREADS) store(merge(item));
    cluster::sync(); // no block leaves while another still reads its shared memory
  }
}

} // namespace ktune_attn_decode

// The split kernel of both entry points below. PAGED 0: a contiguous cache, bt and lens are null,
// PAGE and PPS unused; 1: pages a multiple of BN (a tile lies in one page); 2: any page size (each
// key looked up). The way is a template parameter, not a branch at run time: with both paged
// ways in one kernel the tile loop ran at 0.6x the contiguous kernel's speed (H200, same config).
// CL > 1 (sm_90): the grid's CL splits of a row block are one thread block cluster, and merge
// through distributed shared memory at the end (no workspace, no combine step).
template <int F16, int D, int ROWS, int WARPS, int BN, int STAGES, int CHUNK, int CAUSAL, int PAGED, int PAD, int CL,
          int ILV>
__device__ __forceinline__ void attention_decode_body(
    const unsigned short* __restrict__ q, const unsigned short* __restrict__ k, const unsigned short* __restrict__ v,
    const int* __restrict__ bt, const int* __restrict__ lens, unsigned short* __restrict__ o, float* __restrict__ lse,
    long long B, long long H, long long HKV, long long SQ, long long SKV, long long DR, long long PAGE, long long PPS, long long qb,
    long long qs, long long qh, long long kb, long long ks, long long kh, long long vb, long long vs, long long vh,
    long long ob, long long os, long long oh, float scale_arg, float* __restrict__ ws) {
  using namespace ktune_attn;
  using namespace ktune_attn_decode;
  constexpr int THREADS = WARPS * 32;
  constexpr int MT = ROWS / 16; // MMA row tiles (every warp holds all of the block's rows)
  constexpr int NT = BN / 8;    // n8 tiles of S
  constexpr int DT = D / 8;     // n8 tiles of O
  constexpr int CH = D / 8;     // 16-byte chunks of a row
  constexpr int OS = D + 8;     // row stride of the FP32 merge buffer (rows 8 banks apart)
  static_assert(MT >= 1 && MT * 16 == ROWS && BN % 16 == 0 && D % 64 == 0 && STAGES >= 2, "tile shapes");

  extern __shared__ __align__(128) unsigned char attn_smem[];
  unsigned short* sQ = reinterpret_cast<unsigned short*>(attn_smem); // ROWS x D
  unsigned short* ring = sQ + ROWS * D;                                // per warp: STAGES x (K, V) x BN x D
  constexpr int RING = WARPS * STAGES * 2 * BN * D * 2, MERGE = ROWS * OS * 4;
  float* sML = reinterpret_cast<float*>(reinterpret_cast<unsigned char*>(ring) + (RING > MERGE ? RING : MERGE));
  float* sO = reinterpret_cast<float*>(ring); // the merge buffer, once every warp is done with its ring

  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int g = lane >> 2, t = lane & 3;
  // Rows, heads and row blocks in 32 bits (the family admits batch x heads x q_len < 2^31): a
  // 64-bit division is a long inlined routine, in the chain before the first load is issued and in
  // the code a short call fetches cold. The row blocks of a KV head from the grid (kv_heads x row
  // blocks), with no division where there is one, so that the first K / V tile's addresses wait on
  // the parameters alone; G (a division) is for Q's rows, loaded after that tile is on its way.
  const unsigned RB = gridDim.y == unsigned(HKV) ? 1u : gridDim.y / unsigned(HKV);
  const unsigned hk = RB == 1 ? blockIdx.y : blockIdx.y / RB, row0 = RB == 1 ? 0u : (blockIdx.y % RB) * ROWS;
  const unsigned G = unsigned(H) / unsigned(HKV), R = unsigned(SQ) * G;
  const long long b = blockIdx.z;
  const long long split = blockIdx.x, nsplit = gridDim.x;
  // The keys of this sequence: all SKV, or (paged) its own length, at most the capacity.
  long long len = SKV;
  if (PAGED) len = lens[b] < 0 ? 0 : (lens[b] < SKV ? lens[b] : SKV);
  // ILV 0: split s walks the keys [s * CHUNK, (s + 1) * CHUNK) (CHUNK 0: all of them). ILV 1: the
  // row block's splits take turns by runs of WARPS tiles, split s the runs s, s + nsplit, ... of
  // the whole sequence: a sequence shorter than the capacity (paged: its own length) is shared by
  // every split alike, where contiguous splits past its end read nothing while the first read all
  // of it (1.14-1.63x at sequences of 3-25 % of the capacity; at full lengths the two orders are
  // within 1 %, H100, docs/runs/2026-12-05-h100-decode-turns.md).
  const long long k0 = CHUNK && !ILV ? split * CHUNK : 0;
  long long k1 = CHUNK && !ILV ? (k0 + CHUNK < len ? k0 + CHUNK : len) : len;
  if (k1 < k0) k1 = k0; // a split past the end of a short sequence: no keys
  // This warp's tiles of BN keys from k0: first, first + step, ...
  const long long step = ILV ? nsplit * WARPS : WARPS, first = ILV ? split * WARPS + warp : warp;
  auto tile_key = [&](long long n) { return k0 + (first + n * step) * BN; }; // tile n's first key
  auto tiles_from = [&](long long tiles) { return tiles > first ? (tiles - first + step - 1) / step : 0; };
  const float scale = scale_arg != 0.f ? scale_arg : 1.f / sqrtf((float)(PAD ? DR : D));
  const float scale_log2 = scale * 1.4426950408889634f;
  const long long off = len - SQ;
  // Paged with PAGE a multiple of BN: a tile lies in one page (j0 is a multiple of BN: CHUNK is
  // one of BN), so its table entry is read once, and each key's row steps from the tile's as in the
  // contiguous kernel. A warp reads its tiles' entries 32 at a time, one a lane (`pages`, then
  // broadcast with a shuffle), the next 32 on their way while these are used: a warp waits on a
  // table read once in 32 tiles, for a read issued 32 tiles before. Entries read one at a time
  // into a ring of registers held each tile's loads behind the previous tile's table read (a
  // register is moved only once its load has landed): behind a round trip through memory that
  // the K / V reads keep full: 0.8-1.1 us of a 30-31 us call at 1 x 64/8 x 16384 in pages of 64
  // and 256 (H100).
  // The entries are read by the sequence's capacity, not its length, so that the first ones load
  // beside lens[b], not after it (past the length they are pages of the table still, read and not
  // used); the table's own round trip before the first K / V tile remains, and is what a paged call
  // costs over a contiguous one where a call is short (10 % at 1 x 32/8 x 1024 with L2 cold,
  // H200). Pages smaller than a tile, or not a multiple of it, look each key up. load_tile is
  // called for n = 0, 1, 2, ... in order by every lane of the warp.
  constexpr bool whole = PAGED == 1;
  // The first entries' addresses are index math on the parameters alone, with no division where
  // the page size is a power of two (a shift) and none for the bound (a tile's first key against
  // the capacity, not a count of tiles): each division before the table's read is a chain of
  // dependent instructions its round trip, and the first K / V tile's, wait on.
  const long long k1_cap = CHUNK && !ILV ? (k0 + CHUNK < SKV ? k0 + CHUNK : SKV) : SKV;
  // Keys and page sizes below 2^31 (the op's limit): 32-bit divisions, a few times cheaper.
  const unsigned page_keys = unsigned(PAGE), page_shift = __popc(page_keys - 1);
  const bool page_pow2 = (page_keys & (page_keys - 1)) == 0;
  auto page_of = [&](unsigned key) { return page_pow2 ? key >> page_shift : key / page_keys; };
  auto in_page = [&](unsigned key) { return page_pow2 ? key & (page_keys - 1) : key % page_keys; };
  auto tile_page = [&](long long n) -> int {
    const long long key = tile_key(n);
    return key < k1_cap ? bt[b * PPS + page_of(unsigned(key))] : 0;
  };
  int pages = whole ? tile_page(lane) : 0, next_pages = whole ? tile_page(32 + lane) : 0;
  auto in_head = [&](int ch) { return !PAD || ch * 8 < DR; }; // chunk ch of a row is the operands'?
  // Where chunk ch of a row is read from: past the head dim (nothing read) the row's first, so that
  // the address stays inside the operand even on its last row.
  auto col = [&](int ch) { return in_head(ch) ? ch * 8 : 0; };

  // The block's query rows, zeros past the last one (not unrolled: its divisions are code a short
  // call fetches cold, for two or four iterations).
  auto load_q = [&] {
#pragma unroll 1
    for (int c = tid; c < ROWS * CH; c += THREADS) {
      const int r = c / CH, ch = c % CH;
      const unsigned row = row0 + r;
      const bool ok = row < R;
      const unsigned i = ok ? row / G : 0, h = hk * G + (ok ? row % G : 0);
      cp_async16(smem_u32(sQ + swizzled<D>(r, ch)), q + b * qb + i * qs + h * qh + col(ch), ok && in_head(ch));
    }
  };

  const unsigned short* kbase = k + (PAGED ? 0 : b * kb) + hk * kh;
  const unsigned short* vbase = v + (PAGED ? 0 : b * vb) + hk * vh;
  unsigned short* wring = ring + warp * STAGES * 2 * BN * D;
  const long long mine = tiles_from((k1 - k0 + BN - 1) / BN); // this warp's tiles
  auto load_tile = [&](int stage, long long n) {
    const long long j0 = tile_key(n);
    unsigned short* tK = wring + stage * 2 * BN * D;
    unsigned short* tV = tK + BN * D;
    // Key j0's rows; the tile's others step from them by the sequence stride.
    const unsigned short* k_tile = kbase;
    const unsigned short* v_tile = vbase;
    unsigned pg0 = 0, at0 = 0; // per-key look-ups: the tile's first key in the table
    if (PAGED == 0) {
      k_tile += j0 * ks, v_tile += j0 * vs;
    } else if (whole) {
      if (n % 32 == 0 && n > 0) pages = next_pages, next_pages = tile_page(n + 32 + lane);
      const long long page = __shfl_sync(0xffffffffu, pages, int(n % 32)), at = in_page(unsigned(j0));
      k_tile += page * kb + at * ks, v_tile += page * vb + at * vs;
    } else {
      pg0 = page_of(unsigned(j0)), at0 = in_page(unsigned(j0));
    }
    if constexpr (PAGED != 2 && 32 % CH == 0) {
      // A row's CH chunks over CH lanes: each lane loads one chunk column of every RSTEP-th row
      // from its first, so its addresses step by a stride and its swizzle by a constant XOR (RSTEP
      // is a power of two above r0: (r & 7) = r0 ^ ((it * RSTEP) & 7)). Without the per-row
      // multiplies and divisions the generic loop below has, the loads of a tile take about a
      // third of its instructions: the code a short call fetches cold.
      constexpr int RSTEP = 32 / CH;
      const int r0 = lane / CH, ch = lane % CH;
      const long long left = k1 - j0; // the tile's keys that exist
      const int rows = left < BN ? int(left) : BN;
      const bool head = in_head(ch);
      const unsigned short* kp = k_tile + r0 * ks + col(ch);
      const unsigned short* vp = v_tile + r0 * vs + col(ch);
      const unsigned sw = unsigned(ch ^ r0) << 4; // the lane's chunk, swizzled by its first row, in bytes
      const unsigned sk = smem_u32(tK + r0 * D), sv = smem_u32(tV + r0 * D);
#pragma unroll
      for (int it = 0; it < BN / RSTEP; ++it) {
        const bool ok = r0 + it * RSTEP < rows;
        const unsigned at = unsigned(it * RSTEP * D * 2) + (sw ^ unsigned(((it * RSTEP) & 7) << 4));
        cp_async16(sk + at, ok ? kp : kbase, ok && head); // kbase: a valid address where nothing is read
        cp_async16(sv + at, ok ? vp : vbase, ok && head);
        kp += RSTEP * ks, vp += RSTEP * vs;
      }
    } else {
#pragma unroll
      for (int c = lane; c < BN * CH; c += 32) {
        const int r = c / CH, ch = c % CH;
        const bool ok = j0 + r < k1;
        const unsigned short* kp = kbase; // a valid address where nothing is read
        const unsigned short* vp = vbase;
        if (ok) {
          if (PAGED == 2) {
            unsigned pg = pg0, at = at0 + unsigned(r);
            while (at >= page_keys) at -= page_keys, ++pg; // r < BN: BN / PAGE + 1 steps at most
            const long long page = bt[b * PPS + pg];
            kp += page * kb + at * ks, vp += page * vb + at * vs;
          } else {
            kp = k_tile + r * ks, vp = v_tile + r * vs;
          }
        }
        cp_async16(smem_u32(tK + swizzled<D>(r, ch)), kp + col(ch), ok && in_head(ch));
        cp_async16(smem_u32(tV + swizzled<D>(r, ch)), vp + col(ch), ok && in_head(ch));
      }
    }
  };
  // Not unrolled: each copy of load_tile is code a short call (a warp's one or two tiles) fetches
  // cold, and the prologue runs once. Q joins the first tile's group, issued after it: the first
  // K / V loads are not held up by Q's rows (divisions by G), and the block waits for that group
  // before its first tile's math, which needs both.
#pragma unroll 1
  for (int s = 0; s < STAGES - 1; ++s) {
    // Paged, s < mine as a key against the length: k1 waits on lens[b], and mine is a division after
    // it. The contiguous kernel's mine is on the parameters alone (kept: that kernel's code as
    // measured).
    if (PAGED ? tile_key(s) < k1 : s < mine) load_tile(s, s);
    if (s == 0) load_q();
    cp_async_commit();
  }

  // The last key each of this thread's rows sees (causal), and its (b, h, i) row of the output.
  long long limit[MT][2];
#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const unsigned row = row0 + mt * 16 + g + 8 * r;
      limit[mt][r] = (row < R ? row / G : 0) + off;
    }

  cp_async_wait<STAGES - 2>(); // the first group (tile 0 and Q) has landed
  __syncthreads();

  float acc[MT][DT][4];
  float row_max[MT][2], row_sum[MT][2];
#pragma unroll
  for (int mt = 0; mt < MT; ++mt) {
#pragma unroll
    for (int dt = 0; dt < DT; ++dt) acc[mt][dt][0] = acc[mt][dt][1] = acc[mt][dt][2] = acc[mt][dt][3] = 0.f;
    row_max[mt][0] = row_max[mt][1] = -inf_f();
    row_sum[mt][0] = row_sum[mt][1] = 0.f;
  }

  for (long long n = 0; n < mine; ++n) {
    cp_async_wait<STAGES - 2>();
    __syncwarp(); // tile n landed for every lane; every lane is done with tile n - 1's stage
    if (n + STAGES - 1 < mine) load_tile(int((n + STAGES - 1) % STAGES), n + STAGES - 1);
    cp_async_commit();
    const unsigned short* tK = wring + int(n % STAGES) * 2 * BN * D;
    const unsigned short* tV = tK + BN * D;

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
        ldmatrix_x4(a[mt], smem_u32(sQ + swizzled<D>(mt * 16 + (lane & 15), kd * 2 + (lane >> 4))));
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

    // Mask (past the block's keys; causal: past the row's diagonal), then the online softmax in
    // log2 units. The same steps as attention_fa2.cu's softmax_tile, written out: through one shared
    // helper (the mask a functor) ptxas gave this kernel 128 registers where it takes 248, and the
    // batch-1 configs ran 3-15 % slower (H200, docs/runs/2026-11-30-h200-attention-occ.md).
    const long long j0 = tile_key(n);
    const bool edge = j0 + BN > k1 || (CAUSAL && j0 + BN - 1 > off);
#pragma unroll
    for (int mt = 0; mt < MT; ++mt) {
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        float mx = -inf_f();
#pragma unroll
        for (int nt = 0; nt < NT; ++nt)
#pragma unroll
          for (int e = 0; e < 2; ++e) {
            float x = s[mt][nt][2 * r + e] * scale_log2;
            if (edge) {
              const long long j = j0 + nt * 8 + 2 * t + e;
              if (j >= k1 || (CAUSAL && j > limit[mt][r])) x = -inf_f();
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
  }
  cp_async_wait<0>();

  // Merge the warps: each row's (max, sum) per warp, then O rescaled to the block's max and summed
  // in warp order into the FP32 buffer over the rings.
#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      float l = row_sum[mt][r];
      l += __shfl_xor_sync(0xffffffffu, l, 1);
      l += __shfl_xor_sync(0xffffffffu, l, 2);
      row_sum[mt][r] = l;
      if (t == 0) {
        const int lr = mt * 16 + g + 8 * r;
        sML[(warp * ROWS + lr) * 2] = row_max[mt][r];
        sML[(warp * ROWS + lr) * 2 + 1] = l;
      }
    }
  __syncthreads(); // every warp's (max, sum) is there, and every ring is idle
  float factor[MT][2];
#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const int lr = mt * 16 + g + 8 * r;
      float m = -inf_f();
      for (int w = 0; w < WARPS; ++w) m = fmaxf(m, sML[(w * ROWS + lr) * 2]);
      const float m_use = m == -inf_f() ? 0.f : m;
      factor[mt][r] = exp2_approx(row_max[mt][r] - m_use);
      if (nsplit == 1) { // the block's O is the answer: normalise here
        float l = 0.f;
        for (int w = 0; w < WARPS; ++w) l += sML[(w * ROWS + lr) * 2 + 1] * exp2_approx(sML[(w * ROWS + lr) * 2] - m_use);
        factor[mt][r] = l > 0.f ? factor[mt][r] / l : 0.f;
      }
    }
  // Each warp's O into its own slot of the idle rings, then the slots summed a group of columns to
  // a thread: one or two barriers, where a warp at a time adding its O to the first took WARPS (its
  // barriers, with all but one warp waiting at each, were the largest share of the 1 x 32/8 x 1024
  // kernel's sampled warp time after the loads', ncu, H100). Without a cluster the sum is taken
  // where the output is stored; a cluster's other blocks read the sum from the first slot.
  constexpr bool SLOTS = WARPS > 2 && WARPS * ROWS * OS * 4 <= RING;
  constexpr int SUMMED_AT_STORE = SLOTS && CL == 1 ? WARPS : 1; // slots the output loop adds
  if constexpr (SLOTS) {
    float* mine = sO + warp * ROWS * OS;
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        float* dst = mine + (mt * 16 + g + 8 * r) * OS + 2 * t;
#pragma unroll
        for (int dt = 0; dt < DT; ++dt)
          *reinterpret_cast<float2*>(dst + dt * 8) =
              make_float2(acc[mt][dt][2 * r] * factor[mt][r], acc[mt][dt][2 * r + 1] * factor[mt][r]);
      }
    __syncthreads();
    if constexpr (CL > 1) {
#pragma unroll 1
      for (int c = tid; c < ROWS * (D / 4); c += THREADS) {
        float* first = sO + (c / (D / 4)) * OS + 4 * (c % (D / 4));
        *reinterpret_cast<float4*>(first) = sum_slots<WARPS>(first, ROWS * OS);
      }
      __syncthreads();
    }
  } else {
#pragma unroll 1 // once a call: a copy of the merge a warp is code fetched cold, not time saved
    for (int w = 0; w < WARPS; ++w) {
      if (warp == w) {
#pragma unroll
        for (int mt = 0; mt < MT; ++mt)
#pragma unroll
          for (int r = 0; r < 2; ++r) {
            float* dst = sO + (mt * 16 + g + 8 * r) * OS + 2 * t;
#pragma unroll
            for (int dt = 0; dt < DT; ++dt) {
              float2 x = make_float2(acc[mt][dt][2 * r] * factor[mt][r], acc[mt][dt][2 * r + 1] * factor[mt][r]);
              if (w > 0) {
                const float2 y = *reinterpret_cast<const float2*>(dst + dt * 8);
                x.x += y.x, x.y += y.y;
              }
              *reinterpret_cast<float2*>(dst + dt * 8) = x;
            }
          }
      }
      __syncthreads();
    }
  }

  if constexpr (CL > 1) {
    cluster_merge<F16, D, ROWS, WARPS, PAD, CL>(sO, sML, o, lse, H, SQ, row0, R, G, hk, b, DR, ob, os, oh);
    return;
  }

  // Out: O (normalised) and the log-sum-exp with one split, else this split's partials.
  const long long rows = B * H * SQ;
  for (int c = tid; c < ROWS * (D / 8); c += THREADS) {
    const int lr = c / (D / 8), d = (c % (D / 8)) * 8;
    const unsigned row = row0 + lr;
    if (row >= R) continue;
    const unsigned i = row / G, h = hk * G + row % G;
    if (nsplit == 1 && PAD && d >= DR) continue; // a zero column of the tiles'
    const float* src = sO + lr * OS + d;
    const float4 x0 = sum_slots<SUMMED_AT_STORE>(src, ROWS * OS), x1 = sum_slots<SUMMED_AT_STORE>(src + 4, ROWS * OS);
    if (nsplit == 1) {
      uint4 w;
      w.x = pack2<F16>(x0.x, x0.y), w.y = pack2<F16>(x0.z, x0.w);
      w.z = pack2<F16>(x1.x, x1.y), w.w = pack2<F16>(x1.z, x1.w);
      *reinterpret_cast<uint4*>(o + b * ob + i * os + h * oh + d) = w;
    } else {
      float* dst = partial_o(ws, split, rows, (b * H + h) * SQ + i, D) + d;
      *reinterpret_cast<float4*>(dst) = x0;
      *reinterpret_cast<float4*>(dst + 4) = x1;
    }
  }
  if (tid < ROWS && row0 + tid < R) {
    const unsigned row = row0 + tid, i = row / G, h = hk * G + row % G;
    const float2 ml = block_row_ml<WARPS, ROWS>(sML, tid);
    const float m_use = ml.x == -inf_f() ? 0.f : ml.x;
    const long long out_row = (b * H + h) * SQ + i;
    if (nsplit == 1) lse[out_row] = ml.y > 0.f ? (m_use + log2_approx(ml.y)) * 0.6931471805599453f : inf_f();
    else *partial_ml(ws, nsplit, split, rows, out_row, D) = ml;
  }
}

// The entry points: a contiguous cache or a paged one, the splits merged by a combine step (or
// not split) or (the _cl forms, sm_90) merged in their thread block cluster of CL splits.
#define KTUNE_DECODE_ARGS                                                                                          \
  const unsigned short *__restrict__ q, const unsigned short *__restrict__ k, const unsigned short *__restrict__ v, \
      unsigned short *__restrict__ o, float *__restrict__ lse, long long B, long long H, long long HKV, long long SQ, \
      long long SKV, long long DR, long long qb, long long qs, long long qh, long long kb, long long ks,           \
      long long kh, long long vb, long long vs, long long vh, long long ob, long long os, long long oh,             \
      float scale_arg, float *__restrict__ ws
#define KTUNE_DECODE_PAGED_ARGS                                                                                    \
  const unsigned short *__restrict__ q, const unsigned short *__restrict__ k, const unsigned short *__restrict__ v, \
      const int *__restrict__ bt, const int *__restrict__ lens, unsigned short *__restrict__ o,                    \
      float *__restrict__ lse, long long B, long long H, long long HKV, long long SQ, long long SKV, long long DR,  \
      long long PAGE, long long /*PAGES*/, long long qb, long long qs, long long qh, long long kb, long long ks,    \
      long long kh, long long vb, long long vs, long long vh, long long ob, long long os, long long oh,             \
      float scale_arg, float *__restrict__ ws
#define KTUNE_DECODE_CALL(CL)                                                                                      \
  attention_decode_body<F16, D, ROWS, WARPS, BN, STAGES, CHUNK, CAUSAL, 0, PAD, CL, ILV>(                         \
      q, k, v, nullptr, nullptr, o, lse, B, H, HKV, SQ, SKV, DR, 0, 0, qb, qs, qh, kb, ks, kh, vb, vs, vh, ob, os,  \
      oh, scale_arg, ws)
#define KTUNE_DECODE_PAGED_CALL(CL)                                                                                \
  attention_decode_body<F16, D, ROWS, WARPS, BN, STAGES, CHUNK, CAUSAL, PAGED, PAD, CL, ILV>(                     \
      q, k, v, bt, lens, o, lse, B, H, HKV, SQ, SKV, DR, PAGE, SKV / PAGE, qb, qs, qh, kb, ks, kh, vb, vs, vh, ob,  \
      os, oh, scale_arg, ws)

// ILV last, 0 by default: the names of configs without it are those the cubin caches hold.
template <int F16, int D, int ROWS, int WARPS, int BN, int STAGES, int CHUNK, int CAUSAL, int PAD, int ILV = 0>
__global__ void __launch_bounds__(WARPS * 32) attention_decode(KTUNE_DECODE_ARGS) {
  KTUNE_DECODE_CALL(1);
}
template <int F16, int D, int ROWS, int WARPS, int BN, int STAGES, int CHUNK, int CAUSAL, int PAD, int CL, int ILV = 0>
__global__ void __launch_bounds__(WARPS * 32) KTUNE_CLUSTER_DIMS(CL, 1, 1) attention_decode_cl(KTUNE_DECODE_ARGS) {
  KTUNE_DECODE_CALL(CL);
}
template <int F16, int D, int ROWS, int WARPS, int BN, int STAGES, int CHUNK, int CAUSAL, int PAGED, int PAD, int ILV = 0>
__global__ void __launch_bounds__(WARPS * 32) attention_decode_paged(KTUNE_DECODE_PAGED_ARGS) {
  KTUNE_DECODE_PAGED_CALL(1);
}
template <int F16, int D, int ROWS, int WARPS, int BN, int STAGES, int CHUNK, int CAUSAL, int PAGED, int PAD, int CL,
          int ILV = 0>
__global__ void __launch_bounds__(WARPS * 32) KTUNE_CLUSTER_DIMS(CL, 1, 1) attention_decode_paged_cl(KTUNE_DECODE_PAGED_ARGS) {
  KTUNE_DECODE_PAGED_CALL(CL);
}
#undef KTUNE_DECODE_ARGS
#undef KTUNE_DECODE_PAGED_ARGS
#undef KTUNE_DECODE_CALL
#undef KTUNE_DECODE_PAGED_CALL

template <int F16, int D, int CHUNK, int PAD>
__global__ void __launch_bounds__(128) attention_decode_combine(
    const unsigned short* __restrict__, const unsigned short* __restrict__, const unsigned short* __restrict__,
    unsigned short* __restrict__ o, float* __restrict__ lse, long long B, long long H, long long, long long SQ,
    long long SKV, long long DR, long long, long long, long long, long long, long long, long long, long long, long long,
    long long, long long ob, long long os, long long oh, float, float* __restrict__ ws) {
  ktune_attn::combine_splits<F16, D, PAD, ktune_attn::kCombineMaxSplits>(o, lse, B, H, SQ, (SKV + CHUNK - 1) / CHUNK, DR, ob, os, oh, ws);
}

template <int F16, int D, int CHUNK, int PAD>
__global__ void __launch_bounds__(128) attention_decode_combine_paged(
    const unsigned short* __restrict__, const unsigned short* __restrict__, const unsigned short* __restrict__,
    const int* __restrict__, const int* __restrict__, unsigned short* __restrict__ o, float* __restrict__ lse,
    long long B, long long H, long long, long long SQ, long long SKV, long long DR, long long, long long, long long,
    long long, long long, long long, long long, long long, long long, long long, long long, long long ob, long long os,
    long long oh, float, float* __restrict__ ws) {
  ktune_attn::combine_splits<F16, D, PAD, ktune_attn::kCombineMaxSplits>(o, lse, B, H, SQ, (SKV + CHUNK - 1) / CHUNK, DR, ob, os, oh, ws);
}
