// Descriptor of gemm_wgmma_tf32x3.cu: FP32 GEMM as three TF32 wgmma products per k8 step (sm_90a),
// the operands split into big and small halves once, into the workspace, by gemm_tf32x3_split.
// Opt-in like gemm_tf32x3 (FP32 on the tensor cores is not bit-identical to FFMA).
#include <algorithm>
#include <tuple>

#include "gemm/gemm_families.h"
#include "ktune/gemm_problem.h"

namespace ktune {
namespace {

int threads(const Config& c) { return 128 * (c["WG"] + 1); } // + the producer warpgroup
int accumulators(const Config& c) { return c["BM"] / c["WG"] / 64 * c["BN"] / 2; }
// The FP32 sums plus the chain sum, as many registers.
int accumulator_registers(const Config& c) { return accumulators(c) * 2; }

// ST stages of A big, A small, B big, B small (BK floats a line), plus 1024 bytes to align the ring
// to the swizzle pattern; the mbarriers are static (ptxas gives them a 1024-byte-aligned block).
size_t stage_bytes(const Config& c) { return size_t(2) * (c["BM"] + c["BN"]) * c["BK"] * 4; }
size_t smem_bytes(const Config& c) { return size_t(c["ST"]) * stage_bytes(c) + 1024; }
constexpr size_t kStaticSmem = 1024;

// The split copies (gemm_tf32x3_split's SplitLayout): 2M rows of A', 2N of B', kp floats each,
// after the split-K slices.
int64_t split_ld(const GemmProblem& p) { return (p.k + 3) / 4 * 4; }
size_t split_bytes(const GemmProblem& p) { return size_t(2 * (p.m + p.n)) * size_t(split_ld(p)) * sizeof(float); }
size_t workspace_bytes(const Config& c, const GemmProblem& p) {
  return gemm_splitk_workspace_bytes(c["SPLITK"], p) + split_bytes(p);
}
// The split copies are twice A and B by construction: they may take up to 2 GiB (8192^3: 1 GiB;
// the device must hold A, B and C beside them), the split-K slices the usual 512 MiB on top.
constexpr size_t kMaxSplitBytes = size_t(2) << 30;

int64_t tiles(const Config& c, const GemmProblem& p) { return int64_t(ceil_div(p.m, c["BM"])) * ceil_div(p.n, c["BN"]); }

} // namespace

Family gemm_wgmma_tf32x3_family() {
  using P = const GemmProblem&;
  using D = const DeviceInfo&;
  Family f("gemm_wgmma_tf32x3", "gemm/gemm_wgmma_tf32x3.cu");
  f.describe("FP32 GEMM on Hopper's TF32 wgmma, FP32-accurate (3xTF32: A and B split once into big and small tf32 "
             "halves, K-major, in the workspace; three wgmma m64nNk8 per step fed by a TMA producer warpgroup); every "
             "layout and alignment; not bit-identical to FFMA, and inputs beyond ~2^127 or infinite give inf/NaN where "
             "FFMA may not")
      .param("BM", {64, 128, 256}, "block tile rows")
      .param("BN", {64, 128}, "block tile columns (the wgmma N; 256 would need 256 registers of sums)")
      .param("BK", {16, 32}, "K per stage: 32 floats (128-byte swizzle) or 16 (64-byte swizzle, twice the stages)")
      .param("WG", {1, 2}, "consumer warpgroups, each BM / WG rows of the tile (setmaxnreg 40 / 232 with two)")
      .param("ST", {2, 3, 4, 5, 6, 8}, "stages in the mbarrier ring")
      .param("FOLD", {1, 2}, "K tiles the tensor cores sum from zero before the sum is added to FP32 accumulators with "
                             "FADD (their own accumulation is not FP32 round-to-nearest: one chain over all of K measured "
                             "10-25x cuBLAS SGEMM's error, chains of 4 K tiles up to 1.6x it, of 1 and 2 0.2-0.8x)")
      .param("SWZ", {1, 4, 8, 16}, "tile rows per rasterization group")
      .param("SPLITK", {1, 2, 4, 8, 16}, "K slices: FP32 partial sums in the workspace, added by gemm_splitk_reduce; for "
                                         "grids too small to fill the GPU");
  f.dtypes({DType::f32}).min_arch(90).arch_specific().numerics(Numerics::tf32x3);

  f.restrict("f32 operands", {}, [](const Config&, P p, D) { return p.dtype == DType::f32; })
      .restrict("each warpgroup's rows a multiple of 64 (wgmma m64)", {"BM", "WG"},
                [](const Config& c, P, D) { return c["BM"] % (64 * c["WG"]) == 0; })
      .restrict("FP32 sums and chain sums <= 192 registers per thread (of 232 / 255)", {"BM", "BN", "WG"},
                [](const Config& c, P, D) { return accumulator_registers(c) <= 192; })
      .restrict("shared memory within the device's per-block limit", {"BM", "BN", "BK", "ST"},
                [](const Config& c, P, D d) { return smem_bytes(c) + kStaticSmem <= size_t(d.max_smem_per_block_optin); })
      .restrict("every split-K slice at least one K tile", {"BK", "SPLITK"},
                [](const Config& c, P p, D) { return gemm_slices_reach_k(p.k, c["BK"], c["SPLITK"]); })
      .restrict("split operands (2x A and B) <= 2 GiB", {}, [](const Config&, P p, D) { return split_bytes(p) <= kMaxSplitBytes; })
      .restrict("split-K slices <= 512 MiB", {"SPLITK"},
                [](const Config& c, P p, D) { return gemm_splitk_workspace_bytes(c["SPLITK"], p) <= kGemmMaxWorkspace; })
      // TMA coordinates are 32-bit: the stacked copies' rows (2M, 2N) must fit.
      .restrict("2M and 2N rows of split copies within TMA's coordinates", {},
                [](const Config&, P p, D) { return 2 * std::max(p.m, p.n) < (int64_t(1) << 31); })
      .restrict("grid of M/BM x N/BN tiles fits grid.x", {"BM", "BN"},
                [](const Config& c, P p, D) { return tiles(c, p) < (int64_t(1) << 31); });

  // 128 x 128 tiles, two consumer warpgroups, 32-deep stages (64 KB each), 3 of them, a chain a K
  // tile (128 registers of sums): the most frequent winner of the first H100 tune (2026-11-24).
  f.defaults([](const GemmProblem&, const DeviceInfo&) {
    return Config{{"BM", 128}, {"BN", 128}, {"BK", 32}, {"WG", 2}, {"ST", 3}, {"FOLD", 1}, {"SWZ", 8}, {"SPLITK", 1}};
  });

  f.kernels([](const Config& c, const GemmProblem& p) {
     std::string main = "gemm_wgmma_tf32x3<";
     for (const char* prm : {"BM", "BN", "BK", "WG", "ST", "FOLD", "SWZ"}) main += std::to_string(c[prm]) + ",";
     main += std::to_string(c["SPLITK"]) + ">"; // K-major copies: the main kernel has no layout arguments
     std::vector<std::string> names{main};
     if (c["SPLITK"] > 1) names.push_back(gemm_splitk_reduce_name(c["SPLITK"])); // kernel 1
     names.push_back("gemm_tf32x3_split<" + std::to_string(c["SPLITK"] > 1 ? c["SPLITK"] : 0) + "," + gemm_layout_args(p) + ">");
     return names;
   })
      .launch([](const Config& c, const GemmProblem& p) {
        LaunchPlan plan;
        LaunchStep main;
        main.grid[0] = static_cast<unsigned>(tiles(c, p));
        main.grid[2] = static_cast<unsigned>(c["SPLITK"]);
        main.block[0] = static_cast<unsigned>(threads(c));
        main.dynamic_smem = static_cast<unsigned>(smem_bytes(c));
        const size_t a_offset = gemm_splitk_workspace_bytes(c["SPLITK"], p);
        const size_t b_offset = a_offset + size_t(2 * p.m) * size_t(split_ld(p)) * sizeof(float);
        for (auto [operand, rows, offset] : {std::tuple{gemm_a, c["BM"], a_offset}, std::tuple{gemm_b, c["BN"], b_offset}}) {
          LaunchStep::TmaOperand o;
          o.operand = operand, o.k_inner = true;
          o.box_inner = unsigned(c["BK"]), o.box_outer = unsigned(rows);
          o.packed_offset = static_cast<long long>(offset), o.packed_ld = split_ld(p);
          o.elem_bytes = 4, o.swizzle_bytes = unsigned(c["BK"]) * 4, o.stacked = 2;
          main.tma_maps.push_back(o);
        }
        plan.steps.push_back(main);
        add_splitk_reduce(plan, p, c["SPLITK"]); // kernel 1; sizes the slices
        // The split runs first: 32 x 32 tiles (K tiles along x; rows along y, looped past grid.y's
        // limit; A, then B along z), at least one block each way (K = 0 splits nothing).
        LaunchStep split;
        split.kernel = c["SPLITK"] > 1 ? 2 : 1;
        split.grid[0] = std::max(1u, ceil_div(p.k, 32));
        split.grid[1] = static_cast<unsigned>(std::clamp<int64_t>((std::max(p.m, p.n) + 31) / 32, 1, 65535));
        split.grid[2] = 2;
        split.block[0] = 256;
        plan.steps.insert(plan.steps.begin(), split);
        plan.workspace_bytes = workspace_bytes(c, p);
        return plan;
      });
  return f;
}

} // namespace ktune
