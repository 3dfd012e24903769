// Descriptor of gemm_wgmma.cu: BF16 / FP16 GEMM on Hopper's wgmma (sm_90a), FP32 accumulation,
// cp.async into 128-byte-swizzled stages or TMA, unaligned problems through packed copies (PACK). Compiled for sm_90a (arch_specific), so it serves sm_90
// devices only. What has run on a GPU: see the template's header and tests/kernels/wgmma_gpu_test.cpp.
#include "gemm/gemm_families.h"
#include "gemm/gemm_wgmma_rules.hpp"

#include <algorithm>
#include <cmath>
#include <optional>

namespace ktune::wgmma {

constexpr int kBK = 64; // K per stage: one 128-byte swizzle atom of halves (fixed in the template)

// TMA = 1 adds the producer warpgroup.
int threads(const Config& c) { return 128 * (c["WG"] + c["TMA"]); }
// A consumer warpgroup's rows of a tile: BM / WG, or all BM with ping-pong consumers (PP).
int rows_per_consumer(const Config& c) { return c["PP"] ? c["BM"] : c["BM"] / c["WG"]; }
// FP32 accumulators per thread: its rows / 64 m64 tiles of BN / 2 registers each.
int accumulators(const Config& c) { return rows_per_consumer(c) / 64 * c["BN"] / 2; }

// Dynamic shared memory: ST stages of A's BM x 64 and B's 64 x BN halves, plus 1024 bytes to align
// the ring to the swizzle pattern (dynamic shared memory is only 16-byte aligned); EPI adds each
// consumer's staging buffer for its rows of C (together one BM x BN tile of halves; PP: one each;
// EPI 2: half of that, the columns staged in two halves).
size_t smem_bytes(const Config& c) {
  const size_t staging = c["EPI"] ? size_t(c["WG"]) * rows_per_consumer(c) * c["BN"] * 2 / (c["EPI"] == 2 ? 2 : 1) : 0;
  return size_t(c["ST"]) * (c["BM"] + c["BN"]) * kBK * 2 + 1024 + staging;
}
// Static shared memory of the kernel (ptxas: the TMA kernel's mbarriers take a 1024-byte-aligned block).
size_t static_smem_bytes(const Config& c) { return c["TMA"] ? 1024 : 0; }

bool half_problem(const GemmProblem& p) { return p.dtype == DType::bf16 || p.dtype == DType::f16; }

// PACK = 1: gemm_pack16 first copies A and B into the workspace, and the TMA maps read those
// copies. What lets the family serve unaligned shapes (2999^3, odd leading dimensions). Every
// dimension is padded to 64 (TMA zero-fills past the true extents, so only the rows' length
// matters): rows of whole 128-byte lines. With rows of 16-byte quanta (the first form) a row
// of 3000 halves put the tile rows of a TMA box at 6000-byte steps, across 128-byte lines, and the
// main kernel ran at half the speed of an aligned one (2999^3 bf16, 128 x 256 tiles: 159 us,
// tensor pipe 38 % busy; docs/runs/2026-11-25-h100-s13-*).
// The packing kernel for SPLITK slices: its copies follow the slices in the workspace (their size
// does not depend on the slices).
GemmPack pack_of(int splitk) { return GemmPack{64, 64, 64, splitk}; }
GemmPack pack_of(const Config& c) { return pack_of(c["SPLITK"]); }
bool packed_fits(const GemmProblem& p) { return gemm_pack_workspace_bytes(pack_of(1), p) <= kGemmMaxWorkspace; }

// SWAP = 1: the kernel computes C^T = B^T A^T, so its M is the problem's N and its N the problem's M,
// its A is B^T (K-major where B is column-major) and its B is A^T (K-major where A is row-major).
int64_t kernel_m(bool swap, const GemmProblem& p) { return swap ? p.n : p.m; }
int64_t kernel_n(bool swap, const GemmProblem& p) { return swap ? p.m : p.n; }
bool kernel_a_kmajor(const Config& c, const GemmProblem& p) { return c["SWAP"] ? p.b == Layout::col : p.a == Layout::row; }
bool kernel_b_kmajor(const Config& c, const GemmProblem& p) { return c["SWAP"] ? p.a == Layout::row : p.b == Layout::col; }

// K slices along blockIdx.z: SPLITK through the workspace or CL in a cluster (never both).
int slices(const Config& c) { return c["SPLITK"] * c["CL"]; }
// Work units of the TMA kernel (its Units): output tiles of BM x BN, or under MC pairs of tiles along M (MC 1,
// sharing B) or N (MC 2, sharing A), a pair to a 2-CTA cluster.
int64_t units(const Config& c, const GemmProblem& p) {
  const int64_t tm = ceil_div(kernel_m(c["SWAP"], p), c["BM"]), tn = ceil_div(kernel_n(c["SWAP"], p), c["BN"]);
  return c["MC"] == 1 ? ceil_div(tm, 2) * tn : c["MC"] == 2 ? tm * ceil_div(tn, 2) : tm * tn;
}
// SK > 0 (stream-K): the main grid at most this many blocks, the most SMs of an sm_90a part (H100
// SXM, H200: 132); the launch caps it further at the blocks resident at once (fewer SMs, PCIe: 114).
// The workspace's flags and slots are sized for it.
constexpr int64_t kSkMaxBlocks = 132;
// (unit, K tile) iterations stream-K divides: a unit with K = 0 still counts one (C = beta * C).
int64_t sk_iterations(const Config& c, const GemmProblem& p) { return units(c, p) * std::max<int64_t>(1, ceil_div(p.k, kBK)); }
// Blocks along x: PT > 1, each block (each cluster under MC) strides over the units; MC, 2 CTAs a
// unit. PT = 0: one block (cluster) a unit, which the launch caps at what the device holds at once;
// with SK at most kSkMaxBlocks (and no more than the iterations).
int64_t grid_x(const Config& c, const GemmProblem& p) {
  if (c["SK"]) return std::min(kSkMaxBlocks, sk_iterations(c, p));
  return ceil_div(units(c, p), std::max(1, c["PT"])) * (c["MC"] ? 2 : 1);
}
// SK > 0: the blocks' flags, then a slot of a tile's FP32 sums per block (gemm_wgmma.cu's sk_slot).
static_assert(kSkMaxBlocks * 4 <= KTUNE_SK_HEADER_BYTES, "a flag per block of the stream-K grid");
size_t sk_workspace_bytes(const Config& c, const GemmProblem& p) {
  return c["SK"] ? KTUNE_SK_HEADER_BYTES + size_t(grid_x(c, p)) * c["BM"] * c["BN"] * 4 : 0;
}
// Every slice gets at least one 64-wide K tile.
bool slices_reach_k(const Config& c, const GemmProblem& p) { return gemm_slices_reach_k(p.k, kBK, slices(c)); }
size_t workspace_bytes(const Config& c, const GemmProblem& p) {
  return gemm_splitk_workspace_bytes(c["SPLITK"], p) + (c["PACK"] ? gemm_pack_workspace_bytes(pack_of(c), p) : 0) +
         sk_workspace_bytes(c, p);
}

// Every 16-byte chunk of A and B (8 halves along the contiguous dimension) aligned and wholly
// inside or outside the operand: what the template's cp.async loads need (as gemm_tc16's CP16).
bool loads_16b(const GemmProblem& p) {
  const bool a_col = p.a == Layout::col, b_col = p.b == Layout::col;
  return p.align >= 16 && p.eff_lda() % 8 == 0 && p.eff_ldb() % 8 == 0 && (a_col ? p.m : p.k) % 8 == 0 &&
         (b_col ? p.k : p.n) % 8 == 0;
}

} // namespace ktune::wgmma

