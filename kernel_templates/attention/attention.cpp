// Op attention: O = softmax(scale Q K^T [causal mask]) V and the log-sum-exp of every row, bf16 or
// f16 in and out, FP32 accumulation. Dimensions batch, heads (of q), kv_heads (fewer: GQA / MQA;
// query head h reads key / value head h / (heads / kv_heads)), q_len, kv_len, head_dim; layout
// "full" or "causal" (bottom-right aligned, as FlashAttention: key j is visible to query i when
// j <= i + kv_len - q_len; a row that sees no key has O = 0 and log-sum-exp +inf). q, k, v and o are
// N-dimensional operands (batch, sequence, head, head_dim) whose strides are the caller's, so
// (B, S, H, D) and (B, H, S, D) storage are the same op; lse is FP32, (batch, heads, q_len)
// contiguous. The scale defaults to 0, which the kernels read as 1 / sqrt(head_dim).
//
// The tuner's "attention" runner (tuner/attention_op.cpp) fills, checks and compares on the GPU
// against an FP64 reference (attention_check.cu states the error bound); the runtime launches it
// as an op of plain buffers.
#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <tuple>

#include "attention/attention_varlen.h"
#include "ktune/error.h"
#include "ktune/family.h"

namespace ktune {

namespace {

enum Dim { kBatch, kHeads, kKvHeads, kQLen, kKvLen, kHeadDim, kPageSize, kPages }; // the last two: attention_paged
constexpr int kTotalQ = 6, kTotalKv = 7; // attention_varlen's last two: the packed tokens of q and of k / v

bool causal(const Problem& p) { return p.layout == "causal"; }
int f16_code(DType d) { return d == DType::f16 ? 1 : 0; }

// Query / key pairs that the mask leaves visible, over one (sequence, head) of sq queries and skv keys.
double visible_pairs(int64_t sq, int64_t skv, bool is_causal) {
  if (!is_causal) return double(sq) * double(skv);
  // Row i sees min(skv, max(0, i + skv - sq + 1)) keys.
  double total = 0;
  const int64_t off = skv - sq;
  // Rows [lo, hi) see i + off + 1 keys (an arithmetic run), rows from hi on see all of them.
  const int64_t lo = std::max<int64_t>(0, -off);     // first row that sees a key
  const int64_t hi = std::min<int64_t>(sq, skv - off); // first row that sees every key
  if (hi > lo) total += (double(lo + off + 1) + double(hi - 1 + off + 1)) * double(hi - lo) / 2;
  if (sq > std::max(hi, lo)) total += double(sq - std::max(hi, lo)) * double(skv);
  return total;
}
double visible_pairs(const Problem& p) { return visible_pairs(p.dims[kQLen], p.dims[kKvLen], causal(p)); }

Family common(const std::string& name, const std::string& source, const std::string& about,
              const std::string& op = "attention") {
  Family f(name, "attention/" + source);
  f.op(op).dtypes({DType::bf16, DType::f16}).describe(about);
  f.restrict("the grid's y and z extents hold heads and batch", {}, [](const Config&, const Problem& p, const DeviceInfo&) {
    return p.dims[kHeads] <= 65535 && p.dims[kBatch] <= 65535;
  });
  return f;
}

// The varlen twin of a prefill family (op attention_varlen, packed sequences): the same kernel body
// and parameters, its name and kernels with the suffix _varlen.
std::string suffix(bool varlen) { return varlen ? "_varlen" : ""; }
const char* prefill_op(bool varlen) { return varlen ? "attention_varlen" : "attention"; }
std::string varlen_about(bool varlen, const std::string& about) {
  return varlen ? about + " (packed sequences of different lengths)" : about;
}

// Shared memory of an attention_fa2 config: the Q tile and STAGES tiles of K and of V.
int64_t fa2_smem(const Config& c, const Problem& p) {
  return (int64_t(c["BM"]) + 2 * int64_t(c["STAGES"]) * c["BN"]) * p.dims[kHeadDim] * 2;
}

Family fa2_family(bool varlen) {
  Family f = common("attention_fa2" + suffix(varlen), "attention_fa2.cu",
                    varlen_about(varlen, "FlashAttention-2 on mma.sync: BM query rows a block split over WARPS warps, "
                                         "BN keys a step, P from registers, K/V in STAGES buffers"),
                    prefill_op(varlen));
  f.min_arch(80);
  f.param("BM", {64, 128}, "query rows a block")
      .param("WARPS", {4, 8}, "warps a block (each owns BM / WARPS rows)")
      .param("BN", {32, 64, 128}, "keys a step")
      .param("STAGES", {1, 2}, "K / V buffers (2: the next tile loads during this one)");
  f.restrict("head_dim is 64, 128, 192 or 256 (whole 8-chunk rows for the swizzle)", {},
             [](const Config&, const Problem& p, const DeviceInfo&) {
               return p.dims[kHeadDim] % 64 == 0 && p.dims[kHeadDim] <= 256;
             })
      .restrict("16-byte rows and pointers (cp.async, 16-byte stores): alignment class 16", {},
                [](const Config&, const Problem& p, const DeviceInfo&) { return p.align == 16; })
      .restrict("every warp owns whole 16-row MMA tiles", {"BM", "WARPS"},
                [](const Config& c, const Problem&, const DeviceInfo&) { return c["BM"] % (16 * c["WARPS"]) == 0; })
      .restrict("the O and S accumulators fit the registers (at most 192 floats a thread)", {"BM", "WARPS", "BN"},
                [](const Config& c, const Problem& p, const DeviceInfo&) {
                  const int64_t mt = c["BM"] / (16 * c["WARPS"]);
                  return mt * (p.dims[kHeadDim] / 2 + c["BN"] / 2) <= 192;
                })
      .restrict("the tiles fit shared memory", {"BM", "BN", "STAGES"},
                [](const Config& c, const Problem& p, const DeviceInfo& d) {
                  return fa2_smem(c, p) <= d.max_smem_per_block_optin;
                })
      .restrict("the grid's x extent holds the query blocks", {"BM"}, [](const Config& c, const Problem& p, const DeviceInfo&) {
        return (p.dims[kQLen] + c["BM"] - 1) / c["BM"] <= INT32_MAX;
      });
  f.kernels([varlen](const Config& c, const Problem& p) {
    return std::vector<std::string>{"attention_fa2" + suffix(varlen) + "<" + std::to_string(f16_code(p.dtype)) + "," +
                                    std::to_string(p.dims[kHeadDim]) + "," + std::to_string(c["BM"]) + "," +
                                    std::to_string(c["BN"]) + "," + std::to_string(c["WARPS"]) + "," +
                                    std::to_string(c["STAGES"]) + "," + (causal(p) ? "1" : "0") + ">"};
  });
  f.launch([](const Config& c, const Problem& p) {
    LaunchStep s;
    s.grid[0] = unsigned(std::max<int64_t>(1, (p.dims[kQLen] + c["BM"] - 1) / c["BM"]));
    s.grid[1] = unsigned(p.dims[kHeads]);
    s.grid[2] = unsigned(p.dims[kBatch]);
    s.block[0] = unsigned(32 * c["WARPS"]);
    s.dynamic_smem = unsigned(fa2_smem(c, p));
    return LaunchPlan{{s}, 0, {}};
  });
  // FlashAttention-2's own choice where it fits (128 x 64, 4 warps, for head_dim <= 128), 64 x 64
  // with 4 warps for the larger heads: valid for every problem the family serves.
  f.defaults([](const Problem& p, const DeviceInfo&) {
    Config c;
    c.set("BM", p.dims[kHeadDim] <= 128 ? 128 : 64);
    c.set("WARPS", 4);
    c.set("BN", 64);
    c.set("STAGES", 1);
    return c;
  });
  return f;
}

// The head dim the tiles of attention_wgmma and attention_decode hold: whole 64-column blocks
// (128-byte swizzle, 8-chunk rows). Any other head dim (40, 80, 96, 160, ...) runs as the next
// multiple of 64, the columns past the operands' own loaded as zeros (TMA's fill, cp.async's zero
// fill): they add nothing to Q K^T and give O columns that are not stored.
int64_t padded_head_dim(const Problem& p) { return (p.dims[kHeadDim] + 63) / 64 * 64; }

// Shared memory of an attention_wgmma config: the Q tile, STAGES tiles of K and of V and with OSTORE
// an O tile, plus the 1024 bytes the kernel may skip to align its tiles for the 128-byte swizzle.
int64_t wgmma_smem(const Config& c, const Problem& p) {
  const int64_t rows = 64 * int64_t(c["CWG"]) * (1 + (c.has("OSTORE") ? c["OSTORE"] : 0));
  return (rows + 2 * int64_t(c["STAGES"]) * c["BN"]) * padded_head_dim(p) * 2 + 1024;
}
// The config's tiles fit a block's shared memory (64 bytes of static mbarriers beside them); with
// OCC 2, two blocks' fit sm_90's 228 KiB an SM, 1 KiB of it reserved for each block.
bool wgmma_fits_block(const Config& c, const Problem& p, const DeviceInfo& d) {
  return wgmma_smem(c, p) + 64 <= d.max_smem_per_block_optin;
}
bool wgmma_fits_occupancy(const Config& c, const Problem& p) {
  return c["OCC"] == 1 || 2 * (wgmma_smem(c, p) + 64 + 1024) <= 228 * 1024;
}
// c's tiles, its O tile with them where OSTORE, fit a block and the blocks an SM OCC asks for.
bool wgmma_fits(const Config& c, const Problem& p, const DeviceInfo& d) {
  return wgmma_fits_block(c, p, d) && wgmma_fits_occupancy(c, p);
}

// SPLIT: the runs of whole BN-key tiles a query tile's keys split into, ceil(tiles / SPLIT) tiles
// each (fewer than SPLIT runs where the tiles do not divide so), as attention_wgmma.cu's
// wgmma_splits counts them; 1 without SPLIT (configs recorded before it).
int64_t wgmma_splits(const Config& c, const Problem& p) {
  const int64_t split = c.has("SPLIT") ? c["SPLIT"] : 1;
  if (split <= 1) return 1;
  const int64_t tiles = (p.dims[kKvLen] + c["BN"] - 1) / c["BN"], run = (tiles + split - 1) / split;
  return run > 0 ? (tiles + run - 1) / run : 1;
}
// The default rule's shortest split of attention_wgmma, in keys (the shortest measured: 4 steps of 128).
constexpr int64_t kKeysASplit = 512;
// SPLIT's domain.
const std::vector<int> kWgmmaSplits{1, 2, 3, 4, 6, 8};
// Whether kv keys in steps of bn, split `split` ways, give each split kKeysASplit keys or more.
bool wgmma_splits_long_enough(int64_t kv, int64_t bn, int64_t split) {
  const int64_t steps = (kv + bn - 1) / bn;
  return (steps + split - 1) / split * bn >= kKeysASplit;
}

// Up to this many warps of rows, the combine step runs blocks of one warp.
constexpr int64_t kCombineOneWarpBlocks = 1024;

// The combine step after a split-KV kernel (attention_combine.cuh, the family's second kernel): a
// warp merges 32 / min(32, d / 4) of the (b, h, i) rows (d the tiles' head dim), a programmatic
// dependent that waits for the splits' partials in the plan's workspace of `workspace` bytes. A
// block is one warp where the warps are few (a decode step's rows: their loads spread over as many
// SMs as there are rows, as the step's first form, a block a row, spread them), else 4.
void add_combine_step(LaunchPlan& plan, const Problem& p, int64_t workspace) {
  const int64_t rows = p.dims[kBatch] * p.dims[kHeads] * p.dims[kQLen];
  const int64_t rows_a_warp = 32 / std::min<int64_t>(32, padded_head_dim(p) / 4), warps = (rows + rows_a_warp - 1) / rows_a_warp;
  const int64_t per = warps <= kCombineOneWarpBlocks ? 1 : 4;
  LaunchStep m;
  m.kernel = 1;
  m.grid[0] = unsigned((warps + per - 1) / per);
  m.block[0] = unsigned(32 * per);
  m.overlap_previous = true;
  plan.steps.push_back(m);
  plan.workspace_bytes = size_t(workspace);
}

// The most workspace a split-KV config may ask for (attention_wgmma's SPLIT, attention_decode's CHUNK).
constexpr int64_t kMaxSplitWorkspace = int64_t(1) << 30;

// The splits' partials: O_s (FP32, the tiles' head dim) and (m_s, l_s) of every (b, h, i) row.
int64_t wgmma_workspace(const Config& c, const Problem& p) {
  const int64_t splits = wgmma_splits(c, p);
  if (splits == 1) return 0;
  return splits * p.dims[kBatch] * p.dims[kHeads] * p.dims[kQLen] * (padded_head_dim(p) + 2) * 4;
}

// The wgmma grid's query blocks of one (batch, head): 64 x CWG rows each.
int64_t wgmma_query_blocks(const Config& c, const Problem& p) {
  const int64_t bm = 64 * c["CWG"];
  return std::max<int64_t>(1, (p.dims[kQLen] + bm - 1) / bm);
}
// Its tiles: (query block, head, batch).
int64_t wgmma_tiles(const Config& c, const Problem& p) {
  return wgmma_query_blocks(c, p) * p.dims[kHeads] * p.dims[kBatch];
}

// The wgmma grid's x extent: its query blocks (with SPLIT, each once a split), or with PERSIST every
// (query block, head, batch) tile (the launch caps it at the blocks the GPU holds at once).
int64_t wgmma_x_extent(const Config& c, const Problem& p) {
  return c["PERSIST"] ? wgmma_tiles(c, p) : wgmma_query_blocks(c, p) * wgmma_splits(c, p);
}

// Where a split can pay: one block a tile leaves SMs idle (no more tiles than the SMs hold at
// once, OCC an SM). Past one wave a split only evens out the last wave, and that did not pay where
// measured: exhaustive over SPLIT 1-4 at 140-256 tiles (causal prompts of 640 and 768 tokens, T5's
// 16 x 12 x 128 x 512 cross-attention, a full 1024-token prompt; H200,
// docs/runs/2026-12-05-h200-attention-neighbours.md section 3) every split ran 2.3-3.9x one block
// a tile at its key step (3.1-4.7x the best config, persistent), and at 32-64 tiles every split
// grid of more than one wave ran 1.05-1.32x the best split
// (docs/runs/2026-12-04-h200-attention-split.md section 3). The tuner's space leaves the rest out
// (a 4096-token causal prompt of 32 heads, 1024 tiles: 540 of its 846 configs). No device
// (sm_count 0): no bound.
bool wgmma_split_can_pay(const Config& c, const Problem& p, const DeviceInfo& dev) {
  return dev.sm_count <= 0 || wgmma_tiles(c, p) <= int64_t(dev.sm_count) * c["OCC"];
}

// The most query rows attention_decode serves (decode and speculative decoding: its heads packed
// into the MMA rows).
constexpr int64_t kDecodeMaxQLen = 64;

// The default rule's key step with two or three consumers: 80 keys above head dim 128, 128 below it
// or causal, FlashAttention-3's 176 at full head dim 128; up to 1024 keys, of that and the steps 64
// to 128 the one that pads the keys least, the later of equals (1000 keys: 112, 1008 padded; 256
// and 1024 keys: 128).
int64_t wgmma_rule_step(const Problem& p) {
  const int64_t d = padded_head_dim(p), kv = p.dims[kKvLen];
  auto padded = [](int64_t n, int64_t tile) { return (n + tile - 1) / tile * tile; };
  int64_t bn = d > 128 ? 80 : d < 128 || causal(p) ? 128 : 176;
  if (d <= 128 && kv <= 1024)
    for (int64_t step = 64; step <= 128; step += 16)
      if (padded(kv, step) <= padded(kv, bn)) bn = step;
  return bn;
}

// The default rule's OVERLAP for c's consumers and turns: off at head dim 64 with turns for three
// consumers or causal problems (FlashAttention-3's order), on elsewhere (the rule's comment below).
int wgmma_rule_overlap(const Config& c, const Problem& p) {
  return padded_head_dim(p) == 64 && c["PINGPONG"] && (c["CWG"] == 3 || causal(p)) ? 0 : 1;
}

Family wgmma_family(bool varlen) {
  Family f = common("attention_wgmma" + suffix(varlen), "attention_wgmma.cu",
                    varlen_about(varlen, "FlashAttention-3 on sm_90a: a TMA producer warpgroup and CWG consumer "
                                         "warpgroups of 64 query rows, wgmma for Q K^T and P V with P from registers, "
                                         "BN keys a step, STAGES K/V buffers"),
                    prefill_op(varlen));
  f.min_arch(90).arch_specific();
  f.param("CWG", {1, 2, 3}, "consumer warpgroups (64 query rows each)")
      .param("BN", {64, 80, 96, 112, 128, 144, 160, 176}, "keys a step")
      .param("STAGES", {2, 3}, "K / V buffers in the TMA ring")
      .param("OVERLAP", {0, 1}, "1: S of the next key tile and the softmax overlap P V (that S beside the packed P in registers)")
      .param("PINGPONG", {0, 1}, "1: the consumers take turns issuing their GEMMs (named barriers), one's softmax under another's GEMMs")
      .param("PERSIST", {0, 1},
             "1: one block an SM walks the tiles; the next tile's Q and K / V load while this one's O is stored")
      .param("OCC", {1, 2}, "blocks an SM the registers are capped for (2: one consumer warpgroup)")
      .param("OSTORE", {0, 1}, "1: a persistent block's O staged in shared memory of its own and stored by TMA")
      .param("SPLIT", kWgmmaSplits,
             "the keys of a query tile split over this many blocks (split-KV), merged by a combine step: query "
             "tiles too few to fill the SMs over many keys (a chunked prefill)");
  // The same tiles where O by TMA or the split is not valid (a varlen problem lent a dense entry, a
  // head dim whose O tile does not fit, keys too few to split): O stored from registers, one block a tile.
  f.generalize([](const Config& c) {
    std::vector<Family::Setting> s;
    if (c["OSTORE"]) s.push_back({{"OSTORE", 0}});
    if (c["SPLIT"] > 1) s.push_back({{"SPLIT", 1}});
    return Family::variants(c, s);
  });
  // Configs recorded before PINGPONG, PERSIST, OCC, OSTORE or SPLIT ran without them.
  f.upgrade([](Config c) {
    if (!c.has("PINGPONG")) c.set("PINGPONG", 0);
    if (!c.has("PERSIST")) c.set("PERSIST", 0);
    if (!c.has("OCC")) c.set("OCC", 1);
    if (!c.has("OSTORE")) c.set("OSTORE", 0);
    if (!c.has("SPLIT")) c.set("SPLIT", 1);
    return c;
  });
  // A multiple of 8: whole 16-byte rows for TMA and for the O stores' 8-column steps.
  f.restrict("head_dim a multiple of 8 up to 256 (others than 64, 128, 192, 256 padded with zeros to whole "
             "64-column blocks)",
             {}, [](const Config&, const Problem& p, const DeviceInfo&) {
               return p.dims[kHeadDim] % 8 == 0 && p.dims[kHeadDim] <= 256;
             })
      .restrict("TMA: 16-byte aligned strides and pointers (alignment class 16)", {},
                [](const Config&, const Problem& p, const DeviceInfo&) { return p.align == 16; })
      // attention_varlen's coordinates are tokens, which its validation bounds the same way.
      .restrict("TMA coordinates are 32-bit", {}, [varlen](const Config&, const Problem& p, const DeviceInfo&) {
        return varlen || (p.dims[kQLen] <= INT32_MAX - 256 && p.dims[kKvLen] <= INT32_MAX - 256);
      })
      // ptxas (sm_90a, CUDA 13.0) spills nothing up to these: head dim 128 with BN 176 and OVERLAP at 240
      // registers, 128 x 80 with three consumers at 160 (BN 96 and OVERLAP spill 80 bytes there).
      // PERSIST holds a tile's coordinates and the ring's position across tiles: at the largest tiles
      // (causal head dim 128 with BN >= 144, three consumers with BN >= 96, head dim 256) ptxas
      // spills 24 to 100 bytes of them, read once a tile; such configs are timed as any other (at
      // head dim 256, 128 x 80 persistent with its spills was the fastest causal config measured).
      .restrict("O, S and P (packed, live beside the next S with OVERLAP) fit a consumer's registers (240 with up to "
                "2 consumers, 160 with 3)",
                {"CWG", "BN", "OVERLAP"}, [](const Config& c, const Problem& p, const DeviceInfo&) {
                  const int64_t live = padded_head_dim(p) / 2 + c["BN"] / 2 + c["OVERLAP"] * c["BN"] / 4;
                  return live <= (c["CWG"] == 3 ? 128 : 196);
                })
      .restrict("the tiles fit shared memory", {"CWG", "BN", "STAGES", "OSTORE"}, wgmma_fits_block)
      // One block a tile stores O through its Q buffer already; varlen's maps would not stop a
      // box at its sequence's end (the next sequence's rows follow).
      .restrict("O by TMA: persistent blocks, not varlen", {"OSTORE", "PERSIST"},
                [varlen](const Config& c, const Problem&, const DeviceInfo&) {
                  return !c["OSTORE"] || (c["PERSIST"] && !varlen);
                })
      .restrict("two blocks an SM: one consumer warpgroup, and two blocks' tiles fit an SM's shared memory",
                {"OCC", "CWG", "BN", "STAGES", "OSTORE"}, [](const Config& c, const Problem& p, const DeviceInfo&) {
                  return c["OCC"] == 1 || (c["CWG"] == 1 && wgmma_fits_occupancy(c, p));
                })
      .restrict("turns need two consumers or more", {"CWG", "PINGPONG"},
                [](const Config& c, const Problem&, const DeviceInfo&) { return !c["PINGPONG"] || c["CWG"] >= 2; })
      .restrict("split-KV: one block a tile (PERSIST 0), not varlen, into 2 runs of key tiles or more, its partials "
                "within 1 GiB",
                {"SPLIT", "PERSIST", "BN"}, [varlen](const Config& c, const Problem& p, const DeviceInfo&) {
                  return c["SPLIT"] == 1 || (!varlen && !c["PERSIST"] && wgmma_splits(c, p) >= 2 &&
                                             wgmma_workspace(c, p) <= kMaxSplitWorkspace);
                })
      .restrict("split-KV where it can pay: the query tiles at most one wave of the SMs' blocks (OCC an SM)",
                {"SPLIT", "CWG", "OCC"}, [](const Config& c, const Problem& p, const DeviceInfo& dev) {
                  return c["SPLIT"] == 1 || wgmma_split_can_pay(c, p, dev);
                })
      .restrict("the grid's x extent holds the query blocks (PERSIST: every tile; SPLIT: each once a split)",
                {"CWG", "PERSIST", "SPLIT", "BN"},
                [](const Config& c, const Problem& p, const DeviceInfo&) { return wgmma_x_extent(c, p) <= INT32_MAX; });
  f.kernels([varlen](const Config& c, const Problem& p) {
    std::vector<std::string> k{"attention_wgmma" + suffix(varlen) + "<" + std::to_string(f16_code(p.dtype)) + "," +
                                    std::to_string(padded_head_dim(p)) + "," + std::to_string(c["BN"]) + "," +
                                    std::to_string(c["CWG"]) + "," + std::to_string(c["STAGES"]) + "," +
                                    std::to_string(c["OVERLAP"]) + "," + std::to_string(c["PINGPONG"]) + "," +
                                    (causal(p) ? "1" : "0") + "," + std::to_string(c["PERSIST"]) + "," +
                                    std::to_string(c["OCC"]) + "," + std::to_string(c["OSTORE"]) + "," +
                                    std::to_string(c["SPLIT"]) + ">"};
    if (wgmma_splits(c, p) > 1) // the splits merged; PAD 1: the tiles' zero columns are not stored
      k.push_back("attention_wgmma_combine<" + std::to_string(f16_code(p.dtype)) + "," +
                  std::to_string(padded_head_dim(p)) + "," + std::to_string(c["BN"]) + "," + std::to_string(c["SPLIT"]) +
                  (padded_head_dim(p) != p.dims[kHeadDim] ? ",1>" : ",0>"));
    return k;
  });
  f.launch([varlen](const Config& c, const Problem& p) {
    LaunchStep s;
    const int64_t bm = 64 * c["CWG"];
    s.grid[0] = unsigned(wgmma_x_extent(c, p));
    s.grid[1] = unsigned(c["PERSIST"] ? 1 : p.dims[kHeads]);
    s.grid[2] = unsigned(c["PERSIST"] ? 1 : p.dims[kBatch]);
    s.persistent = c["PERSIST"] != 0; // the launch caps the grid at the blocks resident at once
    s.block[0] = unsigned(128 * (c["CWG"] + 1));
    s.dynamic_smem = unsigned(wgmma_smem(c, p));
    // q, k and v by TMA: boxes of (1, rows, 1, 64) over (batch, sequence, head, head_dim), or
    // (rows, 1, 64) over varlen's packed (token, head, head_dim); o (not varlen) a consumer's 64 rows.
    for (int operand = 0; operand < (varlen ? 3 : 4); ++operand) {
      LaunchStep::TmaOperand m;
      m.operand = operand;
      const unsigned rows = unsigned(operand == 0 ? bm : operand == 3 ? 64 : c["BN"]);
      m.box = varlen ? std::vector<unsigned>{rows, 1, 64} : std::vector<unsigned>{1, rows, 1, 64};
      m.elem_bytes = 2;
      m.swizzle_bytes = 128;
      s.tma_maps.push_back(m);
    }
    LaunchPlan plan{{s}, 0, {}};
    if (wgmma_splits(c, p) > 1) add_combine_step(plan, p, wgmma_workspace(c, p));
    return plan;
  });
  // FlashAttention-3's bf16 tiles (128 x 176 non-causal, 128 x 128 causal at head dim 128; 128 x 80
  // beyond), with its intra-warpgroup overlap, and turns between the consumers up to head dim 128;
  // persistent blocks for causal problems. What exhaustive tunes chose on an H200
  // (docs/runs/2026-11-29-h200-attention-persist.md): 128 x 128 with OVERLAP and PINGPONG on all nine
  // causal rows at head dim <= 128 of configs/suites/attention.json, 128 x 176 / 128 x 128 on the
  // full ones; the best persistent config 0.97x to 1.15x the best one-block-a-tile one over the
  // causal rows (the shorter, the more it gains), 0.99x to 1.01x over the full ones. At head dim
  // 256, turns or not are within 1 % of each other (persistent 128 x 80 with OVERLAP).
  // Short key sequences (up to 1024 keys at head dim <= 128) take the step of 64 to 128 keys that
  // pads the fewest (ties: the larger), and persistent blocks wherever a tile has at most 16 key
  // steps: there a tile's Q load and O store weigh on it, and a persistent block does them under
  // the previous or next tile's GEMMs. Exhaustive tunes of the full head-dim-64 rows of
  // configs/suites/attention-prefill-check.json (H200, docs/runs/2026-11-30-h200-attention-short.md):
  // ViT-L's 197 tokens 128 x 112 persistent 1.50x the 128 x 128 one-block-a-tile config, BERT's
  // 512 128 x 128 persistent 1.24x; SDXL's 4096 (32 steps) persistent 1.01x, as the long full rows.
  // At head dim 64 (or less, padded) without a mask, three consumers (192 query rows) or two: a
  // third warpgroup's softmax hides more of the GEMMs (half as long as at 128), so a 192-row tile
  // takes less than 1.5x a 128-row tile's time, but the tiles come in rounds over the SMs (one
  // persistent block an SM), and the last round's idle SMs count. Three where 1.5x their rounds
  // come to less than 1.16x two's rounds: exhaustive tunes of 12 full head-dim-64 shapes (H200,
  // docs/runs/2026-11-30-h200-attention-d64-probes.md section 4) put a 192-row tile at 1.14-1.20x
  // the 128-row one's time on every shape, and this test picked the faster consumer count on all
  // 12 (SDXL's 4096: two consumers' 5 rounds against three's 4, two 3 % faster; Stable Diffusion
  // 1.5's: 4 against 3, three 3 % faster). It replaced a test of padding alone (192-row tiles at
  // most 1/8 more rows), which chose three at SDXL and at BERT-base's 512 x 16 x 12, 4 % slower there.
  // At head dim 64 with one key step (up to 128 keys), a tile is little more than its loads and its
  // store: one consumer, two blocks an SM (OCC 2), so that two tiles' loads are in flight on an SM.
  // Exhaustive tunes (H200, docs/runs/2026-11-30-h200-attention-occ.md): BERT's 128 tokens 1.04x the
  // best of two or three consumers; with two key steps or more it lost (ViT's 197 0.90x, BERT's
  // 512 0.93x, 8 x 512 causal at head dim 128 0.95x; 1024 and 2048 causal at 64 even). Only with
  // one query tile too (up to 128 queries): cross-attention to 77 text tokens with 1024-4096
  // queries (Stable Diffusion's, SDXL's; docs/runs/2026-11-30-h200-attention-d64-probes.md section
  // 6) ran 0.81-0.94x the best config with it at 3 of 5 shapes, where the consumer rule's two or
  // three consumers ran 0.99-1.0x, and 0.97-1.0x at the other two.
  // With O stored by TMA (OSTORE), persistent blocks pay up to 64 key steps a tile, causal or not,
  // and not beyond: exhaustive tunes of 18 rows (H200, docs/runs/2026-11-30-h200-attention-ostore.md
  // section 6) read persistent with OSTORE 0.97-0.98x the one-block-a-tile time at 4096 full, 0.97x
  // at 8192 causal, but 1.02-1.05x at 16384 causal. At head dim 64 with turns, OVERLAP 0 (FA3's
  // order: the softmax outside the GEMMs, under the other consumer's) was faster on 8 of those 9
  // rows' best configs (three consumers, or causal; two consumers without a mask: see OVERLAP below).
  // The configs one choice away from c where the rule has misjudged shapes it was not fit on; the
  // runtime's first use times them beside the default (and the lender) at a shape nobody tuned, and
  // the tuner's warm start tries them early. Each is a choice the rule makes from a threshold that a
  // probe of other shapes has moved before (H200): the other key step (64 against 128 keys, 80
  // against 64 above head dim 128: at 256-token prompts 1 x 128 persistent beat the rule's 1 x 64
  // by 2 %; docs/runs/2026-12-04-h200-attention-split.md section 5); one consumer with two blocks
  // an SM against two consumers at the rule's step (the short-prompt rule's boundary: 1.07-1.20x
  // either way at 128-1024 tokens, same section), and three consumers against two at head dim 64
  // (SDXL's 4096 full: two 0.96x cuDNN, three 0.94x; docs/runs/2026-11-30-h200-attention-d64-probes.md);
  // persistent against one block a tile (1.03x at a 128-token prompt); a split one step smaller,
  // or, unsplit with two or three consumers, the keys split 2 ways (runs of kKeysASplit keys or
  // more, as the rule's), which the space keeps only up to one wave of tiles. Settled as the rule
  // settles them: one consumer takes no turns, two blocks an SM only with one consumer and where
  // two blocks fit (else one), OVERLAP by head dim 64's rule (on elsewhere), O by TMA wherever a
  // persistent block's O tile fits. None where attention_decode serves the shape (q_len <= 64: a
  // wgmma tile of 64 rows a head is mostly padding there, whichever its other choices).
  f.neighbors([varlen](const Config& c, const Problem& p, const DeviceInfo& dev) {
    std::vector<Config> out;
    if (!varlen && p.dims[kQLen] <= kDecodeMaxQLen) return out;
    const int64_t d = padded_head_dim(p);
    auto store_by_tma = [&](Config& x) {
      x.set("OSTORE", x["PERSIST"] && !varlen ? 1 : 0);
      if (x["OSTORE"] && !wgmma_fits(x, p, dev)) x.set("OSTORE", 0);
    };
    auto settle = [&](Config x) {
      if (x["CWG"] == 1) x.set("PINGPONG", 0);
      else x.set("OCC", 1);
      if (x["SPLIT"] > 1) x.set("PERSIST", 0);
      x.set("OVERLAP", wgmma_rule_overlap(x, p));
      store_by_tma(x);
      if (x["OCC"] == 2 && !wgmma_fits_occupancy(x, p)) {
        x.set("OCC", 1);
        store_by_tma(x);
      }
      return x;
    };
    auto add = [&](std::initializer_list<std::pair<const char*, int>> changes) {
      Config x = c;
      for (const auto& [name, v] : changes) x.set(name, v);
      x = settle(std::move(x));
      if (x["SPLIT"] > 1 && !wgmma_split_can_pay(x, p, dev)) return; // not in the space: past one wave of tiles
      if (x != c && std::find(out.begin(), out.end(), x) == out.end()) out.push_back(std::move(x));
    };
    add({{"BN", d > 128 ? (c["BN"] == 80 ? 64 : 80) : (c["BN"] == 128 ? 64 : 128)}});
    if (c["CWG"] == 1) add({{"CWG", 2}, {"BN", int(wgmma_rule_step(p))}, {"PINGPONG", d > 128 ? 0 : 1}});
    else add({{"CWG", 1}, {"OCC", 2}, {"BN", 64}});
    if (d == 64) add({{"CWG", c["CWG"] == 3 ? 2 : 3}, {"PINGPONG", 1}});
    if (c["SPLIT"] == 1) {
      add({{"PERSIST", 1 - c["PERSIST"]}});
      // A persistent config's step may be 16 keys short of the rule's for its O tile; a split
      // block has none (the rule splits at the step before that).
      const int64_t bn = c["OSTORE"] ? wgmma_rule_step(p) : c["BN"];
      if (!varlen && c["CWG"] >= 2 && wgmma_splits_long_enough(p.dims[kKvLen], bn, 2))
        add({{"SPLIT", 2}, {"BN", int(bn)}});
    } else {
      const auto at = std::find(kWgmmaSplits.begin(), kWgmmaSplits.end(), c["SPLIT"]);
      if (at != kWgmmaSplits.begin() && at != kWgmmaSplits.end()) add({{"SPLIT", *(at - 1)}});
    }
    return out;
  });
  // This rule against the one before, config against config: 0.94-0.98x the time on 11 of the 18
  // rows, the same config on the other 7.
  f.defaults([varlen](const Problem& p, const DeviceInfo& dev) {
    const int64_t d = padded_head_dim(p), kv = p.dims[kKvLen], q = p.dims[kQLen];
    Config c;
    // Rounds of tiles over the SMs with 64 x cwg query rows a tile: the persistent grid's tiles
    // (varlen: from the packed tokens, each sequence's last tile taken as half full, not the
    // grid's bound of every sequence at the longest).
    auto rounds = [&](int cwg) {
      const int64_t bm = 64 * cwg;
      Config x;
      x.set("CWG", cwg);
      const int64_t tiles = varlen ? p.dims[kHeads] * ((p.dims[kTotalQ] + p.dims[kBatch] * bm / 2 + bm - 1) / bm)
                                   : wgmma_tiles(x, p);
      return (tiles + dev.sm_count - 1) / std::max(1, dev.sm_count);
    };
    c.set("CWG", d == 64 && !causal(p) && 150 * rounds(3) < 116 * rounds(2) ? 3 : 2);
    const int64_t bn = wgmma_rule_step(p);
    c.set("BN", bn);
    c.set("STAGES", 2);
    c.set("PINGPONG", d > 128 ? 0 : 1);
    // Persistent blocks where a tile has at most 64 key steps (the rule's comment above).
    auto persists = [&](int64_t step) { return (kv + step - 1) / step <= 64; };
    c.set("PERSIST", persists(bn) ? 1 : 0);
    c.set("OCC", 1);
    if (d == 64 && kv <= 128 && q <= 128) c.set("CWG", 1), c.set("PINGPONG", 0), c.set("OCC", 2);
    // A short causal prompt at head dim 128 (up to 1024 keys, the queries more than half of them: not
    // a chunk over a cache, which SPLIT below serves) whose 128-row tiles come to one round over the
    // SMs or less leaves SMs idle with two consumers: one consumer, two blocks an SM, steps of 64
    // keys (the two blocks' tiles and O tiles fit then). Exhaustive over the tile choices at
    // 128-512 token prompts of 28-64 heads (H200, docs/runs/2026-12-04-h200-attention-split.md
    // section 5): 1.00-1.03x the best config at all 5, where two consumers ran 1.07-1.20x; at 1024
    // tokens (two rounds) two consumers stay the best.
    if (causal(p) && d == 128 && kv <= 1024 && 2 * q > kv && rounds(2) <= 1)
      c.set("CWG", 1), c.set("BN", 64), c.set("PINGPONG", 0), c.set("OCC", 2);
    // OVERLAP at head dim 64 with turns: without (FA3's order) for three consumers and for causal
    // problems, with it for two consumers and no mask (the same 12 tunes: 11 of 12 shapes faster
    // with it at 128 x 128, by up to 4.5 %; three consumers faster without on all 12).
    c.set("OVERLAP", wgmma_rule_overlap(c, p));
    // A persistent block stores O by TMA wherever its O tile fits beside the others. Exhaustive
    // A/B, config by config (H200, docs/runs/2026-11-30-h200-attention-ostore.md): 0.83x the time at
    // 8 x 512 causal (head dim 128) and BERT's 128 tokens, 0.92-0.96x at 197-1024 tokens and at
    // 4096 causal, 0.99x at SDXL's 4096 full; one config of 35 slower (1.01x).
    c.set("OSTORE", c["PERSIST"] && !varlen ? 1 : 0);
    // Where the O tile does not fit beside the K / V ring (head dim 128 with 176 keys a step), a
    // step of 16 keys fewer makes room, down to 128 and while the tile keeps at most 64 steps.
    // Tunes of full head-dim-128 problems (H200, docs/runs/2026-11-30-h200-attention-defaults-combine.md
    // section 2): 128 x 160 with OSTORE 0.955-0.970x the time of 128 x 176 without it on 4 of 5
    // shapes (1370-4096 tokens), 1.004x at 8192.
    if (c["OSTORE"] && !wgmma_fits(c, p, dev))
      for (Config x = c; x["BN"] > 128;) {
        x.set("BN", x["BN"] - 16);
        if (!persists(x["BN"])) break;
        if (wgmma_fits(x, p, dev)) {
          c = x;
          break;
        }
      }
    if (c["OSTORE"] && !wgmma_fits(c, p, dev)) c.set("OSTORE", 0);
    // Split-KV where one block a tile leaves SMs idle over many keys (a chunked prefill: 128
    // queries of 32 heads are 32 tiles for 132 SMs, each walking every key): the most splits whose
    // blocks still fit one wave at a block an SM, each split kKeysASplit keys or more, one block a
    // tile with the step chosen before O by TMA took 16 keys off it (no O tile in a split block).
    // Exhaustive over SPLIT 1-8 with 128 x 128 tiles at 9 shapes of 32-64 tiles and 2048-32768
    // keys, causal and full (H200, docs/runs/2026-12-04-h200-attention-split.md): the most splits
    // that fit one wave was the fastest at all 9, 1.32x-3.19x one block a tile (4 splits of 512 keys
    // at 2048 keys 1.20x 2 splits of 1024); 3 splits of 32 tiles (96 blocks) lost to 4 at every one.
    c.set("SPLIT", 1);
    if (!varlen && c["OCC"] == 1) {
      Config x = c;
      x.set("PERSIST", 0), x.set("OSTORE", 0), x.set("BN", bn);
      const int64_t tiles = wgmma_tiles(x, p);
      for (int split : kWgmmaSplits)
        if (split > 1 && tiles * split <= dev.sm_count && wgmma_splits_long_enough(kv, bn, split)) x.set("SPLIT", split);
      if (x["SPLIT"] > 1) c = x;
    }
    return c;
  });
  return f;
}

// Query rows of a decode block: q_len x (heads / kv_heads), GQA heads packed into the MMA's M.
int64_t decode_rows(const Problem& p) { return p.dims[kQLen] * (p.dims[kHeads] / p.dims[kKvHeads]); }
// The grid's y extent: every kv head's blocks of ROWS packed rows.
int64_t decode_row_blocks(const Config& c, const Problem& p) {
  return p.dims[kKvHeads] * ((decode_rows(p) + c["ROWS"] - 1) / c["ROWS"]);
}

// Splits of the key sequence and their workspace for the combine step: O_s of every (b, h, i)
// row, then (m_s, l_s) (CLUSTER 1 takes none: its splits merge in shared memory).
int64_t decode_splits(const Config& c, const Problem& p) {
  return c["CHUNK"] ? std::max<int64_t>(1, (p.dims[kKvLen] + c["CHUNK"] - 1) / c["CHUNK"]) : 1;
}
int64_t decode_workspace(const Config& c, const Problem& p) {
  const int64_t splits = decode_splits(c, p);
  if (splits == 1) return 0;
  return splits * p.dims[kBatch] * p.dims[kHeads] * p.dims[kQLen] * (padded_head_dim(p) + 2) * 4;
}

// Shared memory of an attention_decode config: the Q rows, every warp's K / V ring (the FP32
// merge buffer reuses it, so whichever is larger), every warp's (max, sum) per row, and with
// CLUSTER 1 the block's (max, sum) per row that the cluster's other blocks read.
int64_t decode_smem(const Config& c, const Problem& p) {
  const int64_t d = padded_head_dim(p);
  const int64_t ring = int64_t(c["WARPS"]) * c["STAGES"] * 2 * c["BN"] * d * 2, merge = int64_t(c["ROWS"]) * (d + 8) * 4;
  return c["ROWS"] * d * 2 + std::max(ring, merge) + int64_t(c["WARPS"] + c["CLUSTER"]) * c["ROWS"] * 8;
}

// CLUSTER 1: the splits of a row block in one thread block cluster, 16 at most (the largest
// cluster sm_90 launches; above 8 the non-portable size, runtime/module.cpp).
constexpr int64_t kMaxClusterSplits = 16;

// The default rule's clusters: at most 8 splits, in a grid of at most 9 / 10 of the SMs' blocks
// (an H100 / H200 places 15 clusters of 8 blocks at one block an SM: 120 of its 132 SMs; a grid
// that does not fit waits for a second wave of clusters).
constexpr int64_t kClusterRuleSplits = 8;
bool clusters_fit_one_wave(int64_t blocks, const DeviceInfo& d, int64_t blocks_an_sm = 1) {
  return 10 * blocks <= 9 * int64_t(d.sm_count) * blocks_an_sm;
}

// Bytes of K and V a decode call reads (16-bit elements).
int64_t decode_kv_bytes(const Problem& p) {
  return 2 * p.dims[kBatch] * p.dims[kKvHeads] * p.dims[kKvLen] * p.dims[kHeadDim] * 2;
}

constexpr int64_t kMaxDecodeSplits = 128;
// The split lengths CHUNK takes besides 0 (no split), shortest first.
const std::vector<int> kDecodeChunks = {64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384};

// A split CHUNK > 0 the family serves p with: shorter than the sequence (else CHUNK 0 is the same
// launch), at most kMaxDecodeSplits splits (the (m_s, l_s) the combine step's lanes hold) and kMaxSplitWorkspace.
bool decode_split_fits(const Config& c, const Problem& p) {
  return c["CHUNK"] < p.dims[kKvLen] && decode_splits(c, p) <= kMaxDecodeSplits &&
         decode_workspace(c, p) <= kMaxSplitWorkspace;
}

// The default rule's branch for a small cache over many row blocks (sm_90): K and V of at most
// kSmallCacheBytes, where a call is bound by its blocks' latency rather than the read, and more row
// blocks than 8-way clusters of whole-SM blocks place in one wave (MQA and GQA groups of many heads,
// speculative decoding, batches of a few sequences). The fastest configs of all 7 such shapes
// measured took 16-row blocks and clusters, 5 of them small tiles at 3 or more blocks an SM; the
// branch takes 2 warps of 16-key steps 3 deep (32-key steps 4 deep at head_dim 64) and the most
// splits of 8, 4, 2 (at least 128 keys each) whose grid fits one wave of clusters at that
// occupancy. Those 7: 0.864 -> 0.976x the best config in geomean; 6 shapes no sweep had seen that
// it serves: 0.835 -> 0.972x (docs/runs/2026-11-30-h200-decode-rule-cluster.md section 6). False
// where it does not apply.
constexpr int64_t kSmallCacheBytes = int64_t(16) << 20;
bool small_cache_defaults(Config& c, const Problem& p, const DeviceInfo& d) {
  const int64_t hd = padded_head_dim(p);
  if (d.arch_number() < 90 || hd > 128 || decode_kv_bytes(p) > kSmallCacheBytes || p.dims[kKvLen] < 256) return false;
  Config x;
  x.set("ROWS", 16);
  const int64_t base = p.dims[kBatch] * decode_row_blocks(x, p);
  if (clusters_fit_one_wave(base * kClusterRuleSplits, d)) return false; // the general rule's tiles serve it
  x.set("WARPS", 2), x.set("BN", hd <= 64 ? 32 : 16), x.set("STAGES", hd <= 64 ? 4 : 3), x.set("CLUSTER", 1);
  x.set("ILV", 0);
  // Blocks an SM by shared memory (1 KiB a block reserved); 2 warps of at most 255 registers: 4.
  const int64_t per_sm = std::min<int64_t>(4, (d.max_smem_per_block_optin + 1024) / (decode_smem(x, p) + 1024));
  for (int64_t splits : {8, 4, 2}) {
    if (p.dims[kKvLen] / splits < 128 || !clusters_fit_one_wave(base * splits, d, per_sm)) continue;
    // The shortest chunk that covers the keys in this many splits.
    const auto chunk = std::find_if(kDecodeChunks.begin(), kDecodeChunks.end(),
                                    [&](int ch) { return ch * splits >= p.dims[kKvLen]; });
    if (chunk == kDecodeChunks.end()) continue;
    x.set("CHUNK", *chunk);
    if (decode_split_fits(x, p) && decode_splits(x, p) >= 2) {
      c = x;
      return true;
    }
  }
  return false;
}

// paged: the family of attention_paged (a KV cache in pages, per-sequence lengths), the same
// kernel body with the keys looked up in the block table.
Family decode_family(bool paged) {
  Family f = paged ? common("attention_decode_paged", "attention_decode.cu",
                            "attention_decode over a paged KV cache: each key's page from the block table, each "
                            "sequence's own length",
                            "attention_paged")
                   : common("attention_decode", "attention_decode.cu",
                            "flash-decoding on mma.sync: GQA heads packed into ROWS MMA rows, the keys split over "
                            "blocks (CHUNK keys each, 0: one block) and a combine step, and over WARPS warps a block "
                            "(BN keys a step, STAGES-deep cp.async rings)");
  f.min_arch(80);
  std::vector<int> chunks = {0};
  chunks.insert(chunks.end(), kDecodeChunks.begin(), kDecodeChunks.end());
  f.param("CHUNK", chunks, "keys a block (split-KV); 0: one block reads all")
      .param("ROWS", {16, 32, 64}, "query rows a block (q_len x heads / kv_heads, packed)")
      .param("WARPS", {2, 4, 8}, "warps a block, each with its own keys")
      .param("BN", {16, 32, 64}, "keys a warp step")
      .param("STAGES", {2, 3, 4}, "K / V tiles in each warp's cp.async ring")
      .param("CLUSTER", {0, 1},
             "1: the splits of a row block form a thread block cluster and merge in distributed shared memory "
             "(no workspace, no combine step; sm_90, 2 to 16 splits)");
  // Paged, ILV is 1 only: a split always takes turns (the defaults' comment says why), and an
  // unsplit block walks its keys the same either way.
  const std::string turns = "1: the splits of a row block take turns along the keys by runs of WARPS tiles";
  f.param("ILV", paged ? std::vector<int>{1} : std::vector<int>{0, 1},
          paged ? turns + " (the paged family's one order: a sequence shorter than the capacity is dealt over every split)"
                : turns + " (one stretch of K and V read at a time); 0: each split a contiguous CHUNK");
  // Configs recorded before CLUSTER (their splits merged by a combine step), or before ILV
  // (contiguous splits). Paged, every config reads as ILV 1, the family's one order: unsplit, the
  // same kernel; split, the order that replaced contiguous splits, which ran within 1.3 % of it
  // at the full lengths the tuner times (each shape's best; docs/runs/2026-12-05-h100-decode-turns.md),
  // so an entry tuned or lent with contiguous splits still answers, taking turns.
  f.upgrade([paged](Config c) {
    if (!c.has("CLUSTER")) c.set("CLUSTER", 0);
    if (paged) c.set("ILV", 1);
    else if (!c.has("ILV")) c.set("ILV", 0);
    return c;
  });
  f.restrict("few query rows: q_len <= 64 (decode and speculative decoding)", {},
             [](const Config&, const Problem& p, const DeviceInfo&) { return p.dims[kQLen] <= kDecodeMaxQLen; })
      .restrict("the (batch, head, query) rows below 2^31 (the combine step's grid)", {},
                [](const Config&, const Problem& p, const DeviceInfo&) {
                  return p.dims[kBatch] * p.dims[kHeads] * p.dims[kQLen] <= INT32_MAX;
                })
      .restrict("head_dim a multiple of 8 up to 256 (others than 64, 128, 192, 256 padded with zeros to whole "
                "64-column blocks: whole 8-chunk rows for the swizzle)",
                {}, [](const Config&, const Problem& p, const DeviceInfo&) {
                  return p.dims[kHeadDim] % 8 == 0 && p.dims[kHeadDim] <= 256;
                })
      .restrict("16-byte rows and pointers (cp.async, 16-byte stores): alignment class 16", {},
                [](const Config&, const Problem& p, const DeviceInfo&) { return p.align == 16; })
      .restrict("a split shorter than the sequence (else CHUNK 0 is the same launch), at most 128 splits (the "
                "(max, sum) pairs the combine step's lanes hold) and a workspace of at most 1 GiB",
                {"CHUNK"}, [](const Config& c, const Problem& p, const DeviceInfo&) {
                  return c["CHUNK"] == 0 || decode_split_fits(c, p);
                })
      .restrict("ILV 1: a split (CHUNK > 0: the splits that take turns; paged, ILV is always 1)", {"CHUNK", "ILV"},
                [paged](const Config& c, const Problem&, const DeviceInfo&) {
                  return paged || !c["ILV"] || c["CHUNK"] > 0;
                })
      .restrict("CLUSTER 1: sm_90 and a split into 2 to 16 splits (a cluster's blocks)", {"CHUNK", "CLUSTER"},
                [](const Config& c, const Problem& p, const DeviceInfo& d) {
                  return !c["CLUSTER"] || (d.arch_number() >= 90 && c["CHUNK"] > 0 && decode_splits(c, p) >= 2 &&
                                           decode_splits(c, p) <= kMaxClusterSplits);
                })
      .restrict("no more row blocks than rows need (a block of 16 rows more is all padding)", {"ROWS"},
                [](const Config& c, const Problem& p, const DeviceInfo&) {
                  return c["ROWS"] == 16 || decode_rows(p) > c["ROWS"] / 2;
                })
      .restrict("the grid's y extent holds kv_heads x row blocks", {"ROWS"},
                [](const Config& c, const Problem& p, const DeviceInfo&) {
                  return decode_row_blocks(c, p) <= 65535;
                })
      .restrict("the O and S accumulators fit the registers (at most 160 floats a thread)", {"ROWS", "BN"},
                [](const Config& c, const Problem& p, const DeviceInfo&) {
                  return c["ROWS"] / 16 * (padded_head_dim(p) / 2 + c["BN"] / 2) <= 160;
                })
      .restrict("the tiles fit shared memory", {"ROWS", "WARPS", "BN", "STAGES", "CLUSTER"},
                [](const Config& c, const Problem& p, const DeviceInfo& d) {
                  return decode_smem(c, p) <= d.max_smem_per_block_optin;
                });
  const std::string suffix = paged ? "_paged" : "";
  f.kernels([paged, suffix](const Config& c, const Problem& p) {
    const std::string dt = std::to_string(f16_code(p.dtype)), d = std::to_string(padded_head_dim(p));
    // PAD 1: the operands' head dim is not the tiles' (zero columns loaded, not stored).
    const std::string pad = padded_head_dim(p) != p.dims[kHeadDim] ? ",1" : ",0";
    // The paged kernel's way through the table (attention_decode.cu): a tile in one page where
    // the pages are a multiple of BN, else each key looked up.
    const std::string way = !paged ? "" : p.dims[kPageSize] % c["BN"] == 0 ? ",1" : ",2";
    // CLUSTER 1: the _cl entry point, its cluster of every split compiled in (__cluster_dims__).
    const std::string cl = c["CLUSTER"] ? "," + std::to_string(decode_splits(c, p)) : "";
    // ILV 1 with a split: the entry points' last template argument (0 by default, so left out;
    // unsplit, the two orders are one kernel).
    const std::string ilv = c["ILV"] && c["CHUNK"] > 0 ? ",1" : "";
    std::vector<std::string> k{"attention_decode" + suffix + (c["CLUSTER"] ? "_cl" : "") + "<" + dt + "," + d + "," +
                               std::to_string(c["ROWS"]) + "," + std::to_string(c["WARPS"]) + "," +
                               std::to_string(c["BN"]) + "," + std::to_string(c["STAGES"]) + "," +
                               std::to_string(c["CHUNK"]) + "," + (causal(p) ? "1" : "0") + way + pad + cl + ilv + ">"};
    if (c["CHUNK"] && !c["CLUSTER"])
      k.push_back("attention_decode_combine" + suffix + "<" + dt + "," + d + "," + std::to_string(c["CHUNK"]) + pad + ">");
    return k;
  });
  f.launch([](const Config& c, const Problem& p) {
    LaunchPlan plan;
    const int64_t splits = decode_splits(c, p);
    LaunchStep s;
    s.grid[0] = unsigned(splits);
    s.grid[1] = unsigned(decode_row_blocks(c, p));
    s.grid[2] = unsigned(p.dims[kBatch]);
    s.block[0] = unsigned(32 * c["WARPS"]);
    s.dynamic_smem = unsigned(decode_smem(c, p));
    plan.steps.push_back(s);
    if (splits > 1 && !c["CLUSTER"]) add_combine_step(plan, p, decode_workspace(c, p));
    return plan;
  });
  // The configs one choice away from c that most often beat the rule's own where it misjudges a
  // shape, nearest first; the runtime's first use times them beside the default (and the lender)
  // at a shape nobody tuned. Over 10 shapes of other models (configs/suites/attention-decode-mha.json,
  // H200) the rule's config ran at 0.947-1.0x the best of an exhaustive sweep, and wherever it was
  // not the best, the best (or a config within 0.1 % of it) was one of these: the warps doubled or
  // halved (Phi-2 8 x 32/32 x 2048 x 80: 4 warps, 0.92x with 2), 16-key steps 3 deep against
  // 32-key steps 2 deep (the same ring's bytes), a stage more or less, the other step; then the
  // splits merged the other way, half or twice the split, and the other row block (docs/runs/
  // 2026-11-30-h200-decode-neighbours.md). Paged, a step that divides the page where c's does (the
  // kernel's faster way).
  f.neighbors([paged](const Config& c, const Problem& p, const DeviceInfo&) {
    std::vector<Config> out;
    auto add = [&](Config x) {
      if (paged && p.dims[kPageSize] % c["BN"] == 0 && p.dims[kPageSize] % x["BN"] != 0) return;
      if (x != c && std::find(out.begin(), out.end(), x) == out.end()) out.push_back(std::move(x));
    };
    auto with = [&](std::initializer_list<std::pair<const char*, int>> changes) {
      Config x = c;
      for (const auto& [name, v] : changes) x.set(name, v);
      return x;
    };
    add(with({{"WARPS", c["WARPS"] == 2 ? 4 : c["WARPS"] / 2}}));
    if (c["BN"] == 16) add(with({{"BN", 32}, {"STAGES", std::max(2, c["STAGES"] - 1)}}));
    else add(with({{"BN", 16}, {"STAGES", std::min(4, c["STAGES"] + 1)}}));
    if (c["STAGES"] < 4) add(with({{"STAGES", c["STAGES"] + 1}}));
    if (c["STAGES"] > 2) add(with({{"STAGES", c["STAGES"] - 1}}));
    add(with({{"BN", c["BN"] == 16 ? 32 : 16}}));
    if (c["CHUNK"]) add(with({{"CLUSTER", 1 - c["CLUSTER"]}}));
    if (c["CHUNK"] && !paged) add(with({{"ILV", 1 - c["ILV"]}}));
    // Half and twice the split; merged in their cluster only where that still may be (else the
    // combine step).
    for (int chunk : {c["CHUNK"] / 2, c["CHUNK"] * 2}) {
      if (std::find(kDecodeChunks.begin(), kDecodeChunks.end(), chunk) == kDecodeChunks.end()) continue;
      Config x = with({{"CHUNK", chunk}});
      if (x["CLUSTER"] && decode_splits(x, p) > kMaxClusterSplits) x.set("CLUSTER", 0);
      add(x);
    }
    add(with({{"ROWS", c["ROWS"] == 16 ? 32 : 16}}));
    return out;
  });
  // Fit on an exhaustive sweep of the family at 20 decode shapes on an H200 (bench/
  // attention_decode_sweep.sh over configs/suites/attention-decode-rule.json; docs/runs/
  // 2026-11-29-decode-rule.md): there this rule's config ran at 0.999x the best config's speed in
  // geomean, 0.989x at worst, where the rule before it (blocks for two a multiprocessor, 4 warps of
  // 16-key steps everywhere) ran at 0.878x and 0.706x; at 8 shapes of other models
  // (attention-decode-check.json, which has since shaped the split's threshold, its even lengths
  // and the two warp rules marked below, docs/runs/2026-11-30-h200-attention-defaults-combine.md
  // section 4), 0.980x and 0.898x.
  // - Rows: 16, or 32 where the packed heads fill more and head_dim leaves the registers for it,
  //   over a cache of more than 16 MiB (smaller ones: below, and small_cache_defaults).
  // - A small cache over many row blocks: small_cache_defaults.
  // - Split: enough blocks for two thirds of the SMs, in the fewest splits that give it, of equal
  //   length (the longest chunk no longer than the keys over the splits wanted: 6000 keys for 2
  //   splits take 3 of 2048, not 4096 + 1904, whose long split every block waits on), no split
  //   shorter than 64 keys, within the family's limits. More splits than one wave needs cost their
  //   partials' writes and the combine step: at 16 x 32/8 x 4096 (128 blocks unsplit) two splits
  //   ran at 0.94x of none, at 48 x 12/2 x 2048 (96) at 0.80x; 64 blocks were split at their best.
  // - Warps: with blocks for every SM, split or not (marked), 2 warps of 16-key steps (more blocks
  //   share an SM); a block left alone on its SM, 4 warps: of 16-key steps over the whole sequence
  //   (marked; 0.979x the best config at 48 x 12/2 x 2048 and 1.0x at 16 x 32/8 x 4096, where 32-key
  //   steps ran 0.955x and 0.992x), of 32 over a split; 32 rows, 8 warps of 16 keys (the rows
  //   double each step's MMA work); head_dim above 128, 4 warps of 16 keys two deep (the ring in
  //   shared memory).
  // - Depth: the same bytes in flight a warp whatever head_dim: 4 stages at 64, 3 at 128.
  // - Merge (sm_90): 2 or 3 splits in their thread block cluster instead of the combine step, 1-4 %
  //   faster at all 7 such shapes of 25 swept (docs/runs/2026-11-30-h200-decode-cluster.md); 4 to 8
  //   splits too where the grid fits one wave of clusters of 8 (9/10 of the SMs' blocks). Where it
  //   does not, the rule's tiles (one or two blocks an SM) ran 0.65-0.71x as clusters, whose blocks
  //   must share a GPC and left SMs idle; where it does, clusters ran 1.00-1.15x the combine step
  //   (median, config for config, 6 shapes). A short sequence (splits of at most 256 keys) is split
  //   at most 8 ways where that grid fits such a wave: at 1 x 32/8 x 1024, 8 splits in a cluster ran
  //   1.12x 16 with a combine step (the same tiles). Checked on 9 shapes no sweep had seen: 0.948x
  //   the best config in geomean, min 0.830x (the rule before: 0.900x, 0.733x; docs/runs/
  //   2026-11-30-h200-decode-rule-cluster.md).
  // - Paged, split: the splits take turns along the keys (ILV 1). A paged call's sequences are as
  //   long as seq_lens says, often far shorter than the capacity the problem (and a CUDA graph's
  //   block table) is sized for, and contiguous splits past a sequence's end read nothing while the
  //   first ones read all of it. With one config (CHUNK 2048, 4 warps of 32-key steps) on an H100,
  //   bench/decode_ragged.py: sequences at 3-25 % of a 32 k capacity 1.14x (batch 4) and 1.63x
  //   (batch 1) the contiguous splits' speed, 5-50 % at 8 x 4 queries 1.05x, full 0.99x at two rows;
  //   over 150 contiguous split configs at 6 full-length decode shapes the turns ran 0.995x the time
  //   in geomean, each shape's best within 1.3 % either way (docs/runs/2026-12-05-h100-decode-turns.md).
  //   So the paged family has no other order (ILV is 1 only): the tuner times a paged problem at
  //   full lengths, where the two orders tie, and would otherwise keep either, the contiguous one
  //   at up to 1.6x the time at the lengths served. Contiguous caches (every sequence full) keep
  //   ILV 0; their neighbours time the other way at first use.
  f.defaults([paged](const Problem& p, const DeviceInfo& d) {
    // Paged: tiles within a page where the page size allows (the kernel's faster way), and a split's
    // keys taken in turns (above).
    auto in_pages = [&](Config c) {
      if (paged && p.dims[kPageSize] % c["BN"] != 0)
        for (int bn : {32, 16})
          if (bn < c["BN"] && p.dims[kPageSize] % bn == 0) {
            c.set("BN", bn);
            break;
          }
      if (paged) c.set("ILV", 1);
      return c;
    };
    Config c;
    if (small_cache_defaults(c, p, d)) return in_pages(c);
    const int64_t hd = padded_head_dim(p);
    // 32 rows only over a cache larger than kSmallCacheBytes: below it a call is latency-bound and
    // twice the blocks of 16 rows ran faster at every shape measured (8, 2 of them shaping this).
    c.set("ROWS", decode_rows(p) <= 16 || hd > 128 || decode_kv_bytes(p) <= kSmallCacheBytes ? 16 : 32);
    c.set("CHUNK", 0);
    const int64_t blocks = p.dims[kBatch] * decode_row_blocks(c, p);
    // sm_90: the splits the rule merges in their cluster (Merge above).
    auto in_cluster = [&](int64_t splits) {
      return d.arch_number() >= 90 && splits >= 2 &&
             (splits <= 3 || (splits <= kClusterRuleSplits && clusters_fit_one_wave(blocks * splits, d)));
    };
    const int64_t want = std::max(1, 2 * d.sm_count / 3);
    if (blocks < want) {
      // The longest chunk no longer than an even share of the keys, else the shortest one the
      // limits allow.
      const int64_t splits = (want + blocks - 1) / blocks, share = (p.dims[kKvLen] + splits - 1) / splits;
      int best = 0;
      for (int chunk : kDecodeChunks) {
        c.set("CHUNK", chunk);
        if (decode_split_fits(c, p) && (best == 0 || chunk <= share)) best = chunk;
      }
      c.set("CHUNK", best);
      // sm_90, a short sequence split more than a cluster of 8 takes: the most splits of at most 256
      // keys that merge in their cluster (at most 8, their grid one wave of clusters).
      if (d.arch_number() >= 90 && decode_splits(c, p) > kClusterRuleSplits)
        for (int chunk : kDecodeChunks) {
          Config x = c;
          x.set("CHUNK", chunk);
          if (chunk > 256 || !decode_split_fits(x, p)) break;
          if (in_cluster(decode_splits(x, p))) {
            c = x;
            break;
          }
        }
    }
    const int deep = hd <= 64 ? 4 : hd <= 128 ? 3 : 2;
    auto warps = [&](int w, int bn, int stages) {
      c.set("WARPS", w);
      c.set("BN", bn);
      c.set("STAGES", stages);
    };
    if (hd > 128)
      warps(4, 16, 2);
    else if (c["ROWS"] == 32)
      warps(8, 16, deep);
    else if (blocks * decode_splits(c, p) >= d.sm_count)
      warps(2, 16, deep);
    else if (c["CHUNK"] == 0)
      warps(4, 16, deep);
    else
      warps(4, 32, 3);
    c.set("CLUSTER", in_cluster(decode_splits(c, p)) ? 1 : 0);
    c.set("ILV", 0);
    return in_pages(c);
  });
  return f;
}

Family simple_family(bool varlen) {
  Family f = common("attention_simple" + suffix(varlen), "attention_simple.cu",
                    varlen_about(varlen, "one warp a query row, FP32 throughout: any head_dim up to 256, any "
                                         "alignment (the fallback)"),
                    prefill_op(varlen));
  f.param("WARPS", {4, 8}, "query rows a block");
  f.restrict("the grid's x extent holds the query blocks", {"WARPS"}, [](const Config& c, const Problem& p, const DeviceInfo&) {
    return (p.dims[kQLen] + c["WARPS"] - 1) / c["WARPS"] <= INT32_MAX;
  });
  f.kernels([varlen](const Config& c, const Problem& p) {
    return std::vector<std::string>{"attention_simple" + suffix(varlen) + "<" + std::to_string(f16_code(p.dtype)) + "," +
                                    std::to_string(c["WARPS"]) + "," + (causal(p) ? "1" : "0") + ">"};
  });
  f.launch([](const Config& c, const Problem& p) {
    LaunchStep s;
    s.grid[0] = unsigned(std::max<int64_t>(1, (p.dims[kQLen] + c["WARPS"] - 1) / c["WARPS"]));
    s.grid[1] = unsigned(p.dims[kHeads]);
    s.grid[2] = unsigned(p.dims[kBatch]);
    s.block[0] = unsigned(32 * c["WARPS"]);
    return LaunchPlan{{s}, 0, {}};
  });
  f.defaults([](const Problem&, const DeviceInfo&) {
    Config c;
    c.set("WARPS", 4);
    return c;
  });
  return f;
}

// What both attention ops ask of a problem: half inputs, no empty dimension, whole GQA groups,
// head_dim up to 256, a log-sum-exp whose offsets fit, a finite scale.
void validate_attention(const Problem& p) {
  const std::string what = "invalid " + p.op + " problem " + p.key() + ": ";
  if (!is_half(p.dtype)) throw UsageError(what + "dtype must be bf16 or f16");
  for (size_t i = 0; i < p.dims.size(); ++i)
    if (p.dims[i] < 1) throw UsageError(what + op_info(p.op).dims[i] + " must be >= 1");
  if (p.dims[kHeads] % p.dims[kKvHeads] != 0)
    throw UsageError(what + "heads (" + std::to_string(p.dims[kHeads]) + ") must be a multiple of kv_heads (" +
                     std::to_string(p.dims[kKvHeads]) + ")");
  if (p.dims[kHeadDim] > 256) throw UsageError(what + "head_dim must be at most 256");
  if (double(p.dims[kBatch]) * double(p.dims[kHeads]) * double(p.dims[kQLen]) > double(INT64_MAX) / 8)
    throw UsageError(what + "the log-sum-exp does not fit");
  if (!std::isfinite(p.scalar("scale"))) throw UsageError(what + "scale must be finite");
}

// Bytes of q, k, v and o read or written once, and the FP32 log-sum-exp.
double attention_min_bytes(const Problem& p) {
  const double d = double(p.dims[kHeadDim]), b = double(p.dims[kBatch]);
  const double qo = 2 * b * double(p.dims[kHeads]) * double(p.dims[kQLen]) * d;
  const double kv = 2 * b * double(p.dims[kKvHeads]) * double(p.dims[kKvLen]) * d;
  return (qo + kv) * element_bytes(p.dtype) + 4 * b * double(p.dims[kHeads]) * double(p.dims[kQLen]);
}

// The FP32 log-sum-exp of every (batch, head, query) row.
OpInfo::Operand lse_operand() {
  OpInfo::Operand lse("lse", true, [](const Problem& p) { return p.dims[kBatch] * p.dims[kHeads] * p.dims[kQLen]; });
  lse.elem_bytes = 4;
  lse.aligns = false; // written one float at a time
  return lse;
}

} // namespace

OpInfo attention_op_info() {
  OpInfo o;
  o.name = "attention";
  o.about = "O = softmax(scale Q K^T) V with its log-sum-exp; GQA, causal (bottom-right), strided (B, S, H, D) "
            "or (B, H, S, D) views";
  o.dims = {"batch", "heads", "kv_heads", "q_len", "kv_len", "head_dim"};
  o.layouts = {"full", "causal"};
  o.scalars = {{"scale", 0.0}}; // 0: 1 / sqrt(head_dim)
  o.validate = validate_attention;
  // attention_paged's too: every sequence at its capacity, the most the call can do.
  o.flops = [](const Problem& p) {
    return 4.0 * double(p.dims[kBatch]) * double(p.dims[kHeads]) * visible_pairs(p) * double(p.dims[kHeadDim]);
  };
  o.min_bytes = attention_min_bytes;
  o.runner = "attention";
  // Scores of q . k / sqrt(d) with inputs in [-2, 2) have a spread near 1.3: the softmax is peaked
  // enough that a kernel which mishandles the running max (no rescale, a stale max) shows.
  o.operands = {OpInfo::Operand::shaped("q", false, {"batch", "q_len", "heads", "head_dim"}, -2, 2),
                OpInfo::Operand::shaped("k", false, {"batch", "kv_len", "kv_heads", "head_dim"}, -2, 2),
                OpInfo::Operand::shaped("v", false, {"batch", "kv_len", "kv_heads", "head_dim"}, -1, 1),
                OpInfo::Operand::shaped("o", true, {"batch", "q_len", "heads", "head_dim"}), lse_operand()};
  o.families = [] {
    return std::vector<Family>{wgmma_family(false), fa2_family(false), decode_family(false), simple_family(false)};
  };
  return o;
}

// Op attention_paged: attention over a KV cache kept in pages, as vLLM and FlashInfer keep it, for
// decode and speculative decoding (q_len <= 64). Dimensions batch, heads, kv_heads, q_len, kv_len
// (the capacity of a sequence: its block table's pages x page_size), head_dim, page_size, pages
// (of the cache). k_cache and v_cache are (pages, page_size, kv_heads, head_dim) with the caller's
// strides; block_table is int32 (batch, kv_len / page_size), the page of each page_size keys of a
// sequence; seq_lens is int32 (batch), the keys sequence b holds (0 to kv_len). q, o and lse as
// attention's; causal is bottom-right aligned to each sequence's own length. A contiguous cache
// with per-sequence lengths is the case page_size = kv_len, pages = batch, block_table[b] = b
// (ktune.attention_decode). The block table's entries must be pages of the cache: the kernels
// trust them, as vLLM's do.
OpInfo attention_paged_op_info() {
  OpInfo o = attention_op_info();
  o.name = "attention_paged";
  o.about = "attention over a paged KV cache (block table, per-sequence lengths), decode and speculative decoding";
  o.dims = {"batch", "heads", "kv_heads", "q_len", "kv_len", "head_dim", "page_size", "pages"};
  o.validate = [](const Problem& p) {
    validate_attention(p);
    const std::string what = "invalid attention_paged problem " + p.key() + ": ";
    if (p.dims[kQLen] > 64) throw UsageError(what + "q_len must be at most 64 (decode and speculative decoding)");
    if (p.dims[kKvLen] % p.dims[kPageSize] != 0)
      throw UsageError(what + "kv_len (" + std::to_string(p.dims[kKvLen]) + ") must be a whole number of pages of " +
                       std::to_string(p.dims[kPageSize]));
    if (p.dims[kPages] > INT32_MAX) throw UsageError(what + "pages must fit the int32 block table");
  };
  // attention's, and the block table and lengths.
  o.min_bytes = [](const Problem& p) {
    return attention_min_bytes(p) + 4 * double(p.dims[kBatch]) * (double(p.dims[kKvLen] / p.dims[kPageSize]) + 1);
  };
  OpInfo::Operand table("block_table", false,
                        [](const Problem& p) { return p.dims[kBatch] * (p.dims[kKvLen] / p.dims[kPageSize]); });
  table.elem_bytes = 4;
  OpInfo::Operand lens("seq_lens", false, [](const Problem& p) { return p.dims[kBatch]; });
  lens.elem_bytes = 4;
  table.aligns = lens.aligns = false; // read one int at a time
  o.operands = {OpInfo::Operand::shaped("q", false, {"batch", "q_len", "heads", "head_dim"}, -2, 2),
                OpInfo::Operand::shaped("k_cache", false, {"pages", "page_size", "kv_heads", "head_dim"}, -2, 2),
                OpInfo::Operand::shaped("v_cache", false, {"pages", "page_size", "kv_heads", "head_dim"}, -1, 1),
                table,
                lens,
                OpInfo::Operand::shaped("o", true, {"batch", "q_len", "heads", "head_dim"}),
                lse_operand()};
  o.families = [] { return std::vector<Family>{decode_family(true)}; };
  // A config tuned for the contiguous cache is the same kernel but for where each key's row is
  // read: attention's tuned decode entries are candidates for the paged problem of their shape.
  o.lends_from.op = "attention";
  o.lends_from.families = {{"attention_decode", "attention_decode_paged"}};
  o.lends_from.as = [](const Problem& p) {
    Problem q = Problem::make("attention", {p.dims.begin(), p.dims.begin() + kPageSize}, p.layout, p.dtype);
    q.align = p.align;
    return q;
  };
  // The cache's page count changes neither the kernels nor their grids (the block table names the
  // pages; nothing reads the pool's extent), and pages beyond the table's entries (batch x kv_len /
  // page_size: every sequence full, no page twice) are pages no one call reads. A problem is served
  // as the one whose cache has at most that many: one choice for whatever pool a server allocates
  // (vLLM's is most of the GPU's memory, which a first use's own copy of it would not fit beside),
  // measured on a cache the size of what a call can read, and a tuned entry keyed as it is served.
  o.serve_as = [](const Problem& p) {
    Problem q = p;
    if (p.dims.size() == 8 && p.dims[kPageSize] > 0) {
      const int64_t entries = p.dims[kBatch] * (p.dims[kKvLen] / p.dims[kPageSize]);
      if (entries >= 1 && entries < p.dims[kPages]) q.dims[kPages] = entries;
    }
    return q;
  };
  o.derived_dims = {"pages"};
  return o;
}

namespace {

// attention_varlen's sequences as the tuner times them (varlen_cu_seqlens with seed 0): the packed
// tokens split as evenly as they go, the first total % batch sequences one longer. Its flops and
// bytes are this split's; a call with another split does other work in the same launch.
int64_t even_length(int64_t total, int64_t batch, int64_t b) { return total / batch + (b < total % batch ? 1 : 0); }

double varlen_visible_pairs(const Problem& p) {
  const int64_t B = p.dims[kBatch], rq = p.dims[kTotalQ] % B, rk = p.dims[kTotalKv] % B;
  // Sequences b < min(rq, rk) have both extras, then up to max(rq, rk) one of them, then none.
  const int64_t cuts[4] = {0, std::min(rq, rk), std::max(rq, rk), B};
  double total = 0;
  for (int g = 0; g < 3; ++g) {
    const int64_t b = cuts[g], n = cuts[g + 1] - cuts[g];
    if (n > 0)
      total += double(n) * visible_pairs(even_length(p.dims[kTotalQ], B, b), even_length(p.dims[kTotalKv], B, b),
                                         causal(p));
  }
  return total;
}

} // namespace

std::vector<int32_t> varlen_cu_seqlens(int64_t total, int64_t batch, int64_t longest, uint64_t seed, int64_t empty) {
  if (batch < 1 || total < 0 || longest < 0 || double(total) > double(batch) * double(longest) || total > INT32_MAX)
    throw Error("varlen_cu_seqlens: " + std::to_string(total) + " tokens do not fit " + std::to_string(batch) +
                " sequences of at most " + std::to_string(longest));
  std::vector<int64_t> len(static_cast<size_t>(batch));
  for (int64_t b = 0; b < batch; ++b) len[size_t(b)] = even_length(total, batch, b);
  if (seed != 0 && batch > 1) {
    std::mt19937_64 rng(seed);
    auto pick = [&](int64_t n) { return int64_t(rng() % uint64_t(n)); };
    // Moves keep every length in [0, longest] and the sum.
    auto move = [&](size_t from, size_t to, int64_t most) {
      const int64_t n = std::min({len[from], longest - len[to], most});
      len[from] -= n, len[to] += n;
    };
    for (int64_t it = 0; it < 4 * batch; ++it) {
      const size_t a = size_t(pick(batch)), c = size_t(pick(batch));
      if (a != c) move(a, c, pick(len[a] + 1));
    }
    const size_t e = size_t(std::clamp<int64_t>(empty, 1, batch - 1));
    if (batch >= 3) // not the first: a kernel that ignores the offsets still shows on the others
      for (size_t c = 0; c < size_t(batch) && len[e] > 0; ++c)
        if (c != e) move(e, c, len[e]);
  }
  std::vector<int32_t> cu(size_t(batch) + 1, 0);
  for (size_t b = 0; b < size_t(batch); ++b) cu[b + 1] = int32_t(cu[b] + len[b]);
  return cu;
}

// Op attention_varlen: attention over packed sequences of different lengths, as
// flash_attn_varlen_func takes them. Dimensions batch (sequences), heads, kv_heads, q_len and kv_len
// (the longest sequence's queries and keys: the grid's extent), head_dim, total_q and total_kv (the
// packed tokens). q and o are (total_q, heads, head_dim), k and v (total_kv, kv_heads, head_dim),
// with the caller's token and head strides; cu_seqlens_q and cu_seqlens_k are int32 (batch + 1),
// sequence b the tokens [cu[b], cu[b + 1]) (at most q_len / kv_len of them, cu[0] = 0, cu[batch] at
// most the total: the kernels trust them, as FlashAttention's do); lse is FP32 (heads, total_q),
// FlashAttention-2's varlen layout. Causal is bottom-right aligned to each sequence's own lengths.
// Every token of k and v must be finite, those outside the sequences too: attention_wgmma_varlen's
// last tile of a sequence reads its neighbour's tokens, weighted 0.
OpInfo attention_varlen_op_info() {
  OpInfo o = attention_op_info();
  o.name = "attention_varlen";
  o.about = "attention over packed sequences of different lengths (cumulative lengths, as flash_attn_varlen_func)";
  o.dims = {"batch", "heads", "kv_heads", "q_len", "kv_len", "head_dim", "total_q", "total_kv"};
  o.validate = [](const Problem& p) {
    validate_attention(p);
    const std::string what = "invalid attention_varlen problem " + p.key() + ": ";
    for (auto [total, longest, name] : {std::tuple{kTotalQ, kQLen, "q"}, std::tuple{kTotalKv, kKvLen, "kv"}}) {
      if (double(p.dims[total]) > double(p.dims[kBatch]) * double(p.dims[longest]))
        throw UsageError(what + "total_" + name + " (" + std::to_string(p.dims[total]) + ") is more than batch x " +
                         name + "_len (" + std::to_string(p.dims[kBatch]) + " x " + std::to_string(p.dims[longest]) +
                         "): " + name + "_len must be at least the longest sequence's length");
      // int32 cumulative lengths, and 32-bit TMA coordinates a tile past the last token.
      if (p.dims[total] > INT32_MAX - 256)
        throw UsageError(what + "total_" + name + " must be at most 2^31 - 257 (int32 cumulative lengths)");
    }
  };
  o.flops = [](const Problem& p) {
    return 4.0 * double(p.dims[kHeads]) * varlen_visible_pairs(p) * double(p.dims[kHeadDim]);
  };
  o.min_bytes = [](const Problem& p) {
    const double d = double(p.dims[kHeadDim]);
    const double qo = 2 * double(p.dims[kTotalQ]) * double(p.dims[kHeads]) * d;
    const double kv = 2 * double(p.dims[kTotalKv]) * double(p.dims[kKvHeads]) * d;
    return (qo + kv) * element_bytes(p.dtype) + 4 * double(p.dims[kHeads]) * double(p.dims[kTotalQ]) +
           8 * double(p.dims[kBatch] + 1);
  };
  OpInfo::Operand cu_q("cu_seqlens_q", false, [](const Problem& p) { return p.dims[kBatch] + 1; });
  OpInfo::Operand cu_k("cu_seqlens_k", false, [](const Problem& p) { return p.dims[kBatch] + 1; });
  cu_q.elem_bytes = cu_k.elem_bytes = 4;
  cu_q.aligns = cu_k.aligns = false; // read one int at a time
  OpInfo::Operand lse("lse", true, [](const Problem& p) { return p.dims[kHeads] * p.dims[kTotalQ]; });
  lse.elem_bytes = 4;
  lse.aligns = false;
  o.operands = {OpInfo::Operand::shaped("q", false, {"total_q", "heads", "head_dim"}, -2, 2),
                OpInfo::Operand::shaped("k", false, {"total_kv", "kv_heads", "head_dim"}, -2, 2),
                OpInfo::Operand::shaped("v", false, {"total_kv", "kv_heads", "head_dim"}, -1, 1),
                cu_q,
                cu_k,
                OpInfo::Operand::shaped("o", true, {"total_q", "heads", "head_dim"}),
                lse};
  o.families = [] { return std::vector<Family>{wgmma_family(true), fa2_family(true), simple_family(true)}; };
  // A prefill config tuned for the dense problem of the longest sequences runs the same body:
  // attention's tuned entries are candidates for the varlen problem of those lengths.
  o.lends_from.op = "attention";
  o.lends_from.families = {{"attention_wgmma", "attention_wgmma_varlen"},
                           {"attention_fa2", "attention_fa2_varlen"},
                           {"attention_simple", "attention_simple_varlen"}};
  o.lends_from.as = [](const Problem& p) {
    Problem q = Problem::make("attention", {p.dims.begin(), p.dims.begin() + kTotalQ}, p.layout, p.dtype);
    q.align = p.align;
    return q;
  };
  // The packed token counts change with every serving step; the kernels and their grids depend on
  // the batch and the longest lengths only (a tensor map's extent is encoded at each launch). A
  // problem is served as the one with the batch's capacity of tokens (within the op's limit), so
  // its choice is measured once per (batch, longest lengths), not once per step.
  o.serve_as = [](const Problem& p) {
    Problem q = p;
    q.dims[kTotalQ] = std::min<int64_t>(p.dims[kBatch] * p.dims[kQLen], INT32_MAX - 256);
    q.dims[kTotalKv] = std::min<int64_t>(p.dims[kBatch] * p.dims[kKvLen], INT32_MAX - 256);
    return q;
  };
  o.derived_dims = {"total_q", "total_kv"};
  return o;
}

} // namespace ktune
