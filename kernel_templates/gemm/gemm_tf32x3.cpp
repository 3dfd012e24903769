// Descriptor of gemm_tf32x3.cu: FP32 GEMM as three TF32 tensor-core products per k step.
#include <algorithm>

#include "gemm/gemm_families.h"
#include "ktune/gemm_problem.h"

namespace ktune {
namespace {

int threads(const Config& c) { return 32 * (c["BM"] / c["WM"]) * (c["BN"] / c["WN"]); }
int accumulators(const Config& c) { return c["WM"] * c["WN"] / 32; }
// FOLD > 1 keeps a second set: the tensor cores' sums of FOLD k8 steps.
int accumulator_registers(const Config& c) { return accumulators(c) * (c["FOLD"] > 1 ? 2 : 1); }

// Mirrors StageTile: each operand in storage order, padded by 4 floats where K is contiguous and
// by 8 where M or N is.
size_t smem_bytes(const Config& c, const GemmProblem& p) {
  const size_t bm = c["BM"], bn = c["BN"], bk = c["BK"];
  const size_t a = p.a == Layout::col ? bk * (bm + 8) : bm * (bk + 4);
  const size_t b = p.b == Layout::col ? bn * (bk + 4) : bk * (bn + 8);
  return size_t(c["ST"]) * (a + b) * sizeof(float);
}

// Accumulator registers, big and small halves of one k8 step's fragments (A: 4 per m16 tile, B: 2 per n8
// tile), ~24 for addresses and loop state; capped by __launch_bounds__ at 65536 / threads.
int register_estimate(const Config& c) { return accumulator_registers(c) + 2 * (c["WM"] / 16 * 4 + c["WN"] / 8 * 2) + 24; }
int register_cap(const Config& c) { return std::min(255, 65536 / threads(c)); }

GemmTiling tiling(const Config& c) { return {c["BM"], c["BN"], c["BK"], c["SPLITK"], c["PACK"] != 0}; }

// The unpacked kernel has no bounds checks and copies 16 bytes at a time.
bool fits_unpacked(const Config& c, const GemmProblem& p) {
  return p.align >= 16 && p.k > 0 && p.m % c["BM"] == 0 && p.n % c["BN"] == 0 && p.k % (int64_t(c["BK"]) * c["SPLITK"]) == 0;
}

size_t workspace_bytes(const Config& c, const GemmProblem& p) {
  return gemm_tiled_workspace_bytes(tiling(c), p);
}

} // namespace

Family gemm_tf32x3_family() {
  using P = const GemmProblem&;
  using D = const DeviceInfo&;
  Family f("gemm_tf32x3", "gemm/gemm_tf32x3.cu");
  f.describe("FP32 GEMM on tensor cores, FP32-accurate (3xTF32: big/small split, three mma.sync m16n8k8 per step); "
             "not bit-identical to FFMA, and inputs beyond ~2^127 or infinite give inf/NaN where FFMA may not")
      .param("BM", {32, 64, 128, 256}, "block tile rows")
      .param("BN", {32, 64, 128, 256}, "block tile columns")
      .param("WM", {16, 32, 64, 128}, "warp tile rows (16-row MMA tiles)")
      .param("WN", {16, 32, 64, 128}, "warp tile columns (8-column MMA tiles)")
      .param("BK", {8, 16, 32}, "K depth of one shared-memory stage")
      .param("ST", {2, 3, 4, 5}, "cp.async stages in the shared-memory ring")
      .param("KU", {0, 1}, "1: a stage's k8 steps unrolled; 0: looped (fewer live registers)")
      .param("FOLD", {1, 2, 4}, "k8 steps summed on the tensor cores before an FP32 add (> 1: a second accumulator set)")
      .param("CVT", {0, 1}, "1: cvt.rna.tf32 for both halves; 0: big rounded by integer add and mask, small left to the MMA's truncation")
      .param("SPLITK", {1, 2, 4, 8, 16}, "K slices reduced deterministically")
      .param("SWZ", {1, 4, 8, 16}, "tile rows per rasterization group")
      .param("PACK", {0, 1}, "copy A and B first into aligned, tile-padded workspace (shapes the tiles do not divide, unaligned rows)");
  f.dtypes({DType::f32}).min_arch(80).numerics(Numerics::tf32x3);

  f.restrict("warp tile divides block tile", {"BM", "BN", "WM", "WN"},
             [](const Config& c, P, D) { return c["BM"] % c["WM"] == 0 && c["BN"] % c["WN"] == 0; })
      .restrict("threads per block <= device limit", {"BM", "BN", "WM", "WN"},
                [](const Config& c, P, D d) { return threads(c) <= d.max_threads_per_block; })
      .restrict("accumulators per thread <= 128", {"WM", "WN"}, [](const Config& c, P, D) { return accumulators(c) <= 128; })
      .restrict("FOLD divides a stage's BK / 8 k8 steps", {"BK", "FOLD"}, [](const Config& c, P, D) { return c["BK"] / 8 % c["FOLD"] == 0; })
      .restrict("accumulators of both sets <= 128 per thread", {"WM", "WN", "BK", "FOLD"},
                [](const Config& c, P, D) { return accumulator_registers(c) <= 128; })
      .restrict("register estimate within the __launch_bounds__ cap", {"BM", "BN", "WM", "WN", "BK", "FOLD"},
                [](const Config& c, P, D) { return register_estimate(c) <= register_cap(c); })
      .restrict("shared memory within the device's per-block limit", {"BM", "BN", "BK", "ST"},
                [](const Config& c, P p, D d) { return smem_bytes(c, p) <= size_t(d.max_smem_per_block_optin); })
      .restrict("every split-K slice gets at least one BK tile", {"BK", "SPLITK"},
                [](const Config& c, P p, D) { return c["SPLITK"] == 1 || int64_t(c["SPLITK"]) * c["BK"] <= p.k; })
      .restrict("split-K workspace <= 512 MiB", {"SPLITK"},
                [](const Config& c, P p, D) { return gemm_splitk_workspace_bytes(c["SPLITK"], p) <= kGemmMaxWorkspace; })
      // Exactly one of the two forms serves a shape: unpacked where it is aligned and divided, else packed.
      .restrict("PACK = 0 exactly where the problem is 16-byte aligned and the tiles divide it",
                {"BM", "BN", "BK", "SPLITK", "PACK"}, [](const Config& c, P p, D) { return (c["PACK"] == 0) == fits_unpacked(c, p); })
      .restrict("workspace (split-K slices, packed operands) <= 512 MiB", {"BM", "BN", "BK", "SPLITK", "PACK"},
                [](const Config& c, P p, D) { return workspace_bytes(c, p) <= kGemmMaxWorkspace; });

  // CVT came after the first tuning run; its configs were measured with cvt.rna.tf32.
  f.upgrade([](Config c) {
    if (!c.has("CVT")) c.set("CVT", 1);
    return c;
  });

  // A config tuned unpacked serves other shapes packed, and the other way round.
  f.generalize([](const Config& c) {
    Config g = c;
    g.set("PACK", 1 - c["PACK"]);
    return std::vector<Config>{g};
  });

  f.kernels([](const Config& c, const GemmProblem& p) {
     const auto main = gemm_instance("gemm_tf32x3", c, {"BM", "BN", "BK", "WM", "WN", "ST", "KU", "FOLD", "CVT", "SPLITK", "SWZ", "PACK"}, p);
     return gemm_tiled_kernels(main, tiling(c), p);
   })
      .launch([](const Config& c, const GemmProblem& p) { return gemm_tiled_plan(tiling(c), p, threads(c), smem_bytes(c, p)); });
  return f;
}

} // namespace ktune