namespace ktune {

Family gemm_wgmma_family() {
  using namespace wgmma;
  using P = const GemmProblem&;
  using D = const DeviceInfo&;
  Family f("gemm_wgmma", "gemm/gemm_wgmma.cu");
  f.describe("BF16/FP16 GEMM on Hopper's wgmma (sm_90a, m64nNk16 from 128B-swizzled shared memory, FP32 "
             "accumulation), cp.async stage ring or a TMA producer warpgroup with an mbarrier ring, one to three "
             "(consumer) warpgroups; every layout; unaligned problems through packed 16-byte-row copies of A and B (TMA)")
      // 192: three 64-row or 64-column blocks (TMA only), the tile sizes between 128 and 256 that
      // cuBLAS's own Hopper kernels pick where 128 or 256 leaves a partial wave: 192 x 192 at
      // 2048x11008x4096 (638 tiles, 4.8 waves of 132, against 688 of 128 x 256: 5.2), 192 x 128 at
      // 1024x3072x768 (docs/runs/2026-11-25-h100-s17-ncu-cublas-kernels-*).
      .param("BM", {64, 128, 192, 256}, "block tile rows")
      // Any multiple of 16 where the kernel's B is K-major (A row-major under SWAP, B column-major
      // without): the tile's N then fits M or N to whole waves (cuBLAS: 256 x 144 at 1576x3072x768).
      .param("BN", {64, 80, 96, 112, 128, 144, 160, 176, 192, 208, 224, 240, 256},
             "block tile columns (the wgmma N); not a multiple of 64: TMA, the kernel's B K-major")
      .param("WG", {1, 2, 3}, "(consumer) warpgroups, each BM / WG rows of the tile; 3: TMA only, 192-row tiles")
      .param("ST", {3, 4, 5, 6, 8, 10, 13}, "stages in the shared-memory ring (ST - 2 tiles loaded ahead; the deep "
                                         "rings are for small tiles of memory-bound problems: 13 x 64 x 64)")
      .param("SWZ", {1, 4, 8, 16}, "tile rows per rasterization group")
      .param("TMA", {0, 1}, "0: every thread loads with cp.async; 1: a producer warpgroup loads with TMA (mbarrier ring), "
                            "the WG consumer warpgroups only compute (setmaxnreg 40 / 232 with two, 40 / 152 with three)")
      .param("PACK", {0, 1}, "1: pack A and B into 16-byte rows first (gemm_pack16), for problems whose operands are not")
      .param("SPLITK", {1, 2, 4, 8}, "K slices (TMA only): FP32 partial sums in the workspace, added and rounded by "
                                     "gemm_splitk_reduce16; for grids too small to fill the GPU")
      .param("CL", {1, 2, 4, 8}, "K slices in a thread block cluster (TMA only): the CTAs of a cluster add their FP32 "
                                 "partial sums through distributed shared memory, in their stage rings (no workspace, "
                                 "no second kernel)")
      .param("PT", {1, 2, 4, 0}, "output tiles per block (TMA only, no K slices): a grid of ceil(tiles / PT) "
                                 "blocks, each running its tiles through one stage ring (the next tile's loads "
                                 "overlap this one's stores); 0: persistent, as many blocks as the device holds at once")
      .param("EPI", {0, 1, 2, 3}, "1: C's tiles go out through shared memory and TMA stores, asynchronously (TMA only, no "
                                   "K slices, C's rows 16-byte aligned; beta != 0 at run time takes the plain epilogue); "
                                   "2: the same in two column halves through half the staging memory (BN >= 128), room "
                                   "for another stage; 3: staged as 1, stored by the producer warpgroup's idle warps with "
                                   "plain stores while the consumers go on (any C alignment; no SK or PP)")
      .param("MC", {0, 1, 2}, "TMA multicast in a 2-CTA cluster (TMA only, no CL; with SPLITK the pair shares its K slice): 0 none; 1 the pair computes two "
                              "M tiles and reads B's tile from L2 once for both; 2 two N tiles sharing A's tile")
      .param("PP", {0, 1}, "1: ping-pong consumers (TMA, WG 2, PT != 1, no K slices, no MC): the two consumer "
                           "warpgroups take the block's tiles in turn, each a whole BM x BN tile, one's epilogue "
                           "overlapping the other's main loop; 0: they share each tile")
      .param("SWAP", {0, 1}, "1: compute C^T = B^T A^T (TMA, EPI 0 or 1, no SPLITK or PACK): the tile's rows run along N "
                             "and its columns (BN, the wgmma N) along M, C stored transposed; for shapes whose M is what the "
                             "tiles must fit (LLM tokens: 777, 1000, 1576), as cuBLAS's Hopper kernels tile them")
      .param("SK", {0, 1, 2, 3}, "stream-K on the persistent grid (PT 0; TMA, whole tiles, no MC or PP, aligned): the "
                                 "full waves of tiles whole, then 1: the last one or two waves cut into equal runs of K "
                                 "tiles per block; 2: each tile of the last partial wave cut in K into as many equal "
                                 "parts as the idle blocks allow. The block with a cut tile's first K tile adds the "
                                 "other parts' FP32 sums (parked in the workspace, flagged) and stores it; 3: SK 2's "
                                 "cut, each part's block adding and storing 1 / parts of the tile (the fix-up spread "
                                 "over the tile's blocks: grids of few tiles and long K)")
      .param("AR", {0, 1}, "1: each consumer warpgroup's A from registers (ldmatrix from the stage; wgmma's register "
                           "form, TMA only), B from shared memory, each K tile's wgmma waited for before the next "
                           "tile's loads; 0: both operands from shared memory");
  f.dtypes({DType::bf16, DType::f16}).min_arch(90).arch_specific();

  f.restrict("bf16 or f16 operands", {}, [](const Config&, P p, D) { return half_problem(p); })
      .restrict("16-byte aligned A and B (pointers, leading dimensions and contiguous extents multiples of 8 halves) "
                "unpacked; PACK = 1 (with TMA) only where they are not, and only while the packed copies fit 512 MiB",
                {"TMA", "PACK"},
                // Packing an aligned problem whose rows are not whole 128-byte lines does not pay:
                // 4096x4096x4104 bf16 (128 x 256 tiles, EPI) 195 us unpacked, 225 us packed (the copy's
                // 67 MB), against 181 us at 4096^3 (docs/runs/2026-11-25-h100-s13-pitch-trials.jsonl).
                [](const Config& c, P p, D) { return c["PACK"] ? c["TMA"] == 1 && !loads_16b(p) && packed_fits(p) : loads_16b(p); })
      .restrict("each warpgroup's rows a multiple of 64 (wgmma m64)", {"BM", "WG", "PP"},
                [](const Config& c, P, D) { return c["BM"] % (64 * c["WG"]) == 0 || (c["PP"] && c["BM"] % 64 == 0); })
      // Three consumer warpgroups have 152 registers a thread (setmaxnreg): 96 accumulators (64 x 192)
      // leave room for the addresses and the epilogue; 128 would spill.
      .restrict("accumulators per thread <= 128 (of 232-255 registers); <= 96 with three consumer warpgroups (152)",
                {"BM", "BN", "WG", "PP"},
                [](const Config& c, P, D) { return accumulators(c) <= (c["WG"] == 3 ? 96 : 128); })
      // AR holds a K tile of A a thread: 16 registers for each of its m64 blocks (4 k16 steps x 4).
      .restrict("AR = 1: TMA; accumulators and A's registers (16 an m64 block) <= 160 (<= 112 with three consumer warpgroups)",
                {"TMA", "BM", "BN", "WG", "PP", "AR"},
                [](const Config& c, P, D) {
                  return c["AR"] == 0 || (c["TMA"] == 1 && accumulators(c) + 16 * rows_per_consumer(c) / 64 <= (c["WG"] == 3 ? 112 : 160));
                })
      .restrict("the cp.async kernel (TMA 0): BN 64, 128 or 256, one or two warpgroups", {"TMA", "BN", "WG"},
                [](const Config& c, P, D) { return c["TMA"] == 1 || ((c["BN"] == 64 || c["BN"] == 128 || c["BN"] == 256) && c["WG"] <= 2); })
      .restrict("SWAP = 1: TMA, the plain epilogue or C staged transposed (EPI 0 or 1), no SPLITK, unpacked",
                {"TMA", "EPI", "SPLITK", "PACK", "SWAP"},
                [](const Config& c, P, D) { return c["SWAP"] == 0 || (c["TMA"] == 1 && c["EPI"] <= 1 && c["SPLITK"] == 1 && c["PACK"] == 0); })
      .restrict("BN a multiple of 64 where the kernel's B operand is MN-major (its 64-column swizzle blocks)", {"BN", "SWAP"},
                [](const Config& c, P p, D) { return c["BN"] % 64 == 0 || kernel_b_kmajor(c, p); })
      .restrict("EPI > 0: TMA, whole tiles (no SPLITK or CL), BN a multiple of 64 (staged in 64-column blocks) unless SWAP "
                "(staged transposed: the tile's rows are C's columns); EPI 1 and 2: C's rows and pointer 16-byte aligned, EPI 2: "
                "BN 128 or 256 (halves of whole blocks); EPI 3: no SK or PP",
                {"TMA", "SPLITK", "CL", "EPI", "BN", "SK", "PP", "SWAP"},
                [](const Config& c, P p, D) {
                  if (c["EPI"] == 0) return true;
                  if (c["TMA"] != 1 || slices(c) != 1 || (c["BN"] % 64 != 0 && !c["SWAP"])) return false;
                  if (c["EPI"] == 3) return c["SK"] == 0 && c["PP"] == 0;
                  return p.align >= 16 && (c["EPI"] == 1 || c["BN"] % 128 == 0);
                })
      .restrict("shared memory within the device's per-block limit", {"BM", "BN", "ST", "TMA", "EPI", "WG", "PP"},
                [](const Config& c, P, D d) {
                  return smem_bytes(c) + static_smem_bytes(c) <= size_t(d.max_smem_per_block_optin);
                })
      .restrict("split-K (SPLITK or CL) with the TMA kernel only, one of the two, every slice at least one K tile",
                {"TMA", "SPLITK", "CL"},
                [](const Config& c, P p, D) {
                  return slices(c) == 1 || (c["TMA"] == 1 && (c["SPLITK"] == 1 || c["CL"] == 1) && slices_reach_k(c, p));
                })
      .restrict("CL > 1: the tile's FP32 partial sums (BM x BN x 4 bytes) fit the stage ring", {"BM", "BN", "ST", "CL"},
                [](const Config& c, P, D) {
                  return c["CL"] == 1 || size_t(c["BM"]) * c["BN"] * 4 <= size_t(c["ST"]) * (c["BM"] + c["BN"]) * kBK * 2;
                })
      // MC with SPLITK: the pair's CTAs share blockIdx.z, so they run one K slice of their two tiles
      // (cuBLAS's split-K at 512x512x32768 pairs 128 x 64 tiles in a 2-CTA cluster).
      .restrict("MC > 0: TMA, no CL (whole tiles or SPLITK slices)", {"TMA", "CL", "MC"},
                [](const Config& c, P, D) { return c["MC"] == 0 || (c["TMA"] == 1 && c["CL"] == 1); })
      .restrict("PT != 1: TMA, whole tiles (no SPLITK or CL); PT > 1 a smaller grid than PT - 1 gives (no repeats)",
                {"TMA", "SPLITK", "CL", "PT", "MC", "BM", "BN", "SWAP"},
                [](const Config& c, P p, D) {
                  if (c["PT"] == 1) return true;
                  const int64_t t = units(c, p);
                  return c["TMA"] == 1 && slices(c) == 1 && (c["PT"] == 0 || ceil_div(t, c["PT"]) < ceil_div(t, c["PT"] - 1));
                })
      .restrict("PP = 1: TMA, two consumer warpgroups, several tiles a block (PT != 1), whole tiles, no MC",
                {"TMA", "WG", "PT", "SPLITK", "CL", "MC", "PP"},
                [](const Config& c, P, D) {
                  return c["PP"] == 0 || (c["TMA"] == 1 && c["WG"] == 2 && c["PT"] != 1 && slices(c) == 1 && c["MC"] == 0);
                })
      .restrict("SK > 0: the persistent grid (PT 0), TMA, whole tiles (no SPLITK or CL), no MC or PP, unpacked",
                {"TMA", "PT", "SPLITK", "CL", "MC", "PP", "PACK", "SK"},
                [](const Config& c, P, D) {
                  return c["SK"] == 0 || (c["TMA"] == 1 && c["PT"] == 0 && slices(c) == 1 && c["MC"] == 0 && c["PP"] == 0 && c["PACK"] == 0);
                })
      .restrict("workspace (split-K slices, packed operands, stream-K slots) <= 512 MiB", {"TMA", "PACK", "SPLITK", "SK", "BM", "BN", "PT", "MC", "SWAP"},
                [](const Config& c, P p, D) { return workspace_bytes(c, p) <= kGemmMaxWorkspace; })
      .restrict("the grid (M/BM x N/BN tiles, by PT and MC) fits grid.x", {"BM", "BN", "PT", "MC", "SK", "SWAP"},
                [](const Config& c, P p, D) { return grid_x(c, p) < (int64_t(1) << 31); });

  // 128 x 128 tiles, two consumer warpgroups of 64 rows (64 accumulators each), 4 stages (129 KB),
  // the TMA producer: verified on an H100 on every shape and layout of WgmmaGpu, and 12-19 % faster
  // than the same tiling on cp.async there (bf16 / f16 NN, 2048-8192; docs/runs). A 128 x 256 tile
  // with 3 stages measured faster still (0.79-0.97x cuBLAS) but has run only in the NN tunes.
  f.defaults([](const GemmProblem& p, const DeviceInfo&) {
    return Config{{"BM", 128}, {"BN", 128}, {"WG", 2}, {"ST", 4}, {"SWZ", 8}, {"TMA", 1}, {"PACK", loads_16b(p) ? 0 : 1},
                  {"SPLITK", 1}, {"CL", 1}, {"PT", 1}, {"MC", 0}, {"EPI", 0}, {"PP", 0}, {"SK", 0}, {"SWAP", 0}, {"AR", 0}};
  });
  // TMA came after the first version, which loaded with cp.async; PACK and SPLITK after TMA, then CL, PT, MC, EPI, PP, SK, SWAP, AR.
  f.upgrade([](Config c) {
    if (!c.has("TMA")) c.set("TMA", 0);
    if (!c.has("PACK")) c.set("PACK", 0);
    if (!c.has("SPLITK")) c.set("SPLITK", 1);
    if (!c.has("CL")) c.set("CL", 1);
    if (!c.has("PT")) c.set("PT", 1);
    if (!c.has("MC")) c.set("MC", 0);
    if (!c.has("EPI")) c.set("EPI", 0);
    if (!c.has("PP")) c.set("PP", 0);
    if (!c.has("SK")) c.set("SK", 0);
    if (!c.has("SWAP")) c.set("SWAP", 0);
    if (!c.has("AR")) c.set("AR", 0);
    return c;
  });

  // The same tiling where the tuned form is not valid (the runtime lends it to untuned shapes, warm
  // starts seed with it), nearest first: the other PACK (an aligned config packed for an unaligned
  // shape, a packed one unpacked for an aligned shape), keeping EPI, then a tuned TMA store as EPI 3
  // (C's rows not 16-byte aligned), then without EPI; then without K slices (a K too short for them).
  f.generalize([](const Config& c) {
    std::vector<Family::Setting> s;
    const int stored = c["EPI"] ? 3 : 0;
    for (bool unsplit : {false, true})
      for (auto [pack, epi] : {std::pair{1 - c["PACK"], c["EPI"]}, {1 - c["PACK"], stored}, {1 - c["PACK"], 0}, {c["PACK"], stored},
                               {c["PACK"], 0}, {c["PACK"], c["EPI"]}})
        s.push_back({{"PACK", pack}, {"EPI", epi}, {"SPLITK", unsplit ? 1 : c["SPLITK"]}, {"CL", unsplit ? 1 : c["CL"]}});
    return Family::variants(c, s);
  });

  // Neighbours of a config lent to p (gemm_wgmma_neighbours.cpp).
  f.neighbors(wgmma::neighbours);

  f.kernels([](const Config& c, const GemmProblem& p) {
     // Template parameter order of gemm_wgmma.cu; F16 and the layouts come from the problem.
     std::string name = c["TMA"] ? "gemm_wgmma_tma<" : "gemm_wgmma<";
     for (const char* prm : {"BM", "BN", "WG", "ST", "SWZ"}) name += std::to_string(c[prm]) + ",";
     if (c["TMA"])
       for (const char* prm : {"SPLITK", "CL", "PT", "MC", "EPI", "PP", "SK", "SWAP", "AR"}) name += std::to_string(c[prm]) + ",";
     const std::string f16 = p.dtype == DType::f16 ? "1" : "0";
     // The kernel's layouts (A_COL: its A MN-major; B_COL: its B K-major), under SWAP those of B^T
     // and A^T; without it the problem's (gemm_layout_args).
     name += f16 + "," + std::to_string(int(!kernel_a_kmajor(c, p))) + "," + std::to_string(int(kernel_b_kmajor(c, p))) + ">";
     std::vector<std::string> names{name};
     if (c["SPLITK"] > 1) names.push_back(gemm_splitk_reduce16_name(c["SPLITK"], p)); // kernel 1
     if (c["SK"]) names.push_back("gemm_wgmma_sk_clear");                             // kernel 1
     if (c["PACK"]) names.push_back(gemm_pack_name(pack_of(c), p));                  // the last kernel
     return names;
   })
      .launch([](const Config& c, const GemmProblem& p) {
        LaunchPlan plan;
        LaunchStep main;
        main.grid[0] = static_cast<unsigned>(grid_x(c, p));
        main.grid[2] = static_cast<unsigned>(slices(c)); // CL > 1: each cluster one tile's slices (__cluster_dims__(1, 1, CL))
        main.block[0] = static_cast<unsigned>(threads(c));
        main.persistent = c["PT"] == 0;
        main.swap_ab = c["SWAP"] == 1;
        main.dynamic_smem = static_cast<unsigned>(smem_bytes(c));
        if (c["TMA"]) {
          // The boxes gemm_wgmma_tma's tma_tile copies: a K-major operand (A row-major, B
          // column-major) in one box of 64 K x its tile rows, an MN-major one in 64 x 64 blocks.
          const bool a_k = kernel_a_kmajor(c, p), b_k = kernel_b_kmajor(c, p);
          // MC: a CTA loads half of the shared operand's tile (tma_tile_shared): K-major, half the
          // rows; MN-major 64 wide, half the K lines (wider ones: every other 64 x 64 block).
          auto box = [](bool k_major, int extent, bool shared) {
            return k_major ? unsigned(extent / (shared ? 2 : 1)) : shared && extent == 64 ? 32u : 64u;
          };
          main.tma_maps = {{gemm_a, a_k, 64, box(a_k, c["BM"], c["MC"] == 2)},
                           {gemm_b, b_k, 64, box(b_k, c["BN"], c["MC"] == 1)}};
          // EPI 1, 2: each consumer warpgroup stores its rows of the tile in 64-column boxes (EPI 3
          // stores without TMA: C may not be a valid tensor map).
          // SWAP: staged transposed, a box of 64 of C's columns (the warpgroup's rows) by BN rows.
          if (c["EPI"] == 1 || c["EPI"] == 2)
            main.tma_maps.push_back({gemm_c, true, 64, unsigned(c["SWAP"] ? c["BN"] : rows_per_consumer(c))});
          if (c["PACK"]) { // the copies follow the split-K slices
            // A programmatic dependent of gemm_pack16: its producer waits for the copies before
            // its first load, the rest of its set-up overlaps the copy's last blocks.
            main.overlap_previous = true;
            const GemmPackedOperands q = gemm_packed_operands(pack_of(c), p, gemm_splitk_workspace_bytes(c["SPLITK"], p));
            main.tma_maps[0].packed_offset = static_cast<long long>(q.a_offset), main.tma_maps[0].packed_ld = q.a_ld;
            main.tma_maps[1].packed_offset = static_cast<long long>(q.b_offset), main.tma_maps[1].packed_ld = q.b_ld;
          }
        }
        if (c["SK"]) {
          // Kernel 1 first: one block zeroes the flags; the main kernel, its programmatic
          // dependent, starts at once and waits for it only before it first raises or reads a flag.
          LaunchStep clear;
          clear.kernel = 1;
          clear.block[0] = 256;
          plan.steps.push_back(clear);
          main.overlap_previous = true;
          plan.workspace_bytes = sk_workspace_bytes(c, p);
        }
        plan.steps.push_back(main);
        add_splitk_reduce(plan, p, c["SPLITK"]); // kernel 1; sizes the slices
        if (c["PACK"]) add_pack(plan, p, pack_of(c), c["SPLITK"] > 1 ? 2 : 1);
        return plan;
      });
  return f;
}

} // namespace ktune
