// Descriptor of gemm_tc16.cu: BF16 / FP16 GEMM on the tensor cores (mma.sync m16n8k16).
// tests/kernels/tc16_gpu_test.cpp verifies every path on a GPU (layouts, packing, split-K, element
// loads and stores, and every SMEM x LDM x CPA combination); it passes on an H100.
#include <algorithm>

#include "gemm/gemm_families.h"
#include "ktune/gemm_problem.h"

namespace ktune {
namespace {

int threads(const Config& c) { return 32 * (c["BM"] / c["WM"]) * (c["BN"] / c["WN"]); }
int accumulators(const Config& c) { return c["WM"] * c["WN"] / 32; }

// Mirrors the template: ST stages of A and B tiles in their storage order (A row-major [BM][BK],
// column-major [BK][BM]; B row-major [BK][BN], column-major [BN][BK]), rows padded by 8 halves
// where SMEM = 1, 2-byte elements.
size_t smem_bytes(const Config& c, const GemmProblem& p) {
  const size_t bm = c["BM"], bn = c["BN"], bk = c["BK"], pad = c["SMEM"] == 1 ? 8 : 0;
  const size_t a = p.a == Layout::col ? bk * (bm + pad) : bm * (bk + pad);
  const size_t b = p.b == Layout::col ? bn * (bk + pad) : bk * (bn + pad);
  return size_t(c["ST"]) * (a + b) * 2;
}

// Accumulators, one k16 step's fragments (A: 4 registers per m16 tile, B: 2 per n8 tile), ~24 for
// addresses and loop state; capped by __launch_bounds__ at 65536 / threads.
int register_estimate(const Config& c) { return accumulators(c) + c["WM"] / 16 * 4 + c["WN"] / 8 * 2 + 24; }

bool half_problem(const GemmProblem& p) { return p.dtype == DType::bf16 || p.dtype == DType::f16; }

// Whether every 16-byte chunk of A and B (8 halves along the contiguous dimension) is aligned and
// wholly inside or wholly outside the operand: the template's CP16 = 1 loads (16-byte cp.async,
// zero-filled chunks) then serve the problem without packing.
bool loads_16b(const GemmProblem& p) {
  const bool a_col = p.a == Layout::col, b_col = p.b == Layout::col;
  return p.align >= 16 && p.eff_lda() % 8 == 0 && p.eff_ldb() % 8 == 0 && (a_col ? p.m : p.k) % 8 == 0 &&
         (b_col ? p.k : p.n) % 8 == 0;
}

// Whether the tiles divide the problem (packing would pad nothing).
bool tiles_divide(const Config& c, const GemmProblem& p) {
  return p.k > 0 && p.m % c["BM"] == 0 && p.n % c["BN"] == 0 && p.k % (int64_t(c["BK"]) * c["SPLITK"]) == 0;
}

// The template gives each K slice ceil(K / (BK * SPLITK)) BK tiles (the last one what is left):
// every slice must reach real K, or a whole block computes zeros.
bool slices_reach_k(const Config& c, const GemmProblem& p) { return gemm_slices_reach_k(p.k, c["BK"], c["SPLITK"]); }

// Whether the kernel loads A and B 16 bytes at a time (packed, or the problem allows it), the
// path on which CPA chooses cp.async or loads through registers; else element loads.
bool loads_16b_path(const Config& c, const GemmProblem& p) { return c["PACK"] != 0 || loads_16b(p); }

GemmTiling tiling(const Config& c) { return {c["BM"], c["BN"], c["BK"], c["SPLITK"], c["PACK"] != 0}; }

size_t workspace_bytes(const GemmTiling& t, const GemmProblem& p) {
  return gemm_splitk_workspace_bytes(t.splitk, p) + (t.pack ? gemm_pack_workspace_bytes(gemm_pack_tiles(t), p) : 0);
}
size_t workspace_bytes(const Config& c, const GemmProblem& p) { return workspace_bytes(tiling(c), p); }
// Whether the packed copies alone (no split-K slices) fit the workspace cap: where they do not,
// no split count can pack the problem, and the unpacked kernel (element loads) is the fallback.
bool packed_fits(const Config& c, const GemmProblem& p) {
  return gemm_pack_workspace_bytes(gemm_pack_tiles(tiling(c)), p) <= kGemmMaxWorkspace;
}

} // namespace

Family gemm_tc16_family() {
  using P = const GemmProblem&;
  using D = const DeviceInfo&;
  Family f("gemm_tc16", "gemm/gemm_tc16.cu");
  f.describe("BF16/FP16 GEMM on the tensor cores (mma.sync m16n8k16, ldmatrix, cp.async stages, swizzled or padded "
             "shared rows, FP32 accumulation); "
             "every layout, shape and alignment (packed operands where unaligned), split-K; every path verified "
             "on an H100 (Tc16Gpu)")
      .param("BM", {64, 128, 256}, "block tile rows")
      .param("BN", {64, 128, 256}, "block tile columns")
      .param("WM", {32, 64, 128}, "warp tile rows (16-row MMA tiles)")
      .param("WN", {32, 64, 128}, "warp tile columns (pairs of 8-column MMA tiles)")
      .param("BK", {32, 64}, "K depth of one shared-memory stage")
      .param("ST", {2, 3, 4, 5}, "stages in the shared-memory ring")
      .param("SWZ", {1, 4, 8, 16}, "tile rows per rasterization group")
      .param("SPLITK", {1, 2, 4, 8}, "K slices (FP32 partial sums in the workspace, reduced deterministically)")
      .param("PACK", {0, 1}, "copy A and B first into aligned, tile-padded workspace (unaligned shapes: 16-byte loads, no bounds checks)")
      .param("SMEM", {1, 2, 0}, "shared-memory rows: 1 padded by 16 bytes, 2 XOR-swizzled 16-byte chunks, 0 plain (bank conflicts; the ladder's rung)")
      .param("LDM", {1, 0}, "fragments from shared memory: 1 ldmatrix.x4, 0 one load a register (the ladder's naive rung)")
      .param("CPA", {1, 0}, "16-byte loads of A and B: 1 cp.async into the stage ring, 0 through registers (the ladder's rung before cp.async)");
  f.dtypes({DType::bf16, DType::f16}).min_arch(80);

  f.restrict("bf16 or f16 operands", {}, [](const Config&, P p, D) { return half_problem(p); })
      .restrict("warp tile divides block tile", {"BM", "BN", "WM", "WN"},
                [](const Config& c, P, D) { return c["BM"] % c["WM"] == 0 && c["BN"] % c["WN"] == 0; })
      .restrict("64 to the device's limit of threads per block", {"BM", "BN", "WM", "WN"},
                [](const Config& c, P, D d) { return threads(c) >= 64 && threads(c) <= d.max_threads_per_block; })
      .restrict("accumulators per thread <= 128", {"WM", "WN"}, [](const Config& c, P, D) { return accumulators(c) <= 128; })
      .restrict("register estimate within the __launch_bounds__ cap", {"BM", "BN", "WM", "WN"},
                [](const Config& c, P, D) { return register_estimate(c) <= std::min(255, 65536 / threads(c)); })
      .restrict("whole 16-byte copies per thread for both tiles", {"BM", "BN", "WM", "WN", "BK"},
                [](const Config& c, P, D) {
                  return c["BM"] * c["BK"] / 8 % threads(c) == 0 && c["BK"] * c["BN"] / 8 % threads(c) == 0;
                })
      .restrict("grid of M/BM x N/BN tiles fits grid.x", {"BM", "BN"},
                [](const Config& c, P p, D) { return int64_t(ceil_div(p.m, c["BM"])) * ceil_div(p.n, c["BN"]) < (int64_t(1) << 31); })
      .restrict("every split-K slice gets at least one BK tile of real K", {"BK", "SPLITK"},
                [](const Config& c, P p, D) { return slices_reach_k(c, p); })
      // The split-K part alone, checked as soon as SPLITK is bound; the total once PACK is.
      .restrict("split-K workspace <= 512 MiB", {"SPLITK"},
                [](const Config& c, P p, D) { return gemm_splitk_workspace_bytes(c["SPLITK"], p) <= kGemmMaxWorkspace; })
      // Packing costs a pass over A and B: worth a tuning slot where the unpacked kernel would need
      // element loads (unaligned rows, K or N not a multiple of 8 halves) or where the tiles do not
      // divide the problem (the packed loads have no bounds checks). The unpacked kernel serves
      // every problem (element loads where 16-byte ones do not fit), but on an unaligned one only
      // where the packed copies would not fit the workspace: it is the slow fallback.
      .restrict("PACK = 1 only for unaligned problems or tiles that do not divide them; PACK = 0 on unaligned "
                "problems only where the packed copies alone exceed 512 MiB",
                {"BM", "BN", "BK", "SPLITK", "PACK"},
                [](const Config& c, P p, D) {
                  return c["PACK"] == 1 ? (!loads_16b(p) || !tiles_divide(c, p)) : (loads_16b(p) || !packed_fits(c, p));
                })
      .restrict("workspace (split-K slices, packed operands) <= 512 MiB", {"BM", "BN", "BK", "SPLITK", "PACK"},
                [](const Config& c, P p, D) { return workspace_bytes(c, p) <= kGemmMaxWorkspace; })
      .restrict("shared memory within the device's per-block limit for this row layout", {"BM", "BN", "BK", "ST", "SMEM"},
                [](const Config& c, P p, D d) { return smem_bytes(c, p) <= size_t(d.max_smem_per_block_optin); })
      // Loads through registers complete before their stage is stored: stages beyond two would
      // hold nothing in flight, only shared memory.
      .restrict("CPA = 0 only with ST = 2", {"ST", "CPA"}, [](const Config& c, P, D) { return c["CPA"] == 1 || c["ST"] == 2; })
      // Element loads (neither packed nor 16-byte loadable) go through registers whatever CPA
      // says: CPA = 0 there would be the same kernel twice.
      .restrict("CPA = 0 only where A and B are loaded 16 bytes at a time", {"PACK", "CPA"},
                [](const Config& c, P p, D) { return c["CPA"] == 1 || loads_16b_path(c, p); });

  // 128 x 128 x 32 tiles, 4 warps of 64 x 64, 4 stages (64 KB of shared memory: fits sm_86/89's
  // 99 KB), swizzled rows (on the H100 at bf16 4096^3 this tiling ran at 444 TFLOPS swizzled
  // against 307 padded: docs/runs/2026-11-24-h100-s8-ladder-half.txt), unsplit; packed where
  // 16-byte loads do not fit the problem, unless the packed copies would exceed the workspace
  // cap (then element loads).
  f.defaults([](const GemmProblem& p, const DeviceInfo&) {
    Config c{{"BM", 128}, {"BN", 128}, {"WM", 64}, {"WN", 64}, {"BK", 32}, {"ST", 4}, {"SWZ", 8}, {"SPLITK", 1}, {"PACK", 0},
             {"SMEM", 2}, {"LDM", 1}, {"CPA", 1}};
    if (!loads_16b(p) && packed_fits(c, p)) c.set("PACK", 1);
    return c;
  });

  // SPLITK and PACK came after the first version: before them, nothing was split or packed.
  // SMEM, LDM and CPA came with the half ladder: before them, rows were padded, fragments came
  // from ldmatrix and loads from cp.async.
  f.upgrade([](Config c) {
    if (!c.has("SPLITK")) c.set("SPLITK", 1);
    if (!c.has("PACK")) c.set("PACK", 0);
    if (!c.has("SMEM")) c.set("SMEM", 1);
    if (!c.has("LDM")) c.set("LDM", 1);
    if (!c.has("CPA")) c.set("CPA", 1);
    return c;
  });

  // The same tiling where the tuned form is not valid: the other PACK (an aligned config serves
  // unaligned shapes packed; a packed one serves aligned shapes unpacked), then unsplit (a shape
  // whose K is too short for the slices), unpacked before packed. A config loading through
  // registers (CPA = 0) is also offered with cp.async: element loads (an unaligned shape the
  // packed copies do not fit) take only that.
  f.generalize([](const Config& c) {
    std::vector<Family::Setting> s;
    for (int cpa : {c["CPA"], 1})
      for (auto [splitk, pack] : {std::pair{c["SPLITK"], c["PACK"]}, {c["SPLITK"], 1 - c["PACK"]}, {1, c["PACK"]}, {1, 1 - c["PACK"]}})
        s.push_back({{"SPLITK", splitk}, {"PACK", pack}, {"CPA", cpa}});
    return Family::variants(c, s);
  });

  f.kernels([](const Config& c, const GemmProblem& p) {
     // Template parameter order of gemm_tc16.cu; CP16, F16 and the layouts come from the problem.
     std::string name = "gemm_tc16<";
     for (const char* prm : {"BM", "BN", "BK", "WM", "WN", "ST", "SWZ", "SPLITK", "PACK", "LDM", "SMEM", "CPA"}) name += std::to_string(c[prm]) + ",";
     name += std::string(loads_16b_path(c, p) ? "1" : "0") + "," + (p.dtype == DType::f16 ? "1" : "0") + "," + gemm_layout_args(p) + ">";
     std::vector<std::string> names{name};
     if (c["SPLITK"] > 1) names.push_back(gemm_splitk_reduce16_name(c["SPLITK"], p));
     if (c["PACK"] != 0) names.push_back(gemm_pack_name(gemm_pack_tiles(tiling(c)), p));
     return names;
   })
      .launch([](const Config& c, const GemmProblem& p) {
        const GemmTiling t = tiling(c);
        LaunchPlan plan;
        LaunchStep main;
        main.grid[0] = ceil_div(p.m, t.bm) * ceil_div(p.n, t.bn);
        main.grid[2] = static_cast<unsigned>(t.splitk);
        main.block[0] = static_cast<unsigned>(threads(c));
        main.dynamic_smem = static_cast<unsigned>(smem_bytes(c, p));
        plan.steps.push_back(main);
        add_splitk_reduce(plan, p, t.splitk); // kernel 1; FP32 slices, as gemm_splitk_reduce16 reads them
        if (t.pack) add_pack(plan, p, gemm_pack_tiles(t), static_cast<int>(plan.steps.size()));
        return plan;
      });
  return f;
}

} // namespace ktune
