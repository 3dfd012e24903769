// Descriptor of gemm_simt.cu: the parameters, the constraints that make a point launchable and
// worth timing, and the launch geometry. Host names: block_m (BM), warp_m (WM), thread_m (TM)...
#include <algorithm>

#include "gemm/gemm_families.h"
#include "gemm/gemm_args.h"
#include "ktune/gemm_problem.h"

namespace ktune {
namespace {

// Quantities derived from a (possibly partial) config, mirroring the constexprs of the kernel.
int threads(const Config& c) { return 32 * (c["BM"] / c["WM"]) * (c["BN"] / c["WN"]); }
int lanes_n(const Config& c) { return c["LN"]; }
int lanes_m(const Config& c) { return 32 / lanes_n(c); }
int accumulators(const Config& c) { return c["WM"] * c["WN"] / 32; }
int buffers(const Config& c) { return c["PIPE"] == 0 ? 1 : (c["PIPE"] == 1 ? 2 : c["PIPE"]); }

size_t smem_bytes(const Config& c) {
  const int bm = c["BM"], bn = c["BN"], bk = c["BK"], pad = c["PAD"];
  const size_t a = c["AT"] ? size_t(bk) * (bm + pad) : size_t(bm) * (bk + pad);
  const size_t b = size_t(bk) * (bn + pad);
  return buffers(c) * (a + b) * sizeof(float);
}

// A rough register model: accumulators, the A/B fragments of one k step, ~24 for addresses and
// loop state. __launch_bounds__ caps registers at 65536 / threads, so a config over that cap
// would spill heavily: it can run, but is never worth the time to benchmark.
int register_estimate(const Config& c) {
  const int frag = (c["WM"] / lanes_m(c)) + (c["WN"] / lanes_n(c));
  return accumulators(c) + frag + 24;
}
int register_cap(const Config& c) { return std::min(255, 65536 / threads(c)); }

GemmTiling tiling(const Config& c) { return {c["BM"], c["BN"], c["BK"], c["SPLITK"], c["PACK"] != 0}; }

size_t workspace_bytes(const Config& c, const GemmProblem& p) {
  return gemm_tiled_workspace_bytes(tiling(c), p);
}

// Whether the tiles divide the problem, so that the plain kernel needs no bounds checks.
bool tiles_divide(const Config& c, const GemmProblem& p) {
  return p.k > 0 && p.m % c["BM"] == 0 && p.n % c["BN"] == 0 && p.k % (int64_t(c["BK"]) * c["SPLITK"]) == 0;
}

} // namespace

Family gemm_simt_family() {
  using P = const GemmProblem&;
  using D = const DeviceInfo&;
  Family f("gemm_simt", "gemm/gemm_simt.cu");
  f.describe("FP32 CUDA-core GEMM: block/warp/thread tiling, vector loads, smem layout, pipelining, split-K, swizzle")
      .param("BM", {16, 32, 64, 128, 256}, "block tile rows (block_m)")
      .param("BN", {16, 32, 64, 128, 256}, "block tile columns (block_n)")
      .param("WM", {8, 16, 32, 64, 128, 256}, "warp tile rows (warp_m)")
      .param("WN", {8, 16, 32, 64, 128, 256}, "warp tile columns (warp_n)")
      .param("TM", {1, 2, 4, 8, 16}, "thread tile rows (thread_m)")
      .param("TN", {1, 2, 4, 8, 16}, "thread tile columns (thread_n)")
      .param("LN", {1, 2, 4, 8, 16, 32}, "lanes of a warp along N (32 / LN along M): TN-wide sub-tiles LN * TN apart")
      .param("BK", {8, 16, 32}, "K depth of one shared-memory stage (block_k)")
      .param("VEC", {1, 2, 4}, "global load width in floats")
      .param("AT", {0, 1}, "A stored k-major (transposed) in shared memory")
      .param("PAD", {0, 4}, "shared-memory row padding in floats")
      .param("PIPE", {0, 1, 2, 3, 4}, "0 single buffer, 1 register double buffer, >=2 cp.async stages")
      .param("SPLITK", {1, 2, 4, 8, 16}, "K slices reduced deterministically")
      .param("SWZ", {1, 4, 8, 16}, "tile rows per rasterization group")
      .param("EVEN", {0, 1}, "no bounds checks (tiles must divide the problem)")
      .param("PACK", {0, 1}, "copy A and B first into aligned, tile-padded workspace (any shape: vector loads, no bounds checks)");

  f.restrict("warp tile divides block tile", {"BM", "BN", "WM", "WN"},
             [](const Config& c, P, D) { return c["BM"] % c["WM"] == 0 && c["BN"] % c["WN"] == 0; })
      .restrict("threads per block <= device limit", {"BM", "BN", "WM", "WN"},
                [](const Config& c, P, D d) { return threads(c) <= d.max_threads_per_block; })
      .restrict("accumulators per thread <= 128", {"WM", "WN"}, [](const Config& c, P, D) { return accumulators(c) <= 128; })
      .restrict("32 lanes of TM x TN tiles cover the warp tile", {"WM", "WN", "TM", "TN", "LN"},
                [](const Config& c, P, D) {
                  return c["WN"] % (lanes_n(c) * c["TN"]) == 0 && c["WM"] % (lanes_m(c) * c["TM"]) == 0;
                })
      .restrict("register estimate within the __launch_bounds__ cap", {"BM", "BN", "WM", "WN", "TM", "TN", "LN"},
                [](const Config& c, P, D) { return register_estimate(c) <= register_cap(c); })
      .restrict("shared memory within the device's per-block limit", {"BM", "BN", "BK", "AT", "PAD", "PIPE"},
                [](const Config& c, P, D d) { return smem_bytes(c) <= size_t(d.max_smem_per_block_optin); })
      .restrict("register staging of the double buffer within the cap", {"BM", "BN", "WM", "WN", "TM", "TN", "LN", "BK", "PIPE"},
                [](const Config& c, P, D) {
                  const int staged = (c["BM"] * c["BK"] + c["BK"] * c["BN"] + threads(c) - 1) / threads(c);
                  return c["PIPE"] >= 2 || register_estimate(c) + staged <= register_cap(c);
                })
      .restrict("cp.async (PIPE >= 2) needs sm_80", {"PIPE"}, [](const Config& c, P, D d) { return c["PIPE"] < 2 || d.arch_number() >= 80; })
      .restrict("every split-K slice gets at least one BK tile", {"BK", "SPLITK"},
                [](const Config& c, P p, D) { return c["SPLITK"] == 1 || int64_t(c["SPLITK"]) * c["BK"] <= p.k; })
      // The split-K part alone, checked as soon as SPLITK is bound (enumeration prunes there); the
      // total with packed operands is checked once PACK is.
      .restrict("split-K workspace <= 512 MiB", {"SPLITK"},
                [](const Config& c, P p, D) { return gemm_splitk_workspace_bytes(c["SPLITK"], p) <= kGemmMaxWorkspace; })
      .restrict("EVEN only where the tiles divide M, N and K / SPLITK", {"BM", "BN", "BK", "SPLITK", "EVEN"},
                [](const Config& c, P p, D) { return c["EVEN"] == 0 || tiles_divide(c, p); })
      // The packed copies are aligned, so VEC is free under PACK; C's stores then go by element.
      .restrict("global vector width within the problem's alignment class (or PACK)", {"VEC", "PACK"},
                [](const Config& c, P p, D) { return c["VEC"] * 4 <= p.align || c["PACK"] == 1; })
      // Packing costs a pass over A and B: only worth a tuning slot where the plain kernel would
      // need narrow loads or bounds checks. EVEN is implied (the packed loads have no checks).
      .restrict("PACK only for unaligned problems or tiles that do not divide them, and with EVEN = 0",
                {"BM", "BN", "BK", "SPLITK", "EVEN", "PACK"},
                [](const Config& c, P p, D) { return c["PACK"] == 0 || (c["EVEN"] == 0 && (p.align < 16 || !tiles_divide(c, p))); })
      .restrict("workspace (split-K slices, packed operands) <= 512 MiB", {"BM", "BN", "BK", "SPLITK", "PACK"},
                [](const Config& c, P p, D) { return workspace_bytes(c, p) <= kGemmMaxWorkspace; });

  // 128 x 128 x 8 tiles with 8 x 4 thread tiles: the configuration the SGEMM literature settles
  // on for large shapes, bounds-checked so that it serves any shape. The vector width follows
  // the alignment class and the pipeline the arch.
  f.defaults([](const GemmProblem& p, const DeviceInfo& d) {
    return Config{{"BM", 128}, {"BN", 128}, {"WM", 64}, {"WN", 32}, {"TM", 8}, {"TN", 4}, {"LN", 8}, {"BK", 8},
                  {"VEC", std::min(4, p.align / 4)}, {"AT", 1}, {"PAD", 4}, {"PIPE", d.arch_number() >= 80 ? 3 : 1},
                  {"SPLITK", 1}, {"SWZ", 8}, {"EVEN", 0}, {"PACK", 0}};
  });

  // LN came after the first tables and trial logs; they were measured with the lane layout the
  // kernel then derived, LN = min(32, WN / TN), which is therefore their value. PACK came later
  // still: before it, nothing was packed.
  f.upgrade([](Config c) {
    if (!c.has("LN") && c.has("WN") && c.has("TN") && c["TN"] > 0) c.set("LN", std::min(32, c["WN"] / c["TN"]));
    if (!c.has("PACK")) c.set("PACK", 0);
    return c;
  });

  // EVEN = 1 only drops bounds checks: its general twin is the same kernel with them. Where the
  // problem's alignment forbids its vector loads, the packed form runs the same unchecked main
  // loop on aligned copies (and a packed config on a shape that needs no packing runs unpacked).
  f.generalize([](const Config& c) {
    std::vector<Config> out;
    for (int pack : {c["PACK"], 1 - c["PACK"]}) {
      Config g = c;
      g.set("EVEN", 0);
      g.set("PACK", pack);
      if (!(g == c)) out.push_back(std::move(g));
    }
    return out;
  });

  f.kernels([](const Config& c, const GemmProblem& p) {
     // Template parameter order of gemm_simt.cu, which differs from the enumeration order.
     const auto main = gemm_instance(
         "gemm_simt", c, {"BM", "BN", "BK", "WM", "WN", "TM", "TN", "LN", "VEC", "AT", "PAD", "PIPE", "SPLITK", "SWZ", "EVEN", "PACK"}, p);
     return gemm_tiled_kernels(main, tiling(c), p);
   })
      .launch([](const Config& c, const GemmProblem& p) { return gemm_tiled_plan(tiling(c), p, threads(c), smem_bytes(c)); });
  return f;
}

} // namespace ktune
